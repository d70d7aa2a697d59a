//! Download counts end to end through the handler: each download answer writes one record
//! (a GET answered, never a HEAD, a refusal or a miss), the records go through the usage
//! function's code as a CloudWatch Logs batch, and the details API and the version page show
//! the counts, and the callers to an admin token only.

#![allow(clippy::unwrap_used)]

use registry::auth::{TokenRecord, TokenStore, manage};
use registry::index::{Indexer, Limits};
use registry::storage::MemoryStorage;
use registry::usage::{Batch, LogEvent, Settings, Sink};
use registry::{App, Config, Request};
use serde_json::Value;

/// The batch CloudWatch Logs would deliver of `lines`, timed `at` (Unix seconds).
fn batch(lines: &[String], at: i64) -> Batch {
    Batch {
        message_type: "DATA_MESSAGE".into(),
        log_group: "/aws/lambda/registry-modules".into(),
        log_stream: "2026/11/27/[$LATEST]0".into(),
        log_events: lines
            .iter()
            .enumerate()
            .map(|(i, l)| LogEvent { id: i.to_string(), timestamp: at * 1000, message: l.clone() })
            .collect(),
    }
}

async fn published() -> MemoryStorage {
    let storage = MemoryStorage::new();
    let indexer = Indexer::new(&storage, Limits::default());
    let vpc = registry::testing::module_tar_gz(&[("README.md", "# VPC\n\nA network.\n"), ("main.tf", "")]);
    // `dns`: a module nobody downloads, listed before `vpc` in address order.
    for key in
        ["modules/acme/vpc/aws/1.0.0.tar.gz", "modules/acme/vpc/aws/2.0.0.tar.gz", "modules/acme/dns/aws/1.0.0.tar.gz"]
    {
        storage.insert(key, vpc.clone());
        indexer.on_object_changed(key).await.unwrap();
    }
    storage.insert("indexed/providers/registry.terraform.io/hashicorp/null/index.json", r#"{"versions":{"3.2.1":{}}}"#);
    storage.insert(
        "indexed/providers/registry.terraform.io/hashicorp/null/3.2.1.json",
        r#"{"archives":{"linux_amd64":{"url":"terraform-provider-null_3.2.1_linux_amd64.zip","hashes":["h1:x="]}}}"#,
    );
    let ci = manage::record("ci", "trg_ci", vec!["acme".into()], vec!["registry.terraform.io/*/*".into()], None);
    let boss = TokenRecord { admin: true, ..manage::record("boss", "trg_boss", vec!["acme".into()], vec![], None) };
    // An admin of another namespace, who reads acme's modules only as anyone may, sees no
    // callers of them.
    let other = TokenRecord { admin: true, ..manage::record("other", "trg_other", vec!["team".into()], vec![], None) };
    // A caller name that tries to break out of its log line and its page.
    let hostile = manage::record("x\n{\"usage\":1}<script>", "trg_hostile", vec!["acme".into()], vec![], None);
    let store = TokenStore { format: 1, tokens: vec![ci, boss, other, hostile] };
    storage.insert(registry::layout::TOKENS, serde_json::to_vec(&store).unwrap());
    storage
}

/// Every route that counts is served by a function whose log the usage function reads.
#[test]
fn every_download_route_is_served_by_a_counting_function() {
    let paths = registry::router::BasePaths::default();
    for path in [
        "/v1/modules/acme/vpc/aws/1.0.0/download",
        "/v1/modules/upstream/registry.terraform.io/terraform-aws-modules/vpc/aws/5.0.0/download",
        "/v1/mirror/registry.terraform.io/hashicorp/null/3.2.1.json",
        "/v1/providers/acme/widget/1.0.0/download/linux/amd64",
        "/v2/modules/acme/vpc/aws/manifests/1.0.0",
    ] {
        let route = registry::router::route(&http::Method::GET, path, None, &paths).unwrap();
        let function = route.service().function_name();
        assert!(registry::usage::COUNTING_FUNCTIONS.contains(&function), "{path}: {function}");
    }
}

#[tokio::test]
async fn downloads_are_counted_once_each_and_shown_with_callers_to_admins_only() {
    let storage = published().await;
    let (sender, mut lines) = tokio::sync::mpsc::unbounded_channel();
    let mut config = Config::new("bucket");
    config.access.anonymous_modules = vec!["acme".into()];
    let app = App::builder(config, storage).usage(Sink::Channel(sender)).build().unwrap();
    let get = |path: &'static str, token: &'static str| Request::get(path).authorization(Some(token));
    let head = http::Method::HEAD;
    let download = "/v1/modules/acme/vpc/aws/1.0.0/download";
    let answers = [
        (get(download, "Bearer trg_ci"), 200),
        (get(download, "Bearer trg_ci"), 200),
        (get(download, "Bearer trg_boss"), 200),
        (get(download, "Bearer trg_hostile"), 200),
        (get("/v1/modules/acme/vpc/aws/2.0.0/download", "Bearer trg_ci"), 200),
        (get("/v1/mirror/registry.terraform.io/hashicorp/null/3.2.1.json", "Bearer trg_ci"), 200),
        (get(download, "Bearer trg_other"), 200),
        (Request::get(download), 200),
        // OCI: a tag's resolution counts whatever its method (released OpenTofu's is a HEAD),
        // `latest` as the version it names; the manifest by digest is the same pull's.
        (Request::new(&head, "/v2/modules/acme/vpc/aws/manifests/1.0.0").authorization(Some("Bearer trg_ci")), 200),
        (get("/v2/modules/acme/vpc/aws/manifests/latest", "Bearer trg_ci"), 200),
        // Not downloads: a HEAD, a version that is not there, a token that is none.
        (Request::new(&head, download).authorization(Some("Bearer trg_ci")), 200),
        (get("/v1/modules/acme/vpc/aws/9.0.0/download", "Bearer trg_ci"), 404),
        (get(download, "Bearer trg_wrong"), 401),
    ];
    for (request, status) in answers {
        assert_eq!(app.handle(&request).await.status.as_u16(), status, "{}", request.raw_path);
    }
    let mut records = Vec::new();
    while let Ok(line) = lines.try_recv() {
        records.push(line);
    }
    assert_eq!(records.len(), 10, "{records:#?}");
    assert!(records.iter().all(|l| !l.contains('\n') && !l.contains("trg_")), "one line each, no token: {records:#?}");

    // The usage function's work, delivered twice: counted once.
    let now = registry::clock::now_unix();
    let delivered = batch(&records, now).encode();
    for _ in 0..2 {
        registry::usage::fold_event(app.storage(), &delivered, Settings::default(), now).await.unwrap();
    }
    // `latest` counted as the release it names.
    let latest =
        registry::usage::OwnerUsage::parse(&app.storage().peek("usage/modules/acme/vpc/aws.json").unwrap()).unwrap();
    assert_eq!(latest.downloads("2.0.0", registry::usage::day_of(now)).total, 2, "the download and `latest`");
    let details = |token: &'static str| {
        let app = &app;
        async move {
            let reply = app.handle(&get("/v1/modules/acme/vpc/aws/1.0.0", token)).await;
            assert_eq!(reply.status, 200, "{}", String::from_utf8_lossy(&reply.body));
            serde_json::from_slice::<Value>(&reply.body).unwrap()
        }
    };
    let seen = details("Bearer trg_ci").await;
    assert_eq!(seen["downloads"], 9, "every version of the module: {seen}");
    assert_eq!(seen["usage"]["version"]["total"], 7);
    assert_eq!(seen["usage"]["version"]["last_7_days"], 7);
    assert_eq!(seen["usage"]["module"]["last_30_days"], 9);
    assert!(seen["usage"].get("callers").is_none(), "not an admin: {seen}");
    assert!(details("Bearer trg_other").await.get("usage").is_some_and(|u| u.get("callers").is_none()));
    let admin = details("Bearer trg_boss").await;
    let callers: Vec<(String, u64)> = admin["usage"]["callers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["caller"].as_str().unwrap().to_string(), c["downloads"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        callers,
        [
            ("token ci".into(), 3),
            ("anonymous".into(), 1),
            ("token boss".into(), 1),
            ("token other".into(), 1),
            ("token x?{\"usage\":1}<script>".into(), 1)
        ],
        "most first; the name's newline replaced"
    );

    // The page: counts for everyone who may read it, the callers for the admin, escaped.
    let page = |token: &'static str| {
        let app = &app;
        async move {
            String::from_utf8(app.handle(&get("/ui/modules/acme/vpc/aws/1.0.0", token)).await.body.to_vec()).unwrap()
        }
    };
    let (plain, admin) = (page("Bearer trg_ci").await, page("Bearer trg_boss").await);
    assert!(plain.contains("This version: 7 in the last 7 days") && !plain.contains("token ci"), "{plain}");
    assert!(admin.contains("<code>token ci</code>"), "{admin}");
    assert!(admin.contains("&lt;script&gt;") && !admin.contains("<script>"), "escaped");

    // The module list carries every version's total and sorts by it (the namespace's
    // summary, folded from the same batch); the catalog page likewise.
    let list = |query: &'static str| {
        let app = &app;
        async move {
            let reply = app.handle(&get("/v1/modules", "Bearer trg_ci").query(Some(query))).await;
            assert_eq!(reply.status, 200, "{}", String::from_utf8_lossy(&reply.body));
            let body: Value = serde_json::from_slice(&reply.body).unwrap();
            let modules = body["modules"].as_array().unwrap().iter();
            modules
                .map(|m| (m["name"].as_str().unwrap().to_string(), m["downloads"].as_u64().unwrap()))
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(list("namespace=acme").await, [("dns".into(), 0), ("vpc".into(), 9)], "address order");
    assert_eq!(list("namespace=acme&sort=downloads").await, [("vpc".into(), 9), ("dns".into(), 0)]);
    assert_eq!(list("sort=downloads&limit=1&offset=1").await, [("dns".into(), 0)], "paged in that order");
    let catalog = {
        let reply = app.handle(&get("/", "Bearer trg_ci").query(Some("sort=downloads"))).await;
        String::from_utf8(reply.body.to_vec()).unwrap()
    };
    let (vpc, dns) = (catalog.find("acme/vpc/aws</a>").unwrap(), catalog.find("acme/dns/aws</a>").unwrap());
    assert!(vpc < dns && catalog.contains("<td>9</td>") && catalog.contains("sort by name"), "{catalog}");

    // The provider's page shows its counts too.
    let provider_page = {
        let reply = app.handle(&get("/ui/providers/registry.terraform.io/hashicorp/null/3.2.1", "Bearer trg_ci")).await;
        assert_eq!(reply.status, 200, "{}", String::from_utf8_lossy(&reply.body));
        String::from_utf8(reply.body.to_vec()).unwrap()
    };
    assert!(provider_page.contains("This version: 1 in the last 7 days") && provider_page.contains("The provider: 1"));

    // The provider's mirror download, under its own document, by platform-less protocol.
    let provider = registry::usage::Counted::Provider(
        registry::address::ProviderAddress::parse("registry.terraform.io", "hashicorp", "null").unwrap(),
    );
    let stored = app.storage().peek(&provider.key()).unwrap();
    let usage = registry::usage::OwnerUsage::parse(&stored).unwrap();
    assert_eq!(usage.downloads("3.2.1", registry::usage::day_of(now)).total, 1);
}

/// The operator's report: versions nobody downloaded in the window, with when they last were;
/// a version downloaded inside it is left out.
#[tokio::test]
async fn the_report_lists_what_nobody_downloaded_in_the_window() {
    use registry::usage::report::{Last, idle_versions};
    let storage = MemoryStorage::new();
    let indexer = Indexer::new(&storage, Limits::default());
    let vpc = registry::testing::module_tar_gz(&[("main.tf", "")]);
    for v in ["1.0.0", "2.0.0", "3.0.0"] {
        let key = format!("modules/acme/vpc/aws/{v}.tar.gz");
        storage.insert(&key, vpc.clone());
        indexer.on_object_changed(&key).await.unwrap();
    }
    storage.insert("indexed/providers/registry.terraform.io/hashicorp/null/index.json", r#"{"versions":{"3.2.1":{}}}"#);
    let day = 86_400;
    let now = registry::clock::now_unix();
    let module =
        registry::usage::Counted::Module(registry::address::ModuleAddress::parse("acme", "vpc", "aws").unwrap());
    let record = |version: &str| {
        registry::usage::Download::new(
            module.clone(),
            &registry::address::parse_version(version).unwrap(),
            registry::usage::Via::ModulesV1,
            "token ci",
        )
        .line()
    };
    // 2.0.0 downloaded now, 1.0.0 ninety-five days on (whose write forgets 2.0.0's day, older
    // than the 90 kept one by one); the report is made a hundred days on.
    registry::usage::fold_batch(&storage, &batch(&[record("2.0.0")], now), Settings::default(), now).await.unwrap();
    let later = now + 95 * day;
    let b = Batch { log_stream: "later".into(), ..batch(&[record("1.0.0")], later) };
    registry::usage::fold_batch(&storage, &b, Settings::default(), later).await.unwrap();
    let report = now + 100 * day;

    let idle = idle_versions(&storage, 30, report).await.unwrap();
    let found: Vec<(String, String, Last)> =
        idle.iter().map(|i| (i.counted.to_string(), i.version.clone(), i.last.clone())).collect();
    assert_eq!(
        found,
        [
            ("acme/vpc/aws".to_string(), "3.0.0".to_string(), Last::Never),
            ("acme/vpc/aws".into(), "2.0.0".into(), Last::LongAgo),
            ("registry.terraform.io/hashicorp/null".into(), "3.2.1".into(), Last::Never),
        ]
    );
    // A narrower window finds the version downloaded five days before, too.
    let narrow = idle_versions(&storage, 3, report).await.unwrap();
    assert!(narrow.iter().any(|i| i.version == "1.0.0" && i.total == 1), "{narrow:?}");
    // Versions published inside the window are too new to judge.
    assert!(idle_versions(&storage, 30, now).await.unwrap().iter().all(|i| !i.counted.to_string().starts_with("acme")));
}
