//! The modules pull-through on the publish log: a version's pin (its first copy, the only bytes
//! ever served for it) logged as a publish of its archive, and added to the catalog; bytes
//! refused for differing from a pin logged as a rejection. The modules function writes both records (it may not write the log);
//! their S3 events bring them here.

use super::indexer::Indexer;
use crate::address::UpstreamModule;
use crate::error::{Error, chain};
use crate::layout::{self, UpstreamModuleRecord};
use crate::manifest::CONTENT_TYPE_JSON;
use crate::publish_log::{Action, Change};
use crate::retry::{self, Backoff};
use crate::storage::Precondition;
use crate::storage::Storage;
use crate::upstream::module_records::{ModulePin, ModulePins, ModuleRefusal};

/// Writers of one module's pins: the indexer's passes over that module's pins, few at once.
const PINS_RETRY: Backoff =
    Backoff { attempts: 20, first: std::time::Duration::from_millis(10), max: std::time::Duration::from_millis(500) };

/// Put the record at `key` on the publish log; `false` when it is gone (deleted since), or the
/// key is no record.
pub(super) async fn log_record<S: Storage>(indexer: &Indexer<'_, S>, key: &str) -> Result<bool, Error> {
    let Some(record) = layout::upstream_module_record(key) else { return Ok(false) };
    let Some(object) = indexer.storage.get(key).await? else { return Ok(false) };
    let mut listed = None;
    let change = match record {
        UpstreamModuleRecord::Pin(module, version) => {
            let pin = ModulePin::parse(&object.bytes)?;
            if pin.module != module.to_string() || pin.version != version.to_string() {
                return Err(Error::internal(format!("the pin {key} names {} {}", pin.module, pin.version)));
            }
            listed = Some((module.clone(), pin.clone()));
            Change {
                action: Action::Publish,
                key: layout::upstream_module_archive(&module, &version, &pin.sha256, &pin.archive),
                sha256: Some(pin.sha256),
                size: Some(pin.size),
                etag: None,
                version_id: None,
                principal: None,
                reason: Some(format!("copied from {} and pinned", crate::address::printable(&pin.source))),
            }
        }
        UpstreamModuleRecord::Refusal(module, version, sha256) => {
            let refusal: ModuleRefusal = serde_json::from_slice(&object.bytes)
                .map_err(|e| Error::internal_from("upstream module refusal", e))?;
            Change {
                action: Action::Reject,
                key: key.to_string(),
                sha256: Some(sha256),
                size: None,
                etag: Some(object.etag),
                version_id: None,
                principal: None,
                reason: Some(format!(
                    "{module} {version} fetched from {} differs from the SHA-256 {} pinned at its first copy",
                    crate::address::printable(&refusal.source),
                    crate::address::printable(&refusal.pinned)
                )),
            }
        }
    };
    // Who wrote the record: the modules function (or an operator syncing a bundle).
    let principal = indexer.principals().get(key).cloned();
    super::changes::log_changes(indexer, vec![Change { principal, ..change }]).await?;
    // Then the catalog, which shows the copies on the catalog page, and the module's pins,
    // which its page shows.
    if let Some((module, pin)) = listed {
        super::catalog::add_upstream_copy(indexer, &module, &pin.version, &pin.copied_at).await?;
        keep_pin(indexer, &module, pin).await?;
    }
    Ok(true)
}

/// Add `pin` to its module's pins document (`layout::upstream_module_pins`).
async fn keep_pin<S: Storage>(indexer: &Indexer<'_, S>, module: &UpstreamModule, pin: ModulePin) -> Result<(), Error> {
    keep_pins(indexer, module, vec![pin]).await
}

/// Add `pins` to their module's pins document in one write, with the same conditional write
/// as a manifest, retried when another pass wrote first.
async fn keep_pins<S: Storage>(
    indexer: &Indexer<'_, S>,
    module: &UpstreamModule,
    added: Vec<ModulePin>,
) -> Result<(), Error> {
    let key = layout::upstream_module_pins(module);
    retry::on_conflict(PINS_RETRY, &key, |_| async {
        let read = super::intake::read_document(indexer.storage, &key).await?;
        // Unreadable (another release's format, corrupt): rebuilt from these pins on.
        let mut pins = read.as_ref().and_then(|o| ModulePins::parse(&o.bytes).ok()).unwrap_or_default();
        let mut changed = read.is_none();
        for pin in &added {
            changed |= pins.add(pin.clone());
        }
        if !changed {
            return Ok(());
        }
        let precondition = Precondition::replacing(read.as_ref().map(|o| o.etag.as_str()));
        indexer.storage.put(&key, crate::manifest::to_json(&pins)?, CONTENT_TYPE_JSON, precondition).await
    })
    .await
}

/// Give every upstream module the catalog lists a pins document holding each copied version's
/// pin (`reindex all`: a bucket from before pins documents, or one lost): the pins named by the
/// catalog's versions, read from `upstream-modules/`.
pub(super) async fn rebuild_pins<S: Storage>(indexer: &Indexer<'_, S>) -> Result<(), Error> {
    let Some(stored) = super::intake::read_document(indexer.storage, layout::CATALOG_UPSTREAM_MODULES).await? else {
        return Ok(());
    };
    let Ok(catalog) = <crate::catalog::UpstreamCatalog as crate::catalog::Part>::parse(&stored.bytes) else {
        return Ok(());
    };
    for entry in catalog.modules.values() {
        let Some(module) = entry.module() else { continue };
        let held = super::intake::read_document(indexer.storage, &layout::upstream_module_pins(&module)).await?;
        let held = held.and_then(|o| ModulePins::parse(&o.bytes).ok()).unwrap_or_default();
        // Gathered first, then written once: a module missing thousands of pins costs one
        // write, not one rewrite of a growing document per pin.
        let mut missing = Vec::new();
        let pinned: std::collections::HashSet<&str> = held.pins.iter().map(|p| p.version.as_str()).collect();
        for version in entry.versions.iter().filter(|v| !pinned.contains(v.as_str())) {
            let Ok(version) = crate::address::parse_version(version) else { continue };
            // A pin gone (or, for a role that may not list upstream-modules/, AccessDenied for
            // a missing key): nothing to show for it.
            let object = match indexer.storage.get(&layout::upstream_module_pin(&module, &version)).await {
                Ok(object) => object,
                Err(Error::Forbidden(_)) => None,
                Err(e) => return Err(e),
            };
            // One unreadable pin does not stop the repair of the others.
            match object.map(|o| ModulePin::parse(&o.bytes)) {
                Some(Ok(pin)) => missing.push(pin),
                Some(Err(e)) => {
                    tracing::warn!(%module, %version, error = %chain(&e), "unreadable pin: left off its page")
                }
                None => {}
            }
        }
        if !missing.is_empty() {
            keep_pins(indexer, &module, missing).await?;
        }
    }
    Ok(())
}
