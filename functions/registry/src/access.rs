//! Who may read what. The terraform CLI sends `Authorization: Bearer TOKEN` (from a
//! `credentials "HOST"` block or a `TF_TOKEN_HOST` variable) to discovery, module and mirror endpoints;
//! this module decides, for one request, whether that token (or no token) may read the module
//! namespace or mirrored provider the request names.
//!
//! Tokens are stored only as SHA-256 hashes, in one bucket object (`access/tokens.json`) that
//! the read functions may read. A presented token is hashed and compared with every stored
//! hash in constant time. Decisions (see docs/SECURITY.md):
//! - discovery: always allowed (the CLI must discover before it can authenticate);
//! - anonymous read configured for the namespace/provider: allowed without a token;
//! - no token, a token we do not know, or an expired one: 401 with `WWW-Authenticate: Bearer`;
//! - a valid token outside its scopes: 404, exactly as if the module or provider did not
//!   exist, so a token cannot probe which private modules exist elsewhere.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::address::{ModuleAddress, ProviderAddress};
use crate::error::Error;

/// The `format` of `access/tokens.json` this code reads and writes.
pub const TOKENS_FORMAT: u32 = 1;
/// Prefix of every token this registry issues (recognisable in leaked-secret scanners).
pub const TOKEN_PREFIX: &str = "trg_";
/// Longest bearer token read: room for an OpenID Connect JWT with a groups claim (`oidc`);
/// the registry's own tokens are 68 characters.
pub const BEARER_BYTES_MAX: usize = 8192;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
/// `access/tokens.json`: every token, as a hash with its scopes.
pub struct TokenStore {
    /// `TOKENS_FORMAT`; anything else is refused (fail closed).
    pub format: u32,
    /// The tokens, each with a unique name.
    pub tokens: Vec<TokenRecord>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
/// One token: its hash, when it was made, when it expires, and what it may read.
pub struct TokenRecord {
    /// Unique, for listing and revoking.
    pub name: String,
    /// Hex SHA-256 of the token; the token itself is never stored.
    pub sha256: String,
    /// When it was created (`2026-11-22T21:40:00Z`).
    pub created_at: String,
    /// RFC 3339 UTC (`2027-01-31T00:00:00Z`); `None`: never expires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// Module namespaces it may read, as globs (`acme`, `team-*`, `*`).
    #[serde(default)]
    pub modules: Vec<String>,
    /// Mirrored providers it may read, as `HOSTNAME/NAMESPACE/TYPE` globs
    /// (`registry.terraform.io/hashicorp/*`).
    #[serde(default)]
    pub providers: Vec<String>,
}

/// Who may read without a token; from `REGISTRY_ANONYMOUS_MODULES` and
/// `REGISTRY_ANONYMOUS_PROVIDERS` (comma-separated globs; empty: nobody).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// Module namespaces anyone may read (globs).
    pub anonymous_modules: Vec<String>,
    /// Providers anyone may read (`HOSTNAME/NAMESPACE/TYPE` globs).
    pub anonymous_providers: Vec<String>,
}

/// What a request reads.
#[derive(Debug, Clone, Copy)]
pub enum Resource<'a> {
    /// The service discovery document: public.
    Discovery,
    /// A module's versions or download.
    Module(&'a ModuleAddress),
    /// A mirrored provider's versions or packages.
    Provider(&'a ProviderAddress),
}

#[derive(Debug, Clone, PartialEq, Eq)]
/// What one request may do.
pub enum Decision {
    /// Answer it.
    Allow,
    /// No usable token: 401.
    Unauthenticated(&'static str),
    /// A valid token that may not read this: 404, indistinguishable from "does not exist".
    Hidden,
}

impl TokenStore {
    /// Read the store; a bad or unknown format is an error (fail closed).
    pub fn parse(bytes: &[u8]) -> Result<Self, Error> {
        let mut store: TokenStore =
            serde_json::from_slice(bytes).map_err(|e| Error::Internal(format!("access/tokens.json: {e}")))?;
        // `find` compares lower-case hex; a hand-edited store may hold upper case.
        for record in &mut store.tokens {
            record.sha256.make_ascii_lowercase();
        }
        if store.format != TOKENS_FORMAT {
            return Err(Error::Internal(format!("access/tokens.json format {} is not {TOKENS_FORMAT}", store.format)));
        }
        Ok(store)
    }

    /// The record whose hash matches `token`. Every record is compared, in constant time, so
    /// the answer's timing says nothing about how close a guess was.
    pub fn find(&self, token: &str) -> Option<&TokenRecord> {
        // Compared as the lower-case hex the store holds: no decoding per record.
        let presented = hex::encode(hash(token));
        let mut found = None;
        for record in &self.tokens {
            if constant_time_eq(record.sha256.as_bytes(), presented.as_bytes()) {
                found = Some(record);
            }
        }
        found
    }
}

impl Policy {
    /// Whether `resource` may be read without a token.
    pub fn anonymous(&self, resource: Resource<'_>) -> bool {
        match resource {
            Resource::Discovery => true,
            Resource::Module(m) => self.anonymous_modules.iter().any(|g| glob(g, &m.namespace)),
            Resource::Provider(p) => self.anonymous_providers.iter().any(|g| glob(g, &p.to_string())),
        }
    }
}

impl TokenRecord {
    /// Whether this token's scopes cover `resource`.
    pub fn may_read(&self, resource: Resource<'_>) -> bool {
        match resource {
            Resource::Discovery => true,
            Resource::Module(m) => self.modules.iter().any(|g| glob(g, &m.namespace)),
            Resource::Provider(p) => self.providers.iter().any(|g| glob(g, &p.to_string())),
        }
    }

    /// Whether the token has expired at `now_unix` (an unreadable expiry counts as expired).
    pub fn expired(&self, now_unix: i64) -> bool {
        match &self.expires_at {
            None => false,
            // An unreadable expiry is treated as expired: fail closed.
            Some(at) => crate::clock::parse_rfc3339(at).is_none_or(|at| at <= now_unix),
        }
    }
}

/// Who is asking: what an answer that lists many things (the catalog, a search) filters
/// each item by, with the same rules as `decide` for one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Viewer {
    /// No token: what the anonymous policy allows.
    Anonymous,
    /// A valid, unexpired token: its scopes, and what the anonymous policy allows.
    Token(TokenRecord),
}

impl Viewer {
    /// Whether this viewer may read `resource` under `policy`.
    pub fn may_read(&self, policy: &Policy, resource: Resource<'_>) -> bool {
        let token = match self {
            Viewer::Anonymous => false,
            Viewer::Token(record) => record.may_read(resource),
        };
        token || policy.anonymous(resource)
    }
}

/// Why a header that holds no bearer token is refused.
const NOT_BEARER: &str =
    "the Authorization header must be \"Bearer TOKEN\", a token of at most 8192 printable characters";

/// Who presents `authorization`: `Err` (why) for a header that is not a usable token (401).
/// `store` is `None` when no token store exists yet (nobody has a token).
pub fn viewer(store: Option<&TokenStore>, authorization: Option<&str>, now_unix: i64) -> Result<Viewer, &'static str> {
    let Some(header) = authorization else { return Ok(Viewer::Anonymous) };
    let Some(token) = bearer(header) else {
        return Err(NOT_BEARER);
    };
    let Some(record) = store.and_then(|s| s.find(token)) else {
        return Err("unknown or revoked token");
    };
    if record.expired(now_unix) {
        return Err("expired token");
    }
    Ok(Viewer::Token(record.clone()))
}

/// Decide one request. `store` is `None` when no token store exists yet (nobody has a token).
pub fn decide(
    policy: &Policy,
    store: Option<&TokenStore>,
    authorization: Option<&str>,
    resource: Resource<'_>,
    now_unix: i64,
) -> Decision {
    if matches!(resource, Resource::Discovery) {
        return Decision::Allow;
    }
    match viewer(store, authorization, now_unix) {
        Err(why) => Decision::Unauthenticated(why),
        Ok(viewer) => judge(policy, &viewer, resource),
    }
}

/// Decide for a viewer already known (a static token found in the store, or a verified JWT):
/// what `decide` does once the token is resolved.
pub fn judge(policy: &Policy, viewer: &Viewer, resource: Resource<'_>) -> Decision {
    match viewer {
        _ if matches!(resource, Resource::Discovery) => Decision::Allow,
        viewer if viewer.may_read(policy, resource) => Decision::Allow,
        Viewer::Anonymous => Decision::Unauthenticated("a bearer token is required"),
        Viewer::Token(_) => Decision::Hidden,
    }
}

/// The token of a `Bearer` authorization header (scheme case-insensitive, RFC 6750).
pub fn bearer(header: &str) -> Option<&str> {
    let (scheme, token) = header.trim().split_once(' ')?;
    let token = token.trim();
    let ok = scheme.eq_ignore_ascii_case("bearer")
        && !token.is_empty()
        && token.len() <= BEARER_BYTES_MAX
        && token.bytes().all(|b| b.is_ascii_graphic());
    ok.then_some(token)
}

/// The SHA-256 of a token, as the store keeps it.
pub fn hash(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// `*` matches any run of characters (including `/`), `?` one character; everything else
/// matches itself.
pub fn glob(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

/// Managing the store: every change is a conditional write of the whole object, retried when
/// another change got there first, so concurrent token commands never lose a token.
pub mod manage {
    use std::time::Duration;

    use super::*;
    use crate::layout;
    use crate::retry::{self, Backoff};
    use crate::storage::{Precondition, Storage};

    /// Every token record (names, dates, scopes; never a secret).
    pub async fn list<S: Storage>(storage: &S) -> Result<Vec<TokenRecord>, Error> {
        Ok(read(storage).await?.0.tokens)
    }

    /// Add `record`, replacing any token with the same name.
    pub async fn upsert<S: Storage>(storage: &S, record: TokenRecord) -> Result<(), Error> {
        change(storage, |store| {
            store.tokens.retain(|t| t.name != record.name);
            store.tokens.push(record.clone());
            true
        })
        .await
        .map(|_| ())
    }

    /// Remove the token named `name`; `false` if there was none.
    pub async fn revoke<S: Storage>(storage: &S, name: &str) -> Result<bool, Error> {
        change(storage, |store| {
            let before = store.tokens.len();
            store.tokens.retain(|t| t.name != name);
            store.tokens.len() != before
        })
        .await
    }

    /// A new record for `token` (which the caller generated and shows once).
    pub fn record(
        name: &str,
        token: &str,
        modules: Vec<String>,
        providers: Vec<String>,
        expires_at: Option<String>,
    ) -> TokenRecord {
        TokenRecord {
            name: name.into(),
            sha256: hex::encode(hash(token)),
            created_at: crate::clock::rfc3339_now(),
            expires_at,
            modules,
            providers,
        }
    }

    async fn read<S: Storage>(storage: &S) -> Result<(TokenStore, Option<String>), Error> {
        match storage.get(layout::TOKENS).await? {
            None => Ok((TokenStore { format: TOKENS_FORMAT, tokens: vec![] }, None)),
            Some(o) => Ok((TokenStore::parse(&o.bytes)?, Some(o.etag))),
        }
    }

    /// How a change that loses a race to another token command is retried.
    const CHANGE_RETRY: Backoff =
        Backoff { attempts: 10, first: Duration::from_millis(20), max: Duration::from_millis(500) };

    async fn change<S: Storage>(storage: &S, apply: impl Fn(&mut TokenStore) -> bool) -> Result<bool, Error> {
        retry::on_conflict(CHANGE_RETRY, layout::TOKENS, |_| async {
            let (mut store, etag) = read(storage).await?;
            if !apply(&mut store) {
                return Ok(false);
            }
            let body = crate::manifest::to_json(&store)?;
            let precondition = Precondition::replacing(etag.as_deref());
            storage.put(layout::TOKENS, body, crate::manifest::CONTENT_TYPE_JSON, precondition).await?;
            Ok(true)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(name: &str, token: &str, modules: &[&str], providers: &[&str], expires_at: Option<&str>) -> TokenRecord {
        TokenRecord {
            name: name.into(),
            sha256: hex::encode(hash(token)),
            created_at: "2026-11-22T00:00:00Z".into(),
            expires_at: expires_at.map(str::to_string),
            modules: modules.iter().map(|s| s.to_string()).collect(),
            providers: providers.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn globs() {
        let cases = [
            ("*", "anything/at/all", true),
            ("acme", "acme", true),
            ("acme", "acme2", false),
            ("team-*", "team-net", true),
            ("team-*", "teams", false),
            ("registry.terraform.io/hashicorp/*", "registry.terraform.io/hashicorp/aws", true),
            ("registry.terraform.io/hashicorp/*", "registry.terraform.io/acme/aws", false),
            ("*/acme/*", "example.com/acme/widget", true),
            ("a?c", "abc", true),
            ("a?c", "ac", false),
            ("", "", true),
            ("", "a", false),
        ];
        for (pattern, text, want) in cases {
            assert_eq!(glob(pattern, text), want, "{pattern} ~ {text}");
        }
    }

    #[test]
    fn decisions() {
        let store = TokenStore {
            format: 1,
            tokens: vec![
                record(
                    "ci",
                    "trg_ci",
                    &["acme", "team-*"],
                    &["registry.terraform.io/hashicorp/*"],
                    Some("2030-01-01T00:00:00Z"),
                ),
                record("old", "trg_old", &["*"], &["*"], Some("2020-01-01T00:00:00Z")),
                record("bad-expiry", "trg_bad", &["*"], &["*"], Some("next year")),
            ],
        };
        let policy = Policy { anonymous_modules: vec!["public".into()], anonymous_providers: vec![] };
        let now = crate::clock::parse_rfc3339("2026-11-22T00:00:00Z").unwrap();
        let acme = ModuleAddress::parse("acme", "vpc", "aws").unwrap();
        let team = ModuleAddress::parse("team-net", "vpc", "aws").unwrap();
        let other = ModuleAddress::parse("other", "vpc", "aws").unwrap();
        let public = ModuleAddress::parse("public", "vpc", "aws").unwrap();
        let aws = ProviderAddress::parse("registry.terraform.io", "hashicorp", "aws").unwrap();
        let widget = ProviderAddress::parse("example.com", "acme", "widget").unwrap();
        use Decision::*;
        use Resource::*;
        let cases: Vec<(Option<&str>, Resource<'_>, Decision)> = vec![
            (None, Discovery, Allow),
            (Some("Bearer nonsense"), Discovery, Allow),
            (None, Module(&acme), Unauthenticated("a bearer token is required")),
            (None, Module(&public), Allow),
            (None, Provider(&aws), Unauthenticated("a bearer token is required")),
            (Some("Bearer trg_ci"), Module(&acme), Allow),
            (Some("bearer   trg_ci "), Module(&team), Allow),
            (Some("Bearer trg_ci"), Module(&other), Hidden),
            (Some("Bearer trg_ci"), Module(&public), Allow),
            (Some("Bearer trg_ci"), Provider(&aws), Allow),
            (Some("Bearer trg_ci"), Provider(&widget), Hidden),
            (Some("Bearer trg_wrong"), Module(&public), Unauthenticated("unknown or revoked token")),
            (Some("Bearer trg_old"), Module(&acme), Unauthenticated("expired token")),
            (Some("Bearer trg_bad"), Module(&acme), Unauthenticated("expired token")),
            (Some("Basic dXNlcjpwYXNz"), Module(&acme), Unauthenticated(NOT_BEARER)),
            (Some("Bearer"), Module(&acme), Unauthenticated(NOT_BEARER)),
            (Some("Bearer trg\u{7f}x"), Module(&acme), Unauthenticated(NOT_BEARER)),
        ];
        for (header, resource, want) in cases {
            assert_eq!(decide(&policy, Some(&store), header, resource, now), want, "{header:?} {resource:?}");
        }
        // No token store yet: every token is unknown.
        assert_eq!(
            decide(&policy, None, Some("Bearer trg_ci"), Module(&acme), now),
            Unauthenticated("unknown or revoked token")
        );
    }

    #[tokio::test]
    async fn managing_tokens() {
        let s = crate::storage::MemoryStorage::new();
        assert!(manage::list(&s).await.unwrap().is_empty());
        manage::upsert(&s, manage::record("ci", "trg_one", vec!["acme".into()], vec![], None)).await.unwrap();
        manage::upsert(&s, manage::record("dev", "trg_two", vec!["*".into()], vec!["*".into()], None)).await.unwrap();
        manage::upsert(&s, manage::record("ci", "trg_three", vec!["acme".into()], vec![], None)).await.unwrap();
        let names: Vec<String> = manage::list(&s).await.unwrap().into_iter().map(|t| t.name).collect();
        assert_eq!(names, ["dev", "ci"]);
        let stored = String::from_utf8(s.peek(crate::layout::TOKENS).unwrap().to_vec()).unwrap();
        assert!(!stored.contains("trg_"), "tokens are stored only as hashes: {stored}");
        let store = TokenStore::parse(stored.as_bytes()).unwrap();
        assert!(store.find("trg_three").is_some() && store.find("trg_one").is_none(), "replaced by name");
        assert!(manage::revoke(&s, "ci").await.unwrap());
        assert!(!manage::revoke(&s, "ci").await.unwrap());
        assert_eq!(manage::list(&s).await.unwrap().len(), 1);
    }

    #[test]
    fn store_parsing() {
        assert!(TokenStore::parse(br#"{"format":1,"tokens":[]}"#).is_ok());
        assert!(TokenStore::parse(br#"{"format":2,"tokens":[]}"#).is_err());
        assert!(TokenStore::parse(b"garbage").is_err());
    }
}
