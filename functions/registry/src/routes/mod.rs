//! The answers, one file per protocol: `discovery` (`/.well-known/terraform.json`),
//! `modules` (modules.v1, with `module_pull_through` for upstream registries' modules, and the
//! reads behind the v1 list, search and details API), `mirror`
//! (the provider network mirror, with `pull_through` for upstream providers), `providers`
//! (providers.v1), `web` (the list, search and details API and the pages), `oci` (OCI
//! Distribution) and `mcp` (the MCP server for coding assistants). Each file's `answer` takes its service's routes (rows of the route
//! table, `router/table.rs`) to their handlers, which read through the shared [`Context`] and
//! ask the verifier the same way (`authorize`, from what the route's row says it reads). This
//! file keeps only what they all share.

mod catalog;
mod counts;
mod discovery;
mod mcp;
mod mirror;
mod module_pull_through;
mod modules;
mod oci;
mod providers;
#[cfg(feature = "aws")]
mod pull_through;
mod web;

pub(crate) use discovery::document as discovery_document;
pub(crate) use mcp::error_reply as mcp_error_reply;
pub(crate) use oci::error_reply as oci_error_reply;
pub(crate) use web::error_page;

use std::future::Future;
use std::pin::Pin;

use tokio::time::Instant;

use crate::auth::{Resource, Viewer};
use crate::context::Context;
use crate::error::Error;
use crate::exchange::{Reply, Request};
use crate::router::{Reads, Route, Service};
use crate::storage::Storage;
use crate::usage::Download;

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
        Function { service: Service::Discovery, answer: |c, r, q, d| Box::pin(discovery::answer(c, r, q, d)) }
    }

    /// modules.v1.
    pub fn modules() -> Self {
        Function { service: Service::Modules, answer: |c, r, q, d| Box::pin(modules::answer(c, r, q, d)) }
    }

    /// The provider network mirror (and its pull-through).
    pub fn mirror() -> Self {
        Function { service: Service::Mirror, answer: |c, r, q, d| Box::pin(mirror::answer(c, r, q, d)) }
    }

    /// providers.v1.
    pub fn providers() -> Self {
        Function { service: Service::Providers, answer: |c, r, q, d| Box::pin(providers::answer(c, r, q, d)) }
    }

    /// The module list, search and details API, and the web pages.
    pub fn web() -> Self {
        Function { service: Service::Web, answer: |c, r, q, d| Box::pin(web::answer(c, r, q, d)) }
    }

    /// OCI Distribution.
    pub fn oci() -> Self {
        Function { service: Service::Oci, answer: |c, r, q, d| Box::pin(oci::answer(c, r, q, d)) }
    }

    /// The MCP server for coding assistants.
    pub fn mcp() -> Self {
        Function { service: Service::Mcp, answer: |c, r, q, d| Box::pin(mcp::answer(c, r, q, d)) }
    }

    /// The function that serves `service`.
    pub fn of(service: Service) -> Self {
        match service {
            Service::Discovery => Function::discovery(),
            Service::Modules => Function::modules(),
            Service::Mirror => Function::mirror(),
            Service::Providers => Function::providers(),
            Service::Web => Function::web(),
            Service::Oci => Function::oci(),
            Service::Mcp => Function::mcp(),
        }
    }
}

/// Every route, each by its service's answer: the local registry's and the tests'.
pub fn every<'a, S: Storage>(
    ctx: &'a Context<S>,
    route: Route,
    request: &'a Request<'_>,
    deadline: Instant,
) -> Answering<'a> {
    (Function::of(route.service()).answer)(ctx, route, request, deadline)
}

/// A read where absence is an answer, not an error (the pull-throughs' kept documents).
pub(crate) fn optional<T>(
    read: Result<crate::reader::Fetched<T>, Error>,
) -> Result<Option<crate::reader::Fetched<T>>, Error> {
    match read {
        Ok(read) => Ok(Some(read)),
        Err(Error::NotFound(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The absence `optional` reads as `None`.
pub(crate) fn not_found() -> Error {
    Error::NotFound(String::new())
}

/// What a function answers for another's route: what API Gateway would get had it sent the
/// request to the wrong function.
pub(crate) fn elsewhere(route: &Route) -> Error {
    Error::NotFound(format!("this function does not serve {}", route.name()))
}

/// The one access check, for Lambdas and the local registry alike: what the route reads
/// (`Route::reads`, from its row of the route table) and the verifier's answer for it, as
/// `authorization` (a header, or a page's cookie) is allowed, and who asked (a route anyone
/// may read looks nobody up: anonymous). A providers.v1 provider's scope is its full address
/// at this registry's host, as for the mirror.
pub(crate) async fn authorize<S: Storage>(
    ctx: &Context<S>,
    route: &Route,
    authorization: Option<&str>,
) -> Result<Viewer, Error> {
    let own;
    let resource = match route.reads() {
        Reads::Anyone => return Ok(Viewer::Anonymous),
        Reads::Module(m) => Resource::Module(m),
        Reads::Provider(p) => Resource::Provider(p),
        Reads::UpstreamModule(m) => Resource::UpstreamModule(m),
        Reads::OwnProvider(name) => {
            own = providers::own(ctx, name)?;
            Resource::Provider(&own)
        }
        // A listing is filtered item by item (`Verifier::lister`), not allowed or refused
        // whole; OCI checks its own repositories (`oci::check`).
        Reads::Listed | Reads::Oci => return Err(route.not_found()),
    };
    ctx.verifier.check(ctx.storage(), authorization, resource, || route.not_found()).await
}

/// Count a download answered to `request`, on the process's sink (`usage`): a GET, since a
/// HEAD downloads nothing (an OCI tag's resolution counts whatever its method: `oci`).
/// Never fails and never waits.
pub(crate) fn count<S>(ctx: &Context<S>, request: &Request<'_>, download: Download) {
    if *request.method == http::Method::GET {
        ctx.usage.count(&download);
    }
}

/// A module download URL with the archive's SHA-256 for go-getter to check: it reads
/// `checksum=sha256:HEX` from the URL, removes it before the request (so the presigned
/// signature still matches) and refuses bytes that differ with "Checksums did not match". So
/// the CLI installs exactly the bytes the indexer hashed, even if the object is replaced or
/// altered in the bucket afterwards. Last in the query: go-getter finds it anywhere, and the
/// path's extension still tells it the archive type.
pub(crate) fn with_checksum(url: String, sha256: &str) -> Result<String, Error> {
    if sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return Err(Error::internal(format!("the manifest records no valid SHA-256 ({sha256:?})")));
    }
    let separator = if url.contains('?') { '&' } else { '?' };
    Ok(format!("{url}{separator}checksum=sha256:{sha256}"))
}
