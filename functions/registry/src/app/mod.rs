//! The request handler every deployment shares: the read Lambdas (each serving its own
//! routes) and the local registry (serving all of them). It routes (method, raw path), keeps to
//! the request budget, answers `If-None-Match` and `HEAD`, and logs; what each route answers
//! is its protocol's file in `routes`, with exactly one storage read where it needs one.

use std::time::Instant;

use bytes::Bytes;
use http::{Method, StatusCode};
use serde_json::Value;

use crate::clock::Monotonic;
use crate::config::Config;
use crate::context::Context;
use crate::error::{Error, chain};
use crate::exchange::etag_matches;
pub use crate::exchange::{RawPath, Reply, Request, STALE_HEADER};
use crate::router::{self, Service};
pub use crate::routes::Function;
use crate::routes::{self, Answer};
use crate::storage::Storage;

/// The handler of one process: its routes' shared context, the services it serves and what
/// answers them.
pub struct App<S> {
    context: Context<S>,
    services: Vec<Service>,
    answer: Answer<S>,
}

/// How an app is built (`App::builder` or `App::function_builder`): what differs between a
/// Lambda function, the local registry and a test, and nothing else. Its clients read the real
/// clock unless told otherwise.
pub struct Builder<S> {
    config: Config,
    storage: S,
    services: Vec<Service>,
    answer: Answer<S>,
    clock: Monotonic,
    usage: crate::usage::Sink,
}

impl<S: Storage> Builder<S> {
    /// Only the routes of `services` (others answer 404, as from the wrong function), with every
    /// protocol's code linked: tests of one function's behaviour.
    pub fn services(self, services: &[Service]) -> Self {
        Builder { services: services.to_vec(), answer: routes::every, ..self }
    }

    /// The clock the issuers' key sets and the upstreams' back-off read (tests move a manual
    /// one instead of sleeping).
    pub fn clock(self, clock: Monotonic) -> Self {
        Builder { clock, ..self }
    }

    /// Where download records go (`usage::Sink`; off unless named: the Lambdas name the
    /// log, the local registry its aggregator).
    pub fn usage(self, usage: crate::usage::Sink) -> Self {
        Builder { usage, ..self }
    }

    /// The app, with the clients its configuration asks for built once: the upstream
    /// registries' where it serves the mirror or the modules, the OpenID Connect issuers' where
    /// any are configured. Fails on a CA file that cannot be read.
    pub fn build(self) -> Result<App<S>, Error> {
        let upstreams = crate::context::Upstreams {
            providers: self.services.contains(&Service::Mirror),
            modules: self.services.contains(&Service::Modules),
        };
        let mut context = Context::new(self.config, self.storage, upstreams, self.clock)?;
        context.usage = self.usage;
        Ok(App { context, services: self.services, answer: self.answer })
    }
}

impl<S: Storage> App<S> {
    /// An app that serves every service with every protocol's code (the local registry, tests):
    /// `config` and `storage`, then what varies (`Builder`).
    pub fn builder(config: Config, storage: S) -> Builder<S> {
        Builder {
            config,
            storage,
            services: Service::ALL.to_vec(),
            answer: routes::every,
            clock: Monotonic::real(),
            usage: crate::usage::Sink::Off,
        }
    }

    /// One Lambda function's app: its service's routes alone, answered by its protocol's code
    /// alone. Other routes answer 404, as they would if API Gateway had sent a request to the
    /// wrong function. A second way in, not a `Builder` option, because a binary links what its
    /// constructor names: when `builder` set `routes::every` and an option replaced it, every
    /// function linked every protocol again (discovery grew from 2.6 to 7.9 MB, the read
    /// functions to 10.7 MB; docs/PERFORMANCE.md, "Lambda packages").
    pub fn function_builder(config: Config, storage: S, function: Function<S>) -> Builder<S> {
        Builder {
            config,
            storage,
            services: vec![function.service],
            answer: function.answer,
            clock: Monotonic::real(),
            usage: crate::usage::Sink::Off,
        }
    }

    /// The mirror's upstream registries, for the publishing side of the same process (the
    /// local registry's indexer copies what the pull-through fetched).
    #[cfg(feature = "aws")]
    pub fn upstream(&self) -> Option<std::sync::Arc<crate::upstream::Upstream>> {
        self.context.upstream.clone()
    }

    /// The configuration, loaded once at start.
    pub fn config(&self) -> &Config {
        &self.context.config
    }

    /// The bucket (S3, in memory, or none for discovery).
    pub fn storage(&self) -> &S {
        self.context.storage()
    }

    /// `/.well-known/terraform.json` as this deployment answers it.
    pub fn discovery(&self) -> Value {
        routes::discovery_document(&self.context.config)
    }

    /// Answer an `http::Request`, the type hyper (the local server) and lambda_http (the
    /// Lambdas) both hand over, with an `http::Response`. The path is the raw one: `RawPath`
    /// where the transport keeps it apart from the URI, else the URI's.
    pub async fn respond(&self, request: &http::Request<Bytes>) -> http::Response<Bytes> {
        let raw_path = request.extensions().get::<RawPath>().map_or(request.uri().path(), |p| p.0.as_str());
        let view = Request::from_parts(request.method(), raw_path, request.uri().query(), request.headers())
            .body(request.body());
        self.handle(&view).await.into_http()
    }

    /// Answer one request. Its `Authorization` header and query string are never logged.
    pub async fn handle(&self, request: &Request<'_>) -> Reply {
        let Request { method, raw_path, query, if_none_match, .. } = *request;
        let started = Instant::now();
        let routed = router::route(method, raw_path, query, &self.context.config.paths);
        let (route_name, result) = match routed {
            Ok(route) => {
                let config = &self.context.config;
                // A first download of an upstream module copies it while the CLI waits.
                let budget = match route.kind() {
                    router::RouteKind::UpstreamModuleDownload => config.copy_budget.max(config.request_budget),
                    _ => config.request_budget,
                };
                let name = route.name();
                let deadline = tokio::time::Instant::now() + budget;
                let answered = tokio::time::timeout_at(deadline, self.dispatch(route, request, deadline)).await;
                let result =
                    answered.unwrap_or_else(|_| Err(Error::unavailable(format!("no answer within {budget:?}"))));
                (name, result)
            }
            Err(e) => ("none", Err(e)),
        };
        let mut reply = match &result {
            Ok(reply) => reply.clone(),
            Err(e) => self.refuse(e, request),
        };
        if reply.status == StatusCode::OK
            && let (Some(etag), Some(condition)) = (reply.header_value("etag"), if_none_match)
            && etag_matches(condition, etag)
        {
            reply.status = StatusCode::NOT_MODIFIED;
            reply.body = Bytes::new();
            reply.headers.retain(|(name, _)| *name != "content-type");
        }
        if *method == Method::HEAD {
            reply.body = Bytes::new();
        }
        let path = loggable_path(raw_path);
        let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
        match &result {
            Err(e) if e.is_server_error() => {
                tracing::error!(%method, %path, route = route_name, status = reply.status.as_u16(), elapsed_ms, error = %chain(e), "request failed")
            }
            _ => {
                tracing::info!(%method, %path, route = route_name, status = reply.status.as_u16(), elapsed_ms, "request")
            }
        }
        reply
    }

    /// The answer to a request that fails with `error`: JSON (`{"errors": [...]}`), or for a
    /// web page's path a page that says what went wrong, with the same status. Transports use
    /// it for what they refuse before the handler (a body too large, say).
    pub fn refuse(&self, error: &Error, request: &Request<'_>) -> Reply {
        if router::is_page_path(request.raw_path) {
            routes::error_page(error, request)
        } else if router::is_mcp_path(request.raw_path) {
            routes::mcp_error_reply(error, request, self.config())
        } else if router::is_oci_path(request.raw_path) {
            let host = routes::public_host(self.config(), request);
            routes::oci_error_reply(error, request.raw_path, host.as_deref())
        } else {
            Reply::error(error)
        }
    }

    /// A routed request, if this process serves its route.
    async fn dispatch(
        &self,
        route: router::Route,
        request: &Request<'_>,
        deadline: tokio::time::Instant,
    ) -> Result<Reply, Error> {
        if !self.services.contains(&route.service()) {
            return Err(routes::elsewhere(&route));
        }
        (self.answer)(&self.context, route, request, deadline).await
    }
}

/// A request path as the log shows it: whole, up to the longest path any route takes
/// (`router::PATH_MAX_LEN`: longer ones are refused before routing), every byte that is not
/// printable ASCII percent-encoded as a URL would carry it, so a hostile path can neither
/// break a log line nor hide what it was.
pub fn loggable_path(raw: &str) -> String {
    let mut shown = String::with_capacity(raw.len().min(crate::router::PATH_MAX_LEN));
    for &b in raw.as_bytes().iter().take(crate::router::PATH_MAX_LEN) {
        match b {
            0x21..=0x7e => shown.push(b as char),
            _ => shown.push_str(&format!("%{b:02X}")),
        }
    }
    if raw.len() > crate::router::PATH_MAX_LEN {
        shown.push_str(&format!("… ({} bytes)", raw.len()));
    }
    shown
}

#[cfg(test)]
mod tests;
