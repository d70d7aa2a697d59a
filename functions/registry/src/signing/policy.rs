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
//! A key's expiry and key flags are read only from the self-signatures that bind it, as
//! [`super::bindings`] chooses them ([`Standing::primary`], [`Standing::subkey`]). When the
//! self-signature that would speak for a binding is over a weak digest, the key (or the subkey)
//! is refused, with the gpg command that re-signs it: a weak one may not lift what an older one
//! says, and passing over it for the older one would lift what it may restrict.
//!
//! Any key or subkey revocation refuses, whatever its reason, time and digest: a registry
//! cannot tell a signature made before a key's compromise from one made after, and the
//! publisher can sign again. A revocation can only take trust away, so honouring one that would
//! not count as a self-signature (over SHA-1, say) fails closed. A user ID's revocation is the
//! exception (`bindings`): it takes a certification out, which can let a laxer one speak, so it
//! speaks as a certification does (the newest of the two; over a weak digest, it refuses the key).
//! Copies of one key in several files or armor blocks are judged as one ([`super::verify`]).

use pgp::composed::{SignedPublicKey, SignedPublicSubKey};
use pgp::packet::{Signature, SignatureType, SubpacketData};
use pgp::ser::Serialize;
use pgp::types::{EcdsaPublicParams, KeyDetails, PublicParams};

use super::Refusal;
use super::bindings::{Unbound, bindings, strong, subkey_binding};

/// The smallest RSA or DSA modulus accepted, in bits (NIST SP 800-131A: 1,024-bit keys have
/// been disallowed for signatures since 2014).
pub const MODULUS_BITS_MIN: u16 = 2048;

/// Whether a signature's digest is strong enough.
pub fn digest(sig: &Signature) -> Result<(), Refusal> {
    match sig.hash_alg() {
        alg if strong(alg) => Ok(()),
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
    /// The primary key's standing, from the self-signatures that bind it (`bindings`);
    /// refused when none does (unless it is revoked, which refuses first anyway).
    pub fn primary(key: &SignedPublicKey, key_id: &str, now: u64) -> Result<Standing, Refusal> {
        let what = format!("key {key_id}");
        let created = u64::from(key.primary_key.created_at().as_secs());
        let revoked = !key.details.revocation_signatures.is_empty();
        let resign =
            format!("gpg --cert-digest-algo SHA256 --quick-set-expire {:X} EXPIRY", key.primary_key.fingerprint());
        let bindings = match bindings(key, created, now) {
            Ok(bindings) => bindings,
            Err(_) if revoked => Vec::new(),
            Err(Unbound::Nothing(why)) => {
                return Err(format!(
                    "the signature was made by {what}, which no valid self-signature binds ({why}): a key counts only \
                     through a certification of one of its user IDs (or a direct-key signature) made by the key \
                     itself over SHA-256 or stronger; re-sign it ({resign}) and upload the public key again"
                ));
            }
            Err(Unbound::Weak { what: weak, remedy }) => {
                return Err(refuse_weak(&what, &weak, remedy, format!("re-sign the key over SHA-256 ({resign})")));
            }
        };
        // Both a direct-key signature and the user ID certification speak for the key (RFC 9580
        // §5.2.3.3: a direct-key signature's subpackets apply to the whole key; the CLI, like gpg,
        // reads a v4 key's expiry and flags from its primary user ID). Where they differ, the
        // stricter holds, so that neither can lift what the other sets: the earlier expiry, and
        // signing only if each one that carries key flags allows it (none: whatever the
        // algorithm can, RFC 9580 §5.2.3.29).
        let expires =
            bindings.iter().filter_map(|s| lifetime(s)).min().map(|d| Expiry { at: created + d, of_primary: true });
        let signs = bindings.iter().all(|s| !has_key_flags(s) || s.key_flags().sign());
        Ok(Standing { what, created, expires, revoked, signs })
    }

    /// A subkey's standing under its primary key's: valid no longer than the primary, revoked
    /// with it, and signing only if its newest valid binding signature (0x18, with the subkey's
    /// back-signature when it grants signing) says so; refused when no binding counts.
    pub fn subkey(
        key: &SignedPublicKey,
        primary: &Standing,
        sub: &SignedPublicSubKey,
        now: u64,
    ) -> Result<Standing, Refusal> {
        let what = format!("subkey {} of {}", sub.key.legacy_key_id().to_string().to_uppercase(), primary.what);
        let created = u64::from(sub.key.created_at().as_secs());
        let revoked =
            primary.revoked || sub.signatures.iter().any(|s| s.typ() == Some(SignatureType::SubkeyRevocation));
        let rebind = format!(
            "gpg --cert-digest-algo SHA256 --quick-set-expire {:X} EXPIRY {:X}",
            key.primary_key.fingerprint(),
            sub.key.fingerprint()
        );
        let binding = match subkey_binding(&key.primary_key, sub, created, now) {
            Ok(binding) => Some(binding),
            Err(_) if revoked => None,
            Err(Unbound::Nothing(why)) => {
                return Err(format!(
                    "the signature was made by {what}, which no valid binding signature binds to its primary key \
                     ({why}); bind it again over SHA-256 or stronger ({rebind}) and upload the public key again"
                ));
            }
            Err(Unbound::Weak { what: weak, remedy }) => {
                return Err(refuse_weak(&what, &weak, remedy, format!("bind it again over SHA-256 ({rebind})")));
            }
        };
        let own = binding.and_then(lifetime).map(|d| Expiry { at: created + d, of_primary: false });
        let expires = match (own, primary.expires) {
            (Some(own), Some(p)) => Some(if p.at < own.at { p } else { own }),
            (own, p) => own.or(p),
        };
        Ok(Standing { what, created, expires, revoked, signs: binding.is_some_and(|b| b.key_flags().sign()) })
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

/// The refusal of a key (`what`) whose binding speaks through a weak self-signature (`weak`, a
/// phrase from [`super::bindings`]): what it is, why it can be neither honoured nor passed over,
/// and how to mend the key (`remedy`, else `mend`).
fn refuse_weak(what: &str, weak: &str, remedy: Option<String>, mend: String) -> Refusal {
    format!(
        "the signature was made by {what}, whose {}, which is too weak to trust: it may not lift what an older \
         self-signature says (it could be forged), nor may an older one stand in for it (it may be the key \
         holder's own restriction: an expiry, or key flags that do not allow signing); {} and upload the public \
         key again",
        weak.strip_prefix("its ").unwrap_or(weak),
        remedy.unwrap_or(mend)
    )
}

/// A self-signature's key expiration time, in seconds after the key's creation (0: never).
fn lifetime(sig: &Signature) -> Option<u64> {
    sig.key_expiration_time().map(|d| u64::from(d.as_secs())).filter(|&d| d > 0)
}

fn has_key_flags(sig: &Signature) -> bool {
    sig.config().is_some_and(|c| c.hashed_subpackets().any(|p| matches!(p.data, SubpacketData::KeyFlags(_))))
}

/// Self-signatures made one by one with rpgp, for the rules GnuPG will not break on request (a
/// direct-key signature, dates outside the key's life, a weak back-signature, another key's
/// certification, weak self-signatures beside strong ones); the GnuPG corpus (`super::tests`)
/// holds what gpg makes.
#[cfg(test)]
mod tests;
