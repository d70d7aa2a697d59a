//! A bounded load generator for the local registry: many keep-alive HTTPS connections, each
//! sending GETs round the given paths until a deadline (benchmarks) or until what it races
//! against is done (tests), recording every answer's status and latency and every socket
//! error. Loopback only. Used by the short race test in `make test` and by `make bench`'s
//! load run.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;

/// What a load run saw.
#[derive(Debug, Default, Clone)]
pub struct LoadReport {
    /// Answers, by status.
    pub statuses: BTreeMap<u16, u64>,
    /// Connections that failed or broke (each one is reopened).
    pub socket_errors: u64,
    /// Latency of every answer, in microseconds, sorted.
    pub latencies_us: Vec<u32>,
    /// The same, by path.
    pub by_path: BTreeMap<String, Vec<u32>>,
    /// Seconds the run lasted.
    pub seconds: f64,
    /// The first few answers that were not 2xx (status, path, body), to say what went wrong.
    pub failures: Vec<(u16, String, String)>,
}

impl LoadReport {
    /// Answers in all.
    pub fn requests(&self) -> u64 {
        self.statuses.values().sum()
    }

    /// Answers that were not 2xx.
    pub fn non_2xx(&self) -> u64 {
        self.statuses.iter().filter(|(s, _)| !(200..300).contains(*s)).map(|(_, n)| n).sum()
    }

    /// The latency at percentile `p` (0 to 100), in milliseconds.
    pub fn percentile_ms(&self, p: f64) -> f64 {
        percentile_ms(&self.latencies_us, p)
    }

    fn merge(&mut self, other: LoadReport) {
        for (status, n) in other.statuses {
            *self.statuses.entry(status).or_default() += n;
        }
        self.socket_errors += other.socket_errors;
        self.latencies_us.extend(other.latencies_us);
        for (path, latencies) in other.by_path {
            self.by_path.entry(path).or_default().extend(latencies);
        }
        for failure in other.failures {
            if self.failures.len() < 10 {
                self.failures.push(failure);
            }
        }
    }
}

/// The latency at percentile `p` (0 to 100) of sorted microsecond `latencies`, in milliseconds
/// (nearest rank; 100 is the maximum).
pub fn percentile_ms(latencies: &[u32], p: f64) -> f64 {
    if latencies.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * (latencies.len() - 1) as f64).round() as usize;
    f64::from(latencies[rank.min(latencies.len() - 1)]) / 1000.0
}

/// When the connections stop sending.
#[derive(Debug, Clone)]
pub enum Until {
    /// A fixed time from the start (benchmarks: a rate over a known span).
    Elapsed(Duration),
    /// Once `done` is set and each connection has had at least `answers` answers (tests: the
    /// load lasts exactly as long as what it races against, however fast the machine is).
    Done { done: Arc<AtomicBool>, answers: u64 },
}

impl Until {
    /// Whether a connection that has had `answers` answers stops, at `deadline` (`Elapsed`).
    fn reached(&self, deadline: Instant, answers: u64) -> bool {
        match self {
            Until::Elapsed(_) => Instant::now() >= deadline,
            Until::Done { done, answers: least } => done.load(Ordering::SeqCst) && answers >= *least,
        }
    }
}

/// `connections` connections to `addr` over TLS (`tls`), each sending `GET path` with
/// `Authorization: authorization` round `paths` (each connection starting at another path)
/// until `until`.
pub async fn run(
    addr: SocketAddr,
    tls: Arc<rustls::ClientConfig>,
    authorization: &str,
    paths: &[String],
    connections: usize,
    until: Until,
) -> LoadReport {
    let started = Instant::now();
    let deadline = match &until {
        Until::Elapsed(duration) => started + *duration,
        Until::Done { .. } => started,
    };
    let paths: Arc<Vec<String>> = Arc::new(paths.to_vec());
    let mut tasks = tokio::task::JoinSet::new();
    for n in 0..connections {
        let (tls, paths, authorization, until) = (tls.clone(), paths.clone(), authorization.to_string(), until.clone());
        tasks.spawn(async move { connection(addr, tls, &authorization, &paths, n, (&until, deadline)).await });
    }
    let mut report = LoadReport::default();
    while let Some(done) = tasks.join_next().await {
        if let Ok(part) = done {
            report.merge(part);
        }
    }
    report.latencies_us.sort_unstable();
    report.by_path.values_mut().for_each(|l| l.sort_unstable());
    report.seconds = started.elapsed().as_secs_f64();
    report
}

async fn connection(
    addr: SocketAddr,
    tls: Arc<rustls::ClientConfig>,
    authorization: &str,
    paths: &[String],
    first: usize,
    (until, deadline): (&Until, Instant),
) -> LoadReport {
    let mut report = LoadReport::default();
    let mut next = first;
    let stop = |report: &LoadReport| until.reached(deadline, report.requests());
    while !stop(&report) {
        let mut sender = match open(addr, tls.clone()).await {
            Ok(sender) => sender,
            Err(_) => {
                report.socket_errors += 1;
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        while !stop(&report) {
            let path = &paths[next % paths.len()];
            next += 1;
            let request = http::Request::get(path.as_str())
                .header(http::header::HOST, addr.to_string())
                .header(http::header::AUTHORIZATION, authorization)
                .body(Empty::<bytes::Bytes>::new());
            let Ok(request) = request else { break };
            let sent = Instant::now();
            let answered = async {
                let response = sender.send_request(request).await?;
                let status = response.status().as_u16();
                let body = response.into_body().collect().await?.to_bytes();
                Ok::<_, hyper::Error>((status, body))
            };
            match tokio::time::timeout(Duration::from_secs(30), answered).await {
                Ok(Ok((status, body))) => {
                    let micros = sent.elapsed().as_micros().min(u128::from(u32::MAX)) as u32;
                    report.latencies_us.push(micros);
                    match report.by_path.get_mut(path) {
                        Some(latencies) => latencies.push(micros),
                        None => drop(report.by_path.insert(path.clone(), vec![micros])),
                    }
                    *report.statuses.entry(status).or_default() += 1;
                    if !(200..300).contains(&status) && report.failures.len() < 10 {
                        report.failures.push((status, path.clone(), String::from_utf8_lossy(&body).into_owned()));
                    }
                }
                _ => {
                    report.socket_errors += 1;
                    break;
                }
            }
        }
    }
    report
}

/// One `GET path` on a new connection: the status and the body.
pub async fn get(
    addr: SocketAddr,
    tls: Arc<rustls::ClientConfig>,
    authorization: &str,
    path: &str,
) -> Result<(u16, bytes::Bytes), Box<dyn std::error::Error + Send + Sync>> {
    let mut sender = open(addr, tls).await?;
    let request = http::Request::get(path)
        .header(http::header::HOST, addr.to_string())
        .header(http::header::AUTHORIZATION, authorization)
        .body(Empty::<bytes::Bytes>::new())?;
    let response = sender.send_request(request).await?;
    let status = response.status().as_u16();
    Ok((status, response.into_body().collect().await?.to_bytes()))
}

type Sender = hyper::client::conn::http1::SendRequest<Empty<bytes::Bytes>>;

async fn open(
    addr: SocketAddr,
    tls: Arc<rustls::ClientConfig>,
) -> Result<Sender, Box<dyn std::error::Error + Send + Sync>> {
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    tcp.set_nodelay(true)?;
    let stream = tokio_rustls::TlsConnector::from(tls).connect(ServerName::IpAddress(addr.ip().into()), tcp).await?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(connection);
    Ok(sender)
}

/// A TLS client that trusts the local registry's CA (`DATA_DIR/ca.pem`).
pub fn tls_client(ca_pem: &std::path::Path) -> Arc<rustls::ClientConfig> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    if let Ok(ca) = CertificateDer::from_pem_file(ca_pem) {
        let _ = roots.add(ca);
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map(|b| b.with_root_certificates(roots).with_no_client_auth())
        .unwrap_or_else(|e| panic!("TLS client: {e}"));
    Arc::new(config)
}
