//! One error type for the whole request path, with one exhaustive mapping to HTTP status.
//!
//! Client errors carry a message that is safe to show; server-side errors (`Unavailable`,
//! `Internal`) answer a short generic text and keep the detail for the log, so S3 keys,
//! bucket names and SDK messages never reach a client.

use std::fmt;

use http::StatusCode;

#[derive(Debug, Clone, PartialEq, Eq)]
/// Everything that can go wrong on the request path or in the indexer, each with its HTTP
/// status (`Error::status`).
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
    Unavailable(String),
    /// S3 refused the request (`AccessDenied`): the role may not read the key, or (for a role
    /// without `s3:ListBucket`) the key does not exist. Callers that know which decide; left
    /// alone it is a misconfiguration, 500.
    Forbidden(String),
    /// An upstream registry (pull-through) could not be reached, failed, or sent something
    /// that does not verify. The message names the upstream and is shown to the client: it
    /// holds only the host and what went wrong, never a key or a URL with credentials.
    BadGateway(String),
    /// Something we wrote is unreadable (a corrupt manifest) or an invariant broke.
    Internal(String),
    /// An object's bytes are unusable as stored (they fail S3's integrity check, or exceed a
    /// limit while being read): the indexer rejects such an upload instead of failing.
    Corrupt(String),
}

impl Error {
    /// The HTTP status a client gets for this error.
    pub fn status(&self) -> StatusCode {
        match self {
            Error::BadRequest(_) => StatusCode::BAD_REQUEST,
            Error::NotFound(_) => StatusCode::NOT_FOUND,
            Error::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            Error::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Error::CrossSite(_) => StatusCode::FORBIDDEN,
            Error::Conflict(_) => StatusCode::CONFLICT,
            Error::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            Error::BadGateway(_) => StatusCode::BAD_GATEWAY,
            Error::Internal(_) | Error::Corrupt(_) | Error::Forbidden(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The text a client sees. Server-side details stay in the log.
    pub fn public_message(&self) -> String {
        match self {
            Error::BadRequest(m)
            | Error::NotFound(m)
            | Error::Unauthorized(m)
            | Error::BadGateway(m)
            | Error::CrossSite(m) => m.clone(),
            Error::Conflict(_) => "conflicting update, try again".into(),
            Error::MethodNotAllowed => {
                "method not allowed: the registry's routes answer GET and HEAD, its sign-in and sign-out forms POST"
                    .into()
            }
            Error::Unavailable(_) => "storage is unavailable, try again".into(),
            Error::Internal(_) | Error::Corrupt(_) | Error::Forbidden(_) => "internal error".into(),
        }
    }

    /// The JSON body every error answers with: `{"errors": ["..."]}`, the shape the public
    /// Terraform registry uses.
    pub fn body(&self) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({ "errors": [self.public_message()] }))
            .unwrap_or_else(|_| br#"{"errors":["internal error"]}"#.to_vec())
    }

    /// A 5xx: the registry's or a dependency's fault, logged as an error.
    pub fn is_server_error(&self) -> bool {
        self.status().is_server_error()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::BadRequest(m) => write!(f, "bad request: {m}"),
            Error::NotFound(m) => write!(f, "not found: {m}"),
            Error::Unauthorized(m) => write!(f, "unauthorized: {m}"),
            Error::MethodNotAllowed => write!(f, "method not allowed"),
            Error::CrossSite(m) => write!(f, "cross-site request refused: {m}"),
            Error::Conflict(m) => write!(f, "conflict: {m}"),
            Error::Unavailable(m) => write!(f, "unavailable: {m}"),
            Error::Internal(m) => write!(f, "internal: {m}"),
            Error::Corrupt(m) => write!(f, "corrupt: {m}"),
            Error::Forbidden(m) => write!(f, "access denied: {m}"),
            Error::BadGateway(m) => write!(f, "bad gateway: {m}"),
        }
    }
}

impl std::error::Error for Error {}

/// An error and its causes on one line, for logs (the SDK's and hyper's own texts name only
/// the outermost: "dispatch failure", "client error (Connect)").
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
            (Error::Unavailable("s3 timeout on bucket x".into()), 503, "storage is unavailable, try again"),
            (Error::Internal("manifest at modules/a/b/c parse error".into()), 500, "internal error"),
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
}
