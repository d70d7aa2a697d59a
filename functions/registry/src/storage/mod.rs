//! The one narrow, domain-shaped storage interface: read a manifest, write or delete one,
//! list a prefix, stream an archive, presign an archive URL. `S3Storage` implements it for
//! real S3 and for the embedded S3-compatible server alike; `MemoryStorage` exists for unit
//! and handler tests that need no HTTP.

use std::future::Future;
use std::time::Duration;

use bytes::Bytes;

use crate::error::Error;

pub mod memory;
#[cfg(feature = "aws")]
mod presign;
#[cfg(feature = "aws")]
pub mod s3;

pub use memory::MemoryStorage;
#[cfg(feature = "aws")]
pub use s3::S3Storage;

#[derive(Debug, Clone, PartialEq, Eq)]
/// A whole object as read.
pub struct Object {
    /// Its content.
    pub bytes: Bytes,
    /// Its ETag as S3 answered it (quoted); empty if the server sent none.
    pub etag: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
/// An object as a listing shows it.
pub struct ObjectInfo {
    /// Its full key.
    pub key: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its ETag, or empty where the server lists none (s3s-fs).
    pub etag: String,
}

/// Which object a read saw: what the indexer records so that readers get exactly those bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// Its ETag as S3 answered it (quoted); empty if the server sent none.
    pub etag: String,
    /// Its version id in a versioned bucket (`x-amz-version-id`); `None` where the bucket or
    /// server keeps no versions (the embedded S3). S3 answers `"null"` for an object written
    /// before versioning was enabled, which names that object as well as any id.
    pub version_id: Option<String>,
}

/// What a conditional read (`If-None-Match: ETAG`) found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Revalidated {
    /// Still the object with that ETag: S3 answered 304, no body.
    Unchanged,
    /// Replaced (the new object) or gone (`None`).
    Changed(Option<Object>),
}

/// The condition of a write: how the indexer never loses a concurrent update.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Precondition {
    /// Write whatever is there.
    None,
    /// `If-Match: ETAG`: only if the object is still the one read.
    IfMatch(String),
    /// `If-None-Match: *`: only if no object exists yet.
    IfAbsent,
}

impl Precondition {
    /// The condition for replacing what a read returned (`None` read: must still be absent).
    pub fn replacing(read: Option<&str>) -> Self {
        match read {
            Some(etag) => Precondition::IfMatch(etag.to_string()),
            None => Precondition::IfAbsent,
        }
    }
}

/// What the registry needs of a bucket; see the module documentation.
pub trait Storage: Send + Sync {
    /// The whole object, or `None` if there is no such key.
    fn get(&self, key: &str) -> impl Future<Output = Result<Option<Object>, Error>> + Send;

    /// The object, unless it still has `etag` (`If-None-Match`): one request, no body when
    /// unchanged. What keeps a warm function's cached manifests current.
    fn get_if_changed(&self, key: &str, etag: &str) -> impl Future<Output = Result<Revalidated, Error>> + Send;

    /// The object's ETag (`HEAD`), or `None` if there is no such key.
    fn etag(&self, key: &str) -> impl Future<Output = Result<Option<String>, Error>> + Send;

    /// Write a whole object (S3 PUT is atomic: readers see the old or the new bytes), if
    /// `precondition` holds; `Error::Conflict` if it does not.
    fn put(
        &self,
        key: &str,
        body: Bytes,
        content_type: &str,
        precondition: Precondition,
    ) -> impl Future<Output = Result<(), Error>> + Send;

    /// `put`, answering the ETag the written object got (S3's PutObject answer names it; empty
    /// when a server names none), so that a later write can be made over exactly this one
    /// (`If-Match`) without reading it back.
    fn put_etag(
        &self,
        key: &str,
        body: Bytes,
        content_type: &str,
        precondition: Precondition,
    ) -> impl Future<Output = Result<String, Error>> + Send;

    /// Write a whole object from a local file (a copied archive of hundreds of MB, never
    /// held in memory), as `put` does.
    fn put_file(
        &self,
        key: &str,
        path: &std::path::Path,
        content_type: &str,
        precondition: Precondition,
    ) -> impl Future<Output = Result<(), Error>> + Send;

    /// Delete an object; deleting a key that is not there succeeds, as in S3.
    fn delete(&self, key: &str) -> impl Future<Output = Result<(), Error>> + Send;

    /// Every object under `prefix` (all pages), in key order.
    fn list(&self, prefix: &str) -> impl Future<Output = Result<Vec<ObjectInfo>, Error>> + Send;

    /// Feed the object's bytes to `sink` chunk by chunk without holding the whole object;
    /// answers which object that was (ETag, version id).
    fn stream<F>(&self, key: &str, sink: F) -> impl Future<Output = Result<Option<Stored>, Error>> + Send
    where
        F: FnMut(&[u8]) -> Result<(), Error> + Send;

    /// An absolute URL that lets anyone GET this object (this version of it, if `version_id`)
    /// until `ttl` has passed. Local computation: no request is made.
    fn presign_get(
        &self,
        key: &str,
        version_id: Option<&str>,
        ttl: Duration,
    ) -> impl Future<Output = Result<String, Error>> + Send;
}

/// Storage for a function that never reads the bucket (discovery answers from config alone,
/// so its Lambda builds no S3 client and cold-starts faster).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoStorage;

impl Storage for NoStorage {
    async fn get(&self, _: &str) -> Result<Option<Object>, Error> {
        Err(Error::internal("this function has no storage"))
    }
    async fn get_if_changed(&self, _: &str, _: &str) -> Result<Revalidated, Error> {
        Err(Error::internal("this function has no storage"))
    }
    async fn etag(&self, _: &str) -> Result<Option<String>, Error> {
        Err(Error::internal("this function has no storage"))
    }
    async fn put(&self, _: &str, _: Bytes, _: &str, _: Precondition) -> Result<(), Error> {
        Err(Error::internal("this function has no storage"))
    }
    async fn put_etag(&self, _: &str, _: Bytes, _: &str, _: Precondition) -> Result<String, Error> {
        Err(Error::internal("this function has no storage"))
    }
    async fn put_file(&self, _: &str, _: &std::path::Path, _: &str, _: Precondition) -> Result<(), Error> {
        Err(Error::internal("this function has no storage"))
    }
    async fn delete(&self, _: &str) -> Result<(), Error> {
        Err(Error::internal("this function has no storage"))
    }
    async fn list(&self, _: &str) -> Result<Vec<ObjectInfo>, Error> {
        Err(Error::internal("this function has no storage"))
    }
    async fn stream<F>(&self, _: &str, _: F) -> Result<Option<Stored>, Error>
    where
        F: FnMut(&[u8]) -> Result<(), Error> + Send,
    {
        Err(Error::internal("this function has no storage"))
    }
    async fn presign_get(&self, _: &str, _: Option<&str>, _: Duration) -> Result<String, Error> {
        Err(Error::internal("this function has no storage"))
    }
}
