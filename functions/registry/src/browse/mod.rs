//! The module list, search and details API, in the public registry's v1 shape so that tools
//! written for it work here: `GET /v1/modules`, `GET /v1/modules/search?q=…`,
//! `GET /v1/modules/:namespace/:name/:system[/:version]`. The web function serves it.
//!
//! List and search read the catalog (`routes::catalog` finds the shards a page needs),
//! filtered by what the caller may read, so a token never learns of a module outside its
//! scopes. Details are the module's manifest and
//! the version's docs, shown only when the docs were read from the archive the manifest
//! serves, within `DETAILS_MAX` bytes (`details.rs`). Fields the registry does not keep are present with empty values (`owner`,
//! `source`, `verified`: docs/API.md says why), so decoders of the public registry's answers
//! still find them; `downloads` is every version's total as the usage function counted it (in a
//! list or search from the namespace's summary, `usage::NamespaceUsage`; in details from the
//! module's own document), and `sort=downloads` orders a list or search by it.

use serde_json::{Value, json};

use crate::address::ModuleAddress;
use crate::catalog::{CatalogIndex, ModuleEntry, ModuleShard};
use crate::query::Listing;

mod details;
pub use details::{DETAILS_MAX, details};

/// Search words read from `q`; more are ignored.
const SEARCH_TERMS_MAX: usize = 8;

/// One page of a list or search answer: `meta` (`limit`, `current_offset`, and `next_offset`
/// / `next_url`, `prev_offset` / `prev_url` where there is such a page) and `modules`, the
/// page `shown` of `total` modules found.
pub fn page(total: usize, shown: &[Listed], listing: &Listing, path: &str) -> Value {
    let modules: Vec<Value> = shown.iter().map(summary).collect();
    let mut meta = json!({"limit": listing.limit, "current_offset": listing.offset});
    let next = listing.offset + listing.limit;
    if next < total {
        meta["next_offset"] = json!(next);
        meta["next_url"] = json!(format!("{path}?{}", listing.query_at(next)));
    }
    if listing.offset > 0 {
        let prev = listing.offset.saturating_sub(listing.limit);
        meta["prev_offset"] = json!(prev);
        meta["prev_url"] = json!(format!("{path}?{}", listing.query_at(prev)));
    }
    json!({"meta": meta, "modules": modules})
}

/// A module on a page, with its downloads (every version's, ever).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// What the catalog says of it.
    pub entry: ModuleEntry,
    /// Its downloads.
    pub downloads: u64,
}

/// Which catalog shards a list or search reads, in address order (`plan`), and where its page
/// begins in them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan<'a> {
    /// The namespaces whose shards to read.
    pub namespaces: Vec<&'a str>,
    /// A list's modules before its page in the first shard read, and how many it has in all
    /// (as the index counts them); for a search, `None`: every candidate shard is read, and
    /// the matches are counted there.
    list: Option<(usize, usize)>,
}

/// The shards a list or search needs, from the index, among the namespaces `visible` says
/// may be read. A list reads only the shards that hold its page (usually one or two); a
/// search, or a list sorted by downloads, reads every namespace it may find a module in (one
/// with `namespace=`).
pub fn plan<'a>(index: &'a CatalogIndex, listing: &Listing, visible: impl Fn(&str) -> bool) -> Plan<'a> {
    let counted = index
        .namespaces
        .iter()
        .filter(|(namespace, _)| listing.namespace.as_deref().is_none_or(|n| n == namespace.as_str()))
        .filter(|(namespace, _)| visible(namespace))
        .map(|(namespace, systems)| {
            let modules = match listing.provider.as_deref() {
                Some(system) => systems.get(system).copied().unwrap_or(0),
                None => systems.values().sum(),
            };
            (namespace.as_str(), modules)
        })
        .filter(|(_, modules)| *modules > 0);
    if listing.q.is_some() || listing.by_downloads {
        return Plan { namespaces: counted.map(|(namespace, _)| namespace).collect(), list: None };
    }
    let (first, end) = (listing.offset, listing.offset.saturating_add(listing.limit));
    let (mut at, mut namespaces, mut skip) = (0usize, Vec::new(), 0);
    for (namespace, modules) in counted {
        if at.saturating_add(modules) > first && at < end {
            if namespaces.is_empty() {
                skip = first.saturating_sub(at);
            }
            namespaces.push(namespace);
        }
        at = at.saturating_add(modules);
    }
    Plan { namespaces, list: Some((skip, at)) }
}

/// How many modules a list or search found, and its page, from the shards `plan` named (in
/// its order), each with its `downloads`. While a publish is between its shard and the index,
/// a list's page can be a module short or long at a shard's edge; the next read has it right.
pub fn found(
    plan: &Plan<'_>,
    shards: &[&ModuleShard],
    listing: &Listing,
    visible: impl Fn(&ModuleAddress) -> bool,
    downloads: impl Fn(&ModuleEntry) -> u64,
) -> (usize, Vec<Listed>) {
    let (_, selected) = select(shards.iter().flat_map(|s| s.modules.values()), listing, visible);
    let (skip, total) = plan.list.unwrap_or((listing.offset, selected.len()));
    let listed = |(downloads, entry): (u64, &ModuleEntry)| Listed { entry: entry.clone(), downloads };
    let page = if listing.by_downloads {
        let mut counted: Vec<(u64, &ModuleEntry)> = selected.into_iter().map(|e| (downloads(e), e)).collect();
        // Stable: equal downloads keep address (or relevance) order.
        counted.sort_by_key(|(downloads, _)| std::cmp::Reverse(*downloads));
        counted.into_iter().skip(skip).take(listing.limit).map(listed).collect()
    } else {
        selected.into_iter().skip(skip).take(listing.limit).map(|e| listed((downloads(e), e))).collect()
    };
    (total, page)
}

/// Of `entries` (in address order), those `listing` wants (its filters and search words, not
/// its page) and `visible` says may be read: in address order, or for a search by relevance.
/// Also the count.
pub fn select<'a>(
    entries: impl Iterator<Item = &'a ModuleEntry>,
    listing: &Listing,
    visible: impl Fn(&ModuleAddress) -> bool,
) -> (usize, Vec<&'a ModuleEntry>) {
    let terms: Vec<String> = listing
        .q
        .as_deref()
        .map(|q| q.split_whitespace().take(SEARCH_TERMS_MAX).map(str::to_lowercase).collect())
        .unwrap_or_default();
    let mut found: Vec<(u32, &ModuleEntry)> = entries
        .filter(|e| listing.namespace.as_deref().is_none_or(|n| n == e.namespace))
        .filter(|e| listing.provider.as_deref().is_none_or(|s| s == e.system))
        .filter(|e| ModuleAddress::parse(&e.namespace, &e.name, &e.system).is_ok_and(|m| visible(&m)))
        .filter_map(|e| if terms.is_empty() { Some((0, e)) } else { relevance(e, &terms).map(|r| (r, e)) })
        .collect();
    // Stable: equal relevance keeps address order.
    found.sort_by_key(|(relevance, _)| std::cmp::Reverse(*relevance));
    (found.len(), found.into_iter().map(|(_, e)| e).collect())
}

/// How well a module matches every search word (case-insensitive); `None`: a word is missing.
/// A word that is the name scores most, then one in the name, then in the namespace or system,
/// then in the description.
fn relevance(entry: &ModuleEntry, terms: &[String]) -> Option<u32> {
    let name = entry.name.to_lowercase();
    let place = format!("{} {}", entry.namespace, entry.system).to_lowercase();
    let description = entry.description.as_deref().unwrap_or_default().to_lowercase();
    let mut score = 0;
    for term in terms {
        score += if name == *term {
            8
        } else if name.contains(term.as_str()) {
            4
        } else if place.contains(term.as_str()) {
            2
        } else if description.contains(term.as_str()) {
            1
        } else {
            return None;
        };
    }
    Some(score)
}

/// A module as the public registry lists it.
fn summary(listed: &Listed) -> Value {
    let entry = &listed.entry;
    let mut object = module_object(
        &entry.namespace,
        &entry.name,
        &entry.system,
        &entry.latest,
        entry.description.as_deref(),
        entry.published_at.as_deref().or(entry.updated.as_deref()),
    );
    object["downloads"] = json!(listed.downloads);
    object
}

fn module_object(
    namespace: &str,
    name: &str,
    system: &str,
    version: &str,
    description: Option<&str>,
    published_at: Option<&str>,
) -> Value {
    json!({
        "id": format!("{namespace}/{name}/{system}/{version}"),
        "owner": "",
        "namespace": namespace,
        "name": name,
        "version": version,
        "provider": system,
        "description": description.unwrap_or_default(),
        "source": "",
        "published_at": published_at.unwrap_or_default(),
        "downloads": 0,
        "verified": false,
    })
}

#[cfg(test)]
mod tests;
