//! The indexer: given the archives present under one module or provider prefix, write that
//! owner's manifest. The indexer Lambda calls it on S3 events, the local registry on every
//! upload or delete through its embedded S3, and `reindex_all` rebuilds every manifest.
//!
//! Correctness under concurrent publishes rests on two rules:
//! 1. read every manifest a pass may replace *before* the listing it computes from, and
//! 2. write each manifest only if it is still what was read (`If-Match` / `If-None-Match: *`),
//!    retrying the whole pass (bounded, with jitter) when a write loses a race.
//!
//! Any pass that starts after an upload either writes a manifest containing it, or loses a
//! race to a pass whose manifest it will then read and extend. Manifests are never deleted
//! (an empty one answers 404), so a yank cannot race a publish into losing it.
//!
//! Passes are idempotent: with nothing changed they write nothing, so the events the
//! indexer's own writes raise end after one read-only pass.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Seek, Write};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use sha2::{Digest, Sha256};

use crate::address::{ModuleAddress, ProviderAddress};
use crate::archive;
use crate::config::Limits;
use crate::error::Error;
use crate::layout::{self, ObjectKind, Owner, Platform};
use crate::manifest::{Indexed, ModuleManifest, ModuleVersion, ProviderArchive, ProviderIndex, ProviderVersion};
use crate::storage::{Object, ObjectInfo, Precondition, Storage};

/// Attempts of one pass before giving up (the caller then reports an error; in Lambda the
/// event is retried).
pub const MAX_ATTEMPTS: u32 = 30;
const FIRST_BACKOFF: Duration = Duration::from_millis(10);
const MAX_BACKOFF: Duration = Duration::from_millis(500);
/// Concurrent reads of a provider's `VERSION.json` documents in one pass.
const DOCUMENT_READS_IN_FLIGHT: usize = 16;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The manifest already said this.
    Unchanged,
    /// Manifests were written; `versions` is how many versions are listed now.
    Written { versions: usize },
}

/// A rejection record: why the upload at `key` (with `etag`) was not indexed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Rejection {
    pub key: String,
    pub etag: String,
    pub reason: String,
    pub rejected_at: String,
}

pub struct Indexer<'a, S> {
    storage: &'a S,
    limits: Limits,
}

impl<'a, S: Storage> Indexer<'a, S> {
    pub fn new(storage: &'a S, limits: Limits) -> Self {
        Indexer { storage, limits }
    }

    /// React to one changed key (created or removed): rebuild the manifest of its owner.
    /// Keys outside the layout are ignored (`None`).
    /// An archive's ETag as listed. S3 lists every object with it; some S3-compatible servers
    /// (s3s-fs, the local registry's) omit it, and then one HEAD answers it, asked only for an
    /// archive the manifest already records, so that it is not read again.
    async fn listed_etag(&self, object: &ObjectInfo) -> Result<String, Error> {
        if !object.etag.is_empty() {
            return Ok(object.etag.clone());
        }
        Ok(self.storage.etag(&object.key).await?.unwrap_or_default())
    }

    pub async fn on_object_changed(&self, key: &str) -> Result<Option<(Owner, Outcome)>, Error> {
        let Some(kind) = layout::classify(key) else {
            if layout::expected_name(key).is_some() {
                self.misplaced(key).await?;
            } else {
                tracing::debug!(key = %crate::address::printable(key), "key outside the registry layout; ignored");
            }
            return Ok(None);
        };
        let owner = kind.owner();
        let outcome = self.reindex(&owner).await?;
        Ok(Some((owner, outcome)))
    }

    /// A key under `modules/` or `providers/` that belongs to no module or provider (bad
    /// names, wrong depth): say so in a rejection record while it exists.
    async fn misplaced(&self, key: &str) -> Result<(), Error> {
        let present = self.storage.list(key).await?.into_iter().find(|o| o.key == key);
        match (present, layout::expected_name(key)) {
            (Some(object), Some(expected)) => write_rejection(self.storage, &object, expected).await,
            _ => self.storage.delete(&layout::rejection(key)).await,
        }
    }

    /// One owner's pass, retried while it loses races.
    pub async fn reindex(&self, owner: &Owner) -> Result<Outcome, Error> {
        let mut backoff = FIRST_BACKOFF;
        for attempt in 1..=MAX_ATTEMPTS {
            let result = match owner {
                Owner::Module(m) => self.module_pass(m).await,
                Owner::Provider(p) => self.provider_pass(p).await,
            };
            match result {
                Err(Error::Conflict(why)) => {
                    tracing::debug!(?owner, attempt, why, "lost a race; reading again");
                    tokio::time::sleep(jitter(backoff)).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
                Ok(outcome) => {
                    tracing::info!(?owner, ?outcome, attempt, "indexed");
                    return Ok(outcome);
                }
                Err(e) => return Err(e),
            }
        }
        Err(Error::Unavailable(format!("{owner:?}: manifest still contended after {MAX_ATTEMPTS} attempts")))
    }

    /// Rebuild every manifest from the archives present (repair, migration). Idempotent.
    /// Owners are found from the uploads and from the manifests already written (so a module
    /// whose archives all went while nothing indexed them is emptied too). A failing owner is
    /// logged and answered with its error, and the rest are indexed all the same: one
    /// poisoned owner cannot block the repair of the others.
    pub async fn reindex_all(&self) -> Result<Vec<(Owner, Result<Outcome, Error>)>, Error> {
        let mut owners = BTreeSet::new();
        for prefix in [layout::MODULES_PREFIX, layout::PROVIDERS_PREFIX, layout::INDEXED_PREFIX] {
            for object in self.storage.list(prefix).await? {
                if let Some(kind) = layout::classify(&object.key) {
                    owners.insert(kind.owner());
                }
            }
        }
        let mut results = Vec::with_capacity(owners.len());
        for owner in owners {
            let outcome = self.reindex(&owner).await;
            if let Err(e) = &outcome {
                tracing::error!(%owner, error = %e, "reindex failed for this owner; going on with the others");
            }
            results.push((owner, outcome));
        }
        Ok(results)
    }

    async fn module_pass(&self, module: &ModuleAddress) -> Result<Outcome, Error> {
        let manifest_key = layout::module_manifest(module);
        let prefix = layout::module_prefix(module);
        // Rule 1: the manifest (and its ETag) before the listing.
        let read = self.storage.get(&manifest_key).await?;
        let existing = read.as_ref().map(|o| ModuleManifest::parse(&o.bytes)).transpose().unwrap_or_else(|e| {
            tracing::warn!(key = manifest_key, error = %e, "existing manifest unreadable; rebuilding it");
            None
        });
        let objects = self.storage.list(&prefix).await?;
        let mut rejections = Rejections::load(self.storage, &prefix).await?;

        // One archive per version. Two formats of one version is a publishing mistake: keep
        // the first by extension preference (the order of MODULE_ARCHIVE_EXTENSIONS).
        let mut chosen: BTreeMap<semver::Version, (ObjectInfo, &'static str)> = BTreeMap::new();
        let mut misnamed = Vec::new();
        for object in objects {
            match layout::classify(&object.key) {
                Some(ObjectKind::Unrecognised(_)) => misnamed.push(object),
                Some(ObjectKind::ModuleArchive { module: m, version, extension }) if &m == module => {
                    let rank = |e: &str| layout::MODULE_ARCHIVE_EXTENSIONS.iter().position(|x| *x == e);
                    match chosen.get(&version) {
                        Some((kept, kept_ext)) if rank(kept_ext) <= rank(extension) => {
                            tracing::warn!(
                                kept = kept.key,
                                ignored = object.key,
                                "two archives for one version; serving the first"
                            );
                        }
                        _ => {
                            chosen.insert(version, (object, extension));
                        }
                    }
                }
                _ => {}
            }
        }

        rejections.misnamed(self.storage, &misnamed).await?;
        let mut versions = Vec::with_capacity(chosen.len());
        for (version, (object, extension)) in chosen {
            let previous = existing.as_ref().and_then(|m| m.find(&version));
            let same_archive = previous.filter(|e| e.archive == object.key && !e.etag.is_empty());
            let reusable = match same_archive {
                Some(e) if self.listed_etag(&object).await? == e.etag => Some(e),
                _ => None,
            };
            if let Some(entry) = reusable {
                versions.push(entry.clone());
                rejections.keep(&object.key);
                continue;
            }
            match self.check_module_archive(&object, extension, &mut rejections).await? {
                Some(entry) => versions.push(entry),
                // Rejected: what was published for this version stays as it was.
                None => versions.extend(previous.cloned()),
            }
        }
        rejections.clear_stale(self.storage).await?;

        let manifest = ModuleManifest::new(versions);
        let unchanged = match &existing {
            Some(e) => *e == manifest,
            None => manifest.versions.is_empty(),
        };
        if unchanged {
            return Ok(Outcome::Unchanged);
        }
        let count = manifest.versions.len();
        let precondition = Precondition::replacing(read.as_ref().map(|o| o.etag.as_str()));
        self.storage.put(&manifest_key, to_json(&manifest)?, crate::app::CONTENT_TYPE_JSON, precondition).await?;
        Ok(Outcome::Written { versions: count })
    }

    /// Spool an upload for checking. `None` if there is nothing to check: rejected before with
    /// these bytes, too large (rejected now), unreadable as stored (rejected now), or gone.
    async fn fetch(
        &self,
        object: &ObjectInfo,
        (limit, limit_var): (u64, &str),
        rejections: &mut Rejections,
    ) -> Result<Option<Spooled>, Error> {
        if rejections.still_rejected(&object.key, &object.etag) {
            return Ok(None);
        }
        let reason = if object.size > limit {
            format!("{} bytes, over the limit of {limit} ({limit_var})", object.size)
        } else {
            match spool(self.storage, &object.key, limit).await? {
                None => return Ok(None),
                Some(Ok(spooled)) => return Ok(Some(spooled)),
                Some(Err(reason)) => reason,
            }
        };
        rejections.reject(self.storage, object, reason).await?;
        Ok(None)
    }

    /// Validate and hash a module archive; `None` (with a rejection record) if it is bad.
    async fn check_module_archive(
        &self,
        object: &ObjectInfo,
        extension: &'static str,
        rejections: &mut Rejections,
    ) -> Result<Option<ModuleVersion>, Error> {
        let limit = (self.limits.module_archive_bytes, "REGISTRY_MAX_MODULE_ARCHIVE_BYTES");
        let Some(Spooled { mut file, sha256, size, etag }) = self.fetch(object, limit, rejections).await? else {
            return Ok(None);
        };
        let bounds = self.limits.bounds();
        let verdict = blocking(move || {
            file.rewind().map_err(|e| e.to_string())?;
            archive::check_module_archive(file, extension, &bounds)
        })
        .await?;
        let version = match layout::classify(&object.key) {
            Some(ObjectKind::ModuleArchive { version, .. }) => version.to_string(),
            _ => return Ok(None),
        };
        match verdict {
            Ok(()) => {
                rejections.clear(self.storage, &object.key).await?;
                Ok(Some(ModuleVersion { version, archive: object.key.clone(), size, sha256, etag }))
            }
            Err(reason) => {
                rejections.reject(self.storage, &ObjectInfo { etag, ..object.clone() }, reason).await?;
                Ok(None)
            }
        }
    }

    async fn provider_pass(&self, provider: &ProviderAddress) -> Result<Outcome, Error> {
        let prefix = layout::provider_prefix(provider);
        let index_key = layout::provider_index(provider);

        // Rule 1: every document this pass may replace, before the listing it computes from.
        // They are the indexer's own, under `indexed/`: a `VERSION.json` a publisher uploaded
        // beside the zips is never read, so no hash in it is ever believed.
        let written = self.storage.list(&layout::provider_documents_prefix(provider)).await?;
        let has_index = written.iter().any(|o| o.key == index_key);
        // A provider may have hundreds of versions: read their documents concurrently, a
        // bounded number at a time.
        let mut reads = Vec::new();
        for object in &written {
            if let Some(ObjectKind::ProviderVersion { provider: p, version }) = layout::classify(&object.key)
                && &p == provider
            {
                let (storage, key) = (self.storage, object.key.clone());
                reads.push(async move { storage.get(&key).await.map(|doc| doc.map(|doc| (version, doc))) });
            }
        }
        let reads: Vec<_> =
            futures_util::stream::iter(reads).buffer_unordered(DOCUMENT_READS_IN_FLIGHT).collect().await;
        let mut documents_read: BTreeMap<semver::Version, Object> = BTreeMap::new();
        for read in reads {
            if let Some((version, doc)) = read? {
                documents_read.insert(version, doc);
            }
        }
        let index_read = if has_index { self.storage.get(&index_key).await? } else { None };
        let objects = self.storage.list(&prefix).await?;
        let mut rejections = Rejections::load(self.storage, &prefix).await?;

        let mut zips: BTreeMap<semver::Version, BTreeMap<Platform, ObjectInfo>> = BTreeMap::new();
        let mut misnamed = Vec::new();
        for object in objects {
            match layout::classify(&object.key) {
                Some(ObjectKind::Unrecognised(_)) => misnamed.push(object),
                Some(ObjectKind::ProviderArchive { provider: p, version, platform }) if &p == provider => {
                    zips.entry(version).or_default().insert(platform, object);
                }
                // index.json / VERSION.json from a synced `terraform providers mirror`
                // directory: a name the layout accepts, never read.
                _ => {}
            }
        }

        rejections.misnamed(self.storage, &misnamed).await?;
        let parse = |key: &str, o: &Object| {
            ProviderVersion::parse(&o.bytes)
                .inspect_err(|e| tracing::warn!(key, error = %e, "unreadable; rebuilding it"))
                .ok()
        };
        let mut changed = false;
        let mut listed = BTreeSet::new();
        let all_versions: BTreeSet<semver::Version> = zips.keys().chain(documents_read.keys()).cloned().collect();
        for version in all_versions {
            let key = layout::provider_version(provider, &version);
            let read = documents_read.get(&version);
            let existing = read.and_then(|o| parse(&key, o));
            let mut doc = ProviderVersion::default();
            for (platform, object) in zips.get(&version).into_iter().flatten() {
                let file = layout::provider_archive_name(provider, &version, platform);
                let previous = existing.as_ref().and_then(|d| d.archives.get(&platform.key()));
                let recorded = previous
                    .filter(|a| a.url == file)
                    .and_then(|a| a.indexed.as_ref().filter(|i| !i.etag.is_empty()).map(|i| (a, i.etag.as_str())));
                let unchanged = match recorded {
                    Some((a, etag)) if self.listed_etag(object).await? == etag => Some(a),
                    _ => None,
                };
                let archive = match unchanged {
                    Some(a) => {
                        rejections.keep(&object.key);
                        Some(a.clone())
                    }
                    // Rejected: what was published for this platform stays as it was.
                    None => self
                        .check_provider_zip(provider, object, file, &mut rejections)
                        .await?
                        .or_else(|| previous.cloned()),
                };
                if let Some(archive) = archive {
                    doc.archives.insert(platform.key(), archive);
                }
            }
            if !doc.archives.is_empty() {
                listed.insert(version.to_string());
            }
            let same = match &existing {
                Some(e) => *e == doc,
                None => doc.archives.is_empty() && read.is_none(),
            };
            if !same {
                let precondition = Precondition::replacing(read.map(|o| o.etag.as_str()));
                self.storage.put(&key, to_json(&doc)?, crate::app::CONTENT_TYPE_JSON, precondition).await?;
                changed = true;
            }
        }
        rejections.clear_stale(self.storage).await?;

        // index.json last: it never lists a version whose VERSION.json is not written yet.
        let index = ProviderIndex { versions: listed.iter().map(|v| (v.clone(), serde_json::json!({}))).collect() };
        let existing_index = index_read.as_ref().and_then(|o| ProviderIndex::parse(&o.bytes).ok());
        let same = match &existing_index {
            Some(e) => *e == index,
            None => index.versions.is_empty() && index_read.is_none(),
        };
        if !same {
            let precondition = Precondition::replacing(index_read.as_ref().map(|o| o.etag.as_str()));
            self.storage.put(&index_key, to_json(&index)?, crate::app::CONTENT_TYPE_JSON, precondition).await?;
            changed = true;
        }
        Ok(if changed { Outcome::Written { versions: listed.len() } } else { Outcome::Unchanged })
    }

    /// Validate and hash a provider zip; `None` (with a rejection record) if it is bad.
    async fn check_provider_zip(
        &self,
        provider: &ProviderAddress,
        object: &ObjectInfo,
        url: String,
        rejections: &mut Rejections,
    ) -> Result<Option<ProviderArchive>, Error> {
        let limit = (self.limits.provider_zip_bytes, "REGISTRY_MAX_PROVIDER_ZIP_BYTES");
        let Some(Spooled { mut file, sha256, size, etag }) = self.fetch(object, limit, rejections).await? else {
            return Ok(None);
        };
        let (r#type, bounds) = (provider.r#type.clone(), self.limits.bounds());
        let verdict = blocking(move || {
            file.rewind().map_err(|e| e.to_string())?;
            archive::check_provider_zip(file, &r#type, &bounds)
        })
        .await?;
        match verdict {
            Ok(summary) => {
                if summary.directory_entries > 0 {
                    tracing::warn!(
                        key = object.key,
                        directory_entries = summary.directory_entries,
                        "provider zip has directory entries: the CLI checks them as empty files but then locks a files-only hash, \
                         so the next `terraform init` with that lock file fails; rebuild the zip without them (zip -D)"
                    );
                }
                rejections.clear(self.storage, &object.key).await?;
                Ok(Some(ProviderArchive {
                    url,
                    hashes: vec![summary.h1, format!("zh:{sha256}")],
                    indexed: Some(Indexed { size, etag }),
                }))
            }
            Err(reason) => {
                rejections.reject(self.storage, &ObjectInfo { etag, ..object.clone() }, reason).await?;
                Ok(None)
            }
        }
    }
}

/// The rejection records under one owner's prefix, read once per pass (there are few: one
/// per upload that is currently bad).
struct Rejections {
    /// Record key → the ETag of the upload it rejected.
    records: BTreeMap<String, String>,
    /// Uploads present in this pass's listing.
    present: BTreeSet<String>,
}

impl Rejections {
    async fn load<S: Storage>(storage: &S, prefix: &str) -> Result<Self, Error> {
        let mut records = BTreeMap::new();
        for object in storage.list(&layout::rejections_under(prefix)).await? {
            if layout::rejected_key(&object.key).is_none() {
                continue;
            }
            let etag = match storage.get(&object.key).await? {
                Some(o) => serde_json::from_slice::<Rejection>(&o.bytes).map(|r| r.etag).unwrap_or_default(),
                None => continue,
            };
            records.insert(object.key, etag);
        }
        Ok(Rejections { records, present: BTreeSet::new() })
    }

    fn keep(&mut self, key: &str) {
        self.present.insert(key.to_string());
    }

    /// The upload was rejected before with these very bytes: do not read it again.
    fn still_rejected(&mut self, key: &str, etag: &str) -> bool {
        self.keep(key);
        self.records.get(&layout::rejection(key)).is_some_and(|e| e == etag && !e.is_empty())
    }

    async fn reject<S: Storage>(&mut self, storage: &S, object: &ObjectInfo, reason: String) -> Result<(), Error> {
        self.keep(&object.key);
        write_rejection(storage, object, reason).await?;
        self.records.insert(layout::rejection(&object.key), object.etag.clone());
        Ok(())
    }

    /// Files under an owner's prefix with names the registry does not index.
    async fn misnamed<S: Storage>(&mut self, storage: &S, objects: &[ObjectInfo]) -> Result<(), Error> {
        for object in objects {
            if !self.still_rejected(&object.key, &object.etag)
                && let Some(expected) = layout::expected_name(&object.key)
            {
                self.reject(storage, object, expected).await?;
            }
        }
        Ok(())
    }

    /// The upload at `key` is good now: its record goes.
    async fn clear<S: Storage>(&mut self, storage: &S, key: &str) -> Result<(), Error> {
        self.keep(key);
        let record_key = layout::rejection(key);
        if self.records.remove(&record_key).is_some() {
            storage.delete(&record_key).await?;
        }
        Ok(())
    }

    /// Records whose upload is gone (deleted, or no longer considered).
    async fn clear_stale<S: Storage>(&mut self, storage: &S) -> Result<(), Error> {
        let stale: Vec<String> = self
            .records
            .keys()
            .filter(|r| layout::rejected_key(r).is_some_and(|k| !self.present.contains(k)))
            .cloned()
            .collect();
        for record_key in stale {
            storage.delete(&record_key).await?;
            self.records.remove(&record_key);
        }
        Ok(())
    }
}

async fn write_rejection<S: Storage>(storage: &S, object: &ObjectInfo, reason: String) -> Result<(), Error> {
    tracing::warn!(key = object.key, etag = object.etag, reason, "upload rejected: not indexed");
    let record = Rejection { key: object.key.clone(), etag: object.etag.clone(), reason, rejected_at: rfc3339_now() };
    storage
        .put(&layout::rejection(&object.key), to_json(&record)?, crate::app::CONTENT_TYPE_JSON, Precondition::None)
        .await
}

/// An upload copied to a temporary file (Lambda's `/tmp`), hashed on the way: memory stays at
/// one chunk whatever the size.
struct Spooled {
    file: std::fs::File,
    sha256: String,
    size: u64,
    etag: String,
}

/// `None` if the object is gone; `Some(Err(reason))` if its bytes are unusable (over the
/// limit, failing the integrity check): the caller rejects it.
async fn spool<S: Storage>(storage: &S, key: &str, limit: u64) -> Result<Option<Result<Spooled, String>>, Error> {
    let io = |e: std::io::Error| Error::Internal(format!("temporary file for {key}: {e}"));
    let mut file = tempfile::tempfile().map_err(io)?;
    let mut hasher = Sha256::new();
    let mut size = 0u64;
    let etag = storage
        .stream(key, |chunk| {
            size += chunk.len() as u64;
            if size > limit {
                return Err(Error::Corrupt(format!(
                    "the object grew over the size limit of {limit} bytes while being read"
                )));
            }
            hasher.update(chunk);
            file.write_all(chunk).map_err(io)
        })
        .await;
    match etag {
        Ok(etag) => Ok(etag.map(|etag| Ok(Spooled { file, sha256: hex::encode(hasher.finalize()), size, etag }))),
        Err(Error::Corrupt(reason)) => Ok(Some(Err(reason))),
        Err(e) => Err(e),
    }
}

async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Result<T, Error> {
    tokio::task::spawn_blocking(work).await.map_err(|e| Error::Internal(format!("archive check task: {e}")))
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<Bytes, Error> {
    let mut bytes =
        serde_json::to_vec_pretty(value).map_err(|e| Error::Internal(format!("serialise manifest: {e}")))?;
    bytes.push(b'\n');
    Ok(bytes.into())
}

/// Full jitter: a random wait in [d/2, d], so racing passes spread out.
fn jitter(d: Duration) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos());
    let fraction = (h.finish() % 1000) as f64 / 1000.0;
    d.mul_f64(0.5 + fraction / 2.0)
}

/// Now as `2026-11-22T21:40:00Z` (no date library for one timestamp).
pub fn rfc3339_now() -> String {
    rfc3339(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs() as i64)
}

/// Unix seconds as `2026-11-22T21:40:00Z`.
pub fn rfc3339(secs: i64) -> String {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::MemoryStorage;
    use crate::testing::{tar_gz as tar_gz_of, zip as zip_of};

    const MANIFEST: &str = "indexed/modules/acme/vpc/aws/manifest.json";

    fn module() -> Owner {
        Owner::Module(ModuleAddress::parse("acme", "vpc", "aws").unwrap())
    }
    fn provider() -> Owner {
        Owner::Provider(ProviderAddress::parse("registry.terraform.io", "hashicorp", "null").unwrap())
    }
    fn tf(marker: &str) -> Vec<u8> {
        tar_gz_of(&[("main.tf", marker.as_bytes())])
    }
    fn provider_zip(marker: &str) -> Vec<u8> {
        zip_of(&[("terraform-provider-null_v3", marker.as_bytes())])
    }
    fn manifest(s: &MemoryStorage) -> ModuleManifest {
        ModuleManifest::parse(&s.peek(MANIFEST).unwrap()).unwrap()
    }
    fn versions(s: &MemoryStorage) -> Vec<String> {
        manifest(s).versions.into_iter().map(|v| v.version).collect()
    }
    fn rejection(s: &MemoryStorage, key: &str) -> Option<Rejection> {
        s.peek(&layout::rejection(key)).map(|b| serde_json::from_slice(&b).unwrap())
    }

    #[tokio::test]
    async fn module_manifest_follows_the_archives() {
        let s = MemoryStorage::new();
        let indexer = Indexer::new(&s, Limits::default());
        s.insert("modules/acme/vpc/aws/1.0.0.tar.gz", tf("one"));
        s.insert("modules/acme/vpc/aws/1.1.0.zip", zip_of(&[("main.tf", b"two")]));
        s.insert("modules/acme/vpc/aws/notes.txt", "ignored");
        assert_eq!(indexer.reindex(&module()).await.unwrap(), Outcome::Written { versions: 2 });
        assert_eq!(versions(&s), ["1.1.0", "1.0.0"]);
        let entry = &manifest(&s).versions[1];
        assert_eq!(entry.sha256, hex::encode(Sha256::digest(tf("one"))));
        assert_eq!(entry.size, tf("one").len() as u64);

        // notes.txt is not indexed, and says why.
        assert!(
            rejection(&s, "modules/acme/vpc/aws/notes.txt").unwrap().reason.contains("is not a module archive name")
        );

        // Nothing changed: no write, and unchanged archives are not read again (manifest,
        // archive listing, rejection listing, the one rejection record).
        let before = s.request_count();
        assert_eq!(indexer.reindex(&module()).await.unwrap(), Outcome::Unchanged);
        assert_eq!(s.request_count() - before, 4);

        // A second format of one version: the preferred extension wins.
        s.insert("modules/acme/vpc/aws/1.1.0.tar.gz", tf("two"));
        indexer.reindex(&module()).await.unwrap();
        assert_eq!(manifest(&s).versions[0].archive, "modules/acme/vpc/aws/1.1.0.tar.gz");

        // Yank everything: the manifest is emptied (never deleted), which answers 404.
        for key in s.keys().into_iter().filter(|k| !k.ends_with("manifest.json")) {
            s.delete(&key).await.unwrap();
        }
        assert_eq!(indexer.reindex(&module()).await.unwrap(), Outcome::Written { versions: 0 });
        assert!(versions(&s).is_empty());
        assert_eq!(indexer.reindex(&module()).await.unwrap(), Outcome::Unchanged);
    }

    #[tokio::test]
    async fn a_bad_upload_is_rejected_visibly_and_harmlessly() {
        let s = MemoryStorage::new();
        let limits = Limits { module_archive_bytes: 10_000, ..Limits::default() };
        let indexer = Indexer::new(&s, limits);
        s.insert("modules/acme/vpc/aws/1.0.0.tar.gz", tf("good"));
        indexer.reindex(&module()).await.unwrap();
        let published = s.peek(MANIFEST);

        let bad = [
            ("modules/acme/vpc/aws/1.1.0.tar.gz", tar_gz_of(&[("README.md", b"no tf")]), "no .tf"),
            ("modules/acme/vpc/aws/1.2.0.zip", b"not a zip".to_vec(), "not a readable zip"),
            ("modules/acme/vpc/aws/1.3.0.tgz", vec![1u8; 20_000], "over the limit of 10000"),
        ];
        for (key, bytes, reason) in &bad {
            s.insert(key, bytes.clone());
            indexer.on_object_changed(key).await.unwrap();
            assert_eq!(s.peek(MANIFEST), published, "{key}: the manifest stays as it was");
            let record = rejection(&s, key).unwrap_or_else(|| panic!("{key} has a rejection record"));
            assert!(record.reason.contains(reason), "{}", record.reason);
            assert_eq!(record.key, *key);
            assert!(record.rejected_at.ends_with('Z') && record.rejected_at.len() == 20, "{}", record.rejected_at);
        }

        // A rejected upload is not read again while its bytes are the same.
        let before = s.request_count();
        indexer.reindex(&module()).await.unwrap();
        let reads = s.request_count() - before;
        assert_eq!(reads, 3 + 3, "manifest, listing, rejection listing and one read per record; no archive read");

        // Overwriting a published version with a bad archive keeps what was published.
        s.insert("modules/acme/vpc/aws/1.0.0.tar.gz", b"corrupt".to_vec());
        indexer.reindex(&module()).await.unwrap();
        assert_eq!(s.peek(MANIFEST), published);

        // Fixing an upload clears its record and publishes it; deleting one clears its record.
        s.insert("modules/acme/vpc/aws/1.1.0.tar.gz", tf("fixed"));
        s.delete("modules/acme/vpc/aws/1.2.0.zip").await.unwrap();
        indexer.reindex(&module()).await.unwrap();
        assert_eq!(versions(&s), ["1.1.0", "1.0.0"]);
        assert!(rejection(&s, "modules/acme/vpc/aws/1.1.0.tar.gz").is_none());
        assert!(rejection(&s, "modules/acme/vpc/aws/1.2.0.zip").is_none());
        assert!(rejection(&s, "modules/acme/vpc/aws/1.3.0.tgz").is_some());
    }

    #[tokio::test]
    async fn misnamed_and_misplaced_uploads_are_explained() {
        let s = MemoryStorage::new();
        let indexer = Indexer::new(&s, Limits::default());
        let keys = [
            "modules/acme/vpc/aws/v1.0.0.tar.gz",
            "modules/acme/vpc/1.0.0.tar.gz",
            "modules/Acme Corp/vpc/aws/1.0.0.tar.gz",
            "providers/registry.terraform.io/hashicorp/null/terraform-provider-null_v3.2.1_linux_amd64.zip",
            "providers/hashicorp/null/terraform-provider-null_3.2.1_linux_amd64.zip",
        ];
        for key in keys {
            s.insert(key, tf("x"));
            indexer.on_object_changed(key).await.unwrap();
            let record = rejection(&s, key).unwrap_or_else(|| panic!("{key} has no rejection record"));
            assert!(record.reason.contains("the registry indexes"), "{key}: {}", record.reason);
        }
        assert!(s.peek(MANIFEST).is_none(), "nothing was published");
        // Keys elsewhere in the bucket are not the registry's business.
        s.insert("docs/readme.md", "x");
        assert_eq!(indexer.on_object_changed("docs/readme.md").await.unwrap(), None);
        assert!(rejection(&s, "docs/readme.md").is_none());
        // Deleting them clears their records.
        for key in keys {
            s.delete(key).await.unwrap();
            indexer.on_object_changed(key).await.unwrap();
            assert!(rejection(&s, key).is_none(), "{key}");
        }
    }

    #[tokio::test]
    async fn provider_documents_follow_the_zips() {
        let s = MemoryStorage::new();
        let indexer = Indexer::new(&s, Limits::default());
        let prefix = "providers/registry.terraform.io/hashicorp/null/";
        let docs = "indexed/providers/registry.terraform.io/hashicorp/null/";
        let zip_a = provider_zip("linux");
        s.insert(&format!("{prefix}terraform-provider-null_3.2.1_linux_amd64.zip"), zip_a.clone());
        s.insert(&format!("{prefix}terraform-provider-null_3.2.1_darwin_arm64.zip"), provider_zip("darwin"));
        s.insert(&format!("{prefix}terraform-provider-null_3.1.0_linux_amd64.zip"), zip_a.clone());
        // A document the indexer wrote for a version whose zips have all gone since.
        s.insert(
            &format!("{docs}2.0.0.json"),
            r#"{"archives":{"linux_amd64":{"url":"terraform-provider-null_2.0.0_linux_amd64.zip","hashes":["h1:x"]}}}"#,
        );
        let key = format!("{prefix}terraform-provider-null_3.1.0_linux_amd64.zip");
        let (owner, outcome) = indexer.on_object_changed(&key).await.unwrap().unwrap();
        assert_eq!(outcome, Outcome::Written { versions: 2 });
        let index = ProviderIndex::parse(&s.peek(&format!("{docs}index.json")).unwrap()).unwrap();
        assert_eq!(index.versions.keys().collect::<Vec<_>>(), ["3.1.0", "3.2.1"]);
        let stale = ProviderVersion::parse(&s.peek(&format!("{docs}2.0.0.json")).unwrap()).unwrap();
        assert!(stale.archives.is_empty(), "a version with no zips is emptied, which answers 404");
        let doc = ProviderVersion::parse(&s.peek(&format!("{docs}3.2.1.json")).unwrap()).unwrap();
        let linux = &doc.archives["linux_amd64"];
        assert_eq!(linux.url, "terraform-provider-null_3.2.1_linux_amd64.zip");
        let h1 = archive::summarise_zip(std::io::Cursor::new(zip_a.clone()), &archive::Bounds::UNLIMITED).unwrap().h1;
        assert_eq!(linux.hashes[0], h1);
        assert_eq!(linux.hashes[1], format!("zh:{}", hex::encode(Sha256::digest(&zip_a))));
        assert_eq!(indexer.reindex(&owner).await.unwrap(), Outcome::Unchanged);

        // A bad zip is rejected; the rest of the provider is indexed as before.
        let before = s.peek(&format!("{docs}index.json"));
        let bad = format!("{prefix}terraform-provider-null_4.0.0_linux_amd64.zip");
        s.insert(&bad, "garbage");
        s.insert(
            &format!("{prefix}terraform-provider-null_3.2.1_windows_amd64.zip"),
            zip_of(&[("README", b"no binary")]),
        );
        indexer.reindex(&owner).await.unwrap();
        assert_eq!(s.peek(&format!("{docs}index.json")), before);
        assert!(rejection(&s, &bad).unwrap().reason.contains("not a readable zip"));
        let doc = ProviderVersion::parse(&s.peek(&format!("{docs}3.2.1.json")).unwrap()).unwrap();
        assert_eq!(doc.archives.keys().collect::<Vec<_>>(), ["darwin_arm64", "linux_amd64"]);
    }

    /// What a publisher writes beside the zips is an input, never a trusted hash: a
    /// `VERSION.json` claiming the very ETag of a zip, with hashes of other bytes, changes
    /// nothing the mirror serves.
    #[tokio::test]
    async fn publisher_documents_are_never_believed() {
        let s = MemoryStorage::new();
        let indexer = Indexer::new(&s, Limits::default());
        let prefix = "providers/registry.terraform.io/hashicorp/null/";
        let zip_key = format!("{prefix}terraform-provider-null_3.2.1_linux_amd64.zip");
        let zip = provider_zip("real");
        s.insert(&zip_key, zip.clone());
        let etag = s.etag(&zip_key).await.unwrap().unwrap();
        let forged = serde_json::json!({"archives": {"linux_amd64": {
            "url": "terraform-provider-null_3.2.1_linux_amd64.zip",
            "hashes": ["h1:forgedforgedforgedforgedforgedforgedforged00=", "zh:00"],
            "indexed": {"size": zip.len(), "etag": etag}
        }}});
        s.insert(&format!("{prefix}3.2.1.json"), serde_json::to_vec(&forged).unwrap());
        s.insert(&format!("{prefix}index.json"), r#"{"versions":{"3.2.1":{},"9.9.9":{}}}"#);
        indexer.reindex(&provider()).await.unwrap();
        let docs = "indexed/providers/registry.terraform.io/hashicorp/null/";
        let doc = ProviderVersion::parse(&s.peek(&format!("{docs}3.2.1.json")).unwrap()).unwrap();
        let h1 = archive::summarise_zip(std::io::Cursor::new(zip.clone()), &archive::Bounds::UNLIMITED).unwrap().h1;
        assert_eq!(doc.archives["linux_amd64"].hashes, [h1, format!("zh:{}", hex::encode(Sha256::digest(&zip)))]);
        let index = ProviderIndex::parse(&s.peek(&format!("{docs}index.json")).unwrap()).unwrap();
        assert_eq!(index.versions.keys().collect::<Vec<_>>(), ["3.2.1"], "only versions with zips");
        // The publisher's files stay as they were, and are not rejected: they are names a
        // synced `terraform providers mirror` directory holds.
        assert_eq!(s.peek(&format!("{prefix}3.2.1.json")).unwrap(), serde_json::to_vec(&forged).unwrap());
        assert!(rejection(&s, &format!("{prefix}3.2.1.json")).is_none());
    }

    /// A manifest planted where publishers write (`modules/…/manifest.json`, pointing at the
    /// token store) is never read: not by a pass, not when a garbage upload is rejected next
    /// to it, not by `reindex_all`; its upload gets a rejection record saying so.
    #[tokio::test]
    async fn a_planted_manifest_is_never_read() {
        let s = MemoryStorage::new();
        let indexer = Indexer::new(&s, Limits::default());
        s.insert("modules/acme/vpc/aws/1.0.0.tar.gz", tf("real"));
        let planted = serde_json::json!({"format": 1, "versions": [
            {"version": "6.6.6", "archive": "access/tokens.json", "size": 1, "sha256": "00", "etag": "\"x\""},
            {"version": "1.0.0", "archive": "modules/other/secret/aws/1.0.0.tar.gz", "size": 1, "sha256": "00", "etag": "\"x\""}
        ]});
        s.insert("modules/acme/vpc/aws/manifest.json", serde_json::to_vec(&planted).unwrap());
        s.insert("modules/acme/vpc/aws/2.0.0.tar.gz", b"garbage".to_vec());
        indexer.reindex(&module()).await.unwrap();
        let entries: Vec<(String, String)> =
            manifest(&s).versions.into_iter().map(|v| (v.version, v.archive)).collect();
        assert_eq!(entries, [("1.0.0".to_string(), "modules/acme/vpc/aws/1.0.0.tar.gz".to_string())]);
        let record = rejection(&s, "modules/acme/vpc/aws/manifest.json").unwrap();
        assert!(record.reason.contains("only the indexer writes them"), "{}", record.reason);
        assert!(rejection(&s, "modules/acme/vpc/aws/2.0.0.tar.gz").is_some());
        let before = s.peek(MANIFEST);
        for (_, outcome) in indexer.reindex_all().await.unwrap() {
            outcome.unwrap();
        }
        assert_eq!(s.peek(MANIFEST), before, "reindex all keeps only what the archives say");
    }

    #[tokio::test]
    async fn reindex_all_goes_on_past_a_failing_owner() {
        let s = MemoryStorage::new();
        s.insert("modules/a/b/c/1.0.0.tgz", tar_gz_of(&[("main.tf", b"x")]));
        s.insert("modules/d/e/f/0.1.0.tgz", tar_gz_of(&[("main.tf", b"y")]));
        s.insert("modules/g/h/i/0.1.0.tgz", tar_gz_of(&[("main.tf", b"z")]));
        // The first owner's manifest cannot be read: its pass fails.
        s.deny("indexed/modules/a/b/c/manifest.json");
        let results = Indexer::new(&s, Limits::default()).reindex_all().await.unwrap();
        let outcomes: Vec<(String, bool)> = results.iter().map(|(o, r)| (o.to_string(), r.is_ok())).collect();
        assert_eq!(
            outcomes,
            [
                ("module a/b/c".to_string(), false),
                ("module d/e/f".to_string(), true),
                ("module g/h/i".to_string(), true)
            ]
        );
        assert!(s.peek("indexed/modules/g/h/i/manifest.json").is_some(), "indexed after the failure");
    }

    #[tokio::test]
    async fn reindex_all_is_idempotent() {
        let s = MemoryStorage::new();
        s.insert("modules/a/b/c/1.0.0.tgz", tar_gz_of(&[("main.tf", b"x")]));
        s.insert("modules/d/e/f/0.1.0.zip", zip_of(&[("main.tf", b"y")]));
        s.insert(
            "providers/example.com/acme/thing/terraform-provider-thing_1.0.0_linux_amd64.zip",
            zip_of(&[("terraform-provider-thing", b"z")]),
        );
        s.insert("elsewhere/file", "ignored");
        let indexer = Indexer::new(&s, Limits::default());
        let first = indexer.reindex_all().await.unwrap();
        assert_eq!(first.len(), 3);
        assert!(first.iter().all(|(_, o)| matches!(o, Ok(Outcome::Written { versions: 1 }))), "{first:?}");
        let snapshot: Vec<_> = s.keys().into_iter().map(|k| (k.clone(), s.peek(&k))).collect();
        let second = indexer.reindex_all().await.unwrap();
        assert!(second.iter().all(|(_, o)| matches!(o, Ok(Outcome::Unchanged))), "{second:?}");
        let after: Vec<_> = s.keys().into_iter().map(|k| (k.clone(), s.peek(&k))).collect();
        assert_eq!(snapshot, after);
    }

    /// Storage where, the first time a pass writes the module manifest, a rival pass gets
    /// there first: it publishes another version and writes its own manifest.
    struct Racy {
        inner: MemoryStorage,
        raced: std::sync::atomic::AtomicBool,
    }

    impl Storage for Racy {
        async fn get(&self, key: &str) -> Result<Option<Object>, Error> {
            self.inner.get(key).await
        }
        async fn get_if_changed(&self, key: &str, etag: &str) -> Result<crate::storage::Revalidated, Error> {
            self.inner.get_if_changed(key, etag).await
        }
        async fn etag(&self, key: &str) -> Result<Option<String>, Error> {
            self.inner.etag(key).await
        }
        async fn put(
            &self,
            key: &str,
            body: Bytes,
            content_type: &str,
            precondition: Precondition,
        ) -> Result<(), Error> {
            if key.ends_with("manifest.json") && !self.raced.swap(true, std::sync::atomic::Ordering::SeqCst) {
                self.inner.insert("modules/acme/vpc/aws/9.0.0.tar.gz", tf("rival"));
                Box::pin(Indexer::new(&self.inner, Limits::default()).reindex(&module())).await?;
            }
            self.inner.put(key, body, content_type, precondition).await
        }
        async fn delete(&self, key: &str) -> Result<(), Error> {
            self.inner.delete(key).await
        }
        async fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>, Error> {
            self.inner.list(prefix).await
        }
        async fn stream<F>(&self, key: &str, sink: F) -> Result<Option<String>, Error>
        where
            F: FnMut(&[u8]) -> Result<(), Error> + Send,
        {
            self.inner.stream(key, sink).await
        }
        async fn presign_get(&self, key: &str, ttl: Duration) -> Result<String, Error> {
            self.inner.presign_get(key, ttl).await
        }
    }

    #[tokio::test]
    async fn a_pass_that_loses_a_race_reads_again_and_loses_nothing() {
        let s = Racy { inner: MemoryStorage::new(), raced: false.into() };
        s.inner.insert("modules/acme/vpc/aws/1.0.0.tar.gz", tf("mine"));
        let outcome = Indexer::new(&s, Limits::default()).reindex(&module()).await.unwrap();
        assert!(s.raced.load(std::sync::atomic::Ordering::SeqCst), "the rival wrote first");
        // The conditional write failed; the retry read the rival's manifest, found both
        // versions already there, and had nothing left to write.
        assert_eq!(outcome, Outcome::Unchanged);
        assert_eq!(versions(&s.inner), ["9.0.0", "1.0.0"]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_passes_lose_no_version() {
        let s = std::sync::Arc::new(MemoryStorage::new());
        let mut tasks = Vec::new();
        for i in 0..50 {
            let s = s.clone();
            tasks.push(tokio::spawn(async move {
                s.insert(&format!("modules/acme/vpc/aws/1.{i}.0.tar.gz"), tf(&i.to_string()));
                Indexer::new(&*s, Limits::default()).reindex(&module()).await.unwrap();
                let zip = format!(
                    "providers/registry.terraform.io/hashicorp/null/terraform-provider-null_2.{i}.0_linux_amd64.zip"
                );
                s.insert(&zip, provider_zip(&i.to_string()));
                Indexer::new(&*s, Limits::default()).reindex(&provider()).await.unwrap();
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(versions(&s).len(), 50);
        let index =
            ProviderIndex::parse(&s.peek("indexed/providers/registry.terraform.io/hashicorp/null/index.json").unwrap())
                .unwrap();
        assert_eq!(index.versions.len(), 50);
    }

    #[test]
    fn timestamps() {
        let now = rfc3339_now();
        assert!(now.starts_with("20") && now.as_bytes()[10] == b'T', "{now}");
    }
}
