//! The Model Context Protocol (MCP) server's protocol: JSON-RPC 2.0 messages over Streamable
//! HTTP, stateless, so that a coding assistant can read the registry's private modules and
//! providers (their interfaces, READMEs, versions, the changes between two versions and the
//! snippet to call one) as the catalog and the pages already hold them. `routes::mcp` reads
//! what a call needs and answers through here; `tools` is the tool list and each tool's
//! arguments, `answers` what each tool returns.
//!
//! Stateless (the spec's "Streamable HTTP" with no session): every POST carries one JSON-RPC
//! message and is answered on its own, `200` with one JSON response for a request, `202` with
//! no body for a notification or a response; the server never sends `Mcp-Session-Id` and
//! opens no event stream (a `GET` is 405). So a Lambda answers any call without state, and a
//! client that reconnects loses nothing.

pub mod answers;
#[cfg(test)]
mod tests;
pub mod tools;

use serde_json::{Value, json};

pub use crate::router::{MCP_PATH as PATH, MCP_RESOURCE_METADATA_PATH as RESOURCE_METADATA_PATH};

/// The protocol versions this server speaks, newest first. A client asking for one of these
/// gets it; one asking for another gets the newest, as the spec's version negotiation says
/// (the client then decides whether it can go on).
pub const PROTOCOL_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// Largest request body read: far above any tool call's arguments (each string is bounded
/// far below it), so a hostile body costs no parse of megabytes.
pub const BODY_MAX: usize = 16 * 1024;

/// Deepest JSON nesting read in a request: a tool call's arguments are flat.
const DEPTH_MAX: usize = 16;

/// JSON-RPC's error codes, as the spec names them.
pub mod code {
    /// The body is not JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// JSON, but not a JSON-RPC request this server reads (a batch, no `method`, a bad `id`).
    pub const INVALID_REQUEST: i64 = -32600;
    /// No such method.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// The method's params are not what it takes (an unknown tool, params not an object).
    pub const INVALID_PARAMS: i64 = -32602;
    /// The server failed (storage down): the client may try again.
    pub const INTERNAL_ERROR: i64 = -32603;
}

/// A JSON-RPC request's id: a string or an integer (never null, as MCP requires).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Id {
    /// A number.
    Number(i64),
    /// A string (at most `ID_MAX_LEN` bytes).
    Text(String),
}

/// Longest string id accepted (echoed back in the response).
const ID_MAX_LEN: usize = 256;

impl Id {
    fn to_json(&self) -> Value {
        match self {
            Id::Number(n) => json!(n),
            Id::Text(s) => json!(s),
        }
    }
}

/// One message a client posted.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A request: answered with a result or an error.
    Request {
        /// Its id, echoed.
        id: Id,
        /// Its method (`initialize`, `tools/list`, `tools/call`, `ping`).
        method: String,
        /// Its params (`{}` when absent).
        params: Value,
    },
    /// A notification (`notifications/initialized`, `notifications/cancelled`): `202`.
    Notification,
    /// A response to a request of the server's (it sends none): `202`.
    Response,
}

/// A JSON-RPC error, with the request's id when it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcError {
    /// The code (`code`).
    pub code: i64,
    /// What is wrong, for the client's user.
    pub message: String,
    /// The request's id; `None` when it could not be read (answered with `"id": null`).
    pub id: Option<Id>,
}

impl RpcError {
    /// An error of `code` saying `message`.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError { code, message: message.into(), id: None }
    }

    /// The same, answering the request `id`.
    pub fn to(self, id: &Id) -> Self {
        RpcError { id: Some(id.clone()), ..self }
    }

    /// The response body.
    pub fn body(&self) -> Value {
        let id = self.id.as_ref().map_or(Value::Null, Id::to_json);
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": self.code, "message": self.message}})
    }
}

/// The response to request `id` with `result`.
pub fn result(id: &Id, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id.to_json(), "result": result})
}

/// Read a posted body as one JSON-RPC message. A batch (a JSON array) is refused: the spec
/// removed batches in 2025-06-18, and one message per POST is what every client sends.
pub fn read(body: &[u8]) -> Result<Incoming, RpcError> {
    if body.len() > BODY_MAX {
        return Err(RpcError::new(code::INVALID_REQUEST, format!("request body too large: over {BODY_MAX} bytes")));
    }
    if nesting(body) > DEPTH_MAX {
        return Err(RpcError::new(code::INVALID_REQUEST, format!("JSON nested deeper than {DEPTH_MAX}")));
    }
    let value: Value =
        serde_json::from_slice(body).map_err(|e| RpcError::new(code::PARSE_ERROR, format!("not JSON: {e}")))?;
    let Value::Object(message) = value else {
        let what =
            if value.is_array() { "a batch (this server takes one message per request)" } else { "not an object" };
        return Err(RpcError::new(code::INVALID_REQUEST, format!("the message is {what}")));
    };
    if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(RpcError::new(code::INVALID_REQUEST, "jsonrpc must be \"2.0\""));
    }
    let id = match message.get("id") {
        None => None,
        Some(Value::Number(n)) => Some(Id::Number(
            n.as_i64().ok_or_else(|| RpcError::new(code::INVALID_REQUEST, "id must be a string or an integer"))?,
        )),
        Some(Value::String(s)) if s.len() <= ID_MAX_LEN => Some(Id::Text(s.clone())),
        Some(_) => {
            return Err(RpcError::new(
                code::INVALID_REQUEST,
                format!("id must be a string of at most {ID_MAX_LEN} bytes or an integer"),
            ));
        }
    };
    let method = message.get("method").map(|m| m.as_str().map(str::to_string));
    match (id, method) {
        (Some(id), Some(Some(method))) => {
            let params = match message.get("params") {
                None | Some(Value::Null) => json!({}),
                Some(Value::Object(params)) => Value::Object(params.clone()),
                Some(_) => return Err(RpcError::new(code::INVALID_PARAMS, "params must be an object").to(&id)),
            };
            Ok(Incoming::Request { id, method, params })
        }
        (None, Some(Some(_))) => Ok(Incoming::Notification),
        (Some(_), None) if message.contains_key("result") || message.contains_key("error") => Ok(Incoming::Response),
        (id, _) => {
            let error = RpcError::new(code::INVALID_REQUEST, "a request needs a string method");
            Err(match id {
                Some(id) => error.to(&id),
                None => error,
            })
        }
    }
}

/// How deeply `body` nests arrays and objects (outside strings): checked before parsing, so a
/// body of 16 KB of `[` costs a scan, not a recursion serde_json would refuse only at 128.
fn nesting(body: &[u8]) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &b in body {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// The version the server answers `initialize` with: the client's when this server speaks
/// it, else the newest it speaks.
pub fn negotiate(asked: Option<&str>) -> &'static str {
    PROTOCOL_VERSIONS.iter().find(|v| Some(**v) == asked).copied().unwrap_or(PROTOCOL_VERSIONS[0])
}

/// Whether an `MCP-Protocol-Version` header names a version this server speaks. Absent, the
/// spec says to assume 2025-03-26, which it speaks.
pub fn speaks(header: Option<&str>) -> bool {
    header.is_none_or(|v| PROTOCOL_VERSIONS.contains(&v.trim()))
}

/// `initialize`'s result: the version, what the server offers (tools, nothing else), who it
/// is, and how an assistant should use it.
pub fn initialized(params: &Value) -> Value {
    let asked = params.get("protocolVersion").and_then(Value::as_str);
    json!({
        "protocolVersion": negotiate(asked),
        "capabilities": {"tools": {"listChanged": false}},
        "serverInfo": {
            "name": "terraform-registry",
            "title": "Private Terraform registry",
            "version": env!("CARGO_PKG_VERSION"),
        },
        "instructions": INSTRUCTIONS,
    })
}

/// What the server tells an assistant about itself (`initialize`'s `instructions`).
pub const INSTRUCTIONS: &str = "This is the organisation's private Terraform/OpenTofu registry. \
Before writing a module block for an internal module, search it here (search_modules), read its \
interface (get_module_details: inputs with types and defaults, outputs, README) and copy its \
snippet (get_module_usage) rather than guessing inputs. Prefer versions that are not deprecated; \
before upgrading a module, read compare_module_versions for breaking changes. Only modules and \
providers the caller's token may read are visible.";
