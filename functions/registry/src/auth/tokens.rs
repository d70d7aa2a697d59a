//! The registry's own bearer tokens. Stored only as SHA-256 hashes, in one bucket object
//! (`access/tokens.json`) that the read functions may read. A presented token is hashed and
//! compared with every stored hash in constant time.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

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
    /// May see who downloads what (the callers of a version, `usage`), within its scopes.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub admin: bool,
}

impl TokenStore {
    /// Read the store; a bad or unknown format is an error (fail closed).
    pub fn parse(bytes: &[u8]) -> Result<Self, Error> {
        let mut store: TokenStore =
            serde_json::from_slice(bytes).map_err(|e| Error::internal_from("access/tokens.json", e))?;
        // `find` compares lower-case hex; a hand-edited store may hold upper case.
        for record in &mut store.tokens {
            record.sha256.make_ascii_lowercase();
        }
        if store.format != TOKENS_FORMAT {
            return Err(Error::internal(format!("access/tokens.json format {} is not {TOKENS_FORMAT}", store.format)));
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

impl TokenRecord {
    /// Whether the token has expired at `now_unix` (an unreadable expiry counts as expired).
    pub fn expired(&self, now_unix: i64) -> bool {
        match &self.expires_at {
            None => false,
            // An unreadable expiry is treated as expired: fail closed.
            Some(at) => crate::clock::parse_rfc3339(at).is_none_or(|at| at <= now_unix),
        }
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

/// The password of `Basic` credentials (RFC 7617), as OCI clients send the registry's token:
/// `None` for another scheme, `Some(Err)` for `Basic` that does not decode to `user:password`
/// with a password a bearer token could be.
pub fn basic_password(header: &str) -> Option<Result<String, &'static str>> {
    use base64::Engine;
    let (scheme, encoded) = header.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let refused = "Basic credentials must be base64 of USER:TOKEN";
    let decoded = match base64::engine::general_purpose::STANDARD.decode(encoded.trim()) {
        Ok(decoded) if decoded.len() <= 2 * BEARER_BYTES_MAX => decoded,
        _ => return Some(Err(refused)),
    };
    let password = String::from_utf8(decoded).ok().and_then(|s| s.split_once(':').map(|(_, p)| p.to_string()));
    Some(match password {
        Some(p) if !p.is_empty() && p.len() <= BEARER_BYTES_MAX && p.bytes().all(|b| b.is_ascii_graphic()) => Ok(p),
        _ => Err(refused),
    })
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

    /// Add `record` under a name no token has: a token of that name is a `Conflict`, because
    /// replacing it would cut off every client of the old one at once (`upsert` does that,
    /// when asked to).
    pub async fn create<S: Storage>(storage: &S, record: TokenRecord) -> Result<(), Error> {
        let added = change(storage, |store| {
            if store.tokens.iter().any(|t| t.name == record.name) {
                return false;
            }
            store.tokens.push(record.clone());
            true
        })
        .await?;
        match added {
            true => Ok(()),
            false => Err(Error::Conflict(format!("a token named {:?} exists", record.name))),
        }
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
            admin: false,
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
        let again = manage::create(&s, manage::record("ci", "trg_four", vec!["*".into()], vec![], None)).await;
        assert!(matches!(again, Err(Error::Conflict(_))), "create never replaces: {again:?}");
        let store = TokenStore::parse(&s.peek(crate::layout::TOKENS).unwrap()).unwrap();
        assert!(store.find("trg_three").is_some() && store.find("trg_four").is_none(), "the old token stays");
        manage::create(&s, manage::record("ci-2", "trg_four", vec!["acme".into()], vec![], None)).await.unwrap();
        assert!(manage::revoke(&s, "ci").await.unwrap());
        assert!(!manage::revoke(&s, "ci").await.unwrap());
        assert_eq!(manage::list(&s).await.unwrap().len(), 2);
    }

    #[test]
    fn store_parsing() {
        assert!(TokenStore::parse(br#"{"format":1,"tokens":[]}"#).is_ok());
        assert!(TokenStore::parse(br#"{"format":2,"tokens":[]}"#).is_err());
        assert!(TokenStore::parse(b"garbage").is_err());
    }
}
