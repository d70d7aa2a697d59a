//! The pull-through mirror's upstreams: another registry's provider registry protocol
//! (providers.v1), read as the terraform CLI reads it, with the same checks before anything it
//! says is believed. `docs/HOW-IT-WORKS.md` ("Pull-through") tells the whole flow.
//!
//! - [`UpstreamSettings`]: which hosts, at which addresses, with which time-outs.
//! - [`records`]: what the mirror keeps in the bucket (version lists with their age, pull
//!   records). Pure.
//! - [`release`]: the checks of an upstream release's download answers, `SHA256SUMS` and
//!   signature, before anything they say is believed. Pure (and fuzzed).
//! - `http` (feature `aws`): the bounded HTTPS client.
//! - [`Upstream`] (feature `aws`): discovery, version lists, download metadata, and a release
//!   verified end to end: its `SHA256SUMS` signed by a key the upstream names, every
//!   platform's SHA-256 the one that file lists.
//! - [`copy`] (feature `aws`): the puller, which copies a verified release's zips into the
//!   bucket, each checked against the signed SHA-256 before it is stored (`copy_release`), for
//!   each pull record of a notification batch (`copy_batch`).

pub mod bundle;
pub mod module_records;
pub mod module_source;
pub mod records;
pub mod release;
mod settings;

#[cfg(feature = "aws")]
pub mod copy;
#[cfg(feature = "aws")]
pub mod module_copy;
#[cfg(feature = "aws")]
pub mod module_pull;
#[cfg(feature = "aws")]
pub mod modules;

pub use release::{Download, Release};
pub use settings::{
    BUNDLE_MAX_BYTES, ModuleUpstreamSettings, UPSTREAM_GIT_HOST_DEFAULT, UPSTREAM_HOST_DEFAULT,
    UPSTREAM_MODULE_HOSTS_DEFAULT, UPSTREAM_MODULE_MAX_BYTES_DEFAULT, UPSTREAM_MODULE_PULL_MAX_BYTES,
    UPSTREAM_MODULE_RETRY_AFTER_DEFAULT, UPSTREAM_MODULE_UNPACKED_MAX, UpstreamSettings,
};

#[cfg(feature = "aws")]
pub use client::{DOWN_BACKOFF, Upstream};
#[cfg(feature = "aws")]
pub(crate) use client::{DOWNLOAD_MAX_BYTES, VERSIONS_MAX_BYTES, VersionsBody};

#[cfg(feature = "aws")]
mod client {
    use std::collections::{BTreeMap, HashMap};
    use std::sync::Mutex;
    use std::time::{Duration, Instant};

    use serde::Deserialize;
    use url::Url;

    use super::UpstreamSettings;
    use super::records::{UpstreamVersion, UpstreamVersions};
    use super::release::{Download, Release};
    use crate::address::ProviderAddress;
    use crate::error::Error;
    use crate::http_client::{Got, HttpClient, Stopped, shown};
    use crate::layout::Platform;
    use crate::signing;

    /// How long a host's discovered providers.v1 URL is used before asking again.
    const DISCOVERY_TTL: Duration = Duration::from_secs(600);
    /// How long a host that failed to answer is not asked again: while an upstream is down,
    /// requests are answered at once (from what the bucket keeps, or 502) instead of each
    /// waiting for the time-out.
    pub const DOWN_BACKOFF: Duration = Duration::from_secs(30);
    /// Longest discovery document, version list and download answer read.
    const DISCOVERY_MAX_BYTES: usize = 64 << 10;
    pub(crate) const VERSIONS_MAX_BYTES: usize = 8 << 20;
    pub(crate) const DOWNLOAD_MAX_BYTES: usize = 1 << 20;

    /// A host's service (`providers.v1`, `modules.v1`), as discovery names it.
    type ServiceOf = (String, &'static str);

    /// The allowed upstream registries and the client that reaches them (one per container).
    pub struct Upstream {
        hosts: Vec<String>,
        /// Hosts reached at another address (`UpstreamSettings::endpoints`).
        endpoints: BTreeMap<String, String>,
        versions_ttl: Duration,
        http: HttpClient,
        /// (Host, service) → its base URL, and when it was discovered.
        services: Mutex<HashMap<ServiceOf, (Instant, Url)>>,
        /// Host → when it last failed to answer (`DOWN_BACKOFF`).
        down: Mutex<HashMap<String, Instant>>,
        clock: crate::clock::Monotonic,
    }

    /// providers.v1 `…/versions`, as read of an upstream and by `make publish-provider`.
    #[derive(Deserialize)]
    pub(crate) struct VersionsBody {
        pub(crate) versions: Vec<VersionEntry>,
    }

    #[derive(Deserialize)]
    pub(crate) struct VersionEntry {
        pub(crate) version: String,
        #[serde(default)]
        pub(crate) protocols: Vec<String>,
        #[serde(default)]
        pub(crate) platforms: Vec<PlatformEntry>,
    }

    #[derive(Deserialize)]
    pub(crate) struct PlatformEntry {
        pub(crate) os: String,
        pub(crate) arch: String,
    }

    impl Upstream {
        /// The upstreams of `settings`; `None` when the pull-through is off (no hosts).
        pub fn new(settings: &UpstreamSettings) -> Result<Option<Upstream>, Error> {
            if settings.hosts.is_empty() {
                return Ok(None);
            }
            Ok(Some(Upstream {
                hosts: settings.hosts.clone(),
                endpoints: settings.endpoints.clone(),
                versions_ttl: settings.versions_ttl,
                http: HttpClient::new(settings.ca_file.as_deref(), "REGISTRY_UPSTREAM_CA_FILE", settings.timeout)?,
                services: Mutex::new(HashMap::new()),
                down: Mutex::new(HashMap::new()),
                clock: crate::clock::Monotonic::real(),
            }))
        }

        /// The same upstreams, with the back-off read from `clock` (tests move a manual one).
        pub fn with_clock(self, clock: crate::clock::Monotonic) -> Self {
            Upstream { clock, ..self }
        }

        /// The clock its back-offs are read from.
        pub fn clock(&self) -> &crate::clock::Monotonic {
            &self.clock
        }

        /// GET through the client, unless `host` failed within `DOWN_BACKOFF`; a failure to
        /// answer (unreachable, time-out, 5xx, 429) starts its back-off, an answer ends it. A
        /// wrong answer to one request (a 4xx, a body over its bound) does not: it says nothing
        /// of the host's other modules and providers.
        pub(super) async fn get(
            &self,
            host: &str,
            url: Url,
            limit: usize,
            api: bool,
        ) -> Result<Got<bytes::Bytes>, Error> {
            Ok(match self.get_with(host, url, limit, api, None).await? {
                Got::Found(url, (body, _)) => Got::Found(url, body),
                Got::NotFound => Got::NotFound,
            })
        }

        /// `get`, with the value of the response header `header`.
        pub(super) async fn get_with(
            &self,
            host: &str,
            url: Url,
            limit: usize,
            api: bool,
            header: Option<&str>,
        ) -> Result<Got<(bytes::Bytes, Option<String>)>, Error> {
            let down = || self.down.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(at) = down().get(host)
                && self.clock.since(*at) < DOWN_BACKOFF
            {
                // Not why: that failure may have been another caller's request, for a module
                // or provider this caller may not know exists.
                return Err(Self::failed(
                    host,
                    format!("failed to answer; not asked again for {} s after a failure", DOWN_BACKOFF.as_secs()),
                ));
            }
            match self.http.get_with(url, limit, api, header).await {
                Ok(got) => {
                    down().remove(host);
                    Ok(got)
                }
                Err(failed) => {
                    if failed.down {
                        down().insert(host.to_string(), self.clock.now());
                    }
                    Err(Self::failed(host, failed.why))
                }
            }
        }

        /// Whether `host` is reached at an internal address (an endpoint on loopback or in the
        /// network, `HOST=https://ADDRESS`): only then may what it answers point there too.
        pub(super) fn reached_internally(&self, host: &str) -> bool {
            let origin = self.endpoints.get(host).cloned().unwrap_or_else(|| format!("https://{host}"));
            Url::parse(&origin).is_ok_and(|u| crate::http_client::internal(&u))
        }

        /// Whether providers of `hostname` may be fetched from it.
        pub fn allows(&self, hostname: &str) -> bool {
            self.hosts.iter().any(|h| h == hostname)
        }

        /// How long a kept version list is used without asking.
        pub fn versions_ttl(&self) -> Duration {
            self.versions_ttl
        }

        pub(super) fn failed(host: &str, what: impl std::fmt::Display) -> Error {
            super::release::failed(host, what)
        }

        /// GET a small JSON answer of the registry API.
        pub(super) async fn api<T: serde::de::DeserializeOwned>(
            &self,
            host: &str,
            url: Url,
            limit: usize,
        ) -> Result<Option<(Url, T)>, Error> {
            match self.get(host, url, limit, true).await? {
                Got::NotFound => Ok(None),
                Got::Found(url, body) => {
                    // Where, not what: serde's message quotes the value, and an upstream's answer
                    // is no text to hand to callers.
                    let value = serde_json::from_slice(&body).map_err(|e| {
                        Self::failed(
                            host,
                            format!(
                                "{} is not the expected JSON (line {}, column {})",
                                shown(&url),
                                e.line(),
                                e.column()
                            ),
                        )
                    })?;
                    Ok(Some((url, value)))
                }
            }
        }

        /// The host's base URL of `service` (`providers.v1`, `modules.v1`) by service
        /// discovery, kept for `DISCOVERY_TTL`.
        pub(super) async fn service_base(&self, host: &str, service: &'static str) -> Result<Url, Error> {
            let lock = || self.services.lock().unwrap_or_else(|p| p.into_inner());
            let cached = (host.to_string(), service);
            if let Some((at, base)) = lock().get(&cached)
                && self.clock.since(*at) < DISCOVERY_TTL
            {
                return Ok(base.clone());
            }
            let origin = self.endpoints.get(host).cloned().unwrap_or_else(|| format!("https://{host}"));
            let discovery = Url::parse(&format!("{origin}/.well-known/terraform.json"))
                .map_err(|e| Self::failed(host, format!("not a host name: {e}")))?;
            let Some((url, services)) =
                self.api::<serde_json::Map<String, serde_json::Value>>(host, discovery, DISCOVERY_MAX_BYTES).await?
            else {
                return Err(Self::failed(host, "has no service discovery document (/.well-known/terraform.json)"));
            };
            let Some(path) = services.get(service).and_then(|v| v.as_str()) else {
                return Err(Self::failed(host, format!("offers no {service} service")));
            };
            // Relative to the discovery document's URL after redirects, as the CLI resolves it.
            let mut base = url.join(path).map_err(|e| Self::failed(host, format!("bad {service} URL: {e}")))?;
            if base.scheme() != "https" {
                return Err(Self::failed(host, format!("{service} is not an HTTPS URL")));
            }
            // As for a redirect: a public registry may not point the functions at the
            // machine's or its network's own addresses.
            if crate::http_client::internal(&base) && !crate::http_client::internal(&url) {
                return Err(Self::failed(host, format!("{service} is at an internal address: refused")));
            }
            if !base.path().ends_with('/') {
                base.set_path(&format!("{}/", base.path()));
            }
            lock().insert(cached, (self.clock.now(), base.clone()));
            Ok(base)
        }

        pub(super) fn endpoint(&self, host: &str, base: &Url, path: &str) -> Result<Url, Error> {
            base.join(path).map_err(|e| Self::failed(host, format!("bad URL: {e}")))
        }

        /// The provider's versions and platforms (`…/:namespace/:type/versions`), stamped
        /// `now`; `None` if the upstream has no such provider. Entries that are not SemVer or
        /// name an impossible platform are left out.
        pub async fn versions(&self, provider: &ProviderAddress, now: i64) -> Result<Option<UpstreamVersions>, Error> {
            let host = provider.hostname.as_str();
            let base = self.service_base(host, "providers.v1").await?;
            let url = self.endpoint(host, &base, &format!("{}/{}/versions", provider.namespace, provider.r#type))?;
            let Some((_, body)) = self.api::<VersionsBody>(host, url, VERSIONS_MAX_BYTES).await? else {
                return Ok(None);
            };
            let mut versions = BTreeMap::new();
            for entry in body.versions {
                let Ok(version) = crate::address::parse_version(&entry.version) else { continue };
                let platforms = entry
                    .platforms
                    .iter()
                    .filter_map(|p| Platform::parse(&p.os, &p.arch).ok())
                    .map(|p| p.key())
                    .collect();
                versions.insert(version.to_string(), UpstreamVersion { protocols: entry.protocols, platforms });
            }
            Ok(Some(UpstreamVersions { fetched_at: now, versions }))
        }

        /// One platform's download answer, its URLs absolute; `None` if the upstream has none.
        pub async fn download(
            &self,
            provider: &ProviderAddress,
            version: &semver::Version,
            platform: &Platform,
        ) -> Result<Option<Download>, Error> {
            let host = provider.hostname.as_str();
            let base = self.service_base(host, "providers.v1").await?;
            let path = format!(
                "{}/{}/{version}/download/{}/{}",
                provider.namespace, provider.r#type, platform.os, platform.arch
            );
            let url = self.endpoint(host, &base, &path)?;
            let Some((url, mut download)) = self.api::<Download>(host, url, DOWNLOAD_MAX_BYTES).await? else {
                return Ok(None);
            };
            if download.os != platform.os || download.arch != platform.arch {
                return Err(Self::failed(
                    host,
                    format!("asked for {}, answered {}_{}", platform.key(), download.os, download.arch),
                ));
            }
            for field in [&mut download.download_url, &mut download.shasums_url, &mut download.shasums_signature_url] {
                *field =
                    url.join(field).map_err(|e| Self::failed(host, format!("bad URL in download answer: {e}")))?.into();
            }
            Ok(Some(download))
        }

        /// A small file a download answer points at (`SHA256SUMS`, its signature).
        async fn file(&self, host: &str, what: &str, url: &str, limit: usize) -> Result<Vec<u8>, Error> {
            let url = Url::parse(url).map_err(|e| Self::failed(host, format!("bad {what} URL: {e}")))?;
            match self.get(host, url, limit, false).await? {
                Got::Found(_, body) => Ok(body.to_vec()),
                Got::NotFound => Err(Self::failed(host, format!("its {what} is missing (404)"))),
            }
        }

        /// Version `version` for `platforms`, verified as the CLI verifies a provider from a
        /// registry: `SHA256SUMS` signed by one of the keys the upstream names, every
        /// platform's SHA-256 the one that file lists for its file name. `None` if the upstream
        /// has none of the platforms. A release that fails a check is a `BadGateway` naming
        /// the check; nothing of it is believed.
        pub async fn release(
            &self,
            provider: &ProviderAddress,
            version: &semver::Version,
            platforms: &[Platform],
            now: i64,
        ) -> Result<Option<Release>, Error> {
            let host = provider.hostname.as_str();
            let answers = futures_util::future::join_all(
                platforms.iter().map(|platform| self.download(provider, version, platform)),
            )
            .await;
            let mut downloads = Vec::new();
            for (platform, answer) in platforms.iter().zip(answers) {
                match answer? {
                    Some(download) => downloads.push((platform.key(), download)),
                    None => {
                        tracing::warn!(%provider, %version, platform = %platform.key(), "upstream lists a platform it has no download for")
                    }
                }
            }
            let Some((_, first)) = downloads.first() else { return Ok(None) };
            let (sums, signature) = futures_util::future::join(
                self.file(host, "SHA256SUMS", &first.shasums_url, signing::SHASUMS_MAX_BYTES),
                self.file(host, "SHA256SUMS signature", &first.shasums_signature_url, signing::SIGNATURE_MAX_BYTES),
            )
            .await;
            let (sums, signature) = (sums?, signature?);
            Release::verified(provider, version, downloads, sums, &signature, now).map(Some)
        }

        /// Stream the archive at `url` into `sink`; how many bytes. An error of `sink` comes
        /// back as it was; the upstream's are `BadGateway`.
        pub async fn fetch_archive(
            &self,
            host: &str,
            url: &str,
            sink: impl FnMut(&[u8]) -> Result<(), Error>,
        ) -> Result<u64, Error> {
            let url = Url::parse(url).map_err(|e| Self::failed(host, format!("bad archive URL: {e}")))?;
            let fetched = self.http.stream(url, sink).await.map_err(|stopped| match stopped {
                Stopped::Upstream(why) => Self::failed(host, why),
                Stopped::Sink(e) => e,
            });
            match fetched? {
                Got::Found(_, size) => Ok(size),
                Got::NotFound => Err(Self::failed(host, "the archive is missing (404)")),
            }
        }
    }
}
