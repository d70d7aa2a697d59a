use serde_json::{Value, json};
use sha2::Digest;
use std::collections::BTreeMap;

use super::*;
use crate::layout;
use crate::manifest::{ModuleManifest, ProviderVersion};
use crate::storage::MemoryStorage;

fn app() -> App<MemoryStorage> {
    App::builder(open(Config::new("bucket")), fixture()).build().unwrap()
}

/// Logged whole (the path that used to be cut at 64 characters), escaped, bounded.
#[test]
fn a_path_is_logged_whole_and_escaped() {
    let long = "/v2/providers/registry.terraform.io/hashicorp/random/manifests/3.6.3";
    assert_eq!(loggable_path(long), long);
    assert_eq!(loggable_path("/v1/a b\n\u{1b}[31m%2e/é"), "/v1/a%20b%0A%1B[31m%2e/%C3%A9");
    let huge = format!("/{}", "a".repeat(5000));
    assert_eq!(loggable_path(&huge), format!("/{}… (5001 bytes)", "a".repeat(crate::router::PATH_MAX_LEN - 1)));
}

/// A module version, a provider version, and manifests that are broken, empty or yanked.
fn fixture() -> MemoryStorage {
    let storage = MemoryStorage::new();
    storage.insert(
        "indexed/modules/acme/vpc/aws/manifest.json",
        serde_json::to_vec(&ModuleManifest::new(vec![crate::manifest::ModuleVersion {
            size: 3,
            sha256: "ab".repeat(32),
            etag: "\"x\"".into(),
            ..crate::manifest::ModuleVersion::example("1.0.0", "modules/acme/vpc/aws/1.0.0.tar.gz")
        }]))
        .unwrap(),
    );
    storage.insert("indexed/providers/registry.terraform.io/hashicorp/null/index.json", r#"{"versions":{"3.2.1":{}}}"#);
    storage.insert(
            "indexed/providers/registry.terraform.io/hashicorp/null/3.2.1.json",
            r#"{"archives":{"linux_amd64":{"url":"terraform-provider-null_3.2.1_linux_amd64.zip","hashes":["h1:abc=","zh:00"],"indexed":{"size":1,"etag":"e"}}}}"#,
        );
    storage.insert("indexed/modules/broken/vpc/aws/manifest.json", "{not json");
    storage.insert("indexed/modules/acme/yanked/aws/manifest.json", r#"{"format":1,"versions":[]}"#);
    storage.insert("indexed/providers/registry.terraform.io/hashicorp/gone/index.json", r#"{"versions":{}}"#);
    storage.insert("indexed/providers/registry.terraform.io/hashicorp/null/3.0.0.json", r#"{"archives":{}}"#);
    storage
}

/// Routing tests: anonymous reads allowed everywhere, so access does not get in the way.
fn open(mut config: Config) -> Config {
    config.access.anonymous_modules = vec!["*".into()];
    config.access.anonymous_providers = vec!["*".into()];
    config
}

async fn get(app: &App<MemoryStorage>, path: &str) -> (u16, Value, Reply) {
    let reply = app.handle(&Request::get(path)).await;
    assert_eq!(reply.header_value("content-type"), Some("application/json"), "{path}");
    let body: Value = serde_json::from_slice(&reply.body).unwrap_or(Value::Null);
    (reply.status.as_u16(), body, reply)
}

#[tokio::test]
async fn every_route_reads_storage_at_most_once() {
    let app = app();
    let cases = [
        ("/.well-known/terraform.json", 200, 0),
        ("/v1/modules/acme/vpc/aws/versions", 200, 1),
        ("/v1/modules/acme/vpc/aws/1.0.0/download", 200, 1),
        ("/v1/modules/acme/vpc/aws/9.9.9/download", 404, 1),
        ("/v1/modules/acme/nope/aws/versions", 404, 1),
        ("/v1/modules/broken/vpc/aws/versions", 500, 1),
        ("/v1/modules/acme/yanked/aws/versions", 404, 1),
        ("/v1/mirror/registry.terraform.io/hashicorp/gone/index.json", 404, 1),
        ("/v1/mirror/registry.terraform.io/hashicorp/null/3.0.0.json", 404, 1),
        ("/v1/mirror/registry.terraform.io/hashicorp/null/index.json", 200, 1),
        ("/v1/mirror/registry.terraform.io/hashicorp/null/3.2.1.json", 200, 1),
        ("/v1/mirror/registry.terraform.io/hashicorp/null/3.2.0.json", 404, 1),
        ("/v1/modules/%2e%2e/vpc/aws/versions", 400, 0),
    ];
    for (path, status, reads) in cases {
        let before = app.storage().request_count();
        let (got, body, _) = get(&app, path).await;
        assert_eq!(got, status, "{path}: {body}");
        assert_eq!(app.storage().request_count() - before, reads, "{path}");
        if status >= 400 {
            assert!(body["errors"][0].is_string(), "{path}: {body}");
        }
    }
}

/// A manifest where publishers write is never read, and an entry of a manifest that does
/// get read is presigned only if it is exactly the requested archive.
#[tokio::test]
async fn downloads_presign_only_the_requested_archive() {
    let app = app();
    let planted = ModuleManifest::new(vec![crate::manifest::ModuleVersion {
        etag: "\"x\"".into(),
        ..crate::manifest::ModuleVersion::example("6.6.6", "access/tokens.json")
    }]);
    // Planted by a publisher of `acme` beside its archives: not where manifests live.
    app.storage().insert("modules/acme/planted/aws/manifest.json", serde_json::to_vec(&planted).unwrap());
    let (status, body, _) = get(&app, "/v1/modules/acme/planted/aws/6.6.6/download").await;
    assert_eq!((status, body), (404, json!({"errors": ["module acme/planted/aws not found"]})));

    // Even a manifest under `indexed/` hands out nothing but the archive it names for the
    // requested version: the token store, another namespace, another version, another
    // module's archive all answer 500 and no URL.
    for archive in [
        "access/tokens.json",
        "modules/other/vpc/aws/6.6.6.tar.gz",
        "modules/acme/vpc/aws/1.0.0.tar.gz",
        "indexed/modules/acme/vpc/aws/manifest.json",
        "rejections/modules/acme/vpc/aws/6.6.6.tar.gz.json",
    ] {
        let mut manifest = planted.clone();
        manifest.versions[0].archive = archive.into();
        app.storage().insert("indexed/modules/acme/vpc/aws/manifest.json", serde_json::to_vec(&manifest).unwrap());
        let (status, body, reply) = get(&app, "/v1/modules/acme/vpc/aws/6.6.6/download").await;
        assert_eq!((status, body), (500, json!({"errors": ["internal error"]})), "{archive}");
        assert_eq!(reply.header_value("x-terraform-get"), None, "{archive}");
    }
    let mut doc = ProviderVersion::default();
    doc.archives.insert(
        "linux_amd64".into(),
        crate::manifest::ProviderArchive { url: "../../../access/tokens.json".into(), hashes: vec![], indexed: None },
    );
    app.storage()
        .insert("indexed/providers/registry.terraform.io/hashicorp/null/3.2.1.json", serde_json::to_vec(&doc).unwrap());
    let (status, _, _) = get(&app, "/v1/mirror/registry.terraform.io/hashicorp/null/3.2.1.json").await;
    assert_eq!(status, 500);
}

#[tokio::test]
async fn access_denied_is_absence_for_a_manifest_and_an_error_for_the_token_store() {
    // The read functions have no s3:ListBucket: S3 answers AccessDenied for a missing key.
    let app = app();
    app.storage().deny("indexed/modules/acme/vpc/aws/manifest.json");
    assert_eq!(get(&app, "/v1/modules/acme/vpc/aws/versions").await.0, 404);

    let storage = MemoryStorage::new();
    storage.deny(layout::TOKENS);
    let app = App::builder(Config::new("bucket"), storage).build().unwrap();
    let reply =
        app.handle(&Request::get("/v1/modules/acme/vpc/aws/versions").authorization(Some("Bearer trg_x"))).await;
    assert_eq!(reply.status, StatusCode::INTERNAL_SERVER_ERROR, "fails closed, and says it is the registry's fault");
}

#[tokio::test]
async fn download_answers_header_and_body() {
    let (_, body, reply) = get(&app(), "/v1/modules/acme/vpc/aws/1.0.0/download").await;
    let url = reply.header_value("x-terraform-get").unwrap();
    assert_eq!(body["location"], url);
    assert!(url.starts_with("https://memory.invalid/modules/acme/vpc/aws/1.0.0.tar.gz?"), "{url}");
    // Last, where go-getter takes it off before the request: the SHA-256 it checks.
    assert!(url.ends_with(&format!("&checksum=sha256:{}", "ab".repeat(32))), "{url}");
    assert!(!url.contains("versionId"), "no version recorded, none named: {url}");
    assert_eq!(reply.header_value("cache-control"), Some("no-store"));
}

/// In a versioned bucket the URL names the object version the indexer hashed, for modules
/// and provider zips alike; a manifest without a valid SHA-256 hands out no URL.
#[tokio::test]
async fn download_urls_name_the_version_hashed() {
    let app = app();
    let mut manifest =
        ModuleManifest::parse(&app.storage().peek("indexed/modules/acme/vpc/aws/manifest.json").unwrap()).unwrap();
    manifest.versions[0].version_id = Some("3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY".into());
    app.storage().insert("indexed/modules/acme/vpc/aws/manifest.json", serde_json::to_vec(&manifest).unwrap());
    let (status, _, reply) = get(&app, "/v1/modules/acme/vpc/aws/1.0.0/download").await;
    assert_eq!(status, 200);
    let url = reply.header_value("x-terraform-get").unwrap();
    assert!(url.contains("versionId=3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY&"), "{url}");

    manifest.versions[0].sha256 = "not a digest".into();
    app.storage().insert("indexed/modules/acme/vpc/aws/manifest.json", serde_json::to_vec(&manifest).unwrap());
    let (status, body, reply) = get(&app, "/v1/modules/acme/vpc/aws/1.0.0/download").await;
    assert_eq!(status, 500, "{body}");
    assert_eq!(reply.header_value("x-terraform-get"), None);

    let key = "indexed/providers/registry.terraform.io/hashicorp/null/3.2.1.json";
    let mut doc = ProviderVersion::parse(&app.storage().peek(key).unwrap()).unwrap();
    let archive = doc.archives.get_mut("linux_amd64").unwrap();
    archive.indexed = Some(crate::manifest::Indexed { size: 1, etag: "\"e\"".into(), version_id: Some("v7".into()) });
    app.storage().insert(key, serde_json::to_vec(&doc).unwrap());
    let (_, body, _) = get(&app, "/v1/mirror/registry.terraform.io/hashicorp/null/3.2.1.json").await;
    let url = body["archives"]["linux_amd64"]["url"].as_str().unwrap();
    assert!(url.contains("?versionId=v7&"), "{url}");
}

#[tokio::test]
async fn mirror_version_serves_protocol_fields_only() {
    let (_, body, _) = get(&app(), "/v1/mirror/registry.terraform.io/hashicorp/null/3.2.1.json").await;
    let archive = &body["archives"]["linux_amd64"];
    // Stored `h1:` first (as documents written before the order changed), served `zh:` first.
    assert_eq!(archive["hashes"], json!(["zh:00", "h1:abc="]));
    assert!(archive["url"].as_str().unwrap().starts_with(
            "https://memory.invalid/providers/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.1_linux_amd64.zip?"
        ));
    assert!(archive.get("indexed").is_none());
}

#[tokio::test]
async fn storage_down_is_503_json() {
    let app = app();
    app.storage().unavailable.store(true, std::sync::atomic::Ordering::SeqCst);
    let reply = app.handle(&Request::get("/v1/modules/acme/vpc/aws/versions")).await;
    assert_eq!(reply.status, 503);
    assert_eq!(reply.header_value("retry-after"), Some("1"));
    assert_eq!(reply.header_value(STALE_HEADER), None);
    let body: serde_json::Value = serde_json::from_slice(&reply.body).unwrap();
    assert_eq!(body, json!({"errors": ["storage is unavailable, try again"]}));
}

#[tokio::test]
async fn storage_that_never_answers_is_503_within_the_budget() {
    let mut config = open(Config::new("b"));
    config.request_budget = std::time::Duration::from_millis(50);
    let app = App::builder(config, app().context.reader.storage).build().unwrap();
    app.storage().hang.store(true, std::sync::atomic::Ordering::SeqCst);
    let reply = app.handle(&Request::get("/v1/modules/acme/vpc/aws/versions")).await;
    assert_eq!(reply.status, 503);
    assert_eq!(reply.header_value("retry-after"), Some("1"));
}

#[tokio::test]
async fn storage_down_serves_the_cached_manifest_marked_stale() {
    let app = app();
    let fresh = app.handle(&Request::get("/v1/modules/acme/vpc/aws/versions")).await;
    assert_eq!((fresh.status, fresh.header_value(STALE_HEADER)), (StatusCode::OK, None));
    app.storage().unavailable.store(true, std::sync::atomic::Ordering::SeqCst);
    let stale = app.handle(&Request::get("/v1/modules/acme/vpc/aws/versions")).await;
    assert_eq!(stale.status, StatusCode::OK);
    assert!(stale.header_value(STALE_HEADER).is_some_and(|v| v.contains("cached")));
    assert_eq!(stale.header_value("retry-after"), None);
    assert_eq!(stale.body, fresh.body);
    // Another manifest was never read: nothing to fall back on.
    let reply = app.handle(&Request::get("/v1/mirror/registry.terraform.io/hashicorp/null/index.json")).await;
    assert_eq!(reply.status, 503);
}

#[tokio::test]
async fn head_has_no_body_and_functions_serve_only_their_routes() {
    let app = app();
    let reply = app.handle(&Request::new(&Method::HEAD, "/v1/modules/acme/vpc/aws/versions")).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert!(reply.body.is_empty());
    let mirror_only =
        App::builder(open(Config::new("b")), MemoryStorage::new()).services(&[Service::Mirror]).build().unwrap();
    let reply = mirror_only.handle(&Request::get("/v1/modules/acme/vpc/aws/versions")).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    assert_eq!(mirror_only.storage().request_count(), 0);
}

/// In AWS, API Gateway's `$default` route hands every request no route key matches to
/// `router::DEFAULT_ROUTE_SERVICE`'s function: it must answer them exactly as the local
/// registry (every service in one process) does, status, headers and body, reading nothing.
#[tokio::test]
async fn the_default_route_function_answers_what_no_route_key_matches_as_locally() {
    let local = app();
    let function = Function::discovery();
    assert_eq!(function.service, router::DEFAULT_ROUTE_SERVICE);
    let default = App::function_builder(open(Config::new("bucket")), MemoryStorage::new(), function).build().unwrap();
    let cases = [
        (Method::GET, "/nope"),
        (Method::GET, "/v2/modules/acme/vpc/aws/versions"),
        (Method::GET, "/.well-known/other.json"),
        (Method::GET, "/v1/modules/acme/vpc"),
        (Method::GET, "/v1/modules/acme/vpc/aws/1.0.0/download/extra"),
        (Method::GET, "/v1/mirror/registry.terraform.io/hashicorp"),
        (Method::GET, "/v1/providers/acme"),
        (Method::POST, "/v1/nope"),
        (Method::DELETE, "/"),
        (Method::GET, "/ui/nope"),
        (Method::GET, "/ui/modules/acme"),
    ];
    for (method, path) in cases {
        let expected = local.handle(&Request::new(&method, path)).await;
        let reply = default.handle(&Request::new(&method, path)).await;
        assert!(expected.status.is_client_error(), "{method} {path}: {}", expected.status);
        assert_eq!(
            (reply.status, &reply.headers, &reply.body),
            (expected.status, &expected.headers, &expected.body),
            "{method} {path}"
        );
    }
    assert_eq!(default.storage().request_count(), 0);
}

/// Each Lambda function answers its own routes through its protocol's answer alone (what
/// lets its binary link nothing else): exactly as the local registry does, status, headers
/// and body; and another function's routes with the 404 of the wrong function.
#[tokio::test]
async fn each_function_answers_its_routes_as_the_local_registry_does() {
    let local = app();
    let paths = [
        "/.well-known/terraform.json",
        "/v1/modules/acme/vpc/aws/versions",
        "/v1/modules/acme/vpc/aws/1.0.0/download",
        "/v1/modules/acme/nope/aws/versions",
        "/v1/mirror/registry.terraform.io/hashicorp/null/index.json",
        "/v1/mirror/registry.terraform.io/hashicorp/null/3.2.1.json",
        "/v1/providers/hashicorp/null/versions",
        "/v1/modules",
        "/v1/modules/search?q=vpc",
        "/v1/modules/acme/vpc/aws",
        "/v1/modules/acme/vpc/aws/1.0.0",
        "/ui/assets/style.css",
        "/v2/",
        "/v2/modules/acme/vpc/aws/tags/list",
    ];
    let functions = [
        Function::discovery(),
        Function::modules(),
        Function::mirror(),
        Function::providers(),
        Function::web(),
        Function::oci(),
    ];
    let mut served = std::collections::BTreeSet::new();
    for function in functions {
        let service = function.service;
        let only = App::function_builder(open(Config::new("bucket")), fixture(), function).build().unwrap();
        for target in paths {
            let (path, query) = target.split_once('?').map_or((target, None), |(p, q)| (p, Some(q)));
            let request = Request::get(path).query(query);
            let reply = only.handle(&request).await;
            let routed = router::route(&Method::GET, path, query, &local.config().paths).unwrap();
            if routed.service() == service {
                let expected = local.handle(&request).await;
                assert_eq!(
                    (reply.status, &reply.headers, &reply.body),
                    (expected.status, &expected.headers, &expected.body),
                    "{service:?} {target}"
                );
                served.insert(target);
            } else {
                assert_eq!(reply.status, StatusCode::NOT_FOUND, "{service:?} {target}");
            }
        }
    }
    assert_eq!(served.len(), paths.len(), "every path is some function's");
}

#[tokio::test]
async fn access_is_checked_once_here_for_every_deployment() {
    let storage = app().context.reader.storage;
    storage.insert(
        "indexed/modules/other/vpc/aws/manifest.json",
        storage.peek("indexed/modules/acme/vpc/aws/manifest.json").unwrap(),
    );
    let ci = crate::auth::manage::record("ci", "trg_ci", vec!["acme".into()], vec![], None);
    let store = crate::auth::TokenStore { format: 1, tokens: vec![ci] };
    storage.insert(layout::TOKENS, serde_json::to_vec(&store).unwrap());
    let app = App::builder(Config::new("bucket"), storage).build().unwrap();
    let call = |path: &'static str, auth: Option<&'static str>| {
        let app = &app;
        async move {
            let reply = app.handle(&Request::get(path).authorization(auth)).await;
            let body: Value = serde_json::from_slice(&reply.body).unwrap_or(Value::Null);
            (reply.status.as_u16(), body, reply)
        }
    };

    // Discovery needs nothing; the rest needs a token.
    assert_eq!(call("/.well-known/terraform.json", None).await.0, 200);
    let (status, body, reply) = call("/v1/modules/acme/vpc/aws/versions", None).await;
    assert_eq!((status, body), (401, json!({"errors": ["a bearer token is required"]})));
    assert_eq!(reply.header_value("www-authenticate"), Some(r#"Bearer realm="terraform-registry""#));
    let before = app.storage().request_count();
    assert_eq!(call("/v1/modules/acme/vpc/aws/versions", Some("Bearer trg_guess")).await.0, 401);
    assert_eq!(app.storage().request_count() - before, 1, "a presented token: the token store, and no manifest");
    let before = app.storage().request_count();
    assert_eq!(call("/v1/modules/acme/vpc/aws/versions", Some("Basic dXNlcjpwYXNz")).await.0, 401);
    assert_eq!(call("/v1/modules/acme/vpc/aws/versions", Some("Bearer a b")).await.0, 401);
    assert_eq!(app.storage().request_count() - before, 0, "no well-formed token: nothing read");
    assert_eq!(call("/v1/mirror/registry.terraform.io/hashicorp/null/index.json", None).await.0, 401);

    // In scope: allowed. The token store is cached now: one read (the manifest) per request.
    let before = app.storage().request_count();
    assert_eq!(call("/v1/modules/acme/vpc/aws/versions", Some("Bearer trg_ci")).await.0, 200);
    assert_eq!(app.storage().request_count() - before, 1, "warm: the manifest only");
    let before = app.storage().request_count();
    assert_eq!(call("/v1/modules/acme/vpc/aws/1.0.0/download", Some("Bearer trg_ci")).await.0, 200);
    assert_eq!(app.storage().request_count() - before, 1, "warm: the manifest only");

    // Out of scope: exactly what a module that does not exist gets, and no manifest read.
    let hidden = call("/v1/modules/other/vpc/aws/versions", Some("Bearer trg_ci")).await;
    let absent = call("/v1/modules/ghost/vpc/aws/versions", Some("Bearer trg_ci")).await;
    assert_eq!((hidden.0, absent.0), (404, 404));
    assert_eq!(hidden.1, json!({"errors": ["module other/vpc/aws not found"]}));
    assert_eq!(absent.1, json!({"errors": ["module ghost/vpc/aws not found"]}));
    assert_eq!(hidden.2.headers, absent.2.headers);
    assert_eq!(call("/v1/mirror/registry.terraform.io/hashicorp/null/3.2.1.json", Some("Bearer trg_ci")).await.0, 404);
}

#[tokio::test]
async fn warm_manifests_are_revalidated_not_reread() {
    let app = app();
    let path = "/v1/modules/acme/vpc/aws/versions";
    let key = "indexed/modules/acme/vpc/aws/manifest.json";
    let (_, cold, _) = get(&app, path).await;
    assert_eq!(app.context.reader.manifests.usage().0, 1, "the parsed manifest is kept");
    // Warm: one conditional request, unchanged, same answer.
    let before = app.storage().request_count();
    let (status, warm, _) = get(&app, path).await;
    assert_eq!((status, &warm), (200, &cold));
    assert_eq!(app.storage().request_count() - before, 1);
    // A publish changes the manifest: the very next request shows it.
    let mut manifest = ModuleManifest::parse(&app.storage().peek(key).unwrap()).unwrap();
    let mut newer = manifest.versions[0].clone();
    newer.version = "1.1.0".into();
    manifest.versions.insert(0, newer);
    app.storage().insert(key, serde_json::to_vec(&manifest).unwrap());
    let (_, body, _) = get(&app, path).await;
    assert_eq!(body, json!({"modules":[{"versions":[{"version":"1.1.0"},{"version":"1.0.0"}]}]}));
    // Gone: 404 at once, and nothing stale is kept.
    app.storage().remove(key);
    assert_eq!(get(&app, path).await.0, 404);
    assert_eq!(app.context.reader.manifests.usage().0, 0);

    // With a TTL, a hit is served without any request.
    let mut config = open(Config::new("bucket"));
    config.manifest_cache_ttl = std::time::Duration::from_secs(60);
    let ttl = App::builder(config, app.context.reader.storage).build().unwrap();
    let path = "/v1/mirror/registry.terraform.io/hashicorp/null/index.json";
    assert_eq!(get(&ttl, path).await.0, 200);
    let before = ttl.storage().request_count();
    assert_eq!(get(&ttl, path).await.0, 200);
    assert_eq!(ttl.storage().request_count() - before, 0);
}

#[tokio::test]
async fn etags_and_304_for_lists_never_for_presigned_urls() {
    let app = app();
    for path in [
        "/.well-known/terraform.json",
        "/v1/modules/acme/vpc/aws/versions",
        "/v1/mirror/registry.terraform.io/hashicorp/null/index.json",
    ] {
        let (_, _, reply) = get(&app, path).await;
        let etag = reply.header_value("etag").unwrap().to_string();
        assert!(reply.header_value("cache-control").is_some(), "{path}");
        for condition in [etag.clone(), format!("W/{etag}"), format!("\"x\", {etag}"), "*".into()] {
            let again = app.handle(&Request::get(path).if_none_match(Some(&condition))).await;
            assert_eq!(again.status, StatusCode::NOT_MODIFIED, "{path} {condition}");
            assert!(again.body.is_empty());
            assert_eq!(again.header_value("etag"), Some(etag.as_str()));
        }
        let other = app.handle(&Request::get(path).if_none_match(Some("\"other\""))).await;
        assert_eq!(other.status, StatusCode::OK, "{path}");
    }
    for path in
        ["/v1/modules/acme/vpc/aws/1.0.0/download", "/v1/mirror/registry.terraform.io/hashicorp/null/3.2.1.json"]
    {
        let (_, _, reply) = get(&app, path).await;
        assert_eq!(reply.header_value("etag"), None, "{path}");
        assert_eq!(reply.header_value("cache-control"), Some("no-store"), "{path}");
        let again = app.handle(&Request::get(path).if_none_match(Some("*"))).await;
        assert_eq!(again.status, StatusCode::OK, "{path}: a presigned answer is never 304");
    }
}

/// providers.v1: discovery offers it once the host is known; `versions` and `download`
/// are one read each, answer exactly the protocol's fields, and presign only the release's
/// own zip, SHA256SUMS and signature; scopes hide a provider as absence does.
// One scenario told in order (long on purpose): a signed release, then each answer.
/// OCI Distribution for a mirrored provider with two platforms: every route in one read,
/// the tag an image index of one manifest per platform, each with the zip as its only
/// layer (digest = the zip's SHA-256), the blob a redirect to the zip, HEAD sized, and
/// OCI's error bodies; credentials as `Basic` with the token as password.
#[tokio::test]
async fn oci_serves_a_provider_as_opentofu_installs_it() {
    use crate::oci::artifacts::{ImageIndex, ImageManifest};
    let storage = MemoryStorage::new();
    let prefix = "providers/registry.terraform.io/hashicorp/null/";
    let indexer = crate::index::Indexer::new(&storage, crate::index::Limits::default());
    let mut zips = BTreeMap::new();
    for platform in ["linux_amd64", "darwin_arm64"] {
        let key = format!("{prefix}terraform-provider-null_3.2.1+ent_{platform}.zip");
        let zip = crate::testing::provider_zip("null", "3.2.1+ent", platform);
        storage.insert(&key, zip.clone());
        indexer.on_object_changed(&key).await.unwrap();
        zips.insert(platform, zip);
    }
    let ci =
        crate::auth::manage::record("ci", "trg_ci", vec![], vec!["registry.terraform.io/hashicorp/*".into()], None);
    let other =
        crate::auth::manage::record("other", "trg_other", vec![], vec!["registry.terraform.io/acme/*".into()], None);
    let store = crate::auth::TokenStore { format: 1, tokens: vec![ci, other] };
    storage.insert(layout::TOKENS, serde_json::to_vec(&store).unwrap());
    let app = App::builder(Config::new("bucket"), storage).services(&[Service::Oci]).build().unwrap();
    let basic = |token: &str| {
        use base64::Engine;
        format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("anyone:{token}")))
    };
    let ci = basic("trg_ci");
    let send = |method: &'static Method, path: &'static str, auth: Option<String>| {
        let app = &app;
        async move {
            let (path, query) = path.split_once('?').map_or((path, None), |(p, q)| (p, Some(q)));
            let before = app.storage().request_count();
            let request = Request::new(method, path).query(query).authorization(auth.as_deref());
            let reply = app.handle(&request).await;
            (reply, app.storage().request_count() - before)
        }
    };
    let repo = "/v2/providers/registry.terraform.io/hashicorp/null";
    let leak = |p: &str| -> &'static str { Box::leak(p.to_string().into_boxed_str()) };

    let (reply, _) = send(&Method::GET, "/v2/", None).await;
    assert_eq!(reply.status, 401);
    assert!(reply.header_value("www-authenticate").unwrap().starts_with("Basic realm="));
    let body: Value = serde_json::from_slice(&reply.body).unwrap();
    assert_eq!(body["errors"][0]["code"], "UNAUTHORIZED");
    assert_eq!(send(&Method::GET, "/v2/", Some(ci.clone())).await.0.status, 200);
    assert_eq!(send(&Method::GET, "/v2/", Some(basic("trg_nope"))).await.0.status, 401);

    let (reply, reads) = send(&Method::GET, leak(&format!("{repo}/tags/list")), Some(ci.clone())).await;
    // The token store was read at /v2/ and is kept: one read, index.json.
    assert_eq!((reply.status.as_u16(), reads), (200, 1));
    let body: Value = serde_json::from_slice(&reply.body).unwrap();
    assert_eq!(body, json!({"name": "providers/registry.terraform.io/hashicorp/null", "tags": ["3.2.1_ent"]}));

    let (reply, reads) = send(&Method::GET, leak(&format!("{repo}/manifests/3.2.1_ent")), Some(ci.clone())).await;
    assert_eq!((reply.status.as_u16(), reads), (200, 1));
    assert_eq!(reply.header_value("content-type"), Some(crate::oci::MEDIA_TYPE_INDEX));
    let index_digest = crate::oci::digest_of(&reply.body);
    assert_eq!(reply.header_value("docker-content-digest"), Some(index_digest.as_str()));
    let index: ImageIndex = serde_json::from_slice(&reply.body).unwrap();
    assert_eq!(index.artifact_type, crate::oci::ARTIFACT_TYPE_PROVIDER);
    let (head, _) = send(&Method::HEAD, leak(&format!("{repo}/manifests/3.2.1_ent")), Some(ci.clone())).await;
    assert!(head.body.is_empty());
    assert_eq!(head.header_value("content-length"), Some(reply.body.len().to_string().as_str()));
    let (by_digest, _) = send(&Method::GET, leak(&format!("{repo}/manifests/{index_digest}")), Some(ci.clone())).await;
    assert_eq!(by_digest.body, reply.body);

    for entry in &index.manifests {
        let platform = entry.platform.as_ref().unwrap();
        let zip = &zips[format!("{}_{}", platform.os, platform.architecture).as_str()];
        let (reply, reads) =
            send(&Method::GET, leak(&format!("{repo}/manifests/{}", entry.digest)), Some(ci.clone())).await;
        assert_eq!((reply.status.as_u16(), reads), (200, 1));
        assert_eq!(crate::oci::digest_of(&reply.body), entry.digest);
        let manifest: ImageManifest = serde_json::from_slice(&reply.body).unwrap();
        let layer = &manifest.layers[0];
        assert_eq!(layer.digest, format!("sha256:{}", hex::encode(sha2::Sha256::digest(zip))));
        assert_eq!(layer.size, zip.len() as u64);
        let (blob, reads) = send(&Method::GET, leak(&format!("{repo}/blobs/{}", layer.digest)), Some(ci.clone())).await;
        assert_eq!((blob.status.as_u16(), reads), (307, 1));
        let location = blob.header_value("location").unwrap();
        let file = layer.annotations["org.opencontainers.image.title"].clone();
        assert!(location.starts_with(&format!("https://memory.invalid/{prefix}{file}?")), "{location}");
        let (head, _) = send(&Method::HEAD, leak(&format!("{repo}/blobs/{}", layer.digest)), Some(ci.clone())).await;
        assert_eq!(head.header_value("content-length"), Some(zip.len().to_string().as_str()));
        assert_eq!(head.header_value("docker-content-digest"), Some(layer.digest.as_str()));
    }
    let (config, reads) =
        send(&Method::GET, leak(&format!("{repo}/blobs/{}", crate::oci::EMPTY_CONFIG_DIGEST)), Some(ci.clone())).await;
    assert_eq!((config.status.as_u16(), &config.body[..], reads), (200, &b"{}"[..], 0), "inline");

    // OCI's errors: unknown tag, blob and repository; a name that is none; the other team's
    // token gets exactly what absence gets.
    let zero = format!("sha256:{}", "0".repeat(64));
    for (path, auth, status, code) in [
        (format!("{repo}/manifests/9.9.9"), ci.clone(), 404, "MANIFEST_UNKNOWN"),
        (format!("{repo}/blobs/{zero}"), ci.clone(), 404, "BLOB_UNKNOWN"),
        ("/v2/providers/registry.terraform.io/hashicorp/gone/tags/list".into(), ci.clone(), 404, "NAME_UNKNOWN"),
        ("/v2/providers/Registry/x/y/tags/list".into(), ci.clone(), 400, "NAME_INVALID"),
        (format!("{repo}/manifests/latest"), ci.clone(), 404, "MANIFEST_UNKNOWN"),
        (format!("{repo}/manifests/newest"), ci.clone(), 400, "MANIFEST_INVALID"),
        (format!("{repo}/blobs/sha256:xyz"), ci.clone(), 400, "DIGEST_INVALID"),
        (format!("{repo}/tags/list"), basic("trg_other"), 404, "NAME_UNKNOWN"),
        (format!("{repo}/tags/list"), "Basic !!!".into(), 401, "UNAUTHORIZED"),
    ] {
        let (reply, _) = send(&Method::GET, leak(&path), Some(auth)).await;
        let body: Value = serde_json::from_slice(&reply.body).unwrap();
        assert_eq!((reply.status.as_u16(), body["errors"][0]["code"].as_str()), (status, Some(code)), "{path}: {body}");
    }
    // Accept: the index is served to a client that lists it or a wildcard, refused otherwise.
    let tag = format!("{repo}/manifests/3.2.1_ent");
    for (accept, status) in [
        (format!("{}, application/vnd.oci.image.manifest.v1+json", crate::oci::MEDIA_TYPE_INDEX), 200),
        ("application/*;q=0.5".into(), 200),
        ("*/*".into(), 200),
        ("application/vnd.oci.image.manifest.v1+json".into(), 404),
    ] {
        let request = Request::get(&tag).accept(Some(&accept)).authorization(Some(&ci));
        assert_eq!(app.handle(&request).await.status.as_u16(), status, "{accept}");
    }
    let (put, _) = send(&Method::PUT, leak(&format!("{repo}/manifests/3.2.1_ent")), Some(ci.clone())).await;
    let body: Value = serde_json::from_slice(&put.body).unwrap();
    assert_eq!((put.status.as_u16(), body["errors"][0]["code"].as_str()), (405, Some("UNSUPPORTED")));
}

/// OCI module packages (`oci://`): a `.zip` version's layer is the archive itself, a
/// `.tar.gz` version's a zip the indexer made of it (the same files, the same digest at
/// every pass); a yanked version's tag is gone.
#[tokio::test]
async fn oci_serves_module_packages() {
    use crate::oci::artifacts::ImageManifest;
    use std::io::Read;
    let storage = MemoryStorage::new();
    let prefix = "modules/acme/vpc/aws/";
    let tar = crate::testing::module_tar_gz(&[("main.tf", "# tar"), ("modules/sub/main.tf", "# sub")]);
    let zip = crate::testing::module_zip(&[("main.tf", "# zip")]);
    storage.insert(&format!("{prefix}1.0.0.tar.gz"), tar);
    storage.insert(&format!("{prefix}1.1.0.zip"), zip.clone());
    let indexer = crate::index::Indexer::new(&storage, crate::index::Limits::default());
    indexer.on_object_changed(&format!("{prefix}1.1.0.zip")).await.unwrap();
    let app = App::builder(open(Config::new("bucket")), storage).services(&[Service::Oci]).build().unwrap();
    let get = |path: String| {
        let app = &app;
        async move { app.handle(&Request::get(&path)).await }
    };
    let repo = "/v2/modules/acme/vpc/aws";
    let tags: Value = serde_json::from_slice(&get(format!("{repo}/tags/list")).await.body).unwrap();
    assert_eq!(tags["tags"], json!(["1.0.0", "1.1.0"]));
    let layer = |bytes: &[u8]| {
        let manifest: ImageManifest = serde_json::from_slice(bytes).unwrap();
        assert_eq!(manifest.artifact_type, crate::oci::ARTIFACT_TYPE_MODULE);
        manifest.layers[0].clone()
    };
    let zipped = layer(&get(format!("{repo}/manifests/1.1.0")).await.body);
    assert_eq!(zipped.digest, format!("sha256:{}", hex::encode(sha2::Sha256::digest(&zip))), "the archive itself");
    let blob = get(format!("{repo}/blobs/{}", zipped.digest)).await;
    assert_eq!(blob.status, 307);
    assert!(blob.header_value("location").unwrap().starts_with(&format!("https://memory.invalid/{prefix}1.1.0.zip?")));

    let tarred = get(format!("{repo}/manifests/1.0.0")).await;
    let repacked = layer(&tarred.body);
    let blob = get(format!("{repo}/blobs/{}", repacked.digest)).await;
    let location = blob.header_value("location").unwrap().to_string();
    let hex = repacked.digest.trim_start_matches("sha256:");
    let key = format!("indexed/oci/{prefix}zips/{hex}.zip");
    assert!(location.starts_with(&format!("https://memory.invalid/{key}?")), "{location}");
    let bytes = app.storage().peek(&key).unwrap();
    assert_eq!(format!("sha256:{}", hex::encode(sha2::Sha256::digest(&bytes))), repacked.digest);
    let mut archive = ::zip::ZipArchive::new(std::io::Cursor::new(bytes.to_vec())).unwrap();
    let mut text = String::new();
    archive.by_name("modules/sub/main.tf").unwrap().read_to_string(&mut text).unwrap();
    assert_eq!(text, "# sub", "the same files as the tar");
    // Deterministic: rebuilt from nothing, the same digest.
    app.storage().remove(&key);
    app.storage().remove("indexed/modules/acme/vpc/aws/manifest.json");
    let indexer = crate::index::Indexer::new(app.storage(), crate::index::Limits::default());
    indexer.on_object_changed(&format!("{prefix}1.0.0.tar.gz")).await.unwrap();
    assert_eq!(get(format!("{repo}/manifests/1.0.0")).await.body, tarred.body);

    // Yanked: its tag is gone, its blob unknown; the other version stays.
    app.storage().remove(&format!("{prefix}1.0.0.tar.gz"));
    indexer.on_object_changed(&format!("{prefix}1.0.0.tar.gz")).await.unwrap();
    assert_eq!(get(format!("{repo}/manifests/1.0.0")).await.status, 404);
    assert_eq!(get(format!("{repo}/blobs/{}", repacked.digest)).await.status, 404);
    assert_eq!(get(format!("{repo}/manifests/1.1.0")).await.status, 200);
}

/// OCI's token authentication: a 401 challenges for `Bearer` at the registry's own
/// `/v2/token` (with the repository as scope), which hands back the credential presented
/// once it is known, or the anonymous token, which reads only what anonymous callers may;
/// empty `Basic` credentials count as none. Without a known address, the challenge is `Basic`.
#[tokio::test]
async fn oci_token_endpoint_trades_credentials_for_the_bearer_token() {
    let storage = MemoryStorage::new();
    for (namespace, r#type) in [("hashicorp", "null"), ("public", "tool")] {
        let key = format!(
            "providers/registry.terraform.io/{namespace}/{type}/terraform-provider-{type}_1.0.0_linux_amd64.zip"
        );
        storage.insert(&key, crate::testing::provider_zip(r#type, "1.0.0", "linux_amd64"));
        crate::index::Indexer::new(&storage, crate::index::Limits::default()).on_object_changed(&key).await.unwrap();
    }
    let ci = crate::auth::manage::record("ci", "trg_ci", vec![], vec!["registry.terraform.io/*/*".into()], None);
    storage
        .insert(layout::TOKENS, serde_json::to_vec(&crate::auth::TokenStore { format: 1, tokens: vec![ci] }).unwrap());
    let mut config = Config::new("bucket");
    config.hostname = Some("registry.example.com".into());
    config.access.anonymous_providers = vec!["registry.terraform.io/public/*".into()];
    let app = App::builder(config, storage).services(&[Service::Oci]).build().unwrap();
    let basic = |credentials: &str| {
        use base64::Engine;
        format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(credentials))
    };
    let send = |path: &'static str, query: Option<&'static str>, auth: Option<&str>| {
        let (app, auth) = (&app, auth.map(str::to_string));
        async move {
            let reply = app.handle(&Request::get(path).query(query).authorization(auth.as_deref())).await;
            let body: Value = serde_json::from_slice(&reply.body).unwrap();
            (reply.status.as_u16(), body, reply.header_value("www-authenticate").map(str::to_string))
        }
    };
    let private = "/v2/providers/registry.terraform.io/hashicorp/null/tags/list";
    let public = "/v2/providers/registry.terraform.io/public/tool/tags/list";
    let realm = r#"Bearer realm="https://registry.example.com/v2/token",service="registry.example.com""#;

    assert_eq!(send("/v2/", None, None).await.2.as_deref(), Some(realm));
    let (status, body, challenge) = send(private, None, None).await;
    assert_eq!((status, body["errors"][0]["code"].as_str()), (401, Some("UNAUTHORIZED")));
    let scoped = format!(r#"{realm},scope="repository:providers/registry.terraform.io/hashicorp/null:pull""#);
    assert_eq!(challenge, Some(scoped));

    // A user name and the token as password (docker login, skopeo, ORAS, OpenTofu's
    // username/password), or the token as Bearer: the token comes back, and works.
    let query = Some("service=registry.example.com&scope=repository%3Aproviders%2Fx%3Apull&account=ci");
    for auth in [basic("anyone:trg_ci"), "Bearer trg_ci".into()] {
        let (status, body, _) = send("/v2/token", query, Some(&auth)).await;
        assert_eq!(status, 200, "{auth}: {body}");
        assert_eq!(body, json!({"token": "trg_ci", "access_token": "trg_ci"}));
    }
    assert_eq!(send(private, None, Some("Bearer trg_ci")).await.0, 200);
    for auth in [basic("anyone:trg_nope"), "Bearer trg_nope".into(), basic("no colon")] {
        let (status, body, challenge) = send("/v2/token", None, Some(&auth)).await;
        assert_eq!((status, body["errors"][0]["code"].as_str()), (401, Some("UNAUTHORIZED")), "{auth}");
        assert_eq!(challenge.as_deref(), Some(realm));
    }

    // Without credentials: the anonymous token, which reads what anonymous callers may.
    let (status, body, _) = send("/v2/token", None, None).await;
    assert_eq!((status, &body), (200, &json!({"token": "anonymous", "access_token": "anonymous"})));
    assert_eq!(send(public, None, Some("Bearer anonymous")).await.0, 200);
    assert_eq!(send(private, None, Some("Bearer anonymous")).await.0, 401);
    assert_eq!(send(public, None, Some(&basic(":"))).await.0, 200, "empty Basic is no credentials");
    assert_eq!(send(private, None, Some(&basic(":"))).await.0, 401);
    // The ping released OpenTofu sends with what the token endpoint handed it: 200 for the
    // anonymous token and empty Basic too (it stops on anything else), 401 for an unknown
    // token, a challenge without any Authorization.
    for auth in ["Bearer anonymous".to_string(), basic(":"), "Bearer trg_ci".into(), basic("u:trg_ci")] {
        let (status, body, _) = send("/v2/", None, Some(&auth)).await;
        assert_eq!((status, body), (200, json!({})), "{auth}");
    }
    assert_eq!(send("/v2/", None, Some("Bearer trg_nope")).await.0, 401);
    assert_eq!(send("/v2/", None, None).await.0, 401);

    let (status, body, _) = send("/v2/token", Some("grant_type=password"), None).await;
    assert_eq!((status, body["errors"][0]["code"].as_str()), (400, Some("UNSUPPORTED")));

    // The address from Host when REGISTRY_HOSTNAME is unset; Basic when there is none.
    let app = App::builder(Config::new("bucket"), MemoryStorage::new()).services(&[Service::Oci]).build().unwrap();
    for (host, wanted) in [
        (Some("127.0.0.1:8443"), r#"Bearer realm="https://127.0.0.1:8443/v2/token",service="127.0.0.1:8443""#),
        (Some("evil\",realm=\"https://x"), r#"Basic realm="terraform-registry", charset="UTF-8""#),
        (None, r#"Basic realm="terraform-registry", charset="UTF-8""#),
    ] {
        let reply = app.handle(&Request::get("/v2/").host(host)).await;
        assert_eq!(reply.header_value("www-authenticate"), Some(wanted), "{host:?}");
    }
}

/// The CLI's `h1:` of a zip (Go's dirhash Hash1), computed here from scratch.
fn h1_of(zip: &[u8]) -> String {
    use base64::Engine;
    use std::io::Read;
    let mut archive = ::zip::ZipArchive::new(std::io::Cursor::new(zip)).unwrap();
    let mut lines: Vec<(String, String)> = (0..archive.len())
        .map(|i| {
            let mut file = archive.by_index(i).unwrap();
            let mut data = Vec::new();
            file.read_to_end(&mut data).unwrap();
            let name = file.name().unwrap().to_string();
            (name.clone(), format!("{}  {name}\n", hex::encode(sha2::Sha256::digest(&data))))
        })
        .collect();
    lines.sort();
    let summary: String = lines.into_iter().map(|(_, line)| line).collect();
    format!("h1:{}", base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(summary.as_bytes())))
}

#[tokio::test]
async fn providers_v1_answers_from_one_read() {
    use crate::testing::signing::{TestKey, release};
    let storage = MemoryStorage::new();
    let key = TestKey::generate("acme");
    storage.insert("signing-keys/registry.example.com/acme/k.asc", key.public_armor());
    let prefix = "providers/registry.example.com/acme/widget/";
    let indexer = crate::index::Indexer::new(&storage, crate::index::Limits::default())
        .signing_for(Some("registry.example.com".into()));
    for (name, bytes) in release("widget", "1.0.0", &[("linux", "amd64"), ("darwin", "arm64")], Some(&["6.0"]), &key) {
        storage.insert(&format!("{prefix}{name}"), bytes);
        indexer.on_object_changed(&format!("{prefix}{name}")).await.unwrap();
    }
    let without = App::builder(open(Config::new("b")), MemoryStorage::new()).build().unwrap();
    assert_eq!(without.discovery(), json!({"modules.v1": "/v1/modules/"}));
    assert_eq!(get(&without, "/v1/providers/acme/widget/versions").await.0, 404);
    let mut config = open(Config::new("b"));
    config.hostname = Some("registry.example.com".into());
    let app = App::builder(config, storage).build().unwrap();
    assert_eq!(app.discovery(), json!({"modules.v1": "/v1/modules/", "providers.v1": "/v1/providers/"}));

    let before = app.storage().request_count();
    let (status, body, _) = get(&app, "/v1/providers/acme/widget/versions").await;
    assert_eq!(app.storage().request_count() - before, 1);
    assert_eq!(
        (status, body),
        (
            200,
            json!({"versions": [{"version": "1.0.0", "protocols": ["6.0"],
                        "platforms": [{"os": "darwin", "arch": "arm64"}, {"os": "linux", "arch": "amd64"}]}]})
        )
    );
    let before = app.storage().request_count();
    let (status, body, reply) = get(&app, "/v1/providers/acme/widget/1.0.0/download/linux/amd64").await;
    assert_eq!((status, app.storage().request_count() - before), (200, 1), "{body}");
    assert_eq!(reply.header_value("cache-control"), Some("no-store"));
    let fields: Vec<&str> = body.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        fields,
        [
            "arch",
            "download_url",
            "filename",
            "os",
            "packages",
            "protocols",
            "shasum",
            "shasums_signature_url",
            "shasums_url",
            "signing_keys"
        ]
    );
    assert_eq!(body["filename"], "terraform-provider-widget_1.0.0_linux_amd64.zip");
    let zip = app.storage().peek(&format!("{prefix}terraform-provider-widget_1.0.0_linux_amd64.zip")).unwrap();
    assert_eq!(body["shasum"], hex::encode(sha2::Sha256::digest(&zip)));
    let url = |f: &str| body[f].as_str().unwrap().to_string();
    assert!(
        url("download_url")
            .starts_with(&format!("https://memory.invalid/{prefix}terraform-provider-widget_1.0.0_linux_amd64.zip?"))
    );
    assert!(
        url("shasums_url")
            .starts_with(&format!("https://memory.invalid/{prefix}terraform-provider-widget_1.0.0_SHA256SUMS?"))
    );
    assert!(
        url("shasums_signature_url")
            .starts_with(&format!("https://memory.invalid/{prefix}terraform-provider-widget_1.0.0_SHA256SUMS.sig?"))
    );
    // OpenTofu's `packages`: every platform, its zh: (the zip's SHA-256, `shasum` for this
    // one) and h1: (computed independently here from the zip's files), and its size.
    for (platform, os_arch) in [("linux_amd64", "linux_amd64"), ("darwin_arm64", "darwin_arm64")] {
        let zip = app.storage().peek(&format!("{prefix}terraform-provider-widget_1.0.0_{os_arch}.zip")).unwrap();
        let h1 = h1_of(&zip);
        assert_eq!(
            body["packages"][platform],
            json!({"hashes": [format!("zh:{}", hex::encode(sha2::Sha256::digest(&zip))), h1], "package_size": zip.len()}),
            "{platform}"
        );
    }
    assert_eq!(body["packages"].as_object().unwrap().len(), 2);
    assert_eq!(body["packages"]["linux_amd64"]["hashes"][0], format!("zh:{}", body["shasum"].as_str().unwrap()));
    let keys = &body["signing_keys"]["gpg_public_keys"];
    assert_eq!(keys[0]["key_id"], key.key_id());
    assert!(keys[0]["ascii_armor"].as_str().unwrap().starts_with("-----BEGIN PGP PUBLIC KEY BLOCK-----"));
    for absent in [
        "/v1/providers/acme/widget/1.0.0/download/windows/amd64",
        "/v1/providers/acme/widget/2.0.0/download/linux/amd64",
        "/v1/providers/acme/gadget/versions",
    ] {
        let (status, body, _) = get(&app, absent).await;
        assert_eq!(status, 404, "{absent}: {body}");
    }
    // The same release through the mirror, by its full address.
    let (status, body, _) = get(&app, "/v1/mirror/registry.example.com/acme/widget/1.0.0.json").await;
    assert_eq!(status, 200);
    assert_eq!(body["archives"]["linux_amd64"]["hashes"][0], format!("zh:{}", hex::encode(sha2::Sha256::digest(&zip))));
}

#[tokio::test]
async fn discovery_offers_login_only_with_an_issuers_login_client() {
    let issuers = |login: &str| {
        crate::auth::oidc::parse_issuers(&format!(
            r#"[{{"issuer": "https://idp.example.com", "audience": "registry",
                     "rules": [{{"claim": "groups", "equals": "platform", "modules": ["*"]}}]{login}}}]"#
        ))
        .unwrap()
    };
    let mut config = Config::new("b");
    config.oidc_issuers = issuers("");
    let app = App::builder(config.clone(), MemoryStorage::new()).services(&[Service::Discovery]).build().unwrap();
    assert_eq!(app.discovery(), json!({"modules.v1": "/v1/modules/"}));
    config.oidc_issuers = issuers(
        r#", "login": {"client": "terraform-cli", "authz": "https://idp.example.com/oauth2/authorize",
                           "token": "https://idp.example.com/oauth2/token", "scopes": ["openid"]}"#,
    );
    let app = App::builder(config.clone(), MemoryStorage::new()).services(&[Service::Discovery]).build().unwrap();
    assert_eq!(
        app.discovery()["login.v1"],
        json!({"client": "terraform-cli", "grant_types": ["authz_code"],
                   "authz": "https://idp.example.com/oauth2/authorize",
                   "token": "https://idp.example.com/oauth2/token", "ports": [10000, 10010], "scopes": ["openid"]})
    );
    // One way to build an app, so the verifier always has the keys its configuration names: a
    // JWT of a configured issuer is that issuer's to judge (refused here, 401: the issuer
    // cannot be reached), never read as an unknown static token or refused as unverifiable.
    let app = App::builder(open(config), MemoryStorage::new()).build().unwrap();
    let test = crate::testing::oidc::TestIssuer::rsa("https://idp.example.com");
    let jwt = format!("Bearer {}", test.sign(&crate::testing::oidc::claims(&test.url, "registry", 60)));
    let reply = app.handle(&Request::get("/v1/modules/acme/vpc/aws/versions").authorization(Some(&jwt))).await;
    assert_eq!(reply.status, 401, "{:?}", reply.body);
    assert!(
        String::from_utf8_lossy(&reply.body).contains("the keys of issuer https://idp.example.com cannot be fetched")
    );
}

/// Every row of the route table is answered by its own function (no arm missing from its
/// protocol's `answer`, which would fall to "this function does not serve"), and every row that
/// reads a module or provider asks the verifier before it reads anything: without a token,
/// where nothing is anonymous, each answers 401 having read no manifest. A row that reads
/// nothing private (discovery, the sign-in form, the assets) asks for no token.
#[tokio::test]
async fn every_row_is_answered_by_its_function_and_access_checked() {
    use crate::router::{ROUTES, Reads};
    let mut config = Config::new("bucket");
    config.hostname = Some("registry.example.com".into());
    for row in ROUTES {
        let app =
            App::function_builder(config.clone(), MemoryStorage::new(), Function::of(row.service)).build().unwrap();
        let (method, path, query) = row.example(&config.paths);
        let reply = app.handle(&Request::new(&method, &path).query(query)).await;
        let body = String::from_utf8_lossy(&reply.body);
        assert!(!body.contains("does not serve"), "{method} {path}: not answered by its function: {body}");
        let route = crate::router::route(&method, &path, query, &config.paths).unwrap();
        if matches!(
            route.reads(),
            Reads::Module(_) | Reads::Provider(_) | Reads::OwnProvider(_) | Reads::UpstreamModule(_)
        ) {
            assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "{method} {path}: served without an access check");
            assert_eq!(app.storage().request_count(), 0, "{method} {path}: read before the access check");
        }
        if route.reads() == Reads::Anyone {
            assert_ne!(reply.status, StatusCode::UNAUTHORIZED, "{method} {path}: public, yet asks for a token");
        }
    }
}
