//! `make publish` against a running local registry, as a module author runs it: a git tag
//! becomes a served version in one command, which prints the interface changes and the
//! `module` block; what the indexer would refuse is refused before anything is written; the
//! same version again is refused and changes nothing; an upload the indexer rejects prints
//! its reason.

use std::path::Path;
use std::time::Duration;

use registry::address::ModuleAddress;
use registry::storage::Storage;
use registry_local::publish::{ModulePublish, PublishTarget, publish_module};
use registry_local::{LocalOptions, TokenTarget};
use support::git;

/// Commit `main.tf` as `text` and tag the commit `tag`.
fn release(repo: &Path, text: &str, tag: &str) {
    std::fs::write(repo.join("main.tf"), text).expect("main.tf written");
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", tag]);
    git(repo, &["tag", tag]);
}

async fn publish(repo: &Path, data: &Path, policy: &str) -> (Result<String, String>, String) {
    let options = ModulePublish {
        dir: repo.to_path_buf(),
        module: ModuleAddress::parse("acme", "net", "aws").expect("an address"),
        version: None,
        target: PublishTarget::Local(data.to_path_buf()),
        wait: Duration::from_secs(60),
        settings: vec![("REGISTRY_SEMVER_POLICY".into(), policy.into())],
    };
    let mut out = Vec::new();
    let result = publish_module(&options, &mut out).await;
    let printed = String::from_utf8(out).expect("printed text");
    (result.map(|p| p.sha256).map_err(|e| e.to_string()), printed)
}

async fn keys(storage: &impl Storage) -> Vec<String> {
    storage.list("modules/acme/net/aws/").await.expect("listed").into_iter().map(|o| o.key).collect()
}

#[tokio::test]
async fn a_git_tag_becomes_a_served_version_checked_before_anything_is_written() {
    let data = support::TempDir::new("publish-data");
    let repo = support::TempDir::new("publish-repo");
    let options = LocalOptions {
        write_client_files: true,
        settings: vec![("REGISTRY_SEMVER_POLICY".into(), "enforce".into())],
        ..LocalOptions::ephemeral(data.path())
    };
    let running = registry_local::start(options).await.unwrap();
    git(repo.path(), &["init", "-q"]);
    std::fs::write(repo.path().join(".gitattributes"), "tests/ export-ignore\n").unwrap();
    std::fs::create_dir_all(repo.path().join("tests")).unwrap();
    std::fs::write(repo.path().join("tests/a.tftest.hcl"), "run \"x\" {}\n").unwrap();
    release(repo.path(), "variable \"a\" {}\nvariable \"b\" {\n  type = string\n}\n", "v1.0.0");

    let (first, printed) = publish(repo.path(), data.path(), "enforce").await;
    let sha256 = first.unwrap_or_else(|e| panic!("{e}\n{printed}"));
    assert!(printed.contains("packed 2 files from tag v1.0.0 (commit "), "{printed}");
    assert!(printed.contains("nothing published before it"), "{printed}");
    let source = format!("source  = \"{}/acme/net/aws\"", running.registry_addr);
    assert!(printed.contains("module \"net\" {") && printed.contains(&source), "{printed}");
    assert!(printed.contains("version = \"~> 1.0\"") && printed.contains("# b = string"), "{printed}");
    let served = running.storage.get("modules/acme/net/aws/1.0.0.tar.gz").await.unwrap().unwrap();
    let names = registry::testing::tar_gz_names(&served.bytes);
    assert_eq!(names, [".gitattributes", "main.tf"], "export-ignore holds");

    // The same version again: refused, nothing written.
    let before = keys(&running.storage).await;
    let (again, printed) = publish(repo.path(), data.path(), "enforce").await;
    let again = again.unwrap_err();
    assert!(again.contains("1.0.0 is already published with these same bytes"), "{again}\n{printed}");
    assert!(again.contains(&sha256), "{again}");
    assert_eq!(keys(&running.storage).await, before);

    // A breaking change in a minor release, under enforce: refused before upload, with why.
    release(repo.path(), "variable \"a\" {}\n", "v1.1.0");
    let (broken, printed) = publish(repo.path(), data.path(), "enforce").await;
    let broken = broken.unwrap_err();
    assert!(printed.contains("interface changes since 1.0.0:") && printed.contains("BREAKING"), "{printed}");
    assert!(broken.starts_with("refused before upload: 1.1.0 breaks callers of 1.0.0"), "{broken}");
    assert!(broken.contains("publish this archive as 2.0.0") && broken.contains("Nothing was uploaded"), "{broken}");
    assert_eq!(keys(&running.storage).await, before);

    // The same change where the publisher believes the policy is warn: uploaded, and the
    // indexer's rejection (the registry enforces) is what the command prints.
    git(repo.path(), &["tag", "-d", "v1.1.0"]);
    git(repo.path(), &["tag", "v1.1.1"]);
    let (rejected, printed) = publish(repo.path(), data.path(), "warn").await;
    let rejected = rejected.unwrap_err();
    assert!(printed.contains("WARNING: 1 breaking change(s) since 1.0.0"), "{printed}");
    assert!(printed.contains("uploaded modules/acme/net/aws/1.1.1.tar.gz"), "{printed}");
    assert!(rejected.starts_with("rejected by the indexer: 1.1.1 breaks callers of 1.0.0"), "{rejected}");

    // A compatible release: served, its change shown.
    release(
        repo.path(),
        "variable \"a\" {}\nvariable \"b\" {\n  type = string\n}\nvariable \"c\" {\n  default = 1\n}\n",
        "v1.2.0",
    );
    // The upload's answer lost after S3 wrote it: the SDK's retry meets its own bytes (412),
    // which is not another upload.
    let lost =
        registry_local::faults::Rule::next("modules/acme/net/aws/1.2.0", registry_local::faults::Fault::AnswerLost, 1)
            .method(http::Method::PUT);
    running.faults.add(lost);
    let (compatible, printed) = publish(repo.path(), data.path(), "enforce").await;
    compatible.unwrap_or_else(|e| panic!("{e}\n{printed}"));
    assert_eq!(running.faults.injected(), 1, "the answer was lost once");
    running.faults.clear();
    assert!(printed.contains("interface changes since 1.0.0:") && printed.contains("input \"c\""), "{printed}");
    assert!(printed.contains("semver: keeps the interface of 1.0.0"), "{printed}");

    // Not a module at its root: refused with the indexer's own reason, nothing written.
    let before = keys(&running.storage).await;
    std::fs::remove_file(repo.path().join("main.tf")).unwrap();
    std::fs::create_dir_all(repo.path().join("inner")).unwrap();
    std::fs::write(repo.path().join("inner/main.tf"), "variable \"a\" {}\n").unwrap();
    git(repo.path(), &["add", "-A"]);
    git(repo.path(), &["commit", "-q", "-m", "moved"]);
    git(repo.path(), &["tag", "v1.3.0"]);
    let (nested, _) = publish(repo.path(), data.path(), "enforce").await;
    let nested = nested.unwrap_err();
    assert!(nested.starts_with("refused before upload (the indexer would reject it): no .tf"), "{nested}");
    assert_eq!(keys(&running.storage).await, before);
    running.stop().await;

    let report = registry_local::audit(TokenTarget::DataDir(data.path().to_path_buf())).await.unwrap();
    assert!(report.is_clean(), "{:?} {:?}", report.unexplained, report.unserved);
}

/// A module in a subdirectory of its repository (a monorepo's `modules/dns`): the tag's tree of
/// that directory, its own `.gitattributes` honoured, nothing of the rest of the repository.
#[tokio::test]
async fn a_module_in_a_subdirectory_is_packed_from_its_part_of_the_tag() {
    let data = support::TempDir::new("publish-sub-data");
    let repo = support::TempDir::new("publish-sub-repo");
    let options = LocalOptions { write_client_files: true, ..LocalOptions::ephemeral(data.path()) };
    let running = registry_local::start(options).await.unwrap();
    let module = repo.path().join("modules/dns");
    std::fs::create_dir_all(module.join("fixtures")).unwrap();
    std::fs::write(module.join(".gitattributes"), "fixtures/ export-ignore\n").unwrap();
    std::fs::write(module.join("fixtures/big.json"), "{}\n").unwrap();
    std::fs::write(repo.path().join("README.md"), "# the monorepo\n").unwrap();
    git(repo.path(), &["init", "-q"]);
    release(&module, "variable \"zone\" {\n  default = \"x\"\n}\n", "v0.1.0");
    let (published, printed) = publish(&module, data.path(), "warn").await;
    published.unwrap_or_else(|e| panic!("{e}\n{printed}"));
    let served = running.storage.get("modules/acme/net/aws/0.1.0.tar.gz").await.unwrap().unwrap();
    assert_eq!(registry::testing::tar_gz_names(&served.bytes), [".gitattributes", "main.tf"]);
    running.stop().await;
}

/// A filter driver in the clone's own `.git/config` (a job before left it on a reused CI
/// runner) is a program git archive would run: refused before it runs, nothing uploaded.
#[tokio::test]
async fn a_filter_the_clones_config_defines_is_never_run() {
    let data = support::TempDir::new("publish-filter-data");
    let repo = support::TempDir::new("publish-filter-repo");
    let options = LocalOptions { write_client_files: true, ..LocalOptions::ephemeral(data.path()) };
    let running = registry_local::start(options).await.unwrap();
    git(repo.path(), &["init", "-q"]);
    release(repo.path(), "variable \"a\" {}\n", "v1.0.0");
    let ran = repo.path().join("../filter-ran");
    let command = format!("touch {}; cat", ran.display());
    git(repo.path(), &["config", "filter.planted.smudge", &command]);
    std::fs::write(repo.path().join(".git/info/attributes"), "* filter=planted\n").unwrap();
    let (refused, printed) = publish(repo.path(), data.path(), "warn").await;
    let refused = refused.unwrap_err();
    assert!(refused.contains("defines the filter filter.planted.smudge"), "{refused}\n{printed}");
    assert!(!ran.exists(), "the planted filter ran");
    // The same filter in a file the config includes.
    git(repo.path(), &["config", "--unset", "filter.planted.smudge"]);
    let included = repo.path().join("../included.gitconfig");
    std::fs::write(&included, format!("[filter \"planted\"]\n\tsmudge = {command}\n")).unwrap();
    git(repo.path(), &["config", "include.path", &included.display().to_string()]);
    let (refused, _) = publish(repo.path(), data.path(), "warn").await;
    assert!(refused.unwrap_err().contains("defines the filter filter.planted.smudge"));
    assert!(!ran.exists(), "the included filter ran");
    assert!(keys(&running.storage).await.is_empty());
    running.stop().await;
}
