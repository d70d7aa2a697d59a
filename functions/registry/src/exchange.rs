//! The HTTP vocabulary the handler speaks: what it reads of a request, and the reply it
//! builds, which each transport turns into its own response type (`Reply::into_http`).

use bytes::Bytes;
use http::{Method, StatusCode};
use sha2::Digest;

use crate::error::Error;
use crate::manifest::CONTENT_TYPE_JSON;

/// Version lists: a cache may keep them but must revalidate (ETag) before each use, so a
/// new version shows at once; `private` because what a token may see is per token.
pub(crate) const NO_CACHE: &str = "private, no-cache";

/// `If-None-Match` (a list, or `*`) against our strong ETag; weak comparison, as RFC 9110
/// asks for this header.
pub(crate) fn etag_matches(condition: &str, etag: &str) -> bool {
    let bare = |t: &str| t.trim().trim_start_matches("W/").to_string();
    condition.split(',').any(|c| c.trim() == "*" || bare(c) == bare(etag))
}

/// The header that marks an answer made from a cached manifest because storage failed.
pub const STALE_HEADER: &str = "x-registry-stale";

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
                Reply::error(&Error::internal_from("serialise answer", e))
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
        if let Error::Pending { retry_after, .. } = err {
            headers.push(("retry-after", retry_after.to_string()));
        } else if err.status() == StatusCode::SERVICE_UNAVAILABLE {
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

/// The path exactly as the client sent it, where a transport's `http::Request` carries a URI
/// built from it rather than it (lambda_http normalises dot segments and percent-encodes in
/// the URI, and keeps the raw path apart). Without it the URI's path is the raw path, as
/// hyper gives it: neither decoded nor normalised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawPath(pub String);

/// A header sent exactly once. Go clients (skopeo, oras-go) send `Accept` as several lines, one
/// media type each: read as one list it would need an allocation per request, so several lines
/// count as "any" and only a single line can narrow what is served.
fn single(headers: &http::HeaderMap, name: http::header::HeaderName) -> Option<&str> {
    let mut values = headers.get_all(name).iter();
    match (values.next(), values.next()) {
        (Some(value), None) => value.to_str().ok(),
        _ => None,
    }
}

/// A header that must be sent at most once and readable when sent: `Some("")` (which no check
/// accepts) when it is sent twice or holds bytes that are not visible ASCII, so that a request
/// cannot pass for one without it.
fn strict(headers: &http::HeaderMap, name: http::header::HeaderName) -> Option<&str> {
    let mut values = headers.get_all(name).iter();
    match (values.next(), values.next()) {
        (None, _) => None,
        (Some(value), None) => Some(value.to_str().unwrap_or_default()),
        (Some(_), Some(_)) => Some(""),
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
    /// The `Accept` header (read only by OCI's manifest routes, which negotiate on it).
    pub accept: Option<&'a str>,
    /// The `MCP-Protocol-Version` header (read only by the MCP endpoint).
    pub mcp_protocol_version: Option<&'a str>,
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
            accept: None,
            mcp_protocol_version: None,
        }
    }

    /// A `GET` of `raw_path`.
    pub fn get(raw_path: &'a str) -> Self {
        Request::new(&Method::GET, raw_path)
    }

    /// The request as every transport has it: the method, the path exactly as sent (not
    /// decoded, not normalised), the raw query, and the headers, of which only
    /// `Authorization`, `If-None-Match`, for the web pages `Cookie`, `Host` and `Origin`, for
    /// OCI's manifests `Accept`, and for the MCP endpoint `Host`, `Origin` and
    /// `MCP-Protocol-Version` are read. The body is added with `body` where there is one.
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
            .origin(strict(headers, http::header::ORIGIN))
            .accept(single(headers, http::header::ACCEPT))
            .mcp_protocol_version(strict(headers, http::header::HeaderName::from_static("mcp-protocol-version")))
    }

    /// With this `MCP-Protocol-Version` header.
    pub fn mcp_protocol_version(mut self, version: Option<&'a str>) -> Self {
        self.mcp_protocol_version = version;
        self
    }

    /// With this `Accept` header (`None`: any type will do).
    pub fn accept(mut self, accept: Option<&'a str>) -> Self {
        self.accept = accept;
        self
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
