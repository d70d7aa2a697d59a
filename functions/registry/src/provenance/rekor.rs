//! A transparency-log entry of a bundle checked against the log that made it: its body is
//! about this bundle (the same signature, key and digest: the entry cannot vouch for another
//! artifact), its inclusion proof leads to the root a checkpoint the log signed names, and its
//! signed entry timestamp (Rekor v1's promise) verifies. Rekor v1 kinds `hashedrekord`, `dsse`
//! and `intoto`; Rekor v2 kinds `hashedrekord` and `dsse` 0.0.2.

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::json::TlogEntry;
use super::keys::{Algorithm, Hash, PublicKey};
use super::trust::{Log, TrustRoot};
use super::x509::pem;
use super::{Refused, base64, refuse};

/// Most hashes an inclusion proof may hold (a tree of 2^64 leaves needs 64).
const PROOF_MAX: usize = 64;
/// Largest checkpoint read (a few lines and signatures).
const CHECKPOINT_MAX: usize = 16 * 1024;
/// Most signature lines a checkpoint may carry (its log's and cosigners').
const NOTE_SIGNATURES_MAX: usize = 16;

/// What the bundle signed, as an entry must record it.
pub(crate) struct Signed<'a> {
    pub signature: &'a [u8],
    /// The signing certificate (DER) or, for a managed key, its SubjectPublicKeyInfo.
    pub verifier: &'a [u8],
    pub content: Content<'a>,
}

pub(crate) enum Content<'a> {
    /// A DSSE envelope: its payload, its type, and the bytes its signature covers (PAE).
    Dsse { payload: &'a [u8], payload_type: &'a str, pae: &'a [u8] },
    /// A signature over the artifact, known by its SHA-256.
    Message { sha256: [u8; 32] },
}

/// What a verified entry establishes.
pub(crate) struct Logged<'a> {
    pub log: &'a Log,
    /// The entry's index, when signed (its promise) or bound (its proof).
    pub log_index: Option<u64>,
    /// When the log says it took the entry, if its signed promise covers that (Rekor v1).
    pub integrated_time: Option<i64>,
}

/// Checks one entry. Every entry must carry an inclusion proof, whatever the bundle's version
/// (its media type is not signed: a promise alone would let a relabelled bundle skip the
/// proof), as PyPI `sigstore` requires.
pub(crate) fn verify<'r>(entry: &TlogEntry, root: &'r TrustRoot, signed: &Signed<'_>) -> Result<Logged<'r>, Refused> {
    if entry.log_index < 0 {
        return refuse("log entry: a negative log index");
    }
    let log_id = base64(&entry.log_id, "log entry log id")?;
    let log = root.tlog(&log_id).ok_or_else(|| Refused::new("log entry: from a log the trust root does not hold"))?;
    let body = base64(&entry.canonicalized_body, "log entry body")?;
    check_body(&body, &entry.kind, &entry.version, signed)?;

    let proof = entry.inclusion_proof.as_ref().ok_or_else(|| Refused::new("log entry: no inclusion proof"))?;
    check_inclusion(proof, &body, log)?;
    let integrated_time = match &entry.signed_entry_timestamp {
        Some(promise) => {
            let signature = base64(promise, "signed entry timestamp")?;
            let payload = format!(
                r#"{{"body":{},"integratedTime":{},"logID":"{}","logIndex":{}}}"#,
                Value::from(entry.canonicalized_body.as_str()),
                entry.integrated_time,
                hex::encode(&log_id),
                entry.log_index
            );
            log.key
                .verify(log.key.natural(), payload.as_bytes(), &signature)
                .map_err(|_| Refused::new("log entry: its signed entry timestamp does not verify"))?;
            // Rekor v2 entries carry no time (0): their time comes from a timestamp.
            (entry.integrated_time > 0).then(|| entry.integrated_time.saturating_mul(1_000_000_000))
        }
        None => None,
    };
    // The index shown must be one something signed: the promise covers the entry's; the
    // proof binds its own (Rekor v1's is the shard's, so only an equal one counts).
    let log_index = (entry.signed_entry_timestamp.is_some() || entry.log_index == proof.log_index)
        .then_some(entry.log_index as u64);
    Ok(Logged { log, log_index, integrated_time })
}

/// The entry's body records this bundle's signature, key and digest.
fn check_body(body: &[u8], kind: &str, version: &str, signed: &Signed<'_>) -> Result<(), Refused> {
    let body: Value = serde_json::from_slice(body).map_err(|_| Refused::new("log entry: its body is not JSON"))?;
    if body["kind"] != kind || body["apiVersion"] != version {
        return refuse("log entry: its body's kind is not the one the bundle names");
    }
    let spec = &body["spec"];
    let mismatch = |what: &str| Refused::new(format!("log entry: its {what} is not this bundle's"));
    let text = |v: &Value| v.as_str().map(str::to_owned).ok_or_else(|| mismatch("body"));
    match (kind, version, &signed.content) {
        ("hashedrekord", "0.0.1", Content::Message { sha256 }) => {
            let hash = &spec["data"]["hash"];
            if hash["algorithm"] != "sha256" || hash["value"] != hex::encode(sha256) {
                return Err(mismatch("artifact digest"));
            }
            same_signature(&base64(&text(&spec["signature"]["content"])?, "entry signature")?, signed)?;
            same_verifier_pem(&text(&spec["signature"]["publicKey"]["content"])?, signed)
        }
        ("dsse", "0.0.1", Content::Dsse { payload, .. }) => {
            let hash = &spec["payloadHash"];
            if hash["algorithm"] != "sha256" || hash["value"] != hex::encode(Sha256::digest(payload)) {
                return Err(mismatch("payload digest"));
            }
            let [only] = spec["signatures"].as_array().map(Vec::as_slice).unwrap_or_default() else {
                return Err(mismatch("signatures"));
            };
            same_signature(&base64(&text(&only["signature"])?, "entry signature")?, signed)?;
            same_verifier_pem(&text(&only["verifier"])?, signed)
        }
        ("intoto", "0.0.2", Content::Dsse { payload, payload_type, .. }) => {
            let content = &spec["content"];
            if content["payloadHash"]["algorithm"] != "sha256"
                || content["payloadHash"]["value"] != hex::encode(Sha256::digest(payload))
            {
                return Err(mismatch("payload digest"));
            }
            let envelope = &content["envelope"];
            if envelope["payloadType"] != *payload_type {
                return Err(mismatch("payload type"));
            }
            let [only] = envelope["signatures"].as_array().map(Vec::as_slice).unwrap_or_default() else {
                return Err(mismatch("signatures"));
            };
            // intoto 0.0.2 keeps the envelope's base64 signature base64-encoded once more.
            let sig = base64(&text(&only["sig"])?, "entry signature")?;
            let sig = base64(std::str::from_utf8(&sig).map_err(|_| mismatch("signature"))?, "entry signature")?;
            same_signature(&sig, signed)?;
            same_verifier_pem(&text(&only["publicKey"])?, signed)
        }
        ("hashedrekord", "0.0.2", content) => {
            let spec = &spec["hashedRekordV002"];
            let digest = match content {
                Content::Message { sha256 } => sha256.to_vec(),
                Content::Dsse { pae, .. } => Sha256::digest(pae).to_vec(),
            };
            if spec["data"]["algorithm"] != "SHA2_256"
                || base64(&text(&spec["data"]["digest"])?, "entry digest")? != digest
            {
                return Err(mismatch("digest"));
            }
            same_signature(&base64(&text(&spec["signature"]["content"])?, "entry signature")?, signed)?;
            same_verifier_v2(&spec["signature"]["verifier"], signed)
        }
        ("dsse", "0.0.2", Content::Dsse { payload, .. }) => {
            let spec = &spec["dsseV002"];
            let hash = &spec["payloadHash"];
            if hash["algorithm"] != "SHA2_256"
                || base64(&text(&hash["digest"])?, "entry digest")? != Sha256::digest(payload).to_vec()
            {
                return Err(mismatch("payload digest"));
            }
            let [only] = spec["signatures"].as_array().map(Vec::as_slice).unwrap_or_default() else {
                return Err(mismatch("signatures"));
            };
            same_signature(&base64(&text(&only["content"])?, "entry signature")?, signed)?;
            same_verifier_v2(&only["verifier"], signed)
        }
        _ => Err(Refused::new(format!("log entry: kind {kind:?} {version:?} does not record this kind of bundle"))),
    }
}

fn same_signature(logged: &[u8], signed: &Signed<'_>) -> Result<(), Refused> {
    if logged == signed.signature { Ok(()) } else { refuse("log entry: its signature is not this bundle's") }
}

/// A Rekor v1 entry's key: base64 of a PEM certificate or public key.
fn same_verifier_pem(logged: &str, signed: &Signed<'_>) -> Result<(), Refused> {
    let pem_text = base64(logged, "entry key")?;
    let der = pem(&pem_text, "CERTIFICATE").or_else(|_| pem(&pem_text, "PUBLIC KEY"))?;
    if der == signed.verifier { Ok(()) } else { refuse("log entry: its key is not this bundle's") }
}

/// A Rekor v2 entry's verifier: `x509Certificate.rawBytes` or `publicKey.rawBytes`.
fn same_verifier_v2(verifier: &Value, signed: &Signed<'_>) -> Result<(), Refused> {
    let raw = verifier["x509Certificate"]["rawBytes"].as_str().or_else(|| verifier["publicKey"]["rawBytes"].as_str());
    let raw = raw.ok_or_else(|| Refused::new("log entry: no verifier"))?;
    if base64(raw, "entry verifier")? == signed.verifier {
        Ok(())
    } else {
        refuse("log entry: its key is not this bundle's")
    }
}

/// The inclusion proof leads to its root, which a checkpoint signed by the log names.
fn check_inclusion(proof: &super::json::InclusionProof, body: &[u8], log: &Log) -> Result<(), Refused> {
    if proof.hashes.len() > PROOF_MAX || proof.log_index < 0 || proof.tree_size < 0 {
        return refuse("inclusion proof: malformed");
    }
    let hashes =
        proof.hashes.iter().map(|h| hash32(&base64(h, "inclusion proof hash")?)).collect::<Result<Vec<_>, _>>()?;
    let root = hash32(&base64(&proof.root_hash, "inclusion proof root")?)?;
    let leaf: [u8; 32] = Sha256::new().chain_update([0u8]).chain_update(body).finalize().into();
    let computed = root_from_path(proof.log_index as u64, proof.tree_size as u64, leaf, &hashes)?;
    if computed != root {
        return refuse("inclusion proof: does not lead to its root hash");
    }
    let checkpoint = proof.checkpoint.as_ref().ok_or_else(|| Refused::new("inclusion proof: no checkpoint"))?;
    let (size, checkpoint_root) = checkpoint_of(checkpoint, log)?;
    if size != proof.tree_size as u64 || checkpoint_root != root {
        return refuse("checkpoint: names another tree than the inclusion proof");
    }
    Ok(())
}

fn hash32(bytes: &[u8]) -> Result<[u8; 32], Refused> {
    bytes.try_into().map_err(|_| Refused::new("inclusion proof: a hash that is not 32 bytes"))
}

/// RFC 9162 §2.1.3.2: the root an audit path leads to from leaf `index` of a tree of `size`.
pub(crate) fn root_from_path(index: u64, size: u64, leaf: [u8; 32], path: &[[u8; 32]]) -> Result<[u8; 32], Refused> {
    if index >= size {
        return refuse("inclusion proof: its index is outside its tree");
    }
    let node = |left: &[u8; 32], right: &[u8; 32]| -> [u8; 32] {
        Sha256::new().chain_update([1u8]).chain_update(left).chain_update(right).finalize().into()
    };
    let (mut f, mut s, mut r) = (index, size - 1, leaf);
    for p in path {
        if s == 0 {
            return refuse("inclusion proof: longer than its tree is deep");
        }
        if f & 1 == 1 || f == s {
            r = node(p, &r);
            while f & 1 == 0 && f != 0 {
                f >>= 1;
                s >>= 1;
            }
        } else {
            r = node(&r, p);
        }
        f >>= 1;
        s >>= 1;
    }
    if s != 0 {
        return refuse("inclusion proof: shorter than its tree is deep");
    }
    Ok(r)
}

/// A checkpoint (a signed note): its tree size and root hash, once a signature line whose key
/// hint is the log's verifies with the log's key over the note's text.
fn checkpoint_of(envelope: &str, log: &Log) -> Result<(u64, [u8; 32]), Refused> {
    let bad = |why: &str| Refused::new(format!("checkpoint: {why}"));
    if envelope.len() > CHECKPOINT_MAX {
        return Err(bad("too large"));
    }
    let (text, signatures) = envelope.split_once("\n\n").ok_or_else(|| bad("no blank line before its signatures"))?;
    if signatures.contains("\n\n") || !signatures.ends_with('\n') {
        return Err(bad("malformed signature block"));
    }
    let note = format!("{text}\n");
    let mut lines = text.split('\n');
    let origin = lines.next().unwrap_or_default();
    let size = lines.next().and_then(|l| l.parse::<u64>().ok()).ok_or_else(|| bad("no tree size"))?;
    let root = lines.next().ok_or_else(|| bad("no root hash"))?;
    if origin.is_empty() {
        return Err(bad("no origin"));
    }
    let root = base64(root, "checkpoint root hash").and_then(|r| hash32(&r)).map_err(|_| bad("no root hash"))?;
    let hint = log.id.get(..4).ok_or_else(|| bad("a log id shorter than a key hint"))?;
    let mut verified = false;
    for (n, line) in signatures.lines().enumerate() {
        if n == NOTE_SIGNATURES_MAX {
            return Err(bad("too many signatures"));
        }
        let Some(rest) = line.strip_prefix("\u{2014} ") else { return Err(bad("a malformed signature line")) };
        let (_name, signature) = rest.split_once(' ').ok_or_else(|| bad("a malformed signature line"))?;
        let signature = base64(signature, "checkpoint signature")?;
        if signature.len() < 5 {
            return Err(bad("a signature too short"));
        }
        if &signature[..4] == hint {
            verified |= verify_note(&log.key, note.as_bytes(), &signature[4..]);
        }
    }
    if !verified {
        return Err(bad("no signature by the log verifies"));
    }
    Ok((size, root))
}

fn verify_note(key: &PublicKey, note: &[u8], signature: &[u8]) -> bool {
    let algorithm = match key {
        PublicKey::Ed25519(_) => Algorithm::Ed25519,
        _ => Algorithm::Ecdsa(Hash::Sha256),
    };
    key.verify(algorithm, note, signature).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf(n: u8) -> [u8; 32] {
        Sha256::new().chain_update([0u8, n]).finalize().into()
    }

    fn node(l: [u8; 32], r: [u8; 32]) -> [u8; 32] {
        Sha256::new().chain_update([1u8]).chain_update(l).chain_update(r).finalize().into()
    }

    #[test]
    fn audit_paths_of_a_five_leaf_tree() {
        let l: Vec<_> = (0..5).map(leaf).collect();
        let (a, b) = (node(l[0], l[1]), node(l[2], l[3]));
        let root = node(node(a, b), l[4]);
        assert_eq!(root_from_path(4, 5, l[4], &[node(a, b)]).unwrap(), root);
        assert_eq!(root_from_path(2, 5, l[2], &[l[3], a, l[4]]).unwrap(), root);
        assert_eq!(root_from_path(0, 5, l[0], &[l[1], b, l[4]]).unwrap(), root);
        assert_ne!(root_from_path(1, 5, l[0], &[l[1], b, l[4]]).unwrap(), root, "another index");
        assert!(root_from_path(0, 5, l[0], &[l[1], b]).is_err(), "a path too short");
        assert!(root_from_path(0, 5, l[0], &[l[1], b, l[4], l[4]]).is_err(), "a path too long");
        assert!(root_from_path(5, 5, l[0], &[]).is_err(), "outside the tree");
        assert_eq!(root_from_path(0, 1, l[0], &[]).unwrap(), l[0]);
    }
}
