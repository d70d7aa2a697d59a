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
//!   requests on one key are ordered (`KeyLocks`): writes exclusive, reads shared, each for
//!   as long as s3s-fs handles it. A GET's body streams afterwards from the file it opened,
//!   which a later rename does not touch; conditional PUTs are atomic by the same lock.
//! - **IAM**: the publisher's key may write only under the publisher prefixes
//!   (`layout::PUBLISHER_PREFIXES`), the key admin's only under `signing-keys/`
//!   (`layout::KEY_ADMIN_PREFIXES`), and neither may read the token store, as their policies
//!   in infra/ allow; anything else answers 403 `AccessDenied` as S3 would. The registry's own
//!   key (readers, indexer and token command in one process) may do everything.
//!
//! Indexing passes run concurrently, as Lambda invocations do; what keeps them from losing
//! updates is the conditional writes (`If-Match`, `If-None-Match`), atomic here through the
//! key locks as in S3. The wrapper also answers `If-None-Match` reads with 304 as S3 does
//! (s3s-fs ignores the header), so the registry's cache revalidation runs against the same
//! protocol locally as in AWS, and it injects the faults a test asks for (`faults`).

use std::sync::Arc;
use std::time::Duration;

use std::collections::BTreeMap;

use bytes::Bytes;
use http::{Method, Request, Response};
use hyper::body::Incoming;
use s3s::service::S3Service;
use s3s::{Body, HttpError};
use tokio::sync::{OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLock};

use crate::faults::{Fault, Faults, s3_error, spoil};

use registry::Config;
use registry::index::Indexer;
use registry::layout;
use registry::storage::S3Storage;

/// Access key the registry (and its indexer) sign with; publishers use another one.
pub const REGISTRY_ACCESS_KEY: &str = "registry-local";
/// Access key written to `local.env` for publishers (`aws s3 cp`, SDKs).
pub const PUBLISHER_ACCESS_KEY: &str = "publisher-local";
/// Access key written to `local.env` for key admins (`KEY_ADMIN_ACCESS_KEY_ID`): the only one
/// that may write `signing-keys/`.
pub const KEY_ADMIN_ACCESS_KEY: &str = "key-admin-local";
/// Access key for the Lambda binaries run against the embedded S3 (`make lambda-test`), with
/// the functions' rights: what the registry's own key may do. Its secret is in
/// `DATA_DIR/functions.secret`.
pub const FUNCTIONS_ACCESS_KEY: &str = "functions-local";
/// Largest DeleteObjects request body we read to learn its keys (S3 allows 1,000 keys).
const DELETE_BODY_LIMIT: usize = 1 << 20;

/// One request the embedded S3 answered, as the request log keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Request {
    pub method: Method,
    /// The access key it was signed with, if any.
    pub signer: Option<String>,
    /// The object key (decoded), or `None` for a bucket-level request such as a listing.
    pub key: Option<String>,
    pub query: String,
    /// Sent `If-None-Match` (a revalidation).
    pub if_none_match: bool,
    /// The status answered.
    pub status: u16,
}

/// Every request, in order, for tests that assert what the registry reads.
pub type RequestLog = Arc<std::sync::Mutex<Vec<S3Request>>>;

/// Locks ordering the requests on one key (see the module documentation), striped: keys
/// share a fixed set of locks by hash, so memory stays constant and unrelated keys rarely
/// wait for each other.
struct KeyLocks {
    stripes: Vec<Arc<RwLock<()>>>,
}

/// A held key lock, released when dropped.
#[allow(dead_code, reason = "a guard is held until dropped, never read")]
enum KeyGuard {
    Read(OwnedRwLockReadGuard<()>),
    Write(OwnedRwLockWriteGuard<()>),
}

impl KeyLocks {
    const STRIPES: usize = 256;

    fn new() -> Self {
        KeyLocks { stripes: (0..Self::STRIPES).map(|_| Arc::new(RwLock::new(()))).collect() }
    }

    fn stripe(key: &str) -> usize {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        key.hash(&mut hasher);
        (hasher.finish() % Self::STRIPES as u64) as usize
    }

    /// Shared locks for `reads`, exclusive ones for `writes`, taken in stripe order (so two
    /// requests never wait for each other in a cycle).
    async fn lock(&self, reads: &[&str], writes: &[String]) -> Vec<KeyGuard> {
        let mut wanted: BTreeMap<usize, bool> = BTreeMap::new();
        for key in writes {
            wanted.insert(Self::stripe(key), true);
        }
        for key in reads {
            wanted.entry(Self::stripe(key)).or_insert(false);
        }
        let mut guards = Vec::with_capacity(wanted.len());
        for (stripe, exclusive) in wanted {
            let lock = self.stripes[stripe].clone();
            guards.push(if exclusive {
                KeyGuard::Write(lock.write_owned().await)
            } else {
                KeyGuard::Read(lock.read_owned().await)
            });
        }
        guards
    }
}

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
                    tracing::warn!(key, error = %e, "indexing failed; retrying as Lambda retries the event");
                    tokio::time::sleep(*wait).await;
                }
                None => return tracing::warn!(key, error = %e, "not indexed"),
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
    locks: Arc<KeyLocks>,
    faults: Arc<Faults>,
    log: Option<RequestLog>,
    /// The puller's upstreams (pull-through), if on.
    upstream: Option<Arc<registry::upstream::Upstream>>,
    /// Pulls running in the background now (`Running::wait_for_pulls`).
    pulls: Arc<std::sync::atomic::AtomicUsize>,
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
            locks: Arc::new(KeyLocks::new()),
            faults,
            log,
            upstream: None,
            pulls: Arc::default(),
        }
    }

    /// Also run the puller for writes its notification covers (`layout::notifies_puller`),
    /// in the background, as S3 invokes the puller Lambda asynchronously: the write that
    /// recorded the pull answers at once.
    pub fn pulling_from(mut self, upstream: Option<Arc<registry::upstream::Upstream>>) -> Self {
        self.upstream = upstream;
        self
    }

    /// How many pulls are running in the background.
    pub fn pulls(&self) -> Arc<std::sync::atomic::AtomicUsize> {
        self.pulls.clone()
    }

    /// One request, as S3 in AWS answers it: the principal's rights checked (IAM), a fault
    /// injected where a test asked for one, the request served by s3s-fs under the key locks
    /// (atomic PUTs), `If-None-Match` answered, and the writes S3 notifies handed to the
    /// indexer and the puller once they succeeded.
    pub async fn call(&self, request: Request<Incoming>) -> Result<Response<Body>, HttpError> {
        let method = request.method().clone();
        let path = request.uri().path().to_string();
        let query = request.uri().query().unwrap_or("").to_string();
        let signed_by = signer(&request);
        let limited = Limited::of(signed_by.as_deref());
        let key = self.object_key(&path);
        let mut entry = self.log.as_ref().map(|_| S3Request {
            method: method.clone(),
            signer: signed_by.clone(),
            key: key.clone(),
            query: query.clone(),
            if_none_match: request.headers().contains_key(http::header::IF_NONE_MATCH),
            status: 0,
        });
        let mut record = |status: http::StatusCode| {
            if let (Some(log), Some(mut e)) = (&self.log, entry.take()) {
                e.status = status.as_u16();
                log.lock().unwrap_or_else(|p| p.into_inner()).push(e);
            }
        };
        let mut request = request.map(Body::from);
        let deleted_keys = match deleted_keys(&method, &query, &mut request, limited).await {
            Ok(keys) => keys,
            Err(denied) => return Ok(injected(denied, &mut record)),
        };
        if let Some(principal) = limited
            && let Err(why) = principal.may(&method, key.as_deref(), &query, &request, &deleted_keys)
        {
            return Ok(injected(access_denied(limited, &why), &mut record));
        }
        let fault = self.faults.pick(&method, key.as_deref());
        if let Some(answer) = answer_fault(fault, &mut record).await {
            return answer;
        }
        let written = written_keys(&method, &query, key.as_deref(), deleted_keys);
        let response = self.serve(request, key.as_deref(), &written).await?;
        record(response.status());
        if !response.status().is_success() {
            return Ok(response);
        }
        if let Some(fault @ (Fault::Truncated | Fault::ChecksumMismatch)) = fault
            && method == Method::GET
        {
            return Ok(spoil(response, fault).await);
        }
        if method == Method::PUT {
            self.pull(&written);
        }
        self.index(written, signed_by.as_deref()).await;
        Ok(response)
    }

    /// s3s-fs's answer, with the keys the request reads and writes locked (an object is
    /// replaced whole, as in S3), and 304 where S3 gives it: s3s-fs ignores `If-None-Match`.
    async fn serve(
        &self,
        request: Request<Body>,
        key: Option<&str>,
        written: &[String],
    ) -> Result<Response<Body>, HttpError> {
        let method = request.method().clone();
        let copy_source = copy_source(&request);
        let read: Vec<&str> = match key {
            Some(key) if method == Method::GET || method == Method::HEAD => vec![key],
            _ => copy_source.iter().map(String::as_str).collect(),
        };
        let revalidating = (method == Method::GET || method == Method::HEAD)
            .then(|| request.headers().get(http::header::IF_NONE_MATCH).cloned())
            .flatten();
        let response = {
            let _ordered = self.locks.lock(&read, written).await;
            self.inner.call(request).await?
        };
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
        let Some(upstream) = &self.upstream else { return };
        for key in written.iter().filter(|k| layout::notifies_puller(k)) {
            let (storage, upstream, key) = (self.storage.clone(), upstream.clone(), key.clone());
            let limit = self.config.limits.provider_zip_bytes;
            let pulls = self.pulls.clone();
            pulls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            tokio::spawn(async move {
                match registry::upstream::copy::copy_release(&storage, &upstream, &key, limit).await {
                    Ok(report) => tracing::info!(key, ?report, "pulled"),
                    Err(e) => tracing::warn!(key, error = %e, "pull failed (in AWS, Lambda retries the event)"),
                }
                pulls.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            });
        }
    }

    /// Index the written keys S3 notifies the indexer of (`layout::notifies`), before the
    /// write is answered (locally; in AWS the event follows the write within seconds).
    async fn index(&self, written: Vec<String>, signed_by: Option<&str>) {
        let indexer = Indexer::new(&self.storage, self.config.limits.clone()).signing_for(self.config.hostname.clone());
        for key in written.into_iter().filter(|k| layout::notifies(k)) {
            // What S3 events name as `principalId`: here, the access key that signed it.
            if let Some(signer) = signed_by {
                indexer.record_principal(&key, &format!("local:{signer}"));
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

/// The principals whose rights IAM limits in AWS, as their policies in infra/ allow: the
/// publisher (archives) and the key admin (signing keys). Every other key is the registry's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Limited {
    Publisher,
    KeyAdmin,
}

impl Limited {
    fn of(signer: Option<&str>) -> Option<Limited> {
        match signer {
            Some(PUBLISHER_ACCESS_KEY) => Some(Limited::Publisher),
            Some(KEY_ADMIN_ACCESS_KEY) => Some(Limited::KeyAdmin),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Limited::Publisher => "publisher",
            Limited::KeyAdmin => "key admin",
        }
    }

    /// Write and delete under its prefixes only (never the indexer's `indexed/` or
    /// `rejections/`, never `access/`; the publisher never `signing-keys/`), read anything
    /// but the token store, and no bucket-level writes.
    fn may<B>(
        self,
        method: &Method,
        key: Option<&str>,
        query: &str,
        request: &Request<B>,
        deleted_keys: &[String],
    ) -> Result<(), String> {
        let prefixes: &[&str] = match self {
            Limited::Publisher => &layout::PUBLISHER_PREFIXES,
            Limited::KeyAdmin => &layout::KEY_ADMIN_PREFIXES,
        };
        let writable = |key: &str| prefixes.iter().any(|p| key.starts_with(p));
        let readable = |key: &str| !key.starts_with("access/");
        let read = *method == Method::GET || *method == Method::HEAD;
        match key {
            Some(key) if read => readable(key).then_some(()).ok_or_else(|| format!("s3:GetObject on {key}")),
            Some(key) if !writable(key) => Err(format!("{method} on {key}")),
            Some(_) => match copy_source(request) {
                // CopyObject also reads its source.
                Some(source) if !readable(&source) => Err(format!("s3:GetObject on {source}")),
                _ => Ok(()),
            },
            None if read => Ok(()),
            None if *method == Method::POST && has_param(query, "delete") => {
                match deleted_keys.iter().find(|k| !writable(k)) {
                    Some(key) => Err(format!("s3:DeleteObject on {key}")),
                    None => Ok(()),
                }
            }
            None => Err(format!("{method} on the bucket")),
        }
    }
}

/// S3's answer to a request IAM does not allow.
fn access_denied(principal: Option<Limited>, why: &str) -> Response<Body> {
    let who = principal.map_or("caller", Limited::name);
    tracing::info!(who, why, "request denied, as the principal's policy in AWS would");
    let xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>AccessDenied</Code>\
         <Message>Access Denied: the {who} may not {}</Message></Error>",
        xml_escape(why)
    );
    let mut response = Response::new(Body::from(xml));
    *response.status_mut() = http::StatusCode::FORBIDDEN;
    response.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/xml"));
    response
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// An injected fault's answer, logged as answered.
/// The keys a DeleteObjects request names (in its XML body, read bounded and passed on);
/// none for other requests. A limited principal's unreadable body is refused: keys that
/// cannot be read cannot be checked against its rights.
async fn deleted_keys(
    method: &Method,
    query: &str,
    request: &mut Request<Body>,
    limited: Option<Limited>,
) -> Result<Vec<String>, Response<Body>> {
    if *method != Method::POST || !has_param(query, "delete") {
        return Ok(Vec::new());
    }
    match request.body_mut().store_all_limited(DELETE_BODY_LIMIT).await {
        Ok(bytes) => Ok(keys_in_delete_body(&bytes)),
        Err(e) if limited.is_some() => {
            Err(access_denied(limited, &format!("send a DeleteObjects body that cannot be read ({e})")))
        }
        Err(e) => {
            tracing::warn!(error = %e, "DeleteObjects body unreadable; its keys will not be reindexed");
            Ok(Vec::new())
        }
    }
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
        Fault::Truncated | Fault::ChecksumMismatch => return None,
    };
    Some(Ok(injected(error, record)))
}

/// The keys a request writes, which S3 notifies once it succeeded: a PUT (not a part of a
/// multipart upload), a completed multipart upload, a DELETE, a DeleteObjects' keys.
fn written_keys(method: &Method, query: &str, key: Option<&str>, deleted_keys: Vec<String>) -> Vec<String> {
    match key {
        Some(key) if *method == Method::PUT && !has_param(query, "partNumber") && !has_param(query, "uploadId") => {
            vec![key.to_string()]
        }
        Some(key) if *method == Method::POST && has_param(query, "uploadId") => vec![key.to_string()],
        Some(key) if *method == Method::DELETE && !has_param(query, "uploadId") => vec![key.to_string()],
        None if *method == Method::POST && has_param(query, "delete") => deleted_keys,
        _ => vec![],
    }
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

/// The key a CopyObject reads (`x-amz-copy-source: BUCKET/KEY`, percent-encoded).
fn copy_source<B>(request: &Request<B>) -> Option<String> {
    let source = request.headers().get("x-amz-copy-source")?.to_str().ok()?;
    let source = registry::percent::decode_text(source.split('?').next()?, false)?;
    Some(source.trim_start_matches('/').split_once('/')?.1.to_string())
}

fn has_param(query: &str, name: &str) -> bool {
    query.split('&').any(|p| p == name || p.split_once('=').is_some_and(|(k, _)| k == name))
}

/// The access key a request is signed with (header or presigned query).
fn signer<B>(request: &Request<B>) -> Option<String> {
    let from_header = request
        .headers()
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split("Credential=").nth(1))
        .and_then(|v| v.split('/').next())
        .map(str::to_string);
    from_header.or_else(|| {
        let query = request.uri().query()?;
        let credential = query.split('&').find_map(|p| p.strip_prefix("X-Amz-Credential="))?;
        registry::percent::decode_text(credential, false)?.split('/').next().map(str::to_string)
    })
}

fn keys_in_delete_body(body: &Bytes) -> Vec<String> {
    let text = String::from_utf8_lossy(body);
    text.split("<Key>").skip(1).filter_map(|s| s.split("</Key>").next()).map(xml_unescape).collect()
}

fn xml_unescape(s: &str) -> String {
    s.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&apos;", "'").replace("&amp;", "&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_parsing() {
        assert!(has_param("uploadId=abc&partNumber=2", "partNumber"));
        assert!(has_param("delete", "delete"));
        assert!(!has_param("x-id=PutObject", "delete"));
        let body = Bytes::from_static(
            b"<Delete><Object><Key>modules/a/b/c/1.0.0.zip</Key></Object><Object><Key>a&amp;b</Key></Object></Delete>",
        );
        assert_eq!(keys_in_delete_body(&body), ["modules/a/b/c/1.0.0.zip", "a&b"]);
    }
}
