//! `registry-local bundle-import`: an air-gap bundle (`bundle.rs`) put into a bucket, inside the
//! air gap, only once every file that decides what is served is proven to be what the bundle
//! was made with. Nothing is written until all of it holds; one mismatch refuses the whole
//! bundle:
//! - `SHA256SUMS` lists every file under `upstream-modules/` (pins, version lists, refusal
//!   records, archives), no file is missing from it or beside it, and each file's SHA-256 is
//!   the one listed; `SHA256SUMS` itself has the SHA-256 `bundle` printed, when given
//!   (`--sums-sha256`: that number carried apart from the bundle is what makes it trustworthy);
//! - each pin names its own module and version, and the archive it names is in the bundle, of
//!   the pin's size and SHA-256 (so an archive planted beside the real one, with a pin pointed
//!   at it, fails the list or the pin);
//! - each archive passes the checks a published archive passes (`archive::read_module_archive`);
//! - no pin the target holds names other bytes for a version (a pin is written once).
//!
//! Then archives first, version lists, refusal records, and pins last (each `If-None-Match: *`):
//! a pin's write is what serves its version and puts it on the publish log, once its bytes are
//! there.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use registry::config::ArchiveBounds as Bounds;
use registry::layout::{self, UpstreamModuleRecord};
use registry::manifest::CONTENT_TYPE_JSON;
use registry::storage::{Precondition, Storage};
use registry::upstream::module_records::{ModuleIndex, ModulePin};
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

/// A bundle's files, verified: by key, where each is and its SHA-256.
struct Verified {
    files: BTreeMap<String, (PathBuf, String)>,
    pins: Vec<(String, ModulePin)>,
}

/// Import the bundle at `dir` into `target`, if it is whole (see the module documentation).
/// `sums_sha256`: the SHA-256 `bundle` printed for `SHA256SUMS`, checked when given.
pub async fn import(
    dir: &Path,
    sums_sha256: Option<&str>,
    target: &TokenTarget,
    bounds: Bounds,
) -> Result<ImportReport, LocalError> {
    match target {
        TokenTarget::Bucket(bucket) => {
            let storage = registry::storage::S3Storage::from_env(bucket, false).await;
            import_into(dir, sums_sha256, &storage, bounds).await
        }
        TokenTarget::DataDir(data_dir) => {
            let running = crate::start(crate::LocalOptions::ephemeral(data_dir.clone())).await?;
            let report = import_into(dir, sums_sha256, &running.storage, bounds).await;
            running.stop().await;
            report
        }
    }
}

/// `import`, into `storage` (a registry running in this process: the tests').
pub async fn import_into<S: Storage>(
    dir: &Path,
    sums_sha256: Option<&str>,
    storage: &S,
    bounds: Bounds,
) -> Result<ImportReport, LocalError> {
    let verified = verify(dir, sums_sha256, bounds).map_err(|r| LocalError(r.to_string()))?;
    write(storage, &verified).await
}

/// Every check that does not need the target: the list, the pins, the archives.
fn verify(dir: &Path, sums_sha256: Option<&str>, bounds: Bounds) -> Result<Verified, Refused> {
    let mut problems = Vec::new();
    let sums_path = dir.join(SUMS_FILE);
    let sums = std::fs::read(&sums_path).map_err(|e| Refused(vec![format!("{}: {e}", sums_path.display())]))?;
    let actual = hex::encode(sha2::Sha256::digest(&sums));
    if let Some(expected) = sums_sha256.filter(|e| !e.eq_ignore_ascii_case(&actual)) {
        problems.push(format!("{SUMS_FILE} has SHA-256 {actual}, not {expected}"));
    }
    let listed = match registry::upstream::bundle::parse_sums(&sums) {
        Ok(listed) => listed,
        Err(why) => return Err(Refused(vec![format!("{SUMS_FILE}: {why}")])),
    };
    let found = files_under(dir, layout::UPSTREAM_MODULES_PREFIX).map_err(|e| Refused(vec![e.0]))?;
    let mut files = BTreeMap::new();
    for (key, path) in found {
        let Some(expected) = listed.get(&key) else {
            problems.push(format!("{key} is not listed in {SUMS_FILE}"));
            continue;
        };
        match hash_file(&path) {
            Ok(sha256) if &sha256 == expected => {
                files.insert(key, (path, sha256));
            }
            Ok(sha256) => problems.push(format!("{key} has SHA-256 {sha256}, not the {expected} {SUMS_FILE} lists")),
            Err(e) => problems.push(format!("{key}: {e}")),
        }
    }
    problems.extend(listed.keys().filter(|k| !files.contains_key(*k)).map(|k| format!("{k} is listed but missing")));
    let pins = check_pins(&files, &mut problems);
    for (key, (path, _)) in &files {
        if let Some((_, _, _)) = layout::upstream_module_archive_parts(key) {
            let extension = if key.ends_with(".zip") { "zip" } else { "tar.gz" };
            let checked = std::fs::File::open(path)
                .map_err(|e| e.to_string())
                .and_then(|f| registry::upstream::module_source::check_archive(f, extension, &bounds));
            if let Err(why) = checked {
                problems.push(format!("{key} is not an archive the registry serves: {why}"));
            }
        } else if layout::upstream_module_record(key).is_none() && !key.ends_with("/index.json") {
            problems
                .push(format!("{key} is no file of a bundle (a pin, a refusal record, a version list, an archive)"));
        }
    }
    if problems.is_empty() { Ok(Verified { files, pins }) } else { Err(Refused(problems)) }
}

/// Each pin, checked against its key and the archive it names.
fn check_pins(files: &BTreeMap<String, (PathBuf, String)>, problems: &mut Vec<String>) -> Vec<(String, ModulePin)> {
    let mut pins = Vec::new();
    for (key, (path, _)) in files {
        let Some(UpstreamModuleRecord::Pin(module, version)) = layout::upstream_module_record(key) else { continue };
        let pin = match std::fs::read(path)
            .map_err(|e| e.to_string())
            .and_then(|b| ModulePin::parse(&b).map_err(|e| registry::error::chain(&e).to_string()))
        {
            Ok(pin) => pin,
            Err(why) => {
                problems.push(format!("{key}: {why}"));
                continue;
            }
        };
        if pin.module != module.to_string() || pin.version != version.to_string() {
            problems.push(format!("{key} names {} {}", pin.module, pin.version));
            continue;
        }
        let archive = layout::upstream_module_archive(&module, &version, &pin.sha256, &pin.archive);
        match files.get(&archive) {
            None => problems.push(format!("{key} names {archive}, which the bundle does not hold")),
            Some((path, sha256)) if *sha256 != pin.sha256 => {
                problems.push(format!("{key} pins SHA-256 {}; {} has {sha256}", pin.sha256, path.display()))
            }
            Some((path, _)) if std::fs::metadata(path).map(|m| m.len()).ok() != Some(pin.size) => {
                problems.push(format!("{key} pins {} bytes; {archive} has another size", pin.size))
            }
            Some(_) => pins.push((key.clone(), pin)),
        }
    }
    pins
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

/// The writes, once the target's own pins agree: archives, version lists (merged with the
/// target's), refusal records, then pins.
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
    let is_pin = |k: &str| matches!(layout::upstream_module_record(k), Some(UpstreamModuleRecord::Pin(..)));
    let (pins, rest): (Vec<_>, Vec<_>) = verified.files.iter().partition(|(k, _)| is_pin(k));
    let mut ordered = rest;
    ordered.sort_by_key(|(k, _)| layout::upstream_module_archive_parts(k).is_none());
    for (key, (path, _)) in ordered {
        if key.ends_with("/index.json") {
            merge_index(storage, key, path).await?;
        } else {
            let kind = if key.ends_with(".json") { CONTENT_TYPE_JSON } else { "application/octet-stream" };
            storage.put_file(key, path, kind, Precondition::None).await.map_err(fail)?;
        }
        report.written += 1;
    }
    for (key, (path, _)) in pins {
        if present.contains(key) {
            continue;
        }
        match storage.put_file(key, path, CONTENT_TYPE_JSON, Precondition::IfAbsent).await {
            Ok(()) => report.pinned.push(key.clone()),
            // Written meanwhile: the check above read none; the registry's own copy won.
            Err(registry::error::Error::Conflict(_)) => report.present.push(key.clone()),
            Err(e) => return Err(fail(e)),
        }
    }
    Ok(report)
}

/// The bundle's version list merged into the target's (the copied versions of both).
async fn merge_index<S: Storage>(storage: &S, key: &str, path: &Path) -> Result<(), LocalError> {
    let fail = |e: registry::error::Error| LocalError(registry::error::chain(&e).to_string());
    let bundled = std::fs::read(path).map_err(|e| LocalError(format!("read {}: {e}", path.display())))?;
    let bundled = ModuleIndex::parse(&bundled).map_err(fail)?;
    for _ in 0..8 {
        let held = storage.get(key).await.map_err(fail)?;
        let mut index = held.as_ref().and_then(|o| ModuleIndex::parse(&o.bytes).ok()).unwrap_or_default();
        let before = index.clone();
        index.copied.extend(bundled.copied.iter().cloned());
        if held.is_some() && index == before {
            return Ok(());
        }
        let body = registry::manifest::to_json(&index).map_err(fail)?;
        match storage
            .put(key, body, CONTENT_TYPE_JSON, Precondition::replacing(held.as_ref().map(|o| o.etag.as_str())))
            .await
        {
            Err(registry::error::Error::Conflict(_)) => continue,
            other => return other.map_err(fail),
        }
    }
    Err(LocalError(format!("{key}: written by others meanwhile; run the import again")))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use registry::storage::MemoryStorage;

    const MODULE: &str = "upstream-modules/registry.terraform.io/ns/vpc/aws/";

    /// A bundle directory holding one pinned version, as `bundle` writes it; answers the
    /// SHA-256 of its `SHA256SUMS`.
    fn bundle(dir: &Path, archive: &[u8]) -> String {
        let sha256 = hex::encode(sha2::Sha256::digest(archive));
        let pin = serde_json::json!({"module": "registry.terraform.io/ns/vpc/aws", "version": "1.0.0",
            "sha256": sha256, "size": archive.len(), "archive": "tar.gz", "source": "git::https://example.com/x",
            "copied_at": "2026-12-01T00:00:00Z"});
        let files = [
            (format!("{MODULE}1.0.0/{sha256}.tar.gz"), archive.to_vec()),
            (format!("{MODULE}1.0.0.pin.json"), serde_json::to_vec(&pin).unwrap()),
            (format!("{MODULE}index.json"), br#"{"copied":["1.0.0"]}"#.to_vec()),
        ];
        write_bundle(dir, &files)
    }

    fn write_bundle(dir: &Path, files: &[(String, Vec<u8>)]) -> String {
        let mut sums = String::new();
        for (key, bytes) in files {
            let path = dir.join(key);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, bytes).unwrap();
            sums.push_str(&format!("{}  {key}\n", hex::encode(sha2::Sha256::digest(bytes))));
        }
        std::fs::write(dir.join(SUMS_FILE), &sums).unwrap();
        hex::encode(sha2::Sha256::digest(sums.as_bytes()))
    }

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("bundle-import-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn archive(marker: &str) -> Vec<u8> {
        registry::testing::module_tar_gz(&[("main.tf", marker)])
    }

    /// A whole bundle is imported, pin last; a second import changes nothing.
    #[tokio::test]
    async fn a_whole_bundle_is_imported() {
        let dir = temp("whole");
        let sums = bundle(&dir, &archive("# real\n"));
        let storage = MemoryStorage::new();
        let report = import_into(&dir, Some(&sums), &storage, Bounds::UNLIMITED).await.unwrap();
        assert_eq!((report.pinned.len(), report.written), (1, 2), "{report:?}");
        assert!(storage.peek(&format!("{MODULE}1.0.0.pin.json")).is_some());
        let again = import_into(&dir, Some(&sums), &storage, Bounds::UNLIMITED).await.unwrap();
        assert_eq!((again.pinned.len(), again.present.len()), (0, 1), "{again:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The issue's bundle: an archive planted beside the real one, named by its own SHA-256,
    /// the pin pointed at it. With the old list (archives only) `sha256sum -c` passed; the
    /// import refuses it by the list, and with the list made to agree, by `SUMS`; a planted pin
    /// whose archive differs in size, an unlisted file, a listed file missing, and an archive
    /// the registry would not serve each refuse it too. Nothing is written.
    #[tokio::test]
    async fn a_bundle_with_a_repointed_pin_is_refused_whole() {
        let real = archive("# real\n");
        let planted = archive("# planted\n");
        let dir = temp("repointed");
        let sums = bundle(&dir, &real);
        let planted_sha = hex::encode(sha2::Sha256::digest(&planted));
        std::fs::write(dir.join(format!("{MODULE}1.0.0/{planted_sha}.tar.gz")), &planted).unwrap();
        let pin_path = dir.join(format!("{MODULE}1.0.0.pin.json"));
        let pin = std::fs::read_to_string(&pin_path).unwrap();
        let real_sha = hex::encode(sha2::Sha256::digest(&real));
        std::fs::write(
            &pin_path,
            pin.replace(&real_sha, &planted_sha).replace(&real.len().to_string(), &planted.len().to_string()),
        )
        .unwrap();
        let storage = MemoryStorage::new();
        let refused = import_into(&dir, Some(&sums), &storage, Bounds::UNLIMITED).await.unwrap_err();
        assert!(
            refused.0.contains("is not listed") && refused.0.contains("1.0.0.pin.json has SHA-256"),
            "{}",
            refused.0
        );
        assert!(storage.keys().is_empty(), "nothing written");
        // The list rewritten to agree with the planted files: only SUMS tells.
        let files: Vec<(String, Vec<u8>)> = files_under(&dir, layout::UPSTREAM_MODULES_PREFIX)
            .unwrap()
            .into_iter()
            .map(|(k, p)| (k, std::fs::read(p).unwrap()))
            .collect();
        let forged = write_bundle(&dir, &files);
        let refused = import_into(&dir, Some(&sums), &storage, Bounds::UNLIMITED).await.unwrap_err();
        assert!(refused.0.contains("SHA256SUMS has SHA-256"), "{}", refused.0);
        assert!(import_into(&dir, Some(&forged), &storage, Bounds::UNLIMITED).await.is_ok(), "a consistent bundle");
        // A listed file missing, and an archive the registry would not serve.
        let dir = temp("broken");
        let sha = hex::encode(sha2::Sha256::digest(b"not an archive"));
        let pin = serde_json::json!({"module": "registry.terraform.io/ns/vpc/aws", "version": "1.0.0", "sha256": sha,
            "size": 14, "archive": "tar.gz", "source": "x", "copied_at": "2026-12-01T00:00:00Z"});
        let sums = write_bundle(
            &dir,
            &[
                (format!("{MODULE}1.0.0/{sha}.tar.gz"), b"not an archive".to_vec()),
                (format!("{MODULE}1.0.0.pin.json"), serde_json::to_vec(&pin).unwrap()),
            ],
        );
        std::fs::OpenOptions::new()
            .append(true)
            .open(dir.join(SUMS_FILE))
            .unwrap()
            .write_all(format!("{}  {MODULE}2.0.0.pin.json\n", "0".repeat(64)).as_bytes())
            .unwrap();
        let storage = MemoryStorage::new();
        let refused = import_into(&dir, None, &storage, Bounds::UNLIMITED).await.unwrap_err();
        assert!(
            refused.0.contains("is listed but missing") && refused.0.contains("not an archive the registry serves"),
            "{}",
            refused.0
        );
        assert!(storage.keys().is_empty());
        let _ = sums;
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A pin the target holds with other bytes refuses the bundle before anything is written.
    #[tokio::test]
    async fn a_pin_the_target_holds_otherwise_refuses_the_bundle() {
        let dir = temp("held");
        let sums = bundle(&dir, &archive("# real\n"));
        let storage = MemoryStorage::new();
        let held = serde_json::json!({"module": "registry.terraform.io/ns/vpc/aws", "version": "1.0.0",
            "sha256": "a".repeat(64), "size": 1, "archive": "tar.gz", "source": "x", "copied_at": "2026-11-01T00:00:00Z"});
        storage.insert(&format!("{MODULE}1.0.0.pin.json"), serde_json::to_vec(&held).unwrap());
        let refused = import_into(&dir, Some(&sums), &storage, Bounds::UNLIMITED).await.unwrap_err();
        assert!(refused.0.contains("the target pins SHA-256"), "{}", refused.0);
        assert_eq!(storage.keys().len(), 1, "nothing written");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
