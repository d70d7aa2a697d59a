//! No lost updates: many publishers upload versions of one module and one provider at the
//! same time through the embedded S3. Every upload runs its own indexing pass, all of them
//! overlapping, as S3 events invoke concurrent Lambdas. Every version must end up listed,
//! every platform of a provider release uploaded at once, the publish log must hold one
//! unbroken chain with one publish entry per archive, and the catalog (one document every
//! pass of every owner writes) must list every module and provider with all its versions.

// Test helpers: a failed step is a failed test, with the panic message saying which.
#![allow(clippy::unwrap_used)]

use std::time::Instant;

use e2e::{Harness, module_tar_gz, provider_zip, upload};
use tokio::task::JoinSet;

const VERSIONS: usize = 50;

/// Every this many provider versions, a second platform's zip is uploaded at the same time.
const SECOND_PLATFORM_EVERY: usize = 5;

fn rounds() -> usize {
    std::env::var("CONCURRENT_PUBLISH_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(20)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_publishes_lose_no_version() {
    // A pass that fails for good says why (shown when the test fails).
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new("warn"))
        .with_test_writer()
        .try_init();
    let h = Harness::start().await;
    let started = Instant::now();
    let mut lost = 0;
    for round in 0..rounds() {
        let name = format!("race{round}");
        let mut uploads = JoinSet::new();
        for i in 0..VERSIONS {
            let client = h.running.publisher_client();
            let module_key = format!("modules/acme/{name}/aws/1.{i}.0.tar.gz");
            let module = module_tar_gz(&[("main.tf", &format!("# {name} {i}\n"))]);
            uploads.spawn(upload(client.clone(), module_key, module));
            let zip_key =
                format!("providers/example.com/acme/{name}/terraform-provider-{name}_1.{i}.0_linux_amd64.zip");
            uploads.spawn(upload(client.clone(), zip_key, provider_zip(&name, &format!("1.{i}.0"), "linux_amd64")));
            // A release is several platforms at once: their passes contend on one VERSION.json.
            if i % SECOND_PLATFORM_EVERY == 0 {
                let zip_key =
                    format!("providers/example.com/acme/{name}/terraform-provider-{name}_1.{i}.0_darwin_arm64.zip");
                uploads.spawn(upload(client, zip_key, provider_zip(&name, &format!("1.{i}.0"), "darwin_arm64")));
            }
        }
        while let Some(done) = uploads.join_next().await {
            done.expect("upload task");
        }

        // Every upload has answered, so every pass has finished.
        let (status, body) = h.get_json(&format!("/v1/modules/acme/{name}/aws/versions")).await;
        assert_eq!(status, 200, "{body}");
        let modules = body["modules"][0]["versions"].as_array().unwrap().len();
        let (status, body) = h.get_json(&format!("/v1/mirror/example.com/acme/{name}/index.json")).await;
        assert_eq!(status, 200, "{body}");
        let providers = body["versions"].as_object().unwrap().len();
        for i in 0..VERSIONS {
            let (status, doc) = h.get_json(&format!("/v1/mirror/example.com/acme/{name}/1.{i}.0.json")).await;
            assert_eq!(status, 200, "round {round} provider 1.{i}.0: {doc}");
            assert!(doc["archives"]["linux_amd64"]["hashes"][1].as_str().unwrap().starts_with("h1:"));
            let platforms = doc["archives"].as_object().unwrap().len();
            let expected = if i % SECOND_PLATFORM_EVERY == 0 { 2 } else { 1 };
            assert_eq!(platforms, expected, "round {round} provider 1.{i}.0: a platform lost: {doc}");
        }
        lost += (VERSIONS - modules) + (VERSIONS - providers);
        assert_eq!((modules, providers), (VERSIONS, VERSIONS), "round {round}: versions lost");
    }
    let publishing = started.elapsed().as_secs_f64();

    // The catalog, as the list and search API answers from it: every round's module and
    // provider, each with every version, none lost to the other owners' concurrent writes.
    let (status, list) = h.get_json("/v1/modules/search?q=race&limit=100").await;
    assert_eq!(status, 200, "{list}");
    let listed = list["modules"].as_array().unwrap();
    assert_eq!(listed.len(), rounds(), "one catalog entry per module: {list}");
    assert!(listed.iter().all(|m| m["version"] == format!("1.{}.0", VERSIONS - 1)), "latest of each: {list}");
    let stored = registry::storage::Storage::get(&h.running.storage, registry::layout::CATALOG).await.unwrap();
    let catalog = registry::catalog::Catalog::parse(&stored.unwrap().bytes).unwrap();
    for round in 0..rounds() {
        let module = &catalog.modules[&format!("acme/race{round}/aws")];
        let provider = &catalog.providers[&format!("example.com/acme/race{round}")];
        assert_eq!(
            (module.versions, provider.versions),
            (VERSIONS, VERSIONS),
            "round {round}: a catalog entry is behind"
        );
        assert_eq!(provider.latest, format!("1.{}.0", VERSIONS - 1));
    }

    // The publish log, appended to by every one of those passes at once: one unbroken
    // chain, one publish entry per archive, and every served archive explained.
    let report = registry::publish_log::audit::audit(&h.running.storage).await.unwrap();
    assert!(report.is_clean(), "chain: {:?}\nunexplained: {:?}", report.chain, report.unexplained);
    let archives = rounds() * (2 * VERSIONS + VERSIONS.div_ceil(SECOND_PLATFORM_EVERY));
    assert_eq!(report.entries, archives as u64, "one publish entry per archive, none lost, none twice");
    eprintln!(
        "concurrent publish: {} rounds x {VERSIONS} module + {VERSIONS} provider versions, {lost} lost, {publishing:.1} s; \
         catalog: every entry complete; publish log: {} entries, audit clean",
        rounds(),
        report.entries
    );
    h.running.stop().await;
}
