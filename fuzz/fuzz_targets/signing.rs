//! Any bytes as what a publisher uploads for a signed release: a signing key file, a detached
//! signature, a SHA256SUMS file. The checks must never panic, and must never accept a
//! signature over other bytes (the keys here are parsed from the input, so an accepted
//! signature must verify with one of them over exactly this document).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Three parts, split at the first two 0xff bytes: key file, signature, document.
    let mut parts = data.splitn(3, |b| *b == 0xff);
    let (key, signature, document) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
    let _ = registry::signing::parse_shasums(document);
    let keys = registry::signing::parse_keys("fuzz.asc", key).unwrap_or_default();
    if let Ok(signer) = registry::signing::verify(&keys, document, signature, 1_800_000_000) {
        assert!(keys.iter().any(|k| k.key_id == signer.key_id));
        let mut other = document.to_vec();
        other.push(b'x');
        assert!(registry::signing::verify(&keys, &other, signature, 1_800_000_000).is_err(), "a signature verified over other bytes");
    }
});
