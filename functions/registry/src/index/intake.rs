//! How a pass takes in what is in the bucket: an archive's ETag as listed, to tell whether it
//! is the one a manifest records; an upload spooled to disk for checking, or refused with a
//! rejection record. (The documents it may replace are read before its listing, rule 1,
//! through `documents`.)

use super::indexer::Indexer;
use super::rejections::{Rejections, immutable_fingerprint};
use super::spool::{Spooled, spool};
use crate::error::Error;
use crate::storage::{ObjectInfo, Storage};

/// An archive's ETag as listed. S3 lists every object with it; some S3-compatible servers
/// (s3s-fs, the local registry's) omit it, and then one HEAD answers it, asked only for an
/// archive the manifest already records, so that it is not read again.
pub(super) async fn listed_etag<S: Storage>(indexer: &Indexer<'_, S>, object: &ObjectInfo) -> Result<String, Error> {
    if !object.etag.is_empty() {
        return Ok(object.etag.clone());
    }
    Ok(indexer.storage.etag(&object.key).await?.unwrap_or_default())
}

/// Spool an upload for checking, or record why not. `None` if there is nothing to check:
/// rejected before with these bytes, too large (a rejection record is written now),
/// unreadable as stored (likewise), or gone.
pub(super) async fn spool_or_reject<S: Storage>(
    indexer: &Indexer<'_, S>,
    object: &ObjectInfo,
    (limit, limit_var): (u64, &str),
    rejections: &mut Rejections,
) -> Result<Option<Spooled>, Error> {
    rejections.keep(&object.key);
    let refused_as_overwrite = !indexer.limits.overwrite_published
        && rejections.rejected_before(&object.key, &immutable_fingerprint(&object.etag));
    if rejections.rejected_before(&object.key, &object.etag) || refused_as_overwrite {
        return Ok(None);
    }
    let reason = if object.size > limit {
        format!("{} bytes, over the limit of {limit} ({limit_var})", object.size)
    } else {
        match spool(indexer.storage, &object.key, limit).await? {
            None => return Ok(None),
            Some(Ok(spooled)) => return Ok(Some(spooled)),
            Some(Err(reason)) => reason,
        }
    };
    rejections.reject(indexer.storage, object, reason).await?;
    Ok(None)
}
