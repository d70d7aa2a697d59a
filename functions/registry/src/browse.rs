//! The module list, search and details API, in the public registry's v1 shape so that tools
//! written for it work here: `GET /v1/modules`, `GET /v1/modules/search?q=…`,
//! `GET /v1/modules/:namespace/:name/:system[/:version]`. The web function serves it.
//!
//! List and search are one read (the catalog), filtered by what the caller may read, so a
//! token never learns of a module outside its scopes. Details are the module's manifest and
//! the version's docs, shown only when the docs were read from the archive the manifest
//! serves. Fields the registry does not keep are present with empty values (`owner`,
//! `source`, `downloads`, `verified`: docs/API.md says why), so decoders of the public
//! registry's answers still find them.

use serde_json::{Value, json};

use crate::address::ModuleAddress;

use crate::catalog::{Catalog, ModuleEntry};
use crate::manifest::{ModuleManifest, ModuleVersion};
use crate::module_docs::compare::Comparison;
use crate::module_docs::{ModuleDir, ModuleDocs};
use crate::query::Listing;

/// Search words read from `q`; more are ignored.
const SEARCH_TERMS_MAX: usize = 8;

/// One page of a list or search answer: `meta` (`limit`, `current_offset`, and `next_offset`
/// / `next_url`, `prev_offset` / `prev_url` where there is such a page) and `modules`. Modules
/// in address order, or for a search by relevance; only those `visible` says may be read.
pub fn page(catalog: &Catalog, listing: &Listing, visible: impl Fn(&ModuleAddress) -> bool, path: &str) -> Value {
    let (total, found) = select(catalog, listing, visible);
    let modules: Vec<Value> = found.iter().skip(listing.offset).take(listing.limit).map(|e| summary(e)).collect();
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

/// Every module of `listing` (its filters and search words, not its page) that `visible` says
/// may be read: in address order, or for a search by relevance. Also the count.
pub fn select<'a>(
    catalog: &'a Catalog,
    listing: &Listing,
    visible: impl Fn(&ModuleAddress) -> bool,
) -> (usize, Vec<&'a ModuleEntry>) {
    let terms: Vec<String> = listing
        .q
        .as_deref()
        .map(|q| q.split_whitespace().take(SEARCH_TERMS_MAX).map(str::to_lowercase).collect())
        .unwrap_or_default();
    let mut found: Vec<(u32, &ModuleEntry)> = catalog
        .modules
        .values()
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
fn summary(entry: &ModuleEntry) -> Value {
    module_object(
        &entry.namespace,
        &entry.name,
        &entry.system,
        &entry.latest,
        entry.description.as_deref(),
        entry.published_at.as_deref().or(entry.updated.as_deref()),
    )
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

/// A version's details: the module object, `root`, `submodules`, `examples`, `providers`,
/// `versions` (newest first) and the docs' `warnings`.
pub fn details(
    module: &ModuleAddress,
    entry: &ModuleVersion,
    manifest: &ModuleManifest,
    docs: Option<&ModuleDocs>,
) -> Value {
    let description = docs.and_then(|d| d.root.readme.as_deref()).and_then(crate::module_docs::summary);
    let mut body = module_object(
        &module.namespace,
        &module.name,
        &module.system,
        &entry.version,
        description.as_deref(),
        entry.published_at.as_deref(),
    );
    let empty = ModuleDir::default();
    let root = docs.map_or(&empty, |d| &d.root);
    let mut providers: Vec<&str> = root.provider_dependencies.iter().map(|p| p.name.as_str()).collect();
    providers.sort_unstable();
    providers.dedup();
    if providers.is_empty() {
        providers.push(&module.system);
    }
    let mut warnings: Vec<String> = docs.map(|d| d.warnings.clone()).unwrap_or_default();
    if docs.is_none() {
        warnings
            .push("the documentation of this version has not been read yet (the next indexing pass reads it)".into());
    }
    body["root"] = directory(root, &module.name);
    body["submodules"] = docs.map_or_else(Vec::new, |d| d.submodules.iter().map(|s| directory(s, "")).collect()).into();
    body["examples"] = docs.map_or_else(Vec::new, |d| d.examples.iter().map(|s| directory(s, "")).collect()).into();
    body["providers"] = json!(providers);
    body["versions"] = json!(manifest.versions.iter().map(|v| v.version.as_str()).collect::<Vec<_>>());
    body["warnings"] = json!(warnings);
    body
}

/// The registry's additions to a version's details: its deprecation, how it was judged at
/// publish (`index::judgment`), and the changes since the version before it, as compared at
/// publish (`changes`: `since` and the list, each change with `breaking` saying why when it
/// is; past `CHANGES_KEPT`, `more` and `more_breaking` count those not kept).
pub fn add_changes(body: &mut Value, entry: &ModuleVersion, changes: Option<&Comparison>) {
    body["deprecation"] = match &entry.deprecation {
        Some(d) => json!({"reason": d.reason, "replacement": d.replacement}),
        None => Value::Null,
    };
    body["judged"] = json!(entry.judged);
    body["changes"] = match changes {
        Some(c) if c.more > 0 => json!({
            "since": c.from, "changes": c.changes, "more": c.more, "more_breaking": c.more_breaking
        }),
        Some(c) => json!({"since": c.from, "changes": c.changes}),
        None => Value::Null,
    };
}

/// One directory (root, submodule, example) in the public registry's shape, with the
/// registry's additions (`type`, `required`, `sensitive`, `required_version`).
fn directory(dir: &ModuleDir, root_name: &str) -> Value {
    let name = if dir.path.is_empty() { root_name } else { dir.path.rsplit('/').next().unwrap_or_default() };
    let inputs: Vec<Value> = dir
        .inputs
        .iter()
        .map(|i| {
            json!({
                "name": i.name,
                "type": i.r#type.as_deref().unwrap_or_default(),
                "description": i.description.as_deref().unwrap_or_default(),
                "default": i.default.as_deref().unwrap_or_default(),
                "required": i.required,
                "sensitive": i.sensitive,
            })
        })
        .collect();
    let outputs: Vec<Value> = dir
        .outputs
        .iter()
        .map(|o| json!({"name": o.name, "description": o.description.as_deref().unwrap_or_default(), "sensitive": o.sensitive}))
        .collect();
    json!({
        "path": dir.path,
        "name": name,
        "readme": dir.readme.as_deref().unwrap_or_default(),
        "empty": dir.inputs.is_empty() && dir.outputs.is_empty() && dir.resources.is_empty(),
        "inputs": inputs,
        "outputs": outputs,
        "dependencies": dir.dependencies,
        "provider_dependencies": dir.provider_dependencies,
        "resources": dir.resources,
        "required_version": dir.required_version.as_deref().unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::{App, Request};
    use crate::config::Config;
    use crate::index::{Indexer, Limits};
    use crate::layout;
    use crate::router::Service;
    use crate::storage::MemoryStorage;

    fn entry(ns: &str, name: &str, system: &str, description: &str) -> ModuleEntry {
        ModuleEntry {
            namespace: ns.into(),
            name: name.into(),
            system: system.into(),
            latest: "1.0.0".into(),
            sha256: "00".into(),
            description: Some(description.into()),
            versions: 1,
            published_at: Some("2026-11-23T10:00:00Z".into()),
            updated: Some("2026-11-23T10:00:00Z".into()),
        }
    }

    fn catalog() -> Catalog {
        let mut c = Catalog::default();
        for e in [
            entry("acme", "vpc", "aws", "A VPC with subnets."),
            entry("acme", "subnets", "aws", "Subnets for a VPC."),
            entry("acme", "dns", "aws", "Route 53 zones."),
            entry("acme", "vpc", "google", "A Google network."),
            entry("other", "vpc-peering", "aws", "Peers two VPCs."),
        ] {
            let m = ModuleAddress::parse(&e.namespace, &e.name, &e.system).unwrap();
            c.set_module(&m, Some(e));
        }
        c
    }

    fn ids(page: &Value) -> Vec<String> {
        page["modules"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap().to_string()).collect()
    }

    #[test]
    fn list_pages_in_address_order_with_links() {
        let all = |_: &ModuleAddress| true;
        let first = page(&catalog(), &Listing { limit: 2, ..Listing::default() }, all, "/v1/modules");
        assert_eq!(ids(&first), ["acme/dns/aws/1.0.0", "acme/subnets/aws/1.0.0"]);
        assert_eq!(
            first["meta"],
            json!({"limit": 2, "current_offset": 0, "next_offset": 2, "next_url": "/v1/modules?limit=2&offset=2"})
        );
        let last = page(&catalog(), &Listing { limit: 2, offset: 4, ..Listing::default() }, all, "/v1/modules");
        assert_eq!(ids(&last), ["other/vpc-peering/aws/1.0.0"]);
        assert_eq!(last["meta"]["prev_url"], "/v1/modules?limit=2&offset=2");
        assert!(last["meta"].get("next_url").is_none());
        let m = &first["modules"][0];
        assert_eq!(
            *m,
            json!({"id": "acme/dns/aws/1.0.0", "owner": "", "namespace": "acme", "name": "dns", "version": "1.0.0",
                   "provider": "aws", "description": "Route 53 zones.", "source": "",
                   "published_at": "2026-11-23T10:00:00Z", "downloads": 0, "verified": false})
        );
        let past = page(&catalog(), &Listing { offset: 1000, ..Listing::default() }, all, "/v1/modules");
        assert!(ids(&past).is_empty());
        let aws =
            page(&catalog(), &Listing { provider: Some("google".into()), ..Listing::default() }, all, "/v1/modules");
        assert_eq!(ids(&aws), ["acme/vpc/google/1.0.0"]);
    }

    #[test]
    fn search_ranks_by_where_every_word_is_found() {
        let all = |_: &ModuleAddress| true;
        let search = |q: &str| Listing { q: Some(q.into()), ..Listing::default() };
        let found = page(&catalog(), &search("VPC"), all, "/v1/modules/search");
        assert_eq!(
            ids(&found),
            ["acme/vpc/aws/1.0.0", "acme/vpc/google/1.0.0", "other/vpc-peering/aws/1.0.0", "acme/subnets/aws/1.0.0"]
        );
        assert_eq!(ids(&page(&catalog(), &search("vpc google"), all, "")), ["acme/vpc/google/1.0.0"]);
        assert!(ids(&page(&catalog(), &search("nothing-like-it"), all, "")).is_empty());
        let paged = page(&catalog(), &Listing { limit: 1, ..search("vpc é") }, all, "/v1/modules/search");
        assert!(ids(&paged).is_empty());
        let paged = page(&catalog(), &Listing { limit: 1, ..search("vpc aws") }, all, "/v1/modules/search");
        assert_eq!(paged["meta"]["next_url"], "/v1/modules/search?q=vpc%20aws&limit=1&offset=1");
    }

    #[test]
    fn a_viewer_sees_only_what_it_may_read() {
        let acme = |m: &ModuleAddress| m.namespace == "acme";
        let listed = page(&catalog(), &Listing::default(), acme, "/v1/modules");
        assert!(ids(&listed).iter().all(|id| id.starts_with("acme/")), "{listed}");
        let search = Listing { q: Some("peering".into()), ..Listing::default() };
        assert!(ids(&page(&catalog(), &search, acme, "")).is_empty());
        // Paging counts only what is visible: no hint of hidden modules in next_url.
        let end = page(&catalog(), &Listing { limit: 4, ..Listing::default() }, acme, "/v1/modules");
        assert!(end["meta"].get("next_offset").is_none(), "{end}");
    }

    /// Through the handler, as every deployment answers: list, search and details from what
    /// the indexer wrote; a token scoped to one namespace sees nothing of another; one read
    /// for a list, two for details.
    // One scenario told in order (long on purpose): publish, then list, search and details.
    #[tokio::test]
    async fn the_api_answers_from_what_the_indexer_wrote_within_a_tokens_scopes() {
        let storage = MemoryStorage::new();
        let indexer = Indexer::new(&storage, Limits::default());
        let vpc = crate::testing::tar_gz(&[
            ("README.md", b"# VPC\n\nA network with subnets.\n".as_slice()),
            ("variables.tf", b"variable \"cidr\" {\n  type = string\n  default = \"10.0.0.0/16\"\n}\nvariable \"name\" { description = \"Name.\" }\n"),
            ("outputs.tf", b"output \"id\" {\n  value = 1\n  sensitive = true\n}\n"),
            ("versions.tf", b"terraform {\n  required_providers {\n    aws = { source = \"hashicorp/aws\", version = \">= 5.0\" }\n  }\n}\n"),
            ("modules/subnet/main.tf", b"variable \"az\" {}\n"),
        ]);
        for (key, bytes) in [
            ("modules/acme/vpc/aws/1.0.0.tar.gz", vpc.clone()),
            ("modules/acme/vpc/aws/1.1.0.tar.gz", vpc),
            (
                "modules/secret/vault/aws/0.1.0.tar.gz",
                crate::testing::tar_gz(&[("README.md", b"Hidden vault.".as_slice()), ("main.tf", b"")]),
            ),
        ] {
            storage.insert(key, bytes);
            indexer.on_object_changed(key).await.unwrap();
        }
        let acme = crate::auth::manage::record("acme", "trg_acme", vec!["acme".into()], vec![], None);
        let store = crate::auth::TokenStore { format: 1, tokens: vec![acme] };
        storage.insert(layout::TOKENS, serde_json::to_vec(&store).unwrap());
        let app = App::new(Config::new("bucket"), storage, &[Service::Web]);
        let call = |path: &'static str, query: Option<&'static str>, token: Option<&'static str>| {
            let app = &app;
            async move {
                let reply = app.handle(&Request::get(path).query(query).authorization(token)).await;
                let body: Value = serde_json::from_slice(&reply.body).unwrap();
                (reply.status.as_u16(), body)
            }
        };
        let acme = Some("Bearer trg_acme");

        // No token and nothing anonymous: 401, as for any module route.
        assert_eq!(call("/v1/modules", None, None).await.0, 401);
        assert_eq!(call("/v1/modules", None, Some("Bearer trg_wrong")).await.0, 401);

        let (status, list) = call("/v1/modules", None, acme).await;
        assert_eq!(status, 200, "{list}");
        assert_eq!(ids(&list), ["acme/vpc/aws/1.1.0"], "nothing of namespace secret");
        assert_eq!(list["modules"][0]["description"], "A network with subnets.");
        let before = app.storage().request_count();
        assert_eq!(call("/v1/modules", Some("limit=1"), acme).await.0, 200);
        assert_eq!(app.storage().request_count() - before, 1, "warm: the catalog only");
        let (_, found) = call("/v1/modules/search", Some("q=vault"), acme).await;
        assert!(ids(&found).is_empty(), "{found}");
        let (_, found) = call("/v1/modules/search", Some("q=network"), acme).await;
        assert_eq!(ids(&found), ["acme/vpc/aws/1.1.0"]);
        assert_eq!(call("/v1/modules/search", None, acme).await.0, 400);
        assert_eq!(call("/v1/modules", Some("sort=name"), acme).await.0, 400);

        let (status, latest) = call("/v1/modules/acme/vpc/aws", None, acme).await;
        assert_eq!(status, 200, "{latest}");
        assert_eq!(latest["id"], "acme/vpc/aws/1.1.0");
        assert_eq!(latest["versions"], json!(["1.1.0", "1.0.0"]));
        assert_eq!(latest["providers"], json!(["aws"]));
        assert_eq!(
            latest["root"]["inputs"],
            json!([
                {"name": "cidr", "type": "string", "description": "", "default": "\"10.0.0.0/16\"", "required": false, "sensitive": false},
                {"name": "name", "type": "", "description": "Name.", "default": "", "required": true, "sensitive": false}
            ])
        );
        assert_eq!(latest["root"]["outputs"], json!([{"name": "id", "description": "", "sensitive": true}]));
        assert_eq!(
            latest["root"]["provider_dependencies"],
            json!([{"name": "aws", "namespace": "hashicorp", "source": "hashicorp/aws", "version": ">= 5.0"}])
        );
        assert_eq!(latest["submodules"][0]["path"], "modules/subnet");
        assert_eq!(latest["submodules"][0]["inputs"][0]["name"], "az");
        let before = app.storage().request_count();
        let (status, one) = call("/v1/modules/acme/vpc/aws/1.0.0", None, acme).await;
        assert_eq!((status, one["id"].as_str()), (200, Some("acme/vpc/aws/1.0.0")));
        assert!(app.storage().request_count() - before <= 2, "the manifest and the docs");

        // Out of scope and absent: the same 404.
        let hidden = call("/v1/modules/secret/vault/aws", None, acme).await;
        let absent = call("/v1/modules/ghost/vault/aws", None, acme).await;
        assert_eq!((hidden.0, absent.0), (404, 404));
        assert_eq!(hidden.1, json!({"errors": ["module secret/vault/aws not found"]}));
        assert_eq!(call("/v1/modules/acme/vpc/aws/9.9.9", None, acme).await.0, 404);

        // Docs that do not match the archive served are not shown as its docs.
        let key = "indexed/modules/acme/vpc/aws/docs/1.0.0.json";
        let mut docs: ModuleDocs = serde_json::from_slice(&app.storage().peek(key).unwrap()).unwrap();
        docs.sha256 = "0".repeat(64);
        app.storage().insert(key, serde_json::to_vec(&docs).unwrap());
        let (_, stale) = call("/v1/modules/acme/vpc/aws/1.0.0", None, acme).await;
        assert_eq!(stale["root"]["inputs"], json!([]));
        assert!(stale["warnings"][0].as_str().unwrap().contains("not been read yet"), "{stale}");
    }
}
