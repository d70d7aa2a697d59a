//! The MCP server with real clients written elsewhere, over TLS with the local registry's CA
//! and a token in `Authorization`: the official Python SDK's client (PyPI `mcp`,
//! `mcp_client.py`) and the MCP Inspector's CLI mode (npm `@modelcontextprotocol/inspector`,
//! run with Node 24). Each lists the tools and calls them against a published module: its
//! interface, its versions, the changes between two versions, the snippet; a token scoped to
//! one namespace sees nothing of another, not even by count.

// Test helpers: a failed step is a failed test, with the panic message saying which.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use support::{Harness, skipped};

/// A token that may read namespace `acme` only.
const SCOPED: &str = "trg_mcp_scoped_token_0123456789abcdef";

fn tools_dir() -> PathBuf {
    std::env::var_os("TOOLS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/tf-registry-tools"))
}

/// acme/vpc/aws 1.0.0 and 2.0.0 (2.0.0 drops an input and requires another: breaking), and
/// secret/vault/aws, which the scoped token may not read; a mirrored provider.
async fn published() -> Harness {
    let h = Harness::start().await;
    let v1 = "variable \"cidr\" {\n  type = string\n  description = \"The VPC's CIDR block.\"\n}\n\
              variable \"legacy\" {\n  type    = bool\n  default = false\n}\n\
              output \"id\" {\n  value = 1\n}\n";
    let v2 = "variable \"cidr\" {\n  type = string\n  description = \"The VPC's CIDR block.\"\n}\n\
              variable \"region\" {\n  type = string\n}\n\
              output \"id\" {\n  value = 1\n}\n";
    for (version, main) in [("1.0.0", v1), ("2.0.0", v2)] {
        let archive = support::module_tar_gz(&[("README.md", "# VPC\n\nA network with subnets.\n"), ("main.tf", main)]);
        h.upload(&format!("modules/acme/vpc/aws/{version}.tar.gz"), archive).await;
    }
    let vault = support::module_tar_gz(&[("README.md", "# Vault\n\nSecret.\n"), ("main.tf", "")]);
    h.upload("modules/secret/vault/aws/0.1.0.tar.gz", vault).await;
    let platform = support::this_platform();
    let zip = format!("providers/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.1_{platform}.zip");
    h.upload(&zip, support::provider_zip("null", "3.2.1", &platform)).await;
    let record = registry::auth::manage::record("mcp-scoped", SCOPED, vec!["acme".into()], vec![], None);
    registry::auth::manage::upsert(&h.running.storage, record).await.unwrap();
    h
}

/// The calls both clients make, by label: (tool, arguments).
fn calls() -> Value {
    json!([
        ["search", "search_modules", {"query": "network"}],
        ["search_everything", "search_modules", {}],
        ["details", "get_module_details", {"module": "acme/vpc/aws"}],
        ["details_1", "get_module_details", {"module": "acme/vpc/aws", "version": "1.0.0"}],
        ["versions", "list_module_versions", {"module": "acme/vpc/aws"}],
        ["compare", "compare_module_versions", {"module": "acme/vpc/aws", "from": "1.0.0", "to": "2.0.0"}],
        ["usage", "get_module_usage", {"module": "acme/vpc/aws"}],
        ["hidden", "get_module_details", {"module": "secret/vault/aws"}],
        ["providers", "search_providers", {"query": "null"}],
        ["provider", "get_provider_details", {"provider": "registry.terraform.io/hashicorp/null"}],
        ["bad", "get_module_details", {"module": "not-an-address"}],
    ])
}

/// What both clients must have seen, from each call's text (and the Python client's
/// structured content where it has it).
fn check_answers(client: &str, calls: &serde_json::Map<String, Value>, scoped: bool) {
    let text = |label: &str| calls[label]["text"].as_str().unwrap_or_default().to_string();
    let error = |label: &str| calls[label]["isError"].as_bool().unwrap_or(false);
    assert!(text("search").contains("acme/vpc/aws") && !error("search"), "{client}: {}", text("search"));
    assert_eq!(
        text("search_everything").contains("secret/vault/aws"),
        !scoped,
        "{client}: {}",
        text("search_everything")
    );
    let count = if scoped { "1 modules found" } else { "2 modules found" };
    assert!(text("search_everything").starts_with(count), "{client}: not even by count: {}", text("search_everything"));
    let details = text("details");
    assert!(details.contains("# acme/vpc/aws 2.0.0"), "{client}: {details}");
    assert!(details.contains("- region (string), required"), "{client}: {details}");
    assert!(details.contains("- cidr (string), required: The VPC's CIDR block."), "{client}: {details}");
    assert!(details.contains("A network with subnets."), "{client}: the README: {details}");
    assert!(text("details_1").contains("- legacy (bool), default false"), "{client}: {}", text("details_1"));
    let versions = text("versions");
    assert!(versions.find("- 2.0.0").unwrap() < versions.find("- 1.0.0").unwrap(), "{client}: {versions}");
    let compare = text("compare");
    assert!(compare.contains("breaking") && compare.contains("BREAKING: "), "{client}: {compare}");
    assert!(compare.contains("region") && compare.contains("legacy"), "{client}: {compare}");
    let usage = text("usage");
    assert!(
        usage.contains("source  = \"") && usage.contains("/acme/vpc/aws\"") && usage.contains("version = \"~> 2.0\"")
    );
    assert!(usage.contains("# region = string"), "{client}: {usage}");
    if scoped {
        let hidden = text("hidden");
        assert!(error("hidden") && hidden == "module secret/vault/aws not found", "{client}: as if absent: {hidden}");
    } else {
        assert!(text("hidden").contains("# secret/vault/aws 0.1.0"), "{client}: {}", text("hidden"));
    }
    assert_eq!(text("providers").contains("registry.terraform.io/hashicorp/null"), !scoped, "{client}");
    if scoped {
        assert!(error("provider"), "{client}: the scoped token reads no provider");
    } else {
        assert!(
            text("provider").contains("# registry.terraform.io/hashicorp/null 3.2.1"),
            "{client}: {}",
            text("provider")
        );
    }
    assert!(error("bad") && text("bad").contains("NAMESPACE/NAME/SYSTEM"), "{client}: {}", text("bad"));
}

fn python_client(h: &Harness, python: &Path, token: &str) -> std::process::Output {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("integration/mcp_client.py");
    let url = format!("https://{}/mcp", h.host());
    tokio::task::block_in_place(|| {
        Command::new(python)
            .arg(&script)
            .args([&url, token, &calls().to_string()])
            .env("SSL_CERT_FILE", h.running.data_dir.join("ca.pem"))
            .output()
            .unwrap()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_client_lists_and_calls_every_tool_within_the_tokens_scopes() {
    let python = tools_dir().join("mcp/bin/python");
    let has_mcp = Command::new(&python).args(["-c", "import mcp"]).output().is_ok_and(|o| o.status.success());
    if !has_mcp {
        let why = format!("no mcp at {} (tests/setup.sh installs it, make test runs it)", python.display());
        skipped("the_python_sdk_client_lists_and_calls_every_tool_within_the_tokens_scopes", &why);
        return;
    }
    let h = published().await;
    for (token, scoped) in [(h.running.dev_token.clone(), false), (SCOPED.to_string(), true)] {
        let out = python_client(&h, &python, &token);
        assert!(out.status.success(), "mcp_client.py\n{}", support::text(&out));
        let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
        let tools: Vec<&str> = seen["tools"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
        assert_eq!(tools.len(), 7, "{tools:?}");
        assert_eq!(seen["calls"]["details"]["structured"]["version"], "2.0.0");
        check_answers("python", seen["calls"].as_object().unwrap(), scoped);
    }
    // No token where nothing is anonymous: the client fails to connect (401), and says so.
    let out = python_client(&h, &python, "");
    assert!(!out.status.success(), "{}", support::text(&out));
}

/// The Inspector's CLI: one process per method, its JSON on stdout.
fn inspector(h: &Harness, node_path: &Path, launcher: &Path, token: &str, args: &[&str]) -> std::process::Output {
    let url = format!("https://{}/mcp", h.host());
    let path = format!("{}:{}", node_path.display(), std::env::var("PATH").unwrap_or_default());
    tokio::task::block_in_place(|| {
        Command::new(node_path.join("node"))
            .arg(launcher)
            .args(["--cli", &url, "--transport", "http", "--header", &format!("Authorization: Bearer {token}")])
            .args(args)
            .env("PATH", path)
            .env("NODE_EXTRA_CA_CERTS", h.running.data_dir.join("ca.pem"))
            .output()
            .unwrap()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inspector_cli_lists_and_calls_every_tool_within_the_tokens_scopes() {
    let node_path = tools_dir().join("node/path");
    let launcher = tools_dir().join("inspector/node_modules/.bin/mcp-inspector");
    if !node_path.join("node").exists() || !launcher.exists() {
        let why = format!(
            "no Node 24 at {} or no MCP Inspector at {} (tests/setup.sh installs them, make test runs it)",
            node_path.display(),
            launcher.display()
        );
        skipped("the_inspector_cli_lists_and_calls_every_tool_within_the_tokens_scopes", &why);
        return;
    }
    let h = published().await;
    for (token, scoped) in [(h.running.dev_token.clone(), false), (SCOPED.to_string(), true)] {
        let out = inspector(&h, &node_path, &launcher, &token, &["--method", "tools/list"]);
        assert!(out.status.success(), "inspector tools/list\n{}", support::text(&out));
        let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(listed["tools"].as_array().unwrap().len(), 7, "{listed}");
        let mut seen = serde_json::Map::new();
        for call in calls().as_array().unwrap() {
            let (label, tool, arguments) = (call[0].as_str().unwrap(), call[1].as_str().unwrap(), &call[2]);
            let args = ["--method", "tools/call", "--tool-name", tool, "--tool-args-json", &arguments.to_string()];
            let out = inspector(&h, &node_path, &launcher, &token, &args);
            // The Inspector exits 5 for a result with isError; its JSON is on stdout either way.
            let result: Value = serde_json::from_slice(&out.stdout)
                .unwrap_or_else(|_| panic!("inspector {tool}: no JSON\n{}", support::text(&out)));
            let text: String =
                result["content"].as_array().into_iter().flatten().filter_map(|c| c["text"].as_str()).collect();
            seen.insert(label.into(), json!({"text": text, "isError": result["isError"]}));
        }
        check_answers("inspector", &seen, scoped);
    }
}

/// A client that sends a POST's headers and never its body is answered 400 once the body
/// deadline passes (API Gateway reads a whole body before it invokes a function; locally,
/// nothing may hold a handler waiting on a slow client).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_never_arrives_is_answered_400() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let h = support::Harness::start().await;
    let addr = h.running.registry_addr;
    let tls = support::load::tls_client(&h.running.data_dir.join("ca.pem"));
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let name = rustls::pki_types::ServerName::IpAddress(addr.ip().into());
    let mut stream = tokio_rustls::TlsConnector::from(tls).connect(name, tcp).await.unwrap();
    let head =
        format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    let started = std::time::Instant::now();
    let mut answer = vec![0u8; 512];
    let read = tokio::time::timeout(std::time::Duration::from_secs(60), stream.read(&mut answer)).await;
    let n = read.expect("an answer, not a connection held open").unwrap();
    let answer = String::from_utf8_lossy(&answer[..n]);
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    eprintln!("answered 400 after {:.1} s", started.elapsed().as_secs_f64());
    h.running.stop().await;
}
