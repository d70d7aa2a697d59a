//! Reading uploaded archives: what makes a module archive or a provider zip acceptable, and
//! the `h1:` hash of a provider zip. Pure functions over a seekable file; the indexer runs
//! them on a blocking thread over a spooled copy.
//!
//! The check reads what the CLI will read, and refuses where readers could disagree:
//! - a `.tar.gz` is read through *every* gzip member (Go's reader, so go-getter, reads them
//!   all; reading only the first would hide what follows), must end with tar's end-of-archive
//!   marker, and may have only zeros after it;
//! - every entry stays inside the module directory: no absolute path, `..`, `\`, NUL or drive
//!   letter; no device or FIFO; no entry below a symbolic link (unpacking it would write
//!   through the link); a link is relative and, resolved from its own directory without
//!   passing through another link, stays inside the module;
//! - a zip may not hold two entries with one name (which one counts differs between readers);
//! - memory stays bounded whatever the input: at most `Bounds::entries` entries of at most
//!   `NAME_MAX_BYTES` each, tar headers between two entries (pax records, GNU long names)
//!   of at most `TAR_HEADER_BYTES`, a zip central directory of at most
//!   `ZIP_DIRECTORY_BYTES`, and every unpacked byte counted against `Bounds::unpacked_bytes`.

use std::cell::Cell;
use std::collections::BTreeSet;
use std::io::{Read, Seek, SeekFrom};
use std::rc::Rc;

use base64::Engine;
use sha2::{Digest, Sha256};

/// Files that make a directory a Terraform/OpenTofu module.
pub const MODULE_FILE_SUFFIXES: [&str; 4] = [".tf", ".tf.json", ".tofu", ".tofu.json"];
/// Longest entry name or link target (Linux's `PATH_MAX`).
pub const NAME_MAX_BYTES: usize = 4096;
/// Most bytes tar may read between two entries: pax records and GNU long names, which the tar
/// reader holds in memory. Go's archive/tar refuses larger ones too (1 MiB).
pub const TAR_HEADER_BYTES: u64 = (1 << 20) + 4 * 512;
/// Most bytes the zip reader may read to parse the central directory (which it holds in
/// memory): far more than 100,000 entries with ordinary names need.
pub const ZIP_DIRECTORY_BYTES: u64 = 32 << 20;

/// Longest file a module archive's reader keeps in memory for the docs (a README, a `.tf`
/// file); a longer one is named but not kept.
pub const KEPT_FILE_BYTES: usize = 1 << 20;
/// Most bytes of files kept from one archive; files past it are named but not kept.
pub const KEPT_TOTAL_BYTES: usize = 16 << 20;

/// A file of a module archive kept while it was checked (for the docs), by normalised path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptFile {
    /// Its path inside the module (`README.md`, `modules/vpc/variables.tf`).
    pub path: String,
    /// Its bytes; `None` when it was longer than `KEPT_FILE_BYTES` or past `KEPT_TOTAL_BYTES`.
    pub bytes: Option<Vec<u8>>,
}

/// Which files to keep, and what they have cost so far.
struct Keeper<'a> {
    wanted: &'a dyn Fn(&str) -> bool,
    kept: Vec<KeptFile>,
    total: usize,
}

impl<'a> Keeper<'a> {
    fn new(wanted: &'a dyn Fn(&str) -> bool) -> Self {
        Keeper { wanted, kept: Vec::new(), total: 0 }
    }

    /// Whether a regular file at `name` is to be kept.
    fn wants(&self, name: &str) -> bool {
        (self.wanted)(&normalise(name))
    }

    /// Keep `bytes` read for `name` (`None` if it outgrew `KEPT_FILE_BYTES`). A later entry
    /// with the same path replaces an earlier one, as unpacking does.
    fn keep(&mut self, name: &str, bytes: Option<Vec<u8>>) {
        let path = normalise(name);
        self.kept.retain(|k| k.path != path);
        let bytes = bytes.filter(|b| self.total + b.len() <= KEPT_TOTAL_BYTES);
        self.total += bytes.as_ref().map_or(0, Vec::len);
        self.kept.push(KeptFile { path, bytes });
    }
}

/// Collects a kept file's bytes up to `KEPT_FILE_BYTES`; past that, gives up on them.
struct Collecting(Option<Vec<u8>>);

impl Collecting {
    fn add(&mut self, chunk: &[u8]) {
        if let Some(bytes) = &mut self.0 {
            if bytes.len() + chunk.len() > KEPT_FILE_BYTES {
                self.0 = None;
            } else {
                bytes.extend_from_slice(chunk);
            }
        }
    }
}

/// What reading one archive may cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Bytes the archive may unpack to (decompression bombs).
    pub unpacked_bytes: u64,
    /// Entries (files, directories, links) the archive may hold.
    pub entries: u64,
}

impl Bounds {
    /// No limit on size; the entry bound still applies.
    pub const UNLIMITED: Bounds = Bounds { unpacked_bytes: u64::MAX, entries: u64::MAX };
}

/// What reading a provider zip found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZipSummary {
    /// What the CLI checks: `h1:` over every entry of the zip.
    pub h1: String,
    /// Directory entries (the CLI counts them as empty files when it checks, but not when it
    /// locks; see `docs/BUCKET.md`).
    pub directory_entries: usize,
    /// Names of the file entries.
    pub files: Vec<String>,
}

/// One entry as the checks see it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    name: String,
    kind: Kind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    File,
    Directory,
    /// A symbolic link and its target.
    Symlink(String),
    /// A tar hard link and the entry it names (relative to the archive root).
    Hardlink(String),
}

/// Counts what a reader hands out: every byte against the unpacked-size limit (when the
/// stream is the decompressed one), and within a phase (tar headers between two entries, the
/// zip central directory) against that phase's bound, so an oversized header is refused
/// before a library holds it in memory. Remembers why it stopped a read, so the caller can
/// say that rather than the library's generic I/O error.
struct Meter {
    left: Cell<u64>,
    phase: Cell<Option<(u64, &'static str)>>,
    tripped: Cell<Option<&'static str>>,
}

impl Meter {
    fn new(unpacked_bytes: u64) -> Rc<Meter> {
        Rc::new(Meter { left: Cell::new(unpacked_bytes), phase: Cell::new(None), tripped: Cell::new(None) })
    }

    fn phase(&self, bound: Option<(u64, &'static str)>) {
        self.phase.set(bound);
    }

    fn take(&self, n: u64, total: bool) -> std::io::Result<()> {
        let trip = |why: &'static str| {
            self.tripped.set(Some(why));
            Err(std::io::Error::other(why))
        };
        if total {
            match self.left.get().checked_sub(n) {
                Some(left) => self.left.set(left),
                None => return trip("unpacks to more than the size limit"),
            }
        }
        if let Some((left, why)) = self.phase.get() {
            match left.checked_sub(n) {
                Some(left) => self.phase.set(Some((left, why))),
                None => return trip(why),
            }
        }
        Ok(())
    }

    /// The reason to report for a library error: the meter's, if it stopped the read.
    fn explain(&self, context: &str, e: impl std::fmt::Display) -> String {
        match self.tripped.get() {
            Some(why) => why.to_string(),
            None => format!("{context}: {e}"),
        }
    }
}

struct Metered<R> {
    inner: R,
    meter: Rc<Meter>,
    /// Count every byte against the unpacked-size limit (a decompressed stream).
    total: bool,
}

impl<R: Read> Read for Metered<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.meter.take(n as u64, self.total)?;
        Ok(n)
    }
}

impl<R: Seek> Seek for Metered<R> {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        self.inner.seek(pos)
    }
}

/// A path inside an archive that stays inside the directory it is unpacked into.
fn check_entry_path(name: &str) -> Result<(), String> {
    let bad = name.is_empty()
        || name.starts_with('/')
        || name.contains('\\')
        || name.contains('\0')
        || name.split('/').any(|part| part == "..")
        || name.as_bytes().get(1) == Some(&b':');
    if bad {
        Err(format!("entry {:?} would unpack outside the module directory", crate::address::printable(name)))
    } else {
        Ok(())
    }
}

/// An entry name or link target from the archive's bytes: UTF-8, at most `NAME_MAX_BYTES`.
fn entry_name(raw: &[u8]) -> Result<String, String> {
    if raw.len() > NAME_MAX_BYTES {
        return Err(format!("an entry name or link target is longer than {NAME_MAX_BYTES} bytes"));
    }
    if raw.contains(&b'\n') {
        return Err("an entry name contains a newline".into());
    }
    String::from_utf8(raw.to_vec()).map_err(|_| {
        format!("entry name {:?} is not UTF-8", String::from_utf8_lossy(raw).chars().take(64).collect::<String>())
    })
}

/// A path without `.` and empty components, and without a trailing `/` (`./a//b/` is `a/b`).
fn normalise(name: &str) -> String {
    name.split('/').filter(|p| !p.is_empty() && *p != ".").collect::<Vec<_>>().join("/")
}

/// `a` and `a/b` for `a/b/c`.
fn proper_prefixes(path: &str) -> impl Iterator<Item = &str> {
    path.match_indices('/').map(move |(i, _)| &path[..i])
}

/// Every entry's path, and every link, against the rules in the module documentation.
fn check_tree(entries: &[Entry]) -> Result<(), String> {
    let links: BTreeSet<String> =
        entries.iter().filter(|e| matches!(e.kind, Kind::Symlink(_))).map(|e| normalise(&e.name)).collect();
    let below_link = |path: &str| proper_prefixes(path).find(|p| links.contains(*p)).map(str::to_string);
    for entry in entries {
        check_entry_path(&entry.name)?;
        let path = normalise(&entry.name);
        if let Some(link) = below_link(&path) {
            return Err(format!(
                "entry {:?} lies below the symbolic link {:?}: unpacking it would write through the link",
                crate::address::printable(&entry.name),
                crate::address::printable(&link)
            ));
        }
        match &entry.kind {
            Kind::Symlink(target) => check_symlink(&path, target, &links)?,
            Kind::Hardlink(target) => {
                let bad = |why: &str| {
                    format!(
                        "hard link {:?} -> {:?} {why}",
                        crate::address::printable(&entry.name),
                        crate::address::printable(target)
                    )
                };
                check_entry_path(target).map_err(|_| bad("names something outside the module"))?;
                if below_link(&normalise(target)).is_some() {
                    return Err(bad("passes through a symbolic link"));
                }
            }
            Kind::File | Kind::Directory => {}
        }
    }
    Ok(())
}

/// A symbolic link at `path` is relative, and resolving `target` from the link's directory
/// step by step, without passing through another link, never leaves the module.
fn check_symlink(path: &str, target: &str, links: &BTreeSet<String>) -> Result<(), String> {
    let bad = |why: &str| {
        Err(format!(
            "symbolic link {:?} -> {:?} {why}: links must be relative and stay inside the module",
            crate::address::printable(path),
            crate::address::printable(target)
        ))
    };
    if target.is_empty()
        || target.starts_with('/')
        || target.contains('\\')
        || target.contains('\0')
        || target.as_bytes().get(1) == Some(&b':')
    {
        return bad("is absolute or empty");
    }
    let mut at: Vec<&str> = path.split('/').collect();
    at.pop();
    for part in target.split('/').filter(|p| !p.is_empty() && *p != ".") {
        if !at.is_empty() && links.contains(&at.join("/")) {
            return bad("passes through another link");
        }
        if part == ".." {
            if at.pop().is_none() {
                return bad("climbs out of the module");
            }
        } else {
            at.push(part);
        }
    }
    Ok(())
}

/// Reads every entry's data (so corrupt data is found now, not at `terraform init`),
/// counting the unpacked bytes against the limit.
struct Budget {
    left: u64,
    buffer: Vec<u8>,
}

impl Budget {
    fn new(max_unpacked: u64) -> Self {
        Budget { left: max_unpacked, buffer: vec![0u8; 64 * 1024] }
    }

    fn drain(&mut self, name: &str, mut reader: impl Read, mut sink: impl FnMut(&[u8])) -> Result<(), String> {
        loop {
            let n = reader.read(&mut self.buffer).map_err(|e| format!("entry {name:?} is unreadable: {e}"))?;
            if n == 0 {
                return Ok(());
            }
            self.left =
                self.left.checked_sub(n as u64).ok_or_else(|| "unpacks to more than the size limit".to_string())?;
            sink(&self.buffer[..n]);
        }
    }
}

/// An entry's name as stored (the bytes `h1:` hashes) and the SHA-256 of its data.
type EntryDigest = (Vec<u8>, [u8; 32]);

/// A zip's entries, and each one's digest, reading every byte.
fn zip_entries<R: Read + Seek>(
    reader: R,
    bounds: &Bounds,
    keeper: &mut Keeper,
) -> Result<(Vec<Entry>, Vec<EntryDigest>), String> {
    let meter = Meter::new(u64::MAX);
    meter.phase(Some((ZIP_DIRECTORY_BYTES, "the zip's central directory is larger than 32 MiB")));
    let opened = zip::ZipArchive::new(Metered { inner: reader, meter: meter.clone(), total: false });
    meter.phase(None);
    let mut archive = opened.map_err(|e| meter.explain("not a readable zip", e))?;
    if archive.len() as u64 > bounds.entries {
        return Err(format!(
            "{} entries, more than the limit of {} (REGISTRY_MAX_ARCHIVE_ENTRIES)",
            archive.len(),
            bounds.entries
        ));
    }
    if archive.has_duplicate_names() {
        return Err("two entries have the same name: readers disagree about which one is unpacked".into());
    }
    let mut budget = Budget::new(bounds.unpacked_bytes);
    let mut entries = Vec::with_capacity(archive.len());
    let mut hashes = Vec::with_capacity(archive.len());
    for i in 0..archive.len() {
        let entry = archive.by_index(i).map_err(|e| format!("not a readable zip: {e}"))?;
        let raw_name = entry.name_raw().to_vec();
        let name = entry_name(&raw_name)?;
        let (is_dir, is_symlink) = (entry.is_dir(), entry.is_symlink());
        let mut hasher = Sha256::new();
        let mut target = Vec::new();
        let keep = !is_dir && !is_symlink && keeper.wants(&name);
        let mut kept = Collecting(keep.then(Vec::new));
        budget.drain(&name, entry, |chunk| {
            hasher.update(chunk);
            if is_symlink && target.len() <= NAME_MAX_BYTES {
                target.extend_from_slice(chunk);
            }
            kept.add(chunk);
        })?;
        if keep {
            keeper.keep(&name, kept.0);
        }
        let kind = match (is_dir, is_symlink) {
            (true, _) => Kind::Directory,
            (false, true) => Kind::Symlink(entry_name(&target)?),
            (false, false) => Kind::File,
        };
        hashes.push((raw_name, hasher.finalize().into()));
        entries.push(Entry { name, kind });
    }
    Ok((entries, hashes))
}

/// A `.tar.gz`'s entries, reading every byte of every gzip member.
fn tar_gz_entries<R: Read>(reader: R, bounds: &Bounds, keeper: &mut Keeper) -> Result<Vec<Entry>, String> {
    const HEADER_TOO_LARGE: &str = "a tar header (pax records or a GNU long name) is larger than 1 MiB";
    let meter = Meter::new(bounds.unpacked_bytes);
    let stream = Metered { inner: flate2::read::MultiGzDecoder::new(reader), meter: meter.clone(), total: true };
    let mut archive = tar::Archive::new(stream);
    let unreadable = |e: std::io::Error| meter.explain("not a readable tar.gz", e);
    let mut entries = Vec::new();
    {
        let mut iter = archive.entries().map_err(unreadable)?;
        loop {
            meter.phase(Some((TAR_HEADER_BYTES, HEADER_TOO_LARGE)));
            let next = iter.next();
            meter.phase(None);
            let Some(entry) = next else { break };
            let mut entry = entry.map_err(unreadable)?;
            if entries.len() as u64 >= bounds.entries {
                return Err(format!(
                    "more entries than the limit of {} (REGISTRY_MAX_ARCHIVE_ENTRIES)",
                    bounds.entries
                ));
            }
            let name = entry_name(&entry.path_bytes())?;
            let link = || -> Result<String, String> {
                let target = entry.link_name_bytes().ok_or_else(|| format!("link {name:?} has no target"))?;
                entry_name(&target)
            };
            let entry_type = entry.header().entry_type();
            let kind = match entry_type {
                tar::EntryType::Directory => Some(Kind::Directory),
                // Old tar writers mark directories only by the trailing slash; Go does the same.
                tar::EntryType::Regular if name.ends_with('/') => Some(Kind::Directory),
                tar::EntryType::Regular | tar::EntryType::Continuous | tar::EntryType::GNUSparse => Some(Kind::File),
                tar::EntryType::Symlink => Some(Kind::Symlink(link()?)),
                tar::EntryType::Link => Some(Kind::Hardlink(link()?)),
                // Archive-wide pax records (`git archive` writes one): not a file.
                tar::EntryType::XGlobalHeader => None,
                other => {
                    return Err(format!(
                        "entry {:?} is a {other:?}: a module holds files, directories and links only",
                        crate::address::printable(&name)
                    ));
                }
            };
            if kind == Some(Kind::File) && keeper.wants(&name) {
                let mut kept = Collecting(Some(Vec::new()));
                let mut buffer = [0u8; 16 * 1024];
                loop {
                    let n = entry.read(&mut buffer).map_err(unreadable)?;
                    if n == 0 {
                        break;
                    }
                    kept.add(&buffer[..n]);
                }
                keeper.keep(&name, kept.0);
            } else {
                std::io::copy(&mut entry, &mut std::io::sink()).map_err(unreadable)?;
            }
            if let Some(kind) = kind {
                entries.push(Entry { name, kind });
            }
        }
    }
    // tar stopped at a zero block or at the end of the stream: what follows must be the
    // second zero block of the end-of-archive marker, and nothing but zeros after it.
    let mut rest = archive.into_inner();
    let (mut zeros, mut buffer) = (0u64, vec![0u8; 64 * 1024]);
    loop {
        let n = rest.read(&mut buffer).map_err(unreadable)?;
        if n == 0 {
            break;
        }
        if buffer[..n].iter().any(|b| *b != 0) {
            return Err("data after the tar end-of-archive marker (a second archive appended?)".into());
        }
        zeros += n as u64;
    }
    if zeros < 512 {
        return Err("no tar end-of-archive marker: the archive was cut short".into());
    }
    Ok(entries)
}

/// The `h1:` hash exactly as the CLI computes it for a zip (Go's `dirhash.HashZip` with
/// `Hash1`): for every entry, sorted by name, the line `"<sha256 hex>  <name>\n"`, then
/// base64 of the SHA-256 of all lines. Directory entries count as empty files, as in the
/// CLI's check.
pub fn summarise_zip<R: Read + Seek>(reader: R, bounds: &Bounds) -> Result<ZipSummary, String> {
    let (entries, mut hashes) = zip_entries(reader, bounds, &mut Keeper::new(&|_| false))?;
    check_tree(&entries)?;
    hashes.sort_by(|a, b| a.0.cmp(&b.0));
    let mut summary = Sha256::new();
    for (name, sha256) in &hashes {
        summary.update(hex::encode(sha256).as_bytes());
        summary.update(b"  ");
        summary.update(name);
        summary.update(b"\n");
    }
    let h1 = format!("h1:{}", base64::engine::general_purpose::STANDARD.encode(summary.finalize()));
    let directory_entries = entries.iter().filter(|e| e.kind == Kind::Directory).count();
    let files = entries.into_iter().filter(|e| e.kind == Kind::File).map(|e| e.name).collect();
    Ok(ZipSummary { h1, directory_entries, files })
}

/// A provider package: a readable zip with the provider executable
/// (`terraform-provider-TYPE…`) at its root.
pub fn check_provider_zip<R: Read + Seek>(reader: R, r#type: &str, bounds: &Bounds) -> Result<ZipSummary, String> {
    let summary = summarise_zip(reader, bounds)?;
    let executable = format!("terraform-provider-{type}");
    if !summary.files.iter().any(|f| !f.contains('/') && f.starts_with(&executable)) {
        return Err(format!("no provider executable {executable}* at the root of the zip"));
    }
    Ok(summary)
}

/// A module archive: readable to the end, every entry inside the module directory, and at
/// least one `.tf`, `.tf.json`, `.tofu` or `.tofu.json` file at its root (Terraform uses the
/// archive root as the module directory).
#[cfg(any(test, feature = "test-support"))]
pub fn check_module_archive<R: Read + Seek>(reader: R, extension: &str, bounds: &Bounds) -> Result<(), String> {
    read_module_archive(reader, extension, bounds, &|_| false).map(|_| ())
}

/// [`check_module_archive`], keeping the regular files whose normalised path `wanted`
/// accepts (within `KEPT_FILE_BYTES` each and `KEPT_TOTAL_BYTES` in all), read in the same
/// pass.
pub fn read_module_archive<R: Read + Seek>(
    reader: R,
    extension: &str,
    bounds: &Bounds,
    wanted: &dyn Fn(&str) -> bool,
) -> Result<Vec<KeptFile>, String> {
    let mut keeper = Keeper::new(wanted);
    let entries = match extension {
        "zip" => zip_entries(reader, bounds, &mut keeper)?.0,
        "tar.gz" | "tgz" => tar_gz_entries(reader, bounds, &mut keeper)?,
        other => return Err(format!("unsupported archive type {other:?}")),
    };
    check_tree(&entries)?;
    let files: Vec<String> = entries.iter().filter(|e| e.kind == Kind::File).map(|e| normalise(&e.name)).collect();
    let is_module_file = |n: &String| MODULE_FILE_SUFFIXES.iter().any(|s| n.ends_with(s));
    if files.iter().any(|n| !n.contains('/') && is_module_file(n)) {
        return Ok(keeper.kept);
    }
    Err(match files.iter().find(|n| is_module_file(n)) {
        Some(n) => format!(
            "no .tf, .tf.json or .tofu file at the archive root (found {:?}): archive the module directory's contents, not the directory",
            crate::address::printable(n)
        ),
        None => "no .tf, .tf.json or .tofu file in the archive".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Item, gzip, tar, tar_gz, tar_gz_items, tar_without_end_marker, zip, zip_items};
    use std::io::Cursor;

    const ANY: Bounds = Bounds::UNLIMITED;

    fn h1_reference(files: &[(&str, &[u8])]) -> String {
        let mut lines: Vec<String> =
            files.iter().map(|(n, d)| format!("{}  {n}\n", hex::encode(Sha256::digest(d)))).collect();
        lines.sort_by(|a, b| a.split("  ").nth(1).cmp(&b.split("  ").nth(1)));
        format!("h1:{}", base64::engine::general_purpose::STANDARD.encode(Sha256::digest(lines.concat().as_bytes())))
    }

    /// The pax global header `git archive` writes first (the commit id as a comment).
    fn git_archive_header() -> Vec<u8> {
        let record = b"52 comment=0123456789abcdef0123456789abcdef01234567\n";
        let mut header = ::tar::Header::new_ustar();
        header.set_entry_type(::tar::EntryType::XGlobalHeader);
        header.set_path("pax_global_header").unwrap();
        header.set_size(record.len() as u64);
        header.set_cksum();
        let mut block = header.as_bytes().to_vec();
        block.extend_from_slice(record);
        block.resize(1024, 0);
        block
    }

    fn module(bytes: Vec<u8>, extension: &str) -> Result<(), String> {
        check_module_archive(Cursor::new(bytes), extension, &ANY)
    }

    #[test]
    fn h1_matches_the_cli_algorithm() {
        let files: [(&str, &[u8]); 2] = [("terraform-provider-x_v1", b"binary"), ("LICENSE", b"MIT")];
        let summary = summarise_zip(Cursor::new(zip(&files)), &ANY).unwrap();
        assert_eq!(summary.h1, h1_reference(&files));
        assert_eq!(summary.directory_entries, 0);
        // Directory entries count as empty files and are reported.
        let with_dir: [(&str, &[u8]); 2] = [("docs/", b""), ("docs/a", b"a")];
        let summary = summarise_zip(Cursor::new(zip(&with_dir)), &ANY).unwrap();
        assert_eq!((summary.h1, summary.directory_entries), (h1_reference(&with_dir), 1));
    }

    #[test]
    fn provider_zips() {
        let good = zip(&[("terraform-provider-null_v3.2.1_x5", b"bin"), ("LICENSE", b"x")]);
        assert!(check_provider_zip(Cursor::new(good.clone()), "null", &ANY).is_ok());
        let small = Bounds { unpacked_bytes: 2, entries: u64::MAX };
        let one_entry = Bounds { unpacked_bytes: u64::MAX, entries: 1 };
        let cases: Vec<(Vec<u8>, &str, Bounds, &str)> = vec![
            (b"not a zip".to_vec(), "null", ANY, "not a readable zip"),
            (good.clone(), "random", ANY, "no provider executable terraform-provider-random*"),
            (zip(&[("bin/terraform-provider-null", b"x")]), "null", ANY, "no provider executable"),
            (zip(&[("../terraform-provider-null", b"x")]), "null", ANY, "outside the module directory"),
            (good.clone(), "null", small, "more than the size limit"),
            (good, "null", one_entry, "2 entries, more than the limit of 1"),
            (
                zip_items(&[Item::File("terraform-provider-null", b"x"), Item::Symlink("lib", "/usr/lib")]),
                "null",
                ANY,
                "is absolute",
            ),
        ];
        for (bytes, r#type, bounds, needle) in cases {
            let err = check_provider_zip(Cursor::new(bytes), r#type, &bounds).unwrap_err();
            assert!(err.contains(needle), "{err} lacks {needle}");
        }
    }

    #[test]
    fn module_archives() {
        let ok: Vec<(Vec<u8>, &str)> = vec![
            (tar_gz(&[("main.tf", b"")]), "tar.gz"),
            (tar_gz(&[("./variables.tf.json", b"{}"), ("./modules/x/main.tf", b"")]), "tgz"),
            (zip(&[("main.tofu", b"")]), "zip"),
            // GNU tar pads the archive with zeros to a 10 KiB record: still the end marker.
            (gzip(&[tar(&[Item::File("main.tf", b"")]), vec![0u8; 10240]].concat()), "tar.gz"),
            (tar_gz_items(&[Item::Dir("modules/"), Item::File("main.tf", b"")]), "tar.gz"),
            // `git archive` starts with an archive-wide pax record.
            (gzip(&[git_archive_header(), tar(&[Item::File("main.tf", b"")])].concat()), "tar.gz"),
        ];
        for (bytes, ext) in ok {
            module(bytes, ext).unwrap();
        }
        let mut truncated = tar_gz(&[("main.tf", &[7u8; 50_000])]);
        truncated.truncate(truncated.len() / 2);
        let tiny = Bounds { unpacked_bytes: 1000, entries: u64::MAX };
        let bad: Vec<(Vec<u8>, &str, Bounds, &str)> = vec![
            (b"garbage".to_vec(), "tar.gz", ANY, "not a readable tar.gz"),
            (truncated, "tar.gz", ANY, "not a readable tar.gz"),
            (tar_gz(&[("README.md", b"")]), "tar.gz", ANY, "no .tf, .tf.json or .tofu file in the archive"),
            (tar_gz(&[("vpc-1.0.0/main.tf", b"")]), "tgz", ANY, "not the directory"),
            (zip(&[("/etc/main.tf", b"")]), "zip", ANY, "outside"),
            (tar_gz(&[("main.tf", &[0u8; 10_000])]), "tar.gz", tiny, "size limit"),
            (zip(&[("main.tf", b"")]), "tar.gz", ANY, "not a readable tar.gz"),
            (tar_gz_items(&[Item::File("main.tf", b""), Item::Fifo("pipe")]), "tar.gz", ANY, "is a Fifo"),
        ];
        for (bytes, ext, bounds, needle) in bad {
            let err = check_module_archive(Cursor::new(bytes), ext, &bounds).unwrap_err();
            assert!(err.contains(needle), "{err} lacks {needle}");
        }
    }

    /// Go's gzip reader (so go-getter, so the CLI) reads every member of a `.tar.gz`; a check
    /// that stopped after the first would pass what the second member holds.
    #[test]
    fn every_gzip_member_is_read_and_the_tar_must_end() {
        let innocent = gzip(&tar_without_end_marker(&[Item::File("main.tf", b"# fine\n")]));
        let hidden_traversal = [innocent.clone(), gzip(&tar(&[Item::File("../../x.tf", b"evil")]))].concat();
        assert!(module(hidden_traversal, "tar.gz").unwrap_err().contains("outside the module directory"));

        let bomb = [innocent.clone(), gzip(&tar(&[Item::File("big.tf", &vec![b'x'; 100_000])]))].concat();
        let bounds = Bounds { unpacked_bytes: 50_000, entries: u64::MAX };
        let err = check_module_archive(Cursor::new(bomb), "tar.gz", &bounds).unwrap_err();
        assert!(err.contains("size limit"), "{err}");

        let whole = gzip(&tar(&[Item::File("main.tf", b"")]));
        let appended = [whole, gzip(&tar(&[Item::File("other.tf", b"")]))].concat();
        assert!(module(appended, "tar.gz").unwrap_err().contains("data after the tar end-of-archive marker"));

        assert!(module(innocent, "tar.gz").unwrap_err().contains("no tar end-of-archive marker"));
    }

    #[test]
    fn links_stay_inside_the_module() {
        let main = Item::File("main.tf", b"");
        let ok: Vec<Vec<Item<'_>>> = vec![
            vec![main, Item::Dir("modules/x/"), Item::Symlink("modules/x/versions.tf", "../../versions.tf")],
            vec![main, Item::Symlink("a/b", ".."), Item::Symlink("c", "./a/b")],
            vec![main, Item::Hardlink("copy.tf", "main.tf")],
        ];
        for items in ok {
            module(tar_gz_items(&items), "tar.gz").unwrap_or_else(|e| panic!("{items:?}: {e}"));
        }
        let bad: Vec<(Vec<Item<'_>>, &str)> = vec![
            (vec![main, Item::Symlink("m", "../../../../home")], "climbs out of the module"),
            (vec![main, Item::Symlink("m", "/home")], "is absolute"),
            (vec![main, Item::Symlink("sub/m", "../..")], "climbs out of the module"),
            (vec![main, Item::Hardlink("h", "/etc/shadow")], "names something outside the module"),
            (vec![main, Item::Hardlink("h", "../x")], "names something outside the module"),
            // Written through a link: `d` is the module root, so `d/..` is outside it.
            (vec![main, Item::Symlink("d", "."), Item::File("d/x.tf", b"")], "lies below the symbolic link"),
            (vec![main, Item::Symlink("a/b", ".."), Item::Symlink("a/b/l", "../..")], "lies below the symbolic link"),
            (vec![main, Item::Symlink("s", "."), Item::Symlink("l", "s/..")], "passes through another link"),
            (vec![main, Item::Symlink("s", "."), Item::Hardlink("h", "s/main.tf")], "passes through a symbolic link"),
        ];
        for (items, needle) in bad {
            let err = module(tar_gz_items(&items), "tar.gz").unwrap_err();
            assert!(err.contains(needle), "{items:?}: {err} lacks {needle}");
        }
        let zipped = zip_items(&[main, Item::Symlink("m", "../../../../home")]);
        assert!(module(zipped, "zip").unwrap_err().contains("climbs out of the module"));
        module(zip_items(&[main, Item::Dir("x/"), Item::Symlink("x/v.tf", "../main.tf")]), "zip").unwrap();
    }

    #[test]
    fn memory_is_bounded_whatever_the_archive_says() {
        let many: Vec<(String, Vec<u8>)> = (0..11).map(|i| (format!("f{i}.tf"), vec![])).collect();
        let many: Vec<(&str, &[u8])> = many.iter().map(|(n, d)| (n.as_str(), d.as_slice())).collect();
        let ten = Bounds { unpacked_bytes: u64::MAX, entries: 10 };
        let err = check_module_archive(Cursor::new(tar_gz(&many)), "tar.gz", &ten).unwrap_err();
        assert!(err.contains("more entries than the limit of 10"), "{err}");
        let err = check_module_archive(Cursor::new(zip(&many)), "zip", &ten).unwrap_err();
        assert!(err.contains("11 entries, more than the limit of 10"), "{err}");

        // A pax header the tar reader would hold in memory whole: refused at 1 MiB.
        let mut header = ::tar::Header::new_ustar();
        header.set_entry_type(::tar::EntryType::XHeader);
        header.set_path("pax").unwrap();
        let records = vec![b'x'; 2 << 20];
        header.set_size(records.len() as u64);
        header.set_cksum();
        let mut builder = ::tar::Builder::new(Vec::new());
        builder.append(&header, records.as_slice()).unwrap();
        let mut file = ::tar::Header::new_ustar();
        file.set_path("main.tf").unwrap();
        file.set_size(0);
        file.set_cksum();
        builder.append(&file, std::io::empty()).unwrap();
        let err = module(gzip(&builder.into_inner().unwrap()), "tar.gz").unwrap_err();
        assert!(err.contains("larger than 1 MiB"), "{err}");

        let long = format!("{}.tf", "a/".repeat(2100));
        assert!(module(tar_gz(&[("main.tf", b""), (&long, b"")]), "tar.gz").unwrap_err().contains("longer than 4096"));
    }

    /// Two entries with one name: which one a reader unpacks differs between implementations.
    #[test]
    fn a_zip_may_not_name_two_entries_alike() {
        let mut bytes = zip(&[("main.tf", b"# one"), ("mainXtf", b"# two")]);
        let at: Vec<usize> = bytes.windows(7).enumerate().filter(|(_, w)| *w == b"mainXtf").map(|(i, _)| i).collect();
        assert_eq!(at.len(), 2, "the name in the local and the central header");
        for i in at {
            bytes[i + 4] = b'.';
        }
        assert!(module(bytes, "zip").unwrap_err().contains("two entries have the same name"));
    }

    #[test]
    fn the_check_keeps_the_wanted_files_in_the_same_pass() {
        let big = vec![b'x'; KEPT_FILE_BYTES + 1];
        let files: [(&str, &[u8]); 5] = [
            ("main.tf", b"first"),
            ("./README.md", b"readme"),
            ("notes.txt", b"not wanted"),
            ("big.tf", &big),
            ("main.tf", b"second"),
        ];
        let wanted = |p: &str| p.ends_with(".tf") || p == "README.md";
        let tar = read_module_archive(Cursor::new(tar_gz(&files)), "tar.gz", &ANY, &wanted).unwrap();
        let kept = |k: &[KeptFile], path: &str| k.iter().find(|f| f.path == path).map(|f| f.bytes.clone());
        assert_eq!(kept(&tar, "README.md"), Some(Some(b"readme".to_vec())));
        assert_eq!(kept(&tar, "main.tf"), Some(Some(b"second".to_vec())), "a later entry replaces, as unpacking does");
        assert_eq!(kept(&tar, "big.tf"), Some(None), "named, not kept");
        assert_eq!(kept(&tar, "notes.txt"), None);
        assert_eq!(tar.len(), 3);
        let zipped = read_module_archive(Cursor::new(zip(&files[..4])), "zip", &ANY, &wanted).unwrap();
        assert_eq!(kept(&zipped, "main.tf"), Some(Some(b"first".to_vec())));
        assert_eq!(kept(&zipped, "big.tf"), Some(None));
        assert_eq!(zipped.len(), 3);
        // A bad archive keeps nothing: the check's verdict comes first.
        assert!(
            read_module_archive(Cursor::new(zip(&[("README.md", b"x".as_slice())])), "zip", &ANY, &wanted).is_err()
        );
    }
}
