//! OCI Distribution with real clients written elsewhere: Debian's `skopeo` (Go,
//! containers/image) and PyPI's `oras` (Python), over TLS with the local registry's CA and a
//! token as the password, pull a mirrored provider published for two platforms, and a module
//! published as `.tar.gz`. Blob digests are the zips' `zh:` hashes and a pulled zip is
//! byte-identical to the published one; the module's zip holds its archive's files.
//! (OpenTofu itself, whose `oci_mirror` these artifacts are shaped for, is not installable
//! here.)

// Test helpers: a failed step is a failed test, with the panic message saying which.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use registry::oci::artifacts::{ImageIndex, ImageManifest};
use sha2::Digest;
use support::{Harness, TempDir, skipped};

const REPOSITORY: &str = "providers/registry.terraform.io/hashicorp/null";
const PLATFORMS: [&str; 2] = ["linux_amd64", "darwin_arm64"];

/// A registry with the provider published for both platforms: its zips by platform.
/// Anyone may read the `acme` modules; the provider needs the token.
async fn published() -> (Harness, Vec<(&'static str, Vec<u8>)>) {
    let h = Harness::start_with(&[("REGISTRY_ANONYMOUS_MODULES", "acme")]).await;
    let module = support::module_tar_gz(&[
        ("main.tf", "output \"name\" { value = \"vpc\" }\n"),
        ("modules/sub/main.tf", "# sub\n"),
    ]);
    h.upload("modules/acme/vpc/aws/1.2.0.tar.gz", module).await;
    let mut zips = Vec::new();
    for platform in PLATFORMS {
        let zip = support::provider_zip("null", "3.2.1", platform);
        let key =
            format!("providers/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.1_{platform}.zip");
        h.upload(&key, zip.clone()).await;
        zips.push((platform, zip));
    }
    (h, zips)
}

fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(sha2::Sha256::digest(bytes)))
}

/// skopeo with only this test's trust and credentials: a HOME of its own, the registry's CA
/// as the only one for its address, the dev token as the password (`anonymous`: none).
fn skopeo(h: &Harness, home: &Path, args: &[&str], anonymous: bool) -> std::process::Output {
    let certs = home.join("certs");
    std::fs::create_dir_all(&certs).unwrap();
    std::fs::copy(h.running.data_dir.join("ca.pem"), certs.join("ca.crt")).unwrap();
    let creds = format!("ci:{}", h.running.dev_token);
    let mut command = Command::new("skopeo");
    command.env_clear().env("PATH", std::env::var_os("PATH").unwrap_or_default()).env("HOME", home);
    let (verb, rest) = args.split_first().unwrap();
    command.arg(verb);
    match (*verb, anonymous) {
        ("copy", _) => command.args(["--src-cert-dir", certs.to_str().unwrap(), "--src-creds", &creds]),
        (_, false) => command.args(["--cert-dir", certs.to_str().unwrap(), "--creds", &creds]),
        (_, true) => command.args(["--cert-dir", certs.to_str().unwrap(), "--no-creds"]),
    };
    command.args(rest).output().expect("skopeo runs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skopeo_lists_inspects_and_copies_the_provider_byte_for_byte() {
    if Command::new("skopeo").arg("--version").output().is_err() {
        skipped(
            "skopeo_lists_inspects_and_copies_the_provider_byte_for_byte",
            "skopeo not installed (apt-get install skopeo; tests/setup.sh installs it, make test runs it)",
        );
        return;
    }
    let (h, zips) = published().await;
    let home = TempDir::new("skopeo");
    let image = format!("docker://{}/{REPOSITORY}", h.host());
    let run = |args: Vec<String>| {
        let home = home.path().to_path_buf();
        let h = &h;
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = tokio::task::block_in_place(|| skopeo(h, &home, &args, false));
            assert!(out.status.success(), "skopeo {args:?}\n{}", support::text(&out));
            out.stdout
        }
    };

    let tags: serde_json::Value = serde_json::from_slice(&run(vec!["list-tags".into(), image.clone()]).await).unwrap();
    assert_eq!(tags["Tags"], serde_json::json!(["3.2.1"]), "{tags}");

    let raw = run(vec!["inspect".into(), "--raw".into(), format!("{image}:3.2.1")]).await;
    let index: ImageIndex = serde_json::from_slice(&raw).unwrap();
    assert_eq!(index.artifact_type, registry::oci::ARTIFACT_TYPE_PROVIDER);
    assert_eq!(index.manifests.len(), 2);

    let layout = home.path().join("layout");
    let dest = format!("oci:{}:3.2.1", layout.display());
    // (Without --preserve-digests: skopeo 1.9 rewrites a list it copies, but never a blob.)
    run(vec!["copy".into(), "--all".into(), format!("{image}:3.2.1"), dest]).await;
    for (platform, zip) in &zips {
        let digest = sha256(zip);
        let blob = layout.join("blobs/sha256").join(digest.trim_start_matches("sha256:"));
        let copied = std::fs::read(&blob).unwrap_or_else(|e| panic!("{platform}: no blob {}: {e}", blob.display()));
        assert!(copied == *zip, "{platform}: the copied zip is the published one, byte for byte");
    }
    // The module's package manifest, and its tags.
    let module = format!("docker://{}/modules/acme/vpc/aws", h.host());
    let raw = run(vec!["inspect".into(), "--raw".into(), format!("{module}:1.2.0")]).await;
    let manifest: ImageManifest = serde_json::from_slice(&raw).unwrap();
    assert_eq!(manifest.artifact_type, registry::oci::ARTIFACT_TYPE_MODULE);
    let tags: serde_json::Value = serde_json::from_slice(&run(vec!["list-tags".into(), module]).await).unwrap();
    assert_eq!(tags["Tags"], serde_json::json!(["1.2.0"]));
    // Without credentials: skopeo follows the Bearer challenge to /v2/token, whose anonymous
    // token reads the module anyone may read, and not the provider.
    let anonymous = |args: &[&str]| tokio::task::block_in_place(|| skopeo(&h, home.path(), args, true));
    let module = format!("docker://{}/modules/acme/vpc/aws", h.host());
    let out = anonymous(&["list-tags", &module]);
    assert!(out.status.success(), "anonymous list-tags of the module\n{}", support::text(&out));
    let out = anonymous(&["list-tags", &image]);
    assert!(!out.status.success(), "anonymous list-tags of the provider\n{}", support::text(&out));
    assert!(support::text(&out).contains("unauthorized"), "{}", support::text(&out));
    // Each platform's manifest as the registry serves it: the digest its index names.
    for entry in &index.manifests {
        let by_digest = run(vec!["inspect".into(), "--raw".into(), format!("{image}@{}", entry.digest)]).await;
        assert_eq!(sha256(&by_digest), entry.digest);
    }
}

/// The Python client (PyPI `oras`, in a virtual environment of its own; ORAS_PYTHON names
/// another): `tests/integration/oras_pull.py` holds the token, fetches the tag's index, each
/// platform's manifest and its layer. The provider through its default auth backend, which
/// follows the registry's `Bearer` challenge to `/v2/token`; the module with `Basic` on every
/// request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oras_pulls_both_platforms_with_the_zh_digests() {
    let python = std::env::var_os("ORAS_PYTHON").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/tf-registry-tools/oras/bin/python")
    });
    let has_oras = Command::new(&python).args(["-c", "import oras.client"]).output().is_ok_and(|o| o.status.success());
    if !has_oras {
        let why = format!(
            "no oras at {} (a virtual environment with `pip install oras`; tests/setup.sh installs it, make test runs it)",
            python.display()
        );
        skipped("oras_pulls_both_platforms_with_the_zh_digests", &why);
        return;
    }
    let (h, zips) = published().await;
    let out_dir = TempDir::new("oras");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("integration/oras_pull.py");
    let out = tokio::task::block_in_place(|| {
        Command::new(&python)
            .arg(&script)
            .args([&h.host(), REPOSITORY, "3.2.1", &h.running.dev_token, out_dir.path().to_str().unwrap(), "token"])
            .env("REQUESTS_CA_BUNDLE", h.running.data_dir.join("ca.pem"))
            .output()
            .unwrap()
    });
    assert!(out.status.success(), "oras_pull.py\n{}", support::text(&out));
    let pulled: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // The module, published as .tar.gz: a zip of the same files, under its digest.
    let out = tokio::task::block_in_place(|| {
        Command::new(&python)
            .arg(&script)
            .args([
                &h.host(),
                "modules/acme/vpc/aws",
                "1.2.0",
                &h.running.dev_token,
                out_dir.path().to_str().unwrap(),
                "basic",
            ])
            .env("REQUESTS_CA_BUNDLE", h.running.data_dir.join("ca.pem"))
            .output()
            .unwrap()
    });
    assert!(out.status.success(), "oras_pull.py (module)\n{}", support::text(&out));
    let module: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let zip = std::fs::read(out_dir.path().join("module.zip")).unwrap();
    assert_eq!(module["module"]["digest"], sha256(&zip));
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(zip)).unwrap();
    let mut sub = String::new();
    std::io::Read::read_to_string(&mut archive.by_name("modules/sub/main.tf").unwrap(), &mut sub).unwrap();
    assert_eq!(sub, "# sub\n");
    assert_eq!(module["module"]["manifest"]["artifactType"], registry::oci::ARTIFACT_TYPE_MODULE);
    for (platform, zip) in &zips {
        let entry = &pulled[platform];
        assert_eq!(entry["digest"], sha256(zip), "{platform}: the layer's digest is the zip's zh:");
        let file = out_dir.path().join(entry["file"].as_str().unwrap());
        assert!(std::fs::read(file).unwrap() == *zip, "{platform}: pulled byte for byte");
        let manifest: ImageManifest = serde_json::from_value(entry["manifest"].clone()).unwrap();
        assert_eq!(manifest.artifact_type, registry::oci::ARTIFACT_TYPE_PROVIDER_TARGET);
    }
}
