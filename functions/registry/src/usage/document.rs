//! One module's or provider's download counts (`usage/…json`): per version its total, and
//! per day (the last `DAYS_KEPT`) a count, the callers (the last `Settings::caller_days`) and
//! the platforms; and the batches already folded in, so that a batch delivered twice counts
//! once. Pure: the aggregator reads, folds and writes it conditionally.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Download;
use crate::error::Error;

/// The document format written; another is refused.
pub const FORMAT: u32 = 1;
/// Days whose counts are kept one by one (the longest window shown); older ones live on in
/// the totals only.
pub const DAYS_KEPT: i64 = 90;
/// Callers kept per version and day; more are counted as `OTHERS` (a bound on the document
/// whoever calls).
pub const CALLERS_MAX: usize = 200;
/// Platforms kept per version and day, likewise.
const PLATFORMS_MAX: usize = 64;
/// The name under which callers beyond `CALLERS_MAX` (and platforms beyond theirs) count.
pub const OTHERS: &str = "(others)";
/// Days a folded batch's id is kept (the day folded and the next): longer than any
/// redelivery (Lambda retries an event for at most 6 hours); an older batch is refused
/// (`aggregate`).
const BATCH_DAYS: i64 = 2;

/// How long who-downloaded-what is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// `REGISTRY_USAGE_CALLER_DAYS` (default 30, 0 to `DAYS_KEPT`; 0 keeps none): days each
    /// caller is kept per version, forgotten at the document's next write after that; the web
    /// function shows callers of these days.
    pub caller_days: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Settings { caller_days: 30 }
    }
}

/// The document.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnerUsage {
    /// `FORMAT`.
    pub format: u32,
    /// Version → its counts.
    #[serde(default)]
    pub versions: BTreeMap<String, VersionUsage>,
    /// Batch id → the day it was folded in.
    #[serde(default)]
    pub batches: BTreeMap<String, String>,
}

/// One version's counts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionUsage {
    /// Every download ever counted.
    pub total: u64,
    /// `YYYY-MM-DD` → that day's downloads (UTC, the last `DAYS_KEPT`).
    #[serde(default)]
    pub days: BTreeMap<String, DayUsage>,
}

/// One version's downloads on one day.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DayUsage {
    /// How many.
    pub count: u64,
    /// Caller → how many (the last `caller_days` only).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub callers: BTreeMap<String, u64>,
    /// `OS_ARCH` → how many (providers.v1 downloads).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub platforms: BTreeMap<String, u64>,
}

/// Downloads over the windows shown.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Downloads {
    /// Ever.
    pub total: u64,
    /// Today and the 6 days before (UTC).
    pub last_7_days: u64,
    /// Today and the 29 days before.
    pub last_30_days: u64,
    /// Today and the 89 days before.
    pub last_90_days: u64,
}

impl std::ops::AddAssign for Downloads {
    fn add_assign(&mut self, other: Downloads) {
        self.total += other.total;
        self.last_7_days += other.last_7_days;
        self.last_30_days += other.last_30_days;
        self.last_90_days += other.last_90_days;
    }
}

/// What a version's page and details show of its downloads.
#[derive(Debug, Clone, Default)]
pub struct Shown {
    /// This version's.
    pub version: Downloads,
    /// Every version's of the module or provider.
    pub module: Downloads,
    /// Who downloaded this version in the last `caller_days` days: only for a viewer who may
    /// see it (`auth::Viewer::may_see_callers`).
    pub callers: Option<Vec<Caller>>,
    /// How many days callers are kept (`REGISTRY_USAGE_CALLER_DAYS`).
    pub caller_days: u32,
}

/// One caller of a version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Caller {
    /// `token NAME`, `oidc ISSUER SUBJECT`, `anonymous` or `(others)`.
    pub caller: String,
    /// Downloads in the window asked for.
    pub downloads: u64,
    /// The last day it downloaded (`YYYY-MM-DD`).
    pub last: String,
}

/// The day (days since 1970-01-01, UTC) of a Unix time.
pub fn day_of(unix_seconds: i64) -> i64 {
    unix_seconds.div_euclid(86_400)
}

/// `YYYY-MM-DD` of a day.
pub(super) fn date(day: i64) -> String {
    crate::clock::rfc3339(day.saturating_mul(86_400))[..10].to_string()
}

/// The day of `YYYY-MM-DD`; `None` for anything else.
pub(super) fn day(date: &str) -> Option<i64> {
    crate::clock::parse_rfc3339(&format!("{date}T00:00:00Z")).map(day_of)
}

impl OwnerUsage {
    /// Read a stored document; another format is an error.
    pub fn parse(bytes: &[u8]) -> Result<Self, Error> {
        let usage: OwnerUsage =
            serde_json::from_slice(bytes).map_err(|e| Error::Corrupt(format!("usage document: {e}")))?;
        if usage.format != FORMAT {
            return Err(Error::Corrupt(format!("usage document format {} (this reads {FORMAT})", usage.format)));
        }
        Ok(usage)
    }

    /// Whether batch `id` is folded in already.
    pub fn has_batch(&self, id: &str) -> bool {
        self.batches.contains_key(id)
    }

    /// Fold in batch `id`'s downloads of this owner, each with its day, and forget what is
    /// older than kept (as of `today`). `false`, and nothing changed, for a batch folded in
    /// before.
    pub fn fold(&mut self, id: &str, downloads: &[(i64, &Download)], settings: Settings, today: i64) -> bool {
        if self.has_batch(id) {
            return false;
        }
        self.format = FORMAT;
        let callers_from = today - i64::from(settings.caller_days) + 1;
        for (day, download) in downloads {
            let version = self.versions.entry(download.version.clone()).or_default();
            version.total += 1;
            if *day <= today - DAYS_KEPT {
                continue;
            }
            let counts = version.days.entry(date(*day)).or_default();
            counts.count += 1;
            if *day >= callers_from {
                bump(&mut counts.callers, &download.caller, CALLERS_MAX);
            }
            if let Some(platform) = &download.platform {
                bump(&mut counts.platforms, platform, PLATFORMS_MAX);
            }
        }
        self.batches.insert(id.to_string(), date(today));
        self.forget(settings, today);
        true
    }

    /// Drop days older than `DAYS_KEPT`, callers older than `caller_days`, and batch ids
    /// older than `BATCH_DAYS` (a day that does not parse goes too).
    fn forget(&mut self, settings: Settings, today: i64) {
        let callers_from = today - i64::from(settings.caller_days) + 1;
        for version in self.versions.values_mut() {
            version.days.retain(|d, _| day(d).is_some_and(|d| d > today - DAYS_KEPT));
            for (d, counts) in version.days.iter_mut() {
                if day(d).is_none_or(|d| d < callers_from) {
                    counts.callers.clear();
                }
            }
        }
        self.batches.retain(|_, d| day(d).is_some_and(|d| d > today - BATCH_DAYS));
    }

    /// `version`'s downloads as of `today`.
    pub fn downloads(&self, version: &str, today: i64) -> Downloads {
        let Some(usage) = self.versions.get(version) else { return Downloads::default() };
        let mut downloads = Downloads { total: usage.total, ..Downloads::default() };
        for (d, counts) in &usage.days {
            let Some(age) = day(d).map(|d| today - d) else { continue };
            if (0..7).contains(&age) {
                downloads.last_7_days += counts.count;
            }
            if (0..30).contains(&age) {
                downloads.last_30_days += counts.count;
            }
            if (0..DAYS_KEPT).contains(&age) {
                downloads.last_90_days += counts.count;
            }
        }
        downloads
    }

    /// Every version's downloads together.
    pub fn all_downloads(&self, today: i64) -> Downloads {
        let mut all = Downloads::default();
        for version in self.versions.keys() {
            all += self.downloads(version, today);
        }
        all
    }

    /// Every version's downloads ever: what the namespace's summary keeps of it (`summary`).
    pub fn module_total(&self) -> super::summary::ModuleTotal {
        super::summary::ModuleTotal { total: self.versions.values().map(|v| v.total).sum() }
    }

    /// Who downloaded `version` in the last `days` days (as kept), most downloads first.
    pub fn callers(&self, version: &str, today: i64, days: u32) -> Vec<Caller> {
        let mut callers: BTreeMap<&str, (u64, i64)> = BTreeMap::new();
        let from = today - i64::from(days) + 1;
        for (d, counts) in self.versions.get(version).into_iter().flat_map(|v| &v.days) {
            let Some(d) = day(d).filter(|d| (from..=today).contains(d)) else { continue };
            for (name, count) in &counts.callers {
                let seen = callers.entry(name).or_insert((0, d));
                seen.0 += count;
                seen.1 = seen.1.max(d);
            }
        }
        let mut callers: Vec<Caller> = callers
            .into_iter()
            .map(|(name, (downloads, last))| Caller { caller: name.to_string(), downloads, last: date(last) })
            .collect();
        callers.sort_by(|a, b| b.downloads.cmp(&a.downloads).then_with(|| a.caller.cmp(&b.caller)));
        callers
    }
}

/// Count one more for `name`, or for `OTHERS` once `max` names are kept.
fn bump(counts: &mut BTreeMap<String, u64>, name: &str, max: usize) {
    let name = if counts.contains_key(name) || counts.len() < max { name } else { OTHERS };
    *counts.entry(name.to_string()).or_default() += 1;
}
