//! Reading the catalog (`crate::catalog`) for the list and search API and the catalog page:
//! the index, then the shards that hold what is asked (`browse::plan`), at once, and the
//! providers and upstream modules parts. Every part goes through the manifest cache like any
//! manifest, so a warm container revalidates (or, within the TTL, reuses) each.

use std::sync::Arc;

use futures_util::StreamExt;

use crate::auth::{Resource, Viewer};
use crate::browse;
use crate::catalog::{CatalogIndex, ModuleEntry, ModuleShard, Part};
use crate::context::Context;
use crate::error::Error;
use crate::layout;
use crate::query::Listing;
use crate::storage::Storage;

/// Shards read at once: a search of a large catalog reads one per namespace.
const SHARD_READS: usize = 64;

/// What a list or search found.
pub(super) struct Found {
    /// How many modules it found in all.
    pub total: usize,
    /// Its page.
    pub page: Vec<ModuleEntry>,
    /// Made from a copy kept through a storage fault.
    pub stale: bool,
}

/// The modules of `listing` this viewer may read: the index, then the shards that hold them.
pub(super) async fn modules<S: Storage>(
    ctx: &Context<S>,
    listing: &Listing,
    viewer: &Viewer,
    deadline: tokio::time::Instant,
) -> Result<Found, Error> {
    let policy = ctx.verifier.policy();
    let (index, stale) = part::<CatalogIndex, S>(ctx, layout::CATALOG_INDEX, deadline).await?;
    let plan = browse::plan(&index, listing, |namespace| viewer.may_read_namespace(policy, namespace));
    let keys: Vec<String> = plan.namespaces.iter().map(|namespace| layout::catalog_shard(namespace)).collect();
    let shards: Vec<(Arc<ModuleShard>, bool)> = futures_util::stream::iter(keys)
        .map(|key| async move { part::<ModuleShard, S>(ctx, &key, deadline).await })
        .buffered(SHARD_READS)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<Result<_, _>>()?;
    let stale = stale || shards.iter().any(|(_, stale)| *stale);
    let shards: Vec<&ModuleShard> = shards.iter().map(|(shard, _)| shard.as_ref()).collect();
    let visible = |m: &crate::address::ModuleAddress| viewer.may_read(policy, Resource::Module(m));
    let (total, page) = browse::found(&plan, &shards, listing, visible);
    Ok(Found { total, page, stale })
}

/// A part of the catalog (empty before anything is written there), and whether it is a copy
/// served through a storage fault.
pub(super) async fn part<P: Part + Default + Send + Sync + 'static, S: Storage>(
    ctx: &Context<S>,
    key: &str,
    deadline: tokio::time::Instant,
) -> Result<(Arc<P>, bool), Error> {
    let missing = || Error::NotFound(String::new());
    match ctx.reader.manifest(key, P::parse, |_| false, missing, deadline).await {
        Ok(read) => Ok((read.value, read.stale)),
        Err(Error::NotFound(_)) => Ok((Arc::new(P::default()), false)),
        Err(e) => Err(e),
    }
}
