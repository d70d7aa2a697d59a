use super::fixtures::*;
use super::*;
use crate::manifest::ProviderIndex;
use crate::storage::{MemoryStorage, Object, ObjectInfo, Precondition};
use crate::testing::{tar_gz as tar_gz_of, zip as zip_of};
use bytes::Bytes;

#[tokio::test]
async fn misnamed_and_misplaced_uploads_are_explained() {
    let s = MemoryStorage::new();
    let indexer = Indexer::new(&s, Limits::default());
    let keys = [
        "modules/acme/vpc/aws/v1.0.0.tar.gz",
        "modules/acme/vpc/1.0.0.tar.gz",
        "modules/Acme Corp/vpc/aws/1.0.0.tar.gz",
        "providers/registry.terraform.io/hashicorp/null/terraform-provider-null_v3.2.1_linux_amd64.zip",
        "providers/hashicorp/null/terraform-provider-null_3.2.1_linux_amd64.zip",
    ];
    for key in keys {
        s.insert(key, tf("x"));
        indexer.on_object_changed(key).await.unwrap();
        let record = rejection(&s, key).unwrap_or_else(|| panic!("{key} has no rejection record"));
        assert!(record.reason.contains("the registry indexes"), "{key}: {}", record.reason);
    }
    assert!(s.peek(MANIFEST).is_none(), "nothing was published");
    // Keys elsewhere in the bucket are not the registry's business.
    s.insert("docs/readme.md", "x");
    assert_eq!(indexer.on_object_changed("docs/readme.md").await.unwrap(), None);
    assert!(rejection(&s, "docs/readme.md").is_none());
    // Deleting them clears their records.
    for key in keys {
        s.delete(key).await.unwrap();
        indexer.on_object_changed(key).await.unwrap();
        assert!(rejection(&s, key).is_none(), "{key}");
    }
}

#[tokio::test]
async fn reindex_all_is_idempotent() {
    let s = MemoryStorage::new();
    s.insert("modules/a/b/c/1.0.0.tgz", tar_gz_of(&[("main.tf", b"x")]));
    s.insert("modules/d/e/f/0.1.0.zip", zip_of(&[("main.tf", b"y")]));
    s.insert(
        "providers/example.com/acme/thing/terraform-provider-thing_1.0.0_linux_amd64.zip",
        zip_of(&[("terraform-provider-thing", b"z")]),
    );
    s.insert("elsewhere/file", "ignored");
    let indexer = Indexer::new(&s, Limits::default());
    let first = indexer.reindex_all().await.unwrap();
    assert_eq!(first.len(), 3);
    assert!(first.iter().all(|(_, o)| matches!(o, Ok(Outcome::Written { versions: 1 }))), "{first:?}");
    let snapshot: Vec<_> = s.keys().into_iter().map(|k| (k.clone(), s.peek(&k))).collect();
    let second = indexer.reindex_all().await.unwrap();
    assert!(second.iter().all(|(_, o)| matches!(o, Ok(Outcome::Unchanged))), "{second:?}");
    let after: Vec<_> = s.keys().into_iter().map(|k| (k.clone(), s.peek(&k))).collect();
    assert_eq!(snapshot, after);
}

/// A manifest planted where publishers write (`modules/…/manifest.json`, pointing at the
/// token store) is never read: not by a pass, not when a garbage upload is rejected next
/// to it, not by `reindex_all`; its upload gets a rejection record saying so.
#[tokio::test]
async fn a_planted_manifest_is_never_read() {
    let s = MemoryStorage::new();
    let indexer = Indexer::new(&s, Limits::default());
    s.insert("modules/acme/vpc/aws/1.0.0.tar.gz", tf("real"));
    let planted = serde_json::json!({"format": 1, "versions": [
        {"version": "6.6.6", "archive": "access/tokens.json", "size": 1, "sha256": "00", "etag": "\"x\""},
        {"version": "1.0.0", "archive": "modules/other/secret/aws/1.0.0.tar.gz", "size": 1, "sha256": "00", "etag": "\"x\""}
    ]});
    s.insert("modules/acme/vpc/aws/manifest.json", serde_json::to_vec(&planted).unwrap());
    s.insert("modules/acme/vpc/aws/2.0.0.tar.gz", b"garbage".to_vec());
    indexer.reindex(&module()).await.unwrap();
    let entries: Vec<(String, String)> = manifest(&s).versions.into_iter().map(|v| (v.version, v.archive)).collect();
    assert_eq!(entries, [("1.0.0".to_string(), "modules/acme/vpc/aws/1.0.0.tar.gz".to_string())]);
    let record = rejection(&s, "modules/acme/vpc/aws/manifest.json").unwrap();
    assert!(record.reason.contains("only the indexer writes them"), "{}", record.reason);
    assert!(rejection(&s, "modules/acme/vpc/aws/2.0.0.tar.gz").is_some());
    let before = s.peek(MANIFEST);
    for (_, outcome) in indexer.reindex_all().await.unwrap() {
        outcome.unwrap();
    }
    assert_eq!(s.peek(MANIFEST), before, "reindex all keeps only what the archives say");
}

#[tokio::test]
async fn reindex_all_goes_on_past_a_failing_owner() {
    let s = MemoryStorage::new();
    s.insert("modules/a/b/c/1.0.0.tgz", tar_gz_of(&[("main.tf", b"x")]));
    s.insert("modules/d/e/f/0.1.0.tgz", tar_gz_of(&[("main.tf", b"y")]));
    s.insert("modules/g/h/i/0.1.0.tgz", tar_gz_of(&[("main.tf", b"z")]));
    // The first owner's manifest cannot be read: its pass fails.
    s.deny("indexed/modules/a/b/c/manifest.json");
    let results = Indexer::new(&s, Limits::default()).reindex_all().await.unwrap();
    let outcomes: Vec<(String, bool)> = results.iter().map(|(o, r)| (o.to_string(), r.is_ok())).collect();
    assert_eq!(
        outcomes,
        [("module a/b/c".to_string(), false), ("module d/e/f".to_string(), true), ("module g/h/i".to_string(), true)]
    );
    assert!(s.peek("indexed/modules/g/h/i/manifest.json").is_some(), "indexed after the failure");
}

/// Storage where, the first time a pass writes the key `on`, a rival gets there first: it
/// publishes the archive `rival` and runs its whole pass (manifest and catalog).
struct Racy {
    inner: MemoryStorage,
    on: &'static str,
    rival: &'static str,
    /// The rival deletes its archive instead of publishing it.
    deletes: bool,
    raced: std::sync::atomic::AtomicBool,
}

impl Racy {
    fn new(on: &'static str, rival: &'static str) -> Self {
        Racy { inner: MemoryStorage::new(), on, rival, deletes: false, raced: false.into() }
    }

    fn deleting(on: &'static str, rival: &'static str) -> Self {
        Racy { deletes: true, ..Racy::new(on, rival) }
    }
}

impl Storage for Racy {
    async fn get(&self, key: &str) -> Result<Option<Object>, Error> {
        self.inner.get(key).await
    }
    async fn get_if_changed(&self, key: &str, etag: &str) -> Result<crate::storage::Revalidated, Error> {
        self.inner.get_if_changed(key, etag).await
    }
    async fn etag(&self, key: &str) -> Result<Option<String>, Error> {
        self.inner.etag(key).await
    }
    async fn put(&self, key: &str, body: Bytes, content_type: &str, precondition: Precondition) -> Result<(), Error> {
        self.put_etag(key, body, content_type, precondition).await.map(drop)
    }
    async fn put_etag(
        &self,
        key: &str,
        body: Bytes,
        content_type: &str,
        precondition: Precondition,
    ) -> Result<String, Error> {
        if key == self.on && !self.raced.swap(true, std::sync::atomic::Ordering::SeqCst) {
            if self.deletes {
                self.inner.remove(self.rival);
            } else {
                self.inner.insert(self.rival, tf("rival"));
            }
            Box::pin(Indexer::new(&self.inner, Limits::default()).on_object_changed(self.rival)).await?;
        }
        self.inner.put_etag(key, body, content_type, precondition).await
    }
    async fn put_file(
        &self,
        key: &str,
        path: &std::path::Path,
        content_type: &str,
        precondition: Precondition,
    ) -> Result<(), Error> {
        self.inner.put_file(key, path, content_type, precondition).await
    }
    async fn delete(&self, key: &str) -> Result<(), Error> {
        self.inner.delete(key).await
    }
    async fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>, Error> {
        self.inner.list(prefix).await
    }
    async fn stream<F>(&self, key: &str, sink: F) -> Result<Option<crate::storage::Stored>, Error>
    where
        F: FnMut(&[u8]) -> Result<(), Error> + Send,
    {
        self.inner.stream(key, sink).await
    }
    async fn presign_get(&self, key: &str, version_id: Option<&str>, ttl: Duration) -> Result<String, Error> {
        self.inner.presign_get(key, version_id, ttl).await
    }
}

#[tokio::test]
async fn a_pass_that_loses_a_race_reads_again_and_loses_nothing() {
    let s = Racy::new(MANIFEST, "modules/acme/vpc/aws/9.0.0.tar.gz");
    s.inner.insert("modules/acme/vpc/aws/1.0.0.tar.gz", tf("mine"));
    let outcome = Indexer::new(&s, Limits::default()).reindex(&module()).await.unwrap();
    assert!(s.raced.load(std::sync::atomic::Ordering::SeqCst), "the rival wrote first");
    // The conditional write failed; the retry read the rival's manifest, found both
    // versions already there, and had nothing left to write.
    assert_eq!(outcome, Outcome::Unchanged);
    assert_eq!(versions(&s.inner), ["9.0.0", "1.0.0"]);
}

/// A namespace's catalog shard, which every pass of its modules writes: another module's pass
/// writes it between this pass's read of it and its write; and the index, which a new module
/// of another namespace writes likewise. Every entry and every count is kept.
#[tokio::test]
async fn a_catalog_update_that_loses_a_race_keeps_the_rivals_entry() {
    for (on, rival, address) in [
        ("indexed/catalog/modules/acme.json", "modules/acme/rival/aws/1.0.0.tar.gz", "acme/rival/aws"),
        (layout::CATALOG_INDEX, "modules/other/rival/aws/1.0.0.tar.gz", "other/rival/aws"),
    ] {
        let s = Racy::new(on, rival);
        // An index exists (else the first write would rebuild every part from the manifests).
        s.inner.insert("modules/acme/first/aws/1.0.0.tar.gz", tf("first"));
        let first = Indexer::new(&s.inner, Limits::default());
        first.on_object_changed("modules/acme/first/aws/1.0.0.tar.gz").await.unwrap();
        s.inner.insert("modules/acme/vpc/aws/1.0.0.tar.gz", tf("mine"));
        Indexer::new(&s, Limits::default()).reindex(&module()).await.unwrap();
        assert!(s.raced.load(std::sync::atomic::Ordering::SeqCst), "the rival wrote first");
        let catalog = crate::catalog::stored(&s.inner).await.unwrap();
        let modules: Vec<String> = catalog.modules().map(|e| e.address()).collect();
        let mut want = vec!["acme/first/aws", "acme/vpc/aws", address];
        want.sort_unstable();
        assert_eq!(modules, want, "{on}");
        let index = <crate::catalog::CatalogIndex as crate::catalog::Part>::parse(
            &s.inner.peek(layout::CATALOG_INDEX).unwrap(),
        )
        .unwrap();
        assert_eq!(index, catalog.index(), "{on}: the index counts every shard");
    }
}

/// The index's lost update a pass that writes nothing cannot prevent (found by a red-team
/// review): `acme/a` is deleted, and while its pass writes the index from the emptied shard,
/// `acme/b` is published; that pass finds the index line (aws: 1) already equal to its shard's
/// counts and writes nothing. The deleting pass's write must not then drop the namespace.
#[tokio::test]
async fn an_index_write_from_a_shard_that_changed_meanwhile_counts_again() {
    let s = Racy::new(layout::CATALOG_INDEX, "modules/acme/b/aws/1.0.0.tar.gz");
    s.inner.insert("modules/acme/a/aws/1.0.0.tar.gz", tf("a"));
    Indexer::new(&s.inner, Limits::default()).on_object_changed("modules/acme/a/aws/1.0.0.tar.gz").await.unwrap();
    s.inner.delete("modules/acme/a/aws/1.0.0.tar.gz").await.unwrap();
    Indexer::new(&s, Limits::default()).on_object_changed("modules/acme/a/aws/1.0.0.tar.gz").await.unwrap();
    assert!(s.raced.load(std::sync::atomic::Ordering::SeqCst), "the rival published first");
    let catalog = crate::catalog::stored(&s.inner).await.unwrap();
    assert_eq!(catalog.modules().map(|e| e.address()).collect::<Vec<_>>(), ["acme/b/aws"]);
    let index =
        <crate::catalog::CatalogIndex as crate::catalog::Part>::parse(&s.inner.peek(layout::CATALOG_INDEX).unwrap())
            .unwrap();
    assert_eq!(index, catalog.index(), "the index counts every shard");
}

/// The same at the shard (found by the red-team review): a pass publishing 2.0.0 reads the
/// manifest with it; 2.0.0 is deleted meanwhile, and that pass finds the shard's entry (from
/// 1.0.0) already right and writes nothing. The first pass's write must not then bring 2.0.0
/// back into the catalog.
#[tokio::test]
async fn a_shard_write_from_a_manifest_that_changed_meanwhile_reads_it_again() {
    let s = Racy::deleting("indexed/catalog/modules/acme.json", "modules/acme/vpc/aws/2.0.0.tar.gz");
    s.inner.insert("modules/acme/vpc/aws/1.0.0.tar.gz", tf("one"));
    Indexer::new(&s.inner, Limits::default()).on_object_changed("modules/acme/vpc/aws/1.0.0.tar.gz").await.unwrap();
    s.inner.insert("modules/acme/vpc/aws/2.0.0.tar.gz", tf("two"));
    Indexer::new(&s, Limits::default()).on_object_changed("modules/acme/vpc/aws/2.0.0.tar.gz").await.unwrap();
    assert!(s.raced.load(std::sync::atomic::Ordering::SeqCst), "the rival deleted 2.0.0 first");
    assert_eq!(versions(&s.inner), ["1.0.0"]);
    let catalog = crate::catalog::stored(&s.inner).await.unwrap();
    let entry = catalog.modules().next().unwrap();
    assert_eq!((entry.latest.as_str(), entry.versions), ("1.0.0", 1), "the entry follows the manifest");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_passes_lose_no_version() {
    let s = std::sync::Arc::new(MemoryStorage::new());
    let mut tasks = Vec::new();
    for i in 0..50 {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            s.insert(&format!("modules/acme/vpc/aws/1.{i}.0.tar.gz"), tf(&i.to_string()));
            Indexer::new(&*s, Limits::default()).reindex(&module()).await.unwrap();
            let zip = format!(
                "providers/registry.terraform.io/hashicorp/null/terraform-provider-null_2.{i}.0_linux_amd64.zip"
            );
            s.insert(&zip, provider_zip(&i.to_string()));
            Indexer::new(&*s, Limits::default()).reindex(&provider()).await.unwrap();
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(versions(&s).len(), 50);
    let index =
        ProviderIndex::parse(&s.peek("indexed/providers/registry.terraform.io/hashicorp/null/index.json").unwrap())
            .unwrap();
    assert_eq!(index.versions.len(), 50);
}
