//! The JSON a Sigstore client writes, read into plain types: the bundle (media types v0.1 to
//! v0.3) and the trusted root. Protocol-buffer JSON, so 64-bit integers arrive as strings
//! (numbers are read too) and byte strings as base64; fields this verifier does not read are
//! ignored, and nothing here is trusted until `verify` checks it. Read through
//! `serde_json::Value` by hand rather than by derived deserializers: the indexer's package has a
//! size bound (docs/PERFORMANCE.md), and one generic reader costs far less than twenty.

use serde_json::{Map, Value};

use super::Refused;

pub(crate) struct Bundle {
    pub media_type: String,
    pub verification_material: Material,
    pub dsse_envelope: Option<Envelope>,
    pub message_signature: Option<MessageSignature>,
}

pub(crate) struct Material {
    pub certificate: Option<String>,
    pub x509_certificate_chain: Option<Vec<String>>,
    pub public_key: bool,
    pub tlog_entries: Vec<TlogEntry>,
    pub rfc3161_timestamps: Vec<String>,
}

pub(crate) struct TlogEntry {
    pub log_index: i64,
    pub log_id: String,
    pub kind: String,
    pub version: String,
    pub integrated_time: i64,
    pub signed_entry_timestamp: Option<String>,
    pub inclusion_proof: Option<InclusionProof>,
    pub canonicalized_body: String,
}

pub(crate) struct InclusionProof {
    pub log_index: i64,
    pub root_hash: String,
    pub tree_size: i64,
    pub hashes: Vec<String>,
    pub checkpoint: Option<String>,
}

pub(crate) struct Envelope {
    pub payload: String,
    pub payload_type: String,
    pub signatures: Vec<String>,
}

pub(crate) struct MessageSignature {
    pub message_digest: Option<(String, String)>,
    pub signature: String,
}

pub(crate) struct TrustedRoot {
    pub media_type: String,
    pub tlogs: Vec<Log>,
    pub certificate_authorities: Vec<Authority>,
    pub ctlogs: Vec<Log>,
    pub timestamp_authorities: Vec<Authority>,
}

pub(crate) struct Log {
    pub base_url: String,
    pub raw_bytes: Option<String>,
    pub key_details: String,
    pub valid_for: Option<Range>,
    pub log_id: String,
}

pub(crate) struct Range {
    pub start: Option<String>,
    pub end: Option<String>,
}

pub(crate) struct Authority {
    pub certificates: Vec<String>,
    pub valid_for: Option<Range>,
}

/// A JSON object's fields, or why not.
fn object<'a>(value: &'a Value, what: &str) -> Result<&'a Map<String, Value>, Refused> {
    value.as_object().ok_or_else(|| Refused::new(format!("{what}: not a JSON object")))
}

/// A string field: absent (or null) is `None`, another type refused.
fn text(fields: &Map<String, Value>, key: &str, what: &str) -> Result<Option<String>, Refused> {
    match fields.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(Refused::new(format!("{what}: {key} is not a string"))),
    }
}

fn required_text(fields: &Map<String, Value>, key: &str, what: &str) -> Result<String, Refused> {
    text(fields, key, what)?.ok_or_else(|| Refused::new(format!("{what}: no {key}")))
}

/// An object field, or `None`.
fn child<'a>(fields: &'a Map<String, Value>, key: &str, what: &str) -> Result<Option<&'a Map<String, Value>>, Refused> {
    match fields.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => object(value, &format!("{what}: {key}")).map(Some),
    }
}

/// An array field's items (absent: none).
fn list<'a>(fields: &'a Map<String, Value>, key: &str, what: &str) -> Result<&'a [Value], Refused> {
    match fields.get(key) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(items)) => Ok(items),
        Some(_) => Err(Refused::new(format!("{what}: {key} is not a list"))),
    }
}

/// A protocol-buffer JSON int64: a string of digits, or a number; absent is 0.
fn int64(fields: &Map<String, Value>, key: &str, what: &str) -> Result<i64, Refused> {
    let bad = || Refused::new(format!("{what}: {key} is not a 64-bit integer"));
    match fields.get(key) {
        None | Some(Value::Null) => Ok(0),
        Some(Value::Number(n)) => n.as_i64().ok_or_else(bad),
        Some(Value::String(s)) => s.parse().map_err(|_| bad()),
        Some(_) => Err(bad()),
    }
}

fn required_int64(fields: &Map<String, Value>, key: &str, what: &str) -> Result<i64, Refused> {
    if fields.get(key).is_none_or(Value::is_null) {
        return Err(Refused::new(format!("{what}: no {key}")));
    }
    int64(fields, key, what)
}

/// `{"rawBytes": "…"}` objects' base64 text.
fn raw_bytes(items: &[Value], what: &str) -> Result<Vec<String>, Refused> {
    items.iter().map(|item| required_text(object(item, what)?, "rawBytes", what)).collect()
}

/// A bundle's JSON.
pub(crate) fn bundle(bytes: &[u8]) -> Result<Bundle, Refused> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| Refused::new(format!("bundle: not JSON: {e}")))?;
    let fields = object(&value, "bundle")?;
    let what = "bundle";
    let material =
        child(fields, "verificationMaterial", what)?.ok_or_else(|| Refused::new("bundle: no verificationMaterial"))?;
    let m = "verificationMaterial";
    let verification_material = Material {
        certificate: child(material, "certificate", m)?
            .map(|c| required_text(c, "rawBytes", "certificate"))
            .transpose()?,
        x509_certificate_chain: child(material, "x509CertificateChain", m)?
            .map(|c| raw_bytes(list(c, "certificates", "certificate chain")?, "certificate chain"))
            .transpose()?,
        public_key: child(material, "publicKey", m)?.is_some(),
        tlog_entries: list(material, "tlogEntries", m)?.iter().map(tlog_entry).collect::<Result<_, _>>()?,
        rfc3161_timestamps: match child(material, "timestampVerificationData", m)? {
            None => vec![],
            Some(data) => list(data, "rfc3161Timestamps", "timestamps")?
                .iter()
                .map(|t| required_text(object(t, "timestamp")?, "signedTimestamp", "timestamp"))
                .collect::<Result<_, _>>()?,
        },
    };
    let dsse_envelope = child(fields, "dsseEnvelope", what)?
        .map(|e| {
            Ok::<_, Refused>(Envelope {
                payload: required_text(e, "payload", "DSSE envelope")?,
                payload_type: required_text(e, "payloadType", "DSSE envelope")?,
                signatures: list(e, "signatures", "DSSE envelope")?
                    .iter()
                    .map(|s| required_text(object(s, "DSSE signature")?, "sig", "DSSE signature"))
                    .collect::<Result<_, _>>()?,
            })
        })
        .transpose()?;
    let message_signature = child(fields, "messageSignature", what)?
        .map(|s| {
            let digest = child(s, "messageDigest", "message signature")?
                .map(|d| {
                    Ok::<_, Refused>((
                        required_text(d, "algorithm", "message digest")?,
                        required_text(d, "digest", "message digest")?,
                    ))
                })
                .transpose()?;
            Ok::<_, Refused>(MessageSignature {
                message_digest: digest,
                signature: required_text(s, "signature", "message signature")?,
            })
        })
        .transpose()?;
    Ok(Bundle {
        media_type: required_text(fields, "mediaType", what)?,
        verification_material,
        dsse_envelope,
        message_signature,
    })
}

fn tlog_entry(value: &Value) -> Result<TlogEntry, Refused> {
    let what = "log entry";
    let fields = object(value, what)?;
    let log_id = child(fields, "logId", what)?.ok_or_else(|| Refused::new("log entry: no logId"))?;
    let kind_version = child(fields, "kindVersion", what)?.ok_or_else(|| Refused::new("log entry: no kindVersion"))?;
    let inclusion_proof = child(fields, "inclusionProof", what)?
        .map(|p| {
            let what = "inclusion proof";
            Ok::<_, Refused>(InclusionProof {
                log_index: required_int64(p, "logIndex", what)?,
                root_hash: required_text(p, "rootHash", what)?,
                tree_size: required_int64(p, "treeSize", what)?,
                hashes: list(p, "hashes", what)?
                    .iter()
                    .map(|h| {
                        h.as_str()
                            .map(str::to_owned)
                            .ok_or_else(|| Refused::new("inclusion proof: a hash that is not a string"))
                    })
                    .collect::<Result<_, _>>()?,
                checkpoint: child(p, "checkpoint", what)?
                    .map(|c| required_text(c, "envelope", "checkpoint"))
                    .transpose()?,
            })
        })
        .transpose()?;
    Ok(TlogEntry {
        log_index: required_int64(fields, "logIndex", what)?,
        log_id: required_text(log_id, "keyId", what)?,
        kind: required_text(kind_version, "kind", what)?,
        version: required_text(kind_version, "version", what)?,
        integrated_time: int64(fields, "integratedTime", what)?,
        signed_entry_timestamp: child(fields, "inclusionPromise", what)?
            .map(|p| required_text(p, "signedEntryTimestamp", "inclusion promise"))
            .transpose()?,
        inclusion_proof,
        canonicalized_body: required_text(fields, "canonicalizedBody", what)?,
    })
}

/// A `trusted_root.json`.
pub(crate) fn trusted_root(value: &Value) -> Result<TrustedRoot, Refused> {
    let what = "trust root";
    let fields = object(value, what)?;
    let logs = |key: &str| list(fields, key, what)?.iter().map(log).collect::<Result<Vec<_>, _>>();
    let authorities = |key: &str| list(fields, key, what)?.iter().map(authority).collect::<Result<Vec<_>, _>>();
    Ok(TrustedRoot {
        media_type: required_text(fields, "mediaType", what)?,
        tlogs: logs("tlogs")?,
        certificate_authorities: authorities("certificateAuthorities")?,
        ctlogs: logs("ctlogs")?,
        timestamp_authorities: authorities("timestampAuthorities")?,
    })
}

fn log(value: &Value) -> Result<Log, Refused> {
    let what = "trust root log";
    let fields = object(value, what)?;
    let key = child(fields, "publicKey", what)?.ok_or_else(|| Refused::new("trust root: a log without its key"))?;
    let log_id = child(fields, "logId", what)?.ok_or_else(|| Refused::new("trust root: a log without its id"))?;
    Ok(Log {
        base_url: text(fields, "baseUrl", what)?.unwrap_or_default(),
        raw_bytes: text(key, "rawBytes", what)?,
        key_details: text(key, "keyDetails", what)?.unwrap_or_default(),
        valid_for: range(key)?,
        log_id: required_text(log_id, "keyId", what)?,
    })
}

fn authority(value: &Value) -> Result<Authority, Refused> {
    let what = "trust root authority";
    let fields = object(value, what)?;
    let chain =
        child(fields, "certChain", what)?.ok_or_else(|| Refused::new("trust root: an authority without its chain"))?;
    Ok(Authority { certificates: raw_bytes(list(chain, "certificates", what)?, what)?, valid_for: range(fields)? })
}

fn range(fields: &Map<String, Value>) -> Result<Option<Range>, Refused> {
    child(fields, "validFor", "trust root")?
        .map(|r| Ok(Range { start: text(r, "start", "validFor")?, end: text(r, "end", "validFor")? }))
        .transpose()
}
