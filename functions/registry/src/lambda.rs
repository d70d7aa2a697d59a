//! The Lambda side: build each function's app once per container, and adapt lambda_http
//! requests to the shared handler. The binaries only call these.

use std::convert::Infallible;

use lambda_http::{Body, Request, RequestExt, Response};

use crate::app::{App, Reply};
use crate::config::Config;
use crate::router::Service;
use crate::storage::{NoStorage, S3Storage, Storage};

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Discovery answers from configuration alone: no S3 client, no AWS credential lookup.
pub fn discovery_app() -> Result<App<NoStorage>, BoxError> {
    Ok(App::new(Config::from_env()?, NoStorage, &[Service::Discovery]))
}

/// The modules or mirror function: config and the S3 client, built once.
pub async fn s3_app(service: Service) -> Result<App<S3Storage>, BoxError> {
    let (config, storage) = config_and_storage().await?;
    Ok(App::new(config, storage, &[service]))
}

/// Configuration and the S3 client, with what each cost in the function's log (the cold-start
/// benchmark reads `sdk_us` from this line).
async fn config_and_storage() -> Result<(Config, S3Storage), BoxError> {
    let started = std::time::Instant::now();
    let config = Config::from_env()?;
    let config_done = started.elapsed();
    let storage = S3Storage::from_env(&config).await;
    tracing::info!(
        config_us = config_done.as_micros() as u64,
        sdk_us = (started.elapsed() - config_done).as_micros() as u64,
        "init: configuration, then AWS config, credentials chain and S3 client with its TLS setup"
    );
    Ok((config, storage))
}

/// Answer one API Gateway request. Never an `Err`: API Gateway would turn it into an opaque
/// 502, so every failure is already a JSON reply here.
pub async fn handle<S: Storage>(app: &App<S>, request: Request) -> Result<Response<Body>, Infallible> {
    // The raw path as API Gateway received it. `request.uri()` went through URL parsing,
    // which resolves `..` and `%2e%2e`: routing on it could reach a key the client never named.
    let header = |name| request.headers().get(name).and_then(|v: &http::HeaderValue| v.to_str().ok());
    let request = crate::app::Request::new(request.method(), request.raw_http_path())
        .query(request.uri().query())
        .authorization(header(http::header::AUTHORIZATION))
        .if_none_match(header(http::header::IF_NONE_MATCH));
    let reply = app.handle(&request).await;
    Ok(to_response(reply))
}

fn to_response(reply: Reply) -> Response<Body> {
    let body = match String::from_utf8(reply.body.to_vec()) {
        _ if reply.body.is_empty() => Body::Empty,
        Ok(text) => Body::Text(text),
        Err(e) => Body::Binary(e.into_bytes()),
    };
    let mut response = Response::new(body);
    *response.status_mut() = reply.status;
    for (name, value) in reply.headers {
        if let Ok(value) = http::HeaderValue::from_str(&value) {
            response.headers_mut().append(name, value);
        }
    }
    response
}

/// The indexer function's state: config and the S3 client, built once per container.
pub struct IndexerFunction<S> {
    pub config: Config,
    pub storage: S,
    /// `AWS_LAMBDA_FUNCTION_NAME`: the role session name of this function's own writes.
    pub own_session: Option<String>,
}

pub async fn indexer_function() -> Result<IndexerFunction<S3Storage>, BoxError> {
    let (config, storage) = config_and_storage().await?;
    let own_session = std::env::var("AWS_LAMBDA_FUNCTION_NAME").ok().filter(|n| !n.is_empty());
    Ok(IndexerFunction { config, storage, own_session })
}

/// Answer one indexer invocation (S3 notifications, or `{"reindex": "all"}`). An `Err` makes
/// Lambda retry the event, so only transient failures are errors.
pub async fn index<S: Storage>(
    function: &IndexerFunction<S>,
    event: lambda_http::LambdaEvent<serde_json::Value>,
) -> Result<serde_json::Value, BoxError> {
    let event: crate::events::IndexerEvent = serde_json::from_value(event.payload)
        .map_err(|e| format!("expected S3 notifications or {{\"reindex\": \"all\"}}: {e}"))?;
    let indexer = crate::index::Indexer::new(&function.storage, function.config.limits.clone());
    let own_session = function.own_session.as_deref();
    let summary = crate::events::handle(&indexer, &function.config.bucket, own_session, event).await?;
    tracing::info!(indexed = ?summary.indexed, unchanged = summary.unchanged.len(), ignored = summary.ignored_keys, "indexer done");
    Ok(serde_json::to_value(summary)?)
}
