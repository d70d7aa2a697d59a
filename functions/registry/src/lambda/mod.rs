//! The Lambda side: each function's state, built once per container (here), and one adapter
//! per kind of function (HTTP, indexer, puller, usage), which translates the event into a call of the library and its result
//! back into what the runtime sends. The binaries only call these.
//!
//! - [`http`]: API Gateway HTTP API events (the discovery, modules, mirror, providers, web and
//!   oci functions) through the guard and lambda_http to the handler's `http` types and back.
//! - [`indexer`]: S3 notifications to `events::process`, maintenance commands
//!   (`{"reindex": "all"}`, `{"audit": "all"}`) to `maintenance`.
//! - [`puller`]: S3 notifications of pull records to `upstream::copy::copy_batch`.
//! - [`usage`]: CloudWatch Logs subscription batches of the read functions' download records
//!   to `usage::fold_event`.
//!
//! The loops over a batch's records, and what is retried, live beside the work they drive,
//! not here.

pub mod http;
pub mod indexer;
pub mod puller;
pub mod usage;

use crate::app::{App, Function};
use crate::config::Config;
use crate::error::Error;
use crate::storage::{NoStorage, S3Storage};
use crate::upstream::Upstream;

/// Logs as Lambda's advanced logging controls ask: JSON lines when `AWS_LAMBDA_LOG_FORMAT` is
/// `JSON` (infra sets it), at the level `AWS_LAMBDA_LOG_LEVEL` names (infra sets INFO), else
/// `RUST_LOG`, else INFO. lambda_runtime's `init_default_subscriber` did the same and then
/// applied `RUST_LOG`'s per-module directives (`registry=debug`) through an `EnvFilter`, whose
/// regex engine was 0.35 MB of every binary (docs/PERFORMANCE.md, "Lambda packages"): here a
/// variable names one level, and one that does not is reported and read as INFO.
pub fn init_logging() {
    use lambda_runtime::tracing::subscriber::{self, filter::LevelFilter};
    let setting = std::env::var("AWS_LAMBDA_LOG_LEVEL").or_else(|_| std::env::var("RUST_LOG")).ok();
    // Lambda's levels are TRACE to ERROR and FATAL, which tracing has not: its nearest, ERROR.
    let level = setting.as_deref().map(|l| match l.trim() {
        fatal if fatal.eq_ignore_ascii_case("fatal") => Ok(LevelFilter::ERROR),
        level => level.parse::<LevelFilter>(),
    });
    if let Some(Err(_)) = level {
        // Before any subscriber exists: stderr, which Lambda keeps in the function's log.
        eprintln!("log level {setting:?} is not one level (error, warn, info, debug, trace): logging at INFO");
    }
    let level = level.and_then(Result::ok).unwrap_or(LevelFilter::INFO);
    let json = std::env::var("AWS_LAMBDA_LOG_FORMAT").is_ok_and(|f| f.eq_ignore_ascii_case("json"));
    let fmt = subscriber::fmt().with_target(false).without_time().with_max_level(level);
    if json { fmt.json().init() } else { fmt.init() }
}

/// What a function's start-up or an indexer or puller invocation fails with.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// An `Error` as the runtime reports it: Lambda keeps only an error's text (`errorMessage`, or
/// a start-up error's `Debug`), so the text is the whole chain (`error::chain`), causes included.
fn reported(err: Error) -> BoxError {
    crate::error::chain(&err).into()
}

/// Discovery answers from configuration alone: no S3 client, no AWS credential lookup.
pub fn discovery_app() -> Result<App<NoStorage>, BoxError> {
    App::function_builder(Config::from_env()?, NoStorage, Function::discovery()).build().map_err(reported)
}

/// The modules, mirror, providers, web or oci function (`Function::modules()`, …): config and
/// the S3 client, built once, and the clients its configuration asks for
/// (`Builder::build`: the mirror's upstreams, the OpenID Connect issuers' keys).
pub async fn s3_app(function: Function<S3Storage>) -> Result<App<S3Storage>, BoxError> {
    let (config, storage) = config_and_storage().await?;
    // Download records to the log, where the usage function's subscription reads them.
    App::function_builder(config, storage, function).usage(crate::usage::Sink::Log).build().map_err(reported)
}

/// The indexer function's state: config and the S3 client, built once per container.
pub struct IndexerState<S> {
    /// Loaded once at start.
    pub config: Config,
    /// The bucket.
    pub storage: S,
}

/// Build the indexer function's state from the environment (once per container).
pub async fn indexer_state() -> Result<IndexerState<S3Storage>, BoxError> {
    let (config, storage) = config_and_storage().await?;
    Ok(IndexerState { config, storage })
}

/// The usage function's state: the same as the indexer's (config and the S3 client).
pub type UsageState<S> = IndexerState<S>;

/// Build the usage function's state from the environment (once per container).
pub async fn usage_state() -> Result<UsageState<S3Storage>, BoxError> {
    indexer_state().await
}

/// The puller function's state: config, the S3 client and the upstream clients, built once.
pub struct PullerState<S> {
    /// Loaded once at start.
    pub config: Config,
    /// The bucket.
    pub storage: S,
    /// The allowed provider upstreams (the network mirror's pull records), if any.
    pub upstream: Option<Upstream>,
    /// The allowed module upstreams (the modules pull-through's pull records), if any, with
    /// the puller's limit (`UPSTREAM_MODULE_PULL_MAX_BYTES`).
    pub module_upstream: Option<crate::upstream::modules::ModuleUpstream>,
}

/// Build the puller function's state from the environment (once per container). Without
/// upstream hosts of either kind there is nothing to pull: a configuration error.
pub async fn puller_state() -> Result<PullerState<S3Storage>, BoxError> {
    let (config, storage) = config_and_storage().await?;
    let upstream = Upstream::new(&config.upstream).map_err(reported)?;
    let module_upstream =
        crate::upstream::module_pull::puller_upstream(&config.upstream_modules, &config.upstream).map_err(reported)?;
    if upstream.is_none() && module_upstream.is_none() {
        return Err(
            "REGISTRY_UPSTREAM_HOSTS and REGISTRY_UPSTREAM_MODULES are empty: the puller has no upstream".into()
        );
    }
    Ok(PullerState { config, storage, upstream, module_upstream })
}

/// Configuration and the S3 client, with what each cost in the function's log (the cold-start
/// benchmark reads `sdk_us` from this line).
async fn config_and_storage() -> Result<(Config, S3Storage), BoxError> {
    let started = std::time::Instant::now();
    let config = Config::from_env()?;
    let config_done = started.elapsed();
    let storage = S3Storage::from_lambda_env(&config.bucket, config.s3_force_path_style).map_err(reported)?;
    tracing::info!(
        config_us = config_done.as_micros() as u64,
        sdk_us = (started.elapsed() - config_done).as_micros() as u64,
        "init: configuration, then the S3 client with its TLS setup"
    );
    Ok((config, storage))
}
