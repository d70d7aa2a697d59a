//! Copying an upload to a temporary file (Lambda's `/tmp`) for checking, hashing it on the
//! way: memory stays at one chunk whatever the size.

use std::io::Write;

use sha2::{Digest, Sha256};

use crate::error::Error;
use crate::storage::Storage;

/// An upload on local disk, with what reading it found.
pub(super) struct Spooled {
    pub file: std::fs::File,
    /// Hex SHA-256 of the bytes read.
    pub sha256: String,
    pub size: u64,
    /// The ETag of the bytes read (they may differ from the listing's, if replaced since).
    pub etag: String,
}

/// `None` if the object is gone; `Some(Err(reason))` if its bytes are unusable (over the
/// limit, failing the integrity check): the caller rejects it.
pub(super) async fn spool<S: Storage>(
    storage: &S,
    key: &str,
    limit: u64,
) -> Result<Option<Result<Spooled, String>>, Error> {
    let io = |e: std::io::Error| Error::Internal(format!("temporary file for {key}: {e}"));
    let mut file = tempfile::tempfile().map_err(io)?;
    let mut hasher = Sha256::new();
    let mut size = 0u64;
    let etag = storage
        .stream(key, |chunk| {
            size += chunk.len() as u64;
            if size > limit {
                return Err(Error::Corrupt(format!(
                    "the object grew over the size limit of {limit} bytes while being read"
                )));
            }
            hasher.update(chunk);
            file.write_all(chunk).map_err(io)
        })
        .await;
    match etag {
        Ok(etag) => Ok(etag.map(|etag| Ok(Spooled { file, sha256: hex::encode(hasher.finalize()), size, etag }))),
        Err(Error::Corrupt(reason)) => Ok(Some(Err(reason))),
        Err(e) => Err(e),
    }
}

/// Run CPU-bound archive reading off the async threads.
pub(super) async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Result<T, Error> {
    tokio::task::spawn_blocking(work).await.map_err(|e| Error::Internal(format!("archive check task: {e}")))
}
