use super::*;
use crate::testing::signing::TestKey;

const NOW: u64 = 1_800_000_000;

#[test]
fn a_signature_verifies_with_the_key_that_made_it_only() {
    let (a, b) = (TestKey::generate("a"), TestKey::generate("b"));
    let keys = parse_keys("a.asc", a.public_armor().as_bytes()).unwrap();
    assert_eq!(keys.len(), 1);
    assert_eq!(keys[0].key_id, a.key_id());
    assert_eq!(keys[0].key_id.len(), 16);
    let doc = b"0000000000000000000000000000000000000000000000000000000000000000  x.zip\n";
    let sig = a.sign(doc);
    assert_eq!(verify(&keys, doc, &sig, NOW).unwrap().key_id, a.key_id());
    // Another document, another key, a key set without the signer: refused, saying why.
    let other = verify(&keys, b"something else", &sig, NOW).unwrap_err();
    assert!(other.contains(&a.key_id()) && other.contains("does not verify over SHA256SUMS"), "{other}");
    let by_b = verify(&keys, doc, &b.sign(doc), NOW).unwrap_err();
    assert!(by_b.contains(&b.key_id()) && by_b.contains(&a.key_id()), "{by_b}");
    assert!(verify(&[], doc, &sig, NOW).unwrap_err().contains("no signing keys"));
    // Rotation: with both keys, either signature verifies.
    let mut both = keys.clone();
    both.extend(parse_keys("b.asc", b.public_armor().as_bytes()).unwrap());
    assert_eq!(verify(&both, doc, &b.sign(doc), NOW).unwrap().key_id, b.key_id());
    // Armored signatures, garbage, and huge input are refused with a reason.
    assert!(verify(&keys, doc, b"-----BEGIN PGP SIGNATURE-----", NOW).unwrap_err().contains("binary"));
    assert!(verify(&keys, doc, b"garbage", NOW).unwrap_err().contains("not an OpenPGP signature"));
    assert!(verify(&keys, doc, &vec![0u8; SIGNATURE_MAX_BYTES + 1], NOW).unwrap_err().contains("over"));
}

#[test]
fn expired_keys_are_refused() {
    let key = TestKey::generate_expiring("old", 3600);
    let keys = parse_keys("old.asc", key.public_armor().as_bytes()).unwrap();
    let doc = b"doc";
    let sig = key.sign(doc);
    let now = crate::clock::now_unix() as u64;
    assert!(verify(&keys, doc, &sig, now).is_ok());
    let why = verify(&keys, doc, &sig, now + 7200).unwrap_err();
    assert!(why.contains("expired"), "{why}");
}

/// The corpus `testdata/signing/make.sh` made with GnuPG: each case's key and signature
/// over `SHA256SUMS`, judged at an instant, and what the refusal must say (empty: accepted).
#[test]
fn the_gpg_corpus_is_judged_as_openpgp_says() {
    const T0: u64 = 1_735_689_600; // when make.sh made every key
    const DAY: u64 = 86_400;
    let read = |file: &str| {
        let path = format!("{}/testdata/signing/{file}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    };
    let sums = read("SHA256SUMS");
    let cases: &[(&str, u64, &[&str])] = &[
        ("good", T0 + 2 * DAY, &[]),
        ("good", T0 + 3650 * DAY, &[]),
        ("rsa3072", T0 + 2 * DAY, &[]),
        ("subkey-outlives-primary", T0 + 100 * DAY, &[]),
        // The primary expired after a year; its subkey's own five years do not count.
        (
            "subkey-outlives-primary",
            T0 + 400 * DAY,
            &["subkey", "expired at 2026-01-01", "never valid past its primary key"],
        ),
        ("revoked-subkey", T0 + 2 * DAY, &["subkey", "revoked"]),
        ("revoked-primary", T0 + 2 * DAY, &["revoked"]),
        ("not-for-signing", T0 + 3 * DAY, &["key flags do not allow signing"]),
        ("sha1", T0 + 2 * DAY, &["SHA1 digest", "too weak"]),
        ("md5", T0 + 2 * DAY, &["MD5 digest", "too weak"]),
        ("rsa1024", T0 + 2 * DAY, &["RSA of 1024 bits", "below the 2048"]),
        ("other-bytes", T0 + 2 * DAY, &["does not verify over SHA256SUMS"]),
        // Expiry and key flags come from valid self-certifications only (issue 44). Expired
        // on 2024-01-01, a user ID revoked before: the revocation carries no expiry, and the
        // signature, dated before the expiry as a backdated one is, is refused once it passed.
        ("expired-uid-revoked", 1_701_388_800, &[]), // 2023-12-01
        ("expired-uid-revoked", T0 + 2 * DAY, &["expired at 2024-01-01"]),
        // Certify-only, then a user ID added and revoked: the revocation carries no key flags.
        ("certify-only-uid-revoked", T0 + 5 * DAY, &["key flags do not allow signing"]),
        // Its only self-certification is over SHA-1: refused, with the gpg command that re-signs it.
        (
            "sha1-self-cert",
            T0 + 2 * DAY,
            &["newest self-signature over user ID \"Sha1 <sha1@example.com>\"", "SHA1 digest", "--quick-set-expire"],
        ),
        // An old SHA-1 self-certification superseded by a SHA-256 one: the newer one counts.
        ("sha1-superseded", T0 + 3 * DAY, &[]),
        // The primary user ID's certification expires the key on 2025-02-03; a newer one of
        // another user ID, which sets no expiry, does not lift it.
        ("primary-uid-expires", T0 + 10 * DAY, &[]),
        ("primary-uid-expires", T0 + 40 * DAY, &["expired at 2025-02-03"]),
        ("signing-subkey", T0 + 2 * DAY, &[]),
        ("sha1-subkey-binding", T0 + 3 * DAY, &["subkey", "newest binding signature", "SHA1 digest", "bind it again"]),
        // A newer self-signature over SHA-1 that restricts, beside the older SHA-256 one it
        // replaced (the red team's finding): gpg honours it (expired, certify-only, subkey
        // expired). Passing over it for the older one lifted the restriction; the key is refused,
        // before the expiry it sets as after.
        ("sha1-expiry", T0 + 10 * DAY, &["newest self-signature over user ID \"Lax <lax@example.com>\"", "SHA1"]),
        ("sha1-expiry", T0 + 2 * DAY, &["2025-01-02T00:00:00Z", "SHA1 digest", "--cert-digest-algo SHA256"]),
        ("sha1-certify-only", T0 + 2 * DAY, &["newest self-signature over user ID", "SHA1 digest"]),
        ("sha1-subkey-expiry", T0 + 10 * DAY, &["subkey", "newest binding signature", "SHA1 digest"]),
        // The key revoked, and an export from before the revocation after it in the file: gpg
        // merges the two copies, so the key is revoked; the stale copy does not stand apart.
        ("stale-copy", T0 + 2 * DAY, &["revoked"]),
    ];
    let mut wrong = Vec::new();
    for &(name, now, why) in cases {
        let keys = parse_keys(name, &read(&format!("{name}.asc"))).unwrap_or_else(|e| panic!("{name}: {e}"));
        match verify(&keys, &sums, &read(&format!("{name}.sig")), now) {
            Ok(k) if why.is_empty() => assert_eq!(k.key_id, keys[0].key_id, "{name}"),
            Ok(_) => wrong.push(format!("{name} at {now}: accepted, expected {why:?}")),
            Err(e) if why.is_empty() => wrong.push(format!("{name} at {now}: refused: {e}")),
            // A key's refusal names it; a weak digest is refused before any key is tried.
            Err(e)
                if why.iter().all(|w| e.contains(w))
                    && (e.contains(&keys[0].key_id) || ["sha1", "md5"].contains(&name)) => {}
            Err(e) => wrong.push(format!("{name} at {now}: {e}\nexpected {why:?}")),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

/// A key in two key files (or two armor blocks of one): its copies are judged as one key, as
/// gpg merges them. `stale-copy.asc` holds the key revoked, then an export from before.
#[test]
fn copies_of_a_key_are_judged_as_one() {
    const T0: u64 = 1_735_689_600;
    let read = |file: &str| std::fs::read(format!("{}/testdata/signing/{file}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let (sums, sig) = (read("SHA256SUMS"), read("stale-copy.sig"));
    let text = String::from_utf8(read("stale-copy.asc")).unwrap();
    let end = "-----END PGP PUBLIC KEY BLOCK-----";
    let (revoked, stale) = text.split_once(end).map(|(a, b)| (format!("{a}{end}\n"), b.to_string())).unwrap();
    let revoked = parse_keys("revoked.asc", revoked.as_bytes()).unwrap();
    let stale = parse_keys("stale.asc", stale.as_bytes()).unwrap();
    assert!(verify(&stale, &sums, &sig, T0 + 86_400).is_ok(), "the stale copy alone is not revoked");
    for keys in [[revoked.clone(), stale.clone()].concat(), [stale.clone(), revoked.clone()].concat()] {
        let why = verify(&keys, &sums, &sig, T0 + 86_400).unwrap_err();
        assert!(why.contains("revoked") && why.contains(&keys[0].key_id), "{why}");
    }
    // The same key twice, alike: accepted, as once.
    let good = parse_keys("good.asc", &read("good.asc")).unwrap();
    assert!(verify(&[good.clone(), good].concat(), &sums, &read("good.sig"), T0 + 86_400).is_ok());
}

#[test]
fn key_files_are_checked() {
    let key = TestKey::generate("a");
    assert!(parse_keys("k", key.secret_armor().as_bytes()).unwrap_err().contains("PRIVATE"));
    assert!(parse_keys("k", b"hello").unwrap_err().contains("not an ASCII-armored public key"));
    assert!(parse_keys("k", &[0xff, 0xfe]).unwrap_err().contains("not ASCII-armored"));
    let broken = "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nAAAA\n-----END PGP PUBLIC KEY BLOCK-----\n";
    assert!(parse_keys("k", broken.as_bytes()).is_err());
    // Two keys in one file: both kept, each armored alone.
    let two = format!("{}{}", key.public_armor(), TestKey::generate("b").public_armor());
    let keys = parse_keys("k", two.as_bytes()).unwrap();
    assert_eq!(keys.len(), 2);
    assert!(keys.iter().all(|k| k.ascii_armor.matches("BEGIN PGP PUBLIC KEY BLOCK").count() == 1));
}

#[test]
fn shasums_files() {
    let h = "a".repeat(64);
    let sums = parse_shasums(format!("{h}  one.zip\n{} *two.zip\n\n", "B".repeat(64)).as_bytes()).unwrap();
    assert_eq!(sums["one.zip"], h);
    assert_eq!(sums["two.zip"], "b".repeat(64));
    for bad in [format!("{h} one.zip"), format!("{h}  a\n{h}  a"), "xyz  a".into(), h.to_string()] {
        assert!(parse_shasums(bad.as_bytes()).is_err(), "{bad:?}");
    }
}
