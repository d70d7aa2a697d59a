//! The module pass: one manifest per module, one entry per version, from the archives under
//! the module's upload prefix.

use std::collections::BTreeMap;
use std::io::Seek;

use super::documents::{self, read_finished};
use super::indexer::{Indexer, Outcome};
use super::intake::{listed_etag, spool_or_reject};
use super::judgment::{self, Verdict};
use super::provenance::{self, Bundles};
use super::rejections::{Rejections, immutable, immutable_fingerprint};
use super::spool::{Spooled, blocking};
use super::{deprecations, oci};
use crate::address::ModuleAddress;
use crate::archive;
use crate::error::{Error, chain};
use crate::layout::{self, ObjectKind, Owner};
use crate::manifest::{CONTENT_TYPE_JSON, ModuleManifest, ModuleVersion, OciLayer, to_json};
use crate::module_docs::{self, ModuleDocs};
use crate::publish_log::{Action, Change};
use crate::storage::{Object, ObjectInfo, Precondition, Storage};

/// Rebuild one module's manifest from its archives: each version decided in turn (ascending,
/// so each is judged against those below it), then the manifest written if it changed.
pub(super) async fn module_pass<S: Storage>(
    indexer: &Indexer<'_, S>,
    module: &ModuleAddress,
) -> Result<Outcome, Error> {
    let prefix = layout::module_prefix(module);
    // Rule 1: the manifest (and its ETag) before the listing.
    let (read, existing) = read_manifest(indexer, module).await?;
    let objects = indexer.storage.list(&prefix).await?;
    let mut rejections = Rejections::load(indexer.storage, &prefix, indexer.principals()).await?;

    let Archives { chosen, deprecations, mut bundles, misnamed } = choose_archives(module, objects);
    rejections.reject_misnamed(indexer.storage, &misnamed).await?;
    let mut decided = Decided::default();
    for (version, archive) in chosen {
        let previous = existing.as_ref().and_then(|m| m.find(&version));
        let waiting = provenance::awaits(indexer, module, &archive.0, bundles.peek(&archive.0.key), &mut rejections);
        if waiting.await? {
            bundles.take_version(&version);
            decided
                .add(settle(indexer, module, Decision::kept(previous), previous, &mut bundles, &mut rejections).await?);
            continue;
        }
        let decision =
            decide_version(indexer, module, &version, archive, previous, &decided, (&mut bundles, &mut rejections))
                .await?;
        if matches!(decision, Decision::Unlisted) {
            bundles.take_version(&version);
        }
        decided.add(settle(indexer, module, decision, previous, &mut bundles, &mut rejections).await?);
    }
    provenance::refuse_orphans(indexer, module, bundles, &mut rejections).await?;
    let mut versions = decided.versions;
    deprecate(indexer, module, &mut versions, deprecations, &mut rejections).await?;
    rejections.clear_stale(indexer.storage).await?;
    write_manifest(indexer, module, read.as_ref(), existing.as_ref(), &ModuleManifest::new(versions)).await
}

/// The module's manifest as stored (its ETag for rule 2), and what it says: `None` when there
/// is none, or when it does not parse (it is rebuilt).
async fn read_manifest<S: Storage>(
    indexer: &Indexer<'_, S>,
    module: &ModuleAddress,
) -> Result<(Option<Object>, Option<ModuleManifest>), Error> {
    let manifest_key = layout::module_manifest(module);
    let read = read_finished::<_, ModuleManifest>(indexer.storage, &manifest_key).await?;
    let existing = read.as_ref().map(|o| ModuleManifest::parse(&o.bytes)).transpose().unwrap_or_else(|e| {
        tracing::warn!(key = manifest_key, error = %chain(&e), "existing manifest unreadable; rebuilding it");
        None
    });
    Ok((read, existing))
}

/// What the pass decided for one version.
enum Decision {
    /// Not listed: nothing of it is published.
    Unlisted,
    /// Listed with this entry: as recorded, or as published before (an upload refused now
    /// changes nothing).
    Listed(ModuleVersion),
    /// Accepted in this pass, its docs stored: listed with this entry, and its docs judge the
    /// versions above it.
    Accepted(ModuleVersion, Box<ModuleDocs>),
}

impl Decision {
    /// What was published for the version stays as it was.
    fn kept(previous: Option<&ModuleVersion>) -> Decision {
        previous.cloned().map_or(Decision::Unlisted, Decision::Listed)
    }
}

/// The versions decided so far (ascending), and the docs of those accepted in this pass: what
/// the next version is judged against.
#[derive(Default)]
struct Decided {
    versions: Vec<ModuleVersion>,
    fresh: BTreeMap<String, ModuleDocs>,
}

impl Decided {
    fn add(&mut self, decision: Decision) {
        match decision {
            Decision::Unlisted => {}
            Decision::Listed(entry) => self.versions.push(entry),
            Decision::Accepted(entry, docs) => {
                self.fresh.insert(entry.version.clone(), *docs);
                self.versions.push(entry);
            }
        }
    }
}

/// Decide one version from its archive (`object`) and what the manifest recorded for it
/// (`previous`): the recorded entry while the archive is the one it records; else the archive
/// read and checked, and then the same bytes again kept as published, other bytes refused
/// while published versions are immutable, and a new version judged. An archive rejected now
/// leaves what was published for its version.
async fn decide_version<S: Storage>(
    indexer: &Indexer<'_, S>,
    module: &ModuleAddress,
    version: &semver::Version,
    (object, extension): (ObjectInfo, &'static str),
    previous: Option<&ModuleVersion>,
    decided: &Decided,
    (bundles, rejections): (&mut Bundles, &mut Rejections),
) -> Result<Decision, Error> {
    if let Some(entry) = reusable(indexer, &object, previous).await? {
        rejections.keep(&object.key);
        return Ok(Decision::Listed(entry.clone()));
    }
    let Some((entry, docs)) = index_module_archive(indexer, &object, extension, rejections).await? else {
        // Rejected: what was published for this version stays as it was.
        return Ok(Decision::kept(previous));
    };
    match previous {
        // The same bytes again (a re-upload, a copy): still the object first published,
        // which a versioned bucket keeps serving by its version id.
        Some(published) if entry.sha256 == published.sha256 => {
            republished(indexer, module, version, (entry, docs), published, decided).await
        }
        Some(published) if !indexer.limits.overwrite_published => {
            let what = format!("version {version} of module {module}");
            let reason = immutable(&what, &published.sha256, &entry.sha256);
            let uploaded = ObjectInfo { etag: immutable_fingerprint(&entry.etag), ..object };
            rejections.reject(indexer.storage, &uploaded, reason).await?;
            Ok(Decision::Listed(published.clone()))
        }
        previous => {
            // Provenance before the judgment, which stores the docs: a refused upload leaves
            // what is published as it was.
            let (mut entry, bundle) = (entry, bundles.take(&object.key));
            let missing =
                provenance::attach(indexer, module, &mut entry, bundle.as_ref(), previous, rejections).await?;
            if let Some(why) = missing.filter(|_| provenance::required(indexer, module)) {
                provenance::refuse_unattested(indexer, module, &object, bundle.as_ref(), &why, rejections).await?;
                return Ok(Decision::kept(previous));
            }
            let etag = entry.etag.clone();
            match judge_new(indexer, module, version, (entry, docs), decided).await? {
                Ok(accepted) => Ok(accepted),
                Err(reason) => {
                    rejections.reject(indexer.storage, &ObjectInfo { etag, ..object }, reason).await?;
                    Ok(Decision::kept(previous))
                }
            }
        }
    }
}

/// A listed version with the provenance of its archive's bundle (judged again each pass; never
/// refused for want of it: it was served before). New versions get theirs in `decide_version`,
/// before they are judged.
async fn settle<S: Storage>(
    indexer: &Indexer<'_, S>,
    module: &ModuleAddress,
    decision: Decision,
    previous: Option<&ModuleVersion>,
    bundles: &mut Bundles,
    rejections: &mut Rejections,
) -> Result<Decision, Error> {
    let Decision::Listed(mut entry) = decision else { return Ok(decision) };
    let bundle = bundles.take(&entry.archive);
    provenance::attach(indexer, module, &mut entry, bundle.as_ref(), previous, rejections).await?;
    Ok(Decision::Listed(entry))
}

/// The recorded entry, if the archive listed is the one it records (same key, same ETag):
/// then it is not read again. Reused only with its docs: a manifest from before docs were
/// read is read again. And with its OCI layer: a manifest from before OCI reads the archive
/// once more too. And with its comparisons: one from before they were stored is compared once.
async fn reusable<'m, S: Storage>(
    indexer: &Indexer<'_, S>,
    object: &ObjectInfo,
    previous: Option<&'m ModuleVersion>,
) -> Result<Option<&'m ModuleVersion>, Error> {
    let same_archive =
        previous.filter(|e| e.archive == object.key && !e.etag.is_empty() && e.docs && e.compared && e.oci.is_some());
    Ok(match same_archive {
        Some(e) if listed_etag(indexer, object).await? == e.etag => Some(e),
        _ => None,
    })
}

/// The published entry for the same bytes uploaded again, with the ETag and OCI layer read
/// now; docs or comparisons it was published without are stored now.
async fn republished<S: Storage>(
    indexer: &Indexer<'_, S>,
    module: &ModuleAddress,
    version: &semver::Version,
    (entry, mut docs): (ModuleVersion, ModuleDocs),
    published: &ModuleVersion,
    decided: &Decided,
) -> Result<Decision, Error> {
    if !published.docs || !published.compared {
        let (versions, fresh) = (&decided.versions, &decided.fresh);
        judgment::compare(indexer.storage, module, version, &mut docs, versions, fresh).await?;
        put_docs(indexer, module, version, &docs).await?;
    }
    let (etag, oci) = (entry.etag, entry.oci);
    Ok(Decision::Listed(ModuleVersion { etag, docs: true, compared: true, oci, ..published.clone() }))
}

/// A new version (or new bytes for one, where overwrites are allowed), judged against the
/// versions below it (`judgment`): accepted with its docs stored, or refused, and why.
async fn judge_new<S: Storage>(
    indexer: &Indexer<'_, S>,
    module: &ModuleAddress,
    version: &semver::Version,
    (entry, mut docs): (ModuleVersion, ModuleDocs),
    decided: &Decided,
) -> Result<Result<Decision, String>, Error> {
    let (policy, versions, fresh) = (&indexer.limits.semver, &decided.versions, &decided.fresh);
    match judgment::judge(indexer.storage, policy, module, version, &mut docs, versions, fresh).await? {
        Verdict::Refuse(reason) => Ok(Err(reason)),
        Verdict::Publish(judged) => {
            // Docs first, so the manifest never names a version whose docs are not there.
            put_docs(indexer, module, version, &docs).await?;
            Ok(Ok(Decision::Accepted(ModuleVersion { judged, ..entry }, Box::new(docs))))
        }
    }
}

/// Write the manifest if it says something new, only over what was read (`read`: rule 2),
/// with the OCI packages it lists stored before it; its changes go on the publish log, its new
/// versions are tagged and the packages it no longer lists removed, all kept in it until done
/// (`documents`).
async fn write_manifest<S: Storage>(
    indexer: &Indexer<'_, S>,
    module: &ModuleAddress,
    read: Option<&Object>,
    existing: Option<&ModuleManifest>,
    manifest: &ModuleManifest,
) -> Result<Outcome, Error> {
    let unchanged = match existing {
        Some(e) => e == manifest,
        None => manifest.versions.is_empty(),
    };
    if unchanged {
        return Ok(Outcome::Unchanged);
    }
    let tags = oci::store_module(indexer.storage, module, existing, manifest).await?;
    let precondition = Precondition::replacing(read.map(|o| o.etag.as_str()));
    let logged = documents::named(indexer, changes(module, existing, manifest));
    let mut steps = oci::forget_module(module, existing, manifest);
    steps.extend(tags);
    let key = layout::module_manifest(module);
    documents::write(indexer.storage, &key, manifest, precondition, logged, steps).await?;
    Ok(Outcome::Written { versions: manifest.versions.len() })
}

/// A module's uploads, sorted out.
struct Archives {
    /// One archive per version.
    chosen: BTreeMap<semver::Version, (ObjectInfo, &'static str)>,
    /// Deprecation files by version.
    deprecations: BTreeMap<semver::Version, ObjectInfo>,
    /// Sigstore bundles, by the archive each names.
    bundles: Bundles,
    /// Objects whose names are no archive's.
    misnamed: Vec<ObjectInfo>,
}

/// One archive per version of `module` among `objects`, its deprecation files, and the objects
/// whose names are neither. Two formats of one version is a publishing mistake: the first by
/// extension preference (the order of `MODULE_ARCHIVE_EXTENSIONS`) is kept.
fn choose_archives(module: &ModuleAddress, objects: Vec<ObjectInfo>) -> Archives {
    let mut out = Archives {
        chosen: BTreeMap::new(),
        deprecations: BTreeMap::new(),
        bundles: Bundles::default(),
        misnamed: Vec::new(),
    };
    for object in objects {
        match layout::classify(&object.key) {
            Some(ObjectKind::Unrecognised(_)) => out.misnamed.push(object),
            Some(ObjectKind::Deprecation { owner: Owner::Module(m), version }) if &m == module => {
                out.deprecations.insert(version, object);
            }
            Some(ObjectKind::Bundle { owner: Owner::Module(m), version, .. }) if &m == module => {
                out.bundles.add(object, version);
            }
            Some(ObjectKind::ModuleArchive { module: m, version, extension }) if &m == module => {
                let rank = |e: &str| layout::MODULE_ARCHIVE_EXTENSIONS.iter().position(|x| *x == e);
                match out.chosen.get(&version) {
                    Some((kept, kept_ext)) if rank(kept_ext) <= rank(extension) => {
                        tracing::warn!(
                            kept = kept.key,
                            ignored = object.key,
                            "two archives for one version; serving the first"
                        );
                    }
                    _ => {
                        out.chosen.insert(version, (object, extension));
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// Each version's deprecation, from its file (`deprecations`); files for versions that are not
/// published get a record.
async fn deprecate<S: Storage>(
    indexer: &Indexer<'_, S>,
    module: &ModuleAddress,
    versions: &mut [ModuleVersion],
    mut files: BTreeMap<semver::Version, ObjectInfo>,
    rejections: &mut Rejections,
) -> Result<(), Error> {
    for entry in versions.iter_mut() {
        let file = crate::address::parse_version(&entry.version).ok().and_then(|v| files.remove(&v));
        entry.deprecation = match file {
            Some(file) => deprecations::read(indexer.storage, &file, entry.deprecation.as_ref(), rejections).await?,
            None => None,
        };
    }
    for (version, file) in files {
        let what = format!("version {version} of module {module}");
        deprecations::refuse_orphan(indexer.storage, &file, &what, rejections).await?;
    }
    Ok(())
}

/// Store the docs of one version (`layout::module_docs`), read from its archive.
async fn put_docs<S: Storage>(
    indexer: &Indexer<'_, S>,
    module: &ModuleAddress,
    version: &semver::Version,
    docs: &ModuleDocs,
) -> Result<(), Error> {
    let key = layout::module_docs(module, version);
    indexer.storage.put(&key, to_json(docs)?, CONTENT_TYPE_JSON, Precondition::None).await
}

/// Validate and hash a module archive, reading its docs in the same pass; `None` (with a
/// rejection record) if it is bad.
async fn index_module_archive<S: Storage>(
    indexer: &Indexer<'_, S>,
    object: &ObjectInfo,
    extension: &'static str,
    rejections: &mut Rejections,
) -> Result<Option<(ModuleVersion, ModuleDocs)>, Error> {
    let limit = (indexer.limits.module_archive_bytes, "REGISTRY_MAX_MODULE_ARCHIVE_BYTES");
    let Some(Spooled { mut file, sha256, size, etag, version_id }) =
        spool_or_reject(indexer, object, limit, rejections).await?
    else {
        return Ok(None);
    };
    let bounds = indexer.limits.bounds();
    let verdict = blocking(move || {
        file.rewind().map_err(|e| e.to_string())?;
        let kept = archive::read_module_archive(&mut file, extension, &bounds, &module_docs::wanted)?;
        Ok::<_, String>((kept, (extension != "zip").then(|| repack(file, &bounds))))
    })
    .await?;
    let (module, version) = match layout::classify(&object.key) {
        Some(ObjectKind::ModuleArchive { module, version, .. }) => (module, version.to_string()),
        _ => return Ok(None),
    };
    match verdict {
        Ok((kept, repacked)) => {
            rejections.clear(indexer.storage, &object.key).await?;
            let oci = match repacked {
                None => OciLayer { sha256: sha256.clone(), size, derived: false },
                Some(repacked) => oci::store_module_zip(indexer.storage, &module, repacked).await?,
            };
            let docs = module_docs::extract(&kept, &sha256);
            let entry = ModuleVersion {
                version,
                archive: object.key.clone(),
                size,
                sha256,
                etag,
                version_id,
                docs: true,
                compared: true,
                published_at: Some(crate::clock::rfc3339_now()),
                oci: Some(oci),
                judged: None,
                deprecation: None,
                provenance: None,
            };
            Ok(Some((entry, docs)))
        }
        Err(reason) => {
            rejections.reject(indexer.storage, &ObjectInfo { etag, ..object.clone() }, reason).await?;
            Ok(None)
        }
    }
}

/// The `.zip` a `.tar.gz` archive becomes for OCI, in a temporary file, or why it cannot be
/// one (a hard link).
fn repack(mut file: std::fs::File, bounds: &archive::Bounds) -> Result<tempfile::NamedTempFile, String> {
    file.rewind().map_err(|e| e.to_string())?;
    let zip = tempfile::NamedTempFile::new().map_err(|e| format!("a temporary file: {e}"))?;
    archive::tar_gz_to_zip(file, zip, bounds)
}

/// What a manifest write changed, as publish log entries: each version served now whose
/// archive or bytes differ from before is published (its old archive yanked if that key
/// changed), each version no longer served is yanked.
fn changes(module: &ModuleAddress, before: Option<&ModuleManifest>, after: &ModuleManifest) -> Vec<Change> {
    let change = |action, v: &ModuleVersion| Change {
        action,
        key: v.archive.clone(),
        sha256: Some(v.sha256.clone()),
        size: Some(v.size),
        etag: Some(v.etag.clone()).filter(|e| !e.is_empty()),
        version_id: v.version_id.clone(),
        principal: None,
        reason: (action == Action::Publish).then(|| v.judged.as_ref().and_then(breaking_summary)).flatten(),
    };
    let old = |version: &str| before.and_then(|m| m.versions.iter().find(|o| o.version == version));
    let mut out = Vec::new();
    for v in &after.versions {
        match old(&v.version) {
            Some(o) if o.archive == v.archive && o.sha256 == v.sha256 && o.version_id == v.version_id => {}
            Some(o) => {
                if o.archive != v.archive {
                    out.push(change(Action::Yank, o));
                }
                out.push(change(Action::Publish, v));
            }
            None => out.push(change(Action::Publish, v)),
        }
    }
    for o in before.map(|m| m.versions.as_slice()).unwrap_or_default() {
        if !after.versions.iter().any(|v| v.version == o.version) {
            out.push(change(Action::Yank, o));
        }
    }
    for v in &after.versions {
        let Ok(version) = crate::address::parse_version(&v.version) else { continue };
        let was = old(&v.version).and_then(|o| o.deprecation.as_ref());
        let key = layout::module_deprecation(module, &version);
        out.extend(deprecations::change(key, was, v.deprecation.as_ref()));
    }
    out
}

/// The publish log's reason for a version published with breaking changes.
fn breaking_summary(judged: &crate::manifest::Judgment) -> Option<String> {
    let against = judged.against.as_deref()?;
    (judged.breaking_count() > 0).then(|| {
        let more = if judged.more > 0 { format!("; and {} more", judged.more) } else { String::new() };
        format!("breaking changes since {against}: {}{more}", judged.breaking.join("; "))
    })
}

#[cfg(test)]
mod tests;
