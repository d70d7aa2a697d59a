//! A copy of an upstream module's version into the bucket, the one way both the modules
//! pull-through (on a version's first download) and the air-gap bundle (into a directory laid
//! out as the bucket) make one: ask the upstream where the version is, fetch and check it
//! (`ModuleUpstream::fetch`), store it under its SHA-256, then pin that SHA-256 with
//! `If-None-Match: *`. Of two copies the first pin wins; bytes that differ from a pin (a moved
//! tag) are refused, recorded beside it, and never served.

use crate::address::UpstreamModule;
use crate::archive::Bounds;
use crate::error::{Error, chain};
use crate::layout;
use crate::manifest::CONTENT_TYPE_JSON;
use crate::retry::{self, Backoff};
use crate::storage::{Precondition, Storage};

use super::module_records::{ModuleIndex, ModulePin, ModuleRefusal};
use super::modules::{Fetched, FetchedModule, ModuleUpstream};

/// A copy's store that failed, tried again (the bytes are in hand; fetching them again costs
/// the upstream's time and bandwidth).
const STORE_RETRY: Backoff =
    Backoff { attempts: 4, first: std::time::Duration::from_millis(200), max: std::time::Duration::from_secs(2) };

/// Racing writers of one module's index: few, and a lost race is cheap to redo.
const INDEX_RETRY: Backoff =
    Backoff { attempts: 8, first: std::time::Duration::from_millis(20), max: std::time::Duration::from_millis(400) };

/// The bounds a copy by the pull-through is checked within, the modules function's or the
/// puller's: the configured ones (`REGISTRY_MAX_UNPACKED_BYTES`, `REGISTRY_MAX_ARCHIVE_ENTRIES`),
/// unpacking to at most `UPSTREAM_MODULE_UNPACKED_MAX`, which a request's 25 s and a function's
/// `/tmp` hold.
pub fn bounds(configured: Bounds) -> Bounds {
    Bounds { unpacked_bytes: configured.unpacked_bytes.min(super::UPSTREAM_MODULE_UNPACKED_MAX), ..configured }
}

/// What a copy did.
#[derive(Debug, Clone)]
pub enum Copied {
    /// Copied, or found copied: the pin that holds (a racing copy's, when the same bytes won
    /// first).
    Pinned(ModulePin),
    /// The upstream has no such version.
    NoSuchVersion,
    /// Its archive is larger than this copier takes (`ModuleUpstream::max_bytes`): nothing
    /// stored.
    LargerThan(u64),
}

/// Copy `version` of `module`.
pub async fn copy<S: Storage>(
    storage: &S,
    upstream: &ModuleUpstream,
    module: &UpstreamModule,
    version: &semver::Version,
    bounds: Bounds,
) -> Result<Copied, Error> {
    let Some(source) = upstream.location(module, version).await? else { return Ok(Copied::NoSuchVersion) };
    let fetched = match upstream.fetch(module, &source, bounds).await? {
        Fetched::Archive(fetched) => fetched,
        Fetched::LargerThan(max) => return Ok(Copied::LargerThan(max)),
    };
    // The index is written beside the pin, not after it (a round trip less while the CLI
    // waits): a version it lists whose pin failed is copied again at its next download.
    let listed = keep_index(storage, module, |mut old| {
        old.copied.insert(version.to_string());
        old
    });
    let (pin, ()) = tokio::join!(store(storage, module, version, &fetched), listed);
    Ok(Copied::Pinned(pin?))
}

/// Store `fetched` and pin it, or find the pin a racing copy wrote: the pin that holds. Bytes
/// that differ from the pin are refused (`BadGateway`) and recorded.
pub async fn store<S: Storage>(
    storage: &S,
    module: &UpstreamModule,
    version: &semver::Version,
    fetched: &FetchedModule,
) -> Result<ModulePin, Error> {
    let archive = layout::upstream_module_archive(module, version, &fetched.sha256, fetched.archive);
    let content_type = if fetched.archive == "zip" { "application/zip" } else { "application/gzip" };
    // Named by its SHA-256: rewriting it writes the same bytes. A store that fails is tried
    // again a few times with the bytes in hand (`retry::on_conflict` retries an unavailable
    // storage), not fetched again.
    retry::on_conflict(STORE_RETRY, &archive, |_| {
        storage.put(&archive, fetched.bytes.clone(), content_type, Precondition::None)
    })
    .await?;
    let pin = ModulePin {
        module: module.to_string(),
        version: version.to_string(),
        sha256: fetched.sha256.clone(),
        size: fetched.bytes.len() as u64,
        archive: fetched.archive.to_string(),
        source: fetched.source.clone(),
        copied_at: crate::clock::rfc3339_now(),
    };
    let key = layout::upstream_module_pin(module, version);
    match storage.put(&key, crate::manifest::to_json(&pin)?, CONTENT_TYPE_JSON, Precondition::IfAbsent).await {
        Ok(()) => {
            tracing::info!(%module, %version, sha256 = pin.sha256, source = pin.source, "upstream module copied and pinned");
            Ok(pin)
        }
        Err(Error::Conflict(_)) => {
            let stored = storage.get(&key).await?.ok_or_else(|| Error::internal(format!("the pin {key} vanished")))?;
            let held = ModulePin::parse(&stored.bytes)?;
            if held.sha256 == pin.sha256 {
                return Ok(held);
            }
            refuse(storage, module, version, &held, fetched).await;
            Err(moved(module, version, &held, fetched))
        }
        Err(e) => Err(e),
    }
}

/// Record bytes that differ from the pin (one record per SHA-256 refused).
async fn refuse<S: Storage>(
    storage: &S,
    module: &UpstreamModule,
    version: &semver::Version,
    held: &ModulePin,
    fetched: &FetchedModule,
) {
    let record = ModuleRefusal {
        module: module.to_string(),
        version: version.to_string(),
        pinned: held.sha256.clone(),
        fetched: fetched.sha256.clone(),
        source: fetched.source.clone(),
        refused_at: crate::clock::rfc3339_now(),
    };
    let key = layout::upstream_module_refusal(module, version, &fetched.sha256);
    tracing::error!(%module, %version, pinned = held.sha256, fetched = fetched.sha256, source = fetched.source, "upstream bytes differ from the pin: refused");
    let written = match crate::manifest::to_json(&record) {
        Ok(body) => storage.put(&key, body, CONTENT_TYPE_JSON, Precondition::None).await,
        Err(e) => Err(e),
    };
    if let Err(e) = written {
        tracing::error!(key, error = %chain(&e), "refusal not recorded");
    }
}

/// The answer for bytes that differ from the pin.
fn moved(module: &UpstreamModule, version: &semver::Version, held: &ModulePin, fetched: &FetchedModule) -> Error {
    Error::BadGateway(format!(
        "upstream registry {}: {module} {version} now has SHA-256 {} at {}, not the {} pinned at its first copy \
         (a moved tag?): refused, and recorded",
        module.hostname, fetched.sha256, fetched.source, held.sha256
    ))
}

/// Rewrite the module's index as `change` makes the one stored (conditional: no copied
/// version is lost to a racing writer). A failure is logged: the index is a cache of the
/// upstream's list and of the pins, which stay the truth.
pub async fn keep_index<S: Storage>(storage: &S, module: &UpstreamModule, change: impl Fn(ModuleIndex) -> ModuleIndex) {
    let key = layout::upstream_module_index(module);
    let written = retry::on_conflict(INDEX_RETRY, &key, |_| async {
        let stored = match storage.get(&key).await {
            Ok(stored) => stored,
            // The modules role has no `s3:ListBucket` (least privilege): S3 answers a missing
            // key with AccessDenied rather than NoSuchKey, as the reader knows too.
            Err(Error::Forbidden(_)) => None,
            Err(e) => return Err(e),
        };
        let (old, etag) = match &stored {
            Some(o) => (ModuleIndex::parse(&o.bytes).unwrap_or_default(), Some(o.etag.as_str())),
            None => (ModuleIndex::default(), None),
        };
        let body = crate::manifest::to_json(&change(old))?;
        storage.put(&key, body, CONTENT_TYPE_JSON, Precondition::replacing(etag)).await
    })
    .await;
    if let Err(e) = written {
        tracing::warn!(key, error = %chain(&e), "upstream module index not kept; asked again next time");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::MemoryStorage;

    fn fetched(bytes: &[u8]) -> FetchedModule {
        use sha2::Digest;
        FetchedModule {
            bytes: bytes::Bytes::copy_from_slice(bytes),
            sha256: hex::encode(sha2::Sha256::digest(bytes)),
            archive: "tar.gz",
            source: "git::https://github.com/o/r?ref=v1.0.0".into(),
        }
    }

    #[tokio::test]
    async fn the_first_pin_holds_and_other_bytes_are_refused_and_recorded() {
        let storage = MemoryStorage::new();
        let module = UpstreamModule::parse("registry.terraform.io", "o", "r", "aws").unwrap();
        let version = semver::Version::new(1, 0, 0);
        let (first, moved) = (fetched(b"first"), fetched(b"moved tag"));
        let pin = store(&storage, &module, &version, &first).await.unwrap();
        assert_eq!(pin.sha256, first.sha256);
        assert_eq!(
            store(&storage, &module, &version, &first).await.unwrap().sha256,
            first.sha256,
            "same bytes: the pin"
        );
        let refused = store(&storage, &module, &version, &moved).await.unwrap_err();
        assert!(
            matches!(&refused, Error::BadGateway(m) if m.contains(&first.sha256) && m.contains("moved tag")),
            "{refused:?}"
        );
        let held = storage.get(&layout::upstream_module_pin(&module, &version)).await.unwrap().unwrap();
        assert_eq!(ModulePin::parse(&held.bytes).unwrap().sha256, first.sha256, "the pin is unchanged");
        let record = storage.get(&layout::upstream_module_refusal(&module, &version, &moved.sha256)).await.unwrap();
        let record: ModuleRefusal = serde_json::from_slice(&record.expect("recorded").bytes).unwrap();
        assert_eq!((record.pinned, record.fetched), (first.sha256.clone(), moved.sha256.clone()));
    }

    #[tokio::test]
    async fn the_index_keeps_every_copied_version_whoever_writes_it() {
        let storage = MemoryStorage::new();
        let module = UpstreamModule::parse("registry.terraform.io", "o", "r", "aws").unwrap();
        let copied = |v: &'static str| {
            move |mut i: ModuleIndex| {
                i.copied.insert(v.to_string());
                i
            }
        };
        futures_util::future::join_all(["1.0.0", "1.1.0", "2.0.0"].map(|v| keep_index(&storage, &module, copied(v))))
            .await;
        keep_index(&storage, &module, |old| ModuleIndex {
            fetched_at: 5,
            versions: ["3.0.0".to_string()].into(),
            copied: old.copied,
        })
        .await;
        let stored = storage.get(&layout::upstream_module_index(&module)).await.unwrap().unwrap();
        let index = ModuleIndex::parse(&stored.bytes).unwrap();
        assert_eq!(index.all().into_iter().collect::<Vec<_>>(), ["1.0.0", "1.1.0", "2.0.0", "3.0.0"]);
    }
}
