//! Replaying the publish log and comparing it with what is served (`make audit`,
//! `registry-local audit`, the indexer function's `{"audit": "all"}`).
//!
//! Two findings: where each chain breaks, naming the chain (the first entry altered, missing or out of order,
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
    /// Entries read, in every chain.
    pub entries: u64,
    /// Each chain's last entry (`""`: the single chain of before): compare its hash with a
    /// copy kept outside the bucket (the indexer's log prints every entry's hash and chain)
    /// to catch a chain rewritten from its start.
    pub heads: BTreeMap<String, Head>,
    /// Where a chain breaks, first break first, each naming its chain.
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

/// Replay every chain (the single chain of before first, whose changes came first) and
/// compare what they say is published with every manifest.
pub async fn audit<S: Storage>(storage: &S) -> Result<Report, Error> {
    let mut report = Report::default();
    let mut chains: BTreeMap<String, Vec<(u64, String)>> = BTreeMap::new();
    for object in storage.list(layout::PUBLISH_LOG_PREFIX).await? {
        if let Some(chain) = head_chain(&object.key) {
            chains.entry(chain).or_default();
            continue;
        }
        match layout::publish_log_seq(&object.key) {
            Some((chain, seq)) => chains.entry(chain).or_default().push((seq, object.key)),
            None => report.chain.push(format!("{} is not a publish log entry", crate::address::printable(&object.key))),
        }
    }
    // The chain of before first (its changes came first), then the others a few at once:
    // each holds its own keys only, so their order among themselves says nothing.
    let before = chains.remove("").map(|keys| (String::new(), keys));
    let replayed = futures_util::stream::iter(before)
        .map(|(chain, keys)| replay(storage, chain, keys))
        .buffered(1)
        .chain(
            futures_util::stream::iter(chains)
                .map(|(chain, keys)| replay(storage, chain, keys))
                .buffered(CHAINS_IN_FLIGHT),
        )
        .collect::<Vec<_>>()
        .await;
    let mut published: BTreeMap<String, Published> = BTreeMap::new();
    for replayed in replayed {
        let Replayed { chain, entries, head, problems, changes } = replayed?;
        report.entries += entries;
        let label = if chain.is_empty() { String::new() } else { format!("chain {chain}: ") };
        report.chain.extend(problems.into_iter().map(|p| format!("{label}{p}")));
        if let Some(head) = head {
            report.heads.insert(chain, head);
        }
        for (key, now) in changes {
            match now {
                Some(p) => published.insert(key, p),
                None => published.remove(&key),
            };
        }
    }
    report.unexplained = unexplained(storage, &published).await?;
    Ok(report)
}

/// Chains replayed at once.
const CHAINS_IN_FLIGHT: usize = 8;

/// One chain replayed.
struct Replayed {
    chain: String,
    /// Entries read.
    entries: u64,
    /// Its last entry.
    head: Option<Head>,
    /// Where it breaks.
    problems: Vec<String>,
    /// What it says is published under each of its keys at its end (`None`: yanked).
    changes: BTreeMap<String, Option<Published>>,
}

/// The chain whose head `key` is, if it is one.
fn head_chain(key: &str) -> Option<String> {
    layout::publish_log_head_chain(key).map(str::to_string)
}

/// Replay one chain's entries (`keys`, in any order: sorted here).
async fn replay<S: Storage>(storage: &S, chain: String, mut keys: Vec<(u64, String)>) -> Result<Replayed, Error> {
    keys.sort();
    let mut published: BTreeMap<String, Option<Published>> = BTreeMap::new();
    let mut problems = Vec::new();
    let mut reads = futures_util::stream::iter(keys.into_iter().map(|(seq, key)| async move {
        let read = storage.get(&key).await;
        (seq, read)
    }))
    .buffered(READS_IN_FLIGHT);
    let (mut entries, mut last) = (0, None);
    let mut hashes: BTreeMap<u64, String> = BTreeMap::new();
    let (mut expected, mut prev) = (1u64, GENESIS.to_string());
    while let Some((seq, read)) = reads.next().await {
        let object = match read {
            Ok(Some(object)) => object,
            // Deleted since the listing: the next entry's check names the gap.
            Ok(None) => continue,
            // Bytes that fail S3's own checksum were changed behind S3's back.
            Err(Error::Corrupt(why)) => {
                entries += 1;
                problems.push(format!("entry {seq} was altered: {why}"));
                (expected, prev) = (seq + 1, String::new());
                continue;
            }
            Err(e) => return Err(e),
        };
        entries += 1;
        let hash = entry_hash(&object.bytes);
        if seq < expected {
            // Only one key names each number (`layout::publish_log_seq`), so this is not
            // reachable by a key; kept so that no second entry of a number is ever replayed.
            problems.push(format!("entry {seq} appears twice"));
            continue;
        }
        if seq > expected {
            let missing = if seq == expected + 1 {
                format!("entry {expected} is missing")
            } else {
                format!("entries {expected} to {} are missing", seq - 1)
            };
            problems.push(format!("{missing} (deleted): entry {seq} follows entry {}", expected - 1));
        }
        match serde_json::from_slice::<Entry>(&object.bytes) {
            Err(e) => problems.push(format!("entry {seq} was altered: it is not an entry ({e})")),
            Ok(entry) if entry.seq != seq => {
                problems.push(format!("entry {seq} holds entry {}: entries were reordered", entry.seq));
            }
            // An entry copied from another chain (its change is another namespace's) would
            // explain an archive there: named, and not replayed.
            Ok(entry) if !chain.is_empty() && layout::publish_log_chain(&entry.change.key) != *chain => {
                problems.push(format!("entry {seq} is about {}, of another chain", entry.change.key));
            }
            Ok(entry) => {
                if seq == expected && entry.prev != prev && !prev.is_empty() {
                    problems.push(format!(
                        "entry {} was altered: it hashes to {prev}, and entry {seq} chains to {}",
                        seq - 1,
                        entry.prev
                    ));
                }
                let change = entry.change;
                match change.action {
                    Action::Publish => {
                        let now = Published { sha256: change.sha256, version_id: change.version_id };
                        published.insert(change.key, Some(now));
                    }
                    Action::Yank => {
                        published.insert(change.key, None);
                    }
                    Action::Reject | Action::Deprecate | Action::Undeprecate => {}
                }
            }
        }
        hashes.insert(seq, hash.clone());
        last = Some(Head { seq, hash: hash.clone() });
        (expected, prev) = (seq + 1, hash);
    }
    check_head(storage, &chain, &hashes, expected, &mut problems).await?;
    Ok(Replayed { chain, entries, head: last, problems, changes: published })
}

/// The head names the last entry an appender wrote: it must still be there, unchanged.
/// `hashes`: each entry's hash as read; `expected`: the entry after the last one read.
async fn check_head<S: Storage>(
    storage: &S,
    chain_name: &str,
    hashes: &BTreeMap<u64, String>,
    expected: u64,
    chain: &mut Vec<String>,
) -> Result<(), Error> {
    if let Some(o) = storage.get(&layout::publish_log_head(chain_name)).await?
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
