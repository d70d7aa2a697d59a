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

/// Where a version with no pin stands with the puller, and the pull record read for it (to
/// replace only that one: `request`).
#[derive(Debug, Clone)]
pub struct Standing {
    /// From the pull record and the failure.
    pub state: PullState,
    /// The pull record's ETag, if there is one.
    pull_etag: Option<String>,
}

/// Where `version` of `module` stands with the puller (no pin yet). Records the modules
/// role may not see (S3's AccessDenied for a missing key, without `s3:ListBucket`) are absent.
pub async fn state<S: Storage>(
    storage: &S,
    module: &UpstreamModule,
    version: &semver::Version,
    now: i64,
) -> Result<Standing, Error> {
    let (pull, failure) = tokio::join!(
        read::<S, ModulePull>(storage, layout::upstream_module_pull(module, version)),
        read::<S, ModulePullFailure>(storage, layout::upstream_module_pull_failure(module, version)),
    );
    let ((pull, pull_etag), (failure, _)) = (pull?, failure?);
    Ok(Standing { state: PullState::of(pull.as_ref(), failure.as_ref(), now), pull_etag })
}

/// Hand `version` of `module` to the puller (its S3 notification is this write), replacing
/// only the pull record `standing` read: of first downloads racing, one writes it and wakes
/// the puller once; the others find it written (`Conflict`) and answer the same.
pub async fn request<S: Storage>(
    storage: &S,
    module: &UpstreamModule,
    version: &semver::Version,
    now: i64,
    standing: &Standing,
) -> Result<(), Error> {
    let record = ModulePull { module: module.to_string(), version: version.to_string(), requested_at: now };
    let key = layout::upstream_module_pull(module, version);
    let condition = Precondition::replacing(standing.pull_etag.as_deref());
    match storage.put(&key, crate::manifest::to_json(&record)?, CONTENT_TYPE_JSON, condition).await {
        Ok(()) => {
            tracing::info!(%module, %version, "upstream module too large to copy while the CLI waits: handed to the puller");
            Ok(())
        }
        Err(Error::Conflict(_)) => Ok(()),
        Err(e) => Err(e),
    }
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
            now.saturating_sub(requested_at).max(0)
        ),
        retry_after,
    }
}

/// The longest a module pull may take (fetch, check, store), inside the puller's 15 minutes: a
/// host trickling bytes is cut off and recorded, not retried by Lambda three times over.
pub const PULL_DEADLINE: std::time::Duration = std::time::Duration::from_secs(600);

/// The puller's copy of the version the module pull record at `key` names (`upstream` built
/// with the puller's limit), checked within `module_copy::bounds` of `configured`. Anything the
/// upstream answers, a copy over `PULL_DEADLINE`, a check that broke, and a store that still
/// failed after its retries are recorded beside the pull record and reported, so the back-off
/// starts (a retry by Lambda would fetch the whole archive again, and one that fails the same way
/// every time would be handed back every 10 minutes, for good). An `Err` is what cannot be
/// recorded either (the storage down, access denied), worth Lambda's retry.
pub async fn pull<S: Storage>(
    storage: &S,
    upstream: &ModuleUpstream,
    key: &str,
    configured: Bounds,
) -> Result<PullReport, Error> {
    let bounds = module_copy::bounds(configured);
    let Some((module, version)) = layout::upstream_module_pull_release(key) else {
        return Err(Error::BadRequest(format!("{:?} is not a module pull record", crate::address::printable(key))));
    };
    if read::<S, ModulePin>(storage, layout::upstream_module_pin(&module, &version)).await?.0.is_some() {
        return Ok(PullReport::Present);
    }
    let why = if !upstream.allows(&module) {
        format!("{module}: its host or namespace is not in REGISTRY_UPSTREAM_MODULES")
    } else {
        let copied =
            tokio::time::timeout(PULL_DEADLINE, module_copy::copy(storage, upstream, &module, &version, bounds));
        match copied.await {
            Ok(Ok(Copied::Pinned(pin))) => return Ok(PullReport::Copied(pin.sha256)),
            Ok(Ok(Copied::NoSuchVersion)) => {
                format!("upstream registry {}: {module} {version} is gone", module.hostname)
            }
            Ok(Ok(Copied::LargerThan(max))) => format!(
                "upstream registry {}: {module} {version}: the archive is larger than {max} bytes, the most the \
                 puller copies; copy it with the air-gap bundle (docs/UPSTREAM-MODULES.md)",
                module.hostname
            ),
            Ok(Err(Error::BadGateway(why))) => why,
            Ok(Err(e @ Error::Internal { .. })) => {
                tracing::error!(%module, %version, error = %chain(&e), "module pull broke");
                format!(
                    "upstream registry {}: {module} {version}: the copy failed (the puller's log says why)",
                    module.hostname
                )
            }
            Ok(Err(e @ Error::Unavailable { .. })) => {
                tracing::error!(%module, %version, error = %chain(&e), "module pull could not store its copy");
                format!(
                    "upstream registry {}: {module} {version}: the copy could not be stored (the storage was \
                     unavailable; the puller's log says why)",
                    module.hostname
                )
            }
            Ok(Err(e)) => return Err(e),
            Err(_) => format!(
                "upstream registry {}: {module} {version}: the copy took longer than {} s",
                module.hostname,
                PULL_DEADLINE.as_secs()
            ),
        }
    };
    record_failure(storage, &module, &version, why).await
}

/// Record why the pull of `version` failed, counting the failures in a row.
async fn record_failure<S: Storage>(
    storage: &S,
    module: &UpstreamModule,
    version: &semver::Version,
    why: String,
) -> Result<PullReport, Error> {
    let key = layout::upstream_module_pull_failure(module, version);
    let now = crate::clock::now_unix();
    let previous = read::<S, ModulePullFailure>(storage, key.clone()).await?.0;
    let failures = ModulePullFailure::next_count(previous.as_ref(), now);
    tracing::error!(%module, %version, why, failures, "module pull failed");
    let failure = ModulePullFailure {
        module: module.to_string(),
        version: version.to_string(),
        why: why.clone(),
        failed_at: now,
        failures,
    };
    storage.put(&key, crate::manifest::to_json(&failure)?, CONTENT_TYPE_JSON, Precondition::None).await?;
    Ok(PullReport::Failed(why))
}

/// The record at `key` and its ETag, if there is one (AccessDenied is absence, as above). An
/// unreadable record (a format from another release) is read as none, with its ETag, so the
/// next write replaces it instead of every download failing on it.
async fn read<S: Storage, T: serde::de::DeserializeOwned>(
    storage: &S,
    key: String,
) -> Result<(Option<T>, Option<String>), Error> {
    match storage.get(&key).await {
        Ok(Some(object)) => match serde_json::from_slice(&object.bytes) {
            Ok(record) => Ok((Some(record), Some(object.etag))),
            Err(e) => {
                tracing::warn!(key, error = %e, "unreadable module pull record: read as none");
                Ok((None, Some(object.etag)))
            }
        },
        Ok(None) | Err(Error::Forbidden(_)) => Ok((None, None)),
        Err(e) => {
            tracing::warn!(key, error = %chain(&e), "module pull record not read");
            Err(e)
        }
    }
}
