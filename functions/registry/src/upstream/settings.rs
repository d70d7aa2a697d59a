//! What configures the pull-through mirror's upstreams, read by `config` from the environment.

use std::time::Duration;

/// Where the network mirror may fetch a provider the bucket does not have (`upstream`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamSettings {
    /// `REGISTRY_UPSTREAM_HOSTS`: comma-separated provider hostnames (`registry.terraform.io`,
    /// the default when unset; empty turns the pull-through off). A mirror request for a
    /// provider of one of these hosts that the bucket lacks is answered from that host's
    /// providers.v1 service, and its packages are copied into the bucket.
    pub hosts: Vec<String>,
    /// Hosts reached at another address than their name (`HOST=https://ADDRESS[:PORT]` in
    /// `REGISTRY_UPSTREAM_HOSTS`): an internal endpoint of the public registry, or a registry
    /// on a port. Provider addresses keep naming HOST: the terraform CLI cannot ask a network
    /// mirror for a provider whose host has a port ("first path segment in URL cannot contain
    /// colon"), so such an upstream needs a name without one.
    pub endpoints: std::collections::BTreeMap<String, String>,
    /// `REGISTRY_UPSTREAM_VERSIONS_TTL_SECONDS` (default 600, at most 86400): how long an
    /// upstream's version list kept in the bucket is used without asking the upstream again;
    /// new upstream releases appear after this.
    pub versions_ttl: Duration,
    /// `REGISTRY_UPSTREAM_TIMEOUT_SECONDS` (default 4, 1 to 8): the longest one upstream
    /// request may take on the request path (the request's whole budget is `REQUEST_BUDGET`).
    pub timeout: Duration,
    /// `REGISTRY_UPSTREAM_CA_FILE`: PEM certificates trusted for upstreams besides the
    /// system's roots (a private upstream, or the local registry's `make dev UPSTREAM=`).
    pub ca_file: Option<String>,
}

/// The public registry: the upstream when `REGISTRY_UPSTREAM_HOSTS` is unset.
pub const UPSTREAM_HOST_DEFAULT: &str = "registry.terraform.io";

impl UpstreamSettings {
    /// No upstream: the pull-through is off.
    pub fn off() -> Self {
        UpstreamSettings {
            hosts: Vec::new(),
            endpoints: Default::default(),
            versions_ttl: Duration::from_secs(600),
            timeout: Duration::from_secs(4),
            ca_file: None,
        }
    }
}

/// Where the modules pull-through may fetch a module the bucket holds no copy of, read by
/// `config` from the environment. Copies already in the bucket (`layout::UPSTREAM_MODULES_PREFIX`)
/// are served whatever this says, so an air-gap bundle synced into the bucket needs none of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleUpstreamSettings {
    /// `REGISTRY_UPSTREAM_MODULES`: comma-separated `HOST[/NAMESPACE][=https://ADDRESS[:PORT]]`,
    /// NAMESPACE a glob (`*` when left out). Unset: `registry.terraform.io` and
    /// `registry.opentofu.org`, every namespace; empty: nothing is fetched.
    pub allowed: Vec<(String, String)>,
    /// Hosts reached at another address than their name (as `UpstreamSettings::endpoints`).
    pub endpoints: std::collections::BTreeMap<String, String>,
    /// `REGISTRY_UPSTREAM_GIT_HOSTS`: comma-separated `HOST[=https://ADDRESS[:PORT]]` (default
    /// `github.com`): the git hosts whose archives a module location may name
    /// (`git::https://HOST/OWNER/REPO?ref=REF`), fetched as
    /// `https://ADDRESS/OWNER/REPO/archive/REF.tar.gz` (GitHub and GitHub Enterprise's archive
    /// URL; ADDRESS is HOST when not given).
    pub git_hosts: std::collections::BTreeMap<String, String>,
    /// `REGISTRY_UPSTREAM_MODULE_MAX_BYTES` (default 32 MiB, at most 64 MiB): the largest
    /// archive copied while the CLI waits. A larger one is handed to the puller
    /// (`upstream::module_pull`), which copies up to `UPSTREAM_MODULE_PULL_MAX_BYTES`.
    pub max_bytes: u64,
    /// `REGISTRY_UPSTREAM_MODULE_RETRY_AFTER_SECONDS` (default 20, 1 to 300): the
    /// `Retry-After` of a download the puller is copying. Terraform and OpenTofu wait that long
    /// and ask once more, so it should cover the puller's copy of the largest archive expected.
    pub retry_after: u64,
}

/// The module registries fetched from when `REGISTRY_UPSTREAM_MODULES` is unset.
pub const UPSTREAM_MODULE_HOSTS_DEFAULT: [&str; 2] = ["registry.terraform.io", "registry.opentofu.org"];
/// The git host whose archives a module location may name when `REGISTRY_UPSTREAM_GIT_HOSTS`
/// is unset.
pub const UPSTREAM_GIT_HOST_DEFAULT: &str = "github.com";
/// Default of `ModuleUpstreamSettings::max_bytes`.
pub const UPSTREAM_MODULE_MAX_BYTES_DEFAULT: u64 = 32 << 20;
/// Default of `ModuleUpstreamSettings::retry_after`: the puller copies an archive of a few
/// hundred MiB in that time.
pub const UPSTREAM_MODULE_RETRY_AFTER_DEFAULT: u64 = 20;
/// Most bytes an archive the pull-through copies may unpack to, by the modules function or the
/// puller (below `REGISTRY_MAX_UNPACKED_BYTES` when that is larger): unpacking and repacking
/// must fit the request's 25 s and the functions' `/tmp`. Module sources unpack to a few MiB.
pub const UPSTREAM_MODULE_UNPACKED_MAX: u64 = 256 << 20;
/// The largest archive the puller copies for the modules pull-through (in its 15 minutes,
/// memory and `/tmp`: `puller_memory_mb` must hold it about twice, archive and repacked copy).
/// Larger ones only the air-gap bundle copies.
pub const UPSTREAM_MODULE_PULL_MAX_BYTES: u64 = 256 << 20;
/// The largest archive the air-gap bundle copies (`registry-local bundle`, on a machine
/// with time and memory to spare, not a request's 25 s).
pub const BUNDLE_MAX_BYTES: u64 = 1 << 30;

impl ModuleUpstreamSettings {
    /// Nothing fetched: only copies already in the bucket are served.
    pub fn off() -> Self {
        ModuleUpstreamSettings {
            allowed: Vec::new(),
            endpoints: Default::default(),
            git_hosts: [(UPSTREAM_GIT_HOST_DEFAULT.to_string(), format!("https://{UPSTREAM_GIT_HOST_DEFAULT}"))].into(),
            max_bytes: UPSTREAM_MODULE_MAX_BYTES_DEFAULT,
            retry_after: UPSTREAM_MODULE_RETRY_AFTER_DEFAULT,
        }
    }

    /// The registry hosts anything may be fetched from.
    pub fn hosts(&self) -> Vec<String> {
        let mut hosts: Vec<String> = Vec::new();
        for (host, _) in &self.allowed {
            if !hosts.contains(host) {
                hosts.push(host.clone());
            }
        }
        hosts
    }

    /// Whether modules of `namespace` at `host` may be fetched.
    pub fn allows(&self, host: &str, namespace: &str) -> bool {
        self.allowed.iter().any(|(h, glob)| h == host && crate::glob::glob(glob, namespace))
    }
}
