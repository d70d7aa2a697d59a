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
mod tests;
