//! Invariants of the request path that hold for any input, checked by the property tests
//! (`tests/properties.rs`) and the fuzz targets (`fuzz/`) alike, so both test the same thing.
//! Not used at run time.

use http::Method;

use crate::layout::{self, ObjectKind};
use crate::router::BasePaths;
use crate::router::{self, Route};

/// A key the layout may hand to S3: ASCII, printable, no traversal, no empty segment, no
/// encoding left to interpret, under a prefix the registry owns.
pub fn key_is_clean(key: &str) -> bool {
    key.bytes().all(|b| b.is_ascii_graphic())
        && !key.contains('%')
        && !key.contains('\\')
        && key.split('/').all(|s| !s.is_empty() && s != "." && s != "..")
        && [layout::MODULES_PREFIX, layout::PROVIDERS_PREFIX, layout::INDEXED_PREFIX].iter().any(|p| key.starts_with(p))
}

/// Route `target` (any string: a raw path, and after the first `?` a raw query): if it is
/// accepted, the path had nothing encoded or dot-segmented in it, only the list and search
/// routes took a query (and a listing that reads back the same from the `next_url` it would
/// give), and the keys it leads to are clean and classify back to the same module or
/// provider. `Err` says which invariant broke.
pub fn check_request_path(target: &str) -> Result<(), String> {
    let paths = BasePaths::default();
    let (raw_path, query) = match target.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (target, None),
    };
    for method in [Method::GET, Method::HEAD, Method::POST] {
        let Ok(route) = router::route(&method, raw_path, query, &paths) else { continue };
        if method == Method::POST {
            return Err(format!("{raw_path:?}: POST accepted"));
        }
        if raw_path.contains('%') || raw_path.contains('\\') {
            return Err(format!("{raw_path:?}: accepted with an encoding or a backslash"));
        }
        if raw_path.split('/').any(|s| s == ".." || s == ".") {
            return Err(format!("{raw_path:?}: accepted with a dot segment"));
        }
        if query.is_some_and(|q| !q.is_empty()) && !matches!(route, Route::ModuleList(_) | Route::ModuleSearch(_)) {
            return Err(format!("{target:?}: a query string accepted by {}", route.name()));
        }
        let (key, expected) = match &route {
            Route::Discovery => continue,
            Route::ModuleList(listing) | Route::ModuleSearch(listing) => {
                let search = matches!(route, Route::ModuleSearch(_));
                let next = crate::query::Listing::parse(Some(&listing.query_at(listing.offset)), search);
                if next.as_ref() != Ok(listing) {
                    return Err(format!("{target:?}: {listing:?} reads back from its own query as {next:?}"));
                }
                continue;
            }
            Route::ModuleLatest(m) => (layout::module_manifest(m), ObjectKind::ModuleManifest(m.clone())),
            Route::ModuleDetails(m, v) => {
                let docs = layout::module_docs(m, v);
                if !key_is_clean(&docs) || layout::classify(&docs).is_some() {
                    return Err(format!("{target:?} -> docs key {docs:?} unclean or taken for another object"));
                }
                (layout::module_manifest(m), ObjectKind::ModuleManifest(m.clone()))
            }
            Route::ModuleVersions(m) | Route::ModuleDownload(m, _) => {
                (layout::module_manifest(m), ObjectKind::ModuleManifest(m.clone()))
            }
            Route::MirrorIndex(p) => (layout::provider_index(p), ObjectKind::ProviderIndex(p.clone())),
            Route::MirrorVersion(p, v) => (
                layout::provider_version(p, v),
                ObjectKind::ProviderVersion { provider: p.clone(), version: v.clone() },
            ),
            // providers.v1 names providers of the registry's own host (any valid one).
            Route::ProviderVersions(n) => {
                let p = n.at("registry.example.com");
                (layout::provider_index(&p), ObjectKind::ProviderIndex(p))
            }
            Route::ProviderDownload(n, v, _) => {
                let p = n.at("registry.example.com:8443");
                (
                    layout::provider_version(&p, v),
                    ObjectKind::ProviderVersion { provider: p.clone(), version: v.clone() },
                )
            }
        };
        if !key_is_clean(&key) {
            return Err(format!("{raw_path:?} -> unclean key {key:?}"));
        }
        if layout::classify(&key) != Some(expected) {
            return Err(format!("{raw_path:?} -> {key:?} does not classify back to its owner"));
        }
    }
    Ok(())
}

/// Classify a bucket key (publishers choose keys: hostile input to the indexer). Whatever it
/// classifies as, the keys the indexer derives from it are clean.
pub fn check_bucket_key(key: &str) -> Result<(), String> {
    let Some(kind) = layout::classify(key) else { return Ok(()) };
    let manifest = match kind.owner() {
        layout::Owner::Module(m) => layout::module_manifest(&m),
        layout::Owner::Provider(p) => layout::provider_index(&p),
    };
    if !key_is_clean(&manifest) {
        return Err(format!("{key:?} -> unclean manifest key {manifest:?}"));
    }
    if let ObjectKind::ProviderArchive { provider, version, platform } = &kind {
        let version_key = layout::provider_version(provider, version);
        if !key_is_clean(&version_key) {
            return Err(format!("{key:?} -> unclean derived key"));
        }
        if layout::provider_archive_name(provider, version, platform) != key.rsplit('/').next().unwrap_or_default() {
            return Err(format!("{key:?}: archive name does not round-trip"));
        }
    }
    Ok(())
}
