//! OCI artifacts (`oci::artifacts`), kept in line with the manifests they come from.
//!
//! A provider version's image index goes into `VERSION.json` itself (`oci_index`), so a tag
//! and the archives it names change together in one conditional write; the platform
//! manifests, the index by its digest and the blob pointers are content-addressed objects
//! written before that document (so nothing it names is missing when it appears), and the
//! zips it no longer serves are taken out of their pointers after it.
//!
//! A module version's package (one image manifest, under its tag and by digest, and its blob
//! pointer) is written before the module manifest that lists the version and removed after
//! the one that yanks it; a `.tar.gz` archive's zip is made when the archive is read.
//!
//! A blob is named by its digest, so two zips with the same bytes (two versions, two
//! platforms) have one pointer: it names one of them, and goes only with the last. A module
//! manifest lists every version, so its pointers follow from it; a provider's pass sees one
//! version, so its pointer keeps the set of zips that have its bytes (`Pointer`).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::address::{ModuleAddress, ProviderAddress};
use crate::error::Error;
use crate::layout;
use crate::manifest::{CONTENT_TYPE_JSON, ModuleManifest, ModuleVersion, OciBlob, OciLayer, ProviderVersion};
use crate::oci::artifacts::{Package, ProviderArtifacts, module_artifact, provider_artifacts};
use crate::oci::name::Repository;
use crate::oci::{MEDIA_TYPE_INDEX, MEDIA_TYPE_MANIFEST};
use crate::retry::{self, Backoff};
use crate::storage::{Precondition, Storage};

/// How a provider's pointer update that lost a race is read again: another version's pass
/// with the same bytes wrote first. Retried here, not by the pass, whose document may be
/// written already (a pass run again would find it unchanged and skip the pointers).
const POINTER_RETRY: Backoff =
    Backoff { attempts: 20, first: Duration::from_millis(10), max: Duration::from_millis(200) };

/// Set `document.oci_index` from what it serves, and answer the artifacts to store: none
/// when nothing is served, when the address has no OCI repository name (a hostname with a
/// port), or when a served zip has no recorded size or `zh:` (none the indexer writes lacks
/// them; documents from before sizes were recorded do, until a repair).
pub(super) fn attach(provider: &ProviderAddress, document: &mut ProviderVersion) -> Option<ProviderArtifacts> {
    document.oci_index = None;
    Repository::of_provider(provider)?;
    let mut packages = Vec::with_capacity(document.archives.len());
    for (platform, archive) in &document.archives {
        let (os, arch) = platform.split_once('_')?;
        let size = archive.indexed.as_ref().map(|i| i.size).filter(|s| *s > 0)?;
        let sha256 = Some(archive.zh()).filter(|zh| !zh.is_empty())?;
        packages.push(Package { os, arch, sha256, size, file_name: &archive.url });
    }
    if packages.is_empty() {
        return None;
    }
    let artifacts = provider_artifacts(&packages)
        .inspect_err(|e| tracing::error!(%provider, error = %e, "OCI artifacts not serialisable"))
        .ok()?;
    document.oci_index = String::from_utf8(artifacts.index.bytes.clone()).ok();
    Some(artifacts)
}

/// Before the document is written: every manifest by its digest, and every served zip added
/// to its blob pointer (idempotent: the same digest is always the same bytes).
pub(super) async fn store<S: Storage>(
    storage: &S,
    provider: &ProviderAddress,
    document: &ProviderVersion,
    artifacts: &ProviderArtifacts,
) -> Result<(), Error> {
    for manifest in &artifacts.manifests {
        let key = layout::oci_manifest(provider, &manifest.digest);
        storage.put(&key, manifest.bytes.clone().into(), MEDIA_TYPE_MANIFEST, Precondition::None).await?;
    }
    let index = &artifacts.index;
    let key = layout::oci_manifest(provider, &index.digest);
    storage.put(&key, index.bytes.clone().into(), MEDIA_TYPE_INDEX, Precondition::None).await?;
    for (digest, blob) in provider_blobs(provider, document) {
        let change = Change::Add { member: &blob.key, blob: &blob };
        update_pointer(storage, &layout::oci_blob(provider, &digest), change).await?;
    }
    Ok(())
}

/// What to do once the document is written: each zip it no longer serves (a yank, an
/// overwrite allowed by `REGISTRY_ALLOW_OVERWRITE`) taken out of its blob pointer, which
/// answers 404 once no zip is left in it. Kept in the document with its log intent
/// (`documents`), so a pass that fails before doing it leaves it to the next reader.
pub(super) fn forget(
    provider: &ProviderAddress,
    before: Option<&ProviderVersion>,
    after: &ProviderVersion,
) -> Vec<Step> {
    let Some(before) = before.filter(|_| Repository::of_provider(provider).is_some()) else { return Vec::new() };
    let served: BTreeSet<(String, String)> = provider_blobs(provider, after).map(|(d, blob)| (d, blob.key)).collect();
    provider_blobs(provider, before)
        .filter(|(digest, blob)| !served.contains(&(digest.clone(), blob.key.clone())))
        .map(|(digest, blob)| Step::Remove { pointer: layout::oci_blob(provider, &digest), member: blob.key })
        .collect()
}

/// One OCI step a document's write owes, taken once it is written: a module version's tags,
/// and taking out what the document no longer serves. Stored in the document until done, so
/// each is idempotent (done twice, it changes nothing the second time).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "do", rename_all = "lowercase")]
pub(super) enum Step {
    /// A tag written: a version's package manifest (JSON) under its tag, or under `latest`.
    Tag { key: String, manifest: String },
    /// A tag deleted (a yanked version's; `latest` when no release is left).
    Delete { key: String },
    /// A member taken out of a blob pointer.
    Remove { pointer: String, member: String },
    /// A member put (back) into a blob pointer.
    Add { pointer: String, member: String, blob: OciBlob },
}

/// Do each step of `steps`, in order.
pub(super) async fn apply<S: Storage>(storage: &S, steps: &[Step]) -> Result<(), Error> {
    for step in steps {
        match step {
            Step::Tag { key, manifest } => {
                let bytes = bytes::Bytes::from(manifest.clone().into_bytes());
                storage.put(key, bytes, MEDIA_TYPE_MANIFEST, Precondition::None).await?;
            }
            Step::Delete { key } => storage.delete(key).await?,
            Step::Remove { pointer, member } => update_pointer(storage, pointer, Change::Remove(member)).await?,
            Step::Add { pointer, member, blob } => {
                update_pointer(storage, pointer, Change::Add { member, blob }).await?;
            }
        }
    }
    Ok(())
}

/// A version document's zips as blobs: digest (`sha256:` and its `zh:`) and where they are.
fn provider_blobs<'a>(
    provider: &ProviderAddress,
    document: &'a ProviderVersion,
) -> impl Iterator<Item = (String, OciBlob)> + 'a {
    let prefix = layout::provider_prefix(provider);
    document.archives.values().filter(|a| !a.zh().is_empty()).map(move |archive| {
        let blob = OciBlob {
            key: format!("{prefix}{}", archive.url),
            version_id: archive.version_id().map(str::to_string),
            size: archive.indexed.as_ref().map(|i| i.size).unwrap_or_default(),
        };
        (format!("sha256:{}", archive.zh()), blob)
    })
}

/// A blob pointer as the indexer keeps it: the `OciBlob` the OCI route reads (bytes with this
/// digest; an empty key answers 404), and every member that serves them with what it serves: a
/// provider's zips by bucket key, a module's versions by archive key (a `.tar.gz` version
/// serves the zip made of it, which two versions with the same bytes share). Never deleted,
/// emptied instead, so an update is always a conditional write over what was read, and a yank
/// cannot race a publish of the same bytes.
#[derive(Debug, Serialize, Deserialize)]
struct Pointer {
    #[serde(flatten)]
    blob: OciBlob,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    zips: BTreeMap<String, OciBlob>,
}

/// What a pass does to a pointer: a member that serves these bytes added, or one taken out.
enum Change<'a> {
    Add { member: &'a str, blob: &'a OciBlob },
    Remove(&'a str),
}

impl Pointer {
    /// A stored pointer; one written before the set was kept has the object it names as its
    /// one member, and one that does not parse is rebuilt from what this pass knows.
    fn read(bytes: &[u8]) -> Pointer {
        let mut pointer = serde_json::from_slice::<Pointer>(bytes).unwrap_or_else(|_| Pointer::empty());
        if pointer.zips.is_empty() && !pointer.blob.key.is_empty() {
            pointer.zips.insert(pointer.blob.key.clone(), pointer.blob.clone());
        }
        pointer
    }

    fn empty() -> Pointer {
        Pointer { blob: OciBlob { key: String::new(), version_id: None, size: 0 }, zips: BTreeMap::new() }
    }

    /// Apply `change`, then name what a member serves: what was named before if a member
    /// still serves it (no needless write), else the first member's; nothing when none is left.
    fn apply(&mut self, change: &Change<'_>) {
        match change {
            Change::Add { member, blob } => _ = self.zips.insert(member.to_string(), (*blob).clone()),
            Change::Remove(member) => _ = self.zips.remove(*member),
        }
        let still = self.zips.values().find(|b| b.key == self.blob.key && !b.key.is_empty());
        self.blob = match still.or_else(|| self.zips.values().next()) {
            Some(blob) => blob.clone(),
            None => OciBlob { key: String::new(), version_id: None, size: 0 },
        };
    }
}

/// One change to a blob pointer, written only over what was read and read again
/// when another pass wrote first; a pointer that is absent stays so when a zip is taken out.
async fn update_pointer<S: Storage>(storage: &S, key: &str, change: Change<'_>) -> Result<(), Error> {
    // Most bytes are new: their pointer is written once, without a read (`If-None-Match: *`).
    if matches!(change, Change::Add { .. }) {
        let mut fresh = Pointer::empty();
        fresh.apply(&change);
        let bytes = serde_json::to_vec(&fresh).map_err(|e| Error::internal_from("serialise OCI blob", e))?;
        match storage.put(key, bytes.into(), CONTENT_TYPE_JSON, Precondition::IfAbsent).await {
            Err(Error::Conflict(_)) => {}
            done => return done,
        }
    }
    retry::on_conflict(POINTER_RETRY, key, |_| async {
        let read = storage.get(key).await?;
        if read.is_none() && matches!(change, Change::Remove(_)) {
            return Ok(());
        }
        let mut pointer = read.as_ref().map_or_else(Pointer::empty, |o| Pointer::read(&o.bytes));
        pointer.apply(&change);
        let bytes = serde_json::to_vec(&pointer).map_err(|e| Error::internal_from("serialise OCI blob", e))?;
        if read.as_ref().is_some_and(|o| o.bytes == bytes) {
            return Ok(());
        }
        let precondition = Precondition::replacing(read.as_ref().map(|o| o.etag.as_str()));
        storage.put(key, bytes.into(), CONTENT_TYPE_JSON, precondition).await
    })
    .await
}

/// The zip a `.tar.gz` module archive became (`archive::tar_gz_to_zip`), stored by its SHA-256
/// beside the module's artifacts; or, for an archive that cannot be a zip, a layer with no
/// digest (the version then has no OCI package, and is not read again for it).
pub(super) async fn store_module_zip<S: Storage>(
    storage: &S,
    module: &ModuleAddress,
    repacked: Result<tempfile::NamedTempFile, String>,
) -> Result<OciLayer, Error> {
    let zip = match repacked {
        Ok(zip) => zip,
        Err(why) => {
            tracing::warn!(%module, why, "no OCI package for this archive");
            return Ok(OciLayer { sha256: String::new(), size: 0, derived: true });
        }
    };
    let path = zip.path().to_path_buf();
    let (sha256, size) = super::spool::blocking(move || {
        use sha2::Digest;
        use std::io::Read;
        let (mut hasher, mut size, mut buffer) = (sha2::Sha256::new(), 0u64, vec![0u8; 64 << 10]);
        let mut file = std::fs::File::open(&path)?;
        loop {
            let n = file.read(&mut buffer)?;
            if n == 0 {
                break;
            }
            hasher.update(&buffer[..n]);
            size += n as u64;
        }
        Ok::<_, std::io::Error>((hex::encode(hasher.finalize()), size))
    })
    .await?
    .map_err(|e| Error::internal_from("hash the repacked zip", e))?;
    storage
        .put_file(&layout::oci_module_zip(module, &sha256), zip.path(), "application/zip", Precondition::None)
        .await?;
    Ok(OciLayer { sha256, size, derived: true })
}

/// Before a module manifest is written: each version that is new or changed gets its package
/// manifest by digest and its blob pointer (content-addressed: reachable only through a tag);
/// answers its tags (and `latest`, where it moved) as steps to take once the manifest that
/// lists the version is written, so that no tag names a version before a manifest serves it.
pub(super) async fn store_module<S: Storage>(
    storage: &S,
    module: &ModuleAddress,
    before: Option<&ModuleManifest>,
    after: &ModuleManifest,
) -> Result<Vec<Step>, Error> {
    if Repository::of_module(module).is_none() {
        return Ok(Vec::new());
    }
    let mut tags = Vec::new();
    for version in &after.versions {
        let parsed = crate::address::parse_version(&version.version)?;
        let unchanged = before.and_then(|b| b.find(&parsed)) == Some(version);
        let Some(layer) = version.oci.as_ref().filter(|l| !l.sha256.is_empty() && !unchanged) else { continue };
        let manifest = package_manifest(&version.version, layer)?;
        let key = layout::oci_module_manifest(module, &manifest.digest);
        storage.put(&key, manifest.bytes.clone().into(), MEDIA_TYPE_MANIFEST, Precondition::None).await?;
        if let Some((digest, blob)) = module_blob(module, version) {
            let change = Change::Add { member: &version.archive, blob: &blob };
            update_pointer(storage, &layout::oci_module_blob(module, &digest), change).await?;
        }
        let key = layout::oci_module_tag(module, &crate::oci::name::tag(&parsed));
        tags.push(Step::Tag { key, manifest: text(manifest.bytes)? });
    }
    tags.extend(tag_latest(module, before, after)?);
    Ok(tags)
}

/// A module version's package manifest (its one layer, the zip of `layer`).
fn package_manifest(version: &str, layer: &OciLayer) -> Result<crate::oci::artifacts::Stored, Error> {
    let file_name = format!("{version}.zip");
    let package = Package { os: "", arch: "", sha256: &layer.sha256, size: layer.size, file_name: &file_name };
    module_artifact(&package).map_err(|e| Error::internal_from("serialise OCI manifest", e))
}

/// A package manifest as a step keeps it: JSON text.
fn text(bytes: Vec<u8>) -> Result<String, Error> {
    String::from_utf8(bytes).map_err(|e| Error::internal_from("OCI manifest", e))
}

/// The `latest` tag, where the manifest's `oci_latest` moved (or was never recorded): the
/// package manifest of that version, the same bytes as its own tag's.
fn tag_latest(
    module: &ModuleAddress,
    before: Option<&ModuleManifest>,
    after: &ModuleManifest,
) -> Result<Option<Step>, Error> {
    let Some(latest) = after.oci_latest.as_deref() else { return Ok(None) };
    let version = crate::address::parse_version(latest)?;
    let layer_of = |m: &ModuleManifest| m.find(&version).and_then(|v| v.oci.clone());
    // Unchanged: the same version, with the same package (an overwrite changes it).
    if before.is_some_and(|b| b.oci_latest.as_deref() == Some(latest) && layer_of(b) == layer_of(after)) {
        return Ok(None);
    }
    let Some(layer) = layer_of(after).filter(|l| !l.sha256.is_empty()) else { return Ok(None) };
    let manifest = package_manifest(latest, &layer)?;
    let key = layout::oci_module_tag(module, crate::oci::name::LATEST);
    Ok(Some(Step::Tag { key, manifest: text(manifest.bytes)? }))
}

/// What to do once a module manifest is written: delete the tags of versions it no longer
/// serves (yanked), so they answer 404 (and `latest` when no release is left); and take each
/// version that no longer serves a blob (yanked, or replaced under `REGISTRY_ALLOW_OVERWRITE`)
/// out of that blob's pointer, which then names what another version with those bytes serves,
/// or nothing. Kept in the manifest with its log intent (`documents`) until done.
pub(super) fn forget_module(
    module: &ModuleAddress,
    before: Option<&ModuleManifest>,
    after: &ModuleManifest,
) -> Vec<Step> {
    let Some(before) = before.filter(|_| Repository::of_module(module).is_some()) else { return Vec::new() };
    let mut steps = Vec::new();
    if before.oci_latest.is_some() && after.oci_latest.is_none() {
        steps.push(Step::Delete { key: layout::oci_module_tag(module, crate::oci::name::LATEST) });
    }
    for gone in &before.versions {
        // Stored versions are canonical SemVer; one that is not was never tagged.
        let Ok(version) = crate::address::parse_version(&gone.version) else { continue };
        let now = after.find(&version);
        if now.is_none() {
            steps.push(Step::Delete { key: layout::oci_module_tag(module, &crate::oci::name::tag(&version)) });
        }
        let Some((digest, blob)) = module_blob(module, gone) else { continue };
        if now.and_then(|v| module_blob(module, v)) == Some((digest.clone(), blob.clone())) {
            continue;
        }
        let pointer = layout::oci_module_blob(module, &digest);
        steps.push(Step::Remove { pointer: pointer.clone(), member: gone.archive.clone() });
        // A pointer from before members were kept knows only what it names (its one member):
        // taken out too, and every version this manifest serves with the bytes put back.
        steps.push(Step::Remove { pointer: pointer.clone(), member: blob.key.clone() });
        for (member, other) in after.versions.iter().filter_map(|v| Some((v, module_blob(module, v)?))) {
            if other.0 == digest {
                let (pointer, member) = (pointer.clone(), member.archive.clone());
                steps.push(Step::Add { pointer, member, blob: other.1 });
            }
        }
    }
    steps
}

/// A module version's blob, if it has a package: its digest and where its bytes are (the zip
/// the indexer made of a `.tar.gz`, or the `.zip` archive itself).
fn module_blob(module: &ModuleAddress, version: &ModuleVersion) -> Option<(String, OciBlob)> {
    let layer = version.oci.as_ref().filter(|l| !l.sha256.is_empty())?;
    let blob = match layer.derived {
        true => OciBlob { key: layout::oci_module_zip(module, &layer.sha256), version_id: None, size: layer.size },
        false => OciBlob { key: version.archive.clone(), version_id: version.version_id.clone(), size: layer.size },
    };
    Some((format!("sha256:{}", layer.sha256), blob))
}

#[cfg(test)]
mod tests;
