//! A module's or provider's download counts (`usage`) as the details API and the pages show
//! them, shared by `modules` (details) and `web` (pages), and namespaces' totals as the
//! module list shows them (`catalog`): read with what the answer reads (a search's after its
//! shards), never a reason to refuse it.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures_util::StreamExt;

use crate::auth::{Resource, Viewer};
use crate::context::Context;
use crate::error::Error;
use crate::storage::Storage;
use crate::usage::{Counted, NamespaceUsage, OwnerUsage, Shown};

/// Namespaces' summaries read at once (a list sorted by downloads reads every visible one).
const SUMMARY_READS: usize = 64;

/// `counted`'s download counts, as stored: none when nothing was counted yet, or when they
/// cannot be read now (the log says so).
pub(super) async fn read<S: Storage>(
    ctx: &Context<S>,
    counted: &Counted,
    deadline: tokio::time::Instant,
) -> Option<Arc<OwnerUsage>> {
    let key = counted.key();
    let none = || Error::NotFound(String::new());
    match ctx.reader.manifest(&key, OwnerUsage::parse, |_| false, none, deadline).await {
        Ok(read) => Some(read.value),
        Err(Error::NotFound(_)) => None,
        Err(e) => {
            tracing::warn!(key, error = %crate::error::chain(&e), "download counts not read");
            None
        }
    }
}

/// What `viewer` is shown of `version`'s downloads, as of today: the counts, and the callers
/// for an admin token whose own scopes cover `resource`.
pub(super) fn shown<S>(
    ctx: &Context<S>,
    usage: Option<&OwnerUsage>,
    version: &str,
    viewer: &Viewer,
    resource: Resource<'_>,
) -> Shown {
    let today = crate::usage::day_of(crate::clock::now_unix());
    let empty = OwnerUsage::default();
    let usage = usage.unwrap_or(&empty);
    let caller_days = ctx.config.usage.caller_days;
    let callers = viewer.may_see_callers(resource).then(|| usage.callers(version, today, caller_days));
    Shown { version: usage.downloads(version, today), module: usage.all_downloads(today), callers, caller_days }
}

/// The download totals of `namespaces`' modules (`usage::NamespaceUsage`), those there are:
/// a namespace nothing was counted in, or whose summary cannot be read now (the log says
/// so), is missing, and its modules list 0. With them, whether any was a kept copy or could
/// not be read (the answer is marked stale).
pub(super) async fn namespaces<S: Storage>(
    ctx: &Context<S>,
    namespaces: &[&str],
    deadline: tokio::time::Instant,
) -> (BTreeMap<String, Arc<NamespaceUsage>>, bool) {
    let namespaces: Vec<String> = namespaces.iter().map(ToString::to_string).collect();
    futures_util::stream::iter(namespaces)
        .map(|namespace| async move {
            let key = crate::layout::namespace_usage(&namespace);
            let none = || Error::NotFound(String::new());
            match ctx.reader.manifest(&key, NamespaceUsage::parse, |_| false, none, deadline).await {
                Ok(read) => (Some((namespace, read.value)), read.stale),
                Err(Error::NotFound(_)) => (None, false),
                Err(e) => {
                    tracing::warn!(key, error = %crate::error::chain(&e), "download totals not read");
                    (None, true)
                }
            }
        })
        .buffer_unordered(SUMMARY_READS)
        .fold((BTreeMap::new(), false), |(mut totals, stale), (read, read_stale)| {
            if let Some((namespace, usage)) = read {
                totals.insert(namespace, usage);
            }
            std::future::ready((totals, stale || read_stale))
        })
        .await
}
