//! The usage function's work: a CloudWatch Logs subscription batch (`{"awslogs": {"data":
//! BASE64(GZIP(JSON))}}`) decoded, its download records grouped by what they count, and each
//! group folded into its document with a conditional write, retried on a lost race. The
//! batch's id (its log group, stream and event ids, hashed) is stored with the counts in the
//! same write, so a batch delivered again, or retried after a failure half-way, counts once
//! per document: exactly once, whatever the delivery.

use std::collections::BTreeMap;
use std::io::Read;
use std::time::Duration;

use base64::Engine;
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::document::{OwnerUsage, Settings, day_of};
use super::summary::{ModuleTotal, NamespaceUsage, SUMMARY_FORMAT};
use super::{Counted, Download};
use crate::error::Error;
use crate::manifest::CONTENT_TYPE_JSON;
use crate::retry::{self, Backoff};
use crate::storage::{Precondition, Storage};

/// Base64 accepted in one event: CloudWatch Logs sends at most 1 MB to Lambda at once.
const DATA_MAX: usize = 2 << 20;
/// What a batch may decompress to (a gzip bomb stops here).
const DECODED_MAX: u64 = 32 << 20;
/// How old a batch's newest record may be: less than the time a batch's id is kept.
const REPLAY_SECONDS_MAX: i64 = 86_400;
/// Documents folded at once: S3 takes hundreds of requests at once, and a batch naming a
/// thousand modules must finish well inside the function's 60 s (the red team's: 6.6 s at 8).
const FOLDS_AT_ONCE: usize = 32;
/// Many read functions' batches can name one popular module at once; each lost race is
/// another batch's progress.
const USAGE_RETRY: Backoff =
    Backoff { attempts: 40, first: Duration::from_millis(10), max: Duration::from_millis(1000) };

/// A subscription batch, decoded.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Batch {
    /// `DATA_MESSAGE`; `CONTROL_MESSAGE` (CloudWatch Logs checking the destination) holds none.
    pub message_type: String,
    /// The read function's log group.
    #[serde(default)]
    pub log_group: String,
    /// Its stream (one per container).
    #[serde(default)]
    pub log_stream: String,
    /// The lines.
    #[serde(default)]
    pub log_events: Vec<LogEvent>,
}

/// One log line of a batch.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogEvent {
    /// Unique per line.
    pub id: String,
    /// When it was written, milliseconds since the epoch: its download's day.
    pub timestamp: i64,
    /// The line.
    pub message: String,
}

/// What one batch did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Folded {
    /// Download records counted.
    pub downloads: usize,
    /// Lines that claimed to be records and were not valid (logged, not counted).
    pub invalid: usize,
    /// Documents written.
    pub written: usize,
    /// Documents that had this batch already (a delivery again).
    pub repeated: usize,
}

impl Batch {
    /// Read an invocation's event: `{"awslogs": {"data": …}}`, bounded before and after
    /// decompression.
    pub fn decode(event: &[u8]) -> Result<Batch, Error> {
        #[derive(Deserialize)]
        struct Event {
            awslogs: Data,
        }
        #[derive(Deserialize)]
        struct Data {
            data: String,
        }
        let bad = |why: String| Error::BadRequest(format!("not a CloudWatch Logs batch: {why}"));
        let event: Event = serde_json::from_slice(event).map_err(|e| bad(e.to_string()))?;
        if event.awslogs.data.len() > DATA_MAX {
            return Err(bad(format!("data over {DATA_MAX} bytes")));
        }
        let zipped =
            base64::engine::general_purpose::STANDARD.decode(event.awslogs.data).map_err(|e| bad(e.to_string()))?;
        let mut json = Vec::new();
        flate2::read::GzDecoder::new(zipped.as_slice())
            .take(DECODED_MAX + 1)
            .read_to_end(&mut json)
            .map_err(|e| bad(e.to_string()))?;
        if json.len() as u64 > DECODED_MAX {
            return Err(bad(format!("over {DECODED_MAX} bytes decompressed")));
        }
        serde_json::from_slice(&json).map_err(|e| bad(e.to_string()))
    }

    /// The event CloudWatch Logs would send for this batch (the local registry's, tests').
    pub fn encode(&self) -> Vec<u8> {
        use std::io::Write;
        let mut zipped = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let json = serde_json::to_vec(self).unwrap_or_default();
        let zipped = zipped.write_all(&json).and_then(|()| zipped.finish()).unwrap_or_default();
        let data = base64::engine::general_purpose::STANDARD.encode(zipped);
        serde_json::json!({"awslogs": {"data": data}}).to_string().into_bytes()
    }

    /// The batch's id: the same for the same lines of the same stream, however delivered.
    pub fn id(&self) -> String {
        let mut hash = Sha256::new();
        for part in [&self.log_group, &self.log_stream].into_iter().chain(self.log_events.iter().map(|e| &e.id)) {
            hash.update(part.as_bytes());
            hash.update(b"\n");
        }
        hex::encode(&hash.finalize()[..16])
    }
}

/// Fold one invocation's event (`Batch::decode`), as of `now` (Unix seconds).
pub async fn fold_event<S: Storage>(storage: &S, event: &[u8], settings: Settings, now: i64) -> Result<Folded, Error> {
    fold_batch(storage, &Batch::decode(event)?, settings, now).await
}

/// Fold a batch's download records into their documents. The first failure is returned
/// (after every document was tried), so that the event is retried; documents already
/// written skip it then by its id.
pub async fn fold_batch<S: Storage>(storage: &S, batch: &Batch, settings: Settings, now: i64) -> Result<Folded, Error> {
    let mut folded = Folded::default();
    if batch.message_type != "DATA_MESSAGE" {
        return Ok(folded);
    }
    // A batch's id is kept two days (the day folded and the next): a batch over a day old may
    // have been folded and its id forgotten, and would count twice. Only a late replay from the
    // dead-letter queue is that old (CloudWatch Logs delivers in seconds, Lambda retries for
    // at most 6 hours): refused, not retried.
    if let Some(newest) = batch.log_events.iter().map(|e| e.timestamp.div_euclid(1000)).max()
        && newest < now - REPLAY_SECONDS_MAX
    {
        return Err(Error::BadRequest(format!(
            "its newest record is from {}, over a day ago: it may have been counted already",
            crate::clock::rfc3339(newest)
        )));
    }
    let mut by_owner: BTreeMap<Counted, Vec<(i64, Download)>> = BTreeMap::new();
    for event in &batch.log_events {
        match Download::from_line(&event.message) {
            None => {}
            Some(Err(e)) => {
                folded.invalid += 1;
                tracing::warn!(log_group = %batch.log_group, id = %event.id, error = %e, "usage record refused");
            }
            Some(Ok(download)) => {
                folded.downloads += 1;
                let day = day_of(event.timestamp.div_euclid(1000));
                by_owner.entry(download.counted.clone()).or_default().push((day, download));
            }
        }
    }
    let (id, today) = (batch.id(), day_of(now));
    let results: Vec<(Counted, Result<OwnerFolded, Error>)> = futures_util::stream::iter(by_owner)
        .map(|(owner, downloads)| {
            let id = id.clone();
            async move {
                let result = fold_owner(storage, &owner, &id, &downloads, settings, today).await;
                (owner, result)
            }
        })
        .buffer_unordered(FOLDS_AT_ONCE)
        .collect()
        .await;
    let mut first_error = None;
    let mut namespaces: BTreeMap<String, Vec<(String, ModuleTotal)>> = BTreeMap::new();
    for (owner, result) in results {
        match result {
            Ok(OwnerFolded { written, total }) => {
                if written {
                    folded.written += 1;
                } else {
                    folded.repeated += 1;
                }
                if let Counted::Module(m) = owner {
                    namespaces
                        .entry(m.namespace.clone())
                        .or_default()
                        .push((format!("{}/{}", m.name, m.system), total));
                }
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    // After the modules' documents: what the summaries take is what those hold now.
    let summaries: Vec<Result<(), Error>> = futures_util::stream::iter(namespaces)
        .map(|(namespace, totals)| async move { fold_summary(storage, &namespace, &totals).await })
        .buffer_unordered(FOLDS_AT_ONCE)
        .collect()
        .await;
    for result in summaries {
        if let Err(e) = result {
            first_error.get_or_insert(e);
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(folded),
    }
}

/// A stored document, or why it cannot be read (`Err` inside: it starts again). A format
/// newer than this one's is an error, never a reset: a function of a release before it (a
/// rollback, a warm container during a deploy) leaves such a document alone.
fn readable(bytes: &[u8]) -> Result<Result<OwnerUsage, String>, Error> {
    match OwnerUsage::parse(bytes) {
        Ok(usage) => Ok(Ok(usage)),
        Err(e) if newer_format(bytes, super::document::FORMAT) => {
            Err(Error::unavailable(format!("usage document: {e}, newer than this function's")))
        }
        Err(e) => Ok(Err(e.to_string())),
    }
}

/// What folding one document did.
struct OwnerFolded {
    /// Written; `false`: it had the batch.
    written: bool,
    /// Its totals as it holds them now (for its namespace's summary).
    total: ModuleTotal,
}

/// One document: read, fold, write if it is still what was read.
/// A document that no longer parses starts again from nothing (counts are derived, and a
/// stuck document would count nothing more); the error log says so (`readable`).
async fn fold_owner<S: Storage>(
    storage: &S,
    owner: &Counted,
    id: &str,
    downloads: &[(i64, Download)],
    settings: Settings,
    today: i64,
) -> Result<OwnerFolded, Error> {
    let key = owner.key();
    let downloads: Vec<(i64, &Download)> = downloads.iter().map(|(day, d)| (*day, d)).collect();
    retry::on_conflict(USAGE_RETRY, "usage document", |_| async {
        // A read failing S3's integrity check is retried, like any fault (the event, then);
        // only bytes that are no usage document of a format this reads start again.
        let read = match storage.get(&key).await? {
            Some(o) => Some((readable(&o.bytes)?, o.etag)),
            None => None,
        };
        let (mut usage, etag) = match read {
            None => (OwnerUsage::default(), None),
            Some((Ok(usage), etag)) => (usage, Some(etag)),
            Some((Err(why), etag)) => {
                tracing::error!(key, why, "usage document unreadable: counting again from nothing");
                (OwnerUsage::default(), Some(etag))
            }
        };
        if !usage.fold(id, &downloads, settings, today) {
            return Ok(OwnerFolded { written: false, total: usage.module_total() });
        }
        let body = serde_json::to_vec(&usage).map_err(|e| Error::internal_from("usage document", e))?;
        storage.put(&key, body.into(), CONTENT_TYPE_JSON, Precondition::replacing(etag.as_deref())).await?;
        Ok(OwnerFolded { written: true, total: usage.module_total() })
    })
    .await
}

/// A namespace's summary: each module's totals merged in (`NamespaceUsage::merge`), written
/// if anything grew and the summary is still what was read. One that is missing or no longer
/// parses is rebuilt first from every module document of the namespace (`rebuilt`), so a
/// namespace counted before summaries existed lists its modules' totals, not only this
/// batch's; one of a newer format is left alone, as the modules' documents are.
async fn fold_summary<S: Storage>(storage: &S, namespace: &str, totals: &[(String, ModuleTotal)]) -> Result<(), Error> {
    let key = crate::layout::namespace_usage(namespace);
    retry::on_conflict(USAGE_RETRY, "usage summary", |_| async {
        let (mut summary, etag, mut grew) = match storage.get(&key).await? {
            None => (rebuilt(storage, namespace).await?, None, true),
            Some(o) => match NamespaceUsage::parse(&o.bytes) {
                Ok(summary) => (summary, Some(o.etag), false),
                Err(e) => {
                    if newer_format(&o.bytes, SUMMARY_FORMAT) {
                        return Err(Error::unavailable(format!(
                            "usage summary {key}: {e}, newer than this function's"
                        )));
                    }
                    tracing::error!(key, error = %e, "usage summary unreadable: summing again from the documents");
                    (rebuilt(storage, namespace).await?, Some(o.etag), true)
                }
            },
        };
        for (module, total) in totals {
            grew |= summary.merge(module, total);
        }
        if !grew {
            return Ok(());
        }
        let body = serde_json::to_vec(&summary).map_err(|e| Error::internal_from("usage summary", e))?;
        storage.put(&key, body.into(), CONTENT_TYPE_JSON, Precondition::replacing(etag.as_deref())).await?;
        Ok(())
    })
    .await
}

/// A namespace's summary from every module document under it (one listing, and a read of each,
/// a few at once): a document that does not parse counts nothing here (its next fold resets
/// it, and the merge brings its new total in).
async fn rebuilt<S: Storage>(storage: &S, namespace: &str) -> Result<NamespaceUsage, Error> {
    let prefix = format!("{}modules/{namespace}/", crate::layout::USAGE_PREFIX);
    let keys: Vec<String> = storage.list(&prefix).await?.into_iter().map(|o| o.key).collect();
    let prefix = &prefix;
    let read: Vec<Result<Option<(String, ModuleTotal)>, Error>> = futures_util::stream::iter(keys)
        .map(|key| async move {
            let module = key.strip_prefix(prefix.as_str()).and_then(|k| k.strip_suffix(".json"));
            let Some(module) = module.filter(|m| m.split('/').count() == 2).map(str::to_string) else {
                return Ok(None);
            };
            let usage = storage.get(&key).await?.and_then(|o| OwnerUsage::parse(&o.bytes).ok());
            Ok(usage.map(|u| (module, u.module_total())))
        })
        .buffer_unordered(FOLDS_AT_ONCE)
        .collect()
        .await;
    let mut summary = NamespaceUsage::default();
    for found in read {
        if let Some((module, total)) = found? {
            summary.merge(&module, &total);
        }
    }
    Ok(summary)
}

/// Whether stored bytes say they are of a format newer than `format`.
fn newer_format(bytes: &[u8], format: u32) -> bool {
    serde_json::from_slice::<serde_json::Value>(bytes)
        .ok()
        .and_then(|v| v["format"].as_u64())
        .is_some_and(|f| f > u64::from(format))
}
