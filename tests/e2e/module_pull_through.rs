//! The modules pull-through with the real CLI: a configuration whose `source` lines name
//! registry.terraform.io installs through this registry with only the `host` and `credentials`
//! blocks `make dev`'s `terraform.rc` holds (the local registry writes them for each upstream
//! host), the upstream a stand-in for the public registry and GitHub's archive host. After the
//! stand-in stops, a fresh `init` installs the same bytes from the bucket.

// Test helpers: a failed step is a failed test, with the panic message saying which.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use registry_local::bundle::{BundleTarget, bundle};
use support::public_registry::{Answer, PublicRegistry, noise};
use support::{Harness, TempDir, terraform, terraform_or_skip, text};

const CONFIGURATION: &str = r#"module "vpc" {
  source  = "terraform-aws-modules/vpc/aws"
  version = "~> 5.0"
  cidr    = "10.0.0.0/16"
}

module "subnets" {
  source  = "registry.terraform.io/terraform-aws-modules/vpc/aws//modules/subnets"
  version = "5.0.0"
}

module "label" {
  source  = "cloudposse/label/null"
  version = "0.25.0"
}

output "cidr" {
  value = module.vpc.cidr
}

output "subnets" {
  value = module.subnets.count
}
"#;

fn init(tf: &Path, h: &Harness, workdir: &Path) -> std::process::Output {
    // terraform blocks this worker; the registry serves on the runtime's other worker.
    tokio::task::block_in_place(|| terraform(tf, h, workdir, &["init", "-input=false", "-no-color"]))
}

fn workdir(label: &str) -> TempDir {
    let dir = TempDir::new(label);
    std::fs::write(dir.path().join("main.tf"), CONFIGURATION).unwrap();
    dir
}

// One scenario told in order: first init (the copies), then the upstream gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terraform_installs_public_registry_modules_through_the_registry_and_without_the_upstream() {
    let Some(tf) = terraform_or_skip("terraform_installs_public_registry_modules_through_the_registry") else {
        return;
    };
    let up = PublicRegistry::start().await;
    let vpc = [
        ("main.tf", "variable \"cidr\" {}\noutput \"cidr\" {\n  value = var.cidr\n}\n"),
        ("modules/subnets/main.tf", "output \"count\" {\n  value = 3\n}\n"),
    ];
    up.publish("terraform-aws-modules/vpc/aws", "5.0.0", &vpc, Answer::Header);
    up.publish("terraform-aws-modules/vpc/aws", "5.1.0", &vpc, Answer::Header);
    // registry.opentofu.org's answer form, under the same host here.
    up.publish(
        "cloudposse/label/null",
        "v0.25.0",
        &[("main.tf", "output \"id\" {\n  value = \"x\"\n}\n")],
        Answer::Json,
    );
    let settings = up.settings("registry.terraform.io");
    let settings: Vec<(&str, &str)> = settings.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let h = Harness::start_with(&settings).await;
    let rc = std::fs::read_to_string(h.running.data_dir.join("terraform.rc")).unwrap();
    assert!(rc.contains("host \"registry.terraform.io\""), "make dev's CLI configuration sends the host here:\n{rc}");

    let first = workdir("pull-through-modules");
    let out = init(&tf, &h, first.path());
    assert!(out.status.success(), "{}", text(&out));
    let modules = first.path().join(".terraform/modules");
    assert!(modules.join("vpc/main.tf").is_file(), "the module at the package root, as a git clone lays it out");
    assert!(modules.join("subnets/modules/subnets/main.tf").is_file(), "the //subdir inside the same package");
    let manifest = std::fs::read_to_string(modules.join("modules.json")).unwrap();
    assert!(
        manifest.contains(r#""Source":"registry.terraform.io/terraform-aws-modules/vpc/aws","Version":"5.1.0""#),
        "{manifest}"
    );
    let requested = up.take_requests();
    assert!(
        requested.iter().any(|p| p == "/terraform-aws-modules/terraform-aws-vpc/archive/v5.1.0.tar.gz"),
        "the registry fetched the tag's archive: {requested:?}"
    );
    let apply = tokio::task::block_in_place(|| {
        terraform(&tf, &h, first.path(), &["apply", "-auto-approve", "-input=false", "-no-color"])
    });
    assert!(apply.status.success(), "{}", text(&apply));
    assert!(String::from_utf8_lossy(&apply.stdout).contains("cidr = \"10.0.0.0/16\""), "{}", text(&apply));

    // The upstream gone: a fresh init installs every module from the bucket.
    up.down(true);
    let second = workdir("pull-through-modules-again");
    let out = init(&tf, &h, second.path());
    assert!(out.status.success(), "with the upstream down:\n{}", text(&out));
    for module in ["vpc", "subnets/modules/subnets", "label"] {
        let dir = |root: &Path| std::fs::read(root.join(".terraform/modules").join(module).join("main.tf")).unwrap();
        assert_eq!(dir(first.path()), dir(second.path()), "{module}: the same bytes");
    }
    assert!(
        up.take_requests().iter().all(|p| !p.contains("/archive/")),
        "no archive fetched from the upstream the second time"
    );

    // The air-gap bundle, from what the first init installed, made while the upstream answers.
    up.down(false);
    let manifest = std::fs::read(first.path().join(".terraform/modules/modules.json")).unwrap();
    let items = registry::upstream::bundle::from_modules_json(&manifest).unwrap();
    assert_eq!(items.len(), 3, "{items:?}");
    let bundle_dir = TempDir::new("bundle");
    let target = BundleTarget::Dir(bundle_dir.path().to_path_buf());
    let env = up.settings("registry.terraform.io");
    let lookup = |k: &str| env.iter().find(|(name, _)| name == k).map(|(_, v)| v.clone());
    let report = bundle(&items, &target, lookup).await.unwrap();
    assert!(report.failed.is_empty() && report.skipped.is_empty() && report.copied.len() == 3, "{report:?}");
    let sums = std::fs::read_to_string(bundle_dir.path().join("SHA256SUMS")).unwrap();
    // Every file: three archives, their pins, and each module's version list.
    let count = |suffix: &str| sums.lines().filter(|l| l.ends_with(suffix)).count();
    assert_eq!((count(".tar.gz"), count(".pin.json")), (3, 3), "{sums}");
    assert_eq!(count("/index.json") + 6, sums.lines().count(), "nothing else: {sums}");
    assert!(count("/index.json") >= 2, "{sums}");

    // Imported into an empty registry that fetches from nowhere (`make bundle-import`, with
    // the SHA-256 `make bundle` printed): the same configuration installs, with the `host` and
    // `credentials` blocks a user adds (the docs' text).
    let gapped = Harness::start_with(&[("REGISTRY_UPSTREAM_MODULES", "")]).await;
    let bounds = registry::config::ArchiveBounds::UNLIMITED;
    let imported = registry_local::bundle_import::import_into(
        bundle_dir.path(),
        registry_local::bundle_import::Sums::Sha256(report.sums_sha256.as_deref().unwrap()),
        &gapped.running.storage,
        bounds,
    )
    .await
    .unwrap();
    assert_eq!(imported.pinned.len(), 3, "{imported:?}");
    let third = workdir("pull-through-modules-air-gap");
    let rc = third.path().join("terraform.rc");
    let blocks = registry::cli_config::upstream_modules(
        &["registry.terraform.io"],
        &format!("https://{}/v1/modules/", gapped.host()),
        &gapped.running.dev_token,
    );
    let own = std::fs::read_to_string(gapped.running.data_dir.join("terraform.rc")).unwrap();
    assert!(!own.contains("host \"registry.terraform.io\""), "nothing fetched, nothing copied at start: no host block");
    std::fs::write(&rc, format!("{own}\n{blocks}")).unwrap();
    let out = tokio::task::block_in_place(|| {
        support::terraform_with_config(&tf, &gapped, &rc, third.path(), &["init", "-input=false", "-no-color"])
    });
    assert!(out.status.success(), "from the bundle alone:\n{}", text(&out));
    for module in ["vpc", "subnets/modules/subnets", "label"] {
        let dir = |root: &Path| std::fs::read(root.join(".terraform/modules").join(module).join("main.tf")).unwrap();
        assert_eq!(dir(first.path()), dir(third.path()), "{module}: the same bytes from the bundle");
    }

    // The tag moved upstream: bundling again refuses the new bytes, records them, keeps the pin.
    up.set_tag("terraform-aws-modules", "terraform-aws-vpc", "v5.1.0", &[("main.tf", "# moved\n")]);
    let pin = "upstream-modules/registry.terraform.io/terraform-aws-modules/vpc/aws/5.1.0.pin.json";
    let pinned = std::fs::read(bundle_dir.path().join(pin)).unwrap();
    let again = bundle(&items, &target, lookup).await.unwrap();
    assert_eq!(again.failed.len(), 1, "{again:?}");
    assert!(again.failed[0].1.contains("pinned at its first copy"), "{again:?}");
    assert_eq!(std::fs::read(bundle_dir.path().join(pin)).unwrap(), pinned, "the pin is kept");
    // Only what is new is written: the refusal record and the refused bytes (named by their own
    // SHA-256: never served); the pins, archives and version lists already there are not.
    assert_eq!(again.written, 2, "{again:?}");
    let refusals = std::fs::read_dir(bundle_dir.path().join(pin.trim_end_matches(".pin.json"))).unwrap();
    assert!(refusals.flatten().any(|e| e.file_name().to_string_lossy().ends_with(".refused.json")), "recorded");
}

// A module larger than the registry copies while the CLI waits: the download answers 503 with
// `Retry-After`; the CLI's registry client (go-retryablehttp, one retry by default) waits that
// long and asks again, by when the puller has copied it. One `init`, no error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terraform_waits_out_the_copy_of_a_large_public_module() {
    let Some(tf) = terraform_or_skip("terraform_waits_out_the_copy_of_a_large_public_module") else {
        return;
    };
    let up = PublicRegistry::start().await;
    let vendored = noise(2 << 20);
    let files = [("main.tf", "output \"ok\" {\n  value = true\n}\n"), ("vendored.txt", vendored.as_str())];
    up.publish("terraform-aws-modules/eks/aws", "20.0.0", &files, Answer::Header);
    let mut settings = up.settings("registry.terraform.io");
    settings.push(("REGISTRY_UPSTREAM_MODULE_MAX_BYTES".into(), "1048576".into()));
    // The puller copies 2 MiB here in well under a second: the CLI need not wait the default 20 s.
    settings.push(("REGISTRY_UPSTREAM_MODULE_RETRY_AFTER_SECONDS".into(), "4".into()));
    let settings: Vec<(&str, &str)> = settings.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let h = Harness::start_with(&settings).await;
    let dir = TempDir::new("pull-through-large-module");
    let configuration = "module \"eks\" {\n  source  = \"terraform-aws-modules/eks/aws\"\n  version = \"20.0.0\"\n}\n";
    std::fs::write(dir.path().join("main.tf"), configuration).unwrap();
    let out = init(&tf, &h, dir.path());
    assert!(out.status.success(), "{}", text(&out));
    let installed = std::fs::read_to_string(dir.path().join(".terraform/modules/eks/vendored.txt")).unwrap();
    assert_eq!(installed, vendored);
    let archive = "/terraform-aws-modules/terraform-aws-eks/archive/v20.0.0.tar.gz";
    let fetched = up.take_requests().iter().filter(|p| p.as_str() == archive).count();
    assert_eq!(fetched, 2, "by the modules function (stopped at its limit), then by the puller");
}
