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
            return Err(Error::Internal(format!("presign lifetime {ttl:?}: between 1 s and 7 days")));
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
            .map_err(|e| Error::Internal(format!("presign {key}: {e}")))?
            .into();
        let request = SignableRequest::new("GET", url.as_str(), std::iter::empty(), SignableBody::UnsignedPayload)
            .map_err(|e| Error::Internal(format!("presign {key}: {e}")))?;
        let (instructions, _signature) =
            sign(request, &params).map_err(|e| Error::Internal(format!("presign {key}: {e}")))?.into_parts();
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
            .ok_or_else(|| Error::Internal("presign: no credentials provider for the S3 client".into()))?;
        let fetched = provider
            .provide_credentials()
            .await
            .map_err(|e| Error::Internal(format!("presign: credentials: {}", crate::error::chain(&e))))?;
        *slot = Some(fetched.clone());
        Ok(fetched)
    }

    /// The endpoint and signing region, from one URL the SDK presigns.
    async fn probe(&self) -> Result<Endpoint, Error> {
        let config = PresigningConfig::expires_in(Duration::from_secs(60))
            .map_err(|e| Error::Internal(format!("presign probe: {e}")))?;
        let probe = self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(PROBE_KEY)
            .presigned(config)
            .await
            .map_err(|e| Error::Internal(format!("presign probe: {}", crate::error::chain(&e))))?;
        endpoint_of(probe.uri())
    }
}

/// The base URL (before the probe key) and the signing scope of the SDK's probe URL.
fn endpoint_of(probe: &str) -> Result<Endpoint, Error> {
    let unexpected = || Error::Internal(format!("presign probe: unexpected URL shape {probe}"));
    let (before_query, query) = probe.split_once('?').ok_or_else(unexpected)?;
    let base = before_query.strip_suffix(PROBE_KEY).filter(|b| b.ends_with('/')).ok_or_else(unexpected)?;
    // X-Amz-Credential=AKID%2FDATE%2FREGION%2FSERVICE%2Faws4_request
    let credential = query.split('&').find_map(|p| p.strip_prefix("X-Amz-Credential=")).ok_or_else(unexpected)?;
    let scope: Vec<&str> = credential.split("%2F").collect();
    let [_, _, region, service, "aws4_request"] = scope[..] else { return Err(unexpected()) };
    Ok(Endpoint { base: base.to_string(), region: region.to_string(), service: service.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(
        endpoint: Option<&str>,
        path_style: bool,
        session_token: Option<&str>,
    ) -> (Client, SharedCredentialsProvider) {
        let credentials = Credentials::new(
            "AKIDEXAMPLE",
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            session_token.map(Into::into),
            None,
            "t",
        );
        let provider = SharedCredentialsProvider::new(credentials);
        let mut config = aws_sdk_s3::Config::builder()
            .behavior_version(aws_sdk_s3::config::BehaviorVersion::latest())
            .region(aws_sdk_s3::config::Region::new("eu-west-1"))
            .credentials_provider(provider.clone())
            .force_path_style(path_style);
        if let Some(url) = endpoint {
            config = config.endpoint_url(url);
        }
        (Client::from_conf(config.build()), provider)
    }

    async fn sdk(
        client: &Client,
        bucket: &str,
        key: &str,
        version: Option<&str>,
        ttl: Duration,
        at: SystemTime,
    ) -> String {
        let config = PresigningConfig::builder().start_time(at).expires_in(ttl).build().unwrap();
        let request = client
            .get_object()
            .bucket(bucket)
            .key(key)
            .set_version_id(version.map(str::to_string))
            .presigned(config)
            .await
            .unwrap();
        request.uri().to_string()
    }

    #[tokio::test]
    async fn matches_the_sdk_presigner() {
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000);
        let keys = [
            "providers/registry.terraform.io/hashicorp/aws/terraform-provider-aws_5.100.0_linux_amd64.zip",
            "modules/acme/vpc/aws/1.0.0.tar.gz",
            "modules/acme/with space+plus/aws/1.0.0-rc.1+build.5.tar.gz",
            "modules/ünï/çødé/aws/~tilde%percent&amp=eq?q#h.zip",
            "a//double/slash/",
        ];
        let clients = [
            ("AWS, virtual-hosted", client(None, false, None), "registry-bucket"),
            ("AWS, path style, session token", client(None, true, Some("FwoGZXIvYXdzE+/token=")), "registry-bucket"),
            ("custom endpoint, path style", client(Some("http://127.0.0.1:9000"), true, None), "registry"),
            ("dotted bucket", client(None, false, Some("tok")), "registry.example.com"),
        ];
        for (what, (client, provider), bucket) in &clients {
            let presigner = Presigner::new(client.clone(), Some(provider.clone()), bucket.to_string());
            for key in keys {
                for version in [None, Some("3HL4kqtJlcpXroDTDmJ+rmSpXd3dIbrHY+MTRCxf3vjVBH40Nr8X8gdRQBpUMLUo")] {
                    for ttl in [Duration::from_secs(1), Duration::from_secs(900), MAX_LIFETIME] {
                        let expected = sdk(client, bucket, key, version, ttl, at).await;
                        let ours = presigner.presign_get(key, version, ttl, at).await.unwrap();
                        assert_eq!(ours, expected, "{what}: {key} {version:?} {ttl:?}");
                    }
                }
            }
        }
    }

    #[tokio::test]
    async fn lifetimes_outside_s3s_bounds_are_refused() {
        let (client, provider) = client(None, false, None);
        let presigner = Presigner::new(client, Some(provider), "b".into());
        let now = SystemTime::now();
        for ttl in [Duration::ZERO, MAX_LIFETIME + Duration::from_secs(1)] {
            assert!(presigner.presign_get("k", None, ttl, now).await.is_err(), "{ttl:?}");
        }
    }

    /// Credentials that expire an hour after `start`, counting how often they are asked for.
    #[derive(Debug, Clone)]
    struct Expiring {
        start: SystemTime,
        calls: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    }

    impl ProvideCredentials for Expiring {
        fn provide_credentials<'a>(&'a self) -> aws_credential_types::provider::future::ProvideCredentials<'a>
        where
            Self: 'a,
        {
            let n = self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let expiry = self.start + Duration::from_secs(3600 * (n as u64 + 1));
            let credentials = Credentials::new(format!("AKID{n}"), "secret", Some("token".into()), Some(expiry), "t");
            aws_credential_types::provider::future::ProvideCredentials::ready(Ok(credentials))
        }
    }

    #[tokio::test]
    async fn credentials_are_kept_until_shortly_before_they_expire() {
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000);
        let provider = Expiring { start, calls: Default::default() };
        let (client, _) = client(None, false, None);
        let presigner = Presigner::new(client, Some(SharedCredentialsProvider::new(provider.clone())), "b".into());
        let calls = || provider.calls.load(std::sync::atomic::Ordering::SeqCst);
        let signed_by =
            |url: String| url.split("X-Amz-Credential=").nth(1).unwrap().split("%2F").next().unwrap().to_string();
        let ttl = Duration::from_secs(900);
        for minutes in [0, 10, 54] {
            let at = start + Duration::from_secs(60 * minutes);
            assert_eq!(signed_by(presigner.presign_get("k", None, ttl, at).await.unwrap()), "AKID0", "{minutes} min");
        }
        assert_eq!(calls(), 1, "one fetch while the credentials have more than 5 minutes left");
        // 56 minutes in, 4 left: fetched again, and the new ones (2 h) kept.
        for minutes in [56, 60, 100] {
            let at = start + Duration::from_secs(60 * minutes);
            assert_eq!(signed_by(presigner.presign_get("k", None, ttl, at).await.unwrap()), "AKID1", "{minutes} min");
        }
        assert_eq!(calls(), 2);
        let url = presigner.presign_get("k", None, ttl, start).await.unwrap();
        assert!(url.ends_with("&X-Amz-Security-Token=token"), "{url}");
    }

    #[test]
    fn the_probe_url_gives_base_and_scope() {
        let url = "https://b.s3.eu-west-1.amazonaws.com/registry-presign-probe?x-id=GetObject&X-Amz-Algorithm=AWS4-HMAC-SHA256\
                   &X-Amz-Credential=AKID%2F20261123%2Feu-west-1%2Fs3%2Faws4_request&X-Amz-Date=20261123T000000Z";
        assert_eq!(
            endpoint_of(url).unwrap(),
            Endpoint {
                base: "https://b.s3.eu-west-1.amazonaws.com/".into(),
                region: "eu-west-1".into(),
                service: "s3".into()
            }
        );
        for bad in [
            "https://b.s3.amazonaws.com/other-key?X-Amz-Credential=A%2FD%2Fr%2Fs3%2Faws4_request",
            "https://b.s3.amazonaws.com/registry-presign-probe",
            "https://b.s3.amazonaws.com/registry-presign-probe?X-Amz-Credential=A%2FD%2Fr",
        ] {
            assert!(endpoint_of(bad).is_err(), "{bad}");
        }
    }
}
