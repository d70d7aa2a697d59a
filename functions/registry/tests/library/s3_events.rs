//! The indexer function fed a real S3 notification batch (payload as S3 delivers it).

// Test helpers: a failed step is a failed test, with the panic message saying which.
#![allow(clippy::unwrap_used)]

use registry::Config;
use registry::lambda::IndexerState;
use registry::lambda::indexer::index_payload as index;
use registry::storage::MemoryStorage;
use registry::testing::{module_tar_gz, provider_zip};
use serde_json::{Value, json};

const BATCH: &str = include_str!("../events/s3_put_batch.json");

fn tar_gz(marker: &str) -> Vec<u8> {
    module_tar_gz(&[("main.tf", marker)])
}

fn function() -> IndexerState<MemoryStorage> {
    let storage = MemoryStorage::new();
    // The state of the bucket after the batch's uploads and delete.
    storage.insert("modules/acme/network/aws/1.2.0.tar.gz", tar_gz("# 1.2.0"));
    storage.insert("modules/acme/network/aws/1.1.0.tar.gz", tar_gz("# 1.1.0"));
    storage.insert("modules/acme/network/v2.0.0.tar.gz", tar_gz("# misplaced"));
    storage.insert(
        "providers/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.1+ent_linux_amd64.zip",
        provider_zip("null", "3.2.1+ent", "batch"),
    );
    storage.insert(
        "providers/example.com/acme/widget/terraform-provider-widget_1.0.0_linux_amd64.zip",
        provider_zip("widget", "1.0.0", "batch"),
    );
    IndexerState { config: Config::new("acme-registry"), storage }
}

#[tokio::test]
async fn a_batch_rebuilds_each_affected_manifest_once() {
    let f = function();
    let answer = index(&f, serde_json::from_str(BATCH).unwrap()).await.unwrap();
    assert_eq!(
        answer,
        json!({
            // The widget upload's principal ends in the indexer's function name: it is indexed
            // all the same (a publisher cannot choose a session name to skip the checks).
            "indexed": [
                "module acme/network/aws",
                "provider example.com/acme/widget 1.0.0",
                "provider registry.terraform.io/hashicorp/null 3.2.1+ent"
            ],
            "unchanged": [],
            "ignored_keys": 1,
            "rejected_keys": 1
        })
    );
    let record: Value =
        serde_json::from_slice(&f.storage.peek("rejections/modules/acme/network/v2.0.0.tar.gz.json").unwrap()).unwrap();
    assert!(record["reason"].as_str().unwrap().contains("is not a module archive name"), "{record}");
    let manifest: Value =
        serde_json::from_slice(&f.storage.peek("indexed/modules/acme/network/aws/manifest.json").unwrap()).unwrap();
    let versions: Vec<&str> =
        manifest["versions"].as_array().unwrap().iter().map(|v| v["version"].as_str().unwrap()).collect();
    assert_eq!(versions, ["1.2.0", "1.1.0"]);
    let index_json: Value = serde_json::from_slice(
        &f.storage.peek("indexed/providers/registry.terraform.io/hashicorp/null/index.json").unwrap(),
    )
    .unwrap();
    assert_eq!(index_json, json!({"versions": {"3.2.1+ent": {"oci": true}}}));

    // Redelivery (S3 delivers at least once) changes nothing.
    let again = index(&f, serde_json::from_str(BATCH).unwrap()).await.unwrap();
    assert_eq!(again["indexed"], json!([]));
    assert_eq!(again["unchanged"].as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn other_buckets_and_unknown_events_are_ignored() {
    let f = IndexerState { config: Config::new("another-bucket"), storage: MemoryStorage::new() };
    let answer = index(&f, serde_json::from_str(BATCH).unwrap()).await.unwrap();
    assert_eq!(answer["ignored_keys"], 6);
    assert_eq!(f.storage.keys(), Vec::<String>::new());

    let err = index(&f, json!({"hello": "world"})).await.unwrap_err();
    assert!(err.to_string().contains("expected S3 notifications"), "{err}");
    let err = index(&f, json!({"reindex": "some"})).await.unwrap_err();
    assert!(err.to_string().contains("use \"all\""), "{err}");
    // The maintenance commands' refusals, word for word as operators see them.
    let err = index(&f, json!({"audit": "some"})).await.unwrap_err();
    assert_eq!(err.to_string(), r#"bad request: unknown audit request "some"; use "all""#);
    let err = index(&f, json!({"reindex": 5})).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"expected S3 notifications or {"reindex": "all"}: data did not match any variant of untagged enum IndexerEvent"#
    );
}

#[tokio::test]
async fn manual_reindex_all_and_transient_failures() {
    let f = function();
    let answer = index(&f, json!({"reindex": "all"})).await.unwrap();
    assert_eq!(answer["indexed"].as_array().unwrap().len(), 3);
    // One owner failing: the others are indexed, and the answer is an error naming it.
    f.storage.insert("modules/acme/second/aws/1.0.0.tar.gz", tar_gz("# second"));
    f.storage.deny("indexed/modules/acme/network/aws/manifest.json");
    let err = index(&f, json!({"reindex": "all"})).await.unwrap_err().to_string();
    assert!(err.contains("1 pass(es) failed") && err.contains("module acme/network/aws"), "{err}");
    assert!(f.storage.peek("indexed/modules/acme/second/aws/manifest.json").is_some());
    // S3 down: an error, so Lambda retries the event.
    f.storage.unavailable.store(true, std::sync::atomic::Ordering::SeqCst);
    assert!(index(&f, serde_json::from_str(BATCH).unwrap()).await.is_err());
}

/// One S3 notification: the batch's first record with another event name and key.
fn record(event_name: &str, key: &str) -> Value {
    let mut batch: Value = serde_json::from_str(BATCH).unwrap();
    let mut record = batch["Records"][0].take();
    record["eventName"] = event_name.into();
    record["s3"]["object"]["key"] = key.into();
    json!({"Records": [record]})
}

/// docs/OPERATIONS.md, "Restore a deleted or overwritten object": a deleted archive (a delete
/// marker) leaves the manifest; removing the delete marker (S3 then notifies
/// `ObjectRemoved:Delete`) or copying the old version back (`ObjectCreated:Copy`) puts the
/// same bytes back, and whichever event arrives, the indexer's pass reads what is present and
/// publishes the version again, with the same SHA-256.
#[tokio::test]
async fn restoring_a_deleted_archive_publishes_it_again() {
    const KEY: &str = "modules/acme/network/aws/1.2.0.tar.gz";
    const MANIFEST: &str = "indexed/modules/acme/network/aws/manifest.json";
    let f = IndexerState { config: Config::new("acme-registry"), storage: MemoryStorage::versioned() };
    let sha256 = |f: &IndexerState<MemoryStorage>| -> Vec<String> {
        let manifest: Value = serde_json::from_slice(&f.storage.peek(MANIFEST).unwrap()).unwrap();
        manifest["versions"].as_array().unwrap().iter().map(|v| v["sha256"].as_str().unwrap().to_string()).collect()
    };
    f.storage.insert(KEY, tar_gz("# 1.2.0"));
    index(&f, record("ObjectCreated:Put", KEY)).await.unwrap();
    let published = sha256(&f);
    assert_eq!(published.len(), 1);

    f.storage.remove(KEY);
    index(&f, record("ObjectRemoved:DeleteMarkerCreated", KEY)).await.unwrap();
    assert_eq!(sha256(&f), Vec::<String>::new(), "deleted: the version left the manifest");

    for restored_by in ["ObjectRemoved:Delete", "ObjectCreated:Copy"] {
        f.storage.remove(KEY);
        index(&f, record("ObjectRemoved:DeleteMarkerCreated", KEY)).await.unwrap();
        f.storage.insert(KEY, tar_gz("# 1.2.0"));
        let answer = index(&f, record(restored_by, KEY)).await.unwrap();
        assert_eq!(answer["indexed"], json!(["module acme/network/aws"]), "{restored_by}");
        assert_eq!(sha256(&f), published, "restored by {restored_by}: the same bytes are served again");
    }
}
