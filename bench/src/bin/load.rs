//! Load held while publishing: `registry-local serve` as its own process (so its memory is its
//! own), CONNECTIONS keep-alive HTTPS connections for SECONDS reading a module's versions and
//! download and a provider's index.json and VERSION.json, while MODULES module versions and
//! PROVIDERS provider zips are published beside them through the embedded S3 (each PUT runs
//! its indexing pass). Prints a markdown table; exits non-zero on any non-2xx answer, any
//! socket error, or a published version missing from the lists at the end.
//!
//! usage: load REGISTRY_LOCAL_BINARY [CONNECTIONS SECONDS MODULES PROVIDERS]

// Benchmark tooling: a failed step ends the run with a message saying which.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use registry_bench::{LocalProcess, hwm_kib, rss_kib};
use support::load::{self, LoadReport};

const PROVIDER: &str = "providers/registry.terraform.io/hashicorp/null";

// Long on purpose: a benchmark reads top to bottom as the table it prints, setup to rows.
#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let binary =
        PathBuf::from(args.first().expect("usage: load REGISTRY_LOCAL_BINARY [CONNECTIONS SECONDS MODULES PROVIDERS]"));
    let number = |i: usize, default: u64| args.get(i).map_or(default, |v| v.parse().unwrap());
    let (connections, seconds) = (number(1, 256) as usize, number(2, 60));
    let (modules, providers) = (number(3, 100), number(4, 20));

    let dir = support::TempDir::new("load-bench");
    let server = LocalProcess::start(&binary, dir.path());
    let addr = server.addr;
    let token = format!("Bearer {}", server.dev_token());
    let client = server.publisher_client();

    // What the readers read exists before they start; everything else is published under load.
    let upload = |key: String, bytes: Vec<u8>| support::upload(client.clone(), key, bytes);
    upload("modules/acme/vpc/aws/1.0.0.tar.gz".into(), support::module_tar_gz(&[("main.tf", "# 1.0.0")])).await;
    upload(
        format!("{PROVIDER}/terraform-provider-null_3.2.1_linux_amd64.zip"),
        support::provider_zip("null", "3.2.1", "load"),
    )
    .await;
    let paths: Vec<String> = [
        "/v1/modules/acme/vpc/aws/versions",
        "/v1/modules/acme/vpc/aws/1.0.0/download",
        "/v1/mirror/registry.terraform.io/hashicorp/null/index.json",
        "/v1/mirror/registry.terraform.io/hashicorp/null/3.2.1.json",
    ]
    .map(String::from)
    .to_vec();
    let idle_rss = rss_kib(server.pid()).unwrap_or(0);

    // Memory, sampled while the load runs (VmHWM at the end is the peak of the whole life).
    let pid = server.pid();
    let sampling = Arc::new(AtomicU64::new(0));
    let sampler = tokio::spawn({
        let peak = sampling.clone();
        async move {
            while let Some(kib) = rss_kib(pid) {
                peak.fetch_max(kib, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    });

    // Publishes started over the first half of the run, up to 16 in flight; each counts when
    // its PUT has answered (locally that is after its indexing pass).
    let started = Instant::now();
    let load_ends = started + Duration::from_secs(seconds);
    let published_under_load = Arc::new(AtomicU64::new(0));
    let publisher = tokio::spawn({
        let (client, counted) = (client.clone(), published_under_load.clone());
        async move {
            let total = modules + providers;
            let spacing = Duration::from_secs(seconds) / 2 / u32::try_from(total.max(1)).unwrap();
            let gate = Arc::new(tokio::sync::Semaphore::new(16));
            let mut uploads = tokio::task::JoinSet::new();
            for i in 0..total {
                let permit = gate.clone().acquire_owned().await.unwrap();
                // Provider zips spread evenly among the module versions.
                let (key, bytes) = if (i + 1) * providers / total > i * providers / total {
                    let v = format!("3.3.{}", i * providers / total);
                    (
                        format!("{PROVIDER}/terraform-provider-null_{v}_linux_amd64.zip"),
                        support::provider_zip("null", &v, "load"),
                    )
                } else {
                    (
                        format!("modules/acme/vpc/aws/2.{i}.0.tar.gz"),
                        support::module_tar_gz(&[("main.tf", &format!("# {i}"))]),
                    )
                };
                let (client, counted) = (client.clone(), counted.clone());
                uploads.spawn(async move {
                    support::upload(client, key, bytes).await;
                    if Instant::now() < load_ends {
                        counted.fetch_add(1, Ordering::Relaxed);
                    }
                    drop(permit);
                });
                tokio::time::sleep(spacing).await;
            }
            while let Some(done) = uploads.join_next().await {
                done.unwrap();
            }
            started.elapsed()
        }
    });

    let tls = load::tls_client(&dir.path().join("ca.pem"));
    let report =
        load::run(addr, tls, &token, &paths, connections, load::Until::Elapsed(Duration::from_secs(seconds))).await;
    let published_in = publisher.await.unwrap();
    let peak_under_load = sampling.load(Ordering::Relaxed);
    let hwm = hwm_kib(pid).unwrap_or(0);

    // Every version published is listed (read through the registry, as the CLI would).
    let (module_count, provider_count) = listed(&dir, addr, &token).await;

    drop(server);
    sampler.abort();

    print_report(&report, connections, &paths);
    println!();
    println!("| registry-local (own process) | |");
    println!("|---|---:|");
    println!("| RSS before load | {:.1} MiB |", idle_rss as f64 / 1024.0);
    println!("| RSS peak under load (sampled every 200 ms) | {:.1} MiB |", peak_under_load as f64 / 1024.0);
    println!("| VmHWM (peak of the process's life) | {:.1} MiB |", hwm as f64 / 1024.0);
    println!(
        "| published | {modules} module versions + {providers} provider zips, the last {:.1} s after the start; {} of them while the load ran |",
        published_in.as_secs_f64(),
        published_under_load.load(Ordering::Relaxed)
    );
    println!("| listed at the end | {module_count} module versions, {provider_count} provider versions |");

    let mut failed = Vec::new();
    if report.non_2xx() > 0 || report.socket_errors > 0 {
        failed.push(format!(
            "{} non-2xx, {} socket errors: {:?}",
            report.non_2xx(),
            report.socket_errors,
            report.failures
        ));
    }
    if (module_count, provider_count) != (modules + 1, providers + 1) {
        failed.push(format!("expected {} module and {} provider versions listed", modules + 1, providers + 1));
    }
    if !failed.is_empty() {
        eprintln!("load: FAILED: {}", failed.join("; "));
        std::process::exit(1);
    }
}

/// How many versions the registry lists for the module and the provider.
async fn listed(dir: &support::TempDir, addr: SocketAddr, token: &str) -> (u64, u64) {
    let tls = load::tls_client(&dir.path().join("ca.pem"));
    let body = |path: &'static str| {
        let (tls, token) = (tls.clone(), token.to_string());
        async move {
            let (status, body) = load::get(addr, tls, &token, path).await.unwrap();
            assert_eq!(status, 200, "{path}: {}", String::from_utf8_lossy(&body));
            serde_json::from_slice::<serde_json::Value>(&body).unwrap()
        }
    };
    let modules = body("/v1/modules/acme/vpc/aws/versions").await;
    let index = body("/v1/mirror/registry.terraform.io/hashicorp/null/index.json").await;
    let count = |v: Option<usize>| v.unwrap_or(0) as u64;
    (
        count(modules["modules"][0]["versions"].as_array().map(Vec::len)),
        count(index["versions"].as_object().map(|v| v.len())),
    )
}

fn print_report(report: &LoadReport, connections: usize, paths: &[String]) {
    println!(
        "{connections} HTTPS connections for {:.0} s: {} answers ({:.0}/s), statuses {:?}, {} socket errors",
        report.seconds,
        report.requests(),
        report.requests() as f64 / report.seconds,
        report.statuses,
        report.socket_errors
    );
    println!();
    println!("| endpoint | answers | p50 ms | p99 ms | max ms |");
    println!("|---|---:|---:|---:|---:|");
    let row = |name: &str, latencies: &[u32]| {
        println!(
            "| {name} | {} | {:.2} | {:.2} | {:.2} |",
            latencies.len(),
            load::percentile_ms(latencies, 50.0),
            load::percentile_ms(latencies, 99.0),
            load::percentile_ms(latencies, 100.0)
        );
    };
    for path in paths {
        row(&format!("`{path}`"), report.by_path.get(path).map_or(&[][..], Vec::as_slice));
    }
    row("all", &report.latencies_us);
}
