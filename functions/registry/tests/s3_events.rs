//! The indexer function fed a real S3 notification batch (payload as S3 delivers it).

// Test helpers: a failed step is a failed test, with the panic message saying which.
#![allow(clippy::unwrap_used)]

use registry::Config;
use registry::lambda::{IndexerFunction, index};
use registry::storage::MemoryStorage;
use serde_json::{Value, json};

const BATCH: &str = include_str!("events/s3_put_batch.json");

fn invocation(payload: Value) -> lambda_http::LambdaEvent<Value> {
    lambda_http::LambdaEvent::new(payload, lambda_http::Context::default())
}

fn tar_gz(marker: &str) -> Vec<u8> {
    let mut tar = tar::Builder::new(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast()));
    let mut header = tar::Header::new_gnu();
    header.set_size(marker.len() as u64);
    header.set_mode(0o644);
    header.set_cksum();
    tar.append_data(&mut header, "main.tf", marker.as_bytes()).unwrap();
    tar.into_inner().unwrap().finish().unwrap()
}

fn provider_zip() -> Vec<u8> {
    use std::io::Write;
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    w.start_file("terraform-provider-null_v3.2.1+ent", zip::write::SimpleFileOptions::default()).unwrap();
    w.write_all(b"binary").unwrap();
    w.finish().unwrap().into_inner()
}

fn function() -> IndexerFunction<MemoryStorage> {
    let storage = MemoryStorage::new();
    // The state of the bucket after the batch's uploads and delete.
    storage.insert("modules/acme/network/aws/1.2.0.tar.gz", tar_gz("# 1.2.0"));
    storage.insert("modules/acme/network/aws/1.1.0.tar.gz", tar_gz("# 1.1.0"));
    storage.insert("modules/acme/network/v2.0.0.tar.gz", tar_gz("# misplaced"));
    storage.insert(
        "providers/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.1+ent_linux_amd64.zip",
        provider_zip(),
    );
    IndexerFunction { config: Config::new("acme-registry"), storage, own_session: Some("registry-indexer".into()) }
}

#[tokio::test]
async fn a_batch_rebuilds_each_affected_manifest_once() {
    let f = function();
    let answer = index(&f, invocation(serde_json::from_str(BATCH).unwrap())).await.unwrap();
    assert_eq!(
        answer,
        json!({
            "indexed": ["module acme/network/aws", "provider registry.terraform.io/hashicorp/null"],
            "unchanged": [],
            "ignored_keys": 2,
            "rejected_keys": 1
        })
    );
    let record: Value =
        serde_json::from_slice(&f.storage.peek("rejections/modules/acme/network/v2.0.0.tar.gz.json").unwrap()).unwrap();
    assert!(record["reason"].as_str().unwrap().contains("is not a module archive name"), "{record}");
    let manifest: Value =
        serde_json::from_slice(&f.storage.peek("modules/acme/network/aws/manifest.json").unwrap()).unwrap();
    let versions: Vec<&str> =
        manifest["versions"].as_array().unwrap().iter().map(|v| v["version"].as_str().unwrap()).collect();
    assert_eq!(versions, ["1.2.0", "1.1.0"]);
    let index_json: Value =
        serde_json::from_slice(&f.storage.peek("providers/registry.terraform.io/hashicorp/null/index.json").unwrap())
            .unwrap();
    assert_eq!(index_json, json!({"versions": {"3.2.1+ent": {}}}));

    // Redelivery (S3 delivers at least once) changes nothing.
    let again = index(&f, invocation(serde_json::from_str(BATCH).unwrap())).await.unwrap();
    assert_eq!(again["indexed"], json!([]));
    assert_eq!(again["unchanged"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn other_buckets_and_unknown_events_are_ignored() {
    let f = IndexerFunction { config: Config::new("another-bucket"), storage: MemoryStorage::new(), own_session: None };
    let answer = index(&f, invocation(serde_json::from_str(BATCH).unwrap())).await.unwrap();
    assert_eq!(answer["ignored_keys"], 6);
    assert_eq!(f.storage.keys(), Vec::<String>::new());

    let err = index(&f, invocation(json!({"hello": "world"}))).await.unwrap_err();
    assert!(err.to_string().contains("expected S3 notifications"), "{err}");
    let err = index(&f, invocation(json!({"reindex": "some"}))).await.unwrap_err();
    assert!(err.to_string().contains("use \"all\""), "{err}");
}

#[tokio::test]
async fn manual_reindex_all_and_transient_failures() {
    let f = function();
    let answer = index(&f, invocation(json!({"reindex": "all"}))).await.unwrap();
    assert_eq!(answer["indexed"].as_array().unwrap().len(), 2);
    // S3 down: an error, so Lambda retries the event.
    f.storage.unavailable.store(true, std::sync::atomic::Ordering::SeqCst);
    assert!(index(&f, invocation(serde_json::from_str(BATCH).unwrap())).await.is_err());
}
