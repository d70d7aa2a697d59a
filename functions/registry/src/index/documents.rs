//! The documents a pass replaces, read and written so that no single failure leaves their
//! change half made. The writes that change what is served or refused (a module's manifest, a
//! provider version's `VERSION.json`, a rejection record, an upstream module's pins) owe work
//! once they are made: their OCI steps (a new module version's tags, what they no longer serve
//! taken out) and their changes put on the publish log. That work is kept in the document
//! itself (`unfinished`), written in the same PUT as the change, done (the OCI steps first),
//! and then the document is written again without it (`write`). A pass that fails or dies in
//! between leaves the document holding it, and the next indexer pass that reads the document
//! (the retry of the same event, the next pass of the owner, a reindex) does it first
//! (`read_finished`), before anything is built on the document. The read functions never see
//! the field: they read the documents as their own types.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::indexer::Indexer;
use super::oci::{self, Step};
use crate::error::{Error, chain};
use crate::manifest::{CONTENT_TYPE_JSON, to_json};
use crate::publish_log::{self, Change, Intent};
use crate::storage::{Object, Precondition, Storage};

/// What a document's write still has to do.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Unfinished {
    /// Its changes, to put on the publish log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) log: Option<Intent>,
    /// Its OCI steps: tags of versions it serves now, what it no longer serves taken out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) oci: Vec<Step>,
}

impl Unfinished {
    fn is_empty(&self) -> bool {
        self.log.is_none() && self.oci.is_empty()
    }
}

/// A document as stored while its write is unfinished: its own fields, and `unfinished`.
#[derive(Serialize)]
struct Holding<'a, D> {
    #[serde(flatten)]
    document: &'a D,
    unfinished: &'a Unfinished,
}

/// What a stored document holds of `unfinished`, read whatever the document's type (the
/// audit reads its `log` too: `publish_log::held_intent`).
#[derive(Deserialize)]
struct Held {
    #[serde(default)]
    unfinished: Option<serde_json::Value>,
}

/// What a stored document's write left unfinished: nothing, the work, or an error when the
/// field is there and this code cannot read it (another release's format). Never read as
/// nothing: a pass that built on such a document would overwrite it, and its work with it.
fn unfinished(key: &str, bytes: &[u8]) -> Result<Option<Unfinished>, Error> {
    let Ok(Held { unfinished: Some(value) }) = serde_json::from_slice::<Held>(bytes) else { return Ok(None) };
    let owed = serde_json::from_value::<Unfinished>(value)
        .map_err(|e| Error::internal(format!("{key} holds an unfinished write this indexer cannot read: {e}")))?;
    match &owed.log {
        Some(intent) if intent.format != publish_log::INTENT_FORMAT => Err(Error::internal(format!(
            "{key} holds an intent of format {}, which this indexer does not settle",
            intent.format
        ))),
        _ => Ok(Some(owed)),
    }
}

/// How many times a document found unfinished is read again when another pass finished and
/// rewrote it first (each time it is someone else's progress).
const FINISH_ATTEMPTS: usize = 8;

/// A document this pass may replace, as read (rule 1). One that fails S3's integrity
/// check even when read again is corrupt at rest: it is read as unreadable content with its
/// current ETag, so the pass rewrites it (`If-Match` that ETag) instead of stalling on it.
pub(super) async fn read_document<S: Storage>(storage: &S, key: &str) -> Result<Option<Object>, Error> {
    match storage.get(key).await {
        Err(Error::Corrupt(why)) => {
            tracing::warn!(key, why, "stored document fails its integrity check; rebuilding it");
            Ok(storage.etag(key).await?.map(|etag| Object { bytes: bytes::Bytes::new(), etag }))
        }
        other => other,
    }
}

/// `read_document` of a document of type `D` whose write may owe work: that work done first,
/// and the document written again without it (only over what was read; when another pass
/// finished and rewrote it first, it is read again). Answers the document as it is stored then.
pub(super) async fn read_finished<S: Storage, D: Serialize + DeserializeOwned>(
    storage: &S,
    key: &str,
) -> Result<Option<Object>, Error> {
    for _ in 0..FINISH_ATTEMPTS {
        let Some(read) = read_document(storage, key).await? else { return Ok(None) };
        let Some(owed) = unfinished(key, &read.bytes)? else { return Ok(Some(read)) };
        let id = owed.log.as_ref().map(|i| i.id.as_str());
        tracing::warn!(
            key,
            intent = id,
            "an earlier write of this document left its log entries or OCI cleanup undone; doing them now"
        );
        finish(storage, key, &read.etag, &owed).await?;
        let Ok(document) = serde_json::from_slice::<D>(&read.bytes) else { return Ok(Some(read)) };
        let bytes = to_json(&document)?;
        match storage.put_etag(key, bytes.clone(), CONTENT_TYPE_JSON, Precondition::IfMatch(read.etag)).await {
            Ok(etag) if !etag.is_empty() => return Ok(Some(Object { bytes, etag })),
            Ok(_) => return read_document(storage, key).await,
            Err(Error::Conflict(_)) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(Error::Conflict(format!("{key}: rewritten by other passes while this one finished it")))
}

/// Write `document` at `key` if `precondition` holds, with what its write changed: `changes`
/// put on the publish log and the `oci` steps done, both kept in the document until they
/// are (see the module documentation). Costs, when there is something to log or an OCI step,
/// beyond the appends and steps themselves, a second write of the document (the read of each
/// chain's head that appending makes is made here, before the first). Answers the ETag of what it
/// wrote last (empty when unknown: a server that names none, or another pass wrote since).
pub(super) async fn write<S: Storage, D: Serialize>(
    storage: &S,
    key: &str,
    document: &D,
    precondition: Precondition,
    changes: Vec<Change>,
    oci: Vec<Step>,
) -> Result<String, Error> {
    let owed = Unfinished { log: publish_log::intend(storage, changes).await?, oci };
    if owed.is_empty() {
        return storage.put_etag(key, to_json(document)?, CONTENT_TYPE_JSON, precondition).await;
    }
    let holding = Holding { document, unfinished: &owed };
    let etag = storage.put_etag(key, to_json(&holding)?, CONTENT_TYPE_JSON, precondition).await?;
    if let Err(e) = finish(storage, key, &etag, &owed).await {
        tracing::warn!(key, error = %chain(&e), "written; its log entries or OCI cleanup are left to its next reader (this event's retry)");
        return Err(e);
    }
    if etag.is_empty() {
        // No ETag to write over: the next reader finds the work done, and writes it without.
        return Ok(etag);
    }
    match storage.put_etag(key, to_json(document)?, CONTENT_TYPE_JSON, Precondition::IfMatch(etag)).await {
        // Written since: whoever wrote it read it first, and so finished it too.
        Err(Error::Conflict(_)) => Ok(String::new()),
        other => other,
    }
}

/// Do what a write of the document at `key` (stored with `etag`) owes: its OCI steps first
/// (a yanked version stops being pulled over OCI even while the log cannot be written), each
/// only while the document is still the one that holds them (a pass that wrote it since had
/// read it, and done them: a step of a slow finisher done after that could take down what
/// the newer document serves again); then its changes on the log, each once.
async fn finish<S: Storage>(storage: &S, key: &str, etag: &str, owed: &Unfinished) -> Result<(), Error> {
    for step in &owed.oci {
        if !etag.is_empty() && storage.etag(key).await?.as_deref() != Some(etag) {
            tracing::debug!(key, "written again since: its OCI steps were done by the pass that wrote it");
            break;
        }
        oci::apply(storage, std::slice::from_ref(step)).await?;
    }
    if let Some(intent) = &owed.log {
        publish_log::settle(storage, intent).await?;
    }
    Ok(())
}

/// `changes`, each named with who made it, as the events being indexed said.
pub(super) fn named<S: Storage>(indexer: &Indexer<'_, S>, changes: Vec<Change>) -> Vec<Change> {
    let principals = indexer.principals();
    changes.into_iter().map(|c| Change { principal: principals.get(&c.key).cloned(), ..c }).collect()
}

#[cfg(test)]
mod tests;
