//! A bucket with S3's latency (`registry_local::latency::S3Latency`): an in-memory bucket
//! (whose conditional writes are atomic, as S3's) each of whose requests waits the model's
//! first byte and transfer, counted by method, with lost races (412) counted by the kind of
//! document a caller-given function names. For benchmarks whose subject is the registry's own
//! requests, where the embedded S3's directory store would be the bottleneck.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use registry::error::Error;
use registry::storage::{MemoryStorage, Object, ObjectInfo, Precondition, Revalidated, Storage, Stored};
use registry_local::latency::S3Latency;

/// The bucket as one client sees it.
pub struct Latent {
    inner: Arc<MemoryStorage>,
    latency: Arc<S3Latency>,
    kind: fn(&str) -> &'static str,
    lost: Mutex<BTreeMap<&'static str, usize>>,
    requests: Mutex<BTreeMap<&'static str, usize>>,
}

impl Latent {
    /// `inner` behind `latency`; `kind` names a key's document for the lost races.
    pub fn new(inner: Arc<MemoryStorage>, latency: Arc<S3Latency>, kind: fn(&str) -> &'static str) -> Self {
        Latent { inner, latency, kind, lost: Mutex::new(BTreeMap::new()), requests: Mutex::new(BTreeMap::new()) }
    }

    async fn wait(&self, method: &'static str, bytes: usize) {
        *self.requests.lock().unwrap().entry(method).or_default() += 1;
        tokio::time::sleep(self.latency.first_byte() + self.latency.transfer(bytes as u64)).await;
    }

    /// Lost races so far, by kind of document.
    pub fn lost(&self) -> BTreeMap<&'static str, usize> {
        self.lost.lock().unwrap().clone()
    }

    /// Requests so far, by method (`GET`, `PUT`, `HEAD`, `DELETE`, `LIST`).
    pub fn requests(&self) -> BTreeMap<&'static str, usize> {
        self.requests.lock().unwrap().clone()
    }
}

impl Storage for Latent {
    async fn get(&self, key: &str) -> Result<Option<Object>, Error> {
        let got = self.inner.get(key).await?;
        self.wait("GET", got.as_ref().map_or(0, |o| o.bytes.len())).await;
        Ok(got)
    }
    async fn get_if_changed(&self, key: &str, etag: &str) -> Result<Revalidated, Error> {
        self.wait("GET", 0).await;
        self.inner.get_if_changed(key, etag).await
    }
    async fn etag(&self, key: &str) -> Result<Option<String>, Error> {
        self.wait("HEAD", 0).await;
        self.inner.etag(key).await
    }
    async fn put(&self, key: &str, body: Bytes, content_type: &str, precondition: Precondition) -> Result<(), Error> {
        self.put_etag(key, body, content_type, precondition).await.map(drop)
    }
    async fn put_etag(
        &self,
        key: &str,
        body: Bytes,
        content_type: &str,
        precondition: Precondition,
    ) -> Result<String, Error> {
        self.wait("PUT", body.len()).await;
        let put = self.inner.put_etag(key, body, content_type, precondition).await;
        if let Err(Error::Conflict(_)) = &put {
            *self.lost.lock().unwrap().entry((self.kind)(key)).or_default() += 1;
        }
        put
    }
    async fn put_file(
        &self,
        key: &str,
        path: &std::path::Path,
        content_type: &str,
        precondition: Precondition,
    ) -> Result<(), Error> {
        self.wait("PUT", 0).await;
        self.inner.put_file(key, path, content_type, precondition).await
    }
    async fn delete(&self, key: &str) -> Result<(), Error> {
        self.wait("DELETE", 0).await;
        self.inner.delete(key).await
    }
    async fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>, Error> {
        let listed = self.inner.list(prefix).await?;
        // One request per 1,000 keys, as ListObjectsV2 pages them.
        for _ in 0..listed.len().div_ceil(1000).max(1) {
            self.wait("LIST", 0).await;
        }
        Ok(listed)
    }
    async fn stream<F>(&self, key: &str, sink: F) -> Result<Option<Stored>, Error>
    where
        F: FnMut(&[u8]) -> Result<(), Error> + Send,
    {
        self.wait("GET", 0).await;
        self.inner.stream(key, sink).await
    }
    async fn presign_get(&self, key: &str, version_id: Option<&str>, ttl: Duration) -> Result<String, Error> {
        self.inner.presign_get(key, version_id, ttl).await
    }
}
