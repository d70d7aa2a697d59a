//! The embedded S3-compatible server: s3s-fs serving a local directory over the real S3
//! protocol with SigV4 verification, wrapped so that it behaves as the deployed bucket does
//! where that matters for correctness:
//!
//! - **Notifications**: a successful publisher write or delete of a key that infra's S3
//!   notification filters cover (`layout::notifies`, the one list both use) runs the same
//!   indexing entry point an S3 event runs in AWS; any other key runs nothing, as in AWS.
//!   Unlike S3 events it is synchronous: the upload answers after its manifest is up to date,
//!   so a script can `aws s3 cp` and `terraform init` straight after. Whoever signed the write
//!   does not matter, as in AWS: the indexer writes only keys no filter covers.
//! - **Atomic replacement**: S3 replaces an object atomically: a reader gets the old object or
//!   the new one, body and metadata together. s3s-fs writes a body, then its attributes, then
//!   its checksums and ETag, each as its own file, so a GET between two of those writes read
//!   one version's body with the other's checksum (a 500 under load while publishing). Here
//!   requests on one key are ordered (`key_locks`, taken by the rights check once s3s has
//!   parsed every key the request touches): writes exclusive, reads shared, each for as long
//!   as s3s-fs handles it, on a task a closed connection does not cancel (`call`). A GET's
//!   body streams afterwards from the file it opened, which a later rename does not touch;
//!   conditional PUTs are atomic by the same lock.
//! - **IAM**: each request's rights are decided by `bucket_rights` from the signature s3s
//!   verified, as the principals' policies in infra/ decide them in AWS: the publisher writes
//!   only under the publisher prefixes (`layout::PUBLISHER_PREFIXES`), the key admin only
//!   under `signing-keys/` (`layout::KEY_ADMIN_PREFIXES`), neither reads the token store or
//!   the indexer's documents; anything else answers 403 `AccessDenied` as S3 would, and
//!   Signature Version 2 and keys a file system would resolve (`..`) are refused for everyone.
//!   The registry's own key (readers, indexer and token command in one process) may do
//!   everything.
//!
//! Indexing passes run concurrently, as Lambda invocations do; what keeps them from losing
//! updates is the conditional writes (`If-Match`, `If-None-Match`), atomic here through the
//! key locks as in S3. The wrapper also answers `If-None-Match` reads with 304 as S3 does
//! (s3s-fs ignores the header), so the registry's cache revalidation runs against the same
//! protocol locally as in AWS, and it injects the faults a test asks for (`faults`).

use std::sync::Arc;
use std::time::Duration;

use http::{Method, Request, Response};
use hyper::body::Incoming;
use s3s::service::S3Service;
use s3s::{Body, HttpError};

use crate::bucket_rights::Verified;
use crate::faults::{Fault, Faults, s3_error, spoil};
use crate::idle_body::{BODY_IDLE, BodyEnd, IdleBody};
use crate::latency::{Paced, S3Latency};

use registry::Config;
use registry::index::Indexer;
use registry::layout;
use registry::storage::S3Storage;
use registry::upstream::modules::ModuleUpstream;

pub use crate::bucket_rights::{
    FUNCTIONS_ACCESS_KEY, KEY_ADMIN_ACCESS_KEY, PUBLISHER_ACCESS_KEY, Principal, REGISTRY_ACCESS_KEY, USAGE_ACCESS_KEY,
};

/// One request the embedded S3 answered, as the request log keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Request {
    pub method: Method,
    /// The access key of the signature s3s verified, if it verified one (not for a request
    /// answered by an injected fault, which never reaches s3s).
    pub signer: Option<String>,
    /// The object key (decoded), or `None` for a bucket-level request such as a listing.
    pub key: Option<String>,
    pub query: String,
    /// Sent `If-None-Match` (a revalidation).
    pub if_none_match: bool,
    /// The status answered.
    pub status: u16,
    /// The answer's body length (`Content-Length`): what S3 would bill as data out.
    pub sent_bytes: u64,
}

/// Every request, in order, for tests that assert what the registry reads.
pub type RequestLog = Arc<std::sync::Mutex<Vec<S3Request>>>;

/// After a failed pass, how long to wait before each retry. Lambda retries a failed
/// asynchronous invocation (an S3 notification) twice, after about 1 and 2 minutes, when the
/// burst of publishes that made the pass fail (contention, a slow store) is usually over;
/// locally the upload waits for its indexing, so the same two retries come sooner, but late
/// enough for a burst to end (with retries 0.1 s and 0.5 s later, the concurrency proof once
/// lost 2 of 50 versions on a machine loaded by a compile), and well inside the publisher
/// client's 120 s read timeout.
const INDEXING_RETRIES: [Duration; 2] = [Duration::from_secs(2), Duration::from_secs(10)];

/// Index one notified key as the indexer Lambda would: a failed pass (storage unavailable, a
/// manifest still contended) is retried as Lambda retries the event; what still fails is
/// logged, and `reindex` repairs it (in AWS: the dead-letter queue).
async fn index_with_retries(indexer: &Indexer<'_, S3Storage>, key: &str) {
    let mut waits = INDEXING_RETRIES.iter();
    loop {
        match indexer.on_object_changed(key).await {
            Ok(Some((owner, outcome))) => return tracing::info!(key, ?owner, ?outcome, "published"),
            Ok(None) => return,
            Err(e) => match waits.next() {
                Some(wait) => {
                    tracing::warn!(key, error = %registry::error::chain(&e), "indexing failed; retrying as Lambda retries the event");
                    tokio::time::sleep(*wait).await;
                }
                None => return tracing::warn!(key, error = %registry::error::chain(&e), "not indexed"),
            },
        }
    }
}

/// The embedded S3 as the registry and publishers see it (see the module documentation).
#[derive(Clone)]
pub struct IndexingS3 {
    inner: S3Service,
    storage: S3Storage,
    bucket: String,
    /// What the indexer needs of the registry's configuration (limits, own hostname).
    config: Config,
    faults: Arc<Faults>,
    log: Option<RequestLog>,
    /// The puller's provider upstreams (pull-through), if on.
    upstream: Option<Arc<registry::upstream::Upstream>>,
    /// The puller's module upstreams (modules pull-through, with the puller's limit), if on.
    module_upstream: Option<Arc<ModuleUpstream>>,
    /// Pulls running in the background now (`Running::wait_for_pulls`).
    pulls: Arc<std::sync::atomic::AtomicUsize>,
    /// AWS-like latency added to every request (benchmarks), if on.
    latency: Option<Arc<S3Latency>>,
}

impl IndexingS3 {
    /// `log`: where to record every request (tests); `None` records nothing. `faults`: the
    /// faults to inject (none unless a test adds rules).
    pub fn new(
        inner: S3Service,
        storage: S3Storage,
        config: Config,
        log: Option<RequestLog>,
        faults: Arc<Faults>,
    ) -> Self {
        let bucket = storage.bucket().to_string();
        IndexingS3 {
            inner,
            storage,
            bucket,
            config,
            faults,
            log,
            upstream: None,
            module_upstream: None,
            pulls: Arc::default(),
            latency: None,
        }
    }

    /// Answer as slowly as S3 in AWS (`latency`), if given.
    pub fn slowed_by(mut self, latency: Option<Arc<S3Latency>>) -> Self {
        self.latency = latency;
        self
    }

    /// Also run the puller for writes its notification covers (`layout::notifies_puller`),
    /// in the background, as S3 invokes the puller Lambda asynchronously: the write that
    /// recorded the pull answers at once.
    pub fn pulling_from(
        mut self,
        upstream: Option<Arc<registry::upstream::Upstream>>,
        module_upstream: Option<ModuleUpstream>,
    ) -> Self {
        self.upstream = upstream;
        self.module_upstream = module_upstream.map(Arc::new);
        self
    }

    /// How many pulls are running in the background.
    pub fn pulls(&self) -> Arc<std::sync::atomic::AtomicUsize> {
        self.pulls.clone()
    }

    /// One request, as S3 in AWS answers it (`answer`), on a task of its own. hyper drops this
    /// future when the client closes its connection (as an SDK does at its attempt timeout),
    /// and s3s-fs commits a PUT in several renames (body, attributes, ETag and checksums): a
    /// drop between two of them left a new body with the old ETag. S3 commits a PUT it
    /// received whole, whatever the client does next, and notifies it: the task runs on through
    /// the commit, holding the key locks the rights check took, and the indexing. A body that
    /// did not arrive whole still fails the write (hyper fails a body its connection lost).
    pub async fn call(self, request: Request<Incoming>) -> Result<Response<Body>, HttpError> {
        let task = tokio::spawn(async move {
            let (parts, body) = request.into_parts();
            let body = IdleBody::new(body, BODY_IDLE);
            let end = body.end();
            let answer = self.answer(Request::from_parts(parts, body)).await;
            answer.map(|response| closing_unless_read(response, &end))
        });
        task.await.unwrap_or_else(|e| Err(HttpError::new(format!("embedded S3: the answer failed: {e}").into())))
    }

    /// One request, as S3 in AWS answers it: a fault injected where a test asked for one, the
    /// request served by s3s under its rights check (`bucket_rights`: the principal's rights
    /// as IAM gives them, the key locks that make PUTs atomic), `If-None-Match` answered, and
    /// the writes S3 notifies handed to the indexer and the puller once they succeeded.
    async fn answer(&self, request: Request<IdleBody>) -> Result<Response<Body>, HttpError> {
        let method = request.method().clone();
        let query = request.uri().query().unwrap_or("").to_string();
        let key = self.object_key(request.uri().path());
        let mut entry = self.log.as_ref().map(|_| S3Request {
            method: method.clone(),
            signer: None,
            key: key.clone(),
            query,
            if_none_match: request.headers().contains_key(http::header::IF_NONE_MATCH),
            status: 0,
            sent_bytes: 0,
        });
        let mut record = |status: http::StatusCode, signer: Option<Principal>, sent_bytes: u64| {
            if let (Some(log), Some(mut e)) = (&self.log, entry.take()) {
                e.status = status.as_u16();
                e.sent_bytes = sent_bytes;
                e.signer = signer.map(|p| p.access_key().to_string());
                log.lock().unwrap_or_else(|p| p.into_inner()).push(e);
            }
        };
        let fault = self.faults.pick(&method, key.as_deref());
        if let Some(answer) = answer_fault(fault, &mut |status| record(status, None, 0)).await {
            return answer;
        }
        if let Some(latency) = &self.latency {
            tokio::time::sleep(latency.first_byte()).await;
        }
        let verified = Arc::new(Verified::default());
        let mut request = request.map(|body| match &self.latency {
            // An upload comes at the bandwidth, as S3 reads it over one connection.
            Some(latency) => Body::http_body_unsync(Paced::new(body, latency.clone())),
            None => Body::http_body_unsync(body),
        });
        request.extensions_mut().insert(verified.clone());
        let response = self.serve(request, &verified).await?;
        // A HEAD's Content-Length is the object's, not a body sent.
        let sent_bytes = if method == Method::HEAD { 0 } else { content_length(response.headers()) };
        let response = match &self.latency {
            Some(latency) => response.map(|body| Body::http_body_unsync(Paced::new(body, latency.clone()))),
            None => response,
        };
        let principal = verified.principal();
        record(response.status(), principal, sent_bytes);
        answered(&method, key.as_deref(), response.status(), principal);
        if !response.status().is_success() {
            return Ok(response);
        }
        if let Some(fault @ (Fault::Truncated | Fault::ChecksumMismatch)) = fault
            && method == Method::GET
        {
            return Ok(spoil(response, fault).await);
        }
        let written = verified.notified();
        if method == Method::PUT {
            self.pull(&written);
        }
        self.index(written, principal).await;
        if fault == Some(Fault::AnswerLost) {
            return Err(HttpError::new("injected fault: the answer is lost".into()));
        }
        Ok(response)
    }

    /// s3s-fs's answer, with the key locks the rights check took held until it is given (an
    /// object is replaced whole, as in S3), and 304 where S3 gives it: s3s-fs ignores
    /// `If-None-Match`.
    async fn serve(&self, request: Request<Body>, verified: &Verified) -> Result<Response<Body>, HttpError> {
        let method = request.method().clone();
        let revalidating = (method == Method::GET || method == Method::HEAD)
            .then(|| request.headers().get(http::header::IF_NONE_MATCH).cloned())
            .flatten();
        let response = self.inner.call(request).await;
        verified.release();
        let response = response?;
        match revalidating {
            Some(condition)
                if response.status() == http::StatusCode::OK
                    && response.headers().get(http::header::ETAG) == Some(&condition) =>
            {
                Ok(not_modified(&response))
            }
            _ => Ok(response),
        }
    }

    /// Run the puller for the written keys its notification covers (`layout::notifies_puller`),
    /// in the background, as S3 invokes the puller Lambda asynchronously.
    fn pull(&self, written: &[String]) {
        for key in written.iter().filter(|k| layout::notifies_puller(k)) {
            let (storage, key) = (self.storage.clone(), key.clone());
            let (upstream, module_upstream) = (self.upstream.clone(), self.module_upstream.clone());
            let limit = self.config.limits.provider_zip_bytes;
            let bounds = self.config.archive_bounds();
            let pulls = self.pulls.clone();
            pulls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            tokio::spawn(async move {
                let pulled = match (layout::upstream_module_pull_release(&key), upstream, module_upstream) {
                    (Some(_), _, Some(modules)) => {
                        registry::upstream::module_pull::pull(&storage, &modules, &key, bounds)
                            .await
                            .map(|r| format!("{r:?}"))
                    }
                    (None, Some(providers), _) => {
                        registry::upstream::copy::copy_release(&storage, &providers, &key, limit)
                            .await
                            .map(|r| format!("{r:?}"))
                    }
                    _ => Ok("no upstream of its kind: nothing pulled (in AWS, the puller fails the event)".into()),
                };
                match pulled {
                    Ok(report) => tracing::info!(key, report, "pulled"),
                    Err(e) => {
                        tracing::warn!(key, error = %registry::error::chain(&e), "pull failed (in AWS, Lambda retries the event)")
                    }
                }
                pulls.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            });
        }
    }

    /// Index the written keys S3 notifies the indexer of (`layout::notifies`), before the
    /// write is answered (locally; in AWS the event follows the write within seconds).
    async fn index(&self, written: Vec<String>, signed_by: Option<Principal>) {
        let indexer = Indexer::new(&self.storage, self.config.limits.clone()).signing_for(self.config.hostname.clone());
        for key in written.into_iter().filter(|k| layout::notifies(k)) {
            // What S3 events name as `principalId`: here, the access key that signed it.
            if let Some(signer) = signed_by {
                indexer.record_principal(&key, &format!("local:{}", signer.access_key()));
            }
            index_with_retries(&indexer, &key).await;
        }
    }

    /// The object key of a path-style request to our bucket (`/BUCKET/KEY`), decoded.
    fn object_key(&self, path: &str) -> Option<String> {
        let rest = path.strip_prefix('/')?.strip_prefix(self.bucket.as_str())?.strip_prefix('/')?;
        if rest.is_empty() {
            return None;
        }
        registry::percent::decode_text(rest, false)
    }
}

/// A message's `Content-Length` (0 when absent or unreadable).
fn content_length(headers: &http::HeaderMap) -> u64 {
    headers.get(http::header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse().ok()).unwrap_or(0)
}

/// The answer an injected fault replaces the request with, if it replaces it (a slow answer
/// only waits; a spoiled body is applied to the real answer).
async fn answer_fault(
    fault: Option<Fault>,
    record: &mut impl FnMut(http::StatusCode),
) -> Option<Result<Response<Body>, HttpError>> {
    let error = match fault? {
        Fault::SlowDown => {
            s3_error(http::StatusCode::SERVICE_UNAVAILABLE, "SlowDown", "Please reduce your request rate.")
        }
        Fault::InternalError => s3_error(
            http::StatusCode::INTERNAL_SERVER_ERROR,
            "InternalError",
            "We encountered an internal error. Please try again.",
        ),
        Fault::NotFound => s3_error(http::StatusCode::NOT_FOUND, "NoSuchKey", "The specified key does not exist."),
        Fault::Reset => {
            record(http::StatusCode::from_u16(599).unwrap_or_default());
            return Some(Err(HttpError::new("injected fault: connection reset".into())));
        }
        Fault::Slow(delay) => {
            tokio::time::sleep(delay).await;
            return None;
        }
        Fault::Truncated | Fault::ChecksumMismatch | Fault::AnswerLost => return None,
    };
    Some(Ok(injected(error, record)))
}

/// The log line of an answer S3 would count as an error: a 5xx is the embedded S3's own fault
/// (ERROR); a 4xx is the client's (DEBUG: S3 refuses a HEAD on a presigned GET URL, which the
/// CLI sends before every download, and an upload a principal may not write is the caller's
/// business, already answered).
fn answered(method: &Method, key: Option<&str>, status: http::StatusCode, principal: Option<Principal>) {
    let who = principal.map(Principal::access_key);
    if status.is_server_error() {
        tracing::error!(%method, key, status = status.as_u16(), who, "embedded S3 failed");
    } else if status.is_client_error() {
        tracing::debug!(%method, key, status = status.as_u16(), who, "embedded S3 refused");
    }
}

/// `response`, with `Connection: close` if the request's body was not read to its end: s3s
/// answered before reading it all (a 412 from `If-None-Match` or `If-Match`, a 403). hyper
/// then tries to drain the rest, gives up on a large body and closes the connection, which
/// the client has already pooled again: its next request there fails ("connection closed
/// before message completed"). hyper honours the header, and it tells the client not to pool.
fn closing_unless_read(mut response: Response<Body>, end: &BodyEnd) -> Response<Body> {
    if !end.reached() {
        response.headers_mut().insert(http::header::CONNECTION, http::HeaderValue::from_static("close"));
    }
    response
}

/// S3's 304 for `response` (an unchanged object): no body, its ETag and date kept.
fn not_modified(response: &Response<Body>) -> Response<Body> {
    let mut not_modified = Response::new(Body::empty());
    *not_modified.status_mut() = http::StatusCode::NOT_MODIFIED;
    for name in [http::header::ETAG, http::header::LAST_MODIFIED] {
        if let Some(value) = response.headers().get(&name) {
            not_modified.headers_mut().insert(name, value.clone());
        }
    }
    not_modified
}

fn injected(response: Response<Body>, record: &mut impl FnMut(http::StatusCode)) -> Response<Body> {
    record(response.status());
    response
}
