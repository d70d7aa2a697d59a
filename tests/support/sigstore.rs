//! A Sigstore instance of the tests' own: a Fulcio-like CA and a Rekor-like log key, the trust
//! root naming them (`trusted_root.json`), and bundles it issues the way GitHub Actions'
//! `attest-build-provenance` does: a DSSE envelope over an in-toto SLSA statement naming the
//! archive by SHA-256, a leaf certificate carrying Fulcio's GitHub extensions, a Rekor v1
//! `dsse` entry with its signed entry timestamp, a one-leaf inclusion proof and a checkpoint
//! the log signed. Its trust root lists no certificate transparency log, so no SCT is asked
//! for; everything else is what the production instance makes, checked the same way.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rcgen::{
    BasicConstraints, CertificateParams, CustomExtension, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, PublicKeyData, SanType, SigningKey,
};
use serde_json::json;
use sha2::{Digest, Sha256};

/// The issuer GitHub Actions' tokens name.
pub const GITHUB_ISSUER: &str = "https://token.actions.githubusercontent.com";

/// Who signs: a GitHub repository's workflow run at a ref.
#[derive(Debug, Clone)]
pub struct Workflow {
    /// `OWNER/REPO`.
    pub repository: String,
    /// `refs/tags/v1.2.0`.
    pub git_ref: String,
    /// `.github/workflows/release.yml`.
    pub path: String,
    /// The commit, 40 hex digits.
    pub commit: String,
}

impl Workflow {
    /// `OWNER/REPO`'s release workflow at tag `vVERSION`.
    pub fn release(repository: &str, version: &str) -> Workflow {
        Workflow {
            repository: repository.into(),
            git_ref: format!("refs/tags/v{version}"),
            path: ".github/workflows/release.yml".into(),
            commit: hex::encode(&Sha256::digest(format!("{repository}@{version}"))[..20]),
        }
    }

    fn uri(&self) -> String {
        format!("https://github.com/{}/{}@{}", self.repository, self.path, self.git_ref)
    }
}

/// The instance: its CA and log keys.
pub struct Sigstore {
    ca: Issuer<'static, KeyPair>,
    ca_der: Vec<u8>,
    log: KeyPair,
}

impl Default for Sigstore {
    fn default() -> Self {
        Sigstore::new()
    }
}

impl Sigstore {
    pub fn new() -> Sigstore {
        let key = KeyPair::generate().expect("CA key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.distinguished_name.push(DnType::OrganizationName, "registry-tests");
        params.distinguished_name.push(DnType::CommonName, "registry-tests-fulcio");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        params.not_before = rcgen::date_time_ymd(2020, 1, 1);
        params.not_after = rcgen::date_time_ymd(2099, 12, 31);
        let ca_der = params.self_signed(&key).expect("CA certificate").der().to_vec();
        Sigstore { ca: Issuer::new(params, key), ca_der, log: KeyPair::generate().expect("log key") }
    }

    fn log_id(&self) -> Vec<u8> {
        Sha256::digest(self.log.subject_public_key_info()).to_vec()
    }

    /// Its `trusted_root.json`: the CA and the log, trusted since 2020.
    pub fn trusted_root(&self) -> Vec<u8> {
        let root = json!({
            "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
            "tlogs": [{
                "baseUrl": "https://rekor.registry-tests.invalid",
                "hashAlgorithm": "SHA2_256",
                "publicKey": {
                    "rawBytes": STANDARD.encode(self.log.subject_public_key_info()),
                    "keyDetails": "PKIX_ECDSA_P256_SHA_256",
                    "validFor": {"start": "2020-01-01T00:00:00Z"},
                },
                "logId": {"keyId": STANDARD.encode(self.log_id())},
            }],
            "certificateAuthorities": [{
                "subject": {"organization": "registry-tests", "commonName": "registry-tests-fulcio"},
                "uri": "https://fulcio.registry-tests.invalid",
                "certChain": {"certificates": [{"rawBytes": STANDARD.encode(&self.ca_der)}]},
                "validFor": {"start": "2020-01-01T00:00:00Z"},
            }],
            "ctlogs": [],
            "timestampAuthorities": [],
        });
        serde_json::to_vec_pretty(&root).expect("JSON")
    }

    /// A leaf certificate for `who`, and its key.
    fn leaf(&self, who: &Workflow) -> (Vec<u8>, KeyPair) {
        let key = KeyPair::generate().expect("leaf key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("leaf params");
        params.subject_alt_names = vec![SanType::URI(who.uri().try_into().expect("an IA5 URI"))];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::CodeSigning];
        params.not_before = rcgen::date_time_ymd(2020, 1, 1);
        params.not_after = rcgen::date_time_ymd(2099, 12, 31);
        let repository = format!("https://github.com/{}", who.repository);
        let run = format!("{repository}/actions/runs/4242/attempts/1");
        let fulcio =
            |arc: u64, value: &str| CustomExtension::from_oid_content(&[1, 3, 6, 1, 4, 1, 57264, 1, arc], utf8(value));
        params.custom_extensions = vec![
            fulcio(8, GITHUB_ISSUER),
            fulcio(9, &who.uri()),
            fulcio(10, &who.commit),
            fulcio(11, "github-hosted"),
            fulcio(12, &repository),
            fulcio(13, &who.commit),
            fulcio(14, &who.git_ref),
            fulcio(18, &who.uri()),
            fulcio(19, &who.commit),
            fulcio(20, "push"),
            fulcio(21, &run),
        ];
        let der = params.signed_by(&key, &self.ca).expect("leaf certificate").der().to_vec();
        (der, key)
    }

    /// A bundle (v0.3) for the archive named `name` whose SHA-256 is `sha256` (hex), signed by
    /// `who`'s workflow and logged at `integrated_time` (Unix seconds).
    pub fn bundle(&self, name: &str, sha256: &str, who: &Workflow, integrated_time: i64) -> Vec<u8> {
        let (certificate, key) = self.leaf(who);
        let statement = json!({
            "_type": "https://in-toto.io/Statement/v1",
            "subject": [{"name": name, "digest": {"sha256": sha256}}],
            "predicateType": "https://slsa.dev/provenance/v1",
            "predicate": {
                "buildDefinition": {
                    "buildType": "https://actions.github.io/buildtypes/workflow/v1",
                    "externalParameters": {"workflow": {
                        "ref": who.git_ref, "repository": format!("https://github.com/{}", who.repository), "path": who.path,
                    }},
                },
                "runDetails": {"builder": {"id": "https://github.com/actions/runner/github-hosted"}},
            },
        });
        let payload = serde_json::to_vec(&statement).expect("JSON");
        let payload_type = "application/vnd.in-toto+json";
        let mut pae = format!("DSSEv1 {} {payload_type} {} ", payload_type.len(), payload.len()).into_bytes();
        pae.extend_from_slice(&payload);
        let signature = key.sign(&pae).expect("DSSE signature");
        let pem =
            format!("-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n", STANDARD.encode(&certificate));
        let body = json!({
            "apiVersion": "0.0.1",
            "kind": "dsse",
            "spec": {
                "envelopeHash": {"algorithm": "sha256", "value": hex::encode(Sha256::digest(&pae))},
                "payloadHash": {"algorithm": "sha256", "value": hex::encode(Sha256::digest(&payload))},
                "signatures": [{"signature": STANDARD.encode(&signature), "verifier": STANDARD.encode(pem)}],
            },
        });
        let body = STANDARD.encode(serde_json::to_vec(&body).expect("JSON"));
        let bundle = json!({
            "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
            "verificationMaterial": {
                "certificate": {"rawBytes": STANDARD.encode(&certificate)},
                "tlogEntries": [self.entry(&body, integrated_time)],
            },
            "dsseEnvelope": {
                "payload": STANDARD.encode(&payload),
                "payloadType": payload_type,
                "signatures": [{"sig": STANDARD.encode(&signature)}],
            },
        });
        serde_json::to_vec_pretty(&bundle).expect("JSON")
    }

    /// The log's entry for `body` (base64): the only leaf of its tree, promised and proven.
    fn entry(&self, body: &str, integrated_time: i64) -> serde_json::Value {
        let log_id = self.log_id();
        let promise = format!(
            r#"{{"body":"{body}","integratedTime":{integrated_time},"logID":"{}","logIndex":0}}"#,
            hex::encode(&log_id)
        );
        let promise = self.log.sign(promise.as_bytes()).expect("SET");
        let leaf = Sha256::new().chain_update([0u8]).chain_update(STANDARD.decode(body).expect("base64")).finalize();
        let note = format!("rekor.registry-tests.invalid - 1\n1\n{}\n", STANDARD.encode(leaf));
        let note_signature = self.log.sign(note.as_bytes()).expect("checkpoint");
        let line = STANDARD.encode([&log_id[..4], &note_signature].concat());
        json!({
            "logIndex": "0",
            "logId": {"keyId": STANDARD.encode(&log_id)},
            "kindVersion": {"kind": "dsse", "version": "0.0.1"},
            "integratedTime": integrated_time.to_string(),
            "inclusionPromise": {"signedEntryTimestamp": STANDARD.encode(promise)},
            "inclusionProof": {
                "logIndex": "0",
                "rootHash": STANDARD.encode(leaf),
                "treeSize": "1",
                "hashes": [],
                "checkpoint": {"envelope": format!("{note}\n\u{2014} rekor.registry-tests.invalid {line}\n")},
            },
            "canonicalizedBody": body,
        })
    }
}

/// A DER UTF8String (Fulcio's extensions from 8 on).
fn utf8(value: &str) -> Vec<u8> {
    let len = value.len();
    let mut out = vec![0x0c];
    match len {
        0..=127 => out.push(len as u8),
        128..=255 => out.extend([0x81, len as u8]),
        _ => out.extend([0x82, (len >> 8) as u8, len as u8]),
    }
    out.extend_from_slice(value.as_bytes());
    out
}
