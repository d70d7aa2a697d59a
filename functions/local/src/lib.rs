//! The local registry: every function's handler in one process over HTTPS on loopback, plus
//! an embedded S3-compatible server over a local directory. The same `registry` code runs
//! as in AWS: aws-sdk-s3 against a real S3 protocol server with SigV4 verification.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_s3::config::{BehaviorVersion, Credentials, Region};
use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use registry::router::Service;
use registry::storage::S3Storage;
use registry::{App, Config};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub mod embedded_s3;
pub mod tls;

use embedded_s3::{FUNCTIONS_ACCESS_KEY, IndexingS3, PUBLISHER_ACCESS_KEY, REGISTRY_ACCESS_KEY};

/// The bucket the embedded S3 serves (a directory under `DATA_DIR/s3/`).
pub const BUCKET: &str = "registry";
pub const REGION: &str = "us-east-1";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalError(pub String);

impl std::fmt::Display for LocalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LocalError {}

#[derive(Debug, Clone)]
pub struct LocalOptions {
    /// HTTPS address of the registry (must be loopback in practice: the certificate is local).
    pub listen: SocketAddr,
    /// Address of the embedded S3 server (plain HTTP, loopback).
    pub s3_listen: SocketAddr,
    pub data_dir: PathBuf,
    /// Write `terraform.rc` and `local.env` for this run's addresses (not for `reindex`,
    /// which must not repoint a running `make dev`'s files at its own ephemeral ports).
    pub write_client_files: bool,
    /// Keep a log of every request the embedded S3 answers (`Running::s3_requests`), for
    /// tests that assert which keys the registry reads. Off for `make dev`: it would grow.
    pub log_s3_requests: bool,
    /// Also serve plain HTTP here (loopback benchmarks, or behind a TLS-terminating proxy).
    /// The terraform CLI itself only talks HTTPS to registries.
    pub http_listen: Option<SocketAddr>,
    /// Configuration variables (`REGISTRY_*`) for this instance, ahead of the environment.
    pub settings: Vec<(String, String)>,
}

pub struct Running {
    pub registry_addr: SocketAddr,
    /// The plain HTTP address, when `http_listen` asked for one.
    pub http_addr: Option<SocketAddr>,
    pub s3_addr: SocketAddr,
    pub data_dir: PathBuf,
    pub publisher_secret: String,
    /// The `local-dev` token (all modules and providers), also in `terraform.rc`.
    pub dev_token: String,
    /// Storage as the registry sees it (signed with the registry's key).
    pub storage: S3Storage,
    /// The handler the HTTPS server runs, for tests that compare what it serves.
    pub app: Arc<App<S3Storage>>,
    s3_log: Option<embedded_s3::RequestLog>,
    shutdown: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

impl Running {
    pub fn base_url(&self) -> String {
        format!("https://{}", self.registry_addr)
    }

    pub fn s3_endpoint(&self) -> String {
        format!("http://{}", self.s3_addr)
    }

    /// A client with the publisher's credentials, as `aws s3 cp` with `local.env` would use.
    pub fn publisher_client(&self) -> aws_sdk_s3::Client {
        // An upload answers after its indexing pass, which waits its turn under contention:
        // patient timeouts, like the AWS CLI's.
        let patient = aws_sdk_s3::config::timeout::TimeoutConfig::builder()
            .connect_timeout(Duration::from_secs(5))
            .read_timeout(Duration::from_secs(120))
            .build();
        s3_client(&self.s3_endpoint(), PUBLISHER_ACCESS_KEY, &self.publisher_secret, patient)
    }

    /// The requests the embedded S3 answered since the last call, oldest first (empty unless
    /// started with `log_s3_requests`).
    pub fn take_s3_requests(&self) -> Vec<embedded_s3::S3Request> {
        self.s3_log
            .as_ref()
            .map(|log| std::mem::take(&mut *log.lock().unwrap_or_else(|p| p.into_inner())))
            .unwrap_or_default()
    }

    pub async fn stop(self) {
        let _ = self.shutdown.send(true);
        for task in self.tasks {
            let _ = task.await;
        }
    }
}

fn s3_client(
    endpoint: &str,
    access_key: &str,
    secret: &str,
    timeouts: aws_sdk_s3::config::timeout::TimeoutConfig,
) -> aws_sdk_s3::Client {
    let config = aws_sdk_s3::config::Builder::new()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(REGION))
        .endpoint_url(endpoint)
        .credentials_provider(Credentials::new(access_key, secret, None, None, "registry-local"))
        .force_path_style(true)
        .timeout_config(timeouts)
        .build();
    aws_sdk_s3::Client::from_conf(config)
}

/// Start both servers and write the files a user needs (`terraform.rc`, `ca.pem`, `local.env`).
pub async fn start(options: LocalOptions) -> Result<Running, LocalError> {
    let io = |what: &str, e: std::io::Error| LocalError(format!("{what}: {e}"));
    let data_dir = options.data_dir.clone();
    std::fs::create_dir_all(data_dir.join("s3").join(BUCKET)).map_err(|e| io("create data directory", e))?;
    let data_dir = data_dir.canonicalize().map_err(|e| io("data directory", e))?;

    let publisher_secret = load_or_make_secret(&data_dir.join("publisher.secret"))?;
    let functions_secret = load_or_make_secret(&data_dir.join("functions.secret"))?;
    // The registry's own key never leaves this process.
    let registry_secret = random_hex(20)?;

    let s3_listener =
        TcpListener::bind(options.s3_listen).await.map_err(|e| io(&format!("bind S3 {}", options.s3_listen), e))?;
    let s3_addr = s3_listener.local_addr().map_err(|e| io("S3 address", e))?;
    let listener = TcpListener::bind(options.listen).await.map_err(|e| io(&format!("bind {}", options.listen), e))?;
    let registry_addr = listener.local_addr().map_err(|e| io("registry address", e))?;

    let storage = S3Storage::new(
        s3_client(
            &format!("http://{s3_addr}"),
            REGISTRY_ACCESS_KEY,
            &registry_secret,
            registry::storage::s3::timeouts(),
        ),
        BUCKET,
    );
    let fs = s3s_fs::FileSystem::new(data_dir.join("s3")).map_err(|e| LocalError(format!("embedded S3: {e:?}")))?;
    let mut builder = s3s::service::S3ServiceBuilder::new(fs);
    let mut auth = s3s::auth::SimpleAuth::new();
    auth.register(REGISTRY_ACCESS_KEY.into(), registry_secret.into());
    auth.register(PUBLISHER_ACCESS_KEY.into(), publisher_secret.clone().into());
    auth.register(FUNCTIONS_ACCESS_KEY.into(), functions_secret.into());
    builder.set_auth(auth);

    let config = Config::from_lookup(|name| match name {
        "REGISTRY_BUCKET" => Some(BUCKET.into()),
        "REGISTRY_S3_FORCE_PATH_STYLE" => Some("true".into()),
        other => options
            .settings
            .iter()
            .find(|(n, _)| n == other)
            .map(|(_, v)| v.clone())
            .or_else(|| std::env::var(other).ok()),
    })
    .map_err(|e| LocalError(e.to_string()))?;
    let mirror_path = config.paths.mirror.clone();
    let s3_log = options.log_s3_requests.then(embedded_s3::RequestLog::default);
    let s3 = IndexingS3::new(builder.build(), storage.clone(), config.limits.clone(), s3_log.clone());
    let app = Arc::new(App::new(config, storage.clone(), &Service::ALL));
    let tls = tls::server_config(&data_dir, registry_addr.ip())?;

    let (shutdown, watcher) = watch::channel(false);
    let s3_task = tokio::spawn(serve_s3(s3_listener, s3, watcher.clone()));
    let mut tasks = vec![s3_task];
    let http_addr = match options.http_listen {
        None => None,
        Some(addr) => {
            let plain = TcpListener::bind(addr).await.map_err(|e| io(&format!("bind {addr}"), e))?;
            let http_addr = plain.local_addr().map_err(|e| io("HTTP address", e))?;
            tasks.push(tokio::spawn(serve_registry(plain, None, app.clone(), watcher.clone())));
            Some(http_addr)
        }
    };
    tasks.push(tokio::spawn(serve_registry(listener, Some(tls), app.clone(), watcher)));

    let dev_token = ensure_dev_token(&storage, &data_dir).await?;
    let running = Running {
        registry_addr,
        http_addr,
        s3_addr,
        data_dir,
        publisher_secret,
        dev_token,
        storage,
        app,
        s3_log,
        shutdown,
        tasks,
    };
    if options.write_client_files {
        write_user_files(&running, &mirror_path)?;
    }
    Ok(running)
}

async fn serve_s3(listener: TcpListener, s3: IndexingS3, mut shutdown: watch::Receiver<bool>) {
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
        tokio::spawn(async move {
            let service = service_fn(move |request| {
                let s3 = s3.clone();
                async move { s3.call(request).await }
            });
            if let Err(e) =
                auto::Builder::new(TokioExecutor::new()).serve_connection(TokioIo::new(stream), service).await
            {
                tracing::debug!(error = %e, "S3 connection");
            }
        });
    }
}

/// Serve the registry on `listener`: HTTPS with `tls`, plain HTTP without (`--http-listen`).
async fn serve_registry(
    listener: TcpListener,
    tls: Option<Arc<rustls::ServerConfig>>,
    app: Arc<App<S3Storage>>,
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
        tokio::spawn(async move {
            let Some(acceptor) = acceptor else { return serve_connection(stream, app).await };
            match tokio::time::timeout(Duration::from_secs(10), acceptor.accept(stream)).await {
                Ok(Ok(stream)) => serve_connection(stream, app).await,
                Ok(Err(e)) => tracing::debug!(error = %e, "TLS handshake"),
                Err(_) => tracing::debug!("TLS handshake timed out"),
            }
        });
    }
}

async fn serve_connection<IO>(stream: IO, app: Arc<App<S3Storage>>)
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |request: http::Request<hyper::body::Incoming>| {
        let app = app.clone();
        async move {
            // `uri().path()` is the path exactly as sent: hyper neither decodes nor normalises it.
            let (method, uri, headers) = (request.method(), request.uri(), request.headers());
            let reply = app.handle(&registry::app::Request::from_parts(method, uri.path(), uri.query(), headers)).await;
            Ok::<_, Infallible>(reply.into_http().map(Full::new))
        }
    });
    if let Err(e) = auto::Builder::new(TokioExecutor::new()).serve_connection(TokioIo::new(stream), service).await {
        tracing::debug!(error = %e, "connection");
    }
}

fn write_user_files(running: &Running, mirror_path: &str) -> Result<(), LocalError> {
    let dir = &running.data_dir;
    let rc = format!(
        "# Written by registry-local at every start. Use it with\n\
         #   export TF_CLI_CONFIG_FILE={rc} SSL_CERT_FILE={ca}\n\
         # Modules: source = \"{host}/NAMESPACE/NAME/SYSTEM\". Providers come from the mirror below.\n\
         provider_installation {{\n  network_mirror {{\n    url = \"{base}{mirror_path}\"\n  }}\n}}\n\n\
         # The local-dev token (every module and provider). The CLI sends it to discovery,\n\
         # module and mirror requests, never to the archive URLs.\n\
         credentials \"{host}\" {{\n  token = \"{token}\"\n}}\n",
        rc = dir.join("terraform.rc").display(),
        ca = dir.join(tls::CA_FILE).display(),
        host = running.registry_addr,
        base = running.base_url(),
        token = running.dev_token,
    );
    // It holds a token: owner-only.
    write_private(&dir.join("terraform.rc"), rc.as_bytes())?;
    let env = format!(
        "# Written by registry-local: `source` it to publish with the AWS CLI or any S3 client.\n\
         export AWS_ENDPOINT_URL={endpoint}\nexport AWS_ACCESS_KEY_ID={PUBLISHER_ACCESS_KEY}\n\
         export AWS_SECRET_ACCESS_KEY={secret}\nexport AWS_REGION={REGION}\nexport REGISTRY_BUCKET={BUCKET}\n",
        endpoint = running.s3_endpoint(),
        secret = running.publisher_secret,
    );
    write_private(&dir.join("local.env"), env.as_bytes())
}

/// The `local-dev` token: its plaintext kept in `DATA_DIR/dev-token` (owner-only) so that
/// `terraform.rc` can carry it; its hash in the token store, like any other token's.
async fn ensure_dev_token(storage: &S3Storage, data_dir: &Path) -> Result<String, LocalError> {
    let path = data_dir.join("dev-token");
    let token = match std::fs::read_to_string(&path).map(|t| t.trim().to_string()) {
        Ok(t) if t.starts_with(registry::access::TOKEN_PREFIX) => t,
        _ => {
            let t = new_token()?;
            write_private(&path, t.as_bytes())?;
            t
        }
    };
    let tokens = registry::access::manage::list(storage).await.map_err(|e| LocalError(format!("token store: {e}")))?;
    let current =
        tokens.iter().any(|t| t.name == DEV_TOKEN_NAME && t.sha256 == hex::encode(registry::access::hash(&token)));
    if !current {
        let all = vec!["*".to_string()];
        let record = registry::access::manage::record(DEV_TOKEN_NAME, &token, all.clone(), all, None);
        registry::access::manage::upsert(storage, record).await.map_err(|e| LocalError(format!("token store: {e}")))?;
    }
    Ok(token)
}

pub const DEV_TOKEN_NAME: &str = "local-dev";

/// A new token: the prefix and 32 random bytes, hex (256 bits of entropy).
pub fn new_token() -> Result<String, LocalError> {
    Ok(format!("{}{}", registry::access::TOKEN_PREFIX, random_hex(32)?))
}

/// Write a file only its owner may read (secrets, keys).
pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> Result<(), LocalError> {
    use std::io::Write;
    #[cfg(unix)]
    use std::os::unix::fs::OpenOptionsExt;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    options.mode(0o600);
    let mut file = options.open(path).map_err(|e| LocalError(format!("write {}: {e}", path.display())))?;
    file.write_all(bytes).map_err(|e| LocalError(format!("write {}: {e}", path.display())))
}

fn load_or_make_secret(path: &Path) -> Result<String, LocalError> {
    if let Ok(secret) = std::fs::read_to_string(path) {
        let secret = secret.trim().to_string();
        if !secret.is_empty() {
            return Ok(secret);
        }
    }
    let secret = random_hex(20)?;
    write_private(path, secret.as_bytes())?;
    Ok(secret)
}

fn random_hex(bytes: usize) -> Result<String, LocalError> {
    let mut buf = vec![0u8; bytes];
    rustls::crypto::aws_lc_rs::default_provider()
        .secure_random
        .fill(&mut buf)
        .map_err(|_| LocalError("no secure random source".into()))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// Rebuild every manifest from the archives in the data directory, without serving.
/// Each owner with its outcome: a failing owner does not stop the others.
pub async fn reindex(
    data_dir: &Path,
) -> Result<Vec<(registry::layout::Owner, Result<registry::index::Outcome, registry::Error>)>, LocalError> {
    let running = start(LocalOptions {
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        s3_listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        data_dir: data_dir.to_path_buf(),
        write_client_files: false,
        log_s3_requests: false,
        http_listen: None,
        settings: vec![],
    })
    .await?;
    let indexer = registry::index::Indexer::new(&running.storage, running.app.config.limits.clone());
    let result = indexer.reindex_all().await.map_err(|e| LocalError(e.to_string()));
    running.stop().await;
    result
}

pub type Body = Full<Bytes>;

/// Where token commands act: the local registry's data directory, or a deployed bucket
/// (credentials and region from the standard AWS environment).
#[derive(Debug, Clone)]
pub enum TokenTarget {
    DataDir(PathBuf),
    Bucket(String),
}

#[derive(Debug, Clone)]
pub enum TokenAction {
    Create { name: String, modules: Vec<String>, providers: Vec<String>, expires_days: Option<u64> },
    List,
    Revoke { name: String },
}

/// Run a token command; answers what to print. `create` is the only time a token is shown.
pub async fn token_command(action: TokenAction, target: TokenTarget) -> Result<String, LocalError> {
    match target {
        TokenTarget::Bucket(bucket) => {
            let storage = S3Storage::from_env(&Config::new(bucket)).await;
            token_action(&storage, action).await
        }
        TokenTarget::DataDir(data_dir) => {
            let running = start(LocalOptions {
                listen: SocketAddr::from(([127, 0, 0, 1], 0)),
                s3_listen: SocketAddr::from(([127, 0, 0, 1], 0)),
                data_dir,
                write_client_files: false,
                log_s3_requests: false,
                http_listen: None,
                settings: vec![],
            })
            .await?;
            let result = token_action(&running.storage, action).await;
            running.stop().await;
            result
        }
    }
}

async fn token_action(storage: &S3Storage, action: TokenAction) -> Result<String, LocalError> {
    use registry::access::manage;
    let err = |e: registry::Error| LocalError(format!("token store: {e}"));
    match action {
        TokenAction::Create { name, modules, providers, expires_days } => {
            check_token_name(&name)?;
            for glob in modules.iter().chain(&providers) {
                if glob.is_empty() || glob.len() > 300 || !glob.bytes().all(|b| b.is_ascii_graphic()) {
                    return Err(LocalError(format!("invalid scope glob {glob:?}")));
                }
            }
            if modules.is_empty() && providers.is_empty() {
                return Err(LocalError("a token needs --modules or --providers (globs, e.g. acme,team-* or *)".into()));
            }
            let expires_at = expires_days.map(|days| {
                let now =
                    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs();
                registry::index::rfc3339((now + days * 86_400) as i64)
            });
            let token = new_token()?;
            manage::upsert(storage, manage::record(&name, &token, modules, providers, expires_at.clone()))
                .await
                .map_err(err)?;
            Ok(format!(
                "token {name:?} created{}. It is shown only now:\n\n  {token}\n\n\
                 Give it to the terraform CLI in its configuration:\n\n  \
                 credentials \"HOST\" {{\n    token = \"{token}\"\n  }}\n\n\
                 or in the environment: TF_TOKEN_HOST (dots as underscores, e.g. TF_TOKEN_registry_example_com).\n",
                expires_at.map(|at| format!(", expires {at}")).unwrap_or_default()
            ))
        }
        TokenAction::List => {
            let tokens = manage::list(storage).await.map_err(err)?;
            let mut out =
                format!("{:<24} {:<21} {:<21} {:<24} {}\n", "NAME", "CREATED", "EXPIRES", "MODULES", "PROVIDERS");
            for t in &tokens {
                out.push_str(&format!(
                    "{:<24} {:<21} {:<21} {:<24} {}\n",
                    t.name,
                    t.created_at,
                    t.expires_at.as_deref().unwrap_or("never"),
                    t.modules.join(","),
                    t.providers.join(",")
                ));
            }
            Ok(out)
        }
        TokenAction::Revoke { name } => {
            if manage::revoke(storage, &name).await.map_err(err)? {
                Ok(format!(
                    "token {name:?} revoked (containers stop accepting it within REGISTRY_TOKENS_CACHE_SECONDS)\n"
                ))
            } else {
                Err(LocalError(format!("no token named {name:?}")))
            }
        }
    }
}

fn check_token_name(name: &str) -> Result<(), LocalError> {
    let ok = (1..=64).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(LocalError(format!("token names are 1-64 letters, digits, '-', '_', '.', got {name:?}")))
    }
}
