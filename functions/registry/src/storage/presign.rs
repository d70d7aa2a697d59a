//! Presigned GET URLs signed with the SDK's signing crate (`aws-sigv4`) directly, not through
//! the SDK's operation pipeline.
//!
//! `client.get_object().presigned(…)` runs a whole operation for each URL: input validation,
//! endpoint rules, interceptors, the identity cache, a request built and signed: ≈ 55–65 µs,
//! most of a `VERSION.json` answer that holds four of them (docs/PERFORMANCE.md). Of that, the
//! signature itself is a canonical request, a SHA-256 and five HMACs. Here the parts that do not
//! change from URL to URL are resolved once and kept:
//!
//! - **Endpoint and signing region**: taken from one URL the SDK presigns for a probe key, so
//!   every endpoint rule (virtual-hosted or path style, `AWS_ENDPOINT_URL`, FIPS, dual-stack,
//!   the region's partition) stays the SDK's. What precedes the probe key in its path is the
//!   base of every URL; the region and service come from its `X-Amz-Credential`.
//! - **Credentials**: from the provider the client was built with, kept until five minutes
//!   before they expire (credentials without an expiry, such as Lambda's environment
//!   variables or static keys, are kept for good), as the SDK's identity cache does.
//!
//! The URL is then written exactly as the SDK writes it: the key encoded as a greedy label
//! (`/` kept), `x-id=GetObject`, `versionId` if any, then the signing parameters in the
//! signer's order, with the SDK's encoding. `tests::matches_the_sdk_presigner` checks the
//! result byte for byte against the SDK's presigner at the same instant, and the embedded S3
//! (s3s, verifying SigV4) serves and refuses these URLs in tests/embedded_s3.rs.

use std::time::{Duration, SystemTime};

use aws_credential_types::Credentials;
use aws_credential_types::provider::ProvideCredentials;
use aws_sdk_s3::Client;
use aws_sdk_s3::config::SharedCredentialsProvider;
use aws_sdk_s3::presigning::PresigningConfig;
use aws_sigv4::http_request::{
    PercentEncodingMode, SessionTokenMode, SignableBody, SignableRequest, SignatureLocation, SigningSettings,
    UriPathNormalizationMode, sign,
};
use aws_smithy_http::label::{self, EncodingStrategy};
use aws_smithy_http::query::fmt_string;
use aws_smithy_runtime_api::client::identity::Identity;
use tokio::sync::{OnceCell, RwLock};

use crate::error::Error;

/// The key presigned once, by the SDK, to learn the endpoint and signing region.
const PROBE_KEY: &str = "registry-presign-probe";
/// Credentials closer than this to their expiry are fetched again.
const REFRESH_BEFORE: Duration = Duration::from_secs(300);
/// S3's longest presigned URL lifetime (SigV4 query signing: 7 days).
const MAX_LIFETIME: Duration = Duration::from_secs(7 * 24 * 3600);

/// What every URL of the bucket shares, from the SDK's presigned probe.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Endpoint {
    /// Everything before the key: `https://BUCKET.s3.REGION.amazonaws.com/` or, path style,
    /// `http://127.0.0.1:9000/BUCKET/`.
    base: String,
    /// The region and service name the SDK signs for.
    region: String,
    service: String,
}

#[derive(Debug)]
pub struct Presigner {
    client: Client,
    /// The provider the client was built with (a built client does not hand it out).
    provider: Option<SharedCredentialsProvider>,
    bucket: String,
    endpoint: OnceCell<Endpoint>,
    credentials: RwLock<Option<Credentials>>,
}

impl Presigner {
    pub fn new(client: Client, provider: Option<SharedCredentialsProvider>, bucket: String) -> Self {
        Presigner { client, provider, bucket, endpoint: OnceCell::new(), credentials: RwLock::new(None) }
    }

    /// A GET URL for `key` (and `version_id`, if any), valid for `ttl` from `now`.
    pub async fn presign_get(
        &self,
        key: &str,
        version_id: Option<&str>,
        ttl: Duration,
        now: SystemTime,
    ) -> Result<String, Error> {
        if ttl.is_zero() || ttl > MAX_LIFETIME {
            return Err(Error::internal(format!("presign lifetime {ttl:?}: between 1 s and 7 days")));
        }
        let endpoint = self.endpoint.get_or_try_init(|| self.probe()).await?;
        let credentials = self.credentials(now).await?;

        let mut url = String::with_capacity(endpoint.base.len() + key.len() + 512);
        url.push_str(&endpoint.base);
        url.push_str(&label::fmt_string(key, EncodingStrategy::Greedy));
        url.push_str("?x-id=GetObject");
        if let Some(version) = version_id {
            url.push_str("&versionId=");
            url.push_str(&fmt_string(version));
        }

        let mut settings = SigningSettings::default();
        settings.signature_location = SignatureLocation::QueryParams;
        settings.expires_in = Some(ttl);
        // S3's signing options (as the SDK's endpoint rules set them for the `s3` service):
        // the path is signed as sent, encoded once, not normalised.
        settings.percent_encoding_mode = PercentEncodingMode::Single;
        settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
        settings.session_token_mode = SessionTokenMode::Include;
        let identity = Identity::from(credentials);
        let params = aws_sigv4::sign::v4::SigningParams::builder()
            .identity(&identity)
            .region(&endpoint.region)
            .name(&endpoint.service)
            .time(now)
            .settings(settings)
            .build()
            .map_err(|e| Error::internal_from(format!("presign {key}"), e))?
            .into();
        let request = SignableRequest::new("GET", url.as_str(), std::iter::empty(), SignableBody::UnsignedPayload)
            .map_err(|e| Error::internal_from(format!("presign {key}"), e))?;
        let (instructions, _signature) =
            sign(request, &params).map_err(|e| Error::internal_from(format!("presign {key}"), e))?.into_parts();
        let (_headers, query) = instructions.into_parts();
        for (name, value) in query {
            url.push('&');
            url.push_str(&fmt_string(name));
            url.push('=');
            url.push_str(&fmt_string(&value));
        }
        Ok(url)
    }

    /// Kept credentials, or fresh ones from the client's provider.
    async fn credentials(&self, now: SystemTime) -> Result<Credentials, Error> {
        let fresh = |c: &Credentials| c.expiry().is_none_or(|at| at > now + REFRESH_BEFORE);
        if let Some(kept) = self.credentials.read().await.as_ref().filter(|c| fresh(c)) {
            return Ok(kept.clone());
        }
        let mut slot = self.credentials.write().await;
        if let Some(kept) = slot.as_ref().filter(|c| fresh(c)) {
            return Ok(kept.clone());
        }
        let provider = self
            .provider
            .as_ref()
            .ok_or_else(|| Error::internal("presign: no credentials provider for the S3 client"))?;
        let fetched =
            provider.provide_credentials().await.map_err(|e| Error::internal_from("presign: credentials", e))?;
        *slot = Some(fetched.clone());
        Ok(fetched)
    }

    /// The endpoint and signing region, from one URL the SDK presigns.
    async fn probe(&self) -> Result<Endpoint, Error> {
        let config = PresigningConfig::expires_in(Duration::from_secs(60))
            .map_err(|e| Error::internal_from("presign probe", e))?;
        let probe = self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(PROBE_KEY)
            .presigned(config)
            .await
            .map_err(|e| Error::internal_from("presign probe", e))?;
        endpoint_of(probe.uri())
    }
}

/// The base URL (before the probe key) and the signing scope of the SDK's probe URL.
fn endpoint_of(probe: &str) -> Result<Endpoint, Error> {
    let unexpected = || Error::internal(format!("presign probe: unexpected URL shape {probe}"));
    let (before_query, query) = probe.split_once('?').ok_or_else(unexpected)?;
    let base = before_query.strip_suffix(PROBE_KEY).filter(|b| b.ends_with('/')).ok_or_else(unexpected)?;
    // X-Amz-Credential=AKID%2FDATE%2FREGION%2FSERVICE%2Faws4_request
    let credential = query.split('&').find_map(|p| p.strip_prefix("X-Amz-Credential=")).ok_or_else(unexpected)?;
    let scope: Vec<&str> = credential.split("%2F").collect();
    let [_, _, region, service, "aws4_request"] = scope[..] else { return Err(unexpected()) };
    Ok(Endpoint { base: base.to_string(), region: region.to_string(), service: service.to_string() })
}

#[cfg(test)]
mod tests;
