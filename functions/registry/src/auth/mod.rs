//! Who is this caller, and may they read this: the one room for identity. The terraform CLI
//! sends `Authorization: Bearer TOKEN` (from a `credentials "HOST"` block or a `TF_TOKEN_HOST`
//! variable); a browser sends the sign-in cookie (`session`), which carries the same token.
//! A token is either the registry's own (`tokens`: hashes in `access/tokens.json`) or a JWT
//! from a configured OpenID Connect issuer (`oidc`). What it may read is its scopes plus the
//! anonymous policy (`scopes`). Every route asks [`Verifier`] the same way. Decisions (see
//! docs/SECURITY.md):
//! - discovery: always allowed (the CLI must discover before it can authenticate): its row of
//!   the route table reads `Anyone`, so it is never checked, as the sign-in form and assets;
//! - anonymous read configured for the namespace/provider: allowed without a token;
//! - no token, a token we do not know, or an expired one: 401 with `WWW-Authenticate: Bearer`;
//! - a valid token outside its scopes: 404, exactly as if the module or provider did not
//!   exist, so a token cannot probe which private modules exist elsewhere.

pub mod oidc;
pub mod scopes;
pub mod session;
pub mod tokens;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use scopes::{Decision, Policy, Resource, Viewer, decision, decision_for_header, glob};
pub use tokens::{
    BEARER_BYTES_MAX, TOKEN_PREFIX, TOKENS_FORMAT, TokenRecord, TokenStore, basic_password, bearer, hash, manage,
};

use crate::error::Error;
use crate::layout;
use crate::storage::Storage;

/// The OpenID Connect issuers whose JWTs a verifier judges, with their key sets: built once,
/// with the verifier, so a verifier is never without the keys its configuration names.
pub struct Issuers {
    /// The key sets; `None`: no issuer configured.
    #[cfg(feature = "aws")]
    keys: Option<Arc<oidc::keys::Keys>>,
    /// Whether issuers are configured in a build that cannot fetch their keys (the fuzz
    /// targets'): their JWTs are refused loudly, never read as unknown tokens.
    #[cfg(not(feature = "aws"))]
    configured: bool,
}

impl Issuers {
    /// The key sets of `issuers` (none configured: none), reading time from `clock`. Fails on a
    /// CA file (`REGISTRY_OIDC_CA_FILE`) that cannot be read.
    pub fn new(issuers: &[oidc::Issuer], ca_file: Option<&str>, clock: crate::clock::Monotonic) -> Result<Self, Error> {
        #[cfg(feature = "aws")]
        {
            let keys = match issuers.is_empty() {
                true => None,
                false => Some(Arc::new(oidc::keys::Keys::new(issuers, ca_file)?.with_clock(clock))),
            };
            Ok(Issuers { keys })
        }
        #[cfg(not(feature = "aws"))]
        {
            let _ = (ca_file, clock);
            Ok(Issuers { configured: !issuers.is_empty() })
        }
    }
}

/// Answers "who is this, and may they read that" for every route of a process. Holds what
/// a warm container keeps: the token store as last read, and the issuers' key sets.
pub struct Verifier {
    policy: Policy,
    /// How long a read of the token store is used before it is read again.
    tokens_cache: Duration,
    /// The token store as last read, and when.
    tokens: Mutex<Option<(Instant, Option<Arc<TokenStore>>)>>,
    /// The OpenID Connect issuers.
    issuers: Issuers,
}

impl Verifier {
    /// A verifier for static tokens, the anonymous `policy` and the configured `issuers`.
    pub fn new(policy: Policy, tokens_cache: Duration, issuers: Issuers) -> Self {
        Verifier { policy, tokens_cache, tokens: Mutex::new(None), issuers }
    }

    /// The anonymous policy, for answers that filter many items (`Viewer::may_read`).
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// May the caller presenting `authorization` read `resource`? Who it is, to answer (and
    /// count a download by, `usage`); 401 for no usable token; `hidden()` (the route's own
    /// "not found") for a valid token outside its scopes, so hidden and absent are one answer.
    pub async fn check<S: Storage>(
        &self,
        storage: &S,
        authorization: Option<&str>,
        resource: Resource<'_>,
        hidden: impl Fn() -> Error,
    ) -> Result<Viewer, Error> {
        let viewer = self.caller(storage, authorization).await?;
        match decision(&self.policy, &viewer, resource) {
            Decision::Allow => Ok(viewer),
            Decision::Unauthenticated(why) => Err(Error::Unauthorized(why.into())),
            Decision::Hidden => Err(hidden()),
        }
    }

    /// Who presents `authorization`, for an answer that lists many things: 401 for a header
    /// that is no usable token, and for no token where nothing may be read without one.
    pub async fn lister<S: Storage>(&self, storage: &S, authorization: Option<&str>) -> Result<Viewer, Error> {
        match self.caller(storage, authorization).await? {
            Viewer::Anonymous if self.policy.anonymous_modules.is_empty() => {
                Err(Error::Unauthorized("a bearer token is required".into()))
            }
            viewer => Ok(viewer),
        }
    }

    /// Who presents `authorization`: anonymous without one, 401 for one that is no usable token.
    /// A JWT naming a configured OpenID Connect issuer is that issuer's to judge (`oidc`);
    /// any other token is looked up in the token store. The store is read only for a
    /// well-formed token: garbage in `Authorization` costs no S3 request.
    pub async fn caller<S: Storage>(&self, storage: &S, authorization: Option<&str>) -> Result<Viewer, Error> {
        let Some(token) = authorization.and_then(bearer) else {
            return scopes::viewer(None, authorization, crate::clock::now_unix())
                .map_err(|why| Error::Unauthorized(why.into()));
        };
        if let Some(verified) = self.verify_jwt(token).await? {
            return verified.map(Viewer::Token).map_err(Error::Unauthorized);
        }
        let store = self.tokens(storage).await?;
        scopes::viewer(store.as_deref(), authorization, crate::clock::now_unix())
            .map_err(|why| Error::Unauthorized(why.into()))
    }

    /// A JWT's verdict, if it names a configured issuer (`None`: not ours to judge).
    async fn verify_jwt(&self, token: &str) -> Result<Option<Result<TokenRecord, String>>, Error> {
        #[cfg(feature = "aws")]
        return Ok(match &self.issuers.keys {
            Some(keys) => keys.verify(token).await,
            None => None,
        });
        #[cfg(not(feature = "aws"))]
        {
            let _ = token;
            match self.issuers.configured {
                true => Err(Error::internal("OpenID Connect issuers are configured but this build verifies no JWTs")),
                false => Ok(None),
            }
        }
    }

    /// The token store, read at most once per `tokens_cache` per container. An unreadable
    /// store fails closed (500); it never lets requests through. That includes S3's
    /// `AccessDenied`, which a function without `s3:ListBucket` also gets for a missing key:
    /// infra creates an empty store with the bucket, so denied means misconfigured here.
    async fn tokens<S: Storage>(&self, storage: &S) -> Result<Option<Arc<TokenStore>>, Error> {
        let lock = || self.tokens.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((at, store)) = lock().as_ref()
            && at.elapsed() < self.tokens_cache
        {
            return Ok(store.clone());
        }
        let read = storage.get(layout::TOKENS).await.map_err(|e| match e {
            Error::Forbidden(why) => Error::internal(format!("token store unreadable: {why}")),
            // Not served stale: a revoked token must not live on through an outage.
            Error::Corrupt(why) => Error::unavailable(why),
            other => other,
        })?;
        let store = match read {
            None => None,
            Some(o) => Some(Arc::new(TokenStore::parse(&o.bytes)?)),
        };
        *lock() = Some((Instant::now(), store.clone()));
        Ok(store)
    }
}
