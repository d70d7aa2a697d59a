//! `registry-local`: run the registry on loopback (`make dev`), rebuild manifests, audit the
//! publish log, manage tokens. `registry-local --help` (and `help SUBCOMMAND`) says how.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use registry_local::bundle::BundleTarget;
use registry_local::latency::S3Latency;
use registry_local::{LocalOptions, TokenAction, TokenTarget, audit, reindex, start, token_command};

/// Run the registry on loopback, rebuild its manifests, audit its publish log, manage tokens.
#[derive(Parser)]
#[command(name = "registry-local", version, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Without a subcommand: `serve`, with these flags.
    #[command(flatten)]
    serve: Serve,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the registry over HTTPS on loopback, with an embedded S3 (what `make dev` runs).
    Serve(Serve),
    /// Rebuild every manifest from the archives in the data directory (`make reindex`).
    Reindex {
        /// The local registry's data directory.
        #[arg(long, value_name = "DIR", default_value = ".data")]
        data_dir: PathBuf,
    },
    /// Check that the publish log chains and explains every served archive (`make audit`).
    Audit(Target),
    /// List the served versions nobody downloaded in the last N days (`make usage`).
    Usage {
        /// The window: no download in this many days (1 to 90).
        #[arg(long, value_name = "N", default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..=90))]
        unused_days: u32,
        #[command(flatten)]
        target: Target,
    },
    /// Create, list or revoke access tokens (`make token-create`, `token-list`, `token-revoke`).
    #[command(subcommand)]
    Token(Token),
    /// Copy the public registry modules a configuration uses into a directory laid out as the
    /// bucket keeps them: the air-gap bundle (`make bundle`). Upstreams as the registry reads
    /// them: REGISTRY_UPSTREAM_MODULES, REGISTRY_UPSTREAM_GIT_HOSTS, REGISTRY_UPSTREAM_CA_FILE.
    Bundle {
        /// A configuration's module manifest, `.terraform/modules/modules.json` after `init`.
        #[arg(long, value_name = "FILE")]
        modules_json: Vec<PathBuf>,
        /// A list: `HOST/NAMESPACE/NAME/SYSTEM VERSION` a line.
        #[arg(long, value_name = "FILE")]
        list: Vec<PathBuf>,
        /// The bundle directory to carry into the air gap (created; what it holds is verified,
        /// never replaced). Without it: straight into a bucket (`--data-dir`, `--bucket`).
        #[arg(long, value_name = "DIR", conflicts_with_all = ["data_dir", "bucket"])]
        out: Option<PathBuf>,
        #[command(flatten)]
        target: Target,
    },
    /// Publish a module version from its directory (`make publish`): a git tag's tree (or the
    /// directory as it is), packed deterministically, checked as the indexer would check it
    /// against what the registry serves, uploaded only where nothing is, then followed until it
    /// is served (the `module` block printed) or rejected (the reason printed).
    Publish {
        /// The module's directory.
        #[arg(long, value_name = "DIR")]
        dir: PathBuf,
        /// NAMESPACE/NAME/SYSTEM.
        #[arg(long, value_name = "ADDRESS")]
        module: String,
        /// The version [default: the one the tag at HEAD names, v1.2.0 or 1.2.0].
        #[arg(long, value_name = "VERSION")]
        version: Option<String>,
        #[command(flatten)]
        to: PublishTo,
    },
    /// Publish a provider release from goreleaser's dist/ (`make publish-provider`): its zips,
    /// SHA256SUMS, signature and manifest checked as the indexer would check them (the
    /// signature against the namespace's keys), uploaded only where nothing is, the signature
    /// last, then followed until providers.v1 serves every platform or the indexer rejects it.
    PublishProvider {
        /// goreleaser's output directory.
        #[arg(long, value_name = "DIR")]
        dist: PathBuf,
        /// The provider's namespace (its type is in the files' names).
        #[arg(long, value_name = "NAMESPACE")]
        namespace: String,
        /// Which release, when the directory holds several.
        #[arg(long, value_name = "VERSION")]
        version: Option<String>,
        #[command(flatten)]
        to: PublishTo,
    },
    /// Put an air-gap bundle into a bucket (`make bundle-import`), only once every file under
    /// its `upstream-modules/` is what `SHA256SUMS` lists, every pin names an archive of its SHA-256 in the bundle,
    /// every archive passes the published-archive checks, and no pin the bucket holds differs:
    /// one mismatch refuses the whole bundle, before anything is written.
    BundleImport {
        /// The bundle directory (`make bundle OUT=DIR`).
        #[arg(long, value_name = "DIR")]
        from: PathBuf,
        /// The SHA-256 of its `SHA256SUMS`, as `make bundle` printed it (carried apart from
        /// the bundle: what makes the list itself trustworthy). Required, unless
        /// `--no-sums-check` says the list is to be believed as it is.
        #[arg(long, value_name = "HEX", required_unless_present = "no_sums_check")]
        sums_sha256: Option<String>,
        /// Believe `SHA256SUMS` without its SHA-256 (a bundle whose list travelled with it proves
        /// nothing against whoever could change both).
        #[arg(long, conflicts_with = "sums_sha256")]
        no_sums_check: bool,
        #[command(flatten)]
        target: Target,
    },
}

#[derive(Args)]
struct Serve {
    /// Where the registry listens (HTTPS).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8443")]
    listen: SocketAddr,
    /// Where the embedded S3 listens [default: the registry's port + 1].
    #[arg(long, value_name = "ADDR")]
    s3_listen: Option<SocketAddr>,
    /// Also serve plain HTTP here (loopback benchmarks, or behind a TLS-terminating proxy).
    #[arg(long, value_name = "ADDR")]
    http_listen: Option<SocketAddr>,
    /// Where the bucket, the CA, terraform.rc and the dev token are kept.
    #[arg(long, value_name = "DIR", default_value = ".data")]
    data_dir: PathBuf,
    /// Pull-through upstreams: https://HOST, or NAME=https://HOST:PORT, comma-separated.
    #[arg(long, value_name = "UPSTREAMS")]
    upstream: Option<String>,
    /// PEM certificates to trust for the upstreams besides the system's.
    #[arg(long, value_name = "PEM", requires = "upstream")]
    upstream_ca: Option<String>,
    /// Answer S3 requests as slowly as S3 in AWS (benchmarks): `aws` (a 20 ms median, 80 ms
    /// p99 first byte and 85 MB/s; docs/PERFORMANCE.md), or MEDIAN_MS,P99_MS,MB_PER_S
    /// [default: at loopback speed].
    #[arg(long, value_name = "MODEL")]
    s3_latency: Option<String>,
}

/// Where a publish command uploads and what it reads, and how long it waits.
#[derive(Args)]
struct PublishTo {
    /// A deployed registry's URL (https://registry.example.com), read with REGISTRY_TOKEN;
    /// with --bucket.
    #[arg(long, value_name = "URL", requires = "bucket")]
    registry: Option<String>,
    /// Seconds to wait for the indexer's answer.
    #[arg(long, value_name = "N", default_value_t = 120)]
    wait_seconds: u64,
    #[command(flatten)]
    target: Target,
}

impl PublishTo {
    fn parts(self) -> Result<(registry_local::publish::PublishTarget, std::time::Duration), String> {
        use registry_local::publish::PublishTarget;
        let target = match (self.target.target()?, self.registry) {
            (TokenTarget::DataDir(dir), None) => PublishTarget::Local(dir),
            (TokenTarget::Bucket(bucket), Some(registry)) => PublishTarget::Deployed { bucket, registry },
            (TokenTarget::Bucket(_), None) => {
                return Err(
                    "--bucket needs --registry URL (REGISTRY_URL=): what the registry serves is read there".into()
                );
            }
            (TokenTarget::DataDir(_), Some(_)) => return Err("--registry goes with --bucket".into()),
        };
        Ok((target, std::time::Duration::from_secs(self.wait_seconds)))
    }
}

/// The bucket a command works on: the data directory's (the default), or a deployed one.
#[derive(Args)]
struct Target {
    /// The local registry's data directory [default: .data].
    #[arg(long, value_name = "DIR", conflicts_with = "bucket")]
    data_dir: Option<PathBuf>,
    /// A deployed registry's bucket (AWS credentials from the environment).
    #[arg(long, value_name = "BUCKET")]
    bucket: Option<String>,
}

impl Target {
    /// An empty `--bucket` (`BUCKET=$(terraform output -raw bucket_name)` where there is no
    /// state) is refused: falling back to the local store would report a token that the
    /// deployed registry never sees.
    fn target(self) -> Result<TokenTarget, String> {
        match self.bucket.map(|b| b.trim().to_string()) {
            Some(bucket) if bucket.is_empty() => Err("--bucket is empty: BUCKET= was given no name, or the deployed \
                 root's `terraform output -raw bucket_name` printed none (run it where the registry was applied, \
                 e.g. make ... DEPLOYED=infra/examples/minimal after make deploy)"
                .into()),
            Some(bucket) => Ok(TokenTarget::Bucket(bucket)),
            None => Ok(TokenTarget::DataDir(self.data_dir.unwrap_or_else(|| PathBuf::from(".data")))),
        }
    }
}

#[derive(Subcommand)]
enum Token {
    /// Make a token (shown once; only its SHA-256 is stored).
    Create {
        /// A name for the token, unique in the store.
        #[arg(long)]
        name: String,
        /// Module namespaces it may read: comma-separated globs (`acme`, `team-*`, `*`).
        #[arg(long, value_name = "GLOBS", value_delimiter = ',')]
        modules: Vec<String>,
        /// Providers it may read: comma-separated HOSTNAME/NAMESPACE/TYPE globs.
        #[arg(long, value_name = "GLOBS", value_delimiter = ',')]
        providers: Vec<String>,
        /// Days until it expires [default: never].
        #[arg(long, value_name = "N")]
        expires_days: Option<u64>,
        /// Replace a token of the same name: its clients stop working at once. Without it, an
        /// existing name is refused (rotate with overlap under a new name instead).
        #[arg(long)]
        replace: bool,
        /// May also see who downloads the modules and providers its own scopes cover.
        #[arg(long)]
        admin: bool,
        #[command(flatten)]
        target: Target,
    },
    /// List the tokens (names, scopes, expiry; never a token).
    List(Target),
    /// Revoke a token by name.
    Revoke {
        /// The token's name.
        #[arg(long)]
        name: String,
        #[command(flatten)]
        target: Target,
    },
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    // Colour only on a terminal: `make dev > registry.log` keeps a plain file. s3s logs every
    // refused request (a bad signature, the CLI's HEAD on a presigned GET URL, which S3 refuses
    // too) at ERROR from its `ops` module; the embedded S3 logs its own answers (5xx at ERROR,
    // 4xx at DEBUG), so those lines are off unless RUST_LOG asks for them.
    tracing_subscriber::fmt()
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout()))
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
            "info,s3s=warn,s3s::ops=off,s3s_fs=warn,aws_config=warn,aws_smithy_runtime=warn".into()
        }))
        .init();
    let done = match cli.command {
        None => serve(cli.serve).await,
        Some(Command::Serve(args)) => serve(args).await,
        Some(Command::Reindex { data_dir }) => run_reindex(&data_dir).await,
        Some(Command::Audit(target)) => match target.target() {
            Ok(target) => run_audit(target).await,
            Err(e) => Err(e),
        },
        Some(Command::Usage { unused_days, target }) => match target.target() {
            Ok(target) => run_usage(target, unused_days).await,
            Err(e) => Err(e),
        },
        Some(Command::Token(token)) => run_token(token).await,
        Some(Command::BundleImport { from, sums_sha256, no_sums_check: _, target }) => match target.target() {
            Ok(target) => run_bundle_import(&from, sums_sha256.as_deref(), target).await,
            Err(e) => Err(e),
        },
        Some(Command::Publish { dir, module, version, to }) => run_publish(dir, &module, version.as_deref(), to).await,
        Some(Command::PublishProvider { dist, namespace, version, to }) => {
            run_publish_provider(dist, namespace, version.as_deref(), to).await
        }
        Some(Command::Bundle { modules_json, list, out, target }) => match out {
            Some(out) => run_bundle(&modules_json, &list, BundleTarget::Dir(out)).await,
            None => match target.target() {
                Ok(target) => run_bundle(&modules_json, &list, BundleTarget::Store(target)).await,
                Err(e) => Err(e),
            },
        },
    };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("registry-local: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn run_publish(dir: PathBuf, module: &str, version: Option<&str>, to: PublishTo) -> Result<(), String> {
    use registry_local::publish::{ModulePublish, publish_module};
    let parts: Vec<&str> = module.split('/').collect();
    let [namespace, name, system] = parts[..] else {
        return Err(format!("MODULE={module:?} is not NAMESPACE/NAME/SYSTEM"));
    };
    let module = registry::address::ModuleAddress::parse(namespace, name, system).map_err(|e| e.to_string())?;
    let version = publish_version(version)?;
    let (target, wait) = to.parts()?;
    let options = ModulePublish { dir, module, version, target, wait, settings: Vec::new() };
    publish_module(&options, &mut std::io::stdout()).await.map(|_| ()).map_err(|e| e.to_string())
}

fn publish_version(version: Option<&str>) -> Result<Option<semver::Version>, String> {
    version
        .map(|v| registry::address::parse_version(v.strip_prefix('v').unwrap_or(v)).map_err(|e| e.to_string()))
        .transpose()
}

async fn run_publish_provider(
    dist: PathBuf,
    namespace: String,
    version: Option<&str>,
    to: PublishTo,
) -> Result<(), String> {
    use registry_local::publish_provider::{ProviderPublish, publish_provider};
    let version = publish_version(version)?;
    let (target, wait) = to.parts()?;
    let options = ProviderPublish { dist, namespace, version, target, wait, settings: Vec::new() };
    publish_provider(&options, &mut std::io::stdout()).await.map(|_| ()).map_err(|e| e.to_string())
}

async fn run_bundle_import(
    dir: &std::path::Path,
    sums_sha256: Option<&str>,
    target: TokenTarget,
) -> Result<(), String> {
    let config = registry::config::Config::from_lookup(|k| match k {
        "REGISTRY_BUCKET" => Some("bundle".into()),
        k => std::env::var(k).ok(),
    })
    .map_err(|e| e.to_string())?;
    // The bounds `make bundle` copied within (not the pull-through's 256 MiB unpacked).
    let bounds = config.archive_bounds();
    use registry_local::bundle_import::{Sums, import};
    let sums = sums_sha256.map_or(Sums::Unchecked, Sums::Sha256);
    let report = import(dir, sums, &target, bounds).await.map_err(|e| e.to_string())?;
    for key in &report.pinned {
        println!("pinned {key}");
    }
    println!(
        "{} versions pinned, {} already pinned with the same bytes, {} other files written",
        report.pinned.len(),
        report.present.len(),
        report.written
    );
    if sums_sha256.is_none() {
        println!("SHA256SUMS itself was not checked (--no-sums-check)");
    }
    Ok(())
}

async fn run_bundle(modules_json: &[PathBuf], lists: &[PathBuf], target: BundleTarget) -> Result<(), String> {
    use registry::upstream::bundle::{from_list, from_modules_json};
    let read = |path: &PathBuf| std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()));
    let mut items = Vec::new();
    for path in modules_json {
        items.extend(from_modules_json(&read(path)?).map_err(|e| format!("{}: {e}", path.display()))?);
    }
    for path in lists {
        let text = String::from_utf8(read(path)?).map_err(|_| format!("{}: not UTF-8", path.display()))?;
        items.extend(from_list(&text).map_err(|e| format!("{}: {e}", path.display()))?);
    }
    if items.is_empty() {
        return Err("nothing to bundle: give --modules-json or --list naming registry modules".into());
    }
    items.sort();
    items.dedup();
    let report =
        registry_local::bundle::bundle(&items, &target, |k| std::env::var(k).ok()).await.map_err(|e| e.to_string())?;
    for (item, sha256) in &report.copied {
        println!("{item}: {sha256}");
    }
    for (item, why) in &report.skipped {
        println!("{item}: SKIPPED: {why}");
    }
    for (item, why) in &report.failed {
        println!("{item}: FAILED: {why}");
    }
    match &target {
        BundleTarget::Dir(out) => println!(
            "{} module versions in {} ({} files written); SHA256SUMS has SHA-256 {}: carry that number apart \
             from the bundle, and import it inside the air gap with an operator's credentials: \
             make bundle-import DIR={} SUMS={} BUCKET=BUCKET",
            report.copied.len(),
            out.display(),
            report.written,
            report.sums_sha256.as_deref().unwrap_or_default(),
            out.display(),
            report.sums_sha256.as_deref().unwrap_or_default()
        ),
        BundleTarget::Store(target) => println!("{} module versions in {target:?}", report.copied.len()),
    }
    match report.failed.len() {
        0 => Ok(()),
        n => Err(format!("{n} failed (see above); nothing pinned was replaced")),
    }
}

async fn run_reindex(data_dir: &std::path::Path) -> Result<(), String> {
    let results = reindex(data_dir).await.map_err(|e| e.to_string())?;
    let mut failed = 0;
    for (owner, outcome) in &results {
        match outcome {
            Ok(outcome) => println!("{owner}: {outcome:?}"),
            Err(e) => {
                failed += 1;
                println!("{owner}: FAILED: {}", registry::error::chain(e));
            }
        }
    }
    println!("reindexed {} modules and providers", results.len() - failed);
    if failed > 0 {
        return Err(format!("{failed} failed (see above); the others were reindexed"));
    }
    Ok(())
}

async fn run_usage(target: TokenTarget, days: u32) -> Result<(), String> {
    let idle = registry_local::idle_versions(target, days).await.map_err(|e| e.to_string())?;
    if idle.is_empty() {
        println!("every served version was downloaded in the last {days} days");
        return Ok(());
    }
    println!("{} served versions with no download in the last {days} days:", idle.len());
    println!(
        "{:<56} {:<16} {:<12} {:<22} {:>9}",
        "MODULE OR PROVIDER", "VERSION", "PUBLISHED", "LAST DOWNLOAD", "TOTAL"
    );
    for v in &idle {
        let published = v.published_at.as_deref().map_or("", |at| at.get(..10).unwrap_or(at));
        let deprecated = if v.deprecated { "deprecated" } else { "" };
        println!(
            "{:<56} {:<16} {:<12} {:<22} {:>9}  {deprecated}",
            v.counted.to_string(),
            v.version,
            published,
            v.last.to_string(),
            v.total
        );
    }
    Ok(())
}

async fn run_audit(target: TokenTarget) -> Result<(), String> {
    let report = audit(target).await.map_err(|e| e.to_string())?;
    if report.heads.is_empty() {
        println!("publish log: no entries");
    } else {
        println!(
            "publish log: {} entries in {} chains; each chain's last entry (compare with the indexer's log):",
            report.entries,
            report.heads.len()
        );
    }
    for (chain, head) in &report.heads {
        let chain = if chain.is_empty() { "(the single chain of before)" } else { chain.as_str() };
        println!("  {chain}: entry {} hashes to {}", head.seq, head.hash);
    }
    for problem in &report.chain {
        println!("CHAIN BROKEN: {problem}");
    }
    for problem in &report.unexplained {
        println!("UNEXPLAINED: {problem}");
    }
    for problem in &report.unserved {
        println!("UNSERVED: {problem}");
    }
    if !report.is_clean() {
        return Err(format!(
            "{} chain problem(s), {} served archive(s) the log does not explain, {} logged archive(s) nothing serves",
            report.chain.len(),
            report.unexplained.len(),
            report.unserved.len()
        ));
    }
    println!(
        "every entry chains to the one before it, every served archive has its publish entry, and every published \
         archive is served"
    );
    Ok(())
}

async fn run_token(token: Token) -> Result<(), String> {
    let trimmed = |globs: Vec<String>| -> Vec<String> {
        globs.into_iter().map(|g| g.trim().to_string()).filter(|g| !g.is_empty()).collect()
    };
    let (action, target) = match token {
        Token::Create { name, modules, providers, expires_days, replace, admin, target } => {
            let (modules, providers) = (trimmed(modules), trimmed(providers));
            (TokenAction::Create { name, modules, providers, expires_days, replace, admin }, target)
        }
        Token::List(target) => (TokenAction::List, target),
        Token::Revoke { name, target } => (TokenAction::Revoke { name }, target),
    };
    print!("{}", token_command(action, target.target()?).await.map_err(|e| e.to_string())?);
    Ok(())
}

/// `--upstream https://HOST,…` as `REGISTRY_UPSTREAM_HOSTS`: the hosts, as provider addresses
/// name them. An upstream on a port needs a name (`NAME=https://HOST:PORT`): the terraform CLI
/// cannot ask a network mirror for a provider whose host has a port.
fn upstream_hosts(list: &str) -> Result<String, String> {
    let mut hosts = Vec::new();
    for item in list.split(',').map(str::trim).filter(|u| !u.is_empty()) {
        let (name, url) = match item.split_once('=') {
            Some((name, url)) => (Some(name.trim()), url.trim()),
            None => (None, item),
        };
        let address = url
            .strip_prefix("https://")
            .map(|h| h.trim_end_matches('/'))
            .filter(|h| !h.is_empty() && !h.contains('/'))
            .ok_or_else(|| {
                format!("--upstream {item:?}: give an upstream registry as https://HOST or NAME=https://HOST:PORT")
            })?;
        hosts.push(match name {
            Some(name) => format!("{}=https://{address}", name.to_ascii_lowercase()),
            None if address.contains(':') => {
                return Err(format!(
                    "--upstream {item:?}: the terraform CLI cannot ask a mirror for providers of a host with a port; \
                     name it: NAME=https://{address} (and use NAME in provider sources)"
                ));
            }
            None => address.to_ascii_lowercase(),
        });
    }
    Ok(hosts.join(","))
}

async fn serve(args: Serve) -> Result<(), String> {
    let listen = args.listen;
    let s3_listen = args.s3_listen.unwrap_or_else(|| {
        let port = if listen.port() == 0 { 0 } else { listen.port().wrapping_add(1) };
        SocketAddr::new(listen.ip(), port)
    });
    let mut settings = Vec::new();
    if let Some(list) = &args.upstream {
        settings.push(("REGISTRY_UPSTREAM_HOSTS".to_string(), upstream_hosts(list)?));
    }
    if let Some(ca) = args.upstream_ca {
        settings.push(("REGISTRY_UPSTREAM_CA_FILE".to_string(), ca));
    }
    let s3_latency = args.s3_latency.as_deref().map(S3Latency::parse).transpose()?.map(std::sync::Arc::new);
    let running = start(LocalOptions {
        listen,
        s3_listen,
        write_client_files: true,
        http_listen: args.http_listen,
        settings,
        s3_latency,
        ..LocalOptions::ephemeral(args.data_dir)
    })
    .await
    .map_err(|e| e.to_string())?;
    let dir = running.data_dir.display();
    let paths = &running.app.config().paths;
    println!(
        "\nregistry-local is serving\n\
         \x20 registry (HTTPS):  {base}   modules: {host}/NAMESPACE/NAME/SYSTEM\n\
         \x20 web pages:         {base}/   (sign in with the token in {dir}/dev-token)\n\
         \x20 provider mirror:   {base}{mirror}\n\
         \x20 OCI (OpenTofu):    {base}/v2/   providers/HOSTNAME/NAMESPACE/TYPE, modules/NAMESPACE/NAME/SYSTEM\n\
         \x20 embedded S3:       {s3}   bucket: {bucket}\n\n\
         Use it from terraform (terraform.rc holds the local-dev token; `make token-create` makes scoped ones):\n\
         \x20 export TF_CLI_CONFIG_FILE={dir}/terraform.rc SSL_CERT_FILE={dir}/ca.pem\n\
         Publish a module from its git tag, checked before it is uploaded (docs/PUBLISHING.md):\n\
         \x20 make publish DIR=path/to/module MODULE=acme/vpc/aws DATA_DIR={dir}\n\
         Or upload archives with any S3 client (indexed as soon as the upload finishes):\n\
         \x20 source {dir}/local.env    # in a shell of its own: make deploy refuses to run where it was sourced\n\
         \x20 aws s3 cp vpc.tar.gz s3://{bucket}/modules/acme/vpc/aws/1.0.0.tar.gz\n\
         \x20 aws s3 sync ./mirror s3://{bucket}/providers/    # a `terraform providers mirror` directory\n\
         Private providers (providers.v1 at {base}{providers}, source = \"{own}/NAMESPACE/TYPE\"):\n\
         \x20 AWS_ACCESS_KEY_ID=$KEY_ADMIN_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY=$KEY_ADMIN_SECRET_ACCESS_KEY \\\n\
         \x20   aws s3 cp acme.asc s3://{bucket}/signing-keys/{own}/acme/release.asc    # key admins only\n\
         \x20 make publish-provider DIST=dist NAMESPACE=acme DATA_DIR={dir}   # goreleaser's zips, _SHA256SUMS, .sig, _manifest.json\n\
         \x20 (checked, the signature against those keys, before it uploads; docs/PUBLISHING.md)\n\
         {pull}\n\
         Ctrl-C stops it.",
        base = running.base_url(),
        host = running.registry_addr,
        mirror = paths.mirror,
        providers = paths.providers,
        own = running.app.config().hostname.clone().unwrap_or_else(|| "REGISTRY_HOSTNAME".into()),
        s3 = running.s3_endpoint(),
        bucket = registry_local::BUCKET,
        pull = match running.app.config().upstream.hosts.as_slice() {
            [] => "Pull-through mirror: off (make dev UPSTREAM=https://HOST, or UPSTREAM=NAME=https://HOST:PORT \
                 UPSTREAM_CA=ca.pem, turns it on: docs/MIRROR.md)\n"
                .to_string(),
            hosts => format!(
                "Pull-through mirror: providers of {} not in the bucket are fetched, verified and copied on first request\n",
                hosts.join(", ")
            ),
        },
    );
    tokio::signal::ctrl_c().await.map_err(|e| format!("waiting for Ctrl-C: {e}"))?;
    println!("stopping");
    running.stop().await;
    Ok(())
}
