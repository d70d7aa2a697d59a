//! The real client, side by side: `terraform init` of one configuration with 10 modules and 4
//! providers, through the registry (module protocol + network mirror, archives from S3 by
//! presigned URL), and through nginx serving the same bucket directory as static files (the
//! mirror as files: the indexer's documents under `indexed/providers/` and the zips under
//! `providers/`, joined at `/mirror/`; modules by direct archive URL). Fresh working directory
//! and no plugin cache for every run; the two alternate, so noise hits both alike.
//!
//! usage: init [ROUNDS] [PROVIDER_ZIP_MB]

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use registry_bench::{percentile, registry};

const MODULES: usize = 10;
const PROVIDERS: usize = 4;

// Long on purpose: a benchmark reads top to bottom as the table it prints, setup to rows.
#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let rounds: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(5);
    let zip_mb: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(4);
    let Some(tf) = support::terraform_or_skip("bench init") else { return };
    let dir = support::TempDir::new("bench-init");
    let data = dir.path().join("data");
    let local = registry(&data, &[]).await;
    let publisher = local.publisher_client();

    // 10 modules, 4 providers with 4 platforms each (the CLI fetches only its own).
    for m in 0..MODULES {
        let files =
            [("main.tf", format!("variable \"in\" {{ default = {m} }}\noutput \"out\" {{ value = var.in }}\n"))];
        let files: Vec<(&str, &str)> = files.iter().map(|(n, c)| (*n, c.as_str())).collect();
        support::upload(
            publisher.clone(),
            format!("modules/acme/m{m}/aws/1.0.0.tar.gz"),
            support::module_tar_gz(&files),
        )
        .await;
    }
    let here = support::this_platform();
    let mut platforms = vec![here.clone()];
    platforms
        .extend(["linux_arm64", "darwin_arm64", "windows_amd64"].iter().map(|p| p.to_string()).filter(|p| *p != here));
    for p in 0..PROVIDERS {
        for platform in platforms.iter().take(4) {
            let zip = registry::testing::sized_provider_zip(&format!("p{p}"), "1.0.0", zip_mb << 20, p as u8);
            let key = format!("providers/example.com/acme/p{p}/terraform-provider-p{p}_1.0.0_{platform}.zip");
            support::upload(publisher.clone(), key, zip).await;
        }
    }

    // nginx over the same directory, HTTPS with a certificate from the same CA.
    let root = local.data_dir.join("s3").join(registry_local::BUCKET);
    let nginx = registry_bench::Nginx::start(&local.data_dir, &root, &dir.path().join("nginx"));
    let port = nginx.port;

    // The two configurations and CLI configs.
    let host = local.registry_addr.to_string();
    let [(via_registry, registry_rc), (via_nginx, nginx_rc)] =
        registry_bench::init_configurations(&host, &local.dev_token, port, MODULES, PROVIDERS);

    let mut times: [Vec<Duration>; 2] = [vec![], vec![]];
    for round in 0..rounds + 1 {
        for (i, (config, rc)) in [(&via_registry, &registry_rc), (&via_nginx, &nginx_rc)].into_iter().enumerate() {
            let work = dir.path().join(format!("run-{round}-{i}"));
            std::fs::create_dir_all(work.join(".home")).unwrap();
            std::fs::write(work.join("main.tf"), config).unwrap();
            std::fs::write(work.join("cli.tfrc"), rc).unwrap();
            let elapsed = registry_bench::checked_init(&tf, &work, &local.data_dir.join("ca.pem"), MODULES, PROVIDERS);
            // Round 0 warms the page cache and both servers; it is not counted.
            if round > 0 {
                times[i].push(elapsed);
            }
            let _ = std::fs::remove_dir_all(&work);
        }
    }
    // Where the difference comes from: the same 4 MB zip fetched from each server (wrk, one
    // connection): the registry's archives come from the embedded S3, which in AWS is S3.
    let zip_key = format!("providers/example.com/acme/p0/terraform-provider-p0_1.0.0_{here}.zip");
    let presign = aws_sdk_s3::presigning::PresigningConfig::expires_in(Duration::from_secs(3600)).unwrap();
    let s3_url = publisher.get_object().bucket(registry_local::BUCKET).key(&zip_key).presigned(presign).await.unwrap();
    let from_s3 = registry_bench::wrk(s3_url.uri(), &[], 1, 3);
    let from_nginx = registry_bench::wrk(&format!("https://127.0.0.1:{port}/{zip_key}"), &[], 1, 3);
    drop(nginx);
    let s = |v: &mut Vec<Duration>, p| percentile(v, p).as_secs_f64();
    let (r50, r_max) = (s(&mut times[0], 50.0), s(&mut times[0], 100.0));
    let (n50, n_max) = (s(&mut times[1], 50.0), s(&mut times[1], 100.0));
    println!("| served by | runs | p50 | max | ratio p50 / max |");
    println!("| --- | --- | --- | --- | --- |");
    println!("| nginx (static files) | {rounds} | {n50:.2} s | {n_max:.2} s | 1 |");
    println!("| registry | {rounds} | {r50:.2} s | {r_max:.2} s | {:.2}× / {:.2}× |", r50 / n50, r_max / n_max);
    println!("\n{MODULES} modules, {PROVIDERS} providers ({} MB zip each, 4 platforms in the mirror)", zip_mb);
    println!(
        "One provider zip, p50: {:.1} ms from the embedded S3 (plain HTTP), {:.1} ms from nginx (HTTPS)",
        from_s3.p50_us / 1e3,
        from_nginx.p50_us / 1e3
    );
    local.stop().await;
}
