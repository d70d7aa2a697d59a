//! The MCP server: what one tool call costs, from its own storage requests and time. A
//! catalog of 20 namespaces × 10 modules (two versions each, with READMEs and inputs) and a
//! provider, indexed into an in-memory bucket with S3's latency on every request
//! (`registry_bench::latent`); each tool called through the MCP function's handler (`POST
//! /mcp`), cold (a new function instance: nothing cached) and warm (the same instance again:
//! each document revalidated, as with the default TTL of 0). Per call: storage requests, p50
//! time, the answer's size, and the AWS bill per million calls with the prices of
//! bench/cost/aws-prices.json and the read functions' memory (`read_memory_mb`'s default).
//!
//! usage: mcp [CALLS]

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Instant;

use registry::index::{Indexer, Limits};
use registry::router::Service;
use registry::storage::MemoryStorage;
use registry::{App, Config, Request};
use registry_bench::latent::Latent;
use registry_local::latency::S3Latency;
use serde_json::{Value, json};

const NAMESPACES: usize = 20;
const MODULES: usize = 10;
/// The read functions' memory, infra's `read_memory_mb` default.
const MEMORY_MB: f64 = 256.0;
/// A request's log line and API Gateway's access log line, as the cost model counts them.
const LOG_BYTES: f64 = 1000.0;

fn price(prices: &Value, name: &str) -> f64 {
    prices[name]["price"].as_f64().unwrap_or_else(|| panic!("no price {name}"))
}

async fn published() -> Arc<MemoryStorage> {
    let memory = Arc::new(MemoryStorage::new());
    let indexer = Indexer::new(memory.as_ref(), Limits::default());
    let readme = format!("# Module\n\nA network module with subnets.\n\n{}", "Some more documentation.\n".repeat(200));
    let inputs: String = (0..30)
        .map(|i| {
            format!(
                "variable \"input_{i}\" {{\n  type = string\n  description = \"Input {i}.\"\n  default = \"x\"\n}}\n"
            )
        })
        .collect();
    for n in 0..NAMESPACES {
        for m in 0..MODULES {
            for (v, extra) in [("1.0.0", "variable \"legacy\" {}\n"), ("2.0.0", "variable \"region\" {}\n")] {
                let main = format!("{inputs}{extra}output \"id\" {{\n  value = 1\n}}\n");
                let archive = registry::testing::module_tar_gz(&[("README.md", &readme), ("main.tf", &main)]);
                let key = format!("modules/team{n:02}/network{m}/aws/{v}.tar.gz");
                memory.insert(&key, archive);
                indexer.on_object_changed(&key).await.unwrap();
            }
        }
    }
    memory.insert("indexed/providers/registry.terraform.io/hashicorp/null/index.json", r#"{"versions":{"3.2.1":{}}}"#);
    memory.insert(
        "indexed/providers/registry.terraform.io/hashicorp/null/3.2.1.json",
        r#"{"archives":{"linux_amd64":{"url":"terraform-provider-null_3.2.1_linux_amd64.zip","hashes":["h1:x="]}}}"#,
    );
    memory
}

fn call(tool: &str, arguments: Value) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}})
        .to_string()
        .into_bytes()
}

#[tokio::main]
async fn main() {
    let calls: usize = std::env::args().nth(1).map_or(20, |n| n.parse().unwrap());
    let prices: Value = serde_json::from_str(&std::fs::read_to_string("bench/cost/aws-prices.json").unwrap()).unwrap();
    let latency = Arc::new(S3Latency::aws());
    let memory = published().await;
    let token = "trg_bench_mcp_token_0123456789abcdef0123";
    let record = registry::auth::manage::record("bench", token, vec!["*".into()], vec!["*".into()], None);
    registry::auth::manage::upsert(memory.as_ref(), record).await.unwrap();
    println!(
        "{NAMESPACES} namespaces × {MODULES} modules, two versions each (31 inputs, a 5 KB README); every storage request \
         waits S3's latency ({latency}); {calls} calls a row; the function at {MEMORY_MB} MB.\n"
    );
    println!(
        "| tool call | cache | storage requests a call | time p50 / max | answer | per million calls: Lambda | S3 | API Gateway + logs | total |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    let rows = [
        ("tools/list", json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string().into_bytes()),
        ("search_modules, one word", call("search_modules", json!({"query": "network3"}))),
        ("search_modules, one namespace", call("search_modules", json!({"namespace": "team07"}))),
        ("get_module_details", call("get_module_details", json!({"module": "team07/network3/aws"}))),
        (
            "get_module_details, a version",
            call("get_module_details", json!({"module": "team07/network3/aws", "version": "1.0.0"})),
        ),
        ("list_module_versions", call("list_module_versions", json!({"module": "team07/network3/aws"}))),
        (
            "compare_module_versions",
            call("compare_module_versions", json!({"module": "team07/network3/aws", "from": "1.0.0", "to": "2.0.0"})),
        ),
        ("get_module_usage", call("get_module_usage", json!({"module": "team07/network3/aws"}))),
        (
            "get_provider_details",
            call("get_provider_details", json!({"provider": "registry.terraform.io/hashicorp/null"})),
        ),
    ];
    let authorization = format!("Bearer {token}");
    let gb = MEMORY_MB / 1024.0;
    let per_call = price(&prices, "lambda_request_per_million") / 1e6
        + price(&prices, "api_gateway_http_request_per_million") / 1e6
        + LOG_BYTES / 1e9 * price(&prices, "logs_ingestion_per_gb");
    for (label, body) in rows {
        for warm in [false, true] {
            let instance = || {
                let storage = Latent::new(memory.clone(), latency.clone(), |_| "none");
                App::builder(Config::new("bucket"), storage).services(&[Service::Mcp]).build().unwrap()
            };
            let request = Request::new(&http::Method::POST, "/mcp").body(&body).authorization(Some(&authorization));
            // Warm: one instance that has answered this call once (and read the token store).
            let kept = instance();
            if warm {
                assert_eq!(kept.handle(&request).await.status, 200);
            }
            let (mut times, mut requests, mut size) = (Vec::new(), 0usize, 0usize);
            for _ in 0..calls {
                let fresh;
                let app = if warm {
                    &kept
                } else {
                    fresh = instance();
                    &fresh
                };
                let before: usize = app.storage().requests().values().sum();
                let started = Instant::now();
                let reply = app.handle(&request).await;
                times.push(started.elapsed().as_secs_f64() * 1000.0);
                requests += app.storage().requests().values().sum::<usize>() - before;
                assert_eq!(reply.status, 200, "{label}: {}", String::from_utf8_lossy(&reply.body));
                let answer: Value = serde_json::from_slice(&reply.body).unwrap();
                assert!(answer["result"]["isError"] != true && answer.get("error").is_none(), "{label}: {answer}");
                size = reply.body.len();
            }
            let max = times.iter().copied().fold(0.0, f64::max);
            let p50 = registry_bench::median(times);
            let gets = requests as f64 / calls as f64;
            // Lambda bills each invocation's duration rounded up to the millisecond.
            let lambda = 1e6 * (p50.ceil() / 1000.0) * gb * price(&prices, "lambda_arm64_gb_second");
            let s3 = 1e6 * gets * price(&prices, "s3_get_per_thousand") / 1000.0;
            let fixed = 1e6 * per_call;
            println!(
                "| {label} | {} | {gets:.1} GET | {p50:.1} / {max:.1} ms | {:.1} KB | ${lambda:.2} | ${s3:.2} | ${fixed:.2} | **${:.2}** |",
                if warm { "warm" } else { "cold" },
                size as f64 / 1e3,
                lambda + s3 + fixed
            );
        }
    }
    println!(
        "\nPer call besides: API Gateway's $1 a million requests, Lambda's $0.20 a million invocations, and about {LOG_BYTES} \
         bytes of log (the function's line and API Gateway's access log), in the column before the total."
    );
}
