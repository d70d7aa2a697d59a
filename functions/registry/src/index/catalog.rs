//! Keeping the catalog (`crate::catalog`) in line with the manifests: after every pass, the
//! pass's owner's entry is recomputed from its manifest as stored *now*, and written with the
//! same conditional write (and retry) as a manifest; a repair rebuilds every entry.
//!
//! Why no update is lost: an attempt reads the catalog (and its ETag) *before* the manifest it
//! computes the entry from, and writes only if the catalog is still what it read. Take the
//! last write of an owner's manifest, by pass P. P's catalog update starts after that write, so
//! every attempt of it reads the final manifest, and one of them succeeds (or P fails and its
//! event is retried). A catalog write that succeeds after P's read the catalog after P's write
//! (nothing was written between its read and its write), so its manifest read came later
//! still: it also carries the final entry. The same ordering as rule 1 of the manifests.

use std::time::Duration;

use futures_util::StreamExt;

use super::indexer::Indexer;
use super::intake::read_document;
use crate::address::{ModuleAddress, ProviderAddress};
use crate::catalog::{self, Catalog, ModuleEntry, ProviderEntry};
use crate::error::{Error, chain};
use crate::layout::{self, ObjectKind, Owner};
use crate::manifest::{CONTENT_TYPE_JSON, ModuleManifest, ModuleVersion, ProviderIndex};
use crate::module_docs::{self, ModuleDocs};
use crate::retry::{self, Backoff};
use crate::storage::{Object, Precondition, Storage};

/// Every pass of every owner writes this one document, so it sees more races than any
/// manifest; each lost race is another pass's progress, so a generous bound costs nothing in
/// the common case.
const CATALOG_RETRY: Backoff =
    Backoff { attempts: 60, first: Duration::from_millis(10), max: Duration::from_millis(1000) };

/// Manifests read at once when the whole catalog is rebuilt.
const REBUILD_READS: usize = 16;

/// Bring `owner`'s catalog entry in line with its manifest as stored now (added, changed,
/// or removed when it serves nothing). Nothing is written when the entry is already right.
pub(super) async fn update_catalog<S: Storage>(indexer: &Indexer<'_, S>, owner: &Owner) -> Result<(), Error> {
    retry::on_conflict(CATALOG_RETRY, "catalog", |_| async {
        let read = read_document(indexer.storage, layout::CATALOG).await?;
        let (mut catalog, replace) = stored_or_rebuilt(indexer, read.as_ref()).await?;
        let changed = match owner {
            Owner::Module(m) => {
                let entry = module_entry(indexer, m, catalog.module(m)).await?;
                catalog.set_module(m, entry)
            }
            Owner::Provider(p) => {
                let entry = provider_entry(indexer, p, catalog.provider(p)).await?;
                catalog.set_provider(p, entry)
            }
        };
        if !changed && !replace {
            return Ok(());
        }
        write_catalog(indexer, &catalog, read.as_ref()).await
    })
    .await
}

/// Add a pinned copy of an upstream module to the catalog (the indexer logged its pin).
pub(super) async fn add_upstream_copy<S: Storage>(
    indexer: &Indexer<'_, S>,
    module: &crate::address::UpstreamModule,
    version: &str,
    copied_at: &str,
) -> Result<(), Error> {
    retry::on_conflict(CATALOG_RETRY, "catalog", |_| async {
        let read = read_document(indexer.storage, layout::CATALOG).await?;
        let (mut catalog, replace) = stored_or_rebuilt(indexer, read.as_ref()).await?;
        if !catalog.add_upstream_copy(module, version, copied_at) && !replace {
            return Ok(());
        }
        write_catalog(indexer, &catalog, read.as_ref()).await
    })
    .await
}

/// Rebuild every entry from the manifests present (repair, migration): entries of owners
/// that serve nothing go, descriptions are read again only where the latest version changed.
pub(super) async fn rebuild_catalog<S: Storage>(indexer: &Indexer<'_, S>) -> Result<(), Error> {
    retry::on_conflict(CATALOG_RETRY, "catalog", |_| async {
        let read = read_document(indexer.storage, layout::CATALOG).await?;
        let previous = read.as_ref().and_then(|o| Catalog::parse(&o.bytes).ok()).unwrap_or_default();
        let catalog = every_entry(indexer, &previous).await?;
        if read.is_some() && catalog == previous {
            return Ok(());
        }
        write_catalog(indexer, &catalog, read.as_ref()).await
    })
    .await
}

/// The catalog as stored, and whether what is stored must be replaced whatever one entry is:
/// none yet (a new bucket, or one from before the catalog existed) or unreadable, every owner's
/// entry is computed, not only the one a pass changed.
async fn stored_or_rebuilt<S: Storage>(
    indexer: &Indexer<'_, S>,
    read: Option<&Object>,
) -> Result<(Catalog, bool), Error> {
    match read.map(|o| Catalog::parse(&o.bytes)) {
        Some(Ok(catalog)) => Ok((catalog, false)),
        None => Ok((every_entry(indexer, &Catalog::default()).await?, true)),
        Some(Err(e)) => {
            tracing::warn!(error = %chain(&e), "stored catalog unreadable; rebuilding it from every manifest");
            Ok((every_entry(indexer, &Catalog::default()).await?, true))
        }
    }
}

async fn write_catalog<S: Storage>(
    indexer: &Indexer<'_, S>,
    catalog: &Catalog,
    read: Option<&Object>,
) -> Result<(), Error> {
    let precondition = Precondition::replacing(read.map(|o| o.etag.as_str()));
    indexer.storage.put(layout::CATALOG, catalog.to_bytes()?, CONTENT_TYPE_JSON, precondition).await
}

/// The catalog as every manifest in the bucket says, reusing `previous`'s descriptions.
async fn every_entry<S: Storage>(indexer: &Indexer<'_, S>, previous: &Catalog) -> Result<Catalog, Error> {
    let mut owners = Vec::new();
    for documents in [layout::MODULES_PREFIX, layout::PROVIDERS_PREFIX] {
        let prefix = format!("{}{documents}", layout::INDEXED_PREFIX);
        for object in indexer.storage.list(&prefix).await? {
            match layout::classify(&object.key) {
                Some(ObjectKind::ModuleManifest(m)) => owners.push(Owner::Module(m)),
                Some(ObjectKind::ProviderIndex(p)) => owners.push(Owner::Provider(p)),
                _ => {}
            }
        }
    }
    // An owner whose manifest cannot be read now keeps the entry it had (its own pass
    // reports the failure): one poisoned owner does not block the others' entries.
    let mut entries = futures_util::stream::iter(owners)
        .map(|owner| async move {
            let mut one = Catalog::default();
            match &owner {
                Owner::Module(m) => match module_entry(indexer, m, previous.module(m)).await {
                    Ok(entry) => one.set_module(m, entry),
                    Err(e) => {
                        tracing::warn!(%owner, error = %chain(&e), "manifest unreadable; its catalog entry kept as it was");
                        one.set_module(m, previous.module(m).cloned())
                    }
                },
                Owner::Provider(p) => match provider_entry(indexer, p, previous.provider(p)).await {
                    Ok(entry) => one.set_provider(p, entry),
                    Err(e) => {
                        tracing::warn!(%owner, error = %chain(&e), "index unreadable; its catalog entry kept as it was");
                        one.set_provider(p, previous.provider(p).cloned())
                    }
                },
            };
            one
        })
        .buffer_unordered(REBUILD_READS);
    // Upstream modules' copies are no manifest's: kept as they were (each pin added them).
    let mut catalog = Catalog { upstream_modules: previous.upstream_modules.clone(), ..Catalog::default() };
    while let Some(one) = entries.next().await {
        catalog.modules.extend(one.modules);
        catalog.providers.extend(one.providers);
    }
    Ok(catalog)
}

/// A module's entry from its manifest as stored; the description from `previous` while the
/// latest version's archive is the same, else from that version's docs.
async fn module_entry<S: Storage>(
    indexer: &Indexer<'_, S>,
    module: &ModuleAddress,
    previous: Option<&ModuleEntry>,
) -> Result<Option<ModuleEntry>, Error> {
    let Some(object) = indexer.storage.get(&layout::module_manifest(module)).await? else {
        return Ok(None);
    };
    let manifest = ModuleManifest::parse(&object.bytes)?;
    let Some(latest) = catalog::latest(manifest.versions.iter().map(|v| v.version.as_str())) else {
        return Ok(None);
    };
    let Some(version) = manifest.versions.iter().find(|v| v.version == latest) else {
        return Ok(None);
    };
    let description = match previous {
        Some(p) if p.latest == version.version && p.sha256 == version.sha256 => p.description.clone(),
        _ => description(indexer, module, version).await?,
    };
    Ok(ModuleEntry::from_manifest(module, &manifest, |_| description))
}

/// The first paragraph of a version's README, from its stored docs (when they were read
/// from the archive the manifest serves).
async fn description<S: Storage>(
    indexer: &Indexer<'_, S>,
    module: &ModuleAddress,
    version: &ModuleVersion,
) -> Result<Option<String>, Error> {
    let Ok(parsed) = crate::address::parse_version(&version.version) else { return Ok(None) };
    let Some(object) = indexer.storage.get(&layout::module_docs(module, &parsed)).await? else {
        return Ok(None);
    };
    let docs: ModuleDocs = match serde_json::from_slice(&object.bytes) {
        Ok(docs) => docs,
        Err(e) => {
            tracing::warn!(%module, version = version.version, error = %e, "stored docs unreadable; no description");
            return Ok(None);
        }
    };
    if docs.sha256 != version.sha256 {
        return Ok(None);
    }
    Ok(docs.root.readme.as_deref().and_then(module_docs::summary))
}

/// A provider's entry from its `index.json` as stored.
async fn provider_entry<S: Storage>(
    indexer: &Indexer<'_, S>,
    provider: &ProviderAddress,
    previous: Option<&ProviderEntry>,
) -> Result<Option<ProviderEntry>, Error> {
    let Some(object) = indexer.storage.get(&layout::provider_index(provider)).await? else {
        return Ok(None);
    };
    let index = ProviderIndex::parse(&object.bytes)?;
    Ok(ProviderEntry::from_index(provider, &index, previous, &crate::clock::rfc3339_now()))
}

#[cfg(test)]
mod tests;
