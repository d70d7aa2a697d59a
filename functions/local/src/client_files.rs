//! What the local registry writes for the people using it: `terraform.rc` (the mirror and the
//! `local-dev` token), `local.env` (the publisher's S3 settings), and the token itself.

use std::path::Path;

use registry::storage::S3Storage;

use crate::embedded_s3::{KEY_ADMIN_ACCESS_KEY, PUBLISHER_ACCESS_KEY};
use crate::{BUCKET, LocalError, REGION, Running, tls, write_private};

/// The name of the token `make dev` writes into `terraform.rc`.
pub const DEV_TOKEN_NAME: &str = "local-dev";
/// Where `make dev` records the hostname it serves its own providers as, for `reindex`.
pub const HOSTNAME_FILE: &str = "hostname";

/// The upstream module hosts the bucket holds pinned copies of (a bundle synced in, or copies
/// made before): the CLI must still be sent here for them when nothing is fetched.
pub(crate) async fn upstream_module_hosts_copied(storage: &S3Storage) -> Result<Vec<String>, LocalError> {
    use registry::storage::Storage;
    let listed = storage
        .list(registry::layout::UPSTREAM_MODULES_PREFIX)
        .await
        .map_err(|e| LocalError(format!("list the upstream module copies: {}", registry::error::chain(&e))))?;
    // Hosts with a pin, by the layout's own grammar: a version list kept earlier is no copy,
    // and a key's host name goes into terraform.rc only as a valid host name.
    let mut hosts: Vec<String> = listed
        .iter()
        .filter_map(|o| match registry::layout::upstream_module_record(&o.key)? {
            registry::layout::UpstreamModuleRecord::Pin(module, _) => Some(module.hostname),
            registry::layout::UpstreamModuleRecord::Refusal(..) => None,
        })
        .collect();
    hosts.dedup();
    Ok(hosts)
}

/// `copied`: the upstream module hosts the bucket holds copies of, which get a `host` block
/// beside the ones fetched from.
pub(crate) fn write_user_files(running: &Running, mirror_path: &str, copied: &[String]) -> Result<(), LocalError> {
    let dir = &running.data_dir;
    let installation = registry::cli_config::provider_installation(
        running.app.config().hostname.as_deref(),
        &format!("{}{mirror_path}", running.base_url()),
    );
    let config = running.app.config();
    // The hosts fetched from, and those the bucket holds copies of (an air gap): public
    // `source` lines of other hosts keep going to their registry, as without this registry.
    let mut module_hosts = config.upstream_modules.hosts();
    for host in copied {
        if !module_hosts.contains(host) {
            module_hosts.push(host.clone());
        }
    }
    let module_hosts: Vec<&str> = module_hosts.iter().map(String::as_str).collect();
    let modules = match module_hosts.is_empty() {
        true => "# Public modules: not through this registry (REGISTRY_UPSTREAM_MODULES is empty and it holds\n\
                 # no copies; docs/UPSTREAM-MODULES.md).\n"
            .to_string(),
        false => registry::cli_config::upstream_modules(
            &module_hosts,
            &format!("{}{}", running.base_url(), config.paths.modules),
            &running.dev_token,
        ),
    };
    let rc = format!(
        "# Written by registry-local at every start. Use it with\n\
         #   export TF_CLI_CONFIG_FILE={rc} SSL_CERT_FILE={ca}\n\
         # Modules: source = \"{host}/NAMESPACE/NAME/SYSTEM\".\n\
         {installation}\n\
         # The local-dev token (every module and provider). The CLI sends it to discovery,\n\
         # module, providers.v1 and mirror requests, never to the archive URLs.\n\
         credentials \"{host}\" {{\n  token = \"{token}\"\n}}\n\n{modules}",
        rc = dir.join("terraform.rc").display(),
        ca = dir.join(tls::CA_FILE).display(),
        host = running.registry_addr,
        token = running.dev_token,
    );
    // It holds a token: owner-only.
    write_private(&dir.join("terraform.rc"), rc.as_bytes())?;
    let env = format!(
        "# Written by registry-local: `source` it to publish with the AWS CLI or any S3 client.\n\
         # AWS_* are the publisher's credentials: modules/ and providers/.\n\
         export AWS_ENDPOINT_URL={endpoint}\nexport AWS_ACCESS_KEY_ID={PUBLISHER_ACCESS_KEY}\n\
         export AWS_SECRET_ACCESS_KEY={secret}\nexport AWS_REGION={REGION}\nexport REGISTRY_BUCKET={BUCKET}\n\
         # The key admin's credentials, the only ones that may write signing-keys/ (publishers may not):\n\
         #   AWS_ACCESS_KEY_ID=$KEY_ADMIN_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY=$KEY_ADMIN_SECRET_ACCESS_KEY aws s3 cp ...\n\
         export KEY_ADMIN_ACCESS_KEY_ID={KEY_ADMIN_ACCESS_KEY}\nexport KEY_ADMIN_SECRET_ACCESS_KEY={key_admin}\n\
         # The MCP server for coding assistants (docs/MCP.md) and the local-dev token to send it\n\
         # (Authorization: Bearer $REGISTRY_TOKEN; trust {ca}):\n\
         export REGISTRY_MCP_URL={base}{mcp}\nexport REGISTRY_TOKEN={token}\n\
         # The registry itself (`make publish` reads this file for it, trusting {ca}):\n\
         export REGISTRY_URL={base}\n",
        endpoint = running.s3_endpoint(),
        base = running.base_url(),
        mcp = registry::router::MCP_PATH,
        token = running.dev_token,
        ca = dir.join(tls::CA_FILE).display(),
        secret = running.publisher_secret,
        key_admin = running.key_admin_secret,
    );
    write_private(&dir.join("local.env"), env.as_bytes())?;
    if let Some(hostname) = &running.app.config().hostname {
        std::fs::write(dir.join(HOSTNAME_FILE), format!("{hostname}\n"))
            .map_err(|e| LocalError(format!("write {}: {e}", dir.join(HOSTNAME_FILE).display())))?;
    }
    Ok(())
}

/// The `local-dev` token: its plaintext kept in `DATA_DIR/dev-token` (owner-only) so that
/// `terraform.rc` can carry it; its hash in the token store, like any other token's.
pub(crate) async fn ensure_dev_token(storage: &S3Storage, data_dir: &Path) -> Result<String, LocalError> {
    let path = data_dir.join("dev-token");
    let token = match std::fs::read_to_string(&path).map(|t| t.trim().to_string()) {
        Ok(t) if t.starts_with(registry::auth::TOKEN_PREFIX) => t,
        _ => {
            let t = new_token()?;
            write_private(&path, t.as_bytes())?;
            t
        }
    };
    let tokens = registry::auth::manage::list(storage)
        .await
        .map_err(|e| LocalError(format!("token store: {}", registry::error::chain(&e))))?;
    let current = tokens
        .iter()
        .any(|t| t.name == DEV_TOKEN_NAME && t.sha256 == hex::encode(registry::auth::hash(&token)) && t.admin);
    if !current {
        let all = vec!["*".to_string()];
        // The developer's own registry: they may see who downloads what, too.
        let record = registry::auth::TokenRecord {
            admin: true,
            ..registry::auth::manage::record(DEV_TOKEN_NAME, &token, all.clone(), all, None)
        };
        registry::auth::manage::upsert(storage, record)
            .await
            .map_err(|e| LocalError(format!("token store: {}", registry::error::chain(&e))))?;
    }
    Ok(token)
}

/// A new token: the prefix and 32 random bytes, hex (256 bits of entropy).
pub fn new_token() -> Result<String, LocalError> {
    Ok(format!("{}{}", registry::auth::TOKEN_PREFIX, crate::random_hex(32)?))
}
