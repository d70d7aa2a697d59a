//! OpenPGP's rules for whether a key may have made a signature, in one place: the release
//! checks at publish, at a re-index and at a pull-through copy all come here (through
//! [`super::verify`]). RFC 9580 says what a key's self-signatures mean; this applies them at
//! the strictest reading a registry needs:
//!
//! - the digest is SHA-256 or stronger ([`digest`]): MD5 and SHA-1 have chosen-prefix
//!   collisions, RIPEMD-160 and SHA-224 are below the floor;
//! - the key's algorithm and size are ones a signature can still be trusted from
//!   ([`strength`]): RSA and DSA of 2,048 bits or more, ECDSA on a NIST curve, EdDSA;
//! - the key that made it (the primary key, or a subkey bound to it) is not revoked, was
//!   created before the signature, allows signing by its key flags, and is not expired, when it
//!   signed nor now ([`Standing::may_have_signed`]). A subkey is never valid past its primary key: its
//!   expiry is the earlier of its own and the primary's, and a revoked primary revokes it.
//!
//! Any revocation refuses, whatever its reason and time: a registry cannot tell a signature
//! made before a key's compromise from one made after, and the publisher can sign again.

use pgp::composed::{SignedPublicKey, SignedPublicSubKey};
use pgp::crypto::hash::HashAlgorithm;
use pgp::packet::{Signature, SignatureType, SubpacketData};
use pgp::ser::Serialize;
use pgp::types::{EcdsaPublicParams, KeyDetails, PublicParams};

use super::Refusal;

/// The smallest RSA or DSA modulus accepted, in bits (NIST SP 800-131A: 1,024-bit keys have
/// been disallowed for signatures since 2014).
pub const MODULUS_BITS_MIN: u16 = 2048;

/// Whether a signature's digest is strong enough.
pub fn digest(sig: &Signature) -> Result<(), Refusal> {
    use HashAlgorithm as H;
    match sig.hash_alg() {
        Some(H::Sha256 | H::Sha384 | H::Sha512 | H::Sha3_256 | H::Sha3_512) => Ok(()),
        Some(weak) => Err(format!(
            "the signature uses the {weak} digest, which is too weak to trust: sign with SHA-256 or stronger \
             (gpg --digest-algo SHA256, gpg's default since 2.1)"
        )),
        None => Err("the signature names no digest algorithm".into()),
    }
}

/// Whether a key's algorithm and size are strong enough to trust a signature from; `what`
/// names the key in the refusal.
pub fn strength(key: &impl KeyDetails, what: &str) -> Result<(), Refusal> {
    let too_small = |kind: &str, bits: u16| {
        Err(format!(
            "{what} is {kind} of {bits} bits, below the {MODULUS_BITS_MIN} a signing key must have: make a new key \
             (Ed25519, or RSA of 3072 bits or more) and sign with it"
        ))
    };
    match key.public_params() {
        PublicParams::RSA(_) => match modulus_bits(key.public_params()) {
            Some(bits) if bits >= MODULUS_BITS_MIN => Ok(()),
            bits => too_small("RSA", bits.unwrap_or(0)),
        },
        PublicParams::DSA(_) => match modulus_bits(key.public_params()) {
            Some(bits) if bits >= MODULUS_BITS_MIN => Ok(()),
            bits => too_small("DSA", bits.unwrap_or(0)),
        },
        PublicParams::ECDSA(EcdsaPublicParams::P256 { .. } | EcdsaPublicParams::P384 { .. })
        | PublicParams::ECDSA(EcdsaPublicParams::P521 { .. })
        | PublicParams::EdDSALegacy(_)
        | PublicParams::Ed25519(_)
        | PublicParams::Ed448(_) => Ok(()),
        _ => Err(format!("{what} uses {:?}, which is not a signing algorithm this registry accepts", key.algorithm())),
    }
}

/// The bit length of an RSA or DSA key's modulus: the first MPI of its public parameters,
/// whose first two octets are its length in bits (RFC 9580 §3.2).
fn modulus_bits(params: &PublicParams) -> Option<u16> {
    let mut out = Vec::new();
    params.to_writer(&mut out).ok()?;
    Some(u16::from_be_bytes([*out.first()?, *out.get(1)?]))
}

/// What a key's self-signatures say about one of its keys (the primary, or a subkey as
/// bound to it): when it was made, until when it is valid, whether it is revoked, and
/// whether it may sign.
#[derive(Debug, Clone)]
pub struct Standing {
    /// How the refusals name it: `key ID` or `subkey ID of key ID`.
    pub what: String,
    /// When the key was made (Unix seconds).
    pub created: u64,
    /// When it stops being valid, if ever.
    pub expires: Option<Expiry>,
    /// Whether it (or, for a subkey, its primary key) is revoked.
    pub revoked: bool,
    /// Whether its key flags let it sign documents.
    pub signs: bool,
}

/// When a key stops being valid, and whether that is its primary key's expiry (a subkey's
/// own may be later).
#[derive(Debug, Clone, Copy)]
pub struct Expiry {
    /// Unix seconds.
    pub at: u64,
    /// Whether this is the primary key's expiry, earlier than a subkey's own.
    pub of_primary: bool,
}

impl Standing {
    /// The primary key's standing, from its newest self-signature (a key's owner may extend
    /// or shorten its life, or change its flags, by signing again).
    pub fn primary(key: &SignedPublicKey, key_id: &str) -> Standing {
        let created = u64::from(key.primary_key.created_at().as_secs());
        let newest = key
            .details
            .users
            .iter()
            .flat_map(|u| u.signatures.iter())
            .chain(key.details.direct_signatures.iter())
            .max_by_key(|s| seconds(s.created()));
        let expires = newest.and_then(lifetime).map(|d| Expiry { at: created + d, of_primary: true });
        // Key flags absent: the key may do whatever its algorithm can (RFC 9580 §5.2.3.29).
        let signs = newest.is_none_or(|s| !has_key_flags(s) || s.key_flags().sign());
        Standing {
            what: format!("key {key_id}"),
            created,
            expires,
            revoked: !key.details.revocation_signatures.is_empty(),
            signs,
        }
    }

    /// A subkey's standing under its primary key's: valid no longer than the primary, revoked
    /// with it, and signing only if its newest binding signature says so (which
    /// `SignedPublicKey::verify_bindings` checked carries the subkey's back-signature).
    pub fn subkey(primary: &Standing, sub: &SignedPublicSubKey) -> Standing {
        let created = u64::from(sub.key.created_at().as_secs());
        let binding = sub
            .signatures
            .iter()
            .filter(|s| s.typ() == Some(SignatureType::SubkeyBinding))
            .max_by_key(|s| seconds(s.created()));
        let own = binding.and_then(lifetime).map(|d| Expiry { at: created + d, of_primary: false });
        let expires = match (own, primary.expires) {
            (Some(own), Some(p)) => Some(if p.at < own.at { p } else { own }),
            (own, p) => own.or(p),
        };
        let revoked_itself = sub.signatures.iter().any(|s| s.typ() == Some(SignatureType::SubkeyRevocation));
        Standing {
            what: format!("subkey {} of {}", sub.key.legacy_key_id().to_string().to_uppercase(), primary.what),
            created,
            expires,
            revoked: primary.revoked || revoked_itself,
            signs: binding.is_some_and(|b| b.key_flags().sign()),
        }
    }

    /// Whether this key may have made a signature created at `signed` (Unix seconds), judged
    /// at `now`.
    pub fn may_have_signed(&self, signed: u64, now: u64) -> Result<(), Refusal> {
        let what = &self.what;
        if self.revoked {
            return Err(format!("the signature was made by {what}, which is revoked"));
        }
        if !self.signs {
            return Err(format!(
                "the signature was made by {what}, whose key flags do not allow signing (a certify-only or \
                 encryption key)"
            ));
        }
        if signed < self.created {
            return Err(format!(
                "the signature is dated {}, before {what} was created ({})",
                crate::clock::rfc3339(signed as i64),
                crate::clock::rfc3339(self.created as i64)
            ));
        }
        match self.expires {
            Some(expiry) if expiry.at < signed || expiry.at < now => Err(format!(
                "the signature was made by {what}, which {} at {}{}",
                if expiry.at < signed { "had expired when it signed," } else { "expired" },
                crate::clock::rfc3339(expiry.at as i64),
                if expiry.of_primary && what.starts_with("subkey") {
                    " (its primary key's expiry: a subkey is never valid past its primary key)"
                } else {
                    ""
                }
            )),
            _ => Ok(()),
        }
    }
}

fn seconds(t: Option<pgp::types::Timestamp>) -> u64 {
    t.map(|t| u64::from(t.as_secs())).unwrap_or(0)
}

/// A self-signature's key expiration time, in seconds after the key's creation (0: never).
fn lifetime(sig: &Signature) -> Option<u64> {
    sig.key_expiration_time().map(|d| u64::from(d.as_secs())).filter(|&d| d > 0)
}

fn has_key_flags(sig: &Signature) -> bool {
    sig.config().is_some_and(|c| c.hashed_subpackets().any(|p| matches!(p.data, SubpacketData::KeyFlags(_))))
}
