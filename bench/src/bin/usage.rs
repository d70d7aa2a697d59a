//! Download counts: what the usage function's work costs, from its own requests and durations.
//! Batches of download records, as a CloudWatch Logs subscription delivers them, of four
//! shapes (from one line naming one module, as a quiet registry's are, to a thousand lines
//! naming fifty), each folded by the usage function's code (`registry::usage::fold_event`) into
//! documents that already hold 90 days of history, against an in-memory bucket with S3's
//! latency on every request (`registry_bench::latent`). Per batch: its storage requests by
//! method and its time; then the AWS bill per million downloads of each shape, with the prices
//! of bench/cost/aws-prices.json and the usage function's memory from infra/main.tf.
//!
//! usage: usage [BATCHES]

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Instant;

use registry::address::ModuleAddress;
use registry::storage::MemoryStorage;
use registry::usage::{Batch, Counted, Download, LogEvent, Settings, Via};
use registry_bench::latent::Latent;
use registry_local::latency::S3Latency;
use serde_json::Value;

/// Bytes CloudWatch Logs bills per event beyond its message.
const EVENT_OVERHEAD_BYTES: usize = 26;
/// Versions, callers and days of history each module's document holds before the batches.
const HISTORY: (usize, usize, i64) = (10, 5, 90);

fn module(i: usize) -> Counted {
    Counted::Module(ModuleAddress::parse("platform", &format!("module{i}"), "aws").unwrap())
}

fn line(i: usize, version: usize, caller: usize) -> String {
    let version = registry::address::parse_version(&format!("1.{version}.0")).unwrap();
    Download::new(module(i), &version, Via::ModulesV1, &format!("token ci-{caller}")).line()
}

/// A batch of `lines` records spread over `modules` modules, at `at` (Unix seconds).
fn batch(stream: &str, lines: usize, modules: usize, at: i64) -> Batch {
    let log_events = (0..lines)
        .map(|n| LogEvent {
            id: format!("{stream}-{n}"),
            timestamp: at * 1000,
            message: line(n % modules, n % 10, n % 7),
        })
        .collect();
    Batch {
        message_type: "DATA_MESSAGE".into(),
        log_group: "/aws/lambda/registry-modules".into(),
        log_stream: stream.into(),
        log_events,
    }
}

/// 90 days of history in every module's document: each day, each version downloaded by each caller.
async fn history(memory: &MemoryStorage, modules: usize, now: i64) {
    let (versions, callers, days) = HISTORY;
    // Oldest first, each day's batch folded on its day (a batch over a day old is refused).
    for day in (0..days).rev() {
        let at = now - day * 86_400;
        let lines: Vec<LogEvent> = (0..modules)
            .flat_map(|m| (0..versions).flat_map(move |v| (0..callers).map(move |c| (m, v, c))))
            .enumerate()
            .map(|(n, (m, v, c))| LogEvent { id: format!("{day}-{n}"), timestamp: at * 1000, message: line(m, v, c) })
            .collect();
        let batch = Batch { log_events: lines, ..batch(&format!("history-{day}"), 0, 1, at) };
        registry::usage::fold_batch(memory, &batch, Settings::default(), at).await.unwrap();
    }
}

fn price(prices: &Value, name: &str) -> f64 {
    prices[name]["price"].as_f64().unwrap_or_else(|| panic!("no price {name}"))
}

/// The usage function's memory as infra/main.tf deploys it (`usage = { memory = N, … }`).
fn usage_memory_mb() -> f64 {
    let main = std::fs::read_to_string("infra/main.tf").unwrap();
    let line = main.lines().find(|l| l.trim_start().starts_with("usage = { memory =")).expect("usage in infra/main.tf");
    line.split("memory =").nth(1).unwrap().split(',').next().unwrap().trim().parse().unwrap()
}

#[tokio::main]
async fn main() {
    let batches: usize = std::env::args().nth(1).map_or(20, |n| n.parse().unwrap());
    let prices: Value = serde_json::from_str(&std::fs::read_to_string("bench/cost/aws-prices.json").unwrap()).unwrap();
    let memory_gb = usage_memory_mb() / 1024.0;
    let latency = Arc::new(S3Latency::aws());
    let now = registry::clock::now_unix();
    let (versions, callers, days) = HISTORY;
    println!(
        "Each module's document holds {days} days of {versions} versions downloaded by {callers} callers a day before the \
         batches; every storage request waits S3's latency ({latency}); the usage function has {} MB; {batches} batches \
         a shape.\n",
        usage_memory_mb()
    );
    println!(
        "| batch | storage requests a batch | time a batch p50 / max | document | per million downloads: Lambda | S3 | \
         CloudWatch Logs ingestion | total |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    for (lines, modules) in [(1, 1), (10, 5), (100, 20), (1000, 50)] {
        let memory = Arc::new(MemoryStorage::new());
        history(&memory, modules, now).await;
        let document = memory.peek(&module(0).key()).unwrap().len();
        let storage = Latent::new(memory.clone(), latency.clone(), |_| "usage document");
        let mut times = Vec::new();
        let mut line_bytes = 0;
        for b in 0..batches {
            let batch = batch(&format!("bench-{lines}-{b}"), lines, modules, now);
            line_bytes = batch.log_events.iter().map(|e| e.message.len()).sum::<usize>() / lines;
            let event = batch.encode();
            let started = Instant::now();
            let folded = registry::usage::fold_event(&storage, &event, Settings::default(), now).await.unwrap();
            times.push(started.elapsed().as_secs_f64() * 1000.0);
            assert_eq!((folded.downloads, folded.written), (lines, modules));
        }
        let requests = storage.requests();
        let per_batch = |method: &str| requests.get(method).copied().unwrap_or(0) as f64 / batches as f64;
        let (gets, puts) = (per_batch("GET"), per_batch("PUT"));
        let max = times.iter().copied().fold(0.0, f64::max);
        let p50 = registry_bench::median(times);
        let invocations = 1e6 / lines as f64;
        // Lambda bills each invocation's duration rounded up to the millisecond.
        let lambda = invocations * price(&prices, "lambda_request_per_million") / 1e6
            + invocations * (p50.ceil() / 1000.0) * memory_gb * price(&prices, "lambda_arm64_gb_second");
        let s3 = invocations
            * (gets * price(&prices, "s3_get_per_thousand") + puts * price(&prices, "s3_put_per_thousand"))
            / 1000.0;
        let logs = 1e6 * (line_bytes + EVENT_OVERHEAD_BYTES) as f64 / 1e9 * price(&prices, "logs_ingestion_per_gb");
        println!(
            "| {lines} line{} naming {modules} module{} | {gets:.0} GET, {puts:.0} PUT | {p50:.0} / {max:.0} ms | {:.1} KB | \
             ${lambda:.2} | ${s3:.2} | ${logs:.2} ({line_bytes} bytes a line) | **${:.2}** |",
            if lines == 1 { "" } else { "s" },
            if modules == 1 { "" } else { "s" },
            document as f64 / 1e3,
            lambda + s3 + logs
        );
    }
    println!(
        "\nA read function's own cost per download is one more line in its log (counted above as ingestion); it waits \
         for nothing."
    );
}
