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

/// A small object's bytes (`None`: gone), or why not: larger than `limit`, refused before it is
/// read when listed so, and while it is read when it grew since, so a huge upload under a small
/// file's name costs no memory either way. `what` names the kind of file in the refusal.
pub(super) async fn read_small<S: Storage>(
    indexer: &Indexer<'_, S>,
    object: &ObjectInfo,
    limit: usize,
    what: &str,
) -> Result<Result<Option<Vec<u8>>, String>, Error> {
    let name = crate::address::printable(object.key.rsplit('/').next().unwrap_or_default());
    let over = |size: u64| format!("{name} is {size} bytes or more, over the {limit} {what} may have");
    if object.size > limit as u64 {
        return Ok(Err(over(object.size)));
    }
    let (mut bytes, mut grew) = (Vec::new(), false);
    let read = indexer
        .storage
        .stream(&object.key, |chunk| {
            if bytes.len() + chunk.len() > limit {
                grew = true;
                return Err(Error::Corrupt(format!("over {limit} bytes")));
            }
            bytes.extend_from_slice(chunk);
            Ok(())
        })
        .await;
    Ok(match read {
        Err(_) if grew => Err(over(limit as u64 + 1)),
        Err(e) => return Err(e),
        Ok(None) => Ok(None),
        Ok(Some(_)) => Ok(Some(bytes)),
    })
}
