//! Replaying the publish log and comparing it with what is served (`make audit`,
//! `registry-local audit`, the indexer function's `{"audit": "all"}`).
//!
//! Three findings: where each chain breaks, naming the chain (the first entry altered, missing
//! or out of order, an intent's change appended twice, and anything after it that breaks
//! again); every archive a manifest or an upstream module's pin serves that no `publish` entry
//! (with the same bytes, not yanked since) explains; and every archive the log says is
//! published that no manifest serves. A document whose write is unfinished (its intent not
//! settled yet: a pass in flight, or one that failed and is to be retried) says so beside what
//! it leaves unexplained or unserved.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures_util::StreamExt;

use super::{Action, Entry, GENESIS, Head, Intent, entry_hash};
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
    /// Archives the log says are published that nothing serves.
    pub unserved: Vec<String>,
}

impl Report {
    /// Nothing found.
    pub fn is_clean(&self) -> bool {
        self.chain.is_empty() && self.unexplained.is_empty() && self.unserved.is_empty()
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
    let served = served(storage).await?;
    report.unexplained = unexplained(&served, &published);
    report.unserved = unserved(&served, &published);
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
    // Each intent's change, and the entry that logged it: a second one is named.
    let mut marks: BTreeMap<String, u64> = BTreeMap::new();
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
                if let Some(mark) = entry.intent {
                    if let Some(first) = marks.get(&mark) {
                        problems.push(format!("entry {seq} repeats entry {first}: the change {mark} was logged twice"));
                    }
                    marks.entry(mark).or_insert(seq);
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

/// One archive something serves: where, which bytes, and what serves it.
struct Serving {
    key: String,
    sha256: String,
    version_id: Option<String>,
    /// `module acme/vpc/aws 1.0.0`, `provider example.com/acme/null 1.0.0 linux_amd64`,
    /// `upstream module registry.terraform.io/terraform-aws-modules/vpc/aws 5.0.0`.
    what: String,
    /// The intent its document still holds, if its write is unfinished (one per document,
    /// shared by its archives).
    owed: Option<Arc<Intent>>,
}

/// What is served: every archive of every module manifest and provider version document, and
/// of every upstream module's pin; and the intents the documents still hold.
struct Served {
    archives: Vec<Serving>,
    /// Intents held by documents that serve nothing now (a yank's, still to be logged).
    owed: Vec<Arc<Intent>>,
}

/// Read every manifest, version document and upstream pin.
async fn served<S: Storage>(storage: &S) -> Result<Served, Error> {
    let mut out = Served { archives: Vec::new(), owed: Vec::new() };
    let mut problems = Vec::new();
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
            let owed = match super::held_intent(&read.bytes) {
                Ok(owed) => owed.map(Arc::new),
                Err(why) => {
                    problems.push(format!("{}: an unfinished write the audit cannot read: {why}", object.key));
                    None
                }
            };
            let before = out.archives.len();
            match kind {
                Some(ObjectKind::ModuleManifest(module)) => match ModuleManifest::parse(&read.bytes) {
                    Ok(manifest) => out.archives.extend(manifest.versions.into_iter().map(|v| Serving {
                        key: v.archive,
                        sha256: v.sha256,
                        version_id: v.version_id,
                        what: format!("module {module} {}", v.version),
                        owed: owed.clone(),
                    })),
                    Err(_) => problems.push(format!("{}: not a module manifest", object.key)),
                },
                Some(ObjectKind::ProviderVersion { provider, version }) => match ProviderVersion::parse(&read.bytes) {
                    Ok(document) => {
                        let prefix = layout::provider_prefix(&provider);
                        out.archives.extend(document.archives.iter().map(|(platform, archive)| Serving {
                            key: format!("{prefix}{}", archive.url),
                            sha256: archive.zh().to_string(),
                            version_id: archive.version_id().map(str::to_string),
                            what: format!("provider {provider} {version} {platform}"),
                            owed: owed.clone(),
                        }));
                    }
                    Err(_) => problems.push(format!("{}: not a provider version document", object.key)),
                },
                _ => {}
            }
            if out.archives.len() == before
                && let Some(owed) = owed
            {
                out.owed.push(owed);
            }
        }
    }
    out.archives.extend(upstream_pins(storage).await?);
    // A document that is not one serves nothing the log could explain: named as unexplained.
    out.archives.extend(problems.into_iter().map(|p| Serving {
        key: String::new(),
        sha256: String::new(),
        version_id: None,
        what: p,
        owed: None,
    }));
    Ok(out)
}

/// What a pin (`upstream::module_records::ModulePin`, a module of this layer, so not named
/// here) says of the archive it serves: its bytes and its extension. Every fault test of a pin
/// audits one, so a pin this cannot read fails them.
#[derive(serde::Deserialize)]
struct Pin {
    sha256: String,
    archive: String,
}

/// The archive each upstream module's pin serves (the only bytes served for its version).
async fn upstream_pins<S: Storage>(storage: &S) -> Result<Vec<Serving>, Error> {
    let mut out = Vec::new();
    for object in storage.list(layout::UPSTREAM_MODULES_PREFIX).await? {
        let Some(layout::UpstreamModuleRecord::Pin(module, version)) = layout::upstream_module_record(&object.key)
        else {
            continue;
        };
        let Some(read) = storage.get(&object.key).await? else { continue };
        let what = format!("upstream module {module} {version}");
        out.push(match serde_json::from_slice::<Pin>(&read.bytes) {
            Ok(pin) => Serving {
                key: layout::upstream_module_archive(&module, &version, &pin.sha256, &pin.archive),
                sha256: pin.sha256,
                version_id: None,
                what,
                owed: None,
            },
            Err(_) => Serving {
                key: String::new(),
                sha256: String::new(),
                version_id: None,
                what: format!("{what}: its pin {} is not a pin", object.key),
                owed: None,
            },
        });
    }
    Ok(out)
}

/// Each key an unfinished write still owes an entry for, and which: from every intent the
/// documents hold, each read once (a document's archives share its intent).
fn owed_keys(served: &Served) -> BTreeMap<&str, Action> {
    let mut seen = std::collections::HashSet::new();
    let intents = served.owed.iter().chain(served.archives.iter().filter_map(|s| s.owed.as_ref()));
    let mut owed = BTreeMap::new();
    for intent in intents.filter(|i| seen.insert(Arc::as_ptr(i))) {
        for change in &intent.changes {
            owed.insert(change.key.as_str(), change.action);
        }
    }
    owed
}

/// What an unfinished write says of `key`, if it owes an entry for it.
fn owed_note(owed: &BTreeMap<&str, Action>, key: &str) -> String {
    match owed.get(key) {
        Some(action) => format!(
            "; its {action:?} entry is still owed by an unfinished write of its document (the indexer's next pass \
             of it, such as the event's retry or `make reindex`, appends it or says why it cannot)"
        )
        .to_lowercase(),
        None => String::new(),
    }
}

/// Every served archive with no `publish` entry for its bytes.
fn unexplained(served: &Served, published: &BTreeMap<String, Published>) -> Vec<String> {
    let explained = |s: &Serving| {
        published.get(&s.key).is_some_and(|p| {
            p.sha256.as_deref() == Some(s.sha256.as_str())
                && (s.version_id.is_none() || p.version_id.as_deref() == s.version_id.as_deref())
        })
    };
    let owed = owed_keys(served);
    let mut found = Vec::new();
    for s in served.archives.iter().filter(|s| !explained(s)) {
        if s.key.is_empty() {
            found.push(s.what.clone());
            continue;
        }
        found.push(format!(
            "{} serves {} (sha256 {}), which no publish entry explains{}",
            s.what,
            s.key,
            s.sha256,
            owed_note(&owed, &s.key)
        ));
    }
    found
}

/// Every archive of a module or provider that the log says is published and no manifest
/// serves (an upstream module's copy is not yanked when its pin is deleted: left out).
fn unserved(served: &Served, published: &BTreeMap<String, Published>) -> Vec<String> {
    let serving: BTreeMap<&str, &Serving> = served.archives.iter().map(|s| (s.key.as_str(), s)).collect();
    let owed = owed_keys(served);
    let mut found = Vec::new();
    for (key, p) in published {
        if !matches!(layout::classify(key), Some(ObjectKind::ModuleArchive { .. } | ObjectKind::ProviderArchive { .. }))
        {
            continue;
        }
        let sha256 = p.sha256.as_deref().unwrap_or_default();
        if serving.get(key.as_str()).is_some_and(|s| s.sha256 == sha256) {
            continue;
        }
        let note = owed_note(&owed, key);
        found.push(format!("{key} (sha256 {sha256}) is published by the log, and no manifest serves it{note}"));
    }
    found
}

#[cfg(test)]
mod tests;
