//! Reading the catalog (`crate::catalog`) for the list and search API and the catalog page:
//! the index, then the shards that hold what is asked (`browse::plan`), at once, and the
//! providers and upstream modules parts; and the download totals of the namespaces on the page
//! (of every namespace read, for `sort=downloads`: `counts::namespaces`). Every part goes
//! through the manifest cache like any manifest, so a warm container revalidates (or, within
//! the TTL, reuses) each.

use std::sync::Arc;

use futures_util::StreamExt;

use crate::auth::{Resource, Viewer};
use crate::browse::{self, Listed};
use crate::catalog::{CatalogIndex, ModuleShard, Part};
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
    /// Its page, with each module's downloads.
    pub page: Vec<Listed>,
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
    let shards = futures_util::stream::iter(keys)
        .map(|key| async move { part::<ModuleShard, S>(ctx, &key, deadline).await })
        .buffered(SHARD_READS)
        .collect::<Vec<_>>();
    // The totals of the namespaces read, beside their shards: a list's are its page's, and a
    // sort needs every one before the page is known. A search's page is known only after its
    // (many) shards: its page's are read then.
    let early = listing.by_downloads || listing.q.is_none();
    let first = if early { plan.namespaces.clone() } else { Vec::new() };
    let (shards, (mut totals, mut totals_stale)) =
        tokio::join!(shards, super::counts::namespaces(ctx, &first, deadline));
    let shards: Vec<(Arc<ModuleShard>, bool)> = shards.into_iter().collect::<Result<_, _>>()?;
    let stale = stale || shards.iter().any(|(_, stale)| *stale);
    let shards: Vec<&ModuleShard> = shards.iter().map(|(shard, _)| shard.as_ref()).collect();
    let visible = |m: &crate::address::ModuleAddress| viewer.may_read(policy, Resource::Module(m));
    let downloads = |totals: &std::collections::BTreeMap<String, Arc<crate::usage::NamespaceUsage>>,
                     e: &crate::catalog::ModuleEntry| {
        totals.get(&e.namespace).map_or(0, |t| t.total(&e.name, &e.system))
    };
    let (total, mut page) = browse::found(&plan, &shards, listing, visible, |e| downloads(&totals, e));
    if !early {
        // A search's page is in relevance order: one namespace may come back after another.
        let on_page: std::collections::BTreeSet<&str> = page.iter().map(|l| l.entry.namespace.as_str()).collect();
        let on_page: Vec<&str> = on_page.into_iter().collect();
        (totals, totals_stale) = super::counts::namespaces(ctx, &on_page, deadline).await;
        for listed in &mut page {
            listed.downloads = downloads(&totals, &listed.entry);
        }
    }
    Ok(Found { total, page, stale: stale || totals_stale })
}

/// The providers of `catalog` this viewer may read whose address holds every word of `words`
/// (the first eight, case-insensitive), in address order: the catalog page's and the MCP
/// server's provider search.
pub(super) fn providers<'a, S>(
    ctx: &Context<S>,
    catalog: &'a crate::catalog::ProviderCatalog,
    viewer: &Viewer,
    words: Option<&str>,
) -> Vec<&'a crate::catalog::ProviderEntry> {
    let policy = ctx.verifier.policy();
    let terms: Vec<String> =
        words.unwrap_or_default().split_whitespace().take(PROVIDER_WORDS_MAX).map(str::to_lowercase).collect();
    catalog
        .providers
        .values()
        .filter(|p| {
            crate::address::ProviderAddress::parse(&p.hostname, &p.namespace, &p.r#type)
                .is_ok_and(|a| viewer.may_read(policy, Resource::Provider(&a)))
        })
        .filter(|p| {
            let address = p.address().to_lowercase();
            terms.iter().all(|t| address.contains(t.as_str()))
        })
        .collect()
}

/// Words a provider search reads; more are ignored (as a module search's).
const PROVIDER_WORDS_MAX: usize = 8;

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
