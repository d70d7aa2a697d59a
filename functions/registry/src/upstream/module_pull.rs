//! The modules pull-through's hand-off to the puller: a version whose archive is larger than
//! the modules function copies while the CLI waits (`REGISTRY_UPSTREAM_MODULE_MAX_BYTES`) is
//! recorded (`request`); that write invokes the puller, which copies it the same way
//! (`module_copy::copy`, with its own larger limit) or records why it could not (`pull`).
//! Meanwhile downloads answer 503 with `Retry-After` (`state`), which Terraform's registry
//! client waits out and asks again; once the pin is written they are served as any copy.

use serde::Serialize;

use crate::address::UpstreamModule;
use crate::archive::Bounds;
use crate::error::{Error, chain};
use crate::layout;
use crate::manifest::CONTENT_TYPE_JSON;
use crate::storage::{Precondition, Storage};

use super::module_copy::{self, Copied};
use super::module_records::{ModulePin, ModulePull, ModulePullFailure, PullState};
use super::modules::ModuleUpstream;
use super::{ModuleUpstreamSettings, UpstreamSettings};

/// What one module pull did, for the puller's answer and log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PullReport {
    /// Copied and pinned now, with this SHA-256.
    Copied(String),
    /// Already pinned: nothing fetched.
    Present,
    /// Not copied, for this reason (recorded beside the pull record).
    Failed(String),
}

/// The module upstreams as the puller reaches them: with its limit
/// (`UPSTREAM_MODULE_PULL_MAX_BYTES`), not the request path's.
pub fn puller_upstream(
    settings: &ModuleUpstreamSettings,
    shared: &UpstreamSettings,
) -> Result<Option<ModuleUpstream>, Error> {
    let settings = ModuleUpstreamSettings { max_bytes: super::UPSTREAM_MODULE_PULL_MAX_BYTES, ..settings.clone() };
    ModuleUpstream::new(&settings, shared)
}

/// Where `version` of `module` stands with the puller (no pin yet). Records the modules
/// role may not see (S3's AccessDenied for a missing key, without `s3:ListBucket`) are absent.
pub async fn state<S: Storage>(
    storage: &S,
    module: &UpstreamModule,
    version: &semver::Version,
    now: i64,
) -> Result<PullState, Error> {
    let (pull, failure) = tokio::join!(
        read::<S, ModulePull>(storage, layout::upstream_module_pull(module, version)),
        read::<S, ModulePullFailure>(storage, layout::upstream_module_pull_failure(module, version)),
    );
    Ok(PullState::of(pull?.as_ref(), failure?.as_ref(), now))
}

/// Hand `version` of `module` to the puller (its S3 notification is this write).
pub async fn request<S: Storage>(
    storage: &S,
    module: &UpstreamModule,
    version: &semver::Version,
    now: i64,
) -> Result<(), Error> {
    let record = ModulePull { module: module.to_string(), version: version.to_string(), requested_at: now };
    let key = layout::upstream_module_pull(module, version);
    storage.put(&key, crate::manifest::to_json(&record)?, CONTENT_TYPE_JSON, Precondition::None).await?;
    tracing::info!(%module, %version, "upstream module too large to copy while the CLI waits: handed to the puller");
    Ok(())
}

/// The answer to a download of a version the puller is copying, asked for at `requested_at`:
/// retry after `retry_after` seconds (Terraform's and OpenTofu's registry client, go-retryablehttp,
/// waits that long for a 503 and asks once more).
pub fn pending(
    module: &UpstreamModule,
    version: &semver::Version,
    requested_at: i64,
    now: i64,
    retry_after: u64,
) -> Error {
    Error::Pending {
        what: format!(
            "{module} {version}: its archive is larger than the registry copies while the CLI waits, so it is \
             being copied in the background (asked {} s ago); retry in {retry_after} s",
            (now - requested_at).max(0)
        ),
        retry_after,
    }
}

/// The puller's copy of the version the module pull record at `key` names (`upstream` built
/// with the puller's limit). An `Err` is worth Lambda's retry (storage); what the upstream
/// answers, however it fails, is recorded beside the pull record and reported.
pub async fn pull<S: Storage>(
    storage: &S,
    upstream: &ModuleUpstream,
    key: &str,
    bounds: Bounds,
) -> Result<PullReport, Error> {
    let Some((module, version)) = layout::upstream_module_pull_release(key) else {
        return Err(Error::BadRequest(format!("{:?} is not a module pull record", crate::address::printable(key))));
    };
    if read::<S, ModulePin>(storage, layout::upstream_module_pin(&module, &version)).await?.is_some() {
        return Ok(PullReport::Present);
    }
    let why = if !upstream.allows(&module) {
        format!("{module}: its host or namespace is not in REGISTRY_UPSTREAM_MODULES")
    } else {
        match module_copy::copy(storage, upstream, &module, &version, bounds).await {
            Ok(Copied::Pinned(pin)) => return Ok(PullReport::Copied(pin.sha256)),
            Ok(Copied::NoSuchVersion) => format!("upstream registry {}: {module} {version} is gone", module.hostname),
            Ok(Copied::LargerThan(max)) => format!(
                "upstream registry {}: {module} {version}: the archive is larger than {max} bytes, the most the \
                 puller copies; copy it with the air-gap bundle (docs/UPSTREAM-MODULES.md)",
                module.hostname
            ),
            Err(Error::BadGateway(why)) => why,
            Err(e) => return Err(e),
        }
    };
    tracing::error!(%module, %version, why, "module pull failed");
    let failure = ModulePullFailure {
        module: module.to_string(),
        version: version.to_string(),
        why: why.clone(),
        failed_at: crate::clock::now_unix(),
    };
    let failure_key = layout::upstream_module_pull_failure(&module, &version);
    storage.put(&failure_key, crate::manifest::to_json(&failure)?, CONTENT_TYPE_JSON, Precondition::None).await?;
    Ok(PullReport::Failed(why))
}

/// The record at `key`, if there is one (AccessDenied is absence, as above); unreadable:
/// `Error::Internal`.
async fn read<S: Storage, T: serde::de::DeserializeOwned>(storage: &S, key: String) -> Result<Option<T>, Error> {
    match storage.get(&key).await {
        Ok(Some(object)) => serde_json::from_slice(&object.bytes)
            .map(Some)
            .map_err(|e| Error::internal_from(format!("the record {key}"), e)),
        Ok(None) | Err(Error::Forbidden(_)) => Ok(None),
        Err(e) => {
            tracing::warn!(key, error = %chain(&e), "module pull record not read");
            Err(e)
        }
    }
}
