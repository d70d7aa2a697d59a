//! The request handler every deployment shares: the read Lambdas (each serving its own
//! routes) and the local registry (serving all of them). It maps (method, raw path) to a
//! JSON reply with exactly one storage read for any route that needs one.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;
use http::{Method, StatusCode};
use serde_json::{Value, json};
use sha2::Digest;

use crate::access::{self, Decision, Resource, TokenStore};
use crate::address::ProviderAddress;
use crate::cache::ManifestCache;
use crate::config::Config;
use crate::error::Error;
use crate::layout::{self, Wanted};
use crate::manifest::{CONTENT_TYPE_JSON, ModuleManifest, ProviderIndex, ProviderVersion};
use crate::router::{self, Route, Service};
use crate::storage::{Revalidated, Storage};

/// Version lists: a cache may keep them but must revalidate (ETag) before each use, so a
/// new version shows at once; `private` because what a token may see is per token.
pub(crate) const NO_CACHE: &str = "private, no-cache";

/// `If-None-Match` (a list, or `*`) against our strong ETag; weak comparison, as RFC 9110
/// asks for this header.
fn etag_matches(condition: &str, etag: &str) -> bool {
    let bare = |t: &str| t.trim().trim_start_matches("W/").to_string();
    condition.split(',').any(|c| c.trim() == "*" || bare(c) == bare(etag))
}

/// A module download URL with the archive's SHA-256 for go-getter to check: it reads
/// `checksum=sha256:HEX` from the URL, removes it before the request (so the presigned
/// signature still matches) and refuses bytes that differ with "Checksums did not match". So
/// the CLI installs exactly the bytes the indexer hashed, even if the object is replaced or
/// altered in the bucket afterwards. Last in the query: go-getter finds it anywhere, and the
/// path's extension still tells it the archive type.
fn with_checksum(url: String, sha256: &str) -> Result<String, Error> {
    if sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return Err(Error::Internal(format!("the manifest records no valid SHA-256 ({sha256:?})")));
    }
    let separator = if url.contains('?') { '&' } else { '?' };
    Ok(format!("{url}{separator}checksum=sha256:{sha256}"))
}

/// What a request for something that does not exist gets. A token that may not read it gets
/// exactly this too: one builder for both, so the two answers can never drift apart and a
/// token cannot tell hidden from absent.
fn absent(route: &Route) -> Error {
    Error::NotFound(match route {
        Route::ModuleVersions(m)
        | Route::ModuleDownload(m, _)
        | Route::ModuleLatest(m)
        | Route::ModuleDetails(m, _) => {
            format!("module {m} not found")
        }
        Route::MirrorIndex(p) => format!("provider {p} not found"),
        Route::MirrorVersion(p, v) => format!("provider {p} has no version {v}"),
        Route::ProviderVersions(p) => format!("provider {p} not found"),
        Route::ProviderDownload(p, v, platform) => {
            format!("provider {p} has no version {v} for {}", platform.key())
        }
        Route::Page(crate::router::Page::Module(m, _)) => format!("module {m} not found"),
        Route::Page(crate::router::Page::Provider(p, _)) => format!("provider {p} not found"),
        Route::Discovery | Route::ModuleList(_) | Route::ModuleSearch(_) | Route::Page(_) => "not found".into(),
    })
}

/// A manifest as a request uses it: the parsed value, and whether it is a cached copy served
/// because storage failed.
pub(crate) struct Read<T> {
    pub(crate) value: Arc<T>,
    pub(crate) stale: bool,
}

/// The header that marks an answer made from a cached manifest because storage failed.
pub const STALE_HEADER: &str = "x-registry-stale";

/// How long before a request's deadline (`Config::request_budget`) a manifest read is given
/// up when a cached copy can be served instead.
const STALE_MARGIN: std::time::Duration = std::time::Duration::from_millis(1500);

/// A transport-neutral response; the Lambda adapter and the local server each turn it into
/// their own response type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The HTTP status.
    pub status: StatusCode,
    /// Header names (lower case) and values.
    pub headers: Vec<(&'static str, String)>,
    /// The body: JSON, or empty for HEAD and 304.
    pub body: Bytes,
}

impl Reply {
    pub(crate) fn json(status: StatusCode, value: &impl serde::Serialize) -> Self {
        match serde_json::to_vec(value) {
            Ok(body) => Reply { status, headers: vec![("content-type", CONTENT_TYPE_JSON.into())], body: body.into() },
            Err(e) => {
                tracing::error!(error = %e, "answer not serialisable");
                Reply::error(&Error::Internal(format!("serialise answer: {e}")))
            }
        }
    }

    /// The answer to an error: its status, `{"errors": [...]}`, and for 401 the challenge.
    pub fn error(err: &Error) -> Self {
        let mut headers = vec![("content-type", CONTENT_TYPE_JSON.into())];
        if matches!(err, Error::Unauthorized(_)) {
            // RFC 6750: how to authenticate. The terraform CLI sends credentials it has anyway.
            headers.push(("www-authenticate", r#"Bearer realm="terraform-registry""#.into()));
        }
        if err.status() == StatusCode::SERVICE_UNAVAILABLE {
            // A storage fault outlived the retries: asking again in a second is reasonable.
            headers.push(("retry-after", "1".into()));
        }
        Reply { status: err.status(), headers, body: err.body().into() }
    }

    pub(crate) fn header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    /// Say so when the answer comes from a copy kept through a storage fault.
    pub(crate) fn stale(self, stale: bool) -> Self {
        if stale {
            self.header(STALE_HEADER, "storage unavailable; served from this function's cached manifest")
        } else {
            self
        }
    }

    /// Marked as made without the upstream (pull-through), which failed: from what the
    /// bucket keeps of it.
    #[cfg(feature = "aws")]
    pub(crate) fn upstream_stale(self, stale: bool) -> Self {
        if stale {
            self.header(STALE_HEADER, "upstream registry unreachable; served from what the bucket keeps of it")
        } else {
            self
        }
    }

    /// A strong ETag of the body, for answers that carry no presigned URL (those change at every
    /// request and are `no-store`).
    pub(crate) fn etag(self) -> Self {
        let digest = sha2::Sha256::digest(&self.body);
        let etag = format!("\"{}\"", hex::encode(&digest[..16]));
        self.header("etag", etag)
    }

    /// The first value of header `name` (case-insensitive).
    pub fn header_value(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The reply as an `http::Response`, what both transports send (the local server as it is,
    /// the Lambda adapter as API Gateway's response event).
    pub fn into_http(self) -> http::Response<Bytes> {
        let mut response = http::Response::new(self.body);
        *response.status_mut() = self.status;
        for (name, value) in self.headers {
            // Every value is built by this module from ASCII; one that is not is dropped
            // rather than sent malformed.
            if let Ok(value) = http::HeaderValue::from_str(&value) {
                response.headers_mut().append(name, value);
            }
        }
        response
    }
}

/// What the handler looks at in a request; everything else (other headers, the body) is
/// ignored. Transports fill it in from their own request type.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The request method.
    pub method: &'a Method,
    /// The path exactly as the client sent it: not decoded, not normalised.
    pub raw_path: &'a str,
    /// The raw query string, if any (`None` or empty: none).
    pub query: Option<&'a str>,
    /// The `Authorization` header; never logged.
    pub authorization: Option<&'a str>,
    /// The `If-None-Match` header: a client or proxy revalidating an answer it kept.
    pub if_none_match: Option<&'a str>,
    /// The `Cookie` header (the web pages' sign-in); never logged.
    pub cookie: Option<&'a str>,
    /// The `Host` header: the address the pages' snippets name when `REGISTRY_HOSTNAME` is not
    /// set, and what a form's `Origin` must match.
    pub host: Option<&'a str>,
    /// The `Origin` header of a form post.
    pub origin: Option<&'a str>,
    /// The body (read only from the sign-in form's POST); never logged.
    pub body: &'a [u8],
}

impl<'a> Request<'a> {
    /// A request with this method and raw path, no query and no headers.
    pub fn new(method: &'a Method, raw_path: &'a str) -> Self {
        Request {
            method,
            raw_path,
            query: None,
            authorization: None,
            if_none_match: None,
            cookie: None,
            host: None,
            origin: None,
            body: &[],
        }
    }

    /// A `GET` of `raw_path`.
    pub fn get(raw_path: &'a str) -> Self {
        Request::new(&Method::GET, raw_path)
    }

    /// The request as every transport has it: the method, the path exactly as sent (not
    /// decoded, not normalised), the raw query, and the headers, of which only
    /// `Authorization`, `If-None-Match`, and for the web pages `Cookie`, `Host` and `Origin`
    /// are read. The body is added with `body` where there is one.
    pub fn from_parts(
        method: &'a Method,
        raw_path: &'a str,
        query: Option<&'a str>,
        headers: &'a http::HeaderMap,
    ) -> Self {
        let header = |name| headers.get(name).and_then(|v: &http::HeaderValue| v.to_str().ok());
        Request::new(method, raw_path)
            .query(query)
            .authorization(header(http::header::AUTHORIZATION))
            .if_none_match(header(http::header::IF_NONE_MATCH))
            .cookie(header(http::header::COOKIE))
            .host(header(http::header::HOST))
            .origin(header(http::header::ORIGIN))
    }

    /// With this `Cookie` header.
    pub fn cookie(mut self, cookie: Option<&'a str>) -> Self {
        self.cookie = cookie;
        self
    }

    /// With this `Host` header.
    pub fn host(mut self, host: Option<&'a str>) -> Self {
        self.host = host;
        self
    }

    /// With this `Origin` header.
    pub fn origin(mut self, origin: Option<&'a str>) -> Self {
        self.origin = origin;
        self
    }

    /// With this body.
    pub fn body(mut self, body: &'a [u8]) -> Self {
        self.body = body;
        self
    }

    /// With this raw query string.
    pub fn query(mut self, query: Option<&'a str>) -> Self {
        self.query = query;
        self
    }

    /// With this `Authorization` header.
    pub fn authorization(mut self, authorization: Option<&'a str>) -> Self {
        self.authorization = authorization;
        self
    }

    /// With this `If-None-Match` header.
    pub fn if_none_match(mut self, if_none_match: Option<&'a str>) -> Self {
        self.if_none_match = if_none_match;
        self
    }
}

/// The handler with its configuration, storage and per-container state; one per process.
pub struct App<S> {
    /// Loaded once at start.
    pub config: Config,
    /// The bucket (S3, in memory, or none for discovery).
    pub storage: S,
    services: Vec<Service>,
    /// The token store as last read, and when (kept for `config.tokens_cache`).
    tokens: Mutex<Option<(Instant, Option<Arc<TokenStore>>)>>,
    /// Parsed manifests of this container, revalidated by ETag (`cache`).
    manifests: ManifestCache,
    /// The mirror's upstream registries (pull-through); `None`: off.
    #[cfg(feature = "aws")]
    upstream: Option<Arc<crate::upstream::Upstream>>,
    /// The OpenID Connect issuers' key sets (`oidc`); `None`: none configured.
    #[cfg(feature = "aws")]
    oidc: Option<Arc<crate::oidc::keys::Keys>>,
}

impl<S: Storage> App<S> {
    /// An app answering the routes of `services`; other routes answer 404, as they would if
    /// API Gateway had sent a request to the wrong function.
    pub fn new(config: Config, storage: S, services: &[Service]) -> Self {
        let manifests = ManifestCache::new(config.manifest_cache_bytes, config.manifest_cache_ttl);
        App {
            config,
            storage,
            services: services.to_vec(),
            tokens: Mutex::new(None),
            manifests,
            #[cfg(feature = "aws")]
            upstream: None,
            #[cfg(feature = "aws")]
            oidc: None,
        }
    }

    /// What every deployment runs (each Lambda, the local registry): `new`, with the clients
    /// its configuration asks for built once: the upstream registries' where `services`
    /// include the mirror, the OpenID Connect issuers' where any are configured. Fails on a
    /// CA file that cannot be read.
    #[cfg(feature = "aws")]
    pub fn with_clients(config: Config, storage: S, services: &[Service]) -> Result<Self, Error> {
        Self::with_clients_and_clock(config, storage, services, crate::clock::Monotonic::real())
    }

    /// `with_clients`, with the key sets' bounds and the upstreams' back-off read from `clock` (tests
    /// move a manual one).
    #[cfg(feature = "aws")]
    pub fn with_clients_and_clock(
        config: Config,
        storage: S,
        services: &[Service],
        clock: crate::clock::Monotonic,
    ) -> Result<Self, Error> {
        let upstream = match services.contains(&Service::Mirror) {
            true => crate::upstream::Upstream::new(&config.upstream)?.map(|u| Arc::new(u.with_clock(clock.clone()))),
            false => None,
        };
        let oidc = match config.oidc_issuers.is_empty() {
            true => None,
            false => {
                let keys = crate::oidc::keys::Keys::new(&config.oidc_issuers, config.oidc_ca_file.as_deref())?;
                Some(Arc::new(keys.with_clock(clock)))
            }
        };
        Ok(App { upstream, oidc, ..App::new(config, storage, services) })
    }

    /// The mirror's upstream registries, for the publishing side of the same process (the
    /// local registry's indexer copies what the pull-through fetched).
    #[cfg(feature = "aws")]
    pub fn upstream(&self) -> Option<Arc<crate::upstream::Upstream>> {
        self.upstream.clone()
    }

    /// The upstream to ask for `provider`, if its host is one.
    #[cfg(feature = "aws")]
    fn upstream_for(&self, provider: &ProviderAddress) -> Option<Arc<crate::upstream::Upstream>> {
        self.upstream.as_ref().filter(|u| u.allows(&provider.hostname)).cloned()
    }

    /// Answer one request. Its `Authorization` header and query string are never logged.
    pub async fn handle(&self, request: &Request<'_>) -> Reply {
        let Request { method, raw_path, query, if_none_match, .. } = *request;
        let started = Instant::now();
        let routed = router::route(method, raw_path, query, &self.config.paths);
        let (route_name, result) = match routed {
            Ok(route) => {
                let (name, budget) = (route.name(), self.config.request_budget);
                let deadline = tokio::time::Instant::now() + budget;
                let answered = tokio::time::timeout_at(deadline, self.dispatch(route, request, deadline)).await;
                let result =
                    answered.unwrap_or_else(|_| Err(Error::Unavailable(format!("no answer within {budget:?}"))));
                (name, result)
            }
            Err(e) => ("none", Err(e)),
        };
        let mut reply = match &result {
            Ok(reply) => reply.clone(),
            Err(e) => self.refuse(e, request),
        };
        if reply.status == StatusCode::OK
            && let (Some(etag), Some(condition)) = (reply.header_value("etag"), if_none_match)
            && etag_matches(condition, etag)
        {
            reply.status = StatusCode::NOT_MODIFIED;
            reply.body = Bytes::new();
            reply.headers.retain(|(name, _)| *name != "content-type");
        }
        if *method == Method::HEAD {
            reply.body = Bytes::new();
        }
        let path = crate::address::printable(raw_path);
        let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
        match &result {
            Err(e) if e.is_server_error() => {
                tracing::error!(%method, %path, route = route_name, status = reply.status.as_u16(), elapsed_ms, error = %e, "request failed")
            }
            _ => {
                tracing::info!(%method, %path, route = route_name, status = reply.status.as_u16(), elapsed_ms, "request")
            }
        }
        reply
    }

    /// The answer to a request that fails with `error`: JSON (`{"errors": [...]}`), or for a
    /// web page's path a page that says what went wrong, with the same status. Transports use
    /// it for what they refuse before the handler (a body too large, say).
    pub fn refuse(&self, error: &Error, request: &Request<'_>) -> Reply {
        if router::is_page_path(request.raw_path) { self.error_page(error, request) } else { Reply::error(error) }
    }

    async fn dispatch(
        &self,
        route: Route,
        request: &Request<'_>,
        deadline: tokio::time::Instant,
    ) -> Result<Reply, Error> {
        if !self.services.contains(&route.service()) {
            return Err(Error::NotFound(format!("this function does not serve {}", route.name())));
        }
        if let Route::Page(page) = &route {
            return self.page(page, request, deadline).await;
        }
        let authorization = request.authorization;
        // providers.v1 names providers of this registry's own host.
        let own = match &route {
            Route::ProviderVersions(name) | Route::ProviderDownload(name, ..) => match &self.config.hostname {
                Some(hostname) => Some(name.at(hostname)),
                None => {
                    return Err(Error::NotFound(
                        "this registry serves no providers.v1 (REGISTRY_HOSTNAME is not set)".into(),
                    ));
                }
            },
            _ => None,
        };
        if let Route::ModuleList(listing) | Route::ModuleSearch(listing) = &route {
            let viewer = self.viewer(authorization).await?;
            return self.module_listing(listing, &viewer, deadline).await;
        }
        self.authorize(&route, own.as_ref(), authorization).await?;
        let absent = || absent(&route);
        match &route {
            // The same for every caller of a deployment: any cache may keep it a while.
            Route::Discovery => {
                Ok(Reply::json(StatusCode::OK, &self.discovery()).header("cache-control", "public, max-age=300").etag())
            }
            Route::ModuleVersions(module) => {
                let key = layout::module_manifest(module);
                let read =
                    self.manifest(&key, ModuleManifest::parse, |m| m.versions.is_empty(), absent, deadline).await?;
                Ok(Reply::json(StatusCode::OK, &read.value.versions_response())
                    .header("cache-control", NO_CACHE)
                    .etag()
                    .stale(read.stale))
            }
            Route::ModuleDownload(module, version) => {
                let key = layout::module_manifest(module);
                let read =
                    self.manifest(&key, ModuleManifest::parse, |m| m.versions.is_empty(), absent, deadline).await?;
                let entry = read
                    .value
                    .find(version)
                    .ok_or_else(|| Error::NotFound(format!("module {module} has no version {version}")))?;
                let wanted = Wanted::ModuleArchive { module, version };
                let url = self.presign(&entry.archive, entry.version_id.as_deref(), wanted).await?;
                let url = with_checksum(url, &entry.sha256)?;
                // Terraform 1.11 reads the header (204 or 200); OpenTofu prefers the body.
                // A 200 with both works for both and keeps every answer JSON.
                Ok(Reply::json(StatusCode::OK, &json!({ "location": url }))
                    .header("x-terraform-get", url)
                    .header("cache-control", "no-store")
                    .stale(read.stale))
            }
            Route::MirrorIndex(provider) => {
                #[cfg(feature = "aws")]
                if let Some(upstream) = self.upstream_for(provider) {
                    return self.mirror_index_through(upstream, provider, deadline, absent).await;
                }
                let key = layout::provider_index(provider);
                let read =
                    self.manifest(&key, ProviderIndex::parse, |i| i.versions.is_empty(), absent, deadline).await?;
                Ok(Reply::json(StatusCode::OK, &read.value.response())
                    .header("cache-control", NO_CACHE)
                    .etag()
                    .stale(read.stale))
            }
            Route::MirrorVersion(provider, version) => {
                #[cfg(feature = "aws")]
                if let Some(upstream) = self.upstream_for(provider) {
                    return self.mirror_version_through(upstream, provider, version, deadline, absent).await;
                }
                let key = layout::provider_version(provider, version);
                let read =
                    self.manifest(&key, ProviderVersion::parse, |d| d.archives.is_empty(), absent, deadline).await?;
                let archives = self.mirror_archives(provider, version, &read.value).await?;
                Ok(Reply::json(StatusCode::OK, &json!({ "archives": archives }))
                    .header("cache-control", "no-store")
                    .stale(read.stale))
            }
            Route::ProviderVersions(_) => {
                let provider = own.as_ref().ok_or_else(absent)?;
                let key = layout::provider_index(provider);
                let read =
                    self.manifest(&key, ProviderIndex::parse, |i| i.versions.is_empty(), absent, deadline).await?;
                let body = read.value.registry_versions();
                if body["versions"].as_array().is_none_or(|v| v.is_empty()) {
                    return Err(absent());
                }
                Ok(Reply::json(StatusCode::OK, &body).header("cache-control", NO_CACHE).etag().stale(read.stale))
            }
            Route::ProviderDownload(_, version, platform) => {
                let provider = own.as_ref().ok_or_else(absent)?;
                self.provider_download(provider, version, platform, deadline, absent).await
            }
            Route::ModuleLatest(module) => self.module_details(module, None, absent, deadline).await,
            Route::ModuleDetails(module, version) => self.module_details(module, Some(version), absent, deadline).await,
            // Answered above: by what the viewer may read, and by the web module.
            Route::ModuleList(_) | Route::ModuleSearch(_) | Route::Page(_) => Err(absent()),
        }
    }

    /// `VERSION.json`'s `archives` for what the bucket holds: each zip presigned (the version
    /// the indexer hashed), with its `zh:` and `h1:` hashes, `zh:` first (the cheaper check
    /// for the CLI: `ProviderArchive::hashes_for_cli`).
    pub(crate) async fn mirror_archives(
        &self,
        provider: &ProviderAddress,
        version: &semver::Version,
        document: &ProviderVersion,
    ) -> Result<serde_json::Map<String, Value>, Error> {
        let prefix = layout::provider_prefix(provider);
        let mut archives = serde_json::Map::new();
        for (platform, archive) in &document.archives {
            let wanted = Wanted::ProviderArchive { provider, version, platform };
            let url = self.presign(&format!("{prefix}{}", archive.url), archive.version_id(), wanted).await?;
            let mut entry = json!({ "url": url });
            if !archive.hashes.is_empty() {
                entry["hashes"] = json!(archive.hashes_for_cli());
            }
            archives.insert(platform.clone(), entry);
        }
        Ok(archives)
    }

    /// providers.v1 `…/:version/download/:os/:arch`: one read (the version's document), three
    /// presigned URLs (the zip, `SHA256SUMS`, its signature), and the key that signed it.
    async fn provider_download(
        &self,
        provider: &ProviderAddress,
        version: &semver::Version,
        platform: &layout::Platform,
        deadline: tokio::time::Instant,
        absent: impl Fn() -> Error,
    ) -> Result<Reply, Error> {
        let key = layout::provider_version(provider, version);
        let read = self.manifest(&key, ProviderVersion::parse, |d| d.archives.is_empty(), &absent, deadline).await?;
        let document = &read.value;
        let (Some(release), Some(archive)) = (&document.release, document.archives.get(&platform.key())) else {
            return Err(absent());
        };
        let shasum = archive.zh();
        let prefix = layout::provider_prefix(provider);
        let platform_key = platform.key();
        let zip = Wanted::ProviderArchive { provider, version, platform: &platform_key };
        let download_url = self.presign(&format!("{prefix}{}", archive.url), archive.version_id(), zip).await?;
        let file = |file| layout::provider_release_file_name(provider, version, file);
        let wanted = |file| Wanted::ProviderReleaseFile { provider, version, file };
        let (sums, sig) = (layout::ReleaseFile::Shasums, layout::ReleaseFile::Signature);
        let shasums_url = self.presign(&format!("{prefix}{}", file(sums)), None, wanted(sums)).await?;
        let shasums_signature_url = self.presign(&format!("{prefix}{}", file(sig)), None, wanted(sig)).await?;
        let body = json!({
            "protocols": release.protocols,
            "os": platform.os,
            "arch": platform.arch,
            "filename": archive.url,
            "download_url": download_url,
            "shasums_url": shasums_url,
            "shasums_signature_url": shasums_signature_url,
            "shasum": shasum,
            "signing_keys": {"gpg_public_keys": [{
                "key_id": release.signing_key.key_id,
                "ascii_armor": release.signing_key.ascii_armor,
            }]},
        });
        Ok(Reply::json(StatusCode::OK, &body).header("cache-control", "no-store").stale(read.stale))
    }

    /// `/.well-known/terraform.json`: only services this registry implements. The network
    /// mirror is configured by URL, not discovered, so it is not announced; providers.v1 is,
    /// once the registry knows its own host name (`REGISTRY_HOSTNAME`).
    pub fn discovery(&self) -> Value {
        let mut services = json!({ "modules.v1": self.config.paths.modules });
        if self.config.hostname.is_some() {
            services["providers.v1"] = json!(self.config.paths.providers);
        }
        // `terraform login`: the CLI runs the authorization code grant (with PKCE) against
        // the issuer itself, and sends the access token it gets as its bearer token.
        if let Some(login) = self.config.oidc_issuers.iter().find_map(|i| i.login.as_ref()) {
            let mut client = json!({
                "client": login.client,
                "grant_types": ["authz_code"],
                "authz": login.authz,
                "token": login.token,
                "ports": login.ports,
            });
            if !login.scopes.is_empty() {
                client["scopes"] = json!(login.scopes);
            }
            services["login.v1"] = client;
        }
        services
    }

    /// The one access check, for Lambdas and the local registry alike (see `access`).
    pub(crate) async fn authorize(
        &self,
        route: &Route,
        own: Option<&ProviderAddress>,
        authorization: Option<&str>,
    ) -> Result<(), Error> {
        let resource = match (route, own) {
            (Route::Discovery, _) => Resource::Discovery,
            (
                Route::ModuleVersions(m)
                | Route::ModuleDownload(m, _)
                | Route::ModuleLatest(m)
                | Route::ModuleDetails(m, _),
                _,
            ) => Resource::Module(m),
            (Route::Page(crate::router::Page::Module(m, _)), _) => Resource::Module(m),
            (Route::Page(crate::router::Page::Provider(p, _)), _) => Resource::Provider(p),
            // A listing is filtered item by item (`viewer`), not allowed or refused whole; the
            // other pages name nothing to read.
            (Route::ModuleList(_) | Route::ModuleSearch(_) | Route::Page(_), _) => return Err(absent(route)),
            (Route::MirrorIndex(p) | Route::MirrorVersion(p, _), _) => Resource::Provider(p),
            // The scope of a providers.v1 provider is its full address, as for the mirror.
            (Route::ProviderVersions(_) | Route::ProviderDownload(..), Some(p)) => Resource::Provider(p),
            (Route::ProviderVersions(_) | Route::ProviderDownload(..), None) => return Err(absent(route)),
        };
        if matches!(resource, Resource::Discovery) {
            return Ok(());
        }
        match access::judge(&self.config.access, &self.presenter(authorization).await?, resource) {
            Decision::Allow => Ok(()),
            Decision::Unauthenticated(why) => Err(Error::Unauthorized(why.into())),
            Decision::Hidden => Err(absent(route)),
        }
    }

    /// Who presents `authorization`, for an answer that lists many things: 401 for a header
    /// that is no usable token, and for no token where nothing may be read without one.
    async fn viewer(&self, authorization: Option<&str>) -> Result<access::Viewer, Error> {
        match self.presenter(authorization).await? {
            access::Viewer::Anonymous if self.config.access.anonymous_modules.is_empty() => {
                Err(Error::Unauthorized("a bearer token is required".into()))
            }
            viewer => Ok(viewer),
        }
    }

    /// Who presents `authorization`: anonymous without one, 401 for one that is no usable token.
    /// A JWT naming a configured OpenID Connect issuer is that issuer's to judge (`oidc`);
    /// any other token is looked up in the token store. The store is read only for a
    /// well-formed token: garbage in `Authorization` costs no S3 request.
    pub(crate) async fn presenter(&self, authorization: Option<&str>) -> Result<access::Viewer, Error> {
        let Some(token) = authorization.and_then(access::bearer) else {
            return access::viewer(None, authorization, crate::clock::now_unix())
                .map_err(|why| Error::Unauthorized(why.into()));
        };
        #[cfg(feature = "aws")]
        if let Some(verified) = self.verify_jwt(token).await? {
            return verified.map(access::Viewer::Token).map_err(Error::Unauthorized);
        }
        #[cfg(not(feature = "aws"))]
        let _ = token;
        let store = self.tokens().await?;
        access::viewer(store.as_deref(), authorization, crate::clock::now_unix())
            .map_err(|why| Error::Unauthorized(why.into()))
    }

    /// A JWT's verdict, if it names a configured issuer (`None`: not ours to judge).
    #[cfg(feature = "aws")]
    async fn verify_jwt(&self, token: &str) -> Result<Option<Result<access::TokenRecord, String>>, Error> {
        match &self.oidc {
            Some(keys) => Ok(keys.verify(token).await),
            // Issuers configured but their keys never set up: an app built with `new` where
            // `start` was needed. Refused loudly rather than read as an unknown static token.
            None if !self.config.oidc_issuers.is_empty() => {
                Err(Error::Internal("OpenID Connect issuers are configured but this app was built without them".into()))
            }
            None => Ok(None),
        }
    }

    /// The one way a read route hands out an archive URL: only for a key that
    /// `layout::archive_key` classifies as exactly the archive the request named.
    /// `version_id`: the object version the indexer hashed, where the bucket keeps versions.
    async fn presign(&self, key: &str, version_id: Option<&str>, wanted: Wanted<'_>) -> Result<String, Error> {
        let key = layout::archive_key(key, wanted)?;
        self.storage.presign_get(key, version_id, self.config.presign_ttl).await
    }

    /// The token store, read at most once per `tokens_cache` per container. An unreadable
    /// store fails closed (500); it never lets requests through. That includes S3's
    /// `AccessDenied`, which a function without `s3:ListBucket` also gets for a missing key:
    /// infra creates an empty store with the bucket, so denied means misconfigured here.
    async fn tokens(&self) -> Result<Option<Arc<TokenStore>>, Error> {
        let lock = || self.tokens.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((at, store)) = lock().as_ref()
            && at.elapsed() < self.config.tokens_cache
        {
            return Ok(store.clone());
        }
        let read = self.storage.get(layout::TOKENS).await.map_err(|e| match e {
            Error::Forbidden(why) => Error::Internal(format!("token store unreadable: {why}")),
            // Not served stale: a revoked token must not live on through an outage.
            Error::Corrupt(why) => Error::Unavailable(why),
            other => other,
        })?;
        let store = match read {
            None => None,
            Some(o) => Some(Arc::new(TokenStore::parse(&o.bytes)?)),
        };
        *lock() = Some((Instant::now(), store.clone()));
        Ok(store)
    }

    /// The one storage read of a request: a manifest, parsed. Absent, or empty (the indexer
    /// empties rather than deletes: a delete could race a publish): `missing()`, a 404.
    /// Unparsable: 500, with the detail in the log only. A warm container revalidates its
    /// cached copy instead (`If-None-Match`: 304, no body, no parse), or within
    /// `REGISTRY_MANIFEST_CACHE_SECONDS` uses it without asking. When S3 fails (after the
    /// SDK's retry and a second read of a body that failed on the way), the cached copy is
    /// served, marked stale, rather than an error; with none, 503 and `Retry-After`. With a
    /// copy to fall back on, a read still going on `STALE_MARGIN` before the request's
    /// `deadline` counts as failed, so the copy is served in time.
    pub(crate) async fn manifest<T: Send + Sync + 'static>(
        &self,
        key: &str,
        parse: fn(&[u8]) -> Result<T, Error>,
        is_empty: fn(&T) -> bool,
        missing: impl Fn() -> Error,
        deadline: tokio::time::Instant,
    ) -> Result<Read<T>, Error> {
        let hit = self.manifests.get::<T>(key);
        if let Some(hit) = hit.as_ref().filter(|h| h.fresh) {
            return Ok(Read { value: hit.value.clone(), stale: false });
        }
        let fetched = match &hit {
            Some(hit) => {
                let give_up = deadline.checked_sub(STALE_MARGIN).unwrap_or(deadline);
                let read = tokio::time::timeout_at(give_up, self.storage.get_if_changed(key, &hit.etag)).await;
                read.unwrap_or_else(|_| Err(Error::Unavailable(format!("GetObject {key}: no answer in time"))))
            }
            None => self.storage.get(key).await.map(Revalidated::Changed),
        };
        let (value, stale) = match (fetched, hit) {
            (Ok(Revalidated::Unchanged), Some(hit)) => {
                self.manifests.revalidated(key);
                (Some(hit.value), false)
            }
            (Ok(Revalidated::Unchanged), None) => (None, false),
            (Ok(Revalidated::Changed(object)), _) => {
                self.manifests.remove(key);
                (self.parse_and_keep(key, object, parse)?, false)
            }
            // The read functions have no `s3:ListBucket` (least privilege), so S3 answers a
            // missing manifest with AccessDenied rather than NoSuchKey: absent, for a manifest.
            (Err(Error::Forbidden(_)), _) => {
                self.manifests.remove(key);
                (None, false)
            }
            (Err(e @ (Error::Unavailable(_) | Error::Corrupt(_))), Some(hit)) => {
                tracing::warn!(key, error = %e, "storage failed; serving the copy this container holds");
                (Some(hit.value), true)
            }
            (Err(Error::Corrupt(why)), None) => return Err(Error::Unavailable(why)),
            (Err(e), _) => return Err(e),
        };
        let value = value.ok_or_else(&missing)?;
        if is_empty(&value) {
            return Err(missing());
        }
        Ok(Read { value, stale })
    }

    fn parse_and_keep<T: Send + Sync + 'static>(
        &self,
        key: &str,
        object: Option<crate::storage::Object>,
        parse: fn(&[u8]) -> Result<T, Error>,
    ) -> Result<Option<Arc<T>>, Error> {
        let Some(object) = object else { return Ok(None) };
        let manifest =
            Arc::new(parse(&object.bytes).map_err(|e| Error::Internal(format!("unreadable manifest {key}: {e}")))?);
        // Without an ETag there is nothing to revalidate with.
        if !object.etag.is_empty() {
            self.manifests.insert(key, &object.etag, manifest.clone(), object.bytes.len());
        }
        Ok(Some(manifest))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::MemoryStorage;

    fn app() -> App<MemoryStorage> {
        let storage = MemoryStorage::new();
        storage.insert(
            "indexed/modules/acme/vpc/aws/manifest.json",
            serde_json::to_vec(&ModuleManifest::new(vec![crate::manifest::ModuleVersion {
                version: "1.0.0".into(),
                archive: "modules/acme/vpc/aws/1.0.0.tar.gz".into(),
                size: 3,
                sha256: "ab".repeat(32),
                etag: "\"x\"".into(),
                version_id: None,
                docs: true,
                published_at: None,
            }]))
            .unwrap(),
        );
        storage.insert(
            "indexed/providers/registry.terraform.io/hashicorp/null/index.json",
            r#"{"versions":{"3.2.1":{}}}"#,
        );
        storage.insert(
            "indexed/providers/registry.terraform.io/hashicorp/null/3.2.1.json",
            r#"{"archives":{"linux_amd64":{"url":"terraform-provider-null_3.2.1_linux_amd64.zip","hashes":["h1:abc=","zh:00"],"indexed":{"size":1,"etag":"e"}}}}"#,
        );
        storage.insert("indexed/modules/broken/vpc/aws/manifest.json", "{not json");
        storage.insert("indexed/modules/acme/yanked/aws/manifest.json", r#"{"format":1,"versions":[]}"#);
        storage.insert("indexed/providers/registry.terraform.io/hashicorp/gone/index.json", r#"{"versions":{}}"#);
        storage.insert("indexed/providers/registry.terraform.io/hashicorp/null/3.0.0.json", r#"{"archives":{}}"#);
        App::new(open(Config::new("bucket")), storage, &Service::ALL)
    }

    /// Routing tests: anonymous reads allowed everywhere, so access does not get in the way.
    fn open(mut config: Config) -> Config {
        config.access.anonymous_modules = vec!["*".into()];
        config.access.anonymous_providers = vec!["*".into()];
        config
    }

    async fn get(app: &App<MemoryStorage>, path: &str) -> (u16, Value, Reply) {
        let reply = app.handle(&Request::get(path)).await;
        assert_eq!(reply.header_value("content-type"), Some("application/json"), "{path}");
        let body: Value = serde_json::from_slice(&reply.body).unwrap_or(Value::Null);
        (reply.status.as_u16(), body, reply)
    }

    #[tokio::test]
    async fn every_route_reads_storage_at_most_once() {
        let app = app();
        let cases = [
            ("/.well-known/terraform.json", 200, 0),
            ("/v1/modules/acme/vpc/aws/versions", 200, 1),
            ("/v1/modules/acme/vpc/aws/1.0.0/download", 200, 1),
            ("/v1/modules/acme/vpc/aws/9.9.9/download", 404, 1),
            ("/v1/modules/acme/nope/aws/versions", 404, 1),
            ("/v1/modules/broken/vpc/aws/versions", 500, 1),
            ("/v1/modules/acme/yanked/aws/versions", 404, 1),
            ("/v1/mirror/registry.terraform.io/hashicorp/gone/index.json", 404, 1),
            ("/v1/mirror/registry.terraform.io/hashicorp/null/3.0.0.json", 404, 1),
            ("/v1/mirror/registry.terraform.io/hashicorp/null/index.json", 200, 1),
            ("/v1/mirror/registry.terraform.io/hashicorp/null/3.2.1.json", 200, 1),
            ("/v1/mirror/registry.terraform.io/hashicorp/null/3.2.0.json", 404, 1),
            ("/v1/modules/%2e%2e/vpc/aws/versions", 400, 0),
        ];
        for (path, status, reads) in cases {
            let before = app.storage.request_count();
            let (got, body, _) = get(&app, path).await;
            assert_eq!(got, status, "{path}: {body}");
            assert_eq!(app.storage.request_count() - before, reads, "{path}");
            if status >= 400 {
                assert!(body["errors"][0].is_string(), "{path}: {body}");
            }
        }
    }

    /// A manifest where publishers write is never read, and an entry of a manifest that does
    /// get read is presigned only if it is exactly the requested archive.
    #[tokio::test]
    async fn downloads_presign_only_the_requested_archive() {
        let app = app();
        let planted = ModuleManifest::new(vec![crate::manifest::ModuleVersion {
            version: "6.6.6".into(),
            archive: "access/tokens.json".into(),
            size: 1,
            sha256: "00".into(),
            etag: "\"x\"".into(),
            version_id: None,
            docs: true,
            published_at: None,
        }]);
        // Planted by a publisher of `acme` beside its archives: not where manifests live.
        app.storage.insert("modules/acme/planted/aws/manifest.json", serde_json::to_vec(&planted).unwrap());
        let (status, body, _) = get(&app, "/v1/modules/acme/planted/aws/6.6.6/download").await;
        assert_eq!((status, body), (404, json!({"errors": ["module acme/planted/aws not found"]})));

        // Even a manifest under `indexed/` hands out nothing but the archive it names for the
        // requested version: the token store, another namespace, another version, another
        // module's archive all answer 500 and no URL.
        for archive in [
            "access/tokens.json",
            "modules/other/vpc/aws/6.6.6.tar.gz",
            "modules/acme/vpc/aws/1.0.0.tar.gz",
            "indexed/modules/acme/vpc/aws/manifest.json",
            "rejections/modules/acme/vpc/aws/6.6.6.tar.gz.json",
        ] {
            let mut manifest = planted.clone();
            manifest.versions[0].archive = archive.into();
            app.storage.insert("indexed/modules/acme/vpc/aws/manifest.json", serde_json::to_vec(&manifest).unwrap());
            let (status, body, reply) = get(&app, "/v1/modules/acme/vpc/aws/6.6.6/download").await;
            assert_eq!((status, body), (500, json!({"errors": ["internal error"]})), "{archive}");
            assert_eq!(reply.header_value("x-terraform-get"), None, "{archive}");
        }
        let mut doc = ProviderVersion::default();
        doc.archives.insert(
            "linux_amd64".into(),
            crate::manifest::ProviderArchive {
                url: "../../../access/tokens.json".into(),
                hashes: vec![],
                indexed: None,
            },
        );
        app.storage.insert(
            "indexed/providers/registry.terraform.io/hashicorp/null/3.2.1.json",
            serde_json::to_vec(&doc).unwrap(),
        );
        let (status, _, _) = get(&app, "/v1/mirror/registry.terraform.io/hashicorp/null/3.2.1.json").await;
        assert_eq!(status, 500);
    }

    #[tokio::test]
    async fn access_denied_is_absence_for_a_manifest_and_an_error_for_the_token_store() {
        // The read functions have no s3:ListBucket: S3 answers AccessDenied for a missing key.
        let app = app();
        app.storage.deny("indexed/modules/acme/vpc/aws/manifest.json");
        assert_eq!(get(&app, "/v1/modules/acme/vpc/aws/versions").await.0, 404);

        let storage = MemoryStorage::new();
        storage.deny(layout::TOKENS);
        let app = App::new(Config::new("bucket"), storage, &Service::ALL);
        let reply =
            app.handle(&Request::get("/v1/modules/acme/vpc/aws/versions").authorization(Some("Bearer trg_x"))).await;
        assert_eq!(
            reply.status,
            StatusCode::INTERNAL_SERVER_ERROR,
            "fails closed, and says it is the registry's fault"
        );
    }

    #[tokio::test]
    async fn download_answers_header_and_body() {
        let (_, body, reply) = get(&app(), "/v1/modules/acme/vpc/aws/1.0.0/download").await;
        let url = reply.header_value("x-terraform-get").unwrap();
        assert_eq!(body["location"], url);
        assert!(url.starts_with("https://memory.invalid/modules/acme/vpc/aws/1.0.0.tar.gz?"), "{url}");
        // Last, where go-getter takes it off before the request: the SHA-256 it checks.
        assert!(url.ends_with(&format!("&checksum=sha256:{}", "ab".repeat(32))), "{url}");
        assert!(!url.contains("versionId"), "no version recorded, none named: {url}");
        assert_eq!(reply.header_value("cache-control"), Some("no-store"));
    }

    /// In a versioned bucket the URL names the object version the indexer hashed, for modules
    /// and provider zips alike; a manifest without a valid SHA-256 hands out no URL.
    #[tokio::test]
    async fn download_urls_name_the_version_hashed() {
        let app = app();
        let mut manifest =
            ModuleManifest::parse(&app.storage.peek("indexed/modules/acme/vpc/aws/manifest.json").unwrap()).unwrap();
        manifest.versions[0].version_id = Some("3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY".into());
        app.storage.insert("indexed/modules/acme/vpc/aws/manifest.json", serde_json::to_vec(&manifest).unwrap());
        let (status, _, reply) = get(&app, "/v1/modules/acme/vpc/aws/1.0.0/download").await;
        assert_eq!(status, 200);
        let url = reply.header_value("x-terraform-get").unwrap();
        assert!(url.contains("versionId=3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY&"), "{url}");

        manifest.versions[0].sha256 = "not a digest".into();
        app.storage.insert("indexed/modules/acme/vpc/aws/manifest.json", serde_json::to_vec(&manifest).unwrap());
        let (status, body, reply) = get(&app, "/v1/modules/acme/vpc/aws/1.0.0/download").await;
        assert_eq!(status, 500, "{body}");
        assert_eq!(reply.header_value("x-terraform-get"), None);

        let key = "indexed/providers/registry.terraform.io/hashicorp/null/3.2.1.json";
        let mut doc = ProviderVersion::parse(&app.storage.peek(key).unwrap()).unwrap();
        let archive = doc.archives.get_mut("linux_amd64").unwrap();
        archive.indexed =
            Some(crate::manifest::Indexed { size: 1, etag: "\"e\"".into(), version_id: Some("v7".into()) });
        app.storage.insert(key, serde_json::to_vec(&doc).unwrap());
        let (_, body, _) = get(&app, "/v1/mirror/registry.terraform.io/hashicorp/null/3.2.1.json").await;
        let url = body["archives"]["linux_amd64"]["url"].as_str().unwrap();
        assert!(url.contains("?versionId=v7&"), "{url}");
    }

    #[tokio::test]
    async fn mirror_version_serves_protocol_fields_only() {
        let (_, body, _) = get(&app(), "/v1/mirror/registry.terraform.io/hashicorp/null/3.2.1.json").await;
        let archive = &body["archives"]["linux_amd64"];
        // Stored `h1:` first (as documents written before the order changed), served `zh:` first.
        assert_eq!(archive["hashes"], json!(["zh:00", "h1:abc="]));
        assert!(archive["url"].as_str().unwrap().starts_with(
            "https://memory.invalid/providers/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.1_linux_amd64.zip?"
        ));
        assert!(archive.get("indexed").is_none());
    }

    #[tokio::test]
    async fn storage_down_is_503_json() {
        let app = app();
        app.storage.unavailable.store(true, std::sync::atomic::Ordering::SeqCst);
        let reply = app.handle(&Request::get("/v1/modules/acme/vpc/aws/versions")).await;
        assert_eq!(reply.status, 503);
        assert_eq!(reply.header_value("retry-after"), Some("1"));
        assert_eq!(reply.header_value(STALE_HEADER), None);
        let body: serde_json::Value = serde_json::from_slice(&reply.body).unwrap();
        assert_eq!(body, json!({"errors": ["storage is unavailable, try again"]}));
    }

    #[tokio::test]
    async fn storage_that_never_answers_is_503_within_the_budget() {
        let mut config = open(Config::new("b"));
        config.request_budget = std::time::Duration::from_millis(50);
        let app = App::new(config, app().storage, &Service::ALL);
        app.storage.hang.store(true, std::sync::atomic::Ordering::SeqCst);
        let reply = app.handle(&Request::get("/v1/modules/acme/vpc/aws/versions")).await;
        assert_eq!(reply.status, 503);
        assert_eq!(reply.header_value("retry-after"), Some("1"));
    }

    #[tokio::test]
    async fn storage_down_serves_the_cached_manifest_marked_stale() {
        let app = app();
        let fresh = app.handle(&Request::get("/v1/modules/acme/vpc/aws/versions")).await;
        assert_eq!((fresh.status, fresh.header_value(STALE_HEADER)), (StatusCode::OK, None));
        app.storage.unavailable.store(true, std::sync::atomic::Ordering::SeqCst);
        let stale = app.handle(&Request::get("/v1/modules/acme/vpc/aws/versions")).await;
        assert_eq!(stale.status, StatusCode::OK);
        assert!(stale.header_value(STALE_HEADER).is_some_and(|v| v.contains("cached")));
        assert_eq!(stale.header_value("retry-after"), None);
        assert_eq!(stale.body, fresh.body);
        // Another manifest was never read: nothing to fall back on.
        let reply = app.handle(&Request::get("/v1/mirror/registry.terraform.io/hashicorp/null/index.json")).await;
        assert_eq!(reply.status, 503);
    }

    #[tokio::test]
    async fn head_has_no_body_and_functions_serve_only_their_routes() {
        let app = app();
        let reply = app.handle(&Request::new(&Method::HEAD, "/v1/modules/acme/vpc/aws/versions")).await;
        assert_eq!(reply.status, StatusCode::OK);
        assert!(reply.body.is_empty());
        let mirror_only = App::new(open(Config::new("b")), MemoryStorage::new(), &[Service::Mirror]);
        let reply = mirror_only.handle(&Request::get("/v1/modules/acme/vpc/aws/versions")).await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND);
        assert_eq!(mirror_only.storage.request_count(), 0);
    }

    #[tokio::test]
    async fn access_is_checked_once_here_for_every_deployment() {
        let storage = app().storage;
        storage.insert(
            "indexed/modules/other/vpc/aws/manifest.json",
            storage.peek("indexed/modules/acme/vpc/aws/manifest.json").unwrap(),
        );
        let ci = crate::access::manage::record("ci", "trg_ci", vec!["acme".into()], vec![], None);
        let store = crate::access::TokenStore { format: 1, tokens: vec![ci] };
        storage.insert(layout::TOKENS, serde_json::to_vec(&store).unwrap());
        let app = App::new(Config::new("bucket"), storage, &Service::ALL);
        let call = |path: &'static str, auth: Option<&'static str>| {
            let app = &app;
            async move {
                let reply = app.handle(&Request::get(path).authorization(auth)).await;
                let body: Value = serde_json::from_slice(&reply.body).unwrap_or(Value::Null);
                (reply.status.as_u16(), body, reply)
            }
        };

        // Discovery needs nothing; the rest needs a token.
        assert_eq!(call("/.well-known/terraform.json", None).await.0, 200);
        let (status, body, reply) = call("/v1/modules/acme/vpc/aws/versions", None).await;
        assert_eq!((status, body), (401, json!({"errors": ["a bearer token is required"]})));
        assert_eq!(reply.header_value("www-authenticate"), Some(r#"Bearer realm="terraform-registry""#));
        let before = app.storage.request_count();
        assert_eq!(call("/v1/modules/acme/vpc/aws/versions", Some("Bearer trg_guess")).await.0, 401);
        assert_eq!(app.storage.request_count() - before, 1, "a presented token: the token store, and no manifest");
        let before = app.storage.request_count();
        assert_eq!(call("/v1/modules/acme/vpc/aws/versions", Some("Basic dXNlcjpwYXNz")).await.0, 401);
        assert_eq!(call("/v1/modules/acme/vpc/aws/versions", Some("Bearer a b")).await.0, 401);
        assert_eq!(app.storage.request_count() - before, 0, "no well-formed token: nothing read");
        assert_eq!(call("/v1/mirror/registry.terraform.io/hashicorp/null/index.json", None).await.0, 401);

        // In scope: allowed. The token store is cached now: one read (the manifest) per request.
        let before = app.storage.request_count();
        assert_eq!(call("/v1/modules/acme/vpc/aws/versions", Some("Bearer trg_ci")).await.0, 200);
        assert_eq!(app.storage.request_count() - before, 1, "warm: the manifest only");
        let before = app.storage.request_count();
        assert_eq!(call("/v1/modules/acme/vpc/aws/1.0.0/download", Some("Bearer trg_ci")).await.0, 200);
        assert_eq!(app.storage.request_count() - before, 1, "warm: the manifest only");

        // Out of scope: exactly what a module that does not exist gets, and no manifest read.
        let hidden = call("/v1/modules/other/vpc/aws/versions", Some("Bearer trg_ci")).await;
        let absent = call("/v1/modules/ghost/vpc/aws/versions", Some("Bearer trg_ci")).await;
        assert_eq!((hidden.0, absent.0), (404, 404));
        assert_eq!(hidden.1, json!({"errors": ["module other/vpc/aws not found"]}));
        assert_eq!(absent.1, json!({"errors": ["module ghost/vpc/aws not found"]}));
        assert_eq!(hidden.2.headers, absent.2.headers);
        assert_eq!(
            call("/v1/mirror/registry.terraform.io/hashicorp/null/3.2.1.json", Some("Bearer trg_ci")).await.0,
            404
        );
    }

    #[tokio::test]
    async fn warm_manifests_are_revalidated_not_reread() {
        let app = app();
        let path = "/v1/modules/acme/vpc/aws/versions";
        let key = "indexed/modules/acme/vpc/aws/manifest.json";
        let (_, cold, _) = get(&app, path).await;
        assert_eq!(app.manifests.usage().0, 1, "the parsed manifest is kept");
        // Warm: one conditional request, unchanged, same answer.
        let before = app.storage.request_count();
        let (status, warm, _) = get(&app, path).await;
        assert_eq!((status, &warm), (200, &cold));
        assert_eq!(app.storage.request_count() - before, 1);
        // A publish changes the manifest: the very next request shows it.
        let mut manifest = ModuleManifest::parse(&app.storage.peek(key).unwrap()).unwrap();
        let mut newer = manifest.versions[0].clone();
        newer.version = "1.1.0".into();
        manifest.versions.insert(0, newer);
        app.storage.insert(key, serde_json::to_vec(&manifest).unwrap());
        let (_, body, _) = get(&app, path).await;
        assert_eq!(body, json!({"modules":[{"versions":[{"version":"1.1.0"},{"version":"1.0.0"}]}]}));
        // Gone: 404 at once, and nothing stale is kept.
        app.storage.remove(key);
        assert_eq!(get(&app, path).await.0, 404);
        assert_eq!(app.manifests.usage().0, 0);

        // With a TTL, a hit is served without any request.
        let mut config = open(Config::new("bucket"));
        config.manifest_cache_ttl = std::time::Duration::from_secs(60);
        let ttl = App::new(config, app.storage, &Service::ALL);
        let path = "/v1/mirror/registry.terraform.io/hashicorp/null/index.json";
        assert_eq!(get(&ttl, path).await.0, 200);
        let before = ttl.storage.request_count();
        assert_eq!(get(&ttl, path).await.0, 200);
        assert_eq!(ttl.storage.request_count() - before, 0);
    }

    #[tokio::test]
    async fn etags_and_304_for_lists_never_for_presigned_urls() {
        let app = app();
        for path in [
            "/.well-known/terraform.json",
            "/v1/modules/acme/vpc/aws/versions",
            "/v1/mirror/registry.terraform.io/hashicorp/null/index.json",
        ] {
            let (_, _, reply) = get(&app, path).await;
            let etag = reply.header_value("etag").unwrap().to_string();
            assert!(reply.header_value("cache-control").is_some(), "{path}");
            for condition in [etag.clone(), format!("W/{etag}"), format!("\"x\", {etag}"), "*".into()] {
                let again = app.handle(&Request::get(path).if_none_match(Some(&condition))).await;
                assert_eq!(again.status, StatusCode::NOT_MODIFIED, "{path} {condition}");
                assert!(again.body.is_empty());
                assert_eq!(again.header_value("etag"), Some(etag.as_str()));
            }
            let other = app.handle(&Request::get(path).if_none_match(Some("\"other\""))).await;
            assert_eq!(other.status, StatusCode::OK, "{path}");
        }
        for path in
            ["/v1/modules/acme/vpc/aws/1.0.0/download", "/v1/mirror/registry.terraform.io/hashicorp/null/3.2.1.json"]
        {
            let (_, _, reply) = get(&app, path).await;
            assert_eq!(reply.header_value("etag"), None, "{path}");
            assert_eq!(reply.header_value("cache-control"), Some("no-store"), "{path}");
            let again = app.handle(&Request::get(path).if_none_match(Some("*"))).await;
            assert_eq!(again.status, StatusCode::OK, "{path}: a presigned answer is never 304");
        }
    }

    /// providers.v1: discovery offers it once the host is known; `versions` and `download`
    /// are one read each, answer exactly the protocol's fields, and presign only the release's
    /// own zip, SHA256SUMS and signature; scopes hide a provider as absence does.
    #[tokio::test]
    async fn providers_v1_answers_from_one_read() {
        use crate::testing::signing::{TestKey, release};
        let storage = MemoryStorage::new();
        let key = TestKey::generate("acme");
        storage.insert("signing-keys/registry.example.com/acme/k.asc", key.public_armor());
        let prefix = "providers/registry.example.com/acme/widget/";
        let indexer = crate::index::Indexer::new(&storage, crate::index::Limits::default())
            .signing_for(Some("registry.example.com".into()));
        for (name, bytes) in release("widget", "1.0.0", &[("linux", "amd64")], Some(&["6.0"]), &key) {
            storage.insert(&format!("{prefix}{name}"), bytes);
            indexer.on_object_changed(&format!("{prefix}{name}")).await.unwrap();
        }
        let without = App::new(open(Config::new("b")), MemoryStorage::new(), &Service::ALL);
        assert_eq!(without.discovery(), json!({"modules.v1": "/v1/modules/"}));
        assert_eq!(get(&without, "/v1/providers/acme/widget/versions").await.0, 404);
        let mut config = open(Config::new("b"));
        config.hostname = Some("registry.example.com".into());
        let app = App::new(config, storage, &Service::ALL);
        assert_eq!(app.discovery(), json!({"modules.v1": "/v1/modules/", "providers.v1": "/v1/providers/"}));

        let before = app.storage.request_count();
        let (status, body, _) = get(&app, "/v1/providers/acme/widget/versions").await;
        assert_eq!(app.storage.request_count() - before, 1);
        assert_eq!(
            (status, body),
            (
                200,
                json!({"versions": [{"version": "1.0.0", "protocols": ["6.0"], "platforms": [{"os": "linux", "arch": "amd64"}]}]})
            )
        );
        let before = app.storage.request_count();
        let (status, body, reply) = get(&app, "/v1/providers/acme/widget/1.0.0/download/linux/amd64").await;
        assert_eq!((status, app.storage.request_count() - before), (200, 1), "{body}");
        assert_eq!(reply.header_value("cache-control"), Some("no-store"));
        let fields: Vec<&str> = body.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            fields,
            [
                "arch",
                "download_url",
                "filename",
                "os",
                "protocols",
                "shasum",
                "shasums_signature_url",
                "shasums_url",
                "signing_keys"
            ]
        );
        assert_eq!(body["filename"], "terraform-provider-widget_1.0.0_linux_amd64.zip");
        let zip = app.storage.peek(&format!("{prefix}terraform-provider-widget_1.0.0_linux_amd64.zip")).unwrap();
        assert_eq!(body["shasum"], hex::encode(sha2::Sha256::digest(&zip)));
        let url = |f: &str| body[f].as_str().unwrap().to_string();
        assert!(
            url("download_url").starts_with(&format!(
                "https://memory.invalid/{prefix}terraform-provider-widget_1.0.0_linux_amd64.zip?"
            ))
        );
        assert!(
            url("shasums_url")
                .starts_with(&format!("https://memory.invalid/{prefix}terraform-provider-widget_1.0.0_SHA256SUMS?"))
        );
        assert!(
            url("shasums_signature_url").starts_with(&format!(
                "https://memory.invalid/{prefix}terraform-provider-widget_1.0.0_SHA256SUMS.sig?"
            ))
        );
        let keys = &body["signing_keys"]["gpg_public_keys"];
        assert_eq!(keys[0]["key_id"], key.key_id());
        assert!(keys[0]["ascii_armor"].as_str().unwrap().starts_with("-----BEGIN PGP PUBLIC KEY BLOCK-----"));
        for absent in [
            "/v1/providers/acme/widget/1.0.0/download/darwin/arm64",
            "/v1/providers/acme/widget/2.0.0/download/linux/amd64",
            "/v1/providers/acme/gadget/versions",
        ] {
            let (status, body, _) = get(&app, absent).await;
            assert_eq!(status, 404, "{absent}: {body}");
        }
        // The same release through the mirror, by its full address.
        let (status, body, _) = get(&app, "/v1/mirror/registry.example.com/acme/widget/1.0.0.json").await;
        assert_eq!(status, 200);
        assert_eq!(
            body["archives"]["linux_amd64"]["hashes"][0],
            format!("zh:{}", hex::encode(sha2::Sha256::digest(&zip)))
        );
    }

    #[tokio::test]
    async fn discovery_offers_login_only_with_an_issuers_login_client() {
        let issuers = |login: &str| {
            crate::oidc::parse_issuers(&format!(
                r#"[{{"issuer": "https://idp.example.com", "audience": "registry",
                     "rules": [{{"claim": "groups", "equals": "platform", "modules": ["*"]}}]{login}}}]"#
            ))
            .unwrap()
        };
        let mut config = Config::new("b");
        config.oidc_issuers = issuers("");
        let app = App::new(config.clone(), MemoryStorage::new(), &[Service::Discovery]);
        assert_eq!(app.discovery(), json!({"modules.v1": "/v1/modules/"}));
        config.oidc_issuers = issuers(
            r#", "login": {"client": "terraform-cli", "authz": "https://idp.example.com/oauth2/authorize",
                           "token": "https://idp.example.com/oauth2/token", "scopes": ["openid"]}"#,
        );
        let app = App::new(config.clone(), MemoryStorage::new(), &[Service::Discovery]);
        assert_eq!(
            app.discovery()["login.v1"],
            json!({"client": "terraform-cli", "grant_types": ["authz_code"],
                   "authz": "https://idp.example.com/oauth2/authorize",
                   "token": "https://idp.example.com/oauth2/token", "ports": [10000, 10010], "scopes": ["openid"]})
        );
        // Built with `new` where `start` was needed: a JWT of a configured issuer is a 500, not
        // an unknown static token; `start` builds the issuers' keys.
        let app = App::new(open(config.clone()), MemoryStorage::new(), &Service::ALL);
        let test = crate::testing::oidc::TestIssuer::rsa("https://idp.example.com");
        let jwt = format!("Bearer {}", test.sign(&crate::testing::oidc::claims(&test.url, "registry", 60)));
        let reply = app.handle(&Request::get("/v1/modules/acme/vpc/aws/versions").authorization(Some(&jwt))).await;
        assert_eq!(reply.status, 500);
        assert!(App::with_clients(config, MemoryStorage::new(), &Service::ALL).is_ok());
    }
}
