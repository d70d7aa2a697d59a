//! The modules pull-through: modules.v1 of an upstream registry (`registry.terraform.io`)
//! answered by this registry, which the CLI's `host` block sends there without a `source`
//! line changed. A version's first download copies its archive into the bucket
//! (`layout::UPSTREAM_MODULES_PREFIX`) and pins its SHA-256; from then on it is served from the
//! bucket, presigned, as any module, whether the upstream answers or not, and bytes that
//! differ from the pin are refused and recorded, never served. Copies laid out by an air-gap
//! bundle are served the same way with no upstream at all. `docs/UPSTREAM-MODULES.md` tells
//! how to use it; `docs/HOW-IT-WORKS.md` ("Modules pull-through") how it works.

use http::StatusCode;
use serde_json::json;

use crate::address::UpstreamModule;
use crate::context::Context;
use crate::error::Error;
use crate::exchange::{NO_CACHE, Reply};
use crate::layout::{self, Wanted};
use crate::storage::Storage;
use crate::upstream::module_records::{ModuleIndex, ModulePin};

use super::{not_found, optional};

/// `GET …/upstream/HOST/NS/NAME/SYSTEM/versions`: the upstream's versions (its list kept for
/// `REGISTRY_UPSTREAM_VERSIONS_TTL_SECONDS`) and every version copied. Upstream down: what is
/// kept, marked stale; nothing kept: 502 naming the upstream.
pub(super) async fn versions<S: Storage>(
    ctx: &Context<S>,
    module: &UpstreamModule,
    absent: impl Fn() -> Error,
    deadline: tokio::time::Instant,
) -> Result<Reply, Error> {
    let key = layout::upstream_module_index(module);
    let kept = optional(ctx.reader.manifest(&key, ModuleIndex::parse, |_| false, not_found, deadline).await)?;
    #[cfg(feature = "aws")]
    let (index, stale, upstream_stale) = fetching::versions(ctx, module, kept).await?;
    #[cfg(not(feature = "aws"))]
    let (index, stale) = match kept {
        Some(kept) => ((*kept.value).clone(), kept.stale),
        None => return Err(absent()),
    };
    if index.all().is_empty() {
        return Err(absent());
    }
    let reply = Reply::json(StatusCode::OK, &index.response()).header("cache-control", NO_CACHE).etag().stale(stale);
    #[cfg(feature = "aws")]
    let reply = reply.upstream_stale(upstream_stale);
    Ok(reply)
}

/// `GET …/upstream/HOST/NS/NAME/SYSTEM/VERSION/download`: the pinned copy, presigned, with
/// its SHA-256 for go-getter to check; a version never copied is copied first (the CLI waits),
/// or, larger than that allows, by the puller (503 with `Retry-After` meanwhile).
pub(super) async fn download<S: Storage>(
    ctx: &Context<S>,
    module: &UpstreamModule,
    version: &semver::Version,
    absent: impl Fn() -> Error,
    deadline: tokio::time::Instant,
) -> Result<Reply, Error> {
    let key = layout::upstream_module_pin(module, version);
    let pin = optional(ctx.reader.manifest(&key, ModulePin::parse, |_| false, not_found, deadline).await)?;
    let (pin, stale) = match pin {
        Some(pin) => ((*pin.value).clone(), pin.stale),
        #[cfg(feature = "aws")]
        None => (fetching::copy(ctx, module, version, &absent, deadline).await?, false),
        #[cfg(not(feature = "aws"))]
        None => return Err(absent()),
    };
    if pin.module != module.to_string() || pin.version != version.to_string() {
        return Err(Error::internal(format!("the pin of {module} {version} names {} {}", pin.module, pin.version)));
    }
    let archive = layout::upstream_module_archive(module, version, &pin.sha256, &pin.archive);
    let wanted = Wanted::UpstreamModuleArchive { module, version, sha256: &pin.sha256 };
    let url = ctx.reader.presign(&archive, None, wanted).await?;
    let url = super::with_checksum(url, &pin.sha256)?;
    // As for a published module: a 200 with both forms works for every Terraform and OpenTofu.
    Ok(Reply::json(StatusCode::OK, &json!({ "location": url }))
        .header("x-terraform-get", url)
        .header("cache-control", "no-store")
        .stale(stale))
}

/// What asks the upstream: only where the process has a module upstream client (feature `aws`).
#[cfg(feature = "aws")]
mod fetching {
    use std::sync::Arc;

    use crate::address::UpstreamModule;
    use crate::context::Context;
    use crate::error::{Error, chain};
    use crate::reader::Fetched;
    use crate::storage::Storage;
    use crate::upstream::module_copy::{self, Copied};
    use crate::upstream::module_pull;
    use crate::upstream::module_records::{ModuleIndex, ModulePin, PullState};
    use crate::upstream::modules::ModuleUpstream;

    fn upstream_for<S>(ctx: &Context<S>, module: &UpstreamModule) -> Option<Arc<ModuleUpstream>> {
        ctx.module_upstream.as_ref().filter(|u| u.allows(module)).cloned()
    }

    /// The index to answer with: the kept one while fresh (or when nothing may be fetched),
    /// else the upstream's list (kept for next time) with the copied versions; through an
    /// upstream failure, the kept one. `(index, stale, upstream_stale)`.
    pub(super) async fn versions<S: Storage>(
        ctx: &Context<S>,
        module: &UpstreamModule,
        kept: Option<Fetched<ModuleIndex>>,
    ) -> Result<(ModuleIndex, bool, bool), Error> {
        let now = crate::clock::now_unix();
        let (upstream, kept) = match (upstream_for(ctx, module), kept) {
            (Some(u), Some(kept)) if kept.value.fresh(now, u.versions_ttl()) => {
                return Ok(((*kept.value).clone(), kept.stale, false));
            }
            (Some(u), kept) => (u, kept),
            // Nothing may be fetched: only the copies, or the CLI would pick a version it
            // cannot have.
            (None, Some(kept)) => {
                let copies = ModuleIndex { versions: Default::default(), ..(*kept.value).clone() };
                return Ok((copies, kept.stale, false));
            }
            (None, None) => return Ok((ModuleIndex::default(), false, false)),
        };
        match upstream.versions(module).await {
            Ok(listed) => {
                let copied = kept.as_ref().map(|k| k.value.copied.clone()).unwrap_or_default();
                // "No such module" is not kept in the bucket; this instance answers it absent for
                // `ABSENT_FOR` without asking (`ModuleUpstream::versions`).
                let Some(listed) = listed.filter(|l| !l.is_empty()) else {
                    return Ok((ModuleIndex { fetched_at: 0, versions: Default::default(), copied }, false, false));
                };
                let index = ModuleIndex { fetched_at: now, versions: listed, copied };
                module_copy::keep_index(ctx.storage(), module, |old| ModuleIndex {
                    fetched_at: now,
                    versions: index.versions.clone(),
                    copied: old.copied,
                })
                .await;
                Ok((index, false, false))
            }
            Err(e) => match kept {
                Some(kept) => {
                    tracing::warn!(%module, error = %chain(&e), "upstream failed; serving the versions kept in the bucket");
                    Ok(((*kept.value).clone(), kept.stale, true))
                }
                None => Err(e),
            },
        }
    }

    /// The pin of `version`, if one is written (AccessDenied for a missing key, to a role without
    /// `s3:ListBucket`, is none).
    async fn pinned<S: Storage>(
        ctx: &Context<S>,
        module: &UpstreamModule,
        version: &semver::Version,
    ) -> Result<Option<ModulePin>, Error> {
        match ctx.storage().get(&crate::layout::upstream_module_pin(module, version)).await {
            Ok(Some(object)) => ModulePin::parse(&object.bytes).map(Some),
            Ok(None) | Err(Error::Forbidden(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Copy a version never copied (`module_copy::copy`), if its host and namespace may be
    /// fetched from and the upstream lists it (so no caller can make copies of names the
    /// upstream would answer for anyway, as `1.0.0+anything`). A copy that failed is not tried
    /// again for `ModuleUpstream::REFUSED_FOR`: callers cannot make the registry fetch a
    /// refused archive again and again. An archive larger than this function copies while the
    /// CLI waits goes to the puller (`module_pull`): 503 and `Retry-After` until it is pinned.
    pub(super) async fn copy<S: Storage>(
        ctx: &Context<S>,
        module: &UpstreamModule,
        version: &semver::Version,
        absent: impl Fn() -> Error,
        deadline: tokio::time::Instant,
    ) -> Result<ModulePin, Error> {
        let upstream = upstream_for(ctx, module).ok_or_else(&absent)?;
        // First downloads of one version at once: one copies (or hands it to the puller), the
        // others wait for it, then find its pin (or its pull record) and fetch nothing.
        let _turn = upstream.one_copy_at_a_time(module, version).await;
        if let Some(pin) = pinned(ctx, module, version).await? {
            return Ok(pin);
        }
        let key = crate::layout::upstream_module_index(module);
        let kept = super::optional(
            ctx.reader.manifest(&key, ModuleIndex::parse, |_| false, super::not_found, deadline).await,
        )?;
        let now = crate::clock::now_unix();
        // Both reads at once: the first download is the one the CLI waits longest for.
        let (listed, state) =
            tokio::join!(versions(ctx, module, kept), module_pull::state(ctx.storage(), module, version, now));
        let (index, _, _) = listed?;
        if !index.versions.contains(&version.to_string()) {
            return Err(absent());
        }
        if let Some(refused) = upstream.recently_refused(module, version) {
            return Err(refused);
        }
        let standing = state?;
        match &standing.state {
            PullState::NotAsked => {}
            PullState::Copying(at) => {
                return Err(module_pull::pending(module, version, *at, now, upstream.retry_after()));
            }
            PullState::Failed(why) => return Err(Error::BadGateway(why.clone())),
        }
        let bounds = module_copy::bounds(ctx.config.archive_bounds());
        match module_copy::copy(ctx.storage(), &upstream, module, version, bounds).await {
            Ok(Copied::Pinned(pin)) => Ok(pin),
            Ok(Copied::NoSuchVersion) => Err(absent()),
            Ok(Copied::LargerThan(_)) => {
                module_pull::request(ctx.storage(), module, version, now, &standing).await?;
                Err(module_pull::pending(module, version, now, now, upstream.retry_after()))
            }
            Err(e) => {
                upstream.refuse_for_a_while(module, version, &e);
                Err(e)
            }
        }
    }
}
