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
        config.hashed_subpackets.push(Subpacket::regular(SubpacketData::EmbeddedSignature(Box::new(back))).unwrap());
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
    Standing::primary(key, "K", NOW).map(|s| (s.expires.map(|e| (e.at - u64::from(BORN)) / u64::from(DAY)), s.signs))
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
    let again =
        vec![strict_main(), revoke(SHA256, 3), certify(secret(), 0, config(SignatureType::CertPositive, SHA1, 4, &[]))];
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
    assert!(Standing::primary(&gone, "K", NOW).unwrap().may_have_signed(NOW - 1, NOW).unwrap_err().contains("revoked"));
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
        assert!(refusal.contains("subkey") && refusal.contains(why) && refusal.contains("SHA1 digest"), "{refusal}");
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
    assert!(unsigned.contains("no valid binding signature") && unsigned.contains("no back-signature"), "{unsigned}");
    // Superseded by a newer strong one, a weak binding says nothing.
    let superseded = vec![binding(SHA1, 1, &[flags(false)], None), binding(SHA256, 2, &[flags(true)], Some(SHA256))];
    assert_eq!(subkey(superseded), Ok((None, true)));
}
