//! The monthly AWS bill of a described organisation, from the requests the benchmarks counted
//! (`aws_init` writes them: per `terraform init` and per publish), the public prices in
//! `bench/cost/aws-prices.json`, the organisation in `bench/cost/organisation.json`, and the
//! functions' memory as infra deploys it (`infra/variables.tf`'s defaults). Nothing here is a
//! measurement: it is arithmetic over counts that are, shown line by line so that a reader can
//! redo it with their own numbers (`cost COUNTS.json ORGANISATION.json`).
//!
//! Scaling: the counted init installed `init.modules` modules and `init.providers` providers;
//! requests of the modules family (and the modules function's invocations) scale with the
//! organisation's modules per init, the providers family (and the mirror's) with its providers
//! per init, the rest (discovery, the registry's own documents) once per init. Free tiers are
//! left out (a bill for an account that already uses them), except the 100 GB a month of data
//! transfer out that AWS gives every account. A GB is 10^9 bytes here (were AWS to count 2^30,
//! the transfer line would be 7% lower).

use serde_json::Value;

/// One line of the bill.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub what: String,
    /// How it was computed, in words and numbers.
    pub arithmetic: String,
    pub dollars: f64,
}

/// A month of bills: the registry's, and the archive downloads' transfer to the internet
/// (zero when the clients are in the bucket's region), and the idle month.
#[derive(Debug, Clone, PartialEq)]
pub struct Bill {
    pub lines: Vec<Line>,
    /// What a million registry requests cost on their own (API Gateway, Lambda, the manifest
    /// reads, logs), as the counted init made them.
    pub per_million_requests: f64,
    pub transfer: Line,
    pub idle: Vec<Line>,
}

impl Bill {
    pub fn total(&self) -> f64 {
        self.lines.iter().map(|l| l.dollars).sum()
    }

    pub fn idle_total(&self) -> f64 {
        self.idle.iter().map(|l| l.dollars).sum()
    }
}

/// What the deployment gives each function (MB).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Memory {
    pub read_mb: f64,
    pub indexer_mb: f64,
}

impl Memory {
    /// The defaults of `read_memory_mb` and `indexer_memory_mb` in infra's variables.
    pub fn from_variables(variables_tf: &str) -> Result<Memory, String> {
        Ok(Memory {
            read_mb: default_of(variables_tf, "read_memory_mb")?,
            indexer_mb: default_of(variables_tf, "indexer_memory_mb")?,
        })
    }
}

/// `default = N` of `variable "NAME"` in Terraform source.
fn default_of(tf: &str, name: &str) -> Result<f64, String> {
    let start = tf.find(&format!("variable \"{name}\"")).ok_or_else(|| format!("no variable {name}"))?;
    let block = &tf[start..];
    let block = &block[..block.find("\n}").unwrap_or(block.len())];
    block
        .lines()
        .find_map(|l| l.trim().strip_prefix("default").map(|v| v.trim_start_matches([' ', '='])))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| format!("variable {name} has no numeric default"))
}

fn num(v: &Value, path: &str) -> Result<f64, String> {
    path.split('.').try_fold(v, |v, k| v.get(k)).and_then(Value::as_f64).ok_or_else(|| format!("missing number {path}"))
}

/// The bill. `counts`: `aws_init`'s file; `prices` and `org`: the two JSON files.
pub fn bill(counts: &Value, prices: &Value, org: &Value, memory: Memory) -> Result<Bill, String> {
    let p = |k: &str| num(prices, &format!("{k}.price"));
    let o = |k: &str| num(org, k);
    let days = o("days_per_month")?;
    let inits = o("inits_per_day")? * days;
    let publishes = o("publishes_per_day")? * days;
    let (counted_modules, counted_providers) = (num(counts, "init.modules")?, num(counts, "init.providers")?);
    let module_scale = o("modules_per_init")? / counted_modules;
    let provider_scale = o("providers_per_init")? / counted_providers;
    let scale = |family: &str| match family {
        "module" => module_scale,
        "provider" => provider_scale,
        _ => 1.0,
    };
    let function_scale = |name: &str| match name {
        "modules" => module_scale,
        "mirror" | "providers" => provider_scale,
        _ => 1.0,
    };
    // What Lambda bills for `f`'s invocations, ms: each rounded up (`billed_ms`, as counted),
    // or, from counts that lack it, the mean rounded up.
    let billed_ms = |f: &Value| -> Result<f64, String> {
        match f.get("billed_ms").and_then(Value::as_f64) {
            Some(billed) => Ok(billed),
            None => Ok((num(f, "handler_ms")? / num(f, "invocations")?.max(1.0)).ceil() * num(f, "invocations")?),
        }
    };

    // Per init, scaled to the organisation's configuration.
    let init = &counts["init"]["counts"];
    let functions = init["functions"].as_object().ok_or("init.counts.functions")?;
    let (mut invocations, mut gb_seconds) = (0.0, 0.0);
    for (name, f) in functions {
        invocations += num(f, "invocations")? * function_scale(name);
        gb_seconds += billed_ms(f)? * function_scale(name) / 1000.0 * memory.read_mb / 1024.0;
    }
    // `scaled`: an init's counts scale to the organisation's configuration; a publish's do not.
    let s3 = |section: &Value, kinds: &[&str], scaled: bool| -> Result<(f64, f64), String> {
        let mut total = (0.0, 0.0);
        for r in section["s3"].as_array().ok_or("s3 counts")? {
            let (kind, family) = (r["kind"].as_str().unwrap_or(""), r["family"].as_str().unwrap_or(""));
            if kinds.contains(&kind) {
                let by = if scaled { scale(family) } else { 1.0 };
                total.0 += num(r, "requests")? * by;
                total.1 += num(r, "bytes_sent")? * by;
            }
        }
        Ok(total)
    };
    let (init_gets, _) = s3(init, &["get", "conditional-get"], true)?;
    let (init_downloads, _) = s3(init, &["presigned-get"], true)?;
    let (init_puts, _) = s3(init, &["put", "list"], true)?;

    // Per publish (no scaling: one module version).
    let publish = &counts["publish"]["counts"];
    let (pub_gets, _) = s3(publish, &["get", "conditional-get", "presigned-get"], false)?;
    let (pub_puts, _) = s3(publish, &["put", "list"], false)?;
    let indexer = &publish["functions"]["indexer"];
    let indexer_invocations = num(indexer, "invocations")? * publishes;
    let indexer_gb_s = billed_ms(indexer)? / 1000.0 * memory.indexer_mb / 1024.0;

    let requests = invocations * inits;
    let mut lines = vec![
        Line {
            what: "API Gateway (HTTP API)".into(),
            arithmetic: format!(
                "{} requests × ${}/million",
                round(requests),
                p("api_gateway_http_request_per_million")?
            ),
            dollars: requests / 1e6 * p("api_gateway_http_request_per_million")?,
        },
        Line {
            what: "Lambda requests".into(),
            arithmetic: format!(
                "{} invocations (+ {} indexer) × ${}/million",
                round(requests),
                round(indexer_invocations),
                p("lambda_request_per_million")?
            ),
            dollars: (requests + indexer_invocations) / 1e6 * p("lambda_request_per_million")?,
        },
        Line {
            what: "Lambda duration (arm64)".into(),
            arithmetic: format!(
                "{} GB-s read functions at {} MB + {} GB-s indexer at {} MB, × ${}/GB-s",
                round(gb_seconds * inits),
                memory.read_mb,
                round(indexer_gb_s * publishes),
                memory.indexer_mb,
                p("lambda_arm64_gb_second")?
            ),
            dollars: (gb_seconds * inits + indexer_gb_s * publishes) * p("lambda_arm64_gb_second")?,
        },
    ];
    let gets = (init_gets + init_downloads) * inits + pub_gets * publishes;
    let puts = init_puts * inits + pub_puts * publishes;
    lines.push(Line {
        what: "S3 GET and HEAD requests".into(),
        arithmetic: format!(
            "{} (manifests {:.1} and archives {:.1} per init, {:.1} per publish) × ${}/1,000",
            round(gets),
            init_gets,
            init_downloads,
            pub_gets,
            p("s3_get_per_thousand")?
        ),
        dollars: gets / 1e3 * p("s3_get_per_thousand")?,
    });
    lines.push(Line {
        what: "S3 PUT and LIST requests".into(),
        arithmetic: format!("{} ({:.1} per publish) × ${}/1,000", round(puts), pub_puts, p("s3_put_per_thousand")?),
        dollars: puts / 1e3 * p("s3_put_per_thousand")?,
    });
    let storage = storage_line(org, prices)?;
    lines.push(storage.clone());
    let log_gb = requests * o("log_bytes_per_request")? / 1e9;
    lines.push(Line {
        what: "CloudWatch Logs".into(),
        arithmetic: format!(
            "{log_gb:.2} GB ingested × ${}/GB, kept a month × ${}/GB-month",
            p("logs_ingestion_per_gb")?,
            p("logs_storage_per_gb_month")?
        ),
        dollars: log_gb * (p("logs_ingestion_per_gb")? + p("logs_storage_per_gb_month")?),
    });
    let alarms = alarms_lines(org, prices)?;
    lines.extend(alarms.iter().cloned());

    let per_request = p("api_gateway_http_request_per_million")? / 1e6
        + p("lambda_request_per_million")? / 1e6
        + gb_seconds / invocations * p("lambda_arm64_gb_second")?
        + init_gets / invocations * p("s3_get_per_thousand")? / 1e3
        + o("log_bytes_per_request")? / 1e9 * (p("logs_ingestion_per_gb")? + p("logs_storage_per_gb_month")?);
    let transfer = transfer_line(org, prices, inits)?;
    let idle = [vec![storage], alarms].concat();
    Ok(Bill { lines, per_million_requests: per_request * 1e6, transfer, idle })
}

/// The README's line: the month, the idle month and the transfer, from the same arithmetic
/// (a test holds the README to it).
pub fn readme_line(org: &Value, bill: &Bill) -> String {
    format!(
        "**What it costs:** {}: about ${} a month on AWS (${:.2} in an idle month), plus ${} of \
         data transfer if the CLI runs outside AWS (none from CI in the bucket's region); computed \
         from counted requests in [docs/PERFORMANCE.md](docs/PERFORMANCE.md#what-a-month-costs).",
        org["short"].as_str().unwrap_or("this organisation"),
        round(bill.total()),
        bill.idle_total(),
        round(bill.transfer.dollars)
    )
}

fn storage_line(org: &Value, prices: &Value) -> Result<Line, String> {
    let gb = num(org, "archive_gb")?;
    let price = num(prices, "s3_storage_gb_month.price")?;
    Ok(Line { what: "S3 storage".into(), arithmetic: format!("{gb} GB × ${price}/GB-month"), dollars: gb * price })
}

fn alarms_lines(org: &Value, prices: &Value) -> Result<Vec<Line>, String> {
    if org.get("monitoring").and_then(Value::as_bool) == Some(false) {
        return Ok(vec![]);
    }
    let metrics = num(org, "alarm_metrics")?;
    let price = num(prices, "cloudwatch_alarm_metric_month.price")?;
    let dashboard = num(prices, "cloudwatch_dashboard_month.price")?;
    Ok(vec![
        Line {
            what: "CloudWatch alarms".into(),
            arithmetic: format!("{metrics} alarm metrics × ${price}"),
            dollars: metrics * price,
        },
        Line { what: "CloudWatch dashboard".into(), arithmetic: format!("1 × ${dashboard}"), dollars: dashboard },
    ])
}

/// The archives' bytes to the internet: the same for any registry that keeps them in AWS, and
/// nothing when the clients (CI runners) are in the bucket's region.
fn transfer_line(org: &Value, prices: &Value, inits: f64) -> Result<Line, String> {
    let per_init_gb = (num(org, "modules_per_init")? * num(org, "module_archive_kb")? * 1e3
        + num(org, "providers_per_init")? * num(org, "provider_zip_mb")? * 1e6)
        / 1e9;
    let gb = per_init_gb * inits;
    let free = num(prices, "transfer_out_free_gb_month.price")?;
    let mut left = (gb - free).max(0.0);
    let mut dollars = 0.0;
    for tier in prices["transfer_out_tiers"]["price"].as_array().ok_or("transfer_out_tiers.price")? {
        let (up_to, price) = (num(tier, "up_to_gb")?, num(tier, "per_gb")?);
        let here = left.min(up_to);
        dollars += here * price;
        left -= here;
    }
    Ok(Line {
        what: "Data transfer out to the internet (archive downloads)".into(),
        arithmetic: format!("{} GB ({per_init_gb:.3} GB per init), first {free} GB free, then by tier", round(gb)),
        dollars,
    })
}

fn round(n: f64) -> String {
    let n = n.round() as u64;
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The organisation's alarm count is what infra/ deploys with monitoring on: each
    /// function's errors and throttles, each dead-letter queue, and the 5xx rate's two metrics.
    #[test]
    fn the_alarm_count_is_infras() {
        let org: Value = serde_json::from_str(&std::fs::read_to_string("cost/organisation.json").unwrap()).unwrap();
        let functions = std::fs::read_dir("../functions")
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.join("src/main.rs").is_file() && !p.ends_with("local"))
            .count();
        let alarms = std::fs::read_to_string("../infra/alarms.tf").unwrap();
        let queues = alarms.split("dead_letter_queues = {").nth(1).unwrap().split('}').next().unwrap();
        let queues = queues.lines().filter(|l| l.contains('=')).count();
        assert_eq!(org["alarm_metrics"], json!(2 * functions + queues + 2), "bench/cost/organisation.json");
    }

    fn prices() -> Value {
        json!({
            "api_gateway_http_request_per_million": {"price": 1.0},
            "lambda_request_per_million": {"price": 0.2},
            "lambda_arm64_gb_second": {"price": 0.0000133334},
            "s3_get_per_thousand": {"price": 0.0004},
            "s3_put_per_thousand": {"price": 0.005},
            "s3_storage_gb_month": {"price": 0.023},
            "logs_ingestion_per_gb": {"price": 0.5},
            "logs_storage_per_gb_month": {"price": 0.03},
            "cloudwatch_alarm_metric_month": {"price": 0.1},
            "cloudwatch_dashboard_month": {"price": 3.0},
            "transfer_out_free_gb_month": {"price": 100.0},
            "transfer_out_tiers": {"price": [{"up_to_gb": 10240.0, "per_gb": 0.09}, {"up_to_gb": 40960.0, "per_gb": 0.085}]}
        })
    }

    fn org() -> Value {
        json!({"days_per_month": 30, "inits_per_day": 1000, "modules_per_init": 4, "providers_per_init": 2,
               "publishes_per_day": 10, "archive_gb": 100, "log_bytes_per_request": 1000,
               "alarm_metrics": 20, "module_archive_kb": 50, "provider_zip_mb": 10})
    }

    fn counts() -> Value {
        // 2 modules and 1 provider counted: 2 modules invocations of 10 ms, 1 mirror of 20 ms, 1
        // discovery of 0.4 ms (billed 1 ms); 2 manifest GETs per module, 1 per provider, 1 token
        // read. A publish: 2 indexer invocations, billed 101 ms in all.
        json!({
            "init": {"modules": 2, "providers": 1, "counts": {
                "functions": {"modules": {"invocations": 2, "handler_ms": 20}, "mirror": {"invocations": 1, "handler_ms": 20},
                              "discovery": {"invocations": 1, "handler_ms": 0.4}},
                "s3": [{"kind": "get", "family": "module", "requests": 4, "bytes_sent": 100},
                       {"kind": "get", "family": "provider", "requests": 1, "bytes_sent": 100},
                       {"kind": "conditional-get", "family": "other", "requests": 1, "bytes_sent": 0},
                       {"kind": "presigned-get", "family": "module", "requests": 2, "bytes_sent": 1000}]}},
            "publish": {"modules": 1, "counts": {
                "functions": {"indexer": {"invocations": 2, "handler_ms": 99.5, "billed_ms": 101}},
                "s3": [{"kind": "put", "family": "module", "requests": 5, "bytes_sent": 0},
                       {"kind": "get", "family": "module", "requests": 7, "bytes_sent": 10}]}}
        })
    }

    #[test]
    fn each_line_scales_the_counted_init_to_the_organisation() {
        let memory = Memory { read_mb: 1024.0, indexer_mb: 2048.0 };
        let bill = bill(&counts(), &prices(), &org(), memory).unwrap();
        let dollars = |what: &str| bill.lines.iter().find(|l| l.what.starts_with(what)).unwrap().dollars;
        let inits = 30_000.0;
        // Invocations per init: modules 2 × (4/2) = 4, mirror 1 × 2 = 2, discovery 1: 7.
        assert!((dollars("API Gateway") - 7.0 * inits / 1e6).abs() < 1e-9);
        assert!((dollars("Lambda requests") - (7.0 * inits + 600.0) / 1e6 * 0.2).abs() < 1e-9);
        // GB-s per init at 1 GB: 4 × 0.010 + 2 × 0.020 + 1 × 0.001; the indexer 0.101 s at 2 GB.
        let gb_s = 0.081 * inits + 0.202 * 300.0;
        assert!((dollars("Lambda duration") - gb_s * 0.0000133334).abs() < 1e-9);
        // GETs per init: 4 × 2 (modules) + 1 × 2 (provider) + 1 + 2 × 2 archives = 15; 7 per publish.
        assert!((dollars("S3 GET") - (15.0 * inits + 7.0 * 300.0) / 1e3 * 0.0004).abs() < 1e-9);
        assert!((dollars("S3 PUT") - 5.0 * 300.0 / 1e3 * 0.005).abs() < 1e-9);
        assert!((dollars("S3 storage") - 2.3).abs() < 1e-9);
        assert!((dollars("CloudWatch Logs") - 7.0 * inits * 1000.0 / 1e9 * 0.53).abs() < 1e-9);
        assert!((dollars("CloudWatch alarms") - 2.0).abs() < 1e-9);
        // Transfer: (4 × 50 KB + 2 × 10 MB) per init = 0.0202 GB × 30,000 = 606 GB, 506 billed.
        assert!((bill.transfer.dollars - 506.0 * 0.09).abs() < 1e-6);
        assert!((bill.idle_total() - (2.3 + 2.0 + 3.0)).abs() < 1e-9);
        // Per request: $1 + $0.20 per million, 0.081/7 GB-s, 11/7 manifest GETs, 1 KB of logs.
        let per_request = 1.2e-6 + 0.081 / 7.0 * 0.0000133334 + 11.0 / 7.0 * 0.0000004 + 1e-6 * 0.53;
        assert!((bill.per_million_requests - per_request * 1e6).abs() < 1e-9);
        assert!((bill.total() - bill.lines.iter().map(|l| l.dollars).sum::<f64>()).abs() < 1e-12);
    }

    #[test]
    fn transfer_crosses_its_tiers_and_monitoring_off_drops_the_alarms() {
        let mut org = org();
        org["provider_zip_mb"] = json!(1000.0); // 2 GB per init: 60,000 GB a month
        org["monitoring"] = json!(false);
        let memory = Memory { read_mb: 256.0, indexer_mb: 512.0 };
        let bill = bill(&counts(), &prices(), &org, memory).unwrap();
        let gb = 30_000.0 * (4.0 * 50e3 + 2.0 * 1e9) / 1e9 - 100.0;
        let expected = 10240.0 * 0.09 + 40960.0 * 0.085; // the tiers listed end at 50 TB
        assert!(gb > 10240.0 + 40960.0);
        assert!((bill.transfer.dollars - expected).abs() < 1e-6);
        assert!(bill.lines.iter().all(|l| !l.what.starts_with("CloudWatch alarms")));
        assert!((bill.idle_total() - 2.3).abs() < 1e-9);
    }

    #[test]
    fn memory_comes_from_the_variables_defaults() {
        let tf = "variable \"read_memory_mb\" {\n  type = number\n  default     = 256\n}\n\
                  variable \"indexer_memory_mb\" {\n  default = 512\n  validation {}\n}\n";
        assert_eq!(Memory::from_variables(tf).unwrap(), Memory { read_mb: 256.0, indexer_mb: 512.0 });
        assert!(Memory::from_variables("variable \"read_memory_mb\" {\n}\n").is_err());
        assert_eq!(round(1234567.4), "1,234,567");
    }

    /// The README's cost line is what `cost` computes from the committed counts, prices and
    /// organisation (`make bench` rewrites the counts; rerun `cost` and paste its line).
    #[test]
    fn the_readme_shows_the_bill_of_the_committed_counts() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let read = |path: &str| std::fs::read_to_string(root.join(path)).unwrap();
        let json = |path: &str| serde_json::from_str::<Value>(&read(path)).unwrap();
        let (counts, prices, org) =
            (json("bench/cost/counts.json"), json("bench/cost/aws-prices.json"), json("bench/cost/organisation.json"));
        let memory = Memory::from_variables(&read("infra/variables.tf")).unwrap();
        let line = readme_line(&org, &bill(&counts, &prices, &org, memory).unwrap());
        assert!(read("README.md").contains(&line), "README.md should carry, as `cost` prints it:\n{line}");
    }

    #[test]
    fn a_missing_input_is_named() {
        let mut org = org();
        org.as_object_mut().unwrap().remove("inits_per_day");
        let error = bill(&counts(), &prices(), &org, Memory { read_mb: 1.0, indexer_mb: 1.0 }).unwrap_err();
        assert_eq!(error, "missing number inits_per_day");
    }
}
