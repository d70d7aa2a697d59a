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
//! - no sparse tar entry (GNU `S`, or pax `GNU.sparse.*` records): its holes unpack to zeros
//!   the archive does not hold, and tar-rs reads pax sparse files as Go does not;
//! - a tar entry is named, typed and sized as Go's archive/tar (so go-getter, so the CLI)
//!   reads it, and refused where tar-rs would read it otherwise (`headers.rs`): pax records
//!   parsed by their length prefix, none malformed, twice, holding a newline or NUL, or
//!   setting a size other than the header's; a global pax header holding only a comment; no
//!   star header, no header field Go cannot parse, no data after a link or directory header,
//!   no file named `…/`, no mode whose type bits say another type;
//! - no path or link target of more than `PATH_MAX_DEPTH` components, and the tree check
//!   walks each path once through a tree of the links (linear in the names' length);
//! - a zip may not hold two entries with one name (which one counts differs between readers),
//!   and each entry unpacks to exactly the size its headers declare (as Go's reader demands);
//! - memory stays bounded whatever the input: at most `Bounds::entries` entries of at most
//!   `NAME_MAX_BYTES` each, tar headers between two entries (pax records, GNU long names)
//!   of at most `TAR_HEADER_BYTES`, a zip central directory of at most
//!   `ZIP_DIRECTORY_BYTES`, and against `Bounds::unpacked_bytes` both the decompressed
//!   stream and every byte an entry yields (what unpacking would write), the repack alike.

use std::io::{Read, Seek};

use base64::Engine;
use sha2::{Digest, Sha256};

mod bounded;
mod flatten;
mod headers;
mod keep;
mod readers;
mod repack;
#[cfg(test)]
mod tests;
mod tree;

pub use flatten::strip_top_directory;
use keep::Keeper;
use readers::{tar_gz_entries, zip_entries};
pub use repack::tar_gz_to_zip;
use tree::{check_tree, normalise};

/// Files that make a directory a Terraform/OpenTofu module.
pub const MODULE_FILE_SUFFIXES: [&str; 4] = [".tf", ".tf.json", ".tofu", ".tofu.json"];
/// Longest entry name or link target (Linux's `PATH_MAX`).
pub const NAME_MAX_BYTES: usize = 4096;
/// Most components (directories and the name) an entry's path or a link target may have: far
/// past any module, and what keeps the tree check's work linear in the archive.
pub const PATH_MAX_DEPTH: usize = 128;
/// Most bytes of tar headers between two entries: the pax records and GNU long names that
/// describe the next entry (held in memory until it comes) at most 1 MiB together, as Go's
/// archive/tar bounds each one; tar-rs may read no more to reach a header block.
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
        return Ok(keeper.into_kept());
    }
    Err(match files.iter().find(|n| is_module_file(n)) {
        Some(n) => format!(
            "no .tf, .tf.json or .tofu file at the archive root (found {:?}): archive the module directory's contents, not the directory",
            crate::address::printable(n)
        ),
        None => "no .tf, .tf.json or .tofu file in the archive".into(),
    })
}
