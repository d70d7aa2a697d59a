//! Shared pieces of the end-to-end tests: a local registry in a temporary directory, archive
//! builders, and the real `terraform` CLI run in isolation.

// Test support: a failed step is a failed test, with the panic message saying which.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use aws_sdk_s3::primitives::ByteStream;
use registry_local::{LocalOptions, Running};

pub mod gpg;
pub mod hostile;
pub mod load;
pub mod oidc;
pub mod presigned;
pub mod public_registry;
pub mod pull_through;
pub mod raw_s3;
pub mod sigstore;

/// A registry on ephemeral loopback ports over a fresh temporary data directory.
pub struct Harness {
    pub running: Running,
    pub dir: TempDir,
}

impl Harness {
    pub async fn start() -> Harness {
        Harness::start_with(&[]).await
    }

    /// With configuration variables (`REGISTRY_*`) for this instance.
    pub async fn start_with(settings: &[(&str, &str)]) -> Harness {
        Harness::start_with_clock(settings, registry::clock::Monotonic::real()).await
    }

    /// With configuration variables, and the registry's bounded waits on `clock` (a manual
    /// one: the test moves time instead of sleeping through it).
    pub async fn start_with_clock(settings: &[(&str, &str)], clock: registry::clock::Monotonic) -> Harness {
        let dir = TempDir::new("registry");
        let running = registry_local::start(LocalOptions {
            write_client_files: true,
            log_s3_requests: true,
            settings: settings.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            clock,
            ..LocalOptions::ephemeral(dir.path().join("data"))
        })
        .await
        .expect("local registry starts");
        Harness { running, dir }
    }

    /// `HOST:PORT` for module sources (Terraform needs a dot in the host: an IP, not localhost).
    pub fn host(&self) -> String {
        self.running.registry_addr.to_string()
    }

    /// Publish as a user would: an S3 PutObject signed with the publisher's key.
    pub async fn upload(&self, key: &str, bytes: Vec<u8>) {
        upload(self.running.publisher_client(), key.to_string(), bytes).await
    }

    /// Upload a namespace's public signing key as a key admin would: publishers may not.
    pub async fn upload_key(&self, key: &str, bytes: Vec<u8>) {
        upload(self.running.key_admin_client(), key.to_string(), bytes).await
    }

    /// Where the embedded S3 keeps an object's bytes on disk (to tamper with it behind the
    /// indexer's back, as someone with raw bucket access could).
    pub fn object_path(&self, key: &str) -> PathBuf {
        self.running.data_dir.join("s3").join(registry_local::BUCKET).join(key)
    }

    /// The rejection record of the upload at `key` (`rejections/KEY.json`), if it has one.
    pub fn rejection(&self, key: &str) -> Option<serde_json::Value> {
        let bytes = std::fs::read(self.object_path(&format!("rejections/{key}.json"))).ok()?;
        Some(serde_json::from_slice(&bytes).expect("a rejection record is JSON"))
    }

    pub async fn get_json(&self, target: &str) -> (u16, serde_json::Value) {
        self.get_json_as(target, &self.running.dev_token).await
    }

    /// `get_json` with another bearer token.
    pub async fn get_json_as(&self, target: &str, token: &str) -> (u16, serde_json::Value) {
        let token = format!("Bearer {token}");
        let (path, query) = match target.split_once('?') {
            Some((path, query)) => (path, Some(query)),
            None => (target, None),
        };
        let request = registry::app::Request::get(path).query(query).authorization(Some(&token));
        let reply = self.running.app.handle(&request).await;
        (reply.status.as_u16(), serde_json::from_slice(&reply.body).unwrap_or(serde_json::Value::Null))
    }
}

/// A TLS client trusting only the CA in `ca_file` (the local registry's, or a test server's).
pub fn tls_client_trusting(ca_file: &Path) -> std::sync::Arc<rustls::ClientConfig> {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    roots.add(rustls::pki_types::CertificateDer::from_pem_file(ca_file).unwrap()).unwrap();
    let provider = std::sync::Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    std::sync::Arc::new(config)
}

/// One PutObject to the local registry's bucket (owned arguments, so it can be spawned).
pub async fn upload(client: aws_sdk_s3::Client, key: String, bytes: Vec<u8>) {
    let body = ByteStream::from(bytes);
    let sent = client.put_object().bucket(registry_local::BUCKET).key(&key).body(body).send().await;
    sent.unwrap_or_else(|e| panic!("upload {key}: {e:?}"));
}

/// The Lambda binaries: the crates under functions/ with a main, except the local registry
/// (what infra/ must have one function for each of).
pub fn lambda_binaries() -> std::collections::BTreeSet<String> {
    let functions = Path::new(env!("CARGO_MANIFEST_DIR")).join("../functions");
    let mut binaries = std::collections::BTreeSet::new();
    for entry in std::fs::read_dir(&functions).expect("functions/") {
        let dir = entry.expect("entry").path();
        let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        if dir.join("src/main.rs").is_file() && name != "local" {
            binaries.insert(name);
        }
    }
    binaries
}

/// A temporary directory removed on drop, kept when `KEEP_TEST_DIRS` is set (for debugging).
pub struct TempDir(tempfile::TempDir);

impl TempDir {
    pub fn new(label: &str) -> TempDir {
        let keep = std::env::var_os("KEEP_TEST_DIRS").is_some();
        let dir = tempfile::Builder::new().prefix(&format!("{label}-")).disable_cleanup(keep).tempdir().unwrap();
        TempDir(dir)
    }

    pub fn path(&self) -> &Path {
        self.0.path()
    }
}

pub use registry::testing::{module_tar_gz, module_zip, provider_zip};

/// The platform the terraform CLI on this machine installs for, e.g. `linux_amd64`.
pub fn this_platform() -> String {
    let os = std::env::consts::OS;
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        other => other,
    };
    format!("{os}_{arch}")
}

/// Say loudly that `what` did not run and why: straight to the process's stderr, which the
/// test harness does not capture (it captures `eprintln!`), so a passing test that skipped
/// its work shows it, and `make test` marks its stage "parts SKIPPED".
/// `git -C dir ARGS` as a tagging author runs it, with no signing and nothing from the
/// user's git environment; panics with git's message when it fails.
pub fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=Publisher", "-c", "user.email=p@example.com", "-c", "commit.gpgsign=false"])
        .args(["-c", "tag.gpgsign=false", "-c", "init.defaultBranch=main"])
        .args(args)
        .env_remove("GIT_DIR")
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

pub fn skipped(what: &str, why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "\n=== SKIPPED: {what}: {why} ===\n");
}

/// The terraform CLI, or `None` after printing a loud SKIPPED line.
pub fn terraform_or_skip(test: &str) -> Option<PathBuf> {
    let candidates =
        [std::env::var_os("TERRAFORM").map(PathBuf::from), Some(PathBuf::from("/usr/local/bin/terraform"))];
    let found = candidates.into_iter().flatten().find(|p| p.is_file()).or_else(|| {
        std::env::var_os("PATH")
            .and_then(|paths| std::env::split_paths(&paths).map(|d| d.join("terraform")).find(|p| p.is_file()))
    });
    if found.is_none() {
        skipped(test, "terraform CLI not found (set TERRAFORM or install it)");
    }
    found
}

/// Run terraform in `workdir` with nothing from the user's environment that could change
/// its behaviour: its own CLI config, CA bundle, data dir and HOME.
pub fn terraform(tf: &Path, harness: &Harness, workdir: &Path, args: &[&str]) -> Output {
    terraform_with_config(tf, harness, &harness.running.data_dir.join("terraform.rc"), workdir, args)
}

/// `terraform` with another CLI configuration file (other credentials, or none).
pub fn terraform_with_config(tf: &Path, harness: &Harness, cli_config: &Path, workdir: &Path, args: &[&str]) -> Output {
    terraform_command(tf, harness, cli_config, workdir).args(args).output().expect("terraform runs")
}

/// The isolated `terraform` command, to run as it is or with more set (stdin, another CA
/// bundle): its HOME (where `terraform login` keeps credentials) is `workdir/.home`.
pub fn terraform_command(tf: &Path, harness: &Harness, cli_config: &Path, workdir: &Path) -> Command {
    let data = &harness.running.data_dir;
    let home = workdir.join(".home");
    std::fs::create_dir_all(&home).unwrap();
    let mut command = Command::new(tf);
    command
        .current_dir(workdir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("TF_CLI_CONFIG_FILE", cli_config)
        .env("SSL_CERT_FILE", data.join("ca.pem"))
        .env("TF_DATA_DIR", workdir.join(".terraform"))
        .env("TF_IN_AUTOMATION", "1")
        .env("CHECKPOINT_DISABLE", "1");
    command
}

pub fn text(output: &Output) -> String {
    format!(
        "--- stdout\n{}\n--- stderr\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// `h1:` of a zip written independently of the registry's implementation (so the tests do
/// not check the indexer against itself): sorted `"<sha256>  <name>\n"` lines, hashed, base64.
pub fn h1_reference(zip_bytes: &[u8]) -> String {
    use base64::Engine;
    use sha2::{Digest, Sha256};
    use std::io::Read;
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(zip_bytes)).unwrap();
    let mut lines = Vec::new();
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).unwrap();
        let mut data = Vec::new();
        entry.read_to_end(&mut data).unwrap();
        lines.push(format!("{}  {}\n", hex::encode(Sha256::digest(&data)), String::from_utf8_lossy(entry.name_raw())));
    }
    lines.sort_by(|a, b| a.split_once("  ").unwrap().1.cmp(b.split_once("  ").unwrap().1));
    format!("h1:{}", base64::engine::general_purpose::STANDARD.encode(Sha256::digest(lines.concat().as_bytes())))
}

/// Write a directory exactly as `terraform providers mirror DIR` does (Terraform 1.11:
/// `HOSTNAME/NAMESPACE/TYPE/` with the zips, `index.json` and one `VERSION.json` per version,
/// JSON indented by two spaces, `hashes` holding the `h1:` of each zip). Answers the `h1:`
/// per (address, version, platform).
pub fn write_providers_mirror(dir: &Path, packages: &[(&str, &str, &[&str])]) -> Vec<(String, String, String, String)> {
    let mut written = Vec::new();
    let mut by_provider: std::collections::BTreeMap<&str, Vec<(&str, &[&str])>> = Default::default();
    for (address, version, platforms) in packages {
        by_provider.entry(address).or_default().push((version, platforms));
    }
    for (address, versions) in by_provider {
        let provider_dir = dir.join(address);
        std::fs::create_dir_all(&provider_dir).unwrap();
        let r#type = address.rsplit('/').next().unwrap();
        let mut index = serde_json::Map::new();
        for (version, platforms) in versions {
            let mut archives = serde_json::Map::new();
            for platform in platforms {
                let file = format!("terraform-provider-{type}_{version}_{platform}.zip");
                let bytes = provider_zip(r#type, version, platform);
                let h1 = h1_reference(&bytes);
                std::fs::write(provider_dir.join(&file), &bytes).unwrap();
                archives.insert(platform.to_string(), serde_json::json!({ "url": file, "hashes": [h1.clone()] }));
                written.push((address.to_string(), version.to_string(), platform.to_string(), h1));
            }
            let doc = serde_json::to_string_pretty(&serde_json::json!({ "archives": archives })).unwrap();
            std::fs::write(provider_dir.join(format!("{version}.json")), doc).unwrap();
            index.insert(version.to_string(), serde_json::json!({}));
        }
        let doc = serde_json::to_string_pretty(&serde_json::json!({ "versions": index })).unwrap();
        std::fs::write(provider_dir.join("index.json"), doc).unwrap();
    }
    written
}

impl Harness {
    /// Upload a directory tree under `prefix` the way `aws s3 sync` does: many files at once,
    /// in no particular order. Here the JSON files go last, after the zips, so they overwrite
    /// what the indexer wrote for those zips: the worst order for a registry that must merge.
    pub async fn sync(&self, dir: &Path, prefix: &str) {
        let mut files = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() { stack.push(path) } else { files.push(path) }
            }
        }
        files.sort_by_key(|p| p.extension().is_some_and(|e| e == "json"));
        let (zips, json): (Vec<_>, Vec<_>) = files.into_iter().partition(|p| p.extension().is_some_and(|e| e == "zip"));
        for group in [zips, json] {
            let mut uploads = tokio::task::JoinSet::new();
            for path in group {
                let key = format!("{prefix}{}", path.strip_prefix(dir).unwrap().to_string_lossy());
                let client = self.running.publisher_client();
                let bytes = std::fs::read(&path).unwrap();
                uploads.spawn(upload(client, key, bytes));
            }
            while let Some(done) = uploads.join_next().await {
                done.unwrap();
            }
        }
    }
}
