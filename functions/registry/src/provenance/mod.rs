//! Sigstore provenance, verified offline: a bundle (`VERSION.tar.gz.sigstore.json`, what
//! `actions/attest-build-provenance` and `cosign attest --bundle` write) checked against a
//! trust root as Sigstore's client specification and its conformance suite require. Pure: the
//! bundle, the artifact's SHA-256 and the trust root in, who signed and when out. The indexer
//! and the publish command share it.
//!
//! What is checked, in order: the bundle's media type (v0.1 to v0.3); its signature (a DSSE
//! envelope's over PAE, whose in-toto statement names the artifact as a subject, or a message
//! signature over the artifact's digest) with the leaf certificate's key; every transparency-log
//! entry (its body about this bundle, inclusion proof to a checkpoint the log signed, signed
//! entry timestamp) and every RFC 3161 timestamp; then, at each time those establish, the leaf
//! chains to a Fulcio CA of the trust root, inside its validity and the CA's; its embedded SCT
//! verifies with a certificate transparency log's key; its key usage is code signing. docs/
//! PROVENANCE.md has the rest (what is not checked, the trust roots, the limits).

mod der;
mod identity;
mod json;
mod keys;
pub mod policy;
mod rekor;
mod sct;
mod trust;
mod tsa;
mod x509;

use ::base64::Engine;
use serde::Serialize;
use sha2::{Digest, Sha256};

pub use identity::Identity;
pub use trust::{Interval, TRUST_ROOT_MAX_BYTES, TrustRoot};

use keys::PublicKey;
use rekor::{Content, Signed};
use x509::Certificate;

/// Largest bundle read (a GitHub attestation is about 10 KB).
pub const BUNDLE_MAX_BYTES: usize = 128 * 1024;
/// Most transparency-log entries and timestamps one bundle may carry.
const ENTRIES_MAX: usize = 4;
/// Largest DSSE payload (an in-toto statement; SLSA provenance is a few KB).
const PAYLOAD_MAX_BYTES: usize = 64 * 1024;
/// Most subjects an in-toto statement may name.
const SUBJECTS_MAX: usize = 1024;
/// Most certificates a bundle's chain may hold.
const CHAIN_MAX: usize = 8;

/// Why a bundle is not accepted, in words a publisher can act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused(String);

impl Refused {
    pub(crate) fn new(why: impl Into<String>) -> Refused {
        Refused(why.into())
    }
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

pub(crate) fn refuse<T>(why: &str) -> Result<T, Refused> {
    Err(Refused::new(why))
}

/// Base64 as protocol-buffer JSON readers take it (Go's decoder skips line breaks, so a value
/// wrapped by `base64` reads as it does in every Sigstore client).
pub(crate) fn base64(text: &str, what: &str) -> Result<Vec<u8>, Refused> {
    let engine = ::base64::engine::general_purpose::STANDARD;
    let decoded =
        if text.contains(['\n', '\r']) { engine.decode(text.replace(['\n', '\r'], "")) } else { engine.decode(text) };
    decoded.map_err(|_| Refused::new(format!("{what}: not base64")))
}

/// Who the bundle must be signed by.
#[derive(Debug, Clone, Copy)]
pub enum Signer<'a> {
    /// A Fulcio certificate (keyless signing): the identity is returned to be judged.
    Certificate,
    /// A key the verifier holds (a SubjectPublicKeyInfo, DER): "managed key" signing.
    Key(&'a [u8]),
}

/// What a verified bundle establishes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Verified {
    /// Who signed (absent for a managed key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<Identity>,
    /// The earliest verified signing time, Unix seconds.
    pub signed_at: i64,
    /// The transparency log's name and the entry's index there, when it was logged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<String>,
    /// The entry's index in that log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_index: Option<u64>,
    /// How many RFC 3161 timestamps verified.
    pub timestamps: usize,
    /// The in-toto statement's predicate type (`https://slsa.dev/provenance/v1`), for DSSE.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicate_type: Option<String>,
}

/// The bundle's media type is one of the versions read here (each is checked the same way:
/// the media type is not signed, so it may not lower what is asked of the bundle).
fn version(media_type: &str) -> Result<(), Refused> {
    match media_type {
        "application/vnd.dev.sigstore.bundle+json;version=0.1"
        | "application/vnd.dev.sigstore.bundle+json;version=0.2"
        | "application/vnd.dev.sigstore.bundle+json;version=0.3"
        | "application/vnd.dev.sigstore.bundle.v0.3+json" => Ok(()),
        _ => Err(Refused::new(format!("bundle: unknown media type {media_type:?}"))),
    }
}

/// Verifies `bundle` as a signature over the artifact whose SHA-256 is `sha256`.
pub fn verify(bundle: &[u8], sha256: [u8; 32], root: &TrustRoot, signer: Signer<'_>) -> Result<Verified, Refused> {
    if bundle.len() > BUNDLE_MAX_BYTES {
        return Err(Refused::new(format!("bundle: larger than {BUNDLE_MAX_BYTES} bytes")));
    }
    let bundle = json::bundle(bundle)?;
    version(&bundle.media_type)?;
    let material = &bundle.verification_material;
    if material.tlog_entries.len() > ENTRIES_MAX {
        return refuse("bundle: too many transparency-log entries");
    }

    let verifier = verifier(material, signer)?;
    let leaf = match signer {
        Signer::Certificate => Some(Certificate::parse(&verifier)?),
        Signer::Key(_) => None,
    };
    let key = match &leaf {
        Some(leaf) => leaf.key()?,
        None => PublicKey::from_spki(&verifier)?,
    };

    let (signature, payload, pae, payload_type, predicate_type);
    let content = match (&bundle.dsse_envelope, &bundle.message_signature) {
        (Some(envelope), None) => {
            let [only] = envelope.signatures.as_slice() else {
                return refuse("bundle: a DSSE envelope without exactly one signature");
            };
            signature = base64(only, "DSSE signature")?;
            payload = base64(&envelope.payload, "DSSE payload")?;
            if payload.len() > PAYLOAD_MAX_BYTES {
                return refuse("bundle: its DSSE payload is too large");
            }
            payload_type = envelope.payload_type.as_str();
            pae = pre_authentication(payload_type, &payload);
            key.verify(key.natural(), &pae, &signature)
                .map_err(|_| Refused::new("bundle: its DSSE signature does not verify"))?;
            predicate_type = Some(statement_names(payload_type, &payload, sha256)?);
            Content::Dsse { payload: &payload, payload_type, pae: &pae }
        }
        (None, Some(message)) => {
            signature = base64(&message.signature, "message signature")?;
            if let Some((algorithm, digest)) = &message.message_digest
                && (algorithm != "SHA2_256" || base64(digest, "message digest")? != sha256)
            {
                return refuse("bundle: its message digest is not the artifact's");
            }
            if !matches!(key, PublicKey::P256(_)) {
                return refuse("bundle: a message signature is checked by digest, which needs a P-256 key");
            }
            key.verify_digest(&sha256, &signature)
                .map_err(|_| Refused::new("bundle: its signature does not verify over the artifact"))?;
            predicate_type = None;
            Content::Message { sha256 }
        }
        _ => return refuse("bundle: neither one DSSE envelope nor one message signature"),
    };
    let signed = Signed { signature: &signature, verifier: &verifier, content };

    let mut times = vec![];
    let mut logged = vec![];
    for entry in &material.tlog_entries {
        let entry = rekor::verify(entry, root, &signed)?;
        times.extend(entry.integrated_time);
        logged.push(entry);
    }
    if root.has_tlogs() && logged.is_empty() {
        return refuse("bundle: no transparency-log entry, which the trust root requires");
    }
    let timestamps = material.rfc3161_timestamps.as_slice();
    if timestamps.len() > ENTRIES_MAX {
        return refuse("bundle: too many timestamps");
    }
    let mut signers = vec![];
    for timestamp in timestamps {
        let (time, signer_signature) = tsa::verify(&base64(timestamp, "timestamp")?, &signature, root)?;
        // The same token twice (in another encoding, or wrapped differently) counts once.
        if signers.contains(&signer_signature) {
            return refuse("bundle: the same timestamp twice");
        }
        signers.push(signer_signature);
        times.push(time);
    }
    if times.is_empty() {
        return refuse("bundle: no verified signing time (neither a signed log entry time nor a trusted timestamp)");
    }
    for entry in &logged {
        if !times.iter().all(|&t| entry.log.valid.contains(t)) {
            return refuse("bundle: logged outside the log key's validity in the trust root");
        }
    }

    let identity = match &leaf {
        Some(leaf) => {
            check_leaf(leaf, &times, root)?;
            Some(Identity::of(leaf)?)
        }
        None => None,
    };
    let first = logged.first();
    Ok(Verified {
        identity,
        signed_at: times.iter().min().copied().unwrap_or_default().div_euclid(1_000_000_000),
        log: first.map(|e| e.log.name.clone()),
        log_index: first.and_then(|e| e.log_index),
        timestamps: timestamps.len(),
        predicate_type,
    })
}

/// The DER of what signed: the leaf certificate, or the managed key (which the bundle's
/// material must then name only by hint).
fn verifier(material: &json::Material, signer: Signer<'_>) -> Result<Vec<u8>, Refused> {
    match signer {
        Signer::Key(key) => {
            if material.certificate.is_some() || material.x509_certificate_chain.is_some() {
                return refuse("bundle: signed with a certificate, not the key given");
            }
            Ok(key.to_vec())
        }
        Signer::Certificate => {
            if let Some(certificate) = &material.certificate {
                return base64(certificate, "certificate");
            }
            let chain = material.x509_certificate_chain.as_ref().ok_or_else(|| {
                if material.public_key {
                    Refused::new("bundle: signed with a key, not a certificate")
                } else {
                    Refused::new("bundle: no certificate")
                }
            })?;
            if chain.len() > CHAIN_MAX {
                return refuse("bundle: its certificate chain is too long");
            }
            let certificates = chain.iter().map(|c| base64(c, "certificate")).collect::<Result<Vec<_>, _>>()?;
            let (leaf, rest) =
                certificates.split_first().ok_or_else(|| Refused::new("bundle: an empty certificate chain"))?;
            for der in rest {
                let certificate = Certificate::parse(der)?;
                if certificate.issuer == certificate.subject {
                    return refuse("bundle: its certificate chain holds a root, which only the trust root may");
                }
            }
            Ok(leaf.clone())
        }
    }
}

/// DSSE's pre-authentication encoding: what the envelope's signature covers.
fn pre_authentication(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut pae = format!("DSSEv1 {} {} {} ", payload_type.len(), payload_type, payload.len()).into_bytes();
    pae.extend_from_slice(payload);
    pae
}

/// The in-toto statement names the artifact (by SHA-256) among its subjects: its predicate
/// type.
fn statement_names(payload_type: &str, payload: &[u8], sha256: [u8; 32]) -> Result<String, Refused> {
    if payload_type != "application/vnd.in-toto+json" {
        return Err(Refused::new(format!("bundle: its DSSE payload is {payload_type:?}, not an in-toto statement")));
    }
    let statement: serde_json::Value =
        serde_json::from_slice(payload).map_err(|e| Refused::new(format!("bundle: its in-toto statement: {e}")))?;
    if !matches!(
        statement["_type"].as_str(),
        Some("https://in-toto.io/Statement/v1" | "https://in-toto.io/Statement/v0.1")
    ) {
        return refuse("bundle: not an in-toto statement v0.1 or v1");
    }
    let subjects =
        statement["subject"].as_array().ok_or_else(|| Refused::new("bundle: its statement names no subjects"))?;
    if subjects.len() > SUBJECTS_MAX {
        return refuse("bundle: its statement names too many subjects");
    }
    let want = hex::encode(sha256);
    if !subjects.iter().any(|s| s["digest"]["sha256"].as_str().is_some_and(|d| d.eq_ignore_ascii_case(&want))) {
        return refuse("bundle: its statement does not name this archive's SHA-256 as a subject");
    }
    statement["predicateType"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| Refused::new("bundle: its statement has no predicate type"))
}

/// The leaf is a Fulcio code-signing certificate, valid at every verified time and chaining,
/// at each, to a CA the trust root trusted then; its SCT verifies.
fn check_leaf(leaf: &Certificate<'_>, times: &[i64], root: &TrustRoot) -> Result<(), Refused> {
    leaf.understood(&[])?;
    if leaf.is_ca()? {
        return refuse("certificate: a CA certificate cannot sign");
    }
    if leaf.key_usage(0)? != Some(true) {
        return refuse("certificate: its key usage is not digital signature");
    }
    if leaf.extended_key_usage(x509::CODE_SIGNING)? != Some(true) {
        return refuse("certificate: its extended key usage is not code signing");
    }
    let mut issuer = None;
    for &at in times {
        if !leaf.valid_at(at) {
            return refuse("certificate: not valid at the time it signed (by its log entry or timestamp)");
        }
        issuer = Some(chain_at(leaf, at, root)?);
    }
    let issuer = issuer.ok_or_else(|| Refused::new("certificate: no verified time"))?;
    sct::verify(leaf, &Certificate::parse(&issuer)?, root)
}

/// The CA chain the leaf chains to at `at`: its issuing certificate (DER).
fn chain_at(leaf: &Certificate<'_>, at: i64, root: &TrustRoot) -> Result<Vec<u8>, Refused> {
    'authorities: for authority in &root.cas {
        if !authority.valid.contains(at) {
            continue;
        }
        let chain = authority.chain.iter().map(|c| Certificate::parse(c)).collect::<Result<Vec<_>, _>>()?;
        let Some(first) = chain.first() else { continue };
        if leaf.issued_by(first).is_err() {
            continue;
        }
        for (n, ca) in chain.iter().enumerate() {
            if !ca.valid_at(at) || !ca.is_ca()? || ca.key_usage(5)? == Some(false) || ca.understood(&[]).is_err() {
                continue 'authorities;
            }
            if let Some(parent) = chain.get(n + 1)
                && ca.issued_by(parent).is_err()
            {
                continue 'authorities;
            }
        }
        return Ok(authority.chain[0].clone());
    }
    refuse("certificate: does not chain to a Fulcio CA of the trust root valid at the time it signed")
}

/// Any bytes through the DER readers a bundle's parts reach (certificate, identity, SCTs,
/// timestamp), for the `provenance` fuzz target: none may panic or run long.
#[doc(hidden)]
pub fn read_der_parts(bytes: &[u8]) {
    let root = TrustRoot::public_good();
    if let Ok(certificate) = Certificate::parse(bytes) {
        let _ = Identity::of(&certificate);
        let _ = certificate.understood(&[]);
        let _ = (certificate.is_ca(), certificate.key_usage(0), certificate.extended_key_usage(x509::CODE_SIGNING));
        let _ = sct::verify(&certificate, &certificate, &root);
    }
    let _ = tsa::verify(bytes, b"signature", &root);
    let _ = PublicKey::from_spki(bytes);
}

/// The SHA-256 of `bytes` (what the indexer knows of an archive).
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}
