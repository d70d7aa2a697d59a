//! Typed configuration, loaded once per process from the environment. Errors name the variable.

use std::collections::BTreeMap;
use std::time::Duration;

pub use crate::archive::Bounds as ArchiveBounds;
use crate::index::Limits;
use crate::router::{
    BasePaths, DISCOVERY_PATH, MIRROR_BASE_PATH_DEFAULT, MODULES_BASE_PATH_DEFAULT, PROVIDERS_BASE_PATH_DEFAULT,
    UI_PATH,
};
pub use crate::upstream::{ModuleUpstreamSettings, UPSTREAM_HOST_DEFAULT, UpstreamSettings};

/// Bounds for presigned URL lifetimes: long enough for a slow `terraform init` to start the
/// download, short enough that a URL printed in a CI log is useless soon after.
pub const PRESIGN_TTL_MIN: Duration = Duration::from_secs(1);
/// The longest presigned URL lifetime allowed.
pub const PRESIGN_TTL_MAX: Duration = Duration::from_secs(3600);
/// The default presigned URL lifetime.
pub const PRESIGN_TTL_DEFAULT: Duration = Duration::from_secs(300);

#[derive(Debug, Clone, PartialEq, Eq)]
/// Everything a function or the local registry reads from its environment.
pub struct Config {
    /// `REGISTRY_BUCKET`: the one bucket that holds archives and manifests.
    pub bucket: String,
    /// `REGISTRY_PRESIGN_TTL_SECONDS`: lifetime of archive URLs.
    pub presign_ttl: Duration,
    /// Where the routes live; both start and end with `/`.
    pub paths: BasePaths,
    /// `REGISTRY_HOSTNAME`: the host the CLI knows this registry by (`registry.example.com`,
    /// `127.0.0.1:8443`), as in a provider source address. Set: discovery offers providers.v1
    /// for the providers under `providers/HOSTNAME/`, and the indexer serves them only as
    /// signed releases. Unset: no providers.v1.
    pub hostname: Option<String>,
    /// `REGISTRY_S3_FORCE_PATH_STYLE` (`true`/`false`, default false): path-style S3 URLs, for
    /// S3-compatible servers on an IP address such as the local registry's embedded one.
    pub s3_force_path_style: bool,
    /// What the indexer accepts.
    pub limits: Limits,
    /// Who may read without a token (`REGISTRY_ANONYMOUS_MODULES`, `REGISTRY_ANONYMOUS_PROVIDERS`).
    pub access: crate::auth::Policy,
    /// `REGISTRY_TOKENS_CACHE_SECONDS` (default 30, at most 300): how long a container keeps
    /// the token store before reading it again; a revoked token stops working within this.
    pub tokens_cache: Duration,
    /// `REGISTRY_MANIFEST_CACHE_BYTES` (default 16 MiB, 0 disables): manifest JSON bytes a
    /// warm container keeps parsed in memory (`cache`).
    pub manifest_cache_bytes: usize,
    /// `REGISTRY_MANIFEST_CACHE_SECONDS` (default 0, at most 60): how long a cached manifest is
    /// served without asking S3. 0: every request revalidates with a conditional GET, so new
    /// versions show at once.
    pub manifest_cache_ttl: Duration,
    /// The longest a request may take before it is answered 503 with `Retry-After`
    /// (`REQUEST_BUDGET`; not a variable: infra's `read_timeout_seconds` is bounded by it).
    pub request_budget: Duration,
    /// The longest the first download of an upstream module may take, copying it
    /// (`COPY_BUDGET`): the modules function's timeout is at least this plus 2 s where the
    /// modules pull-through fetches (infra).
    pub copy_budget: Duration,
    /// The pull-through mirror's upstream registries.
    pub upstream: UpstreamSettings,
    /// The modules pull-through's upstream registries and git hosts.
    pub upstream_modules: ModuleUpstreamSettings,
    /// `REGISTRY_OIDC_ISSUERS` (a JSON array, `oidc::parse_issuers`; unset or empty: none):
    /// OpenID Connect issuers whose JWTs are accepted as bearer tokens, each with its audience
    /// and claims-to-scopes rules, one of them optionally with the `terraform login` client.
    pub oidc_issuers: Vec<crate::auth::oidc::Issuer>,
    /// `REGISTRY_OIDC_CA_FILE`: PEM certificates trusted for the issuers besides the system's
    /// roots (an issuer inside the organisation, or the tests' issuer on loopback).
    pub oidc_ca_file: Option<String>,
    /// `REGISTRY_USAGE_CALLER_DAYS` (default 30, 0 to 90): days the usage function keeps who
    /// downloaded each version; after that only the counts (`usage`).
    pub usage: crate::usage::Settings,
}

/// `Config::copy_budget`: inside API Gateway's 29 s, with room for the answer.
pub const COPY_BUDGET: Duration = Duration::from_secs(25);

/// Default (and deployed value) of `Config::request_budget`. One storage read gives up after
/// about 12 s (`storage::s3::timeouts`, then a body read again) and a request may make two (the
/// token store, the manifest); this bound keeps the answer ours, inside the read functions'
/// timeout (12 to 29 s, infra's `read_timeout_seconds`) and API Gateway's 29 s, instead of a
/// Lambda timeout's bare 5xx.
pub const REQUEST_BUDGET: Duration = Duration::from_secs(10);

/// Default of `REGISTRY_MANIFEST_CACHE_BYTES`.
pub const MANIFEST_CACHE_BYTES_DEFAULT: usize = 16 << 20;

#[derive(Debug, Clone, PartialEq, Eq)]
/// A variable that is missing or has a bad value; the message names it.
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "configuration error: {}", self.0)
    }
}

impl std::error::Error for ConfigError {}

impl Config {
    /// The defaults, with this bucket (tests and tools).
    pub fn new(bucket: impl Into<String>) -> Self {
        Config {
            bucket: bucket.into(),
            presign_ttl: PRESIGN_TTL_DEFAULT,
            paths: BasePaths::default(),
            hostname: None,
            s3_force_path_style: false,
            limits: Limits::default(),
            access: crate::auth::Policy::default(),
            tokens_cache: Duration::from_secs(30),
            manifest_cache_bytes: MANIFEST_CACHE_BYTES_DEFAULT,
            manifest_cache_ttl: Duration::ZERO,
            request_budget: REQUEST_BUDGET,
            copy_budget: COPY_BUDGET,
            upstream: UpstreamSettings::off(),
            upstream_modules: ModuleUpstreamSettings::off(),
            oidc_issuers: Vec::new(),
            oidc_ca_file: None,
            usage: crate::usage::Settings::default(),
        }
    }

    /// What reading one archive may cost (`REGISTRY_MAX_UNPACKED_BYTES`,
    /// `REGISTRY_MAX_ARCHIVE_ENTRIES`), as the indexer and the modules pull-through apply it.
    pub fn archive_bounds(&self) -> ArchiveBounds {
        ArchiveBounds { unpacked_bytes: self.limits.unpacked_bytes, entries: self.limits.archive_entries }
    }

    /// Load from the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Load from any lookup function (tests pass a map).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let env = Env(&get);
        let bucket = env.text("REGISTRY_BUCKET").ok_or_else(|| ConfigError("REGISTRY_BUCKET is not set".into()))?;
        let presign_ttl = match get("REGISTRY_PRESIGN_TTL_SECONDS") {
            None => PRESIGN_TTL_DEFAULT,
            Some(raw) => parse_ttl(&raw)?,
        };
        let hostname = hostname(&env)?;
        let upstream = upstream(&env, hostname.as_deref())?;
        let upstream_modules = upstream_modules(&env, hostname.as_deref())?;
        let oidc_issuers = match env.text("REGISTRY_OIDC_ISSUERS") {
            None => Vec::new(),
            Some(raw) => crate::auth::oidc::parse_issuers(&raw)
                .map_err(|e| ConfigError(format!("REGISTRY_OIDC_ISSUERS: {e}")))?,
        };
        Ok(Config {
            bucket,
            presign_ttl,
            paths: paths(&env)?,
            hostname,
            s3_force_path_style: env.flag("REGISTRY_S3_FORCE_PATH_STYLE")?,
            limits: limits(&env)?,
            access: access(&env)?,
            tokens_cache: Duration::from_secs(env.bounded("REGISTRY_TOKENS_CACHE_SECONDS", 30, 300, "seconds")?),
            manifest_cache_bytes: env.bounded(
                "REGISTRY_MANIFEST_CACHE_BYTES",
                MANIFEST_CACHE_BYTES_DEFAULT as u64,
                1 << 30,
                "bytes",
            )? as usize,
            manifest_cache_ttl: Duration::from_secs(env.bounded(
                "REGISTRY_MANIFEST_CACHE_SECONDS",
                0,
                60,
                "seconds",
            )?),
            request_budget: REQUEST_BUDGET,
            copy_budget: COPY_BUDGET,
            upstream,
            upstream_modules,
            oidc_issuers,
            oidc_ca_file: env.text("REGISTRY_OIDC_CA_FILE"),
            usage: crate::usage::Settings {
                caller_days: env.bounded(
                    "REGISTRY_USAGE_CALLER_DAYS",
                    u64::from(crate::usage::Settings::default().caller_days),
                    crate::usage::DAYS_KEPT as u64,
                    "days",
                )? as u32,
            },
        })
    }
}

/// The environment as `from_lookup` reads it: each kind of value read one way, each error
/// naming its variable.
struct Env<'a>(&'a dyn Fn(&str) -> Option<String>);

impl Env<'_> {
    fn raw(&self, var: &str) -> Option<String> {
        (self.0)(var)
    }

    /// Trimmed; unset and blank are the same.
    fn text(&self, var: &str) -> Option<String> {
        self.raw(var).map(|v| v.trim().to_string()).filter(|v| !v.is_empty())
    }

    fn flag(&self, var: &str) -> Result<bool, ConfigError> {
        match self.raw(var).as_deref().map(str::trim) {
            None | Some("" | "false" | "0") => Ok(false),
            Some("true" | "1") => Ok(true),
            Some(other) => Err(ConfigError(format!("{var} must be true or false, got {other:?}"))),
        }
    }

    /// A whole number from 0 to `max` (`default` when unset).
    fn bounded(&self, var: &str, default: u64, max: u64, unit: &str) -> Result<u64, ConfigError> {
        let Some(raw) = self.raw(var) else { return Ok(default) };
        match raw.trim().parse::<u64>() {
            Ok(n) if n <= max => Ok(n),
            _ => Err(ConfigError(format!("{var} must be 0 to {max} {unit}, got {raw:?}"))),
        }
    }

    fn bytes(&self, var: &str, default: u64) -> Result<u64, ConfigError> {
        let Some(raw) = self.raw(var) else { return Ok(default) };
        match raw.trim().parse::<u64>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(ConfigError(format!("{var} must be a positive number of bytes, got {raw:?}"))),
        }
    }

    /// A comma-separated list of scope globs.
    fn globs(&self, var: &str) -> Result<Vec<String>, ConfigError> {
        let list: Vec<String> = self
            .raw(var)
            .unwrap_or_default()
            .split(',')
            .map(|g| g.trim().to_string())
            .filter(|g| !g.is_empty())
            .collect();
        match list.iter().find(|g| g.len() > 300 || !g.bytes().all(|b| b.is_ascii_graphic())) {
            Some(bad) => Err(ConfigError(format!("{var} holds an invalid glob {bad:?}"))),
            None => Ok(list),
        }
    }
}

/// The three base paths, which must not overlap each other or the fixed paths (the pages'
/// `/ui/`, OCI's `/v2/`, discovery's, the MCP server's): a route must belong to one protocol.
fn paths(env: &Env<'_>) -> Result<BasePaths, ConfigError> {
    let path = |var: &str, default: &str| base_path(var, env.raw(var), default);
    let paths = BasePaths {
        modules: path("REGISTRY_MODULES_BASE_PATH", MODULES_BASE_PATH_DEFAULT)?,
        mirror: path("REGISTRY_MIRROR_BASE_PATH", MIRROR_BASE_PATH_DEFAULT)?,
        providers: path("REGISTRY_PROVIDERS_BASE_PATH", PROVIDERS_BASE_PATH_DEFAULT)?,
    };
    let named = [
        ("REGISTRY_MODULES_BASE_PATH", &paths.modules),
        ("REGISTRY_MIRROR_BASE_PATH", &paths.mirror),
        ("REGISTRY_PROVIDERS_BASE_PATH", &paths.providers),
    ];
    for (i, (a, pa)) in named.iter().enumerate() {
        for (b, pb) in &named[i + 1..] {
            if pa.starts_with(pb.as_str()) || pb.starts_with(pa.as_str()) {
                return Err(ConfigError(format!("{a} ({pa}) and {b} ({pb}) must not overlap")));
            }
        }
        let fixed =
            [UI_PATH, crate::oci::BASE_PATH, DISCOVERY_PATH, crate::mcp::PATH, crate::mcp::RESOURCE_METADATA_PATH];
        if let Some(taken) = fixed.iter().find(|f| pa.starts_with(**f) || f.starts_with(pa.as_str())) {
            return Err(ConfigError(format!("{a} ({pa}) must not overlap {taken}, which the registry serves itself")));
        }
    }
    Ok(paths)
}

/// `REGISTRY_HOSTNAME`, as a provider source address names a host.
fn hostname(env: &Env<'_>) -> Result<Option<String>, ConfigError> {
    let Some(h) = env.text("REGISTRY_HOSTNAME") else { return Ok(None) };
    match crate::address::ProviderAddress::parse(&h, "x", "x") {
        Ok(_) => Ok(Some(h)),
        Err(_) => Err(ConfigError(format!(
            "REGISTRY_HOSTNAME must be a lower-case host name with an optional :port, as in a provider source \
             address (registry.example.com), got {:?}",
            crate::address::printable(&h)
        ))),
    }
}

fn limits(env: &Env<'_>) -> Result<Limits, ConfigError> {
    let defaults = Limits::default();
    Ok(Limits {
        module_archive_bytes: env.bytes("REGISTRY_MAX_MODULE_ARCHIVE_BYTES", defaults.module_archive_bytes)?,
        provider_zip_bytes: env.bytes("REGISTRY_MAX_PROVIDER_ZIP_BYTES", defaults.provider_zip_bytes)?,
        unpacked_bytes: env.bytes("REGISTRY_MAX_UNPACKED_BYTES", defaults.unpacked_bytes)?,
        // 0 would refuse every archive: a mistake, not a setting.
        archive_entries: match env.bounded(
            "REGISTRY_MAX_ARCHIVE_ENTRIES",
            defaults.archive_entries,
            1_000_000,
            "entries",
        )? {
            0 => return Err(ConfigError("REGISTRY_MAX_ARCHIVE_ENTRIES must be 1 to 1000000, got 0".into())),
            n => n,
        },
        overwrite_published: env.flag("REGISTRY_ALLOW_OVERWRITE")?,
        provenance: crate::provenance::policy::Policies::parse(&env.text("REGISTRY_PROVENANCE").unwrap_or_default())
            .map_err(|e| {
                ConfigError(format!(
                    "REGISTRY_PROVENANCE: {e} (expected a JSON list of rules: [{{\"namespaces\": [\"acme\"], \
                     \"mode\": \"required\", \"signers\": [{{\"issuer\": \"https://token.actions.githubusercontent.com\", \
                     \"repositories\": [\"https://github.com/acme/*\"]}}]}}])"
                ))
            })?,
        semver: match env.text("REGISTRY_SEMVER_POLICY") {
            None => crate::index::SemverPolicy::default(),
            Some(raw) => crate::index::SemverPolicy::parse(&raw).map_err(|e| {
                ConfigError(format!(
                    "REGISTRY_SEMVER_POLICY: {e} (expected off, warn or enforce, then NAMESPACE=POLICY pairs: \
                     \"warn, acme=enforce\")"
                ))
            })?,
        },
    })
}

fn access(env: &Env<'_>) -> Result<crate::auth::Policy, ConfigError> {
    Ok(crate::auth::Policy {
        anonymous_modules: env.globs("REGISTRY_ANONYMOUS_MODULES")?,
        anonymous_providers: env.globs("REGISTRY_ANONYMOUS_PROVIDERS")?,
    })
}

/// The pull-through's upstreams; never this registry's own host (`hostname`).
fn upstream(env: &Env<'_>, hostname: Option<&str>) -> Result<UpstreamSettings, ConfigError> {
    let (hosts, endpoints) = match env.raw("REGISTRY_UPSTREAM_HOSTS") {
        None => (vec![UPSTREAM_HOST_DEFAULT.to_string()], Default::default()),
        Some(raw) => upstream_hosts(&raw)?,
    };
    if let Some(own) = hostname.filter(|own| hosts.iter().any(|h| h == own)) {
        return Err(ConfigError(format!(
            "REGISTRY_UPSTREAM_HOSTS holds this registry's own host {own:?} (REGISTRY_HOSTNAME): it would be its own upstream"
        )));
    }
    let timeout = match env.bounded("REGISTRY_UPSTREAM_TIMEOUT_SECONDS", 4, 8, "seconds")? {
        0 => return Err(ConfigError("REGISTRY_UPSTREAM_TIMEOUT_SECONDS must be 1 to 8 seconds, got 0".into())),
        secs => Duration::from_secs(secs),
    };
    Ok(UpstreamSettings {
        hosts,
        endpoints,
        versions_ttl: Duration::from_secs(env.bounded(
            "REGISTRY_UPSTREAM_VERSIONS_TTL_SECONDS",
            600,
            86_400,
            "seconds",
        )?),
        timeout,
        ca_file: env.text("REGISTRY_UPSTREAM_CA_FILE"),
    })
}

/// The modules pull-through's upstreams (`REGISTRY_UPSTREAM_MODULES`), git hosts
/// (`REGISTRY_UPSTREAM_GIT_HOSTS`) and archive bound; never this registry's own host.
fn upstream_modules(env: &Env<'_>, hostname: Option<&str>) -> Result<ModuleUpstreamSettings, ConfigError> {
    use crate::upstream::{
        UPSTREAM_GIT_HOST_DEFAULT, UPSTREAM_MODULE_HOSTS_DEFAULT, UPSTREAM_MODULE_MAX_BYTES_DEFAULT,
        UPSTREAM_MODULE_RETRY_AFTER_DEFAULT,
    };
    let var = "REGISTRY_UPSTREAM_MODULES";
    let raw = env.raw(var).unwrap_or_else(|| UPSTREAM_MODULE_HOSTS_DEFAULT.join(","));
    let (mut allowed, mut plain) = (Vec::new(), Vec::new());
    for item in raw.split(',').map(str::trim).filter(|h| !h.is_empty()) {
        let (address, endpoint) = match item.split_once('=') {
            Some((a, e)) => (a.trim(), Some(e)),
            None => (item, None),
        };
        let (host, namespace) = address.split_once('/').unwrap_or((address, "*"));
        let (host, namespace) = (host.trim(), namespace.trim());
        let glob_ok = !namespace.is_empty()
            && namespace.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'*' | b'?'));
        if !glob_ok {
            return Err(ConfigError(format!(
                "{var}: {:?} is not a namespace glob (HOST/NAMESPACE, NAMESPACE of letters, digits, -, _, * and ?)",
                crate::address::printable(namespace)
            )));
        }
        plain.push(match endpoint {
            Some(e) => format!("{host}={e}"),
            None => host.to_string(),
        });
        allowed.push((host.to_string(), namespace.to_string()));
    }
    let (hosts, _) = endpoint_list(var, &plain.join(","))?;
    debug_assert_eq!(hosts.len(), allowed.len());
    // A host's address is the host's, for every namespace of it: entries that disagree are
    // refused, not resolved by whichever comes last.
    let mut endpoints = BTreeMap::new();
    for item in &plain {
        let Some((host, endpoint)) = item.split_once('=') else { continue };
        let (_, named) = endpoint_list(var, item)?;
        let Some(address) = named.get(host.trim()) else { continue };
        if let Some(other) = endpoints.insert(host.trim().to_string(), address.clone())
            && other != *address
        {
            return Err(ConfigError(format!(
                "{var}: {host} is given two addresses ({other} and {}); give it one",
                crate::address::printable(endpoint)
            )));
        }
    }
    if let Some(own) = hostname.filter(|own| hosts.iter().any(|h| h == own)) {
        return Err(ConfigError(format!(
            "{var} holds this registry's own host {own:?} (REGISTRY_HOSTNAME): it would be its own upstream"
        )));
    }
    let git_var = "REGISTRY_UPSTREAM_GIT_HOSTS";
    let git_raw = env.raw(git_var).unwrap_or_else(|| UPSTREAM_GIT_HOST_DEFAULT.to_string());
    let (git_names, git_endpoints) = endpoint_list(git_var, &git_raw)?;
    let git_hosts = git_names
        .into_iter()
        .map(|h| {
            let origin = git_endpoints.get(&h).cloned().unwrap_or_else(|| format!("https://{h}"));
            (h, origin)
        })
        .collect();
    let max_bytes = match env.bounded(
        "REGISTRY_UPSTREAM_MODULE_MAX_BYTES",
        UPSTREAM_MODULE_MAX_BYTES_DEFAULT,
        64 << 20,
        "bytes",
    )? {
        0 => return Err(ConfigError("REGISTRY_UPSTREAM_MODULE_MAX_BYTES must be more than 0".into())),
        n => n,
    };
    let retry_after = match env.bounded(
        "REGISTRY_UPSTREAM_MODULE_RETRY_AFTER_SECONDS",
        UPSTREAM_MODULE_RETRY_AFTER_DEFAULT,
        300,
        "seconds",
    )? {
        0 => return Err(ConfigError("REGISTRY_UPSTREAM_MODULE_RETRY_AFTER_SECONDS must be more than 0".into())),
        n => n,
    };
    Ok(ModuleUpstreamSettings { allowed, endpoints, git_hosts, max_bytes, retry_after })
}

/// `REGISTRY_UPSTREAM_HOSTS`: `HOST` or `HOST=https://ADDRESS[:PORT]`, comma-separated.
fn upstream_hosts(raw: &str) -> Result<(Vec<String>, BTreeMap<String, String>), ConfigError> {
    endpoint_list("REGISTRY_UPSTREAM_HOSTS", raw)
}

/// A list of `HOST` or `HOST=https://ADDRESS[:PORT]`, comma-separated, read for `var`.
fn endpoint_list(var: &str, raw: &str) -> Result<(Vec<String>, BTreeMap<String, String>), ConfigError> {
    let (mut hosts, mut endpoints) = (Vec::new(), BTreeMap::new());
    for item in raw.split(',').map(str::trim).filter(|h| !h.is_empty()) {
        let (host, endpoint) = match item.split_once('=') {
            Some((host, endpoint)) => (host.trim(), Some(endpoint.trim())),
            None => (item, None),
        };
        if crate::address::ProviderAddress::parse(host, "x", "x").is_err() {
            return Err(ConfigError(format!(
                "{var} holds {:?}, not a lower-case host name (registry.terraform.io, or NAME=https://ADDRESS:PORT)",
                crate::address::printable(host)
            )));
        }
        if let Some(endpoint) = endpoint {
            let origin = endpoint.strip_prefix("https://").map(|a| a.trim_end_matches('/'));
            match origin {
                Some(address) if !address.is_empty() && !address.contains(['/', '?', '#', '@']) => {
                    endpoints.insert(host.to_string(), format!("https://{address}"));
                }
                _ => {
                    return Err(ConfigError(format!(
                        "{var}: {host} is reached at {:?}, not an https://ADDRESS[:PORT]",
                        crate::address::printable(endpoint)
                    )));
                }
            }
        }
        hosts.push(host.to_string());
    }
    Ok((hosts, endpoints))
}

fn parse_ttl(raw: &str) -> Result<Duration, ConfigError> {
    let secs: u64 = raw.trim().parse().map_err(|_| {
        ConfigError(format!("REGISTRY_PRESIGN_TTL_SECONDS must be a whole number of seconds, got {raw:?}"))
    })?;
    let ttl = Duration::from_secs(secs);
    if !(PRESIGN_TTL_MIN..=PRESIGN_TTL_MAX).contains(&ttl) {
        return Err(ConfigError(format!(
            "REGISTRY_PRESIGN_TTL_SECONDS must be between {} and {}, got {secs}",
            PRESIGN_TTL_MIN.as_secs(),
            PRESIGN_TTL_MAX.as_secs()
        )));
    }
    Ok(ttl)
}

fn base_path(var: &str, raw: Option<String>, default: &str) -> Result<String, ConfigError> {
    let Some(raw) = raw else {
        return Ok(default.into());
    };
    let ok = raw.len() >= 2
        && raw.len() <= 128
        && raw.starts_with('/')
        && raw.ends_with('/')
        && !raw.contains("//")
        && raw.split('/').all(|s| s != "." && s != "..")
        && raw.bytes().all(|b| b.is_ascii_alphanumeric() || b"/-_.".contains(&b));
    if !ok {
        return Err(ConfigError(format!(
            "{var} must be a path like /v1/modules/ (starts and ends with '/', letters, digits, '-', '_', '.'), got {raw:?}"
        )));
    }
    Ok(raw)
}

#[cfg(test)]
mod tests;
