//! What the modules pull-through keeps in the bucket (`layout::UPSTREAM_MODULES_PREFIX`): a
//! module's version list with the time it was fetched and the versions copied, each copied
//! version's pin, and the record of bytes refused because they differ from a pin; the hand-off
//! of a large archive to the puller and its failure. Written by the modules function and the
//! puller (or laid out the same way by an air-gap bundle). Pure.

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

/// `indexed/upstream-modules/HOST/NS/NAME/SYSTEM/pins.json`: every copied version's pin of one
/// upstream module, newest version first, as the indexer read each when it logged it: what
/// the module's page shows, in one read (the catalog's upstream modules part keeps only the
/// versions, as it is read whole by every catalog page).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModulePins {
    /// The pins.
    pub pins: Vec<ModulePin>,
    /// The keys of the refusal records put on the publish log (`layout::upstream_module_refusal`),
    /// so that an event delivered again logs none of them twice.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refusals: Vec<String>,
}

impl ModulePins {
    /// Read a stored document; unreadable: `Error::Internal`.
    pub fn parse(bytes: &[u8]) -> Result<Self, Error> {
        serde_json::from_slice(bytes).map_err(|e| Error::internal_from("upstream module pins", e))
    }

    /// Add `pin`, or replace the one of its version if it differs (a pin deleted by an
    /// operator and written again); whether that changed anything.
    pub fn add(&mut self, pin: ModulePin) -> bool {
        // Kept in order, so its place is found by bisection, and so is a pin of its version.
        let at = self.pins.partition_point(|p| crate::manifest::newest_first(&p.version, &pin.version).is_lt());
        match self.pins.get_mut(at) {
            Some(held) if held.version == pin.version => {
                let changed = *held != pin;
                *held = pin;
                changed
            }
            _ => {
                self.pins.insert(at, pin);
                true
            }
        }
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

/// `upstream-modules/HOST/NS/NAME/SYSTEM/VERSION.pull.json`: a version larger than the
/// modules function copies while the CLI waits (`REGISTRY_UPSTREAM_MODULE_MAX_BYTES`), handed
/// to the puller, whose S3 notification this write is. Written by the modules function; the
/// puller believes only its key (which names module and version) and asks the upstream again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModulePull {
    /// `HOST/NS/NAME/SYSTEM`.
    pub module: String,
    /// The version.
    pub version: String,
    /// When the copy was asked for (Unix seconds); asked again after `PULL_RETRY_SECONDS`
    /// while no pin is written.
    pub requested_at: i64,
}

/// `upstream-modules/HOST/NS/NAME/SYSTEM/VERSION.pull-failed.json`: why the puller could not
/// copy a version (an archive it refuses, one larger than it copies, the upstream failing).
/// Downloads answer with it for `told_for`, then ask again: a minute after one failure,
/// doubling with each failure in a row, at most `PULL_FAILURE_TOLD_MAX_SECONDS`, so an archive
/// that never copies is not fetched again every minute.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModulePullFailure {
    /// `HOST/NS/NAME/SYSTEM`.
    pub module: String,
    /// The version.
    pub version: String,
    /// What went wrong, as a download answers it (names the upstream host, never a URL's query).
    pub why: String,
    /// When (Unix seconds).
    pub failed_at: i64,
    /// How many pulls of the version failed in a row, this one included (0, in a record
    /// without it: one).
    #[serde(default)]
    pub failures: u32,
}

impl ModulePullFailure {
    /// How long downloads answer with this failure (seconds).
    pub fn told_for(&self) -> i64 {
        let doublings = self.failures.saturating_sub(1).min(16);
        PULL_FAILURE_TOLD_SECONDS.saturating_mul(1 << doublings).min(PULL_FAILURE_TOLD_MAX_SECONDS)
    }

    /// The count of the failure that follows `previous` at `now`: one more, unless the previous
    /// is older than a day (or from a skewed clock).
    pub fn next_count(previous: Option<&ModulePullFailure>, now: i64) -> u32 {
        match previous {
            Some(p) if now.checked_sub(p.failed_at).is_some_and(|age| (0..86_400).contains(&age)) => {
                p.failures.max(1).saturating_add(1)
            }
            _ => 1,
        }
    }
}

/// How long a module pull is waited for before a download asks for it again.
pub const PULL_RETRY_SECONDS: i64 = 600;
/// How long the puller's first failure is the answer to downloads before one tries again.
pub const PULL_FAILURE_TOLD_SECONDS: i64 = 60;
/// The longest a failure is told, however many came before it.
pub const PULL_FAILURE_TOLD_MAX_SECONDS: i64 = 6 * 3600;

/// Where a version with no pin stands with the puller, from its pull record and failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PullState {
    /// Nothing asked, or asked so long ago (or failed so long ago) that it is asked again:
    /// copy now.
    NotAsked,
    /// Asked at this time (Unix seconds); the puller is on it.
    Copying(i64),
    /// The puller failed at its last try, for this reason.
    Failed(String),
}

impl PullState {
    /// Read the records at `now`. A failure at least as new as the pull answers it, for
    /// `ModulePullFailure::told_for`; a pull with no such answer is waited for for
    /// `PULL_RETRY_SECONDS`. A time in the future (a skewed clock) is old.
    pub fn of(pull: Option<&ModulePull>, failure: Option<&ModulePullFailure>, now: i64) -> PullState {
        // Checked: the times are read from the bucket, and any i64 parses.
        let within = |at: i64, seconds: i64| now.checked_sub(at).is_some_and(|age| (0..seconds).contains(&age));
        let requested = pull.map(|p| p.requested_at);
        if let Some(failure) = failure.filter(|f| requested.is_none_or(|at| f.failed_at >= at)) {
            return match within(failure.failed_at, failure.told_for()) {
                true => PullState::Failed(failure.why.clone()),
                false => PullState::NotAsked,
            };
        }
        match requested {
            Some(at) if within(at, PULL_RETRY_SECONDS) => PullState::Copying(at),
            _ => PullState::NotAsked,
        }
    }
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
    fn a_pull_is_waited_for_then_asked_again_and_its_failure_is_told_until_then() {
        let pull = |at| ModulePull { module: "h.io/a/b/c".into(), version: "1.0.0".into(), requested_at: at };
        let failed = |at| ModulePullFailure {
            module: "h.io/a/b/c".into(),
            version: "1.0.0".into(),
            why: "too large".into(),
            failed_at: at,
            failures: 1,
        };
        let now = 10_000;
        assert_eq!(PullState::of(None, None, now), PullState::NotAsked);
        assert_eq!(PullState::of(Some(&pull(now - 5)), None, now), PullState::Copying(now - 5));
        assert_eq!(PullState::of(Some(&pull(now - PULL_RETRY_SECONDS)), None, now), PullState::NotAsked);
        assert_eq!(PullState::of(Some(&pull(now + 5)), None, now), PullState::NotAsked, "a skewed clock");
        assert_eq!(PullState::of(Some(&pull(i64::MIN)), Some(&failed(i64::MAX)), now), PullState::NotAsked);
        assert_eq!(PullState::of(Some(&pull(i64::MAX)), Some(&failed(i64::MIN)), now), PullState::NotAsked);
        let told = PullState::Failed("too large".into());
        assert_eq!(PullState::of(Some(&pull(now - 9)), Some(&failed(now - 2)), now), told);
        assert_eq!(PullState::of(None, Some(&failed(now - 2)), now), told);
        assert_eq!(
            PullState::of(Some(&pull(now - 1)), Some(&failed(now - 2)), now),
            PullState::Copying(now - 1),
            "asked again after it failed"
        );
        assert_eq!(
            PullState::of(Some(&pull(now - 100)), Some(&failed(now - PULL_FAILURE_TOLD_SECONDS)), now),
            PullState::NotAsked,
            "a failure is told for a minute, then the copy is tried again"
        );
    }

    #[test]
    fn a_failure_in_a_row_is_told_twice_as_long_up_to_six_hours() {
        let failed = |failures, at| ModulePullFailure {
            module: "h.io/a/b/c".into(),
            version: "1.0.0".into(),
            why: "refused".into(),
            failed_at: at,
            failures,
        };
        let told: Vec<i64> = [0, 1, 2, 3, 9, u32::MAX].iter().map(|&n| failed(n, 0).told_for()).collect();
        assert_eq!(told, [60, 60, 120, 240, 15_360, PULL_FAILURE_TOLD_MAX_SECONDS]);
        let now = 100_000;
        assert_eq!(ModulePullFailure::next_count(None, now), 1);
        assert_eq!(ModulePullFailure::next_count(Some(&failed(3, now - 500)), now), 4);
        assert_eq!(ModulePullFailure::next_count(Some(&failed(0, now - 500)), now), 2, "a record without a count");
        assert_eq!(ModulePullFailure::next_count(Some(&failed(9, now - 90_000)), now), 1, "a day later: afresh");
        assert_eq!(ModulePullFailure::next_count(Some(&failed(9, now + 5)), now), 1, "a skewed clock");
        let third = failed(3, now - 200);
        assert_eq!(PullState::of(None, Some(&third), now), PullState::Failed("refused".into()), "told 240 s");
    }

    #[test]
    fn pins_are_kept_newest_first_each_version_once_and_corrected() {
        let pin = |version: &str, sha: char| ModulePin {
            module: "h.io/a/b/c".into(),
            version: version.into(),
            sha256: sha.to_string().repeat(64),
            size: 1,
            archive: "tar.gz".into(),
            source: "x".into(),
            copied_at: "t".into(),
        };
        let mut pins = ModulePins::default();
        for v in ["1.0.0", "1.10.0", "1.2.0", "2.0.0-rc.1"] {
            assert!(pins.add(pin(v, 'a')));
        }
        let order: Vec<&str> = pins.pins.iter().map(|p| p.version.as_str()).collect();
        assert_eq!(order, ["2.0.0-rc.1", "1.10.0", "1.2.0", "1.0.0"]);
        assert!(!pins.add(pin("1.2.0", 'a')), "the same pin again");
        assert!(pins.add(pin("1.2.0", 'b')), "a pin written again with other bytes replaces it");
        assert_eq!(pins.pins.len(), 4);
        assert_eq!(pins.pins[2].sha256, "b".repeat(64));
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
