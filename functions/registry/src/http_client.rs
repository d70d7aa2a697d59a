//! The one outbound HTTP client: hyper with rustls, the stack aws-sdk-s3 already runs on,
//! trusting the system's roots plus a configured CA file. Used for upstream registries (the
//! pull-through mirror) and for OpenID Connect issuers' key sets. Every request has a deadline,
//! every body a size bound, redirects a count; API calls are HTTPS only. Messages never hold a
//! URL's query string (a presigned URL's credentials).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, StatusCode, header};
use http_body_util::{BodyExt, Empty};
use hyper::body::Incoming;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use url::Url;

use crate::error::Error;

/// Most redirects followed (GitHub release downloads take two).
const MAX_REDIRECTS: usize = 5;
/// Longest wait for the next piece of an archive body while copying.
const STREAM_IDLE: Duration = Duration::from_secs(30);
/// What upstreams and issuers see us as.
const USER_AGENT: &str = concat!("terraform-registry/", env!("CARGO_PKG_VERSION"));

/// What a GET found.
pub(crate) enum Got<T> {
    /// 2xx: the body (or what was done with it) and the URL it came from after redirects.
    Found(Url, T),
    /// 404 or 410: the upstream says there is no such thing.
    NotFound,
}

/// The client (one per container; it keeps connections).
pub(crate) struct HttpClient {
    client: Client<HttpsConnector<HttpConnector>, Empty<Bytes>>,
    timeout: Duration,
}

/// A URL as messages may show it: scheme, host and path, never the query.
pub(crate) fn shown(url: &Url) -> String {
    let port = url.port().map(|p| format!(":{p}")).unwrap_or_default();
    format!("{}://{}{port}{}", url.scheme(), url.host_str().unwrap_or(""), url.path())
}

impl HttpClient {
    /// `ca_file`: extra PEM roots, from the variable `ca_variable` (named in errors);
    /// `timeout`: for connecting, for an answer, for a small body.
    pub(crate) fn new(ca_file: Option<&str>, ca_variable: &str, timeout: Duration) -> Result<Self, Error> {
        use rustls_pki_types::CertificateDer;
        use rustls_pki_types::pem::PemObject;
        let mut roots = rustls::RootCertStore::empty();
        let native = rustls_native_certs::load_native_certs();
        let (added, _) = roots.add_parsable_certificates(native.certs);
        if let Some(file) = ca_file {
            let certs = CertificateDer::pem_file_iter(file)
                .map_err(|e| Error::internal_from(format!("{ca_variable} {file}"), e))?;
            for cert in certs {
                let cert = cert.map_err(|e| Error::internal_from(format!("{ca_variable} {file}"), e))?;
                roots.add(cert).map_err(|e| Error::internal_from(format!("{ca_variable} {file}"), e))?;
            }
        }
        if roots.is_empty() {
            return Err(Error::internal(format!(
                "no trusted root certificates for outbound HTTPS ({added} system roots; set {ca_variable})"
            )));
        }
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::internal_from("outbound TLS", e))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let mut connector = HttpConnector::new();
        connector.enforce_http(false);
        connector.set_connect_timeout(Some(timeout));
        // Plain HTTP only for archives (their bytes are checked against a signed SHA-256, and a
        // registry may well hand out http:// URLs); API calls (`api`) are HTTPS only.
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .wrap_connector(connector);
        let client = Client::builder(TokioExecutor::new()).pool_idle_timeout(Duration::from_secs(30)).build(https);
        Ok(HttpClient { client, timeout })
    }

    /// GET `url`, following redirects; `api`: every hop must be HTTPS. `authorization` goes
    /// only to `url`'s own origin, never to where it redirects elsewhere (a registry's
    /// token is not for its archive host, as the CLI never sends it there).
    async fn response(
        &self,
        mut url: Url,
        api: bool,
        authorization: Option<&str>,
    ) -> Result<Got<hyper::Response<Incoming>>, Failed> {
        let origin = url.origin();
        for _ in 0..=MAX_REDIRECTS {
            match url.scheme() {
                "https" => {}
                "http" if !api => {}
                _ => return Err(Failed::answer(format!("{} is not an HTTPS URL", shown(&url)))),
            }
            let mut request = Request::get(url.as_str()).header(header::USER_AGENT, USER_AGENT);
            if let Some(value) = authorization.filter(|_| url.origin() == origin) {
                request = request.header(header::AUTHORIZATION, value);
            }
            let request = request.body(Empty::new()).map_err(|e| Failed::answer(format!("{}: {e}", shown(&url))))?;
            let response = tokio::time::timeout(self.timeout, self.client.request(request))
                .await
                .map_err(|_| Failed::down(format!("{}: no answer within {:?}", shown(&url), self.timeout)))?
                .map_err(|e| Failed::down(format!("{}: {}", shown(&url), crate::error::chain(&e))))?;
            let status = response.status();
            if status.is_redirection()
                && let Some(location) = response.headers().get(header::LOCATION).and_then(|l| l.to_str().ok())
            {
                let next =
                    url.join(location).map_err(|e| Failed::answer(format!("{}: bad redirect: {e}", shown(&url))))?;
                redirect_allowed(&url, &next).map_err(Failed::answer)?;
                url = next;
                continue;
            }
            return match status {
                StatusCode::NOT_FOUND | StatusCode::GONE => Ok(Got::NotFound),
                s if s.is_success() => Ok(Got::Found(url, response)),
                // The host is down or shedding load: what every request to it would get.
                s if s.as_u16() >= 500 || s == StatusCode::TOO_MANY_REQUESTS => {
                    Err(Failed::down(format!("{} answered {s}", shown(&url))))
                }
                s => Err(Failed::answer(format!("{} answered {s}", shown(&url)))),
            };
        }
        Err(Failed::answer(format!("{}: more than {MAX_REDIRECTS} redirects", shown(&url))))
    }

    /// A small body (a registry answer, `SHA256SUMS`, a signature, a key set), at most `limit`
    /// bytes.
    pub(crate) async fn get(&self, url: Url, limit: usize, api: bool) -> Result<Got<Bytes>, String> {
        Ok(match self.get_with(url, limit, api, None).await.map_err(|f| f.why)? {
            Got::Found(url, (body, _)) => Got::Found(url, body),
            Got::NotFound => Got::NotFound,
        })
    }

    /// `get`, with the value of the response header `header` if it has one (a module registry's
    /// `X-Terraform-Get`).
    pub(crate) async fn get_with(
        &self,
        url: Url,
        limit: usize,
        api: bool,
        header: Option<&str>,
    ) -> Result<Got<(Bytes, Option<String>)>, Failed> {
        self.get_authorized(url, limit, api, header, None).await
    }

    /// `get_with`, sending `authorization` (`Bearer TOKEN`) to `url`'s origin.
    pub(crate) async fn get_authorized(
        &self,
        url: Url,
        limit: usize,
        api: bool,
        header: Option<&str>,
        authorization: Option<&str>,
    ) -> Result<Got<(Bytes, Option<String>)>, Failed> {
        let (url, response) = match self.response(url, api, authorization).await? {
            Got::Found(url, response) => (url, response),
            Got::NotFound => return Ok(Got::NotFound),
        };
        let value = header
            .and_then(|h| response.headers().get(h))
            .map(|v| {
                v.to_str().map(str::to_string).map_err(|_| {
                    Failed::answer(format!("{}: its {} header is not text", shown(&url), header.unwrap_or("")))
                })
            })
            .transpose()?;
        let body = http_body_util::Limited::new(response.into_body(), limit).collect();
        let body = tokio::time::timeout(self.timeout, body)
            .await
            .map_err(|_| Failed::down(format!("{}: the body did not arrive within {:?}", shown(&url), self.timeout)))?
            .map_err(|e| Failed::answer(format!("{}: body unreadable or over {limit} bytes: {e}", shown(&url))))?;
        Ok(Got::Found(url, (body.to_bytes(), value)))
    }

    /// Feed an archive's bytes to `sink` as they arrive; how many. A `sink` error stops the
    /// download and is handed back as it was (`Stopped::Sink`), apart from the upstream's own.
    pub(crate) async fn stream(
        &self,
        url: Url,
        mut sink: impl FnMut(&[u8]) -> Result<(), Error>,
    ) -> Result<Got<u64>, Stopped> {
        let (url, response) = match self.response(url, false, None).await.map_err(|f| Stopped::Upstream(f.why))? {
            Got::Found(url, response) => (url, response),
            Got::NotFound => return Ok(Got::NotFound),
        };
        let mut body = response.into_body();
        let mut total = 0u64;
        loop {
            let frame = tokio::time::timeout(STREAM_IDLE, body.frame())
                .await
                .map_err(|_| Stopped::Upstream(format!("{}: stalled for {STREAM_IDLE:?}", shown(&url))))?;
            let Some(frame) = frame else { break };
            let frame =
                frame.map_err(|e| Stopped::Upstream(format!("{}: {}", shown(&url), crate::error::chain(&e))))?;
            if let Some(data) = frame.data_ref() {
                total += data.len() as u64;
                sink(data).map_err(Stopped::Sink)?;
            }
        }
        Ok(Got::Found(url, total))
    }
}

/// Why a request failed, and whether the failure says the host is down (unreachable, slow,
/// 5xx or 429: every request would fail) rather than that this one answer was wrong (a 4xx,
/// an oversized body, a refused redirect), which says nothing of the host's other requests.
#[derive(Debug, Clone)]
pub(crate) struct Failed {
    /// What happened (a URL without its query, and the cause).
    pub(crate) why: String,
    /// The host is down.
    pub(crate) down: bool,
}

impl Failed {
    fn down(why: String) -> Failed {
        Failed { why, down: true }
    }

    fn answer(why: String) -> Failed {
        Failed { why, down: false }
    }
}

/// Why a streamed download stopped early.
pub(crate) enum Stopped {
    /// The upstream failed (unreachable, an error status, a broken or stalled body).
    Upstream(String),
    /// The sink refused the bytes (over a limit, a full disk).
    Sink(Error),
}

/// Whether to follow a redirect from `from` to `to`: never from HTTPS down to plain HTTP, and
/// never from a public host into the machine's own or its network's addresses (loopback,
/// link-local such as the cloud metadata service at 169.254.169.254, private ranges), where an
/// upstream could otherwise point the registry's functions. Literal addresses only: a name is
/// resolved by the connector, after this check.
fn redirect_allowed(from: &Url, to: &Url) -> Result<(), String> {
    if from.scheme() == "https" && to.scheme() != "https" {
        return Err(format!("{} redirected from HTTPS to {}: refused", shown(from), shown(to)));
    }
    if internal(to) && !internal(from) {
        return Err(format!("{} redirected to an internal address {}: refused", shown(from), shown(to)));
    }
    Ok(())
}

/// Whether a URL's host is loopback, link-local, private, shared (carrier-grade NAT),
/// reserved for protocols or benchmarks, unspecified or multicast; an IPv6 address that
/// embeds such an IPv4 one (mapped, compatible, NAT64, 6to4) or is site- or unique-local; or a
/// name that means the machine or its cloud's internal zone (`localhost`, `*.internal`). Literal
/// addresses and those names only: any other name is resolved by the connector, after this
/// check.
pub(crate) fn internal(url: &Url) -> bool {
    use url::Host;
    match url.host() {
        Some(Host::Ipv4(ip)) => internal_v4(ip),
        Some(Host::Ipv6(ip)) => {
            let s = ip.segments();
            let embedded =
                |hi: u16, lo: u16| std::net::Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8);
            ip.is_loopback()
                || ip.is_unspecified()
                || ip.is_multicast()
                || (s[0] & 0xffc0) == 0xfe80 // link-local
                || (s[0] & 0xffc0) == 0xfec0 // site-local (deprecated, still routed by some)
                || (s[0] & 0xfe00) == 0xfc00 // unique local
                || ip.to_ipv4_mapped().is_some_and(internal_v4)
                || (s[..6] == [0; 6] && internal_v4(embedded(s[6], s[7]))) // IPv4-compatible
                || (s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] && internal_v4(embedded(s[6], s[7]))) // NAT64
                || (s[0] == 0x2002 && internal_v4(embedded(s[1], s[2]))) // 6to4
        }
        Some(Host::Domain(name)) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            name == "localhost" || name.ends_with(".localhost") || name.ends_with(".internal")
        }
        None => true,
    }
}

fn internal_v4(ip: std::net::Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    ip.is_loopback()
        || ip.is_link_local()
        || ip.is_private()
        || ip.is_unspecified()
        || ip.is_multicast()
        || ip.is_broadcast()
        || a == 0 // "this network"
        || (a == 100 && (b & 0xc0) == 64) // shared address space, 100.64/10
        || (a == 192 && b == 0 && c == 0) // protocol assignments, 192.0.0/24
        || (a == 198 && (b & 0xfe) == 18) // benchmarking, 198.18/15
}

#[cfg(test)]
mod redirect_tests {
    use super::*;

    #[test]
    fn redirects_never_go_down_to_http_or_into_internal_addresses() {
        let allowed = |from: &str, to: &str| redirect_allowed(&Url::parse(from).unwrap(), &Url::parse(to).unwrap());
        assert!(allowed("https://registry.example/v1/x", "https://cdn.example/a.zip").is_ok());
        assert!(allowed("https://registry.example/v1/x", "https://[2606:4700::1]/a.zip").is_ok());
        assert!(allowed("https://registry.example/v1/x", "https://100.128.0.1/a.zip").is_ok());
        assert!(allowed("http://registry.example/x", "http://cdn.example/a.zip").is_ok());
        // A loopback upstream (the tests' second registry) may redirect within loopback.
        assert!(allowed("https://127.0.0.1:8443/x", "https://127.0.0.1:9000/a.zip").is_ok());
        for (from, to) in [
            ("https://registry.example/x", "http://cdn.example/a.zip"),
            ("https://registry.example/x", "https://169.254.169.254/latest/meta-data/"),
            ("https://registry.example/x", "https://127.0.0.1/a.zip"),
            ("https://registry.example/x", "https://[::1]/a.zip"),
            ("https://registry.example/x", "https://[fe80::1]/a.zip"),
            ("https://registry.example/x", "https://[::ffff:10.0.0.1]/a.zip"),
            ("https://registry.example/x", "https://10.1.2.3/a.zip"),
            ("https://registry.example/x", "https://192.168.0.1/a.zip"),
            ("https://registry.example/x", "https://localhost/a.zip"),
            ("https://registry.example/x", "https://0.0.0.0/a.zip"),
            // Other spellings of internal addresses (red team): decimal and hex IPv4, embedded
            // IPv4 in IPv6, shared and reserved ranges, a cloud's internal zone.
            ("https://registry.example/x", "https://2852039166/a.zip"),
            ("https://registry.example/x", "https://0xa9fea9fe/a.zip"),
            ("https://registry.example/x", "https://[::a9fe:a9fe]/a.zip"),
            ("https://registry.example/x", "https://[64:ff9b::a00:1]/a.zip"),
            ("https://registry.example/x", "https://[2002:a9fe:a9fe::]/a.zip"),
            ("https://registry.example/x", "https://[fec0::1]/a.zip"),
            ("https://registry.example/x", "https://100.100.100.200/a.zip"),
            ("https://registry.example/x", "https://192.0.0.192/a.zip"),
            ("https://registry.example/x", "https://198.18.0.1/a.zip"),
            ("https://registry.example/x", "https://metadata.google.internal/a.zip"),
        ] {
            let refused = allowed(from, to).unwrap_err();
            assert!(refused.contains("refused"), "{to}: {refused}");
        }
    }
}
