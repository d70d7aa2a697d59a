//! A module's archive packed from its source, deterministically: the same tree gives the same
//! bytes (and so the same SHA-256 the registry pins), whoever packs it and whenever. Entries
//! sorted by name, every timestamp, owner and group 0, gzip at one fixed level with no name or
//! time in its header; a file's mode 0644 (0755 when anyone may execute it), a directory's 0755
//! (from a tag, as git archive gives them with `tar.umask=0022`). From a directory (`directory`, what `.terraformignore` leaves out left out), or
//! from `git archive` of a tag (`git_archive`: git's `export-ignore` already applied, made the
//! same way as a git host's archive is for an upstream copy, `archive::strip_top_directory`).

use std::io::{Read, Write};
use std::path::Path;

use super::ignore::{self, Ignore};
use crate::archive::{self, Bounds};

/// An archive packed, and what was left out of it.
#[derive(Debug, Clone)]
pub struct Packed {
    /// The `.tar.gz`.
    pub bytes: Vec<u8>,
    /// Regular files in it.
    pub files: usize,
    /// The paths left out (a directory once, not what it held), sorted.
    pub left_out: Vec<String>,
}

/// The module directory `root` as a `.tar.gz`: its files and directories (symbolic links as
/// links, which the archive checks then judge), without what its `.terraformignore` names,
/// within `bounds`; at most `max_bytes` packed.
pub fn directory(root: &Path, bounds: &Bounds, max_bytes: u64) -> Result<Packed, String> {
    let rules = match std::fs::read(root.join(ignore::FILE)) {
        Ok(bytes) => {
            let text = String::from_utf8(bytes).map_err(|_| format!("{} is not UTF-8", ignore::FILE))?;
            Ignore::parse(&text)?
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ignore::default(),
        Err(e) => return Err(format!("{}: {e}", root.join(ignore::FILE).display())),
    };
    let gzip = flate2::write::GzEncoder::new(Limit::new(Vec::new(), max_bytes), flate2::Compression::new(6));
    let mut walk = Walk { tar: tar::Builder::new(gzip), rules, bounds: *bounds, entries: 0, unpacked: 0, files: 0 };
    let mut left_out = Vec::new();
    walk.dir(root, "", &mut left_out)?;
    let written = |e: std::io::Error| format!("packing the archive: {e}");
    let files = walk.files;
    let bytes = walk.tar.into_inner().and_then(|gzip| gzip.finish()).map_err(written)?.into_inner();
    left_out.sort();
    Ok(Packed { bytes, files, left_out })
}

/// The output of `git archive --format=tar --prefix=DIR/ TAG` as the `.tar.gz` to publish: the
/// module at its root, rebuilt deterministically, within `bounds`.
pub fn git_archive<R: Read>(mut tar: R, bounds: &Bounds, max_bytes: u64) -> Result<Packed, String> {
    // Held in memory on its way: at most twice what may be published.
    let held = Limit::new(Vec::new(), max_bytes.saturating_mul(2));
    let mut gzip = flate2::write::GzEncoder::new(held, flate2::Compression::fast());
    let read = |e: std::io::Error| format!("reading git archive's output: {e}");
    std::io::copy(&mut (&mut tar).take(bounds.unpacked_bytes.saturating_add(64 << 20)), &mut gzip).map_err(read)?;
    let gzipped = gzip.finish().map_err(read)?.into_inner();
    let bytes =
        archive::strip_top_directory(gzipped.as_slice(), Limit::new(Vec::new(), max_bytes), bounds)?.into_inner();
    let files = count_files(&bytes)?;
    Ok(Packed { bytes, files, left_out: Vec::new() })
}

fn count_files(tar_gz: &[u8]) -> Result<usize, String> {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(tar_gz));
    let entries = archive.entries().map_err(|e| e.to_string())?;
    let mut files = 0;
    for entry in entries {
        if entry.map_err(|e| e.to_string())?.header().entry_type().is_file() {
            files += 1;
        }
    }
    Ok(files)
}

struct Walk<W: Write> {
    tar: tar::Builder<flate2::write::GzEncoder<W>>,
    rules: Ignore,
    bounds: Bounds,
    entries: u64,
    unpacked: u64,
    files: usize,
}

impl<W: Write> Walk<W> {
    fn dir(&mut self, dir: &Path, prefix: &str, left_out: &mut Vec<String>) -> Result<(), String> {
        let listed = |e: std::io::Error| format!("{}: {e}", dir.display());
        let mut children = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(listed)? {
            let entry = entry.map_err(listed)?;
            let name = entry
                .file_name()
                .into_string()
                .map_err(|n| format!("{}: a file name that is not UTF-8 ({n:?}) cannot be published", dir.display()))?;
            children.push(name);
        }
        children.sort();
        for name in children {
            let path = dir.join(&name);
            let relative = format!("{prefix}{name}");
            let meta = std::fs::symlink_metadata(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let is_dir = meta.is_dir();
            if self.rules.leaves_out(&relative, is_dir)? {
                left_out.push(if is_dir { format!("{relative}/") } else { relative });
                continue;
            }
            self.entries += 1;
            if self.entries > self.bounds.entries {
                return Err(format!(
                    "more than {} entries to pack (REGISTRY_MAX_ARCHIVE_ENTRIES)",
                    self.bounds.entries
                ));
            }
            let mut header = tar::Header::new_gnu();
            header.set_mtime(0);
            header.set_uid(0);
            header.set_gid(0);
            let written = |e: std::io::Error| format!("packing {relative}: {e}");
            if is_dir {
                header.set_entry_type(tar::EntryType::Directory);
                header.set_mode(0o755);
                header.set_size(0);
                self.tar.append_data(&mut header, format!("{relative}/"), std::io::empty()).map_err(written)?;
                self.dir(&path, &format!("{relative}/"), left_out)?;
            } else if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).map_err(written)?;
                header.set_entry_type(tar::EntryType::Symlink);
                header.set_mode(0o777);
                header.set_size(0);
                self.tar.append_link(&mut header, &relative, &target).map_err(written)?;
            } else if meta.is_file() {
                self.unpacked += meta.len();
                if self.unpacked > self.bounds.unpacked_bytes {
                    return Err(format!(
                        "more than {} bytes to pack (REGISTRY_MAX_UNPACKED_BYTES)",
                        self.bounds.unpacked_bytes
                    ));
                }
                header.set_entry_type(tar::EntryType::Regular);
                header.set_mode(if executable(&meta) { 0o755 } else { 0o644 });
                header.set_size(meta.len());
                let file = std::fs::File::open(&path).map_err(written)?;
                // Exactly the size the header says, even if the file grows meanwhile.
                self.tar.append_data(&mut header, &relative, file.take(meta.len())).map_err(written)?;
                self.files += 1;
            } else {
                return Err(format!("{relative}: not a file, directory or symbolic link: cannot be published"));
            }
        }
        Ok(())
    }
}

#[cfg(unix)]
fn executable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn executable(_: &std::fs::Metadata) -> bool {
    false
}

/// A writer that refuses to grow past a size: an archive larger than the registry takes is
/// refused while it is packed, not after.
struct Limit<W> {
    inner: W,
    left: u64,
    max: u64,
}

impl<W> Limit<W> {
    fn new(inner: W, max: u64) -> Self {
        Limit { inner, left: max, max }
    }

    fn into_inner(self) -> W {
        self.inner
    }
}

impl<W: Write> Write for Limit<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if buf.len() as u64 > self.left {
            return Err(std::io::Error::other(format!(
                "the archive is larger than {} bytes (REGISTRY_MAX_MODULE_ARCHIVE_BYTES)",
                self.max
            )));
        }
        let n = self.inner.write(buf)?;
        self.left -= n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests;
