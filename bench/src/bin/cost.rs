//! The monthly AWS bill from the counts `aws_init` recorded (`registry_bench::cost` says how):
//! printed as the tables in docs/PERFORMANCE.md, and the one line the README shows.
//!
//! usage: cost [COUNTS_JSON] [ORGANISATION_JSON]
//! (defaults: bench/cost/counts.json, bench/cost/organisation.json; prices from
//! bench/cost/aws-prices.json, memory from infra/variables.tf)

#![allow(clippy::unwrap_used)]

use registry_bench::cost::{Memory, bill, readme_line};
use serde_json::Value;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let read = |path: &str| -> Value {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e} (run aws_init first?)"));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
    };
    let counts = read(args.get(1).map_or("bench/cost/counts.json", String::as_str));
    let org = read(args.get(2).map_or("bench/cost/organisation.json", String::as_str));
    let prices = read("bench/cost/aws-prices.json");
    let memory = Memory::from_variables(&std::fs::read_to_string("infra/variables.tf").unwrap()).unwrap();
    let bill = bill(&counts, &prices, &org, memory).unwrap_or_else(|e| panic!("{e}"));

    println!("{}\n", org["described"].as_str().unwrap_or("(no description)"));
    println!(
        "Counts from `aws_init` at {} (S3 latency: {}); prices: {} ({}).\n",
        counts["measured"].as_str().unwrap_or("?"),
        counts["latency"].as_str().unwrap_or("?"),
        prices["region"].as_str().unwrap_or("?"),
        prices["as_of"].as_str().unwrap_or("?")
    );
    println!("| per month | arithmetic | cost |\n| --- | --- | --- |");
    for line in &bill.lines {
        println!("| {} | {} | ${:.2} |", line.what, line.arithmetic, line.dollars);
    }
    println!("| **total** | | **${:.2}** |", bill.total());
    let t = &bill.transfer;
    println!(
        "\nIf the clients are outside AWS: {} — {}: ${:.2} more (in the bucket's region: $0).",
        t.what, t.arithmetic, t.dollars
    );
    println!(
        "\nA million registry requests on their own (API Gateway, Lambda, the manifest reads, logs): ${:.2}.",
        bill.per_million_requests
    );
    println!("\n| idle month | arithmetic | cost |\n| --- | --- | --- |");
    for line in &bill.idle {
        println!("| {} | {} | ${:.2} |", line.what, line.arithmetic, line.dollars);
    }
    println!("| **total** | | **${:.2}** |", bill.idle_total());
    println!("\nThe README's line:\n\n{}", readme_line(&org, &bill));
}
