//! The decision on one token, given its issuer's key set (pure; see the module above).

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, JwkSet, KeyAlgorithm};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};

use super::{Issuer, TOKEN_BYTES_MAX, grant};
use crate::auth::tokens::TokenRecord;

/// Clock skew allowed on `exp` and `nbf`.
pub const LEEWAY_SECONDS: u64 = 60;

/// The only algorithms accepted: what GitHub Actions, GitLab, Cognito, Entra ID, Okta and
/// Keycloak sign with.
const ALLOWED: [Algorithm; 2] = [Algorithm::RS256, Algorithm::ES256];

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
    // `aud` is checked below, where a token without one may name its `client_id` instead.
    validation.validate_aud = false;
    validation.set_required_spec_claims(&["exp", "iss"]);
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
                ErrorKind::MissingRequiredClaim(_) => "token lacks exp or iss",
                _ => "token does not verify",
            }
            .to_owned(),
        )
    })?;
    if !meant_for(&data.claims, &issuer.audience) {
        return Err(Refusal::Invalid("token not meant for this registry (aud)".into()));
    }
    let record = grant(issuer, &data.claims);
    if record.modules.is_empty() && record.providers.is_empty() {
        return Err(Refusal::Invalid(format!("no rule of issuer {} grants this token anything", issuer.issuer)));
    }
    Ok(record)
}

/// Whether the token is meant for `audience`: its `aud` (a string, or an array of strings)
/// holds it; a token without `aud` at all counts its `client_id` instead (RFC 9068 access
/// tokens carry both; Cognito's carry only `client_id`). Never both looked at loosely: a token
/// whose `aud` names others is refused whatever its `client_id`.
fn meant_for(claims: &Map<String, Value>, audience: &str) -> bool {
    match claims.get("aud") {
        Some(Value::String(aud)) => aud == audience,
        Some(Value::Array(auds)) => auds.iter().any(|a| a.as_str() == Some(audience)),
        Some(_) => false,
        None => claims.get("client_id").and_then(Value::as_str) == Some(audience),
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::oidc::{Issuer, parse_issuers};
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
        assert_eq!(refused(test.sign(&no_exp)), "token lacks exp or iss");
        // No `aud`: `client_id` must be the audience (Cognito); with an `aud`, `client_id` is
        // not looked at.
        let mut client = good();
        client.remove("aud");
        assert_eq!(refused(test.sign(&client)), "token not meant for this registry (aud)");
        client.insert("client_id".into(), "https://registry.example.com".into());
        assert!(verify(&test.sign(&client), &i, &test.jwks()).is_ok());
        client.insert("aud".into(), serde_json::json!(["https://other.example.com"]));
        assert_eq!(refused(test.sign(&client)), "token not meant for this registry (aud)");
        client.insert("aud".into(), serde_json::json!(["https://other.example.com", "https://registry.example.com"]));
        assert!(verify(&test.sign(&client), &i, &test.jwks()).is_ok());
        client.insert("aud".into(), serde_json::json!(7));
        assert_eq!(refused(test.sign(&client)), "token not meant for this registry (aud)");
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
}
