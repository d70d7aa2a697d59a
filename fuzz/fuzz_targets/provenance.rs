//! Any bytes as a Sigstore bundle beside an archive, a trust root an operator adds, or the DER
//! inside them (certificates, SCT lists, RFC 3161 timestamps): nothing may panic, and a bundle
//! made of random bytes must never verify against the shipped trust root.
#![no_main]

use libfuzzer_sys::fuzz_target;
use registry::provenance::{self, Signer, TrustRoot};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    match mode % 3 {
        0 => {
            let root = TrustRoot::public_good();
            let verified = provenance::verify(rest, provenance::sha256(rest), &root, Signer::Certificate);
            assert!(verified.is_err(), "fuzzed bytes verified as a bundle");
        }
        1 => {
            let _ = TrustRoot::from_json(rest);
        }
        _ => provenance::read_der_parts(rest),
    }
});
