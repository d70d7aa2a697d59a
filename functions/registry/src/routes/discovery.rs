//! `/.well-known/terraform.json`: where this host's services live. Answered from
//! configuration alone (the discovery function has no storage).

use http::StatusCode;
use serde_json::{Value, json};

use tokio::time::Instant;

use crate::config::Config;
use crate::context::Context;
use crate::error::Error;
use crate::exchange::{Reply, Request};
use crate::router::Route;

/// The discovery function's one route. The same for every caller of a deployment: any cache
/// may keep it a while.
pub(super) async fn answer<S>(ctx: &Context<S>, route: Route, _: &Request<'_>, _: Instant) -> Result<Reply, Error> {
    match route {
        Route::Discovery {} => Ok(Reply::json(StatusCode::OK, &document(&ctx.config))
            .header("cache-control", "public, max-age=300")
            .etag()),
        _ => Err(super::elsewhere(&route)),
    }
}

/// The discovery document: only services this registry implements. The network mirror is
/// configured by URL, not discovered, so it is not announced; providers.v1 is, once the
/// registry knows its own host name (`REGISTRY_HOSTNAME`).
pub(crate) fn document(config: &Config) -> Value {
    let mut services = json!({ "modules.v1": config.paths.modules });
    if config.hostname.is_some() {
        services["providers.v1"] = json!(config.paths.providers);
    }
    // `terraform login`: the CLI runs the authorization code grant (with PKCE) against
    // the issuer itself, and sends the access token it gets as its bearer token.
    if let Some(login) = config.oidc_issuers.iter().find_map(|i| i.login.as_ref()) {
        let mut client = json!({
            "client": login.client,
            "grant_types": ["authz_code"],
            "authz": login.authz,
            "token": login.token,
            "ports": login.ports,
        });
        if !login.scopes.is_empty() {
            client["scopes"] = json!(login.scopes);
        }
        services["login.v1"] = client;
    }
    services
}
