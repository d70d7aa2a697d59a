//! The JSON a Sigstore client writes, as serde types: the bundle (media types v0.1 to v0.3)
//! and the trusted root. Protocol-buffer JSON, so 64-bit integers arrive as strings (numbers
//! are read too) and byte strings as base64; nothing here is trusted until `verify` checks it.

use serde::{Deserialize, Deserializer};

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Bundle {
    pub media_type: String,
    pub verification_material: Material,
    pub dsse_envelope: Option<Envelope>,
    pub message_signature: Option<MessageSignature>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Material {
    pub certificate: Option<RawBytes>,
    pub x509_certificate_chain: Option<Chain>,
    pub public_key: Option<serde_json::Value>,
    #[serde(default)]
    pub tlog_entries: Vec<TlogEntry>,
    pub timestamp_verification_data: Option<TimestampData>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawBytes {
    pub raw_bytes: String,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Chain {
    #[serde(default)]
    pub certificates: Vec<RawBytes>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TimestampData {
    #[serde(default)]
    pub rfc3161_timestamps: Vec<SignedTimestamp>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SignedTimestamp {
    pub signed_timestamp: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TlogEntry {
    #[serde(deserialize_with = "int64")]
    pub log_index: i64,
    pub log_id: KeyId,
    pub kind_version: KindVersion,
    #[serde(default, deserialize_with = "int64")]
    pub integrated_time: i64,
    pub inclusion_promise: Option<InclusionPromise>,
    pub inclusion_proof: Option<InclusionProof>,
    pub canonicalized_body: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct KeyId {
    pub key_id: String,
}

#[derive(Debug, Deserialize)]
pub(crate) struct KindVersion {
    pub kind: String,
    pub version: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InclusionPromise {
    pub signed_entry_timestamp: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InclusionProof {
    #[serde(deserialize_with = "int64")]
    pub log_index: i64,
    pub root_hash: String,
    #[serde(deserialize_with = "int64")]
    pub tree_size: i64,
    #[serde(default)]
    pub hashes: Vec<String>,
    pub checkpoint: Option<Checkpoint>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Checkpoint {
    pub envelope: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Envelope {
    pub payload: String,
    pub payload_type: String,
    #[serde(default)]
    pub signatures: Vec<EnvelopeSignature>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct EnvelopeSignature {
    pub sig: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct MessageSignature {
    pub message_digest: Option<MessageDigest>,
    pub signature: String,
}

#[derive(Debug, Deserialize)]
pub(crate) struct MessageDigest {
    pub algorithm: String,
    pub digest: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TrustedRoot {
    pub media_type: String,
    #[serde(default)]
    pub tlogs: Vec<Log>,
    #[serde(default)]
    pub certificate_authorities: Vec<Authority>,
    #[serde(default)]
    pub ctlogs: Vec<Log>,
    #[serde(default)]
    pub timestamp_authorities: Vec<Authority>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Log {
    #[serde(default)]
    pub base_url: String,
    pub public_key: LogKey,
    pub log_id: KeyId,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LogKey {
    pub raw_bytes: Option<String>,
    #[serde(default)]
    pub key_details: String,
    pub valid_for: Option<Range>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Range {
    pub start: Option<String>,
    pub end: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Authority {
    pub cert_chain: Chain,
    pub valid_for: Option<Range>,
}

/// A protocol-buffer JSON int64: a string of digits, or a number.
fn int64<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Int {
        Number(i64),
        Text(String),
    }
    match Int::deserialize(deserializer)? {
        Int::Number(n) => Ok(n),
        Int::Text(text) => text.parse().map_err(|_| serde::de::Error::custom("not a 64-bit integer")),
    }
}
