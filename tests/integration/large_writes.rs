//! Every object size the registry accepts can be stored within its timeouts, through the SDK
//! client every function uses, against the embedded S3 answering as slowly as S3 in AWS
//! (`S3Latency::aws`: 20 ms median first byte, 85 MB/s a connection): the puller's largest
//! module archive (`UPSTREAM_MODULE_PULL_MAX_BYTES`, 256 MiB, with `put`, as `module_copy`
//! stores a copy) and the largest provider zip (`REGISTRY_MAX_PROVIDER_ZIP_BYTES`, 1 GiB, with
//! `put_file`, as the provider puller stores one). With the fixed 2.5 s attempt of every other
//! request, the first failed (`operation attempt timeout`) and the second could not have
//! started. The air-gap bundle's 1 GiB goes through the same `put` as the first. An
//! integration test, not a benchmark: its verdict, stored or timed out, is what a limit needs,
//! and it must hold on every run (about 20 s of transfer).

// Test helpers: a failed step is a failed test, with the panic message saying which.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use registry::storage::{Precondition, Storage};
use registry_local::LocalOptions;
use registry_local::latency::S3Latency;
use support::TempDir;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_largest_objects_the_registry_accepts_are_stored_within_their_timeouts() {
    let dir = TempDir::new("large-writes");
    let running = registry_local::start(LocalOptions {
        s3_latency: Some(Arc::new(S3Latency::aws())),
        ..LocalOptions::ephemeral(dir.path().join("data"))
    })
    .await
    .unwrap();
    // Keys no notification covers: the write is what is measured, not an indexing pass.
    let module = registry::upstream::UPSTREAM_MODULE_PULL_MAX_BYTES as usize;
    let bytes = bytes::Bytes::from(vec![0x5a; module]);
    let started = std::time::Instant::now();
    running.storage.put("indexed/large/module.tar.gz", bytes, "application/gzip", Precondition::None).await.unwrap();
    eprintln!("{module} bytes stored with put in {:.1} s", started.elapsed().as_secs_f64());

    let zip = registry::index::Limits::default().provider_zip_bytes;
    let file = dir.path().join("provider.zip");
    std::fs::File::create(&file).unwrap().set_len(zip).unwrap();
    let started = std::time::Instant::now();
    running.storage.put_file("indexed/large/provider.zip", &file, "application/zip", Precondition::None).await.unwrap();
    eprintln!("{zip} bytes stored with put_file in {:.1} s", started.elapsed().as_secs_f64());

    let listed = running.storage.list("indexed/large/").await.unwrap();
    let sizes: Vec<u64> = listed.iter().map(|o| o.size).collect();
    assert_eq!(sizes, [module as u64, zip], "{listed:?}");
    running.stop().await;
}
