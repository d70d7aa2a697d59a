//! The red team's sequences against unfinished writes (deliveries at once, a newer release's
//! field, a late OCI step, a log that cannot be written), each held to what must happen.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::BoxFuture;

use super::super::fixtures::*;
use super::super::{Indexer, Limits};
use crate::error::Error;
use crate::layout;
use crate::publish_log::{self, Action, Entry};
use crate::storage::{MemoryStorage, Object, ObjectInfo, Precondition, Revalidated, Storage, Stored};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Read,
    Put,
    Delete,
}

type Before = Box<dyn Fn(Op, &str) -> BoxFuture<'static, ()> + Send + Sync>;
type Rewrite = Box<dyn Fn(&str, Bytes) -> Bytes + Send + Sync>;

/// The in-memory bucket with hooks: a wait before each request, a rewrite of what is put, and
/// a crash (every later request fails) once a put of one key has been made.
struct Hooked<'a> {
    inner: &'a MemoryStorage,
    before: Option<Before>,
    rewrite: Option<Rewrite>,
    dies_after_put_of: Option<String>,
    dead: AtomicBool,
}

impl<'a> Hooked<'a> {
    fn new(inner: &'a MemoryStorage) -> Self {
        Hooked { inner, before: None, rewrite: None, dies_after_put_of: None, dead: AtomicBool::new(false) }
    }

    async fn pre(&self, op: Op, key: &str) -> Result<(), Error> {
        if self.dead.load(Ordering::SeqCst) {
            return Err(Error::unavailable("crashed"));
        }
        if let Some(before) = &self.before {
            before(op, key).await;
        }
        Ok(())
    }
}

impl Storage for Hooked<'_> {
    async fn get(&self, key: &str) -> Result<Option<Object>, Error> {
        self.pre(Op::Read, key).await?;
        self.inner.get(key).await
    }
    async fn get_if_changed(&self, key: &str, etag: &str) -> Result<Revalidated, Error> {
        self.pre(Op::Read, key).await?;
        self.inner.get_if_changed(key, etag).await
    }
    async fn etag(&self, key: &str) -> Result<Option<String>, Error> {
        self.pre(Op::Read, key).await?;
        self.inner.etag(key).await
    }
    async fn put(&self, key: &str, body: Bytes, content_type: &str, p: Precondition) -> Result<(), Error> {
        self.put_etag(key, body, content_type, p).await.map(drop)
    }
    async fn put_etag(&self, key: &str, body: Bytes, content_type: &str, p: Precondition) -> Result<String, Error> {
        self.pre(Op::Put, key).await?;
        let body = match &self.rewrite {
            Some(rewrite) => rewrite(key, body),
            None => body,
        };
        let etag = self.inner.put_etag(key, body, content_type, p).await?;
        if self.dies_after_put_of.as_deref() == Some(key) {
            self.dead.store(true, Ordering::SeqCst);
            return Err(Error::unavailable("crashed after the write"));
        }
        Ok(etag)
    }
    async fn put_file(&self, key: &str, path: &std::path::Path, ct: &str, p: Precondition) -> Result<(), Error> {
        self.pre(Op::Put, key).await?;
        self.inner.put_file(key, path, ct, p).await
    }
    async fn delete(&self, key: &str) -> Result<(), Error> {
        self.pre(Op::Delete, key).await?;
        self.inner.delete(key).await
    }
    async fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>, Error> {
        self.pre(Op::Read, prefix).await?;
        self.inner.list(prefix).await
    }
    async fn stream<F>(&self, key: &str, sink: F) -> Result<Option<Stored>, Error>
    where
        F: FnMut(&[u8]) -> Result<(), Error> + Send,
    {
        self.pre(Op::Read, key).await?;
        self.inner.stream(key, sink).await
    }
    async fn presign_get(&self, key: &str, version: Option<&str>, ttl: Duration) -> Result<String, Error> {
        self.inner.presign_get(key, version, ttl).await
    }
}

/// The rejections logged for `key`.
fn rejections_logged(s: &MemoryStorage, key: &str) -> usize {
    s.keys()
        .into_iter()
        .filter(|k| k.starts_with(layout::PUBLISH_LOG_CHAINS) && !k.ends_with("head.json"))
        .filter_map(|k| serde_json::from_slice::<Entry>(&s.peek(&k).unwrap()).ok())
        .filter(|e| e.change.action == Action::Reject && e.change.key == key)
        .count()
}

/// Two storages whose first write of a rejection record waits for the other's: two
/// deliveries of one event, run at once.
fn meeting_at_the_record(s: &MemoryStorage) -> (Hooked<'_>, Hooked<'_>) {
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let hook = |barrier: Arc<tokio::sync::Barrier>| -> Before {
        Box::new(move |op, key: &str| {
            let barrier = barrier.clone();
            let gated = op == Op::Put && key.starts_with(layout::REJECTIONS_PREFIX);
            Box::pin(async move {
                if gated {
                    // Once each: the second put of either goes on alone.
                    let _ = tokio::time::timeout(Duration::from_secs(2), barrier.wait()).await;
                }
            })
        })
    };
    let (mut one, mut two) = (Hooked::new(s), Hooked::new(s));
    one.before = Some(hook(barrier.clone()));
    two.before = Some(hook(barrier));
    (one, two)
}

/// An event delivered twice at once (S3 delivers at least once): one record, one entry, for a
/// bad archive of an owner and for a key that belongs to none.
#[tokio::test]
async fn two_deliveries_at_once_log_one_rejection() {
    for (bad, first) in [("modules/acme/vpc/aws/2.0.0.tar.gz", true), ("modules/acme/vpc/1.0.0.tar.gz", false)] {
        let s = MemoryStorage::new();
        if first {
            s.insert("modules/acme/vpc/aws/1.0.0.tar.gz", tf("one"));
            Indexer::new(&s, Limits::default()).on_object_changed("modules/acme/vpc/aws/1.0.0.tar.gz").await.unwrap();
        }
        s.insert(bad, b"not a gzip stream".to_vec());
        let (one, two) = meeting_at_the_record(&s);
        let (a, b) = (Indexer::new(&one, Limits::default()), Indexer::new(&two, Limits::default()));
        let (a, b) = tokio::join!(a.on_object_changed(bad), b.on_object_changed(bad));
        a.unwrap();
        b.unwrap();
        assert_eq!(rejections_logged(&s, bad), 1, "{bad}");
        assert!(publish_log::audit::audit(&s).await.unwrap().is_clean());
    }
}

/// A record whose write died before its entry, then its upload deleted: the entry is appended
/// before the record goes.
#[tokio::test]
async fn a_record_deleted_before_its_entry_is_logged_first() {
    let s = MemoryStorage::new();
    let key = "modules/acme/vpc/1.0.0.tar.gz";
    s.insert(key, tf("x"));
    let mut crash = Hooked::new(&s);
    crash.dies_after_put_of = Some(layout::rejection(key));
    assert!(Indexer::new(&crash, Limits::default()).on_object_changed(key).await.is_err());
    assert!(s.peek(&layout::rejection(key)).is_some_and(|b| b.windows(10).any(|w| w == b"unfinished")));
    s.remove(key);
    Indexer::new(&s, Limits::default()).on_object_changed(key).await.unwrap();
    Indexer::new(&s, Limits::default()).on_object_changed(key).await.unwrap();
    assert_eq!(rejections_logged(&s, key), 1);
    assert!(s.peek(&layout::rejection(key)).is_none(), "the record went with its upload");
}

/// A manifest whose unfinished write holds a step this release does not know (a newer
/// release's): the pass fails, loudly, and leaves it; never built on, never overwritten.
#[tokio::test]
async fn an_unfinished_write_this_release_cannot_read_stops_the_pass() {
    let s = MemoryStorage::new();
    let indexer = Indexer::new(&s, Limits::default());
    s.insert("modules/acme/vpc/aws/1.0.0.tar.gz", tf("one"));
    indexer.on_object_changed("modules/acme/vpc/aws/1.0.0.tar.gz").await.unwrap();
    s.insert("modules/acme/vpc/aws/1.1.0.tar.gz", tf("two"));
    let mut newer = Hooked::new(&s);
    newer.rewrite = Some(Box::new(|key, body| {
        if key != MANIFEST {
            return body;
        }
        let mut document: serde_json::Value = serde_json::from_slice(&body).unwrap();
        if let Some(unfinished) = document.get_mut("unfinished").and_then(|u| u.as_object_mut()) {
            unfinished.insert("oci".into(), serde_json::json!([{"do": "purge", "key": "x"}]));
        }
        Bytes::from(serde_json::to_vec(&document).unwrap())
    }));
    newer.dies_after_put_of = Some(MANIFEST.to_string());
    assert!(
        Indexer::new(&newer, Limits::default()).on_object_changed("modules/acme/vpc/aws/1.1.0.tar.gz").await.is_err()
    );
    let held = s.peek(MANIFEST).unwrap();
    let error = indexer.on_object_changed("modules/acme/vpc/aws/1.1.0.tar.gz").await.unwrap_err();
    assert!(crate::error::chain(&error).contains("cannot read"), "{}", crate::error::chain(&error));
    assert_eq!(s.peek(MANIFEST).unwrap(), held, "left as it was");
    let report = publish_log::audit::audit(&s).await.unwrap();
    assert!(report.unexplained.iter().any(|u| u.contains("1.1.0") && u.contains("still owed")), "{report:?}");
}

/// A yank's tag deletion done late (a slow request of one of two passes finishing the yank)
/// after the other has published the version again: the step is not done, the tag stays.
#[tokio::test]
async fn a_late_oci_step_does_not_undo_a_newer_manifest() {
    let s = MemoryStorage::new();
    let indexer = Indexer::new(&s, Limits::default());
    let (one, two) = ("modules/acme/vpc/aws/1.0.0.tar.gz", "modules/acme/vpc/aws/1.1.0.tar.gz");
    s.insert(one, tf("one"));
    indexer.on_object_changed(one).await.unwrap();
    s.insert(two, tf("two"));
    indexer.on_object_changed(two).await.unwrap();
    let address = crate::address::ModuleAddress::parse("acme", "vpc", "aws").unwrap();
    let tag = layout::oci_module_tag(&address, &crate::oci::name::tag(&semver::Version::parse("1.1.0").unwrap()));
    assert!(s.peek(&tag).is_some());
    // Yanked; the pass dies right after its manifest write.
    let bytes = s.peek(two).unwrap();
    s.remove(two);
    let mut crash = Hooked::new(&s);
    crash.dies_after_put_of = Some(MANIFEST.to_string());
    assert!(Indexer::new(&crash, Limits::default()).on_object_changed(two).await.is_err());
    // Uploaded again. The yank's retry (slow: it waits before its first OCI step) and the new
    // upload's pass both read the unfinished manifest; the upload's finishes first.
    s.insert(two, bytes.to_vec());
    let (at_step, go_on) = (Arc::new(tokio::sync::Notify::new()), Arc::new(tokio::sync::Notify::new()));
    let mut slow = Hooked::new(&s);
    let (waited, requests) = (Arc::new(AtomicBool::new(false)), Arc::new(std::sync::atomic::AtomicUsize::new(0)));
    let (at, go, flag) = (at_step.clone(), go_on.clone(), waited.clone());
    slow.before = Some(Box::new(move |op, key: &str| {
        // Its first request is its read of the manifest; it stalls at the one after that,
        // whatever that is (the first thing it does about the manifest's OCI steps).
        let n = requests.fetch_add(1, Ordering::SeqCst);
        assert!(n > 0 || (op == Op::Read && key == MANIFEST), "the slow pass begins with the manifest");
        let (at, go, flag) = (at.clone(), go.clone(), flag.clone());
        Box::pin(async move {
            if n == 1 {
                flag.store(true, Ordering::SeqCst);
                at.notify_one();
                go.notified().await;
            }
        })
    }));
    let slow_indexer = Indexer::new(&slow, Limits::default());
    let (b, c) = tokio::join!(slow_indexer.on_object_changed(two), async {
        at_step.notified().await;
        let c = indexer.on_object_changed(two).await;
        go_on.notify_one();
        c
    });
    b.unwrap();
    c.unwrap();
    assert!(waited.load(Ordering::SeqCst), "the slow pass waited at its step");
    assert!(versions(&s).contains(&"1.1.0".to_string()), "1.1.0 is served");
    assert!(s.peek(&tag).is_some(), "and tagged");
}

/// A yank whose log entry cannot be written (a chain whose writes hang): its OCI tag is
/// taken down all the same, before the log is tried.
#[tokio::test]
async fn a_yank_takes_its_oci_tag_down_while_the_log_cannot_be_written() {
    let s = MemoryStorage::new();
    let indexer = Indexer::new(&s, Limits::default());
    let (one, two) = ("modules/acme/vpc/aws/1.0.0.tar.gz", "modules/acme/vpc/aws/1.1.0.tar.gz");
    s.insert(one, tf("one"));
    indexer.on_object_changed(one).await.unwrap();
    s.insert(two, tf("two"));
    indexer.on_object_changed(two).await.unwrap();
    let address = crate::address::ModuleAddress::parse("acme", "vpc", "aws").unwrap();
    let tag = layout::oci_module_tag(&address, &crate::oci::name::tag(&semver::Version::parse("1.1.0").unwrap()));
    s.remove(two);
    let mut broken = Hooked::new(&s);
    broken.before = Some(Box::new(move |op, key: &str| {
        let hangs = op == Op::Put && key.starts_with(layout::PUBLISH_LOG_CHAINS);
        Box::pin(async move {
            if hangs {
                std::future::pending::<()>().await;
            }
        })
    }));
    let pass = Indexer::new(&broken, Limits::default());
    assert!(tokio::time::timeout(Duration::from_millis(500), pass.on_object_changed(two)).await.is_err());
    assert!(!versions(&s).contains(&"1.1.0".to_string()), "yanked");
    assert!(s.peek(&tag).is_none(), "and no longer pulled over OCI");
    // Once the log can be written again, the retry logs the yank.
    indexer.on_object_changed(two).await.unwrap();
    assert!(publish_log::audit::audit(&s).await.unwrap().is_clean());
}

/// A new version whose manifest write fails: no OCI tag names it (a tag is a step of the
/// manifest's write), so nothing serves it; deleted before the retry, it leaves no tag behind.
#[tokio::test]
async fn no_tag_names_a_version_before_a_manifest_serves_it() {
    let s = MemoryStorage::new();
    let key = "modules/acme/vpc/aws/1.0.0.tar.gz";
    s.insert(key, tf("one"));
    let mut refusing = Hooked::new(&s);
    refusing.before = Some(Box::new(move |op, key: &str| {
        let refused = op == Op::Put && key == MANIFEST;
        Box::pin(async move {
            if refused {
                std::future::pending::<()>().await;
            }
        })
    }));
    let pass = Indexer::new(&refusing, Limits::default());
    assert!(tokio::time::timeout(Duration::from_millis(500), pass.on_object_changed(key)).await.is_err());
    let tags: Vec<String> = s.keys().into_iter().filter(|k| k.contains("/tags/")).collect();
    assert!(tags.is_empty(), "{tags:?}");
    s.remove(key);
    Indexer::new(&s, Limits::default()).on_object_changed(key).await.unwrap();
    assert!(s.keys().iter().all(|k| !k.contains("/tags/")));
    assert!(publish_log::audit::audit(&s).await.unwrap().is_clean());
}
