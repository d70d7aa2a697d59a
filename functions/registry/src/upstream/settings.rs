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
