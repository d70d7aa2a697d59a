//! The publish log's side of a pass: what a manifest write changed, each change named with
//! who made it (as the indexer's events said), appended once that write has succeeded.

use super::indexer::Indexer;
use crate::error::{Error, chain};
use crate::publish_log::Change;
use crate::storage::Storage;

/// Append what a manifest write changed to the publish log: called once that write has
/// succeeded, so each change is logged by the one pass that made it.
pub(super) async fn log_changes<S: Storage>(indexer: &Indexer<'_, S>, changes: Vec<Change>) -> Result<(), Error> {
    let principals = indexer.principals();
    let changes: Vec<Change> =
        changes.into_iter().map(|c| Change { principal: principals.get(&c.key).cloned(), ..c }).collect();
    if let Err(e) = crate::publish_log::append(indexer.storage, changes.clone()).await {
        // The manifest is written: this pass cannot undo it. Say loudly what is missing
        // from the log (audit will name it too).
        tracing::error!(error = %chain(&e), ?changes, "published, but not on the publish log");
        return Err(e);
    }
    Ok(())
}
