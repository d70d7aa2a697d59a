//! The network mirror's pull-through: `index.json` and `VERSION.json` for providers of an
//! allowed upstream host (`REGISTRY_UPSTREAM_HOSTS`). What the bucket holds is served as
//! always; what it lacks comes from the upstream's providers.v1, verified (`upstream`), and a
//! pull record asks the puller to copy it. `docs/HOW-IT-WORKS.md` ("Pull-through") says why
//! the first answer points the CLI at the upstream's own URLs.
//!
//! These routes read two small objects at once (the bucket's document and what the mirror
//! keeps of the upstream), so a warm request still waits for one round trip.

use std::sync::Arc;

use http::StatusCode;
use serde_json::json;

use crate::address::ProviderAddress;
use crate::context::Context;
use crate::error::{Error, chain};
use crate::exchange::{NO_CACHE, Reply};
use crate::layout::{self, Platform};
use crate::manifest::{CONTENT_TYPE_JSON, ProviderIndex, ProviderVersion};
use crate::reader::Fetched;
use crate::storage::{Precondition, Storage};
use crate::upstream::Upstream;
use crate::upstream::records::{PULL_RETRY_SECONDS, PullRecord, UpstreamVersions};

use super::{not_found, optional};

/// `index.json`: the bucket's versions and the upstream's, its list kept in the bucket
/// for `REGISTRY_UPSTREAM_VERSIONS_TTL_SECONDS`. Upstream down: what is kept, marked
/// stale; nothing kept: 502 naming the upstream.
pub(super) async fn index_through<S: Storage>(
    ctx: &Context<S>,
    upstream: Arc<Upstream>,
    provider: &ProviderAddress,
    deadline: tokio::time::Instant,
    absent: impl Fn() -> Error,
) -> Result<Reply, Error> {
    let index_key = layout::provider_index(provider);
    let (indexed, kept) = futures_util::future::join(
        ctx.reader.manifest(&index_key, ProviderIndex::parse, |i| i.versions.is_empty(), not_found, deadline),
        kept_versions(ctx, provider, deadline),
    )
    .await;
    let (indexed, kept) = (optional(indexed)?, kept?);
    let (list, upstream_stale) = upstream_versions(ctx, &upstream, provider, kept, indexed.is_some()).await?;
    let mut versions = serde_json::Map::new();
    let bucket = indexed.as_ref().map(|i| i.value.response()).unwrap_or_else(|| json!({"versions": {}}));
    if let Some(listed) = bucket["versions"].as_object() {
        versions.extend(listed.clone());
    }
    for version in list.iter().flat_map(|l| l.versions.keys()) {
        versions.insert(version.clone(), json!({}));
    }
    if versions.is_empty() {
        return Err(absent());
    }
    Ok(Reply::json(StatusCode::OK, &json!({ "versions": versions }))
        .header("cache-control", NO_CACHE)
        .etag()
        .stale(indexed.as_ref().is_some_and(|i| i.stale))
        .upstream_stale(upstream_stale))
}

/// `VERSION.json`: from the bucket once every platform of the release is copied; before
/// that, the copied platforms from the bucket and the others at the upstream's URLs with
/// the SHA-256 its signed `SHA256SUMS` lists (`zh:`), which the CLI checks.
pub(super) async fn version_through<S: Storage>(
    ctx: &Context<S>,
    upstream: Arc<Upstream>,
    provider: &ProviderAddress,
    version: &semver::Version,
    deadline: tokio::time::Instant,
    absent: impl Fn() -> Error,
) -> Result<Reply, Error> {
    let version_key = layout::provider_version(provider, version);
    let pull_key = layout::upstream_pull(provider, version);
    let (indexed, pulled) = futures_util::future::join(
        ctx.reader.manifest(&version_key, ProviderVersion::parse, |d| d.archives.is_empty(), not_found, deadline),
        ctx.reader.manifest(&pull_key, PullRecord::parse, |_| false, not_found, deadline),
    )
    .await;
    let (indexed, pulled) = (optional(indexed)?, optional(pulled)?);
    let copied = |record: &PullRecord, document: &ProviderVersion| {
        record.archives.keys().all(|platform| document.archives.contains_key(platform))
    };
    match (indexed, pulled) {
        (indexed, Some(pulled)) if indexed.as_ref().is_none_or(|i| !copied(&pulled.value, &i.value)) => {
            ask_again_if_overdue(ctx, &pull_key, &pulled.value).await;
            copy_under_way(ctx, &upstream, provider, version, indexed, &pulled.value).await
        }
        // In the bucket (all copied, or synced by a publisher): no upstream request.
        (Some(indexed), _) => {
            let archives = ctx.reader.mirror_archives(provider, version, &indexed.value).await?;
            Ok(Reply::json(StatusCode::OK, &json!({ "archives": archives }))
                .header("cache-control", "no-store")
                .stale(indexed.stale))
        }
        (None, _) => first_pull(ctx, &upstream, provider, version, &pull_key, deadline, absent).await,
    }
}

/// The upstream's list as the bucket keeps it, if any.
async fn kept_versions<S: Storage>(
    ctx: &Context<S>,
    provider: &ProviderAddress,
    deadline: tokio::time::Instant,
) -> Result<Option<Fetched<UpstreamVersions>>, Error> {
    let key = layout::upstream_versions(provider);
    optional(ctx.reader.manifest(&key, UpstreamVersions::parse, |_| false, not_found, deadline).await)
}

/// The upstream's version list: the kept one while fresh, else asked for (and kept). When
/// the upstream fails, the kept one, stale; with nothing kept and nothing in the bucket
/// (`in_bucket`), the failure. `(None, _)`: the upstream has no such provider.
async fn upstream_versions<S: Storage>(
    ctx: &Context<S>,
    upstream: &Upstream,
    provider: &ProviderAddress,
    kept: Option<Fetched<UpstreamVersions>>,
    in_bucket: bool,
) -> Result<(Option<Arc<UpstreamVersions>>, bool), Error> {
    let now = crate::clock::now_unix();
    if let Some(kept) = kept.as_ref().filter(|k| k.value.fresh(now, upstream.versions_ttl())) {
        return Ok((Some(kept.value.clone()), false));
    }
    match upstream.versions(provider, now).await {
        Ok(Some(list)) => {
            let key = layout::upstream_versions(provider);
            match crate::manifest::to_json(&list) {
                Ok(body) => {
                    if let Err(e) = ctx.storage().put(&key, body, CONTENT_TYPE_JSON, Precondition::None).await {
                        tracing::warn!(key, error = %chain(&e), "upstream version list not kept; asked again next time");
                    }
                }
                Err(e) => tracing::warn!(key, error = %chain(&e), "upstream version list not kept"),
            }
            Ok((Some(Arc::new(list)), false))
        }
        // Never kept as "no versions": the next request asks again.
        Ok(None) => Ok((None, false)),
        Err(e) => match kept {
            Some(kept) => {
                tracing::warn!(%provider, error = %chain(&e), "upstream failed; serving the version list kept in the bucket");
                Ok((Some(kept.value), true))
            }
            None if in_bucket => {
                tracing::warn!(%provider, error = %chain(&e), "upstream failed; serving the bucket's versions only");
                Ok((None, true))
            }
            None => Err(e),
        },
    }
}

/// A version never asked for: verify it at the upstream, record the pull (its write
/// invokes the puller), and answer with the upstream's URLs and the signed hashes.
async fn first_pull<S: Storage>(
    ctx: &Context<S>,
    upstream: &Upstream,
    provider: &ProviderAddress,
    version: &semver::Version,
    pull_key: &str,
    deadline: tokio::time::Instant,
    absent: impl Fn() -> Error,
) -> Result<Reply, Error> {
    let kept = kept_versions(ctx, provider, deadline).await?;
    let (list, _) = upstream_versions(ctx, upstream, provider, kept, false).await?;
    let platforms: Vec<Platform> = list.and_then(|l| l.platforms(version)).ok_or_else(&absent)?;
    let now = crate::clock::now_unix();
    let release = upstream.release(provider, version, &platforms, now).await?.ok_or_else(&absent)?;
    match crate::manifest::to_json(&release.record) {
        Ok(body) => match ctx.storage().put(pull_key, body, CONTENT_TYPE_JSON, Precondition::IfAbsent).await {
            // Conflict: another request recorded it first; its write invoked the puller.
            Ok(()) | Err(Error::Conflict(_)) => {}
            Err(e) => {
                tracing::error!(pull_key, error = %chain(&e), "pull record not written; nothing will be copied yet")
            }
        },
        Err(e) => tracing::error!(pull_key, error = %chain(&e), "pull record not written"),
    }
    let mut archives = serde_json::Map::new();
    for (platform, archive) in &release.record.archives {
        if let Some(url) = release.urls.get(platform) {
            archives.insert(platform.clone(), json!({ "url": url, "hashes": [format!("zh:{}", archive.sha256)] }));
        }
    }
    Ok(Reply::json(StatusCode::OK, &json!({ "archives": archives })).header("cache-control", "no-store"))
}

/// A release whose copy is not complete: the copied platforms from the bucket, the
/// others from the upstream (fresh URLs, the record's signed SHA-256s). Upstream down:
/// what is copied, marked stale; nothing copied: the failure.
async fn copy_under_way<S: Storage>(
    ctx: &Context<S>,
    upstream: &Upstream,
    provider: &ProviderAddress,
    version: &semver::Version,
    indexed: Option<Fetched<ProviderVersion>>,
    record: &PullRecord,
) -> Result<Reply, Error> {
    let mut archives = match &indexed {
        Some(indexed) => ctx.reader.mirror_archives(provider, version, &indexed.value).await?,
        None => serde_json::Map::new(),
    };
    let missing: Vec<(&String, Platform)> = record
        .archives
        .keys()
        .filter(|platform| !archives.contains_key(*platform))
        .filter_map(|key| key.split_once('_').and_then(|(os, arch)| Platform::parse(os, arch).ok()).map(|p| (key, p)))
        .collect();
    let answers =
        futures_util::future::join_all(missing.iter().map(|(_, p)| upstream.download(provider, version, p))).await;
    let mut failure = None;
    for ((key, _), answer) in missing.iter().zip(answers) {
        let signed = &record.archives[*key].sha256;
        match answer {
            Ok(Some(download)) if download.shasum.to_ascii_lowercase() == *signed => {
                archives.insert(
                    (*key).clone(),
                    json!({ "url": download.download_url, "hashes": [format!("zh:{signed}")] }),
                );
            }
            Ok(Some(download)) => {
                failure = Some(Error::BadGateway(format!(
                    "upstream registry {}: {provider} {version} {key}: the download answer says SHA-256 {}, the \
                     signed SHA256SUMS lists {signed}",
                    provider.hostname,
                    crate::address::printable(&download.shasum)
                )));
            }
            Ok(None) => {}
            Err(e) => failure = Some(e),
        }
    }
    match failure {
        Some(e) if archives.is_empty() => Err(e),
        Some(e) => {
            tracing::warn!(%provider, %version, error = %chain(&e), "upstream failed; serving the platforms copied so far");
            Ok(Reply::json(StatusCode::OK, &json!({ "archives": archives }))
                .header("cache-control", "no-store")
                .upstream_stale(true))
        }
        None if archives.is_empty() => Err(Error::BadGateway(format!(
            "upstream registry {}: {provider} {version} has no downloads",
            provider.hostname
        ))),
        None => {
            let stale = indexed.as_ref().is_some_and(|i| i.stale);
            Ok(Reply::json(StatusCode::OK, &json!({ "archives": archives }))
                .header("cache-control", "no-store")
                .stale(stale))
        }
    }
}

/// A copy not done `PULL_RETRY_SECONDS` after it was asked for (the puller failed, or
/// the upstream served bytes that did not verify) is asked for again: the record is
/// written anew, which invokes the puller once more. At most once per period.
async fn ask_again_if_overdue<S: Storage>(ctx: &Context<S>, pull_key: &str, record: &PullRecord) {
    let now = crate::clock::now_unix();
    if now - record.requested_at < PULL_RETRY_SECONDS {
        return;
    }
    let again = PullRecord { requested_at: now, ..record.clone() };
    let written = match crate::manifest::to_json(&again) {
        Ok(body) => ctx.storage().put(pull_key, body, CONTENT_TYPE_JSON, Precondition::None).await,
        Err(e) => Err(e),
    };
    match written {
        Ok(()) => tracing::info!(pull_key, "copy overdue; asked for again"),
        Err(e) => tracing::warn!(pull_key, error = %chain(&e), "copy overdue; could not ask again"),
    }
}
