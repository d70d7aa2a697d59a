//! Shared pieces of the benchmarks: a registry with plain HTTP beside its HTTPS, the registry
//! as `make dev` runs it (its own process), nginx serving a bucket directory as static files,
//! wrk runs and their latency distribution, and percentile arithmetic.

// Benchmark tooling: a failed step ends the run with a message saying which.
#![allow(clippy::unwrap_used)]

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use registry_local::{LocalOptions, Running};

pub mod cost;
pub mod latent;

/// A registry over `data_dir` with plain HTTP on an ephemeral port, configured by `settings`;
/// its embedded S3 as slow as `BENCH_S3_LATENCY` says (`aws`, or `MEDIAN_MS,P99_MS,MB_PER_S`:
/// `registry_local::latency`), at loopback speed without it.
pub async fn registry(data_dir: &Path, settings: &[(&str, &str)]) -> Running {
    let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let latency =
        std::env::var("BENCH_S3_LATENCY").ok().map(|m| registry_local::latency::S3Latency::parse(&m).unwrap());
    registry_local::start(LocalOptions {
        log_s3_requests: true,
        http_listen: Some(any),
        settings: settings.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect(),
        s3_latency: latency.map(std::sync::Arc::new),
        ..LocalOptions::ephemeral(data_dir)
    })
    .await
    .unwrap()
}

/// `terraform init` in `work` (its `main.tf`, its CLI config `cli.tfrc`, trusting `ca`), in a
/// clean environment so nothing of the caller's leaks in; how long it took and its stdout.
/// A failed init ends the run.
pub fn terraform_init(tf: &Path, work: &Path, ca: &Path) -> (Duration, String) {
    let started = std::time::Instant::now();
    let out = Command::new(tf)
        .args(["init", "-input=false", "-no-color"])
        .current_dir(work)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", work.join(".home"))
        .env("TF_CLI_CONFIG_FILE", work.join("cli.tfrc"))
        .env("SSL_CERT_FILE", ca)
        .env("TF_IN_AUTOMATION", "1")
        .env("CHECKPOINT_DISABLE", "1")
        .output()
        .unwrap();
    let elapsed = started.elapsed();
    assert!(out.status.success(), "terraform init in {}:\n{}", work.display(), support::text(&out));
    (elapsed, String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The registry-against-nginx `terraform init` benchmarks' two configurations, each a
/// (`main.tf`, CLI configuration) pair: `modules` modules `acme/mN/aws` 1.0.0 and `providers`
/// providers `example.com/acme/pN`, through the registry at `host` (the module protocol, the
/// network mirror, `token`), and through static files at `https://127.0.0.1:PORT` (module
/// archives by URL, the mirror at `/mirror/`).
pub fn init_configurations(
    host: &str,
    token: &str,
    port: u16,
    modules: usize,
    providers: usize,
) -> [(String, String); 2] {
    let blocks = |source: &dyn Fn(usize) -> String| -> String {
        (0..modules).map(|m| format!("module \"m{m}\" {{\n  {}\n}}\n", source(m))).collect()
    };
    let required: String =
        (0..providers).map(|p| format!("    p{p} = {{ source = \"example.com/acme/p{p}\" }}\n")).collect();
    let required = format!("terraform {{\n  required_providers {{\n{required}  }}\n}}\n");
    let via_registry =
        format!("{required}{}", blocks(&|m| format!("source = \"{host}/acme/m{m}/aws\"\n  version = \"1.0.0\"")));
    let via_files = format!(
        "{required}{}",
        blocks(&|m| format!("source = \"https://127.0.0.1:{port}/modules/acme/m{m}/aws/1.0.0.tar.gz\""))
    );
    let registry_rc = format!(
        "provider_installation {{\n  network_mirror {{\n    url = \"https://{host}/v1/mirror/\"\n  }}\n}}\n\
         credentials \"{host}\" {{\n  token = \"{token}\"\n}}\n"
    );
    let files_rc = format!(
        "provider_installation {{\n  network_mirror {{\n    url = \"https://127.0.0.1:{port}/mirror/\"\n  }}\n}}\n"
    );
    [(via_registry, registry_rc), (via_files, files_rc)]
}

/// `terraform init` of one of `init_configurations` in `work`: how long it took, having checked
/// that every module and provider was installed.
pub fn checked_init(tf: &Path, work: &Path, ca: &Path, modules: usize, providers: usize) -> Duration {
    let (elapsed, stdout) = terraform_init(tf, work, ca);
    let installed = stdout.matches("- Installed example.com/acme/").count();
    let listed = std::fs::read_to_string(work.join(".terraform/modules/modules.json")).unwrap_or_default();
    assert!(installed == providers && listed.matches("\"Key\":\"m").count() == modules, "{stdout}\n{listed}");
    elapsed
}

/// `registry-local serve` in its own process, as `make dev` runs it (so its memory and CPU are
/// its own): HTTPS on `addr`, the embedded S3 on the next port. Killed when dropped.
pub struct LocalProcess {
    pub child: Child,
    pub addr: SocketAddr,
    pub data_dir: PathBuf,
}

impl LocalProcess {
    /// Start `binary serve` over `data_dir` on a free pair of loopback ports and wait until it
    /// answers.
    pub fn start(binary: &Path, data_dir: &Path) -> LocalProcess {
        for _ in 0..20 {
            let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            if port == u16::MAX || TcpListener::bind(("127.0.0.1", port + 1)).is_err() {
                continue;
            }
            let addr: SocketAddr = ([127, 0, 0, 1], port).into();
            let log = std::fs::File::create(data_dir.join("registry-local.log")).unwrap();
            let mut child = Command::new(binary)
                .args(["serve", "--data-dir", &data_dir.display().to_string(), "--listen", &addr.to_string()])
                .env("RUST_LOG", "warn")
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .unwrap_or_else(|e| panic!("{}: {e}", binary.display()));
            let deadline = Instant::now() + Duration::from_secs(20);
            while Instant::now() < deadline {
                if child.try_wait().unwrap().is_some() {
                    break;
                }
                if data_dir.join("local.env").exists() && std::net::TcpStream::connect(addr).is_ok() {
                    return LocalProcess { child, addr, data_dir: data_dir.to_path_buf() };
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("registry-local did not start (log: {})", data_dir.join("registry-local.log").display());
    }

    /// `export NAME=value` from the `local.env` it wrote.
    pub fn env_value(&self, name: &str) -> String {
        let file = self.data_dir.join("local.env");
        let text = std::fs::read_to_string(&file).unwrap();
        let prefix = format!("export {name}=");
        text.lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .unwrap_or_else(|| panic!("{name} not in {}", file.display()))
            .into()
    }

    /// An S3 client with the publisher's key (what `aws s3 cp` with `local.env` uses).
    pub fn publisher_client(&self) -> aws_sdk_s3::Client {
        registry_local::publisher_client(&self.env_value("AWS_ENDPOINT_URL"), &self.env_value("AWS_SECRET_ACCESS_KEY"))
    }

    /// An S3 client with the key admin's key (`KEY_ADMIN_*` in `local.env`): signing keys.
    pub fn key_admin_client(&self) -> aws_sdk_s3::Client {
        registry_local::key_admin_client(
            &self.env_value("AWS_ENDPOINT_URL"),
            &self.env_value("KEY_ADMIN_SECRET_ACCESS_KEY"),
        )
    }

    /// The development token it wrote.
    pub fn dev_token(&self) -> String {
        std::fs::read_to_string(self.data_dir.join("dev-token")).unwrap().trim().to_string()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for LocalProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A process's resident memory now (`VmRSS`), KiB; `None` once it has exited.
pub fn rss_kib(pid: u32) -> Option<u64> {
    status_kib(pid, "VmRSS:")
}

/// The peak resident memory of a process's life (`VmHWM`), KiB.
pub fn hwm_kib(pid: u32) -> Option<u64> {
    status_kib(pid, "VmHWM:")
}

fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|l| l.strip_prefix(field)).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// nginx serving a bucket directory as static files over HTTPS (a leaf certificate from the
/// local registry's CA in `data_dir`): the bucket at `/`, and the network mirror as files at
/// `/mirror/` (the indexer's documents under `indexed/providers/`, the zips under
/// `providers/`). Stopped (SIGQUIT, so its worker goes too) when dropped.
pub struct Nginx {
    child: Child,
    pub port: u16,
}

impl Nginx {
    pub fn start(data_dir: &Path, bucket_root: &Path, work: &Path) -> Nginx {
        std::fs::create_dir_all(work).unwrap();
        let (cert, key) = registry_local::tls::write_leaf(data_dir, [127, 0, 0, 1].into(), work).unwrap();
        let tls = format!(" ssl;\n    ssl_certificate {};\n    ssl_certificate_key {}", cert.display(), key.display());
        Nginx::launch(&tls, bucket_root, work)
    }

    /// Over plain HTTP, for a front that adds what it adds (`LatencyProxy`).
    pub fn start_plain(bucket_root: &Path, work: &Path) -> Nginx {
        std::fs::create_dir_all(work).unwrap();
        Nginx::launch("", bucket_root, work)
    }

    fn launch(tls: &str, bucket_root: &Path, work: &Path) -> Nginx {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let conf = work.join("nginx.conf");
        let d = work.display();
        std::fs::write(
            &conf,
            format!(
                "worker_processes 1;\ndaemon off;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\nevents {{}}\n\
                 http {{\n  access_log off;\n  client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n\
                 fastcgi_temp_path {d}/fastcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
                 types {{ application/json json; application/zip zip; application/gzip gz; }}\n  sendfile on;\n\
                 server {{\n    listen 127.0.0.1:{port}{tls};\n\
                 root {root};\n\
                 location ~ ^/mirror/(.+\\.json)$ {{ alias {root}/indexed/providers/$1; }}\n\
                 location ~ ^/mirror/(.+\\.zip)$ {{ alias {root}/providers/$1; }}\n  }}\n}}\n",
                root = bucket_root.display()
            ),
        )
        .unwrap();
        let child = Command::new("nginx")
            .args(["-c", &conf.display().to_string(), "-e", &format!("{d}/error.log")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("nginx: {e} (apt-get install nginx-light)"));
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Nginx { child, port }
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGKILL would orphan the worker.
        let _ = Command::new("kill").args(["-QUIT", &self.child.id().to_string()]).status();
        let _ = self.child.wait();
    }
}

/// Latency percentiles and throughput of one wrk run.
#[derive(Debug, Clone, Copy, Default)]
pub struct Run {
    pub p50_us: f64,
    pub p99_us: f64,
    pub rps: f64,
    pub requests: u64,
    pub non_2xx: u64,
}

/// `wrk --latency` against `url`: `connections` connections on `threads` threads for `seconds`.
pub fn wrk(url: &str, headers: &[String], connections: u32, seconds: u32) -> Run {
    let threads = connections.min(2);
    let mut cmd = Command::new("wrk");
    cmd.args(["--latency", "-t", &threads.to_string(), "-c", &connections.to_string(), "-d", &format!("{seconds}s")]);
    for h in headers {
        cmd.args(["-H", h]);
    }
    let out = cmd.arg(url).output().unwrap_or_else(|e| panic!("wrk: {e} (apt-get install wrk)"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "wrk failed: {text}{}", String::from_utf8_lossy(&out.stderr));
    parse_wrk(&text)
}

fn parse_wrk(text: &str) -> Run {
    let mut run = Run::default();
    for line in text.lines().map(str::trim) {
        let mut words = line.split_whitespace();
        match (words.next(), words.next()) {
            (Some("50%"), Some(v)) => run.p50_us = micros(v),
            (Some("99%"), Some(v)) => run.p99_us = micros(v),
            (Some("Requests/sec:"), Some(v)) => run.rps = v.parse().unwrap_or(0.0),
            (Some(n), Some("requests")) => run.requests = n.parse().unwrap_or(0),
            (Some("Non-2xx"), _) => run.non_2xx = line.rsplit(' ').next().and_then(|n| n.parse().ok()).unwrap_or(0),
            _ => {}
        }
    }
    run
}

/// wrk prints `812.00us`, `1.23ms`, `2.00s`.
fn micros(v: &str) -> f64 {
    let split = v.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(v.len());
    let (n, unit) = v.split_at(split);
    let n: f64 = n.parse().unwrap_or(f64::NAN);
    match unit {
        "us" => n,
        "ms" => n * 1e3,
        "s" => n * 1e6,
        _ => f64::NAN,
    }
}

/// p50 and p99 in ms of `target` (path and query) on each of `servers` (plain HTTP), each the
/// median of three wrk runs with one connection; every answer must be 2xx.
pub fn p50_p99_ms(servers: &[&Running], target: &str, headers: &[String], seconds: u32) -> Vec<(f64, f64)> {
    servers
        .iter()
        .map(|running| {
            let url = format!("http://{}{target}", running.http_addr.expect("started with http_listen"));
            let runs: Vec<_> = (0..3).map(|_| wrk(&url, headers, 1, seconds)).collect();
            assert!(runs.iter().all(|r| r.non_2xx == 0), "{target}: {runs:?}");
            (
                median(runs.iter().map(|r| r.p50_us).collect()) / 1e3,
                median(runs.iter().map(|r| r.p99_us).collect()) / 1e3,
            )
        })
        .collect()
}

pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() { f64::NAN } else { v[v.len() / 2] }
}

/// `p` (0..=100) of `samples`, nearest rank.
/// The table of two side-by-side pairs (`times`: the first pair's baseline and variant, the
/// second pair's variant and baseline, as measured), printed baseline first in each pair, with
/// p50 and max and each variant's ratios to its baseline.
pub fn print_pairs(what: &str, rounds: usize, times: &mut [Vec<Duration>; 4], labels: [&str; 4]) {
    let s = |v: &mut Vec<Duration>, p| percentile(v, p).as_secs_f64();
    let stats: Vec<(f64, f64)> = times.iter_mut().map(|v| (s(v, 50.0), s(v, 100.0))).collect();
    let row = |i: usize, base: usize| {
        let ((p50, max), (b50, bmax)) = (stats[i], stats[base]);
        let ratio = if i == base { "1".to_string() } else { format!("{:.2}× / {:.2}×", p50 / b50, max / bmax) };
        println!("| {} | {rounds} | {p50:.2} s | {max:.2} s | {ratio} |", labels[i]);
    };
    println!("| {what} | runs | p50 | max | ratio p50 / max |");
    println!("| --- | --- | --- | --- | --- |");
    row(0, 0);
    row(1, 0);
    row(3, 3);
    row(2, 3);
}

pub fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    let rank = ((p / 100.0) * samples.len() as f64).ceil().max(1.0) as usize;
    samples[rank.min(samples.len()) - 1]
}

/// An HTTPS front (a leaf certificate from the local registry's CA in `data_dir`) for a plain
/// HTTP server on `upstream_port` (nginx), answering as slowly as S3 in AWS: each request
/// waits a first byte drawn from `latency`, and its body comes at the model's bandwidth
/// (`Paced`), the same model and the same rule as the embedded S3 (`registry_local::latency`).
/// Stopped when dropped.
pub struct LatencyProxy {
    pub port: u16,
    task: tokio::task::JoinHandle<()>,
}

impl LatencyProxy {
    pub async fn start(
        data_dir: &Path,
        upstream_port: u16,
        latency: std::sync::Arc<registry_local::latency::S3Latency>,
    ) -> LatencyProxy {
        use http_body_util::BodyExt;
        let tls = registry_local::tls::server_config(data_dir, [127, 0, 0, 1].into()).unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(tls);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let client: hyper_util::client::legacy::Client<_, http_body_util::Empty<bytes::Bytes>> =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new()).build_http();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    // Out of descriptors, say: not a busy loop.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let (acceptor, client, latency) = (acceptor.clone(), client.clone(), latency.clone());
                tokio::spawn(async move {
                    let handshake = tokio::time::timeout(Duration::from_secs(10), acceptor.accept(stream));
                    let Ok(Ok(stream)) = handshake.await else { return };
                    let service = hyper::service::service_fn(move |request: http::Request<hyper::body::Incoming>| {
                        let (client, latency) = (client.clone(), latency.clone());
                        async move {
                            tokio::time::sleep(latency.first_byte()).await;
                            let path = request.uri().path_and_query().map_or("/", |p| p.as_str());
                            let uri: http::Uri = format!("http://127.0.0.1:{upstream_port}{path}").parse().unwrap();
                            let mut forward = http::Request::builder().method(request.method()).uri(uri);
                            for (name, value) in request.headers() {
                                forward = forward.header(name, value);
                            }
                            let response = client.request(forward.body(http_body_util::Empty::new()).unwrap()).await?;
                            let paced = |body| registry_local::latency::Paced::new(body, latency.clone()).boxed();
                            Ok::<_, hyper_util::client::legacy::Error>(response.map(paced))
                        }
                    });
                    let builder = hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new());
                    let _ = builder.serve_connection(hyper_util::rt::TokioIo::new(stream), service).await;
                });
            }
        });
        LatencyProxy { port, task }
    }
}

impl Drop for LatencyProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_wrk_output() {
        let text = "  Latency Distribution\n     50%  812.00us\n     75%    1.00ms\n     99%    1.23ms\n  \
                    1000 requests in 1.00s, 1.00MB read\n  Non-2xx or 3xx responses: 7\nRequests/sec:   1234.50\n";
        let run = parse_wrk(text);
        assert_eq!((run.p50_us, run.p99_us, run.rps, run.non_2xx, run.requests), (812.0, 1230.0, 1234.5, 7, 1000));
        let mut samples: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(percentile(&mut samples, 99.0), Duration::from_millis(99));
        assert_eq!(percentile(&mut samples, 50.0), Duration::from_millis(50));
    }

    /// The benchmarks' `perf` profile inherits release's per-crate opt-levels, and a crate's own
    /// override wins over the profile's: every crate release names needs its own line at 3 in perf, or
    /// `make bench` measures it at release's size-first level.
    #[test]
    fn perf_puts_back_every_crate_release_sizes() {
        let manifest = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.toml")).unwrap();
        let crates = |profile: &str| -> Vec<String> {
            let prefix = format!("[profile.{profile}.package.");
            manifest.lines().filter_map(|l| l.strip_prefix(&prefix)?.strip_suffix(']').map(str::to_string)).collect()
        };
        let (release, perf) = (crates("release"), crates("perf"));
        assert!(!release.is_empty());
        for name in &release {
            assert!(perf.contains(name), "[profile.perf.package.{name}] opt-level = 3 is missing from Cargo.toml");
        }
    }
}
