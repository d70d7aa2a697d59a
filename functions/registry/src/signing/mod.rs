//! OpenPGP for provider releases: a namespace's signing keys, the detached signature over a
//! release's `SHA256SUMS`, and the `SHA256SUMS` file itself. The indexer checks all three
//! before a release is listed (`index::releases`); the terraform CLI checks the signature and
//! the hashes again when it installs, against the key the registry hands out.
//!
//! The checks are the CLI's (`getproviders.signatureAuthentication`, ProtonMail go-crypto)
//! made stricter where a registry should be: the signature must verify with a key (or signing
//! subkey) of the namespace whose self-signatures verify, under OpenPGP's rules for keys,
//! digests and algorithms ([`policy`], one function for publish, re-index and pull-through).
//! A key the namespace holds more than once (in several key files, or armor blocks) is judged
//! with the signatures of all its copies, as gpg merges them on import ([`with_copies`]).

mod bindings;
pub mod policy;

use std::collections::BTreeMap;

use pgp::composed::{Deserializable, DetachedSignature, SignedPublicKey};
use pgp::packet::{Signature, SignatureType};
use pgp::types::KeyDetails;

/// Longest signing key file read (a key with many signatures is still far below this).
pub const KEY_FILE_MAX_BYTES: usize = 256 << 10;
/// Longest `SHA256SUMS` read: one line per platform zip, a few hundred lines at most.
pub const SHASUMS_MAX_BYTES: usize = 256 << 10;
/// Longest detached signature read (an RSA-4096 signature is about 550 bytes).
pub const SIGNATURE_MAX_BYTES: usize = 16 << 10;

const BEGIN_PUBLIC: &str = "-----BEGIN PGP PUBLIC KEY BLOCK-----";

/// One public key of a namespace, as uploaded (ASCII-armored) and as the CLI is given it.
#[derive(Debug, Clone)]
pub struct SigningKey {
    /// The primary key's long key ID, upper-case hex (`key_id` in the protocol).
    pub key_id: String,
    /// The armored public key, as uploaded.
    pub ascii_armor: String,
    key: SignedPublicKey,
}

/// Why a release's signature is not accepted; the text goes into its rejection record.
pub type Refusal = String;

/// Parse one uploaded key file: ASCII-armored OpenPGP public key(s), each with valid
/// self-signatures. A file that holds a secret key is refused: it must never be in the bucket.
pub fn parse_keys(name: &str, bytes: &[u8]) -> Result<Vec<SigningKey>, Refusal> {
    if bytes.len() > KEY_FILE_MAX_BYTES {
        return Err(format!("signing key {name}: {} bytes, over {KEY_FILE_MAX_BYTES}", bytes.len()));
    }
    let text = std::str::from_utf8(bytes).map_err(|_| format!("signing key {name}: not ASCII-armored text"))?;
    if text.contains("PRIVATE KEY BLOCK") {
        return Err(format!(
            "signing key {name} holds a PRIVATE key: delete it from the bucket now and revoke it; upload only \
             `gpg --armor --export KEYID`"
        ));
    }
    if !text.contains(BEGIN_PUBLIC) {
        return Err(format!("signing key {name}: not an ASCII-armored public key (gpg --armor --export KEYID)"));
    }
    // One armor block per key (`gpg --armor --export A B` writes one block holding both; files
    // concatenated by hand hold several blocks): every key of every block.
    let mut parsed = Vec::new();
    for block in text.split(BEGIN_PUBLIC).skip(1) {
        let block = format!("{BEGIN_PUBLIC}{block}");
        let keys = SignedPublicKey::from_armor_many(std::io::Cursor::new(block.as_bytes()))
            .map_err(|e| format!("signing key {name}: unreadable: {e}"))?
            .0;
        for key in keys {
            parsed.push(key.map_err(|e| format!("signing key {name}: unreadable: {e}"))?);
        }
    }
    let mut keys = Vec::new();
    for key in parsed {
        key.verify_bindings().map_err(|e| format!("signing key {name}: self-signatures do not verify: {e}"))?;
        // The CLI is given each key on its own, so each is re-armored alone.
        let ascii_armor = key
            .to_armored_string(Default::default())
            .map_err(|e| format!("signing key {name}: cannot be armored again: {e}"))?;
        keys.push(SigningKey { key_id: key_id(&key), ascii_armor, key });
    }
    if keys.is_empty() {
        return Err(format!("signing key {name}: no public key in it"));
    }
    Ok(keys)
}

fn key_id(key: &SignedPublicKey) -> String {
    key.legacy_key_id().to_string().to_uppercase()
}

/// Check `signature` (a binary detached signature, what `gpg --detach-sign` and goreleaser
/// write) over `document` against `keys` at time `now` (Unix seconds). The key that made it,
/// or why none did, naming the key, the subkey and the rule ([`policy`]).
pub fn verify<'k>(
    keys: &'k [SigningKey],
    document: &[u8],
    signature: &[u8],
    now: u64,
) -> Result<&'k SigningKey, Refusal> {
    if signature.len() > SIGNATURE_MAX_BYTES {
        return Err(format!("the signature is {} bytes, over {SIGNATURE_MAX_BYTES}", signature.len()));
    }
    if signature.starts_with(b"-----BEGIN") {
        return Err("the signature is ASCII-armored; the terraform CLI reads only a binary one \
                    (gpg --detach-sign without --armor, as goreleaser's provider configuration does)"
            .into());
    }
    let sig = DetachedSignature::from_bytes(signature)
        .map_err(|e| format!("the signature is not an OpenPGP signature: {e}"))?
        .signature;
    if !matches!(sig.typ(), Some(SignatureType::Binary | SignatureType::Text)) {
        return Err(format!("the signature is of type {:?}, not a signature over a document", sig.typ()));
    }
    policy::digest(&sig)?;
    let created = sig.created().map(|t| u64::from(t.as_secs())).unwrap_or(0);
    if let Some(valid_for) = sig.signature_expiration_time().filter(|d| d.as_secs() > 0)
        && created + u64::from(valid_for.as_secs()) < now
    {
        return Err(format!(
            "the signature expired at {}",
            crate::clock::rfc3339((created + u64::from(valid_for.as_secs())) as i64)
        ));
    }
    let issuers: Vec<String> = sig.issuer_key_id().iter().map(|k| k.to_string().to_uppercase()).collect();
    let mut refusals = Vec::new();
    for key in keys {
        match check_key(keys, key, &sig, document, &issuers, created, now) {
            Ok(true) => return Ok(key),
            Ok(false) => {}
            Err(why) => refusals.push(why),
        }
    }
    if let Some(why) = refusals.into_iter().next() {
        return Err(why);
    }
    let known: Vec<&str> = keys.iter().map(|k| k.key_id.as_str()).collect();
    Err(if keys.is_empty() {
        "the namespace has no signing keys (upload its public key first: see docs/BUCKET.md)".into()
    } else {
        format!(
            "signed by key {}, which is not one of the namespace's signing keys ({})",
            if issuers.is_empty() { "(no issuer named)".to_string() } else { issuers.join(", ") },
            known.join(", ")
        )
    })
}

/// `key` with the signatures of every copy of it in `keys` (the same primary key, in another
/// armor block or key file), and its user IDs and subkeys listed twice made one, as gpg merges
/// them when it imports the files. Judged apart, an export from before a revocation or a
/// restriction stood for the key beside the current one, and the laxer copy won.
fn with_copies(keys: &[SigningKey], key: &SigningKey) -> SignedPublicKey {
    fn add(to: &mut Vec<Signature>, more: &[Signature]) {
        for sig in more {
            if !to.contains(sig) {
                to.push(sig.clone());
            }
        }
    }
    let mut merged = key.key.clone();
    merged.details.users.clear();
    merged.details.revocation_signatures.clear();
    merged.details.direct_signatures.clear();
    merged.public_subkeys.clear();
    for copy in keys.iter().map(|k| &k.key).filter(|k| k.primary_key == key.key.primary_key) {
        add(&mut merged.details.revocation_signatures, &copy.details.revocation_signatures);
        add(&mut merged.details.direct_signatures, &copy.details.direct_signatures);
        for user in &copy.details.users {
            match merged.details.users.iter_mut().find(|u| u.id == user.id) {
                Some(known) => add(&mut known.signatures, &user.signatures),
                None => merged.details.users.push(user.clone()),
            }
        }
        for sub in &copy.public_subkeys {
            match merged.public_subkeys.iter_mut().find(|s| s.key == sub.key) {
                Some(known) => add(&mut known.signatures, &sub.signatures),
                None => merged.public_subkeys.push(sub.clone()),
            }
        }
    }
    merged
}

/// Whether `key` (its primary key or one of its subkeys) made `sig`: `Ok(false)` if none did
/// and none is named as the issuer, `Err` if one did but may not be trusted ([`policy`], judged
/// with every copy of it in `keys`: [`with_copies`]), or is named as the issuer but the
/// signature does not verify over `document`.
fn check_key(
    keys: &[SigningKey],
    key: &SigningKey,
    sig: &Signature,
    document: &[u8],
    issuers: &[String],
    created: u64,
    now: u64,
) -> Result<bool, Refusal> {
    let k = &key.key;
    if sig.verify(&k.primary_key, document).is_ok() {
        let judged = with_copies(keys, key);
        let primary = policy::Standing::primary(&judged, &key.key_id, now)?;
        policy::strength(&k.primary_key, &primary.what)?;
        primary.may_have_signed(created, now)?;
        return Ok(true);
    }
    for sub in &k.public_subkeys {
        if sig.verify(&sub.key, document).is_ok() {
            let judged = with_copies(keys, key);
            let primary = policy::Standing::primary(&judged, &key.key_id, now)?;
            let sub = judged.public_subkeys.iter().find(|s| s.key == sub.key).unwrap_or(sub);
            let standing = policy::Standing::subkey(&judged, &primary, sub, now)?;
            policy::strength(&sub.key, &standing.what)?;
            standing.may_have_signed(created, now)?;
            return Ok(true);
        }
    }
    // Named as the issuer, yet no key of it verifies: the document is not what was signed.
    let ids = std::iter::once(k.primary_key.legacy_key_id())
        .chain(k.public_subkeys.iter().map(|s| s.key.legacy_key_id()))
        .map(|id| id.to_string().to_uppercase());
    if let Some(named) = ids.into_iter().find(|id| issuers.contains(id)) {
        let what =
            if named == key.key_id { format!("key {named}") } else { format!("subkey {named} of key {}", key.key_id) };
        return Err(format!(
            "the signature names {what}, one of the namespace's keys, as its signer, but does not verify over \
             SHA256SUMS as it is now: SHA256SUMS changed after it was signed, or the signature is of another file"
        ));
    }
    Ok(false)
}

/// A `SHA256SUMS` file: file name → lower-case hex SHA-256, as `sha256sum` (and goreleaser)
/// write it: `HEX  NAME` per line (`HEX *NAME` in binary mode).
pub fn parse_shasums(bytes: &[u8]) -> Result<BTreeMap<String, String>, Refusal> {
    if bytes.len() > SHASUMS_MAX_BYTES {
        return Err(format!("SHA256SUMS is {} bytes, over {SHASUMS_MAX_BYTES}", bytes.len()));
    }
    let text = std::str::from_utf8(bytes).map_err(|_| "SHA256SUMS is not text".to_string())?;
    let mut sums = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = || format!("SHA256SUMS line {} is not `HEX  FILE`: {:?}", n + 1, crate::address::printable(line));
        let (hash, name) = line.split_once(' ').ok_or_else(bad)?;
        let name = name.strip_prefix([' ', '*']).ok_or_else(bad)?;
        if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) || name.is_empty() {
            return Err(bad());
        }
        if sums.insert(name.to_string(), hash.to_ascii_lowercase()).is_some() {
            return Err(format!("SHA256SUMS lists {:?} twice", crate::address::printable(name)));
        }
    }
    Ok(sums)
}

#[cfg(test)]
mod tests {
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
                &[
                    "newest self-signature over user ID \"Sha1 <sha1@example.com>\"",
                    "SHA1 digest",
                    "--quick-set-expire",
                ],
            ),
            // An old SHA-1 self-certification superseded by a SHA-256 one: the newer one counts.
            ("sha1-superseded", T0 + 3 * DAY, &[]),
            // The primary user ID's certification expires the key on 2025-02-03; a newer one of
            // another user ID, which sets no expiry, does not lift it.
            ("primary-uid-expires", T0 + 10 * DAY, &[]),
            ("primary-uid-expires", T0 + 40 * DAY, &["expired at 2025-02-03"]),
            ("signing-subkey", T0 + 2 * DAY, &[]),
            (
                "sha1-subkey-binding",
                T0 + 3 * DAY,
                &["subkey", "newest binding signature", "SHA1 digest", "bind it again"],
            ),
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
        let read =
            |file: &str| std::fs::read(format!("{}/testdata/signing/{file}", env!("CARGO_MANIFEST_DIR"))).unwrap();
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
}
