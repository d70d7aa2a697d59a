//! What the modules pull-through keeps in the bucket (`layout::UPSTREAM_MODULES_PREFIX`): a
//! module's version list with the time it was fetched and the versions copied, each copied
//! version's pin, and the record of bytes refused because they differ from a pin. Written by
//! the modules function only (or laid out the same way by an air-gap bundle). Pure.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::error::Error;

/// `upstream-modules/HOST/NS/NAME/SYSTEM/index.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleIndex {
    /// When the upstream last listed the versions (Unix seconds); 0: never (a bundle's).
    #[serde(default)]
    pub fetched_at: i64,
    /// The versions the upstream listed then (canonical SemVer).
    #[serde(default)]
    pub versions: BTreeSet<String>,
    /// Every version copied into the bucket: served even after the upstream stops listing
    /// it, or stops answering.
    #[serde(default)]
    pub copied: BTreeSet<String>,
}

impl ModuleIndex {
    /// Read a stored index; unreadable: `Error::Internal`.
    pub fn parse(bytes: &[u8]) -> Result<Self, Error> {
        serde_json::from_slice(bytes).map_err(|e| Error::internal_from("upstream module index", e))
    }

    /// Used without asking the upstream at `now`: fetched less than `ttl` ago (a time in the
    /// future, from a skewed clock, is not fresh).
    pub fn fresh(&self, now: i64, ttl: std::time::Duration) -> bool {
        self.fetched_at > 0 && crate::clock::fresh(self.fetched_at, now, ttl)
    }

    /// Every version to list: the upstream's and the copied ones.
    pub fn all(&self) -> BTreeSet<&str> {
        self.versions.iter().chain(&self.copied).map(String::as_str).collect()
    }

    /// The modules.v1 versions answer.
    pub fn response(&self) -> serde_json::Value {
        let versions: Vec<serde_json::Value> =
            self.all().into_iter().map(|v| serde_json::json!({ "version": v })).collect();
        serde_json::json!({ "modules": [{ "versions": versions }] })
    }
}

/// `upstream-modules/HOST/NS/NAME/SYSTEM/VERSION.pin.json`: the first copy of a version,
/// written once (`If-None-Match: *`). Only the archive it names is ever served for the version;
/// later bytes that differ are refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModulePin {
    /// `HOST/NS/NAME/SYSTEM`.
    pub module: String,
    /// The version.
    pub version: String,
    /// Hex SHA-256 of the archive stored (after a GitHub archive's top directory is removed).
    pub sha256: String,
    /// Its size in bytes.
    pub size: u64,
    /// `tar.gz` or `zip`.
    pub archive: String,
    /// Where it came from: `git::https://HOST/OWNER/REPO?ref=REF`, or an HTTPS URL without its
    /// query (which may hold credentials).
    pub source: String,
    /// When it was copied (`2026-11-27T10:00:00Z`).
    pub copied_at: String,
}

impl ModulePin {
    /// Read a stored pin; unreadable or not a SHA-256: `Error::Internal`.
    pub fn parse(bytes: &[u8]) -> Result<Self, Error> {
        let pin: ModulePin =
            serde_json::from_slice(bytes).map_err(|e| Error::internal_from("upstream module pin", e))?;
        let hex =
            pin.sha256.len() == 64 && pin.sha256.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if !hex || !matches!(pin.archive.as_str(), "tar.gz" | "zip") {
            return Err(Error::internal(format!(
                "upstream module pin of {} is not a SHA-256 and archive type",
                pin.module
            )));
        }
        Ok(pin)
    }
}

/// `upstream-modules/HOST/NS/NAME/SYSTEM/VERSION/SHA256.refused.json`: bytes fetched for a
/// pinned version that differ from its pin (the upstream's tag moved, or its archive changed).
/// Never served.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleRefusal {
    /// `HOST/NS/NAME/SYSTEM`.
    pub module: String,
    /// The version.
    pub version: String,
    /// The SHA-256 pinned.
    pub pinned: String,
    /// The SHA-256 of the bytes refused.
    pub fetched: String,
    /// Where they came from (as `ModulePin::source`).
    pub source: String,
    /// When (`2026-11-27T10:00:00Z`).
    pub refused_at: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_lists_copied_versions_the_upstream_no_longer_lists() {
        let index = ModuleIndex {
            fetched_at: 100,
            versions: ["1.0.0".to_string(), "2.0.0".to_string()].into(),
            copied: ["0.9.0".to_string(), "1.0.0".to_string()].into(),
        };
        assert_eq!(index.all().into_iter().collect::<Vec<_>>(), ["0.9.0", "1.0.0", "2.0.0"]);
        assert_eq!(
            index.response(),
            serde_json::json!({"modules": [{"versions": [{"version": "0.9.0"}, {"version": "1.0.0"}, {"version": "2.0.0"}]}]})
        );
        let ttl = std::time::Duration::from_secs(60);
        assert!(index.fresh(159, ttl) && !index.fresh(160, ttl) && !index.fresh(99, ttl));
        assert!(!ModuleIndex { fetched_at: 0, ..index }.fresh(30, ttl), "a bundle's index is never fresh");
    }

    #[test]
    fn a_pin_must_hold_a_sha256_and_an_archive_type() {
        let pin = |sha: &str, archive: &str| {
            serde_json::to_vec(&ModulePin {
                module: "h.io/a/b/c".into(),
                version: "1.0.0".into(),
                sha256: sha.into(),
                size: 1,
                archive: archive.into(),
                source: "x".into(),
                copied_at: "t".into(),
            })
            .unwrap()
        };
        assert!(ModulePin::parse(&pin(&"a".repeat(64), "tar.gz")).is_ok());
        assert!(ModulePin::parse(&pin(&"A".repeat(64), "tar.gz")).is_err());
        assert!(ModulePin::parse(&pin(&"a".repeat(64), "../x")).is_err());
        assert!(ModulePin::parse(b"{}").is_err());
    }
}
