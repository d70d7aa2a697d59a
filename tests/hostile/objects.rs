//! The bucket side of the hostile corpus (`support/hostile.rs`, `objects`): what a publisher
//! can write, uploaded through the embedded S3 with the publisher's key as `aws s3 cp` would,
//! each answered with its reaction: refused by S3 (the publisher's rights), rejected by the
//! indexer with its reason, or stored and never read. After every case, what was published is
//! served exactly as before, and nothing hands out a URL to anything but a published archive.

// Test helpers: a failed step is a failed test, with the panic message saying which.
#![allow(clippy::unwrap_used)]

use aws_sdk_s3::error::ProvideErrorMetadata;
use aws_sdk_s3::primitives::ByteStream;
use registry::layout;
use registry::storage::Storage;
use registry_local::embedded_s3::REGISTRY_ACCESS_KEY;
use serde_json::Value;
use support::Harness;
use support::hostile::{OBJECT_CORPUS_MAX_ENTRIES, Reaction, objects};

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

// One scenario told in order (long on purpose): publish the good, upload the corpus, check each.
#[tokio::test]
async fn every_hostile_object_gets_its_reaction_and_what_was_published_stays() {
    let max = OBJECT_CORPUS_MAX_ENTRIES.to_string();
    let settings = [("REGISTRY_MAX_ARCHIVE_ENTRIES", max.as_str()), ("REGISTRY_SEMVER_POLICY", "acme=enforce")];
    let h = Harness::start_with(&settings).await;
    h.upload("modules/acme/vpc/aws/1.0.0.tar.gz", support::module_tar_gz(&[("main.tf", "# vpc\n")])).await;
    let zip = "providers/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.1_linux_amd64.zip";
    h.upload(zip, support::provider_zip("null", "3.2.1", "fixture")).await;
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
    let indexer = registry::index::Indexer::new(&h.running.storage, h.running.app.config().limits.clone())
        .signing_for(h.running.app.config().hostname.clone());
    for (owner, outcome) in indexer.reindex_all().await.unwrap() {
        outcome.unwrap_or_else(|e| panic!("{owner}: {e}"));
    }
    assert_eq!(served(&h).await, before, "after reindex all");
    h.running.stop().await;
}

/// The publish log tampered with by someone who can write the indexer's prefix (through S3,
/// as the indexer's role could): each edit, deletion or reordering of an entry, and a
/// manifest version no entry explains, is named by the audit `make audit` runs
/// (`registry-local audit --data-dir`, here on the running registry's data directory).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tampering_with_the_publish_log_is_named_by_audit() {
    use registry::storage::Precondition;
    let h = Harness::start().await;
    for (i, key) in ["modules/acme/vpc/aws/1.0.0.tar.gz", "modules/acme/vpc/aws/1.1.0.tar.gz"].iter().enumerate() {
        h.upload(key, support::module_tar_gz(&[("main.tf", &format!("# {i}\n"))])).await;
    }
    h.upload("modules/acme/vpc/aws/2.0.0.tar.gz", b"not an archive".to_vec()).await;
    let zip = "providers/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.1_linux_amd64.zip";
    h.upload(zip, support::provider_zip("null", "3.2.1", "linux_amd64")).await;

    let data_dir = h.running.data_dir.clone();
    let audit =
        || async { registry_local::audit(registry_local::TokenTarget::DataDir(data_dir.clone())).await.unwrap() };
    let report = audit().await;
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.entries, 4, "two module publishes, a rejection, a provider publish: {report:?}");
    assert_eq!(report.heads.keys().collect::<Vec<_>>(), ["modules/acme", "providers/registry.terraform.io/hashicorp"]);
    // The module's chain: its two publishes and the rejection.
    const CHAIN: &str = "modules/acme";
    let storage = &h.running.storage;
    let read =
        |seq: u64| async move { storage.get(&layout::publish_log_entry(CHAIN, seq)).await.unwrap().unwrap().bytes };
    let write = |seq: u64, bytes: bytes::Bytes| async move {
        let key = layout::publish_log_entry(CHAIN, seq);
        storage.put(&key, bytes, "application/json", Precondition::None).await.unwrap()
    };
    let first: registry::publish_log::Entry = serde_json::from_slice(&read(1).await).unwrap();
    assert_eq!(first.change.principal.as_deref(), Some("local:publisher-local"), "{first:?}");

    // Each tampering on its own, then put back.
    let mut originals = Vec::new();
    for seq in 1..=3 {
        originals.push(read(seq).await);
    }
    let restore = || async {
        for (i, bytes) in originals.iter().enumerate() {
            write(i as u64 + 1, bytes.clone()).await;
        }
    };
    let edited = String::from_utf8(originals[1].to_vec()).unwrap().replace("\"publish\"", "\"yank\"");
    write(2, edited.into()).await;
    let report = audit().await;
    let named = |report: &registry::publish_log::audit::Report, problem: &str| {
        report.chain.first().is_some_and(|p| p.starts_with(&format!("chain {CHAIN}: {problem}")))
    };
    assert!(named(&report, "entry 2 was altered"), "{report:?}");
    restore().await;

    storage.delete(&layout::publish_log_entry(CHAIN, 2)).await.unwrap();
    let report = audit().await;
    assert!(named(&report, "entry 2 is missing"), "{report:?}");
    restore().await;

    write(2, originals[2].clone()).await;
    write(3, originals[1].clone()).await;
    let report = audit().await;
    assert!(named(&report, "entry 2 holds entry 3"), "{report:?}");
    restore().await;
    assert!(audit().await.is_clean());

    let manifest_key = "indexed/modules/acme/vpc/aws/manifest.json";
    let mut manifest =
        registry::manifest::ModuleManifest::parse(&storage.get(manifest_key).await.unwrap().unwrap().bytes).unwrap();
    manifest.versions[0].sha256 = "e".repeat(64);
    let bytes = registry::manifest::to_json(&manifest).unwrap();
    storage.put(manifest_key, bytes, "application/json", Precondition::None).await.unwrap();
    let report = audit().await;
    assert!(report.chain.is_empty(), "{report:?}");
    assert!(
        report.unexplained.first().is_some_and(|u| u.starts_with("module acme/vpc/aws 1.1.0 serves")),
        "{report:?}"
    );
    h.running.stop().await;
}
