//! Locks ordering the requests on one key, so that the embedded S3 replaces an object
//! atomically as S3 does (see `embedded_s3`'s documentation): writes exclusive, reads shared.
//! They are taken by the rights check (`bucket_rights`), once s3s has parsed the request and
//! so knows every key it touches, and held until s3s-fs has answered.
//!
//! One lock per key, made when a request needs it and forgotten when none holds it: a slow
//! upload (bounded by `idle_body::BODY_IDLE`) holds its own key only, never a key that happens
//! to share a stripe with it.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::{OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLock};

#[derive(Default)]
pub struct KeyLocks {
    locks: Mutex<HashMap<String, Weak<RwLock<()>>>>,
}

/// A held key lock, released when dropped.
#[allow(dead_code, reason = "a guard is held until dropped, never read")]
pub enum KeyGuard {
    Read(OwnedRwLockReadGuard<()>),
    Write(OwnedRwLockWriteGuard<()>),
}

impl KeyLocks {
    pub fn new() -> Self {
        KeyLocks::default()
    }

    /// The lock of `key`, made if no request holds one now.
    fn of(&self, key: &str) -> Arc<RwLock<()>> {
        let mut locks = self.locks.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(lock) = locks.get(key).and_then(Weak::upgrade) {
            return lock;
        }
        // Forget the locks no request holds, now and then: memory follows what is in use.
        if locks.len() >= 1024 && locks.len().is_power_of_two() {
            locks.retain(|_, lock| lock.strong_count() > 0);
        }
        let lock = Arc::new(RwLock::new(()));
        locks.insert(key.to_string(), Arc::downgrade(&lock));
        lock
    }

    /// Shared locks for `reads`, exclusive ones for `writes` (a key in both: exclusive), all
    /// taken at once in key order, so two requests never wait for each other in a cycle.
    pub async fn lock(&self, reads: &[&str], writes: &[&str]) -> Vec<KeyGuard> {
        let mut wanted: BTreeMap<&str, bool> = BTreeMap::new();
        for key in writes {
            wanted.insert(key, true);
        }
        for key in reads {
            wanted.entry(key).or_insert(false);
        }
        let mut guards = Vec::with_capacity(wanted.len());
        for (key, exclusive) in wanted {
            let lock = self.of(key);
            guards.push(if exclusive {
                KeyGuard::Write(lock.write_owned().await)
            } else {
                KeyGuard::Read(lock.read_owned().await)
            });
        }
        guards
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A key's writer shuts out its readers and writers, never another key's; a lock no
    /// request holds is forgotten.
    #[tokio::test]
    async fn each_key_has_its_own_lock() {
        let locks = KeyLocks::new();
        let held = locks.lock(&[], &["modules/a/b/c/1.0.0.zip"]).await;
        let other = tokio::time::timeout(std::time::Duration::from_secs(1), locks.lock(&["indexed/x"], &["y"])).await;
        assert!(other.is_ok(), "other keys are free");
        let same =
            tokio::time::timeout(std::time::Duration::from_millis(50), locks.lock(&["modules/a/b/c/1.0.0.zip"], &[]));
        assert!(same.await.is_err(), "a reader of the key waits");
        drop(held);
        assert!(locks.of("modules/a/b/c/1.0.0.zip").try_write().is_ok());
        for i in 0..2048 {
            drop(locks.lock(&[], &[&format!("k{i}")]).await);
        }
        assert!(locks.locks.lock().unwrap().len() < 2048, "forgotten once unheld");
    }
}
