//! The answers, one file per protocol: `discovery` (`/.well-known/terraform.json`),
//! `modules` (modules.v1 and the v1 list, search and details API), `mirror` (the provider
//! network mirror, with `pull_through` for upstream providers), `providers` (providers.v1)
//! and `web` (the pages). Each reads through the shared [`Context`] and asks its verifier
//! the same way (`authorize`); a new protocol is a new file here and a `Route` arm below.

mod discovery;
mod mirror;
mod modules;
mod oci;
mod providers;
#[cfg(feature = "aws")]
mod pull_through;
mod web;

pub(crate) use discovery::document as discovery_document;
pub(crate) use oci::error_reply as oci_error_reply;
pub(crate) use web::error_page;

use crate::address::ProviderAddress;
use crate::auth::Resource;
use crate::context::Context;
use crate::error::Error;
use crate::exchange::{Reply, Request};
use crate::router::{Page, Route};
use crate::storage::Storage;

/// The registry's address as clients reach it: `REGISTRY_HOSTNAME`, else the request's `Host`
/// when it is a plain host name with an optional port (so nothing it holds can break out of a
/// quoted header value or markup). Named in the pages' snippets and OCI's challenge.
pub(crate) fn public_host(config: &crate::config::Config, request: &Request<'_>) -> Option<String> {
    let from_request = request.host.filter(|h| {
        !h.is_empty()
            && h.len() <= 253
            && h.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':'))
    });
    config.hostname.clone().or(from_request.map(str::to_string))
}

/// Answer a routed request before `deadline`. The function serves `route` (checked by the
/// caller); each protocol's file answers its own routes.
pub(crate) async fn answer<S: Storage>(
    ctx: &Context<S>,
    route: Route,
    request: &Request<'_>,
    deadline: tokio::time::Instant,
) -> Result<Reply, Error> {
    let authorization = request.authorization;
    match &route {
        Route::Page(page) => web::page(ctx, page, request, deadline).await,
        // Its own credentials (Basic or Bearer) and error bodies: `oci` checks access itself.
        Route::Oci(oci) => oci::answer(ctx, oci, request, deadline).await,
        Route::Discovery => Ok(discovery::answer(&ctx.config)),
        Route::ModuleList(listing) | Route::ModuleSearch(listing) => {
            let viewer = ctx.verifier.lister(ctx.storage(), authorization).await?;
            modules::listing(ctx, listing, &viewer, deadline).await
        }
        Route::ModuleVersions(module) => {
            authorize(ctx, &route, None, authorization).await?;
            modules::versions(ctx, module, deadline).await
        }
        Route::ModuleDownload(module, version) => {
            authorize(ctx, &route, None, authorization).await?;
            modules::download(ctx, module, version, deadline).await
        }
        Route::ModuleLatest(module) => {
            authorize(ctx, &route, None, authorization).await?;
            modules::details(ctx, module, None, || absent(&route), deadline).await
        }
        Route::ModuleDetails(module, version) => {
            authorize(ctx, &route, None, authorization).await?;
            modules::details(ctx, module, Some(version), || absent(&route), deadline).await
        }
        Route::MirrorIndex(provider) => {
            authorize(ctx, &route, None, authorization).await?;
            mirror::index(ctx, provider, deadline, || absent(&route)).await
        }
        Route::MirrorVersion(provider, version) => {
            authorize(ctx, &route, None, authorization).await?;
            mirror::version(ctx, provider, version, deadline, || absent(&route)).await
        }
        Route::ProviderVersions(name) => {
            let provider = providers::own(ctx, name)?;
            authorize(ctx, &route, Some(&provider), authorization).await?;
            providers::versions(ctx, &provider, deadline, || absent(&route)).await
        }
        Route::ProviderDownload(name, version, platform) => {
            let provider = providers::own(ctx, name)?;
            authorize(ctx, &route, Some(&provider), authorization).await?;
            providers::download(ctx, &provider, version, platform, deadline, || absent(&route)).await
        }
    }
}

/// What a request for something that does not exist gets. A token that may not read it gets
/// exactly this too: one builder for both, so the two answers can never drift apart and a
/// token cannot tell hidden from absent.
pub(crate) fn absent(route: &Route) -> Error {
    Error::NotFound(match route {
        Route::ModuleVersions(m)
        | Route::ModuleDownload(m, _)
        | Route::ModuleLatest(m)
        | Route::ModuleDetails(m, _) => {
            format!("module {m} not found")
        }
        Route::MirrorIndex(p) => format!("provider {p} not found"),
        Route::MirrorVersion(p, v) => format!("provider {p} has no version {v}"),
        Route::ProviderVersions(p) => format!("provider {p} not found"),
        Route::ProviderDownload(p, v, platform) => {
            format!("provider {p} has no version {v} for {}", platform.key())
        }
        Route::Page(Page::Module(m, _) | Page::Upgrade(m, ..)) => format!("module {m} not found"),
        Route::Page(Page::Provider(p, _)) => format!("provider {p} not found"),
        Route::Discovery | Route::ModuleList(_) | Route::ModuleSearch(_) | Route::Page(_) | Route::Oci(_) => {
            "not found".into()
        }
    })
}

/// The one access check, for Lambdas and the local registry alike: the resource `route`
/// names (`own`: a providers.v1 provider's full address) and the verifier's answer for it.
pub(crate) async fn authorize<S: Storage>(
    ctx: &Context<S>,
    route: &Route,
    own: Option<&ProviderAddress>,
    authorization: Option<&str>,
) -> Result<(), Error> {
    let resource = match (route, own) {
        (Route::Discovery, _) => Resource::Discovery,
        (
            Route::ModuleVersions(m)
            | Route::ModuleDownload(m, _)
            | Route::ModuleLatest(m)
            | Route::ModuleDetails(m, _),
            _,
        ) => Resource::Module(m),
        (Route::Page(Page::Module(m, _) | Page::Upgrade(m, ..)), _) => Resource::Module(m),
        (Route::Page(Page::Provider(p, _)), _) => Resource::Provider(p),
        // A listing is filtered item by item (`Verifier::lister`), not allowed or refused
        // whole; the other pages name nothing to read.
        (Route::ModuleList(_) | Route::ModuleSearch(_) | Route::Page(_) | Route::Oci(_), _) => {
            return Err(absent(route));
        }
        (Route::MirrorIndex(p) | Route::MirrorVersion(p, _), _) => Resource::Provider(p),
        // The scope of a providers.v1 provider is its full address, as for the mirror.
        (Route::ProviderVersions(_) | Route::ProviderDownload(..), Some(p)) => Resource::Provider(p),
        (Route::ProviderVersions(_) | Route::ProviderDownload(..), None) => return Err(absent(route)),
    };
    ctx.verifier.check(ctx.storage(), authorization, resource, || absent(route)).await
}
