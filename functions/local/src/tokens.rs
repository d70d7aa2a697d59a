//! The token commands (`make token-create`, `token-list`, `token-revoke`), against the local
//! registry's data directory or a deployed bucket.

use std::path::PathBuf;

use registry::storage::S3Storage;

use crate::client_files::new_token;
use crate::{LocalError, LocalOptions};

/// The longest token lifetime `--expires-days` takes.
const MAX_EXPIRES_DAYS: u64 = 36_500;

/// Where token commands act: the local registry's data directory, or a deployed bucket
/// (credentials and region from the standard AWS environment).
#[derive(Debug, Clone)]
pub enum TokenTarget {
    DataDir(PathBuf),
    Bucket(String),
}

#[derive(Debug, Clone)]
pub enum TokenAction {
    Create {
        name: String,
        modules: Vec<String>,
        providers: Vec<String>,
        expires_days: Option<u64>,
        replace: bool,
        /// May see who downloads what (`TokenRecord::admin`).
        admin: bool,
    },
    List,
    Revoke {
        name: String,
    },
}

/// Run a token command; answers what to print. `create` is the only time a token is shown.
pub async fn token_command(action: TokenAction, target: TokenTarget) -> Result<String, LocalError> {
    let answer = match &target {
        TokenTarget::Bucket(bucket) => {
            let storage = S3Storage::from_env(bucket, false).await;
            token_action(&storage, action).await
        }
        TokenTarget::DataDir(data_dir) => {
            let running = crate::start(LocalOptions::ephemeral(data_dir.clone())).await?;
            let result = token_action(&running.storage, action).await;
            running.stop().await;
            result
        }
    }?;
    Ok(format!("{}\n{answer}", target.describe()))
}

impl TokenTarget {
    /// Which token store a command acted on, as its first line says.
    pub fn describe(&self) -> String {
        match self {
            TokenTarget::Bucket(bucket) => format!(
                "token store: s3://{bucket}/{} (a deployed registry; AWS credentials and region from the environment)",
                registry::layout::TOKENS
            ),
            TokenTarget::DataDir(dir) => format!(
                "token store: the local registry's, in {} (make dev); BUCKET=name or DEPLOYED=DIR acts on a deployed one",
                dir.display()
            ),
        }
    }
}

async fn token_action(storage: &S3Storage, action: TokenAction) -> Result<String, LocalError> {
    use registry::auth::manage;
    let err = |e: registry::Error| LocalError(format!("token store: {}", registry::error::chain(&e)));
    match action {
        TokenAction::Create { name, modules, providers, expires_days, replace, admin } => {
            check_token_name(&name)?;
            for glob in modules.iter().chain(&providers) {
                if glob.is_empty() || glob.len() > 300 || !glob.bytes().all(|b| b.is_ascii_graphic()) {
                    return Err(LocalError(format!("invalid scope glob {glob:?}")));
                }
            }
            if modules.is_empty() && providers.is_empty() {
                return Err(LocalError("a token needs --modules or --providers (globs, e.g. acme,team-* or *)".into()));
            }
            if expires_days.is_some_and(|days| days > MAX_EXPIRES_DAYS) {
                return Err(LocalError(format!("--expires-days is at most {MAX_EXPIRES_DAYS} (100 years)")));
            }
            let expires_at =
                expires_days.map(|days| registry::clock::rfc3339(registry::clock::now_unix() + days as i64 * 86_400));
            let token = new_token()?;
            let record = registry::auth::TokenRecord {
                admin,
                ..manage::record(&name, &token, modules, providers, expires_at.clone())
            };
            match replace {
                true => manage::upsert(storage, record).await.map_err(err)?,
                false => manage::create(storage, record).await.map_err(|e| match e {
                    registry::Error::Conflict(_) => LocalError(format!(
                        "a token named {name:?} exists. To rotate it with overlap, create the new one under another \
                         name, move its clients, then revoke {name:?}; --replace (make token-create REPLACE=1) \
                         replaces it at once, and its clients stop working"
                    )),
                    other => err(other),
                })?,
            }
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
                    t.providers.join(",") + if t.admin { " (admin: sees callers)" } else { "" }
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
