//! The signed certificate timestamps Fulcio embeds in a leaf (RFC 6962 §3.3): at least one
//! must verify with the key of a certificate transparency log the trust root holds, over the
//! precertificate it was issued for (the leaf's TBSCertificate without the SCT list, and the
//! issuer's key hash). A certificate Fulcio issued is then also in a public CT log.

use sha2::{Digest, Sha256};

use super::der::{self, Der, SEQUENCE};
use super::keys::{Algorithm, Hash};
use super::trust::TrustRoot;
use super::x509::{Certificate, SCT_LIST};
use super::{Refused, refuse};

/// Most SCTs read from one certificate.
const SCTS_MAX: usize = 16;

pub(crate) fn verify(leaf: &Certificate<'_>, issuer: &Certificate<'_>, root: &TrustRoot) -> Result<(), Refused> {
    // A trust root naming no CT log (a private instance's, the tests') asks for no SCT.
    if !root.ctlogs_named {
        return Ok(());
    }
    let ext = leaf.extension(SCT_LIST).ok_or_else(|| Refused::new("certificate: no signed certificate timestamp"))?;
    let list = Der::new(ext.value).take(der::OCTET_STRING, "SCT list")?;
    let mut list = Tls(list);
    let mut scts = Tls(list.vector(2)?);
    list.end()?;
    let precertificate = precertificate(leaf)?;
    let issuer_key_hash: [u8; 32] = Sha256::digest(issuer.spki).into();
    for _ in 0..SCTS_MAX {
        if scts.0.is_empty() {
            break;
        }
        let sct = scts.vector(2)?;
        if verifies(sct, &precertificate, &issuer_key_hash, root)? {
            return Ok(());
        }
    }
    refuse("certificate: no signed certificate timestamp verifies with a CT log of the trust root")
}

fn verifies(sct: &[u8], precertificate: &[u8], issuer_key_hash: &[u8; 32], root: &TrustRoot) -> Result<bool, Refused> {
    let mut sct = Tls(sct);
    if sct.bytes(1)? != [0] {
        return Ok(false);
    }
    let log_id = sct.bytes(32)?;
    let timestamp = sct.bytes(8)?;
    let extensions = sct.vector(2)?;
    let (hash, algorithm) = (sct.bytes(1)?[0], sct.bytes(1)?[0]);
    let signature = sct.vector(2)?;
    sct.end()?;
    let Some(log) = root.ctlogs.iter().find(|log| log.id == log_id) else { return Ok(false) };
    let millis = u64::from_be_bytes(timestamp.try_into().unwrap_or_default());
    let at = i64::try_from(millis).unwrap_or(i64::MAX).saturating_mul(1_000_000);
    if !log.valid.contains(at) {
        return Ok(false);
    }
    let algorithm = match (hash, algorithm) {
        (4, 3) => Algorithm::Ecdsa(Hash::Sha256),
        (5, 3) => Algorithm::Ecdsa(Hash::Sha384),
        _ => return Ok(false),
    };
    let mut signed = vec![0u8, 0u8];
    signed.extend_from_slice(timestamp);
    signed.extend_from_slice(&[0, 1]);
    signed.extend_from_slice(issuer_key_hash);
    let length = u32::try_from(precertificate.len()).map_err(|_| Refused::new("SCT: precertificate too large"))?;
    signed.extend_from_slice(&length.to_be_bytes()[1..]);
    signed.extend_from_slice(precertificate);
    signed.extend_from_slice(&u16::try_from(extensions.len()).unwrap_or(u16::MAX).to_be_bytes());
    signed.extend_from_slice(extensions);
    Ok(log.key.verify(algorithm, &signed, signature).is_ok())
}

/// The leaf's TBSCertificate as the CT log saw it: without the SCT list extension.
fn precertificate(leaf: &Certificate<'_>) -> Result<Vec<u8>, Refused> {
    let mut fields = leaf.tbs.contents();
    let mut body = vec![];
    while !fields.is_empty() {
        let field = fields.any("certificate")?;
        if field.tag != der::explicit(3) {
            body.extend_from_slice(field.raw);
            continue;
        }
        let mut list = field.contents().enter(SEQUENCE, "certificate extensions")?;
        let mut kept = vec![];
        while !list.is_empty() {
            let extension = list.element(SEQUENCE, "extension")?;
            if extension.contents().take(der::OID, "extension")? != SCT_LIST {
                kept.extend_from_slice(extension.raw);
            }
        }
        body.extend(tlv(der::explicit(3), &tlv(SEQUENCE, &kept)));
    }
    Ok(tlv(SEQUENCE, &body))
}

fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes = len.to_be_bytes();
        let skip = bytes.iter().take_while(|&&b| b == 0).count();
        out.push(0x80 | (bytes.len() - skip) as u8);
        out.extend_from_slice(&bytes[skip..]);
    }
    out.extend_from_slice(content);
    out
}

/// TLS presentation-language reading: fixed fields and length-prefixed vectors.
struct Tls<'a>(&'a [u8]);

impl<'a> Tls<'a> {
    fn bytes(&mut self, n: usize) -> Result<&'a [u8], Refused> {
        if self.0.len() < n {
            return refuse("SCT: truncated");
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn vector(&mut self, length_bytes: usize) -> Result<&'a [u8], Refused> {
        let len = self.bytes(length_bytes)?.iter().fold(0usize, |n, &b| (n << 8) | usize::from(b));
        self.bytes(len)
    }

    fn end(&self) -> Result<(), Refused> {
        if self.0.is_empty() { Ok(()) } else { refuse("SCT: trailing bytes") }
    }
}
