//! The local registry: every function's handler in one process over HTTPS on loopback, plus
//! an embedded S3-compatible server over a local directory. The same `registry` code runs
//! as in AWS: aws-sdk-s3 against a real S3 protocol server with SigV4 verification.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_s3::config::{BehaviorVersion, Credentials, Region, SharedCredentialsProvider};
use registry::storage::S3Storage;
use registry::{App, Config};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub mod bucket_rights;
pub mod bundle;
pub mod bundle_import;
pub mod client_files;
pub mod embedded_s3;
pub mod faults;
mod idle_body;
mod key_locks;
pub mod latency;
mod object_files;
mod object_listing;
pub mod publish;
pub mod publish_provider;
pub mod server;
pub mod tls;
pub mod tokens;
pub mod usage;

pub use client_files::DEV_TOKEN_NAME;
pub use tokens::{TokenAction, TokenTarget, token_command};

use embedded_s3::{
    FUNCTIONS_ACCESS_KEY, IndexingS3, KEY_ADMIN_ACCESS_KEY, PUBLISHER_ACCESS_KEY, REGISTRY_ACCESS_KEY, USAGE_ACCESS_KEY,
};

/// The bucket the embedded S3 serves (a directory under `DATA_DIR/s3/`).
pub const BUCKET: &str = "registry";
/// The region clients sign for (any would do; this is the SDK's default).
pub const REGION: &str = "us-east-1";

/// Why the local registry could not start or a command failed; the message says what to do.
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
    /// Keep a log of what the registry answered and how long each took
    /// (`Running::take_answers`), for benchmarks that count what a deployment would bill.
    pub log_answers: bool,
    /// Also serve plain HTTP here (loopback benchmarks, or behind a TLS-terminating proxy).
    /// The terraform CLI itself only talks HTTPS to registries.
    pub http_listen: Option<SocketAddr>,
    /// Configuration variables (`REGISTRY_*`) for this instance, ahead of the environment.
    pub settings: Vec<(String, String)>,
    /// The clock of the registry's bounded waits (key set lifetimes): real, or a manual one a
    /// test moves instead of sleeping.
    pub clock: registry::clock::Monotonic,
    /// Answer S3 requests as slowly as S3 in AWS (`latency`: benchmarks); `None`: loopback.
    pub s3_latency: Option<Arc<latency::S3Latency>>,
}

impl LocalOptions {
    /// A registry on ephemeral loopback ports over `data_dir`, writing no client files and
    /// keeping no request log: what `reindex` and the token commands run, and what tests and
    /// benchmarks start from (`LocalOptions { log_s3_requests: true, ..LocalOptions::ephemeral(dir) }`).
    pub fn ephemeral(data_dir: impl Into<PathBuf>) -> Self {
        let any = SocketAddr::from(([127, 0, 0, 1], 0));
        LocalOptions {
            listen: any,
            s3_listen: any,
            data_dir: data_dir.into(),
            write_client_files: false,
            log_s3_requests: false,
            log_answers: false,
            http_listen: None,
            settings: vec![],
            clock: registry::clock::Monotonic::real(),
            s3_latency: None,
        }
    }
}

pub struct Running {
    pub registry_addr: SocketAddr,
    /// The plain HTTP address, when `http_listen` asked for one.
    pub http_addr: Option<SocketAddr>,
    pub s3_addr: SocketAddr,
    pub data_dir: PathBuf,
    pub publisher_secret: String,
    /// The key admin's secret (`KEY_ADMIN_SECRET_ACCESS_KEY` in `local.env`): `signing-keys/`.
    pub key_admin_secret: String,
    /// The `local-dev` token (all modules and providers), also in `terraform.rc`.
    pub dev_token: String,
    /// Storage as the registry sees it (signed with the registry's key).
    pub storage: S3Storage,
    /// The handler the HTTPS server runs, for tests that compare what it serves.
    pub app: Arc<App<S3Storage>>,
    /// Faults the embedded S3 injects (tests add rules; none by default).
    pub faults: Arc<faults::Faults>,
    s3_log: Option<embedded_s3::RequestLog>,
    answer_log: Option<server::AnswerLog>,
    pulls: Arc<std::sync::atomic::AtomicUsize>,
    shutdown: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    /// The local usage function's stop signal and task.
    usage: (watch::Sender<bool>, JoinHandle<()>),
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
        publisher_client(&self.s3_endpoint(), &self.publisher_secret)
    }

    /// A client with the key admin's credentials, the only ones that may upload signing keys.
    pub fn key_admin_client(&self) -> aws_sdk_s3::Client {
        key_admin_client(&self.s3_endpoint(), &self.key_admin_secret)
    }

    /// The requests the embedded S3 answered since the last call, oldest first (empty unless
    /// started with `log_s3_requests`), but the usage function's: it folds download records
    /// in the background, moments after the downloads, so its requests belong to no answer
    /// (the embedded S3 confines its key to `usage/`; what counting costs is measured apart,
    /// `bench usage`).
    pub fn take_s3_requests(&self) -> Vec<embedded_s3::S3Request> {
        let mut taken = self
            .s3_log
            .as_ref()
            .map(|log| std::mem::take(&mut *log.lock().unwrap_or_else(|p| p.into_inner())))
            .unwrap_or_default();
        taken.retain(|r| r.signer.as_deref() != Some(USAGE_ACCESS_KEY));
        taken
    }

    /// What the registry answered since the last call, oldest first (empty unless started with
    /// `log_answers`).
    pub fn take_answers(&self) -> Vec<server::Answered> {
        self.answer_log
            .as_ref()
            .map(|log| std::mem::take(&mut *log.lock().unwrap_or_else(|p| p.into_inner())))
            .unwrap_or_default()
    }

    /// Wait until no pull (pull-through copy) runs in the background, at most `limit`;
    /// whether that happened.
    pub async fn wait_for_pulls(&self, limit: Duration) -> bool {
        let until = tokio::time::Instant::now() + limit;
        while self.pulls.load(std::sync::atomic::Ordering::SeqCst) > 0 {
            if tokio::time::Instant::now() >= until {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        true
    }

    pub async fn stop(self) {
        let (usage_stop, usage_task) = self.usage;
        let _ = usage_stop.send(true);
        let _ = usage_task.await;
        let _ = self.shutdown.send(true);
        for task in self.tasks {
            let _ = task.await;
        }
    }
}

/// A client with the publisher's credentials (`local.env`: `AWS_ENDPOINT_URL`,
/// `AWS_SECRET_ACCESS_KEY`) for a local registry running in this process or another.
pub fn publisher_client(endpoint: &str, secret: &str) -> aws_sdk_s3::Client {
    patient_client(endpoint, PUBLISHER_ACCESS_KEY, secret)
}

/// A client with the key admin's credentials (`local.env`: `KEY_ADMIN_ACCESS_KEY_ID`,
/// `KEY_ADMIN_SECRET_ACCESS_KEY`).
pub fn key_admin_client(endpoint: &str, secret: &str) -> aws_sdk_s3::Client {
    patient_client(endpoint, KEY_ADMIN_ACCESS_KEY, secret)
}

fn patient_client(endpoint: &str, access_key: &str, secret: &str) -> aws_sdk_s3::Client {
    // An upload answers after its indexing pass, which waits its turn under contention:
    // patient timeouts, like the AWS CLI's.
    let patient = aws_sdk_s3::config::timeout::TimeoutConfig::builder()
        .connect_timeout(Duration::from_secs(5))
        .read_timeout(Duration::from_secs(120))
        .build();
    let retries = aws_sdk_s3::config::retry::RetryConfig::standard();
    s3_client(endpoint, key_pair(access_key, secret), patient, retries)
}

/// Static credentials of the embedded S3 as a provider (what the registry's presigner signs with).
fn key_pair(access_key: &str, secret: &str) -> SharedCredentialsProvider {
    SharedCredentialsProvider::new(Credentials::new(access_key, secret, None, None, "registry-local"))
}

fn s3_client(
    endpoint: &str,
    credentials: SharedCredentialsProvider,
    timeouts: aws_sdk_s3::config::timeout::TimeoutConfig,
    retries: aws_sdk_s3::config::retry::RetryConfig,
) -> aws_sdk_s3::Client {
    let config = aws_sdk_s3::config::Builder::new()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(REGION))
        .endpoint_url(endpoint)
        .credentials_provider(credentials)
        .force_path_style(true)
        .timeout_config(timeouts)
        .retry_config(retries)
        .http_client(registry::storage::s3::http_client())
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
    let key_admin_secret = load_or_make_secret(&data_dir.join("key-admin.secret"))?;
    let functions_secret = load_or_make_secret(&data_dir.join("functions.secret"))?;
    // The registry's own key never leaves this process, nor does the usage function's.
    let registry_secret = random_hex(20)?;
    let usage_secret = random_hex(20)?;

    let s3_listener =
        TcpListener::bind(options.s3_listen).await.map_err(|e| io(&format!("bind S3 {}", options.s3_listen), e))?;
    let s3_addr = s3_listener.local_addr().map_err(|e| io("S3 address", e))?;
    let listener = TcpListener::bind(options.listen).await.map_err(|e| io(&format!("bind {}", options.listen), e))?;
    let registry_addr = listener.local_addr().map_err(|e| io("registry address", e))?;

    // The usage function signs with a key limited to usage/, as its role is in AWS.
    let usage_storage = embedded_storage(s3_addr, USAGE_ACCESS_KEY, &usage_secret);
    let storage = embedded_storage(s3_addr, REGISTRY_ACCESS_KEY, &registry_secret);
    let secrets = [
        (REGISTRY_ACCESS_KEY, registry_secret),
        (PUBLISHER_ACCESS_KEY, publisher_secret.clone()),
        (KEY_ADMIN_ACCESS_KEY, key_admin_secret.clone()),
        (FUNCTIONS_ACCESS_KEY, functions_secret),
        (USAGE_ACCESS_KEY, usage_secret),
    ];
    let s3_service = s3_service(&data_dir, secrets)?;
    let config = local_config(&options, registry_addr)?;
    let mirror_path = config.paths.mirror.clone();
    let s3_log = options.log_s3_requests.then(embedded_s3::RequestLog::default);
    let answer_log = options.log_answers.then(server::AnswerLog::default);
    let faults = Arc::new(faults::Faults::default());
    // Built as the Lambdas build theirs, but serving every service at once (`App::builder`;
    // a Lambda's `App::function_builder` serves its own).
    // Download records go to the local usage function, as a Lambda's log goes to its
    // subscription. It stops first, folding what it holds while the embedded S3 still runs.
    let (usage_stop, usage_stopped) = watch::channel(false);
    let (usage_sink, usage_task) = usage::start(usage_storage, config.usage, usage_stopped);
    let app = App::builder(config.clone(), storage.clone()).clock(options.clock.clone()).usage(usage_sink).build();
    let app = Arc::new(app.map_err(|e| LocalError(registry::error::chain(&e)))?);
    // The puller's module upstreams: the same hosts, with the puller's larger limit.
    let module_puller = registry::upstream::module_pull::puller_upstream(&config.upstream_modules, &config.upstream)
        .map_err(|e| LocalError(registry::error::chain(&e)))?;
    let s3 = IndexingS3::new(s3_service, storage.clone(), config, s3_log.clone(), faults.clone())
        .pulling_from(app.upstream(), module_puller)
        .slowed_by(options.s3_latency.clone());
    let pulls = s3.pulls();
    let tls = tls::server_config(&data_dir, registry_addr.ip())?;

    let (shutdown, watcher) = watch::channel(false);
    let s3_task = tokio::spawn(server::serve_s3(s3_listener, s3, watcher.clone()));
    let mut tasks = vec![s3_task];
    let http_addr = match options.http_listen {
        None => None,
        Some(addr) => {
            let plain = TcpListener::bind(addr).await.map_err(|e| io(&format!("bind {addr}"), e))?;
            let http_addr = plain.local_addr().map_err(|e| io("HTTP address", e))?;
            tasks.push(tokio::spawn(server::serve_registry(
                plain,
                None,
                app.clone(),
                answer_log.clone(),
                watcher.clone(),
            )));
            Some(http_addr)
        }
    };
    tasks.push(tokio::spawn(server::serve_registry(listener, Some(tls), app.clone(), answer_log.clone(), watcher)));

    let dev_token = client_files::ensure_dev_token(&storage, &data_dir).await?;
    let running = Running {
        registry_addr,
        http_addr,
        s3_addr,
        data_dir,
        publisher_secret,
        key_admin_secret,
        dev_token,
        storage,
        app,
        faults,
        s3_log,
        answer_log,
        pulls,
        shutdown,
        tasks,
        usage: (usage_stop, usage_task),
    };
    if options.write_client_files {
        let copied = client_files::upstream_module_hosts_copied(&running.storage).await?;
        client_files::write_user_files(&running, &mirror_path, &copied)?;
    }
    Ok(running)
}

/// The embedded S3's bucket as the holder of `access_key` reaches it.
fn embedded_storage(s3_addr: SocketAddr, access_key: &str, secret: &str) -> S3Storage {
    let credentials = key_pair(access_key, secret);
    let client = s3_client(
        &format!("http://{s3_addr}"),
        credentials.clone(),
        registry::storage::s3::timeouts(),
        registry::storage::s3::retries(),
    );
    S3Storage::new(client, Some(credentials), BUCKET)
}

/// s3s-fs over the data directory's `s3/`, each principal signing with its own key pair, and
/// each request's rights decided from the signature s3s verified (`bucket_rights`).
fn s3_service(data_dir: &Path, secrets: [(&str, String); 5]) -> Result<s3s::service::S3Service, LocalError> {
    let objects = object_files::ObjectFiles::new(&data_dir.join("s3")).map_err(LocalError)?;
    let mut builder = s3s::service::S3ServiceBuilder::new(objects);
    let mut auth = s3s::auth::SimpleAuth::new();
    for (access_key, secret) in secrets {
        auth.register(access_key.into(), secret.into());
    }
    builder.set_auth(auth);
    builder.set_access(bucket_rights::BucketRights::new(BUCKET, Arc::new(key_locks::KeyLocks::new())));
    Ok(builder.build())
}

/// The registry's configuration for this run: the embedded S3's bucket, path-style, the
/// registry's own address as its host name and no upstream (of providers or modules) unless
/// `options.settings` (then the environment) says otherwise.
fn local_config(options: &LocalOptions, registry_addr: SocketAddr) -> Result<Config, LocalError> {
    let setting = |name: &str| {
        options.settings.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone()).or_else(|| std::env::var(name).ok())
    };
    Config::from_lookup(|name| match name {
        "REGISTRY_BUCKET" => Some(BUCKET.into()),
        "REGISTRY_S3_FORCE_PATH_STYLE" => Some("true".into()),
        // The CLI knows this registry as `127.0.0.1:PORT`: its providers.v1 providers live
        // under that host (unless a setting names another, for a stable port-free layout).
        "REGISTRY_HOSTNAME" => setting(name).or_else(|| registry_addr.is_ipv4().then(|| registry_addr.to_string())),
        // Off unless asked for (`make dev UPSTREAM=`): the deployed default, the public
        // registry, is a network dependency a local run should not grow by surprise.
        "REGISTRY_UPSTREAM_HOSTS" => setting(name).or_else(|| Some(String::new())),
        // Likewise the modules pull-through (`REGISTRY_UPSTREAM_MODULES=registry.terraform.io
        // make dev`); copies already in the bucket are served either way.
        "REGISTRY_UPSTREAM_MODULES" => setting(name).or_else(|| Some(String::new())),
        other => setting(other),
    })
    .map_err(|e| LocalError(e.to_string()))
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

pub(crate) fn random_hex(bytes: usize) -> Result<String, LocalError> {
    let mut buf = vec![0u8; bytes];
    rustls::crypto::aws_lc_rs::default_provider()
        .secure_random
        .fill(&mut buf)
        .map_err(|_| LocalError("no secure random source".into()))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// The served versions nobody downloaded in the last `days` days (`registry::usage::report`),
/// in the data directory's bucket or a deployed one (AWS credentials from the environment).
pub async fn idle_versions(target: TokenTarget, days: u32) -> Result<Vec<registry::usage::report::Idle>, LocalError> {
    let err = |e: registry::Error| LocalError(format!("usage: {}", registry::error::chain(&e)));
    let now = registry::clock::now_unix();
    match target {
        TokenTarget::Bucket(bucket) => {
            let storage = registry::storage::S3Storage::from_env(&bucket, false).await;
            registry::usage::report::idle_versions(&storage, days, now).await.map_err(err)
        }
        TokenTarget::DataDir(data_dir) => {
            let running = start(LocalOptions::ephemeral(data_dir)).await?;
            let result = registry::usage::report::idle_versions(&running.storage, days, now).await.map_err(err);
            running.stop().await;
            result
        }
    }
}

/// Replay the publish log of the data directory's bucket, or of a deployed bucket (AWS
/// credentials from the environment), and compare it with every manifest.
pub async fn audit(target: TokenTarget) -> Result<registry::publish_log::audit::Report, LocalError> {
    let err = |e: registry::Error| LocalError(format!("audit: {}", registry::error::chain(&e)));
    match target {
        TokenTarget::Bucket(bucket) => {
            let storage = registry::storage::S3Storage::from_env(&bucket, false).await;
            registry::publish_log::audit::audit(&storage).await.map_err(err)
        }
        TokenTarget::DataDir(data_dir) => {
            let running = start(LocalOptions::ephemeral(data_dir)).await?;
            let result = registry::publish_log::audit::audit(&running.storage).await.map_err(err);
            running.stop().await;
            result
        }
    }
}

/// Rebuild every manifest from the archives in the data directory, without serving.
/// Each owner with its outcome: a failing owner does not stop the others.
///
/// It judges the registry's own providers under the hostname `make dev` serves them as (the
/// one it recorded in `DATA_DIR/hostname`, or `REGISTRY_HOSTNAME`), never under this run's
/// ephemeral port: under another hostname a signed release would lose its signature check.
pub async fn reindex(
    data_dir: &Path,
) -> Result<Vec<(registry::layout::Owner, Result<registry::index::Outcome, registry::Error>)>, LocalError> {
    let hostname = std::env::var("REGISTRY_HOSTNAME").ok().filter(|h| !h.is_empty());
    let recorded = std::fs::read_to_string(data_dir.join(client_files::HOSTNAME_FILE)).ok();
    let Some(hostname) = hostname.or_else(|| recorded.map(|h| h.trim().to_string()).filter(|h| !h.is_empty())) else {
        return Err(LocalError(format!(
            "reindex: which hostname does this registry serve its own providers as? {} has no {} (`make dev` \
             writes it when it starts): run `make dev` once on this data directory, or set REGISTRY_HOSTNAME",
            data_dir.display(),
            client_files::HOSTNAME_FILE
        )));
    };
    let settings = vec![("REGISTRY_HOSTNAME".to_string(), hostname)];
    let running = start(LocalOptions { settings, ..LocalOptions::ephemeral(data_dir) }).await?;
    let indexer = registry::index::Indexer::new(&running.storage, running.app.config().limits.clone())
        .signing_for(running.app.config().hostname.clone());
    let result = indexer.reindex_all().await.map_err(|e| LocalError(registry::error::chain(&e)));
    running.stop().await;
    result
}
