use super::*;
use crate::app::{App, Request};
use crate::catalog::Catalog;
use crate::config::Config;
use crate::index::{Indexer, Limits};
use crate::layout;
use crate::module_docs::ModuleDocs;
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

/// A page as the API makes it: the plan from the catalog's index, the shards it names, the
/// page found in them.
fn page(catalog: &Catalog, listing: &Listing, visible: impl Fn(&ModuleAddress) -> bool, path: &str) -> Value {
    let index = catalog.index();
    let by_namespace = |ns: &str| ModuleAddress::parse(ns, "any", "any").is_ok_and(|m| visible(&m));
    let plan = plan(&index, listing, by_namespace);
    let shards: Vec<&ModuleShard> = plan.namespaces.iter().map(|ns| &catalog.shards[*ns]).collect();
    let (total, shown) = found(&plan, &shards, listing, &visible, |_| 0);
    super::page(total, &shown, listing, path)
}

#[test]
fn a_list_reads_only_the_shards_that_hold_its_page() {
    let mut c = Catalog::default();
    for (ns, modules) in [("a", 10), ("b", 10), ("c", 10), ("d", 1)] {
        for i in 0..modules {
            let e = entry(ns, &format!("m{i:02}"), if i % 2 == 0 { "aws" } else { "google" }, "x");
            c.set_module(&ModuleAddress::parse(ns, &e.name, &e.system).unwrap(), Some(e));
        }
    }
    let index = c.index();
    let all = |_: &str| true;
    let at = |offset, limit| plan(&index, &Listing { offset, limit, ..Listing::default() }, all).namespaces;
    assert_eq!(at(0, 10), ["a"]);
    assert_eq!(at(5, 10), ["a", "b"]);
    assert_eq!(at(10, 10), ["b"]);
    assert_eq!(at(25, 100), ["c", "d"]);
    assert!(at(31, 10).is_empty());
    let google = Listing { provider: Some("google".into()), offset: 5, limit: 5, ..Listing::default() };
    assert_eq!(plan(&index, &google, all).namespaces, ["b"], "counted by system");
    let hidden = plan(&index, &Listing::default(), |ns| ns != "a");
    assert_eq!(hidden.namespaces, ["b", "c"], "a namespace the viewer may not read is not read");
    let search = Listing { q: Some("x".into()), ..Listing::default() };
    assert_eq!(plan(&index, &search, |ns| ns != "c").namespaces, ["a", "b", "d"]);
    let listed = page(&c, &Listing { offset: 8, limit: 4, ..Listing::default() }, |_| true, "/v1/modules");
    assert_eq!(ids(&listed), ["a/m08/aws/1.0.0", "a/m09/google/1.0.0", "b/m00/aws/1.0.0", "b/m01/google/1.0.0"]);
    assert_eq!(listed["meta"]["next_offset"], 12);
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
    let aws = page(&catalog(), &Listing { provider: Some("google".into()), ..Listing::default() }, all, "/v1/modules");
    assert_eq!(ids(&aws), ["acme/vpc/google/1.0.0"]);
}

#[test]
fn sorted_by_downloads_most_first_ties_in_address_order() {
    let c = catalog();
    let index = c.index();
    let listing = Listing { by_downloads: true, limit: 3, ..Listing::default() };
    let plan = plan(&index, &listing, |_| true);
    assert_eq!(plan.namespaces, ["acme", "other"], "every namespace: the order is not the index's");
    let shards: Vec<&ModuleShard> = plan.namespaces.iter().map(|ns| &c.shards[*ns]).collect();
    let downloads = |e: &ModuleEntry| match e.name.as_str() {
        "vpc-peering" => 40,
        "subnets" | "vpc" => 7,
        _ => 0,
    };
    let (total, shown) = found(&plan, &shards, &listing, |_| true, downloads);
    let page = super::page(total, &shown, &listing, "/v1/modules");
    assert_eq!(ids(&page), ["other/vpc-peering/aws/1.0.0", "acme/subnets/aws/1.0.0", "acme/vpc/aws/1.0.0"]);
    assert_eq!(page["modules"][0]["downloads"], 40);
    assert_eq!(page["meta"]["next_url"], "/v1/modules?sort=downloads&limit=3&offset=3");
    let search = Listing { q: Some("vpc".into()), by_downloads: true, ..Listing::default() };
    let (_, shown) = found(&plan, &shards, &search, |_| true, downloads);
    let names: Vec<&str> = shown.iter().map(|l| l.entry.name.as_str()).collect();
    // Three have 7: the two named vpc before subnets (only its description says vpc).
    assert_eq!(names, ["vpc-peering", "vpc", "vpc", "subnets"], "downloads first, then relevance");
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
    let all = crate::auth::manage::record("all", "trg_all", vec!["*".into()], vec![], None);
    let store = crate::auth::TokenStore { format: 1, tokens: vec![acme, all] };
    storage.insert(layout::TOKENS, serde_json::to_vec(&store).unwrap());
    let app = App::builder(Config::new("bucket"), storage).services(&[Service::Web]).build().unwrap();
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
    assert_eq!(
        app.storage().request_count() - before,
        3,
        "warm: the catalog's index, the one shard and its namespace's download totals"
    );
    let (_, found) = call("/v1/modules/search", Some("q=vault"), acme).await;
    assert!(ids(&found).is_empty(), "{found}");
    let (_, found) = call("/v1/modules/search", Some("q=network"), acme).await;
    assert_eq!(ids(&found), ["acme/vpc/aws/1.1.0"]);
    assert_eq!(call("/v1/modules/search", None, acme).await.0, 400);
    assert_eq!(call("/v1/modules", Some("sort=name"), acme).await.0, 400);
    // A namespace the token may not read is never read: with its shard damaged, the token's
    // list and search still answer; a token that reads it gets the error.
    app.storage().insert(&crate::layout::catalog_shard("secret"), b"{ damaged".to_vec());
    for (path, query) in [("/v1/modules", None), ("/v1/modules/search", Some("q=a")), ("/v1/modules", Some("offset=1"))]
    {
        let (status, answer) = call(path, query, acme).await;
        assert_eq!(status, 200, "{path} {query:?}: {answer}");
        assert_ne!(call(path, query, Some("Bearer trg_all")).await.0, 200, "{path} {query:?} reads secret's shard");
    }

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
    assert!(app.storage().request_count() - before <= 3, "the manifest, the docs and the download counts, at once");

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
