//! Sign-in without long-lived secrets: JSON Web Tokens from the OpenID Connect issuers the
//! operator configures (GitHub Actions, GitLab CI, the organisation's identity provider),
//! accepted next to the static tokens. A token is accepted only when
//! - its `iss` is exactly a configured issuer's URL (the issuer is picked by it, nothing else);
//! - its header names an allowed algorithm (RS256 or ES256: never `none`, never an HMAC, whose
//!   "key" would be the issuer's public key) and a `kid` of that issuer's key set, and that key's
//!   type fits the algorithm;
//! - the signature verifies with that key;
//! - `aud` holds the issuer's configured audience, `exp` is in the future and `nbf`, if any, in
//!   the past, each with `LEEWAY` for clock skew.
//!
//! What it may then read comes from the issuer's rules alone: each rule names a claim, a glob
//! its value (or one of its values) must match, and the scopes that grants, in the static
//! tokens' shape. `{value}` in a scope stands for the matched value, accepted only when it is a
//! plain name (so a group called `*` cannot widen a grant). A verified token no rule grants
//! anything is refused (401), so a misconfigured rule is visible, not a silent 404 everywhere.
//!
//! This module is pure: given the issuer's key set (JWKS) it decides. Not wired into the
//! access check yet: fetching and keeping the issuers' key sets, the configuration variable and
//! `login.v1` come next (issue 14), and until then a JWT is an unknown token (401).

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, JwkSet, KeyAlgorithm};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::access::{TokenRecord, glob};

/// Clock skew allowed on `exp` and `nbf`.
pub const LEEWAY_SECONDS: u64 = 60;

/// The only algorithms accepted: what GitHub Actions, GitLab, Cognito, Entra ID, Okta and
/// Keycloak sign with.
const ALLOWED: [Algorithm; 2] = [Algorithm::RS256, Algorithm::ES256];

/// Longest token read (GitHub's are about 1.2 KB; a bound before any decoding).
pub const TOKEN_BYTES_MAX: usize = 8 * 1024;

/// One configured issuer.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Issuer {
    /// Its URL, exactly as tokens carry it in `iss` (`https://token.actions.githubusercontent.com`).
    pub issuer: String,
    /// What `aud` must contain (GitHub Actions: the `audience` asked for in the workflow).
    pub audience: String,
    /// Claims to scopes; a token is granted the union of what its matching rules grant.
    pub rules: Vec<Rule>,
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

/// Why a token is refused (the 401's message; never the token or its claims).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Not a JWT of a configured issuer, or failing a check; says which.
    Invalid(String),
    /// The issuer's key set has no key with this `kid`: fetch the key set again (bounded), then
    /// decide again; still unknown then is `Invalid`.
    UnknownKey {
        /// The issuer whose key set lacks it.
        issuer: String,
        /// The key id the token names.
        kid: String,
    },
}

/// The issuers' configuration, a JSON array (to be read from `REGISTRY_OIDC_ISSUERS` once the
/// access check uses it; nothing reads that variable yet). Every issuer must be an `https` URL
/// without query or fragment, named once, with an audience and at least one rule granting
/// something.
pub fn parse_issuers(raw: &str) -> Result<Vec<Issuer>, String> {
    let issuers: Vec<Issuer> = serde_json::from_str(raw).map_err(|e| format!("not a JSON array of issuers: {e}"))?;
    let mut seen = std::collections::BTreeSet::new();
    for i in &issuers {
        let url = url::Url::parse(&i.issuer).map_err(|e| format!("issuer {:?}: {e}", i.issuer))?;
        if url.scheme() != "https" || url.query().is_some() || url.fragment().is_some() || url.host_str().is_none() {
            return Err(format!("issuer {:?} must be an https URL without query or fragment", i.issuer));
        }
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

/// Verify `token` from `issuer` with its key set `keys`, and grant what the rules say.
pub fn verify(token: &str, issuer: &Issuer, keys: &JwkSet) -> Result<TokenRecord, Refusal> {
    let invalid = |why: &str| Refusal::Invalid(why.to_owned());
    if token.len() > TOKEN_BYTES_MAX {
        return Err(invalid("token too long"));
    }
    let header = jsonwebtoken::decode_header(token).map_err(|_| invalid("not a JSON Web Token"))?;
    if !ALLOWED.contains(&header.alg) {
        return Err(Refusal::Invalid(format!("algorithm {:?} is not accepted (RS256, ES256)", header.alg)));
    }
    let kid = header.kid.ok_or_else(|| invalid("the token names no key (kid)"))?;
    let Some(jwk) = keys.find(&kid) else {
        return Err(Refusal::UnknownKey { issuer: issuer.issuer.clone(), kid });
    };
    if !fits(jwk, header.alg) {
        return Err(Refusal::Invalid(format!("key {kid} does not fit {:?}", header.alg)));
    }
    let key = DecodingKey::from_jwk(jwk).map_err(|_| Refusal::Invalid(format!("key {kid} is unusable")))?;
    let mut validation = Validation::new(header.alg);
    validation.set_issuer(&[&issuer.issuer]);
    validation.set_audience(&[&issuer.audience]);
    validation.set_required_spec_claims(&["exp", "iss", "aud"]);
    validation.leeway = LEEWAY_SECONDS;
    validation.validate_nbf = true;
    let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key, &validation).map_err(|e| {
        use jsonwebtoken::errors::ErrorKind;
        Refusal::Invalid(
            match e.kind() {
                ErrorKind::ExpiredSignature => "expired token",
                ErrorKind::ImmatureSignature => "token not valid yet (nbf)",
                ErrorKind::InvalidAudience => "token not meant for this registry (aud)",
                ErrorKind::InvalidIssuer => "wrong issuer (iss)",
                ErrorKind::InvalidSignature => "signature does not verify",
                ErrorKind::MissingRequiredClaim(_) => "token lacks exp, iss or aud",
                _ => "token does not verify",
            }
            .to_owned(),
        )
    })?;
    let record = grant(issuer, &data.claims);
    if record.modules.is_empty() && record.providers.is_empty() {
        return Err(Refusal::Invalid(format!("no rule of issuer {} grants this token anything", issuer.issuer)));
    }
    Ok(record)
}

/// Whether `jwk` is a key for `alg` (an RSA key for RS256, a P-256 key for ES256), and, where
/// the key set names the key's algorithm, that it is `alg`.
fn fits(jwk: &Jwk, alg: Algorithm) -> bool {
    let named_fits = match jwk.common.key_algorithm {
        None => true,
        Some(KeyAlgorithm::RS256) => alg == Algorithm::RS256,
        Some(KeyAlgorithm::ES256) => alg == Algorithm::ES256,
        Some(_) => false,
    };
    named_fits
        && match (&jwk.algorithm, alg) {
            (AlgorithmParameters::RSA(_), Algorithm::RS256) => true,
            (AlgorithmParameters::EllipticCurve(ec), Algorithm::ES256) => ec.curve == EllipticCurve::P256,
            _ => false,
        }
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
        name: format!("oidc {} {}", issuer.issuer, crate::address::printable(subject)),
        sha256: String::new(),
        created_at: String::new(),
        expires_at: None,
        modules,
        providers,
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
    use crate::testing::oidc::{TestIssuer, claims};

    fn issuer(test: &TestIssuer) -> Issuer {
        parse_issuers(&format!(
            r#"[{{"issuer": "{}", "audience": "https://registry.example.com",
                 "rules": [
                   {{"claim": "repository_owner", "equals": "acme", "modules": ["acme"],
                     "providers": ["registry.example.com/acme/*"]}},
                   {{"claim": "groups", "equals": "team-*", "modules": ["{{value}}"]}}
                 ]}}]"#,
            test.url
        ))
        .unwrap()
        .remove(0)
    }

    #[test]
    fn a_valid_token_gets_exactly_the_scopes_its_claims_match() {
        for test in [TestIssuer::rsa("https://issuer.test"), TestIssuer::ec("https://issuer.test")] {
            let i = issuer(&test);
            let mut c = claims(&test.url, "https://registry.example.com", 600);
            c.insert("repository_owner".into(), "acme".into());
            c.insert("groups".into(), serde_json::json!(["team-a", "team-*", "other", 7, "team-b/x"]));
            let record = verify(&test.sign(&c), &i, &test.jwks()).unwrap();
            // `team-*` and `team-b/x` match the glob but are not plain names: no grant from them.
            assert_eq!(record.modules, vec!["acme", "team-a"]);
            assert_eq!(record.providers, vec!["registry.example.com/acme/*"]);
        }
    }

    #[test]
    fn every_bad_token_is_refused_with_its_reason() {
        let test = TestIssuer::rsa("https://issuer.test");
        let i = issuer(&test);
        let good = || {
            let mut c = claims(&test.url, "https://registry.example.com", 600);
            c.insert("repository_owner".into(), "acme".into());
            c
        };
        let refused = |token: String| match verify(&token, &i, &test.jwks()) {
            Err(Refusal::Invalid(why)) => why,
            other => panic!("{other:?}"),
        };
        let mut expired = good();
        expired.insert("exp".into(), (crate::clock::now_unix() - LEEWAY_SECONDS as i64 - 5).into());
        assert_eq!(refused(test.sign(&expired)), "expired token");
        let mut early = good();
        early.insert("nbf".into(), (crate::clock::now_unix() + 3600).into());
        assert_eq!(refused(test.sign(&early)), "token not valid yet (nbf)");
        let mut aud = good();
        aud.insert("aud".into(), "https://other.example.com".into());
        assert_eq!(refused(test.sign(&aud)), "token not meant for this registry (aud)");
        let mut iss = good();
        iss.insert("iss".into(), "https://evil.test".into());
        assert_eq!(refused(test.sign(&iss)), "wrong issuer (iss)");
        let mut no_exp = good();
        no_exp.remove("exp");
        assert_eq!(refused(test.sign(&no_exp)), "token lacks exp, iss or aud");
        let mut nothing = good();
        nothing.insert("repository_owner".into(), "globex".into());
        assert!(refused(test.sign(&nothing)).contains("grants this token anything"));

        // Tampered payload: the signature no longer covers it.
        let token = test.sign(&good());
        let mut forged = good();
        forged.insert("groups".into(), serde_json::json!(["team-x"]));
        let forged_payload = test.sign(&forged).split('.').nth(1).unwrap().to_owned();
        let parts: Vec<&str> = token.split('.').collect();
        assert_eq!(refused(format!("{}.{forged_payload}.{}", parts[0], parts[2])), "signature does not verify");

        // Signed by another key under the same kid.
        let impostor = TestIssuer::rsa("https://issuer.test");
        assert_eq!(refused(impostor.sign_as(&good(), &test.kid)), "signature does not verify");

        // alg none, and HS256 "signed" with the issuer's public key (algorithm confusion).
        // (jsonwebtoken has no `none` algorithm: such a header does not even parse.)
        assert_eq!(refused(TestIssuer::unsigned(&good(), &test.kid)), "not a JSON Web Token");
        assert_eq!(refused(test.hs256_with_public_key(&good())), "algorithm HS256 is not accepted (RS256, ES256)");

        // An ES256 header over the RSA key set's kid.
        let ec = TestIssuer::ec("https://issuer.test");
        assert_eq!(refused(ec.sign_as(&good(), &test.kid)), format!("key {} does not fit ES256", test.kid));
        // A P-256 key its key set names as an RS256 key is not used for ES256 either.
        let mut misnamed = ec.jwk();
        misnamed["alg"] = "RS256".into();
        let keys: JwkSet = serde_json::from_value(serde_json::json!({"keys": [misnamed]})).unwrap();
        assert_eq!(
            verify(&ec.sign(&good()), &i, &keys),
            Err(Refusal::Invalid(format!("key {} does not fit ES256", ec.kid)))
        );
        assert!(verify(&ec.sign(&good()), &i, &ec.jwks()).is_ok());

        assert_eq!(refused("a.b.c".into()), "not a JSON Web Token");
        assert_eq!(refused("x".repeat(TOKEN_BYTES_MAX + 1)), "token too long");
    }

    #[test]
    fn an_unknown_kid_asks_for_the_key_set_again() {
        let test = TestIssuer::rsa("https://issuer.test");
        let i = issuer(&test);
        let rotated = TestIssuer::rsa("https://issuer.test");
        let mut c = claims(&test.url, "https://registry.example.com", 600);
        c.insert("repository_owner".into(), "acme".into());
        assert_eq!(
            verify(&rotated.sign(&c), &i, &test.jwks()),
            Err(Refusal::UnknownKey { issuer: test.url.clone(), kid: rotated.kid.clone() })
        );
        assert!(verify(&rotated.sign(&c), &i, &rotated.jwks()).is_ok());
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
        let twice = format!("[{},{}]", &ok[1..ok.len() - 1], &ok[1..ok.len() - 1]);
        assert!(parse_issuers(&twice).unwrap_err().contains("twice"));
    }

    #[test]
    fn only_a_jwt_has_an_unverified_issuer() {
        let test = TestIssuer::ec("https://issuer.test");
        let token = test.sign(&claims(&test.url, "aud", 60));
        assert_eq!(unverified_issuer(&token).as_deref(), Some("https://issuer.test"));
        assert_eq!(unverified_issuer("trg_0123456789abcdef"), None);
        assert_eq!(unverified_issuer("a.b.c.d"), None);
    }
}
