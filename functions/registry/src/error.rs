//! One error type for the whole request path and the indexer, mapped to an HTTP status only
//! at the HTTP edge (`Error::status`, `public_message`, `body`: see `HTTP_EDGE` in
//! tests/library/module_graph.rs).
//!
//! Client errors carry a message that is safe to show; server-side errors (`Unavailable`,
//! `Internal`) answer a short generic text and keep the detail for the log, so S3 keys,
//! bucket names and SDK messages never reach a client. Those two also keep what caused them
//! (an SDK, hyper, I/O or serde error, or another `Error`) as their `source()`: `Display` is
//! the short form (`internal: presign K`), and a log line shows the whole chain with
//! `chain(&e)` (`internal: presign K: <the cause>: <its cause>`).

use std::fmt;
use std::sync::Arc;

use http::StatusCode;

/// What caused an `Internal` or `Unavailable` error, kept for the log (`Error::source`).
/// Shared, so that `Error` stays `Clone`.
pub type Cause = Arc<dyn std::error::Error + Send + Sync + 'static>;

#[derive(Debug, Clone)]
/// Everything that can go wrong on the request path or in the indexer. The HTTP edge maps each
/// to a status (`Error::status`); everything else matches on the variant.
pub enum Error {
    /// The path breaks the protocol grammar (bad segment, bad version, unknown route shape).
    BadRequest(String),
    /// A well-formed address that names nothing published.
    NotFound(String),
    /// No usable bearer token for something that needs one.
    Unauthorized(String),
    /// The route exists but not for this method.
    MethodNotAllowed,
    /// A form posted from another site (its `Origin` is not this registry's): 403.
    CrossSite(String),
    /// A conditional write lost a race (S3 412/409): re-read and try again.
    Conflict(String),
    /// S3 (or another dependency) could not be reached or answered with a server error.
    Unavailable {
        /// What failed: the operation and key (`GetObject modules/…`), a budget spent.
        what: String,
        /// The SDK's (or hyper's) error, if one is beneath it.
        cause: Option<Cause>,
    },
    /// S3 refused the request (`AccessDenied`): the role may not read the key, or (for a role
    /// without `s3:ListBucket`) the key does not exist. Callers that know which decide; left
    /// alone it is a misconfiguration, 500.
    Forbidden(String),
    /// An upstream registry (pull-through) could not be reached, failed, or sent something
    /// that does not verify. The message names the upstream and is shown to the client: it
    /// holds only the host and what went wrong, never a key or a URL with credentials.
    BadGateway(String),
    /// Not yet: the answer is being made elsewhere (the puller copying an upstream module too
    /// large to copy while the client waits). 503 with `Retry-After`; the message is shown.
    Pending {
        /// What is under way, and when to ask again.
        what: String,
        /// Seconds to wait before asking again (`Retry-After`).
        retry_after: u64,
    },
    /// Something we wrote is unreadable (a corrupt manifest) or an invariant broke.
    Internal {
        /// What failed: the document or key, the invariant.
        what: String,
        /// The parser's, the I/O or the signing error (or another `Error`), if one is beneath it.
        cause: Option<Cause>,
    },
    /// An object's bytes are unusable as stored (they fail S3's integrity check, or exceed a
    /// limit while being read): the indexer rejects such an upload instead of failing.
    Corrupt(String),
}

impl Error {
    /// `Internal`, with nothing beneath it: an invariant broke, a value is out of range.
    pub fn internal(what: impl Into<String>) -> Self {
        Error::Internal { what: what.into(), cause: None }
    }

    /// `Internal` because of `cause` (a parser's, an I/O error, another `Error`); `what` says
    /// what failed (the document, the key), not the cause again.
    pub fn internal_from(what: impl Into<String>, cause: impl std::error::Error + Send + Sync + 'static) -> Self {
        Error::Internal { what: what.into(), cause: Some(Arc::new(cause)) }
    }

    /// `Unavailable`, with nothing beneath it: no answer in time, retries spent.
    pub fn unavailable(what: impl Into<String>) -> Self {
        Error::Unavailable { what: what.into(), cause: None }
    }

    /// `Unavailable` because of `cause` (the SDK's error); `what` is the operation and key.
    pub fn unavailable_from(what: impl Into<String>, cause: impl std::error::Error + Send + Sync + 'static) -> Self {
        Error::Unavailable { what: what.into(), cause: Some(Arc::new(cause)) }
    }

    /// The HTTP status a client gets for this error. For the HTTP edge only: elsewhere, match
    /// on the variant (the library test `only_the_http_edge_maps_errors_to_statuses`).
    pub fn status(&self) -> StatusCode {
        match self {
            Error::BadRequest(_) => StatusCode::BAD_REQUEST,
            Error::NotFound(_) => StatusCode::NOT_FOUND,
            Error::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            Error::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Error::CrossSite(_) => StatusCode::FORBIDDEN,
            Error::Conflict(_) => StatusCode::CONFLICT,
            Error::Unavailable { .. } | Error::Pending { .. } => StatusCode::SERVICE_UNAVAILABLE,
            Error::BadGateway(_) => StatusCode::BAD_GATEWAY,
            Error::Internal { .. } | Error::Corrupt(_) | Error::Forbidden(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The text a client sees. Server-side details, and every cause, stay in the log.
    pub fn public_message(&self) -> String {
        match self {
            Error::BadRequest(m)
            | Error::NotFound(m)
            | Error::Unauthorized(m)
            | Error::BadGateway(m)
            | Error::CrossSite(m)
            | Error::Pending { what: m, .. } => m.clone(),
            Error::Conflict(_) => "conflicting update, try again".into(),
            Error::MethodNotAllowed => {
                "method not allowed: the registry's routes answer GET and HEAD, its sign-in and sign-out forms POST"
                    .into()
            }
            Error::Unavailable { .. } => "storage is unavailable, try again".into(),
            Error::Internal { .. } | Error::Corrupt(_) | Error::Forbidden(_) => "internal error".into(),
        }
    }

    /// The JSON body every error answers with: `{"errors": ["..."]}`, the shape the public
    /// Terraform registry uses.
    pub fn body(&self) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({ "errors": [self.public_message()] }))
            .unwrap_or_else(|_| br#"{"errors":["internal error"]}"#.to_vec())
    }

    /// A 5xx: the registry's or a dependency's fault, logged as an error (by the HTTP edge).
    pub fn is_server_error(&self) -> bool {
        self.status().is_server_error()
    }

    /// The variant's text (empty for `MethodNotAllowed`), without its cause.
    fn text(&self) -> &str {
        match self {
            Error::BadRequest(m)
            | Error::NotFound(m)
            | Error::Unauthorized(m)
            | Error::CrossSite(m)
            | Error::Conflict(m)
            | Error::Forbidden(m)
            | Error::BadGateway(m)
            | Error::Corrupt(m)
            | Error::Unavailable { what: m, .. }
            | Error::Pending { what: m, .. }
            | Error::Internal { what: m, .. } => m,
            Error::MethodNotAllowed => "",
        }
    }
}

/// The same variant with the same text. The cause is left out: a `dyn Error` has no equality,
/// and what a caller (or a test comparing `Result<Route, Error>`) decides on is the variant and
/// what failed, never which SDK error lies beneath it.
impl PartialEq for Error {
    fn eq(&self, other: &Self) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other) && self.text() == other.text()
    }
}

impl Eq for Error {}

/// The short form, without the cause (that is `source()`'s); `chain` prints both.
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::BadRequest(m) => write!(f, "bad request: {m}"),
            Error::NotFound(m) => write!(f, "not found: {m}"),
            Error::Unauthorized(m) => write!(f, "unauthorized: {m}"),
            Error::MethodNotAllowed => write!(f, "method not allowed"),
            Error::CrossSite(m) => write!(f, "cross-site request refused: {m}"),
            Error::Conflict(m) => write!(f, "conflict: {m}"),
            Error::Unavailable { what, .. } => write!(f, "unavailable: {what}"),
            Error::Internal { what, .. } => write!(f, "internal: {what}"),
            Error::Corrupt(m) => write!(f, "corrupt: {m}"),
            Error::Forbidden(m) => write!(f, "access denied: {m}"),
            Error::BadGateway(m) => write!(f, "bad gateway: {m}"),
            Error::Pending { what, retry_after } => write!(f, "pending: {what} (retry after {retry_after} s)"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Internal { cause, .. } | Error::Unavailable { cause, .. } => {
                cause.as_deref().map(|c| c as &(dyn std::error::Error + 'static))
            }
            _ => None,
        }
    }
}

/// An error and its causes on one line, for logs: `error = %chain(&e)` (an `Error`'s
/// `Display` is its short form, and the SDK's and hyper's own texts name only the outermost:
/// "dispatch failure", "client error (Connect)").
pub fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_and_bodies() {
        let io = || std::io::Error::other("bucket registry-secret-bucket: connection refused");
        let cases = [
            (Error::BadRequest("bad version".into()), 400, "bad version"),
            (Error::NotFound("module not found".into()), 404, "module not found"),
            (Error::Unauthorized("a bearer token is required".into()), 401, "a bearer token is required"),
            (
                Error::MethodNotAllowed,
                405,
                "method not allowed: the registry's routes answer GET and HEAD, its sign-in and sign-out forms POST",
            ),
            (Error::CrossSite("form from another site".into()), 403, "form from another site"),
            (Error::unavailable("s3 timeout on bucket x"), 503, "storage is unavailable, try again"),
            (Error::unavailable_from("GetObject access/tokens.json", io()), 503, "storage is unavailable, try again"),
            (Error::internal("manifest at modules/a/b/c parse error"), 500, "internal error"),
            (Error::internal_from("module manifest modules/a/b/c", io()), 500, "internal error"),
            (Error::Corrupt("checksum mismatch".into()), 500, "internal error"),
            (Error::Forbidden("GetObject access/tokens.json".into()), 500, "internal error"),
            (
                Error::BadGateway("upstream registry.terraform.io: timed out".into()),
                502,
                "upstream registry.terraform.io: timed out",
            ),
        ];
        for (err, status, text) in cases {
            assert_eq!(err.status().as_u16(), status, "{err}");
            let body: serde_json::Value = serde_json::from_slice(&err.body()).unwrap();
            assert_eq!(body, serde_json::json!({ "errors": [text] }), "{err}");
        }
    }

    /// The cause is `source()`, in the chain a log line shows, and in neither `Display` (the
    /// short form) nor equality.
    #[test]
    fn the_cause_is_the_source_and_in_the_chain() {
        let parse = serde_json::from_slice::<serde_json::Value>(b"{").unwrap_err();
        let parse_text = parse.to_string();
        let inner = Error::internal_from("module manifest", parse);
        let outer = Error::internal_from("unreadable manifest modules/a/b/c", inner.clone());
        assert_eq!(outer.to_string(), "internal: unreadable manifest modules/a/b/c");
        let source = std::error::Error::source(&outer).expect("a source");
        assert_eq!(source.downcast_ref::<Error>(), Some(&inner));
        assert!(std::error::Error::source(source).is_some_and(|s| s.is::<serde_json::Error>()));
        assert_eq!(
            chain(&outer),
            format!("internal: unreadable manifest modules/a/b/c: internal: module manifest: {parse_text}")
        );
        assert_eq!(outer, Error::internal("unreadable manifest modules/a/b/c"), "the cause is not compared");
        assert_ne!(outer, Error::unavailable("unreadable manifest modules/a/b/c"), "the variant is");
        assert_ne!(outer, Error::internal("unreadable manifest modules/x/y/z"), "the text is");
        assert!(std::error::Error::source(&Error::Corrupt("x".into())).is_none());
    }
}
