//! The modules pull-through on the publish log: a version's pin (its first copy, the only bytes
//! ever served for it) logged as a publish of its archive with its first write into the
//! module's pins document, and added to the catalog; bytes refused for differing from a pin
//! logged as a rejection, likewise once. The modules function writes both records (it may not write the log);
//! their S3 events bring them here.

use super::documents::{self, read_document, read_finished};
use super::indexer::Indexer;
use crate::address::UpstreamModule;
use crate::error::{Error, chain};
use crate::layout::{self, UpstreamModuleRecord};
use crate::publish_log::{Action, Change};
use crate::retry::{self, Backoff};
use crate::storage::Precondition;
use crate::storage::Storage;
use crate::upstream::module_records::{ModulePin, ModulePins, ModuleRefusal};

/// Writers of one module's pins: the indexer's passes over that module's pins, few at once.
const PINS_RETRY: Backoff =
    Backoff { attempts: 20, first: std::time::Duration::from_millis(10), max: std::time::Duration::from_millis(500) };

/// Put the record at `key` on the publish log; `false` when it is gone (deleted since), or the
/// key is no record. The entry goes with the record's first appearance in its module's pins
/// document, in one write (`documents`), so a retry of the event, or the event delivered
/// again, logs nothing twice.
pub(super) async fn log_record<S: Storage>(indexer: &Indexer<'_, S>, key: &str) -> Result<bool, Error> {
    let Some(record) = layout::upstream_module_record(key) else { return Ok(false) };
    let Some(object) = indexer.storage.get(key).await? else { return Ok(false) };
    // Who wrote the record: the modules function (or an operator syncing a bundle).
    let principal = indexer.principals().get(key).cloned();
    match record {
        UpstreamModuleRecord::Pin(module, version) => {
            let pin = ModulePin::parse(&object.bytes)?;
            if pin.module != module.to_string() || pin.version != version.to_string() {
                return Err(Error::internal(format!("the pin {key} names {} {}", pin.module, pin.version)));
            }
            let change = Change {
                action: Action::Publish,
                key: layout::upstream_module_archive(&module, &version, &pin.sha256, &pin.archive),
                sha256: Some(pin.sha256.clone()),
                size: Some(pin.size),
                etag: None,
                version_id: None,
                principal,
                reason: Some(format!("copied from {} and pinned", crate::address::printable(&pin.source))),
            };
            keep(indexer, &module, Kept::Pins(vec![pin.clone()]), vec![change]).await?;
            // Then the catalog, which shows the copies on the catalog page.
            super::catalog::add_upstream_copy(indexer, &module, &pin.version, &pin.copied_at).await?;
        }
        UpstreamModuleRecord::Refusal(module, version, sha256) => {
            let refusal: ModuleRefusal = serde_json::from_slice(&object.bytes)
                .map_err(|e| Error::internal_from("upstream module refusal", e))?;
            let change = Change {
                action: Action::Reject,
                key: key.to_string(),
                sha256: Some(sha256),
                size: None,
                etag: Some(object.etag),
                version_id: None,
                principal,
                reason: Some(format!(
                    "{module} {version} fetched from {} differs from the SHA-256 {} pinned at its first copy",
                    crate::address::printable(&refusal.source),
                    crate::address::printable(&refusal.pinned)
                )),
            };
            keep(indexer, &module, Kept::Refusal(key.to_string()), vec![change]).await?;
        }
    }
    Ok(true)
}

/// What a module's pins document is to keep.
enum Kept {
    /// These pins.
    Pins(Vec<ModulePin>),
    /// That this refusal record is on the log.
    Refusal(String),
}

/// Add `kept` to its module's pins document (`layout::upstream_module_pins`) in one write, with
/// `logged` put on the publish log with it; nothing when the document holds it already (so
/// `logged` is on the log already). The same conditional write as a manifest, retried when
/// another pass wrote first.
async fn keep<S: Storage>(
    indexer: &Indexer<'_, S>,
    module: &UpstreamModule,
    kept: Kept,
    logged: Vec<Change>,
) -> Result<(), Error> {
    let key = layout::upstream_module_pins(module);
    retry::on_conflict(PINS_RETRY, &key, |_| async {
        let read = read_finished::<_, ModulePins>(indexer.storage, &key).await?;
        // Unreadable (another release's format, corrupt): rebuilt from these pins on.
        let mut pins = read.as_ref().and_then(|o| ModulePins::parse(&o.bytes).ok()).unwrap_or_default();
        let mut changed = read.is_none();
        match &kept {
            Kept::Pins(added) => {
                for pin in added {
                    changed |= pins.add(pin.clone());
                }
            }
            Kept::Refusal(record) if !pins.refusals.contains(record) => {
                pins.refusals.push(record.clone());
                changed = true;
            }
            Kept::Refusal(_) => {}
        }
        if !changed {
            return Ok(());
        }
        let precondition = Precondition::replacing(read.as_ref().map(|o| o.etag.as_str()));
        documents::write(indexer.storage, &key, &pins, precondition, logged.clone(), Vec::new()).await.map(drop)
    })
    .await
}

/// Give every upstream module the catalog lists a pins document holding each copied version's
/// pin (`reindex all`: a bucket from before pins documents, or one lost): the pins named by the
/// catalog's versions, read from `upstream-modules/`.
pub(super) async fn rebuild_pins<S: Storage>(indexer: &Indexer<'_, S>) -> Result<(), Error> {
    let Some(stored) = read_document(indexer.storage, layout::CATALOG_UPSTREAM_MODULES).await? else {
        return Ok(());
    };
    let Ok(catalog) = <crate::catalog::UpstreamCatalog as crate::catalog::Part>::parse(&stored.bytes) else {
        return Ok(());
    };
    for entry in catalog.modules.values() {
        let Some(module) = entry.module() else { continue };
        let held = read_finished::<_, ModulePins>(indexer.storage, &layout::upstream_module_pins(&module)).await?;
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
            keep(indexer, &module, Kept::Pins(missing), Vec::new()).await?;
        }
    }
    Ok(())
}
