//! The two formats read entry by entry, bounded: a zip (each entry's digest, for `h1:`) and a
//! `.tar.gz` (through every gzip member, to tar's end marker). Every entry's data is read
//! through `Budget`, which counts what it yields.

use std::io::{Read, Seek};

use sha2::{Digest, Sha256};

use super::bounded::{Budget, Meter, Metered};
use super::headers::{GoHeader, Pending, Resolved, global_header, go_header};
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
        let file = archive.by_index(i).map_err(|e| format!("not a readable zip: {e}"))?;
        let (entry, digest) = zip_entry(file, &mut budget, keeper)?;
        entries.push(entry);
        hashes.push(digest);
    }
    Ok((entries, hashes))
}

/// One zip entry read to its end: what it is, and its digest.
fn zip_entry<R: Read>(
    file: zip::read::ZipFile<'_, R>,
    budget: &mut Budget,
    keeper: &mut Keeper,
) -> Result<(Entry, EntryDigest), String> {
    let raw_name = file.name_raw().to_vec();
    let name = entry_name(&raw_name)?;
    let (is_dir, is_symlink, declared) = (file.is_dir(), file.is_symlink(), file.size());
    let mut hasher = Sha256::new();
    let mut target = Vec::new();
    let keep = !is_dir && !is_symlink && keeper.wants(&name);
    let mut kept = Collecting(keep.then(Vec::new));
    let unreadable = |e: std::io::Error| format!("entry {name:?} is unreadable: {e}");
    // The zip crate refuses more bytes than declared; fewer it passes, and Go's reader (so the
    // CLI, and its `h1:`) refuses them: the archive would check here and fail at install.
    let yielded = budget.drain(file, &unreadable, |chunk| {
        hasher.update(chunk);
        if is_symlink && target.len() <= NAME_MAX_BYTES {
            target.extend_from_slice(chunk);
        }
        kept.add(chunk);
        Ok(())
    })?;
    if yielded != declared {
        return Err(format!(
            "entry {:?} unpacks to {yielded} bytes, not the {declared} its header declares",
            crate::address::printable(&name)
        ));
    }
    if keep {
        keeper.keep(&name, kept.0);
    }
    let kind = match (is_dir, is_symlink) {
        (true, _) => Kind::Directory,
        (false, true) => Kind::Symlink(entry_name(&target)?),
        (false, false) => Kind::File,
    };
    Ok((Entry { name, kind }, (raw_name, hasher.finalize().into())))
}

/// A `.tar.gz`'s entries, reading every byte of every gzip member.
pub(super) fn tar_gz_entries<R: Read>(reader: R, bounds: &Bounds, keeper: &mut Keeper) -> Result<Vec<Entry>, String> {
    let mut entries = Vec::new();
    tar_gz_each(reader, bounds, |entry| {
        if entry.kind == Kind::File && keeper.wants(&entry.name) {
            let mut kept = Collecting(Some(Vec::new()));
            entry.read(|chunk| {
                kept.add(chunk);
                Ok(())
            })?;
            keeper.keep(&entry.name, kept.0);
        }
        entries.push(Entry { name: entry.name.clone(), kind: entry.kind.clone() });
        Ok(())
    })?;
    Ok(entries)
}

/// One entry of a `.tar.gz` as `tar_gz_each` hands it on: its name and kind checked, its data
/// readable only through `read`, which counts every byte it yields.
pub(super) struct TarEntry<'a> {
    pub(super) name: String,
    pub(super) kind: Kind,
    /// Its permission bits.
    pub(super) mode: u32,
    data: &'a mut dyn Read,
    budget: &'a mut Budget,
    unreadable: &'a dyn Fn(std::io::Error) -> String,
}

impl TarEntry<'_> {
    /// Hand the entry's data, or what is left of it, to `sink`, counted against the limit.
    pub(super) fn read(&mut self, sink: impl FnMut(&[u8]) -> Result<(), String>) -> Result<(), String> {
        self.budget.drain(&mut *self.data, self.unreadable, sink).map(drop)
    }
}

/// Hand every entry of a `.tar.gz` to `visit` in order, through every gzip member, then check
/// the end-of-archive marker; the check and the repack both read through here. tar-rs frames
/// the stream block by block (`raw`); the headers that describe an entry (pax, GNU long
/// names) are read in `headers` as Go's reader reads them, and an entry is refused where Go
/// and tar-rs would read it differently. Bounded twice by `bounds.unpacked_bytes`: the
/// decompressed stream (headers and padding too: the work) by `Meter`, and what the entries
/// yield (what unpacking writes) by `Budget`.
pub(super) fn tar_gz_each<R: Read>(
    reader: R,
    bounds: &Bounds,
    mut visit: impl FnMut(&mut TarEntry<'_>) -> Result<(), String>,
) -> Result<(), String> {
    let meter = Meter::new(bounds.unpacked_bytes);
    let stream = Metered { inner: flate2::read::MultiGzDecoder::new(reader), meter: meter.clone(), total: true };
    let mut archive = tar::Archive::new(stream);
    let unreadable = |e: std::io::Error| meter.explain("not a readable tar.gz", e);
    let mut budget = Budget::new(bounds.unpacked_bytes);
    let (mut counted, mut pending) = (0u64, Pending::default());
    {
        let mut iter = archive.entries().map_err(unreadable)?.raw(true);
        while let Some(entry) = next_tar_entry(&meter, &mut iter) {
            let mut entry = entry.map_err(unreadable)?;
            let go = go_header(entry.header().as_bytes())?;
            if matches!(go.typeflag, b'x' | b'g' | b'L' | b'K') {
                let data = special_file(&mut entry, &go, pending.room(), &unreadable)?;
                if go.typeflag == b'g' {
                    if !pending.is_empty() {
                        return Err("a pax header or GNU long name comes before a global pax header".into());
                    }
                    global_header(&go, &data)?;
                } else {
                    pending.add(&go, data)?;
                }
                continue;
            }
            let size = entry.size();
            let Resolved { name, kind, mode } = std::mem::take(&mut pending).resolve(entry.header(), go, size)?;
            counted += 1;
            if counted > bounds.entries {
                return Err(format!(
                    "more entries than the limit of {} (REGISTRY_MAX_ARCHIVE_ENTRIES)",
                    bounds.entries
                ));
            }
            let mut item =
                TarEntry { name, kind, mode, data: &mut entry, budget: &mut budget, unreadable: &unreadable };
            visit(&mut item)?;
            item.read(|_| Ok(()))?;
        }
    }
    if !pending.is_empty() {
        return Err("the archive ends with a pax header or GNU long name that describes no entry".into());
    }
    tar_end(archive.into_inner(), &unreadable)
}

/// The next header block (and the padding before it), within `TAR_HEADER_BYTES`.
fn next_tar_entry<'a, R: Read>(
    meter: &Meter,
    iter: &mut tar::Entries<'a, R>,
) -> Option<std::io::Result<tar::Entry<'a, R>>> {
    meter.phase(Some((TAR_HEADER_BYTES, "a tar header (pax records or a GNU long name) is larger than 1 MiB")));
    let next = iter.next();
    meter.phase(None);
    next
}

/// The data of an extension header (pax `x` or `g`, GNU `L` or `K`), which the reader holds
/// in memory: within `room` (those before one entry together at most 1 MiB; Go refuses any
/// one larger). Only from ustar or GNU headers, the ones tar-rs takes them from (Go takes
/// them from any).
fn special_file<R: Read>(
    entry: &mut tar::Entry<'_, R>,
    go: &GoHeader,
    room: u64,
    unreadable: &dyn Fn(std::io::Error) -> String,
) -> Result<Vec<u8>, String> {
    if !go.recognised && go.typeflag != b'g' {
        return Err(format!(
            "a {:?} header in a tar header that is neither ustar nor GNU: readers disagree on whether it applies",
            tar::EntryType::new(go.typeflag)
        ));
    }
    if entry.size() > room {
        return Err("a tar header (pax records or a GNU long name) is larger than 1 MiB".into());
    }
    let mut data = Vec::with_capacity(entry.size() as usize);
    entry.read_to_end(&mut data).map_err(unreadable)?;
    Ok(data)
}

/// After the last entry: tar stopped at a zero block or at the end of the stream, so what
/// follows must be the second zero block of the end-of-archive marker, and nothing but zeros
/// after it.
fn tar_end(mut rest: impl Read, unreadable: &dyn Fn(std::io::Error) -> String) -> Result<(), String> {
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
    Ok(())
}
