//! S3 as slow as it is in AWS, for benchmarks: each request the embedded S3 answers waits a
//! first-byte latency drawn from a distribution, and a body waits its size over a bandwidth
//! per connection. Off unless asked for (`--s3-latency`, `LocalOptions::s3_latency`): `make
//! dev` and the tests answer at loopback speed.
//!
//! The model, `S3Latency::AWS`, is ours, read from AWS's guidance, not a measurement of S3 (no
//! AWS access here, and AWS publishes no distribution):
//! - "smaller requests (for example, less than 512 KB), where median latencies are often in
//!   the tens of milliseconds range" and "retry a GET or PUT operation after 2 seconds" (S3
//!   performance design patterns, "Timeouts and Retries for Latency-Sensitive Applications"):
//!   a log-normal first byte with a 20 ms median and an 80 ms p99, cut at 2 s;
//! - "Make one concurrent request for each 85–90 MB/s of desired network throughput"
//!   ("Horizontal Scaling and Request Parallelization"): 85 MB/s a connection for bodies.
//!
//! The first byte is waited before the request is served; a body then comes at the bandwidth
//! (`Paced`), as S3 streams it: a client's timeout for the answer's headers sees only the first
//! byte, as in AWS, whatever the object's size.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};

/// A first-byte distribution (log-normal, by its median and 99th percentile, cut at `cap`) and
/// a bandwidth per connection.
#[derive(Debug)]
pub struct S3Latency {
    median: Duration,
    p99: Duration,
    cap: Duration,
    bytes_per_second: u64,
    /// The draws' generator state (SplitMix64: one atomic add per draw, no lock).
    state: AtomicU64,
}

/// The standard normal's 99th percentile.
const Z99: f64 = 2.326_347_874;

impl S3Latency {
    /// The model this module documents: 20 ms median, 80 ms p99, cut at 2 s, 85 MB/s.
    pub fn aws() -> Self {
        S3Latency::new(Duration::from_millis(20), Duration::from_millis(80), 85_000_000)
    }

    /// A log-normal first byte with this median and p99 (at least the median), cut at 2 s, and
    /// `bytes_per_second` a connection. Draws are the same sequence every run (a fixed seed),
    /// handed out in the order requests arrive.
    pub fn new(median: Duration, p99: Duration, bytes_per_second: u64) -> Self {
        S3Latency {
            median,
            p99: p99.max(median),
            cap: Duration::from_secs(2),
            bytes_per_second: bytes_per_second.max(1),
            state: AtomicU64::new(0x5EED),
        }
    }

    /// `aws`, or `MEDIAN_MS,P99_MS,MB_PER_S` (megabytes of 10^6 bytes).
    pub fn parse(text: &str) -> Result<Self, String> {
        if text == "aws" {
            return Ok(S3Latency::aws());
        }
        let numbers: Vec<u64> =
            text.split(',').map(|n| n.trim().parse::<u64>()).collect::<Result<_, _>>().map_err(|_| {
                format!("S3 latency {text:?}: `aws`, or MEDIAN_MS,P99_MS,MB_PER_S (three whole numbers)")
            })?;
        match numbers[..] {
            [median, p99, mb] if mb > 0 && median <= 2_000 && p99 <= 2_000 && mb <= 100_000 => {
                Ok(S3Latency::new(Duration::from_millis(median), Duration::from_millis(p99), mb * 1_000_000))
            }
            _ => Err(format!(
                "S3 latency {text:?}: `aws`, or MEDIAN_MS,P99_MS,MB_PER_S (each ms at most 2000, MB/s 1 to 100000)"
            )),
        }
    }

    /// How long a request waits for its first byte: the next draw.
    pub fn first_byte(&self) -> Duration {
        let (u1, u2) = (self.uniform(), self.uniform());
        // Box–Muller: a standard normal from two uniforms in (0, 1].
        let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        self.at(z)
    }

    /// The first byte at standard normal `z`: the median times e^(σz), where σ puts `z = Z99` at
    /// the p99; cut at the cap.
    fn at(&self, z: f64) -> Duration {
        let median = self.median.as_secs_f64();
        if median == 0.0 {
            return Duration::ZERO;
        }
        let sigma = (self.p99.as_secs_f64() / median).ln() / Z99;
        Duration::from_secs_f64((median * (sigma * z).exp()).min(self.cap.as_secs_f64()))
    }

    /// How long `bytes` of a body take over one connection (at most a day: no wait overflows).
    pub fn transfer(&self, bytes: u64) -> Duration {
        let seconds = bytes as f64 / self.bytes_per_second as f64;
        Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX).min(Duration::from_secs(86_400))
    }

    /// A uniform draw in (0, 1] (SplitMix64's output, top 53 bits).
    fn uniform(&self) -> f64 {
        let mut x = self.state.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed).wrapping_add(0x9E37_79B9_7F4A_7C15);
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        x ^= x >> 31;
        ((x >> 11) + 1) as f64 / (1u64 << 53) as f64
    }
}

/// The model in words, as the benchmarks print it ("20 ms median, 80 ms p99 first byte, 85 MB/s").
impl std::fmt::Display for S3Latency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |d: Duration| d.as_millis();
        let mb = self.bytes_per_second as f64 / 1e6;
        write!(f, "{} ms median, {} ms p99 first byte, {mb} MB/s", ms(self.median), ms(self.p99))
    }
}

/// A body as it arrives over one connection at the model's bandwidth: each frame is passed on
/// no earlier than the bytes before it would have taken (a running deadline, so the timer's
/// millisecond steps do not add up frame by frame).
pub struct Paced<B> {
    inner: Pin<Box<B>>,
    latency: Arc<S3Latency>,
    started: Option<tokio::time::Instant>,
    sent: u64,
    wait: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<B> Paced<B> {
    pub fn new(inner: B, latency: Arc<S3Latency>) -> Self {
        Paced { inner: Box::pin(inner), latency, started: None, sent: 0, wait: None }
    }
}

impl<B: Body<Data = Bytes>> Body for Paced<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let this = self.get_mut();
        if let Some(wait) = this.wait.as_mut() {
            ready!(wait.as_mut().poll(cx));
            this.wait = None;
        }
        let frame = ready!(this.inner.as_mut().poll_frame(cx));
        if let Some(data) = frame.as_ref().and_then(|f| f.as_ref().ok()).and_then(Frame::data_ref) {
            let started = *this.started.get_or_insert_with(tokio::time::Instant::now);
            this.sent = this.sent.saturating_add(data.len() as u64);
            let due = started + this.latency.transfer(this.sent);
            if due > tokio::time::Instant::now() {
                this.wait = Some(Box::pin(tokio::time::sleep_until(due)));
            }
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.wait.is_none() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn percentile(sorted: &[Duration], p: f64) -> Duration {
        sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)]
    }

    #[test]
    fn draws_follow_the_median_and_p99_they_were_given() {
        let model = S3Latency::aws();
        let mut draws: Vec<Duration> = (0..200_000).map(|_| model.first_byte()).collect();
        draws.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let (p50, p99) = (ms(percentile(&draws, 0.50)), ms(percentile(&draws, 0.99)));
        assert!((19.0..21.0).contains(&p50), "median {p50} ms");
        assert!((74.0..86.0).contains(&p99), "p99 {p99} ms");
        assert!(draws.iter().all(|d| *d > Duration::ZERO && *d <= Duration::from_secs(2)), "positive, cut at 2 s");
        assert!(ms(percentile(&draws, 0.999)) > 120.0, "a long tail past the p99");
    }

    #[test]
    fn the_distribution_is_pinned_at_its_median_and_p99() {
        let model = S3Latency::new(Duration::from_millis(20), Duration::from_millis(80), 1);
        let ms = |z: f64| (model.at(z).as_secs_f64() * 1000.0 * 1000.0).round() / 1000.0;
        assert_eq!((ms(0.0), ms(Z99)), (20.0, 80.0));
        assert_eq!(model.at(40.0), Duration::from_secs(2), "cut at the cap");
        let flat = S3Latency::new(Duration::ZERO, Duration::ZERO, 1);
        assert_eq!(flat.first_byte(), Duration::ZERO);
    }

    #[test]
    fn a_body_takes_its_size_over_the_bandwidth() {
        let model = S3Latency::parse("20,80,85").unwrap();
        assert_eq!(model.transfer(85_000_000), Duration::from_secs(1));
        assert_eq!(model.transfer(0), Duration::ZERO);
        let slowest = S3Latency::new(Duration::ZERO, Duration::ZERO, 1);
        assert_eq!(slowest.transfer(u64::MAX), Duration::from_secs(86_400), "capped, no overflow");
    }

    /// The body's frames come no faster than the bandwidth, and whole. (A lower bound only: a
    /// sleep is never shorter than asked, while how much longer depends on the machine.)
    #[tokio::test]
    async fn a_paced_body_arrives_no_faster_than_the_bandwidth() {
        use http_body_util::BodyExt;
        let chunks: Vec<Result<Frame<Bytes>, std::convert::Infallible>> =
            (0..4).map(|_| Ok(Frame::data(Bytes::from(vec![0u8; 25_000])))).collect();
        let body = http_body_util::StreamBody::new(futures_util::stream::iter(chunks));
        let model = Arc::new(S3Latency::new(Duration::ZERO, Duration::ZERO, 1_000_000));
        let start = tokio::time::Instant::now();
        let bytes = Paced::new(body, model).collect().await.unwrap().to_bytes();
        assert_eq!(bytes.len(), 100_000);
        assert!(start.elapsed() >= Duration::from_millis(100), "100 KB at 1 MB/s: {:?}", start.elapsed());
    }

    #[test]
    fn the_model_says_what_it_is() {
        assert_eq!(S3Latency::aws().to_string(), "20 ms median, 80 ms p99 first byte, 85 MB/s");
    }

    #[test]
    fn bad_settings_say_what_is_expected() {
        for bad in ["", "fast", "20,80", "20,80,0", "20,80,85,1", "-1,80,85", "3000,80,85", "20,80,1e9"] {
            let error = S3Latency::parse(bad).unwrap_err();
            assert!(error.contains("MEDIAN_MS,P99_MS,MB_PER_S"), "{bad:?}: {error}");
        }
        assert!(S3Latency::parse("aws").is_ok());
    }
}
