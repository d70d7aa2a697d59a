//! `registry-local bundle`: the air-gap bundle, the modules counterpart of `terraform providers
//! mirror`. On a connected machine it copies the upstream module versions a configuration uses
//! (its `modules.json`, or a list) into a directory laid out exactly as the bucket keeps
//! copies (`upstream-modules/…`), with the same code as the registry's pull-through
//! (`upstream::module_copy`): the same fetch, checks, top-level directory removed, pins, and
//! `SHA256SUMS` of every file it holds (whose own SHA-256 it prints, to carry apart).
//! `registry-local bundle-import` (`bundle_import.rs`) then checks all of it inside the air gap
//! and makes the registry serve them with no upstream at all. Run again over the same
//! directory, it verifies every pinned version against the upstream, refuses (and records)
//! bytes that differ, and writes only the files that changed.

use std::path::{Path, PathBuf};

use registry::config::Config;
use registry::layout;
use registry::storage::{MemoryStorage, Storage};
use registry::upstream::bundle::BundleItem;
use registry::upstream::module_copy::{self, Copied};
use registry::upstream::modules::ModuleUpstream;

use crate::{LocalError, TokenTarget};

/// The file beside `upstream-modules/` listing the SHA-256 of every file under it: pins, version
/// lists, refusal records, archives (`sha256sum -c` reads it).
pub const SUMS_FILE: &str = "SHA256SUMS";

/// What one bundle run did.
#[derive(Debug, Default)]
pub struct BundleReport {
    /// Versions copied (or found pinned with the same bytes), with their SHA-256.
    pub copied: Vec<(BundleItem, String)>,
    /// Versions not copied: a module of a host or namespace not allowed, or one the upstream
    /// does not have, with why.
    pub skipped: Vec<(BundleItem, String)>,
    /// Versions that failed, a moved tag among them, with why.
    pub failed: Vec<(BundleItem, String)>,
    /// Into a directory: the SHA-256 of the `SHA256SUMS` written, to carry apart from the bundle
    /// and give `bundle-import` (`--sums-sha256`).
    pub sums_sha256: Option<String>,
    /// Into a directory: the files written (those that changed).
    pub written: usize,
}

/// Where a bundle goes.
#[derive(Debug, Clone)]
pub enum BundleTarget {
    /// A directory to carry into the air gap (`--out DIR`).
    Dir(PathBuf),
    /// Straight into a bucket: the local registry's (`--data-dir`) or a deployed one
    /// (`--bucket`, AWS credentials from the environment: an operator's, as publishers and key
    /// admins may not write `upstream-modules/`).
    Store(TokenTarget),
}

/// Copy `items` into `target` (what it holds already is verified, never replaced). `env` reads
/// the configuration as the registry does (`REGISTRY_UPSTREAM_MODULES`,
/// `REGISTRY_UPSTREAM_GIT_HOSTS`, `REGISTRY_UPSTREAM_CA_FILE`, …).
pub async fn bundle(
    items: &[BundleItem],
    target: &BundleTarget,
    env: impl Fn(&str) -> Option<String>,
) -> Result<BundleReport, LocalError> {
    let mut config = Config::from_lookup(|k| if k == "REGISTRY_BUCKET" { Some("bundle".into()) } else { env(k) })
        .map_err(|e| LocalError(e.to_string()))?;
    // Not a request's 25 s: an archive too large to copy while the CLI waits is copied here.
    config.upstream_modules.max_bytes = registry::upstream::BUNDLE_MAX_BYTES;
    let upstream = ModuleUpstream::new(&config.upstream_modules, &config.upstream)
        .map_err(|e| LocalError(registry::error::chain(&e).to_string()))?
        .ok_or_else(|| LocalError("REGISTRY_UPSTREAM_MODULES is empty: no upstream to copy from".into()))?;
    let bounds = config.archive_bounds();
    match target {
        BundleTarget::Dir(out) => {
            let storage = MemoryStorage::new();
            let mut held = std::collections::BTreeMap::new();
            for (key, path) in files_under(out, layout::UPSTREAM_MODULES_PREFIX)? {
                let bytes = std::fs::read(&path).map_err(|e| LocalError(format!("read {}: {e}", path.display())))?;
                held.insert(key.clone(), sha256_hex(&bytes));
                storage.insert(&key, bytes);
            }
            let mut report = copy_all(items, &storage, &upstream, bounds).await;
            let (sums, written) = write_out(&storage, out, &held).await?;
            (report.sums_sha256, report.written) = (Some(sums), written);
            Ok(report)
        }
        BundleTarget::Store(TokenTarget::Bucket(bucket)) => {
            let storage = registry::storage::S3Storage::from_env(bucket, false).await;
            Ok(copy_all(items, &storage, &upstream, bounds).await)
        }
        BundleTarget::Store(TokenTarget::DataDir(data_dir)) => {
            let running = crate::start(crate::LocalOptions::ephemeral(data_dir.clone())).await?;
            let report = copy_all(items, &running.storage, &upstream, bounds).await;
            running.stop().await;
            Ok(report)
        }
    }
}

async fn copy_all<S: Storage>(
    items: &[BundleItem],
    storage: &S,
    upstream: &ModuleUpstream,
    bounds: registry::config::ArchiveBounds,
) -> BundleReport {
    let mut report = BundleReport::default();
    for item in items {
        if !upstream.allows(&item.module) {
            report.skipped.push((item.clone(), "its host or namespace is not in REGISTRY_UPSTREAM_MODULES".into()));
            continue;
        }
        match module_copy::copy(storage, upstream, &item.module, &item.version, bounds).await {
            Ok(Copied::Pinned(pin)) => report.copied.push((item.clone(), pin.sha256)),
            Ok(Copied::NoSuchVersion) => report.skipped.push((item.clone(), "the upstream has no such version".into())),
            Ok(Copied::LargerThan(max)) => {
                report.failed.push((item.clone(), format!("the archive is larger than {max} bytes")))
            }
            Err(e) => report.failed.push((item.clone(), registry::error::chain(&e).to_string())),
        }
    }
    report
}

/// Write the objects of `storage` into `out` by their keys, but those `held` already with the
/// same SHA-256, and `SHA256SUMS` of every one; answers the SHA-256 of `SHA256SUMS` and how many
/// files were written.
async fn write_out(
    storage: &MemoryStorage,
    out: &Path,
    held: &std::collections::BTreeMap<String, String>,
) -> Result<(String, usize), LocalError> {
    let (mut sums, mut written) = (String::new(), 0);
    for key in storage.keys() {
        let Some(object) = storage.get(&key).await.map_err(|e| LocalError(registry::error::chain(&e).to_string()))?
        else {
            continue;
        };
        let sha256 = sha256_hex(&object.bytes);
        sums.push_str(&format!("{sha256}  {key}\n"));
        if held.get(&key) == Some(&sha256) {
            continue;
        }
        let path = out.join(&key);
        no_links_below(out, &path)?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| LocalError(format!("create {}: {e}", dir.display())))?;
        }
        std::fs::write(&path, &object.bytes).map_err(|e| LocalError(format!("write {}: {e}", path.display())))?;
        written += 1;
    }
    let path = out.join(SUMS_FILE);
    no_links_below(out, &path)?;
    std::fs::write(&path, &sums).map_err(|e| LocalError(format!("write {}: {e}", path.display())))?;
    Ok((sha256_hex(sums.as_bytes()), written))
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

/// Refuse to write `path` through a link inside `out`: a bundle directory is plain files, and
/// one planted with a link (a tampered bundle, run again to verify it) must not make the
/// command write outside it.
fn no_links_below(out: &Path, path: &Path) -> Result<(), LocalError> {
    let mut at = path.to_path_buf();
    while at != out && at.starts_with(out) {
        if std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(LocalError(format!("{} is a link: a bundle directory holds plain files only", at.display())));
        }
        if !at.pop() {
            break;
        }
    }
    Ok(())
}

/// The files under `out/prefix`, by the key each stands for.
pub(crate) fn files_under(out: &Path, prefix: &str) -> Result<Vec<(String, PathBuf)>, LocalError> {
    let mut found = Vec::new();
    let mut pending = vec![out.join(prefix)];
    while let Some(dir) = pending.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(LocalError(format!("read {}: {e}", dir.display()))),
        };
        for entry in entries {
            let entry = entry.map_err(|e| LocalError(format!("read {}: {e}", dir.display())))?;
            // Links are refused, never followed: a bundle is plain files.
            let (kind, path) = (entry.file_type().map_err(|e| LocalError(e.to_string()))?, entry.path());
            if kind.is_symlink() {
                return Err(LocalError(format!(
                    "{} is a link: a bundle directory holds plain files only",
                    path.display()
                )));
            }
            if kind.is_dir() {
                pending.push(path);
            } else if kind.is_file()
                && let Ok(relative) = path.strip_prefix(out)
            {
                let key = relative.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/");
                found.push((key, path));
            }
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    // From the red team: a tampered bundle directory, run again "to verify it", must not make
    // the command read or write through links out of it.
    #[tokio::test]
    async fn a_bundle_directory_with_links_is_refused_and_nothing_outside_it_is_written() {
        let root = std::env::temp_dir().join(format!("bundle-links-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let (out, outside) = (root.join("bundle"), root.join("victim"));
        std::fs::create_dir_all(&outside).unwrap();
        let victim = outside.join("important.conf");
        std::fs::write(&victim, "precious\n").unwrap();
        let module = out.join("upstream-modules/registry.terraform.io/ns/name/aws");
        std::fs::create_dir_all(&module).unwrap();
        std::os::unix::fs::symlink(&victim, module.join("index.json")).unwrap();
        std::os::unix::fs::symlink(&outside, out.join("upstream-modules/registry.opentofu.org")).unwrap();

        let read = files_under(&out, layout::UPSTREAM_MODULES_PREFIX);
        assert!(read.as_ref().is_err_and(|e| e.0.contains("is a link")), "{read:?}");
        let storage = MemoryStorage::new();
        storage.insert("upstream-modules/registry.terraform.io/ns/name/aws/index.json", b"{\"copied\":[]}".to_vec());
        storage.insert("upstream-modules/registry.opentofu.org/x/y/aws/1.0.0.pin.json", b"{}".to_vec());
        let written = write_out(&storage, &out, &Default::default()).await;
        assert!(written.as_ref().is_err_and(|e| e.0.contains("is a link")), "{written:?}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
        assert!(!outside.join("x/y/aws/1.0.0.pin.json").exists(), "nothing planted outside the bundle");
        let _ = std::fs::remove_dir_all(&root);
    }
}
