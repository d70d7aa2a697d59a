//! Replaying the publish log and comparing it with what is served (`make audit`,
//! `registry-local audit`, the indexer function's `{"audit": "all"}`).
//!
//! Two findings: where the chain breaks (the first entry altered, missing or out of order,
//! and anything after it that breaks again), and every archive a manifest serves that no
//! `publish` entry (with the same bytes, not yanked since) explains.

use std::collections::BTreeMap;

use futures_util::StreamExt;

use super::{Action, Entry, GENESIS, Head, entry_hash};
use crate::error::Error;
use crate::layout::{self, ObjectKind};
use crate::manifest::{ModuleManifest, ProviderVersion};
use crate::storage::Storage;

/// Entries read at once.
const READS_IN_FLIGHT: usize = 16;

/// What an audit found.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Report {
    /// Entries read.
    pub entries: u64,
    /// The last entry: compare its hash with a copy kept outside the bucket (the indexer's
    /// log prints every entry's hash) to catch a chain rewritten from its start.
    pub head: Option<Head>,
    /// Where the chain breaks, first break first.
    pub chain: Vec<String>,
    /// Served archives the log does not explain.
    pub unexplained: Vec<String>,
}

impl Report {
    /// Nothing found.
    pub fn is_clean(&self) -> bool {
        self.chain.is_empty() && self.unexplained.is_empty()
    }
}

/// What the log says is published under one key.
struct Published {
    sha256: Option<String>,
    version_id: Option<String>,
}

/// Replay the chain and compare it with every manifest.
pub async fn audit<S: Storage>(storage: &S) -> Result<Report, Error> {
    let mut report = Report::default();
    let listed = storage.list(layout::PUBLISH_LOG_ENTRIES).await?;
    let mut reads = futures_util::stream::iter(listed.into_iter().map(|object| async move {
        let read = storage.get(&object.key).await;
        (object.key, read)
    }))
    .buffered(READS_IN_FLIGHT);

    let mut published: BTreeMap<String, Published> = BTreeMap::new();
    let mut hashes: BTreeMap<u64, String> = BTreeMap::new();
    let (mut expected, mut prev) = (1u64, GENESIS.to_string());
    while let Some((key, read)) = reads.next().await {
        let Some(seq) = layout::publish_log_seq(&key) else {
            report.chain.push(format!("{} is not a publish log entry", crate::address::printable(&key)));
            continue;
        };
        let object = match read {
            Ok(Some(object)) => object,
            // Deleted since the listing: the next entry's check names the gap.
            Ok(None) => continue,
            // Bytes that fail S3's own checksum were changed behind S3's back.
            Err(Error::Corrupt(why)) => {
                report.entries += 1;
                report.chain.push(format!("entry {seq} was altered: {why}"));
                (expected, prev) = (seq + 1, String::new());
                continue;
            }
            Err(e) => return Err(e),
        };
        report.entries += 1;
        let hash = entry_hash(&object.bytes);
        if seq > expected {
            let missing = if seq == expected + 1 {
                format!("entry {expected} is missing")
            } else {
                format!("entries {expected} to {} are missing", seq - 1)
            };
            report.chain.push(format!("{missing} (deleted): entry {seq} follows entry {}", expected - 1));
        }
        match serde_json::from_slice::<Entry>(&object.bytes) {
            Err(e) => report.chain.push(format!("entry {seq} was altered: it is not an entry ({e})")),
            Ok(entry) if entry.seq != seq => {
                report.chain.push(format!("entry {seq} holds entry {}: entries were reordered", entry.seq));
            }
            Ok(entry) => {
                if seq == expected && entry.prev != prev && !prev.is_empty() {
                    report.chain.push(format!(
                        "entry {} was altered: it hashes to {prev}, and entry {seq} chains to {}",
                        seq - 1,
                        entry.prev
                    ));
                }
                let change = entry.change;
                match change.action {
                    Action::Publish => {
                        published
                            .insert(change.key, Published { sha256: change.sha256, version_id: change.version_id });
                    }
                    Action::Yank => {
                        published.remove(&change.key);
                    }
                    Action::Reject | Action::Deprecate | Action::Undeprecate => {}
                }
            }
        }
        hashes.insert(seq, hash.clone());
        report.head = Some(Head { seq, hash: hash.clone() });
        (expected, prev) = (seq + 1, hash);
    }

    check_head(storage, &hashes, expected, &mut report.chain).await?;
    report.unexplained = unexplained(storage, &published).await?;
    Ok(report)
}

/// The head names the last entry an appender wrote: it must still be there, unchanged.
/// `hashes`: each entry's hash as read; `expected`: the entry after the last one read.
async fn check_head<S: Storage>(
    storage: &S,
    hashes: &BTreeMap<u64, String>,
    expected: u64,
    chain: &mut Vec<String>,
) -> Result<(), Error> {
    if let Some(o) = storage.get(layout::PUBLISH_LOG_HEAD).await?
        && let Ok(head) = serde_json::from_slice::<Head>(&o.bytes)
        && head.seq > 0
    {
        match hashes.get(&head.seq) {
            None if head.seq >= expected => chain.push(format!(
                "entries {expected} to {} are missing (deleted): the head names entry {}",
                head.seq, head.seq
            )),
            None => {}
            Some(hash) if *hash != head.hash => chain.push(format!(
                "entry {} was altered: it hashes to {hash}, and the head records {}",
                head.seq, head.hash
            )),
            Some(_) => {}
        }
    }
    Ok(())
}

/// Every served archive with no `publish` entry for its bytes.
async fn unexplained<S: Storage>(storage: &S, published: &BTreeMap<String, Published>) -> Result<Vec<String>, Error> {
    let explained = |key: &str, sha256: &str, version_id: Option<&str>| {
        published.get(key).is_some_and(|p| {
            p.sha256.as_deref() == Some(sha256) && (version_id.is_none() || p.version_id.as_deref() == version_id)
        })
    };
    let mut found = Vec::new();
    for prefix in [
        format!("{}{}", layout::INDEXED_PREFIX, layout::MODULES_PREFIX),
        format!("{}{}", layout::INDEXED_PREFIX, layout::PROVIDERS_PREFIX),
    ] {
        for object in storage.list(&prefix).await? {
            let kind = layout::classify(&object.key);
            if !matches!(kind, Some(ObjectKind::ModuleManifest(_) | ObjectKind::ProviderVersion { .. })) {
                continue;
            }
            let Some(read) = storage.get(&object.key).await? else { continue };
            match kind {
                Some(ObjectKind::ModuleManifest(module)) => {
                    let Ok(manifest) = ModuleManifest::parse(&read.bytes) else {
                        found.push(format!("{}: not a module manifest", object.key));
                        continue;
                    };
                    for v in manifest.versions {
                        if !explained(&v.archive, &v.sha256, v.version_id.as_deref()) {
                            found.push(format!(
                                "module {module} {} serves {} (sha256 {}), which no publish entry explains",
                                v.version, v.archive, v.sha256
                            ));
                        }
                    }
                }
                Some(ObjectKind::ProviderVersion { provider, version }) => {
                    let Ok(document) = ProviderVersion::parse(&read.bytes) else {
                        found.push(format!("{}: not a provider version document", object.key));
                        continue;
                    };
                    let prefix = layout::provider_prefix(&provider);
                    for (platform, archive) in &document.archives {
                        let key = format!("{prefix}{}", archive.url);
                        let sha256 = archive.zh();
                        if !explained(&key, sha256, archive.version_id()) {
                            found.push(format!(
                                "provider {provider} {version} {platform} serves {key} (sha256 {sha256}), which no \
                                 publish entry explains"
                            ));
                        }
                    }
                }
                _ => {}
            }
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
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
            let entry: Entry = serde_json::from_slice(&s.peek(&layout::publish_log_entry(seq)).unwrap()).unwrap();
            keys.push(entry.change.key);
        }
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), 320, "each change once");
        let head: Head = serde_json::from_slice(&s.peek(layout::PUBLISH_LOG_HEAD).unwrap()).unwrap();
        assert_eq!(head, report.head.unwrap(), "the head names the last entry");
    }

    /// A bucket with a few publishes, a rejection and a yank on its log, all explained.
    async fn published() -> MemoryStorage {
        let s = MemoryStorage::versioned();
        let indexer = Indexer::new(&s, Limits::default());
        for (i, key) in [
            "modules/acme/vpc/aws/1.0.0.tar.gz",
            "modules/acme/vpc/aws/1.1.0.tar.gz",
            "modules/acme/db/aws/2.0.0.tar.gz",
        ]
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

    fn entry(s: &MemoryStorage, seq: u64) -> Entry {
        serde_json::from_slice(&s.peek(&layout::publish_log_entry(seq)).unwrap()).unwrap()
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
        let key = layout::publish_log_entry(2);
        let edited = String::from_utf8(s.peek(&key).unwrap().to_vec()).unwrap().replace("\"publish\"", "\"yank\"");
        s.insert(&key, edited);
        let report = audit(&s).await.unwrap();
        assert!(report.chain[0].starts_with("entry 2 was altered"), "{report:?}");

        // The last entry edited: the head records its hash.
        let s = published().await;
        let key = layout::publish_log_entry(6);
        let edited = String::from_utf8(s.peek(&key).unwrap().to_vec()).unwrap().replace("\"yank\"", "\"reject\"");
        s.insert(&key, edited);
        let report = audit(&s).await.unwrap();
        assert!(report.chain[0].starts_with("entry 6 was altered"), "{report:?}");

        // An entry deleted from the middle, and the last one.
        let s = published().await;
        s.remove(&layout::publish_log_entry(3));
        let report = audit(&s).await.unwrap();
        assert!(report.chain[0].starts_with("entry 3 is missing"), "{report:?}");
        let s = published().await;
        s.remove(&layout::publish_log_entry(6));
        let report = audit(&s).await.unwrap();
        assert!(report.chain[0].starts_with("entries 6 to 6 are missing"), "{report:?}");

        // Two entries swapped.
        let s = published().await;
        let (a, b) = (s.peek(&layout::publish_log_entry(4)).unwrap(), s.peek(&layout::publish_log_entry(5)).unwrap());
        s.insert(&layout::publish_log_entry(4), b);
        s.insert(&layout::publish_log_entry(5), a);
        let report = audit(&s).await.unwrap();
        assert!(report.chain[0].starts_with("entry 4 holds entry 5: entries were reordered"), "{report:?}");

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
}
