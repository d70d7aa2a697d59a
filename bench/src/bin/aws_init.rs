//! `terraform init` as it would feel in AWS, where S3 answers in tens of milliseconds: the
//! embedded S3 answers with the latency model of `registry_local::latency` (`S3Latency::aws`:
//! a 20 ms median, 80 ms p99 first byte, 85 MB/s a connection), and nginx serves the same
//! bucket directory behind the same model (`LatencyProxy`), side by side, alternating, fresh
//! working directory and no plugin cache each run. The registry runs with infra's defaults
//! (`REGISTRY_MANIFEST_CACHE_SECONDS=5`). A realistic configuration: 20 modules, 5 providers,
//! one provider zip of BIG_ZIP_MB MiB (100 by default).
//!
//! It also counts what a deployment would bill for, per `terraform init` and per publish:
//! the registry's answers by Lambda function with their handler times, and S3 requests by kind
//! and family (modules, providers), with the bytes sent. The counts go to COUNTS_JSON
//! (default `bench/cost/counts.json`, committed with docs/PERFORMANCE.md), which
//! `bench/src/bin/cost.rs` turns into a monthly bill.
//!
//! Not modelled: API Gateway's and Lambda's own time per request (AWS publishes no figure),
//! and TLS to S3 (the CLI fetches archives from the embedded S3 over plain HTTP).
//!
//! usage: aws_init [ROUNDS] [BIG_ZIP_MB] [COUNTS_JSON]

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use registry_bench::{LatencyProxy, Nginx, percentile};
use registry_local::embedded_s3::S3Request;
use registry_local::latency::S3Latency;
use registry_local::server::Answered;
use registry_local::{LocalOptions, Running};
use serde_json::{Value, json};

const MODULES: usize = 20;
const PROVIDERS: usize = 5;
/// The other providers' zips (one platform each is fetched).
const SMALL_ZIP_MB: usize = 4;

// Long on purpose: a benchmark reads top to bottom as the table it prints, setup to rows.
#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let rounds: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(5);
    let big_mb: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(100);
    let counts_file = args.get(3).cloned().unwrap_or_else(|| "bench/cost/counts.json".into());
    let Some(tf) = support::terraform_or_skip("bench aws_init") else { return };
    let dir = support::TempDir::new("bench-aws-init");
    let data = dir.path().join("data");
    let local = registry_local::start(LocalOptions {
        log_s3_requests: true,
        log_answers: true,
        http_listen: Some("127.0.0.1:0".parse().unwrap()),
        settings: vec![("REGISTRY_MANIFEST_CACHE_SECONDS".into(), "5".into())],
        s3_latency: Some(Arc::new(S3Latency::aws())),
        ..LocalOptions::ephemeral(&data)
    })
    .await
    .unwrap();
    let publisher = local.publisher_client();
    for m in 0..MODULES {
        support::upload(publisher.clone(), format!("modules/acme/m{m}/aws/1.0.0.tar.gz"), module(m, "1.0.0")).await;
    }
    let here = support::this_platform();
    for p in 0..PROVIDERS {
        let size = if p == 0 { big_mb } else { SMALL_ZIP_MB };
        for platform in [here.as_str(), "windows_amd64"] {
            let zip = registry::testing::sized_provider_zip(&format!("p{p}"), "1.0.0", size << 20, p as u8);
            let key = format!("providers/example.com/acme/p{p}/terraform-provider-p{p}_1.0.0_{platform}.zip");
            support::upload(publisher.clone(), key, zip).await;
        }
    }
    let publish = publish_counts(&local).await;

    // nginx over the same directory, behind the same latency model.
    let root = local.data_dir.join("s3").join(registry_local::BUCKET);
    let nginx = Nginx::start_plain(&root, &dir.path().join("nginx"));
    let proxy = LatencyProxy::start(&local.data_dir, nginx.port, Arc::new(S3Latency::aws())).await;
    let (host, port) = (local.registry_addr.to_string(), proxy.port);
    let [(via_registry, registry_rc), (via_nginx, nginx_rc)] =
        registry_bench::init_configurations(&host, &local.dev_token, port, MODULES, PROVIDERS);

    let mut times: [Vec<Duration>; 2] = [vec![], vec![]];
    let mut per_init = Vec::new();
    for round in 0..rounds + 1 {
        for (i, (config, rc)) in [(&via_registry, &registry_rc), (&via_nginx, &nginx_rc)].into_iter().enumerate() {
            let work = dir.path().join(format!("run-{round}-{i}"));
            std::fs::create_dir_all(work.join(".home")).unwrap();
            std::fs::write(work.join("main.tf"), config).unwrap();
            std::fs::write(work.join("cli.tfrc"), rc).unwrap();
            let _ = (local.take_answers(), local.take_s3_requests());
            let elapsed = registry_bench::checked_init(&tf, &work, &local.data_dir.join("ca.pem"), MODULES, PROVIDERS);
            let (answers, requests) = (local.take_answers(), local.take_s3_requests());
            // Round 0 warms the page cache and both servers; it is not counted.
            if round > 0 {
                times[i].push(elapsed);
                if i == 0 {
                    per_init.push(Counts::of(&answers, &requests));
                }
            }
            let _ = std::fs::remove_dir_all(&work);
        }
    }
    drop((proxy, nginx));

    let s = |v: &mut Vec<Duration>, p| percentile(v, p).as_secs_f64();
    let (r50, r_max) = (s(&mut times[0], 50.0), s(&mut times[0], 100.0));
    let (n50, n_max) = (s(&mut times[1], 50.0), s(&mut times[1], 100.0));
    println!("| served by, S3 latency {} | runs | p50 | max | ratio p50 / max |", describe());
    println!("| --- | --- | --- | --- | --- |");
    println!("| nginx (static files) behind the same latency | {rounds} | {n50:.2} s | {n_max:.2} s | 1 |");
    println!(
        "| registry (TTL 5 s, as deployed) | {rounds} | {r50:.2} s | {r_max:.2} s | {:.2}× / {:.2}× |",
        r50 / n50,
        r_max / n_max
    );
    println!(
        "\n{MODULES} modules, {PROVIDERS} providers (one {big_mb} MiB zip, the others {SMALL_ZIP_MB} MiB; \
         the CLI fetches its own platform's)"
    );
    let init = Counts::mean(&per_init);
    init.print("one `terraform init` through the registry (mean of the counted runs)");
    publish.print("one module version published (upload, indexing, docs, catalog)");
    let counts = json!({
        "measured": registry::clock::rfc3339_now(),
        "latency": describe(),
        "init": {"modules": MODULES, "providers": PROVIDERS, "counts": init.to_json()},
        "publish": {"modules": 1, "counts": publish.to_json()},
    });
    if let Some(parent) = Path::new(&counts_file).parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&counts_file, serde_json::to_string_pretty(&counts).unwrap()).unwrap();
    println!("\ncounts written to {counts_file}");
    local.stop().await;
}

fn describe() -> String {
    format!("{} (S3Latency::aws)", S3Latency::aws())
}

/// A module of two files (variables and an output, a README): a small real module's size.
fn module(m: usize, version: &str) -> Vec<u8> {
    let main = format!(
        "variable \"name\" {{\n  type = string\n  default = \"m{m}\"\n}}\n\
         variable \"tags\" {{\n  type = map(string)\n  default = {{}}\n}}\n\
         output \"id\" {{\n  value = \"${{var.name}}-{version}\"\n}}\n"
    );
    let readme = format!("# m{m}\n\nModule m{m}, version {version}: a benchmark's module.\n");
    support::module_tar_gz(&[("main.tf", main.as_str()), ("README.md", readme.as_str())])
}

/// What one publish costs: a new version of a module, the upload answered once indexed (the
/// local registry indexes before it answers; in AWS the indexer runs after, on the event).
async fn publish_counts(local: &Running) -> Counts {
    let _ = (local.take_answers(), local.take_s3_requests());
    let started = Instant::now();
    support::upload(local.publisher_client(), "modules/acme/m0/aws/1.0.1.tar.gz".into(), module(0, "1.0.1")).await;
    let elapsed = started.elapsed();
    let mut counts = Counts::of(&local.take_answers(), &local.take_s3_requests());
    // The indexer's invocation: one per notified write, as long as the upload took to answer
    // (an upper bound: it includes the upload's own first byte and transfer).
    let ms = elapsed.as_secs_f64() * 1e3;
    counts.functions.insert("indexer".into(), Function { invocations: 1.0, handler_ms: ms, billed_ms: ms.ceil() });
    counts
}

/// Per Lambda function: invocations, the sum of their handler times, and the sum of what Lambda
/// bills for them (each rounded up to the millisecond).
#[derive(Debug, Default, Clone)]
struct Function {
    invocations: f64,
    handler_ms: f64,
    billed_ms: f64,
}

/// S3 requests and bytes sent, by (kind, family).
#[derive(Debug, Default, Clone)]
struct Counts {
    functions: BTreeMap<String, Function>,
    /// (kind, family) → (requests, bytes sent).
    s3: BTreeMap<(String, String), (f64, f64)>,
}

impl Counts {
    fn of(answers: &[Answered], requests: &[S3Request]) -> Counts {
        let mut counts = Counts::default();
        for a in answers {
            let f = counts.functions.entry(a.function.to_string()).or_default();
            f.invocations += 1.0;
            f.handler_ms += a.elapsed.as_secs_f64() * 1e3;
            f.billed_ms += (a.elapsed.as_secs_f64() * 1e3).ceil();
        }
        for r in requests {
            let entry = counts.s3.entry((kind(r).into(), family(r).into())).or_default();
            entry.0 += 1.0;
            entry.1 += r.sent_bytes as f64;
        }
        counts
    }

    fn mean(all: &[Counts]) -> Counts {
        let n = all.len().max(1) as f64;
        let mut mean = Counts::default();
        for c in all {
            for (name, f) in &c.functions {
                let m = mean.functions.entry(name.clone()).or_default();
                m.invocations += f.invocations / n;
                m.handler_ms += f.handler_ms / n;
                m.billed_ms += f.billed_ms / n;
            }
            for (key, (requests, bytes)) in &c.s3 {
                let m = mean.s3.entry(key.clone()).or_default();
                m.0 += requests / n;
                m.1 += bytes / n;
            }
        }
        mean
    }

    fn to_json(&self) -> Value {
        let functions: serde_json::Map<String, Value> = self
            .functions
            .iter()
            .map(|(n, f)| {
                (n.clone(), json!({"invocations": f.invocations, "handler_ms": f.handler_ms, "billed_ms": f.billed_ms}))
            })
            .collect();
        let s3: Vec<Value> = self
            .s3
            .iter()
            .map(|((kind, family), (requests, bytes))| {
                json!({"kind": kind, "family": family, "requests": requests, "bytes_sent": bytes})
            })
            .collect();
        json!({"functions": functions, "s3": s3})
    }

    fn print(&self, what: &str) {
        println!(
            "\n{what}:\n\n| Lambda function | invocations | handler time, total | billed (each rounded up to 1 ms) |"
        );
        println!("| --- | --- | --- | --- |");
        for (name, f) in &self.functions {
            println!("| {name} | {:.1} | {:.1} ms | {:.1} ms |", f.invocations, f.handler_ms, f.billed_ms);
        }
        println!("\n| S3 request | family | requests | bytes sent |");
        println!("| --- | --- | --- | --- |");
        for ((kind, family), (requests, bytes)) in &self.s3 {
            println!("| {kind} | {family} | {requests:.1} | {bytes:.0} |");
        }
    }
}

/// How S3 bills a request: `get` (GET and HEAD, a 304 too), `put` (PUT, COPY, POST, LIST),
/// and the client's own requests by presigned URL, whose bytes leave AWS: the archive's GET,
/// and the HEAD the CLI's go-getter sends first (refused, 403: the URL is signed for GET; S3
/// may not bill it, counted anyway).
fn kind(r: &S3Request) -> &'static str {
    let presigned = r.query.contains("X-Amz-Signature");
    match r.method.as_str() {
        "GET" | "HEAD" if presigned => "presigned-get",
        "GET" if r.key.is_none() => "list",
        "GET" if r.if_none_match => "conditional-get",
        "GET" | "HEAD" => "get",
        "PUT" | "POST" | "COPY" => "put",
        _ => "other",
    }
}

/// Whose object it is: a module's, a provider's, or the registry's own (tokens, logs, catalog).
fn family(r: &S3Request) -> &'static str {
    let key = r.key.as_deref().unwrap_or("");
    let key = key.strip_prefix("indexed/").unwrap_or(key);
    if key.starts_with("modules/") {
        "module"
    } else if key.starts_with("providers/") {
        "provider"
    } else {
        "other"
    }
}
