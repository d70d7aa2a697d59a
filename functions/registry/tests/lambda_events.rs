//! Handler tests: real API Gateway HTTP API v2 event JSON, parsed by lambda_http exactly as
//! the Lambda runtime does, answered by the same handler the Lambda binaries run.

// Test helpers: a failed step is a failed test, with the panic message saying which.
#![allow(clippy::unwrap_used)]

use lambda_http::Body;
use registry::router::Service;
use registry::storage::MemoryStorage;
use registry::{App, Config};
use serde_json::{Value, json};

const EVENT: &str = include_str!("events/apigw_v2_module_versions.json");

/// The recorded event with another method and raw path (API Gateway fills `rawPath` with the
/// path as the client sent it, still percent-encoded).
fn event(method: &str, raw_path: &str) -> lambda_http::Request {
    let mut e: Value = serde_json::from_str(EVENT).unwrap();
    e["rawPath"] = json!(raw_path);
    e["requestContext"]["http"]["path"] = json!(raw_path);
    e["requestContext"]["http"]["method"] = json!(method);
    lambda_http::request::from_str(&e.to_string()).expect("lambda_http parses the event")
}

fn storage() -> MemoryStorage {
    let s = MemoryStorage::new();
    s.insert(
        "modules/acme/vpc/aws/manifest.json",
        r#"{"format":1,"versions":[{"version":"1.1.0","archive":"modules/acme/vpc/aws/1.1.0.tar.gz","size":10,"sha256":"00","etag":"\"e\""},
            {"version":"1.0.0","archive":"modules/acme/vpc/aws/1.0.0.tar.gz","size":10,"sha256":"00","etag":"\"e\""}]}"#,
    );
    s.insert("providers/registry.terraform.io/hashicorp/null/index.json", r#"{"versions":{"3.2.1":{}}}"#);
    // The token the recorded event carries, scoped to the acme modules and hashicorp providers.
    let token = registry::access::manage::record(
        "ci",
        "example-token-not-logged",
        vec!["acme".into()],
        vec!["registry.terraform.io/hashicorp/*".into()],
        None,
    );
    let store = registry::access::TokenStore { format: 1, tokens: vec![token] };
    s.insert(registry::layout::TOKENS, serde_json::to_vec(&store).unwrap());
    s.insert(
        "providers/registry.terraform.io/hashicorp/null/3.2.1.json",
        r#"{"archives":{"linux_amd64":{"url":"terraform-provider-null_3.2.1_linux_amd64.zip","hashes":["h1:x="]}}}"#,
    );
    s
}

async fn call<S: registry::storage::Storage>(app: &App<S>, method: &str, path: &str) -> (u16, http::HeaderMap, Value) {
    let response = registry::lambda::handle(app, event(method, path)).await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    assert_eq!(headers.get("content-type").map(|v| v.to_str().unwrap()), Some("application/json"), "{method} {path}");
    let body = match response.body() {
        Body::Text(t) => serde_json::from_str(t).unwrap(),
        Body::Empty => Value::Null,
        Body::Binary(b) => serde_json::from_slice(b).unwrap(),
        _ => Value::Null,
    };
    (status, headers, body)
}

#[tokio::test]
async fn the_recorded_event_as_is() {
    let app = App::new(Config::new("bucket"), storage(), &[Service::Modules]);
    let response = registry::lambda::handle(&app, lambda_http::request::from_str(EVENT).unwrap()).await.unwrap();
    assert_eq!(response.status(), 200);
    let Body::Text(text) = response.body() else { panic!("JSON answers are text bodies") };
    assert_eq!(
        serde_json::from_str::<Value>(text).unwrap(),
        json!({"modules":[{"versions":[{"version":"1.1.0"},{"version":"1.0.0"}]}]})
    );
    assert_eq!(app.storage.request_count(), 2, "a cold container reads the token store and the manifest");
    registry::lambda::handle(&app, lambda_http::request::from_str(EVENT).unwrap()).await.unwrap();
    assert_eq!(app.storage.request_count(), 3, "then exactly one S3 request per registry request");
}

#[tokio::test]
async fn modules_function() {
    let app = App::new(Config::new("bucket"), storage(), &[Service::Modules]);
    let (status, headers, body) = call(&app, "GET", "/v1/modules/acme/vpc/aws/1.0.0/download").await;
    assert_eq!(status, 200);
    let url = headers.get("x-terraform-get").unwrap().to_str().unwrap();
    assert!(url.contains("modules/acme/vpc/aws/1.0.0.tar.gz?"), "{url}");
    assert_eq!(body["location"], url);

    let cases = [
        ("GET", "/v1/modules/acme/vpc/aws/2.0.0/download", 404),
        ("GET", "/v1/modules/acme/other/aws/versions", 404),
        // lambda_http's URI would normalise these; the raw path is what is routed.
        ("GET", "/v1/modules/acme/vpc/aws/../../../x/y/z/versions", 400),
        ("GET", "/v1/modules/%2e%2e/vpc/aws/versions", 400),
        ("GET", "/v1/modules/acme%2fvpc/aws/x/versions", 400),
        ("POST", "/v1/modules/acme/vpc/aws/versions", 405),
        ("GET", "/v1/mirror/registry.terraform.io/hashicorp/null/index.json", 404),
        ("GET", "/.well-known/terraform.json", 404),
    ];
    for (method, path, want) in cases {
        let (status, _, body) = call(&app, method, path).await;
        assert_eq!(status, want, "{method} {path}: {body}");
        assert!(body["errors"][0].is_string(), "{method} {path}: {body}");
    }
}

#[tokio::test]
async fn mirror_function() {
    let app = App::new(Config::new("bucket"), storage(), &[Service::Mirror]);
    let (status, _, body) = call(&app, "GET", "/v1/mirror/registry.terraform.io/hashicorp/null/index.json").await;
    assert_eq!((status, body), (200, json!({"versions":{"3.2.1":{}}})));
    let (status, headers, body) = call(&app, "GET", "/v1/mirror/registry.terraform.io/hashicorp/null/3.2.1.json").await;
    assert_eq!(status, 200);
    assert_eq!(headers.get("cache-control").unwrap(), "no-store");
    assert_eq!(body["archives"]["linux_amd64"]["hashes"], json!(["h1:x="]));
    let (status, _, _) = call(&app, "GET", "/v1/mirror/registry.terraform.io/hashicorp/null/3.2.0.json").await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn discovery_function_needs_no_storage() {
    let app = App::new(Config::new("bucket"), registry::storage::NoStorage, &[Service::Discovery]);
    let (status, _, body) = call(&app, "GET", "/.well-known/terraform.json").await;
    assert_eq!((status, body), (200, json!({"modules.v1": "/v1/modules/"})));
    let (status, _, _) = call(&app, "GET", "/v1/modules/acme/vpc/aws/versions").await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn s3_down_is_503_json_not_502() {
    let app = App::new(Config::new("bucket"), storage(), &[Service::Modules]);
    app.storage.unavailable.store(true, std::sync::atomic::Ordering::SeqCst);
    let (status, _, body) = call(&app, "GET", "/v1/modules/acme/vpc/aws/versions").await;
    assert_eq!((status, body), (503, json!({"errors": ["storage is unavailable, try again"]})));
}

#[tokio::test]
async fn the_bearer_token_in_the_event_is_what_is_checked() {
    let app = App::new(Config::new("bucket"), storage(), &[Service::Modules, Service::Mirror]);
    let mut e: Value = serde_json::from_str(EVENT).unwrap();
    e["headers"].as_object_mut().unwrap().remove("authorization");
    let response =
        registry::lambda::handle(&app, lambda_http::request::from_str(&e.to_string()).unwrap()).await.unwrap();
    assert_eq!(response.status(), 401);
    assert_eq!(response.headers()["www-authenticate"], r#"Bearer realm="terraform-registry""#);
    e["headers"]["authorization"] = json!("Bearer some-other-token");
    let response =
        registry::lambda::handle(&app, lambda_http::request::from_str(&e.to_string()).unwrap()).await.unwrap();
    assert_eq!(response.status(), 401);
    // In the token's scope for providers, outside it for another origin.
    let (status, _, _) = call(&app, "GET", "/v1/mirror/registry.terraform.io/hashicorp/null/index.json").await;
    assert_eq!(status, 200);
    let (status, _, _) = call(&app, "GET", "/v1/mirror/example.com/acme/widget/index.json").await;
    assert_eq!(status, 404);
}
