//! The MCP endpoint through the handler, as every deployment answers it: the transport's
//! statuses and headers, the handshake, the protocol's errors, and what a tool call reads.

#![allow(clippy::unwrap_used)]

use registry::auth::{TokenStore, manage};
use registry::index::{Indexer, Limits};
use registry::storage::MemoryStorage;
use registry::{App, Config, Request};
use serde_json::{Value, json};

const TOKEN: &str = "Bearer trg_mcp_library_0123456789abcdef";

async fn app() -> App<MemoryStorage> {
    let storage = MemoryStorage::new();
    let indexer = Indexer::new(&storage, Limits::default());
    for v in ["1.0.0", "2.0.0"] {
        let key = format!("modules/acme/vpc/aws/{v}.tar.gz");
        let main = format!("variable \"cidr\" {{\n  type = string\n}}\noutput \"v\" {{\n  value = \"{v}\"\n}}\n");
        storage.insert(
            &key,
            registry::testing::module_tar_gz(&[("README.md", "# VPC\n\nA network.\n"), ("main.tf", &main)]),
        );
        indexer.on_object_changed(&key).await.unwrap();
    }
    let record = manage::record("assistant", "trg_mcp_library_0123456789abcdef", vec!["acme".into()], vec![], None);
    storage
        .insert(registry::layout::TOKENS, serde_json::to_vec(&TokenStore { format: 1, tokens: vec![record] }).unwrap());
    let mut config = Config::new("bucket");
    config.hostname = Some("registry.example.com".into());
    App::builder(config, storage).build().unwrap()
}

/// POST `body` with the token and `headers` (`origin`, `host`, `version`).
async fn post(app: &App<MemoryStorage>, body: &Value, headers: &[(&str, &str)]) -> (u16, Value, registry::app::Reply) {
    let bytes = body.to_string().into_bytes();
    let get = |name: &str| headers.iter().find(|(n, _)| *n == name).map(|(_, v)| *v);
    let request = Request::new(&http::Method::POST, "/mcp")
        .body(&bytes)
        .authorization(Some(TOKEN))
        .origin(get("origin"))
        .host(get("host"))
        .mcp_protocol_version(get("version"));
    let reply = app.handle(&request).await;
    let json = serde_json::from_slice(&reply.body).unwrap_or(Value::Null);
    (reply.status.as_u16(), json, reply)
}

fn rpc(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
}

#[tokio::test]
async fn the_handshake_the_transport_and_the_protocols_errors() {
    let app = app().await;
    let (status, init, _) = post(&app, &rpc("initialize", json!({"protocolVersion": "2025-06-18"})), &[]).await;
    assert_eq!((status, &init["result"]["protocolVersion"], &init["id"]), (200, &json!("2025-06-18"), &json!(7)));
    let (status, _, reply) = post(&app, &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}), &[]).await;
    assert_eq!((status, reply.body.len()), (202, 0), "a notification: 202, no body");
    for (method, code) in [("server/discover", -32601), ("resources/list", -32601), ("prompts/list", -32601)] {
        let (status, answer, _) = post(&app, &rpc(method, json!({})), &[]).await;
        assert_eq!((status, &answer["error"]["code"]), (200, &json!(code)), "{method}: {answer}");
    }
    let (_, unknown, _) = post(&app, &rpc("tools/call", json!({"name": "drop_tables"})), &[]).await;
    assert_eq!(unknown["error"]["code"], -32602);
    let (_, ping, _) = post(&app, &rpc("ping", json!({})), &[]).await;
    assert_eq!(ping["result"], json!({}));
    // The transport's header rules: an unknown version is 400; with the registry's host name
    // configured, an Origin other than it is 403, whatever Host says (a rebound name).
    let (status, _, _) = post(&app, &rpc("ping", json!({})), &[("version", "1999-01-01")]).await;
    assert_eq!(status, 400);
    let evil = [("origin", "https://evil.example"), ("host", "evil.example")];
    let (status, refused, reply) = post(&app, &rpc("ping", json!({})), &evil).await;
    assert_eq!((status, refused["jsonrpc"].as_str()), (403, Some("2.0")), "{refused}");
    assert_eq!(reply.header_value("cache-control"), Some("no-store"));
    let own = [("origin", "https://registry.example.com"), ("host", "registry.example.com")];
    assert_eq!(post(&app, &rpc("ping", json!({})), &own).await.0, 200);
    // No event stream: GET is 405, saying POST.
    let get = app.handle(&Request::get("/mcp").authorization(Some(TOKEN))).await;
    assert_eq!((get.status.as_u16(), get.header_value("allow")), (405, Some("POST")));
    // No OpenID Connect issuer with a login client: no resource metadata, and a challenge
    // that names none.
    let unauthenticated = app
        .handle(&Request::new(&http::Method::POST, "/mcp").body(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}"))
        .await;
    assert_eq!(unauthenticated.status, 401);
    let challenge = unauthenticated.header_value("www-authenticate").unwrap();
    assert!(challenge.starts_with("Bearer ") && !challenge.contains("resource_metadata"), "{challenge}");
    let metadata = app.handle(&Request::get("/.well-known/oauth-protected-resource/mcp")).await;
    assert_eq!(metadata.status, 404);
}

#[tokio::test]
async fn a_tool_reads_what_its_answer_needs() {
    let app = app().await;
    let call = |name: &str, arguments: Value| rpc("tools/call", json!({"name": name, "arguments": arguments}));
    // Warm the token store, then count.
    post(&app, &rpc("ping", json!({})), &[]).await;
    let before = app.storage().request_count();
    let (_, versions, _) = post(&app, &call("list_module_versions", json!({"module": "acme/vpc/aws"})), &[]).await;
    assert_eq!(app.storage().request_count() - before, 1, "the manifest alone");
    let text = versions["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("2 versions, latest 2.0.0"), "{text}");
    let (_, usage, _) = post(&app, &call("get_module_usage", json!({"module": "acme/vpc/aws"})), &[]).await;
    let snippet = usage["result"]["structuredContent"]["snippet"].as_str().unwrap();
    assert!(snippet.contains("source  = \"registry.example.com/acme/vpc/aws\"") && snippet.contains("# cidr = string"));
    let (_, bad, _) = post(&app, &call("get_module_details", json!({"module": "acme/vpc/aws", "extra": 1})), &[]).await;
    assert_eq!((&bad["result"]["isError"], bad.get("error")), (&json!(true), None), "a tool error: {bad}");
}
