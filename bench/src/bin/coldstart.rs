//! Cold start of each Lambda binary, through a minimal Lambda Runtime API emulator: spawn the
//! process as Lambda would (runtime API address, function name, region, credentials in the
//! environment), and time (a) exec to its first `GET /runtime/invocation/next` (init: config,
//! AWS SDK and TLS setup) and (b) from handing it the first event to its response (the first
//! request, including the first S3 connection). Each binary started `RUNS` times; p50 and p99.
//!
//! usage: coldstart BIN_DIR [RUNS]   (BIN_DIR holds the functions' binaries; COLD_ONLY=a,b: only those)

#![allow(clippy::unwrap_used)]

use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use registry_bench::percentile;
use tokio::sync::mpsc;

/// What the emulator saw of one process: when it first asked for an event, and the answer.
enum Seen {
    Next(Instant),
    Response(Instant, String),
    Error(String),
}

// Long on purpose: a benchmark reads top to bottom as the table it prints, setup to rows.
#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let bin_dir = PathBuf::from(args.get(1).expect("usage: coldstart BIN_DIR [RUNS]"));
    let runs: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(20);

    // Data for the functions that read S3: the embedded S3 of a local registry.
    let dir = support::TempDir::new("bench-coldstart");
    let local = registry_bench::registry(&dir.path().join("data"), &[]).await;
    let publisher = local.publisher_client();
    support::upload(
        publisher.clone(),
        "modules/acme/vpc/aws/1.0.0.tar.gz".into(),
        support::module_tar_gz(&[("main.tf", "#\n")]),
    )
    .await;
    let provider = "providers/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.1_linux_amd64.zip";
    support::upload(publisher.clone(), provider.into(), support::provider_zip("null", "3.2.1", "coldstart")).await;
    let secret = std::fs::read_to_string(local.data_dir.join("functions.secret")).unwrap();

    let api_event = |path: &str| {
        let mut e: serde_json::Value = serde_json::from_str(include_str!(
            "../../../functions/registry/tests/events/apigw_v2_module_versions.json"
        ))
        .unwrap();
        e["rawPath"] = path.into();
        e["requestContext"]["http"]["path"] = path.into();
        e["headers"]["authorization"] = format!("Bearer {}", local.dev_token).into();
        e.to_string()
    };
    // The MCP server: a tool call, POSTed as API Gateway sends it (the token store, the
    // catalog's index, its shard and totals read).
    let mcp_event = {
        let mut e: serde_json::Value = serde_json::from_str(&api_event("/mcp")).unwrap();
        e["requestContext"]["http"]["method"] = "POST".into();
        e["body"] = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "search_modules", "arguments": {"namespace": "acme"}}})
        .to_string()
        .into();
        e["isBase64Encoded"] = false.into();
        e["headers"]["content-type"] = "application/json".into();
        e.to_string()
    };
    let s3_event = serde_json::json!({"Records": [{
        "eventVersion": "2.1", "eventSource": "aws:s3", "awsRegion": "us-east-1", "eventTime": "2026-11-23T00:00:00.000Z",
        "eventName": "ObjectCreated:Put", "userIdentity": {"principalId": "AWS:AROAEXAMPLE:ci"},
        "requestParameters": {"sourceIPAddress": "127.0.0.1"}, "responseElements": {},
        "s3": {"s3SchemaVersion": "1.0", "configurationId": "c", "bucket": {"name": "registry", "arn": "arn:aws:s3:::registry"},
               "object": {"key": "modules/acme/vpc/aws/1.0.0.tar.gz", "size": 1, "eTag": "x", "sequencer": "01"}}}]})
    .to_string();
    // A pull record the puller finds absent (nothing to copy): its start, not an upstream's speed.
    let pull_key = "upstream/pulls/registry.terraform.io/hashicorp/null/3.2.1.json";
    let pull_event = s3_event.replace("modules/acme/vpc/aws/1.0.0.tar.gz", pull_key);
    let none: &[(&str, &str)] = &[];
    let functions = [
        ("discovery", api_event("/.well-known/terraform.json"), "modules.v1", none),
        ("modules", api_event("/v1/modules/acme/vpc/aws/versions"), "1.0.0", none),
        ("mirror", api_event("/v1/mirror/registry.terraform.io/hashicorp/null/index.json"), "3.2.1", none),
        // The registry's own providers: a provider not published (the token store and its
        // index read, then 404), as a first request may well be.
        (
            "providers",
            api_event("/v1/providers/acme/widget/versions"),
            "not found",
            &[("REGISTRY_HOSTNAME", "registry.example.com")][..],
        ),
        ("web", api_event("/v1/modules"), "acme/vpc/aws", none),
        // OCI: a module's tags (the token store and the module manifest read).
        ("oci", api_event("/v2/modules/acme/vpc/aws/tags/list"), "1.0.0", none),
        ("mcp", mcp_event, "acme/vpc/aws", none),
        ("indexer", s3_event, "unchanged", none),
        ("puller", pull_event, "copied", &[("REGISTRY_UPSTREAM_HOSTS", "registry.terraform.io")][..]),
    ];

    println!(
        "| function | binary size | init p50 / p99 | of which AWS config + S3 client p50 | first event p50 / p99 | exec to first answer p50 / p99 |"
    );
    println!("| --- | --- | --- | --- | --- | --- |");
    // COLD_ONLY=mcp,web: only these (a release build of just them).
    let only = std::env::var("COLD_ONLY").ok();
    let wanted = |name: &str| only.as_deref().is_none_or(|o| o.split(',').any(|n| n == name));
    for (name, event, expect, extra_env) in functions.into_iter().filter(|(name, ..)| wanted(name)) {
        let binary = bin_dir.join(name);
        let size = std::fs::metadata(&binary).map(|m| m.len()).unwrap_or(0);
        let (mut init, mut first, mut total, mut sdk_init) = (vec![], vec![], vec![], vec![]);
        for _ in 0..runs {
            let (seen_tx, mut seen) = mpsc::unbounded_channel();
            let api = emulator(event.clone(), seen_tx).await;
            let started = Instant::now();
            let mut child = std::process::Command::new(&binary)
                .env_clear()
                .env("AWS_LAMBDA_RUNTIME_API", api.to_string())
                .env("AWS_LAMBDA_FUNCTION_NAME", name)
                .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
                .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
                .env("AWS_LAMBDA_LOG_LEVEL", "INFO")
                .env("AWS_LAMBDA_LOG_FORMAT", "JSON")
                .env("AWS_LAMBDA_LOG_GROUP_NAME", format!("/aws/lambda/{name}"))
                .env("AWS_LAMBDA_LOG_STREAM_NAME", "bench")
                .env("AWS_REGION", registry_local::REGION)
                .env("AWS_ACCESS_KEY_ID", registry_local::embedded_s3::FUNCTIONS_ACCESS_KEY)
                .env("AWS_SECRET_ACCESS_KEY", secret.trim())
                .env("AWS_ENDPOINT_URL", local.s3_endpoint())
                .env("REGISTRY_BUCKET", registry_local::BUCKET)
                .env("REGISTRY_S3_FORCE_PATH_STYLE", "true")
                .envs(extra_env.iter().copied())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap_or_else(|e| panic!("{}: {e}", binary.display()));
            let mut next_at = None;
            let answered = tokio::time::timeout(Duration::from_secs(20), async {
                while let Some(s) = seen.recv().await {
                    match s {
                        Seen::Next(at) if next_at.is_none() => next_at = Some(at),
                        Seen::Next(_) => {}
                        Seen::Response(at, body) => return Ok((at, body)),
                        Seen::Error(body) => return Err(body),
                    }
                }
                Err("emulator closed".to_string())
            })
            .await;
            let (at, body) = answered
                .unwrap_or_else(|_| panic!("{name}: no answer in 20 s"))
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(body.contains(expect), "{name}: {body}");
            let next_at = next_at.unwrap();
            init.push(next_at - started);
            first.push(at - next_at);
            total.push(at - started);
            let _ = child.kill();
            let mut log = String::new();
            if let Some(mut out) = child.stdout.take() {
                use std::io::Read;
                let _ = out.read_to_string(&mut log);
            }
            let _ = child.wait();
            // The function's own account of init: `"config_us":…,"sdk_us":…` (absent for discovery).
            let field = |name: &str| {
                log.split(&format!("\"{name}\":"))
                    .nth(1)
                    .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next()?.parse::<u64>().ok())
            };
            if let Some(sdk) = field("sdk_us") {
                sdk_init.push(Duration::from_micros(sdk));
            }
        }
        let ms = |v: &mut Vec<Duration>, p| percentile(v, p).as_secs_f64() * 1e3;
        let sdk = if sdk_init.is_empty() { "none".to_string() } else { format!("{:.1} ms", ms(&mut sdk_init, 50.0)) };
        println!(
            "| {name} | {:.1} MB | {:.1} / {:.1} ms | {sdk} | {:.1} / {:.1} ms | {:.1} / {:.1} ms |",
            size as f64 / 1e6,
            ms(&mut init, 50.0),
            ms(&mut init, 99.0),
            ms(&mut first, 50.0),
            ms(&mut first, 99.0),
            ms(&mut total, 50.0),
            ms(&mut total, 99.0)
        );
    }
    local.stop().await;
}

/// A Runtime API that hands out `event` once and reports what the function does.
async fn emulator(event: String, seen: mpsc::UnboundedSender<Seen>) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let handed_out = Arc::new(Mutex::new(false));
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else { return };
            let _ = stream.set_nodelay(true);
            let (event, seen, handed_out) = (event.clone(), seen.clone(), handed_out.clone());
            tokio::spawn(async move {
                let service = service_fn(move |request: http::Request<hyper::body::Incoming>| {
                    let (event, seen, handed_out) = (event.clone(), seen.clone(), handed_out.clone());
                    async move {
                        let now = Instant::now();
                        let path = request.uri().path().to_string();
                        let body = request.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                        let text = String::from_utf8_lossy(&body).to_string();
                        let mut response = http::Response::new(Full::new(Bytes::new()));
                        if path.ends_with("/invocation/next") {
                            let _ = seen.send(Seen::Next(now));
                            if std::mem::replace(&mut *handed_out.lock().unwrap(), true) {
                                // One event per process: later polls wait until it is killed.
                                tokio::time::sleep(Duration::from_secs(3600)).await;
                            }
                            *response.body_mut() = Full::new(Bytes::from(event));
                            let h = response.headers_mut();
                            h.insert("lambda-runtime-aws-request-id", "req-1".parse().unwrap());
                            h.insert("lambda-runtime-deadline-ms", "99999999999999".parse().unwrap());
                            h.insert(
                                "lambda-runtime-invoked-function-arn",
                                "arn:aws:lambda:us-east-1:123456789012:function:f".parse().unwrap(),
                            );
                            h.insert("lambda-runtime-trace-id", "Root=1-0-0".parse().unwrap());
                        } else if path.ends_with("/response") {
                            let _ = seen.send(Seen::Response(now, text));
                            *response.status_mut() = http::StatusCode::ACCEPTED;
                        } else {
                            let _ = seen.send(Seen::Error(format!("{path}: {text}")));
                            *response.status_mut() = http::StatusCode::ACCEPTED;
                        }
                        Ok::<_, Infallible>(response)
                    }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}
