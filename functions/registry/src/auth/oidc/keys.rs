//! The issuers' key sets, fetched over HTTPS and kept: the discovery document
//! (`ISSUER/.well-known/openid-configuration`), then its `jwks_uri`.
//!
//! - A key set is believed for `KEYS_TTL`, then fetched again.
//! - A token naming a `kid` the kept set lacks (the issuer rotated its keys) fetches it again
//!   at once, but no issuer is asked more than once per `REFRESH_MIN_INTERVAL`: tokens with
//!   made-up `kid`s cannot make the registry hammer the issuer, or wait on it each time.
//! - An issuer that cannot be reached fails its own tokens (401), never the static ones or
//!   another issuer's (each issuer has its own fetch lock). A key set older than `KEYS_TTL`
//!   is still used while its issuer cannot be reached, up to `KEYS_STALE_MAX`: an issuer's
//!   outage does not sign out every pipeline at once, and a key the issuer withdrew is not
//!   trusted for long after.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::clock::Monotonic;

use jsonwebtoken::jwk::JwkSet;
use url::Url;

use super::{Issuer, Refusal};
use crate::auth::tokens::TokenRecord;
use crate::error::Error;
use crate::http_client::{Got, HttpClient, shown};

/// How long a fetched key set is believed.
pub const KEYS_TTL: Duration = Duration::from_secs(600);
/// How long a key set is used at most while its issuer cannot be reached.
pub const KEYS_STALE_MAX: Duration = Duration::from_secs(3600);
/// The least time between two fetches of one issuer's keys.
pub const REFRESH_MIN_INTERVAL: Duration = Duration::from_secs(30);
/// Longest wait for each step of a fetch (connecting and an answer; a body).
const STEP_TIMEOUT: Duration = Duration::from_secs(2);
/// Longest a whole fetch (discovery document, then key set) may take: a request that fetches
/// still has most of `REQUEST_BUDGET` left for its manifest.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(4);
/// Largest discovery document or key set read.
const DOCUMENT_BYTES_MAX: usize = 256 * 1024;

/// What is known of one issuer's keys.
#[derive(Default)]
struct Known {
    /// The key set last fetched, and when.
    keys: Option<(Arc<JwkSet>, Instant)>,
    /// When a fetch last started (successful or not).
    attempted: Option<Instant>,
    /// Why the last fetch failed, if it did.
    failure: Option<String>,
}

struct IssuerKeys {
    issuer: Issuer,
    known: Mutex<Known>,
    /// Held while fetching: one fetch per issuer at a time; others wait and use its result.
    fetching: tokio::sync::Mutex<()>,
}

/// The configured issuers and what is known of their keys (one per container).
pub struct Keys {
    issuers: HashMap<String, IssuerKeys>,
    http: HttpClient,
    clock: Monotonic,
}

impl Keys {
    /// The `issuers`, reached with the system's roots plus `ca_file` (PEM, from
    /// `REGISTRY_OIDC_CA_FILE`).
    pub fn new(issuers: &[Issuer], ca_file: Option<&str>) -> Result<Self, Error> {
        let http = HttpClient::new(ca_file, "REGISTRY_OIDC_CA_FILE", STEP_TIMEOUT)?;
        let issuers = issuers
            .iter()
            .map(|i| {
                let keys = IssuerKeys { issuer: i.clone(), known: Default::default(), fetching: Default::default() };
                (i.issuer.clone(), keys)
            })
            .collect();
        Ok(Keys { issuers, http, clock: Monotonic::real() })
    }

    /// The same, reading time from `clock` (tests move a manual one instead of sleeping).
    pub fn with_clock(mut self, clock: Monotonic) -> Self {
        self.clock = clock;
        self
    }

    /// Verify a token that names a configured issuer in `iss`. `None`: it names none (or is no
    /// JWT), so it is not this module's to judge: the caller looks it up as a static token.
    /// `Some(Err(why))`: refused (401).
    pub async fn verify(&self, token: &str) -> Option<Result<TokenRecord, String>> {
        let iss = super::unverified_issuer(token)?;
        let issuer = self.issuers.get(&iss)?;
        Some(self.verify_with(token, issuer).await)
    }

    async fn verify_with(&self, token: &str, issuer: &IssuerKeys) -> Result<TokenRecord, String> {
        let keys = self.key_set(issuer, None).await?;
        match super::verify(token, &issuer.issuer, &keys) {
            Ok(record) => Ok(record),
            Err(Refusal::Invalid(why)) => Err(why),
            Err(Refusal::UnknownKey { .. }) => {
                let keys = self.key_set(issuer, Some(&keys)).await?;
                match super::verify(token, &issuer.issuer, &keys) {
                    Ok(record) => Ok(record),
                    Err(Refusal::Invalid(why)) => Err(why),
                    Err(Refusal::UnknownKey { kid, .. }) => Err(format!("unknown key {kid} (issuer {})", iss(issuer))),
                }
            }
        }
    }

    /// The issuer's key set: the kept one while fresh, unless `lacking` (the set a token's
    /// `kid` was not found in) is still what is kept; else fetched, within the bounds above.
    async fn key_set(&self, issuer: &IssuerKeys, lacking: Option<&Arc<JwkSet>>) -> Result<Arc<JwkSet>, String> {
        let clock = &self.clock;
        let usable = |known: &Known| -> Option<Arc<JwkSet>> {
            let (keys, fetched) = known.keys.as_ref()?;
            let replaced = lacking.is_some_and(|l| !Arc::ptr_eq(l, keys));
            (clock.since(*fetched) < KEYS_TTL && (lacking.is_none() || replaced)).then(|| keys.clone())
        };
        if let Some(keys) = usable(&issuer.lock()) {
            return Ok(keys);
        }
        let _fetching = issuer.fetching.lock().await;
        {
            // Another request may have fetched while this one waited.
            let known = issuer.lock();
            if let Some(keys) = usable(&known) {
                return Ok(keys);
            }
            if known.attempted.is_some_and(|at| clock.since(at) < REFRESH_MIN_INTERVAL) {
                return self.fallback(issuer, &known);
            }
        }
        issuer.lock().attempted = Some(clock.now());
        let fetched = tokio::time::timeout(FETCH_TIMEOUT, self.fetch(&issuer.issuer))
            .await
            .unwrap_or_else(|_| Err(format!("no key set within {FETCH_TIMEOUT:?}")));
        let mut known = issuer.lock();
        match fetched {
            Ok(keys) => {
                let keys = Arc::new(keys);
                known.keys = Some((keys.clone(), clock.now()));
                known.failure = None;
                Ok(keys)
            }
            Err(why) => {
                tracing::warn!(issuer = %issuer.issuer.issuer, "OIDC key set not fetched: {why}");
                known.failure = Some(why);
                self.fallback(issuer, &known)
            }
        }
    }

    /// Without a fetch: the kept key set while not older than `KEYS_STALE_MAX`, else why not.
    fn fallback(&self, issuer: &IssuerKeys, known: &Known) -> Result<Arc<JwkSet>, String> {
        match (&known.keys, &known.failure) {
            (Some((keys, fetched)), _) if self.clock.since(*fetched) < KEYS_STALE_MAX => Ok(keys.clone()),
            (_, Some(why)) => Err(format!("the keys of issuer {} cannot be fetched: {why}", iss(issuer))),
            (_, None) => Err(format!("the keys of issuer {} were fetched moments ago", iss(issuer))),
        }
    }

    async fn fetch(&self, issuer: &Issuer) -> Result<JwkSet, String> {
        let base = issuer.issuer.trim_end_matches('/');
        let discovery = Url::parse(&format!("{base}/.well-known/openid-configuration"))
            .map_err(|e| format!("discovery URL: {e}"))?;
        let Got::Found(_, body) = self.http.get(discovery.clone(), DOCUMENT_BYTES_MAX, true).await? else {
            return Err(format!("{} answered 404", shown(&discovery)));
        };
        #[derive(serde::Deserialize)]
        struct Discovery {
            issuer: String,
            jwks_uri: String,
        }
        let doc: Discovery = serde_json::from_slice(&body).map_err(|e| format!("discovery document: {e}"))?;
        // OpenID Connect Discovery 1.0, section 4.3: the document must name the issuer asked.
        if doc.issuer != issuer.issuer {
            return Err(format!("the discovery document names issuer {:?}", doc.issuer));
        }
        let jwks_uri = Url::parse(&doc.jwks_uri).map_err(|e| format!("jwks_uri: {e}"))?;
        let Got::Found(_, body) = self.http.get(jwks_uri.clone(), DOCUMENT_BYTES_MAX, true).await? else {
            return Err(format!("{} answered 404", shown(&jwks_uri)));
        };
        serde_json::from_slice(&body).map_err(|e| format!("key set at {}: {e}", shown(&jwks_uri)))
    }
}

impl IssuerKeys {
    fn lock(&self) -> std::sync::MutexGuard<'_, Known> {
        self.known.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn iss(issuer: &IssuerKeys) -> &str {
    &issuer.issuer.issuer
}
