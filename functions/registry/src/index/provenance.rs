//! A module version's provenance at publish: its Sigstore bundle (`layout::module_bundle`)
//! read, verified against each trust root on its own (the shipped public-good one, then those
//! key admins put under `layout::SIGSTORE_TRUST_ROOTS_PREFIX`), its signer judged by the
//! namespace's rule (`REGISTRY_PROVENANCE`, `provenance::policy`), and what it established
//! recorded on the version's entry. A bundle that does not verify, or whose signer the rule does
//! not admit, gets a rejection record saying why.

use std::sync::Arc;

use super::indexer::{Indexer, TrustRoots};
use super::rejections::Rejections;
use crate::address::ModuleAddress;
use crate::error::Error;
use crate::layout;
use crate::manifest::{ModuleVersion, Provenance};
use crate::provenance::policy::{self, Mode};
use crate::provenance::{self as sigstore, BUNDLE_MAX_BYTES, Signer, TRUST_ROOT_MAX_BYTES, TrustRoot};
use crate::storage::{ObjectInfo, Storage};

/// Most trust roots key admins may add.
const TRUST_ROOTS_MAX: usize = 16;

/// What a version's bundle came to.
pub(super) enum Attested {
    /// Verified, its signer admitted.
    Verified(Box<Provenance>),
    /// No bundle, or provenance is off for the namespace.
    Absent,
    /// A bundle that did not verify, or whose signer is not admitted: why (its rejection
    /// record says so too).
    Refused(String),
}

/// The provenance of `entry` (the version as decided) from `bundle`, the version's bundle as
/// listed: as `previous` recorded it while neither the bundle nor the bytes changed.
pub(super) async fn attest<S: Storage>(
    indexer: &Indexer<'_, S>,
    module: &ModuleAddress,
    entry: &ModuleVersion,
    bundle: Option<&ObjectInfo>,
    previous: Option<&ModuleVersion>,
    rejections: &mut Rejections,
) -> Result<Attested, Error> {
    let (mode, signers) = indexer.limits.provenance.for_namespace(&module.namespace);
    let Some(bundle) = bundle else { return Ok(Attested::Absent) };
    rejections.keep(&bundle.key);
    if mode == Mode::Off {
        return Ok(Attested::Absent);
    }
    // The same bundle over the same bytes is not read again; its signer is judged again, by
    // the rule as it is now.
    let recorded = previous
        .filter(|p| p.sha256 == entry.sha256)
        .and_then(|p| p.provenance.as_ref())
        .filter(|p| p.bundle == bundle.key && !bundle.etag.is_empty() && p.bundle_etag == bundle.etag);
    let verified = match recorded {
        Some(recorded) => Ok(recorded.clone()),
        None => match read(indexer, bundle).await? {
            Err(why) => Err(why),
            Ok(None) => return Ok(Attested::Absent),
            Ok(Some(bytes)) => {
                verify(trust_roots(indexer).await?.as_ref(), &bytes, &entry.sha256).map(|(trust_root, verified)| {
                    Provenance {
                        bundle: bundle.key.clone(),
                        bundle_etag: bundle.etag.clone(),
                        trust_root,
                        verified,
                        verified_at: crate::clock::rfc3339_now(),
                    }
                })
            }
        },
    };
    let verdict = verified.and_then(|provenance| {
        let identity = provenance.verified.identity.as_ref().ok_or_else(|| "no signer identity".to_string())?;
        policy::admits(signers, identity)?;
        Ok(provenance)
    });
    match verdict {
        Ok(provenance) => {
            rejections.clear(indexer.storage, &bundle.key).await?;
            Ok(Attested::Verified(Box::new(provenance)))
        }
        Err(why) => {
            let reason = format!("this Sigstore bundle is not the provenance of {}: {why}", entry.archive);
            rejections.reject(indexer.storage, bundle, reason).await?;
            Ok(Attested::Refused(why))
        }
    }
}

/// The bundle's bytes (`None`: gone since the listing), or why they are not read.
async fn read<S: Storage>(
    indexer: &Indexer<'_, S>,
    bundle: &ObjectInfo,
) -> Result<Result<Option<Vec<u8>>, String>, Error> {
    if bundle.size > BUNDLE_MAX_BYTES as u64 {
        return Ok(Err(format!("{} bytes, over the limit of {BUNDLE_MAX_BYTES} for a bundle", bundle.size)));
    }
    let Some(object) = indexer.storage.get(&bundle.key).await? else { return Ok(Ok(None)) };
    if object.bytes.len() > BUNDLE_MAX_BYTES {
        return Ok(Err(format!("over the limit of {BUNDLE_MAX_BYTES} bytes for a bundle")));
    }
    Ok(Ok(Some(object.bytes.to_vec())))
}

/// The bundle verified over the archive whose SHA-256 is `sha256` (hex) by the first trust
/// root that vouches for it: its name and what it established; or why none does.
fn verify(roots: &TrustRoots, bundle: &[u8], sha256: &str) -> Result<(String, sigstore::Verified), String> {
    let digest: [u8; 32] =
        hex::decode(sha256).ok().and_then(|d| d.try_into().ok()).ok_or("the archive has no SHA-256")?;
    let mut refusals = vec![];
    for (name, root) in &roots.roots {
        match sigstore::verify(bundle, digest, root, Signer::Certificate) {
            Ok(verified) => return Ok((name.clone(), verified)),
            Err(why) => refusals.push(format!("{name}: {why}")),
        }
    }
    refusals.extend(roots.problems.iter().map(|p| format!("(unusable trust root) {p}")));
    Err(match refusals.as_slice() {
        [only] => only.clone(),
        all => format!("no trust root vouches for it ({})", all.join("; ")),
    })
}

/// The trust roots, read once per indexer: the public-good one, then each key admins added.
async fn trust_roots<S: Storage>(indexer: &Indexer<'_, S>) -> Result<Arc<TrustRoots>, Error> {
    indexer
        .trust_roots
        .get_or_try_init(|| async {
            let mut roots =
                TrustRoots { roots: vec![("public-good".into(), TrustRoot::public_good())], problems: vec![] };
            let listed = indexer.storage.list(layout::SIGSTORE_TRUST_ROOTS_PREFIX).await?;
            for object in listed.iter().filter(|o| o.key.ends_with(".json")).take(TRUST_ROOTS_MAX) {
                let name = object.key.strip_prefix(layout::SIGSTORE_TRUST_ROOTS_PREFIX).unwrap_or(&object.key);
                if object.size > TRUST_ROOT_MAX_BYTES as u64 {
                    roots.problems.push(format!("{}: larger than {TRUST_ROOT_MAX_BYTES} bytes", object.key));
                    continue;
                }
                let Some(read) = indexer.storage.get(&object.key).await? else { continue };
                match TrustRoot::from_json_lines(&read.bytes) {
                    Ok(found) => {
                        for (n, root) in found.into_iter().enumerate() {
                            let name = if n == 0 { name.to_string() } else { format!("{name}#{}", n + 1) };
                            roots.roots.push((name, root));
                        }
                    }
                    Err(why) => {
                        tracing::warn!(key = object.key, error = %why, "a Sigstore trust root that cannot be used");
                        roots.problems.push(format!("{}: {why}", object.key));
                    }
                }
            }
            Ok::<_, Error>(Arc::new(roots))
        })
        .await
        .cloned()
}
