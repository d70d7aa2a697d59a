//! One real-size provider, side by side: `terraform init` of hashicorp/aws from the local
//! registry as `make dev` runs it (its own process: network mirror over HTTPS, the zip from the
//! embedded S3 by presigned URL), from nginx serving the same bucket directory as static files
//! (network mirror as files), and from a `filesystem_mirror` directory holding the same zip.
//! The zip is built from the real provider binary when `/opt/tf-plugins` has one for this
//! platform (deflated, as releases are), else generated at ZIP_MB of incompressible bytes.
//! Fresh working directory and no plugin cache for every run; the order of the three rotates
//! each round; round 0 warms the page cache and is not counted. Every run is checked: the
//! provider installed and the lock file holding the zip's `h1:` as the filesystem mirror
//! computed it. Then the zip alone from each server (wrk), and the registry's peak memory.
//!
//! usage: big_provider REGISTRY_LOCAL_BINARY [ROUNDS] [ZIP_MB]

#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use registry_bench::{LocalProcess, Nginx, hwm_kib, percentile};

const PLUGINS: &str = "/opt/tf-plugins/registry.terraform.io/hashicorp/aws";
const VERSION: &str = "5.100.0";

// Long on purpose: a benchmark reads top to bottom as the table it prints, setup to rows.
#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let binary = PathBuf::from(args.first().expect("usage: big_provider REGISTRY_LOCAL_BINARY [ROUNDS] [ZIP_MB]"));
    let rounds: usize = args.get(1).map_or(5, |v| v.parse().unwrap());
    let zip_mb: usize = args.get(2).map_or(180, |v| v.parse().unwrap());
    let Some(tf) = support::terraform_or_skip("bench big_provider") else { return };
    let platform = support::this_platform();
    let dir = support::TempDir::new("bench-big-provider");
    let (zip, what) = provider_zip(&platform, zip_mb);
    let file_name = format!("terraform-provider-aws_{VERSION}_{platform}.zip");

    // The registry, and the zip published through its S3 as a user would.
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let local = LocalProcess::start(&binary, &data);
    let key = format!("providers/registry.terraform.io/hashicorp/aws/{file_name}");
    let published = std::time::Instant::now();
    support::upload(local.publisher_client(), key.clone(), zip.clone()).await;
    let publish_time = published.elapsed();

    // The same zip in a filesystem mirror (packed layout), and nginx over the bucket.
    let fs_mirror = dir.path().join("fs-mirror");
    let packed = fs_mirror.join("registry.terraform.io/hashicorp/aws");
    std::fs::create_dir_all(&packed).unwrap();
    std::fs::write(packed.join(&file_name), &zip).unwrap();
    let zip_len = zip.len();
    drop(zip);
    let root = data.join("s3").join(registry_local::BUCKET);
    let nginx = Nginx::start(&data, &root, &dir.path().join("nginx"));

    let config = format!(
        "terraform {{\n  required_providers {{\n    aws = {{\n      source  = \"hashicorp/aws\"\n      \
         version = \"{VERSION}\"\n    }}\n  }}\n}}\n"
    );
    let variants = [
        (
            "filesystem_mirror (same zip)",
            format!(
                "provider_installation {{\n  filesystem_mirror {{\n    path = \"{}\"\n  }}\n}}\n",
                fs_mirror.display()
            ),
        ),
        (
            "nginx (static files, HTTPS)",
            format!(
                "provider_installation {{\n  network_mirror {{\n    url = \"https://127.0.0.1:{}/mirror/\"\n  }}\n}}\n",
                nginx.port
            ),
        ),
        (
            "registry (make dev)",
            format!(
                "provider_installation {{\n  network_mirror {{\n    url = \"https://{}/v1/mirror/\"\n  }}\n}}\n\
                 credentials \"{}\" {{\n  token = \"{}\"\n}}\n",
                local.addr,
                local.addr,
                local.dev_token()
            ),
        ),
    ];

    let ca = data.join("ca.pem");
    let mut times: Vec<Vec<Duration>> = vec![vec![]; variants.len()];
    let mut h1: Option<String> = None;
    for round in 0..=rounds {
        for turn in 0..variants.len() {
            let i = (turn + round) % variants.len();
            let work = dir.path().join(format!("run-{round}-{i}"));
            std::fs::create_dir_all(work.join(".home")).unwrap();
            std::fs::write(work.join("main.tf"), &config).unwrap();
            std::fs::write(work.join("cli.tfrc"), &variants[i].1).unwrap();
            let (elapsed, stdout) = registry_bench::terraform_init(&tf, &work, &ca);
            assert!(stdout.contains(&format!("- Installed hashicorp/aws v{VERSION}")), "{}: {stdout}", variants[i].0);
            let lock = std::fs::read_to_string(work.join(".terraform.lock.hcl")).unwrap();
            // The filesystem mirror's lock holds exactly the h1 the CLI computed from the zip;
            // every other install must record that same hash.
            if i == 0 {
                let hashes: Vec<&str> = lock.split('"').filter(|s| s.starts_with("h1:")).collect();
                assert_eq!(hashes.len(), 1, "{lock}");
                h1.get_or_insert_with(|| hashes[0].to_string());
            }
            if let Some(h1) = &h1 {
                assert!(lock.contains(h1.as_str()), "{}: {h1} not in\n{lock}", variants[i].0);
            }
            if round > 0 {
                times[i].push(elapsed);
            }
            let _ = std::fs::remove_dir_all(&work);
        }
    }

    // The zip alone, from the embedded S3 (plain HTTP, presigned) and from nginx (HTTPS).
    let presign = aws_sdk_s3::presigning::PresigningConfig::expires_in(Duration::from_secs(3600)).unwrap();
    let s3_url = local
        .publisher_client()
        .get_object()
        .bucket(registry_local::BUCKET)
        .key(&key)
        .presigned(presign)
        .await
        .unwrap();
    let from_s3 = registry_bench::wrk(s3_url.uri(), &[], 1, 5);
    let from_nginx = registry_bench::wrk(&format!("https://127.0.0.1:{}/{key}", nginx.port), &[], 1, 5);
    let registry_hwm = hwm_kib(local.pid()).unwrap_or(0);
    drop(nginx);
    drop(local);

    let s = |v: &mut Vec<Duration>, p| percentile(v, p).as_secs_f64();
    let figures: Vec<(f64, f64)> = times.iter_mut().map(|t| (s(t, 50.0), s(t, 100.0))).collect();
    let (fs50, fs_max) = figures[0];
    let (ng50, ng_max) = figures[1];
    println!(
        "{what}: {:.1} MB zip, published (upload + indexing) in {:.1} s\n",
        zip_len as f64 / 1e6,
        publish_time.as_secs_f64()
    );
    println!("| installed from | runs | p50 | max | vs filesystem_mirror p50 / max | vs nginx p50 / max |");
    println!("| --- | --- | --- | --- | --- | --- |");
    for ((name, _), (p50, max)) in variants.iter().zip(&figures) {
        println!(
            "| {name} | {rounds} | {p50:.2} s | {max:.2} s | {:.2}× / {:.2}× | {:.2}× / {:.2}× |",
            p50 / fs50,
            max / fs_max,
            p50 / ng50,
            max / ng_max
        );
    }
    println!(
        "\nThe zip alone, p50 of wrk (1 connection, 5 s): {:.1} ms from the embedded S3 (plain HTTP), \
         {:.1} ms from nginx (HTTPS); registry-local peak RSS (VmHWM) {:.1} MiB",
        from_s3.p50_us / 1e3,
        from_nginx.p50_us / 1e3,
        registry_hwm as f64 / 1024.0
    );
}

/// The real provider from `/opt/tf-plugins` zipped (cached beside the build, keyed by the
/// binary's size and modification time), or a generated one of `zip_mb` MB; and which it is.
fn provider_zip(platform: &str, zip_mb: usize) -> (Vec<u8>, String) {
    let dir = Path::new(PLUGINS).join(VERSION).join(platform);
    let binary = dir.join(format!("terraform-provider-aws_v{VERSION}_x5"));
    let Ok(meta) = std::fs::metadata(&binary) else {
        println!("=== /opt/tf-plugins has no hashicorp/aws {VERSION} for {platform}: a generated zip instead ===\n");
        let zip = registry::testing::sized_provider_zip("aws", VERSION, zip_mb << 20, 7);
        return (zip, format!("generated provider ({zip_mb} MiB of incompressible bytes)"));
    };
    let stamp = meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).unwrap_or_default();
    let cache = Path::new(&std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".into()))
        .join("bench-data")
        .join(format!("aws_{VERSION}_{platform}_{}_{}.zip", meta.len(), stamp.as_secs()));
    let what = format!(
        "hashicorp/aws {VERSION} (the real provider binary, {:.0} MB, from /opt/tf-plugins)",
        meta.len() as f64 / 1e6
    );
    if let Ok(zip) = std::fs::read(&cache) {
        return (zip, what);
    }
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let exec = zip::write::SimpleFileOptions::default().unix_permissions(0o755).large_file(true);
    w.start_file(binary.file_name().unwrap().to_string_lossy(), exec).unwrap();
    std::io::copy(&mut std::fs::File::open(&binary).unwrap(), &mut w).unwrap();
    if let Ok(license) = std::fs::read(dir.join("LICENSE.txt")) {
        w.start_file("LICENSE.txt", zip::write::SimpleFileOptions::default()).unwrap();
        w.write_all(&license).unwrap();
    }
    let zip = w.finish().unwrap().into_inner();
    std::fs::create_dir_all(cache.parent().unwrap()).unwrap();
    std::fs::write(&cache, &zip).unwrap();
    (zip, what)
}
