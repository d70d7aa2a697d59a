//! The indexer: given the archives present under one module or provider prefix, write that
//! owner's manifest. The indexer Lambda calls it on S3 events, the local registry on every
//! notified upload or delete through its embedded S3, and `reindex_all` rebuilds every
//! manifest. This file is its entry points, which run the passes; each pass and what they
//! share is a file below it, and none of them names anything here. One file per idea: the
//! module pass (`modules`), the provider passes (`providers`, signed releases in `releases`),
//! the catalog (`catalog`); what every pass is given (`indexer`: the bucket, the limits, the
//! caches), how it takes uploads in (`intake`: ETags as listed, uploads spooled or refused),
//! the documents it replaces (`documents`: read before the listing, written with what their
//! writes owe, the publish log and OCI cleanup, so that no failure leaves it half done);
//! rejection records (`rejections`), spooling uploads to disk (`spool`), deprecation files
//! (`deprecations`), SemVer judgment (`judgment`), OCI artifacts (`oci`).
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
use crate::error::{Error, chain};
use crate::layout::{self, ObjectKind, Owner};
use crate::retry::{self, Backoff};
use crate::storage::Storage;

// The passes. Each group names only its own files and the groups below it (module_graph.rs
// checks that no files of a folder form a loop, and that none names an item of this file).
mod catalog;
mod modules;
mod providers;
mod releases;

// What every pass shares: the indexer it is given, how it takes uploads in, the documents it
// replaces (with what their writes owe: the publish log, OCI cleanup).
mod documents;
mod indexer;
mod intake;

// The steps of a pass, each on its own.
mod deprecations;
mod judgment;
mod oci;
mod provenance;
mod rejections;
mod spool;
mod upstream_modules;

pub use indexer::{Indexer, Limits, Outcome};
pub use judgment::{Policy as SemverRule, SemverPolicy, Verdict, judge_unpublished};
pub use rejections::Rejection;
use rejections::{delete_record, reject_once};
pub use releases::{INCOMPLETE_RELEASE, KEY_FILES_MAX, RELEASE_MANIFEST_MAX_BYTES, manifest_protocols};

/// How a pass that loses a race is retried before giving up (the caller then reports an
/// error; in Lambda the event is retried). Under n passes racing on one manifest the last
/// winner loses about n times, so the bound is well above the releases' usual burst (a dozen
/// platforms at once; the concurrency proof runs 60): at most about 40 s of waiting, inside the
/// indexer's 300 s timeout. Each lost race is another pass's progress, so a high bound costs
/// nothing when there is no contention.
const PASS_RETRY: Backoff = Backoff { attempts: 80, first: Duration::from_millis(10), max: Duration::from_millis(500) };

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

impl<S: Storage> Indexer<'_, S> {
    /// React to one changed key (created or removed): rebuild the manifest of its owner, or,
    /// for a key under `modules/` or `providers/` that belongs to no owner, write or clear its
    /// rejection record; a pin or refusal of the modules pull-through goes on the publish log.
    /// Keys elsewhere are ignored (`None`).
    pub async fn on_object_changed(&self, key: &str) -> Result<Option<(Owner, Outcome)>, Error> {
        if layout::upstream_module_record(key).is_some() {
            self.log_upstream_module_record(key).await?;
            return Ok(None);
        }
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

    /// Put a pin or refusal record of the modules pull-through (`layout::upstream_module_record`)
    /// on the publish log; `false` for any other key, or one deleted since.
    pub async fn log_upstream_module_record(&self, key: &str) -> Result<bool, Error> {
        upstream_modules::log_record(self, key).await
    }

    /// A key under `modules/` or `providers/` that belongs to no module or provider (bad
    /// names, wrong depth): say so in a rejection record while it exists.
    async fn explain_misplaced(&self, key: &str) -> Result<(), Error> {
        let present = self.storage.list(key).await?.into_iter().find(|o| o.key == key);
        match (present, layout::expected_name(key)) {
            (Some(object), Some(expected)) => {
                let principal = self.principals().get(key).cloned();
                reject_once(self.storage, object, expected, principal).await
            }
            _ => delete_record(self.storage, &layout::rejection(key)).await,
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
                tracing::error!(%owner, error = %chain(e), "reindex failed for this owner; going on with the others");
            }
            results.push((owner, outcome));
        }
        // Once for all owners, not once per owner: a rebuild reads every manifest and every part.
        catalog::rebuild_catalog(self).await?;
        upstream_modules::rebuild_pins(self).await?;
        Ok(results)
    }
}

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
