//! The MCP server (`mcp`): `POST /mcp`, one JSON-RPC message per request, answered statelessly
//! from what the catalog and the docs already hold, as the caller's token may see it; and
//! `GET /.well-known/oauth-protected-resource/mcp`, the protected resource metadata (RFC 9728)
//! that tells an MCP client where to sign in, when an OpenID Connect issuer has a login client.
//!
//! Every call is checked as a list is: no token where nothing is anonymous is 401 (once the
//! message is read, before any method is answered), and each tool sees only the modules and
//! providers the caller may read, with the same answer for a hidden one as for an absent one.

use http::StatusCode;
use serde_json::{Value, json};

use crate::address::ModuleAddress;
use crate::auth::{Resource, Viewer};
use crate::catalog::ProviderCatalog;
use crate::context::Context;
use crate::error::Error;
use crate::exchange::{Reply, Request};
use crate::mcp::answers::{self, Answer};
use crate::mcp::tools::{self, Call};
use crate::mcp::{self, Incoming, RpcError, code};
use crate::query::Listing;
use crate::router::Route;
use crate::storage::Storage;

/// The MCP function's routes.
pub(super) async fn answer<S: Storage>(
    ctx: &Context<S>,
    route: Route,
    request: &Request<'_>,
    deadline: tokio::time::Instant,
) -> Result<Reply, Error> {
    match route {
        Route::Mcp {} => post(ctx, request, deadline).await,
        Route::McpResourceMetadata {} => {
            let document = resource_metadata(&ctx.config, request).ok_or_else(|| route.not_found())?;
            Ok(Reply::json(StatusCode::OK, &document).header("cache-control", "public, max-age=300"))
        }
        _ => Err(super::elsewhere(&route)),
    }
}

/// The protected resource metadata: this endpoint as the resource, the OpenID Connect issuers
/// that have a login client as its authorization servers. None without such an issuer: the
/// spec requires at least one, and an MCP client told of none would try OAuth against nothing
/// rather than send the token it was configured with.
pub(crate) fn resource_metadata(config: &crate::config::Config, request: &Request<'_>) -> Option<Value> {
    let servers: Vec<&str> =
        config.oidc_issuers.iter().filter(|i| i.login.is_some()).map(|i| i.issuer.as_str()).collect();
    let host = super::public_host(config, request)?;
    (!servers.is_empty()).then(|| {
        json!({
            "resource": format!("https://{host}{}", mcp::PATH),
            "authorization_servers": servers,
            "bearer_methods_supported": ["header"],
            "resource_name": "Private Terraform registry (MCP)",
        })
    })
}

/// The URL of `resource_metadata`, for a 401's `WWW-Authenticate`, when there is one.
pub(crate) fn resource_metadata_url(config: &crate::config::Config, request: &Request<'_>) -> Option<String> {
    resource_metadata(config, request)?;
    let host = super::public_host(config, request)?;
    Some(format!("https://{host}{}{}", mcp::RESOURCE_METADATA_PATH, mcp::PATH))
}

/// An error on the MCP endpoint that no JSON-RPC response answers (401, 403, 400, 405, 503):
/// its status, a JSON-RPC error body without an id, never cached, and on 401 the challenge,
/// naming the resource metadata when there is one.
pub(crate) fn error_reply(error: &Error, request: &Request<'_>, config: &crate::config::Config) -> Reply {
    let message = match error {
        Error::MethodNotAllowed => "the MCP endpoint takes POST only: one JSON-RPC message per request".to_string(),
        _ => error.public_message(),
    };
    let rpc = RpcError::new(code::INVALID_REQUEST, message);
    let reply = Reply::json(error.status(), &rpc.body()).header("cache-control", "no-store");
    match error {
        Error::Unauthorized(_) => {
            let challenge = match resource_metadata_url(config, request) {
                Some(url) => format!(r#"Bearer realm="terraform-registry", resource_metadata="{url}""#),
                None => r#"Bearer realm="terraform-registry""#.to_string(),
            };
            reply.header("www-authenticate", challenge)
        }
        Error::MethodNotAllowed => reply.header("allow", "POST"),
        _ if error.status() == StatusCode::SERVICE_UNAVAILABLE => reply.header("retry-after", "1"),
        _ => reply,
    }
}

/// `POST /mcp`: the headers the transport requires, the message (a body that is no message is
/// refused before anything is read from storage), the caller (401 before any method is
/// answered, `initialize` included, so a client learns to sign in first), then the method.
async fn post<S: Storage>(
    ctx: &Context<S>,
    request: &Request<'_>,
    deadline: tokio::time::Instant,
) -> Result<Reply, Error> {
    if let Some(origin) = request.origin {
        // The transport's rule against DNS rebinding: a browser's request from another site
        // is refused. Clients outside a browser send no Origin. With the registry's own host
        // name configured, only it counts: a rebound name's `Host` is the attacker's.
        let host = ctx.config.hostname.as_deref().or(request.host);
        crate::auth::session::same_origin(Some(origin), host, None)
            .map_err(|_| Error::CrossSite("the MCP endpoint takes requests from this registry's origin only".into()))?;
    }
    if !mcp::speaks(request.mcp_protocol_version) {
        return Err(Error::BadRequest(format!(
            "MCP-Protocol-Version {:?} is not one this server speaks ({})",
            crate::address::printable(request.mcp_protocol_version.unwrap_or_default()),
            mcp::PROTOCOL_VERSIONS.join(", ")
        )));
    }
    let message = match mcp::read(request.body) {
        Ok(message) => message,
        Err(e) => return Ok(rpc_reply(StatusCode::BAD_REQUEST, &e.body())),
    };
    let viewer = ctx.verifier.lister(ctx.storage(), request.authorization).await?;
    let (id, method, params) = match message {
        Incoming::Request { id, method, params } => (id, method, params),
        Incoming::Notification | Incoming::Response => {
            return Ok(Reply { status: StatusCode::ACCEPTED, headers: Vec::new(), body: Default::default() });
        }
    };
    let answered = match method.as_str() {
        "initialize" => Ok(mcp::initialized(&params)),
        "ping" => Ok(json!({})),
        "tools/list" => Ok(tools::list()),
        "tools/call" => call(ctx, &viewer, request, &params, deadline).await,
        // `server/discover` (the 2026-07-28 revision's probe) among them: a client falls back
        // to `initialize` on this error.
        other => Err(RpcError::new(
            code::METHOD_NOT_FOUND,
            format!("method not found: {}", crate::address::printable(other)),
        )),
    };
    let body = match answered {
        Ok(result) => mcp::result(&id, result),
        Err(e) => e.to(&id).body(),
    };
    Ok(rpc_reply(StatusCode::OK, &body))
}

fn rpc_reply(status: StatusCode, body: &Value) -> Reply {
    Reply::json(status, body).header("cache-control", "no-store")
}

/// `tools/call`: an unknown tool or params that are no call are protocol errors; arguments a
/// tool refuses, and a module or provider the caller cannot see, are the tool's (`isError`),
/// so the assistant reads why; a storage fault is an internal error it may retry.
async fn call<S: Storage>(
    ctx: &Context<S>,
    viewer: &Viewer,
    request: &Request<'_>,
    params: &Value,
    deadline: tokio::time::Instant,
) -> Result<Value, RpcError> {
    let name = params.get("name").and_then(Value::as_str).unwrap_or_default();
    if !tools::known(name) {
        let name = crate::address::printable(name);
        return Err(RpcError::new(code::INVALID_PARAMS, format!("unknown tool: {name:?}")));
    }
    let call = match Call::read(name, params.get("arguments").unwrap_or(&Value::Null)) {
        Ok(call) => call,
        Err(refused) => return Ok(answers::failed(&refused.0)),
    };
    let host = super::public_host(&ctx.config, request).unwrap_or_else(|| "REGISTRY_HOST".into());
    match run(ctx, viewer, &host, call, deadline).await {
        Ok(answer) => Ok(answer.result()),
        Err(Error::NotFound(message) | Error::BadRequest(message)) => Ok(answers::failed(&message)),
        Err(e) => {
            tracing::warn!(tool = name, error = %crate::error::chain(&e), "MCP tool failed");
            Err(RpcError::new(code::INTERNAL_ERROR, e.public_message()))
        }
    }
}

/// One tool's reads, as the caller may see them: a module or provider it may not read is
/// "not found", the very answer for one that does not exist.
async fn run<S: Storage>(
    ctx: &Context<S>,
    viewer: &Viewer,
    host: &str,
    call: Call,
    deadline: tokio::time::Instant,
) -> Result<Answer, Error> {
    let policy = ctx.verifier.policy();
    let hidden = |m: &ModuleAddress| !viewer.may_read(policy, Resource::Module(m));
    let absent = |m: &ModuleAddress| Error::NotFound(format!("module {m} not found"));
    let previous = super::modules::Compare::Previous;
    match call {
        Call::SearchModules { query, namespace, system, limit, offset } => {
            let listing = Listing { q: query, namespace, provider: system, offset, limit, by_downloads: false };
            let found = super::catalog::modules(ctx, &listing, viewer, deadline).await?;
            let page: Vec<_> = found.page.iter().map(|l| (&l.entry, l.downloads)).collect();
            Ok(answers::modules_found(host, found.total, offset, &page))
        }
        Call::ModuleDetails { module, .. }
        | Call::ModuleUsage { module, .. }
        | Call::ModuleVersions { module }
        | Call::CompareVersions { module, .. }
            if hidden(&module) =>
        {
            Err(absent(&module))
        }
        Call::ModuleDetails { module, version } => {
            let view =
                super::modules::module_version(ctx, &module, version.as_ref(), previous, || absent(&module), deadline)
                    .await?;
            Ok(answers::module_details(host, &module, view.entry(), &view.manifest, view.docs.as_deref()))
        }
        Call::ModuleUsage { module, version } => {
            let view =
                super::modules::module_version(ctx, &module, version.as_ref(), previous, || absent(&module), deadline)
                    .await?;
            Ok(answers::module_usage(host, &module, view.entry(), view.docs.as_deref()))
        }
        Call::ModuleVersions { module } => {
            let manifest = super::modules::manifest(ctx, &module, || absent(&module), deadline).await?;
            Ok(answers::module_versions(&module, &manifest.value))
        }
        Call::CompareVersions { module, from, to } => {
            let compare = super::modules::Compare::From(&from);
            let view =
                super::modules::module_version(ctx, &module, Some(&to), compare, || absent(&module), deadline).await?;
            Ok(answers::comparison(&module, &from.to_string(), view.entry(), view.comparison()))
        }
        Call::SearchProviders { query, limit } => {
            let (catalog, _) =
                super::catalog::part::<ProviderCatalog, S>(ctx, crate::layout::CATALOG_PROVIDERS, deadline).await?;
            let found = super::catalog::providers(ctx, &catalog, viewer, query.as_deref());
            let shown: Vec<_> = found.iter().take(limit).copied().collect();
            Ok(answers::providers_found(&shown, found.len()))
        }
        Call::ProviderDetails { provider, version } => {
            let absent = || Error::NotFound(format!("provider {provider} not found"));
            if !viewer.may_read(policy, Resource::Provider(&provider)) {
                return Err(absent());
            }
            let release = super::providers::release(ctx, &provider, version.as_ref(), absent, deadline).await?;
            let versions = release.versions();
            Ok(answers::provider_details(&provider, &release.version, &versions, &release.document.value))
        }
    }
}
