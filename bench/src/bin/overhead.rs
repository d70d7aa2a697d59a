//! Request overhead, side by side in one run: each registry endpoint against a raw GET of the
//! manifest it reads, from the same embedded S3, with wrk, sequential (1 connection) and
//! concurrent (16). The registry runs three ways over the same data: manifest cache off
//! ("cold": every request reads the manifest), on (default: one conditional GET, 304), and
//! on with a 10 s TTL (no S3 request while fresh). Rounds interleave the variants so machine
//! noise hits all of them alike; each figure is the median over rounds.
//!
//! usage: overhead [SECONDS_PER_RUN] [ROUNDS]   (plain HTTP on loopback for every side)

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use aws_sdk_s3::presigning::PresigningConfig;
use registry_bench::{Run, median, registry, wrk};
use registry_local::Running;

const MODULE_VERSIONS: usize = 20;
const PROVIDER_VERSIONS: usize = 5;
const PLATFORMS: [&str; 4] = ["linux_amd64", "linux_arm64", "darwin_arm64", "windows_amd64"];

// Long on purpose: a benchmark reads top to bottom as the table it prints, setup to rows.
#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let seconds: u32 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(3);
    let rounds: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(3);
    let dir = support::TempDir::new("bench-overhead");
    let data = dir.path().join("data");

    // Publish through the first instance (its indexing hook writes the manifests).
    let cold = registry(&data, &[("REGISTRY_MANIFEST_CACHE_BYTES", "0")]).await;
    let publisher = cold.publisher_client();
    for i in 0..MODULE_VERSIONS {
        let key = format!("modules/acme/vpc/aws/1.{i}.0.tar.gz");
        support::upload(publisher.clone(), key, support::module_tar_gz(&[("main.tf", &format!("# {i}\n"))])).await;
    }
    for v in 0..PROVIDER_VERSIONS {
        for platform in PLATFORMS {
            let version = format!("3.{v}.0");
            let key = format!(
                "providers/registry.terraform.io/hashicorp/null/terraform-provider-null_{version}_{platform}.zip"
            );
            support::upload(publisher.clone(), key, support::provider_zip("null", &version, platform)).await;
        }
    }
    let warm = registry(&data, &[]).await;
    let ttl = registry(&data, &[("REGISTRY_MANIFEST_CACHE_SECONDS", "10")]).await;
    let variants: [(&str, &Running); 3] = [("cold", &cold), ("warm", &warm), ("ttl 10 s", &ttl)];

    let endpoints = [
        ("versions", "/v1/modules/acme/vpc/aws/versions", "indexed/modules/acme/vpc/aws/manifest.json"),
        ("download", "/v1/modules/acme/vpc/aws/1.7.0/download", "indexed/modules/acme/vpc/aws/manifest.json"),
        (
            "index.json",
            "/v1/mirror/registry.terraform.io/hashicorp/null/index.json",
            "indexed/providers/registry.terraform.io/hashicorp/null/index.json",
        ),
        (
            "VERSION.json",
            "/v1/mirror/registry.terraform.io/hashicorp/null/3.2.0.json",
            "indexed/providers/registry.terraform.io/hashicorp/null/3.2.0.json",
        ),
    ];
    let auth = vec![format!("Authorization: Bearer {}", cold.dev_token)];
    let presign = PresigningConfig::expires_in(Duration::from_secs(3600)).unwrap();

    println!(
        "| endpoint | conns | raw S3 GET p50 / p99 | registry | p50 | p99 | ratio p50 / p99 | S3 requests per request |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    for (name, path, manifest_key) in endpoints {
        let raw_url = publisher
            .get_object()
            .bucket(registry_local::BUCKET)
            .key(manifest_key)
            .presigned(presign.clone())
            .await
            .unwrap()
            .uri()
            .to_string();
        for connections in [1u32, 16] {
            let mut raw: Vec<Run> = vec![];
            let mut measured: Vec<Vec<Run>> = vec![vec![]; variants.len()];
            let mut s3_per_request = vec![0.0f64; variants.len()];
            for _ in 0..rounds {
                raw.push(check(wrk(&raw_url, &[], connections, seconds), name));
                for (i, (_, running)) in variants.iter().enumerate() {
                    let url = format!("http://{}{path}", running.http_addr.unwrap());
                    let _ = running.take_s3_requests();
                    let run = check(wrk(&url, &auth, connections, seconds), name);
                    let reads = running
                        .take_s3_requests()
                        .iter()
                        .filter(|r| r.signer.as_deref() == Some(registry_local::embedded_s3::REGISTRY_ACCESS_KEY))
                        .count();
                    s3_per_request[i] = reads as f64 / run.requests.max(1) as f64;
                    measured[i].push(run);
                }
            }
            let raw_p50 = median(raw.iter().map(|r| r.p50_us).collect());
            let raw_p99 = median(raw.iter().map(|r| r.p99_us).collect());
            for (i, (variant, _)) in variants.iter().enumerate() {
                let p50 = median(measured[i].iter().map(|r| r.p50_us).collect());
                let p99 = median(measured[i].iter().map(|r| r.p99_us).collect());
                println!(
                    "| {name} | {connections} | {raw_p50:.0} / {raw_p99:.0} µs | {variant} | {p50:.0} µs | {p99:.0} µs | {:.2}× / {:.2}× | {:.2} |",
                    p50 / raw_p50,
                    p99 / raw_p99,
                    s3_per_request[i]
                );
            }
        }
    }
    cold.stop().await;
    warm.stop().await;
    ttl.stop().await;
}

fn check(run: Run, name: &str) -> Run {
    assert!(run.non_2xx == 0 && run.requests > 0, "{name}: {run:?}");
    run
}
