//! Keeping the catalog (`crate::catalog`) in line with the manifests: after every pass, the
//! pass's owner's entry is recomputed from its manifest as stored *now*, and written into its
//! part (the namespace's shard, or the providers) with the same conditional write (and retry)
//! as a manifest; then the index, when the shard's counts changed. A repair rebuilds every
//! part.
//!
//! Why no update is lost: an attempt reads the part (and its ETag) *before* the manifest it
//! computes the entry from, and writes only if the part is still what it read. Take the last
//! write of an owner's manifest, by pass P. P's update starts after that write, so every
//! attempt of it reads the final manifest, and one of them succeeds (or P fails and its event
//! is retried). A write of the part that succeeds after P's read it after P's write (nothing
//! was written between its read and its write), so its manifest read came later still: it
//! also carries the final entry. The same ordering as rule 1 of the manifests, and the same
//! again one level up: the index is read before the shard its counts are taken from.
//!
//! Publishes of new versions in different namespaces write different shards, so they never
//! contend here; the index is written only when a module appears in or leaves a namespace (or
//! it is missing or unreadable), and every provider pass writes the one providers part. New
//! modules in many namespaces at once would queue for the index one write each; instead each
//! marks its namespace first (`layout::catalog_dirty`), and a write counts every marked
//! namespace, so most find their line already written (`refresh_index`).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use futures_util::StreamExt;

use super::documents::read_document;
use super::indexer::Indexer;
use crate::address::{ModuleAddress, ProviderAddress, UpstreamModule};
use crate::catalog::{
    self, CatalogIndex, LegacyCatalog, ModuleEntry, ModuleShard, Part, ProviderCatalog, ProviderEntry, UpstreamCatalog,
};
use crate::error::{Error, chain};
use crate::layout::{self, ObjectKind, Owner};
use crate::manifest::{CONTENT_TYPE_JSON, ModuleManifest, ModuleVersion, ProviderIndex};
use crate::module_docs::{self, ModuleDocs};
use crate::retry::{self, Backoff};
use crate::storage::{Object, Precondition, Storage};

/// Every pass of a namespace's owners writes its shard (and every provider pass the providers),
/// so a part sees more races than a manifest; each lost race is another pass's progress, so a
/// generous bound costs nothing in the common case.
const CATALOG_RETRY: Backoff =
    Backoff { attempts: 60, first: Duration::from_millis(10), max: Duration::from_millis(1000) };

/// Documents read at once when parts are rebuilt.
const REBUILD_READS: usize = 16;

/// Bring `owner`'s catalog entry in line with its manifest as stored now (added, changed,
/// or removed when it serves nothing). Nothing is written when the entry is already right.
/// With no index (a new bucket, or one from before the catalog was sharded) every part is
/// rebuilt; with an index but, for a provider, no providers part, that part.
pub(super) async fn update_catalog<S: Storage>(indexer: &Indexer<'_, S>, owner: &Owner) -> Result<(), Error> {
    match owner {
        Owner::Module(m) => {
            let shard = refresh_shard(indexer, m).await?;
            if !index_in_line(indexer, &m.namespace, &shard).await? {
                rebuild_catalog(indexer).await?;
            }
        }
        Owner::Provider(p) => {
            if refresh_providers(indexer, p).await? {
                return Ok(());
            }
            match read_document(indexer.storage, layout::CATALOG_INDEX).await? {
                Some(_) => rebuild_providers(indexer).await?,
                None => rebuild_catalog(indexer).await?,
            }
        }
    }
    Ok(())
}

/// Add a pinned copy of an upstream module to the catalog (the indexer logged its pin).
pub(super) async fn add_upstream_copy<S: Storage>(
    indexer: &Indexer<'_, S>,
    module: &UpstreamModule,
    version: &str,
    copied_at: &str,
) -> Result<(), Error> {
    retry::on_conflict(CATALOG_RETRY, "catalog's upstream modules", |_| async {
        let (read, mut upstream, replace) = read_upstream(indexer).await?;
        if !upstream.add_copy(module, version, copied_at) && !replace {
            return Ok(());
        }
        write(indexer, layout::CATALOG_UPSTREAM_MODULES, &upstream, read.as_ref()).await
    })
    .await
}

/// Rebuild every part from the manifests present (repair, migration): entries of owners that
/// serve nothing go, descriptions are read again only where the latest version changed, and
/// a part already right is not written.
pub(super) async fn rebuild_catalog<S: Storage>(indexer: &Indexer<'_, S>) -> Result<(), Error> {
    let mut namespaces: BTreeMap<String, Vec<ModuleAddress>> = BTreeMap::new();
    for object in indexer.storage.list(&format!("{}{}", layout::INDEXED_PREFIX, layout::MODULES_PREFIX)).await? {
        if let Some(ObjectKind::ModuleManifest(m)) = layout::classify(&object.key) {
            namespaces.entry(m.namespace.clone()).or_default().push(m);
        }
    }
    for object in indexer.storage.list(layout::CATALOG_SHARDS_PREFIX).await? {
        if let Some(namespace) = layout::catalog_shard_namespace(&object.key) {
            namespaces.entry(namespace.to_string()).or_default();
        }
    }
    let mut shards = futures_util::stream::iter(namespaces)
        .map(|(namespace, modules)| async move { rebuild_shard(indexer, &namespace, &modules).await })
        .buffer_unordered(REBUILD_READS);
    while let Some(done) = shards.next().await {
        done?;
    }
    drop(shards);
    rebuild_index(indexer).await?;
    rebuild_providers(indexer).await?;
    retry::on_conflict(CATALOG_RETRY, "catalog's upstream modules", |_| async {
        let (read, upstream, replace) = read_upstream(indexer).await?;
        if !replace {
            return Ok(());
        }
        write(indexer, layout::CATALOG_UPSTREAM_MODULES, &upstream, read.as_ref()).await
    })
    .await
}

/// `m`'s namespace's shard with `m`'s entry recomputed, or (a shard missing or unreadable)
/// every module's of the namespace, found by listing its manifests.
async fn refresh_shard<S: Storage>(indexer: &Indexer<'_, S>, m: &ModuleAddress) -> Result<ModuleShard, Error> {
    let key = layout::catalog_shard(&m.namespace);
    retry::on_conflict(CATALOG_RETRY, "catalog shard", |_| async {
        let read = read_document(indexer.storage, &key).await?;
        let (previous, replace) = parsed::<ModuleShard>(read.as_ref(), &key);
        let (shard, from) = if replace {
            let listed = namespace_modules(indexer, &m.namespace).await?;
            shard_entries(indexer, &listed, &previous).await
        } else {
            let mut shard = previous.clone();
            let (entry, etag) = module_entry(indexer, m, shard.module(m)).await?;
            shard.set_module(m, entry);
            (shard, vec![(m.clone(), etag)])
        };
        // A version come and gone meanwhile: read again (`manifest_changed`).
        if write_if_changed(indexer, &key, &shard, &previous, read.as_ref(), replace).await? {
            manifest_changed(indexer, &from).await?;
        }
        Ok(shard)
    })
    .await
}

/// Whether the index's line of `namespace` counts `shard` (the shard as this pass left it),
/// and if not, the line set from the shard as stored now. One read when it does, which is
/// every publish of a new version: only a module that appears or goes changes the counts.
/// Checked on every pass, not only when this pass changed the counts, so that a pass retried
/// after it failed between its shard and the index still brings the index in line. `false`:
/// there is no index yet (the caller rebuilds everything).
async fn index_in_line<S: Storage>(
    indexer: &Indexer<'_, S>,
    namespace: &str,
    shard: &ModuleShard,
) -> Result<bool, Error> {
    let read = read_document(indexer.storage, layout::CATALOG_INDEX).await?;
    let Some(read) = read else { return Ok(false) };
    let counts = Some(shard.counts()).filter(|c| !c.is_empty());
    match CatalogIndex::parse(&read.bytes) {
        Ok(index) if index.namespaces.get(namespace) == counts.as_ref() => Ok(true),
        _ => {
            // Marked first: a pass that writes the index before this one counts it too.
            mark(indexer, namespace).await?;
            refresh_index(indexer, namespace).await
        }
    }
}

/// A shard rebuilt for a repair: the modules listed before it, and those it held.
async fn rebuild_shard<S: Storage>(
    indexer: &Indexer<'_, S>,
    namespace: &str,
    listed: &[ModuleAddress],
) -> Result<(), Error> {
    let key = layout::catalog_shard(namespace);
    retry::on_conflict(CATALOG_RETRY, "catalog shard", |_| async {
        let read = read_document(indexer.storage, &key).await?;
        let (previous, replace) = parsed::<ModuleShard>(read.as_ref(), &key);
        let (shard, from) = shard_entries(indexer, listed, &previous).await;
        if write_if_changed(indexer, &key, &shard, &previous, read.as_ref(), replace).await? {
            manifest_changed(indexer, &from).await?;
        }
        Ok(())
    })
    .await
}

/// The index's line of `namespace`, and those of the namespaces marked, set from the shards
/// as stored now (an unreadable index: every line). `false`: there is no index yet, and
/// nothing was written (the caller rebuilds everything).
async fn refresh_index<S: Storage>(indexer: &Indexer<'_, S>, namespace: &str) -> Result<bool, Error> {
    // Namespaces a write of this pass counted from a shard that changed before its check:
    // counted again by its next attempt, whoever else has looked at them meanwhile.
    let recount = std::sync::Mutex::new(BTreeSet::<String>::new());
    let recount = &recount;
    retry::on_conflict(CATALOG_RETRY, "catalog index", |_| async move {
        let read = read_document(indexer.storage, layout::CATALOG_INDEX).await?;
        let (previous, replace) = parsed::<CatalogIndex>(read.as_ref(), layout::CATALOG_INDEX);
        let (index, counted) = match read {
            None => return Ok(false),
            Some(_) if !replace => {
                let (shard, etag) = shard_with_etag(indexer, namespace).await?;
                let again: Vec<String> = recount.lock().unwrap_or_else(|p| p.into_inner()).iter().cloned().collect();
                let right = previous.namespaces.get(namespace) == Some(&shard.counts()).filter(|c| !c.is_empty());
                if right && again.is_empty() {
                    // Another pass's write counted this namespace (its mark): nothing to do.
                    indexer.storage.delete(&layout::catalog_dirty(namespace)).await?;
                    return Ok(true);
                }
                let mut index = previous.clone();
                index.set_namespace(namespace, &shard);
                let mut counted = vec![(namespace.to_string(), etag)];
                for (other, shard, etag) in marked(indexer, namespace, again).await? {
                    index.set_namespace(&other, &shard);
                    counted.push((other, etag));
                }
                (index, counted)
            }
            _ => (every_namespace(indexer).await?, Vec::new()),
        };
        write_if_changed(indexer, layout::CATALOG_INDEX, &index, &previous, read.as_ref(), replace).await?;
        // A pass that found the index already right wrote nothing, so this write's If-Match
        // cannot tell that a shard changed since it was read (a module gone, another come:
        // the same counts). Checked after the write: a shard written since means counting
        // it again (marked again, since the pass that wrote it may have found its line right
        // and gone); one written after this check belongs to a pass that reads the index
        // after this write, and corrects it.
        let shards =
            counted.iter().map(|(namespace, etag)| (namespace.clone(), layout::catalog_shard(namespace), etag.clone()));
        let changed = changed_since(indexer, shards.collect()).await?;
        if !changed.is_empty() {
            for namespace in &changed {
                mark(indexer, namespace).await?;
            }
            recount.lock().unwrap_or_else(|p| p.into_inner()).extend(changed.iter().cloned());
            return Err(Error::Conflict(format!("catalog shards {changed:?} changed while counted")));
        }
        recount.lock().unwrap_or_else(|p| p.into_inner()).clear();
        // Counted: their marks go (a mark set again meanwhile belongs to a pass that checks
        // its own line after it, so losing it loses nothing).
        unmark(indexer, counted.into_iter().map(|(namespace, _)| namespace)).await?;
        Ok(true)
    })
    .await
}

/// Mark `namespace` as one whose counts the index may lack.
async fn mark<S: Storage>(indexer: &Indexer<'_, S>, namespace: &str) -> Result<(), Error> {
    let key = layout::catalog_dirty(namespace);
    indexer.storage.put(&key, bytes::Bytes::new(), CONTENT_TYPE_JSON, Precondition::None).await
}

/// Remove the marks of `namespaces`, a few at once.
async fn unmark<S: Storage>(indexer: &Indexer<'_, S>, namespaces: impl Iterator<Item = String>) -> Result<(), Error> {
    futures_util::stream::iter(namespaces)
        .map(|namespace| async move { indexer.storage.delete(&layout::catalog_dirty(&namespace)).await })
        .buffer_unordered(REBUILD_READS)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect()
}

/// The namespaces other passes marked (`index_in_line`) and those `again` names, but
/// `namespace`, each with its shard and the ETag it was read at.
async fn marked<S: Storage>(
    indexer: &Indexer<'_, S>,
    namespace: &str,
    again: Vec<String>,
) -> Result<Vec<(String, ModuleShard, Option<String>)>, Error> {
    let marks = indexer.storage.list(layout::CATALOG_DIRTY_PREFIX).await?;
    let mut others: BTreeSet<String> = again.into_iter().collect();
    others.extend(
        marks
            .iter()
            .filter_map(|o| o.key.strip_prefix(layout::CATALOG_DIRTY_PREFIX))
            .filter(|other| layout::catalog_shard_namespace(&layout::catalog_shard(other)).is_some())
            .map(str::to_string),
    );
    others.remove(namespace);
    futures_util::stream::iter(others)
        .map(|other| async move {
            let (shard, etag) = shard_with_etag(indexer, &other).await?;
            Ok::<_, Error>((other, shard, etag))
        })
        .buffer_unordered(REBUILD_READS)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect()
}

/// The index rebuilt from every shard (written also when there was none).
async fn rebuild_index<S: Storage>(indexer: &Indexer<'_, S>) -> Result<(), Error> {
    retry::on_conflict(CATALOG_RETRY, "catalog index", |_| async {
        let read = read_document(indexer.storage, layout::CATALOG_INDEX).await?;
        let (previous, replace) = parsed::<CatalogIndex>(read.as_ref(), layout::CATALOG_INDEX);
        // Marks listed before the shards are read: counted by this rebuild, so they go.
        let marks = indexer.storage.list(layout::CATALOG_DIRTY_PREFIX).await?;
        let index = every_namespace(indexer).await?;
        write_if_changed(indexer, layout::CATALOG_INDEX, &index, &previous, read.as_ref(), replace).await?;
        let marked =
            marks.into_iter().filter_map(|o| o.key.strip_prefix(layout::CATALOG_DIRTY_PREFIX).map(str::to_string));
        unmark(indexer, marked).await
    })
    .await
}

/// A namespace's shard as stored (none, or unreadable: empty; its next pass rebuilds it).
async fn shard_as_stored<S: Storage>(indexer: &Indexer<'_, S>, namespace: &str) -> Result<ModuleShard, Error> {
    Ok(shard_with_etag(indexer, namespace).await?.0)
}

/// `shard_as_stored`, with the ETag it was read at (`None`: there was none).
async fn shard_with_etag<S: Storage>(
    indexer: &Indexer<'_, S>,
    namespace: &str,
) -> Result<(ModuleShard, Option<String>), Error> {
    let key = layout::catalog_shard(namespace);
    let read = read_document(indexer.storage, &key).await?;
    let etag = read.as_ref().map(|o| o.etag.clone());
    Ok((parsed::<ModuleShard>(read.as_ref(), &key).0, etag))
}

/// The index as every shard stored says.
async fn every_namespace<S: Storage>(indexer: &Indexer<'_, S>) -> Result<CatalogIndex, Error> {
    let namespaces: Vec<String> = indexer
        .storage
        .list(layout::CATALOG_SHARDS_PREFIX)
        .await?
        .iter()
        .filter_map(|o| layout::catalog_shard_namespace(&o.key).map(str::to_string))
        .collect();
    let mut shards = futures_util::stream::iter(namespaces)
        .map(|namespace| async move { shard_as_stored(indexer, &namespace).await.map(|s| (namespace, s)) })
        .buffer_unordered(REBUILD_READS);
    let mut index = CatalogIndex::default();
    while let Some(shard) = shards.next().await {
        let (namespace, shard) = shard?;
        index.set_namespace(&namespace, &shard);
    }
    Ok(index)
}

/// The providers part with `p`'s entry recomputed (unreadable: every provider's). `false`:
/// there is no providers part yet, and nothing was written (the caller rebuilds it).
async fn refresh_providers<S: Storage>(indexer: &Indexer<'_, S>, p: &ProviderAddress) -> Result<bool, Error> {
    retry::on_conflict(CATALOG_RETRY, "provider catalog", |_| async {
        let read = read_document(indexer.storage, layout::CATALOG_PROVIDERS).await?;
        let (previous, replace) = parsed::<ProviderCatalog>(read.as_ref(), layout::CATALOG_PROVIDERS);
        let providers = match read {
            None => return Ok(false),
            Some(_) if replace => every_provider(indexer, &previous).await?,
            Some(_) => {
                let mut providers = previous.clone();
                let entry = provider_entry(indexer, p, providers.provider(p)).await?;
                providers.set_provider(p, entry);
                providers
            }
        };
        write_if_changed(indexer, layout::CATALOG_PROVIDERS, &providers, &previous, read.as_ref(), replace).await?;
        Ok(true)
    })
    .await
}

/// The providers part rebuilt from every provider's index (written also when there was none).
async fn rebuild_providers<S: Storage>(indexer: &Indexer<'_, S>) -> Result<(), Error> {
    retry::on_conflict(CATALOG_RETRY, "provider catalog", |_| async {
        let read = read_document(indexer.storage, layout::CATALOG_PROVIDERS).await?;
        let (previous, replace) = parsed::<ProviderCatalog>(read.as_ref(), layout::CATALOG_PROVIDERS);
        let providers = every_provider(indexer, &previous).await?;
        write_if_changed(indexer, layout::CATALOG_PROVIDERS, &providers, &previous, read.as_ref(), replace).await?;
        Ok(())
    })
    .await
}

/// A part as read, and whether what is stored must be replaced whatever changes: none yet, or
/// unreadable (then computed from nothing).
fn parsed<P: Part + Default + Clone>(read: Option<&Object>, key: &str) -> (P, bool) {
    match read.map(|o| P::parse(&o.bytes)) {
        Some(Ok(part)) => (part, false),
        None => (P::default(), true),
        Some(Err(e)) => {
            tracing::warn!(key, error = %chain(&e), "stored catalog part unreadable; rebuilding it");
            (P::default(), true)
        }
    }
}

/// Write `part` unless it is what was read (`If-Match` what was read, or `If-None-Match: *`);
/// whether it was written.
/// A shard or upstream part that would be empty where none is stored is not written; the
/// index and the providers part are, so that a rebuilt catalog has both (their absence is
/// what makes a pass rebuild).
async fn write_if_changed<P: Part + PartialEq + Default, S: Storage>(
    indexer: &Indexer<'_, S>,
    key: &str,
    part: &P,
    previous: &P,
    read: Option<&Object>,
    replace: bool,
) -> Result<bool, Error> {
    let unchanged = part == previous && !replace;
    let always = [layout::CATALOG_INDEX, layout::CATALOG_PROVIDERS].contains(&key);
    let nothing_new = read.is_none() && *part == P::default() && !always;
    if unchanged || nothing_new {
        return Ok(false);
    }
    write(indexer, key, part, read).await?;
    Ok(true)
}

async fn write<P: Part, S: Storage>(
    indexer: &Indexer<'_, S>,
    key: &str,
    part: &P,
    read: Option<&Object>,
) -> Result<(), Error> {
    let precondition = Precondition::replacing(read.map(|o| o.etag.as_str()));
    indexer.storage.put(key, part.to_bytes()?, CONTENT_TYPE_JSON, precondition).await
}

/// The upstream modules part as read, and whether it must be written whatever changes: none
/// yet, or unreadable, then seeded from the single catalog of format 1, where a bucket from
/// before the sharded catalog kept them (no manifest holds them).
async fn read_upstream<S: Storage>(indexer: &Indexer<'_, S>) -> Result<(Option<Object>, UpstreamCatalog, bool), Error> {
    let read = read_document(indexer.storage, layout::CATALOG_UPSTREAM_MODULES).await?;
    let (upstream, replace) = parsed::<UpstreamCatalog>(read.as_ref(), layout::CATALOG_UPSTREAM_MODULES);
    if !replace {
        return Ok((read, upstream, false));
    }
    let legacy = read_document(indexer.storage, layout::LEGACY_CATALOG).await?;
    let legacy = legacy.and_then(|o| serde_json::from_slice::<LegacyCatalog>(&o.bytes).ok());
    let upstream = UpstreamCatalog { modules: legacy.map(|l| l.upstream_modules).unwrap_or_default(), ..upstream };
    Ok((read, upstream, true))
}

/// The modules of a namespace that have a manifest.
async fn namespace_modules<S: Storage>(indexer: &Indexer<'_, S>, namespace: &str) -> Result<Vec<ModuleAddress>, Error> {
    let prefix = format!("{}{}{namespace}/", layout::INDEXED_PREFIX, layout::MODULES_PREFIX);
    let listed = indexer.storage.list(&prefix).await?;
    Ok(listed
        .iter()
        .filter_map(|o| match layout::classify(&o.key) {
            Some(ObjectKind::ModuleManifest(m)) if m.namespace == namespace => Some(m),
            _ => None,
        })
        .collect())
}

/// A shard as the manifests of `listed` (and of the modules `previous` held) say, reusing
/// `previous`'s descriptions. A module whose manifest cannot be read now keeps the entry it
/// had (its own pass reports the failure): one poisoned owner does not block the others.
async fn shard_entries<S: Storage>(
    indexer: &Indexer<'_, S>,
    listed: &[ModuleAddress],
    previous: &ModuleShard,
) -> (ModuleShard, Vec<ManifestRead>) {
    let mut modules: BTreeSet<ModuleAddress> = listed.iter().cloned().collect();
    modules
        .extend(previous.modules.values().filter_map(|e| ModuleAddress::parse(&e.namespace, &e.name, &e.system).ok()));
    let mut entries = futures_util::stream::iter(modules)
        .map(|m| async move {
            let (entry, etag) = match module_entry(indexer, &m, previous.module(&m)).await {
                Ok((entry, etag)) => (entry, Some(etag)),
                Err(e) => {
                    tracing::warn!(module = %m, error = %chain(&e), "manifest unreadable; its catalog entry kept as it was");
                    (previous.module(&m).cloned(), None)
                }
            };
            (m, entry, etag)
        })
        .buffer_unordered(REBUILD_READS);
    let mut shard = ModuleShard::default();
    let mut read = Vec::new();
    while let Some((m, entry, etag)) = entries.next().await {
        shard.set_module(&m, entry);
        if let Some(etag) = etag {
            read.push((m, etag));
        }
    }
    (shard, read)
}

/// A module's manifest as an entry was computed from: its ETag then (`None`: there was none).
type ManifestRead = (ModuleAddress, Option<String>);

/// After a shard write: the first module whose manifest changed since its entry was computed
/// (as for the index, `refresh_index`: a pass that found its entry already right wrote nothing,
/// so the write's If-Match cannot tell), which means computing the shard again.
async fn manifest_changed<S: Storage>(indexer: &Indexer<'_, S>, read: &[ManifestRead]) -> Result<(), Error> {
    let manifests = read.iter().map(|(m, etag)| (m.to_string(), layout::module_manifest(m), etag.clone()));
    let changed = changed_since(indexer, manifests.collect()).await?;
    match changed.first() {
        Some(m) => Err(Error::Conflict(format!("manifest of {m} changed while its entry was written"))),
        None => Ok(()),
    }
}

/// Of `read` (each name with its document's key and the ETag it was read at), the names whose
/// document has another ETag now; a few looked at at once.
async fn changed_since<S: Storage>(
    indexer: &Indexer<'_, S>,
    read: Vec<(String, String, Option<String>)>,
) -> Result<Vec<String>, Error> {
    let looked: Vec<Result<Option<String>, Error>> = futures_util::stream::iter(read)
        .map(|(name, key, etag)| async move { Ok((indexer.storage.etag(&key).await? != etag).then_some(name)) })
        .buffer_unordered(REBUILD_READS)
        .collect()
        .await;
    looked.into_iter().filter_map(Result::transpose).collect()
}

/// The providers part as every provider's index says, keeping `previous`'s times.
async fn every_provider<S: Storage>(
    indexer: &Indexer<'_, S>,
    previous: &ProviderCatalog,
) -> Result<ProviderCatalog, Error> {
    let mut providers: BTreeSet<ProviderAddress> = BTreeSet::new();
    let prefix = format!("{}{}", layout::INDEXED_PREFIX, layout::PROVIDERS_PREFIX);
    for object in indexer.storage.list(&prefix).await? {
        if let Some(ObjectKind::ProviderIndex(p)) = layout::classify(&object.key) {
            providers.insert(p);
        }
    }
    providers.extend(
        previous.providers.values().filter_map(|e| ProviderAddress::parse(&e.hostname, &e.namespace, &e.r#type).ok()),
    );
    let mut entries = futures_util::stream::iter(providers)
        .map(|p| async move {
            let entry = match provider_entry(indexer, &p, previous.provider(&p)).await {
                Ok(entry) => entry,
                Err(e) => {
                    tracing::warn!(provider = %p, error = %chain(&e), "index unreadable; its catalog entry kept as it was");
                    previous.provider(&p).cloned()
                }
            };
            (p, entry)
        })
        .buffer_unordered(REBUILD_READS);
    let mut catalog = ProviderCatalog::default();
    while let Some((p, entry)) = entries.next().await {
        catalog.set_provider(&p, entry);
    }
    Ok(catalog)
}

/// A module's entry from its manifest as stored; the description from `previous` while the
/// latest version's archive is the same, else from that version's docs.
async fn module_entry<S: Storage>(
    indexer: &Indexer<'_, S>,
    module: &ModuleAddress,
    previous: Option<&ModuleEntry>,
) -> Result<(Option<ModuleEntry>, Option<String>), Error> {
    let Some(object) = indexer.storage.get(&layout::module_manifest(module)).await? else {
        return Ok((None, None));
    };
    let etag = Some(object.etag.clone());
    let manifest = ModuleManifest::parse(&object.bytes)?;
    let Some(latest) = catalog::latest(manifest.versions.iter().map(|v| v.version.as_str())) else {
        return Ok((None, etag));
    };
    let Some(version) = manifest.versions.iter().find(|v| v.version == latest) else {
        return Ok((None, etag));
    };
    let description = match previous {
        Some(p) if p.latest == version.version && p.sha256 == version.sha256 => p.description.clone(),
        _ => description(indexer, module, version).await?,
    };
    Ok((ModuleEntry::from_manifest(module, &manifest, |_| description), etag))
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
