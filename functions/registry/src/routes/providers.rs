//! providers.v1 (versions and download) for the providers this registry publishes under its
//! own host name (`REGISTRY_HOSTNAME`). One read each: the index, or the version's document
//! with its release (`SHA256SUMS`, its signature and the signing key).

use http::StatusCode;
use serde_json::json;

use crate::address::{ProviderAddress, ProviderName};
use crate::context::Context;
use crate::error::Error;
use crate::exchange::Request;
use crate::exchange::{NO_CACHE, Reply};
use crate::layout::{self, Platform, ReleaseFile, Wanted};
use crate::manifest::{ProviderIndex, ProviderVersion};
use crate::router::Route;
use crate::storage::Storage;
use crate::usage::{Counted, Download, Via};

/// providers.v1: a provider's versions, and a platform's download.
pub(super) async fn answer<S: Storage>(
    ctx: &Context<S>,
    route: Route,
    request: &Request<'_>,
    deadline: tokio::time::Instant,
) -> Result<Reply, Error> {
    let absent = || route.not_found();
    match &route {
        Route::ProviderVersions { name } => {
            let provider = own(ctx, name)?;
            super::authorize(ctx, &route, request.authorization).await?;
            versions(ctx, &provider, deadline, absent).await
        }
        Route::ProviderDownload { name, version, platform } => {
            let provider = own(ctx, name)?;
            let viewer = super::authorize(ctx, &route, request.authorization).await?;
            let reply = download(ctx, &provider, version, platform, deadline, absent).await?;
            let download = Download::new(Counted::Provider(provider), version, Via::ProvidersV1, &viewer.caller());
            super::count(ctx, request, download.on(platform));
            Ok(reply)
        }
        _ => Err(super::elsewhere(&route)),
    }
}

/// The full address of `name` at this registry's host: providers.v1 names providers of the
/// host it is asked on. Without `REGISTRY_HOSTNAME` there is no such host: 404.
pub(super) fn own<S>(ctx: &Context<S>, name: &ProviderName) -> Result<ProviderAddress, Error> {
    match &ctx.config.hostname {
        Some(hostname) => Ok(name.at(hostname)),
        None => Err(Error::NotFound("this registry serves no providers.v1 (REGISTRY_HOSTNAME is not set)".into())),
    }
}

/// `GET …/:namespace/:type/versions`: each version with its protocols and platforms.
async fn versions<S: Storage>(
    ctx: &Context<S>,
    provider: &ProviderAddress,
    deadline: tokio::time::Instant,
    absent: impl Fn() -> Error,
) -> Result<Reply, Error> {
    let key = layout::provider_index(provider);
    let read = ctx.reader.manifest(&key, ProviderIndex::parse, |i| i.versions.is_empty(), &absent, deadline).await?;
    let body = read.value.registry_versions();
    // Versions the mirror serves but with no signed release are not providers.v1's.
    if body["versions"].as_array().is_none_or(|v| v.is_empty()) {
        return Err(absent());
    }
    Ok(Reply::json(StatusCode::OK, &body).header("cache-control", NO_CACHE).etag().stale(read.stale))
}

/// `GET …/:version/download/:os/:arch`: one read (the version's document), three presigned
/// URLs (the zip, `SHA256SUMS`, its signature), the key that signed it, and every platform's
/// hashes (`packages`).
async fn download<S: Storage>(
    ctx: &Context<S>,
    provider: &ProviderAddress,
    version: &semver::Version,
    platform: &Platform,
    deadline: tokio::time::Instant,
    absent: impl Fn() -> Error,
) -> Result<Reply, Error> {
    let key = layout::provider_version(provider, version);
    let read = ctx.reader.manifest(&key, ProviderVersion::parse, |d| d.archives.is_empty(), &absent, deadline).await?;
    let document = &read.value;
    let (Some(release), Some(archive)) = (&document.release, document.archives.get(&platform.key())) else {
        return Err(absent());
    };
    let prefix = layout::provider_prefix(provider);
    let platform_key = platform.key();
    let zip = Wanted::ProviderArchive { provider, version, platform: &platform_key };
    let download_url = ctx.reader.presign(&format!("{prefix}{}", archive.url), archive.version_id(), zip).await?;
    let file = |file| format!("{prefix}{}", layout::provider_release_file_name(provider, version, file));
    let wanted = |file| Wanted::ProviderReleaseFile { provider, version, file };
    let (sums, sig) = (ReleaseFile::Shasums, ReleaseFile::Signature);
    let shasums_url = ctx.reader.presign(&file(sums), None, wanted(sums)).await?;
    let shasums_signature_url = ctx.reader.presign(&file(sig), None, wanted(sig)).await?;
    let mut body = json!({
        "protocols": release.protocols,
        "os": platform.os,
        "arch": platform.arch,
        "filename": archive.url,
        "download_url": download_url,
        "shasums_url": shasums_url,
        "shasums_signature_url": shasums_signature_url,
        "shasum": archive.zh(),
        "signing_keys": {"gpg_public_keys": [{
            "key_id": release.signing_key.key_id,
            "ascii_armor": release.signing_key.ascii_armor,
        }]},
    });
    if let Some(packages) = packages(document) {
        body["packages"] = packages;
    }
    Ok(Reply::json(StatusCode::OK, &body).header("cache-control", "no-store").stale(read.stale))
}

/// OpenTofu's `packages` (1.12+; its provider registry protocol): every served platform of the
/// version with its `zh:` and `h1:` and its size. OpenTofu checks the target platform's entry
/// (it must be there, with the downloaded zip's size and a `zh:` equal to the `shasum`:
/// `internal/getproviders/package_authentication.go`, v1.12.6) and writes these hashes to the
/// lock file only for registry.opentofu.org providers: a platform the indexer recorded no size
/// or `zh:` for (none it signs off has) leaves the field out rather than half-filled, which
/// would fail that platform's installs.
fn packages(document: &ProviderVersion) -> Option<serde_json::Value> {
    let mut packages = serde_json::Map::new();
    for (platform, archive) in &document.archives {
        let size = archive.indexed.as_ref().map(|i| i.size).filter(|size| *size > 0);
        let (Some(size), false) = (size, archive.zh().is_empty()) else {
            tracing::warn!(%platform, "a served archive has no recorded size or zh: hash; no `packages` in the answer");
            return None;
        };
        packages.insert(platform.clone(), json!({"hashes": archive.hashes_for_cli(), "package_size": size}));
    }
    Some(serde_json::Value::Object(packages))
}

/// A provider version as its page and the MCP server show it: the version list, and the
/// version's document (the latest when none is named). Two reads, at once when the version is
/// named.
pub(super) struct Release {
    /// Every version.
    pub index: crate::reader::Fetched<ProviderIndex>,
    /// The shown version's document.
    pub document: crate::reader::Fetched<ProviderVersion>,
    /// The shown version.
    pub version: String,
}

impl Release {
    /// Every version, newest first.
    pub fn versions(&self) -> Vec<&str> {
        let mut versions: Vec<&str> = self.index.value.versions.keys().map(String::as_str).collect();
        versions.sort_by(|a, b| crate::manifest::newest_first(a, b));
        versions
    }
}

/// `provider`'s version (the latest when `version` is `None`): `absent()` when the provider
/// has no versions, "no version" when it lacks that one.
pub(super) async fn release<S: Storage>(
    ctx: &Context<S>,
    provider: &ProviderAddress,
    version: Option<&semver::Version>,
    absent: impl Fn() -> Error + Copy,
    deadline: tokio::time::Instant,
) -> Result<Release, Error> {
    let index_key = layout::provider_index(provider);
    let index = || ctx.reader.manifest(&index_key, ProviderIndex::parse, |i| i.versions.is_empty(), absent, deadline);
    let no_version = |v: &semver::Version| Error::NotFound(format!("provider {provider} has no version {v}"));
    let document = |v: semver::Version| async move {
        let key = layout::provider_version(provider, &v);
        let missing = || no_version(&v);
        ctx.reader.manifest(&key, ProviderVersion::parse, |d| d.archives.is_empty(), missing, deadline).await
    };
    let (index, document, shown) = match version {
        Some(v) => {
            let (index, document) = tokio::join!(index(), document(v.clone()));
            (index?, document?, v.clone())
        }
        None => {
            let index = index().await?;
            let latest = crate::catalog::latest(index.value.versions.keys().map(String::as_str))
                .and_then(|v| crate::address::parse_version(v).ok())
                .ok_or_else(absent)?;
            let document = document(latest.clone()).await?;
            (index, document, latest)
        }
    };
    let version = shown.to_string();
    if !index.value.versions.contains_key(&version) {
        return Err(no_version(&shown));
    }
    Ok(Release { index, document, version })
}
