//! Copying an upload to a temporary file (Lambda's `/tmp`) for checking, hashing it on the
//! way: memory stays at one chunk whatever the size.

use std::io::Write;

use sha2::{Digest, Sha256};

use crate::error::{Error, chain};
use crate::storage::{Storage, Stored};

/// An upload on local disk, with what reading it found.
pub(super) struct Spooled {
    pub file: std::fs::File,
    /// Hex SHA-256 of the bytes read.
    pub sha256: String,
    pub size: u64,
    /// The ETag of the bytes read (they may differ from the listing's, if replaced since).
    pub etag: String,
    /// Their version id, in a versioned bucket: what readers are presigned to get.
    pub version_id: Option<String>,
}

/// `None` if the object is gone; `Some(Err(reason))` if its bytes are unusable: over the
/// limit, or failing S3's integrity check when read twice (corrupt at rest, not in transit).
/// The caller rejects those. A storage fault is an error, never a reason to reject.
pub(super) async fn spool<S: Storage>(
    storage: &S,
    key: &str,
    limit: u64,
) -> Result<Option<Result<Spooled, String>>, Error> {
    // A body that breaks off or fails its checksum is read once more: the SDK retries
    // requests, not bodies. (`stream` reports a request that failed after the SDK's retries
    // the same way as a body that broke off, so that gets one more read too: off the request
    // path, it costs only time.)
    let again = |why: String| async move {
        tracing::warn!(key, why, "reading the upload again");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        spool_once(storage, key, limit).await
    };
    let read = match spool_once(storage, key, limit).await {
        Ok(Read::FailsIntegrity(why)) => again(why).await?,
        Err(e @ Error::Unavailable { .. }) => again(chain(&e)).await?,
        other => other?,
    };
    Ok(match read {
        Read::Gone => None,
        Read::Spooled(spooled) => Some(Ok(spooled)),
        Read::OverLimit(reason) | Read::FailsIntegrity(reason) => Some(Err(reason)),
    })
}

/// What one read of an upload found.
enum Read {
    Gone,
    Spooled(Spooled),
    OverLimit(String),
    FailsIntegrity(String),
}

async fn spool_once<S: Storage>(storage: &S, key: &str, limit: u64) -> Result<Read, Error> {
    let io = |e: std::io::Error| Error::internal_from(format!("temporary file for {key}"), e);
    let mut file = tempfile::tempfile().map_err(io)?;
    let mut hasher = Sha256::new();
    let (mut size, mut over) = (0u64, false);
    let stored = storage
        .stream(key, |chunk| {
            size += chunk.len() as u64;
            if size > limit {
                over = true;
                return Err(Error::Corrupt(format!("over the size limit of {limit} bytes")));
            }
            hasher.update(chunk);
            file.write_all(chunk).map_err(io)
        })
        .await;
    match stored {
        Ok(None) => Ok(Read::Gone),
        Ok(Some(Stored { etag, version_id })) => {
            Ok(Read::Spooled(Spooled { file, sha256: hex::encode(hasher.finalize()), size, etag, version_id }))
        }
        Err(Error::Corrupt(_)) if over => {
            Ok(Read::OverLimit(format!("the object grew over the size limit of {limit} bytes while being read")))
        }
        Err(Error::Corrupt(reason)) => Ok(Read::FailsIntegrity(reason)),
        Err(e) => Err(e),
    }
}

/// Run CPU-bound archive reading off the async threads.
pub(super) async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Result<T, Error> {
    tokio::task::spawn_blocking(work).await.map_err(|e| Error::internal_from("archive check task", e))
}
