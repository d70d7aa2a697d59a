//! The provider network mirror (`index.json`, `VERSION.json`): what the indexer wrote for
//! each provider, with archive URLs presigned. Providers of an allowed upstream host go
//! through `pull_through` instead.

use http::StatusCode;
use serde_json::json;

use crate::address::ProviderAddress;
use crate::context::Context;
use crate::error::Error;
use crate::exchange::Request;
use crate::exchange::{NO_CACHE, Reply};
use crate::layout;
use crate::manifest::{ProviderIndex, ProviderVersion};
use crate::router::Route;
use crate::storage::Storage;
use crate::usage::{Counted, Download, Via};

/// The network mirror: a provider's versions, and a version's archives.
pub(super) async fn answer<S: Storage>(
    ctx: &Context<S>,
    route: Route,
    request: &Request<'_>,
    deadline: tokio::time::Instant,
) -> Result<Reply, Error> {
    let absent = || route.not_found();
    match &route {
        Route::MirrorIndex { provider } => {
            super::authorize(ctx, &route, request.authorization).await?;
            index(ctx, provider, deadline, absent).await
        }
        Route::MirrorVersion { provider, version } => {
            let viewer = super::authorize(ctx, &route, request.authorization).await?;
            let reply = self::version(ctx, provider, version, deadline, absent).await?;
            super::count(
                ctx,
                request,
                Download::new(Counted::Provider(provider.clone()), version, Via::Mirror, &viewer.caller()),
            );
            Ok(reply)
        }
        _ => Err(super::elsewhere(&route)),
    }
}

/// `GET …/:hostname/:namespace/:type/index.json`: the versions, from one read.
async fn index<S: Storage>(
    ctx: &Context<S>,
    provider: &ProviderAddress,
    deadline: tokio::time::Instant,
    absent: impl Fn() -> Error,
) -> Result<Reply, Error> {
    #[cfg(feature = "aws")]
    if let Some(upstream) = ctx.upstream_for(provider) {
        return super::pull_through::index_through(ctx, upstream, provider, deadline, absent).await;
    }
    let key = layout::provider_index(provider);
    let read = ctx.reader.manifest(&key, ProviderIndex::parse, |i| i.versions.is_empty(), absent, deadline).await?;
    Ok(Reply::json(StatusCode::OK, &read.value.response()).header("cache-control", NO_CACHE).etag().stale(read.stale))
}

/// `GET …/:hostname/:namespace/:type/:version.json`: each platform's archive, presigned,
/// with its hashes.
async fn version<S: Storage>(
    ctx: &Context<S>,
    provider: &ProviderAddress,
    version: &semver::Version,
    deadline: tokio::time::Instant,
    absent: impl Fn() -> Error,
) -> Result<Reply, Error> {
    #[cfg(feature = "aws")]
    if let Some(upstream) = ctx.upstream_for(provider) {
        return super::pull_through::version_through(ctx, upstream, provider, version, deadline, absent).await;
    }
    let key = layout::provider_version(provider, version);
    let read = ctx.reader.manifest(&key, ProviderVersion::parse, |d| d.archives.is_empty(), absent, deadline).await?;
    let archives = ctx.reader.mirror_archives(provider, version, &read.value).await?;
    Ok(Reply::json(StatusCode::OK, &json!({ "archives": archives }))
        .header("cache-control", "no-store")
        .stale(read.stale))
}
