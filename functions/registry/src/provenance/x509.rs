//! X.509 certificates as Sigstore uses them: a Fulcio leaf (short-lived, its identity in the
//! subject alternative name and Fulcio's extensions), the CA chains of a trust root, a
//! timestamp authority's certificates. Only what verification reads is parsed; a critical
//! extension nothing here understands makes the certificate unusable, as RFC 5280 requires.

use super::Refused;
use super::der::{self, BOOLEAN, Der, OCTET_STRING, OID, SEQUENCE, Tlv};
use super::keys::{Algorithm, PublicKey};

const KEY_USAGE: &[u8] = &[0x55, 0x1d, 0x0f];
const SUBJECT_ALT_NAME: &[u8] = &[0x55, 0x1d, 0x11];
const BASIC_CONSTRAINTS: &[u8] = &[0x55, 0x1d, 0x13];
const EXTENDED_KEY_USAGE: &[u8] = &[0x55, 0x1d, 0x25];
pub(crate) const SCT_LIST: &[u8] = &[0x2b, 0x06, 0x01, 0x04, 0x01, 0xd6, 0x79, 0x02, 0x04, 0x02];
pub(crate) const CODE_SIGNING: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x03];
pub(crate) const TIME_STAMPING: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x08];
/// 1.3.6.1.4.1.57264.1: Fulcio's extensions (their last arc follows).
pub(crate) const FULCIO: &[u8] = &[0x2b, 0x06, 0x01, 0x04, 0x01, 0x83, 0xbf, 0x30, 0x01];

/// 1.3.6.1.4.1.57264.1.7: Fulcio's otherName for username identities.
const USERNAME: &[u8] = &[0x2b, 0x06, 0x01, 0x04, 0x01, 0x83, 0xbf, 0x30, 0x01, 0x07];

/// The critical extensions this verifier understands (and so may accept).
const UNDERSTOOD: &[&[u8]] = &[KEY_USAGE, SUBJECT_ALT_NAME, BASIC_CONSTRAINTS, EXTENDED_KEY_USAGE];

/// One extension.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Extension<'a> {
    pub oid: &'a [u8],
    pub value: &'a [u8],
    pub raw: &'a [u8],
}

/// A parsed certificate, borrowing its DER.
#[derive(Debug, Clone)]
pub(crate) struct Certificate<'a> {
    pub tbs: Tlv<'a>,
    algorithm: Algorithm,
    signature: &'a [u8],
    pub issuer: &'a [u8],
    pub subject: &'a [u8],
    pub not_before: i64,
    pub not_after: i64,
    pub spki: &'a [u8],
    pub extensions: Vec<Extension<'a>>,
}

/// Most subject alternative names, or extended key usages, one certificate may list.
const NAMES_MAX: usize = 16;
/// Most extensions one certificate may carry (Fulcio's leaf has about twenty).
const EXTENSIONS_MAX: usize = 64;

impl<'a> Certificate<'a> {
    pub fn parse(raw: &'a [u8]) -> Result<Certificate<'a>, Refused> {
        let mut outer = Der::new(raw);
        let mut cert = outer.enter(SEQUENCE, "certificate")?;
        outer.end("certificate")?;
        let tbs = cert.element(SEQUENCE, "certificate")?;
        let outer_algorithm = cert.take(SEQUENCE, "certificate signature algorithm")?;
        let algorithm = Algorithm::from_identifier(outer_algorithm, "certificate")?;
        let signature = cert.bits("certificate signature")?;
        cert.end("certificate")?;

        let mut body = tbs.contents();
        let version = body.element(der::explicit(0), "certificate version")?;
        if version.value != [0x02, 0x01, 0x02] {
            return Err(Refused::new("certificate: not X.509 v3"));
        }
        body.element(der::INTEGER, "certificate serial")?;
        if body.take(SEQUENCE, "certificate algorithm")? != outer_algorithm {
            return Err(Refused::new("certificate: its two signature algorithms differ"));
        }
        let issuer = body.element(SEQUENCE, "certificate issuer")?.raw;
        let mut validity = body.enter(SEQUENCE, "certificate validity")?;
        let not_before = validity.time("certificate notBefore")?;
        let not_after = validity.time("certificate notAfter")?;
        validity.end("certificate validity")?;
        let subject = body.element(SEQUENCE, "certificate subject")?.raw;
        let spki = body.element(SEQUENCE, "certificate public key")?.raw;
        body.optional(der::implicit(1), "issuer unique id")?;
        body.optional(der::implicit(2), "subject unique id")?;
        let mut extensions = vec![];
        if let Some(list) = body.optional(der::explicit(3), "certificate extensions")? {
            let mut list = list.contents();
            let mut items = list.enter(SEQUENCE, "certificate extensions")?;
            list.end("certificate extensions")?;
            while !items.is_empty() {
                if extensions.len() == EXTENSIONS_MAX {
                    return Err(Refused::new("certificate: too many extensions"));
                }
                let extension = extension(&mut items)?;
                // RFC 5280 §4.2: an extension appears once (else which one counts is a guess).
                if extensions.iter().any(|e: &Extension<'_>| e.oid == extension.oid) {
                    return Err(Refused::new("certificate: an extension twice"));
                }
                extensions.push(extension);
            }
        }
        body.end("certificate")?;
        Ok(Certificate { tbs, algorithm, signature, issuer, subject, not_before, not_after, spki, extensions })
    }

    pub fn key(&self) -> Result<PublicKey, Refused> {
        PublicKey::from_spki(self.spki)
    }

    pub fn extension(&self, oid: &[u8]) -> Option<&Extension<'a>> {
        self.extensions.iter().find(|e| e.oid == oid)
    }

    /// Whether `issuer` signed this certificate (names and signature).
    pub fn issued_by(&self, issuer: &Certificate<'_>) -> Result<(), Refused> {
        if self.issuer != issuer.subject {
            return Err(Refused::new("certificate chain: an issuer's name does not match"));
        }
        issuer.key()?.verify(self.algorithm, self.tbs.raw, self.signature)
    }

    /// Whether `at` (Unix nanoseconds) falls within notBefore..=notAfter.
    pub fn valid_at(&self, at: i64) -> bool {
        self.not_before <= at && at <= self.not_after
    }

    /// BasicConstraints' cA flag (false when absent).
    pub fn is_ca(&self) -> Result<bool, Refused> {
        let Some(ext) = self.extension(BASIC_CONSTRAINTS) else { return Ok(false) };
        let mut der = Der::new(ext.value);
        let mut constraints = der.enter(SEQUENCE, "basic constraints")?;
        der.end("basic constraints")?;
        constraints.optional(BOOLEAN, "basic constraints")?.map_or(Ok(false), |b| boolean(b.value))
    }

    /// Whether KeyUsage has `bit` (0 digitalSignature, 5 keyCertSign); `None` when absent.
    pub fn key_usage(&self, bit: usize) -> Result<Option<bool>, Refused> {
        let Some(ext) = self.extension(KEY_USAGE) else { return Ok(None) };
        let bits = Der::new(ext.value).take(der::BIT_STRING, "key usage")?;
        let (_, bytes) = bits.split_first().ok_or_else(|| Refused::new("key usage: empty"))?;
        Ok(Some(bytes.get(bit / 8).is_some_and(|b| b & (0x80 >> (bit % 8)) != 0)))
    }

    /// Whether ExtendedKeyUsage lists `purpose`; `None` when absent.
    pub fn extended_key_usage(&self, purpose: &[u8]) -> Result<Option<bool>, Refused> {
        let Some(ext) = self.extension(EXTENDED_KEY_USAGE) else { return Ok(None) };
        let mut der = Der::new(ext.value);
        let mut list = der.enter(SEQUENCE, "extended key usage")?;
        let mut found = false;
        for _ in 0..NAMES_MAX {
            if list.is_empty() {
                break;
            }
            found |= list.take(OID, "extended key usage")? == purpose;
        }
        if !list.is_empty() {
            return Err(Refused::new("extended key usage: too many purposes"));
        }
        Ok(Some(found))
    }

    /// The subject alternative names Fulcio writes: URIs (`[6]`) and e-mail addresses (`[1]`),
    /// ASCII as their types require, and otherName (`[0]`) of Fulcio's username OID, a
    /// UTF8String. A name of any other kind is refused, so "exactly one name" means one.
    pub fn alternative_names(&self) -> Result<Vec<String>, Refused> {
        let Some(ext) = self.extension(SUBJECT_ALT_NAME) else { return Ok(vec![]) };
        let mut der = Der::new(ext.value);
        let mut names = der.enter(SEQUENCE, "subject alternative name")?;
        der.end("subject alternative name")?;
        let mut found = vec![];
        while !names.is_empty() {
            if found.len() == NAMES_MAX {
                return Err(Refused::new("subject alternative name: too many names"));
            }
            let name = names.any("subject alternative name")?;
            let text = match name.tag {
                0x81 | 0x86 if name.value.is_ascii() => name.value,
                0xa0 => {
                    let mut other = name.contents();
                    if other.take(OID, "other name")? != USERNAME {
                        return Err(Refused::new("subject alternative name: an otherName Fulcio does not write"));
                    }
                    let mut value = other.enter(der::explicit(0), "other name")?;
                    value.take(der::UTF8_STRING, "other name")?
                }
                _ => return Err(Refused::new("subject alternative name: of a kind Fulcio does not write")),
            };
            let text =
                String::from_utf8(text.to_vec()).map_err(|_| Refused::new("subject alternative name: not UTF-8"))?;
            if let Some(what) = text.chars().find_map(crate::printed::refused) {
                return Err(Refused::new(format!("subject alternative name: holds {what}")));
            }
            found.push(text);
        }
        Ok(found)
    }

    /// Refuses a critical extension this verifier does not understand.
    pub fn understood(&self, critical: &[&[u8]]) -> Result<(), Refused> {
        for ext in &self.extensions {
            let mut der = Der::new(ext.raw);
            let mut fields = der.enter(SEQUENCE, "extension")?;
            fields.take(OID, "extension")?;
            let is_critical = fields.optional(BOOLEAN, "extension")?.map_or(Ok(false), |b| boolean(b.value))?;
            if is_critical && !UNDERSTOOD.contains(&ext.oid) && !critical.contains(&ext.oid) {
                return Err(Refused::new("certificate: a critical extension this verifier does not understand"));
            }
        }
        Ok(())
    }
}

/// A DER BOOLEAN's contents: `0xff` or `0x00`, nothing else (BER's other true values are
/// refused, so a flag cannot read as false here and true elsewhere).
fn boolean(value: &[u8]) -> Result<bool, Refused> {
    match value {
        [0xff] => Ok(true),
        [0x00] => Ok(false),
        _ => Err(Refused::new("certificate: a BOOLEAN that is not DER")),
    }
}

fn extension<'a>(items: &mut Der<'a>) -> Result<Extension<'a>, Refused> {
    let tlv = items.element(SEQUENCE, "extension")?;
    let mut fields = tlv.contents();
    let oid = fields.take(OID, "extension")?;
    if let Some(flag) = fields.optional(BOOLEAN, "extension")? {
        boolean(flag.value)?;
    }
    let value = fields.take(OCTET_STRING, "extension")?;
    fields.end("extension")?;
    Ok(Extension { oid, value, raw: tlv.raw })
}

/// PEM → DER (the first block of `label`), as Rekor's entries carry a certificate or key.
pub(crate) fn pem(text: &[u8], label: &str) -> Result<Vec<u8>, Refused> {
    use base64::Engine;
    let text = std::str::from_utf8(text).map_err(|_| Refused::new("PEM: not text"))?;
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let start = text.find(&begin).ok_or_else(|| Refused::new(format!("PEM: no {label}")))? + begin.len();
    let stop = text[start..].find(&end).ok_or_else(|| Refused::new(format!("PEM: no end of {label}")))? + start;
    let body: String = text[start..stop].chars().filter(|c| !c.is_ascii_whitespace()).collect();
    base64::engine::general_purpose::STANDARD.decode(body).map_err(|_| Refused::new("PEM: not base64"))
}
