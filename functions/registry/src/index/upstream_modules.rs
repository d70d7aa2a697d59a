//! The modules pull-through on the publish log: a version's pin (its first copy, the only bytes
//! ever served for it) logged as a publish of its archive, and added to the catalog; bytes
//! refused for differing from a pin logged as a rejection. The modules function writes both records (it may not write the log);
//! their S3 events bring them here.

use super::indexer::Indexer;
use crate::error::Error;
use crate::layout::{self, UpstreamModuleRecord};
use crate::publish_log::{Action, Change};
use crate::storage::Storage;
use crate::upstream::module_records::{ModulePin, ModuleRefusal};

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
            listed = Some((
                module.clone(),
                crate::catalog::UpstreamPin {
                    version: version.to_string(),
                    sha256: pin.sha256.clone(),
                    size: pin.size,
                    source: pin.source.clone(),
                    copied_at: pin.copied_at.clone(),
                },
            ));
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
    // Then the catalog, which shows the copies on the catalog page.
    if let Some((module, pin)) = listed {
        super::catalog::add_upstream_copy(indexer, &module, &pin).await?;
    }
    Ok(true)
}
