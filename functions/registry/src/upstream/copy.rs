//! The puller: copies the zips of a pull record (a verified upstream release) into the bucket
//! (`copy_release`; `copy_batch` for each record of an S3 notification batch),
//! where the indexer indexes them as any uploaded provider package. It believes the record
//! only after checking its signature again, and stores a zip only after its bytes hashed to
//! the SHA-256 the signed `SHA256SUMS` lists: a zip that differs is never written, so a
//! tampered upstream download leaves nothing behind. Each zip goes to a temporary file first
//! (Lambda's `/tmp`), so memory stays small whatever the size.

use std::collections::BTreeMap;
use std::io::Write;

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::Upstream;
use super::records::{PullRecord, PulledArchive};
use crate::address::ProviderAddress;
use crate::error::{Error, chain};
use crate::layout::{self, Platform};
use crate::storage::{Precondition, Storage};

/// What one pull did, for the puller's answer and log.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct CopyReport {
    /// Platforms copied now.
    pub copied: Vec<String>,
    /// Platforms already in the bucket.
    pub present: Vec<String>,
    /// Platforms not copied, each with why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<(String, String)>,
}

/// Copy what each pull record of a batch (an S3 notification's, `events::pull_records`) names
/// and the bucket lacks: every record is tried, each report kept under its record's key. Then
/// the first failure worth retrying, if any, is the error, so that Lambda retries the whole
/// event (a record already copied is found present the next time).
pub async fn copy_batch<S: Storage>(
    storage: &S,
    upstream: &Upstream,
    record_keys: impl IntoIterator<Item = String>,
    limit: u64,
) -> Result<BTreeMap<String, CopyReport>, Error> {
    let mut reports = BTreeMap::new();
    let mut failure = None;
    for key in record_keys {
        match copy_release(storage, upstream, &key, limit).await {
            Ok(report) => {
                tracing::info!(key, copied = ?report.copied, present = ?report.present, failed = ?report.failed, "pulled");
                reports.insert(key, report);
            }
            Err(e) => {
                tracing::error!(key, error = %chain(&e), "pull failed; the event will be retried");
                failure.get_or_insert(e);
            }
        }
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(reports),
    }
}

/// Copy what the pull record at `record_key` names and the bucket lacks. An `Err` is a
/// failure worth retrying (storage, an unreachable upstream); a zip whose bytes do not
/// verify is in the report's `failed`, logged as an error, and stored nowhere.
pub async fn copy_release<S: Storage>(
    storage: &S,
    upstream: &Upstream,
    record_key: &str,
    limit: u64,
) -> Result<CopyReport, Error> {
    let Some((provider, version)) = layout::upstream_pull_release(record_key) else {
        return Err(Error::BadRequest(format!("{:?} is not a pull record", crate::address::printable(record_key))));
    };
    if !upstream.allows(&provider.hostname) {
        return Err(Error::BadRequest(format!("{provider}: {} is not an allowed upstream", provider.hostname)));
    }
    let Some(object) = storage.get(record_key).await? else { return Ok(CopyReport::default()) };
    let record = PullRecord::parse(&object.bytes)?;
    let now = crate::clock::now_unix();
    if record.provider != provider.to_string() || record.version != version.to_string() {
        return Err(Error::internal(format!("pull record {record_key} names {} {}", record.provider, record.version)));
    }
    if let Err(why) = record.verify(u64::try_from(now).unwrap_or(0)) {
        tracing::error!(record_key, why, "pull record does not verify; nothing copied");
        let failed =
            record.archives.keys().map(|p| (p.clone(), format!("pull record does not verify: {why}"))).collect();
        return Ok(CopyReport { failed, ..CopyReport::default() });
    }
    let present: std::collections::BTreeSet<String> =
        storage.list(&layout::provider_version_prefix(&provider, &version)).await?.into_iter().map(|o| o.key).collect();
    let mut report = CopyReport::default();
    let mut retry = None;
    for (platform_key, archive) in &record.archives {
        let Some(platform) = platform_key.split_once('_').and_then(|(os, arch)| Platform::parse(os, arch).ok()) else {
            report.failed.push((platform_key.clone(), "not a platform".into()));
            continue;
        };
        let key = format!(
            "{}{}",
            layout::provider_prefix(&provider),
            layout::provider_archive_name(&provider, &version, &platform)
        );
        if present.contains(&key) {
            report.present.push(platform_key.clone());
            continue;
        }
        match copy_one(storage, upstream, &provider, &version, &platform, archive, &key, limit).await {
            Ok(Ok(())) => report.copied.push(platform_key.clone()),
            Ok(Err(why)) => {
                tracing::error!(%provider, %version, platform = %platform_key, why, "upstream zip not copied");
                report.failed.push((platform_key.clone(), why));
            }
            // Transient: the others are still tried, then the invocation fails and is retried.
            Err(e) => {
                tracing::warn!(%provider, %version, platform = %platform_key, error = %chain(&e), "copy failed; will be retried");
                report.failed.push((platform_key.clone(), chain(&e)));
                retry = Some(e);
            }
        }
    }
    match retry {
        Some(e) => Err(e),
        None => Ok(report),
    }
}

/// One zip: `Ok(Err(why))` when its bytes do not verify (nothing stored).
#[allow(clippy::too_many_arguments, reason = "one call site; the parts of one copy")]
async fn copy_one<S: Storage>(
    storage: &S,
    upstream: &Upstream,
    provider: &ProviderAddress,
    version: &semver::Version,
    platform: &Platform,
    archive: &PulledArchive,
    key: &str,
    limit: u64,
) -> Result<Result<(), String>, Error> {
    // The record keeps no URL (an upstream may presign them): ask for a fresh one.
    let Some(download) = upstream.download(provider, version, platform).await? else {
        return Ok(Err("the upstream no longer has this platform".into()));
    };
    if download.shasum.to_ascii_lowercase() != archive.sha256 {
        return Ok(Err(format!(
            "the upstream now says SHA-256 {}, the verified SHA256SUMS lists {}",
            crate::address::printable(&download.shasum),
            archive.sha256
        )));
    }
    let temporary = tempfile::NamedTempFile::new().map_err(|e| Error::internal_from("temporary file", e))?;
    let mut file = temporary.as_file().try_clone().map_err(|e| Error::internal_from("temporary file", e))?;
    let mut hasher = Sha256::new();
    let mut size = 0u64;
    let fetched = upstream
        .fetch_archive(&provider.hostname, &download.download_url, |chunk| {
            size += chunk.len() as u64;
            if size > limit {
                return Err(Error::Corrupt(format!(
                    "over {limit} bytes (REGISTRY_MAX_PROVIDER_ZIP_BYTES): not stored"
                )));
            }
            hasher.update(chunk);
            file.write_all(chunk).map_err(|e| Error::internal_from("temporary file", e))
        })
        .await;
    match fetched {
        Ok(_) => {}
        // Too large is a verdict on these bytes; anything else is worth a retry.
        Err(Error::Corrupt(why)) => return Ok(Err(why)),
        Err(e) => return Err(e),
    }
    file.flush().map_err(|e| Error::internal_from("temporary file", e))?;
    let sha256 = hex::encode(hasher.finalize());
    if sha256 != archive.sha256 {
        return Ok(Err(format!(
            "{} bytes with SHA-256 {sha256}; the signed SHA256SUMS lists {}: not stored",
            size, archive.sha256
        )));
    }
    match storage.put_file(key, temporary.path(), "application/zip", Precondition::IfAbsent).await {
        // Stored meanwhile (another pull, a publisher): the indexer's immutability rules apply.
        Ok(()) | Err(Error::Conflict(_)) => Ok(Ok(())),
        Err(e) => Err(e),
    }
}
