//! The Lambda side: build each function's state once per container, and answer the events the
//! runtime hands over. The binaries only call these.
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

use crate::app::{App, Function, RawPath, Reply, Request};
use crate::config::Config;
use crate::error::Error;
use crate::storage::{NoStorage, S3Storage, Storage};

/// What a function's start-up or an indexer invocation fails with.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Discovery answers from configuration alone: no S3 client, no AWS credential lookup.
pub fn discovery_app() -> Result<App<NoStorage>, BoxError> {
    Ok(App::builder(Config::from_env()?, NoStorage).function(Function::discovery()).build()?)
}

/// The modules, mirror, providers, web or oci function (`Function::modules()`, …): config and
/// the S3 client, built once, and the clients its configuration asks for
/// (`Builder::build`: the mirror's upstreams, the OpenID Connect issuers' keys).
pub async fn s3_app(function: Function<S3Storage>) -> Result<App<S3Storage>, BoxError> {
    let (config, storage) = config_and_storage().await?;
    Ok(App::builder(config, storage).function(function).build()?)
}

/// Configuration and the S3 client, with what each cost in the function's log (the cold-start
/// benchmark reads `sdk_us` from this line).
async fn config_and_storage() -> Result<(Config, S3Storage), BoxError> {
    let started = std::time::Instant::now();
    let config = Config::from_env()?;
    let config_done = started.elapsed();
    let storage = S3Storage::from_env(&config.bucket, config.s3_force_path_style).await;
    tracing::info!(
        config_us = config_done.as_micros() as u64,
        sdk_us = (started.elapsed() - config_done).as_micros() as u64,
        "init: configuration, then AWS config, credentials chain and S3 client with its TLS setup"
    );
    Ok((config, storage))
}

/// Answer one API Gateway invocation. Never an `Err`: API Gateway would turn it into an
/// opaque 502, so every failure is already a JSON reply here.
pub async fn respond<S: Storage>(
    app: &App<S>,
    event: LambdaEvent<Value>,
) -> Result<Answer<impl serde::Serialize + Send + use<S>>, Infallible> {
    let LambdaEvent { payload, context } = event;
    Ok(answer_event(app, payload, context).await)
}

/// API Gateway's response event: lambda_http's for what it converted, the guard's refusal
/// otherwise (lambda_http does not name its response type outside the crate, so this wraps it).
#[derive(serde::Serialize)]
#[serde(untagged)]
pub enum Answer<R> {
    /// What lambda_http made of the handler's `http::Response`.
    Answered(R),
    /// An event refused before lambda_http saw it.
    Refused(Box<ApiGatewayV2httpResponse>),
}

/// The answer to an API Gateway HTTP API event, given as the JSON the runtime delivers, as
/// the JSON the runtime sends back (what tests call). Anything that is not such an event gets
/// a 400 JSON answer.
pub async fn answer<S: Storage>(app: &App<S>, event: Value) -> ApiGatewayV2httpResponse {
    let answer = answer_event(app, event, lambda_runtime::Context::default()).await;
    let json = serde_json::to_value(&answer).unwrap_or_default();
    serde_json::from_value(json).unwrap_or_else(|e| {
        api_gateway_response(Reply::error(&Error::Internal(format!("unreadable response event: {e}"))).into_http())
    })
}

async fn answer_event<S: Storage>(
    app: &App<S>,
    payload: Value,
    context: lambda_runtime::Context,
) -> Answer<impl serde::Serialize + Send + use<S>> {
    let mut event = match serde_json::from_value::<ApiGatewayV2httpRequest>(payload) {
        Ok(event) => event,
        Err(e) => {
            tracing::warn!(error = %e, "not an API Gateway HTTP API (payload 2.0) event");
            let refused = Error::BadRequest("the function expects API Gateway HTTP API (payload 2.0) events".into());
            return Answer::Refused(Box::new(api_gateway_response(Reply::error(&refused).into_http())));
        }
    };
    if let Err(refused) = guard(&mut event) {
        let raw_path = event.raw_path.as_deref().unwrap_or_default();
        let path = crate::app::loggable_path(raw_path);
        tracing::info!(%path, status = refused.status().as_u16(), error = %refused, "refused before lambda_http");
        let request = Request::from_parts(&event.request_context.http.method, raw_path, None, &event.headers);
        return Answer::Refused(Box::new(api_gateway_response(app.refuse(&refused, &request).into_http())));
    }
    let handler = lambda_http::service_fn(|request: lambda_http::Request| async move {
        // Boxed: the runtime's service layers on top of the handler's own future make a type
        // deeper than the compiler's default recursion limit.
        let response = Box::pin(app.respond(&into_registry_request(request))).await;
        Ok::<_, Infallible>(response.map(http_body_util::Full::new))
    });
    let event = LambdaEvent::new(LambdaRequest::ApiGatewayV2(event), context);
    match lambda_http::tower::ServiceExt::oneshot(lambda_http::Adapter::from(handler), event).await {
        Ok(response) => Answer::Answered(response),
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
    let mut answer = ApiGatewayV2httpResponse::default();
    answer.status_code = i64::from(parts.status.as_u16());
    let cookies = parts.headers.get_all(http::header::SET_COOKIE);
    answer.cookies = cookies.iter().filter_map(|v| v.to_str().ok().map(str::to_string)).collect();
    parts.headers.remove(http::header::SET_COOKIE);
    answer.headers = parts.headers;
    if !body.is_empty() {
        answer.body = Some(Body::Text(String::from_utf8_lossy(&body).into_owned()));
    }
    answer
}

/// The indexer function's state: config and the S3 client, built once per container.
pub struct IndexerFunction<S> {
    /// Loaded once at start.
    pub config: Config,
    /// The bucket.
    pub storage: S,
}

/// Build the indexer function's state from the environment (once per container).
pub async fn indexer_function() -> Result<IndexerFunction<S3Storage>, BoxError> {
    let (config, storage) = config_and_storage().await?;
    Ok(IndexerFunction { config, storage })
}

/// Answer one indexer invocation (S3 notifications, or `{"reindex": "all"}`). An `Err` makes
/// Lambda retry the event, so only transient failures are errors.
pub async fn index<S: Storage>(function: &IndexerFunction<S>, event: LambdaEvent<Value>) -> Result<Value, BoxError> {
    // Boxed for the same reason as the handler's future in `answer`.
    Box::pin(index_payload(function, event.payload)).await
}

/// The indexer's answer to an invocation's JSON (what tests call).
pub async fn index_payload<S: Storage>(function: &IndexerFunction<S>, payload: Value) -> Result<Value, BoxError> {
    let event: crate::events::IndexerEvent = serde_json::from_value(payload)
        .map_err(|e| format!("expected S3 notifications or {{\"reindex\": \"all\"}}: {e}"))?;
    let indexer = crate::index::Indexer::new(&function.storage, function.config.limits.clone())
        .signing_for(function.config.hostname.clone());
    let summary = crate::events::process(&indexer, &function.config.bucket, event).await?;
    tracing::info!(indexed = ?summary.indexed, unchanged = summary.unchanged.len(), ignored = summary.ignored_keys, "indexer done");
    Ok(serde_json::to_value(summary)?)
}

/// The puller function's state: config, the S3 client and the upstream client, built once.
pub struct PullerFunction<S> {
    /// Loaded once at start.
    pub config: Config,
    /// The bucket.
    pub storage: S,
    /// The allowed upstreams.
    pub upstream: crate::upstream::Upstream,
}

/// Build the puller function's state from the environment (once per container). Without
/// upstream hosts there is nothing to pull: a configuration error.
pub async fn puller_function() -> Result<PullerFunction<S3Storage>, BoxError> {
    let (config, storage) = config_and_storage().await?;
    let upstream = crate::upstream::Upstream::new(&config.upstream)?
        .ok_or("REGISTRY_UPSTREAM_HOSTS is empty: the puller has no upstream to copy from")?;
    Ok(PullerFunction { config, storage, upstream })
}

/// Answer one puller invocation: S3 notifications of pull records. An `Err` (storage or the
/// upstream unreachable) makes Lambda retry the event; a zip that does not verify is not.
pub async fn pull<S: Storage>(function: &PullerFunction<S>, event: LambdaEvent<Value>) -> Result<Value, BoxError> {
    Box::pin(pull_payload(function, event.payload)).await
}

/// The puller's answer to an invocation's JSON (what tests call).
pub async fn pull_payload<S: Storage>(function: &PullerFunction<S>, payload: Value) -> Result<Value, BoxError> {
    let event: aws_lambda_events::s3::S3Event =
        serde_json::from_value(payload).map_err(|e| format!("expected S3 notifications: {e}"))?;
    let mut reports = serde_json::Map::new();
    let mut failure = None;
    for key in crate::events::pull_records(&event, &function.config.bucket) {
        let limit = function.config.limits.provider_zip_bytes;
        match crate::upstream::copy::copy_release(&function.storage, &function.upstream, &key, limit).await {
            Ok(report) => {
                tracing::info!(key, copied = ?report.copied, present = ?report.present, failed = ?report.failed, "pulled");
                reports.insert(key, serde_json::to_value(report)?);
            }
            Err(e) => {
                tracing::error!(key, error = %e, "pull failed; the event will be retried");
                failure.get_or_insert(e);
            }
        }
    }
    match failure {
        Some(e) => Err(Box::new(e)),
        None => Ok(Value::Object(reports)),
    }
}
