//! The read side every route shares: manifests read once per request (kept parsed in the warm
//! container and revalidated by ETag, served from that copy through a storage fault) and the
//! presigned URLs that hand out archive bytes.

use std::sync::Arc;
use std::time::Duration;

use crate::address::ProviderAddress;
use crate::cache::ManifestCache;
use crate::error::{Error, chain};
use crate::layout::{self, Wanted};
use crate::manifest::ProviderVersion;
use crate::storage::{Object, Revalidated, Storage};

/// A manifest as a request uses it: the parsed value, and whether it is a cached copy served
/// because storage failed.
pub(crate) struct Fetched<T> {
    pub(crate) value: Arc<T>,
    pub(crate) stale: bool,
}

/// How long before a request's deadline (`Config::request_budget`) a manifest read is given
/// up when a cached copy can be served instead.
const STALE_MARGIN: std::time::Duration = std::time::Duration::from_millis(1500);

/// Storage as the read routes see it, with the container's manifest cache.
pub struct Reader<S> {
    /// The bucket (S3, in memory, or none for discovery).
    pub storage: S,
    /// Parsed manifests of this container, revalidated by ETag (`cache`).
    pub(crate) manifests: ManifestCache,
    /// How long a presigned URL works.
    presign_ttl: Duration,
}

impl<S: Storage> Reader<S> {
    /// A reader of `storage` keeping at most `cache_bytes` of parsed manifests, each used
    /// without revalidation for `cache_ttl`; archive URLs work for `presign_ttl`.
    pub fn new(storage: S, cache_bytes: usize, cache_ttl: Duration, presign_ttl: Duration) -> Self {
        Reader { storage, manifests: ManifestCache::new(cache_bytes, cache_ttl), presign_ttl }
    }

    /// The one way a read route hands out an archive URL: only for a key that
    /// `layout::archive_key` classifies as exactly the archive the request named.
    /// `version_id`: the object version the indexer hashed, where the bucket keeps versions.
    pub(crate) async fn presign(
        &self,
        key: &str,
        version_id: Option<&str>,
        wanted: Wanted<'_>,
    ) -> Result<String, Error> {
        let key = layout::archive_key(key, wanted)?;
        self.storage.presign_get(key, version_id, self.presign_ttl).await
    }

    /// A provider version's archives as the network mirror's `VERSION.json` lists them: each
    /// zip presigned (the object version the indexer hashed), with its `zh:` and `h1:` hashes,
    /// `zh:` first (the cheaper check for the CLI: `ProviderArchive::hashes_for_cli`). The
    /// mirror and its pull-through both answer with it.
    pub(crate) async fn mirror_archives(
        &self,
        provider: &ProviderAddress,
        version: &semver::Version,
        document: &ProviderVersion,
    ) -> Result<serde_json::Map<String, serde_json::Value>, Error> {
        let prefix = layout::provider_prefix(provider);
        let mut archives = serde_json::Map::new();
        for (platform, archive) in &document.archives {
            let wanted = Wanted::ProviderArchive { provider, version, platform };
            let url = self.presign(&format!("{prefix}{}", archive.url), archive.version_id(), wanted).await?;
            let mut entry = serde_json::json!({ "url": url });
            if !archive.hashes.is_empty() {
                entry["hashes"] = serde_json::json!(archive.hashes_for_cli());
            }
            archives.insert(platform.clone(), entry);
        }
        Ok(archives)
    }

    /// The one storage read of a request: a manifest, parsed. Absent, or empty (the indexer
    /// empties rather than deletes: a delete could race a publish): `missing()`, a 404.
    /// Unparsable: 500, with the detail in the log only. A warm container revalidates its
    /// cached copy instead (`If-None-Match`: 304, no body, no parse), or within
    /// `REGISTRY_MANIFEST_CACHE_SECONDS` uses it without asking. When S3 fails (after the
    /// SDK's retry and a second read of a body that failed on the way), the cached copy is
    /// served, marked stale, rather than an error; with none, 503 and `Retry-After`. With a
    /// copy to fall back on, a read still going on `STALE_MARGIN` before the request's
    /// `deadline` counts as failed, so the copy is served in time.
    pub(crate) async fn manifest<T: Send + Sync + 'static>(
        &self,
        key: &str,
        parse: fn(&[u8]) -> Result<T, Error>,
        is_empty: fn(&T) -> bool,
        missing: impl Fn() -> Error,
        deadline: tokio::time::Instant,
    ) -> Result<Fetched<T>, Error> {
        let hit = self.manifests.get::<T>(key);
        if let Some(hit) = hit.as_ref().filter(|h| h.fresh) {
            return Ok(Fetched { value: hit.value.clone(), stale: false });
        }
        let fetched = match &hit {
            Some(hit) => {
                let give_up = deadline.checked_sub(STALE_MARGIN).unwrap_or(deadline);
                let read = tokio::time::timeout_at(give_up, self.storage.get_if_changed(key, &hit.etag)).await;
                read.unwrap_or_else(|_| Err(Error::unavailable(format!("GetObject {key}: no answer in time"))))
            }
            None => self.storage.get(key).await.map(Revalidated::Changed),
        };
        let (value, stale) = match (fetched, hit) {
            (Ok(Revalidated::Unchanged), Some(hit)) => {
                self.manifests.revalidated(key);
                (Some(hit.value), false)
            }
            (Ok(Revalidated::Unchanged), None) => (None, false),
            (Ok(Revalidated::Changed(object)), _) => {
                self.manifests.remove(key);
                (self.parse_and_keep(key, object, parse)?, false)
            }
            // The read functions have no `s3:ListBucket` (least privilege), so S3 answers a
            // missing manifest with AccessDenied rather than NoSuchKey: absent, for a manifest.
            (Err(Error::Forbidden(_)), _) => {
                self.manifests.remove(key);
                (None, false)
            }
            (Err(e @ (Error::Unavailable { .. } | Error::Corrupt(_))), Some(hit)) => {
                tracing::warn!(key, error = %chain(&e), "storage failed; serving the copy this container holds");
                (Some(hit.value), true)
            }
            (Err(Error::Corrupt(why)), None) => return Err(Error::unavailable(why)),
            (Err(e), _) => return Err(e),
        };
        let value = value.ok_or_else(&missing)?;
        if is_empty(&value) {
            return Err(missing());
        }
        Ok(Fetched { value, stale })
    }

    fn parse_and_keep<T: Send + Sync + 'static>(
        &self,
        key: &str,
        object: Option<Object>,
        parse: fn(&[u8]) -> Result<T, Error>,
    ) -> Result<Option<Arc<T>>, Error> {
        let Some(object) = object else { return Ok(None) };
        let manifest =
            Arc::new(parse(&object.bytes).map_err(|e| Error::internal_from(format!("unreadable manifest {key}"), e))?);
        // Without an ETag there is nothing to revalidate with.
        if !object.etag.is_empty() {
            self.manifests.insert(key, &object.etag, manifest.clone(), object.bytes.len());
        }
        Ok(Some(manifest))
    }
}
