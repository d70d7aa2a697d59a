//! Storage faults and races, against the embedded S3 with the real aws-sdk-s3 client: what a
//! reader gets while a publish replaces what it reads, what the registry answers for each S3
//! fault (injected at the embedded S3's HTTP layer, so the SDK's retries and timeouts run as
//! in AWS), what the indexer does, and a short load race of reads against publishes.

// Test helpers: a failed step is a failed test, with the panic message saying which.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use aws_sdk_s3::primitives::ByteStream;
use md5::Digest;
use registry::app::Request;
use registry::storage::Storage;
use registry::{App, layout};
use registry_local::faults::{Fault, Rule};
use support::Harness;

/// S3 replaces an object atomically: a GET racing PUTs of the same key gets the old object or
/// the new one, each whole, with its own ETag. s3s-fs wrote body, attributes and checksum as
/// separate files, so a GET in between read one version's body with the other's checksum.
/// Bounded by counts, not time: the writer starts once every reader has, and the readers read
/// until it has written `WRITES` times, so reads race writes from the first write to the last
/// however fast the machine is.
// One scenario told in order (long on purpose): writers and readers at once, then the checks.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn reads_racing_writes_of_one_key_get_one_whole_object() {
    const READERS: usize = 8;
    const WRITES: usize = 60;
    let h = Harness::start().await;
    // A key no notification covers: only the race is measured, no indexing runs.
    let key = "modules/acme/hammer/aws/notes.txt";
    let bodies: [Vec<u8>; 2] = [vec![b'a'; 1000], vec![b'b'; 50_000]];
    let client = h.running.publisher_client();
    let writer_client = client.clone();
    let put = move |body: Vec<u8>| {
        let client = writer_client.clone();
        async move { client.put_object().bucket(registry_local::BUCKET).key(key).body(ByteStream::from(body)).send().await }
    };
    put(bodies[0].clone()).await.unwrap();
    let started = Arc::new(tokio::sync::Barrier::new(READERS + 1));
    let written = Arc::new(AtomicBool::new(false));
    let writer = tokio::spawn({
        let (put, bodies, started) = (put.clone(), bodies.clone(), started.clone());
        // Set however the writer ends, so that the readers stop even if a write fails.
        let done = SetOnDrop(written.clone());
        async move {
            let _done = done;
            started.wait().await;
            for n in 0..WRITES {
                put(bodies[n % 2].clone()).await.unwrap();
            }
        }
    });
    let mut readers = tokio::task::JoinSet::new();
    for _ in 0..READERS {
        let (client, bodies, started, written) = (client.clone(), bodies.clone(), started.clone(), written.clone());
        readers.spawn(async move {
            let (mut reads, mut bad) = (0, Vec::new());
            started.wait().await;
            // Read, then look: every reader reads at least once while the writes may run.
            let mut last = false;
            while !last {
                last = written.load(Ordering::SeqCst);
                reads += 1;
                let got = client.get_object().bucket(registry_local::BUCKET).key(key).send().await;
                let outcome = match got {
                    Ok(out) => {
                        let etag = out.e_tag.clone().unwrap_or_default();
                        match out.body.collect().await {
                            Ok(body) => {
                                let bytes = body.into_bytes();
                                // s3s-fs's ETags are the MD5 of the body, as S3's are for a plain PUT.
                                let md5 = format!("\"{}\"", hex::encode(md5::Md5::digest(&bytes)));
                                if !bodies.iter().any(|b| b[..] == bytes[..]) {
                                    Err(format!("a body of {} bytes that was never written", bytes.len()))
                                } else if etag != md5 {
                                    Err(format!("ETag {etag} of another body ({} bytes)", bytes.len()))
                                } else {
                                    Ok(())
                                }
                            }
                            Err(e) => Err(format!("body: {e:?}")),
                        }
                    }
                    Err(e) => Err(format!("GetObject: {e:?}")),
                };
                if let Err(e) = outcome {
                    bad.push(e);
                }
            }
            (reads, bad)
        });
    }
    let (mut reads, mut bad) = (0, Vec::new());
    while let Some(done) = readers.join_next().await {
        let (n, b) = done.unwrap();
        reads += n;
        bad.extend(b);
    }
    writer.await.unwrap();
    eprintln!("hammer: {reads} reads against {WRITES} writes of one key, {} bad", bad.len());
    assert!(
        bad.is_empty(),
        "{} of {reads} reads were not one whole object:\n{}",
        bad.len(),
        bad[..bad.len().min(5)].join("\n")
    );
    h.running.stop().await;
}

const VERSIONS: &str = "/v1/modules/acme/vpc/aws/versions";
const MANIFEST: &str = "indexed/modules/acme/vpc/aws/manifest.json";

/// How a fault hits a read, and what the registry answers.
struct ReadCase {
    fault: Fault,
    /// Requests it hits (`None`: every one).
    times: Option<u32>,
    /// The function has read the manifest before (a cached copy to fall back on).
    warm: bool,
    /// A version was published since it did (so revalidation gets a body, not a 304).
    changed: bool,
    status: u16,
    /// The answer came from the cached copy (`x-registry-stale`).
    stale: bool,
}

fn case(fault: Fault, times: Option<u32>, warm: bool, changed: bool, status: u16, stale: bool) -> ReadCase {
    ReadCase { fault, times, warm, changed, status, stale }
}

// A table of faults and their answers, then the checks: long on purpose, read as one list.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_storage_fault_on_a_read_gets_its_answer() {
    use Fault::*;
    let slow = Slow(Duration::from_secs(3));
    let cases = [
        // One fault: the SDK's retry (requests) or the second read (bodies) hides it.
        case(SlowDown, Some(1), false, false, 200, false),
        case(InternalError, Some(1), false, false, 200, false),
        case(Reset, Some(1), false, false, 200, false),
        case(slow, Some(1), false, false, 200, false),
        case(Truncated, Some(1), false, false, 200, false),
        case(ChecksumMismatch, Some(1), false, false, 200, false),
        // Every attempt fails, nothing cached: 503 with Retry-After, never 500.
        case(SlowDown, None, false, false, 503, false),
        case(InternalError, None, false, false, 503, false),
        case(Reset, None, false, false, 503, false),
        case(Truncated, None, false, false, 503, false),
        case(ChecksumMismatch, None, false, false, 503, false),
        // Answers past the attempt timeout, every time: the SDK gives up (6 s), 503.
        case(slow, None, false, false, 503, false),
        // Every attempt fails, a cached copy: served, marked stale.
        case(SlowDown, None, true, false, 200, true),
        case(InternalError, None, true, false, 200, true),
        case(Reset, None, true, false, 200, true),
        case(slow, None, true, false, 200, true),
        case(Truncated, None, true, true, 200, true),
        case(ChecksumMismatch, None, true, true, 200, true),
        // A body fault cannot spoil a 304: the revalidation succeeds.
        case(ChecksumMismatch, None, true, false, 200, false),
        // S3 says the key is gone: gone, cached or not (S3 is strongly consistent).
        case(NotFound, Some(1), false, false, 404, false),
        case(NotFound, None, true, false, 404, false),
    ];
    let h = Harness::start().await;
    let token = format!("Bearer {}", h.running.dev_token);
    let mut next_version = 1;
    let mut failures = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        let what = format!(
            "case {i}: {:?} x{} {}{}",
            c.fault,
            c.times.map_or("all".into(), |n| n.to_string()),
            if c.warm { "warm" } else { "cold" },
            if c.changed { ", changed" } else { "" }
        );
        h.upload(
            &format!("modules/acme/vpc/aws/1.{next_version}.0.tar.gz"),
            support::module_tar_gz(&[("main.tf", "#")]),
        )
        .await;
        next_version += 1;
        // A fresh function: its cache is empty, or warmed by one request.
        let app = App::builder(h.running.app.config().clone(), h.running.storage.clone()).build().unwrap();
        if c.warm {
            assert_eq!(app.handle(&Request::get(VERSIONS).authorization(Some(&token))).await.status, 200, "{what}");
        }
        if c.changed {
            let key = format!("modules/acme/vpc/aws/1.{next_version}.0.tar.gz");
            h.upload(&key, support::module_tar_gz(&[("main.tf", "#")])).await;
            next_version += 1;
        }
        let rule = Rule { times: c.times, ..Rule::always(MANIFEST, c.fault) }.method(http::Method::GET);
        h.running.faults.add(rule);
        let injected_before = h.running.faults.injected();
        let reply = app.handle(&Request::get(VERSIONS).authorization(Some(&token))).await;
        let injected = h.running.faults.injected() - injected_before;
        h.running.faults.clear();
        let body: serde_json::Value = serde_json::from_slice(&reply.body).unwrap_or_default();
        let stale = reply.header_value(registry::app::STALE_HEADER).is_some();
        let retry_after = reply.header_value("retry-after");
        let mut wrong = Vec::new();
        if reply.status.as_u16() != c.status {
            wrong.push(format!("status {} ({body})", reply.status));
        }
        if stale != c.stale {
            wrong.push(format!("stale {stale}"));
        }
        if (c.status == 503) != (retry_after == Some("1")) {
            wrong.push(format!("retry-after {retry_after:?}"));
        }
        if c.status == 200 && body["modules"][0]["versions"].as_array().is_none_or(|v| v.is_empty()) {
            wrong.push(format!("no versions in {body}"));
        }
        if c.status >= 400 && body["errors"][0].as_str().is_none() {
            wrong.push(format!("no JSON errors body: {body}"));
        }
        if injected == 0 {
            wrong.push("no fault was injected".into());
        }
        if !wrong.is_empty() {
            failures.push(format!("{what}: {}", wrong.join("; ")));
        }
    }
    assert!(failures.is_empty(), "{} of {} read cases failed:\n{}", failures.len(), cases.len(), failures.join("\n"));
    h.running.stop().await;
}

/// A storage fault while indexing is never mistaken for a bad archive: the publish goes
/// through once the fault passes, and no rejection record is written. A fault on the manifest's
/// write or its publish log entry's (also one whose write is made and its answer lost, and one
/// on every attempt the SDK makes) leaves the version served and logged once: the audit is
/// clean.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn storage_faults_while_indexing_are_retried_not_rejected() {
    use Fault::*;
    let h = Harness::start().await;
    let token = format!("Bearer {}", h.running.dev_token);
    let cases: [(Fault, &str, http::Method, u32); 13] = [
        (SlowDown, "archive", http::Method::GET, 1),
        (InternalError, "archive", http::Method::GET, 1),
        (Reset, "archive", http::Method::GET, 1),
        (Truncated, "archive", http::Method::GET, 1),
        (ChecksumMismatch, "archive", http::Method::GET, 1),
        (SlowDown, "manifest", http::Method::PUT, 1),
        (InternalError, "manifest", http::Method::PUT, 1),
        (Reset, "manifest", http::Method::PUT, 1),
        (AnswerLost, "manifest", http::Method::PUT, 1),
        (Reset, "log", http::Method::PUT, 1),
        (Reset, "log", http::Method::PUT, 2),
        (InternalError, "log", http::Method::PUT, 3),
        (AnswerLost, "log", http::Method::PUT, 1),
    ];
    let mut failures = Vec::new();
    for (i, (fault, target, method, times)) in cases.iter().enumerate() {
        let module = format!("f{i}");
        let key = format!("modules/acme/{module}/aws/1.0.0.tar.gz");
        let prefix = match *target {
            "archive" => key.clone(),
            "manifest" => format!("indexed/modules/acme/{module}/aws/manifest.json"),
            _ => "indexed/log/chains/modules/acme/entries/".to_string(),
        };
        h.running.faults.add(Rule::next(&prefix, *fault, *times).method(method.clone()));
        let injected = h.running.faults.injected();
        h.upload(&key, support::module_tar_gz(&[("main.tf", "#")])).await;
        let injected = h.running.faults.injected() - injected;
        h.running.faults.clear();
        if injected != u64::from(*times) {
            failures.push(format!("{fault:?} x{times} on the {target}: injected {injected} times"));
        }
        let reply = h
            .running
            .app
            .handle(&Request::get(&format!("/v1/modules/acme/{module}/aws/versions")).authorization(Some(&token)))
            .await;
        let record = h.running.storage.get(&layout::rejection(&key)).await.unwrap();
        let report = registry::publish_log::audit::audit(&h.running.storage).await.unwrap();
        if !report.is_clean() {
            failures.push(format!("{fault:?} x{times} on the {target}: audit {report:?}"));
        }
        if reply.status != 200 || record.is_some() {
            failures.push(format!(
                "{fault:?} x{times} on the {target}: {} {:?}, rejection record {:?}",
                reply.status,
                String::from_utf8_lossy(&reply.body),
                record.map(|r| String::from_utf8_lossy(&r.bytes).into_owned())
            ));
        }
    }
    // A body that breaks off on every read: not indexed, and not rejected either; once the
    // fault is gone, a rebuild publishes it.
    let key = "modules/acme/flaky/aws/1.0.0.tar.gz";
    h.running.faults.add(Rule::always(key, Truncated).method(http::Method::GET));
    h.upload(key, support::module_tar_gz(&[("main.tf", "#")])).await;
    let versions = "/v1/modules/acme/flaky/aws/versions";
    let before = h.running.app.handle(&Request::get(versions).authorization(Some(&token))).await.status;
    h.running.faults.clear();
    let record = h.running.storage.get(&layout::rejection(key)).await.unwrap();
    let indexer = registry::index::Indexer::new(&h.running.storage, h.running.app.config().limits.clone())
        .signing_for(h.running.app.config().hostname.clone());
    for (owner, outcome) in indexer.reindex_all().await.unwrap() {
        outcome.unwrap_or_else(|e| panic!("{owner}: {e}"));
    }
    let after = h.running.app.handle(&Request::get(versions).authorization(Some(&token))).await.status;
    if (before.as_u16(), record.is_some(), after.as_u16()) != (404, false, 200) {
        failures.push(format!("a body cut on every read: {before} before, record {}, {after} after", record.is_some()));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    h.running.stop().await;
}

/// Concurrent publishes with S3 throttling every fifth manifest write and resetting every
/// seventh manifest read: every version is listed, and nothing is rejected.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn no_version_is_lost_to_storage_faults() {
    let h = Harness::start().await;
    h.running.faults.add(Rule::always("indexed/", Fault::SlowDown).method(http::Method::PUT).every(5));
    h.running.faults.add(Rule::always("indexed/", Fault::Reset).method(http::Method::GET).every(7));
    let mut uploads = tokio::task::JoinSet::new();
    for i in 0..20 {
        let client = h.running.publisher_client();
        let module = format!("modules/acme/faulty/aws/1.{i}.0.tar.gz");
        uploads.spawn(support::upload(
            client.clone(),
            module,
            support::module_tar_gz(&[("main.tf", &format!("# {i}"))]),
        ));
        let zip = format!("providers/example.com/acme/faulty/terraform-provider-faulty_1.{i}.0_linux_amd64.zip");
        uploads.spawn(support::upload(client, zip, support::provider_zip("faulty", &format!("1.{i}.0"), "f")));
    }
    while let Some(done) = uploads.join_next().await {
        done.unwrap();
    }
    let injected = h.running.faults.injected();
    h.running.faults.clear();
    let (_, modules) = h.get_json("/v1/modules/acme/faulty/aws/versions").await;
    let (_, providers) = h.get_json("/v1/mirror/example.com/acme/faulty/index.json").await;
    let rejected = h.running.storage.list(layout::REJECTIONS_PREFIX).await.unwrap();
    eprintln!("faults injected while publishing: {injected}");
    assert!(injected > 10, "faults were injected: {injected}");
    assert_eq!(modules["modules"][0]["versions"].as_array().map(Vec::len), Some(20), "{modules}");
    assert_eq!(providers["versions"].as_object().map(|v| v.len()), Some(20), "{providers}");
    assert!(rejected.is_empty(), "storage faults are not bad uploads: {rejected:?}");
    h.running.stop().await;
}

/// Reads never fail because a publish is in flight: 64 HTTPS connections read versions,
/// downloads, index.json and VERSION.json for as long as 15 versions of a module and of a
/// provider are published beside them (and at least 10 times each); every answer is 200 and
/// every version is listed at the end. (`make bench` runs the long form: 256 connections, 60 s.)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn reads_while_publishing_all_succeed() {
    let h = Harness::start().await;
    h.upload("modules/acme/vpc/aws/1.0.0.tar.gz", support::module_tar_gz(&[("main.tf", "#")])).await;
    let zip = "providers/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.1_linux_amd64.zip";
    h.upload(zip, support::provider_zip("null", "3.2.1", "load")).await;
    let paths: Vec<String> = [
        VERSIONS,
        "/v1/modules/acme/vpc/aws/1.0.0/download",
        "/v1/mirror/registry.terraform.io/hashicorp/null/index.json",
        "/v1/mirror/registry.terraform.io/hashicorp/null/3.2.1.json",
    ]
    .map(String::from)
    .to_vec();
    let published = Arc::new(AtomicBool::new(false));
    let publisher = tokio::spawn({
        let client = h.running.publisher_client();
        // Set however the task ends, so that the load stops even if a publish fails.
        let done = SetOnDrop(published.clone());
        async move {
            let _done = done;
            for i in 1..=15 {
                let key = format!("modules/acme/vpc/aws/1.{i}.0.tar.gz");
                support::upload(client.clone(), key, support::module_tar_gz(&[("main.tf", &format!("# {i}"))])).await;
                let zip = format!(
                    "providers/registry.terraform.io/hashicorp/null/terraform-provider-null_3.3.{i}_linux_amd64.zip"
                );
                support::upload(client.clone(), zip, support::provider_zip("null", &format!("3.3.{i}"), "load")).await;
            }
        }
    });
    let tls = support::load::tls_client(&h.running.data_dir.join("ca.pem"));
    let token = format!("Bearer {}", h.running.dev_token);
    let until = support::load::Until::Done { done: published, answers: 10 };
    let report = support::load::run(h.running.registry_addr, tls, &token, &paths, 64, until).await;
    publisher.await.unwrap();
    eprintln!(
        "load: {} answers in {:.1} s, p50 {:.2} ms, p99 {:.2} ms, {:?}, {} socket errors",
        report.requests(),
        report.seconds,
        report.percentile_ms(50.0),
        report.percentile_ms(99.0),
        report.statuses,
        report.socket_errors
    );
    assert!(report.requests() >= 640, "every connection had its answers: {}", report.requests());
    assert_eq!((report.non_2xx(), report.socket_errors), (0, 0), "{:?}", report.failures);
    let (_, modules) = h.get_json(VERSIONS).await;
    assert_eq!(modules["modules"][0]["versions"].as_array().map(Vec::len), Some(16), "{modules}");
    let (_, index) = h.get_json("/v1/mirror/registry.terraform.io/hashicorp/null/index.json").await;
    assert_eq!(index["versions"].as_object().map(|v| v.len()), Some(16), "{index}");
    h.running.stop().await;
}

/// Sets its flag when dropped: when the task holding it ends, whether it finished or failed.
struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}
