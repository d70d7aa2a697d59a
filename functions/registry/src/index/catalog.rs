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
        // (the catalog, whether what is stored must be replaced whatever this entry is)
        // None yet (a new bucket, or one from before the catalog existed) or unreadable:
        // every owner's entry, not only this one's.
        let (mut catalog, replace) = match read.as_ref().map(|o| Catalog::parse(&o.bytes)) {
            Some(Ok(catalog)) => (catalog, false),
            None => (every_entry(indexer, &Catalog::default()).await?, true),
            Some(Err(e)) => {
                tracing::warn!(error = %chain(&e), "stored catalog unreadable; rebuilding it from every manifest");
                (every_entry(indexer, &Catalog::default()).await?, true)
            }
        };
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
    let mut catalog = Catalog::default();
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
mod tests {
    use super::super::fixtures::*;
    use super::super::{Indexer, Limits};
    use crate::catalog::Catalog;
    use crate::layout;
    use crate::storage::{MemoryStorage, Storage};
    use crate::testing::tar_gz as tar_gz_of;

    fn catalog(s: &MemoryStorage) -> Catalog {
        Catalog::parse(&s.peek(layout::CATALOG).expect("a catalog")).unwrap()
    }

    /// A catalog rebuilt without its previous copy dates providers at the rebuild (their
    /// indexes carry no time): compared without that, so no test depends on which second the
    /// clock shows.
    fn undated(mut catalog: Catalog) -> Catalog {
        catalog.providers.values_mut().for_each(|p| p.updated.clear());
        catalog
    }

    #[tokio::test]
    async fn the_catalog_follows_publishes_yanks_and_repairs() {
        let s = MemoryStorage::new();
        let indexer = Indexer::new(&s, Limits::default());
        let readme = |text: &str| tar_gz_of(&[("README.md", text.as_bytes()), ("main.tf", b"# x\n")]);
        s.insert("modules/acme/vpc/aws/1.0.0.tar.gz", readme("# VPC\n\nThe first VPC.\n"));
        indexer.on_object_changed("modules/acme/vpc/aws/1.0.0.tar.gz").await.unwrap();
        let entry = catalog(&s).modules["acme/vpc/aws"].clone();
        assert_eq!((entry.latest.as_str(), entry.versions), ("1.0.0", 1));
        assert_eq!(entry.description.as_deref(), Some("The first VPC."));
        assert!(entry.published_at.is_some() && entry.updated == entry.published_at);

        // A newer version: its README is the description now. A pre-release does not move latest.
        s.insert("modules/acme/vpc/aws/1.1.0.tar.gz", readme("Better VPC."));
        indexer.on_object_changed("modules/acme/vpc/aws/1.1.0.tar.gz").await.unwrap();
        s.insert("modules/acme/vpc/aws/2.0.0-rc.1.tar.gz", readme("Unstable."));
        indexer.on_object_changed("modules/acme/vpc/aws/2.0.0-rc.1.tar.gz").await.unwrap();
        let entry = catalog(&s).modules["acme/vpc/aws"].clone();
        assert_eq!((entry.latest.as_str(), entry.versions), ("1.1.0", 3));
        assert_eq!(entry.description.as_deref(), Some("Better VPC."));

        // A provider too.
        let zip = "providers/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.1_linux_amd64.zip";
        s.insert(zip, provider_zip("one"));
        indexer.on_object_changed(zip).await.unwrap();
        let provider = catalog(&s).providers["registry.terraform.io/hashicorp/null"].clone();
        assert_eq!((provider.latest.as_str(), provider.versions, provider.registry), ("3.2.1", 1, false));

        // The same event again: nothing to write.
        let stored = s.peek(layout::CATALOG);
        indexer.on_object_changed(zip).await.unwrap();
        assert_eq!(s.peek(layout::CATALOG), stored);

        // Yank the latest: the previous one is latest again, with its own description.
        s.delete("modules/acme/vpc/aws/1.1.0.tar.gz").await.unwrap();
        indexer.on_object_changed("modules/acme/vpc/aws/1.1.0.tar.gz").await.unwrap();
        let entry = catalog(&s).modules["acme/vpc/aws"].clone();
        assert_eq!((entry.latest.as_str(), entry.description.as_deref()), ("1.0.0", Some("The first VPC.")));

        // Everything of the module yanked: it leaves the catalog.
        for key in ["modules/acme/vpc/aws/1.0.0.tar.gz", "modules/acme/vpc/aws/2.0.0-rc.1.tar.gz"] {
            s.delete(key).await.unwrap();
            indexer.on_object_changed(key).await.unwrap();
        }
        assert!(catalog(&s).modules.is_empty());

        // A damaged or lost catalog: the next pass rebuilds it whole, and so does a repair.
        s.insert("modules/acme/dns/aws/0.1.0.tgz", readme("DNS zones."));
        indexer.on_object_changed("modules/acme/dns/aws/0.1.0.tgz").await.unwrap();
        let whole = catalog(&s);
        s.insert(layout::CATALOG, b"{ damaged".to_vec());
        s.insert("modules/acme/dns/aws/0.2.0.tgz", readme("DNS zones, v2."));
        indexer.on_object_changed("modules/acme/dns/aws/0.2.0.tgz").await.unwrap();
        let rebuilt = catalog(&s);
        assert_eq!(
            undated(rebuilt.clone()).providers,
            undated(whole.clone()).providers,
            "entries of other owners are back"
        );
        assert_eq!(rebuilt.modules["acme/dns/aws"].description.as_deref(), Some("DNS zones, v2."));
        s.delete(layout::CATALOG).await.unwrap();
        s.insert("modules/acme/dns/aws/0.3.0.tgz", readme("DNS zones, v3."));
        indexer.on_object_changed("modules/acme/dns/aws/0.3.0.tgz").await.unwrap();
        let upgraded = catalog(&s);
        assert_eq!(
            undated(upgraded.clone()).providers,
            undated(whole).providers,
            "a bucket from before the catalog: every owner listed"
        );
        assert_eq!(upgraded.modules["acme/dns/aws"].latest, "0.3.0");
        s.delete("modules/acme/dns/aws/0.3.0.tgz").await.unwrap();
        indexer.on_object_changed("modules/acme/dns/aws/0.3.0.tgz").await.unwrap();
        s.delete(layout::CATALOG).await.unwrap();
        indexer.reindex_all().await.unwrap();
        assert_eq!(undated(catalog(&s)), undated(rebuilt));
        let before = s.peek(layout::CATALOG);
        indexer.reindex_all().await.unwrap();
        assert_eq!(s.peek(layout::CATALOG), before, "a repair of a right catalog writes nothing");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_passes_of_many_owners_lose_no_entry() {
        let s = std::sync::Arc::new(MemoryStorage::new());
        let mut tasks = Vec::new();
        for i in 0..40 {
            let s = s.clone();
            tasks.push(tokio::spawn(async move {
                // Twenty modules with two versions each, published at once.
                let key = format!("modules/acme/m{}/aws/1.{}.0.tar.gz", i % 20, i / 20);
                s.insert(&key, tar_gz_of(&[("main.tf", format!("# {i}\n").as_bytes())]));
                Indexer::new(&*s, Limits::default()).on_object_changed(&key).await.unwrap();
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let catalog = catalog(&s);
        assert_eq!(catalog.modules.len(), 20);
        for (address, entry) in &catalog.modules {
            assert_eq!((entry.latest.as_str(), entry.versions), ("1.1.0", 2), "{address}");
        }
    }
}
