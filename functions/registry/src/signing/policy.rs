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
mod tests {
    use std::sync::OnceLock;

    use pgp::crypto::hash::HashAlgorithm;
    use pgp::types::Tag;

    use pgp::composed::{EncryptionCaps, KeyType, SecretKeyParamsBuilder, SignedSecretKey, SubkeyParamsBuilder};
    use pgp::packet::{KeyFlags, SignatureConfig, Subpacket};
    use pgp::types::{Duration, Password, Timestamp};

    use super::*;

    const BORN: u32 = 1_700_000_000;
    const DAY: u32 = 86_400;
    const NOW: u64 = 1_800_000_000;
    const SHA256: HashAlgorithm = HashAlgorithm::Sha256;
    const SHA1: HashAlgorithm = HashAlgorithm::Sha1;

    /// An RSA key (RSA: rpgp signs SHA-1 with nothing else) made at `BORN`, with user IDs
    /// `main` and `other` and a subkey; made once, its self-signatures replaced by each case.
    fn secret() -> &'static SignedSecretKey {
        static KEY: OnceLock<SignedSecretKey> = OnceLock::new();
        KEY.get_or_init(|| generate(KeyType::Rsa(2048)))
    }

    fn generate(kind: KeyType) -> SignedSecretKey {
        let sub = SubkeyParamsBuilder::default()
            .key_type(kind.clone())
            .can_sign(true)
            .created_at(Timestamp::from_secs(BORN))
            .build()
            .unwrap();
        SecretKeyParamsBuilder::default()
            .key_type(kind)
            .can_sign(true)
            .can_certify(true)
            .can_encrypt(EncryptionCaps::None)
            .created_at(Timestamp::from_secs(BORN))
            .primary_user_id("main <main@example.com>".into())
            .user_ids(vec!["other <other@example.com>".into()])
            .subkeys(vec![sub])
            .build()
            .unwrap()
            .generate(rand::thread_rng())
            .unwrap()
    }

    /// A signature of `typ` made `days` after the key, over `hash`, with `more` subpackets.
    fn config(typ: SignatureType, hash: HashAlgorithm, days: i64, more: &[SubpacketData]) -> SignatureConfig {
        let mut config = SignatureConfig::v4(typ, secret().primary_key.algorithm(), hash);
        let made = Timestamp::from_secs((i64::from(BORN) + days * i64::from(DAY)) as u32);
        config.hashed_subpackets = [SubpacketData::SignatureCreationTime(made)]
            .iter()
            .chain(more)
            .map(|data| Subpacket::regular(data.clone()).unwrap())
            .collect();
        config
    }

    fn flags(sign: bool) -> SubpacketData {
        let mut flags = KeyFlags::default();
        flags.set_certify(true);
        flags.set_sign(sign);
        SubpacketData::KeyFlags(flags)
    }

    fn expires(days: u32) -> SubpacketData {
        SubpacketData::KeyExpirationTime(Duration::from_secs(days * DAY))
    }

    /// A certification of user ID `user` (0: main, 1: other) by `by`.
    fn certify(by: &SignedSecretKey, user: usize, mut config: SignatureConfig) -> Signature {
        let (primary, id) = (&by.primary_key, &secret().details.users[user].id);
        config.pub_alg = primary.algorithm();
        config.sign_certification(primary, primary.public_key(), &Password::empty(), Tag::UserId, id).unwrap()
    }

    fn direct(config: SignatureConfig) -> Signature {
        let primary = &secret().primary_key;
        config.sign_key(primary, &Password::empty(), primary.public_key()).unwrap()
    }

    /// A subkey binding; `back`: the back-signature's digest, if it has one.
    fn bind(config: SignatureConfig, back: Option<HashAlgorithm>) -> Signature {
        let (primary, sub) = (&secret().primary_key, &secret().secret_subkeys[0].key);
        let mut config = config;
        if let Some(hash) = back {
            let back = config_for(SignatureType::KeyBinding, hash)
                .sign_primary_key_binding(sub, sub.public_key(), &Password::empty(), primary.public_key())
                .unwrap();
            config
                .hashed_subpackets
                .push(Subpacket::regular(SubpacketData::EmbeddedSignature(Box::new(back))).unwrap());
        }
        config.sign_subkey_binding(primary, primary.public_key(), &Password::empty(), sub.public_key()).unwrap()
    }

    fn config_for(typ: SignatureType, hash: HashAlgorithm) -> SignatureConfig {
        config(typ, hash, 1, &[])
    }

    /// The key with these self-signatures: over `main`, over `other`, direct.
    fn key(main: Vec<Signature>, other: Vec<Signature>, direct: Vec<Signature>) -> SignedPublicKey {
        let mut key = SignedPublicKey::from(secret().clone());
        key.details.users[0].signatures = main;
        key.details.users[1].signatures = other;
        key.details.users.retain(|u| !u.signatures.is_empty());
        key.details.direct_signatures = direct;
        key
    }

    fn standing(key: &SignedPublicKey) -> Result<(Option<u64>, bool), Refusal> {
        Standing::primary(key, "K", NOW)
            .map(|s| (s.expires.map(|e| (e.at - u64::from(BORN)) / u64::from(DAY)), s.signs))
    }

    fn cert(days: i64, more: &[SubpacketData]) -> SignatureConfig {
        config(SignatureType::CertPositive, SHA256, days, more)
    }

    #[test]
    fn only_valid_self_certifications_say_what_a_key_may_do() {
        let base = || certify(secret(), 0, cert(1, &[flags(true), expires(10)]));
        assert_eq!(standing(&key(vec![base()], vec![], vec![])), Ok((Some(10), true)));
        // Each is newer than the base certification and would lift its expiry, but is not the key
        // holder's word: whatever its digest, it does not verify, or is dated in the future.
        let revocation = certify(secret(), 1, config(SignatureType::CertRevocation, SHA256, 5, &[]));
        let sha1 = |days| config(SignatureType::CertPositive, SHA1, days, &[]);
        let ignored = [
            ("the other user ID, revoked", vec![base()], vec![certify(secret(), 1, cert(2, &[])), revocation.clone()]),
            ("dated in the future", vec![base(), certify(secret(), 0, cert(1200, &[]))], vec![]),
            ("over SHA-1, dated in the future", vec![base(), certify(secret(), 0, sha1(1200))], vec![]),
            ("by another key", vec![base(), certify(&generate(KeyType::Ed25519Legacy), 0, cert(5, &[]))], vec![]),
            ("over another user ID", vec![base(), certify(secret(), 1, cert(5, &[]))], vec![]),
            ("over SHA-1 and another user ID", vec![base(), certify(secret(), 1, sha1(5))], vec![]),
        ];
        for (what, main, other) in ignored {
            assert_eq!(standing(&key(main, other, vec![])), Ok((Some(10), true)), "{what}");
        }
        // Key flags likewise: a certify-only key stays so.
        let certify_only = certify(secret(), 0, cert(1, &[flags(false)]));
        let other = vec![certify(secret(), 1, cert(1, &[flags(false)])), revocation];
        assert_eq!(standing(&key(vec![certify_only], other, vec![])), Ok((None, false)));
    }

    /// The red team's finding: a newer self-signature over SHA-1 that restricts the key was passed
    /// over for the older, laxer one. Whatever it says, the key is refused; an older weak one that a
    /// newer strong one supersedes says nothing.
    #[test]
    fn a_weak_self_signature_that_would_speak_refuses_the_key() {
        let lax = || certify(secret(), 0, cert(1, &[flags(true)]));
        let weak = |user, more: &[SubpacketData]| {
            let mut all = vec![flags(true)];
            all.extend_from_slice(more);
            certify(secret(), user, config(SignatureType::CertPositive, SHA1, 2, &all))
        };
        let refused = |key: SignedPublicKey, why: &str| {
            let refusal = standing(&key).unwrap_err();
            assert!(refusal.contains(why) && refusal.contains("SHA1 digest"), "{refusal}");
            assert!(refusal.contains("nor may an older one stand in for it"), "{refusal}");
            refusal
        };
        // It sets an expiry (gpg: expired), takes the sign flag away (gpg: certify-only), or lifts.
        let expiry = refused(key(vec![lax(), weak(0, &[expires(2)])], vec![], vec![]), "user ID \"main <main");
        assert!(expiry.contains("(a certification made 2023-11-16T22:13:20Z)"), "{expiry}");
        let certify_only = certify(secret(), 0, config(SignatureType::CertPositive, SHA1, 2, &[flags(false)]));
        refused(key(vec![lax(), certify_only], vec![], vec![]), "user ID \"main <main");
        let base = certify(secret(), 0, cert(1, &[flags(true), expires(10)]));
        refused(key(vec![base, weak(0, &[])], vec![], vec![]), "user ID \"main <main");
        // On whichever user ID it is, it refuses: which user ID speaks can turn on it (marked
        // primary, it would set the expiry the other lacks; on `other`, newer, it would speak for it).
        let weak_primary = weak(0, &[expires(2), SubpacketData::IsPrimary(true)]);
        refused(key(vec![weak_primary], vec![certify(secret(), 1, cert(3, &[flags(true)]))], vec![]), "\"main <main");
        refused(key(vec![lax()], vec![weak(1, &[])], vec![]), "user ID \"other <other");
        // A weak revocation: honoured, it could let a laxer user ID speak; passed over, it keeps in
        // the one it revoked. gpg does not re-sign a revoked user ID, so the remedy is to leave it out.
        let revoke = |hash, days| certify(secret(), 0, config(SignatureType::CertRevocation, hash, days, &[]));
        let strict_main = || certify(secret(), 0, cert(1, &[flags(true), expires(10), SubpacketData::IsPrimary(true)]));
        let other = || certify(secret(), 1, cert(2, &[flags(true)]));
        let revoked = refused(key(vec![strict_main(), revoke(SHA1, 3)], vec![other()], vec![]), "(a revocation made");
        assert!(revoked.contains("keep-uid='uid <> main <main@example.com>'"), "{revoked}");
        // Certified again over SHA-1 after a revocation: the weak certification would speak.
        let again = vec![
            strict_main(),
            revoke(SHA256, 3),
            certify(secret(), 0, config(SignatureType::CertPositive, SHA1, 4, &[])),
        ];
        refused(key(again, vec![other()], vec![]), "(a certification made");
        // A weak direct-key signature, newer than the certification or not.
        let dks = |days| direct(config(SignatureType::Key, SHA1, days, &[expires(5)]));
        for days in [0, 2] {
            refused(key(vec![lax()], vec![], vec![dks(days)]), "newest direct-key signature");
        }
        // Superseded by a newer strong one (gpg's own upgrade), a weak one says nothing.
        let superseded = vec![weak(0, &[expires(2)]), certify(secret(), 0, cert(3, &[flags(true), expires(30)]))];
        assert_eq!(standing(&key(superseded, vec![], vec![])), Ok((Some(30), true)));
        let revoked_then_again = vec![strict_main(), revoke(SHA1, 2), certify(secret(), 0, cert(3, &[flags(true)]))];
        assert_eq!(standing(&key(revoked_then_again, vec![other()], vec![])), Ok((None, true)));
        let direct_superseded = vec![dks(0), direct(config(SignatureType::Key, SHA256, 1, &[expires(20)]))];
        assert_eq!(standing(&key(vec![lax()], vec![], direct_superseded)), Ok((Some(20), true)));
    }

    #[test]
    fn the_primary_user_id_speaks_unless_revoked() {
        let main = |primary: bool| {
            let mut more = vec![flags(true), expires(10)];
            more.extend(primary.then_some(SubpacketData::IsPrimary(true)));
            certify(secret(), 0, cert(1, &more))
        };
        let other = || certify(secret(), 1, cert(2, &[flags(true)]));
        let revoke = |hash, days| certify(secret(), 0, config(SignatureType::CertRevocation, hash, days, &[]));
        // Marked primary, it speaks though the other's is newer; unmarked, the newest speaks.
        assert_eq!(standing(&key(vec![main(true)], vec![other()], vec![])), Ok((Some(10), true)));
        assert_eq!(standing(&key(vec![main(false)], vec![other()], vec![])), Ok((None, true)));
        // Revoked, it says nothing; certified again after, it speaks again.
        assert_eq!(standing(&key(vec![main(true), revoke(SHA256, 3)], vec![other()], vec![])), Ok((None, true)));
        let again = certify(secret(), 0, cert(4, &[flags(true), expires(10), SubpacketData::IsPrimary(true)]));
        let revoked_then_again = vec![main(true), revoke(SHA256, 3), again];
        assert_eq!(standing(&key(revoked_then_again, vec![other()], vec![])), Ok((Some(10), true)));
        // Revoked in the same second as it was certified, it is revoked.
        assert_eq!(standing(&key(vec![main(true), revoke(SHA256, 1)], vec![other()], vec![])), Ok((None, true)));
        // A revocation dated in the future leaves it in: taking it out would let the laxer
        // certification of `other` speak. (A weak one refuses the key: see above.)
        let future = revoke(SHA256, 1200);
        assert_eq!(standing(&key(vec![main(true), future], vec![other()], vec![])), Ok((Some(10), true)));
    }

    #[test]
    fn a_direct_key_signature_speaks_with_the_user_ids() {
        let main = |more: &[SubpacketData]| vec![certify(secret(), 0, cert(1, more))];
        let dks = |days, more: &[SubpacketData]| direct(config(SignatureType::Key, SHA256, days, more));
        // The stricter of the two holds, whichever is newer.
        assert_eq!(standing(&key(main(&[flags(true)]), vec![], vec![dks(2, &[expires(20)])])), Ok((Some(20), true)));
        let both = key(main(&[flags(true), expires(20)]), vec![], vec![dks(2, &[expires(30), flags(true)])]);
        assert_eq!(standing(&both), Ok((Some(20), true)));
        let certify_only = key(main(&[flags(true)]), vec![], vec![dks(0, &[flags(false)])]);
        assert_eq!(standing(&certify_only), Ok((None, false)));
        // Alone, it binds the key; dated in the future, it does not (over SHA-1, it refuses: see above).
        assert_eq!(standing(&key(vec![], vec![], vec![dks(2, &[expires(5)])])), Ok((Some(5), true)));
        assert_eq!(standing(&key(main(&[flags(true)]), vec![], vec![dks(1200, &[expires(5)])])), Ok((None, true)));
    }

    #[test]
    fn a_key_that_no_valid_self_signature_binds_is_refused() {
        let weak = certify(secret(), 0, config(SignatureType::CertPositive, SHA1, 1, &[flags(true)]));
        let why = standing(&key(vec![weak], vec![], vec![])).unwrap_err();
        assert!(why.contains("newest self-signature over user ID") && why.contains("SHA1 digest"), "{why}");
        assert!(why.contains("gpg --cert-digest-algo SHA256 --quick-set-expire"), "{why}");
        let early = certify(secret(), 0, cert(-1, &[flags(true)]));
        assert!(standing(&key(vec![early], vec![], vec![])).unwrap_err().contains("before the key was made"));
        let lapsed = certify(secret(), 0, cert(1, &[SubpacketData::SignatureExpirationTime(Duration::from_secs(DAY))]));
        assert!(standing(&key(vec![lapsed], vec![], vec![])).unwrap_err().contains("expired at 2023-11-16"));
        let revoked = vec![
            certify(secret(), 0, cert(1, &[])),
            certify(secret(), 0, config(SignatureType::CertRevocation, SHA256, 2, &[])),
        ];
        assert!(standing(&key(revoked, vec![], vec![])).unwrap_err().contains("is revoked"));
        assert!(standing(&key(vec![], vec![], vec![])).unwrap_err().contains("no user ID"));
        // A revoked key is refused as revoked, whatever binds it.
        let mut gone = key(vec![], vec![], vec![]);
        gone.details.revocation_signatures = vec![direct(config(SignatureType::KeyRevocation, SHA1, 2, &[]))];
        assert!(
            Standing::primary(&gone, "K", NOW).unwrap().may_have_signed(NOW - 1, NOW).unwrap_err().contains("revoked")
        );
    }

    fn subkey(bindings: Vec<Signature>) -> Result<(Option<u64>, bool), Refusal> {
        let mut key = key(vec![certify(secret(), 0, cert(1, &[flags(true)]))], vec![], vec![]);
        key.public_subkeys[0].signatures = bindings;
        let primary = Standing::primary(&key, "K", NOW).unwrap();
        Standing::subkey(&key, &primary, &key.public_subkeys[0], NOW)
            .map(|s| (s.expires.map(|e| (e.at - u64::from(BORN)) / u64::from(DAY)), s.signs))
    }

    fn binding(hash: HashAlgorithm, days: i64, more: &[SubpacketData], back: Option<HashAlgorithm>) -> Signature {
        bind(config(SignatureType::SubkeyBinding, hash, days, more), back)
    }

    #[test]
    fn a_subkey_counts_through_its_newest_valid_binding() {
        let signs = |hash, days, back| binding(hash, days, &[flags(true)], back);
        assert_eq!(subkey(vec![signs(SHA256, 1, Some(SHA256))]), Ok((None, true)));
        for (bindings, why) in [
            (vec![signs(SHA256, 1, None)], "no back-signature"),
            (vec![signs(SHA256, 1200, Some(SHA256))], "in the future"),
            (vec![], "it has none"),
        ] {
            let refused = subkey(bindings).unwrap_err();
            assert!(refused.contains("no valid binding signature") && refused.contains(why), "{refused}");
        }
        // A newer binding that is not the key holder's word (dated in the future) leaves the older
        // one in force; a newer one that is, speaks.
        let certify_only = binding(SHA256, 1, &[flags(false)], None);
        assert_eq!(subkey(vec![certify_only.clone(), signs(SHA256, 1200, Some(SHA256))]), Ok((None, false)));
        assert_eq!(subkey(vec![certify_only, signs(SHA256, 2, Some(SHA256))]), Ok((None, true)));
    }

    /// A subkey's newest binding, or its back-signature, over SHA-1 refuses the subkey, whether
    /// it restricts (gpg: expired, or not for signing) or not; an older binding does not stand in.
    #[test]
    fn a_weak_binding_or_back_signature_refuses_the_subkey() {
        let good = || binding(SHA256, 1, &[flags(true)], Some(SHA256));
        let refused = |bindings: Vec<Signature>, why: &str| {
            let refusal = subkey(bindings).unwrap_err();
            assert!(
                refusal.contains("subkey") && refusal.contains(why) && refusal.contains("SHA1 digest"),
                "{refusal}"
            );
            assert!(refusal.contains("bind it again over SHA-256 (gpg --cert-digest-algo SHA256"), "{refusal}");
        };
        refused(vec![binding(SHA1, 1, &[flags(true)], Some(SHA256))], "newest binding signature (made");
        refused(vec![binding(SHA256, 1, &[flags(true)], Some(SHA1))], "back-signature by the subkey that uses");
        // Newer than a good one: it sets an expiry, takes the sign flag away, or its back-signature is weak.
        refused(vec![good(), binding(SHA1, 2, &[flags(true), expires(3)], Some(SHA256))], "newest binding");
        refused(vec![good(), binding(SHA1, 2, &[flags(false)], None)], "newest binding");
        refused(vec![good(), binding(SHA256, 2, &[flags(true), expires(3)], Some(SHA1))], "back-signature");
        // A newer binding that lets it sign without a back-signature: no older one stands in either.
        let unsigned = subkey(vec![good(), binding(SHA256, 2, &[flags(true), expires(3)], None)]).unwrap_err();
        assert!(
            unsigned.contains("no valid binding signature") && unsigned.contains("no back-signature"),
            "{unsigned}"
        );
        // Superseded by a newer strong one, a weak binding says nothing.
        let superseded =
            vec![binding(SHA1, 1, &[flags(false)], None), binding(SHA256, 2, &[flags(true)], Some(SHA256))];
        assert_eq!(subkey(superseded), Ok((None, true)));
    }
}
