//! Locks ordering the requests on one key, so that the embedded S3 replaces an object
//! atomically as S3 does (see `embedded_s3`'s documentation): writes exclusive, reads shared.
//! They are taken by the rights check (`bucket_rights`), once s3s has parsed the request and
//! so knows every key it touches, and held until s3s-fs has answered.

use std::collections::BTreeMap;
use std::sync::Arc;

use tokio::sync::{OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLock};

/// Striped: keys share a fixed set of locks by hash, so memory stays constant and unrelated
/// keys rarely wait for each other.
pub struct KeyLocks {
    stripes: Vec<Arc<RwLock<()>>>,
}

/// A held key lock, released when dropped.
#[allow(dead_code, reason = "a guard is held until dropped, never read")]
pub enum KeyGuard {
    Read(OwnedRwLockReadGuard<()>),
    Write(OwnedRwLockWriteGuard<()>),
}

impl KeyLocks {
    const STRIPES: usize = 256;

    pub fn new() -> Self {
        KeyLocks { stripes: (0..Self::STRIPES).map(|_| Arc::new(RwLock::new(()))).collect() }
    }

    fn stripe(key: &str) -> usize {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        key.hash(&mut hasher);
        (hasher.finish() % Self::STRIPES as u64) as usize
    }

    /// Shared locks for `reads`, exclusive ones for `writes`, all taken at once in stripe
    /// order (so two requests never wait for each other in a cycle).
    pub async fn lock(&self, reads: &[&str], writes: &[&str]) -> Vec<KeyGuard> {
        let mut wanted: BTreeMap<usize, bool> = BTreeMap::new();
        for key in writes {
            wanted.insert(Self::stripe(key), true);
        }
        for key in reads {
            wanted.entry(Self::stripe(key)).or_insert(false);
        }
        let mut guards = Vec::with_capacity(wanted.len());
        for (stripe, exclusive) in wanted {
            let lock = self.stripes[stripe].clone();
            guards.push(if exclusive {
                KeyGuard::Write(lock.write_owned().await)
            } else {
                KeyGuard::Read(lock.read_owned().await)
            });
        }
        guards
    }
}
