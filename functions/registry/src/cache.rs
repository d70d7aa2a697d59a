//! The warm container's manifest cache: parsed manifests kept in memory with the ETag they
//! were read at, bounded in bytes, least recently used out first.
//!
//! A hit is revalidated with one conditional GET (`If-None-Match`), which S3 answers 304 with
//! no body while the manifest is unchanged; so a published version is visible at once, as
//! without the cache, and the saving is the transfer and the parse. With `ttl` above zero, a
//! hit younger than `ttl` is used without asking S3 at all: zero requests, at the price of
//! serving a manifest up to `ttl` old. Absence is never cached.

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

type Value = Arc<dyn Any + Send + Sync>;

#[derive(Debug)]
pub struct ManifestCache {
    max_bytes: usize,
    ttl: Duration,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    entries: HashMap<String, Entry>,
    bytes: usize,
    clock: u64,
}

#[derive(Debug)]
struct Entry {
    etag: String,
    value: Value,
    /// The manifest's size in JSON bytes: what the bound counts.
    size: usize,
    checked: Instant,
    used: u64,
}

/// A cached manifest: its ETag, its parsed value, and whether it is younger than the TTL.
pub struct Hit<T> {
    pub etag: String,
    pub value: Arc<T>,
    pub fresh: bool,
}

impl ManifestCache {
    /// `max_bytes` 0 disables the cache.
    pub fn new(max_bytes: usize, ttl: Duration) -> Self {
        ManifestCache { max_bytes, ttl, inner: Mutex::new(Inner::default()) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn get<T: Send + Sync + 'static>(&self, key: &str) -> Option<Hit<T>> {
        let mut inner = self.lock();
        inner.clock += 1;
        let clock = inner.clock;
        let entry = inner.entries.get_mut(key)?;
        entry.used = clock;
        let value = entry.value.clone().downcast::<T>().ok()?;
        Some(Hit { etag: entry.etag.clone(), value, fresh: entry.checked.elapsed() < self.ttl })
    }

    /// S3 said the cached manifest is current: it is fresh again for `ttl`.
    pub fn revalidated(&self, key: &str) {
        if let Some(entry) = self.lock().entries.get_mut(key) {
            entry.checked = Instant::now();
        }
    }

    pub fn insert<T: Send + Sync + 'static>(&self, key: &str, etag: &str, value: Arc<T>, size: usize) {
        if size > self.max_bytes {
            return self.remove(key);
        }
        let mut inner = self.lock();
        inner.clock += 1;
        let entry = Entry { etag: etag.into(), value, size, checked: Instant::now(), used: inner.clock };
        if let Some(old) = inner.entries.insert(key.into(), entry) {
            inner.bytes -= old.size;
        }
        inner.bytes += size;
        while inner.bytes > self.max_bytes {
            // Least recently used out. A linear scan: entries number in the hundreds at most
            // under any sensible bound, and this runs only when the bound is reached.
            let Some(oldest) = inner.entries.iter().min_by_key(|(_, e)| e.used).map(|(k, _)| k.clone()) else { break };
            if let Some(e) = inner.entries.remove(&oldest) {
                inner.bytes -= e.size;
            }
        }
    }

    pub fn remove(&self, key: &str) {
        let mut inner = self.lock();
        if let Some(e) = inner.entries.remove(key) {
            inner.bytes -= e.size;
        }
    }

    /// (entries, bytes) held now.
    #[cfg(test)]
    pub fn usage(&self) -> (usize, usize) {
        let inner = self.lock();
        (inner.entries.len(), inner.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_in_bytes_least_recently_used_out() {
        let cache = ManifestCache::new(100, Duration::ZERO);
        cache.insert("a", "\"1\"", Arc::new(1u32), 40);
        cache.insert("b", "\"1\"", Arc::new(2u32), 40);
        assert!(cache.get::<u32>("a").is_some(), "a is now more recent than b");
        cache.insert("c", "\"1\"", Arc::new(3u32), 40);
        assert_eq!(cache.usage(), (2, 80));
        assert!(cache.get::<u32>("b").is_none(), "b was least recently used");
        assert_eq!(*cache.get::<u32>("a").unwrap().value, 1);
        // Too big for the bound: not kept, and an older copy is dropped.
        cache.insert("a", "\"2\"", Arc::new(9u32), 101);
        assert!(cache.get::<u32>("a").is_none());
        assert_eq!(cache.usage(), (1, 40));
        // Replacing an entry accounts its new size only.
        cache.insert("c", "\"2\"", Arc::new(4u32), 10);
        assert_eq!(cache.usage(), (1, 10));
        assert!(cache.get::<String>("c").is_none(), "a lookup for another type misses");
    }

    #[test]
    fn freshness_follows_the_ttl() {
        let revalidate_always = ManifestCache::new(100, Duration::ZERO);
        revalidate_always.insert("a", "\"1\"", Arc::new(1u32), 1);
        assert!(!revalidate_always.get::<u32>("a").unwrap().fresh);
        let ttl = ManifestCache::new(100, Duration::from_secs(60));
        ttl.insert("a", "\"1\"", Arc::new(1u32), 1);
        let hit = ttl.get::<u32>("a").unwrap();
        assert!(hit.fresh);
        assert_eq!(hit.etag, "\"1\"");
        let disabled = ManifestCache::new(0, Duration::from_secs(60));
        disabled.insert("a", "\"1\"", Arc::new(1u32), 1);
        assert!(disabled.get::<u32>("a").is_none());
    }
}
