//! The faults test's second half: no single failure in an indexer pass leaves its change half
//! made. For each kind of pass (a module published, a module yanked, a provider's zip, a signed
//! provider release, an upstream module's pin, a rejected upload), every request the pass makes
//! fails in turn: refused (not made: S3 answered 500, or the connection broke before it was
//! sent), lost (for a write: made, and its answer lost to a timeout or a connection closed
//! before the answer) and a crash (a write made, a read not, and nothing after it answers: the
//! function died). The event is then retried as Lambda retries an S3 notification, and once
//! more, as S3 may deliver an event twice. Every run must end with the bucket the same pass
//! leaves when nothing fails (timestamps, and the hashes and ids that hold them, aside), and an
//! audit with nothing to say: every served archive explained by the log, every logged one
//! served, no change logged twice.
//!
//! The faults are injected at the storage trait, around the in-memory bucket (atomic
//! conditional writes, strongly consistent, as S3 is), so every request of a pass is reached by
//! number; the first half (`faults.rs`) injects them at the embedded S3's HTTP layer, where the
//! SDK's own retries run.

// Test helpers: a failed step is a failed test, with the panic message saying which.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use registry::error::Error;
use registry::index::{Indexer, Limits};
use registry::storage::{MemoryStorage, Object, ObjectInfo, Precondition, Revalidated, Storage, Stored};
use registry::testing::signing::{TestKey, release};
use serde_json::Value;
use sha2::Digest;

/// How request `n` of a pass fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// Not made.
    Refused,
    /// A write made, its answer lost.
    Lost,
    /// Made (a write applies), and neither it nor anything after it answers.
    Crash,
}

/// The bucket as a pass sees it, with one fault at its `at`-th request.
struct Faulty<'a> {
    inner: &'a MemoryStorage,
    at: Option<(usize, Fault)>,
    requests: AtomicUsize,
    /// Whether each request so far was a write (what the reference run tells the matrix).
    writes: Mutex<Vec<bool>>,
    dead: AtomicBool,
    hit: AtomicBool,
}

fn down() -> Error {
    Error::unavailable("injected fault")
}

impl<'a> Faulty<'a> {
    fn new(inner: &'a MemoryStorage, at: Option<(usize, Fault)>) -> Self {
        Faulty {
            inner,
            at,
            requests: AtomicUsize::new(0),
            writes: Mutex::new(Vec::new()),
            dead: AtomicBool::new(false),
            hit: AtomicBool::new(false),
        }
    }

    /// Before a request: an error if it is not made, else the fault its answer meets.
    fn before(&self, write: bool) -> Result<Option<Fault>, Error> {
        if self.dead.load(Ordering::SeqCst) {
            return Err(down());
        }
        let n = self.requests.fetch_add(1, Ordering::SeqCst) + 1;
        self.writes.lock().unwrap().push(write);
        let Some((_, fault)) = self.at.filter(|(at, _)| *at == n) else { return Ok(None) };
        self.hit.store(true, Ordering::SeqCst);
        match fault {
            Fault::Refused => Err(down()),
            // A read is not made either way; after a crash, nothing is.
            _ if !write => {
                self.dead.store(fault == Fault::Crash, Ordering::SeqCst);
                Err(down())
            }
            _ => Ok(Some(fault)),
        }
    }

    /// A write's answer, as its fault has it.
    fn after<T>(&self, fault: Option<Fault>, answer: Result<T, Error>) -> Result<T, Error> {
        match fault {
            None => answer,
            Some(Fault::Crash) => {
                self.dead.store(true, Ordering::SeqCst);
                Err(down())
            }
            Some(_) => Err(down()),
        }
    }
}

impl Storage for Faulty<'_> {
    async fn get(&self, key: &str) -> Result<Option<Object>, Error> {
        self.before(false)?;
        self.inner.get(key).await
    }
    async fn get_if_changed(&self, key: &str, etag: &str) -> Result<Revalidated, Error> {
        self.before(false)?;
        self.inner.get_if_changed(key, etag).await
    }
    async fn etag(&self, key: &str) -> Result<Option<String>, Error> {
        self.before(false)?;
        self.inner.etag(key).await
    }
    async fn put(&self, key: &str, body: Bytes, content_type: &str, precondition: Precondition) -> Result<(), Error> {
        let fault = self.before(true)?;
        self.after(fault, self.inner.put(key, body, content_type, precondition).await)
    }
    async fn put_etag(
        &self,
        key: &str,
        body: Bytes,
        content_type: &str,
        precondition: Precondition,
    ) -> Result<String, Error> {
        let fault = self.before(true)?;
        self.after(fault, self.inner.put_etag(key, body, content_type, precondition).await)
    }
    async fn put_file(
        &self,
        key: &str,
        path: &std::path::Path,
        content_type: &str,
        precondition: Precondition,
    ) -> Result<(), Error> {
        let fault = self.before(true)?;
        self.after(fault, self.inner.put_file(key, path, content_type, precondition).await)
    }
    async fn delete(&self, key: &str) -> Result<(), Error> {
        let fault = self.before(true)?;
        self.after(fault, self.inner.delete(key).await)
    }
    async fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>, Error> {
        self.before(false)?;
        self.inner.list(prefix).await
    }
    async fn stream<F>(&self, key: &str, sink: F) -> Result<Option<Stored>, Error>
    where
        F: FnMut(&[u8]) -> Result<(), Error> + Send,
    {
        self.before(false)?;
        self.inner.stream(key, sink).await
    }
    async fn presign_get(&self, key: &str, version_id: Option<&str>, ttl: Duration) -> Result<String, Error> {
        self.inner.presign_get(key, version_id, ttl).await
    }
}

/// The registry's own host: its providers are signed releases.
const HOST: &str = "registry.example.com";

/// The kinds of pass the matrix runs.
#[derive(Debug, Clone, Copy)]
enum Scenario {
    /// A module's second version published: docs judged against the first, its OCI package
    /// tagged and `latest` moved, the catalog.
    ModulePublished,
    /// That second version's archive deleted: yanked, its OCI tag deleted, `latest` moved back.
    ModuleYanked,
    /// A mirrored provider's zip of a new version: its `VERSION.json`, `index.json`, OCI
    /// artifacts.
    ProviderZip,
    /// The last file of a signed release (its signature): every platform served at once.
    SignedRelease,
    /// An upstream module's pin, written by the modules pull-through: on the log, in the
    /// module's pins, in the catalog.
    UpstreamPin,
    /// An upload that is not an archive: a rejection record, and its entry.
    Rejected,
}

const SCENARIOS: [Scenario; 6] = [
    Scenario::ModulePublished,
    Scenario::ModuleYanked,
    Scenario::ProviderZip,
    Scenario::SignedRelease,
    Scenario::UpstreamPin,
    Scenario::Rejected,
];

const MODULE: &str = "modules/acme/net/aws/";
const SIGNED: &str = "providers/registry.example.com/acme/widget/";

fn module_version(version: &str, output: bool) -> Vec<u8> {
    let outputs = if output { "output \"id\" {\n  value = var.name\n}\n" } else { "" };
    let main = format!("variable \"name\" {{\n  type = string\n}}\n{outputs}# {version}\n");
    support::module_tar_gz(&[("main.tf", &main), ("README.md", "# net\n")])
}

fn indexer<S: Storage>(bucket: &S) -> Indexer<'_, S> {
    Indexer::new(bucket, Limits::default()).signing_for(Some(HOST.to_string()))
}

/// What every case of a scenario shares: the signed release's files, made once.
struct Fixtures {
    key: TestKey,
    release: Vec<(String, Vec<u8>)>,
}

impl Fixtures {
    fn new() -> Self {
        let key = TestKey::generate("acme");
        let release = release("widget", "1.0.0", &[("linux", "amd64"), ("darwin", "arm64")], Some(&["6.0"]), &key);
        Fixtures { key, release }
    }
}

/// Fill `bucket` with what the scenario starts from (indexed, no faults), make its upload or
/// delete, and answer the key its event names.
async fn prepare(scenario: Scenario, bucket: &MemoryStorage, fixtures: &Fixtures) -> String {
    let healthy = indexer(bucket);
    let upload = |key: &str, bytes: Vec<u8>| bucket.insert(key, bytes);
    match scenario {
        Scenario::ModulePublished | Scenario::ModuleYanked | Scenario::Rejected => {
            let first = format!("{MODULE}1.0.0.tar.gz");
            upload(&first, module_version("1.0.0", false));
            healthy.on_object_changed(&first).await.unwrap();
            let second = format!("{MODULE}1.1.0.tar.gz");
            upload(&second, module_version("1.1.0", true));
            match scenario {
                Scenario::ModulePublished => second,
                Scenario::ModuleYanked => {
                    healthy.on_object_changed(&second).await.unwrap();
                    bucket.remove(&second);
                    second
                }
                _ => {
                    healthy.on_object_changed(&second).await.unwrap();
                    let bad = format!("{MODULE}2.0.0.tar.gz");
                    upload(&bad, b"not a gzip stream".to_vec());
                    bad
                }
            }
        }
        Scenario::ProviderZip => {
            let prefix = "providers/registry.terraform.io/hashicorp/null/";
            let first = format!("{prefix}terraform-provider-null_1.0.0_linux_amd64.zip");
            upload(&first, support::provider_zip("null", "1.0.0", "first"));
            healthy.on_object_changed(&first).await.unwrap();
            let second = format!("{prefix}terraform-provider-null_1.1.0_linux_amd64.zip");
            upload(&second, support::provider_zip("null", "1.1.0", "second"));
            second
        }
        Scenario::SignedRelease => {
            upload("signing-keys/registry.example.com/acme/release.asc", fixtures.key.public_armor().into_bytes());
            let (signature, rest) = fixtures.release.split_last().unwrap();
            for (name, bytes) in rest {
                upload(&format!("{SIGNED}{name}"), bytes.clone());
                healthy.on_object_changed(&format!("{SIGNED}{name}")).await.unwrap();
            }
            let key = format!("{SIGNED}{}", signature.0);
            upload(&key, signature.1.clone());
            key
        }
        Scenario::UpstreamPin => {
            let archive = module_version("5.0.0", true);
            let sha256 = hex::encode(sha2::Sha256::digest(&archive));
            let prefix = "upstream-modules/registry.terraform.io/terraform-aws-modules/vpc/aws/";
            upload(&format!("{prefix}5.0.0/{sha256}.tar.gz"), archive.clone());
            let pin = serde_json::json!({
                "module": "registry.terraform.io/terraform-aws-modules/vpc/aws",
                "version": "5.0.0",
                "sha256": sha256,
                "size": archive.len(),
                "archive": "tar.gz",
                "source": "git::https://github.com/terraform-aws-modules/terraform-aws-vpc?ref=v5.0.0",
                "copied_at": "2026-12-01T10:00:00Z",
            });
            let key = format!("{prefix}5.0.0.pin.json");
            upload(&key, serde_json::to_vec(&pin).unwrap());
            key
        }
    }
}

/// The event, through `bucket`; then retried on a bucket that no longer fails (as Lambda
/// retries a failed asynchronous invocation, twice), and delivered once more.
async fn run_event(bucket: &Faulty<'_>, key: &str) {
    let first = indexer(bucket).on_object_changed(key).await;
    let healthy = indexer(bucket.inner);
    let mut retries = usize::from(first.is_err()) * 2;
    while retries > 0 {
        match healthy.on_object_changed(key).await {
            Ok(_) => break,
            Err(_) => retries -= 1,
        }
    }
    // Delivered again (S3 delivers at least once): nothing more may happen.
    healthy.on_object_changed(key).await.unwrap();
}

/// Every object, timestamps and what hashes them aside: the state two runs of one pass agree on.
fn snapshot(bucket: &MemoryStorage) -> BTreeMap<String, String> {
    bucket.keys().into_iter().map(|key| (key.clone(), normalized(&bucket.peek(&key).unwrap()))).collect()
}

fn normalized(bytes: &[u8]) -> String {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(mut value) => {
            scrub(&mut value);
            value.to_string()
        }
        Err(_) => format!("{} bytes, sha256 {}", bytes.len(), hex::encode(sha2::Sha256::digest(bytes))),
    }
}

/// Replace what differs between two runs of the same pass: the times written, the publish log's
/// hashes (of entries holding those times) and the ids of intents.
fn scrub(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (name, value) in map.iter_mut() {
                match name.as_str() {
                    "prev" | "hash" => *value = Value::from("HASH"),
                    "intent" => {
                        let n = value.as_str().and_then(|i| i.rsplit_once('/')).map(|(_, n)| n.to_string());
                        *value = Value::from(format!("ID/{}", n.unwrap_or_default()));
                    }
                    _ => scrub(value),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(scrub),
        Value::String(text) if registry::clock::parse_rfc3339(text).is_some() => *text = "TIME".into(),
        _ => {}
    }
}

/// How `got` differs from `expected`, briefly.
fn differences(expected: &BTreeMap<String, String>, got: &BTreeMap<String, String>) -> Vec<String> {
    let mut out = Vec::new();
    for (key, want) in expected {
        match got.get(key) {
            None => out.push(format!("missing {key}")),
            Some(have) if have != want => {
                out.push(format!("{key} differs:\n      want {}\n      have {}", clip(want), clip(have)))
            }
            Some(_) => {}
        }
    }
    out.extend(got.keys().filter(|k| !expected.contains_key(*k)).map(|k| format!("extra {k}")));
    out
}

fn clip(text: &str) -> &str {
    &text[..text.len().min(600)]
}

/// One scenario: the reference run (no fault) counts its requests, then each request fails in
/// each way. Answers the cases run and what went wrong in each.
async fn matrix(scenario: Scenario, fixtures: &Fixtures) -> (usize, Vec<String>) {
    let reference = MemoryStorage::new();
    let key = prepare(scenario, &reference, fixtures).await;
    let counted = Faulty::new(&reference, None);
    run_event(&counted, &key).await;
    let expected = snapshot(&reference);
    let mut failures = Vec::new();
    let report = registry::publish_log::audit::audit(&reference).await.unwrap();
    if !report.is_clean() {
        failures.push(format!("{scenario:?} without faults: audit {report:?}"));
    }
    let writes = counted.writes.lock().unwrap().clone();
    let mut cases = 0;
    for (n, write) in writes.iter().enumerate().map(|(i, w)| (i + 1, *w)) {
        for fault in [Fault::Refused, Fault::Lost, Fault::Crash] {
            if fault == Fault::Lost && !write {
                continue;
            }
            cases += 1;
            let bucket = MemoryStorage::new();
            let key = prepare(scenario, &bucket, fixtures).await;
            let faulty = Faulty::new(&bucket, Some((n, fault)));
            run_event(&faulty, &key).await;
            let what = format!("{scenario:?}, {fault:?} at request {n} of {} ({})", writes.len(), kind(write));
            if !faulty.hit.load(Ordering::SeqCst) {
                failures.push(format!("{what}: never reached (the pass took another path)"));
                continue;
            }
            let report = registry::publish_log::audit::audit(&bucket).await.unwrap();
            if !report.is_clean() {
                failures.push(format!(
                    "{what}: audit: chain {:?}, unexplained {:?}, unserved {:?}",
                    report.chain, report.unexplained, report.unserved
                ));
            }
            let wrong = differences(&expected, &snapshot(&bucket));
            if !wrong.is_empty() {
                failures.push(format!("{what}: the bucket is not as without the fault:\n    {}", wrong.join("\n    ")));
            }
        }
    }
    (cases, failures)
}

fn kind(write: bool) -> &'static str {
    if write { "a write" } else { "a read" }
}

#[tokio::test]
async fn no_single_fault_in_a_pass_leaves_its_change_half_made() {
    let fixtures = Fixtures::new();
    let mut failures = Vec::new();
    for scenario in SCENARIOS {
        let (cases, wrong) = matrix(scenario, &fixtures).await;
        eprintln!("{scenario:?}: {cases} faults, {} wrong", wrong.len());
        assert!(cases >= 10, "{scenario:?}: only {cases} faults: the pass made too few requests to be this one");
        failures.extend(wrong);
    }
    assert!(failures.is_empty(), "{} cases went wrong:\n{}", failures.len(), failures.join("\n"));
}
