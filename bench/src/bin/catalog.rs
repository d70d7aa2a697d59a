//! Catalog: list, search and details answers with 5,000 modules in 50 namespaces and 100
//! providers (or MODULES in MODULES / 100 namespaces and MODULES / 50 providers) in the catalog
//! (wrk, one connection, cold and warm), beside one S3 GET of a catalog shard (what a cold
//! answer cannot go below), and what keeping docs and the catalog adds to a publish, as
//! ratios measured side by side in this run:
//! - the catalog: one module version published by the indexer with its catalog upkeep and
//!   without it (`Indexer::with_catalog(false)`, the publish as it was before the catalog),
//!   alternating, at 5,000 modules;
//! - the docs: a module of real-world size (README, 30 inputs, outputs, a submodule, an
//!   example) published against a one-file module, both with the catalog.
//!
//! usage: catalog [MODULES] [SECONDS_PER_RUN] [PUBLISH_ROUNDS]
//!
//! Set-up: the 5,000 archives are indexed by the real indexer into an in-memory bucket (one
//! repair pass), and everything it wrote is then copied into the embedded S3's directory.
//! Indexing them through the embedded S3 instead did not finish in 14 minutes on 2 cores
//! (s3s-fs walks the directory tree on every listing); what is measured is the same either way:
//! the answers read the documents the indexer wrote.

#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use registry::index::{Indexer, Limits};
use registry::storage::{MemoryStorage, Storage};
use registry_bench::{median, p50_p99_ms, registry};

/// A README, variables, outputs, a submodule and an example: the size of a typical module.
fn real_world_module(i: usize) -> Vec<u8> {
    let readme = format!(
        "# Network {i}\n\nCreates a VPC with public and private subnets, NAT gateways and flow logs for team {i}.\n\n\
         ## Usage\n\n```hcl\nmodule \"network\" {{\n  source = \"registry.example.com/acme/network{i}/aws\"\n}}\n```\n\n{}",
        "| name | description |\n|---|---|\n| cidr | The CIDR block. |\n".repeat(20)
    );
    let variables: String = (0..30)
        .map(|v| {
            format!(
                "variable \"input_{v}\" {{\n  description = \"Input number {v} of the module.\"\n  \
                 type = list(object({{ name = string, size = number }}))\n  default = []\n}}\n\n"
            )
        })
        .collect();
    let outputs: String = (0..10)
        .map(|o| format!("output \"out_{o}\" {{\n  value = {o}\n  description = \"Output {o}.\"\n}}\n"))
        .collect();
    let versions = "terraform {\n  required_version = \">= 1.5\"\n  required_providers {\n    \
                    aws = { source = \"hashicorp/aws\", version = \">= 5.0\" }\n  }\n}\n";
    support::module_tar_gz(&[
        ("README.md", &readme),
        ("variables.tf", &variables),
        ("outputs.tf", &outputs),
        ("versions.tf", versions),
        ("main.tf", "resource \"aws_vpc\" \"this\" {}\n"),
        ("modules/subnet/main.tf", "variable \"az\" {}\noutput \"id\" { value = 1 }\n"),
        ("examples/complete/main.tf", "module \"network\" { source = \"../..\" }\n"),
    ])
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

// Long on purpose: a benchmark reads top to bottom as the table it prints, setup to rows.
#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let modules: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(5000);
    let seconds: u32 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(3);
    let rounds: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(9);
    let dir = support::TempDir::new("bench-catalog");
    let data = dir.path().join("data");
    let bucket = data.join("s3").join(registry_local::BUCKET);

    // 5,000 modules in 50 namespaces and 100 providers, one version each, indexed in memory
    // by one repair pass (manifests, docs, catalog, publish log), then written into the
    // embedded S3's directory.
    let namespaces = (modules / 100).max(1);
    let providers = modules / 50;
    let memory = MemoryStorage::new();
    for i in 0..modules {
        memory.insert(&format!("modules/team{}/network{i}/aws/1.0.0.tar.gz", i % namespaces), real_world_module(i));
    }
    for p in 0..providers {
        let zip = support::provider_zip(&format!("tool{p}"), "1.0.0", "bench");
        let key = format!(
            "providers/registry.example.com/team{}/tool{p}/terraform-provider-tool{p}_1.0.0_linux_amd64.zip",
            p % namespaces
        );
        memory.insert(&key, zip);
    }
    let limits = registry::index::Limits::default();
    let started = Instant::now();
    Indexer::new(&memory, limits.clone()).reindex_all().await.unwrap();
    let full = started.elapsed();
    for key in memory.keys() {
        let path = bucket.join(&key);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, memory.peek(&key).unwrap()).unwrap();
    }
    let warm = registry(&data, &[]).await;
    let catalog_bytes: u64 = memory
        .keys()
        .iter()
        .filter(|k| k.starts_with(registry::layout::CATALOG_PREFIX))
        .map(|k| memory.peek(k).unwrap().len() as u64)
        .sum();
    let shard = registry::layout::catalog_shard("team7");
    let shard_bytes = memory.peek(&shard).unwrap().len();
    let index_bytes = memory.peek(registry::layout::CATALOG_INDEX).unwrap().len();
    println!(
        "{modules} modules in {namespaces} namespaces and {providers} providers indexed in memory (docs and \
         catalog) in {:.1} s; catalog {:.0} KB in all: index {:.1} KB, a namespace's shard {:.1} KB\n",
        full.as_secs_f64(),
        catalog_bytes as f64 / 1e3,
        index_bytes as f64 / 1e3,
        shard_bytes as f64 / 1e3
    );
    // The floor of a cold answer: one GET of a shard, as the registry's S3 client sends it.
    let mut raw = Vec::new();
    let until = Instant::now() + Duration::from_secs(u64::from(seconds) * 3);
    while Instant::now() < until {
        let started = Instant::now();
        warm.storage.get(&shard).await.unwrap().unwrap();
        raw.push(started.elapsed());
    }
    let raw_p50 = ms(registry_bench::percentile(&mut raw, 50.0));
    let raw_p99 = ms(registry_bench::percentile(&mut raw, 99.0));

    // Answers, cold (no manifest cache) and warm, as the wrk of the scale benchmark measures.
    let cold = registry(&data, &[("REGISTRY_MANIFEST_CACHE_BYTES", "0")]).await;
    // With a TTL a warm answer makes no S3 request: the registry's own work alone.
    let ttl = registry(&data, &[("REGISTRY_MANIFEST_CACHE_SECONDS", "60")]).await;
    let auth = vec![format!("Authorization: Bearer {}", warm.dev_token)];
    let last_page = format!("/v1/modules?offset={}&limit=15", modules.saturating_sub(15));
    // One module in the middle of the catalog, and how many names contain "network1".
    let (pick, namespace) = (modules / 2, (modules / 2) % namespaces);
    let hits = (0..modules).filter(|i| format!("network{i}").contains("network1")).count();
    let routes = [
        ("list, first page".to_string(), "/v1/modules?limit=15".to_string()),
        ("list, last page".to_string(), last_page),
        ("list, one namespace".to_string(), "/v1/modules?namespace=team7&limit=100".to_string()),
        (format!("search, one word, {hits} hits"), "/v1/modules/search?q=network1".to_string()),
        ("search, two words, 1 hit".to_string(), format!("/v1/modules/search?q=network{pick}+team{namespace}")),
        ("search, no hit".to_string(), "/v1/modules/search?q=zzzz".to_string()),
        ("search, one namespace".to_string(), "/v1/modules/search?q=network1&namespace=team7".to_string()),
        ("details (latest)".to_string(), format!("/v1/modules/team{namespace}/network{pick}/aws")),
        ("details (1.0.0)".to_string(), format!("/v1/modules/team{namespace}/network{pick}/aws/1.0.0")),
    ];
    println!("| answer at {modules} modules | response | cold p50 / p99 | warm p50 / p99 | warm, TTL p50 / p99 |");
    println!("| --- | --- | --- | --- | --- |");
    println!(
        "| one S3 GET of a shard (the registry's client, {} samples) | {:.1} KB | {raw_p50:.2} / {raw_p99:.2} ms | | |",
        raw.len(),
        shard_bytes as f64 / 1e3
    );
    for (name, target) in &routes {
        let (path, query) = target.split_once('?').map_or((target.as_str(), None), |(p, q)| (p, Some(q)));
        let request = registry::app::Request::get(path).query(query).authorization(Some(&auth[0][15..]));
        let reply = warm.app.handle(&request).await;
        assert_eq!(reply.status, 200, "{name}: {}", String::from_utf8_lossy(&reply.body));
        let figures = p50_p99_ms(&[&cold, &warm, &ttl], target, &auth, seconds);
        println!(
            "| {name} | {:.1} KB | {:.2} / {:.2} ms | {:.2} / {:.2} ms | {:.2} / {:.2} ms |",
            reply.body.len() as f64 / 1e3,
            figures[0].0,
            figures[0].1,
            figures[1].0,
            figures[1].1,
            figures[2].0,
            figures[2].1
        );
    }
    cold.stop().await;
    ttl.stop().await;

    // The indexer's extra cost per publish, through the embedded S3 and, for the indexer's own
    // work and its request count without s3s-fs's directory walks, the in-memory bucket.
    let to_disk = |key: &str, archive: Vec<u8>| {
        let path = bucket.join(key);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, archive).unwrap();
    };
    let disk = publish_costs(&warm.storage, &limits, rounds, to_disk, || 0).await;
    let in_memory =
        publish_costs(&memory, &limits, rounds, |k, a| memory.insert(k, a), || memory.request_count()).await;
    println!();
    println!(
        "| publish one module version at {modules} modules ({rounds} rounds, p50) | embedded S3 | ratio | in memory | ratio | storage requests |"
    );
    println!("| --- | --- | --- | --- | --- | --- |");
    let names = [
        "without the catalog (the publish as it was before it)",
        "with the catalog kept",
        "a one-file module, with the catalog (docs of nearly nothing)",
    ];
    for (i, name) in names.iter().enumerate() {
        println!(
            "| {name} | {:.1} ms | {:.2}× | {:.2} ms | {:.2}× | {} |",
            disk[i].0,
            disk[i].0 / disk[0].0,
            in_memory[i].0,
            in_memory[i].0 / in_memory[0].0,
            in_memory[i].1
        );
    }
    println!(
        "\nDocs of a real-world module (README, 30 inputs, 10 outputs, a submodule, an example) against a \
         one-file module, both with the catalog: {:.2}× through the embedded S3, {:.2}× in memory",
        disk[1].0 / disk[2].0,
        in_memory[1].0 / in_memory[2].0
    );
    warm.stop().await;
}

/// Publish new versions `rounds` times in three variants, alternating: a real-world module
/// without the catalog's upkeep, the same with it, and a one-file module with it. Each
/// archive is placed by `put` first (no notification runs a pass of its own), then the
/// indexer is called as an S3 event would call it. p50 in ms of each variant, and the storage
/// requests of its last publish as `requests` counts them.
async fn publish_costs<S: Storage>(
    storage: &S,
    limits: &Limits,
    rounds: usize,
    put: impl Fn(&str, Vec<u8>),
    requests: impl Fn() -> usize,
) -> [(f64, usize); 3] {
    let mut times: [Vec<f64>; 3] = Default::default();
    let mut counts = [0; 3];
    for round in 0..rounds {
        let variants = [
            ("team2/network2", real_world_module(round), false),
            ("team1/network1", real_world_module(round), true),
            ("team3/network3", support::module_tar_gz(&[("main.tf", "# one file\n")]), true),
        ];
        for (i, (module, archive, catalog)) in variants.into_iter().enumerate() {
            let key = format!("modules/{module}/aws/2.{round}.0.tar.gz");
            put(&key, archive);
            let indexer = Indexer::new(storage, limits.clone()).with_catalog(catalog);
            let before = requests();
            let started = Instant::now();
            indexer.on_object_changed(&key).await.unwrap();
            times[i].push(ms(started.elapsed()));
            counts[i] = requests() - before;
        }
    }
    let [a, b, c] = times;
    [(median(a), counts[0]), (median(b), counts[1]), (median(c), counts[2])]
}
