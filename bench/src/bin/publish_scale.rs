//! Publishing at scale, with S3's latency (`registry_local::latency::S3Latency::aws`) on every
//! request of the indexer:
//! - concurrent publishes: CONCURRENT publishes at once (default 100), each in its own
//!   namespace of a catalog of NAMESPACES × PER_NAMESPACE modules (default 500 × 100 =
//!   50,000): a new version of an existing module, then a new module; and, for contrast, the
//!   same number at once in one namespace (what every publish contended for while the catalog
//!   was one document). Per publish: its time and its lost races (conditional writes answered
//!   412), by document; afterwards every version, catalog entry and index count is checked.
//! - manifest growth: one module with up to VERSIONS versions (default 20,000): the manifest's
//!   size, its parse, the versions answer, and one more publish at each size.
//!
//! usage: publish_scale [NAMESPACES] [PER_NAMESPACE] [CONCURRENT] [VERSIONS]
//!
//! In memory (`MemoryStorage`, whose conditional writes are atomic like S3's), each request
//! delayed by the model's first byte and its transfer: the embedded S3's directory store is
//! too slow to list 50,000 modules (see `catalog`), and what is measured is the indexer's own
//! requests and races.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use registry::catalog::Part;
use registry::index::{Indexer, Limits};
use registry::manifest::ModuleManifest;
use registry::storage::MemoryStorage;
use registry_bench::latent::Latent;
use registry_local::latency::S3Latency;

/// The kind of document a key is, for the table.
fn kind(key: &str) -> &'static str {
    if key.starts_with(registry::layout::CATALOG_SHARDS_PREFIX) {
        "catalog shard"
    } else if key == registry::layout::CATALOG_INDEX {
        "catalog index"
    } else if key.ends_with("/manifest.json") {
        "manifest"
    } else if key.starts_with(registry::layout::PUBLISH_LOG_PREFIX) {
        "publish log"
    } else {
        "other"
    }
}

fn module(marker: &str) -> Vec<u8> {
    support::module_tar_gz(&[("README.md", &format!("# {marker}\n\nA module.\n")), ("main.tf", "# one file\n")])
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// p50, p99 and max of `v`.
fn spread(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    let at = |p: f64| v[((p / 100.0) * (v.len() - 1) as f64).round() as usize];
    (at(50.0), at(99.0), at(100.0))
}

/// One round: `keys` uploaded, then each indexed by its own indexer, all at once. Each
/// publish's time and lost races; every key is checked as published afterwards.
async fn round(
    memory: &Arc<MemoryStorage>,
    latency: &Arc<S3Latency>,
    keys: Vec<String>,
) -> (Vec<f64>, Vec<BTreeMap<&'static str, usize>>) {
    let tasks: Vec<_> = keys
        .into_iter()
        .map(|key| {
            let (memory, latency) = (memory.clone(), latency.clone());
            tokio::spawn(async move {
                memory.insert(&key, module(&key));
                let storage = Latent::new(memory, latency, kind);
                let started = Instant::now();
                Indexer::new(&storage, Limits::default()).on_object_changed(&key).await.unwrap();
                (ms(started.elapsed()), storage.lost())
            })
        })
        .collect();
    let mut times = Vec::new();
    let mut lost = Vec::new();
    for t in tasks {
        let (time, races) = t.await.unwrap();
        times.push(time);
        lost.push(races);
    }
    (times, lost)
}

/// Versions missing from manifests or from the catalog, and whether the index counts the shards.
async fn check(memory: &MemoryStorage, published: &[(String, String, String)]) -> Vec<String> {
    let catalog = registry::catalog::stored(memory).await.unwrap();
    let mut missing = Vec::new();
    for (namespace, name, version) in published {
        let m = registry::address::ModuleAddress::parse(namespace, name, "aws").unwrap();
        let manifest = ModuleManifest::parse(&memory.peek(&registry::layout::module_manifest(&m)).unwrap()).unwrap();
        if !manifest.versions.iter().any(|v| &v.version == version) {
            missing.push(format!("{m} {version}: not in its manifest"));
        }
        if catalog.module(&m).map(|e| e.latest.as_str()) != Some(version) {
            missing.push(format!("{m} {version}: catalog says {:?}", catalog.module(&m).map(|e| &e.latest)));
        }
    }
    let index = registry::catalog::CatalogIndex::parse(&memory.peek(registry::layout::CATALOG_INDEX).unwrap()).unwrap();
    if index != catalog.index() {
        missing.push("the index does not count the shards".into());
    }
    missing
}

fn row(what: &str, times: Vec<f64>, lost: &[BTreeMap<&'static str, usize>], missing: &[String]) {
    let retries: Vec<f64> = lost.iter().map(|l| l.values().sum::<usize>() as f64).collect();
    let mut by_kind: BTreeMap<&str, usize> = BTreeMap::new();
    for l in lost {
        for (k, n) in l {
            *by_kind.entry(k).or_default() += n;
        }
    }
    let (t50, t99, tmax) = spread(times);
    let (r50, r99, rmax) = spread(retries);
    let kinds = if by_kind.is_empty() {
        "none".to_string()
    } else {
        by_kind.iter().map(|(k, n)| format!("{k} {n}")).collect::<Vec<_>>().join(", ")
    };
    println!(
        "| {what} | {} | {r50:.0} / {r99:.0} / {rmax:.0} | {kinds} | {t50:.0} / {t99:.0} / {tmax:.0} ms |",
        if missing.is_empty() { "none".to_string() } else { format!("**{}**", missing.len()) }
    );
    for m in missing.iter().take(5) {
        println!("|   {m} | | | | |");
    }
}

#[tokio::main]
async fn main() {
    let args: Vec<usize> = std::env::args().skip(1).map(|a| a.parse().unwrap()).collect();
    let namespaces = args.first().copied().unwrap_or(500);
    let per_namespace = args.get(1).copied().unwrap_or(100);
    let concurrent = args.get(2).copied().unwrap_or(100).min(namespaces);
    let versions = args.get(3).copied().unwrap_or(20_000);
    let latency = Arc::new(S3Latency::aws());

    // The catalog: every module 1.0.0, indexed in memory by one repair pass.
    let memory = Arc::new(MemoryStorage::new());
    for n in 0..namespaces {
        for m in 0..per_namespace {
            memory.insert(&format!("modules/ns{n}/m{m}/aws/1.0.0.tar.gz"), module("1.0.0"));
        }
    }
    let started = Instant::now();
    Indexer::new(&*memory, Limits::default()).reindex_all().await.unwrap();
    println!(
        "{} modules in {namespaces} namespaces indexed in memory in {:.0} s; S3 latency {latency}\n",
        namespaces * per_namespace,
        started.elapsed().as_secs_f64()
    );

    println!(
        "| {concurrent} publishes at once | lost | lost races per publish p50 / p99 / max | lost races by document | time p50 / p99 / max |"
    );
    println!("| --- | --- | --- | --- | --- |");
    let spread_out = |n: usize| n * namespaces / concurrent;
    let new_versions: Vec<(String, String, String)> =
        (0..concurrent).map(|i| (format!("ns{}", spread_out(i)), "m0".to_string(), "1.1.0".to_string())).collect();
    let keys = new_versions.iter().map(|(n, m, v)| format!("modules/{n}/{m}/aws/{v}.tar.gz")).collect();
    let (times, lost) = round(&memory, &latency, keys).await;
    row("a new version, each in its own namespace", times, &lost, &check(&memory, &new_versions).await);

    let new_modules: Vec<(String, String, String)> =
        (0..concurrent).map(|i| (format!("ns{}", spread_out(i)), "fresh".to_string(), "1.0.0".to_string())).collect();
    let keys = new_modules.iter().map(|(n, m, v)| format!("modules/{n}/{m}/aws/{v}.tar.gz")).collect();
    let (times, lost) = round(&memory, &latency, keys).await;
    row("a new module, each in its own namespace", times, &lost, &check(&memory, &new_modules).await);

    let one_namespace: Vec<(String, String, String)> =
        (0..concurrent).map(|i| ("ns1".to_string(), format!("m{}", i % per_namespace), "1.2.0".to_string())).collect();
    let keys = one_namespace.iter().map(|(n, m, v)| format!("modules/{n}/{m}/aws/{v}.tar.gz")).collect();
    let (times, lost) = round(&memory, &latency, keys).await;
    row(
        "a new version, all in one namespace (one document, as before sharding)",
        times,
        &lost,
        &check(&memory, &one_namespace).await,
    );

    // Manifest growth: one module, its versions added in steps, one more published at each.
    println!();
    println!(
        "| versions of one module | manifest | parse | versions answer | one more publish (S3 latency) | its requests |"
    );
    println!("| --- | --- | --- | --- | --- | --- |");
    let growth = Arc::new(MemoryStorage::new());
    let owner = registry::address::ModuleAddress::parse("big", "growth", "aws").unwrap();
    let mut have = 0;
    let mut steps: Vec<usize> = [1_000, 5_000, 10_000, versions].into_iter().filter(|s| *s <= versions).collect();
    steps.dedup();
    for step in steps {
        for i in have..step {
            growth.insert(&format!("modules/big/growth/aws/1.{}.{}.tar.gz", i / 1000, i % 1000), module("g"));
        }
        have = step;
        Indexer::new(&*growth, Limits::default())
            .reindex(&registry::layout::Owner::Module(owner.clone()))
            .await
            .unwrap();
        let bytes = growth.peek(&registry::layout::module_manifest(&owner)).unwrap();
        let started = Instant::now();
        let manifest = ModuleManifest::parse(&bytes).unwrap();
        let parse = started.elapsed();
        let answer = serde_json::to_vec(&manifest.versions_response()).unwrap().len();
        let key = format!("modules/big/growth/aws/2.0.{step}.tar.gz");
        growth.insert(&key, module("more"));
        let storage = Latent::new(growth.clone(), latency.clone(), kind);
        let before = growth.request_count();
        let started = Instant::now();
        Indexer::new(&storage, Limits::default()).on_object_changed(&key).await.unwrap();
        let publish = started.elapsed();
        println!(
            "| {} | {:.2} MB | {:.1} ms | {:.0} KB | {:.0} ms | {} |",
            manifest.versions.len() + 1,
            bytes.len() as f64 / 1e6,
            ms(parse),
            answer as f64 / 1e3,
            ms(publish),
            growth.request_count() - before
        );
    }
}
