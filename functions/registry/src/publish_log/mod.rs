//! The publish log: every publish, yank and rejection the indexer makes, as hash chains of
//! small objects under `indexed/log/`, one chain per namespace of uploads
//! (`layout::publish_log_chain`: `modules/acme`, `providers/HOST/acme`, …). Entry `n` of a
//! chain records the SHA-256 of entry `n - 1`'s stored bytes, so changing, removing or
//! reordering any entry breaks its chain at that entry, and `audit` names it; `audit` also
//! names every served archive that no entry explains, every module archive or provider zip an
//! entry publishes that nothing serves, and an intent's change logged twice.
//!
//! Why a chain per namespace, not one: a chain takes its entries one at a time, so N
//! publishes appending at once succeed one after the other, the k-th after losing about k
//! races (measured: 97 lost races per publish at p99 with 100 at once across 100 namespaces).
//! A namespace's own publishes still queue on its chain; publishes in different namespaces no
//! longer meet. Every change to one upload goes to the same chain, so replaying each chain
//! says what is published as well as one chain did. The single chain of before
//! (`layout::PUBLISH_LOG_ENTRIES`) is still audited, first.
//!
//! Appending is lock-free with the same conditional writes as manifests: entry `n` is written
//! with `If-None-Match: *`, so of two indexers appending at once exactly one gets `n`; the
//! other reads the winner, chains to it and takes `n + 1`. No entry is lost and the chain
//! never forks, whatever the concurrency. Each chain's head (`indexed/log/chains/CHAIN/head.json`,
//! its last sequence number and hash) is a hint that saves probing from the start; it only moves
//! forward (`If-Match`), and `audit` checks that the entry it names is still there, unchanged,
//! so deleting the last entries is caught too.
//!
//! A change is logged only once it is true, and each change of an intent exactly once, whatever
//! fails in between: the document whose write makes it true (a manifest, a version's
//! `VERSION.json`, a rejection record, an upstream module's pins) is written with an [`Intent`]
//! inside it, naming the changes and where their chain ended; the intent is then settled
//! ([`settle`]: each change appended once, found rather than appended again when an earlier
//! attempt or another indexer got there first), and the document written again without it.
//! Every indexer pass that reads a document still holding an intent settles it before building
//! on it, so a failure or a crash between the two writes is finished by the retry of the same
//! event, or by the next pass of the same owner. Why this and not the entry first: an entry
//! written before its manifest would log a change that a lost race or a failed write then never
//! makes, and no later reader could tell; the manifest is the one object that says what is
//! served, so it carries the promise too. `audit` still lists an archive whose entry is owed as
//! unexplained (or unserved), noting that an unfinished write owes it. Every entry is also
//! printed to the indexer's log (CloudWatch in AWS) with its hash and its intent's mark, and
//! every intent with its id when it is made: a copy outside the bucket to compare with (an
//! intent planted in a document by whoever can write `indexed/` is settled like any other, and
//! its entries carry an id the log never printed as made).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::Error;
use crate::layout;
use crate::manifest::{CONTENT_TYPE_JSON, to_json};
use crate::storage::{Object, Precondition, Storage};

pub mod audit;

/// What entry 1 chains to.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// How many times one entry may lose its sequence number to other indexers before the
/// append gives up (each loss is another indexer's progress, so this bounds only contention).
const APPEND_ATTEMPTS: usize = 1_000;
/// How many times the head may be found moved by another indexer before it is left as is
/// (it is a hint: `audit` and the next append probe forward from wherever it is).
const HEAD_ATTEMPTS: usize = 8;

/// What happened to an upload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// These bytes are served from now on.
    Publish,
    /// No longer served (the upload was deleted).
    Yank,
    /// Not served, with the rejection record's reason.
    Reject,
    /// A version marked deprecated by its deprecation file (`reason` says why), or its
    /// deprecation changed.
    Deprecate,
    /// Its deprecation file deleted: the version is no longer deprecated.
    Undeprecate,
}

/// One entry of the log, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// Its place in the chain, from 1.
    pub seq: u64,
    /// Hex SHA-256 of entry `seq - 1` as stored (`GENESIS` for entry 1).
    pub prev: String,
    /// When it was appended (`2026-11-23T10:00:00Z`).
    pub time: String,
    /// The intent it settles (`ID/N`: the intent's N-th change); absent in entries appended
    /// before intents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<String>,
    /// What happened.
    #[serde(flatten)]
    pub change: Change,
}

/// What one entry says happened, before it has a place in the chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// Publish, yank or reject.
    pub action: Action,
    /// The upload's key.
    pub key: String,
    /// Hex SHA-256 of the bytes published or yanked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Their size in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// The object's ETag as the indexer read it (for a rejection, what its record keeps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    /// The object version, in a versioned bucket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_id: Option<String>,
    /// Who uploaded or deleted it, as the S3 event names them (`principalId`); absent when
    /// the change was found by a repair pass rather than an event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// Why: a rejection's reason, a deprecation's, or the breaking changes a publish was
    /// judged to make (`index::judgment`, under the policy `warn`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The last entry as far as an appender knows: its sequence number and hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Head {
    /// Sequence number of the last entry (0: none yet).
    pub seq: u64,
    /// Hex SHA-256 of that entry as stored (`GENESIS` when there is none).
    pub hash: String,
}

impl Head {
    fn empty() -> Head {
        Head { seq: 0, hash: GENESIS.to_string() }
    }
}

/// The hash an entry's successor chains to: SHA-256 of its stored bytes.
pub fn entry_hash(stored: &[u8]) -> String {
    hex::encode(Sha256::digest(stored))
}

/// The `format` of intents this code makes and settles; another is refused, loudly.
pub const INTENT_FORMAT: u32 = 1;

/// A promise to put `changes` on the log, made before the write that makes them true (the
/// manifest that serves a version) and stored in that very document (`index::documents`), so
/// that the change and the promise to log it are one atomic PUT. The next indexer pass that
/// reads the document settles it first ([`settle`]): each change is appended exactly once,
/// however many settle it at the same time, or again after a failure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Intent {
    /// `INTENT_FORMAT`.
    pub format: u32,
    /// Names its entries: the N-th change's entry has `intent` `ID/N`. Printed to the
    /// indexer's log when the intent is made ("publish log intent"), so that an entry whose
    /// intent the indexer never made (one planted in a document by whoever can write
    /// `indexed/`) is told apart there.
    pub id: String,
    /// Each chain it appends to, as far as its head said when it was made: its entries come
    /// after this one.
    pub after: BTreeMap<String, Head>,
    /// What happened, in order.
    pub changes: Vec<Change>,
    /// Each chain's head as read when the intent was made (its ETag, `None`: absent), so that
    /// settling it at once moves the head without reading it again; not stored.
    #[serde(skip)]
    pub heads_read: BTreeMap<String, Option<String>>,
}

/// The intent a document the indexer stored still holds: `index::documents` keeps it in the
/// document's `unfinished.log` until it is settled. What `audit` reports as owed; an
/// `unfinished` field this code cannot read (another release's) is an error naming why.
pub fn held_intent(bytes: &[u8]) -> Result<Option<Intent>, String> {
    #[derive(Deserialize)]
    struct Held {
        #[serde(default)]
        unfinished: Option<serde_json::Value>,
    }
    let Ok(held) = serde_json::from_slice::<Held>(bytes) else { return Ok(None) };
    let Some(mut unfinished) = held.unfinished else { return Ok(None) };
    let Some(log) = unfinished.get_mut("log").map(serde_json::Value::take) else { return Ok(None) };
    let intent = serde_json::from_value::<Intent>(log).map_err(|e| format!("an unreadable intent ({e})"))?;
    if intent.format != INTENT_FORMAT {
        return Err(format!("an intent of format {}, not {INTENT_FORMAT}", intent.format));
    }
    Ok(Some(intent))
}

/// An intent to log `changes` (none: `None`), after each of their chains' heads as they are
/// now (one read per chain); printed to the log as made.
pub async fn intend<S: Storage>(storage: &S, changes: Vec<Change>) -> Result<Option<Intent>, Error> {
    if changes.is_empty() {
        return Ok(None);
    }
    let (mut after, mut heads_read) = (BTreeMap::new(), BTreeMap::new());
    for change in &changes {
        let chain = layout::publish_log_chain(&change.key);
        if let std::collections::btree_map::Entry::Vacant(place) = after.entry(chain.clone()) {
            let (stored, head) = read_head(storage, &chain).await?;
            heads_read.insert(chain, stored.map(|o| o.etag));
            place.insert(head);
        }
    }
    let id = intent_id(&after, &changes)?;
    let what: Vec<String> = changes
        .iter()
        .map(|c| format!("{:?} {} {}", c.action, c.key, c.sha256.as_deref().unwrap_or("-")).to_lowercase())
        .collect();
    tracing::info!(id, chains = ?after.keys().collect::<Vec<_>>(), changes = ?what, "publish log intent");
    Ok(Some(Intent { format: INTENT_FORMAT, id, after, changes, heads_read }))
}

/// An intent's id: a hash of what it says, the time and a random key (std's `RandomState`, new
/// for each call), so that two intents whose entries could meet in one chain never share it.
fn intent_id(after: &BTreeMap<String, Head>, changes: &[Change]) -> Result<String, Error> {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = Sha256::new();
    hasher.update(serde_json::to_vec(&(after, changes)).map_err(|e| Error::internal_from("serialise intent", e))?);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
    hasher.update(nanos.to_be_bytes());
    hasher.update(std::collections::hash_map::RandomState::new().build_hasher().finish().to_be_bytes());
    Ok(hex::encode(&hasher.finalize()[..16]))
}

/// Append `changes` in order, each to its upload's chain, as one intent settled at once:
/// what a caller with no document to keep the intent in does (tests, tools). A failure before
/// the last append loses what was not appended yet; the indexer keeps its intents in the
/// documents it writes instead.
pub async fn append<S: Storage>(storage: &S, changes: Vec<Change>) -> Result<(), Error> {
    match intend(storage, changes).await? {
        Some(intent) => settle(storage, &intent).await,
        None => Ok(()),
    }
}

/// Put every change of `intent` on its chain, each exactly once: entries already appended for
/// it (by an earlier attempt, or by another indexer settling it at the same time) are found,
/// and only the missing ones are appended, in order. Storage trouble is an error (the caller's
/// pass fails and is retried, and its retry settles the same intent again).
///
/// Why exactly once: an entry is written only into the first free number after the intent's
/// `after`, once every entry between has been read and found not to be this change's; entries
/// never change once written (`If-None-Match: *`). Two settlers of one intent read the same
/// entries and race for the same free number: one wins, the other reads the winner's entry
/// and finds the change done.
pub async fn settle<S: Storage>(storage: &S, intent: &Intent) -> Result<(), Error> {
    if intent.format != INTENT_FORMAT {
        return Err(Error::internal(format!("an intent of format {}, not {INTENT_FORMAT}", intent.format)));
    }
    for (chain, after) in &intent.after {
        let mine: Vec<(usize, &Change)> =
            intent.changes.iter().enumerate().filter(|(_, c)| layout::publish_log_chain(&c.key) == *chain).collect();
        let head_etag = intent.heads_read.get(chain).cloned();
        settle_chain(storage, chain, after.clone(), (&intent.id, head_etag), &mine).await?;
    }
    Ok(())
}

/// The mark an intent's `n`-th change's entry carries.
fn mark(id: &str, n: usize) -> String {
    format!("{id}/{n}")
}

/// Entries read at once while looking for an intent's own past a long stretch of others' (the
/// window doubles from 1 while every entry read is there, so a chain whose end is near costs
/// one read).
const READ_AHEAD: usize = 16;

/// `settle` on one chain: `mine` are the intent's changes of this chain, with their places;
/// `head_etag` the chain's head's ETag when the intent was made (`Some(None)`: absent then),
/// if known, else it is read.
async fn settle_chain<S: Storage>(
    storage: &S,
    chain: &str,
    mut at: Head,
    (id, head_etag): (&str, Option<Option<String>>),
    mine: &[(usize, &Change)],
) -> Result<(), Error> {
    let (head_seq, head_etag) = match head_etag {
        Some(etag) => (at.seq, etag),
        None => {
            let (stored, head) = read_head(storage, chain).await?;
            (head.seq, stored.map(|o| o.etag))
        }
    };
    let marks: std::collections::HashMap<String, usize> =
        mine.iter().enumerate().map(|(k, (n, _))| (mark(id, *n), k)).collect();
    let mut done = vec![false; mine.len()];
    let (mut next, mut lost) = (0, 0);
    let mut ahead = ReadAhead::default();
    // Right after this settler's own append, the next number is written without reading it
    // first: it is almost always free, and if it is not, the write fails (`If-None-Match: *`)
    // and the number is read. No entry can be missed so: entries fill numbers in order, with no
    // gap, so one of this intent's past the number just written would be in that very number.
    let mut appended = false;
    loop {
        while next < done.len() && done[next] {
            next += 1;
        }
        if next == done.len() {
            break;
        }
        let seq = at.seq.checked_add(1).ok_or_else(|| Error::internal(format!("chain {chain} has no next number")))?;
        let slot = if appended { Slot::Free } else { ahead.entry(storage, chain, seq).await? };
        appended = false;
        match slot {
            Slot::Taken(theirs) => {
                let marked = serde_json::from_slice::<Entry>(&theirs).ok().and_then(|e| e.intent);
                if let Some(&k) = marked.and_then(|m| marks.get(&m)) {
                    done[k] = true;
                }
                at = Head { seq, hash: entry_hash(&theirs) };
            }
            // Not ours, whatever it was; nothing can chain to it, which the audit names.
            Slot::Unreadable => at = Head { seq, hash: String::new() },
            Slot::Free if at.hash.is_empty() => {
                return Err(Error::internal(format!(
                    "chain {chain}: entry {} fails its integrity check; nothing can be appended after it",
                    at.seq
                )));
            }
            Slot::Free => match append_at(storage, chain, &at, (mark(id, mine[next].0), mine[next].1)).await? {
                Some(head) => {
                    (done[next], lost, at, appended) = (true, 0, head, true);
                }
                // Another indexer took this number: it is read next (it may be this very
                // change, settled by someone else).
                None => {
                    ahead.forget(seq);
                    lost += 1;
                    if lost >= APPEND_ATTEMPTS {
                        return Err(Error::unavailable(format!(
                            "publish log: no sequence number won in {APPEND_ATTEMPTS} attempts"
                        )));
                    }
                }
            },
        }
    }
    if head_seq >= at.seq {
        return Ok(());
    }
    advance_head(storage, &layout::publish_log_head(chain), &at, head_etag).await
}

/// Write `change` (with its intent's `mark`) as the entry after `at`; `None` if another
/// indexer took that number first.
async fn append_at<S: Storage>(
    storage: &S,
    chain: &str,
    at: &Head,
    (mark, change): (String, &Change),
) -> Result<Option<Head>, Error> {
    let entry = Entry {
        seq: at.seq + 1,
        prev: at.hash.clone(),
        time: crate::clock::rfc3339_now(),
        intent: Some(mark),
        change: change.clone(),
    };
    let key = layout::publish_log_entry(chain, entry.seq);
    let bytes = to_json(&entry)?;
    match storage.put(&key, bytes.clone(), CONTENT_TYPE_JSON, Precondition::IfAbsent).await {
        Ok(()) => {
            let hash = entry_hash(&bytes);
            tracing::info!(
                chain,
                seq = entry.seq,
                hash,
                prev = entry.prev,
                intent = entry.intent,
                action = ?entry.change.action,
                key = entry.change.key,
                sha256 = entry.change.sha256,
                principal = entry.change.principal,
                "publish log entry"
            );
            Ok(Some(Head { seq: entry.seq, hash }))
        }
        Err(Error::Conflict(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// An entry number as read: an entry (its stored bytes), one that fails S3's integrity check,
/// or none yet.
enum Slot {
    Taken(bytes::Bytes),
    Unreadable,
    Free,
}

/// Entries read ahead of the one needed, a growing window at a time: entries never change once
/// written, so one read stays true (a number read free is read again once someone takes it).
#[derive(Default)]
struct ReadAhead {
    read: BTreeMap<u64, Slot>,
    window: usize,
}

impl ReadAhead {
    async fn entry<S: Storage>(&mut self, storage: &S, chain: &str, seq: u64) -> Result<Slot, Error> {
        if let Some(slot) = self.read.remove(&seq) {
            return Ok(slot);
        }
        self.read.clear();
        self.window = (self.window * 2).clamp(1, READ_AHEAD);
        let reads = (0..self.window as u64).filter_map(|i| seq.checked_add(i)).map(|n| async move {
            let slot = match storage.get(&layout::publish_log_entry(chain, n)).await {
                Ok(Some(object)) => Slot::Taken(object.bytes),
                Ok(None) => Slot::Free,
                Err(Error::Corrupt(_)) => Slot::Unreadable,
                Err(e) => return Err(e),
            };
            Ok((n, slot))
        });
        let slots: Vec<Result<(u64, Slot), Error>> = futures_util::future::join_all(reads).await;
        for slot in slots {
            let (n, slot) = slot?;
            if matches!(slot, Slot::Free) {
                // The window shrinks back once the end is reached.
                self.window = 0;
            }
            self.read.insert(n, slot);
        }
        Ok(self.read.remove(&seq).unwrap_or(Slot::Free))
    }

    /// A number read free was taken since: read it again.
    fn forget(&mut self, seq: u64) {
        self.read.remove(&seq);
    }
}

/// A chain's head as stored, and what it says (an empty chain's head when it is absent or
/// unreadable). Believed as it is (one read less per append): were it altered, the entry
/// chained to it would break the chain right there, which `audit` names.
async fn read_head<S: Storage>(storage: &S, chain: &str) -> Result<(Option<Object>, Head), Error> {
    let stored = storage.get(&layout::publish_log_head(chain)).await?;
    let hint = stored.as_ref().and_then(|o| serde_json::from_slice::<Head>(&o.bytes).ok());
    Ok((stored, hint.unwrap_or_else(Head::empty)))
}

/// Move a chain's head hint (`head_key`) forward to `at` (never back).
async fn advance_head<S: Storage>(
    storage: &S,
    head_key: &str,
    at: &Head,
    mut etag: Option<String>,
) -> Result<(), Error> {
    let body = to_json(at)?;
    for _ in 0..HEAD_ATTEMPTS {
        match storage.put(head_key, body.clone(), CONTENT_TYPE_JSON, Precondition::replacing(etag.as_deref())).await {
            Ok(()) => return Ok(()),
            Err(Error::Conflict(_)) => {
                let Some(now) = storage.get(head_key).await? else {
                    etag = None;
                    continue;
                };
                if serde_json::from_slice::<Head>(&now.bytes).is_ok_and(|h| h.seq >= at.seq) {
                    return Ok(());
                }
                etag = Some(now.etag);
            }
            Err(e) => return Err(e),
        }
    }
    tracing::debug!(seq = at.seq, "publish log head left to a later append");
    Ok(())
}
