//! An OpenID Connect issuer for tests: a key made now (RSA 2048 or P-256), the key set (JWKS) it
//! publishes, and tokens it signs, well-formed or hostile. No key is ever committed.

use aws_lc_rs::encoding::AsDer;
use aws_lc_rs::signature::KeyPair;
use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Map, Value, json};

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A test issuer and its one signing key.
pub struct TestIssuer {
    /// `iss` of its tokens.
    pub url: String,
    /// Its key's id (`kid`), random.
    pub kid: String,
    alg: Algorithm,
    signing: EncodingKey,
    /// The public key as a JWK (without `kid`).
    public: Value,
}

/// Claims every valid token carries: `iss`, `aud`, `sub`, `iat`, and `exp` this many seconds
/// from now.
pub fn claims(issuer: &str, audience: &str, lifetime_seconds: i64) -> Map<String, Value> {
    let now = crate::clock::now_unix();
    let value = json!({"iss": issuer, "aud": audience, "sub": "repo:acme/infra:ref:refs/heads/main",
                       "iat": now, "exp": now + lifetime_seconds});
    value.as_object().cloned().unwrap_or_default()
}

/// The PKCS#1 `RSAPrivateKey` inside a PKCS#8 `PrivateKeyInfo` (its third element, an OCTET
/// STRING): what jsonwebtoken's RSA signer reads, while aws-lc-rs exports PKCS#8 only.
fn pkcs1_of(pkcs8: &[u8]) -> Vec<u8> {
    // (tag, header length, content length) of the DER item at the start of `d`.
    fn item(d: &[u8]) -> (u8, usize, usize) {
        let first = d[1] as usize;
        if first < 0x80 {
            return (d[0], 2, first);
        }
        let n = first & 0x7f;
        (d[0], 2 + n, d[2..2 + n].iter().fold(0, |len, b| (len << 8) | *b as usize))
    }
    let (_, header, _) = item(pkcs8);
    let mut rest = &pkcs8[header..];
    for _ in 0..2 {
        // version, algorithm identifier
        let (_, header, len) = item(rest);
        rest = &rest[header + len..];
    }
    let (tag, header, len) = item(rest);
    assert_eq!(tag, 0x04, "PKCS#8 private key is an OCTET STRING");
    rest[header..header + len].to_vec()
}

fn random_kid() -> String {
    let mut bytes = [0u8; 8];
    aws_lc_rs::rand::fill(&mut bytes).unwrap();
    hex::encode(bytes)
}

impl TestIssuer {
    /// An issuer signing with RS256 (GitHub Actions, Entra ID, Okta, Keycloak, Cognito).
    pub fn rsa(url: &str) -> Self {
        let key = aws_lc_rs::rsa::KeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).unwrap();
        let pkcs8 = AsDer::<aws_lc_rs::encoding::Pkcs8V1Der>::as_der(&key).unwrap();
        let public = key.public_key();
        TestIssuer {
            url: url.to_owned(),
            kid: random_kid(),
            alg: Algorithm::RS256,
            signing: EncodingKey::from_rsa_der(&pkcs1_of(pkcs8.as_ref())),
            public: json!({"kty": "RSA", "use": "sig", "alg": "RS256",
                           "n": b64(public.modulus().big_endian_without_leading_zero()),
                           "e": b64(public.exponent().big_endian_without_leading_zero())}),
        }
    }

    /// An issuer signing with ES256 (P-256).
    pub fn ec(url: &str) -> Self {
        use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
        let key = EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).unwrap();
        let pkcs8 = key.to_pkcs8v1().unwrap();
        // Uncompressed point: 0x04, x (32 bytes), y (32 bytes).
        let point = key.public_key().as_ref().to_vec();
        TestIssuer {
            url: url.to_owned(),
            kid: random_kid(),
            alg: Algorithm::ES256,
            signing: EncodingKey::from_ec_der(pkcs8.as_ref()),
            public: json!({"kty": "EC", "use": "sig", "alg": "ES256", "crv": "P-256",
                           "x": b64(&point[1..33]), "y": b64(&point[33..65])}),
        }
    }

    /// This issuer's public key as a JWK, with its `kid`.
    pub fn jwk(&self) -> Value {
        let mut jwk = self.public.clone();
        jwk["kid"] = self.kid.clone().into();
        jwk
    }

    /// The key set it publishes (its one key).
    pub fn jwks(&self) -> jsonwebtoken::jwk::JwkSet {
        serde_json::from_value(json!({"keys": [self.jwk()]})).unwrap()
    }

    /// A token with `claims`, signed by this issuer's key.
    pub fn sign(&self, claims: &Map<String, Value>) -> String {
        self.sign_as(claims, &self.kid)
    }

    /// Signed by this key, but naming `kid` (another key's id: an impostor).
    pub fn sign_as(&self, claims: &Map<String, Value>, kid: &str) -> String {
        let mut header = Header::new(self.alg);
        header.kid = Some(kid.to_owned());
        jsonwebtoken::encode(&header, claims, &self.signing).unwrap()
    }

    /// `alg: none`, no signature.
    pub fn unsigned(claims: &Map<String, Value>, kid: &str) -> String {
        let header = json!({"alg": "none", "typ": "JWT", "kid": kid});
        format!("{}.{}.", b64(header.to_string().as_bytes()), b64(Value::Object(claims.clone()).to_string().as_bytes()))
    }

    /// HS256 with this issuer's public key (its JWK as published) as the HMAC secret: the
    /// algorithm-confusion attack, which works on a verifier that lets the token pick the
    /// algorithm.
    pub fn hs256_with_public_key(&self, claims: &Map<String, Value>) -> String {
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some(self.kid.clone());
        let secret = self.jwk().to_string();
        jsonwebtoken::encode(&header, claims, &EncodingKey::from_secret(secret.as_bytes())).unwrap()
    }
}
