//! Sign-in without long-lived secrets: JSON Web Tokens from the OpenID Connect issuers the
//! operator configures (`REGISTRY_OIDC_ISSUERS`: GitHub Actions, GitLab CI, the organisation's
//! identity provider), accepted next to the static tokens. A token is accepted only when
//! - its `iss` is exactly a configured issuer's URL (the issuer is picked by it, nothing else);
//! - its header names an allowed algorithm (RS256 or ES256: never `none`, never an HMAC, whose
//!   "key" would be the issuer's public key) and a `kid` of that issuer's key set, and that key's
//!   type fits the algorithm;
//! - the signature verifies with that key;
//! - `aud` holds the issuer's configured audience (a token without `aud`: its `client_id` is
//!   the audience, as Cognito's access tokens carry it and as API Gateway's JWT authorizer
//!   checks it), `exp` is in the future and `nbf`, if any, in the past, each with
//!   `LEEWAY_SECONDS` for clock skew.
//!
//! What it may then read comes from the issuer's rules alone: each rule names a claim, a glob
//! its value (or one of its values) must match, and the scopes that grants, in the static
//! tokens' shape. `{value}` in a scope stands for the matched value, accepted only when it is a
//! plain name (so a group called `*` cannot widen a grant). A verified token no rule grants
//! anything is refused (401), so a misconfigured rule is visible, not a silent 404 everywhere.
//!
//! One issuer may also be where `terraform login` gets its token (`login`: discovery then
//! advertises `login.v1` with that issuer's OAuth client, and the CLI stores the access token
//! the issuer hands out).
//!
//! This module holds the configuration and the claims-to-scopes mapping (pure, in every
//! build); `verify` decides on a token given the issuer's key set, and `keys` fetches and keeps
//! the key sets (both with feature `aws`, which brings the crypto and the HTTP client).

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::auth::scopes::glob;
use crate::auth::tokens::TokenRecord;

#[cfg(feature = "aws")]
pub mod keys;
#[cfg(feature = "aws")]
mod verify;
#[cfg(feature = "aws")]
pub use verify::{LEEWAY_SECONDS, Refusal, verify};

/// Longest token read (GitHub's are about 1.2 KB, Entra ID's with groups a few KB; a bound
/// before any decoding).
pub const TOKEN_BYTES_MAX: usize = crate::auth::tokens::BEARER_BYTES_MAX;

/// One configured issuer.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Issuer {
    /// Its URL, exactly as tokens carry it in `iss` (`https://token.actions.githubusercontent.com`).
    pub issuer: String,
    /// What `aud` must contain (GitHub Actions: the `audience` asked for in the workflow), or,
    /// in a token without `aud`, what `client_id` must be (Cognito's access tokens).
    pub audience: String,
    /// Claims to scopes; a token is granted the union of what its matching rules grant.
    pub rules: Vec<Rule>,
    /// The OAuth client `terraform login` uses with this issuer (at most one issuer has one).
    #[serde(default)]
    pub login: Option<Login>,
}

/// A claim's value to scopes.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// The claim (`repository_owner`, `groups`); a string, or an array of strings.
    pub claim: String,
    /// Glob the value must match (`acme`, `platform-*`).
    pub equals: String,
    /// Module namespaces granted (globs; `{value}`: the matched value).
    #[serde(default)]
    pub modules: Vec<String>,
    /// Providers granted, `HOSTNAME/NAMESPACE/TYPE` globs (`{value}` likewise).
    #[serde(default)]
    pub providers: Vec<String>,
}

/// The public OAuth client `terraform login` runs against the issuer (authorization code grant
/// with PKCE; the CLI listens on `http://localhost:PORT/login` for one of `ports`). The
/// registry only advertises it (`login.v1`): the CLI talks to the issuer itself.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Login {
    /// The client id registered at the issuer (a public client: no secret).
    pub client: String,
    /// The issuer's authorization endpoint (`https://…/oauth2/authorize`).
    pub authz: String,
    /// The issuer's token endpoint (`https://…/oauth2/token`).
    pub token: String,
    /// The first and last port of the callback (each `http://localhost:PORT/login` must be an
    /// allowed redirect URI at the issuer).
    #[serde(default = "default_ports")]
    pub ports: [u16; 2],
    /// Scopes to ask for (none: the issuer's default).
    #[serde(default)]
    pub scopes: Vec<String>,
}

fn default_ports() -> [u16; 2] {
    [10000, 10010]
}

/// An `https` URL without query or fragment, or why not.
fn https_url(what: &str, raw: &str) -> Result<url::Url, String> {
    let url = url::Url::parse(raw).map_err(|e| format!("{what} {raw:?}: {e}"))?;
    if url.scheme() != "https" || url.query().is_some() || url.fragment().is_some() || url.host_str().is_none() {
        return Err(format!("{what} {raw:?} must be an https URL without query or fragment"));
    }
    Ok(url)
}

/// Read `REGISTRY_OIDC_ISSUERS`: a JSON array of issuers. Every issuer must be an `https` URL
/// without query or fragment, named once, with an audience and at least one rule granting
/// something; at most one has a `login`, whose endpoints are `https` URLs and whose ports are
/// unprivileged (the CLI refuses others).
pub fn parse_issuers(raw: &str) -> Result<Vec<Issuer>, String> {
    let issuers: Vec<Issuer> = serde_json::from_str(raw).map_err(|e| format!("not a JSON array of issuers: {e}"))?;
    let mut seen = std::collections::BTreeSet::new();
    for i in &issuers {
        https_url("issuer", &i.issuer)?;
        if !seen.insert(i.issuer.as_str()) {
            return Err(format!("issuer {:?} is configured twice", i.issuer));
        }
        if i.audience.trim().is_empty() {
            return Err(format!("issuer {:?} has an empty audience", i.issuer));
        }
        if i.rules.is_empty() {
            return Err(format!("issuer {:?} has no rules: its tokens could read nothing", i.issuer));
        }
        for r in &i.rules {
            if r.claim.is_empty() || r.equals.is_empty() || (r.modules.is_empty() && r.providers.is_empty()) {
                return Err(format!(
                    "issuer {:?}: every rule needs a claim, equals, and modules or providers",
                    i.issuer
                ));
            }
        }
        if let Some(login) = &i.login {
            if login.client.trim().is_empty() {
                return Err(format!("issuer {:?}: login needs a client id", i.issuer));
            }
            https_url("login authz", &login.authz)?;
            https_url("login token", &login.token)?;
            let [first, last] = login.ports;
            if first < 1024 || last < first {
                return Err(format!(
                    "issuer {:?}: login ports must be two ports from 1024 up, the first not above the last",
                    i.issuer
                ));
            }
        }
    }
    if issuers.iter().filter(|i| i.login.is_some()).count() > 1 {
        return Err("only one issuer may have a login (terraform login asks one authorization server)".into());
    }
    Ok(issuers)
}

/// The `iss` of a token that looks like a JWT (three base64url parts, a JSON payload), read
/// without verifying anything: only to pick the issuer whose keys then verify it. `None`: not
/// a JWT (a static token, or garbage).
pub fn unverified_issuer(token: &str) -> Option<String> {
    use base64::Engine;
    if token.len() > TOKEN_BYTES_MAX {
        return None;
    }
    let mut parts = token.split('.');
    let (_, payload, _, None) = (parts.next()?, parts.next()?, parts.next()?, parts.next()) else { return None };
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload).ok()?;
    let claims: Map<String, Value> = serde_json::from_slice(&bytes).ok()?;
    claims.get("iss")?.as_str().map(str::to_owned)
}

/// A subject as a caller's name: as it is when it is at most 64 characters of printable ASCII;
/// else its first 64 characters (`printable`: `?` for what it cannot show) and a short hash of
/// the whole, so that two subjects
/// that read alike (a common start: `repo:acme/infra:environment:production` and
/// `…:production-sandbox`; characters `printable` shows alike, as two non-ASCII ones) never
/// count as one caller (download counts).
fn subject_name(subject: &str) -> String {
    let shown = crate::address::printable(subject);
    // A `~` could spell another subject's hashed name: hashed too.
    if subject.len() <= 64 && subject.bytes().all(|b| (b.is_ascii_graphic() || b == b' ') && b != b'~') {
        return shown;
    }
    let hash = crate::auth::tokens::hash(subject);
    format!("{shown}~{}", &hex::encode(hash)[..12])
}

/// The scopes `claims` earn under `issuer`'s rules, as a token record named after the issuer
/// and subject (for logs; never stored).
pub fn grant(issuer: &Issuer, claims: &Map<String, Value>) -> TokenRecord {
    let mut modules = Vec::new();
    let mut providers = Vec::new();
    for rule in &issuer.rules {
        let values: Vec<&str> = match claims.get(&rule.claim) {
            Some(Value::String(s)) => vec![s.as_str()],
            Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
            _ => continue,
        };
        for value in values.into_iter().filter(|v| glob(&rule.equals, v)) {
            let fill = |scope: &String| -> Option<String> {
                if !scope.contains("{value}") {
                    return Some(scope.clone());
                }
                plain_name(value).then(|| scope.replace("{value}", value))
            };
            modules.extend(rule.modules.iter().filter_map(fill));
            providers.extend(rule.providers.iter().filter_map(fill));
        }
    }
    modules.sort();
    modules.dedup();
    providers.sort();
    providers.dedup();
    let subject = claims.get("sub").and_then(Value::as_str).unwrap_or("?");
    TokenRecord {
        name: format!("oidc {} {}", issuer.issuer, subject_name(subject)),
        sha256: String::new(),
        created_at: String::new(),
        expires_at: None,
        modules,
        providers,
        // Who downloads what is for token holders an operator named (`token create --admin`).
        admin: false,
    }
}

/// A value that may stand in a scope: a name of letters, digits, `-` and `_` (no glob
/// character, no `/`), as namespaces are.
fn plain_name(value: &str) -> bool {
    !value.is_empty() && value.len() <= 64 && value.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(feature = "aws")]
    use crate::testing::oidc::{TestIssuer, claims};

    /// Two subjects whose first 64 characters agree are two callers (download counts name a
    /// caller by this), and a short subject is named as it is.
    #[test]
    fn long_subjects_keep_apart() {
        let issuer = &parse_issuers(r#"[{"issuer": "https://a.test", "audience": "x", "rules": [{"claim": "c", "equals": "v", "modules": ["m"]}]}]"#).unwrap()[0];
        let name = |sub: &str| grant(issuer, serde_json::json!({"sub": sub}).as_object().unwrap()).name;
        let live = "repo:acme-corp/platform-infrastructure-live:environment:production";
        let sandbox = "repo:acme-corp/platform-infrastructure-live:environment:production-sandbox";
        assert_ne!(name(live), name(sandbox));
        assert!(
            name(live)
                .starts_with("oidc https://a.test repo:acme-corp/platform-infrastructure-live:environment:producti~")
        );
        assert_eq!(
            name("repo:acme/infra:ref:refs/heads/main"),
            "oidc https://a.test repo:acme/infra:ref:refs/heads/main"
        );
        // Short, but not printable ASCII: what `printable` shows alike is told apart by the hash.
        let (one, two) = (name("user:é"), name("user:è"));
        assert_ne!(one, two);
        assert!(one.contains('~') && two.contains('~'), "{one} {two}");
        assert_ne!(name("a\u{1}b"), name("a\u{2}b"));
        // A short subject spelling another's hashed name is hashed itself.
        assert_ne!(name(one.strip_prefix("oidc https://a.test ").unwrap()), one);
    }

    #[test]
    fn issuers_are_checked_when_read() {
        let ok = r#"[{"issuer": "https://a.test", "audience": "x", "rules": [{"claim": "c", "equals": "v", "modules": ["m"]}]}]"#;
        assert_eq!(parse_issuers(ok).unwrap().len(), 1);
        for bad in [
            "{}",
            r#"[{"issuer": "http://a.test", "audience": "x", "rules": [{"claim": "c", "equals": "v", "modules": ["m"]}]}]"#,
            r#"[{"issuer": "https://a.test?x=1", "audience": "x", "rules": [{"claim": "c", "equals": "v", "modules": ["m"]}]}]"#,
            r#"[{"issuer": "https://a.test", "audience": "", "rules": [{"claim": "c", "equals": "v", "modules": ["m"]}]}]"#,
            r#"[{"issuer": "https://a.test", "audience": "x", "rules": []}]"#,
            r#"[{"issuer": "https://a.test", "audience": "x", "rules": [{"claim": "c", "equals": "v"}]}]"#,
            r#"[{"issuer": "https://a.test", "audience": "x", "rules": [{"claim": "c", "equals": "v", "modules": ["m"], "extra": 1}]}]"#,
        ] {
            assert!(parse_issuers(bad).is_err(), "{bad}");
        }
        // What infra's `jsonencode(var.oidc_issuers)` writes: every optional attribute present,
        // `null` for no login.
        let from_infra = r#"[{"audience":"https://r.example.com","issuer":"https://a.test","login":null,
            "rules":[{"claim":"c","equals":"v","modules":["m"],"providers":[]}]},
            {"audience":"client","issuer":"https://b.test","login":{"authz":"https://b.test/authorize",
            "client":"client","ports":[10000,10010],"scopes":[],"token":"https://b.test/token"},
            "rules":[{"claim":"cognito:groups","equals":"team-*","modules":["{value}"],"providers":[]}]}]"#;
        let parsed = parse_issuers(from_infra).unwrap();
        assert_eq!(
            (parsed[0].login.is_none(), parsed[1].login.as_ref().map(|l| l.ports)),
            (true, Some([10000, 10010]))
        );
        let twice = format!("[{},{}]", &ok[1..ok.len() - 1], &ok[1..ok.len() - 1]);
        assert!(parse_issuers(&twice).unwrap_err().contains("twice"));

        let with_login = |issuer: &str, login: &str| {
            format!(
                r#"{{"issuer": "{issuer}", "audience": "x", "rules": [{{"claim": "c", "equals": "v", "modules": ["m"]}}],
                    "login": {{"client": "terraform", "authz": "https://a.test/authorize", "token": "https://a.test/token"{login}}}}}"#
            )
        };
        let parsed = parse_issuers(&format!("[{}]", with_login("https://a.test", ""))).unwrap();
        assert_eq!(parsed[0].login.as_ref().map(|l| l.ports), Some([10000, 10010]));
        for (login, why) in [
            (r#", "ports": [80, 90]"#, "ports"),
            (r#", "ports": [10010, 10000]"#, "ports"),
            (r#", "ports": [10000]"#, "JSON"),
            (r#", "secret": "s""#, "JSON"),
        ] {
            let err = parse_issuers(&format!("[{}]", with_login("https://a.test", login))).unwrap_err();
            assert!(err.contains(why), "{login}: {err}");
        }
        let plain = with_login("https://a.test", "").replace("https://a.test/token", "http://a.test/token");
        assert!(parse_issuers(&format!("[{plain}]")).unwrap_err().contains("https"));
        let two = format!("[{},{}]", with_login("https://a.test", ""), with_login("https://b.test", ""));
        assert!(parse_issuers(&two).unwrap_err().contains("only one issuer"));
    }

    #[cfg(feature = "aws")]
    #[test]
    fn only_a_jwt_has_an_unverified_issuer() {
        let test = TestIssuer::ec("https://issuer.test");
        let token = test.sign(&claims(&test.url, "aud", 60));
        assert_eq!(unverified_issuer(&token).as_deref(), Some("https://issuer.test"));
        assert_eq!(unverified_issuer("trg_0123456789abcdef"), None);
        assert_eq!(unverified_issuer("a.b.c.d"), None);
    }
}
