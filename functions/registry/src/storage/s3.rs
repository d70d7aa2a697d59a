//! Storage on S3 through aws-sdk-s3: used against AWS and against the embedded
//! S3-compatible server of the local registry, so both run the same code path.

use std::sync::Arc;
use std::time::Duration;

use aws_sdk_s3::Client;
use aws_sdk_s3::config::SharedCredentialsProvider;
use aws_sdk_s3::config::http::HttpResponse;
use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_s3::primitives::ByteStream;
use bytes::Bytes;

use super::presign::Presigner;
use super::{Object, ObjectInfo, Precondition, Revalidated, Storage, Stored};
use crate::error::{Error, chain};

#[derive(Debug, Clone)]
/// The registry's bucket through aws-sdk-s3.
pub struct S3Storage {
    client: Client,
    bucket: String,
    /// Archive URLs, signed without the SDK's operation pipeline (one per container).
    presigner: Arc<Presigner>,
}

/// Bounds on every S3 call but a write over 8 MiB (`timeouts_for`). With `retries`, a read fails within about 6 s (attempts of at most
/// 2.5 s, connect within 2 s, 6 s in all); a body that fails on the way is read once more
/// (`BODY_RETRY_AFTER`), so a request gives up after about 12 s: inside the read functions'
/// 15 s timeout and API Gateway's 29 s, and early enough for the terraform CLI to retry.
pub fn timeouts() -> aws_sdk_s3::config::timeout::TimeoutConfig {
    aws_sdk_s3::config::timeout::TimeoutConfig::builder()
        .connect_timeout(Duration::from_secs(2))
        .operation_attempt_timeout(Duration::from_millis(2500))
        .operation_timeout(Duration::from_secs(6))
        .build()
}

/// The SDK's own retries: up to two more attempts after a throttled (503 SlowDown), failed
/// (5xx), timed-out or reset request, or one sent on a connection the server had closed
/// (hyper's "connection closed before message completed", which the SDK counts as
/// transient), 50 ms to 500 ms later, all within the operation timeout above. Three, not two:
/// connections that went idle together are closed together, so a second attempt can meet a
/// second dead one.
pub fn retries() -> aws_sdk_s3::config::retry::RetryConfig {
    aws_sdk_s3::config::retry::RetryConfig::standard()
        .with_max_attempts(3)
        .with_initial_backoff(Duration::from_millis(50))
        .with_max_backoff(Duration::from_millis(500))
}

/// How long a connection may sit idle in the client's pool before it is dropped: below the
/// time S3 closes an idle connection after (about 20 s; not documented, widely observed) and
/// the embedded S3's 30 s, so that a request is not sent on a connection the server is closing
/// (the SDK's default is hyper's 90 s).
pub const POOL_IDLE: Duration = Duration::from_secs(15);

/// The HTTP client of every S3 client the registry builds: the SDK's default (hyper, rustls
/// with aws-lc), with its pool's idle time `POOL_IDLE`. No proxy: a Lambda reaches S3 directly
/// (a person's own commands use `from_env`, which keeps the SDK's client and its proxy settings).
pub fn http_client() -> aws_sdk_s3::config::SharedHttpClient {
    use aws_smithy_http_client::tls::{Provider, rustls_provider::CryptoMode};
    aws_smithy_http_client::Builder::new()
        .pool_idle_timeout(POOL_IDLE)
        .tls_provider(Provider::Rustls(CryptoMode::AwsLc))
        .build_https()
}

/// Past this size a write's attempt and operation timeouts grow with it (`timeouts_for`): the
/// 2.5 s attempt of `timeouts` carries about 200 MB at S3's 85 MB/s, less on a slow link.
const LARGE_BODY: u64 = 8 << 20;
/// The slowest rate a large write is given time for: a fifth of what one connection to S3
/// carries in the model `make bench` uses (85 MB/s; docs/PERFORMANCE.md).
const LARGE_BODY_BYTES_PER_SECOND: f64 = (16 << 20) as f64;

/// The timeouts of a write of `bytes`, if they differ from `timeouts`: for a large body, an
/// attempt of 2.5 s plus its transfer at `LARGE_BODY_BYTES_PER_SECOND` (19 s for the puller's
/// 256 MiB module archive, 67 s for a 1 GiB provider zip) and an operation of three of them, so
/// every size the registry accepts can be stored (a fixed 2.5 s failed every archive over
/// about 200 MiB), and a stalled one still ends.
pub fn timeouts_for(bytes: u64) -> Option<aws_sdk_s3::config::timeout::TimeoutConfig> {
    if bytes <= LARGE_BODY {
        return None;
    }
    let attempt = Duration::from_millis(2500) + Duration::from_secs_f64(bytes as f64 / LARGE_BODY_BYTES_PER_SECOND);
    Some(
        aws_sdk_s3::config::timeout::TimeoutConfig::builder()
            .connect_timeout(Duration::from_secs(2))
            .operation_attempt_timeout(attempt)
            .operation_timeout(attempt * 3)
            .build(),
    )
}

/// How long to wait before reading a body again that failed on the way (cut short, or not
/// matching its checksum): the SDK retries requests, not bodies.
const BODY_RETRY_AFTER: Duration = Duration::from_millis(50);

impl S3Storage {
    /// Storage on `bucket` through `client`, which signs with `credentials` (given again: a
    /// built client does not hand out its credentials provider, and the presigner needs it).
    pub fn new(client: Client, credentials: Option<SharedCredentialsProvider>, bucket: impl Into<String>) -> Self {
        let bucket = bucket.into();
        let presigner = Arc::new(Presigner::new(client.clone(), credentials, bucket.clone()));
        S3Storage { client, bucket, presigner }
    }

    /// The client for a Lambda, built once per container: the region and the role's credentials
    /// from the variables Lambda sets (`AWS_REGION`, `AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`), and the endpoint settings aws-config
    /// would read (`AWS_ENDPOINT_URL_S3` or `AWS_ENDPOINT_URL`, `AWS_USE_FIPS_ENDPOINT`,
    /// `AWS_USE_DUALSTACK_ENDPOINT`, `AWS_IGNORE_CONFIGURED_ENDPOINT_URLS`). Not through
    /// aws-config: in Lambda its credential chain stops at these same variables (and never
    /// refreshes them either), and leaving it (with its STS, SSO, profile and IMDS providers)
    /// out of the binaries is 0.72 MB of each (docs/PERFORMANCE.md, "Lambda packages"). Takes the two settings it needs, not the configuration: storage sits below
    /// `config` (whose limits name the index, which names storage).
    pub fn from_lambda_env(bucket: &str, force_path_style: bool) -> Result<Self, Error> {
        S3Storage::from_variables(bucket, force_path_style, |name| std::env::var(name).ok())
    }

    /// `from_lambda_env`, reading the variables through `var`.
    pub fn from_variables(
        bucket: &str,
        force_path_style: bool,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, Error> {
        let var = |name: &str| var(name).filter(|v| !v.is_empty());
        let missing = |name: &str| Error::internal(format!("{name} is not set (Lambda sets it for every function)"));
        let region = var("AWS_REGION").or_else(|| var("AWS_DEFAULT_REGION")).ok_or_else(|| missing("AWS_REGION"))?;
        let id = var("AWS_ACCESS_KEY_ID").ok_or_else(|| missing("AWS_ACCESS_KEY_ID"))?;
        let secret = var("AWS_SECRET_ACCESS_KEY").ok_or_else(|| missing("AWS_SECRET_ACCESS_KEY"))?;
        let credentials = aws_credential_types::Credentials::new(id, secret, var("AWS_SESSION_TOKEN"), None, "Lambda");
        let credentials = SharedCredentialsProvider::new(credentials);
        let mut config = aws_sdk_s3::config::Builder::new()
            .behavior_version(aws_sdk_s3::config::BehaviorVersion::latest())
            .region(aws_sdk_s3::config::Region::new(region))
            .credentials_provider(credentials.clone())
            .timeout_config(timeouts())
            .retry_config(retries())
            .http_client(http_client())
            .force_path_style(force_path_style);
        // The endpoint settings aws-config read from the environment, read the same way.
        let on = |name: &str| var(name).is_some_and(|v| v.eq_ignore_ascii_case("true"));
        config = config.use_fips(on("AWS_USE_FIPS_ENDPOINT")).use_dual_stack(on("AWS_USE_DUALSTACK_ENDPOINT"));
        if let Some(endpoint) = var("AWS_ENDPOINT_URL_S3").or_else(|| var("AWS_ENDPOINT_URL"))
            && !on("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS")
        {
            config = config.endpoint_url(endpoint);
        }
        Ok(S3Storage::new(Client::from_conf(config.build()), Some(credentials), bucket.to_string()))
    }

    /// The client for the local registry's commands on a deployed bucket (`--bucket`), from a
    /// person's own AWS configuration: aws-config's whole chain (profiles, SSO, the
    /// environment...), which no Lambda links.
    pub async fn from_env(bucket: &str, force_path_style: bool) -> Self {
        let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .timeout_config(timeouts())
            .retry_config(retries())
            .load()
            .await;
        let s3 = aws_sdk_s3::config::Builder::from(&sdk).force_path_style(force_path_style).build();
        S3Storage::new(Client::from_conf(s3), sdk.credentials_provider(), bucket.to_string())
    }

    /// `presign_get` as if signed at `at`: a test gets a URL that has expired, or is valid for
    /// an hour, without waiting or depending on which second the clock shows.
    pub async fn presign_get_at(
        &self,
        key: &str,
        version_id: Option<&str>,
        ttl: Duration,
        at: std::time::SystemTime,
    ) -> Result<String, Error> {
        self.presigner.presign_get(key, version_id, ttl, at).await
    }

    /// The bucket's name.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }
}

/// What an SDK error says about the key: 404 is "no such key"; S3's `AccessDenied` (403) is
/// `Error::Forbidden`, which a role without `s3:ListBucket` also gets for a missing key, so
/// the caller decides (a manifest read treats it as absent, the token store as an error);
/// anything else is S3 being unavailable.
fn classify_error<E>(op: &str, key: &str, err: SdkError<E, HttpResponse>) -> Result<(), Error>
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    if let SdkError::ServiceError(se) = &err {
        match (se.err().code(), se.raw().status().as_u16()) {
            (Some("NoSuchKey" | "NotFound" | "NoSuchBucket"), _) | (None, 404) => return Ok(()),
            (Some("AccessDenied" | "Forbidden"), _) | (None, 403) => {
                return Err(Error::Forbidden(format!("{op} {key}")));
            }
            _ => {}
        }
    }
    Err(unavailable(op, key, err))
}

/// The body of a GetObject answer, with its ETag. Bytes that do not match the checksum S3 sent
/// are `Error::Corrupt` (in transit, or at rest); a body that breaks off is `Unavailable`.
async fn read_object(key: &str, out: aws_sdk_s3::operation::get_object::GetObjectOutput) -> Result<Object, Error> {
    let etag = out.e_tag.clone().unwrap_or_default();
    match out.body.collect().await {
        Ok(body) => Ok(Object { bytes: body.into_bytes(), etag }),
        Err(e) if fails_integrity_check(&e) => {
            Err(Error::Corrupt(format!("GetObject {key} ({etag}) fails its integrity check: {}", chain(&e))))
        }
        Err(e) => Err(unavailable("GetObject body", key, e)),
    }
}

/// How a GET failed: the request (the SDK has retried it already), or the body on the way.
enum Failed {
    Request(Error),
    Body(Error),
}

/// Run a GET whose body may fail on the way once more, a moment later: the SDK has retried
/// the request already, not the body. What fails twice is answered as it failed.
async fn body_retried<T, F, Fut>(key: &str, mut read: F) -> Result<T, Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, Failed>>,
{
    let first = match read().await {
        Ok(value) => return Ok(value),
        Err(Failed::Request(e)) => return Err(e),
        Err(Failed::Body(e)) => e,
    };
    tracing::warn!(key, error = %chain(&first), "the body failed on the way; reading the object again");
    tokio::time::sleep(BODY_RETRY_AFTER).await;
    read().await.map_err(|(Failed::Request(e) | Failed::Body(e))| e)
}

/// Whether a body read failed because the bytes do not match the checksum S3 stored with
/// them (the SDK validates it while streaming), as opposed to a transport failure.
fn fails_integrity_check(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(err);
    while let Some(e) = cause {
        if matches!(
            e.downcast_ref::<aws_smithy_checksums::body::validate::Error>(),
            Some(aws_smithy_checksums::body::validate::Error::ChecksumMismatch { .. })
        ) {
            return true;
        }
        cause = e.source();
    }
    false
}

/// `Unavailable`: `op` on `key` failed, the SDK's error beneath it (its chain goes to the log
/// only; clients see a generic 503 body).
fn unavailable<E: std::error::Error + Send + Sync + 'static>(op: &str, key: &str, err: E) -> Error {
    Error::unavailable_from(format!("{op} {key}"), err)
}

impl S3Storage {
    /// One PutObject of `size` bytes with its condition, answering the ETag S3 gave the object;
    /// 412 and 409 are `Error::Conflict`. A large body gets the time its size needs
    /// (`timeouts_for`).
    async fn put_stream(
        &self,
        key: &str,
        (body, size): (ByteStream, u64),
        content_type: &str,
        precondition: Precondition,
    ) -> Result<String, Error> {
        let mut request = self.client.put_object().bucket(&self.bucket).key(key).content_type(content_type).body(body);
        request = match &precondition {
            Precondition::None => request,
            Precondition::IfMatch(etag) => request.if_match(etag),
            Precondition::IfAbsent => request.if_none_match("*"),
        };
        let sent = match timeouts_for(size) {
            Some(timeouts) => {
                let longer = aws_sdk_s3::config::Builder::new().timeout_config(timeouts);
                request.customize().config_override(longer).send().await
            }
            None => request.send().await,
        };
        match sent {
            Ok(out) => Ok(out.e_tag.unwrap_or_default()),
            // 412: the condition failed; 409: a concurrent conditional write is in flight.
            Err(SdkError::ServiceError(se))
                if matches!(se.raw().status().as_u16(), 409 | 412)
                    || matches!(se.err().code(), Some("PreconditionFailed" | "ConditionalRequestConflict")) =>
            {
                Err(Error::Conflict(format!("{key}: {precondition:?} does not hold")))
            }
            Err(e) => Err(unavailable("PutObject", key, e)),
        }
    }
}

impl Storage for S3Storage {
    async fn get(&self, key: &str) -> Result<Option<Object>, Error> {
        body_retried(key, || async {
            let out = match self.client.get_object().bucket(&self.bucket).key(key).send().await {
                Ok(out) => out,
                Err(e) => return classify_error("GetObject", key, e).map(|()| None).map_err(Failed::Request),
            };
            read_object(key, out).await.map(Some).map_err(Failed::Body)
        })
        .await
    }

    async fn get_if_changed(&self, key: &str, etag: &str) -> Result<Revalidated, Error> {
        body_retried(key, || async {
            let request = self.client.get_object().bucket(&self.bucket).key(key).if_none_match(etag);
            let out = match request.send().await {
                Ok(out) => out,
                // S3 answers 304 with no body; the SDK surfaces it as an unmodelled service error.
                Err(SdkError::ServiceError(se)) if se.raw().status().as_u16() == 304 => {
                    return Ok(Revalidated::Unchanged);
                }
                Err(e) => {
                    let absent = classify_error("GetObject", key, e).map(|()| Revalidated::Changed(None));
                    return absent.map_err(Failed::Request);
                }
            };
            read_object(key, out).await.map(|o| Revalidated::Changed(Some(o))).map_err(Failed::Body)
        })
        .await
    }

    async fn etag(&self, key: &str) -> Result<Option<String>, Error> {
        match self.client.head_object().bucket(&self.bucket).key(key).send().await {
            Ok(out) => Ok(Some(out.e_tag.unwrap_or_default())),
            Err(e) => classify_error("HeadObject", key, e).map(|()| None),
        }
    }

    async fn put(&self, key: &str, body: Bytes, content_type: &str, precondition: Precondition) -> Result<(), Error> {
        self.put_etag(key, body, content_type, precondition).await.map(drop)
    }

    async fn put_etag(
        &self,
        key: &str,
        body: Bytes,
        content_type: &str,
        precondition: Precondition,
    ) -> Result<String, Error> {
        let size = body.len() as u64;
        self.put_stream(key, (ByteStream::from(body), size), content_type, precondition).await
    }

    async fn put_file(
        &self,
        key: &str,
        path: &std::path::Path,
        content_type: &str,
        precondition: Precondition,
    ) -> Result<(), Error> {
        let body = ByteStream::from_path(path)
            .await
            .map_err(|e| Error::internal_from(format!("read {}", path.display()), e))?;
        // Its size as the file has it (what `from_path` sends); unknown, the largest accepted.
        let size = body.size_hint().1.unwrap_or(1 << 30);
        self.put_stream(key, (body, size), content_type, precondition).await.map(drop)
    }

    async fn delete(&self, key: &str) -> Result<(), Error> {
        self.client
            .delete_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
            .map_err(|e| unavailable("DeleteObject", key, e))?;
        Ok(())
    }

    async fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>, Error> {
        let mut pages = self.client.list_objects_v2().bucket(&self.bucket).prefix(prefix).into_paginator().send();
        let mut objects = Vec::new();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| unavailable("ListObjectsV2", prefix, e))?;
            for o in page.contents.unwrap_or_default() {
                if let Some(key) = o.key {
                    objects.push(ObjectInfo {
                        key,
                        size: o.size.unwrap_or(0).max(0) as u64,
                        etag: o.e_tag.unwrap_or_default(),
                    });
                }
            }
        }
        objects.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(objects)
    }

    async fn stream<F>(&self, key: &str, mut sink: F) -> Result<Option<Stored>, Error>
    where
        F: FnMut(&[u8]) -> Result<(), Error> + Send,
    {
        let mut out = match self.client.get_object().bucket(&self.bucket).key(key).send().await {
            Ok(out) => out,
            Err(e) => return classify_error("GetObject", key, e).map(|()| None),
        };
        while let Some(chunk) = out.body.next().await {
            let chunk = match chunk {
                Ok(chunk) => chunk,
                Err(e) if fails_integrity_check(&e) => {
                    return Err(Error::Corrupt(format!("the stored bytes fail S3's integrity check ({})", chain(&e))));
                }
                Err(e) => return Err(unavailable("GetObject body", key, e)),
            };
            sink(&chunk)?;
        }
        Ok(Some(Stored { etag: out.e_tag.unwrap_or_default(), version_id: out.version_id }))
    }

    async fn presign_get(&self, key: &str, version_id: Option<&str>, ttl: Duration) -> Result<String, Error> {
        self.presign_get_at(key, version_id, ttl, std::time::SystemTime::now()).await
    }
}

#[cfg(test)]
mod tests {
    use aws_sdk_s3::operation::get_object::GetObjectError;
    use aws_smithy_runtime_api::client::result::ConnectorError;

    use super::*;

    /// The Lambda's client takes what Lambda sets, and says which variable is missing.
    #[tokio::test]
    async fn the_lambda_client_is_built_from_lambdas_variables() {
        let lambda = [
            ("AWS_REGION", "eu-west-1"),
            ("AWS_ACCESS_KEY_ID", "ASIAEXAMPLE"),
            ("AWS_SECRET_ACCESS_KEY", "secret"),
            ("AWS_SESSION_TOKEN", "session"),
            ("AWS_ENDPOINT_URL", "http://127.0.0.1:9"),
            ("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:8"),
            ("AWS_USE_DUALSTACK_ENDPOINT", "false"),
        ];
        let from = |unset: &'static str| {
            move |name: &str| lambda.iter().find(|(n, _)| *n == name && *n != unset).map(|(_, v)| v.to_string())
        };
        let storage = S3Storage::from_variables("bucket", true, from("")).unwrap();
        let config = storage.client.config();
        assert_eq!(config.region().map(|r| r.as_ref()), Some("eu-west-1"));
        assert_eq!(storage.bucket(), "bucket");
        let url =
            storage.presign_get_at("k", None, Duration::from_secs(60), std::time::SystemTime::now()).await.unwrap();
        assert!(url.starts_with("http://127.0.0.1:8/bucket/k?"), "the S3 endpoint first, path style: {url}");
        assert!(url.contains("X-Amz-Security-Token=session") && url.contains("ASIAEXAMPLE"), "{url}");
        for missing in ["AWS_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"] {
            let error = S3Storage::from_variables("bucket", false, from(missing)).unwrap_err();
            assert!(chain(&error).contains(missing), "{missing}: {}", chain(&error));
        }
    }

    /// S3 unreachable: the SDK's error is the cause, reachable through `source()` and in the
    /// chain a log line shows, and never in what a client reads.
    #[test]
    fn an_s3_failure_keeps_the_sdk_error_as_its_cause() {
        let refused = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "connection refused");
        let sdk = SdkError::<GetObjectError, HttpResponse>::dispatch_failure(ConnectorError::io(Box::new(refused)));
        let err = classify_error("GetObject", "modules/acme/vpc/aws/1.0.0.zip", sdk).unwrap_err();
        assert_eq!(err.to_string(), "unavailable: GetObject modules/acme/vpc/aws/1.0.0.zip");
        let cause = std::error::Error::source(&err).expect("the SDK's error");
        assert!(cause.downcast_ref::<SdkError<GetObjectError, HttpResponse>>().is_some(), "{cause:?}");
        assert_eq!(
            chain(&err),
            "unavailable: GetObject modules/acme/vpc/aws/1.0.0.zip: dispatch failure: io error: connection refused"
        );
        assert_eq!(err.public_message(), "storage is unavailable, try again");
        assert_eq!(err.body(), br#"{"errors":["storage is unavailable, try again"]}"#);
    }
}
