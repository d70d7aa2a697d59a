//! The provenance verifier on bundles Sigstore's production instance signed, and in agreement
//! with the reference verifier, PyPI's `sigstore` 4.5.1, case by case.
//!
//! The corpus: the test assets of trailofbits/pypi-attestations as its 0.0.31 sdist on PyPI
//! ships them (`test/assets/`, tests/setup.sh fetches it by SHA-256): attestations that GitHub
//! Actions (`pypi_attestations-0.0.19.tar.gz.slsa.attestation`: SLSA provenance v1 from
//! trailofbits/pypi-attestations at commit 08802efe1f8e5fec4ad842d6b8ce97656092ee72, workflow
//! release.yml, tag v0.0.19), GitLab CI, CircleCI, Google Cloud Build and a person (GitHub
//! login) signed with public-good Fulcio and logged in Rekor, each beside the artifact it signs
//! (and one the staging instance signed, which the production trust root must refuse).
//! PyPI's attestation form is the bundle's parts under other names: each is turned back into
//! the v0.3 bundle pypi-attestations' `to_bundle` makes. Each is verified, then tampered with
//! (the artifact, the DSSE signature, the statement, the certificate, the inclusion proof,
//! the logged time, the identity expected) and must be refused, by both verifiers.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use registry::provenance::{self, Signer, TrustRoot};
use serde_json::{Value, json};
use support::skipped;

struct Case {
    file: &'static str,
    artifact: &'static str,
    subject: &'static str,
    issuer: &'static str,
    /// Every tampering (the CI-signed ones), or only the signature's.
    all_twins: bool,
    /// Signed by the production instance (the shipped trust root), or by staging: refused.
    production: bool,
}

const GITHUB_SUBJECT: &str =
    "https://github.com/trailofbits/pypi-attestations/.github/workflows/release.yml@refs/tags/v0.0.19";

const CASES: &[Case] = &[
    Case {
        file: "pypi_attestations-0.0.19.tar.gz.slsa.attestation",
        artifact: "pypi_attestations-0.0.19.tar.gz",
        subject: GITHUB_SUBJECT,
        issuer: "https://token.actions.githubusercontent.com",
        all_twins: true,
        production: true,
    },
    Case {
        file: "pypi_attestations-0.0.19.tar.gz.publish.attestation",
        artifact: "pypi_attestations-0.0.19.tar.gz",
        subject: GITHUB_SUBJECT,
        issuer: "https://token.actions.githubusercontent.com",
        all_twins: false,
        production: true,
    },
    Case {
        file: "gitlab_oidc_project-0.0.3.tar.gz.publish.attestation",
        artifact: "gitlab_oidc_project-0.0.3.tar.gz",
        subject: "https://gitlab.com/facutuesca/gitlab-oidc-project//.gitlab-ci.yml@refs/heads/main",
        issuer: "https://gitlab.com",
        all_twins: true,
        production: true,
    },
    Case {
        file: "circleci_sign_publish_example-0.0.1.dev137-py3-none-any.whl.publish.attestation",
        artifact: "circleci_sign_publish_example-0.0.1.dev137-py3-none-any.whl",
        subject: "https://circleci.com/api/v2/projects/fdd9283f-e619-46af-8f9c-851f7d3e8b2b/pipeline-definitions/8e4f8ab2-8d7c-4827-9f15-de076d6d647f",
        issuer: "https://oidc.circleci.com",
        all_twins: false,
        production: true,
    },
    Case {
        file: "gcb_attestation_test-0.0.0.tar.gz.provenance",
        artifact: "gcb_attestation_test-0.0.0.tar.gz",
        subject: "919436158236-compute@developer.gserviceaccount.com",
        issuer: "https://accounts.google.com",
        all_twins: false,
        production: true,
    },
    Case {
        file: "rfc8785-0.1.2-py3-none-any.whl.sigstore",
        artifact: "rfc8785-0.1.2-py3-none-any.whl",
        subject: "william@yossarian.net",
        issuer: "https://github.com/login/oauth",
        all_twins: false,
        production: false,
    },
    Case {
        file: "pypi_attestation_models-0.0.4a2.tar.gz.sigstore",
        artifact: "pypi_attestation_models-0.0.4a2.tar.gz",
        subject: "https://github.com/trailofbits/pypi-attestation-models/.github/workflows/release.yml@refs/tags/v0.0.4a2",
        issuer: "https://token.actions.githubusercontent.com",
        all_twins: false,
        production: true,
    },
];

fn tools() -> PathBuf {
    std::env::var_os("TOOLS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/tf-registry-tools"))
}

/// A bundle (v0.3) from a `.sigstore` bundle, a PyPI attestation or a PyPI provenance file.
fn bundle_of(path: &Path) -> Value {
    let file: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    if file.get("mediaType").is_some() {
        return file;
    }
    let attestation = match file.get("attestation_bundles") {
        Some(bundles) => bundles[0]["attestations"][0].clone(),
        None => file,
    };
    json!({
        "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
        "verificationMaterial": {
            "certificate": {"rawBytes": attestation["verification_material"]["certificate"]},
            "tlogEntries": attestation["verification_material"]["transparency_entries"],
        },
        "dsseEnvelope": {
            "payload": attestation["envelope"]["statement"],
            "payloadType": "application/vnd.in-toto+json",
            "signatures": [{"sig": attestation["envelope"]["signature"]}],
        },
    })
}

/// Flips one bit of a base64 field's bytes, at `at` from the end.
fn flip(field: &mut Value, at: usize) {
    let mut bytes = STANDARD.decode(field.as_str().unwrap()).unwrap();
    let n = bytes.len() - at;
    bytes[n] ^= 0x01;
    *field = Value::from(STANDARD.encode(bytes));
}

/// One way to tamper with a case: (name, what it does to the bundle, artifact and identity).
type Twin = (&'static str, fn(&mut Value, &mut Vec<u8>, &mut String));

const TWINS: &[Twin] = &[
    ("another artifact (subject digest)", |_, artifact, _| artifact.push(b'\n')),
    ("the DSSE signature", |b, _, _| flip(&mut b["dsseEnvelope"]["signatures"][0]["sig"], 10)),
    ("the statement", |b, _, _| flip(&mut b["dsseEnvelope"]["payload"], 3)),
    ("the certificate's signature (chain)", |b, _, _| {
        flip(&mut b["verificationMaterial"]["certificate"]["rawBytes"], 2)
    }),
    ("an inclusion proof hash", |b, _, _| {
        flip(&mut b["verificationMaterial"]["tlogEntries"][0]["inclusionProof"]["hashes"][0], 1)
    }),
    ("the logged time", |b, _, _| {
        let entry = &mut b["verificationMaterial"]["tlogEntries"][0];
        let time: i64 = entry["integratedTime"].as_str().unwrap().parse().unwrap();
        entry["integratedTime"] = Value::from((time - 1).to_string());
    }),
    ("the identity expected (another repository)", |_, _, subject| {
        *subject = subject
            .replace("pypi-attestations", "pypi-attestations-fork")
            .replace("gitlab-oidc-project", "other-project")
    }),
];

/// Ours: verified with the identity expected.
fn ours(
    bundle: &[u8],
    artifact: &[u8],
    subject: &str,
    issuer: &str,
    root: &TrustRoot,
) -> Result<provenance::Verified, String> {
    let verified = provenance::verify(bundle, provenance::sha256(artifact), root, Signer::Certificate)
        .map_err(|e| e.to_string())?;
    let identity = verified.identity.clone().ok_or("no identity")?;
    if identity.subject != subject || identity.issuer != issuer {
        return Err(format!("signed by {} ({})", identity.subject, identity.issuer));
    }
    Ok(verified)
}

/// The reference verifier: `sigstore verify identity --offline` (its shipped trust root).
fn reference(sigstore: &Path, dir: &Path, bundle: &[u8], artifact: &[u8], subject: &str, issuer: &str) -> bool {
    let (bundle_path, artifact_path) = (dir.join("bundle.sigstore.json"), dir.join("artifact"));
    std::fs::write(&bundle_path, bundle).unwrap();
    std::fs::write(&artifact_path, artifact).unwrap();
    let run = Command::new(sigstore)
        .args(["verify", "identity", "--offline", "--cert-identity", subject, "--cert-oidc-issuer", issuer, "--bundle"])
        .arg(&bundle_path)
        .arg(&artifact_path)
        .env("HOME", dir)
        .output()
        .unwrap();
    run.status.success()
}

#[test]
fn production_bundles_verify_their_tampered_twins_do_not_and_the_reference_agrees() {
    let assets = tools().join("sigstore-corpus/pypi_attestations-0.0.31/test/assets");
    let sigstore = tools().join("sigstore/bin/sigstore");
    if !assets.is_dir() || !sigstore.is_file() {
        skipped(
            "production Sigstore bundles",
            "the corpus or PyPI sigstore is not installed (tests/setup.sh installs both)",
        );
        return;
    }
    let root = TrustRoot::public_good();
    let scratch = tempfile::tempdir().unwrap();
    let mut disagreements = vec![];
    for case in CASES {
        let bundle = bundle_of(&assets.join(case.file));
        let artifact = std::fs::read(assets.join(case.artifact)).unwrap();
        let bytes = serde_json::to_vec(&bundle).unwrap();
        let verified = ours(&bytes, &artifact, case.subject, case.issuer, &root);
        assert_eq!(verified.is_ok(), case.production, "{}: {verified:?}", case.file);
        if reference(&sigstore, scratch.path(), &bytes, &artifact, case.subject, case.issuer) != case.production {
            disagreements.push(format!("{}: the reference disagrees ({verified:?})", case.file));
        }
        if !case.production {
            continue;
        }
        let twins = if case.all_twins { TWINS } else { &TWINS[1..2] };
        for (name, tamper) in twins {
            let (mut bundle, mut artifact, mut subject) = (bundle.clone(), artifact.clone(), case.subject.to_string());
            tamper(&mut bundle, &mut artifact, &mut subject);
            let bytes = serde_json::to_vec(&bundle).unwrap();
            let refused = ours(&bytes, &artifact, &subject, case.issuer, &root);
            assert!(refused.is_err(), "{} with {name} tampered: verified", case.file);
            eprintln!("{} with {name} tampered: refused: {}", case.file, refused.unwrap_err());
            if reference(&sigstore, scratch.path(), &bytes, &artifact, &subject, case.issuer) {
                disagreements
                    .push(format!("{} with {name} tampered: the reference verifies what we refuse", case.file));
            }
        }
    }
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
}

#[test]
fn a_github_actions_bundle_states_its_repository_commit_ref_workflow_and_run() {
    let assets = tools().join("sigstore-corpus/pypi_attestations-0.0.31/test/assets");
    if !assets.is_dir() {
        skipped("production Sigstore bundles", "the corpus is not installed (tests/setup.sh installs it)");
        return;
    }
    let case = &CASES[0];
    let bundle = serde_json::to_vec(&bundle_of(&assets.join(case.file))).unwrap();
    let artifact = std::fs::read(assets.join(case.artifact)).unwrap();
    let verified = ours(&bundle, &artifact, case.subject, case.issuer, &TrustRoot::public_good()).unwrap();
    let identity = verified.identity.clone().unwrap();
    assert_eq!(identity.repository.as_deref(), Some("https://github.com/trailofbits/pypi-attestations"));
    assert_eq!(identity.commit.as_deref(), Some("08802efe1f8e5fec4ad842d6b8ce97656092ee72"));
    assert_eq!(identity.git_ref.as_deref(), Some("refs/tags/v0.0.19"));
    assert_eq!(identity.workflow.as_deref(), Some(GITHUB_SUBJECT));
    assert_eq!(
        identity.run.as_deref(),
        Some("https://github.com/trailofbits/pypi-attestations/actions/runs/12169989787/attempts/1")
    );
    assert_eq!(identity.runner.as_deref(), Some("github-hosted"));
    assert_eq!(verified.predicate_type.as_deref(), Some("https://slsa.dev/provenance/v1"));
    assert_eq!(verified.log.as_deref(), Some("rekor.sigstore.dev"));
    assert!(verified.log_index.is_some() && verified.signed_at > 1_733_000_000, "{verified:?}");
}

/// The tests' own instance (support/sigstore.rs) issues bundles the verifier reads as GitHub's:
/// what the end-to-end publish tests build on.
#[test]
fn the_tests_own_instance_signs_github_shaped_bundles_its_trust_root_alone_verifies() {
    use registry::provenance::policy::{Policies, admits};
    use support::sigstore::{GITHUB_ISSUER, Sigstore, Workflow};

    let sigstore = Sigstore::new();
    let root = TrustRoot::from_json(&sigstore.trusted_root()).unwrap();
    let archive = b"a module archive";
    let sha256 = provenance::sha256(archive);
    let who = Workflow::release("acme/terraform-network", "1.2.0");
    let bundle = sigstore.bundle("network-1.2.0.tar.gz", &hex::encode(sha256), &who, 1_800_000_000);

    let verified = provenance::verify(&bundle, sha256, &root, Signer::Certificate).unwrap();
    let identity = verified.identity.clone().unwrap();
    assert_eq!(identity.issuer, GITHUB_ISSUER);
    assert_eq!(identity.repository.as_deref(), Some("https://github.com/acme/terraform-network"));
    assert_eq!(identity.git_ref.as_deref(), Some("refs/tags/v1.2.0"));
    assert_eq!(identity.commit.as_deref(), Some(who.commit.as_str()));
    assert_eq!(verified.signed_at, 1_800_000_000);
    assert_eq!(verified.log_index, Some(0));

    let policies = Policies::parse(
        r#"[{"namespaces": ["acme"], "mode": "required", "signers": [{"issuer": "https://token.actions.githubusercontent.com",
            "repositories": ["https://github.com/acme/*"], "workflows": [".github/workflows/release.yml"],
            "trust_roots": ["tests.json"]}]}]"#,
    )
    .unwrap();
    assert_eq!(admits(policies.for_namespace("acme").1, &identity, "tests.json"), Ok(()));
    assert!(
        admits(policies.for_namespace("acme").1, &identity, "public-good").is_err(),
        "only the root the rule names"
    );
    let outsider = provenance::verify(
        &sigstore.bundle(
            "network-1.2.0.tar.gz",
            &hex::encode(sha256),
            &Workflow::release("evil/terraform-network", "1.2.0"),
            1_800_000_000,
        ),
        sha256,
        &root,
        Signer::Certificate,
    )
    .unwrap();
    assert!(admits(policies.for_namespace("acme").1, outsider.identity.as_ref().unwrap(), "tests.json").is_err());

    // The public-good trust root knows nothing of this instance; another archive is not the
    // subject; a time outside the certificate's validity (it ends in 2099) is refused.
    assert!(provenance::verify(&bundle, sha256, &TrustRoot::public_good(), Signer::Certificate).is_err());
    assert!(provenance::verify(&bundle, provenance::sha256(b"other"), &root, Signer::Certificate).is_err());
    let late = sigstore.bundle("network-1.2.0.tar.gz", &hex::encode(sha256), &who, 4_200_000_000);
    let refused = provenance::verify(&late, sha256, &root, Signer::Certificate).unwrap_err();
    assert!(refused.to_string().contains("not valid at the time"), "{refused}");
}

/// A rejection record's reason, if the key has one.
fn record(h: &support::Harness, key: &str) -> Option<String> {
    Some(h.rejection(key)?["reason"].as_str().unwrap().to_string())
}

fn manifest(h: &support::Harness, module: &str) -> Value {
    let bytes = std::fs::read(h.object_path(&format!("indexed/modules/{module}/manifest.json"))).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

async fn listed(h: &support::Harness, module: &str) -> usize {
    let (_, versions) = h.get_json(&format!("/v1/modules/{module}/versions")).await;
    versions["modules"][0]["versions"].as_array().map_or(0, Vec::len)
}

const REQUIRED: &str = r#"[{"namespaces": ["acme"], "mode": "required", "signers": [{
    "issuer": "https://token.actions.githubusercontent.com", "repositories": ["https://github.com/acme/*"],
    "workflows": [".github/workflows/release.yml"], "trust_roots": ["tests.json"]}]}]"#;

/// Through the local registry's indexer: a namespace that requires provenance refuses an
/// unsigned upload and one signed by a repository outside its rule, each with a record saying
/// why, and publishes the version once its bundle arrives (after the archive), recording who
/// built it; a namespace no rule names publishes with or without a bundle.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_that_requires_provenance_serves_only_versions_its_signers_built() {
    use support::sigstore::{Sigstore, Workflow};
    let sigstore = Sigstore::new();
    let h = support::Harness::start_with(&[("REGISTRY_PROVENANCE", REQUIRED)]).await;
    h.upload_key("signing-keys/sigstore/tests.json", sigstore.trusted_root()).await;
    let archive = support::module_tar_gz(&[("main.tf", "variable \"name\" { type = string }\n")]);
    let sha256 = hex::encode(provenance::sha256(&archive));
    let key = "modules/acme/vpc/aws/1.0.0.tar.gz";
    let bundle_key = format!("{key}.sigstore.json");

    h.upload(key, archive.clone()).await;
    assert_eq!(listed(&h, "acme/vpc/aws").await, 0, "unsigned: not served");
    let why = record(&h, key).expect("the archive's record");
    assert!(why.contains("requires provenance") && why.contains("no Sigstore bundle"), "{why}");

    let outsider =
        sigstore.bundle("1.0.0.tar.gz", &sha256, &Workflow::release("evil/terraform-vpc", "1.0.0"), 1_800_000_000);
    h.upload(&bundle_key, outsider).await;
    assert_eq!(listed(&h, "acme/vpc/aws").await, 0, "an outsider's bundle: not served");
    let why = record(&h, &bundle_key).expect("the bundle's record");
    assert!(why.contains("evil/terraform-vpc") && why.contains("does not admit"), "{why}");
    assert!(record(&h, key).unwrap().contains("its bundle is refused"), "{:?}", record(&h, key));

    let ours =
        sigstore.bundle("1.0.0.tar.gz", &sha256, &Workflow::release("acme/terraform-vpc", "1.0.0"), 1_800_000_000);
    h.upload(&bundle_key, ours).await;
    assert_eq!(listed(&h, "acme/vpc/aws").await, 1, "signed by acme's release workflow: served");
    assert_eq!(record(&h, key), None);
    assert_eq!(record(&h, &bundle_key), None);
    let provenance = &manifest(&h, "acme/vpc/aws")["versions"][0]["provenance"];
    assert_eq!(provenance["trust_root"], "tests.json", "{provenance}");
    let identity = &provenance["verified"]["identity"];
    assert_eq!(identity["repository"], "https://github.com/acme/terraform-vpc", "{provenance}");
    assert_eq!(identity["ref"], "refs/tags/v1.0.0", "{provenance}");
    // Shown where a consumer looks: the details API and the version's page.
    let (status, details) = h.get_json("/v1/modules/acme/vpc/aws/1.0.0").await;
    assert_eq!(status, 200, "{details}");
    assert_eq!(details["provenance"]["repository"], "https://github.com/acme/terraform-vpc", "{details}");
    assert_eq!(
        details["provenance"]["workflow"],
        "https://github.com/acme/terraform-vpc/.github/workflows/release.yml@refs/tags/v1.0.0"
    );
    assert_eq!(details["provenance"]["signed_at"], "2027-01-15T08:00:00Z", "{details}");
    let token = format!("Bearer {}", h.running.dev_token);
    let request = registry::app::Request::get("/ui/modules/acme/vpc/aws/1.0.0").authorization(Some(&token));
    let page = String::from_utf8(h.running.app.handle(&request).await.body.to_vec()).unwrap();
    assert!(page.contains("Verified provenance"), "{page}");
    assert!(
        page.contains("<a href=\"https://github.com/acme/terraform-vpc\">github.com/acme/terraform-vpc</a>"),
        "{page}"
    );
    assert!(!page.contains("no rule checks who signs"), "the rule named the signers: {page}");
    assert!(page.contains("/actions/runs/4242/attempts/1\">.github/workflows/release.yml</a>"), "{page}");

    // A namespace no rule names: served without a bundle, and with a bundle that does not
    // verify (its record says why), without provenance.
    let other = "modules/other/vpc/aws/1.0.0.tar.gz";
    h.upload(other, archive.clone()).await;
    assert_eq!(listed(&h, "other/vpc/aws").await, 1);
    let wrong_subject = sigstore.bundle(
        "1.0.0.tar.gz",
        &"00".repeat(32),
        &Workflow::release("acme/terraform-vpc", "1.0.0"),
        1_800_000_000,
    );
    h.upload(&format!("{other}.sigstore.json"), wrong_subject).await;
    assert_eq!(listed(&h, "other/vpc/aws").await, 1);
    assert!(manifest(&h, "other/vpc/aws")["versions"][0].get("provenance").is_none());
    let why = record(&h, &format!("{other}.sigstore.json")).expect("the bad bundle's record");
    assert!(why.contains("does not name this archive's SHA-256"), "{why}");
    // Its right bundle: recorded and shown, saying no rule checked who signed.
    let right =
        sigstore.bundle("1.0.0.tar.gz", &sha256, &Workflow::release("someone/anything", "1.0.0"), 1_800_000_000);
    h.upload(&format!("{other}.sigstore.json"), right).await;
    let provenance = &manifest(&h, "other/vpc/aws")["versions"][0]["provenance"];
    assert_eq!(provenance["checked"], false, "{provenance}");
    let token = format!("Bearer {}", h.running.dev_token);
    let request = registry::app::Request::get("/ui/modules/other/vpc/aws/1.0.0").authorization(Some(&token));
    let page = String::from_utf8(h.running.app.handle(&request).await.body.to_vec()).unwrap();
    assert!(page.contains("Verified provenance</strong> (no rule checks who signs for this namespace)"), "{page}");
    assert_eq!(record(&h, &format!("{other}.sigstore.json")), None, "the good bundle's upload clears the record");
}

/// The bundle's size bound run at its maximum through the embedded S3: a bundle of exactly
/// `BUNDLE_MAX_BYTES` (a real one, padded with JSON whitespace) verifies; one byte more is
/// refused by its size before it is parsed, its record naming the limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bundle_at_its_size_limit_verifies_and_one_byte_over_is_refused() {
    use support::sigstore::{Sigstore, Workflow};
    let sigstore = Sigstore::new();
    let h = support::Harness::start().await;
    h.upload_key("signing-keys/sigstore/tests.json", sigstore.trusted_root()).await;
    let archive = support::module_tar_gz(&[("main.tf", "output \"id\" { value = 1 }\n")]);
    let sha256 = hex::encode(provenance::sha256(&archive));
    let key = "modules/acme/vpc/aws/1.0.0.tar.gz";
    h.upload(key, archive).await;
    let mut bundle =
        sigstore.bundle("1.0.0.tar.gz", &sha256, &Workflow::release("acme/terraform-vpc", "1.0.0"), 1_800_000_000);
    bundle.resize(provenance::BUNDLE_MAX_BYTES, b' ');
    h.upload(&format!("{key}.sigstore.json"), bundle.clone()).await;
    let provenance = &manifest(&h, "acme/vpc/aws")["versions"][0]["provenance"];
    assert_eq!(
        provenance["verified"]["identity"]["repository"], "https://github.com/acme/terraform-vpc",
        "{provenance}"
    );

    bundle.push(b' ');
    h.upload(&format!("{key}.sigstore.json"), bundle).await;
    assert!(manifest(&h, "acme/vpc/aws")["versions"][0].get("provenance").is_none());
    let why = record(&h, &format!("{key}.sigstore.json")).expect("the oversized bundle's record");
    assert!(why.contains(&format!("over the {} a Sigstore bundle may have", provenance::BUNDLE_MAX_BYTES)), "{why}");
}
