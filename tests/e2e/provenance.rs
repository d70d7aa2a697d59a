//! Provenance as the real terraform CLI meets it: under a `required` rule `terraform init`
//! finds no module ("Module not found": no version is served) until the version's bundle from
//! an admitted signer arrives (an outsider's
//! changes nothing), then installs it; under `recorded` and `off` an unsigned version installs
//! at once. The bundles come from the tests' own Sigstore instance (support/sigstore.rs),
//! whose trust root a key admin uploads as the registry documents.

// Test helpers: a failed step is a failed test, with the panic message saying which.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use support::sigstore::{Sigstore, Workflow};
use support::{Harness, TempDir, module_tar_gz, terraform, terraform_or_skip, text};

const ARCHIVE: &str = "modules/acme/network/aws/1.0.0.tar.gz";

fn rule(mode: &str) -> String {
    let signers = r#"[{"issuer": "https://token.actions.githubusercontent.com",
        "repositories": ["https://github.com/acme/*"], "trust_roots": ["tests.json"]}]"#;
    format!(r#"[{{"namespaces": ["acme"], "mode": "{mode}", "signers": {signers}}}]"#)
}

async fn init(tf: &Path, h: &Harness) -> std::process::Output {
    let work = TempDir::new("tf-work");
    let config =
        format!("module \"network\" {{\n  source  = \"{}/acme/network/aws\"\n  version = \"1.0.0\"\n}}\n", h.host());
    std::fs::write(work.path().join("main.tf"), config).unwrap();
    // terraform blocks this worker; the registry serves on the runtime's other worker.
    tokio::task::block_in_place(|| terraform(tf, h, work.path(), &["init", "-input=false", "-no-color"]))
}

/// A registry with the rule in `mode` for acme, the tests' trust root added, and an unsigned
/// version uploaded: its archive's bytes and SHA-256.
async fn unsigned(sigstore: &Sigstore, mode: &str) -> (Harness, String) {
    let h = Harness::start_with(&[("REGISTRY_PROVENANCE", &rule(mode))]).await;
    h.upload_key("signing-keys/sigstore/tests.json", sigstore.trusted_root()).await;
    let archive = module_tar_gz(&[("main.tf", "output \"id\" { value = 1 }\n")]);
    h.upload(ARCHIVE, archive.clone()).await;
    (h, hex::encode(registry::provenance::sha256(&archive)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terraform_installs_a_required_namespace_s_version_once_an_admitted_signer_built_it() {
    let Some(tf) =
        terraform_or_skip("terraform_installs_a_required_namespace_s_version_once_an_admitted_signer_built_it")
    else {
        return;
    };
    let sigstore = Sigstore::new();
    let (h, sha256) = unsigned(&sigstore, "required").await;
    let bundle_key = format!("{ARCHIVE}.sigstore.json");
    let outsider = Workflow::release("outsider/terraform-network", "1.0.0");
    h.upload(&bundle_key, sigstore.bundle("1.0.0.tar.gz", &sha256, &outsider, 1_800_000_000)).await;
    let refused = init(&tf, &h).await;
    assert!(!refused.status.success(), "{}", text(&refused));
    // No version served yet, so no module: what the CLI says of that.
    assert!(text(&refused).contains("Module not found"), "{}", text(&refused));

    let ours = Workflow::release("acme/terraform-network", "1.0.0");
    h.upload(&bundle_key, sigstore.bundle("1.0.0.tar.gz", &sha256, &ours, 1_800_000_000)).await;
    let installed = init(&tf, &h).await;
    assert!(installed.status.success(), "{}", text(&installed));
    h.running.stop().await;

    for mode in ["recorded", "off"] {
        let (h, _) = unsigned(&sigstore, mode).await;
        let out = init(&tf, &h).await;
        assert!(out.status.success(), "{mode}: {}", text(&out));
        h.running.stop().await;
    }
}
