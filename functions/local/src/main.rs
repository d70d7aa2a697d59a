//! `registry-local`: run the registry on loopback (`make dev`), rebuild manifests, audit the
//! publish log, manage tokens.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use registry_local::{LocalOptions, TokenAction, TokenTarget, audit, reindex, start, token_command};

const USAGE: &str = "usage: registry-local [serve] [--listen ADDR] [--s3-listen ADDR] [--http-listen ADDR] [--data-dir DIR]
                      [--upstream https://HOST | NAME=https://HOST:PORT,… [--upstream-ca PEM]]
       registry-local reindex [--data-dir DIR]
       registry-local audit [--data-dir DIR | --bucket BUCKET]
       registry-local token create --name NAME [--modules GLOBS] [--providers GLOBS] [--expires-days N] [--data-dir DIR | --bucket BUCKET]
       registry-local token list [--data-dir DIR | --bucket BUCKET]
       registry-local token revoke --name NAME [--data-dir DIR | --bucket BUCKET]
defaults: --listen 127.0.0.1:8443, --s3-listen 127.0.0.1:(listen port + 1), --data-dir .data";

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,s3s=warn,s3s_fs=warn,aws_config=warn,aws_smithy_runtime=warn".into()),
        )
        .init();
    match run(std::env::args().skip(1).collect()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("registry-local: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The command line: the subcommand (with its verb, for `token`) and its flags.
struct Command {
    words: Vec<String>,
    flags: BTreeMap<String, String>,
}

impl Command {
    /// Split words from `--flag value` pairs; every flag takes a value.
    fn parse(args: Vec<String>) -> Result<Command, String> {
        let (mut words, mut flags) = (Vec::new(), BTreeMap::new());
        let mut it = args.into_iter();
        while let Some(arg) = it.next() {
            if arg == "-h" || arg == "--help" {
                words = vec!["help".into()];
                break;
            }
            if arg.starts_with("--") {
                let value = it.next().ok_or_else(|| format!("{arg} needs a value\n{USAGE}"))?;
                if flags.insert(arg.clone(), value).is_some() {
                    return Err(format!("{arg} given twice\n{USAGE}"));
                }
            } else {
                words.push(arg);
            }
        }
        Ok(Command { words, flags })
    }

    /// Refuse flags that do not belong to this subcommand (`reindex --bucket` would otherwise
    /// silently reindex the local data directory).
    fn only(&self, command: &str, allowed: &[&str]) -> Result<(), String> {
        match self.flags.keys().find(|f| !allowed.contains(&f.as_str())) {
            Some(flag) => Err(format!("{command} does not take {flag}\n{USAGE}")),
            None => Ok(()),
        }
    }

    fn value<T: std::str::FromStr>(&self, flag: &str) -> Result<Option<T>, String>
    where
        T::Err: std::fmt::Display,
    {
        self.flags.get(flag).map(|v| v.parse().map_err(|e| format!("{flag} {v:?}: {e}"))).transpose()
    }

    fn globs(&self, flag: &str) -> Vec<String> {
        self.flags
            .get(flag)
            .map(|list| list.split(',').map(|g| g.trim().to_string()).filter(|g| !g.is_empty()).collect())
            .unwrap_or_default()
    }

    fn data_dir(&self) -> PathBuf {
        PathBuf::from(self.flags.get("--data-dir").map_or(".data", String::as_str))
    }
}

async fn run(args: Vec<String>) -> Result<(), String> {
    let command = Command::parse(args)?;
    let words: Vec<&str> = command.words.iter().map(String::as_str).collect();
    match words.as_slice() {
        ["help"] => {
            println!("{USAGE}");
            Ok(())
        }
        [] | ["serve"] => {
            command.only(
                "serve",
                &["--listen", "--s3-listen", "--http-listen", "--data-dir", "--upstream", "--upstream-ca"],
            )?;
            serve(&command).await
        }
        ["reindex"] => {
            command.only("reindex", &["--data-dir"])?;
            let results = reindex(&command.data_dir()).await.map_err(|e| e.to_string())?;
            let mut failed = 0;
            for (owner, outcome) in &results {
                match outcome {
                    Ok(outcome) => println!("{owner}: {outcome:?}"),
                    Err(e) => {
                        failed += 1;
                        println!("{owner}: FAILED: {e}");
                    }
                }
            }
            println!("reindexed {} modules and providers", results.len() - failed);
            if failed > 0 {
                return Err(format!("{failed} failed (see above); the others were reindexed"));
            }
            Ok(())
        }
        ["audit"] => {
            command.only("audit", &["--data-dir", "--bucket"])?;
            let report = audit(command.target()?).await.map_err(|e| e.to_string())?;
            match &report.head {
                Some(head) => println!(
                    "publish log: {} entries; last entry {} hashes to {} (compare with the indexer's log)",
                    report.entries, head.seq, head.hash
                ),
                None => println!("publish log: no entries"),
            }
            for problem in &report.chain {
                println!("CHAIN BROKEN: {problem}");
            }
            for problem in &report.unexplained {
                println!("UNEXPLAINED: {problem}");
            }
            if !report.is_clean() {
                return Err(format!(
                    "{} chain problem(s), {} served archive(s) the log does not explain",
                    report.chain.len(),
                    report.unexplained.len()
                ));
            }
            println!("every entry chains to the one before it, and every served archive has its publish entry");
            Ok(())
        }
        ["token", verb] => {
            let target_flags = ["--data-dir", "--bucket"];
            let action = match *verb {
                "create" => {
                    command.only(
                        "token create",
                        &["--name", "--modules", "--providers", "--expires-days", "--data-dir", "--bucket"],
                    )?;
                    TokenAction::Create {
                        name: need_name(&command)?,
                        modules: command.globs("--modules"),
                        providers: command.globs("--providers"),
                        expires_days: command.value("--expires-days")?,
                    }
                }
                "list" => {
                    command.only("token list", &target_flags)?;
                    TokenAction::List
                }
                "revoke" => {
                    command.only("token revoke", &["--name", "--data-dir", "--bucket"])?;
                    TokenAction::Revoke { name: need_name(&command)? }
                }
                other => return Err(format!("token needs create, list or revoke, not {other:?}\n{USAGE}")),
            };
            let target = command.target()?;
            print!("{}", token_command(action, target).await.map_err(|e| e.to_string())?);
            Ok(())
        }
        ["token"] => Err(format!("token needs create, list or revoke\n{USAGE}")),
        other => Err(format!("unknown command {:?}\n{USAGE}", other.join(" "))),
    }
}

impl Command {
    /// The bucket a command works on: the data directory's (default) or a deployed one.
    fn target(&self) -> Result<TokenTarget, String> {
        match (self.flags.get("--bucket"), self.flags.contains_key("--data-dir")) {
            (Some(_), true) => Err(format!("--data-dir or --bucket, not both\n{USAGE}")),
            (Some(bucket), false) => Ok(TokenTarget::Bucket(bucket.clone())),
            (None, _) => Ok(TokenTarget::DataDir(self.data_dir())),
        }
    }
}

fn need_name(command: &Command) -> Result<String, String> {
    command.flags.get("--name").cloned().ok_or_else(|| format!("--name is required\n{USAGE}"))
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

async fn serve(command: &Command) -> Result<(), String> {
    let listen: SocketAddr = command.value("--listen")?.unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 8443)));
    let s3_listen = command.value("--s3-listen")?.unwrap_or_else(|| {
        let port = if listen.port() == 0 { 0 } else { listen.port().wrapping_add(1) };
        SocketAddr::new(listen.ip(), port)
    });
    let mut settings = Vec::new();
    if let Some(list) = command.flags.get("--upstream") {
        settings.push(("REGISTRY_UPSTREAM_HOSTS".to_string(), upstream_hosts(list)?));
    }
    if let Some(ca) = command.flags.get("--upstream-ca") {
        settings.push(("REGISTRY_UPSTREAM_CA_FILE".to_string(), ca.clone()));
    }
    let running = start(LocalOptions {
        listen,
        s3_listen,
        write_client_files: true,
        http_listen: command.value("--http-listen")?,
        settings,
        ..LocalOptions::ephemeral(command.data_dir())
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
         \x20 embedded S3:       {s3}   bucket: {bucket}\n\n\
         Use it from terraform (terraform.rc holds the local-dev token; `make token-create` makes scoped ones):\n\
         \x20 export TF_CLI_CONFIG_FILE={dir}/terraform.rc SSL_CERT_FILE={dir}/ca.pem\n\
         Publish (archives are indexed as soon as the upload finishes):\n\
         \x20 source {dir}/local.env\n\
         \x20 aws s3 cp vpc.tar.gz s3://{bucket}/modules/acme/vpc/aws/1.0.0.tar.gz\n\
         \x20 aws s3 sync ./mirror s3://{bucket}/providers/    # a `terraform providers mirror` directory\n\
         Private providers (providers.v1 at {base}{providers}, source = \"{own}/NAMESPACE/TYPE\"):\n\
         \x20 AWS_ACCESS_KEY_ID=$KEY_ADMIN_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY=$KEY_ADMIN_SECRET_ACCESS_KEY \\\n\
         \x20   aws s3 cp acme.asc s3://{bucket}/signing-keys/{own}/acme/release.asc    # key admins only\n\
         \x20 aws s3 cp dist/ s3://{bucket}/providers/{own}/acme/widget/ --recursive   # zips, _SHA256SUMS, .sig, _manifest.json\n\
         \x20 (served once the signature verifies; rejections/ in the bucket says why not: README, Publishing)\n\
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
                 UPSTREAM_CA=ca.pem, turns it on: README, Use it as a pull-through mirror)\n"
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
