//! `registry-local bundle-import`: an air-gap bundle (`bundle.rs`) put into a bucket, inside the
//! air gap, only once every file that decides what is served is proven to be what the bundle
//! was made with. Nothing is written until all of it holds; one mismatch refuses the whole
//! bundle:
//! - `SHA256SUMS` lists every file under `upstream-modules/` (pins, version lists, refusal
//!   records, archives), no file is missing from it or beside it, and each file's SHA-256 is
//!   the one listed; `SHA256SUMS` itself has the SHA-256 `bundle` printed (`--sums-sha256`,
//!   required unless `--no-sums-check`: that number carried apart from the bundle is what
//!   makes it trustworthy);
//! - each pin names its own module and version, and the archive it names is in the bundle, of
//!   the pin's size and SHA-256 (so an archive planted beside the real one, with a pin pointed
//!   at it, fails the list or the pin);
//! - each archive passes the checks a published archive passes (`archive::read_module_archive`);
//! - no pin the target holds names other bytes for a version (a pin is written once).
//!
//! Then archives first (`If-None-Match: *`), version lists (merged), refusal records, and pins
//! last (`If-None-Match: *`):
//! a pin's write is what serves its version and puts it on the publish log, once its bytes are
//! there.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use registry::config::ArchiveBounds as Bounds;
use registry::layout::{self, UpstreamModuleRecord};
use registry::manifest::CONTENT_TYPE_JSON;
use registry::storage::{Precondition, Storage};
use registry::upstream::module_records::{ModuleIndex, ModulePin, ModuleRefusal};
use sha2::Digest;
#[cfg(test)]
use std::io::Write;

use crate::bundle::{SUMS_FILE, files_under};
use crate::{LocalError, TokenTarget};

/// What an import did.
#[derive(Debug, Default)]
pub struct ImportReport {
    /// Pins written now, by key.
    pub pinned: Vec<String>,
    /// Pins the target held already, with the same bytes.
    pub present: Vec<String>,
    /// Every other file written.
    pub written: usize,
}

/// Every problem that refuses a bundle, each naming its file.
#[derive(Debug)]
pub struct Refused(pub Vec<String>);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "the bundle is refused, nothing was written ({} problems):", self.0.len())?;
        for problem in &self.0 {
            writeln!(f, "  {problem}")?;
        }
        Ok(())
    }
}

/// A bundle's files, verified: the archives by key (where each is), and every other file's
/// bytes as they were verified (pins, version lists, refusal records: small, and written as
/// checked, not read again); the pins and version lists read.
struct Verified {
    archives: BTreeMap<String, PathBuf>,
    small: BTreeMap<String, bytes::Bytes>,
    pins: Vec<(String, ModulePin)>,
    indexes: Vec<(String, ModuleIndex)>,
}

/// Largest file other than an archive a bundle holds (a pin, a version list, a refusal
/// record): the bundle's own writes are a few KB.
const SMALL_FILE_MAX: u64 = 4 << 20;
/// Largest `SHA256SUMS` read.
const SUMS_MAX: u64 = 64 << 20;

/// Whether `SHA256SUMS` itself is checked: against the SHA-256 `make bundle` printed, or not,
/// by the operator's explicit choice.
#[derive(Debug, Clone, Copy)]
pub enum Sums<'a> {
    /// `--sums-sha256 HEX`.
    Sha256(&'a str),
    /// `--no-sums-check`: the list is believed as it is.
    Unchecked,
}

/// Import the bundle at `dir` into `target`, if it is whole (see the module documentation).
pub async fn import(
    dir: &Path,
    sums: Sums<'_>,
    target: &TokenTarget,
    bounds: Bounds,
) -> Result<ImportReport, LocalError> {
    match target {
        TokenTarget::Bucket(bucket) => {
            let storage = registry::storage::S3Storage::from_env(bucket, false).await;
            import_into(dir, sums, &storage, bounds).await
        }
        TokenTarget::DataDir(data_dir) => {
            let running = crate::start(crate::LocalOptions::ephemeral(data_dir.clone())).await?;
            let report = import_into(dir, sums, &running.storage, bounds).await;
            running.stop().await;
            report
        }
    }
}

/// `import`, into `storage` (a registry running in this process: the tests').
pub async fn import_into<S: Storage>(
    dir: &Path,
    sums: Sums<'_>,
    storage: &S,
    bounds: Bounds,
) -> Result<ImportReport, LocalError> {
    let verified = verify(dir, sums, bounds).map_err(|r| LocalError(r.to_string()))?;
    write(storage, &verified).await
}

/// Every check that does not need the target: the list, each file's kind and bytes, the pins
/// and version lists, the archives.
fn verify(dir: &Path, sums: Sums<'_>, bounds: Bounds) -> Result<Verified, Refused> {
    let mut problems = Vec::new();
    let listed = read_sums(dir, sums, &mut problems)?;
    let found = files_under(dir, layout::UPSTREAM_MODULES_PREFIX).map_err(|e| Refused(vec![e.0]))?;
    let mut verified =
        Verified { archives: BTreeMap::new(), small: BTreeMap::new(), pins: Vec::new(), indexes: Vec::new() };
    let mut hashes = BTreeMap::new();
    for (key, path) in found {
        let Some(expected) = listed.get(&key) else {
            problems.push(format!("{key} is not listed in {SUMS_FILE}"));
            continue;
        };
        match read_file(&key, &path, bounds) {
            Ok((sha256, _)) if &sha256 != expected => {
                problems.push(format!("{key} has SHA-256 {sha256}, not the {expected} {SUMS_FILE} lists"))
            }
            Ok((sha256, Some(bytes))) => {
                hashes.insert(key.clone(), sha256);
                verified.small.insert(key, bytes);
            }
            Ok((sha256, None)) => {
                hashes.insert(key.clone(), sha256);
                verified.archives.insert(key, path);
            }
            Err(why) => problems.push(format!("{key}: {why}")),
        }
    }
    problems.extend(listed.keys().filter(|k| !hashes.contains_key(*k)).map(|k| format!("{k} is listed but missing")));
    check_pins(&mut verified, &hashes, &mut problems);
    check_indexes(&mut verified, &mut problems);
    if problems.is_empty() { Ok(verified) } else { Err(Refused(problems)) }
}

/// `SHA256SUMS`, bounded, checked against `sums` and read.
fn read_sums(dir: &Path, sums: Sums<'_>, problems: &mut Vec<String>) -> Result<BTreeMap<String, String>, Refused> {
    let path = dir.join(SUMS_FILE);
    let refused = |why: String| Refused(vec![format!("{}: {why}", path.display())]);
    let meta = std::fs::symlink_metadata(&path).map_err(|e| refused(e.to_string()))?;
    if !meta.is_file() || meta.len() > SUMS_MAX {
        return Err(refused(format!("not a plain file of at most {SUMS_MAX} bytes")));
    }
    let bytes = std::fs::read(&path).map_err(|e| refused(e.to_string()))?;
    let actual = hex::encode(sha2::Sha256::digest(&bytes));
    if let Sums::Sha256(expected) = sums
        && !expected.eq_ignore_ascii_case(&actual)
    {
        problems.push(format!("{SUMS_FILE} has SHA-256 {actual}, not {expected}"));
    }
    registry::upstream::bundle::parse_sums(&bytes).map_err(|why| Refused(vec![format!("{SUMS_FILE}: {why}")]))
}

/// One file of the bundle by its kind: an archive is hashed as it is read, must be named by
/// that very SHA-256, and is checked as a published archive is (`None`: left on disk, written
/// from there); any other file is one of the bundle's own small records, read whole (`Some`:
/// written as read).
fn read_file(key: &str, path: &Path, bounds: Bounds) -> Result<(String, Option<bytes::Bytes>), String> {
    if let Some((_, _, named)) = layout::upstream_module_archive_parts(key) {
        let sha256 = hash_file(path)?;
        if sha256 != named {
            return Err(format!("an archive named by SHA-256 {named} has SHA-256 {sha256}"));
        }
        let extension = if key.ends_with(".zip") { "zip" } else { "tar.gz" };
        let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
        registry::upstream::module_source::check_archive(file, extension, &bounds)
            .map_err(|why| format!("not an archive the registry serves: {why}"))?;
        return Ok((sha256, None));
    }
    let record = layout::upstream_module_record(key);
    if record.is_none() && index_module(key).is_none() {
        return Err("no file of a bundle (a pin, a refusal record, a version list, an archive)".into());
    }
    if std::fs::metadata(path).map_err(|e| e.to_string())?.len() > SMALL_FILE_MAX {
        return Err(format!("larger than {SMALL_FILE_MAX} bytes"));
    }
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    if let Some(UpstreamModuleRecord::Refusal(..)) = record {
        serde_json::from_slice::<ModuleRefusal>(&bytes).map_err(|e| format!("not a refusal record ({e})"))?;
    }
    Ok((hex::encode(sha2::Sha256::digest(&bytes)), Some(bytes.into())))
}

/// The module whose version list `key` is (`layout::upstream_module_index`), if it is one.
fn index_module(key: &str) -> Option<registry::address::UpstreamModule> {
    let parts: Vec<&str> = key.strip_prefix(layout::UPSTREAM_MODULES_PREFIX)?.split('/').collect();
    let [host, namespace, name, system, "index.json"] = parts[..] else { return None };
    let module = registry::address::UpstreamModule::parse(host, namespace, name, system).ok()?;
    (layout::upstream_module_index(&module) == key).then_some(module)
}

/// Each pin, checked against its key and the archive it names.
fn check_pins(verified: &mut Verified, hashes: &BTreeMap<String, String>, problems: &mut Vec<String>) {
    for (key, bytes) in &verified.small {
        let Some(UpstreamModuleRecord::Pin(module, version)) = layout::upstream_module_record(key) else { continue };
        let pin = match ModulePin::parse(bytes) {
            Ok(pin) => pin,
            Err(e) => {
                problems.push(format!("{key}: {}", registry::error::chain(&e)));
                continue;
            }
        };
        if pin.module != module.to_string() || pin.version != version.to_string() {
            problems.push(format!("{key} names {} {}", pin.module, pin.version));
            continue;
        }
        let archive = layout::upstream_module_archive(&module, &version, &pin.sha256, &pin.archive);
        let size = verified.archives.get(&archive).and_then(|path| std::fs::metadata(path).ok()).map(|m| m.len());
        match (hashes.get(&archive), size) {
            (None, _) => problems.push(format!("{key} names {archive}, which the bundle does not hold")),
            (Some(sha256), _) if *sha256 != pin.sha256 => {
                problems.push(format!("{key} pins SHA-256 {}; {archive} has {sha256}", pin.sha256))
            }
            (_, size) if size != Some(pin.size) => {
                problems.push(format!("{key} pins {} bytes; {archive} has {size:?}", pin.size))
            }
            _ => verified.pins.push((key.clone(), pin)),
        }
    }
}

/// Each version list: a module's (`layout::upstream_module_index`), every version it lists as
/// copied a SemVer version the bundle pins (none is served without a pin).
fn check_indexes(verified: &mut Verified, problems: &mut Vec<String>) {
    let pinned: BTreeSet<&str> = verified.pins.iter().map(|(k, _)| k.as_str()).collect();
    let mut indexes = Vec::new();
    for (key, bytes) in &verified.small {
        let Some(module) = index_module(key) else { continue };
        let index = match ModuleIndex::parse(bytes) {
            Ok(index) => index,
            Err(e) => {
                problems.push(format!("{key}: {}", registry::error::chain(&e)));
                continue;
            }
        };
        for version in &index.copied {
            let pin = registry::address::parse_version(version).map(|v| layout::upstream_module_pin(&module, &v));
            if !pin.as_ref().is_ok_and(|p| pinned.contains(p.as_str())) {
                problems.push(format!("{key} lists {version:?} as copied, which the bundle does not pin"));
            }
        }
        indexes.push((key.clone(), index));
    }
    verified.indexes = indexes;
}

fn hash_file(path: &Path) -> Result<String, String> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let (mut hasher, mut buffer) = (sha2::Sha256::new(), vec![0u8; 1 << 16]);
    loop {
        let n = file.read(&mut buffer).map_err(|e| e.to_string())?;
        if n == 0 {
            return Ok(hex::encode(hasher.finalize()));
        }
        hasher.update(&buffer[..n]);
    }
}

/// The writes, once the target's own pins agree: archives (`If-None-Match: *`: one named by
/// its SHA-256 is those bytes, and what the bucket holds under the name is never replaced),
/// version lists (merged with the target's), refusal records, then pins (`If-None-Match: *`).
/// An archive is read again from disk to be written: whoever could change the bundle between
/// the check and the write could only make a pinned download fail its checksum (the pin, read
/// once, names the SHA-256 checked), never serve other bytes.
async fn write<S: Storage>(storage: &S, verified: &Verified) -> Result<ImportReport, LocalError> {
    let fail = |e: registry::error::Error| LocalError(registry::error::chain(&e).to_string());
    let mut disagree = Vec::new();
    let mut present = BTreeSet::new();
    for (key, pin) in &verified.pins {
        if let Some(held) = storage.get(key).await.map_err(fail)? {
            match ModulePin::parse(&held.bytes) {
                Ok(held) if held.sha256 == pin.sha256 => _ = present.insert(key.clone()),
                Ok(held) => {
                    disagree.push(format!("{key}: the target pins SHA-256 {}, the bundle {}", held.sha256, pin.sha256))
                }
                Err(_) => disagree.push(format!("{key}: the target's pin is unreadable")),
            }
        }
    }
    if !disagree.is_empty() {
        return Err(LocalError(Refused(disagree).to_string()));
    }
    let mut report = ImportReport { present: present.iter().cloned().collect(), ..ImportReport::default() };
    for (key, path) in &verified.archives {
        match storage.put_file(key, path, "application/octet-stream", Precondition::IfAbsent).await {
            Ok(()) | Err(registry::error::Error::Conflict(_)) => report.written += 1,
            Err(e) => return Err(fail(e)),
        }
    }
    for (key, index) in &verified.indexes {
        merge_index(storage, key, index).await?;
        report.written += 1;
    }
    for (key, bytes) in &verified.small {
        if let Some(UpstreamModuleRecord::Refusal(..)) = layout::upstream_module_record(key) {
            storage.put(key, bytes.clone(), CONTENT_TYPE_JSON, Precondition::None).await.map_err(fail)?;
            report.written += 1;
        }
    }
    for (key, _) in &verified.pins {
        if present.contains(key) {
            continue;
        }
        let bytes = verified.small[key].clone();
        match storage.put(key, bytes, CONTENT_TYPE_JSON, Precondition::IfAbsent).await {
            Ok(()) => report.pinned.push(key.clone()),
            // Written meanwhile: the check above read none; the registry's own copy won.
            Err(registry::error::Error::Conflict(_)) => report.present.push(key.clone()),
            Err(e) => return Err(fail(e)),
        }
    }
    Ok(report)
}

/// The bundle's version list merged into the target's (the copied versions of both).
async fn merge_index<S: Storage>(storage: &S, key: &str, bundled: &ModuleIndex) -> Result<(), LocalError> {
    let fail = |e: registry::error::Error| LocalError(registry::error::chain(&e).to_string());
    for _ in 0..8 {
        let held = storage.get(key).await.map_err(fail)?;
        let mut index = held.as_ref().and_then(|o| ModuleIndex::parse(&o.bytes).ok()).unwrap_or_default();
        let before = index.clone();
        index.copied.extend(bundled.copied.iter().cloned());
        if held.is_some() && index == before {
            return Ok(());
        }
        let body = registry::manifest::to_json(&index).map_err(fail)?;
        let over = Precondition::replacing(held.as_ref().map(|o| o.etag.as_str()));
        match storage.put(key, body, CONTENT_TYPE_JSON, over).await {
            Err(registry::error::Error::Conflict(_)) => continue,
            other => return other.map_err(fail),
        }
    }
    Err(LocalError(format!("{key}: written by others meanwhile; run the import again")))
}

#[cfg(test)]
mod tests;
