//! The two servers of the local registry: the embedded S3 (plain HTTP) and the registry
//! itself (HTTPS, and plain HTTP on request), each stopped by the shared shutdown signal. A
//! stop also closes open connections, as a process exit would: a client's pooled keep-alive
//! connection must not go on reaching a registry that was stopped.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use registry::App;
use registry::storage::S3Storage;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::embedded_s3::IndexingS3;

/// What the registry answered, with how long its handler took (`LocalOptions::log_answers`):
/// the Lambda invocations and durations a deployment would bill (`bench/src/bin/aws_init.rs`).
#[derive(Debug, Clone)]
pub struct Answered {
    /// The Lambda function API Gateway would invoke (`Service::function_name`).
    pub function: &'static str,
    pub status: u16,
    /// The handler's time (`App::respond`), without TLS and HTTP framing.
    pub elapsed: Duration,
}

/// Where answers are recorded.
pub type AnswerLog = Arc<std::sync::Mutex<Vec<Answered>>>;

/// How long a client may take to send a request's headers (and a kept-alive connection may be
/// silent), to the embedded S3 and to the registry alike.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Most body bytes read from a request (the sign-in form's; the handler refuses longer forms
/// with a clearer message than this bound's).
const FORM_BODY_MAX: usize = 16 * 1024;

/// How long a request's body may take to arrive: API Gateway receives the whole body before it
/// invokes a function, so no handler ever waits on a slow client there; here a client that
/// sends its body slowly (or never) is answered 400 instead of holding the connection.
const BODY_READ_TIMEOUT: Duration = Duration::from_secs(10);

pub(crate) async fn serve_s3(listener: TcpListener, s3: IndexingS3, mut shutdown: watch::Receiver<bool>) {
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => { tracing::warn!(error = %e, "S3 accept"); continue; }
            },
            _ = shutdown.changed() => return,
        };
        // Small answers written as headers then body: without NODELAY, Nagle's algorithm and the
        // client's delayed ACK hold the second write for ~40 ms.
        let _ = stream.set_nodelay(true);
        let s3 = s3.clone();
        let mut stop = shutdown.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request| {
                let s3 = s3.clone();
                async move { s3.call(request).await }
            });
            // A client that never finishes its headers is cut off (one that stops sending a
            // body is, by `IdleBody`), as S3 closes idle connections.
            let mut builder = auto::Builder::new(TokioExecutor::new());
            builder.http1().timer(TokioTimer::new()).header_read_timeout(HEADER_READ_TIMEOUT);
            let connection = builder.serve_connection(TokioIo::new(stream), service);
            tokio::select! {
                served = connection => if let Err(e) = served { tracing::debug!(error = %e, "S3 connection") },
                _ = stop.changed() => {}
            }
        });
    }
}

/// Serve the registry on `listener`: HTTPS with `tls`, plain HTTP without (`--http-listen`).
pub(crate) async fn serve_registry(
    listener: TcpListener,
    tls: Option<Arc<rustls::ServerConfig>>,
    app: Arc<App<S3Storage>>,
    log: Option<AnswerLog>,
    mut shutdown: watch::Receiver<bool>,
) {
    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => { tracing::warn!(error = %e, "accept"); continue; }
            },
            _ = shutdown.changed() => return,
        };
        let _ = stream.set_nodelay(true);
        let acceptor = acceptor.clone();
        let app = app.clone();
        let log = log.clone();
        let mut stop = shutdown.clone();
        tokio::spawn(async move {
            let connection = async move {
                let Some(acceptor) = acceptor else { return serve_connection(stream, app, log).await };
                match tokio::time::timeout(Duration::from_secs(10), acceptor.accept(stream)).await {
                    Ok(Ok(stream)) => serve_connection(stream, app, log).await,
                    Ok(Err(e)) => tracing::debug!(error = %e, "TLS handshake"),
                    Err(_) => tracing::debug!("TLS handshake timed out"),
                }
            };
            tokio::select! {
                () = connection => {}
                _ = stop.changed() => {}
            }
        });
    }
}

fn record(
    log: &AnswerLog,
    app: &App<S3Storage>,
    request: &http::Request<Bytes>,
    status: http::StatusCode,
    elapsed: Duration,
) {
    // A routed request: its route's function (whose route key takes it, as the infra
    // consistency test holds). One refused (400, 405): the function of a route key its path
    // fits (keys take every method), else the default route's.
    let (method, uri) = (request.method(), request.uri());
    let paths = &app.config().paths;
    let service = match registry::router::route(method, uri.path(), uri.query(), paths) {
        Ok(route) => route.service(),
        Err(_) => registry::router::route_templates(paths)
            .into_iter()
            .find(|(_, key)| registry::router::route_key_matches(key, uri.path()))
            .map_or(registry::router::DEFAULT_ROUTE_SERVICE, |(service, _)| service),
    };
    let answered = Answered { function: service.function_name(), status: status.as_u16(), elapsed };
    log.lock().unwrap_or_else(|p| p.into_inner()).push(answered);
}

async fn serve_connection<IO>(stream: IO, app: Arc<App<S3Storage>>, log: Option<AnswerLog>)
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |request: http::Request<hyper::body::Incoming>| {
        let app = app.clone();
        let log = log.clone();
        async move {
            let (parts, body) = request.into_parts();
            // Only the sign-in form has a body to read; none is read for anything else, and
            // never more than a form can be.
            let body = match parts.method == http::Method::POST {
                true => {
                    match tokio::time::timeout(BODY_READ_TIMEOUT, Limited::new(body, FORM_BODY_MAX).collect()).await {
                        Ok(Ok(collected)) => collected.to_bytes(),
                        refused => {
                            let why = match refused {
                                Err(_) => {
                                    format!("the request body did not arrive within {} s", BODY_READ_TIMEOUT.as_secs())
                                }
                                _ => "request body too large".to_string(),
                            };
                            // `uri.path()` is the path exactly as sent: hyper neither decodes nor
                            // normalises it.
                            let (method, uri, headers) = (&parts.method, &parts.uri, &parts.headers);
                            let request = registry::Request::from_parts(method, uri.path(), uri.query(), headers);
                            let refused = registry::Error::BadRequest(why);
                            return Ok(app.refuse(&refused, &request).into_http().map(Full::new));
                        }
                    }
                }
                false => Bytes::new(),
            };
            let request = http::Request::from_parts(parts, body);
            let started = std::time::Instant::now();
            let response = app.respond(&request).await;
            if let Some(log) = log {
                record(&log, &app, &request, response.status(), started.elapsed());
            }
            Ok::<_, Infallible>(response.map(Full::new))
        }
    });
    // A client that never finishes its headers (or holds a kept-alive connection silent) is cut
    // off, as API Gateway does; without a timer hyper would wait for ever.
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new()).header_read_timeout(HEADER_READ_TIMEOUT);
    if let Err(e) = builder.serve_connection(TokioIo::new(stream), service).await {
        tracing::debug!(error = %e, "connection");
    }
}
