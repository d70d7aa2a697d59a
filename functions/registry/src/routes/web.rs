//! The web pages, for people in a browser: the catalog with search, a page per module and per
//! provider, sign-in and sign-out. The same reads as the API (`modules`, `browse`) and the same
//! access check: the viewer is the `Authorization` header's token or the sign-in cookie's
//! (`auth::session`), and a page of something out of scope is the same 404 as a page of
//! nothing. The HTML itself is `crate::web`'s.

use http::StatusCode;

use crate::address::ProviderAddress;
use crate::auth::{Resource, Viewer, session};
use crate::catalog::{ProviderCatalog, UpstreamCatalog};
use crate::context::Context;
use crate::error::Error;
use crate::exchange::{NO_CACHE, Reply, Request};
use crate::layout;
use crate::query::Listing;
use crate::router::{Asset, Route};
use crate::storage::Storage;
use crate::web::{CONTENT_SECURITY_POLICY, SCRIPT, STYLE, pages};

/// A page's answer: HTML with the security headers every page carries.
fn html_reply(status: StatusCode, page: String) -> Reply {
    secured(Reply { status, headers: vec![("content-type", "text/html; charset=utf-8".into())], body: page.into() })
        .header("cache-control", NO_CACHE)
}

fn secured(reply: Reply) -> Reply {
    reply
        .header("content-security-policy", CONTENT_SECURITY_POLICY)
        .header("x-content-type-options", "nosniff")
        .header("x-frame-options", "DENY")
        // Not `no-referrer`: under it a browser sends `Origin: null` with the forms' posts,
        // which the same-origin check must refuse. Other sites still learn nothing.
        .header("referrer-policy", "same-origin")
}

/// 303 See Other to the catalog (after a form post: reloading does not post again).
fn to_catalog() -> Reply {
    secured(Reply { status: StatusCode::SEE_OTHER, headers: vec![("location", "/".into())], body: Default::default() })
        .header("cache-control", "no-store")
}

fn asset(asset: Asset) -> Reply {
    let (content_type, body) = match asset {
        Asset::Style => ("text/css; charset=utf-8", STYLE),
        Asset::Script => ("text/javascript; charset=utf-8", SCRIPT),
    };
    secured(Reply { status: StatusCode::OK, headers: vec![("content-type", content_type.into())], body: body.into() })
        .header("cache-control", "public, max-age=3600")
        .etag()
}

/// Whether the browser holds a sign-in cookie (what the frame offers: sign in, or sign out).
fn signed_in(request: &Request<'_>) -> bool {
    session::token(request.cookie).is_some()
}

/// An error as a page, with the same status. A 401 to a browser holding a cookie means the
/// cookie's token is no longer good (revoked, expired): the cookie is removed.
pub(crate) fn error_page(error: &Error, request: &Request<'_>) -> Reply {
    let status = error.status();
    let unauthorized = matches!(error, Error::Unauthorized(_));
    let stale_cookie = unauthorized && request.authorization.is_none() && signed_in(request);
    let message = if stale_cookie {
        "This browser's sign-in is no longer valid (the token is unknown, revoked or expired): sign in again."
            .to_string()
    } else {
        error.public_message()
    };
    let page = pages::error(status.as_u16(), &message, unauthorized, signed_in(request) && !stale_cookie);
    let mut reply = html_reply(status, page);
    if stale_cookie {
        reply = reply.header("set-cookie", session::clear());
    }
    if status == StatusCode::SERVICE_UNAVAILABLE {
        reply = reply.header("retry-after", "1");
    }
    reply
}

/// For people and tools: the list, search and details API, and the pages.
pub(super) async fn answer<S: Storage>(
    ctx: &Context<S>,
    route: Route,
    request: &Request<'_>,
    deadline: tokio::time::Instant,
) -> Result<Reply, Error> {
    let authorization = request.authorization;
    let absent = || route.not_found();
    match &route {
        Route::ModuleList { listing } | Route::ModuleSearch { listing } => {
            let viewer = ctx.verifier.lister(ctx.storage(), authorization).await?;
            super::modules::listing(ctx, listing, &viewer, deadline).await
        }
        Route::ModuleLatest { module } => {
            let viewer = super::authorize(ctx, &route, authorization).await?;
            super::modules::details(ctx, module, None, &viewer, absent, deadline).await
        }
        Route::ModuleDetails { module, version } => {
            let viewer = super::authorize(ctx, &route, authorization).await?;
            super::modules::details(ctx, module, Some(version), &viewer, absent, deadline).await
        }
        _ => page(ctx, &route, request, deadline).await,
    }
}

/// A page: HTML, for the viewer of the `Authorization` header (tools), else of the sign-in
/// cookie (browsers).
async fn page<S: Storage>(
    ctx: &Context<S>,
    route: &Route,
    request: &Request<'_>,
    deadline: tokio::time::Instant,
) -> Result<Reply, Error> {
    let from_cookie = session::token(request.cookie).map(|t| format!("Bearer {t}"));
    let authorization = request.authorization.or(from_cookie.as_deref());
    let signed_in = signed_in(request);
    let absent = || route.not_found();
    match route {
        Route::PageAsset { asset: a } => Ok(asset(*a)),
        Route::SignIn {} => Ok(html_reply(StatusCode::OK, pages::sign_in(None, signed_in))),
        Route::SignInSubmit {} => sign_in(ctx, request).await,
        Route::SignOut {} => {
            session::same_origin(request.origin, request.host, ctx.config.hostname.as_deref())?;
            Ok(to_catalog().header("set-cookie", session::clear()))
        }
        Route::CatalogPage { listing } => catalog_page(ctx, listing, authorization, signed_in, deadline).await,
        Route::ModulePage { module } | Route::ModuleVersionPage { module, .. } => {
            let version = match route {
                Route::ModuleVersionPage { version, .. } => Some(version),
                _ => None,
            };
            let viewer = super::authorize(ctx, route, authorization).await?;
            let previous = super::modules::Compare::Previous;
            let counted = crate::usage::Counted::Module(module.clone());
            let (view, usage) = tokio::join!(
                super::modules::module_version(ctx, module, version, previous, absent, deadline),
                super::counts::read(ctx, &counted, deadline)
            );
            let view = view?;
            let place = place(ctx, request);
            let changes = view.changes();
            let resource = crate::auth::Resource::Module(module);
            let downloads = super::counts::shown(ctx, usage.as_deref(), &view.entry().version, &viewer, resource);
            let shown = pages::Shown {
                entry: view.entry(),
                manifest: &view.manifest,
                docs: view.docs.as_deref(),
                changes: changes.as_ref().map(|(v, c)| (*v, c.as_slice())),
                downloads: Some(&downloads),
            };
            let page = pages::module(&place.as_place(&ctx.config), module, &shown, signed_in);
            Ok(html_reply(StatusCode::OK, page).etag().stale(view.stale))
        }
        Route::UpgradePage { module, version, from } => {
            super::authorize(ctx, route, authorization).await?;
            let compare = super::modules::Compare::From(from);
            let view = super::modules::module_version(ctx, module, Some(version), compare, absent, deadline).await?;
            let changes = view.changes();
            let list = changes.as_ref().map(|(_, c)| c.as_slice());
            let page = crate::web::changes::upgrade(module, view.entry(), &from.to_string(), list, signed_in);
            Ok(html_reply(StatusCode::OK, page).etag().stale(view.stale))
        }
        Route::ProviderPage { provider } | Route::ProviderVersionPage { provider, .. } => {
            let version = match route {
                Route::ProviderVersionPage { version, .. } => Some(version),
                _ => None,
            };
            let viewer = super::authorize(ctx, route, authorization).await?;
            provider_page(ctx, provider, version, &viewer, absent, request, deadline).await
        }
        Route::UpstreamModulePage { module } => {
            super::authorize(ctx, route, authorization).await?;
            let key = crate::layout::upstream_module_pins(module);
            let parse = crate::upstream::module_records::ModulePins::parse;
            let read = ctx.reader.manifest(&key, parse, |_| false, super::not_found, deadline).await;
            let pins = super::optional(read)?.filter(|p| !p.value.pins.is_empty()).ok_or_else(absent)?;
            let host = place(ctx, request);
            let page = crate::web::upstream::module(&host.0, &ctx.config.paths.modules, module, &pins.value, signed_in);
            Ok(html_reply(StatusCode::OK, page).etag().stale(pins.stale))
        }
        _ => Err(super::elsewhere(route)),
    }
}

/// `GET /`: the catalog, or a search of it, as far as the viewer may see.
async fn catalog_page<S: Storage>(
    ctx: &Context<S>,
    listing: &Listing,
    authorization: Option<&str>,
    signed_in: bool,
    deadline: tokio::time::Instant,
) -> Result<Reply, Error> {
    let viewer = ctx.verifier.caller(ctx.storage(), authorization).await?;
    let (found, providers, upstream) = tokio::join!(
        super::catalog::modules(ctx, listing, &viewer, deadline),
        super::catalog::part::<ProviderCatalog, S>(ctx, layout::CATALOG_PROVIDERS, deadline),
        super::catalog::part::<UpstreamCatalog, S>(ctx, layout::CATALOG_UPSTREAM_MODULES, deadline),
    );
    let (found, (providers, providers_stale), (upstream, upstream_stale)) = (found?, providers?, upstream?);
    let stale = found.stale || providers_stale || upstream_stale;
    let policy = ctx.verifier.policy();
    let modules: Vec<_> = found.page.iter().map(|l| (&l.entry, l.downloads)).collect();
    let total = found.total;
    let terms: Vec<String> =
        listing.q.as_deref().map(|q| q.split_whitespace().map(str::to_lowercase).collect()).unwrap_or_default();
    let providers = super::catalog::providers(ctx, &providers, &viewer, listing.q.as_deref());
    let upstream: Vec<_> = upstream
        .modules
        .values()
        .filter(|m| m.module().is_some_and(|a| viewer.may_read(policy, Resource::UpstreamModule(&a))))
        .filter(|m| {
            let address = m.address().to_lowercase();
            terms.iter().all(|t| address.contains(t.as_str()))
        })
        .collect();
    let signed = matches!(viewer, Viewer::Token(_));
    let page = pages::catalog(listing, &modules, total, &providers, &upstream, signed || signed_in);
    Ok(html_reply(StatusCode::OK, page).etag().stale(stale))
}

/// `POST /ui/sign-in`: a good token becomes the cookie and the browser goes to the
/// catalog; a bad one gets the form again, with why (401).
async fn sign_in<S: Storage>(ctx: &Context<S>, request: &Request<'_>) -> Result<Reply, Error> {
    session::same_origin(request.origin, request.host, ctx.config.hostname.as_deref())?;
    let token = session::form_token(request.body)?;
    if !session::cookie_safe(&token) {
        let problem = format!(
            "That is not a token of this registry (tokens are letters, digits and - _ . ~ + / =, at most {} of them).",
            session::COOKIE_TOKEN_MAX_BYTES
        );
        return Ok(html_reply(StatusCode::BAD_REQUEST, pages::sign_in(Some(&problem), false)));
    }
    match ctx.verifier.caller(ctx.storage(), Some(&format!("Bearer {token}"))).await {
        Ok(Viewer::Token(_)) => Ok(to_catalog().header("set-cookie", session::keep(&token))),
        Ok(Viewer::Anonymous) | Err(Error::Unauthorized(_)) => {
            let problem = "This registry does not know that token, or it was revoked or has expired.";
            Ok(html_reply(StatusCode::UNAUTHORIZED, pages::sign_in(Some(problem), false)))
        }
        Err(e) => Err(e),
    }
}

/// A provider version's page (the latest when none is named): its `index.json` and the
/// version's document, at once when the version is named.
async fn provider_page<S: Storage>(
    ctx: &Context<S>,
    provider: &ProviderAddress,
    version: Option<&semver::Version>,
    viewer: &crate::auth::Viewer,
    absent: impl Fn() -> Error + Copy,
    request: &Request<'_>,
    deadline: tokio::time::Instant,
) -> Result<Reply, Error> {
    let counted = crate::usage::Counted::Provider(provider.clone());
    let (release, usage) = tokio::join!(
        super::providers::release(ctx, provider, version, absent, deadline),
        super::counts::read(ctx, &counted, deadline)
    );
    let release = release?;
    let versions = release.versions();
    let shown_text = release.version.clone();
    let stale = release.index.stale || release.document.stale;
    let own = ctx.config.hostname.as_deref().is_some_and(|h| h.eq_ignore_ascii_case(&provider.hostname));
    let place = place(ctx, request);
    let downloads =
        super::counts::shown(ctx, usage.as_deref(), &shown_text, viewer, crate::auth::Resource::Provider(provider));
    let shown = pages::Release {
        version: &shown_text,
        versions: &versions,
        document: &release.document.value,
        own_hostname: own,
        downloads: Some(&downloads),
    };
    let page = pages::provider(&place.as_place(&ctx.config), provider, &shown, signed_in(request));
    Ok(html_reply(StatusCode::OK, page).etag().stale(stale))
}

/// The host the snippets name (`super::public_host`), else a placeholder.
fn place<S>(ctx: &Context<S>, request: &Request<'_>) -> Host {
    Host(super::public_host(&ctx.config, request).unwrap_or_else(|| "REGISTRY_HOST".into()))
}

/// The host name the snippets use (see `place`).
struct Host(String);

impl Host {
    fn as_place<'a>(&'a self, config: &'a crate::config::Config) -> pages::Place<'a> {
        pages::Place { host: &self.0, mirror_path: &config.paths.mirror, modules_path: &config.paths.modules }
    }
}
