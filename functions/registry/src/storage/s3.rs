//! Storage on S3 through aws-sdk-s3: used against AWS and against the embedded
//! S3-compatible server of the local registry, so both run the same code path.

use std::time::Duration;

use aws_sdk_s3::Client;
use aws_sdk_s3::config::http::HttpResponse;
use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_s3::presigning::PresigningConfig;
use aws_sdk_s3::primitives::ByteStream;
use bytes::Bytes;

use super::{Object, ObjectInfo, Precondition, Revalidated, Storage};
use crate::error::Error;

#[derive(Debug, Clone)]
/// The registry's bucket through aws-sdk-s3.
pub struct S3Storage {
    client: Client,
    bucket: String,
}

/// Bounds on every S3 call, so a slow S3 answers 503 well inside API Gateway's 30 s limit.
pub fn timeouts() -> aws_config::timeout::TimeoutConfig {
    aws_config::timeout::TimeoutConfig::builder()
        .connect_timeout(Duration::from_secs(2))
        .operation_attempt_timeout(Duration::from_secs(5))
        .operation_timeout(Duration::from_secs(12))
        .build()
}

impl S3Storage {
    /// Storage on `bucket` through `client`.
    pub fn new(client: Client, bucket: impl Into<String>) -> Self {
        S3Storage { client, bucket: bucket.into() }
    }

    /// The client for a Lambda: region, credentials and endpoint from the standard AWS
    /// environment (`AWS_REGION`, role credentials, `AWS_ENDPOINT_URL`...). Built once per
    /// container.
    pub async fn from_env(config: &crate::Config) -> Self {
        let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest()).timeout_config(timeouts()).load().await;
        let s3 = aws_sdk_s3::config::Builder::from(&sdk).force_path_style(config.s3_force_path_style).build();
        S3Storage::new(Client::from_conf(s3), config.bucket.clone())
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
    E: ProvideErrorMetadata + std::error::Error + 'static,
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

/// The body of a GetObject answer, with its ETag.
async fn read_object(key: &str, out: aws_sdk_s3::operation::get_object::GetObjectOutput) -> Result<Object, Error> {
    let etag = out.e_tag.clone().unwrap_or_default();
    let bytes = match out.body.collect().await {
        Ok(body) => body.into_bytes(),
        // The object's bytes no longer match the checksum S3 stored with them: corrupt at
        // rest, not a passing fault. Answer it as unreadable content (readers then answer
        // 500; the indexer rewrites it, `If-Match` this ETag) rather than as an outage that
        // would also block the repair.
        Err(e) if fails_integrity_check(&e) => {
            tracing::error!(key, etag, error = %error_chain(&e), "object fails its integrity check");
            Bytes::new()
        }
        Err(e) => return Err(unavailable("GetObject body", key, e)),
    };
    Ok(Object { bytes, etag })
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

fn unavailable<E: std::error::Error + 'static>(op: &str, key: &str, err: E) -> Error {
    // The full error chain goes to the log only; clients see a generic 503 body.
    Error::Unavailable(format!("{op} {key}: {}", error_chain(&err)))
}

fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        text.push_str(&format!(": {s}"));
        source = s.source();
    }
    text
}

impl Storage for S3Storage {
    async fn get(&self, key: &str) -> Result<Option<Object>, Error> {
        let out = match self.client.get_object().bucket(&self.bucket).key(key).send().await {
            Ok(out) => out,
            Err(e) => return classify_error("GetObject", key, e).map(|()| None),
        };
        read_object(key, out).await.map(Some)
    }

    async fn get_if_changed(&self, key: &str, etag: &str) -> Result<Revalidated, Error> {
        let out = match self.client.get_object().bucket(&self.bucket).key(key).if_none_match(etag).send().await {
            Ok(out) => out,
            // S3 answers 304 with no body; the SDK surfaces it as an unmodelled service error.
            Err(SdkError::ServiceError(se)) if se.raw().status().as_u16() == 304 => return Ok(Revalidated::Unchanged),
            Err(e) => return classify_error("GetObject", key, e).map(|()| Revalidated::Changed(None)),
        };
        read_object(key, out).await.map(|o| Revalidated::Changed(Some(o)))
    }

    async fn etag(&self, key: &str) -> Result<Option<String>, Error> {
        match self.client.head_object().bucket(&self.bucket).key(key).send().await {
            Ok(out) => Ok(Some(out.e_tag.unwrap_or_default())),
            Err(e) => classify_error("HeadObject", key, e).map(|()| None),
        }
    }

    async fn put(&self, key: &str, body: Bytes, content_type: &str, precondition: Precondition) -> Result<(), Error> {
        let mut request = self
            .client
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .content_type(content_type)
            .body(ByteStream::from(body));
        request = match &precondition {
            Precondition::None => request,
            Precondition::IfMatch(etag) => request.if_match(etag),
            Precondition::IfAbsent => request.if_none_match("*"),
        };
        match request.send().await {
            Ok(_) => Ok(()),
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

    async fn stream<F>(&self, key: &str, mut sink: F) -> Result<Option<String>, Error>
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
                    return Err(Error::Corrupt(format!(
                        "the stored bytes fail S3's integrity check ({})",
                        error_chain(&e)
                    )));
                }
                Err(e) => return Err(unavailable("GetObject body", key, e)),
            };
            sink(&chunk)?;
        }
        Ok(Some(out.e_tag.unwrap_or_default()))
    }

    async fn presign_get(&self, key: &str, ttl: Duration) -> Result<String, Error> {
        let presigning =
            PresigningConfig::expires_in(ttl).map_err(|e| Error::Internal(format!("presign lifetime {ttl:?}: {e}")))?;
        let request = self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .presigned(presigning)
            .await
            .map_err(|e| Error::Internal(format!("presign {key}: {e}")))?;
        Ok(request.uri().to_string())
    }
}
