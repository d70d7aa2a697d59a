//! Rejection records: why an upload was not indexed, kept at `rejections/KEY.json` while the
//! upload is there and still bad, so the publisher can find out. An upload refused as an
//! overwrite of a published version (`immutable`) keeps its record under a fingerprint of its
//! own, so its bytes are not read again while overwrites are refused.

use std::collections::{BTreeMap, BTreeSet};

use super::documents::{self, read_finished};
use crate::error::Error;
use crate::layout;
use crate::publish_log::{Action, Change};
use crate::retry::{self, Backoff};
use crate::storage::{ObjectInfo, Precondition, Storage};

/// A rejection record: why the upload at `key` (with `etag`) was not indexed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Rejection {
    /// The upload's key.
    pub key: String,
    /// The ETag of the bytes rejected: the same bytes are not read again.
    pub etag: String,
    /// What is wrong, and what the registry expects instead.
    pub reason: String,
    /// When it was rejected (`2026-11-22T21:40:00Z`).
    pub rejected_at: String,
}

/// The rejection records under one owner's prefix, read once per pass (there are few: one
/// per upload that is currently bad), and which uploads the pass saw.
pub(super) struct Rejections {
    /// Record key → the ETag of the upload it rejected.
    records: BTreeMap<String, String>,
    /// Record key → the record's own ETag as read (or written by this pass): a record is
    /// replaced only over what was read, so two passes never both log one rejection.
    stored: BTreeMap<String, String>,
    /// Uploads present in this pass's listing; records of any other upload are stale.
    present: BTreeSet<String>,
    /// Who uploaded what, as the events of this indexer said (for the publish log).
    principals: BTreeMap<String, String>,
}

impl Rejections {
    pub(super) async fn load<S: Storage>(
        storage: &S,
        prefix: &str,
        principals: BTreeMap<String, String>,
    ) -> Result<Self, Error> {
        let (mut records, mut stored) = (BTreeMap::new(), BTreeMap::new());
        for object in storage.list(&layout::rejections_under(prefix)).await? {
            if layout::rejected_key(&object.key).is_none() {
                continue;
            }
            // A record that cannot be read says nothing: the upload is checked again. One
            // whose write was not finished is logged now.
            let Some(read) = read_finished::<_, Rejection>(storage, &object.key).await? else { continue };
            let etag = serde_json::from_slice::<Rejection>(&read.bytes).map(|r| r.etag).unwrap_or_default();
            stored.insert(object.key.clone(), read.etag);
            records.insert(object.key, etag);
        }
        Ok(Rejections { records, stored, present: BTreeSet::new(), principals })
    }

    /// The upload at `key` is present in this pass: its record (if any) is not stale.
    pub(super) fn keep(&mut self, key: &str) {
        self.present.insert(key.to_string());
    }

    /// The ETag (or fingerprint) the record of the upload at `key` keeps, if it has one.
    pub(super) fn fingerprint_of(&self, key: &str) -> Option<&str> {
        self.records.get(&layout::rejection(key)).map(String::as_str)
    }

    /// Whether these very bytes (`etag`) were rejected before: then they are not read again.
    pub(super) fn rejected_before(&self, key: &str, etag: &str) -> bool {
        self.records.get(&layout::rejection(key)).is_some_and(|e| e == etag && !e.is_empty())
    }

    /// The ETag of the upload at `key` that was refused as an overwrite of a published
    /// version, if its record says so: the record stays while those bytes are there.
    pub(super) fn refused_overwrite(&self, key: &str) -> Option<&str> {
        self.records.get(&layout::rejection(key)).and_then(|e| e.strip_prefix(OVERWRITE_FINGERPRINT))
    }

    /// Record why `object` is not indexed.
    pub(super) async fn reject<S: Storage>(
        &mut self,
        storage: &S,
        object: &ObjectInfo,
        reason: String,
    ) -> Result<(), Error> {
        self.keep(&object.key);
        let record_key = layout::rejection(&object.key);
        let over = Precondition::replacing(self.stored.get(&record_key).map(String::as_str));
        let principal = self.principals.get(&object.key).cloned();
        let etag = write_rejection(storage, object, reason, principal, over).await?;
        self.stored.insert(record_key.clone(), etag);
        self.records.insert(record_key, object.etag.clone());
        Ok(())
    }

    /// Files under an owner's prefix with names the registry does not index: each gets a
    /// record saying what name it expects (once per version of the bytes).
    pub(super) async fn reject_misnamed<S: Storage>(
        &mut self,
        storage: &S,
        objects: &[ObjectInfo],
    ) -> Result<(), Error> {
        for object in objects {
            self.keep(&object.key);
            if !self.rejected_before(&object.key, &object.etag)
                && let Some(expected) = layout::expected_name(&object.key)
            {
                self.reject(storage, object, expected).await?;
            }
        }
        Ok(())
    }

    /// The upload at `key` is good now: its record goes.
    pub(super) async fn clear<S: Storage>(&mut self, storage: &S, key: &str) -> Result<(), Error> {
        self.keep(key);
        let record_key = layout::rejection(key);
        if self.records.remove(&record_key).is_some() {
            self.stored.remove(&record_key);
            delete_record(storage, &record_key).await?;
        }
        Ok(())
    }

    /// Delete the records whose upload is gone (deleted, or no longer considered).
    pub(super) async fn clear_stale<S: Storage>(&mut self, storage: &S) -> Result<(), Error> {
        let stale: Vec<String> = self
            .records
            .keys()
            .filter(|r| layout::rejected_key(r).is_some_and(|k| !self.present.contains(k)))
            .cloned()
            .collect();
        for record_key in stale {
            delete_record(storage, &record_key).await?;
            self.records.remove(&record_key);
            self.stored.remove(&record_key);
        }
        Ok(())
    }
}

/// Delete a rejection record, finishing first what its write may still owe (its entry).
pub(super) async fn delete_record<S: Storage>(storage: &S, record_key: &str) -> Result<(), Error> {
    if read_finished::<_, Rejection>(storage, record_key).await?.is_some() {
        storage.delete(record_key).await?;
    }
    Ok(())
}

/// Write the record for `object` if `over` holds (the record as read, or none), and put it on
/// the publish log (kept in the record until it is: `documents`); answers the record's ETag.
async fn write_rejection<S: Storage>(
    storage: &S,
    object: &ObjectInfo,
    reason: String,
    principal: Option<String>,
    over: Precondition,
) -> Result<String, Error> {
    tracing::warn!(key = object.key, etag = object.etag, reason, "upload rejected: not indexed");
    let record = Rejection {
        key: object.key.clone(),
        etag: object.etag.clone(),
        reason: reason.clone(),
        rejected_at: crate::clock::rfc3339_now(),
    };
    let change = Change {
        action: Action::Reject,
        key: object.key.clone(),
        sha256: None,
        size: Some(object.size),
        etag: Some(object.etag.clone()).filter(|e| !e.is_empty()),
        version_id: None,
        principal,
        reason: Some(reason),
    };
    let key = layout::rejection(&object.key);
    documents::write(storage, &key, &record, over, vec![change], Vec::new()).await
}

/// The record for `object` (a key that belongs to no owner), unless its record already names
/// these very bytes: an event delivered again, or retried after a failure, logs nothing twice.
pub(super) async fn reject_once<S: Storage>(
    storage: &S,
    mut object: ObjectInfo,
    reason: String,
    principal: Option<String>,
) -> Result<(), Error> {
    if object.etag.is_empty() {
        // Some S3-compatible servers list no ETags (s3s-fs): one HEAD tells the bytes apart.
        object.etag = storage.etag(&object.key).await?.unwrap_or_default();
    }
    let record_key = layout::rejection(&object.key);
    retry::on_conflict(RECORD_RETRY, &record_key, |_| async {
        let recorded = read_finished::<_, Rejection>(storage, &record_key).await?;
        let over = Precondition::replacing(recorded.as_ref().map(|o| o.etag.as_str()));
        let same = recorded.and_then(|o| serde_json::from_slice::<Rejection>(&o.bytes).ok());
        if same.is_some_and(|r| !r.etag.is_empty() && r.etag == object.etag && r.reason == reason) {
            return Ok(());
        }
        write_rejection(storage, &object, reason.clone(), principal.clone(), over).await.map(drop)
    })
    .await
}

/// Writers of one misplaced key's record: the deliveries of its events, few at once.
const RECORD_RETRY: Backoff =
    Backoff { attempts: 8, first: std::time::Duration::from_millis(10), max: std::time::Duration::from_millis(200) };

/// Why an upload of other bytes to a published version is not served. Said in the rejection
/// record, where the publisher looks.
pub(super) fn immutable(what: &str, published_sha256: &str, uploaded_sha256: &str) -> String {
    format!(
        "{what} is already published with sha256 {published_sha256}; this upload has sha256 {uploaded_sha256}. \
         Published versions are immutable, and the published bytes stay served: publish a new version, or \
         delete this key to yank the version and upload it again (REGISTRY_ALLOW_OVERWRITE=true lets an upload \
         replace a published version)"
    )
}

/// What the rejection record of an upload refused as an overwrite keeps as its ETag: those
/// bytes are not read again while overwrites are refused, and are read again once
/// `REGISTRY_ALLOW_OVERWRITE` lets them replace the published version.
pub(super) fn immutable_fingerprint(etag: &str) -> String {
    if etag.is_empty() { String::new() } else { format!("{OVERWRITE_FINGERPRINT}{etag}") }
}

/// What the rejection record of an archive refused for want of provenance keeps as its ETag:
/// the archive, its bundle (`none`) and the namespace's rule, so that it is not read again
/// until one of them changes.
pub(super) fn provenance_fingerprint(archive_etag: &str, bundle_etag: Option<&str>, rule: &str) -> String {
    if archive_etag.is_empty() {
        return String::new();
    }
    format!("provenance:{rule}:{}:{archive_etag}", bundle_etag.unwrap_or("none"))
}

/// How [`immutable_fingerprint`] marks a record of an upload refused as an overwrite.
const OVERWRITE_FINGERPRINT: &str = "overwrite:";
