//! No lost updates: many publishers upload versions of one module and one provider at the
//! same time through the embedded S3. Every upload runs its own indexing pass, all of them
//! overlapping, as S3 events invoke concurrent Lambdas. Every version must end up listed,
//! every platform of a provider release uploaded at once, the publish log's chains (one per
//! namespace) must be unbroken with one publish entry per archive, and the catalog (the namespace's shard
//! every module pass writes, the providers part every provider pass writes, and the index)
//! must list every module and provider with all its versions.

// Test helpers: a failed step is a failed test, with the panic message saying which.
#![allow(clippy::unwrap_used)]

use std::time::Instant;

use support::{Harness, module_tar_gz, provider_zip, upload};
use tokio::task::JoinSet;

/// `make test`'s rounds, versions and other owners per round: chosen from the rate at which
/// rounds catch a removed conditional write (docs/DEVELOPING.md, "The concurrency proof").
const ROUNDS: usize = 5;
const VERSIONS: usize = 10;
const OWNERS: usize = 8;

/// Every this many provider versions, a second platform's zip is uploaded at the same time.
const SECOND_PLATFORM_EVERY: usize = 5;

/// A setting of the proof: `CONCURRENT_PUBLISH_ROUNDS` (rounds, each a module and a provider
/// of its own), `CONCURRENT_PUBLISH_VERSIONS` (versions of each published at once in a round)
/// and `CONCURRENT_PUBLISH_OWNERS` (other modules published beside them, which contend on
/// the catalog). `make test` runs the defaults; `make proof` the long form.
fn setting(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|r| r.parse().ok()).unwrap_or(default)
}

// One scenario told in order (long on purpose): the writers, then every check of what they left.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_publishes_lose_no_version() {
    // A pass that fails for good says why (shown when the test fails).
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new("warn"))
        .with_test_writer()
        .try_init();
    let mut rounds = setting("CONCURRENT_PUBLISH_ROUNDS", ROUNDS);
    // A time budget bounds how much work is done, never the verdict: a round starts only if
    // the longest round so far still fits in it (CI runs `make proof` in whatever time its
    // own budget leaves, and must not overrun it).
    let budget = std::env::var("CONCURRENT_PUBLISH_SECONDS").ok().and_then(|s| s.parse().ok());
    let budget = budget.map(std::time::Duration::from_secs);
    let versions = setting("CONCURRENT_PUBLISH_VERSIONS", VERSIONS);
    let owners = setting("CONCURRENT_PUBLISH_OWNERS", OWNERS);
    let h = Harness::start().await;
    let started = Instant::now();
    // What each round lost; every round runs, so a failure says how often it happens.
    let mut lost: Vec<(usize, String)> = Vec::new();
    let mut longest = std::time::Duration::ZERO;
    for round in 0..rounds {
        if round > 0 && budget.is_some_and(|b| started.elapsed() + longest > b) {
            rounds = round;
            break;
        }
        let round_started = Instant::now();
        let name = format!("race{round}");
        let mut uploads = JoinSet::new();
        for i in 0..versions {
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
        // Other owners at the same time: their passes contend with these on the catalog only.
        for k in 0..owners {
            let key = format!("modules/acme/{name}-side{k}/aws/1.0.0.tar.gz");
            uploads.spawn(upload(h.running.publisher_client(), key, module_tar_gz(&[("main.tf", "# side\n")])));
        }
        while let Some(done) = uploads.join_next().await {
            done.expect("upload task");
        }

        // Every upload has answered, so every pass has finished.
        let (status, body) = h.get_json(&format!("/v1/modules/acme/{name}/aws/versions")).await;
        assert_eq!(status, 200, "{body}");
        let modules = body["modules"][0]["versions"].as_array().map_or(0, Vec::len);
        let (status, body) = h.get_json(&format!("/v1/mirror/example.com/acme/{name}/index.json")).await;
        assert_eq!(status, 200, "{body}");
        let providers = body["versions"].as_object().map_or(0, |v| v.len());
        if (modules, providers) != (versions, versions) {
            lost.push((round, format!("{modules} module and {providers} provider versions of {versions} listed")));
        }
        for i in 0..versions {
            let (status, doc) = h.get_json(&format!("/v1/mirror/example.com/acme/{name}/1.{i}.0.json")).await;
            let platforms = doc["archives"].as_object().map_or(0, |a| a.len());
            let expected = if i % SECOND_PLATFORM_EVERY == 0 { 2 } else { 1 };
            let hashed = doc["archives"]["linux_amd64"]["hashes"][1].as_str().is_some_and(|h| h.starts_with("h1:"));
            if status != 200 || platforms != expected || !hashed {
                lost.push((round, format!("provider 1.{i}.0: {status} {doc}")));
            }
        }
        longest = longest.max(round_started.elapsed());
    }
    let publishing = started.elapsed().as_secs_f64();
    eprintln!(
        "concurrent publish: {rounds} rounds x {versions} module + {versions} provider versions + {owners} other \
         modules in {publishing:.1} s; \
         {} of {rounds} rounds lost something",
        lost.iter().map(|(round, _)| round).collect::<std::collections::BTreeSet<_>>().len()
    );
    let lost: Vec<String> = lost.iter().map(|(round, what)| format!("round {round}: {what}")).collect();
    assert!(lost.is_empty(), "versions lost:\n{}", lost.join("\n"));

    // The catalog, as the list and search API answers from it: every round's module and
    // provider, each with every version, none lost to the other owners' concurrent writes.
    let catalog = registry::catalog::stored(&h.running.storage).await.unwrap();
    let modules: std::collections::BTreeMap<String, _> = catalog.modules().map(|m| (m.address(), m)).collect();
    let mut behind = Vec::new();
    for round in 0..rounds {
        let entry = |id: String| modules.get(&id).map(|m| (m.versions, m.latest.clone()));
        let latest = format!("1.{}.0", versions - 1);
        let provider = catalog.providers.providers.get(&format!("example.com/acme/race{round}"));
        let mut expected = vec![(format!("acme/race{round}/aws"), Some((versions, latest.clone())))];
        expected.extend((0..owners).map(|k| (format!("acme/race{round}-side{k}/aws"), Some((1, "1.0.0".to_string())))));
        for (id, want) in expected {
            if entry(id.clone()) != want {
                behind.push(format!("{id}: {:?}, expected {want:?}", entry(id.clone())));
            }
        }
        if provider.map(|p| (p.versions, p.latest.clone())) != Some((versions, latest)) {
            behind.push(format!("provider race{round}: {:?}", provider.map(|p| (p.versions, &p.latest))));
        }
    }
    assert!(behind.is_empty(), "catalog entries lost or behind:\n{}", behind.join("\n"));
    let (status, list) = h.get_json("/v1/modules/search?q=race&limit=100").await;
    assert_eq!(status, 200, "{list}");
    let listed = list["modules"].as_array().unwrap();
    assert_eq!(listed.len(), (rounds * (1 + owners)).min(100), "one catalog entry per module: {list}");

    // The publish log, appended to by every one of those passes at once: every chain
    // unbroken, one publish entry per archive, and every served archive explained.
    let report = registry::publish_log::audit::audit(&h.running.storage).await.unwrap();
    assert!(report.is_clean(), "chain: {:?}\nunexplained: {:?}", report.chain, report.unexplained);
    let archives = rounds * (2 * versions + versions.div_ceil(SECOND_PLATFORM_EVERY) + owners);
    assert_eq!(report.entries, archives as u64, "one publish entry per archive, none lost, none twice");
    eprintln!("catalog: every entry complete; publish log: {} entries, audit clean", report.entries);
    h.running.stop().await;
}
