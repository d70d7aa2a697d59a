//! The pull-through mirror against a real second registry: the upstream is a local registry
//! serving signed releases through providers.v1 with its own key and TLS (its CA trusted by
//! the downstream through `REGISTRY_UPSTREAM_CA_FILE`), the downstream a local registry whose
//! mirror pulls from it. Requests go through the downstream's handler; what each side read is
//! in its embedded S3's request log. (`terraform_cli.rs` runs the same with the real CLI.)

// Test helpers: a failed step is a failed test, with the panic message saying which.
#![allow(clippy::unwrap_used)]

use registry::testing::signing::TestKey;
use serde_json::json;
use sha2::Digest;
use support::Harness;
use support::presigned::{self, timeless_json};
use support::pull_through::{copies_done, downstream, keys_under, publish, upstream};

fn zh(bytes: &[u8]) -> String {
    format!("zh:{}", hex::encode(sha2::Sha256::digest(bytes)))
}

/// GETs of keys under `prefix` in a request log.
fn reads_under(log: &[registry_local::embedded_s3::S3Request], prefix: &str) -> Vec<String> {
    log.iter()
        .filter(|r| r.method == http::Method::GET)
        .filter_map(|r| r.key.clone())
        .filter(|k| k.starts_with(prefix))
        .collect()
}

async fn stop(h: Harness) {
    let Harness { running, dir } = h;
    running.stop().await;
    drop(dir);
}

// One scenario told in order (long on purpose): first install, the copy, then the copy served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mirror_verifies_an_upstream_release_copies_it_and_then_serves_the_copy() {
    let up = upstream().await;
    let key = TestKey::generate("upstream-release");
    let zips = publish(&up, &key, "widget", "1.0.0", &["linux_amd64", "darwin_arm64"]).await;
    let down = downstream(&up).await;
    let host = support::pull_through::UPSTREAM_NAME;
    let base = format!("/v1/mirror/{host}/acme/widget");

    // index.json: the upstream's versions, its list kept in the downstream's bucket.
    let (status, index) = down.get_json(&format!("{base}/index.json")).await;
    assert_eq!((status, &index), (200, &json!({"versions": {"1.0.0": {}}})));
    assert_eq!(
        keys_under(&down, "upstream/versions/").await,
        [format!("upstream/versions/{host}/acme/widget/index.json")]
    );
    up.running.take_s3_requests();
    let (status, again) = down.get_json(&format!("{base}/index.json")).await;
    assert_eq!((status, &again), (200, &index));
    assert!(up.running.take_s3_requests().is_empty(), "a fresh kept list costs no upstream request");

    // The first VERSION.json: the upstream's URLs with the SHA-256 its signed SHA256SUMS lists.
    let (status, first) = down.get_json(&format!("{base}/1.0.0.json")).await;
    assert_eq!(status, 200, "{first}");
    for (platform, bytes) in &zips {
        let entry = &first["archives"][platform];
        assert_eq!(entry["hashes"], json!([zh(bytes)]), "{first}");
        assert!(entry["url"].as_str().unwrap().starts_with(&up.running.s3_endpoint()), "{entry}");
    }
    let pull = format!("upstream/pulls/{host}/acme/widget/1.0.0.json");
    assert_eq!(keys_under(&down, "upstream/pulls/").await, std::slice::from_ref(&pull));
    let record: serde_json::Value = serde_json::from_slice(&std::fs::read(down.object_path(&pull)).unwrap()).unwrap();
    assert_eq!(record["signing_key"]["key_id"], key.key_id());

    // The copy: byte for byte what the upstream published, indexed with h1: and zh:.
    copies_done(&down).await;
    let prefix = format!("providers/{host}/acme/widget/");
    for (platform, bytes) in &zips {
        let stored =
            std::fs::read(down.object_path(&format!("{prefix}terraform-provider-widget_1.0.0_{platform}.zip")));
        assert_eq!(&stored.unwrap(), bytes, "{platform} copied as published");
    }
    up.running.take_s3_requests();
    down.running.take_s3_requests();
    let (status, copied) = down.get_json(&format!("{base}/1.0.0.json")).await;
    assert_eq!(status, 200, "{copied}");
    for (platform, bytes) in &zips {
        let entry = &copied["archives"][platform];
        assert!(entry["url"].as_str().unwrap().starts_with(&down.running.s3_endpoint()), "{entry}");
        assert_eq!(entry["hashes"], json!([zh(bytes), support::h1_reference(bytes)]), "{copied}");
    }
    assert!(up.running.take_s3_requests().is_empty(), "a copied version costs no upstream request");
    let downstream_reads = reads_under(&down.running.take_s3_requests(), "");
    assert!(downstream_reads.contains(&format!("indexed/{prefix}1.0.0.json")), "{downstream_reads:?}");

    // The upstream gone: the copy is served (the same answer but for the instant its URLs
    // were signed, and they fetch the published bytes); a provider never pulled is a 502
    // naming it.
    stop(up).await;
    let before = registry::clock::now_unix();
    let (status, served) = down.get_json(&format!("{base}/1.0.0.json")).await;
    let after = registry::clock::now_unix();
    assert_eq!((status, timeless_json(&served)), (200, timeless_json(&copied)));
    for (platform, bytes) in &zips {
        let url = served["archives"][platform]["url"].as_str().unwrap();
        let (signed_at, lifetime) = presigned::signed(url);
        assert!((before..=after).contains(&signed_at), "signed at {signed_at}, asked within {before}..={after}");
        assert_eq!(lifetime, down.running.app.config().presign_ttl.as_secs(), "{url}");
        let (status, body) = presigned::fetch(url).await;
        assert_eq!((status, body.as_ref()), (200, bytes.as_slice()), "{platform} from the copy: {url}");
    }
    let (status, index) = down.get_json(&format!("{base}/index.json")).await;
    assert_eq!((status, &index), (200, &json!({"versions": {"1.0.0": {}}})));
    let (status, error) = down.get_json(&format!("/v1/mirror/{host}/acme/other/index.json")).await;
    assert_eq!(status, 502, "{error}");
    let message = error["errors"][0].as_str().unwrap();
    assert!(message.contains(&format!("upstream registry {host}")), "{message}");
    let (status, error) = down.get_json(&format!("/v1/mirror/{host}/acme/other/1.0.0.json")).await;
    assert_eq!(status, 502, "{error}");
    assert!(keys_under(&down, &format!("upstream/versions/{host}/acme/other")).await.is_empty(), "no failure kept");
    stop(down).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_version_list_outlives_its_upstream_and_absence_is_never_kept() {
    let up = upstream().await;
    let key = TestKey::generate("upstream-ttl");
    publish(&up, &key, "widget", "1.0.0", &["linux_amd64"]).await;
    let ca = up.running.data_dir.join("ca.pem");
    let down = Harness::start_with(&[
        ("REGISTRY_UPSTREAM_HOSTS", &support::pull_through::upstream_hosts(&up)),
        ("REGISTRY_UPSTREAM_CA_FILE", ca.to_str().unwrap()),
        ("REGISTRY_UPSTREAM_VERSIONS_TTL_SECONDS", "0"),
    ])
    .await;
    let host = support::pull_through::UPSTREAM_NAME;
    let (status, _) = down.get_json(&format!("/v1/mirror/{host}/acme/widget/index.json")).await;
    assert_eq!(status, 200);
    // TTL 0: every request asks the upstream, so a new upstream release shows at once.
    publish(&up, &key, "widget", "1.1.0", &["linux_amd64"]).await;
    let (status, index) = down.get_json(&format!("/v1/mirror/{host}/acme/widget/index.json")).await;
    assert_eq!((status, &index), (200, &json!({"versions": {"1.0.0": {}, "1.1.0": {}}})));
    // Absent upstream: 404, and nothing kept that would say "no versions" later.
    let (status, _) = down.get_json(&format!("/v1/mirror/{host}/acme/ghost/index.json")).await;
    assert_eq!(status, 404);
    assert!(keys_under(&down, &format!("upstream/versions/{host}/acme/ghost")).await.is_empty());

    stop(up).await;
    let token = format!("Bearer {}", down.running.dev_token);
    let path = format!("/v1/mirror/{host}/acme/widget/index.json");
    let reply = down.running.app.handle(&registry::app::Request::get(&path).authorization(Some(&token))).await;
    assert_eq!(reply.status.as_u16(), 200);
    assert_eq!(serde_json::from_slice::<serde_json::Value>(&reply.body).unwrap(), index, "the kept list");
    let stale = reply.header_value(registry::app::STALE_HEADER).unwrap_or_default();
    assert!(stale.starts_with("upstream registry unreachable"), "marked stale: {stale:?}");
    stop(down).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_bytes_or_signatures_that_do_not_verify_are_never_stored() {
    let up = upstream().await;
    let key = TestKey::generate("upstream-honest");
    let host = support::pull_through::UPSTREAM_NAME;
    let zips = publish(&up, &key, "tampered", "1.0.0", &["linux_amd64", "darwin_arm64"]).await;
    publish(&up, &key, "badsig", "1.0.0", &["linux_amd64"]).await;
    // Behind the upstream's back (its storage, after it verified and indexed): one zip's
    // bytes changed; the other release's signature replaced by another key's over the same file.
    let tampered = format!("providers/{host}/acme/tampered/terraform-provider-tampered_1.0.0_linux_amd64.zip");
    std::fs::write(up.object_path(&tampered), support::provider_zip("tampered", "1.0.0", "evil")).unwrap();
    let sums = format!("providers/{host}/acme/badsig/terraform-provider-badsig_1.0.0_SHA256SUMS");
    let forged = TestKey::generate("forger").sign(&std::fs::read(up.object_path(&sums)).unwrap());
    std::fs::write(up.object_path(&format!("{sums}.sig")), forged).unwrap();
    let down = downstream(&up).await;

    // Bad signature: 502 naming the upstream and the check; nothing recorded or stored.
    let (status, error) = down.get_json(&format!("/v1/mirror/{host}/acme/badsig/1.0.0.json")).await;
    assert_eq!(status, 502, "{error}");
    let message = error["errors"][0].as_str().unwrap();
    assert!(message.contains(&format!("upstream registry {host}")) && message.contains("signature"), "{message}");
    copies_done(&down).await;
    assert!(keys_under(&down, "upstream/pulls/").await.is_empty(), "no pull recorded");

    // Changed zip bytes: answered with the signed hash (the CLI refuses the bytes); the puller
    // stores the platform that verifies and never the one that does not.
    let (status, doc) = down.get_json(&format!("/v1/mirror/{host}/acme/tampered/1.0.0.json")).await;
    assert_eq!(status, 200, "{doc}");
    let honest = &zips.iter().find(|(p, _)| p == "linux_amd64").unwrap().1;
    assert_eq!(doc["archives"]["linux_amd64"]["hashes"], json!([zh(honest)]), "the signed hash, not the bytes'");
    copies_done(&down).await;
    let stored = keys_under(&down, &format!("providers/{host}/")).await;
    assert_eq!(
        stored,
        [format!("providers/{host}/acme/tampered/terraform-provider-tampered_1.0.0_darwin_arm64.zip")],
        "only the zip whose bytes verified"
    );
    // Until it verifies, that platform is still answered from the upstream with the signed hash.
    let (status, doc) = down.get_json(&format!("/v1/mirror/{host}/acme/tampered/1.0.0.json")).await;
    assert_eq!(status, 200, "{doc}");
    assert!(doc["archives"]["darwin_arm64"]["url"].as_str().unwrap().starts_with(&down.running.s3_endpoint()));
    assert!(doc["archives"]["linux_amd64"]["url"].as_str().unwrap().starts_with(&up.running.s3_endpoint()));
    assert_eq!(doc["archives"]["linux_amd64"]["hashes"], json!([zh(honest)]));
    stop(down).await;
    stop(up).await;
}

/// While an upstream is down, requests are answered at once instead of each waiting for it:
/// a host that failed is not asked again for `DOWN_BACKOFF`, then it is. The upstream here
/// accepts connections and closes them; the test counts them, on a manual clock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_is_down_is_not_asked_again_until_its_back_off_ends() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let connections = Arc::new(AtomicUsize::new(0));
    let counted = connections.clone();
    let closer = tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            drop(socket);
        }
    });
    let clock = registry::clock::Monotonic::manual();
    let upstream = format!("{}=https://{address}", support::pull_through::UPSTREAM_NAME);
    let down = Harness::start_with_clock(&[("REGISTRY_UPSTREAM_HOSTS", &upstream)], clock.clone()).await;
    let index = format!("/v1/mirror/{}/acme/widget/index.json", support::pull_through::UPSTREAM_NAME);

    let (status, first) = down.get_json(&index).await;
    assert_eq!(status, 502, "{first}");
    let asked = connections.load(Ordering::SeqCst);
    assert!(asked >= 1, "the upstream was asked");
    for _ in 0..5 {
        let (status, again) = down.get_json(&index).await;
        assert_eq!(status, 502, "{again}");
        assert!(again.to_string().contains("not asked again"), "{again}");
    }
    assert_eq!(connections.load(Ordering::SeqCst), asked, "no connection while the back-off lasts");

    clock.advance(registry::upstream::DOWN_BACKOFF - std::time::Duration::from_millis(1));
    assert_eq!(down.get_json(&index).await.0, 502);
    assert_eq!(connections.load(Ordering::SeqCst), asked, "not yet");
    clock.advance(std::time::Duration::from_millis(2));
    assert_eq!(down.get_json(&index).await.0, 502);
    assert!(connections.load(Ordering::SeqCst) > asked, "asked again once the back-off ended");
    closer.abort();
    stop(down).await;
}

/// The pull-through copy judges an upstream's signature by the same rules as a publish: a
/// SHA-1 signature, by the very key the upstream names, is refused (it was copied before).
/// Real GnuPG signs with RSA (Ed25519 signatures over SHA-1 fail to verify anyway): the
/// upstream first serves the release signed over SHA-256, then its signature is replaced by
/// the same key's over SHA-1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_release_signed_over_sha1_is_refused() {
    use registry::testing::signing::release;
    let Some(gpg) = support::gpg::Gpg::new_key("upstream-sha1", "rsa2048") else {
        support::skipped("an_upstream_release_signed_over_sha1_is_refused", "gpg is not installed");
        return;
    };
    let up = upstream().await;
    let host = support::pull_through::UPSTREAM_NAME;
    up.upload_key(&format!("signing-keys/{host}/acme/gpg.asc"), gpg.public_armor()).await;
    let prefix = format!("providers/{host}/acme/weak/");
    let files = release("weak", "1.0.0", &[("linux", "amd64")], None, &TestKey::generate("unused"));
    let sums_name = "terraform-provider-weak_1.0.0_SHA256SUMS";
    let sums = files.iter().find(|(n, _)| n == sums_name).unwrap().1.clone();
    for (name, bytes) in files.into_iter().filter(|(n, _)| !n.ends_with(".sig")) {
        up.upload(&format!("{prefix}{name}"), bytes).await;
    }
    let signature = format!("{prefix}{sums_name}.sig");
    up.upload(&signature, gpg.sign(&sums, "SHA256")).await;
    let (status, body) = up.get_json("/v1/providers/acme/weak/versions").await;
    assert_eq!(status, 200, "the upstream serves the SHA-256 release: {body}");
    std::fs::write(up.object_path(&signature), gpg.sign(&sums, "SHA1")).unwrap();

    let down = downstream(&up).await;
    let (status, error) = down.get_json(&format!("/v1/mirror/{host}/acme/weak/1.0.0.json")).await;
    assert_eq!(status, 502, "{error}");
    let message = error["errors"][0].as_str().unwrap();
    assert!(message.contains("SHA1 digest") && message.contains("too weak"), "{message}");
    copies_done(&down).await;
    assert!(keys_under(&down, "upstream/pulls/").await.is_empty(), "no pull recorded");
    assert!(keys_under(&down, &format!("providers/{host}/")).await.is_empty(), "nothing copied");
    stop(down).await;
    stop(up).await;
}
