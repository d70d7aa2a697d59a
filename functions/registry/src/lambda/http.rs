//! The HTTP adapter: the API Gateway functions' events through the guard and lambda_http.
//!
//! API Gateway HTTP API events (payload format 2.0) become `http::Request`s through
//! lambda_http, and the handler's `http::Response` becomes API Gateway's response event
//! through it too: the handler answers the same `http` types the local server hands it.
//! lambda_http's request conversion panics on some values a forged or odd event can carry
//! (see `guard`), so each event passes the guard first: what would panic is refused with 400,
//! or made harmless where the registry never reads it. The registry still routes on the raw
//! path (`rawPath`, kept apart by lambda_http from the URI it normalises).

use std::convert::Infallible;

use aws_lambda_events::apigw::{ApiGatewayV2httpRequest, ApiGatewayV2httpResponse};
use aws_lambda_events::encodings::Body;
use bytes::Bytes;
use lambda_http::RequestExt;
use lambda_http::request::LambdaRequest;
use lambda_runtime::LambdaEvent;
use serde_json::Value;

use crate::app::{App, RawPath, Reply, Request};
use crate::error::{Error, chain};
use crate::storage::Storage;

/// Respond to one API Gateway invocation (what the runtime calls). Never an `Err`: API Gateway
/// would turn it into an opaque 502, so every failure is already a JSON reply here.
pub async fn respond<S: Storage>(
    app: &App<S>,
    event: LambdaEvent<Value>,
) -> Result<ResponseEvent<impl serde::Serialize + Send + use<S>>, Infallible> {
    let LambdaEvent { payload, context } = event;
    Ok(response_event(app, payload, context).await)
}

/// API Gateway's response event: lambda_http's for what it converted, the guard's refusal
/// otherwise (lambda_http does not name its response type outside the crate, so this wraps it).
#[derive(serde::Serialize)]
#[serde(untagged)]
pub enum ResponseEvent<R> {
    /// What lambda_http made of the handler's `http::Response`.
    Converted(R),
    /// An event refused before lambda_http saw it.
    Refused(Box<ApiGatewayV2httpResponse>),
}

/// The response event to an API Gateway HTTP API event, given as the JSON the runtime
/// delivers, read back from the JSON the runtime would send (what tests call). Anything that is
/// not such an event gets a 400 JSON response.
pub async fn respond_to_payload<S: Storage>(app: &App<S>, payload: Value) -> ApiGatewayV2httpResponse {
    let response = response_event(app, payload, lambda_runtime::Context::default()).await;
    let json = serde_json::to_value(&response).unwrap_or_default();
    serde_json::from_value(json).unwrap_or_else(|e| {
        api_gateway_response(Reply::error(&Error::internal_from("unreadable response event", e)).into_http())
    })
}

async fn response_event<S: Storage>(
    app: &App<S>,
    payload: Value,
    context: lambda_runtime::Context,
) -> ResponseEvent<impl serde::Serialize + Send + use<S>> {
    let mut event = match serde_json::from_value::<ApiGatewayV2httpRequest>(payload) {
        Ok(event) => event,
        Err(e) => {
            tracing::warn!(error = %e, "not an API Gateway HTTP API (payload 2.0) event");
            let refused = Error::BadRequest("the function expects API Gateway HTTP API (payload 2.0) events".into());
            return ResponseEvent::Refused(Box::new(api_gateway_response(Reply::error(&refused).into_http())));
        }
    };
    if let Err(refused) = guard(&mut event) {
        let raw_path = event.raw_path.as_deref().unwrap_or_default();
        let path = crate::app::loggable_path(raw_path);
        tracing::info!(%path, status = refused.status().as_u16(), error = %chain(&refused), "refused before lambda_http");
        let request = Request::from_parts(&event.request_context.http.method, raw_path, None, &event.headers);
        return ResponseEvent::Refused(Box::new(api_gateway_response(app.refuse(&refused, &request).into_http())));
    }
    let handler = lambda_http::service_fn(|request: lambda_http::Request| async move {
        // Boxed: the runtime's service layers on top of the handler's own future make a type
        // deeper than the compiler's default recursion limit.
        let response = Box::pin(app.respond(&into_registry_request(request))).await;
        Ok::<_, Infallible>(response.map(http_body_util::Full::new))
    });
    let event = LambdaEvent::new(LambdaRequest::ApiGatewayV2(event), context);
    match lambda_http::tower::ServiceExt::oneshot(lambda_http::Adapter::from(handler), event).await {
        Ok(response) => ResponseEvent::Converted(response),
        Err(never) => match never {},
    }
}

/// lambda_http's request as the handler reads it: its method, headers (the cookies of payload
/// 2.0 joined into `Cookie`) and body, the raw query it appended to the URI, and the raw path.
fn into_registry_request(request: lambda_http::Request) -> http::Request<Bytes> {
    let raw_path = RawPath(request.raw_http_path().to_string());
    let (mut parts, body) = request.into_parts();
    parts.extensions.insert(raw_path);
    let body = match body {
        Body::Text(text) => Bytes::from(text),
        Body::Binary(bytes) => Bytes::from(bytes),
        _ => Bytes::new(),
    };
    http::Request::from_parts(parts, body)
}

/// Longest API Gateway stage name (its own limit); the guard's bound on what lambda_http
/// prefixes to the path.
const STAGE_MAX_LEN: usize = 128;
/// Longest raw query string taken: far above what the list and search routes read
/// (`query::QUERY_MAX_LEN`), far below what makes the URI too long for `http::Uri`.
const QUERY_MAX_LEN: usize = 8192;

/// What lambda_http's request conversion (1.3) would panic on, refused (400) or made harmless
/// before it runs. It builds the URI as `Url::parse(format!("{proto}://{host}{path}")).unwrap()`,
/// where `proto` is `X-Forwarded-Proto`, `host` the `Host` header or `requestContext.domainName`
/// and `path` the stage and `rawPath`; then appends `rawQueryString` and `expect`s `http::Uri` to
/// take the whole; and decodes a base64 body with `expect`. So, before it:
/// - `X-Forwarded-Proto` other than `http` or `https` becomes `https` (`x y` made the parse
///   fail): API Gateway HTTP APIs are HTTPS-only, and the registry never reads it;
/// - a host that is not a host name with an optional port (`a b`, `x:99999`, `1.2.3.999`) is
///   dropped, so lambda_http builds its URI without it;
/// - a `rawPath` that does not start with `/` (`:99999` became an invalid port), or longer
///   than the router takes: 400, as the router would answer;
/// - a stage name longer than API Gateway allows, or a query string `http::Uri` cannot carry
///   (a space, a byte above 127) or too long for it: 400;
/// - a body that is not the base64 the event says it is: 400.
///
/// `tests/library/lambda_events.rs` shows lambda_http panicking on each without the guard;
/// a property test there checks that nothing the guard lets through makes it panic.
pub fn guard(event: &mut ApiGatewayV2httpRequest) -> Result<(), Error> {
    let proto = event.headers.get("x-forwarded-proto").map(|v| v.as_bytes());
    if !matches!(proto, None | Some(b"http" | b"https")) {
        event.headers.insert("x-forwarded-proto", http::HeaderValue::from_static("https"));
    }
    // The host lambda_http builds the URI with: `Host`, or where that is not text,
    // `domainName`. One that is not a host name is dropped (the pages then show the configured
    // host, as they do for such a value anyway; the API never reads it).
    if event.headers.get(http::header::HOST).is_some_and(|h| h.to_str().is_ok_and(|h| !is_host(h))) {
        event.headers.remove(http::header::HOST);
    }
    if event.request_context.domain_name.as_deref().is_some_and(|h| !is_host(h)) {
        event.request_context.domain_name = None;
    }
    let path = event.raw_path.as_deref().unwrap_or_default();
    if !path.is_empty() && !path.starts_with('/') {
        return Err(Error::BadRequest("the path must start with /".into()));
    }
    crate::router::check_path_len(path)?;
    if event.request_context.stage.as_ref().is_some_and(|s| s.len() > STAGE_MAX_LEN) {
        return Err(Error::BadRequest(format!("stage name longer than {STAGE_MAX_LEN} bytes")));
    }
    if let Some(query) = &event.raw_query_string
        && (query.len() > QUERY_MAX_LEN || http::uri::PathAndQuery::try_from(format!("/?{query}")).is_err())
    {
        return Err(Error::BadRequest("the query string is not one a URL can carry".into()));
    }
    if event.is_base64_encoded
        && let Some(body) = &event.body
        && base64::Engine::decode(&base64::engine::general_purpose::STANDARD, body).is_err()
    {
        return Err(Error::BadRequest("the body is not valid base64".into()));
    }
    Ok(())
}

/// A host name or IP address with an optional port, as `url` parses it (the parser lambda_http
/// uses): letters, digits, `.`, `-` and a `:PORT`, nothing that could end the authority.
fn is_host(host: &str) -> bool {
    !host.is_empty()
        && host.len() <= 261
        && host.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':'))
        && url::Url::parse(&format!("https://{host}/")).is_ok()
}

/// API Gateway's response event for a refusal made before lambda_http (which builds the
/// others): payload 2.0 sets cookies from `cookies`, one per `Set-Cookie`.
fn api_gateway_response(response: http::Response<Bytes>) -> ApiGatewayV2httpResponse {
    let (mut parts, body) = response.into_parts();
    let mut event = ApiGatewayV2httpResponse::default();
    event.status_code = i64::from(parts.status.as_u16());
    let cookies = parts.headers.get_all(http::header::SET_COOKIE);
    event.cookies = cookies.iter().filter_map(|v| v.to_str().ok().map(str::to_string)).collect();
    parts.headers.remove(http::header::SET_COOKIE);
    event.headers = parts.headers;
    if !body.is_empty() {
        event.body = Some(Body::Text(String::from_utf8_lossy(&body).into_owned()));
    }
    event
}
