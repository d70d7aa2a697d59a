//! Scale: a module with 5,000 versions and a provider with 200 versions × 12 platforms. How
//! long a full indexing pass takes, how long publishing one more version takes at that size,
//! the manifest and response sizes, and response latency (wrk, 1 connection) cold and warm.
//!
//! usage: scale [MODULE_VERSIONS] [PROVIDER_VERSIONS] [SECONDS_PER_RUN]

#![allow(clippy::unwrap_used)]

use std::time::Instant;

use registry::index::Indexer;
use registry::storage::Storage;
use registry_bench::{p50_p99_ms, registry};

const PLATFORMS: [&str; 12] = [
    "linux_amd64",
    "linux_arm64",
    "linux_386",
    "linux_arm",
    "darwin_amd64",
    "darwin_arm64",
    "windows_amd64",
    "windows_386",
    "windows_arm64",
    "freebsd_amd64",
    "freebsd_arm",
    "openbsd_amd64",
];

/// The indexer's S3 requests in a publish, by kind.
fn requests(log: &[registry_local::embedded_s3::S3Request]) -> String {
    let by_registry =
        log.iter().filter(|r| r.signer.as_deref() == Some(registry_local::embedded_s3::REGISTRY_ACCESS_KEY));
    let (mut gets, mut lists, mut puts) = (0, 0, 0);
    for r in by_registry {
        match (&r.method, r.key.is_some()) {
            (&http::Method::GET, true) => gets += 1,
            (&http::Method::GET, false) => lists += 1,
            (&http::Method::PUT, _) => puts += 1,
            _ => {}
        }
    }
    format!("{gets} GET, {lists} LIST pages, {puts} PUT")
}

/// Versions of the small provider published into beside the big one.
const SMALL_PROVIDER_VERSIONS: usize = 10;

// Long on purpose: a benchmark reads top to bottom as the table it prints, setup to rows.
#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let module_versions: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(5000);
    let provider_versions: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(200);
    let seconds: u32 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(3);
    let dir = support::TempDir::new("bench-scale");
    let data = dir.path().join("data");
    let bucket = data.join("s3").join(registry_local::BUCKET);

    // Archives written straight into the embedded S3's directory (as a bulk `aws s3 sync`
    // would leave them), then one full indexing pass builds the manifests.
    let archive = support::module_tar_gz(&[("main.tf", "variable \"x\" {}\n")]);
    let modules = bucket.join("modules/acme/big/aws");
    std::fs::create_dir_all(&modules).unwrap();
    for i in 0..module_versions {
        std::fs::write(modules.join(format!("{}.{}.{}.tar.gz", i / 100, (i / 10) % 10, i % 10)), &archive).unwrap();
    }
    // The big provider, and a small one beside it: publishing a zip must cost the same in both.
    for (name, versions) in [("big", provider_versions), ("small", SMALL_PROVIDER_VERSIONS)] {
        let providers = bucket.join(format!("providers/registry.terraform.io/acme/{name}"));
        std::fs::create_dir_all(&providers).unwrap();
        for v in 0..versions {
            let version = format!("1.{}.{}", v / 10, v % 10);
            let zip = support::provider_zip(name, &version, "scale");
            for platform in PLATFORMS {
                let file = format!("terraform-provider-{name}_{version}_{platform}.zip");
                std::fs::write(providers.join(file), &zip).unwrap();
            }
        }
    }

    let warm = registry(&data, &[]).await;
    let indexer =
        Indexer::new(&warm.storage, warm.app.config().limits.clone()).signing_for(warm.app.config().hostname.clone());
    let started = Instant::now();
    indexer.reindex_all().await.unwrap();
    let full_pass = started.elapsed();
    let cold = registry(&data, &[("REGISTRY_MANIFEST_CACHE_BYTES", "0")]).await;

    let size = |key: &str| std::fs::metadata(bucket.join(key)).map(|m| m.len()).unwrap_or(0);
    println!(
        "Full indexing pass over {module_versions} module versions and {} provider zips: {:.1} s\n",
        (provider_versions + SMALL_PROVIDER_VERSIONS) * PLATFORMS.len(),
        full_pass.as_secs_f64()
    );

    // What a module pass costs at that size: mostly listing the prefix. (s3s-fs computes the
    // MD5 of objects it did not receive through PUT while listing them; S3 pages 1,000 keys.)
    let started = Instant::now();
    let listed = warm.storage.list("modules/acme/big/aws/").await.unwrap().len();
    println!("Listing the module's {listed} objects: {:.2} s\n", started.elapsed().as_secs_f64());

    // One more version of each, published as a user would: the upload answers after its pass.
    let publisher = warm.publisher_client();
    let _ = warm.take_s3_requests();
    let started = Instant::now();
    support::upload(publisher.clone(), "modules/acme/big/aws/99.0.0.tar.gz".into(), archive.clone()).await;
    let module_publish = started.elapsed();
    let module_requests = requests(&warm.take_s3_requests());
    let started = Instant::now();
    support::upload(
        publisher.clone(),
        "providers/registry.terraform.io/acme/big/terraform-provider-big_99.0.0_linux_amd64.zip".into(),
        support::provider_zip("big", "99.0.0", "scale"),
    )
    .await;
    let provider_publish = started.elapsed();
    let provider_requests = requests(&warm.take_s3_requests());
    let started = Instant::now();
    support::upload(
        publisher.clone(),
        "providers/registry.terraform.io/acme/small/terraform-provider-small_99.0.0_linux_amd64.zip".into(),
        support::provider_zip("small", "99.0.0", "scale"),
    )
    .await;
    let small_publish = started.elapsed();
    let small_requests = requests(&warm.take_s3_requests());
    println!(
        "Publishing one more version at that size (upload to indexed): module {:.2} s ({module_requests}), \
         provider platform zip {:.2} s ({provider_requests}); the same zip into a provider with \
         {SMALL_PROVIDER_VERSIONS} versions: {:.2} s ({small_requests})\n",
        module_publish.as_secs_f64(),
        provider_publish.as_secs_f64(),
        small_publish.as_secs_f64()
    );

    let mid = module_versions / 2;
    let module_download = format!("/v1/modules/acme/big/aws/{}.{}.{}/download", mid / 100, (mid / 10) % 10, mid % 10);
    let mid = provider_versions / 2;
    let provider_version = format!("1.{}.{}", mid / 10, mid % 10);
    let version_path = format!("/v1/mirror/registry.terraform.io/acme/big/{provider_version}.json");
    let version_key = format!("indexed/providers/registry.terraform.io/acme/big/{provider_version}.json");
    let auth = vec![format!("Authorization: Bearer {}", warm.dev_token)];
    let routes = [
        ("module versions", "/v1/modules/acme/big/aws/versions", "indexed/modules/acme/big/aws/manifest.json"),
        ("module download", module_download.as_str(), "indexed/modules/acme/big/aws/manifest.json"),
        (
            "provider index.json",
            "/v1/mirror/registry.terraform.io/acme/big/index.json",
            "indexed/providers/registry.terraform.io/acme/big/index.json",
        ),
        ("provider VERSION.json (12 platforms)", version_path.as_str(), version_key.as_str()),
    ];
    println!("| route | manifest | response | cold p50 / p99 | warm p50 / p99 |");
    println!("| --- | --- | --- | --- | --- |");
    for (name, path, key) in routes {
        let reply = warm.app.handle(&registry::app::Request::get(path).authorization(Some(&auth[0][15..]))).await;
        assert_eq!(reply.status, 200, "{name}");
        let figures = p50_p99_ms(&[&cold, &warm], path, &auth, seconds);
        println!(
            "| {name} | {:.1} KB | {:.1} KB | {:.2} / {:.2} ms | {:.2} / {:.2} ms |",
            size(key) as f64 / 1e3,
            reply.body.len() as f64 / 1e3,
            figures[0].0,
            figures[0].1,
            figures[1].0,
            figures[1].1
        );
    }
    cold.stop().await;
    warm.stop().await;
}
