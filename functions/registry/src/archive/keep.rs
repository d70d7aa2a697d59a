//! The files a module archive's reader keeps for the docs, within their byte bounds.

use std::collections::HashMap;

use super::tree::normalise;
use super::{KEPT_FILE_BYTES, KEPT_TOTAL_BYTES, KeptFile};

/// Which files to keep, and what they have cost so far.
pub(super) struct Keeper<'a> {
    wanted: &'a dyn Fn(&str) -> bool,
    /// In the order of each path's last entry; `None` where a later entry replaced it.
    kept: Vec<Option<KeptFile>>,
    /// Where each path is in `kept`: a replaced file is found in one lookup, not a scan of
    /// every file kept before (20,000 `.tf` files cost 0.7 s).
    at: HashMap<String, usize>,
    total: usize,
}

impl<'a> Keeper<'a> {
    pub(super) fn new(wanted: &'a dyn Fn(&str) -> bool) -> Self {
        Keeper { wanted, kept: Vec::new(), at: HashMap::new(), total: 0 }
    }

    /// The files kept, each path once.
    pub(super) fn into_kept(self) -> Vec<KeptFile> {
        self.kept.into_iter().flatten().collect()
    }

    /// Whether a regular file at `name` is to be kept.
    pub(super) fn wants(&self, name: &str) -> bool {
        (self.wanted)(&normalise(name))
    }

    /// Keep `bytes` read for `name` (`None` if it outgrew `KEPT_FILE_BYTES`). A later entry
    /// with the same path replaces an earlier one, as unpacking does.
    pub(super) fn keep(&mut self, name: &str, bytes: Option<Vec<u8>>) {
        let path = normalise(name);
        if let Some(earlier) = self.at.insert(path.clone(), self.kept.len()) {
            self.kept[earlier] = None;
        }
        let bytes = bytes.filter(|b| self.total + b.len() <= KEPT_TOTAL_BYTES);
        self.total += bytes.as_ref().map_or(0, Vec::len);
        self.kept.push(Some(KeptFile { path, bytes }));
    }
}

/// Collects a kept file's bytes up to `KEPT_FILE_BYTES`; past that, gives up on them.
pub(super) struct Collecting(pub(super) Option<Vec<u8>>);

impl Collecting {
    pub(super) fn add(&mut self, chunk: &[u8]) {
        if let Some(bytes) = &mut self.0 {
            if bytes.len() + chunk.len() > KEPT_FILE_BYTES {
                self.0 = None;
            } else {
                bytes.extend_from_slice(chunk);
            }
        }
    }
}
