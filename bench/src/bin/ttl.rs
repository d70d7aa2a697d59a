//! The manifest TTL's trade-off, measured with S3's latency put back in: every request to the
//! embedded S3 answers LATENCY_MS late (AWS S3's first byte for small objects is tens of ms;
//! loopback's is a fraction of one). Two registries over the same bucket directory: one with
//! `REGISTRY_MANIFEST_CACHE_SECONDS=0` (one conditional GET per request) and one with a TTL
//! (infra's default, 5 s). For each: the p50 of one request (wrk), `terraform init` of 10 modules and 4
//! providers (alternating, fresh directory, no plugin cache; the CLI's archive downloads pay
//! the same latency), and how long after a publish the new version is listed (the TTL's
//! cost: with 0 it is listed when the upload answers).
//!
//! usage: ttl [ROUNDS] [LATENCY_MS] [TTL_SECONDS]

#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use registry_bench::{percentile, registry};
use registry_local::faults::{Fault, Rule};

const MODULES: usize = 10;
const PROVIDERS: usize = 4;

// Long on purpose: a benchmark reads top to bottom as the table it prints, setup to rows.
#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |i: usize, default: u64| args.get(i).map_or(default, |v| v.parse().unwrap());
    let (rounds, latency_ms, ttl) = (number(0, 7) as usize, number(1, 20), number(2, 5));
    let Some(tf) = support::terraform_or_skip("bench ttl") else { return };
    let dir = support::TempDir::new("bench-ttl");
    let data = dir.path().join("data");
    let revalidating = registry(&data, &[]).await;
    let publisher = revalidating.publisher_client();
    for m in 0..MODULES {
        let main = format!("output \"m\" {{ value = {m} }}\n");
        support::upload(
            publisher.clone(),
            format!("modules/acme/m{m}/aws/1.0.0.tar.gz"),
            support::module_tar_gz(&[("main.tf", &main)]),
        )
        .await;
    }
    let platform = support::this_platform();
    for p in 0..PROVIDERS {
        let zip = registry::testing::sized_provider_zip(&format!("p{p}"), "1.0.0", 64 << 10, p as u8);
        let key = format!("providers/example.com/acme/p{p}/terraform-provider-p{p}_1.0.0_{platform}.zip");
        support::upload(publisher.clone(), key, zip).await;
    }
    let ttl_setting = ttl.to_string();
    let cached = registry(&data, &[("REGISTRY_MANIFEST_CACHE_SECONDS", &ttl_setting)]).await;
    let latency = Duration::from_millis(latency_ms);
    for running in [&revalidating, &cached] {
        running.faults.add(Rule::always("", Fault::Slow(latency)));
    }
    let names = [
        "TTL 0: revalidate every request (the library's and local default)",
        &format!("TTL {ttl} s (infra's default: 5)"),
    ];
    let servers = [&revalidating, &cached];

    // One request, warm: the module's version list, wrk with one connection, median of 3 runs.
    let auth = [format!("Authorization: Bearer {}", revalidating.dev_token)];
    let per_request = registry_bench::p50_p99_ms(&servers, "/v1/modules/acme/m0/aws/versions", &auth, 3);

    // terraform init through each.
    let configs: Vec<(String, String)> = servers
        .iter()
        .map(|running| {
            let host = running.registry_addr.to_string();
            let modules: String = (0..MODULES)
                .map(|m| {
                    format!("module \"m{m}\" {{\n  source  = \"{host}/acme/m{m}/aws\"\n  version = \"1.0.0\"\n}}\n")
                })
                .collect();
            let providers: String =
                (0..PROVIDERS).map(|p| format!("    p{p} = {{ source = \"example.com/acme/p{p}\" }}\n")).collect();
            let main = format!("terraform {{\n  required_providers {{\n{providers}  }}\n}}\n{modules}");
            let rc = format!(
                "provider_installation {{\n  network_mirror {{\n    url = \"https://{host}/v1/mirror/\"\n  }}\n}}\n\
                 credentials \"{host}\" {{\n  token = \"{}\"\n}}\n",
                running.dev_token
            );
            (main, rc)
        })
        .collect();
    let mut times: [Vec<Duration>; 2] = [vec![], vec![]];
    for round in 0..=rounds {
        for turn in 0..2 {
            let i = (turn + round) % 2;
            let work = dir.path().join(format!("run-{round}-{i}"));
            std::fs::create_dir_all(work.join(".home")).unwrap();
            std::fs::write(work.join("main.tf"), &configs[i].0).unwrap();
            std::fs::write(work.join("cli.tfrc"), &configs[i].1).unwrap();
            let (elapsed, stdout) = registry_bench::terraform_init(&tf, &work, &data.join("ca.pem"));
            assert_eq!(stdout.matches("- Installed example.com/acme/").count(), PROVIDERS, "{stdout}");
            if round > 0 {
                times[i].push(elapsed);
            }
            let _ = std::fs::remove_dir_all(&work);
        }
    }

    // Publish visibility: a new version uploaded (the PUT answers after indexing), then each
    // registry asked every 50 ms until it lists it. Both were read just before, as a busy
    // registry is.
    let mut visible: [Vec<Duration>; 2] = [vec![], vec![]];
    let client = revalidating.publisher_client();
    for n in 0..3 {
        let version = format!("1.1.{n}");
        for running in servers {
            list(running, "acme/m9").await;
        }
        support::upload(
            client.clone(),
            format!("modules/acme/m9/aws/{version}.tar.gz"),
            support::module_tar_gz(&[("main.tf", "#")]),
        )
        .await;
        let published = Instant::now();
        let mut waiting = [true, true];
        while waiting.iter().any(|w| *w) {
            for (i, running) in servers.iter().enumerate() {
                if waiting[i] && list(running, "acme/m9").await.contains(&format!("\"{version}\"")) {
                    visible[i].push(published.elapsed());
                    waiting[i] = false;
                }
            }
            assert!(published.elapsed() < Duration::from_secs(ttl + 30), "{version} never listed");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // Not in step with the TTL's expiry from one publish to the next.
        tokio::time::sleep(Duration::from_millis(1700)).await;
    }

    println!(
        "Every embedded S3 request answered {latency_ms} ms late (as S3's first byte in AWS, order of magnitude).\n"
    );
    println!(
        "| manifest cache | one request p50 / p99 (versions, warm) | terraform init p50 / max ({rounds} runs) | new version listed after (max of 3) |"
    );
    println!("| --- | --- | --- | --- |");
    for i in 0..2 {
        let (p50, max) =
            (percentile(&mut times[i], 50.0).as_secs_f64(), percentile(&mut times[i], 100.0).as_secs_f64());
        let shown = percentile(&mut visible[i], 100.0).as_secs_f64();
        println!(
            "| {} | {:.2} / {:.2} ms | {p50:.2} / {max:.2} s | {shown:.2} s |",
            names[i], per_request[i].0, per_request[i].1
        );
    }
    let (a, b) = (percentile(&mut times[0], 50.0).as_secs_f64(), percentile(&mut times[1], 50.0).as_secs_f64());
    println!("\nterraform init with the TTL: {:.2}× the default's p50", b / a);
    cached.stop().await;
    revalidating.stop().await;
}

/// The module's version list from `running` (plain HTTP), as text.
async fn list(running: &registry_local::Running, module: &str) -> String {
    use http_body_util::{BodyExt, Empty};
    let client: Client<_, Empty<bytes::Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let url = format!("http://{}/v1/modules/{module}/aws/versions", running.http_addr.unwrap());
    let request = http::Request::get(url)
        .header(http::header::AUTHORIZATION, format!("Bearer {}", running.dev_token))
        .body(Empty::new())
        .unwrap();
    let response = client.request(request).await.unwrap();
    assert_eq!(response.status(), 200);
    String::from_utf8_lossy(&response.into_body().collect().await.unwrap().to_bytes()).into_owned()
}
