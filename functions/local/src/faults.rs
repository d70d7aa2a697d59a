//! Fault injection at the embedded S3's HTTP layer, for tests: the faults S3 and the network
//! produce, answered to the real aws-sdk-s3 client, so the SDK's retries and timeouts and the
//! registry's handling of what is left all run as in AWS. Nothing is injected unless a test
//! adds a rule (`Running::faults`); `make dev` never does.

use std::sync::Mutex;
use std::time::Duration;

use http::{Method, Response, StatusCode};
use s3s::Body;

/// What goes wrong with a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// 503 `SlowDown`: S3 throttling.
    SlowDown,
    /// 500 `InternalError`.
    InternalError,
    /// 404 `NoSuchKey`, for a key that exists.
    NotFound,
    /// The answer's body stops halfway (its `Content-Length` promised more).
    Truncated,
    /// One byte of the body changed in transit: it fails the checksum S3 sent with it.
    ChecksumMismatch,
    /// The answer comes this late (past the client's attempt timeout, when a test wants that).
    Slow(Duration),
    /// The connection is closed without an answer.
    Reset,
    /// The request is served (a write made, and notified, as S3 does), then the connection is
    /// closed without its answer: a write committed whose answer a timeout or a dropped
    /// connection lost.
    AnswerLost,
}

/// Which requests a rule hits, and how many times.
#[derive(Debug, Clone)]
pub struct Rule {
    /// Keys starting with this.
    pub key_prefix: String,
    /// Only requests with this method (`None`: any).
    pub method: Option<Method>,
    pub fault: Fault,
    /// How many matching requests it hits before it stops (`None`: all of them).
    pub times: Option<u32>,
    /// Hit one matching request in `every` (1: each one), for fault rates.
    pub every: u32,
}

impl Rule {
    /// `fault` on every request for keys starting with `key_prefix`, any method.
    pub fn always(key_prefix: &str, fault: Fault) -> Self {
        Rule { key_prefix: key_prefix.into(), method: None, fault, times: None, every: 1 }
    }

    /// `fault` on the next `times` requests for keys starting with `key_prefix`.
    pub fn next(key_prefix: &str, fault: Fault, times: u32) -> Self {
        Rule { times: Some(times), ..Rule::always(key_prefix, fault) }
    }

    /// Only for requests with this method.
    pub fn method(mut self, method: Method) -> Self {
        self.method = Some(method);
        self
    }

    /// Hit one matching request in `every`.
    pub fn every(mut self, every: u32) -> Self {
        self.every = every.max(1);
        self
    }
}

/// The rules in force, and how often each fault was injected.
#[derive(Debug, Default)]
pub struct Faults {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    rules: Vec<(Rule, u32)>,
    injected: u64,
}

impl Faults {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Add a rule; rules are tried in the order added.
    pub fn add(&self, rule: Rule) {
        self.lock().rules.push((rule, 0));
    }

    /// Remove every rule.
    pub fn clear(&self) {
        self.lock().rules.clear();
    }

    /// How many faults were injected so far.
    pub fn injected(&self) -> u64 {
        self.lock().injected
    }

    /// The fault for this request, if a rule hits it.
    pub(crate) fn pick(&self, method: &Method, key: Option<&str>) -> Option<Fault> {
        let key = key?;
        let mut state = self.lock();
        let mut hit = None;
        for (rule, matched) in state.rules.iter_mut() {
            if !key.starts_with(&rule.key_prefix) || rule.method.as_ref().is_some_and(|m| m != method) {
                continue;
            }
            if rule.times == Some(0) {
                continue;
            }
            *matched += 1;
            if *matched % rule.every != 0 {
                continue;
            }
            if let Some(times) = rule.times.as_mut() {
                *times -= 1;
            }
            hit = Some(rule.fault);
            break;
        }
        if hit.is_some() {
            state.injected += 1;
        }
        hit
    }
}

/// S3's error answer, as the SDK parses it.
pub(crate) fn s3_error(status: StatusCode, code: &str, message: &str) -> Response<Body> {
    let xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code><Message>{message}</Message></Error>"
    );
    let mut response = Response::new(Body::from(xml));
    *response.status_mut() = status;
    response.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/xml"));
    response
}

/// Spoil a good answer's body as `fault` says: cut short, or one byte changed.
pub(crate) async fn spoil(response: Response<Body>, fault: Fault) -> Response<Body> {
    let (mut parts, body) = response.into_parts();
    let mut bytes = match http_body_util::BodyExt::collect(body).await {
        Ok(collected) => collected.to_bytes().to_vec(),
        Err(_) => Vec::new(),
    };
    match fault {
        Fault::Truncated => {
            // The header still promises every byte, and the body (a stream of unknown length,
            // so the server cannot notice) ends halfway: the connection closes early.
            parts.headers.insert(http::header::CONTENT_LENGTH, bytes.len().into());
            bytes.truncate(bytes.len() / 2);
            let frame = Ok::<_, std::convert::Infallible>(hyper::body::Frame::data(bytes::Bytes::from(bytes)));
            let stream = http_body_util::StreamBody::new(futures_util::stream::iter([frame]));
            Response::from_parts(parts, Body::http_body(stream))
        }
        Fault::ChecksumMismatch => {
            let middle = bytes.len() / 2;
            if let Some(b) = bytes.get_mut(middle) {
                *b ^= 0x20;
            }
            Response::from_parts(parts, Body::from(bytes::Bytes::from(bytes)))
        }
        _ => Response::from_parts(parts, Body::from(bytes::Bytes::from(bytes))),
    }
}
