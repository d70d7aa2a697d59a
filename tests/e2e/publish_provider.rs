//! `make publish-provider` as a provider author runs it after `goreleaser release`: a `dist/`
//! (the release's files beside goreleaser's own) becomes a release the terraform CLI installs
//! with its signature check; what the indexer would refuse (another key's signature, a zip
//! SHA256SUMS does not list, no keys yet) is refused before anything is uploaded, and the
//! same version again changes nothing.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::Duration;

use registry::storage::Storage;
use registry::testing::signing::{TestKey, release};
use registry_local::publish::PublishTarget;
use registry_local::publish_provider::{ProviderPublish, publish_provider};
use support::{Harness, TempDir, terraform_or_skip, text, this_platform};

async fn publish(h: &Harness, dist: &Path) -> (Result<String, String>, String) {
    let options = ProviderPublish {
        dist: dist.to_path_buf(),
        namespace: "acme".into(),
        version: None,
        target: PublishTarget::Local(h.running.data_dir.clone()),
        wait: Duration::from_secs(60),
        settings: Vec::new(),
    };
    let mut out = Vec::new();
    let result = publish_provider(&options, &mut out).await;
    (result.map(|r| r.key_id).map_err(|e| e.to_string()), String::from_utf8(out).expect("printed text"))
}

/// A goreleaser `dist/`: the release's files, and goreleaser's own beside them.
fn dist(dir: &Path, files: &[(String, Vec<u8>)]) {
    std::fs::create_dir_all(dir.join("terraform-provider-widget_linux_amd64_v1")).unwrap();
    std::fs::write(dir.join("config.yaml"), "project_name: terraform-provider-widget\n").unwrap();
    std::fs::write(dir.join("metadata.json"), "{}").unwrap();
    for (name, bytes) in files {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}

async fn keys_under(h: &Harness, prefix: &str) -> Vec<String> {
    h.running.storage.list(prefix).await.unwrap().into_iter().map(|o| o.key).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_goreleaser_dist_is_published_checked_first_and_installs_with_its_signature() {
    let Some(tf) = terraform_or_skip("a_goreleaser_dist_is_published_checked_first_and_installs_with_its_signature")
    else {
        return;
    };
    let h = Harness::start().await;
    let host = h.host();
    let platform = this_platform();
    let (os, arch) = platform.split_once('_').unwrap();
    let (key, stranger) = (TestKey::generate("acme"), TestKey::generate("stranger"));
    let prefix = format!("providers/{host}/acme/widget/");
    let work = TempDir::new("publish-provider");

    // No key in the namespace yet: refused, naming where the key admin puts it.
    let good = release("widget", "1.0.0", &[(os, arch), ("darwin", "arm64")], Some(&["5.0"]), &key);
    let first = work.path().join("dist");
    dist(&first, &good);
    let (refused, printed) = publish(&h, &first).await;
    let refused = refused.unwrap_err();
    assert!(refused.contains(&format!("uploads its public key to signing-keys/{host}/acme/")), "{refused}\n{printed}");
    assert!(keys_under(&h, &prefix).await.is_empty(), "nothing uploaded");
    h.upload_key(&format!("signing-keys/{host}/acme/2026.asc"), key.public_armor().into_bytes()).await;

    // Signed by a key the namespace does not have: refused before upload, as the indexer would.
    let other = work.path().join("other");
    dist(&other, &release("widget", "1.1.0", &[(os, arch)], Some(&["5.0"]), &stranger));
    let (refused, _) = publish(&h, &other).await;
    let refused = refused.unwrap_err();
    assert!(refused.contains("refused before upload") && refused.contains(&stranger.key_id()), "{refused}");
    // A zip that is not the one SHA256SUMS lists: refused, naming it.
    let tampered = work.path().join("tampered");
    dist(&tampered, &good);
    let zip_name = format!("terraform-provider-widget_1.0.0_{platform}.zip");
    std::fs::write(tampered.join(&zip_name), registry::testing::provider_zip("widget", "1.0.0", "x_y")).unwrap();
    let (refused, _) = publish(&h, &tampered).await;
    assert!(refused.unwrap_err().contains(&format!("{zip_name} has SHA-256")));
    assert!(keys_under(&h, &prefix).await.is_empty(), "nothing uploaded");

    let (published, printed) = publish(&h, &first).await;
    assert_eq!(published.unwrap_or_else(|e| panic!("{e}\n{printed}")), key.key_id());
    assert!(printed.contains(&format!("signature: verifies with key {}", key.key_id())), "{printed}");
    assert!(printed.contains("protocols: 5.0") && printed.contains(&format!("source  = \"{host}/acme/widget\"")));
    assert_eq!(keys_under(&h, &prefix).await.len(), good.len(), "the release's files, not goreleaser's own");
    let (again, _) = publish(&h, &first).await;
    assert!(again.unwrap_err().contains("already published with these same zips"));

    // A version half uploaded before (its zip only): refused, naming what is there.
    let half = release("widget", "1.1.0", &[(os, arch)], Some(&["5.0"]), &key);
    h.upload(&format!("{prefix}{}", half[0].0), half[0].1.clone()).await;
    let half_dist = work.path().join("half");
    dist(&half_dist, &half);
    let (refused, _) = publish(&h, &half_dist).await;
    let refused = refused.unwrap_err();
    assert!(refused.contains("are in the bucket already") && refused.contains(&half[0].0), "{refused}");
    // The signature's answer lost after S3 wrote it: the retry meets these same bytes, which
    // is not another upload.
    let retried = work.path().join("retried");
    dist(&retried, &release("widget", "1.2.0", &[(os, arch)], Some(&["5.0"]), &key));
    let sig_key = format!("{prefix}terraform-provider-widget_1.2.0_SHA256SUMS.sig");
    let lost = registry_local::faults::Rule::next(&sig_key, registry_local::faults::Fault::AnswerLost, 1)
        .method(http::Method::PUT);
    h.running.faults.add(lost);
    let (published, printed_retry) = publish(&h, &retried).await;
    published.unwrap_or_else(|e| panic!("{e}\n{printed_retry}"));
    assert_eq!(h.running.faults.injected(), 1);
    h.running.faults.clear();

    // The printed block, installed by the CLI through providers.v1 with its signature check.
    let block = printed.split("Use it with:\n").nth(1).unwrap();
    let config = work.path().join("config");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("main.tf"), block).unwrap();
    let out =
        tokio::task::block_in_place(|| support::terraform(&tf, &h, &config, &["init", "-input=false", "-no-color"]));
    assert!(out.status.success(), "terraform init failed\n{}", text(&out));
    // The block's `~> 1.0` takes the newest 1.x published since.
    let installed = format!("Installed {host}/acme/widget v1.2.0 (self-signed, key ID {})", key.key_id());
    assert!(text(&out).contains(&installed), "{}", text(&out));
}
