//! The bucket side of the hostile corpus (`support/hostile.rs`, `objects`): what a publisher
//! can write, uploaded through the embedded S3 with the publisher's key as `aws s3 cp` would,
//! each answered with its reaction: refused by S3 (the publisher's rights), rejected by the
//! indexer with its reason, or stored and never read. After every case, what was published is
//! served exactly as before, and nothing hands out a URL to anything but a published archive.

// Test helpers: a failed step is a failed test, with the panic message saying which.
#![allow(clippy::unwrap_used)]

use aws_sdk_s3::error::ProvideErrorMetadata;
use aws_sdk_s3::primitives::ByteStream;
use e2e::Harness;
use e2e::hostile::{OBJECT_CORPUS_MAX_ENTRIES, Reaction, objects};
use registry::layout;
use registry::storage::Storage;
use registry_local::embedded_s3::REGISTRY_ACCESS_KEY;
use serde_json::Value;

const MODULE: &str = "/v1/modules/acme/vpc/aws";
const PROVIDER: &str = "/v1/mirror/registry.terraform.io/hashicorp/null";

/// What the registry serves for the fixture, with presigned URLs cut to their key.
async fn served(h: &Harness) -> Vec<(u16, Value)> {
    let key_only = |mut v: Value, pointer: &str| {
        if let Some(url) = v.pointer_mut(pointer) {
            let text = url.as_str().unwrap_or_default();
            *url =
                Value::from(text.split('?').next().unwrap_or_default().rsplit("/registry/").next().unwrap_or_default());
        }
        v
    };
    let mut state = Vec::new();
    state.push(h.get_json(&format!("{MODULE}/versions")).await);
    let (status, body) = h.get_json(&format!("{MODULE}/1.0.0/download")).await;
    state.push((status, key_only(body, "/location")));
    state.push(h.get_json(&format!("{MODULE}/6.6.6/download")).await);
    state.push(h.get_json(&format!("{PROVIDER}/index.json")).await);
    let (status, body) = h.get_json(&format!("{PROVIDER}/3.2.1.json")).await;
    state.push((status, key_only(body, "/archives/linux_amd64/url")));
    state.push(h.get_json(&format!("{PROVIDER}/9.9.9.json")).await);
    state
}

async fn rejection_reason(h: &Harness, key: &str) -> Option<String> {
    let record = h.running.storage.get(&layout::rejection(key)).await.unwrap()?;
    let record: Value = serde_json::from_slice(&record.bytes).unwrap();
    Some(record["reason"].as_str().unwrap_or_default().to_string())
}

#[tokio::test]
async fn every_hostile_object_gets_its_reaction_and_what_was_published_stays() {
    let max = OBJECT_CORPUS_MAX_ENTRIES.to_string();
    let h = Harness::start_with(&[("REGISTRY_MAX_ARCHIVE_ENTRIES", &max)]).await;
    h.upload("modules/acme/vpc/aws/1.0.0.tar.gz", e2e::module_tar_gz(&[("main.tf", "# vpc\n")])).await;
    let zip = "providers/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.1_linux_amd64.zip";
    h.upload(zip, e2e::provider_zip("null", "3.2.1", "fixture")).await;
    let before = served(&h).await;
    assert_eq!(before[0], (200, serde_json::json!({"modules": [{"versions": [{"version": "1.0.0"}]}]})));
    assert_eq!(before[1].1["location"], "modules/acme/vpc/aws/1.0.0.tar.gz");
    assert_eq!(before[4].1["archives"]["linux_amd64"]["url"], zip);

    let publisher = h.running.publisher_client();
    let mut failures = Vec::new();
    let corpus = objects();
    for case in &corpus {
        let what = format!("{} ({})", case.what, case.key);
        let stored_before = h.running.storage.get(&case.key).await.unwrap().map(|o| o.bytes);
        let _ = h.running.take_s3_requests();
        let sent = publisher
            .put_object()
            .bucket(registry_local::BUCKET)
            .key(&case.key)
            .body(ByteStream::from(case.bytes.clone()))
            .send()
            .await;
        let indexing: Vec<_> = h
            .running
            .take_s3_requests()
            .into_iter()
            .filter(|r| r.signer.as_deref() == Some(REGISTRY_ACCESS_KEY))
            .collect();
        let reason = rejection_reason(&h, &case.key).await;
        let outcome = match (&case.reaction, &sent) {
            (Reaction::Denied, Err(e)) if e.code() == Some("AccessDenied") => {
                let stored_after = h.running.storage.get(&case.key).await.unwrap().map(|o| o.bytes);
                if stored_after == stored_before { Ok(()) } else { Err("denied, yet the object changed".to_string()) }
            }
            (Reaction::Rejected(needle), Ok(_)) => match &reason {
                Some(r) if r.contains(needle) => Ok(()),
                other => Err(format!("expected a rejection with {needle:?}, found {other:?}")),
            },
            (Reaction::Inert, Ok(_)) if indexing.is_empty() && reason.is_none() => Ok(()),
            (Reaction::Inert, Ok(_)) => {
                Err(format!("indexing ran ({} requests) or a record was written", indexing.len()))
            }
            (reaction, sent) => {
                Err(format!("expected {reaction:?}, the upload answered {:?}", sent.as_ref().map(|_| ())))
            }
        };
        if let Err(e) = outcome {
            failures.push(format!("{what}: {e}"));
        }
        let after = served(&h).await;
        if after != before {
            failures.push(format!("{what}: what is served changed: {after:?}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} object cases failed:\n{}",
        failures.len(),
        corpus.len(),
        failures.join("\n")
    );

    // The planted manifest beside the archives was seen by the next pass of its module, and
    // explained: it is not read.
    let reason = rejection_reason(&h, "modules/acme/vpc/aws/manifest.json").await.unwrap_or_default();
    assert!(reason.contains("only the indexer writes them"), "{reason}");

    // Copying the token store into the publisher's prefix, and deleting derived state, are
    // refused as writes there are.
    let copy = publisher
        .copy_object()
        .bucket(registry_local::BUCKET)
        .copy_source(format!("{}/{}", registry_local::BUCKET, layout::TOKENS))
        .key("modules/acme/vpc/aws/7.0.0.tar.gz")
        .send()
        .await;
    assert_eq!(copy.map(|_| ()).map_err(|e| e.code().map(str::to_string)), Err(Some("AccessDenied".into())));
    let manifest = "indexed/modules/acme/vpc/aws/manifest.json";
    let delete = publisher.delete_object().bucket(registry_local::BUCKET).key(manifest).send().await;
    assert_eq!(delete.map(|_| ()).map_err(|e| e.code().map(str::to_string)), Err(Some("AccessDenied".into())));
    let objects = [manifest, "modules/acme/vpc/aws/1.3.0.tar.gz"]
        .map(|k| aws_sdk_s3::types::ObjectIdentifier::builder().key(k).build().unwrap());
    let batch = aws_sdk_s3::types::Delete::builder().set_objects(Some(objects.to_vec())).build().unwrap();
    let delete = publisher.delete_objects().bucket(registry_local::BUCKET).delete(batch).send().await;
    assert_eq!(delete.map(|_| ()).map_err(|e| e.code().map(str::to_string)), Err(Some("AccessDenied".into())));
    assert!(h.running.storage.get(manifest).await.unwrap().is_some());

    // A rebuild from everything in the bucket (with the same limits) serves the same, planted
    // files and all.
    let indexer = registry::index::Indexer::new(&h.running.storage, h.running.app.config.limits.clone())
        .signing_for(h.running.app.config.hostname.clone());
    for (owner, outcome) in indexer.reindex_all().await.unwrap() {
        outcome.unwrap_or_else(|e| panic!("{owner}: {e}"));
    }
    assert_eq!(served(&h).await, before, "after reindex all");
    h.running.stop().await;
}
