//! The modules pull-through against a stand-in for the public registry and GitHub's archive
//! host (`support::public_registry`): a version's first download copies the tag's archive into
//! the bucket, without its top-level directory, and pins its SHA-256; later downloads are
//! served from the bucket whatever the upstream does (down, or its tag moved); scopes treat the
//! upstream host as a namespace; hostile upstream answers fail cleanly and store nothing.
//! (`e2e/module_pull_through.rs` runs it with the real CLI.)

// Test helpers: a failed step is a failed test, with the panic message saying which.
#![allow(clippy::unwrap_used)]

use serde_json::json;
use sha2::Digest;
use support::Harness;
use support::public_registry::{Answer, PublicRegistry, noise};

const HOST: &str = "registry.terraform.io";
const VPC: &str = "terraform-aws-modules/vpc/aws";
const MAIN_TF: &str = "variable \"cidr\" {}\noutput \"cidr\" { value = var.cidr }\n";

async fn downstream(up: &PublicRegistry, more: &[(&str, &str)]) -> Harness {
    let settings = up.settings(HOST);
    let mut all: Vec<(&str, &str)> = settings
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .filter(|(k, _)| !more.iter().any(|(m, _)| m == k))
        .collect();
    all.extend_from_slice(more);
    Harness::start_with(&all).await
}

fn base(module: &str) -> String {
    format!("/v1/modules/upstream/{HOST}/{module}")
}

/// The archive a download answer points at, fetched as go-getter fetches it (without the
/// `checksum=` it reads first), checked against that checksum.
async fn fetch_download(location: &str) -> Vec<u8> {
    let (url, checksum) = location.rsplit_once("&checksum=sha256:").expect("a checksum");
    let (status, bytes) = support::presigned::fetch(url).await;
    assert_eq!(status, 200, "{url}");
    assert_eq!(hex::encode(sha2::Sha256::digest(&bytes)), checksum, "the bytes the checksum names");
    bytes.to_vec()
}

/// A page's HTML, as the registry's token sees it (200, or the test fails).
async fn page(h: &Harness, path: &str) -> String {
    let token = format!("Bearer {}", h.running.dev_token);
    let reply = h.running.app.handle(&registry::app::Request::get(path).authorization(Some(&token))).await;
    let html = String::from_utf8_lossy(&reply.body).to_string();
    assert_eq!(reply.status.as_u16(), 200, "{path}: {html}");
    if let Err(broken) = registry::invariants::check_inert_html(&html, &registry::invariants::FRAME_TAGS) {
        panic!("{path}: {broken}");
    }
    html
}

fn names(tar_gz: &[u8]) -> Vec<String> {
    registry::testing::tar_gz_names(tar_gz)
}

async fn keys_under(h: &Harness, prefix: &str) -> Vec<String> {
    support::pull_through::keys_under(h, prefix).await
}

// One scenario told in order: list, first download (the copy), served from the copy, upstream
// down, tag moved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_public_module_is_copied_on_first_download_pinned_and_then_served_from_the_bucket() {
    let up = PublicRegistry::start().await;
    let files = [("main.tf", MAIN_TF), ("modules/subnets/main.tf", "output \"n\" { value = 3 }\n")];
    up.publish(VPC, "5.0.0", &files, Answer::Header);
    up.publish(VPC, "5.1.0", &files, Answer::Header);
    let down = downstream(&up, &[]).await;

    let (status, versions) = down.get_json(&format!("{}/versions", base(VPC))).await;
    assert_eq!(status, 200, "{versions}");
    assert_eq!(versions, json!({"modules": [{"versions": [{"version": "5.0.0"}, {"version": "5.1.0"}]}]}));
    assert_eq!(
        up.take_requests(),
        ["/.well-known/terraform.json", "/v1/modules/terraform-aws-modules/vpc/aws/versions"]
    );
    let (_, again) = down.get_json(&format!("{}/versions", base(VPC))).await;
    assert_eq!(again, versions);
    assert!(up.take_requests().is_empty(), "a fresh kept list costs no upstream request");

    // The first download: asked, fetched from the git host, stored flat, pinned.
    let (status, answer) = down.get_json(&format!("{}/5.1.0/download", base(VPC))).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        up.take_requests(),
        [
            "/v1/modules/terraform-aws-modules/vpc/aws/5.1.0/download",
            "/terraform-aws-modules/terraform-aws-vpc/archive/v5.1.0.tar.gz"
        ]
    );
    let location = answer["location"].as_str().unwrap();
    let archive = fetch_download(location).await;
    assert_eq!(names(&archive), ["main.tf", "modules/subnets/main.tf"], "the module at the root");
    let sha = hex::encode(sha2::Sha256::digest(&archive));
    let prefix = format!("upstream-modules/{HOST}/{VPC}/");
    assert_eq!(
        keys_under(&down, &prefix).await,
        [format!("{prefix}5.1.0.pin.json"), format!("{prefix}5.1.0/{sha}.tar.gz"), format!("{prefix}index.json")]
    );
    let pin: serde_json::Value =
        serde_json::from_slice(&std::fs::read(down.object_path(&format!("{prefix}5.1.0.pin.json"))).unwrap()).unwrap();
    assert_eq!(pin["sha256"], sha.as_str());
    assert_eq!(pin["source"], "git::https://github.com/terraform-aws-modules/terraform-aws-vpc?ref=v5.1.0");
    // The module's page (from the catalog, where the indexer put the pin): the version, its
    // SHA-256 and source, the `source` line and the CLI configuration to write.
    let page = page(&down, &format!("/ui/upstream/{HOST}/{VPC}")).await;
    for shown in [
        "5.1.0",
        sha.as_str(),
        "git::https://github.com/terraform-aws-modules/terraform-aws-vpc?ref=v5.1.0",
        "source  = &quot;terraform-aws-modules/vpc/aws&quot;",
        "host &quot;registry.terraform.io&quot;",
    ] {
        assert!(page.contains(shown), "{shown}: {page}");
    }
    // `reindex all` gives a module whose pins document is gone (or predates it) one again.
    {
        use registry::storage::Storage;
        let pins = format!("indexed/{prefix}pins.json");
        down.running.storage.delete(&pins).await.unwrap();
        let config = down.running.app.config();
        let indexer = registry::index::Indexer::new(&down.running.storage, config.limits.clone());
        for (owner, outcome) in indexer.reindex_all().await.unwrap() {
            outcome.unwrap_or_else(|e| panic!("{owner}: {e}"));
        }
        assert!(down.running.storage.get(&pins).await.unwrap().is_some(), "rebuilt from the pins");
    }
    let catalog = self::page(&down, "/").await;
    assert!(catalog.contains(&format!("href=\"/ui/upstream/{HOST}/{VPC}\"")), "linked from the catalog: {catalog}");

    // Served from the copy: no upstream request, whatever the upstream does.
    let (_, second) = down.get_json(&format!("{}/5.1.0/download", base(VPC))).await;
    assert_eq!(fetch_download(second["location"].as_str().unwrap()).await, archive);
    assert!(up.take_requests().is_empty(), "a copied version costs no upstream request");
    up.set_tag("terraform-aws-modules", "terraform-aws-vpc", "v5.1.0", &[("main.tf", "# moved\n")]);
    up.down(true);
    let (status, third) = down.get_json(&format!("{}/5.1.0/download", base(VPC))).await;
    assert_eq!(status, 200, "{third}");
    assert_eq!(
        fetch_download(third["location"].as_str().unwrap()).await,
        archive,
        "the pinned bytes, not the moved tag's"
    );
    // Versions through the outage: the kept list (stale once its TTL passes) and the copies.
    let (status, listed) = down.get_json(&format!("{}/versions", base(VPC))).await;
    assert_eq!((status, listed), (200, versions));
    // A version never copied cannot be copied while the upstream is down: 502 naming it.
    let (status, body) = down.get_json(&format!("{}/5.0.0/download", base(VPC))).await;
    assert_eq!(status, 502, "{body}");
    assert!(body["errors"][0].as_str().unwrap().contains(HOST), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opentofus_json_location_and_v_prefixed_versions_are_read() {
    let up = PublicRegistry::start().await;
    up.publish("cloudposse/label/null", "v0.25.0", &[("main.tf", MAIN_TF)], Answer::Json);
    let down = downstream(&up, &[]).await;
    let (status, versions) = down.get_json(&format!("{}/versions", base("cloudposse/label/null"))).await;
    assert_eq!((status, versions), (200, json!({"modules": [{"versions": [{"version": "0.25.0"}]}]})));
    let (status, answer) = down.get_json(&format!("{}/0.25.0/download", base("cloudposse/label/null"))).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(names(&fetch_download(answer["location"].as_str().unwrap()).await), ["main.tf"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scopes_treat_the_upstream_host_as_a_namespace_and_the_allow_list_is_kept() {
    let up = PublicRegistry::start().await;
    up.publish(VPC, "5.1.0", &[("main.tf", MAIN_TF)], Answer::Header);
    up.publish("other/thing/aws", "1.0.0", &[("main.tf", MAIN_TF)], Answer::Header);
    let allow = format!("{HOST}/terraform-aws-*={}", up.url);
    let down = downstream(&up, &[("REGISTRY_UPSTREAM_MODULES", &allow)]).await;
    let token = |name: &str, modules: &[&str]| {
        let record = registry::auth::manage::record(
            name,
            &format!("trg_{name}_0123456789abcdef0123456789"),
            modules.iter().map(|s| s.to_string()).collect(),
            vec![],
            None,
        );
        (record, format!("trg_{name}_0123456789abcdef0123456789"))
    };
    let storage = &down.running.storage;
    let (private, private_token) = token("private", &["acme"]);
    let (public, public_token) = token("public", &[&format!("{HOST}/*")]);
    registry::auth::manage::upsert(storage, private).await.unwrap();
    registry::auth::manage::upsert(storage, public).await.unwrap();
    let versions = format!("{}/versions", base(VPC));

    let (status, body) = down.get_json_as(&versions, &private_token).await;
    assert_eq!(status, 404, "a token for private namespaces does not see upstream modules: {body}");
    let (status, _) = down.get_json_as(&versions, &public_token).await;
    assert_eq!(status, 200);
    let request = registry::app::Request::get(&versions);
    assert_eq!(down.running.app.handle(&request).await.status.as_u16(), 401, "no token: 401");
    // A namespace outside the allow-list is not fetched: as absent as a module that is not there.
    up.take_requests();
    let (status, body) = down.get_json_as(&format!("{}/versions", base("other/thing/aws")), &public_token).await;
    assert_eq!(status, 404, "{body}");
    assert!(up.take_requests().is_empty(), "nothing asked of the upstream for a namespace not allowed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_upstream_answers_fail_cleanly_and_store_nothing() {
    let up = PublicRegistry::start().await;
    let traversal = registry::testing::tar_gz_items(&[
        registry::testing::Item::Dir("r/"),
        registry::testing::Item::File("r/main.tf", b"x"),
        registry::testing::Item::File("r/../../etc/cron.d/x", b"x"),
    ]);
    let url = up.url.clone();
    let cases: Vec<(&str, String, &str)> = vec![
        ("loop/one/aws", format!("{url}/loop.tar.gz"), "redirects"),
        ("traversal/one/aws", format!("{url}/traversal.tar.gz"), "refused"),
        ("s3/one/aws", "s3::https://s3.amazonaws.com/b/m.zip".into(), "s3 source"),
        ("subdir/one/aws", "git::https://github.com/o/r//modules/x?ref=v1.0.0".into(), "subdirectory"),
        ("gitlab/one/aws", "git::https://gitlab.com/o/r?ref=v1.0.0".into(), "not allowed"),
        ("plain/one/aws", format!("http://{}/m.tar.gz", url.trim_start_matches("https://")), "only HTTPS"),
    ];
    up.set_archive("/traversal.tar.gz", traversal);
    for (module, location, _) in &cases {
        up.set_location(module, "1.0.0", location, Answer::Header);
    }
    let many: Vec<_> = (0..100_000).map(|i| json!({ "version": format!("0.0.{i}") })).collect();
    up.set_raw_versions("many/one/aws", json!({"modules": [{"versions": many}]}).to_string());
    let down = downstream(&up, &[("REGISTRY_UPSTREAM_MODULE_MAX_BYTES", "1048576")]).await;

    for (module, _, says) in &cases {
        let (status, body) = down.get_json(&format!("{}/1.0.0/download", base(module))).await;
        assert_eq!(status, 502, "{module}: {body}");
        let message = body["errors"][0].as_str().unwrap_or_default();
        assert!(message.contains(says), "{module}: {message}");
    }
    let (status, body) = down.get_json(&format!("{}/versions", base("many/one/aws"))).await;
    assert_eq!(status, 502, "{body}");
    assert!(body["errors"][0].as_str().unwrap().contains("100000 versions"), "{body}");
    let stored = keys_under(&down, "upstream-modules/").await;
    assert!(stored.iter().all(|k| k.ends_with("/index.json")), "no copy and no pin for any of them: {stored:?}");
}

// The red team's cases (the modules pull-through's review): one module's failure, a hostile
// upstream's answers and repeated anonymous requests must not reach other callers or other
// modules.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_modules_oversized_answer_neither_takes_the_host_down_nor_tells_others() {
    let up = PublicRegistry::start().await;
    up.publish(VPC, "5.0.0", &[("main.tf", MAIN_TF)], Answer::Header);
    up.publish(VPC, "5.1.0", &[("main.tf", MAIN_TF)], Answer::Header);
    up.set_raw_versions("secret-project/db/aws", "x".repeat(5 << 20));
    let down = downstream(&up, &[]).await;
    let token = "trg_scoped_0123456789abcdef0123456789";
    let record =
        registry::auth::manage::record("scoped", token, vec![format!("{HOST}/terraform-aws-modules")], vec![], None);
    registry::auth::manage::upsert(&down.running.storage, record).await.unwrap();
    // Someone with wider rights lists a module of another namespace: it fails upstream.
    let (status, _) = down.get_json(&format!("{}/versions", base("secret-project/db/aws"))).await;
    assert_eq!(status, 502);
    let (status, body) = down.get_json_as(&format!("{}/5.1.0/download", base(VPC)), token).await;
    assert_eq!(status, 200, "another module's first download, right after: {body}");
    // And with the host really down, what the back-off says names no one's module.
    up.down(true);
    let _ = down.get_json(&format!("{}/versions", base("secret-project/db/aws"))).await;
    let (status, body) = down.get_json_as(&format!("{}/5.0.0/download", base(VPC)), token).await;
    let message = body["errors"][0].as_str().unwrap_or_default();
    assert_eq!(status, 502, "{body}");
    assert!(!message.contains("secret-project"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstreams_answer_is_not_echoed_to_callers() {
    let up = PublicRegistry::start().await;
    let secret = format!("AKIA-INTERNAL-SECRET-{}", "x".repeat(2000));
    up.set_raw_versions("leak/one/aws", json!({"modules": secret}).to_string());
    let down = downstream(&up, &[]).await;
    let (status, body) = down.get_json(&format!("{}/versions", base("leak/one/aws"))).await;
    let message = body["errors"][0].as_str().unwrap_or_default();
    assert_eq!(status, 502);
    assert!(!message.contains("AKIA") && message.contains("not the expected JSON (line 1"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anonymous_callers_cannot_make_the_registry_fetch_again_and_again() {
    let up = PublicRegistry::start().await;
    let huge: Vec<u8> = (0..3 << 20).map(|i: u32| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    up.set_archive("/huge.tar.gz", huge);
    up.set_location("huge/one/aws", "1.0.0", &format!("{}/huge.tar.gz", up.url), Answer::Header);
    up.publish(VPC, "5.1.0", &[("main.tf", MAIN_TF)], Answer::Header);
    let anonymous_all = format!("{HOST}/*");
    let settings =
        [("REGISTRY_UPSTREAM_MODULE_MAX_BYTES", "1048576"), ("REGISTRY_ANONYMOUS_MODULES", anonymous_all.as_str())];
    let down = downstream(&up, &settings).await;
    let anonymous = |path: String| {
        let h = &down;
        async move { h.running.app.handle(&registry::app::Request::get(&path)).await.status.as_u16() }
    };
    up.take_requests();
    // Too large to copy while the CLI waits: handed to the puller, which refuses it (not gzip).
    assert_eq!(anonymous(format!("{}/1.0.0/download", base("huge/one/aws"))).await, 503);
    support::pull_through::copies_done(&down).await;
    for _ in 0..5 {
        assert_eq!(anonymous(format!("{}/1.0.0/download", base("huge/one/aws"))).await, 502);
    }
    let fetched = up.take_requests().iter().filter(|p| p.as_str() == "/huge.tar.gz").count();
    assert_eq!(fetched, 2, "fetched by the function, then by the puller, and not again for a while");
    assert_eq!(anonymous(format!("{}/versions", base(VPC))).await, 200);
    up.take_requests();
    for i in 0..20 {
        assert_eq!(anonymous(format!("{}/5.1.0-x{i}/download", base(VPC))).await, 404);
    }
    assert!(up.take_requests().is_empty(), "versions the kept list does not hold are not asked for");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_nothing_fetched_only_the_copies_are_listed() {
    use registry::storage::{Precondition, Storage};
    let up = PublicRegistry::start().await;
    up.publish(VPC, "5.0.0", &[("main.tf", MAIN_TF)], Answer::Header);
    up.publish(VPC, "5.1.0", &[("main.tf", MAIN_TF)], Answer::Header);
    let fetching = downstream(&up, &[]).await;
    assert_eq!(fetching.get_json(&format!("{}/5.1.0/download", base(VPC))).await.0, 200);
    // The same bucket content in a registry that fetches nothing: its kept list names 5.0.0 too.
    let offline = Harness::start_with(&[("REGISTRY_UPSTREAM_MODULES", "")]).await;
    for key in keys_under(&fetching, "upstream-modules/").await {
        let bytes = std::fs::read(fetching.object_path(&key)).unwrap();
        offline.running.storage.put(&key, bytes.into(), "application/octet-stream", Precondition::None).await.unwrap();
    }
    let (status, versions) = offline.get_json(&format!("{}/versions", base(VPC))).await;
    assert_eq!((status, versions), (200, json!({"modules": [{"versions": [{"version": "5.1.0"}]}]})));
    assert_eq!(offline.get_json(&format!("{}/5.1.0/download", base(VPC))).await.0, 200);
    assert_eq!(offline.get_json(&format!("{}/5.0.0/download", base(VPC))).await.0, 404);
}

// Larger than the function copies while the CLI waits: the puller copies it (an S3
// notification of the pull record, run in the background here as Lambda runs it), downloads
// meanwhile answer 503 with `Retry-After`, then the pin is served as any copy and logged; an
// archive the puller refuses is answered with why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_archive_too_large_to_copy_while_the_cli_waits_is_copied_by_the_puller() {
    let up = PublicRegistry::start().await;
    let blob = noise(3 << 20);
    up.publish(VPC, "6.0.0", &[("main.tf", MAIN_TF), ("vendored.txt", blob.as_str())], Answer::Header);
    let garbage: Vec<u8> = noise(3 << 20).into_bytes();
    up.set_archive("/garbage.tar.gz", garbage);
    up.set_location("garbage/one/aws", "1.0.0", &format!("{}/garbage.tar.gz", up.url), Answer::Header);
    let down = downstream(&up, &[("REGISTRY_UPSTREAM_MODULE_MAX_BYTES", "1048576")]).await;

    let download = format!("{}/6.0.0/download", base(VPC));
    let token = format!("Bearer {}", down.running.dev_token);
    let reply = down.running.app.handle(&registry::app::Request::get(&download).authorization(Some(&token))).await;
    assert_eq!(reply.status.as_u16(), 503, "{}", String::from_utf8_lossy(&reply.body));
    assert_eq!(
        reply.header_value("retry-after"),
        Some("20"),
        "Terraform's registry client waits this long, then asks again"
    );
    let body: serde_json::Value = serde_json::from_slice(&reply.body).unwrap();
    assert!(body["errors"][0].as_str().unwrap().contains("being copied in the background"), "{body}");
    support::pull_through::copies_done(&down).await;

    let (status, answer) = down.get_json(&download).await;
    assert_eq!(status, 200, "{answer}");
    let bytes = fetch_download(answer["location"].as_str().unwrap()).await;
    assert_eq!(names(&bytes), ["main.tf", "vendored.txt"], "stored flat, as the function stores a copy");
    let pin = std::fs::read(down.object_path(&format!("upstream-modules/{HOST}/{VPC}/6.0.0.pin.json"))).unwrap();
    let pin: serde_json::Value = serde_json::from_slice(&pin).unwrap();
    assert_eq!(pin["sha256"], hex::encode(sha2::Sha256::digest(&bytes)));

    // Eight first downloads at once hand the version to the puller once: one pull record
    // written (a conditional write), one copy by the puller.
    let garbage = format!("{}/1.0.0/download", base("garbage/one/aws"));
    up.take_requests();
    let mut racing = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let (app, path, token) = (down.running.app.clone(), garbage.clone(), token.clone());
        racing.spawn(async move {
            app.handle(&registry::app::Request::get(&path).authorization(Some(&token))).await.status.as_u16()
        });
    }
    let statuses = racing.join_all().await;
    // The first hands it to the puller (503); the others wait for it, and find the pull record
    // (503), or the puller's refusal once it is written (502).
    assert!(statuses.contains(&503) && statuses.iter().all(|&s| s == 503 || s == 502), "{statuses:?}");
    support::pull_through::copies_done(&down).await;
    let fetched = up.take_requests().iter().filter(|p| p.as_str() == "/garbage.tar.gz").count();
    assert_eq!(
        fetched, 2,
        "once by the first request (the others waited for it, then found its pull record), once by the puller"
    );
    let (status, body) = down.get_json(&garbage).await;
    assert_eq!(status, 502, "{body}");
    assert!(body["errors"][0].as_str().unwrap().contains("the archive is refused"), "{body}");
    let stored = keys_under(&down, "upstream-modules/registry.terraform.io/garbage/").await;
    assert!(stored.iter().all(|k| !k.ends_with(".pin.json") && !k.ends_with(".tar.gz")), "{stored:?}");
}

// A copy the puller cannot store (every write of the archive fails, past the SDK's and the
// copy's own retries) is recorded with why, so its downloads answer 502 and the back-off starts;
// the archive is fetched once, not again and again by Lambda's retries of the event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_that_cannot_be_stored_is_recorded_and_backed_off() {
    use registry_local::faults::{Fault, Rule};
    let up = PublicRegistry::start().await;
    let blob = noise(3 << 20);
    up.publish(VPC, "7.0.0", &[("main.tf", MAIN_TF), ("vendored.txt", blob.as_str())], Answer::Header);
    let down = downstream(&up, &[("REGISTRY_UPSTREAM_MODULE_MAX_BYTES", "1048576")]).await;
    let archives = format!("upstream-modules/{HOST}/{VPC}/7.0.0/");
    down.running.faults.add(Rule::always(&archives, Fault::InternalError).method(http::Method::PUT));
    let download = format!("{}/7.0.0/download", base(VPC));
    assert_eq!(down.get_json(&download).await.0, 503, "handed to the puller");
    support::pull_through::copies_done(&down).await;
    down.running.faults.clear();
    let (status, body) = down.get_json(&download).await;
    assert_eq!(status, 502, "{body}");
    assert!(body["errors"][0].as_str().unwrap().contains("could not be stored"), "{body}");
    let failure = format!("upstream-modules/{HOST}/{VPC}/7.0.0.pull-failed.json");
    assert!(std::fs::read(down.object_path(&failure)).is_ok(), "recorded: {failure}");
    let fetched = up.take_requests().iter().filter(|p| p.contains("/archive/")).count();
    assert_eq!(fetched, 2, "once by the function (too large), once by the puller");
    // Backed off: asked again at once, the failure is answered, nothing fetched.
    assert_eq!(down.get_json(&download).await.0, 502);
    assert!(up.take_requests().iter().all(|p| !p.contains("/archive/")));
}

// A module the upstream does not have is answered absent for a while without asking it again:
// ten requests for a mistyped name are one upstream request, not ten.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_absent_module_is_asked_for_once_in_a_while() {
    let up = PublicRegistry::start().await;
    let down = downstream(&up, &[]).await;
    let versions = format!("{}/versions", base("terraform-aws-modules/nosuch/aws"));
    for _ in 0..10 {
        assert_eq!(down.get_json(&versions).await.0, 404);
    }
    let asked = up.take_requests().iter().filter(|p| p.ends_with("/nosuch/aws/versions")).count();
    assert_eq!(asked, 1, "the upstream is asked once");
}

// First downloads of one version at once, small enough to copy while the CLI waits: one copies
// it, the others wait for it and serve its pin; the upstream's archive is fetched once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_downloads_at_once_copy_a_version_once() {
    let up = PublicRegistry::start().await;
    up.publish(VPC, "5.2.0", &[("main.tf", MAIN_TF)], Answer::Header);
    let down = downstream(&up, &[]).await;
    let token = format!("Bearer {}", down.running.dev_token);
    let download = format!("{}/5.2.0/download", base(VPC));
    up.take_requests();
    let mut racing = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let (app, path, token) = (down.running.app.clone(), download.clone(), token.clone());
        racing.spawn(async move {
            app.handle(&registry::app::Request::get(&path).authorization(Some(&token))).await.status.as_u16()
        });
    }
    let statuses = racing.join_all().await;
    assert!(statuses.iter().all(|&s| s == 200), "{statuses:?}");
    let fetched = up.take_requests().iter().filter(|p| p.contains("/archive/")).count();
    assert_eq!(fetched, 1, "one copy for eight downloads");
}
