//! A module version's provenance at publish: its Sigstore bundle (`layout::module_bundle`)
//! read, verified against each trust root on its own (the shipped public-good one, then those
//! key admins put under `layout::SIGSTORE_TRUST_ROOTS_PREFIX`), its signer judged by the
//! namespace's rule (`REGISTRY_PROVENANCE`, `provenance::policy`; a signer names the roots that
//! may vouch for it), and what it established recorded on the version's entry. A bundle that
//! does not verify, or whose signer the rule does not admit, gets a rejection record saying why,
//! and is not read again until it, the archive's bytes, the rule or the trust roots change.
//! Under a `required` rule, a new version without provenance is refused the same way.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use sha2::Digest;

use super::indexer::{Indexer, TrustRoots};
use super::intake::{listed_etag, read_small};
use super::rejections::{Rejections, provenance_fingerprint};
use crate::address::ModuleAddress;
use crate::error::Error;
use crate::layout::{self, BUNDLE_SUFFIX};
use crate::manifest::{ModuleVersion, Provenance};
use crate::provenance::policy::{self, Mode};
use crate::provenance::{self as sigstore, BUNDLE_MAX_BYTES, Signer, TRUST_ROOT_MAX_BYTES, TrustRoot};
use crate::storage::{ObjectInfo, Storage};

/// Most trust root files read.
const TRUST_ROOT_FILES_MAX: usize = 16;
/// Most trust roots in all (a file may hold several).
const TRUST_ROOTS_MAX: usize = 32;

/// A module's bundles as listed, by key, with the version each names; those a pass takes are
/// marked, and the rest are orphans.
#[derive(Default)]
pub(super) struct Bundles {
    listed: BTreeMap<String, (ObjectInfo, semver::Version)>,
    taken: BTreeSet<String>,
}

impl Bundles {
    pub(super) fn add(&mut self, object: ObjectInfo, version: semver::Version) {
        self.listed.insert(object.key.clone(), (object, version));
    }

    /// The bundle of the archive at `archive` (named after it), taken.
    pub(super) fn take(&mut self, archive: &str) -> Option<ObjectInfo> {
        let key = format!("{archive}{BUNDLE_SUFFIX}");
        let found = self.listed.get(&key).map(|(object, _)| object.clone());
        if found.is_some() {
            self.taken.insert(key);
        }
        found
    }

    /// The bundle of the archive at `archive`, not taken.
    pub(super) fn peek(&self, archive: &str) -> Option<&ObjectInfo> {
        self.listed.get(&format!("{archive}{BUNDLE_SUFFIX}")).map(|(object, _)| object)
    }

    /// Every bundle of `version` taken: a version whose archive was refused for another reason
    /// says nothing of its bundles.
    pub(super) fn take_version(&mut self, version: &semver::Version) {
        let keys: Vec<String> = self.listed.iter().filter(|(_, (_, v))| v == version).map(|(k, _)| k.clone()).collect();
        self.taken.extend(keys);
    }
}

/// Whether `module`'s rule requires provenance.
pub(super) fn required<S: Storage>(indexer: &Indexer<'_, S>, module: &ModuleAddress) -> bool {
    indexer.limits.provenance.for_namespace(&module.namespace).0 == Mode::Required
}

/// `entry`'s provenance from `bundle` (the bundle of its archive, as listed), set on it: as
/// `previous` recorded it while the bundle, the bytes and the root that vouched are the same
/// (its signer judged again by the rule as it is now), else read and verified. `Some(why)`
/// when there is none.
pub(super) async fn attach<S: Storage>(
    indexer: &Indexer<'_, S>,
    module: &ModuleAddress,
    entry: &mut ModuleVersion,
    bundle: Option<&ObjectInfo>,
    previous: Option<&ModuleVersion>,
    rejections: &mut Rejections,
) -> Result<Option<String>, Error> {
    entry.provenance = None;
    let (mode, signers) = indexer.limits.provenance.for_namespace(&module.namespace);
    let Some(bundle) = bundle else {
        return Ok(Some(format!("no Sigstore bundle at {}{BUNDLE_SUFFIX}", entry.archive)));
    };
    if mode == Mode::Off {
        // Not read: a record of it from before goes, as stale.
        return Ok(Some("provenance is off for the namespace".into()));
    }
    rejections.keep(&bundle.key);
    let etag = listed_etag(indexer, bundle).await?;
    let roots = trust_roots(indexer).await?;
    let fingerprint = bundle_fingerprint(indexer, module, &etag, &entry.sha256, &roots);
    if rejections.rejected_before(&bundle.key, &fingerprint) {
        return Ok(Some(format!("its bundle is refused: rejections/{}.json says why", bundle.key)));
    }
    let recorded = previous
        .filter(|p| p.sha256 == entry.sha256)
        .and_then(|p| p.provenance.as_ref())
        .filter(|p| p.bundle == bundle.key && roots.roots.iter().any(|(name, _)| *name == p.trust_root));
    let verified = match recorded {
        Some(recorded) if !etag.is_empty() && recorded.bundle_etag == etag => Ok(recorded.clone()),
        _ => match read_small(indexer, bundle, BUNDLE_MAX_BYTES, "a Sigstore bundle").await? {
            Err(why) => Err(why),
            Ok(None) => return Ok(Some(format!("no Sigstore bundle at {}{BUNDLE_SUFFIX}", entry.archive))),
            Ok(Some(bytes)) => verify(&roots, &bytes, &entry.sha256).map(|(trust_root, verified)| {
                // Verified again to the same effect (a listing without ETags): as recorded.
                let same = recorded.filter(|r| r.verified == verified && r.trust_root == trust_root);
                let verified_at = same.map_or_else(crate::clock::rfc3339_now, |r| r.verified_at.clone());
                Provenance {
                    bundle: bundle.key.clone(),
                    bundle_etag: etag.clone(),
                    trust_root,
                    verified,
                    verified_at,
                    checked: false,
                }
            }),
        },
    };
    let verdict = verified.and_then(|provenance| {
        let identity = provenance.verified.identity.as_ref().ok_or_else(|| "no signer identity".to_string())?;
        policy::admits(signers, identity, &provenance.trust_root)?;
        Ok(Provenance { checked: !signers.is_empty(), ..provenance })
    });
    match verdict {
        Ok(provenance) => {
            rejections.clear(indexer.storage, &bundle.key).await?;
            entry.provenance = Some(provenance);
            Ok(None)
        }
        Err(why) => {
            let reason = format!("this Sigstore bundle is not the provenance of {}: {why}", entry.archive);
            rejections.reject(indexer.storage, &ObjectInfo { etag: fingerprint, ..bundle.clone() }, reason).await?;
            Ok(Some(format!("its bundle is refused: {why}")))
        }
    }
}

/// Under a `required` rule: the archive's record that a new version is not served for want of
/// provenance (`why`), keeping as its ETag what it was judged on.
pub(super) async fn refuse_unattested<S: Storage>(
    indexer: &Indexer<'_, S>,
    module: &ModuleAddress,
    archive: &ObjectInfo,
    bundle: Option<&ObjectInfo>,
    why: &str,
    rejections: &mut Rejections,
) -> Result<(), Error> {
    let etag = archive_fingerprint(indexer, module, archive, bundle).await?;
    let reason = format!(
        "module {module} requires provenance (REGISTRY_PROVENANCE is required for namespace {}): {why}. Upload the \
         bundle your CI's attestation step wrote beside the archive, named after it; the version is published then",
        module.namespace
    );
    rejections.reject(indexer.storage, &ObjectInfo { etag, ..archive.clone() }, reason).await
}

/// Whether `archive` was refused for want of provenance with this same bundle (or none), under
/// this same rule and trust roots: then it is not read again, and what was published stays.
pub(super) async fn awaits<S: Storage>(
    indexer: &Indexer<'_, S>,
    module: &ModuleAddress,
    archive: &ObjectInfo,
    bundle: Option<&ObjectInfo>,
    rejections: &mut Rejections,
) -> Result<bool, Error> {
    if !rejections.fingerprint_of(&archive.key).is_some_and(|f| f.starts_with("provenance:")) {
        return Ok(false);
    }
    let waiting =
        rejections.rejected_before(&archive.key, &archive_fingerprint(indexer, module, archive, bundle).await?);
    if waiting {
        rejections.keep(&archive.key);
    }
    Ok(waiting)
}

/// Bundles no version took: each gets a record saying its archive is not the one served
/// (or not there yet: it is published when it arrives).
pub(super) async fn refuse_orphans<S: Storage>(
    indexer: &Indexer<'_, S>,
    module: &ModuleAddress,
    bundles: Bundles,
    rejections: &mut Rejections,
) -> Result<(), Error> {
    if indexer.limits.provenance.for_namespace(&module.namespace).0 == Mode::Off {
        return Ok(());
    }
    for (key, (bundle, version)) in bundles.listed {
        if bundles.taken.contains(&key) {
            continue;
        }
        rejections.keep(&key);
        if rejections.rejected_before(&key, &bundle.etag) {
            continue;
        }
        let archive = key.strip_suffix(BUNDLE_SUFFIX).unwrap_or(&key);
        let reason = format!(
            "a Sigstore bundle for {archive}, which is not the archive served for version {version} of module {module} \
             (not uploaded yet, or another format of it is served): the bundle is read when its archive is"
        );
        rejections.reject(indexer.storage, &bundle, reason).await?;
    }
    Ok(())
}

/// What a bundle's refusal record keeps as its ETag: the bundle, the archive's bytes, the rule
/// and the trust roots, so that it is read again when any of them changes.
fn bundle_fingerprint<S: Storage>(
    indexer: &Indexer<'_, S>,
    module: &ModuleAddress,
    etag: &str,
    sha256: &str,
    roots: &TrustRoots,
) -> String {
    let rule = indexer.limits.provenance.fingerprint(&module.namespace);
    provenance_fingerprint(etag, Some(sha256), &format!("{rule}.{}", roots.digest))
}

async fn archive_fingerprint<S: Storage>(
    indexer: &Indexer<'_, S>,
    module: &ModuleAddress,
    archive: &ObjectInfo,
    bundle: Option<&ObjectInfo>,
) -> Result<String, Error> {
    let rule = indexer.limits.provenance.fingerprint(&module.namespace);
    let roots = trust_roots(indexer).await?;
    let bundle_etag = match bundle {
        Some(bundle) => Some(listed_etag(indexer, bundle).await?),
        None => None,
    };
    Ok(provenance_fingerprint(&archive.etag, bundle_etag.as_deref(), &format!("{rule}.{}", roots.digest)))
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

/// The trust roots, read once per indexer: the public-good one, then each key admins added,
/// and a digest of which files with which ETags they came from.
async fn trust_roots<S: Storage>(indexer: &Indexer<'_, S>) -> Result<Arc<TrustRoots>, Error> {
    indexer
        .trust_roots
        .get_or_try_init(|| async {
            let public_good = vec![("public-good".into(), TrustRoot::public_good())];
            let mut roots = TrustRoots { roots: public_good, problems: vec![], digest: String::new() };
            let mut digest = sha2::Sha256::new();
            let listed = indexer.storage.list(layout::SIGSTORE_TRUST_ROOTS_PREFIX).await?;
            for object in listed.iter().filter(|o| o.key.ends_with(".json")).take(TRUST_ROOT_FILES_MAX) {
                let name = object.key.strip_prefix(layout::SIGSTORE_TRUST_ROOTS_PREFIX).unwrap_or(&object.key);
                digest.update(format!("{}\n{}\n", object.key, listed_etag(indexer, object).await?));
                let read = match read_small(indexer, object, TRUST_ROOT_MAX_BYTES, "a trust root").await? {
                    Ok(Some(bytes)) => TrustRoot::from_json_lines(&bytes).map_err(|e| e.to_string()),
                    Ok(None) => continue,
                    Err(why) => Err(why),
                };
                match read {
                    Ok(found) => {
                        for (n, root) in found.into_iter().enumerate() {
                            if roots.roots.len() == TRUST_ROOTS_MAX {
                                roots
                                    .problems
                                    .push(format!("{}: over {TRUST_ROOTS_MAX} trust roots in all", object.key));
                                break;
                            }
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
            roots.digest = hex::encode(&digest.finalize()[..6]);
            Ok::<_, Error>(Arc::new(roots))
        })
        .await
        .cloned()
}
