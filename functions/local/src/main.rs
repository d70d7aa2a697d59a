//! `registry-local`: run the registry on loopback (`make dev`), rebuild manifests, manage tokens.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use registry_local::{LocalOptions, TokenAction, TokenTarget, reindex, start, token_command};

const USAGE: &str = "usage: registry-local [serve] [--listen ADDR] [--s3-listen ADDR] [--http-listen ADDR] [--data-dir DIR]
              registry-local reindex [--data-dir DIR]
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

async fn run(args: Vec<String>) -> Result<(), String> {
    let mut command = "serve".to_string();
    let mut listen: SocketAddr = "127.0.0.1:8443".parse().map_err(|e| format!("{e}"))?;
    let mut s3_listen: Option<SocketAddr> = None;
    let mut http_listen: Option<SocketAddr> = None;
    let mut data_dir = PathBuf::from(".data");
    let (mut token_verb, mut name, mut bucket, mut expires_days) =
        (None::<String>, None::<String>, None::<String>, None::<u64>);
    let (mut modules, mut providers) = (Vec::new(), Vec::new());
    let globs =
        |list: String| list.split(',').map(|g| g.trim().to_string()).filter(|g| !g.is_empty()).collect::<Vec<_>>();
    let mut it = args.into_iter();
    while let Some(arg) = it.next() {
        let mut value = |flag: &str| it.next().ok_or_else(|| format!("{flag} needs a value\n{USAGE}"));
        match arg.as_str() {
            "serve" | "reindex" | "token" => command = arg,
            "create" | "list" | "revoke" if command == "token" => token_verb = Some(arg),
            "--name" => name = Some(value("--name")?),
            "--bucket" => bucket = Some(value("--bucket")?),
            "--modules" => modules = globs(value("--modules")?),
            "--providers" => providers = globs(value("--providers")?),
            "--expires-days" => {
                expires_days = Some(value("--expires-days")?.parse().map_err(|e| format!("--expires-days: {e}"))?)
            }
            "--listen" => listen = value("--listen")?.parse().map_err(|e| format!("--listen: {e}"))?,
            "--http-listen" => {
                http_listen = Some(value("--http-listen")?.parse().map_err(|e| format!("--http-listen: {e}"))?)
            }
            "--s3-listen" => s3_listen = Some(value("--s3-listen")?.parse().map_err(|e| format!("--s3-listen: {e}"))?),
            "--data-dir" => data_dir = PathBuf::from(value("--data-dir")?),
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    if command == "token" {
        let target = match bucket {
            Some(b) => TokenTarget::Bucket(b),
            None => TokenTarget::DataDir(data_dir),
        };
        let need_name = || name.clone().ok_or_else(|| format!("--name is required\n{USAGE}"));
        let action = match token_verb.as_deref() {
            Some("create") => TokenAction::Create { name: need_name()?, modules, providers, expires_days },
            Some("list") => TokenAction::List,
            Some("revoke") => TokenAction::Revoke { name: need_name()? },
            _ => return Err(format!("token needs create, list or revoke\n{USAGE}")),
        };
        print!("{}", token_command(action, target).await.map_err(|e| e.to_string())?);
        return Ok(());
    }
    if command == "reindex" {
        let results = reindex(&data_dir).await.map_err(|e| e.to_string())?;
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
        return Ok(());
    }
    let s3_listen = s3_listen.unwrap_or_else(|| {
        let port = if listen.port() == 0 { 0 } else { listen.port().wrapping_add(1) };
        SocketAddr::new(listen.ip(), port)
    });
    let running = start(LocalOptions {
        listen,
        s3_listen,
        data_dir,
        write_client_files: true,
        log_s3_requests: false,
        http_listen,
        settings: vec![],
    })
    .await
    .map_err(|e| e.to_string())?;
    let dir = running.data_dir.display();
    println!(
        "\nregistry-local is serving\n\
         \x20 registry (HTTPS):  {base}   modules: {host}/NAMESPACE/NAME/SYSTEM\n\
         \x20 provider mirror:   {base}/v1/mirror/\n\
         \x20 embedded S3:       {s3}   bucket: registry\n\n\
         Use it from terraform (terraform.rc holds the local-dev token; `make token-create` makes scoped ones):\n\
         \x20 export TF_CLI_CONFIG_FILE={dir}/terraform.rc SSL_CERT_FILE={dir}/ca.pem\n\
         Publish (archives are indexed as soon as the upload finishes):\n\
         \x20 source {dir}/local.env\n\
         \x20 aws s3 cp vpc.tar.gz s3://registry/modules/acme/vpc/aws/1.0.0.tar.gz\n\
         \x20 aws s3 sync ./mirror s3://registry/providers/    # a `terraform providers mirror` directory\n\n\
         Ctrl-C stops it.",
        base = running.base_url(),
        host = running.registry_addr,
        s3 = running.s3_endpoint(),
    );
    tokio::signal::ctrl_c().await.map_err(|e| format!("waiting for Ctrl-C: {e}"))?;
    println!("stopping");
    running.stop().await;
    Ok(())
}
