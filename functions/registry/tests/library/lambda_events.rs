//! Handler tests: real API Gateway HTTP API v2 event JSON, handed to the same entry point the
//! Lambda binaries run on each invocation's JSON.

// Test helpers: a failed step is a failed test, with the panic message saying which.
#![allow(clippy::unwrap_used)]

use aws_lambda_events::apigw::ApiGatewayV2httpResponse;
use aws_lambda_events::encodings::Body;
use registry::lambda::http::respond_to_payload;
use registry::router::Service;
use registry::storage::MemoryStorage;
use registry::{App, Config};
use serde_json::{Value, json};

const EVENT: &str = include_str!("../events/apigw_v2_module_versions.json");

/// The recorded event with another method and raw path (API Gateway fills `rawPath` with the
/// path as the client sent it, still percent-encoded).
fn event(method: &str, raw_path: &str) -> Value {
    let mut e: Value = serde_json::from_str(EVENT).unwrap();
    e["rawPath"] = json!(raw_path);
    e["requestContext"]["http"]["path"] = json!(raw_path);
    e["requestContext"]["http"]["method"] = json!(method);
    e
}

fn recorded() -> Value {
    serde_json::from_str(EVENT).unwrap()
}

fn body_json(response: &ApiGatewayV2httpResponse) -> Value {
    match &response.body {
        Some(Body::Text(t)) => serde_json::from_str(t).unwrap(),
        None | Some(Body::Empty) => Value::Null,
        Some(other) => panic!("JSON answers are text bodies, not {other:?}"),
    }
}

fn storage() -> MemoryStorage {
    let s = MemoryStorage::new();
    s.insert(
        "indexed/modules/acme/vpc/aws/manifest.json",
        r#"{"format":1,"versions":[{"version":"1.1.0","archive":"modules/acme/vpc/aws/1.1.0.tar.gz","size":10,"sha256":"0000000000000000000000000000000000000000000000000000000000000000","etag":"\"e\""},
            {"version":"1.0.0","archive":"modules/acme/vpc/aws/1.0.0.tar.gz","size":10,"sha256":"0000000000000000000000000000000000000000000000000000000000000000","etag":"\"e\""}]}"#,
    );
    s.insert("indexed/providers/registry.terraform.io/hashicorp/null/index.json", r#"{"versions":{"3.2.1":{}}}"#);
    // The token the recorded event carries, scoped to the acme modules and hashicorp providers.
    let token = registry::auth::manage::record(
        "ci",
        "example-token-not-logged",
        vec!["acme".into()],
        vec!["registry.terraform.io/hashicorp/*".into()],
        None,
    );
    let store = registry::auth::TokenStore { format: 1, tokens: vec![token] };
    s.insert(registry::layout::TOKENS, serde_json::to_vec(&store).unwrap());
    s.insert(
        "indexed/providers/registry.terraform.io/hashicorp/null/3.2.1.json",
        r#"{"archives":{"linux_amd64":{"url":"terraform-provider-null_3.2.1_linux_amd64.zip","hashes":["h1:x="]}}}"#,
    );
    s
}

async fn call<S: registry::storage::Storage>(app: &App<S>, method: &str, path: &str) -> (u16, http::HeaderMap, Value) {
    let response = respond_to_payload(app, event(method, path)).await;
    let status = response.status_code as u16;
    let headers = response.headers.clone();
    assert_eq!(headers.get("content-type").map(|v| v.to_str().unwrap()), Some("application/json"), "{method} {path}");
    (status, headers, body_json(&response))
}

#[tokio::test]
async fn the_recorded_event_as_is() {
    let app = App::builder(Config::new("bucket"), storage()).services(&[Service::Modules]).build().unwrap();
    let response = respond_to_payload(&app, recorded()).await;
    assert_eq!(response.status_code, 200);
    assert_eq!(body_json(&response), json!({"modules":[{"versions":[{"version":"1.1.0"},{"version":"1.0.0"}]}]}));
    assert_eq!(app.storage().request_count(), 2, "a cold container reads the token store and the manifest");
    respond_to_payload(&app, recorded()).await;
    assert_eq!(app.storage().request_count(), 3, "then exactly one S3 request per registry request");
}

#[tokio::test]
async fn modules_function() {
    let app = App::builder(Config::new("bucket"), storage()).services(&[Service::Modules]).build().unwrap();
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
    let app = App::builder(Config::new("bucket"), storage()).services(&[Service::Mirror]).build().unwrap();
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
    let app = App::builder(Config::new("bucket"), registry::storage::NoStorage)
        .services(&[Service::Discovery])
        .build()
        .unwrap();
    let (status, _, body) = call(&app, "GET", "/.well-known/terraform.json").await;
    assert_eq!((status, body), (200, json!({"modules.v1": "/v1/modules/"})));
    let (status, _, _) = call(&app, "GET", "/v1/modules/acme/vpc/aws/versions").await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn s3_down_is_503_json_not_502() {
    let app = App::builder(Config::new("bucket"), storage()).services(&[Service::Modules]).build().unwrap();
    app.storage().unavailable.store(true, std::sync::atomic::Ordering::SeqCst);
    let (status, _, body) = call(&app, "GET", "/v1/modules/acme/vpc/aws/versions").await;
    assert_eq!((status, body), (503, json!({"errors": ["storage is unavailable, try again"]})));
}

#[tokio::test]
async fn the_bearer_token_in_the_event_is_what_is_checked() {
    let app =
        App::builder(Config::new("bucket"), storage()).services(&[Service::Modules, Service::Mirror]).build().unwrap();
    let mut e = recorded();
    e["headers"].as_object_mut().unwrap().remove("authorization");
    let response = respond_to_payload(&app, e.clone()).await;
    assert_eq!(response.status_code, 401);
    assert_eq!(response.headers["www-authenticate"], r#"Bearer realm="terraform-registry""#);
    e["headers"]["authorization"] = json!("Bearer some-other-token");
    let response = respond_to_payload(&app, e).await;
    assert_eq!(response.status_code, 401);
    // In the token's scope for providers, outside it for another origin.
    let (status, _, _) = call(&app, "GET", "/v1/mirror/registry.terraform.io/hashicorp/null/index.json").await;
    assert_eq!(status, 200);
    let (status, _, _) = call(&app, "GET", "/v1/mirror/example.com/acme/widget/index.json").await;
    assert_eq!(status, 404);
}

/// lambda_http builds a URL from `X-Forwarded-Proto`, `Host` (or `domainName`) and the path
/// and unwraps the parse, `expect`s `http::Uri` to take it with the raw query, and `expect`s a
/// base64 body to decode. Each value here panics it (shown first, on the event as sent); through
/// the guard, each is answered: the headers the registry never needs are dropped or made
/// harmless, the rest refused with a JSON 400. A value no HTTP header can hold makes the event
/// unreadable, a JSON 400 too.
#[tokio::test]
async fn no_header_value_can_panic_the_adapter() {
    let app = App::builder(Config::new("bucket"), storage()).services(&[Service::Modules]).build().unwrap();
    let cases: [(&str, Value, u16); 13] = [
        ("/headers/x-forwarded-proto", json!("a b"), 200),
        ("/headers/x-forwarded-proto", json!("://"), 200),
        ("/headers/host", json!("exa mple.com"), 200),
        ("/headers/host", json!("[::1"), 200),
        ("/headers/host", json!("a:b:c"), 200),
        ("/headers/host", json!("registry.example.com:99999"), 200),
        ("/headers/host", json!("1.2.3.999"), 200),
        ("/requestContext/domainName", json!("a b"), 200),
        ("/rawPath", json!(":99999"), 400),
        ("/rawQueryString", json!("q=a b"), 400),
        ("/rawQueryString", json!("q=\u{7f}"), 400),
        ("/requestContext/stage", json!("x".repeat(70_000)), 400),
        ("/body", json!("not base64!"), 400),
    ];
    for (pointer, value, status) in cases {
        let mut e = recorded();
        if pointer == "/requestContext/domainName" {
            e["headers"].as_object_mut().unwrap().remove("host");
        }
        if pointer == "/body" {
            e["isBase64Encoded"] = json!(true);
        }
        let (parent, field) = pointer.rsplit_once('/').unwrap();
        e.pointer_mut(parent).unwrap_or(&mut Value::Null)[field] = value.clone();
        let unguarded = serde_json::from_value(e.clone()).unwrap();
        let converted = std::panic::catch_unwind(|| {
            lambda_http::Request::from(lambda_http::request::LambdaRequest::ApiGatewayV2(unguarded))
        });
        assert!(converted.is_err(), "{pointer} = {value}: lambda_http took it unguarded");
        let response = respond_to_payload(&app, e).await;
        assert_eq!(response.status_code, i64::from(status), "{pointer} = {value}");
        assert!(body_json(&response).is_object(), "{pointer} = {value}: a JSON answer");
    }
    for (name, value) in [("x-forwarded-proto", "\u{0}"), ("host", "\n")] {
        let mut e = recorded();
        e["headers"][name] = json!(value);
        let response = respond_to_payload(&app, e).await;
        assert_eq!(response.status_code, 400, "{name}: {value:?}");
        assert!(body_json(&response).is_object(), "{name}: {value:?}: a JSON answer");
    }
    // Not an API Gateway event at all: a JSON 400, not a failed invocation.
    for junk in [json!({"hello": "world"}), json!([]), json!({"requestContext": {"http": {"method": "NOT A METHOD"}}})]
    {
        let response = respond_to_payload(&app, junk.clone()).await;
        assert_eq!(response.status_code, 400, "{junk}");
        assert!(body_json(&response)["errors"][0].is_string(), "{junk}");
    }
}

/// The web function's pages through payload 2.0's own shapes: cookies arrive in `cookies`, not
/// a header; a form body may be base64; `Set-Cookie` leaves in `cookies`.
#[tokio::test]
async fn web_pages_read_cookies_and_form_bodies_as_api_gateway_sends_them() {
    let app = App::builder(Config::new("bucket"), storage()).services(&[Service::Web]).build().unwrap();
    let text = |r: &ApiGatewayV2httpResponse| match &r.body {
        Some(Body::Text(t)) => t.clone(),
        other => panic!("pages are text bodies, not {other:?}"),
    };
    let host = "abc123def4.execute-api.eu-west-1.amazonaws.com";
    let mut sign_in = event("POST", "/ui/sign-in");
    sign_in["headers"].as_object_mut().unwrap().remove("authorization");
    sign_in["headers"]["origin"] = json!(format!("https://{host}"));
    sign_in["headers"]["content-type"] = json!("application/x-www-form-urlencoded");
    sign_in["body"] =
        json!(base64::Engine::encode(&base64::engine::general_purpose::STANDARD, "token=example-token-not-logged"));
    sign_in["isBase64Encoded"] = json!(true);
    let response = respond_to_payload(&app, sign_in.clone()).await;
    assert_eq!(response.status_code, 303);
    assert_eq!(response.cookies.len(), 1, "{response:?}");
    assert!(response.cookies[0].starts_with("__Host-registry-token=example-token-not-logged;"));
    assert!(response.headers.get("set-cookie").is_none(), "cookies leave in `cookies` only");

    sign_in["headers"]["origin"] = json!("https://evil.example");
    let refused = respond_to_payload(&app, sign_in.clone()).await;
    assert_eq!((refused.status_code, refused.cookies.len()), (403, 0));
    sign_in["body"] = json!("not base64!");
    assert_eq!(respond_to_payload(&app, sign_in).await.status_code, 400);

    let mut page = event("GET", "/ui/modules/acme/vpc/aws");
    page["headers"].as_object_mut().unwrap().remove("authorization");
    page["cookies"] = json!(["theme=dark", "__Host-registry-token=example-token-not-logged"]);
    let response = respond_to_payload(&app, page.clone()).await;
    assert_eq!(response.status_code, 200, "{}", text(&response));
    assert!(text(&response).contains("abc123def4.execute-api.eu-west-1.amazonaws.com/acme/vpc/aws"));
    assert!(response.headers.get("content-security-policy").is_some());
    page["cookies"] = json!([]);
    assert_eq!(respond_to_payload(&app, page).await.status_code, 401);
}

/// Strings built from the characters that break URLs: separators, brackets, spaces, control
/// characters, non-ASCII, and plain ones, so that many are also valid.
fn piece() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    let chars: Vec<char> = "az09.-:[]@/?#% \u{0}\u{7f}\u{e9}\u{430}\\\"{}|^`<>=&+".chars().collect();
    prop::collection::vec(prop::sample::select(chars), 0..24).prop_map(|c| c.into_iter().collect())
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 2048, ..Default::default() })]

    /// Whatever the guard lets through, lambda_http's conversion takes without a panic.
    #[test]
    fn nothing_the_guard_lets_through_panics_lambda_http(
        proto in piece(),
        host in piece(),
        domain in piece(),
        path in piece(),
        rooted in proptest::bool::ANY,
        query in piece(),
        stage in piece(),
        body in piece(),
        base64 in proptest::bool::ANY,
    ) {
        let mut e: aws_lambda_events::apigw::ApiGatewayV2httpRequest = serde_json::from_str(EVENT).unwrap();
        // Only what an event can hold: a header value that is not one fails to deserialise.
        for (name, value) in [("x-forwarded-proto", &proto), ("host", &host)] {
            if let Ok(value) = http::HeaderValue::from_str(value) {
                e.headers.insert(name, value);
            }
        }
        e.request_context.domain_name = Some(domain);
        e.raw_path = Some(if rooted { format!("/{path}") } else { path });
        e.raw_query_string = Some(query);
        e.request_context.stage = Some(stage);
        e.body = Some(body);
        e.is_base64_encoded = base64;
        if registry::lambda::http::guard(&mut e).is_ok() {
            let converted = std::panic::catch_unwind(|| {
                lambda_http::Request::from(lambda_http::request::LambdaRequest::ApiGatewayV2(e))
            });
            proptest::prop_assert!(converted.is_ok());
        }
    }
}
