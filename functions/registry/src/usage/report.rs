//! The operator's report (`make usage`): every version the registry serves that nobody
//! downloaded in the last N days, with when it was last downloaded as far as the counts know,
//! so that a platform team can retire what nobody installs. Read from the bucket: each module
//! manifest and provider index, and each one's usage document (one read each, a few at once).

use futures_util::StreamExt;

use super::document::{DAYS_KEPT, OwnerUsage, day, day_of};
use super::{Counted, Downloads};
use crate::error::Error;
use crate::layout::{self, ObjectKind};
use crate::manifest::{ModuleManifest, ProviderIndex};
use crate::storage::Storage;

/// Owners read at once.
const READS_AT_ONCE: usize = 16;

/// When a version was last downloaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Last {
    /// Never counted.
    Never,
    /// Counted, but longer ago than the days kept one by one (`DAYS_KEPT`).
    LongAgo,
    /// That day (`YYYY-MM-DD`).
    On(String),
}

impl std::fmt::Display for Last {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Last::Never => f.write_str("never"),
            Last::LongAgo => write!(f, "over {DAYS_KEPT} days ago"),
            Last::On(day) => f.write_str(day),
        }
    }
}

/// A served version nobody downloaded in the window asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Idle {
    /// The module or provider.
    pub counted: Counted,
    /// The version.
    pub version: String,
    /// When it was published (modules), if recorded.
    pub published_at: Option<String>,
    /// Deprecated by its publisher (modules).
    pub deprecated: bool,
    /// When it was last downloaded.
    pub last: Last,
    /// Its downloads ever.
    pub total: u64,
}

/// Every served module and provider version with no download in the last `days` days (as of
/// `now`, Unix seconds), in address order, versions as their manifests list them; a module
/// version published within the window is left out (too new to judge).
pub async fn idle_versions<S: Storage>(storage: &S, days: u32, now: i64) -> Result<Vec<Idle>, Error> {
    let mut owners = Vec::new();
    for prefix in [layout::MODULES_PREFIX, layout::PROVIDERS_PREFIX] {
        for object in storage.list(&format!("{}{prefix}", layout::INDEXED_PREFIX)).await? {
            match layout::classify(&object.key) {
                Some(ObjectKind::ModuleManifest(m)) => owners.push(Counted::Module(m)),
                Some(ObjectKind::ProviderIndex(p)) => owners.push(Counted::Provider(p)),
                _ => {}
            }
        }
    }
    let today = day_of(now);
    let found: Vec<Result<Vec<Idle>, Error>> = futures_util::stream::iter(owners)
        .map(|owner| async move { idle_of(storage, owner, days, today).await })
        .buffered(READS_AT_ONCE)
        .collect()
        .await;
    Ok(found.into_iter().collect::<Result<Vec<_>, _>>()?.into_iter().flatten().collect())
}

/// One owner's versions with no download in the window.
async fn idle_of<S: Storage>(storage: &S, owner: Counted, days: u32, today: i64) -> Result<Vec<Idle>, Error> {
    // (version, published_at, deprecated) as served.
    let served: Vec<(String, Option<String>, bool)> = match &owner {
        Counted::Module(m) => match storage.get(&layout::module_manifest(m)).await? {
            Some(o) => ModuleManifest::parse(&o.bytes)?
                .versions
                .into_iter()
                .map(|v| (v.version, v.published_at, v.deprecation.is_some()))
                .collect(),
            None => Vec::new(),
        },
        Counted::Provider(p) => match storage.get(&layout::provider_index(p)).await? {
            Some(o) => ProviderIndex::parse(&o.bytes)?.versions.into_keys().map(|v| (v, None, false)).collect(),
            None => Vec::new(),
        },
        Counted::UpstreamModule(_) => Vec::new(),
    };
    let usage = match storage.get(&owner.key()).await? {
        Some(o) => OwnerUsage::parse(&o.bytes)?,
        None => OwnerUsage::default(),
    };
    let from = today - i64::from(days) + 1;
    let mut idle = Vec::new();
    for (version, published_at, deprecated) in served {
        // Published within the window: too new to judge.
        if published_at.as_deref().and_then(crate::clock::parse_rfc3339).is_some_and(|at| day_of(at) >= from) {
            continue;
        }
        let counts = usage.versions.get(&version);
        let last_day =
            counts.and_then(|c| c.days.iter().filter(|(_, d)| d.count > 0).filter_map(|(d, _)| day(d)).max());
        if last_day.is_some_and(|d| d >= from) {
            continue;
        }
        let Downloads { total, .. } = usage.downloads(&version, today);
        let last = match last_day {
            Some(d) => Last::On(super::document::date(d)),
            None if total > 0 => Last::LongAgo,
            None => Last::Never,
        };
        idle.push(Idle { counted: owner.clone(), version, published_at, deprecated, last, total });
    }
    Ok(idle)
}
