//! The two formats read entry by entry, bounded: a zip (each entry's digest, for `h1:`) and a
//! `.tar.gz` (through every gzip member, to tar's end marker).

use std::io::{Read, Seek};

use sha2::{Digest, Sha256};

use super::bounded::{Budget, Meter, Metered};
use super::keep::{Collecting, Keeper};
use super::tree::entry_name;
use super::{Bounds, Entry, Kind, NAME_MAX_BYTES, TAR_HEADER_BYTES, ZIP_DIRECTORY_BYTES};

/// An entry's name as stored (the bytes `h1:` hashes) and the SHA-256 of its data.
pub(super) type EntryDigest = (Vec<u8>, [u8; 32]);

/// A zip's entries, and each one's digest, reading every byte.
pub(super) fn zip_entries<R: Read + Seek>(
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
pub(super) fn tar_gz_entries<R: Read>(reader: R, bounds: &Bounds, keeper: &mut Keeper) -> Result<Vec<Entry>, String> {
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
