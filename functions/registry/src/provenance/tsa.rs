//! An RFC 3161 timestamp from a bundle (a TimeStampResp or its token): its TSTInfo's message
//! imprint is the digest of the bundle's signature, its signed attributes name that TSTInfo,
//! and the timestamp authority's certificate (the first of a trusted chain: certificates the
//! response embeds are never trusted for themselves) signed them and chains to the
//! authority's root, valid at the time it states. That time (`genTime`) is then a verified
//! time for the signing certificate.

use super::der::{self, Der, OCTET_STRING, OID, SEQUENCE, SET};
use super::keys::{Algorithm, Hash, PublicKey};
use super::trust::{Authority, TrustRoot};
use super::x509::{Certificate, TIME_STAMPING};
use super::{Refused, refuse};

const SIGNED_DATA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x07, 0x02];
const TST_INFO: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x10, 0x01, 0x04];
const CONTENT_TYPE: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x03];
const MESSAGE_DIGEST: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x04];
/// Largest timestamp read (a few certificates at most).
pub(crate) const TIMESTAMP_MAX_BYTES: usize = 32 * 1024;
const ATTRIBUTES_MAX: usize = 16;

/// What a timestamp token says, before anything about it is trusted.
struct Token<'a> {
    tst_info: &'a [u8],
    imprint_hash: Hash,
    imprint: &'a [u8],
    gen_time: i64,
    digest: Hash,
    signed_attributes: Vec<u8>,
    algorithm: Option<Algorithm>,
    signature: &'a [u8],
}

/// The time `timestamp` (DER) states for `signature`, once a timestamp authority of `root`
/// is found to have signed it, and the authority's signature (what tells two tokens apart).
pub(crate) fn verify(timestamp: &[u8], signature: &[u8], root: &TrustRoot) -> Result<(i64, Vec<u8>), Refused> {
    if timestamp.len() > TIMESTAMP_MAX_BYTES {
        return refuse("timestamp: too large");
    }
    let token = parse(timestamp)?;
    if token.imprint_hash.digest(signature) != token.imprint {
        return refuse("timestamp: it is not over this bundle's signature");
    }
    check_attributes(&token)?;
    for authority in &root.tsas {
        if signed_by(&token, authority)? {
            return Ok((token.gen_time, token.signature.to_vec()));
        }
    }
    refuse("timestamp: no trusted timestamp authority signed it at the time it states")
}

/// Whether `authority` signed the token and was trusted, with its chain valid, at its time.
fn signed_by(token: &Token<'_>, authority: &Authority) -> Result<bool, Refused> {
    let chain = authority.chain.iter().map(|c| Certificate::parse(c)).collect::<Result<Vec<_>, _>>()?;
    let Some(signer) = chain.first() else { return Ok(false) };
    let key = signer.key()?;
    let algorithm = match (token.algorithm, &key) {
        (Some(algorithm), _) => algorithm,
        (None, PublicKey::P256(_) | PublicKey::P384(_)) => Algorithm::Ecdsa(token.digest),
        (None, PublicKey::Ed25519(_)) => Algorithm::Ed25519,
        (None, PublicKey::Rsa(_)) => Algorithm::Rsa(token.digest),
    };
    if key.verify(algorithm, &token.signed_attributes, token.signature).is_err() {
        return Ok(false);
    }
    let at = token.gen_time;
    if !authority.valid.contains(at) || !chain.iter().all(|c| c.valid_at(at)) {
        return refuse("timestamp: its time is outside its authority's validity");
    }
    if signer.extended_key_usage(TIME_STAMPING)? != Some(true) {
        return refuse("timestamp: its authority's certificate is not for timestamping");
    }
    for pair in chain.windows(2) {
        pair[0].issued_by(&pair[1])?;
    }
    Ok(true)
}

/// The signed attributes name a TSTInfo and carry its digest.
fn check_attributes(token: &Token<'_>) -> Result<(), Refused> {
    let mut outer = Der::new(&token.signed_attributes);
    let mut attributes = outer.enter(SET, "timestamp attributes")?;
    let (mut content_type, mut message_digest) = (false, false);
    for _ in 0..ATTRIBUTES_MAX {
        if attributes.is_empty() {
            break;
        }
        let mut attribute = attributes.enter(SEQUENCE, "timestamp attribute")?;
        let oid = attribute.take(OID, "timestamp attribute")?;
        let mut values = attribute.enter(SET, "timestamp attribute")?;
        match oid {
            CONTENT_TYPE => content_type = values.take(OID, "content type")? == TST_INFO,
            MESSAGE_DIGEST => {
                message_digest = values.take(OCTET_STRING, "message digest")? == token.digest.digest(token.tst_info)
            }
            _ => {}
        }
    }
    if !attributes.is_empty() {
        return refuse("timestamp: too many signed attributes");
    }
    if !(content_type && message_digest) {
        return refuse("timestamp: its signed attributes do not name its TSTInfo");
    }
    Ok(())
}

fn parse(bytes: &[u8]) -> Result<Token<'_>, Refused> {
    let mut outer = Der::new(bytes);
    let mut first = outer.enter(SEQUENCE, "timestamp")?;
    outer.end("timestamp")?;
    // A TimeStampResp starts with its PKIStatusInfo; a bare token with its content type.
    let mut content_info = if first.peek_tag() == Some(SEQUENCE) {
        let mut status = first.enter(SEQUENCE, "timestamp status")?;
        if status.small_uint("timestamp status")? > 1 {
            return refuse("timestamp: the authority refused it");
        }
        let token = first.enter(SEQUENCE, "timestamp token")?;
        first.end("timestamp")?;
        token
    } else {
        first
    };
    if content_info.take(OID, "timestamp token")? != SIGNED_DATA {
        return refuse("timestamp: not CMS SignedData");
    }
    let mut wrapper = content_info.enter(der::explicit(0), "timestamp token")?;
    content_info.end("timestamp token")?;
    let mut signed_data = wrapper.enter(SEQUENCE, "signed data")?;
    wrapper.end("timestamp token")?;
    signed_data.small_uint("signed data version")?;
    signed_data.take(SET, "digest algorithms")?;
    let mut encapsulated = signed_data.enter(SEQUENCE, "encapsulated content")?;
    if encapsulated.take(OID, "encapsulated content")? != TST_INFO {
        return refuse("timestamp: its content is not a TSTInfo");
    }
    let tst_info = encapsulated.enter(der::explicit(0), "TSTInfo")?.take(OCTET_STRING, "TSTInfo")?;
    signed_data.optional(der::explicit(0), "certificates")?;
    signed_data.optional(der::explicit(1), "revocation lists")?;
    let mut signer_infos = signed_data.enter(SET, "signer infos")?;
    signed_data.end("signed data")?;
    let mut signer = signer_infos.enter(SEQUENCE, "signer info")?;
    if !signer_infos.is_empty() {
        return refuse("timestamp: more than one signer");
    }
    signer.small_uint("signer version")?;
    signer.any("signer id")?;
    let digest = hash_of(signer.take(SEQUENCE, "signer digest algorithm")?)?;
    let attributes = signer.element(der::explicit(0), "signed attributes")?;
    // The signature covers the attributes as a SET (RFC 5652 §5.4), not as the [0] they are.
    let signed_attributes = [&[SET][..], &attributes.raw[1..]].concat();
    let algorithm = signer.take(SEQUENCE, "signer signature algorithm")?;
    // CMS signers may name the key's algorithm alone (the digest is then the signer's).
    let key_algorithm = Der::new(algorithm).take(OID, "signature algorithm")?;
    let algorithm = if key_algorithm == super::keys::EC_PUBLIC_KEY || key_algorithm == super::keys::RSA_ENCRYPTION {
        None
    } else {
        Some(Algorithm::from_identifier(algorithm, "timestamp signature").or_else(|_| {
            // An RSA or other signer: nothing here can verify it.
            refuse("timestamp: an unsupported signature algorithm")
        })?)
    };
    let signature = signer.take(OCTET_STRING, "signer signature")?;
    signer.optional(der::explicit(1), "unsigned attributes")?;
    signer.end("signer info")?;

    let mut info = Der::new(tst_info).enter(SEQUENCE, "TSTInfo")?;
    info.small_uint("TSTInfo version")?;
    info.take(OID, "TSTInfo policy")?;
    let mut imprint = info.enter(SEQUENCE, "message imprint")?;
    let imprint_hash = hash_of(imprint.take(SEQUENCE, "message imprint algorithm")?)?;
    let imprint = imprint.take(OCTET_STRING, "message imprint")?;
    info.element(der::INTEGER, "TSTInfo serial")?;
    let gen_time = info.time("TSTInfo genTime")?;
    Ok(Token { tst_info, imprint_hash, imprint, gen_time, digest, signed_attributes, algorithm, signature })
}

/// An AlgorithmIdentifier's digest (parameters NULL or absent).
fn hash_of(identifier: &[u8]) -> Result<Hash, Refused> {
    let mut der = Der::new(identifier);
    Hash::from_oid(der.take(OID, "digest algorithm")?)
        .ok_or_else(|| Refused::new("timestamp: an unsupported digest algorithm"))
}
