//! The module pass: one manifest per module, one entry per version, from the archives under
//! the module's upload prefix.

use std::collections::BTreeMap;
use std::io::Seek;

use super::judgment::{self, Verdict};
use super::spool::{Spooled, blocking};
use super::{Indexer, Outcome, Rejections, deprecations};
use crate::address::ModuleAddress;
use crate::archive;
use crate::error::Error;
use crate::layout::{self, ObjectKind, Owner};
use crate::manifest::{CONTENT_TYPE_JSON, ModuleManifest, ModuleVersion, OciLayer, to_json};
use crate::module_docs::{self, ModuleDocs};
use crate::publish_log::{Action, Change};
use crate::storage::{ObjectInfo, Precondition, Storage};

/// Rebuild one module's manifest from its archives.
pub(super) async fn module_pass<S: Storage>(
    indexer: &Indexer<'_, S>,
    module: &ModuleAddress,
) -> Result<Outcome, Error> {
    let manifest_key = layout::module_manifest(module);
    let prefix = layout::module_prefix(module);
    // Rule 1: the manifest (and its ETag) before the listing.
    let read = Indexer::read_document(indexer.storage, &manifest_key).await?;
    let existing = read.as_ref().map(|o| ModuleManifest::parse(&o.bytes)).transpose().unwrap_or_else(|e| {
        tracing::warn!(key = manifest_key, error = %e, "existing manifest unreadable; rebuilding it");
        None
    });
    let objects = indexer.storage.list(&prefix).await?;
    let mut rejections = Rejections::load(indexer.storage, &prefix, indexer.principals()).await?;

    let Archives { chosen, deprecations, misnamed } = choose_archives(module, objects);
    rejections.reject_misnamed(indexer.storage, &misnamed).await?;
    let mut versions = Vec::with_capacity(chosen.len());
    // The docs of versions accepted in this pass, for judging those above them.
    let mut fresh = BTreeMap::new();
    for (version, (object, extension)) in chosen {
        let previous = existing.as_ref().and_then(|m| m.find(&version));
        // Reused only with its docs: a manifest from before docs were read is read again.
        // And with its OCI layer: a manifest from before OCI reads the archive once more too.
        // And with its comparisons: one from before they were stored is compared once.
        let same_archive = previous
            .filter(|e| e.archive == object.key && !e.etag.is_empty() && e.docs && e.compared && e.oci.is_some());
        let reusable = match same_archive {
            Some(e) if indexer.listed_etag(&object).await? == e.etag => Some(e),
            _ => None,
        };
        if let Some(entry) = reusable {
            versions.push(entry.clone());
            rejections.keep(&object.key);
            continue;
        }
        match (index_module_archive(indexer, &object, extension, &mut rejections).await?, previous) {
            // The same bytes again (a re-upload, a copy): still the object first published,
            // which a versioned bucket keeps serving by its version id.
            (Some((entry, mut docs)), Some(published)) if entry.sha256 == published.sha256 => {
                if !published.docs || !published.compared {
                    judgment::compare(indexer.storage, module, &version, &mut docs, &versions, &fresh).await?;
                    put_docs(indexer, module, &version, &docs).await?;
                }
                let (etag, oci) = (entry.etag, entry.oci);
                versions.push(ModuleVersion { etag, docs: true, compared: true, oci, ..published.clone() });
            }
            (Some((entry, _)), Some(published)) if !indexer.limits.overwrite_published => {
                let what = format!("version {version} of module {module}");
                let reason = super::immutable(&what, &published.sha256, &entry.sha256);
                let uploaded = ObjectInfo { etag: super::immutable_fingerprint(&entry.etag), ..object.clone() };
                rejections.reject(indexer.storage, &uploaded, reason).await?;
                versions.push(published.clone());
            }
            (Some((entry, mut docs)), previous) => {
                let policy = &indexer.limits.semver;
                match judgment::judge(indexer.storage, policy, module, &version, &mut docs, &versions, &fresh).await? {
                    Verdict::Refuse(reason) => {
                        let uploaded = ObjectInfo { etag: entry.etag.clone(), ..object.clone() };
                        rejections.reject(indexer.storage, &uploaded, reason).await?;
                        versions.extend(previous.cloned());
                    }
                    Verdict::Publish(judged) => {
                        // Docs first, so the manifest never names a version whose docs are not there.
                        put_docs(indexer, module, &version, &docs).await?;
                        fresh.insert(entry.version.clone(), docs);
                        versions.push(ModuleVersion { judged, ..entry });
                    }
                }
            }
            // Rejected: what was published for this version stays as it was.
            (None, previous) => versions.extend(previous.cloned()),
        }
    }
    deprecate(indexer, module, &mut versions, deprecations, &mut rejections).await?;
    rejections.clear_stale(indexer.storage).await?;

    let manifest = ModuleManifest::new(versions);
    let unchanged = match &existing {
        Some(e) => *e == manifest,
        None => manifest.versions.is_empty(),
    };
    if unchanged {
        return Ok(Outcome::Unchanged);
    }
    let count = manifest.versions.len();
    super::oci::store_module(indexer.storage, module, existing.as_ref(), &manifest).await?;
    let precondition = Precondition::replacing(read.as_ref().map(|o| o.etag.as_str()));
    indexer.storage.put(&manifest_key, to_json(&manifest)?, CONTENT_TYPE_JSON, precondition).await?;
    super::oci::forget_module(indexer.storage, module, existing.as_ref(), &manifest).await?;
    indexer.log_changes(changes(module, existing.as_ref(), &manifest)).await?;
    Ok(Outcome::Written { versions: count })
}

/// A module's uploads, sorted out.
struct Archives {
    /// One archive per version.
    chosen: BTreeMap<semver::Version, (ObjectInfo, &'static str)>,
    /// Deprecation files by version.
    deprecations: BTreeMap<semver::Version, ObjectInfo>,
    /// Objects whose names are no archive's.
    misnamed: Vec<ObjectInfo>,
}

/// One archive per version of `module` among `objects`, its deprecation files, and the objects
/// whose names are neither. Two formats of one version is a publishing mistake: the first by
/// extension preference (the order of `MODULE_ARCHIVE_EXTENSIONS`) is kept.
fn choose_archives(module: &ModuleAddress, objects: Vec<ObjectInfo>) -> Archives {
    let mut out = Archives { chosen: BTreeMap::new(), deprecations: BTreeMap::new(), misnamed: Vec::new() };
    for object in objects {
        match layout::classify(&object.key) {
            Some(ObjectKind::Unrecognised(_)) => out.misnamed.push(object),
            Some(ObjectKind::Deprecation { owner: Owner::Module(m), version }) if &m == module => {
                out.deprecations.insert(version, object);
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
        indexer.spool_or_reject(object, limit, rejections).await?
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
                Some(repacked) => super::oci::store_module_zip(indexer.storage, &module, repacked).await?,
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
mod tests {
    use super::super::fixtures::*;
    use super::super::{Indexer, Limits, Outcome};
    use crate::storage::{MemoryStorage, Storage};
    use crate::testing::{tar_gz as tar_gz_of, zip as zip_of};
    use sha2::{Digest, Sha256};

    #[tokio::test]
    async fn module_manifest_follows_the_archives() {
        let s = MemoryStorage::new();
        let indexer = Indexer::new(&s, Limits::default());
        s.insert("modules/acme/vpc/aws/1.0.0.tar.gz", tf("one"));
        s.insert("modules/acme/vpc/aws/1.1.0.zip", zip_of(&[("main.tf", b"two")]));
        s.insert("modules/acme/vpc/aws/notes.txt", "ignored");
        assert_eq!(indexer.reindex(&module()).await.unwrap(), Outcome::Written { versions: 2 });
        assert_eq!(versions(&s), ["1.1.0", "1.0.0"]);
        let entry = &manifest(&s).versions[1];
        assert_eq!(entry.sha256, hex::encode(Sha256::digest(tf("one"))));
        assert_eq!(entry.size, tf("one").len() as u64);

        // notes.txt is not indexed, and says why.
        assert!(
            rejection(&s, "modules/acme/vpc/aws/notes.txt").unwrap().reason.contains("is not a module archive name")
        );

        // Nothing changed: no write, and unchanged archives are not read again (manifest,
        // archive listing, rejection listing, the one rejection record; then the catalog and
        // the manifest its entry is checked against).
        let before = s.request_count();
        assert_eq!(indexer.reindex(&module()).await.unwrap(), Outcome::Unchanged);
        assert_eq!(s.request_count() - before, 4 + 2);

        // A second format of a published version is other bytes for it: refused, and the
        // published archive stays served.
        s.insert("modules/acme/vpc/aws/1.1.0.tar.gz", tf("two"));
        indexer.reindex(&module()).await.unwrap();
        assert_eq!(manifest(&s).versions[0].archive, "modules/acme/vpc/aws/1.1.0.zip");
        let record = rejection(&s, "modules/acme/vpc/aws/1.1.0.tar.gz").unwrap();
        assert!(record.reason.contains("is already published with sha256"), "{}", record.reason);
        // Where overwrites are allowed, the preferred extension wins.
        let overwriting = Indexer::new(&s, Limits { overwrite_published: true, ..Limits::default() });
        overwriting.reindex(&module()).await.unwrap();
        assert_eq!(manifest(&s).versions[0].archive, "modules/acme/vpc/aws/1.1.0.tar.gz");

        // Yank everything: the manifest is emptied (never deleted), which answers 404.
        for key in s.keys().into_iter().filter(|k| !k.ends_with("manifest.json")) {
            s.delete(&key).await.unwrap();
        }
        assert_eq!(indexer.reindex(&module()).await.unwrap(), Outcome::Written { versions: 0 });
        assert!(versions(&s).is_empty());
        assert_eq!(indexer.reindex(&module()).await.unwrap(), Outcome::Unchanged);
    }

    #[tokio::test]
    async fn a_bad_upload_is_rejected_visibly_and_harmlessly() {
        let s = MemoryStorage::new();
        let limits = Limits { module_archive_bytes: 10_000, ..Limits::default() };
        let indexer = Indexer::new(&s, limits);
        s.insert("modules/acme/vpc/aws/1.0.0.tar.gz", tf("good"));
        indexer.reindex(&module()).await.unwrap();
        let published = s.peek(MANIFEST);

        let bad = [
            ("modules/acme/vpc/aws/1.1.0.tar.gz", tar_gz_of(&[("README.md", b"no tf")]), "no .tf"),
            ("modules/acme/vpc/aws/1.2.0.zip", b"not a zip".to_vec(), "not a readable zip"),
            ("modules/acme/vpc/aws/1.3.0.tgz", vec![1u8; 20_000], "over the limit of 10000"),
        ];
        for (key, bytes, reason) in &bad {
            s.insert(key, bytes.clone());
            indexer.on_object_changed(key).await.unwrap();
            assert_eq!(s.peek(MANIFEST), published, "{key}: the manifest stays as it was");
            let record = rejection(&s, key).unwrap_or_else(|| panic!("{key} has a rejection record"));
            assert!(record.reason.contains(reason), "{}", record.reason);
            assert_eq!(record.key, *key);
            assert!(record.rejected_at.ends_with('Z') && record.rejected_at.len() == 20, "{}", record.rejected_at);
        }

        // A rejected upload is not read again while its bytes are the same.
        let before = s.request_count();
        indexer.reindex(&module()).await.unwrap();
        let reads = s.request_count() - before;
        assert_eq!(
            reads,
            3 + 3 + 2,
            "manifest, listing, rejection listing, one read per record, catalog and manifest; no archive read"
        );

        // Overwriting a published version with a bad archive keeps what was published.
        s.insert("modules/acme/vpc/aws/1.0.0.tar.gz", b"corrupt".to_vec());
        indexer.reindex(&module()).await.unwrap();
        assert_eq!(s.peek(MANIFEST), published);

        // Fixing an upload clears its record and publishes it; deleting one clears its record.
        s.insert("modules/acme/vpc/aws/1.1.0.tar.gz", tf("fixed"));
        s.delete("modules/acme/vpc/aws/1.2.0.zip").await.unwrap();
        indexer.reindex(&module()).await.unwrap();
        assert_eq!(versions(&s), ["1.1.0", "1.0.0"]);
        assert!(rejection(&s, "modules/acme/vpc/aws/1.1.0.tar.gz").is_none());
        assert!(rejection(&s, "modules/acme/vpc/aws/1.2.0.zip").is_none());
        assert!(rejection(&s, "modules/acme/vpc/aws/1.3.0.tgz").is_some());
    }

    /// In a versioned bucket (as deployed), a published version keeps its bytes: the manifest
    /// names the object version hashed, a different upload is refused with a record, and the
    /// download URL still names the original version, whose bytes are the published ones.
    #[tokio::test]
    async fn published_versions_are_immutable() {
        let s = MemoryStorage::versioned();
        let indexer = Indexer::new(&s, Limits::default());
        let key = "modules/acme/vpc/aws/1.0.0.tar.gz";
        s.insert(key, tf("original"));
        indexer.on_object_changed(key).await.unwrap();
        let published = manifest(&s).versions[0].clone();
        let original = published.version_id.clone().expect("the version id is recorded");
        assert_eq!(s.peek_version(key, &original).unwrap(), tf("original"));

        // The same bytes again: nothing to refuse, still the original object version.
        s.insert(key, tf("original"));
        indexer.on_object_changed(key).await.unwrap();
        assert_eq!(manifest(&s).versions[0].version_id, Some(original.clone()));
        assert!(rejection(&s, key).is_none());

        // Other bytes: refused, the manifest unchanged, the original still what is named.
        s.insert(key, tf("replaced"));
        indexer.on_object_changed(key).await.unwrap();
        assert_eq!(manifest(&s).versions[0].sha256, published.sha256);
        assert_eq!(manifest(&s).versions[0].version_id, Some(original.clone()));
        let record = rejection(&s, key).unwrap();
        assert!(record.reason.contains("Published versions are immutable"), "{}", record.reason);
        assert!(record.reason.contains(&published.sha256), "{}", record.reason);
        // The refused bytes are not read again while they stay.
        let before = s.request_count();
        indexer.on_object_changed(key).await.unwrap();
        assert_eq!(s.request_count() - before, 4 + 2, "manifest, listing, rejection listing, the record; catalog");

        // Yank stays a delete: the version goes, its record too; a new upload then publishes.
        s.delete(key).await.unwrap();
        indexer.on_object_changed(key).await.unwrap();
        assert!(versions(&s).is_empty());
        assert!(rejection(&s, key).is_none());
        s.insert(key, tf("replaced"));
        indexer.on_object_changed(key).await.unwrap();
        let republished = manifest(&s).versions[0].clone();
        assert_eq!(republished.sha256, hex::encode(Sha256::digest(tf("replaced"))));
        assert_ne!(republished.version_id, Some(original));

        // REGISTRY_ALLOW_OVERWRITE: an upload replaces a published version.
        let overwriting = Indexer::new(&s, Limits { overwrite_published: true, ..Limits::default() });
        s.insert(key, tf("third"));
        overwriting.on_object_changed(key).await.unwrap();
        assert_eq!(manifest(&s).versions[0].sha256, hex::encode(Sha256::digest(tf("third"))));
        assert!(rejection(&s, key).is_none());
    }

    #[tokio::test]
    async fn each_version_gets_its_docs_and_a_published_version_keeps_them() {
        use crate::module_docs::ModuleDocs;
        let s = MemoryStorage::new();
        let indexer = Indexer::new(&s, Limits::default());
        let docs_key = "indexed/modules/acme/vpc/aws/docs/1.0.0.json";
        let docs = |s: &MemoryStorage| -> ModuleDocs { serde_json::from_slice(&s.peek(docs_key).unwrap()).unwrap() };
        let archive = tar_gz_of(&[
            ("README.md", b"# VPC\n".as_slice()),
            ("variables.tf", b"variable \"name\" { type = string }\n"),
            ("modules/subnet/main.tf", b"output \"id\" { value = 1 }\n"),
            ("broken.tf", b"resource {"),
        ]);
        s.insert("modules/acme/vpc/aws/1.0.0.tar.gz", archive.clone());
        indexer.reindex(&module()).await.unwrap();
        let entry = &manifest(&s).versions[0];
        assert!(entry.docs);
        let first = docs(&s);
        assert_eq!(first.sha256, entry.sha256, "the docs name the archive they were read from");
        assert_eq!(first.root.readme.as_deref(), Some("# VPC\n"));
        assert_eq!(first.root.inputs[0].name, "name");
        assert_eq!(first.submodules[0].outputs[0].name, "id");
        assert!(first.warnings[0].starts_with("broken.tf:1:"), "{:?}", first.warnings);

        // Other bytes for the published version: refused, and its docs stay the published ones.
        s.insert("modules/acme/vpc/aws/1.0.0.tar.gz", tar_gz_of(&[("main.tf", b"variable \"evil\" {}\n".as_slice())]));
        indexer.reindex(&module()).await.unwrap();
        assert_eq!(docs(&s), first);

        // A manifest written before docs existed: the next pass reads the archive once more.
        s.insert("modules/acme/vpc/aws/1.0.0.tar.gz", archive);
        indexer.reindex(&module()).await.unwrap();
        let mut old = manifest(&s);
        old.versions[0].docs = false;
        s.insert(MANIFEST, serde_json::to_vec(&old).unwrap());
        s.delete(docs_key).await.unwrap();
        indexer.reindex(&module()).await.unwrap();
        assert!(manifest(&s).versions[0].docs);
        assert_eq!(docs(&s), first);
        let before = s.request_count();
        assert_eq!(indexer.reindex(&module()).await.unwrap(), Outcome::Unchanged);
        assert!(s.request_count() - before <= 4 + 2, "then reused without reading the archive");
    }
}
