//! In-memory storage for unit and handler tests. It counts calls, so tests can assert the
//! cost rule (one storage read per registry request), and can be switched to fail like an
//! unreachable S3, or to refuse keys as S3 refuses a role that may not read them. A
//! `versioned` one keeps every version of every object, as the deployed (versioned) bucket
//! does, so tests can fetch what a presigned `versionId` URL names.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use sha2::{Digest, Sha256};

use super::{Object, ObjectInfo, Precondition, Revalidated, Storage, Stored};
use crate::error::Error;

#[derive(Debug, Default)]
/// A bucket in memory, counting requests; see the module documentation.
pub struct MemoryStorage {
    objects: Mutex<BTreeMap<String, Object>>,
    /// Storage calls that would be S3 requests (presigning is not one).
    pub requests: AtomicUsize,
    /// While true, every request fails as an unreachable S3 would (`Error::Unavailable`).
    pub unavailable: AtomicBool,
    /// While true, reads never answer, as an S3 that stopped responding (timeouts are the
    /// caller's to set).
    pub hang: AtomicBool,
    /// Keys whose reads answer `AccessDenied`, as S3 does for a role without the right.
    denied: Mutex<BTreeSet<String>>,
    /// Set: every write gets a version id and the bytes of each version are kept.
    versioning: bool,
    /// Every version's bytes, and each key's current version id (versioned only).
    versions: Mutex<Versions>,
}

/// `(key, version id)` → bytes, and key → its current version id.
type Versions = (BTreeMap<(String, String), Bytes>, BTreeMap<String, String>);

impl MemoryStorage {
    /// An empty bucket.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty bucket with versioning, as infra creates the deployed one.
    pub fn versioned() -> Self {
        MemoryStorage { versioning: true, ..Self::default() }
    }

    /// Store without counting a request (test setup).
    pub fn insert(&self, key: &str, bytes: impl Into<Bytes>) {
        let bytes = bytes.into();
        let mut objects = self.lock();
        self.store(&mut objects, key, bytes);
    }

    /// Write under the objects' lock: a new ETag (answered) and, if versioned, a new version.
    fn store(&self, objects: &mut BTreeMap<String, Object>, key: &str, bytes: Bytes) -> String {
        let etag = format!("\"{}\"", &hex::encode(Sha256::digest(&bytes))[..32]);
        if self.versioning {
            let mut versions = self.versions.lock().unwrap_or_else(|p| p.into_inner());
            let id = format!("v{:08}", versions.0.len() + 1);
            versions.0.insert((key.to_string(), id.clone()), bytes.clone());
            versions.1.insert(key.to_string(), id);
        }
        objects.insert(key.into(), Object { bytes, etag: etag.clone() });
        etag
    }

    /// The current object's version id (versioned only).
    fn current_version(&self, key: &str) -> Option<String> {
        self.versions.lock().unwrap_or_else(|p| p.into_inner()).1.get(key).cloned()
    }

    /// The bytes of one version of an object, whatever was written or deleted since: what a
    /// presigned URL naming that `versionId` downloads (test inspection, not counted).
    pub fn peek_version(&self, key: &str, version_id: &str) -> Option<Bytes> {
        let versions = self.versions.lock().unwrap_or_else(|p| p.into_inner());
        versions.0.get(&(key.to_string(), version_id.to_string())).cloned()
    }

    /// Remove without counting a request (test setup). Versions stay, as a delete marker
    /// leaves them in S3.
    pub fn remove(&self, key: &str) {
        self.lock().remove(key);
        self.versions.lock().unwrap_or_else(|p| p.into_inner()).1.remove(key);
    }

    /// From now on, reads of `key` answer `Error::Forbidden` (test setup).
    pub fn deny(&self, key: &str) {
        self.denied.lock().unwrap_or_else(|p| p.into_inner()).insert(key.into());
    }

    fn readable(&self, key: &str) -> Result<(), Error> {
        if self.denied.lock().unwrap_or_else(|p| p.into_inner()).contains(key) {
            return Err(Error::Forbidden(format!("GetObject {key}")));
        }
        Ok(())
    }

    /// Every key, in order (test inspection, not counted).
    pub fn keys(&self) -> Vec<String> {
        self.lock().keys().cloned().collect()
    }

    /// An object's bytes without counting a request (test inspection).
    pub fn peek(&self, key: &str) -> Option<Bytes> {
        self.lock().get(key).map(|o| o.bytes.clone())
    }

    /// How many requests an S3 server would have answered so far.
    pub fn request_count(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Object>> {
        // A panic while holding the lock can only come from a failing test; keep the data.
        self.objects.lock().unwrap_or_else(|p| p.into_inner())
    }

    async fn hung(&self) {
        if self.hang.load(Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
    }

    fn begin(&self) -> Result<(), Error> {
        self.requests.fetch_add(1, Ordering::SeqCst);
        if self.unavailable.load(Ordering::SeqCst) {
            return Err(Error::unavailable("memory storage switched off"));
        }
        Ok(())
    }
}

impl Storage for MemoryStorage {
    async fn get(&self, key: &str) -> Result<Option<Object>, Error> {
        self.begin()?;
        self.hung().await;
        self.readable(key)?;
        Ok(self.lock().get(key).cloned())
    }

    async fn get_if_changed(&self, key: &str, etag: &str) -> Result<Revalidated, Error> {
        self.begin()?;
        self.hung().await;
        self.readable(key)?;
        Ok(match self.lock().get(key) {
            Some(o) if o.etag == etag => Revalidated::Unchanged,
            other => Revalidated::Changed(other.cloned()),
        })
    }

    async fn etag(&self, key: &str) -> Result<Option<String>, Error> {
        self.begin()?;
        self.readable(key)?;
        Ok(self.lock().get(key).map(|o| o.etag.clone()))
    }

    async fn put(&self, key: &str, body: Bytes, content_type: &str, precondition: Precondition) -> Result<(), Error> {
        self.put_etag(key, body, content_type, precondition).await.map(drop)
    }

    async fn put_etag(
        &self,
        key: &str,
        body: Bytes,
        _content_type: &str,
        precondition: Precondition,
    ) -> Result<String, Error> {
        self.begin()?;
        // Check and write under one lock: atomic, as S3's conditional writes are.
        let mut objects = self.lock();
        let current = objects.get(key).map(|o| o.etag.as_str());
        let holds = match &precondition {
            Precondition::None => true,
            Precondition::IfMatch(etag) => current == Some(etag.as_str()),
            Precondition::IfAbsent => current.is_none(),
        };
        if !holds {
            return Err(Error::Conflict(format!("{key}: {precondition:?} does not hold")));
        }
        Ok(self.store(&mut objects, key, body))
    }

    async fn put_file(
        &self,
        key: &str,
        path: &std::path::Path,
        content_type: &str,
        precondition: Precondition,
    ) -> Result<(), Error> {
        let body =
            tokio::fs::read(path).await.map_err(|e| Error::internal_from(format!("read {}", path.display()), e))?;
        self.put(key, Bytes::from(body), content_type, precondition).await
    }

    async fn delete(&self, key: &str) -> Result<(), Error> {
        self.begin()?;
        self.remove(key);
        Ok(())
    }

    async fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>, Error> {
        self.begin()?;
        Ok(self
            .lock()
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, o)| ObjectInfo { key: k.clone(), size: o.bytes.len() as u64, etag: o.etag.clone() })
            .collect())
    }

    async fn stream<F>(&self, key: &str, mut sink: F) -> Result<Option<Stored>, Error>
    where
        F: FnMut(&[u8]) -> Result<(), Error> + Send,
    {
        self.begin()?;
        self.readable(key)?;
        let Some(object) = self.lock().get(key).cloned() else {
            return Ok(None);
        };
        let version_id = self.current_version(key);
        for chunk in object.bytes.chunks(64 * 1024) {
            sink(chunk)?;
        }
        Ok(Some(Stored { etag: object.etag, version_id }))
    }

    async fn presign_get(&self, key: &str, version_id: Option<&str>, ttl: Duration) -> Result<String, Error> {
        let version = version_id.map(|v| format!("versionId={v}&")).unwrap_or_default();
        Ok(format!("https://memory.invalid/{key}?{version}X-Amz-Expires={}&X-Amz-Signature=test", ttl.as_secs()))
    }
}
