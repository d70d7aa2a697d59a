//! The Lambda side: build each function's state once per container, and answer the events the
//! runtime hands over. The binaries only call these.
//!
//! API Gateway HTTP API events (payload format 2.0) are read with `aws_lambda_events`' types
//! straight from the invocation's JSON, not through lambda_http: lambda_http builds an
//! `http::Request` whose URL it makes from the `Host` and `X-Forwarded-Proto` headers and
//! unwraps the parse, so an odd header value panicked before any handler ran. The registry
//! routes on the raw path and reads two headers; it needs no URL, so none is built.

use std::convert::Infallible;

use aws_lambda_events::apigw::{ApiGatewayV2httpRequest, ApiGatewayV2httpResponse};
use aws_lambda_events::encodings::Body;
use lambda_runtime::LambdaEvent;
use serde_json::Value;

use crate::app::{App, Reply, Request};
use crate::config::Config;
use crate::error::Error;
use crate::router::Service;
use crate::storage::{NoStorage, S3Storage, Storage};

/// What a function's start-up or an indexer invocation fails with.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Discovery answers from configuration alone: no S3 client, no AWS credential lookup.
pub fn discovery_app() -> Result<App<NoStorage>, BoxError> {
    Ok(App::new(Config::from_env()?, NoStorage, &[Service::Discovery]))
}

/// The modules, mirror, providers or web function: config and the S3 client, built once,
/// and the clients its configuration asks for (`App::with_clients`: the mirror's upstreams, the
/// OpenID Connect issuers' keys).
pub async fn s3_app(service: Service) -> Result<App<S3Storage>, BoxError> {
    let (config, storage) = config_and_storage().await?;
    Ok(App::with_clients(config, storage, &[service])?)
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
) -> Result<ApiGatewayV2httpResponse, Infallible> {
    Ok(answer(app, event.payload).await)
}

/// The answer to an API Gateway HTTP API event, given as the JSON the runtime delivers.
/// Anything that is not such an event gets a 400 JSON answer.
pub async fn answer<S: Storage>(app: &App<S>, event: Value) -> ApiGatewayV2httpResponse {
    let reply = match serde_json::from_value::<ApiGatewayV2httpRequest>(event) {
        Ok(event) => {
            // `rawPath` is the path exactly as the client sent it: neither decoded nor
            // normalised, so `%2e%2e` reaches the router as it was sent.
            let raw_path = event.raw_path.as_deref().unwrap_or_default();
            let method = &event.request_context.http.method;
            // Payload 2.0 moves the Cookie header into `cookies`, one entry per cookie.
            let cookie = event.cookies.as_ref().map(|c| c.join("; "));
            let body = match (&event.body, event.is_base64_encoded) {
                (None, _) => Ok(Vec::new()),
                (Some(text), false) => Ok(text.as_bytes().to_vec()),
                (Some(text), true) => base64::Engine::decode(&base64::engine::general_purpose::STANDARD, text),
            };
            let request = Request::from_parts(method, raw_path, event.raw_query_string.as_deref(), &event.headers)
                .cookie(cookie.as_deref());
            match &body {
                // Boxed: the runtime's service layers on top of the handler's own future make a
                // type deeper than the compiler's default recursion limit.
                Ok(body) => Box::pin(app.handle(&request.body(body))).await,
                Err(_) => app.refuse(&Error::BadRequest("the body is not valid base64".into()), &request),
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, "not an API Gateway HTTP API (payload 2.0) event");
            Reply::error(&Error::BadRequest("the function expects API Gateway HTTP API (payload 2.0) events".into()))
        }
    };
    to_response(reply.into_http())
}

fn to_response(response: http::Response<bytes::Bytes>) -> ApiGatewayV2httpResponse {
    let (mut parts, body) = response.into_parts();
    let mut answer = ApiGatewayV2httpResponse::default();
    answer.status_code = i64::from(parts.status.as_u16());
    // Payload 2.0 sets cookies from `cookies`, one entry per Set-Cookie.
    answer.cookies = parts
        .headers
        .remove(http::header::SET_COOKIE)
        .and_then(|v| v.to_str().ok().map(str::to_string))
        .into_iter()
        .collect();
    answer.headers = parts.headers;
    if !body.is_empty() {
        answer.body = Some(match String::from_utf8(body.to_vec()) {
            Ok(text) => Body::Text(text),
            Err(e) => {
                // Serialised base64-encoded by aws_lambda_events; API Gateway decodes it.
                answer.is_base64_encoded = true;
                Body::Binary(e.into_bytes())
            }
        });
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
