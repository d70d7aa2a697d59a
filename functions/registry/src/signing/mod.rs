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

/// [`verify`] with the key files that could not be used (`problems`, each with why) named in
/// the refusal, as the indexer and `make publish-provider` say it.
pub fn verify_with<'k>(
    keys: &'k [SigningKey],
    problems: &[String],
    document: &[u8],
    signature: &[u8],
    now: u64,
) -> Result<&'k SigningKey, Refusal> {
    verify(keys, document, signature, now).map_err(|why| match problems {
        [] => why,
        _ => format!("{why}; key files not used: {}", problems.join("; ")),
    })
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
mod tests;
