use super::*;
use crate::index::{Indexer, Limits};
use crate::publish_log::{Change, append};
use crate::storage::MemoryStorage;
use crate::testing::tar_gz;

fn change(key: &str) -> Change {
    Change {
        action: Action::Reject,
        key: key.into(),
        sha256: None,
        size: Some(1),
        etag: None,
        version_id: None,
        principal: None,
        reason: Some("test".into()),
    }
}

/// Many indexers appending at once, each with nothing but the bucket (as Lambda
/// containers are): every entry lands exactly once, in one unbroken chain.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_appends_lose_nothing_and_never_fork() {
    let s = std::sync::Arc::new(MemoryStorage::new());
    let mut tasks = Vec::new();
    for writer in 0..8 {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..40 {
                append(&*s, vec![change(&format!("w{writer}/{i}"))]).await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let report = audit(&*s).await.unwrap();
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.entries, 320);
    let mut keys = Vec::new();
    for seq in 1..=320 {
        let entry: Entry = serde_json::from_slice(&s.peek(&layout::publish_log_entry("other", seq)).unwrap()).unwrap();
        keys.push(entry.change.key);
    }
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 320, "each change once");
    let head: Head = serde_json::from_slice(&s.peek(&layout::publish_log_head("other")).unwrap()).unwrap();
    assert_eq!(Some(&head), report.heads.get("other"), "the head names the last entry");
}

/// A bucket with a few publishes, a rejection and a yank on its log, all explained.
async fn published() -> MemoryStorage {
    let s = MemoryStorage::versioned();
    let indexer = Indexer::new(&s, Limits::default());
    for (i, key) in
        ["modules/acme/vpc/aws/1.0.0.tar.gz", "modules/acme/vpc/aws/1.1.0.tar.gz", "modules/acme/db/aws/2.0.0.tar.gz"]
            .iter()
            .enumerate()
    {
        indexer.record_principal(key, "AWS:AIDAPUBLISHER");
        s.insert(key, tar_gz(&[("main.tf", format!("# {i}").as_bytes())]));
        indexer.on_object_changed(key).await.unwrap();
    }
    s.insert("modules/acme/vpc/aws/1.2.0.tar.gz", b"garbage".to_vec());
    indexer.on_object_changed("modules/acme/vpc/aws/1.2.0.tar.gz").await.unwrap();
    s.insert("modules/acme/vpc/aws/0.9.0.tar.gz", tar_gz(&[("main.tf", b"old")]));
    indexer.on_object_changed("modules/acme/vpc/aws/0.9.0.tar.gz").await.unwrap();
    s.remove("modules/acme/vpc/aws/0.9.0.tar.gz");
    indexer.on_object_changed("modules/acme/vpc/aws/0.9.0.tar.gz").await.unwrap();
    s
}

/// The chain of `published`'s changes: all in namespace acme.
const ACME: &str = "modules/acme";

fn key(seq: u64) -> String {
    layout::publish_log_entry(ACME, seq)
}

fn entry(s: &MemoryStorage, seq: u64) -> Entry {
    serde_json::from_slice(&s.peek(&key(seq)).unwrap()).unwrap()
}

/// Whether the first problem found is `problem`, in acme's chain.
fn first_is(report: &Report, problem: &str) -> bool {
    report.chain.first().is_some_and(|p| p.starts_with(&format!("chain {ACME}: {problem}")))
}

#[tokio::test]
async fn a_clean_log_explains_every_served_archive() {
    let s = published().await;
    let report = audit(&s).await.unwrap();
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.entries, 6, "three publishes, a rejection, a publish and its yank");
    let first = entry(&s, 1);
    assert_eq!(first.prev, GENESIS);
    assert_eq!(first.change.action, Action::Publish);
    assert_eq!(first.change.principal.as_deref(), Some("AWS:AIDAPUBLISHER"));
    assert!(first.change.version_id.is_some() && first.change.sha256.as_ref().is_some_and(|h| h.len() == 64));
    assert_eq!(entry(&s, 4).change.action, Action::Reject);
    assert_eq!(entry(&s, 6).change.action, Action::Yank);
}

#[tokio::test]
async fn each_kind_of_tampering_is_named() {
    // An entry edited (the sha256 of a publish swapped for another).
    let s = published().await;
    let edited = String::from_utf8(s.peek(&key(2)).unwrap().to_vec()).unwrap().replace("\"publish\"", "\"yank\"");
    s.insert(&key(2), edited);
    let report = audit(&s).await.unwrap();
    assert!(first_is(&report, "entry 2 was altered"), "{report:?}");

    // The last entry edited: the head records its hash.
    let s = published().await;
    let edited = String::from_utf8(s.peek(&key(6)).unwrap().to_vec()).unwrap().replace("\"yank\"", "\"reject\"");
    s.insert(&key(6), edited);
    let report = audit(&s).await.unwrap();
    assert!(first_is(&report, "entry 6 was altered"), "{report:?}");

    // An entry deleted from the middle, and the last one.
    let s = published().await;
    s.remove(&key(3));
    let report = audit(&s).await.unwrap();
    assert!(first_is(&report, "entry 3 is missing"), "{report:?}");
    let s = published().await;
    s.remove(&key(6));
    let report = audit(&s).await.unwrap();
    assert!(first_is(&report, "entries 6 to 6 are missing"), "{report:?}");

    // Two entries swapped.
    let s = published().await;
    let (a, b) = (s.peek(&key(4)).unwrap(), s.peek(&key(5)).unwrap());
    s.insert(&key(4), b);
    s.insert(&key(5), a);
    let report = audit(&s).await.unwrap();
    assert!(first_is(&report, "entry 4 holds entry 5: entries were reordered"), "{report:?}");

    // A manifest version the log cannot explain: other bytes written into the manifest.
    let s = published().await;
    let manifest_key = "indexed/modules/acme/vpc/aws/manifest.json";
    let mut manifest = ModuleManifest::parse(&s.peek(manifest_key).unwrap()).unwrap();
    manifest.versions[0].sha256 = "f".repeat(64);
    s.insert(manifest_key, serde_json::to_vec(&manifest).unwrap());
    let report = audit(&s).await.unwrap();
    assert!(report.chain.is_empty(), "{report:?}");
    assert_eq!(report.unexplained.len(), 1, "{report:?}");
    assert!(report.unexplained[0].starts_with("module acme/vpc/aws 1.1.0 serves"), "{report:?}");

    // And a version added to a manifest by hand.
    let s = published().await;
    let mut manifest = ModuleManifest::parse(&s.peek(manifest_key).unwrap()).unwrap();
    let mut extra = manifest.versions[0].clone();
    extra.version = "9.9.9".into();
    extra.archive = "modules/acme/vpc/aws/9.9.9.tar.gz".into();
    manifest.versions.push(extra);
    s.insert(manifest_key, serde_json::to_vec(&manifest).unwrap());
    let report = audit(&s).await.unwrap();
    assert!(report.unexplained.iter().any(|u| u.contains("9.9.9")), "{report:?}");
}

/// Each namespace's changes go to its own chain, so publishes in different namespaces never
/// contend for an entry; the single chain of a bucket from before is audited too, first, and
/// an entry copied into another namespace's chain explains nothing there.
#[tokio::test]
async fn chains_per_namespace_and_the_chain_of_before_are_audited_together() {
    let s = published().await;
    // The chain of before: acme's entries as they would have been written then.
    for seq in 1..=6 {
        let bytes = s.peek(&key(seq)).unwrap();
        s.insert(&layout::publish_log_entry("", seq), bytes.to_vec());
    }
    s.insert(layout::PUBLISH_LOG_HEAD, s.peek(&layout::publish_log_head(ACME)).unwrap().to_vec());
    let indexer = Indexer::new(&s, Limits::default());
    s.insert("modules/other/net/aws/1.0.0.tar.gz", tar_gz(&[("main.tf", b"# other")]));
    indexer.on_object_changed("modules/other/net/aws/1.0.0.tar.gz").await.unwrap();
    let report = audit(&s).await.unwrap();
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.entries, 13);
    assert_eq!(report.heads.keys().collect::<Vec<_>>(), ["", ACME, "modules/other"]);
    assert_eq!(report.heads["modules/other"].seq, 1, "a chain of its own, from entry 1");

    // acme's second entry copied into other's chain as its entry 2: named, and it explains
    // nothing (acme's own chain still does).
    s.insert(&layout::publish_log_entry("modules/other", 2), s.peek(&key(2)).unwrap().to_vec());
    let report = audit(&s).await.unwrap();
    let named = report.chain.iter().any(|p| p.starts_with("chain modules/other: entry 2 is about modules/acme/"));
    assert!(named, "{report:?}");

    // An entry slipped in beside the chain of before under a key that once parsed as its own
    // (found by a red-team review): not an entry, and named.
    s.remove(&layout::publish_log_entry("modules/other", 2));
    let forged = "indexed/log/chains//entries/000000000003.json";
    s.insert(forged, s.peek(&layout::publish_log_entry("", 3)).unwrap().to_vec());
    let report = audit(&s).await.unwrap();
    assert_eq!(report.chain, [format!("{forged} is not a publish log entry")], "{report:?}");
}

#[test]
fn each_upload_key_has_one_chain_and_no_key_names_a_path_of_its_own() {
    for (key, chain) in [
        ("modules/acme/vpc/aws/1.0.0.tar.gz", "modules/acme"),
        ("modules/acme/vpc/aws/1.0.0.deprecation.json", "modules/acme"),
        ("modules/acme/notes.txt", "modules/acme"),
        (
            "providers/registry.example.com/acme/widget/terraform-provider-widget_1.0.0_linux_amd64.zip",
            "providers/registry.example.com/acme",
        ),
        (
            "upstream-modules/registry.terraform.io/terraform-aws-modules/vpc/aws/5.0.0.pin.json",
            "upstream-modules/registry.terraform.io/terraform-aws-modules",
        ),
        ("modules/../x/y", "other"),
        ("modules/acme", "other"),
        ("providers/../../x", "other"),
        ("elsewhere/acme/x", "other"),
        ("", "other"),
    ] {
        assert_eq!(layout::publish_log_chain(key), chain, "{key}");
        let entry = layout::publish_log_entry(chain, 7);
        assert_eq!(layout::publish_log_seq(&entry), Some((chain.to_string(), 7)), "{entry}");
        assert_eq!(layout::publish_log_head_chain(&layout::publish_log_head(chain)), Some(chain));
        assert_eq!(layout::publish_log_head_chain(&entry), None);
    }
    // A namespace may be called `entries`: its head is a head, its entries entries.
    let chain = layout::publish_log_chain("modules/entries/m/aws/1.0.0.tar.gz");
    assert_eq!(chain, "modules/entries");
    assert_eq!(layout::publish_log_head_chain(&layout::publish_log_head(&chain)), Some("modules/entries"));
    let entry = layout::publish_log_entry(&chain, 1);
    assert_eq!(layout::publish_log_seq(&entry), Some((chain.clone(), 1)));
    // Keys no chain has: never an entry or a head, above all never one of the chain of before.
    for key in [
        "indexed/log/chains//entries/000000000003.json",
        "indexed/log/chains/entries/000000000003.json",
        "indexed/log/chains/modules/acme/x/entries/000000000003.json",
        "indexed/log/chains/modules/../entries/000000000003.json",
        "indexed/log/chains/x/entries/entries/000000000001.json",
        "indexed/log/chains//head.json",
        "indexed/log/chains/modules/head.json",
    ] {
        assert_eq!(layout::publish_log_seq(key), None, "{key}");
        assert_eq!(layout::publish_log_head_chain(key), None, "{key}");
    }
    assert_eq!(layout::publish_log_seq("indexed/log/entries/000000000003.json"), Some((String::new(), 3)));
    assert_eq!(layout::publish_log_seq("indexed/log/chains/modules/acme/entries/3.json"), None);
}
