//! The public keys Sigstore signs with (ECDSA P-256 and P-384, Ed25519, and RSA of 2048 to
//! 4096 bits for CAs that use it) read from a SubjectPublicKeyInfo, and a signature checked
//! with one. The digest is named by the caller (a certificate's signature algorithm, the key's
//! own curve for DSSE and log entries), and an algorithm that does not fit the key is refused
//! rather than tried: no confusion between ECDSA, RSA and Ed25519.

use sha2::Digest;

use super::Refused;
use super::der::{Der, OID, SEQUENCE};

const NULL: u8 = 0x05;

pub(crate) const EC_PUBLIC_KEY: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
const PRIME256V1: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
const SECP384R1: &[u8] = &[0x2b, 0x81, 0x04, 0x00, 0x22];
pub(crate) const ED25519: &[u8] = &[0x2b, 0x65, 0x70];
pub(crate) const RSA_ENCRYPTION: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
const RSA_SHA256: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0b];
const RSA_SHA384: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0c];
const RSA_SHA512: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0d];
/// RSA moduli accepted, in bits: the smallest safe, the largest worth the time to check.
const RSA_BITS: std::ops::RangeInclusive<usize> = 2048..=4096;
const ECDSA_SHA256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02];
const ECDSA_SHA384: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x03];
const ECDSA_SHA512: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x04];
pub(crate) const SHA256: &[u8] = &[0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01];
pub(crate) const SHA384: &[u8] = &[0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x02];
pub(crate) const SHA512: &[u8] = &[0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x03];

/// A digest algorithm a signature is made over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hash {
    Sha256,
    Sha384,
    Sha512,
}

impl Hash {
    /// DigestInfo's DER before the digest (RFC 8017 §9.2), for RSA PKCS #1 v1.5.
    fn digest_info(self) -> Vec<u8> {
        let (oid, len) = match self {
            Hash::Sha256 => (SHA256, 32u8),
            Hash::Sha384 => (SHA384, 48),
            Hash::Sha512 => (SHA512, 64),
        };
        let oid_len = oid.len() as u8;
        let algorithm_len = oid_len + 4;
        let mut prefix = vec![0x30, algorithm_len + 4 + len, 0x30, algorithm_len, 0x06, oid_len];
        prefix.extend_from_slice(oid);
        prefix.extend_from_slice(&[0x05, 0x00, 0x04, len]);
        prefix
    }

    /// The digest algorithm an AlgorithmIdentifier's OID names.
    pub fn from_oid(oid: &[u8]) -> Option<Hash> {
        match oid {
            SHA256 => Some(Hash::Sha256),
            SHA384 => Some(Hash::Sha384),
            SHA512 => Some(Hash::Sha512),
            _ => None,
        }
    }

    pub fn digest(self, message: &[u8]) -> Vec<u8> {
        match self {
            Hash::Sha256 => sha2::Sha256::digest(message).to_vec(),
            Hash::Sha384 => sha2::Sha384::digest(message).to_vec(),
            Hash::Sha512 => sha2::Sha512::digest(message).to_vec(),
        }
    }
}

/// How a signature is made: what a certificate's `signatureAlgorithm` (or a CMS signer's)
/// names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Algorithm {
    Ecdsa(Hash),
    Ed25519,
    Rsa(Hash),
}

impl Algorithm {
    /// The algorithm an AlgorithmIdentifier names (its OID; no parameters but RSA's NULL).
    pub fn from_identifier(identifier: &[u8], what: &str) -> Result<Algorithm, Refused> {
        let mut der = Der::new(identifier);
        let oid = der.take(OID, what)?;
        let algorithm = match oid {
            ECDSA_SHA256 => Algorithm::Ecdsa(Hash::Sha256),
            ECDSA_SHA384 => Algorithm::Ecdsa(Hash::Sha384),
            ECDSA_SHA512 => Algorithm::Ecdsa(Hash::Sha512),
            ED25519 => Algorithm::Ed25519,
            RSA_SHA256 | RSA_SHA384 | RSA_SHA512 => {
                der.optional(NULL, what)?;
                Algorithm::Rsa(match oid {
                    RSA_SHA256 => Hash::Sha256,
                    RSA_SHA384 => Hash::Sha384,
                    _ => Hash::Sha512,
                })
            }
            _ => return Err(Refused::new(format!("{what}: unsupported signature algorithm"))),
        };
        der.end(what)?;
        Ok(algorithm)
    }
}

/// A public key a signature is checked with.
#[derive(Debug, Clone)]
pub(crate) enum PublicKey {
    P256(p256::ecdsa::VerifyingKey),
    P384(p384::ecdsa::VerifyingKey),
    Ed25519(ed25519_dalek::VerifyingKey),
    Rsa(Box<rsa::RsaPublicKey>),
}

impl PublicKey {
    /// A DER SubjectPublicKeyInfo.
    pub fn from_spki(spki: &[u8]) -> Result<PublicKey, Refused> {
        let bad = |why: &str| Refused::new(format!("public key: {why}"));
        let mut outer = Der::new(spki);
        let mut info = outer.enter(SEQUENCE, "public key")?;
        outer.end("public key")?;
        let mut algorithm = info.enter(SEQUENCE, "public key algorithm")?;
        let oid = algorithm.take(OID, "public key algorithm")?;
        let key = info.bits("public key")?;
        info.end("public key")?;
        match oid {
            EC_PUBLIC_KEY => {
                let curve = algorithm.take(OID, "public key curve")?;
                algorithm.end("public key algorithm")?;
                match curve {
                    PRIME256V1 => p256::ecdsa::VerifyingKey::from_sec1_bytes(key)
                        .map(PublicKey::P256)
                        .map_err(|_| bad("not a P-256 point")),
                    SECP384R1 => p384::ecdsa::VerifyingKey::from_sec1_bytes(key)
                        .map(PublicKey::P384)
                        .map_err(|_| bad("not a P-384 point")),
                    _ => Err(bad("an unsupported curve (P-256 and P-384 are)")),
                }
            }
            ED25519 => {
                algorithm.end("public key algorithm")?;
                let bytes: [u8; 32] = key.try_into().map_err(|_| bad("not an Ed25519 key"))?;
                ed25519_dalek::VerifyingKey::from_bytes(&bytes)
                    .map(PublicKey::Ed25519)
                    .map_err(|_| bad("not an Ed25519 key"))
            }
            RSA_ENCRYPTION => {
                algorithm.optional(NULL, "public key algorithm")?;
                algorithm.end("public key algorithm")?;
                let mut der = Der::new(key);
                let mut fields = der.enter(SEQUENCE, "RSA key")?;
                let modulus = rsa::BigUint::from_bytes_be(fields.take(super::der::INTEGER, "RSA modulus")?);
                let exponent = rsa::BigUint::from_bytes_be(fields.take(super::der::INTEGER, "RSA exponent")?);
                fields.end("RSA key")?;
                if !RSA_BITS.contains(&modulus.bits()) {
                    return Err(bad("an RSA key outside 2048 to 4096 bits"));
                }
                rsa::RsaPublicKey::new(modulus, exponent)
                    .map(|k| PublicKey::Rsa(Box::new(k)))
                    .map_err(|_| bad("not an RSA key"))
            }
            _ => Err(bad("an unsupported algorithm (ECDSA, Ed25519 and RSA are)")),
        }
    }

    /// The digest Sigstore signs with this key where nothing else names one: the curve's own.
    pub fn natural(&self) -> Algorithm {
        match self {
            PublicKey::P256(_) => Algorithm::Ecdsa(Hash::Sha256),
            PublicKey::P384(_) => Algorithm::Ecdsa(Hash::Sha384),
            PublicKey::Ed25519(_) => Algorithm::Ed25519,
            PublicKey::Rsa(_) => Algorithm::Rsa(Hash::Sha256),
        }
    }

    /// `signature` over `message` by this key, made with `algorithm`.
    pub fn verify(&self, algorithm: Algorithm, message: &[u8], signature: &[u8]) -> Result<(), Refused> {
        match (algorithm, self) {
            (Algorithm::Ecdsa(hash), PublicKey::P256(_) | PublicKey::P384(_)) => {
                self.verify_digest(&hash.digest(message), signature)
            }
            (Algorithm::Ed25519, PublicKey::Ed25519(key)) => {
                let signature = ed25519_dalek::Signature::from_slice(signature).map_err(|_| invalid())?;
                key.verify_strict(message, &signature).map_err(|_| invalid())
            }
            (Algorithm::Rsa(hash), PublicKey::Rsa(key)) => {
                let scheme =
                    rsa::Pkcs1v15Sign { hash_len: Some(hash.digest(b"").len()), prefix: hash.digest_info().into() };
                key.verify(scheme, &hash.digest(message), signature).map_err(|_| invalid())
            }
            _ => Err(Refused::new("signature: its algorithm does not fit the key")),
        }
    }

    /// An ECDSA `signature` (DER) over a message whose digest is `digest`.
    pub fn verify_digest(&self, digest: &[u8], signature: &[u8]) -> Result<(), Refused> {
        use p256::ecdsa::signature::hazmat::PrehashVerifier;
        match self {
            PublicKey::P256(key) => {
                let signature = p256::ecdsa::Signature::from_der(signature).map_err(|_| invalid())?;
                key.verify_prehash(digest, &signature).map_err(|_| invalid())
            }
            PublicKey::P384(key) => {
                let signature = p384::ecdsa::Signature::from_der(signature).map_err(|_| invalid())?;
                key.verify_prehash(digest, &signature).map_err(|_| invalid())
            }
            PublicKey::Ed25519(_) | PublicKey::Rsa(_) => {
                Err(Refused::new("signature: only ECDSA is checked by digest here"))
            }
        }
    }
}

fn invalid() -> Refused {
    Refused::new("signature: does not verify")
}
