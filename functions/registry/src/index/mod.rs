//! The indexer: given the archives present under one module or provider prefix, write that
//! owner's manifest. The indexer Lambda calls it on S3 events, the local registry on every
//! notified upload or delete through its embedded S3, and `reindex_all` rebuilds every
//! manifest. One file per idea: the module pass (`modules`), the provider passes
//! (`providers`), rejection records (`rejections`), spooling uploads to disk (`spool`).
//!
//! What a pass covers (`Pass`): a module's one manifest; for a provider either one version
//! (its `VERSION.json` and its line in `index.json`: what a zip upload or delete changes, at
//! a cost that does not grow with the number of versions) or everything (repair).
//!
//! Correctness under concurrent publishes rests on two rules:
//! 1. read every manifest a pass may replace *before* the listing it computes from, and
//! 2. write each manifest only if it is still what was read (`If-Match` / `If-None-Match: *`),
//!    retrying the whole pass (bounded, with jitter: `retry::on_conflict`) when a write loses
//!    a race.
//!
//! Any pass that starts after an upload either writes a manifest containing it, or loses a
//! race to a pass whose manifest it will then read and extend. Manifests are never deleted
//! (an empty one answers 404), so a yank cannot race a publish into losing it.
//!
//! Passes are idempotent: with nothing changed they write nothing, so a redelivered event
//! costs one read-only pass.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::address::ProviderAddress;
use crate::archive;
use crate::error::Error;
use crate::layout::{self, ObjectKind, Owner};
use crate::publish_log::Change;
use crate::retry::{self, Backoff};
use crate::storage::{Object, ObjectInfo, Storage};

mod catalog;
mod deprecations;
mod judgment;
mod modules;
mod oci;
mod providers;
mod rejections;
mod releases;
mod spool;

pub use judgment::{Policy as SemverRule, SemverPolicy};
pub use rejections::Rejection;
use rejections::{Rejections, write_rejection};
use spool::{Spooled, spool};

/// How a pass that loses a race is retried before giving up (the caller then reports an
/// error; in Lambda the event is retried). Under n passes racing on one manifest the last
/// winner loses about n times, so the bound is well above the releases' usual burst (a dozen
/// platforms at once; the concurrency proof runs 60): at most about 40 s of waiting, inside the
/// indexer's 300 s timeout. Each lost race is another pass's progress, so a high bound costs
/// nothing when there is no contention.
const PASS_RETRY: Backoff = Backoff { attempts: 80, first: Duration::from_millis(10), max: Duration::from_millis(500) };

/// What a pass did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The manifest already said this.
    Unchanged,
    /// Manifests were written; `versions` is how many versions are listed now.
    Written {
        /// Versions listed after the pass.
        versions: usize,
    },
}

/// What one pass rebuilds.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Pass {
    /// Everything of one owner: a module's manifest; a provider's `index.json` and every
    /// `VERSION.json` (reading all of them).
    Owner(Owner),
    /// One version of a provider: its `VERSION.json` and its line in `index.json`, from a
    /// listing of that version's zips alone.
    ProviderVersion(ProviderAddress, semver::Version),
}

impl Pass {
    /// The narrowest pass that covers a change of an object of this kind.
    pub fn covering(kind: &ObjectKind) -> Pass {
        match kind {
            ObjectKind::ProviderArchive { provider, version, .. }
            | ObjectKind::ProviderReleaseFile { provider, version, .. } => {
                Pass::ProviderVersion(provider.clone(), version.clone())
            }
            ObjectKind::Deprecation { owner: Owner::Provider(provider), version } => {
                Pass::ProviderVersion(provider.clone(), version.clone())
            }
            other => Pass::Owner(other.owner()),
        }
    }
}

impl Pass {
    /// Whose manifests it rebuilds.
    pub fn owner(&self) -> Owner {
        match self {
            Pass::Owner(owner) => owner.clone(),
            Pass::ProviderVersion(p, _) => Owner::Provider(p.clone()),
        }
    }
}

impl std::fmt::Display for Pass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Pass::Owner(owner) => write!(f, "{owner}"),
            Pass::ProviderVersion(p, v) => write!(f, "provider {p} {v}"),
        }
    }
}

/// Size limits the indexer enforces before an archive is listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// `REGISTRY_MAX_MODULE_ARCHIVE_BYTES`, default 100 MiB.
    pub module_archive_bytes: u64,
    /// `REGISTRY_MAX_PROVIDER_ZIP_BYTES`, default 1 GiB (the indexer spools zips to `/tmp`:
    /// give the function at least this much ephemeral storage).
    pub provider_zip_bytes: u64,
    /// `REGISTRY_MAX_UNPACKED_BYTES`, default 4 GiB: total bytes an archive may unpack to
    /// (decompression bombs).
    pub unpacked_bytes: u64,
    /// `REGISTRY_MAX_ARCHIVE_ENTRIES`, default 20,000: entries an archive may hold, which bounds
    /// the memory a check needs (about a million empty entries fit in a 90 MiB zip).
    pub archive_entries: u64,
    /// `REGISTRY_ALLOW_OVERWRITE`, default false: whether an upload of different bytes to a
    /// version that is already published replaces it. By default it is rejected and the
    /// published bytes stay served (`immutable`).
    pub overwrite_published: bool,
    /// `REGISTRY_SEMVER_POLICY`, default `warn`: what a breaking change in a minor or patch
    /// release of a module does (`judgment`).
    pub semver: SemverPolicy,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            module_archive_bytes: 100 << 20,
            provider_zip_bytes: 1 << 30,
            unpacked_bytes: 4 << 30,
            archive_entries: 20_000,
            overwrite_published: false,
            semver: SemverPolicy::default(),
        }
    }
}

impl Limits {
    /// What reading one archive may cost.
    pub fn bounds(&self) -> archive::Bounds {
        archive::Bounds { unpacked_bytes: self.unpacked_bytes, entries: self.archive_entries }
    }
}

/// Rebuilds manifests from what is in the bucket; one per invocation or upload.
pub struct Indexer<'a, S> {
    storage: &'a S,
    limits: Limits,
    /// `REGISTRY_HOSTNAME`: providers under it are signed releases (`releases`).
    registry_hostname: Option<String>,
    /// Each namespace's signing keys, read once per indexer (one event batch, one upload, one
    /// repair), not once per release checked: a full pass over 200 versions reads them once.
    keys: std::sync::Mutex<std::collections::BTreeMap<String, std::sync::Arc<releases::NamespaceKeys>>>,
    /// Key → who uploaded or deleted it, from the events being indexed (the publish log
    /// names them).
    principals: std::sync::Mutex<std::collections::BTreeMap<String, String>>,
    /// Keep the catalog after each pass (always, except to measure what that costs).
    catalog: bool,
}

impl<'a, S: Storage> Indexer<'a, S> {
    /// An indexer over `storage`, enforcing `limits` on what it accepts.
    pub fn new(storage: &'a S, limits: Limits) -> Self {
        Indexer {
            storage,
            limits,
            registry_hostname: None,
            keys: Default::default(),
            principals: Default::default(),
            catalog: true,
        }
    }

    /// Require signed releases for providers under `hostname` (the registry's own,
    /// `REGISTRY_HOSTNAME`): what every deployment's indexer does.
    pub fn signing_for(mut self, hostname: Option<String>) -> Self {
        self.registry_hostname = hostname;
        self
    }

    /// Without `catalog`, passes leave the catalog as it is: only for `make bench`, which
    /// measures what keeping it adds to a publish. Every deployment keeps it.
    pub fn with_catalog(mut self, catalog: bool) -> Self {
        self.catalog = catalog;
        self
    }

    /// The bucket this indexer reads and writes.
    pub fn storage(&self) -> &'a S {
        self.storage
    }

    /// Who uploaded or deleted `key` (the S3 event's `principalId`), for the publish log.
    pub fn record_principal(&self, key: &str, principal: &str) {
        self.principals.lock().unwrap_or_else(|p| p.into_inner()).insert(key.to_string(), principal.to_string());
    }

    fn principals(&self) -> std::collections::BTreeMap<String, String> {
        self.principals.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Append what a manifest write changed to the publish log: called once that write has
    /// succeeded, so each change is logged by the one pass that made it.
    async fn log_changes(&self, changes: Vec<Change>) -> Result<(), Error> {
        let principals = self.principals();
        let changes: Vec<Change> =
            changes.into_iter().map(|c| Change { principal: principals.get(&c.key).cloned(), ..c }).collect();
        if let Err(e) = crate::publish_log::append(self.storage, changes.clone()).await {
            // The manifest is written: this pass cannot undo it. Say loudly what is missing
            // from the log (audit will name it too).
            tracing::error!(error = %e, ?changes, "published, but not on the publish log");
            return Err(e);
        }
        Ok(())
    }

    /// React to one changed key (created or removed): rebuild the manifest of its owner, or,
    /// for a key under `modules/` or `providers/` that belongs to no owner, write or clear its
    /// rejection record. Keys elsewhere are ignored (`None`).
    pub async fn on_object_changed(&self, key: &str) -> Result<Option<(Owner, Outcome)>, Error> {
        let Some(kind) = layout::classify(key) else {
            if layout::expected_name(key).is_some() {
                self.explain_misplaced(key).await?;
            } else {
                tracing::debug!(key = %crate::address::printable(key), "key outside the registry layout; ignored");
            }
            return Ok(None);
        };
        let pass = Pass::covering(&kind);
        let outcome = self.run(&pass).await?;
        Ok(Some((kind.owner(), outcome)))
    }

    /// A key under `modules/` or `providers/` that belongs to no module or provider (bad
    /// names, wrong depth): say so in a rejection record while it exists.
    async fn explain_misplaced(&self, key: &str) -> Result<(), Error> {
        let present = self.storage.list(key).await?.into_iter().find(|o| o.key == key);
        match (present, layout::expected_name(key)) {
            (Some(object), Some(expected)) => {
                let principal = self.principals().get(key).cloned();
                write_rejection(self.storage, &object, expected, principal).await
            }
            _ => self.storage.delete(&layout::rejection(key)).await,
        }
    }

    /// Everything of one owner, rebuilt (`Pass::Owner`).
    pub async fn reindex(&self, owner: &Owner) -> Result<Outcome, Error> {
        self.run(&Pass::Owner(owner.clone())).await
    }

    /// One pass, retried while it loses races, then its owner's catalog entry brought in line
    /// (also when the pass changed nothing: a pass that wrote its manifest but failed before
    /// the catalog is retried as an event, and finds its manifest unchanged).
    pub async fn run(&self, pass: &Pass) -> Result<Outcome, Error> {
        let outcome = self.run_pass(pass).await?;
        if self.catalog {
            catalog::update_catalog(self, &pass.owner()).await?;
        }
        Ok(outcome)
    }

    /// One pass, retried while it loses races; the catalog left as it is.
    async fn run_pass(&self, pass: &Pass) -> Result<Outcome, Error> {
        let outcome = retry::on_conflict(PASS_RETRY, &pass.to_string(), |_| async {
            match pass {
                Pass::Owner(Owner::Module(m)) => modules::module_pass(self, m).await,
                Pass::Owner(Owner::Provider(p)) => providers::provider_pass(self, p).await,
                Pass::ProviderVersion(p, v) => providers::provider_version_pass(self, p, v).await,
            }
        })
        .await?;
        tracing::info!(%pass, ?outcome, "indexed");
        Ok(outcome)
    }

    /// Rebuild every manifest from the archives present (repair, migration), then the catalog.
    /// Idempotent.
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
            let outcome = self.run_pass(&Pass::Owner(owner.clone())).await;
            if let Err(e) = &outcome {
                tracing::error!(%owner, error = %e, "reindex failed for this owner; going on with the others");
            }
            results.push((owner, outcome));
        }
        // Once for all owners, not once per owner: each update reads and writes the whole catalog.
        catalog::rebuild_catalog(self).await?;
        Ok(results)
    }

    /// A document this pass may replace, as read (rule 1). One that fails S3's integrity
    /// check even when read again is corrupt at rest: it is read as unreadable content with its
    /// current ETag, so the pass rewrites it (`If-Match` that ETag) instead of stalling on it.
    async fn read_document(storage: &S, key: &str) -> Result<Option<Object>, Error> {
        match storage.get(key).await {
            Err(Error::Corrupt(why)) => {
                tracing::warn!(key, why, "stored document fails its integrity check; rebuilding it");
                Ok(storage.etag(key).await?.map(|etag| Object { bytes: bytes::Bytes::new(), etag }))
            }
            other => other,
        }
    }

    /// An archive's ETag as listed. S3 lists every object with it; some S3-compatible servers
    /// (s3s-fs, the local registry's) omit it, and then one HEAD answers it, asked only for an
    /// archive the manifest already records, so that it is not read again.
    async fn listed_etag(&self, object: &ObjectInfo) -> Result<String, Error> {
        if !object.etag.is_empty() {
            return Ok(object.etag.clone());
        }
        Ok(self.storage.etag(&object.key).await?.unwrap_or_default())
    }

    /// Spool an upload for checking, or record why not. `None` if there is nothing to check:
    /// rejected before with these bytes, too large (a rejection record is written now),
    /// unreadable as stored (likewise), or gone.
    async fn spool_or_reject(
        &self,
        object: &ObjectInfo,
        (limit, limit_var): (u64, &str),
        rejections: &mut Rejections,
    ) -> Result<Option<Spooled>, Error> {
        rejections.keep(&object.key);
        let refused_as_overwrite = !self.limits.overwrite_published
            && rejections.rejected_before(&object.key, &immutable_fingerprint(&object.etag));
        if rejections.rejected_before(&object.key, &object.etag) || refused_as_overwrite {
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
}

/// Why an upload of other bytes to a published version is not served. Said in the rejection
/// record, where the publisher looks.
fn immutable(what: &str, published_sha256: &str, uploaded_sha256: &str) -> String {
    format!(
        "{what} is already published with sha256 {published_sha256}; this upload has sha256 {uploaded_sha256}. \
         Published versions are immutable, and the published bytes stay served: publish a new version, or \
         delete this key to yank the version and upload it again (REGISTRY_ALLOW_OVERWRITE=true lets an upload \
         replace a published version)"
    )
}

/// What the rejection record of an upload refused as an overwrite keeps as its ETag: those
/// bytes are not read again while overwrites are refused, and are read again once
/// `REGISTRY_ALLOW_OVERWRITE` lets them replace the published version.
fn immutable_fingerprint(etag: &str) -> String {
    if etag.is_empty() { String::new() } else { format!("{OVERWRITE_FINGERPRINT}{etag}") }
}

/// How [`immutable_fingerprint`] marks a record of an upload refused as an overwrite.
const OVERWRITE_FINGERPRINT: &str = "overwrite:";

/// What the tests of every pass share.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::*;
    use crate::address::{ModuleAddress, ProviderAddress};
    use crate::manifest::ModuleManifest;
    use crate::storage::MemoryStorage;

    pub const MANIFEST: &str = "indexed/modules/acme/vpc/aws/manifest.json";

    pub fn module() -> Owner {
        Owner::Module(ModuleAddress::parse("acme", "vpc", "aws").unwrap())
    }
    pub fn provider() -> Owner {
        Owner::Provider(ProviderAddress::parse("registry.terraform.io", "hashicorp", "null").unwrap())
    }
    pub fn tf(marker: &str) -> Vec<u8> {
        crate::testing::tar_gz(&[("main.tf", marker.as_bytes())])
    }
    pub fn provider_zip(marker: &str) -> Vec<u8> {
        crate::testing::zip(&[("terraform-provider-null_v3", marker.as_bytes())])
    }
    pub fn manifest(s: &MemoryStorage) -> ModuleManifest {
        ModuleManifest::parse(&s.peek(MANIFEST).unwrap()).unwrap()
    }
    pub fn versions(s: &MemoryStorage) -> Vec<String> {
        manifest(s).versions.into_iter().map(|v| v.version).collect()
    }
    pub fn rejection(s: &MemoryStorage, key: &str) -> Option<Rejection> {
        s.peek(&layout::rejection(key)).map(|b| serde_json::from_slice(&b).unwrap())
    }
}

#[cfg(test)]
mod tests;
