//! The documents a pass replaces, read and written so that no single failure leaves their
//! change half made. The writes that change what is served or refused (a module's manifest, a
//! provider version's `VERSION.json`, a rejection record, an upstream module's pins) owe work
//! once they are made: their changes put on the publish log, and the OCI artifacts they no
//! longer serve taken out. That work is kept in the document itself (`unfinished`), written
//! in the same PUT as the change, done, and then the document is written again without it
//! (`write`). A pass that fails or dies in between leaves the document holding it, and the
//! next reader of the document (the retry of the same event, the next pass of the owner, a
//! reindex) does it first (`read_finished`), before anything is built on the document. The
//! read functions never see the field: they read the documents as their own types.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::indexer::Indexer;
use super::oci::{self, Forget};
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
    /// The OCI artifacts it no longer serves, to take out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) forget: Vec<Forget>,
}

impl Unfinished {
    fn is_empty(&self) -> bool {
        self.log.is_none() && self.forget.is_empty()
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
    unfinished: Option<Unfinished>,
}

fn unfinished(bytes: &[u8]) -> Option<Unfinished> {
    serde_json::from_slice::<Held>(bytes).ok().and_then(|h| h.unfinished)
}

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
/// and the document written again without it (only over what was read: `Error::Conflict` if
/// another pass wrote it since, which the caller's retry reads again). Answers the document as
/// it is stored then.
pub(super) async fn read_finished<S: Storage, D: Serialize + DeserializeOwned>(
    storage: &S,
    key: &str,
) -> Result<Option<Object>, Error> {
    let Some(read) = read_document(storage, key).await? else { return Ok(None) };
    let Some(owed) = unfinished(&read.bytes) else { return Ok(Some(read)) };
    tracing::warn!(key, "an earlier write of this document left its log entries or OCI cleanup undone; doing them now");
    finish(storage, &owed).await?;
    let Ok(document) = serde_json::from_slice::<D>(&read.bytes) else { return Ok(Some(read)) };
    let bytes = to_json(&document)?;
    let etag = storage.put_etag(key, bytes.clone(), CONTENT_TYPE_JSON, Precondition::IfMatch(read.etag)).await?;
    if etag.is_empty() {
        return read_document(storage, key).await;
    }
    Ok(Some(Object { bytes, etag }))
}

/// Write `document` at `key` if `precondition` holds, with what its write changed: `changes`
/// put on the publish log and the `forget` steps done, both kept in the document until they
/// are (see the module documentation). Costs, when there is something to log or forget, one
/// read of each chain's head and a second write of the document.
pub(super) async fn write<S: Storage, D: Serialize>(
    storage: &S,
    key: &str,
    document: &D,
    precondition: Precondition,
    changes: Vec<Change>,
    forget: Vec<Forget>,
) -> Result<(), Error> {
    let owed = Unfinished { log: publish_log::intend(storage, changes).await?, forget };
    if owed.is_empty() {
        return storage.put(key, to_json(document)?, CONTENT_TYPE_JSON, precondition).await;
    }
    let holding = Holding { document, unfinished: &owed };
    let etag = storage.put_etag(key, to_json(&holding)?, CONTENT_TYPE_JSON, precondition).await?;
    if let Err(e) = finish(storage, &owed).await {
        tracing::warn!(key, error = %chain(&e), "written; its log entries or OCI cleanup are left to its next reader (this event's retry)");
        return Err(e);
    }
    if etag.is_empty() {
        // No ETag to write over: the next reader finds the work done, and writes it without.
        return Ok(());
    }
    match storage.put(key, to_json(document)?, CONTENT_TYPE_JSON, Precondition::IfMatch(etag)).await {
        // Written since: whoever wrote it read it first, and so finished it too.
        Ok(()) | Err(Error::Conflict(_)) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Do what a write owes: its changes on the log (each once), then its OCI steps.
async fn finish<S: Storage>(storage: &S, owed: &Unfinished) -> Result<(), Error> {
    if let Some(intent) = &owed.log {
        publish_log::settle(storage, intent).await?;
    }
    oci::apply(storage, &owed.forget).await
}

/// `changes`, each named with who made it, as the events being indexed said.
pub(super) fn named<S: Storage>(indexer: &Indexer<'_, S>, changes: Vec<Change>) -> Vec<Change> {
    let principals = indexer.principals();
    changes.into_iter().map(|c| Change { principal: principals.get(&c.key).cloned(), ..c }).collect()
}
