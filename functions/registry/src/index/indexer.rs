//! The indexer: what every pass is given (the bucket, the limits it enforces, the registry's
//! own host) and keeps between passes (each namespace's signing keys, who uploaded what), and
//! what a pass answers (`Outcome`). Its entry points, which run the passes, are in `mod.rs`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use super::judgment::SemverPolicy;
use crate::archive;
use crate::provenance::TrustRoot;
use crate::provenance::policy::Policies;
use crate::signing::SigningKey;
use crate::storage::Storage;

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
    /// `REGISTRY_PROVENANCE`, default every namespace `recorded`: what a module version's
    /// Sigstore bundle must be (`provenance`).
    pub provenance: Policies,
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
            provenance: Policies::default(),
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
    pub(super) storage: &'a S,
    pub(super) limits: Limits,
    /// `REGISTRY_HOSTNAME`: providers under it are signed releases (`releases`).
    pub(super) registry_hostname: Option<String>,
    /// Each namespace's signing keys, read once per indexer (one event batch, one upload, one
    /// repair), not once per release checked: a full pass over 200 versions reads them once.
    pub(super) keys: Mutex<BTreeMap<String, Arc<NamespaceKeys>>>,
    /// Key → who uploaded or deleted it, from the events being indexed (the publish log
    /// names them).
    principals: Mutex<BTreeMap<String, String>>,
    /// Keep the catalog after each pass (always, except to measure what that costs).
    pub(super) catalog: bool,
    /// The Sigstore trust roots, read once per indexer (`provenance`).
    pub(super) trust_roots: tokio::sync::OnceCell<Arc<TrustRoots>>,
}

/// The trust roots a bundle is verified against, each on its own: the shipped public-good
/// one, then each a key admin added, by name; and the files that could not be read, and why.
#[derive(Debug)]
pub(super) struct TrustRoots {
    pub(super) roots: Vec<(String, TrustRoot)>,
    pub(super) problems: Vec<String>,
    /// A digest of the files read and their ETags: refusals keep it, so a changed root judges
    /// again.
    pub(super) digest: String,
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
            trust_roots: Default::default(),
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

    /// Who uploaded or deleted each key, as recorded so far.
    pub(super) fn principals(&self) -> BTreeMap<String, String> {
        self.principals.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// A namespace's signing keys as read from `signing-keys/HOST/NS/` (by `releases`, once per
/// indexer).
#[derive(Debug)]
pub(super) struct NamespaceKeys {
    pub(super) keys: Vec<SigningKey>,
    /// Key files that could not be used, and why (said in a rejection when no key verifies).
    pub(super) problems: Vec<String>,
}
