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

use std::future::Future;
use std::pin::Pin;

use tokio::time::Instant;

use crate::address::ProviderAddress;
use crate::auth::Resource;
use crate::context::Context;
use crate::error::Error;
use crate::exchange::{Reply, Request};
use crate::router::{Page, Route, Service};
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

/// One answer's future, boxed so a function's answer can be a plain `fn` (one allocation per
/// request).
pub type Answering<'a> = Pin<Box<dyn Future<Output = Result<Reply, Error>> + Send + 'a>>;

/// What answers a process's routes before a deadline. A Lambda function's answers only its own
/// protocol's ([`Function`]), so its binary links no other protocol's code: the linker drops
/// what nothing reaches (the pages' Markdown renderer and HTML sanitiser, OCI's answers, the
/// pull-through's checks), about a third of a read function's binary. The local registry and
/// the tests answer everything (`every`).
pub type Answer<S> = for<'a, 'b> fn(&'a Context<S>, Route, &'a Request<'b>, Instant) -> Answering<'a>;

/// One Lambda function: the service it serves and the answer it links.
pub struct Function<S> {
    /// The service whose routes it answers (others: 404, as from the wrong function).
    pub service: Service,
    /// Its protocol's answer alone.
    pub answer: Answer<S>,
}

impl<S: Storage> Function<S> {
    /// Service discovery.
    pub fn discovery() -> Self {
        Function {
            service: Service::Discovery,
            answer: |ctx, _, _, _| Box::pin(async { Ok(discovery::answer(&ctx.config)) }),
        }
    }

    /// modules.v1.
    pub fn modules() -> Self {
        Function { service: Service::Modules, answer: |c, r, q, d| Box::pin(answer_modules(c, r, q, d)) }
    }

    /// The provider network mirror (and its pull-through).
    pub fn mirror() -> Self {
        Function { service: Service::Mirror, answer: |c, r, q, d| Box::pin(answer_mirror(c, r, q, d)) }
    }

    /// providers.v1.
    pub fn providers() -> Self {
        Function { service: Service::Providers, answer: |c, r, q, d| Box::pin(answer_providers(c, r, q, d)) }
    }

    /// The module list, search and details API, and the web pages.
    pub fn web() -> Self {
        Function { service: Service::Web, answer: |c, r, q, d| Box::pin(answer_web(c, r, q, d)) }
    }

    /// OCI Distribution.
    pub fn oci() -> Self {
        Function { service: Service::Oci, answer: |c, r, q, d| Box::pin(answer_oci(c, r, q, d)) }
    }
}

/// Every route, each by its service's answer: the local registry's and the tests'.
pub fn every<'a, S: Storage>(
    ctx: &'a Context<S>,
    route: Route,
    request: &'a Request<'_>,
    deadline: Instant,
) -> Answering<'a> {
    Box::pin(async move {
        match route.service() {
            Service::Discovery => Ok(discovery::answer(&ctx.config)),
            Service::Modules => answer_modules(ctx, route, request, deadline).await,
            Service::Mirror => answer_mirror(ctx, route, request, deadline).await,
            Service::Providers => answer_providers(ctx, route, request, deadline).await,
            Service::Web => answer_web(ctx, route, request, deadline).await,
            Service::Oci => answer_oci(ctx, route, request, deadline).await,
        }
    })
}

/// What a function answers for another's route: what API Gateway would get had it sent the
/// request to the wrong function.
pub(crate) fn elsewhere(route: &Route) -> Error {
    Error::NotFound(format!("this function does not serve {}", route.name()))
}

/// modules.v1: the versions and the download of a module.
async fn answer_modules<S: Storage>(
    ctx: &Context<S>,
    route: Route,
    request: &Request<'_>,
    deadline: Instant,
) -> Result<Reply, Error> {
    let authorization = request.authorization;
    match &route {
        Route::ModuleVersions(module) => {
            authorize(ctx, &route, None, authorization).await?;
            modules::versions(ctx, module, deadline).await
        }
        Route::ModuleDownload(module, version) => {
            authorize(ctx, &route, None, authorization).await?;
            modules::download(ctx, module, version, deadline).await
        }
        _ => Err(elsewhere(&route)),
    }
}

/// The network mirror: a provider's versions, and a version's archives.
async fn answer_mirror<S: Storage>(
    ctx: &Context<S>,
    route: Route,
    request: &Request<'_>,
    deadline: Instant,
) -> Result<Reply, Error> {
    let authorization = request.authorization;
    match &route {
        Route::MirrorIndex(provider) => {
            authorize(ctx, &route, None, authorization).await?;
            mirror::index(ctx, provider, deadline, || absent(&route)).await
        }
        Route::MirrorVersion(provider, version) => {
            authorize(ctx, &route, None, authorization).await?;
            mirror::version(ctx, provider, version, deadline, || absent(&route)).await
        }
        _ => Err(elsewhere(&route)),
    }
}

/// providers.v1: a provider's versions, and a platform's download.
async fn answer_providers<S: Storage>(
    ctx: &Context<S>,
    route: Route,
    request: &Request<'_>,
    deadline: Instant,
) -> Result<Reply, Error> {
    let authorization = request.authorization;
    match &route {
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
        _ => Err(elsewhere(&route)),
    }
}

/// For people and tools: the list, search and details API, and the pages.
async fn answer_web<S: Storage>(
    ctx: &Context<S>,
    route: Route,
    request: &Request<'_>,
    deadline: Instant,
) -> Result<Reply, Error> {
    let authorization = request.authorization;
    match &route {
        Route::Page(page) => web::page(ctx, page, request, deadline).await,
        Route::ModuleList(listing) | Route::ModuleSearch(listing) => {
            let viewer = ctx.verifier.lister(ctx.storage(), authorization).await?;
            modules::listing(ctx, listing, &viewer, deadline).await
        }
        Route::ModuleLatest(module) => {
            authorize(ctx, &route, None, authorization).await?;
            modules::details(ctx, module, None, || absent(&route), deadline).await
        }
        Route::ModuleDetails(module, version) => {
            authorize(ctx, &route, None, authorization).await?;
            modules::details(ctx, module, Some(version), || absent(&route), deadline).await
        }
        _ => Err(elsewhere(&route)),
    }
}

/// OCI Distribution: its own credentials (Basic or Bearer) and error bodies; `oci` checks
/// access itself.
async fn answer_oci<S: Storage>(
    ctx: &Context<S>,
    route: Route,
    request: &Request<'_>,
    deadline: Instant,
) -> Result<Reply, Error> {
    match &route {
        Route::Oci(route) => oci::answer(ctx, route, request, deadline).await,
        _ => Err(elsewhere(&route)),
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
