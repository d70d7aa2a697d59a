//! A Sigstore trust root (`trusted_root.json`, media type
//! `application/vnd.dev.sigstore.trustedroot+json;version=0.1`): the transparency logs' keys,
//! the Fulcio CA chains, the certificate transparency logs' keys and the timestamp
//! authorities' chains, each with the interval it is trusted for. Read once and checked whole:
//! a key or chain that cannot be read, or an interval without its start, makes the file
//! unusable rather than silently narrower. Keys of a kind this verifier does not check (RSA
//! certificate transparency logs) are left out: nothing can verify with them.

use super::keys::PublicKey;
use super::x509::Certificate;
use super::{Refused, base64};

/// Largest trust root read (the public-good one is about 7 KB).
pub const TRUST_ROOT_MAX_BYTES: usize = 256 * 1024;
/// Most logs, authorities and certificates per chain a trust root may hold.
const ENTRIES_MAX: usize = 64;
const CHAIN_MAX: usize = 8;

/// A closed interval of Unix nanoseconds; `end` absent means still trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interval {
    /// The first instant trusted.
    pub start: i64,
    /// The last instant trusted, if it has one.
    pub end: Option<i64>,
}

impl Interval {
    /// Whether `at` falls within (both ends included, as Sigstore's TimeRange is closed).
    pub fn contains(&self, at: i64) -> bool {
        self.start <= at && self.end.is_none_or(|end| at <= end)
    }
}

/// A log's key: a transparency log (Rekor) or a certificate transparency log.
#[derive(Debug, Clone)]
pub(crate) struct Log {
    pub id: Vec<u8>,
    pub key: PublicKey,
    pub valid: Interval,
    /// The host of its base URL: the name its checkpoints are signed under.
    pub name: String,
}

/// A CA or a timestamp authority: its chain (issuing certificate first, root last).
#[derive(Debug, Clone)]
pub(crate) struct Authority {
    pub chain: Vec<Vec<u8>>,
    pub valid: Interval,
}

/// A trust root, read.
#[derive(Debug, Clone)]
pub struct TrustRoot {
    pub(crate) tlogs: Vec<Log>,
    pub(crate) cas: Vec<Authority>,
    pub(crate) ctlogs: Vec<Log>,
    pub(crate) tsas: Vec<Authority>,
    /// Whether the file named certificate transparency logs (then an SCT is required, even
    /// when none of their keys is of a kind read here).
    pub(crate) ctlogs_named: bool,
}

impl TrustRoot {
    /// Sigstore's public-good instance (Fulcio, Rekor v1 and v2, its TSA), as shipped with
    /// this code: `trusted_root.json` beside this file (docs/PROVENANCE.md says how to update
    /// it).
    pub fn public_good() -> TrustRoot {
        TrustRoot::from_json(include_bytes!("trusted_root.json")).expect("the shipped trust root reads")
    }

    /// A `trusted_root.json`, checked whole.
    pub fn from_json(bytes: &[u8]) -> Result<TrustRoot, Refused> {
        if bytes.len() > TRUST_ROOT_MAX_BYTES {
            return Err(Refused::new(format!("trust root: larger than {TRUST_ROOT_MAX_BYTES} bytes")));
        }
        let value: serde_json::Value =
            serde_json::from_slice(bytes).map_err(|e| Refused::new(format!("trust root: {e}")))?;
        let root = super::json::trusted_root(&value)?;
        if !root.media_type.starts_with("application/vnd.dev.sigstore.trustedroot") {
            return Err(Refused::new(format!("trust root: unknown media type {:?}", root.media_type)));
        }
        let counts =
            [root.tlogs.len(), root.ctlogs.len(), root.certificate_authorities.len(), root.timestamp_authorities.len()];
        if counts.iter().any(|&n| n > ENTRIES_MAX) {
            return Err(Refused::new("trust root: too many entries"));
        }
        Ok(TrustRoot {
            tlogs: logs(&root.tlogs)?,
            ctlogs: logs(&root.ctlogs)?,
            cas: authorities(&root.certificate_authorities)?,
            tsas: authorities(&root.timestamp_authorities)?,
            ctlogs_named: !root.ctlogs.is_empty(),
        })
    }

    /// A file of one trust root, or of several one per line (JSON Lines: what
    /// `gh attestation trusted-root` prints, public-good's then GitHub's): each, in order.
    pub fn from_json_lines(bytes: &[u8]) -> Result<Vec<TrustRoot>, Refused> {
        if bytes.len() > TRUST_ROOT_MAX_BYTES {
            return Err(Refused::new(format!("trust root: larger than {TRUST_ROOT_MAX_BYTES} bytes")));
        }
        let mut read = vec![];
        for value in serde_json::Deserializer::from_slice(bytes).into_iter::<serde_json::Value>() {
            let value = value.map_err(|e| Refused::new(format!("trust root: {e}")))?;
            if read.len() == ENTRIES_MAX {
                return Err(Refused::new("trust root: too many in one file"));
            }
            let one = serde_json::to_vec(&value).map_err(|e| Refused::new(format!("trust root: {e}")))?;
            read.push(TrustRoot::from_json(&one)?);
        }
        if read.is_empty() {
            return Err(Refused::new("trust root: an empty file"));
        }
        Ok(read)
    }

    /// The transparency log whose id is `id`.
    pub(crate) fn tlog(&self, id: &[u8]) -> Option<&Log> {
        self.tlogs.iter().find(|log| log.id == id)
    }

    /// Whether it holds transparency logs (then every bundle must carry an entry of one).
    pub fn has_tlogs(&self) -> bool {
        !self.tlogs.is_empty()
    }
}

fn logs(logs: &[super::json::Log]) -> Result<Vec<Log>, Refused> {
    let mut read = vec![];
    for log in logs {
        let valid = interval(log.valid_for.as_ref())?;
        if log.key_details.starts_with("PKCS1_RSA") || log.key_details.starts_with("PKIX_RSA") {
            continue;
        }
        let raw = log.raw_bytes.as_deref().ok_or_else(|| Refused::new("trust root: a log without its key"))?;
        let key = PublicKey::from_spki(&base64(raw, "trust root key")?)?;
        let name = log.base_url.split("://").nth(1).unwrap_or(&log.base_url).split('/').next().unwrap_or_default();
        read.push(Log { id: base64(&log.log_id, "trust root log id")?, key, valid, name: name.to_string() });
    }
    Ok(read)
}

fn authorities(authorities: &[super::json::Authority]) -> Result<Vec<Authority>, Refused> {
    let mut read = vec![];
    for authority in authorities {
        let certificates = &authority.certificates;
        if certificates.is_empty() || certificates.len() > CHAIN_MAX {
            return Err(Refused::new("trust root: an authority's chain is empty or too long"));
        }
        let chain = certificates.iter().map(|c| base64(c, "trust root certificate")).collect::<Result<Vec<_>, _>>()?;
        for der in &chain {
            Certificate::parse(der)?.key()?;
        }
        read.push(Authority { chain, valid: interval(authority.valid_for.as_ref())? });
    }
    Ok(read)
}

fn interval(range: Option<&super::json::Range>) -> Result<Interval, Refused> {
    let range = range.ok_or_else(|| Refused::new("trust root: an entry without validFor"))?;
    let start = range.start.as_deref().ok_or_else(|| Refused::new("trust root: a validFor without its start"))?;
    let start = rfc3339_nanos(start)?;
    let end = range.end.as_deref().map(rfc3339_nanos).transpose()?;
    Ok(Interval { start, end })
}

/// `2022-04-13T20:06:15.000Z` → Unix nanoseconds.
pub(crate) fn rfc3339_nanos(text: &str) -> Result<i64, Refused> {
    let bad = || Refused::new(format!("not a UTC timestamp: {text:?}"));
    let body = text.strip_suffix('Z').ok_or_else(bad)?;
    let (whole, fraction) = body.split_once('.').unwrap_or((body, ""));
    let seconds = crate::clock::parse_rfc3339(&format!("{whole}Z")).ok_or_else(bad)?;
    let nanos = super::der::nanos(fraction).ok_or_else(bad)?;
    seconds.checked_mul(1_000_000_000).and_then(|s| s.checked_add(nanos)).ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_root_per_line_is_read_as_gh_attestation_trusted_root_prints_them() {
        let one: serde_json::Value = serde_json::from_slice(include_bytes!("trusted_root.json")).unwrap();
        let line = serde_json::to_string(&one).unwrap();
        assert_eq!(TrustRoot::from_json_lines(format!("{line}\n{line}\n").as_bytes()).unwrap().len(), 2);
        assert_eq!(TrustRoot::from_json_lines(include_bytes!("trusted_root.json")).unwrap().len(), 1);
        assert!(TrustRoot::from_json_lines(b"").is_err());
        assert!(TrustRoot::from_json_lines(format!("{line}\n{{\"mediaType\": 1}}").as_bytes()).is_err());
    }

    #[test]
    fn an_interval_without_its_start_makes_the_root_unreadable() {
        let mut root: serde_json::Value = serde_json::from_slice(include_bytes!("trusted_root.json")).unwrap();
        root["tlogs"][0]["publicKey"]["validFor"].as_object_mut().unwrap().remove("start");
        let error = TrustRoot::from_json(&serde_json::to_vec(&root).unwrap()).unwrap_err();
        assert!(error.to_string().contains("without its start"), "{error}");
    }
}
