//! A git host's archive of a ref (`OWNER-REPO-REF/…` inside) rewritten with the module at its
//! root, as the CLI lays a `git::` clone out: `.terraform/modules/NAME` is the repository's
//! root, so `path.module` and a `//modules/x` subdirectory mean what they would have meant.
//! Deterministic, so the same archive always gives the same bytes (and the same pin): the
//! tar's order, every timestamp 0, owners 0, permission bits kept, gzip at one fixed level. Read
//! through `tar_gz_each`, so bounded by the same limits and refusing the same entries as a
//! published archive.

use std::io::{Read, Write};

use super::readers::tar_gz_each;
use super::{Bounds, Kind};

/// Write the `.tar.gz` read from `reader` into `writer` without its single top-level
/// directory. Refused: an entry outside that directory, or a second top-level name.
pub fn strip_top_directory<R: Read, W: Write>(reader: R, writer: W, bounds: &Bounds) -> Result<W, String> {
    let gzip = flate2::write::GzEncoder::new(writer, flate2::Compression::new(6));
    let mut tar = tar::Builder::new(gzip);
    let mut top: Option<String> = None;
    let written = |e: std::io::Error| format!("writing the archive: {e}");
    tar_gz_each(reader, bounds, |entry| {
        let name = entry.name.trim_start_matches("./").to_string();
        let (first, rest) = name.split_once('/').unwrap_or((&name, ""));
        match &top {
            None => top = Some(first.to_string()),
            Some(t) if t != first => {
                return Err(format!(
                    "the archive has more than one top-level entry ({:?} and {:?}): not a git host's archive",
                    crate::address::printable(t),
                    crate::address::printable(first)
                ));
            }
            Some(_) => {}
        }
        let rest = rest.trim_start_matches('/');
        if rest.is_empty() {
            return match entry.kind {
                Kind::Directory => Ok(()),
                _ => Err("the archive's top-level entry is not a directory".into()),
            };
        }
        let mut header = tar::Header::new_gnu();
        header.set_mode(entry.mode);
        header.set_mtime(0);
        header.set_uid(0);
        header.set_gid(0);
        match entry.kind.clone() {
            Kind::Directory => {
                header.set_entry_type(tar::EntryType::Directory);
                header.set_size(0);
                tar.append_data(&mut header, rest, std::io::empty()).map_err(written)
            }
            Kind::File => {
                let mut data = Spool::default();
                entry.read(|chunk| data.write(chunk))?;
                header.set_entry_type(tar::EntryType::Regular);
                header.set_size(data.len);
                let reader = data.reader().map_err(written)?;
                tar.append_data(&mut header, rest, reader).map_err(written)
            }
            Kind::Symlink(target) => {
                header.set_entry_type(tar::EntryType::Symlink);
                header.set_size(0);
                tar.append_link(&mut header, rest, &target).map_err(written)
            }
            Kind::Hardlink(target) => {
                let target = target.trim_start_matches("./");
                let Some(inside) = target.strip_prefix(&format!("{first}/")) else {
                    return Err("a hard link names an entry outside the top-level directory".into());
                };
                header.set_entry_type(tar::EntryType::Link);
                header.set_size(0);
                tar.append_link(&mut header, rest, inside).map_err(written)
            }
        }
    })?;
    if top.is_none() {
        return Err("the archive is empty".into());
    }
    tar.into_inner().and_then(|gzip| gzip.finish()).map_err(written)
}

/// Most of one file held in memory while it is rewritten; the rest waits in a temporary file,
/// so a file that unpacks large (a bomb within the bounds) costs disk, not the function's memory.
const IN_MEMORY_BYTES: usize = 1 << 20;

/// One file's data between reading it and writing it (its size goes in the header first).
#[derive(Default)]
struct Spool {
    memory: Vec<u8>,
    file: Option<std::fs::File>,
    len: u64,
}

impl Spool {
    fn write(&mut self, chunk: &[u8]) -> Result<(), String> {
        use std::io::Write as _;
        self.len += chunk.len() as u64;
        if self.file.is_none() && self.memory.len() + chunk.len() <= IN_MEMORY_BYTES {
            self.memory.extend_from_slice(chunk);
            return Ok(());
        }
        let spilled = |e: std::io::Error| format!("spooling a large file to a temporary file: {e}");
        if self.file.is_none() {
            let mut file = tempfile::tempfile().map_err(spilled)?;
            file.write_all(&self.memory).map_err(spilled)?;
            self.memory = Vec::new();
            self.file = Some(file);
        }
        self.file.as_mut().map_or(Ok(()), |f| f.write_all(chunk)).map_err(spilled)
    }

    fn reader(self) -> std::io::Result<Box<dyn Read>> {
        use std::io::Seek as _;
        match self.file {
            Some(mut file) => {
                file.rewind()?;
                Ok(Box::new(file))
            }
            None => Ok(Box::new(std::io::Cursor::new(self.memory))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Item, git_archive, tar_gz_items};

    fn strip(bytes: &[u8]) -> Result<Vec<u8>, String> {
        strip_top_directory(bytes, Vec::new(), &Bounds { unpacked_bytes: 1 << 20, entries: 100 })
    }

    fn names(tar_gz: &[u8]) -> Vec<String> {
        let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(tar_gz));
        archive.entries().unwrap().map(|e| e.unwrap().path().unwrap().display().to_string()).collect()
    }

    #[test]
    fn a_git_archive_becomes_the_module_at_the_root_the_same_bytes_every_time() {
        let sha = "29230f956912d751a01a5694510f684754a93196";
        let files = [("main.tf", "variable \"x\" {}\n"), ("modules/x/main.tf", "output \"y\" { value = 1 }\n")];
        let github = git_archive("terraform-aws-demo-29230f9", sha, &files);
        let flat = strip(&github).unwrap();
        assert_eq!(names(&flat), ["main.tf", "modules/x/main.tf"]);
        super::super::read_module_archive(std::io::Cursor::new(&flat), "tar.gz", &Bounds::UNLIMITED, &|_| false)
            .expect("accepted as a published archive");
        assert_eq!(strip(&github).unwrap(), flat, "deterministic");
        let other_top = git_archive("renamed-repo-v1", sha, &files);
        assert_eq!(strip(&other_top).unwrap(), flat, "the top directory's name does not matter");
    }

    #[test]
    fn a_large_file_is_rewritten_through_a_temporary_file_byte_for_byte() {
        let big: Vec<u8> = (0..3 * IN_MEMORY_BYTES as u32).map(|i| (i % 251) as u8).collect();
        let archive = tar_gz_items(&[Item::Dir("r/"), Item::File("r/main.tf", b"x"), Item::File("r/big.bin", &big)]);
        let flat =
            strip_top_directory(archive.as_slice(), Vec::new(), &Bounds { unpacked_bytes: 1 << 30, entries: 10 })
                .unwrap();
        let mut reader = tar::Archive::new(flate2::read::GzDecoder::new(flat.as_slice()));
        let mut found = Vec::new();
        for entry in reader.entries().unwrap() {
            let mut entry = entry.unwrap();
            if entry.path().unwrap().to_str() == Some("big.bin") {
                std::io::Read::read_to_end(&mut entry, &mut found).unwrap();
            }
        }
        assert!(found == big, "the spooled file's bytes");
    }

    #[test]
    fn links_stay_inside_and_anything_beside_the_top_directory_is_refused() {
        let linked = tar_gz_items(&[
            Item::Dir("r/"),
            Item::File("r/main.tf", b"x"),
            Item::Symlink("r/alias.tf", "main.tf"),
            Item::Hardlink("r/copy.tf", "r/main.tf"),
        ]);
        assert_eq!(names(&strip(&linked).unwrap()), ["main.tf", "alias.tf", "copy.tf"]);
        for (items, says) in [
            (vec![Item::File("a/main.tf", b"x"), Item::File("b/main.tf", b"x")], "more than one top-level"),
            (vec![Item::File("main.tf", b"x")], "not a directory"),
            (vec![Item::Dir("r/"), Item::File("r/a", b"x"), Item::Hardlink("r/b", "other/a")], "outside"),
            (vec![Item::Dir("r/"), Item::File("r/../x", b"x")], ".."),
        ] {
            let got = strip(&tar_gz_items(&items));
            assert!(got.as_ref().is_err_and(|e| e.contains(says)), "{items:?}: {got:?}");
        }
    }
}
