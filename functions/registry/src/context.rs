//! What every route is handed: the configuration, the reader (manifests and presigned URLs),
//! the verifier (who is asking, and may they), and the pull-through mirror's upstreams. Built
//! once per process; routes hold no state of their own.

#[cfg(feature = "aws")]
use std::sync::Arc;

use crate::auth::{Issuers, Verifier};
use crate::clock::Monotonic;
use crate::config::Config;
use crate::error::Error;
use crate::reader::Reader;

/// The shared state of one process's routes.
pub struct Context<S> {
    /// Loaded once at start.
    pub config: Config,
    /// Storage, with the warm container's manifest cache.
    pub reader: Reader<S>,
    /// The access decision, with the token store and issuers' keys it keeps.
    pub verifier: Verifier,
    /// Where download records go (`usage`): the log in the Lambdas, the aggregator's channel
    /// in the local registry; off unless the app's builder names one.
    pub usage: crate::usage::Sink,
    /// The mirror's upstream registries (pull-through); `None`: off.
    #[cfg(feature = "aws")]
    pub upstream: Option<Arc<crate::upstream::Upstream>>,
    /// The modules pull-through's upstream registries; `None`: nothing is fetched (copies in
    /// the bucket are still served).
    #[cfg(feature = "aws")]
    pub module_upstream: Option<Arc<crate::upstream::modules::ModuleUpstream>>,
}

/// Which upstream clients a process builds: only those of the services it serves.
#[derive(Debug, Clone, Copy, Default)]
pub struct Upstreams {
    /// The mirror's (providers).
    pub providers: bool,
    /// The modules pull-through's.
    pub modules: bool,
}

impl<S: crate::storage::Storage> Context<S> {
    /// The context for `config` and `storage`, with the clients its configuration asks for
    /// built once: the OpenID Connect issuers' key sets where any are configured, and the
    /// upstream registries' that `upstreams` names (those of the services the process serves).
    /// All read time from `clock`. Fails on a CA file that cannot be read.
    pub fn new(config: Config, storage: S, upstreams: Upstreams, clock: Monotonic) -> Result<Self, Error> {
        let reader = Reader::new(storage, config.manifest_cache_bytes, config.manifest_cache_ttl, config.presign_ttl);
        let issuers = Issuers::new(&config.oidc_issuers, config.oidc_ca_file.as_deref(), clock.clone())?;
        let verifier = Verifier::new(config.access.clone(), config.tokens_cache, issuers);
        #[cfg(feature = "aws")]
        let upstream = match upstreams.providers {
            true => crate::upstream::Upstream::new(&config.upstream)?.map(|u| Arc::new(u.with_clock(clock.clone()))),
            false => None,
        };
        #[cfg(feature = "aws")]
        let module_upstream = match upstreams.modules {
            true => crate::upstream::modules::ModuleUpstream::new(&config.upstream_modules, &config.upstream)?
                .map(|u| Arc::new(u.with_clock(clock))),
            false => None,
        };
        #[cfg(not(feature = "aws"))]
        let _ = (upstreams, clock);
        Ok(Context {
            config,
            reader,
            verifier,
            usage: crate::usage::Sink::Off,
            #[cfg(feature = "aws")]
            upstream,
            #[cfg(feature = "aws")]
            module_upstream,
        })
    }

    /// The storage the reader reads.
    pub fn storage(&self) -> &S {
        &self.reader.storage
    }

    /// The upstream to ask for `provider`, if its host is one.
    #[cfg(feature = "aws")]
    pub(crate) fn upstream_for(
        &self,
        provider: &crate::address::ProviderAddress,
    ) -> Option<Arc<crate::upstream::Upstream>> {
        self.upstream.as_ref().filter(|u| u.allows(&provider.hostname)).cloned()
    }
}
