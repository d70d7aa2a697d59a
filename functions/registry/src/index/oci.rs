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

/// After the document is written: each zip it no longer serves (a yank, an overwrite allowed
/// by `REGISTRY_ALLOW_OVERWRITE`) taken out of its blob pointer, which answers 404 once no
/// zip is left in it.
pub(super) async fn forget<S: Storage>(
    storage: &S,
    provider: &ProviderAddress,
    before: Option<&ProviderVersion>,
    after: &ProviderVersion,
) -> Result<(), Error> {
    let Some(before) = before.filter(|_| Repository::of_provider(provider).is_some()) else { return Ok(()) };
    let served: BTreeSet<(String, String)> = provider_blobs(provider, after).map(|(d, blob)| (d, blob.key)).collect();
    for (digest, blob) in provider_blobs(provider, before) {
        if !served.contains(&(digest.clone(), blob.key.clone())) {
            update_pointer(storage, &layout::oci_blob(provider, &digest), Change::Remove(&blob.key)).await?;
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
        let bytes = serde_json::to_vec(&fresh).map_err(|e| Error::Internal(format!("serialise OCI blob: {e}")))?;
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
        let bytes = serde_json::to_vec(&pointer).map_err(|e| Error::Internal(format!("serialise OCI blob: {e}")))?;
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
    .map_err(|e| Error::Internal(format!("hash the repacked zip: {e}")))?;
    storage
        .put_file(&layout::oci_module_zip(module, &sha256), zip.path(), "application/zip", Precondition::None)
        .await?;
    Ok(OciLayer { sha256, size, derived: true })
}

/// Before a module manifest is written: each version that is new or changed gets its package
/// manifest (by digest and under its tag) and its blob pointer.
pub(super) async fn store_module<S: Storage>(
    storage: &S,
    module: &ModuleAddress,
    before: Option<&ModuleManifest>,
    after: &ModuleManifest,
) -> Result<(), Error> {
    if Repository::of_module(module).is_none() {
        return Ok(());
    }
    for version in &after.versions {
        let parsed = crate::address::parse_version(&version.version)?;
        let unchanged = before.and_then(|b| b.find(&parsed)) == Some(version);
        let Some(layer) = version.oci.as_ref().filter(|l| !l.sha256.is_empty() && !unchanged) else { continue };
        let file_name = format!("{}.zip", version.version);
        let package = Package { os: "", arch: "", sha256: &layer.sha256, size: layer.size, file_name: &file_name };
        let manifest =
            module_artifact(&package).map_err(|e| Error::Internal(format!("serialise OCI manifest: {e}")))?;
        let tag = crate::oci::name::tag(&parsed);
        for key in [layout::oci_module_manifest(module, &manifest.digest), layout::oci_module_tag(module, &tag)] {
            storage.put(&key, manifest.bytes.clone().into(), MEDIA_TYPE_MANIFEST, Precondition::None).await?;
        }
        if let Some((digest, blob)) = module_blob(module, version) {
            let change = Change::Add { member: &version.archive, blob: &blob };
            update_pointer(storage, &layout::oci_module_blob(module, &digest), change).await?;
        }
    }
    tag_latest(storage, module, before, after).await
}

/// The `latest` tag, where the manifest's `oci_latest` moved (or was never recorded): the
/// package manifest of that version, the same bytes as its own tag's.
async fn tag_latest<S: Storage>(
    storage: &S,
    module: &ModuleAddress,
    before: Option<&ModuleManifest>,
    after: &ModuleManifest,
) -> Result<(), Error> {
    let Some(latest) = after.oci_latest.as_deref() else { return Ok(()) };
    let version = crate::address::parse_version(latest)?;
    let layer_of = |m: &ModuleManifest| m.find(&version).and_then(|v| v.oci.clone());
    // Unchanged: the same version, with the same package (an overwrite changes it).
    if before.is_some_and(|b| b.oci_latest.as_deref() == Some(latest) && layer_of(b) == layer_of(after)) {
        return Ok(());
    }
    let Some(layer) = layer_of(after).filter(|l| !l.sha256.is_empty()) else { return Ok(()) };
    let file_name = format!("{latest}.zip");
    let package = Package { os: "", arch: "", sha256: &layer.sha256, size: layer.size, file_name: &file_name };
    let manifest = module_artifact(&package).map_err(|e| Error::Internal(format!("serialise OCI manifest: {e}")))?;
    let key = layout::oci_module_tag(module, crate::oci::name::LATEST);
    storage.put(&key, manifest.bytes.into(), MEDIA_TYPE_MANIFEST, Precondition::None).await
}

/// After a module manifest is written: the tags of versions it no longer serves (yanked), so
/// they answer 404 (and `latest` when no release is left); and each version that no longer
/// serves a blob (yanked, or replaced under `REGISTRY_ALLOW_OVERWRITE`) taken out of that
/// blob's pointer, which then names what another version with those bytes serves, or nothing.
pub(super) async fn forget_module<S: Storage>(
    storage: &S,
    module: &ModuleAddress,
    before: Option<&ModuleManifest>,
    after: &ModuleManifest,
) -> Result<(), Error> {
    let Some(before) = before.filter(|_| Repository::of_module(module).is_some()) else { return Ok(()) };
    if before.oci_latest.is_some() && after.oci_latest.is_none() {
        storage.delete(&layout::oci_module_tag(module, crate::oci::name::LATEST)).await?;
    }
    for gone in &before.versions {
        // Stored versions are canonical SemVer; one that is not was never tagged.
        let Ok(version) = crate::address::parse_version(&gone.version) else { continue };
        let now = after.find(&version);
        if now.is_none() {
            storage.delete(&layout::oci_module_tag(module, &crate::oci::name::tag(&version))).await?;
        }
        let Some((digest, blob)) = module_blob(module, gone) else { continue };
        if now.and_then(|v| module_blob(module, v)) == Some((digest.clone(), blob.clone())) {
            continue;
        }
        let key = layout::oci_module_blob(module, &digest);
        update_pointer(storage, &key, Change::Remove(&gone.archive)).await?;
        // A pointer from before members were kept knows only what it names (its one member):
        // taken out too, and every version this manifest serves with the bytes put back.
        update_pointer(storage, &key, Change::Remove(&blob.key)).await?;
        for (member, other) in after.versions.iter().filter_map(|v| Some((v, module_blob(module, v)?))) {
            if other.0 == digest {
                update_pointer(storage, &key, Change::Add { member: &member.archive, blob: &other.1 }).await?;
            }
        }
    }
    Ok(())
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
mod tests {
    use bytes::Bytes;
    use sha2::{Digest, Sha256};

    use super::*;
    use crate::app::{App, Request};
    use crate::index::{Indexer, Limits};
    use crate::router::Service;
    use crate::storage::MemoryStorage;

    const PROVIDER: &str = "providers/registry.terraform.io/hashicorp/null/";
    const MODULE: &str = "modules/acme/vpc/aws/";

    /// The bytes a blob pointer leads to now (what the blob route's redirect downloads), if it
    /// leads anywhere: an unversioned bucket, so a pointer naming a deleted zip leads nowhere.
    fn resolve(s: &MemoryStorage, pointer: &str) -> Option<Bytes> {
        let blob: OciBlob = serde_json::from_slice(&s.peek(pointer)?).ok()?;
        match &blob.version_id {
            _ if blob.key.is_empty() => None,
            Some(v) => s.peek_version(&blob.key, v),
            None => s.peek(&blob.key),
        }
    }

    fn digest(bytes: &[u8]) -> String {
        format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
    }

    async fn publish(s: &MemoryStorage, key: &str, bytes: Option<&[u8]>) {
        match bytes {
            Some(bytes) => s.insert(key, bytes.to_vec()),
            None => s.remove(key),
        }
        Indexer::new(s, Limits::default()).on_object_changed(key).await.unwrap();
    }

    /// What the blob route answers for `digest` in `repository`: its status, and where a
    /// redirect sends the client (the key, before the presigned query).
    async fn route(app: &App<MemoryStorage>, repository: &str, digest: &str) -> (u16, Option<String>) {
        let reply = app.handle(&Request::get(&format!("/v2/{repository}blobs/{digest}"))).await;
        let location = reply.header_value("location").and_then(|l| l.split('?').next()).map(str::to_string);
        (reply.status.as_u16(), location)
    }

    /// Two provider zips with the same bytes (two versions, or two platforms of one) are one
    /// blob: yanking either leaves it served, from the other; yanking both makes it unknown.
    #[tokio::test]
    async fn a_provider_blob_shared_by_two_zips_goes_with_the_last() {
        let zip = crate::testing::provider_zip("null", "1.0.0", "same bytes");
        let key = |(v, p): (&str, &str)| format!("{PROVIDER}terraform-provider-null_{v}_{p}.zip");
        let provider = ProviderAddress::parse("registry.terraform.io", "hashicorp", "null").unwrap();
        let (digest, pointer) = (digest(&zip), layout::oci_blob(&provider, &digest(&zip)));
        let pairs = [
            [("1.0.0", "linux_amd64"), ("1.0.1", "linux_amd64")],
            [("1.0.0", "linux_amd64"), ("1.0.0", "darwin_arm64")],
        ];
        for [a, b] in pairs {
            for (first, second) in [(a, b), (b, a)] {
                let app = App::new(open(), MemoryStorage::new(), &[Service::Oci]);
                for zip_key in [key(a), key(b)] {
                    publish(app.storage(), &zip_key, Some(&zip)).await;
                }
                assert_eq!(resolve(app.storage(), &pointer).as_deref(), Some(&zip[..]));
                publish(app.storage(), &key(first), None).await;
                assert_eq!(resolve(app.storage(), &pointer).as_deref(), Some(&zip[..]), "{first:?} yanked");
                let location = format!("https://memory.invalid/{}", key(second));
                assert_eq!(route(&app, PROVIDER, &digest).await, (307, Some(location)), "{first:?} yanked");
                publish(app.storage(), &key(second), None).await;
                assert_eq!(resolve(app.storage(), &pointer), None, "both yanked");
                assert_eq!(route(&app, PROVIDER, &digest).await, (404, None), "both yanked");
            }
        }
    }

    /// The same for a module's versions: two `.zip` archives with the same bytes.
    #[tokio::test]
    async fn a_module_blob_shared_by_two_versions_goes_with_the_last() {
        let zip = crate::testing::module_zip(&[("main.tf", "# same")]);
        let module = ModuleAddress::parse("acme", "vpc", "aws").unwrap();
        let (digest, pointer) = (digest(&zip), layout::oci_module_blob(&module, &digest(&zip)));
        for (first, second) in [("1.0.0", "1.1.0"), ("1.1.0", "1.0.0")] {
            let app = App::new(open(), MemoryStorage::new(), &[Service::Oci]);
            for v in ["1.0.0", "1.1.0"] {
                publish(app.storage(), &format!("{MODULE}{v}.zip"), Some(&zip)).await;
            }
            assert_eq!(resolve(app.storage(), &pointer).as_deref(), Some(&zip[..]));
            publish(app.storage(), &format!("{MODULE}{first}.zip"), None).await;
            assert_eq!(resolve(app.storage(), &pointer).as_deref(), Some(&zip[..]), "{first} yanked");
            let location = format!("https://memory.invalid/{MODULE}{second}.zip");
            assert_eq!(route(&app, MODULE, &digest).await, (307, Some(location)), "{first} yanked");
            publish(app.storage(), &format!("{MODULE}{second}.zip"), None).await;
            assert_eq!(resolve(app.storage(), &pointer), None, "both yanked");
            assert_eq!(route(&app, MODULE, &digest).await, (404, None), "both yanked");
        }
    }

    /// A yank racing a publish of the same bytes (two `.tar.gz` versions, one repacked zip): the
    /// publishing pass adds its version to the pointer after the yanking pass read the
    /// manifest, and before that pass takes its own version out. The pointer keeps serving.
    #[tokio::test]
    async fn a_yank_racing_a_publish_of_the_same_bytes_keeps_the_blob() {
        let archive = crate::testing::module_tar_gz(&[("main.tf", "# same")]);
        let module = ModuleAddress::parse("acme", "vpc", "aws").unwrap();
        let app = App::new(open(), MemoryStorage::new(), &[Service::Oci]);
        let s = app.storage();
        let manifest = || ModuleManifest::parse(&s.peek(&layout::module_manifest(&module)).unwrap()).unwrap();
        publish(s, &format!("{MODULE}1.0.0.tar.gz"), Some(&archive)).await;
        let one = manifest();
        publish(s, &format!("{MODULE}1.1.0.tar.gz"), Some(&archive)).await;
        let both = manifest();
        let layer = one.versions[0].oci.clone().unwrap();
        let digest = format!("sha256:{}", layer.sha256);
        // The yanking pass read `one` and writes a manifest without 1.0.0; the publishing pass
        // (which read `one` too) added 1.1.0 to the pointer first.
        let yanked = ModuleManifest::new(Vec::new());
        store_module(s, &module, Some(&one), &both).await.unwrap();
        forget_module(s, &module, Some(&one), &yanked).await.unwrap();
        let pointer = layout::oci_module_blob(&module, &digest);
        let zip = resolve(s, &pointer).expect("1.1.0 still serves the blob");
        assert_eq!(super::tests::digest(&zip), digest);
        assert_eq!(route(&app, MODULE, &digest).await.0, 307);
    }

    /// A pointer written before the set was kept knows the one zip it names: taking out another
    /// keeps it (now with its set), taking out that one empties it; an unreadable one is
    /// rebuilt from the change.
    #[test]
    fn a_pointer_from_before_the_set_knows_its_own_zip() {
        let legacy = br#"{"key": "providers/h.io/n/t/a.zip", "version_id": "v1", "size": 3}"#;
        let mut pointer = Pointer::read(legacy);
        pointer.apply(&Change::Remove("providers/h.io/n/t/b.zip"));
        assert_eq!(
            (pointer.blob.key.as_str(), pointer.blob.version_id.as_deref()),
            ("providers/h.io/n/t/a.zip", Some("v1"))
        );
        let mut pointer = Pointer::read(&serde_json::to_vec(&pointer).unwrap());
        pointer.apply(&Change::Remove("providers/h.io/n/t/a.zip"));
        let emptied: OciBlob = serde_json::from_slice(&serde_json::to_vec(&pointer).unwrap()).unwrap();
        assert_eq!(emptied, OciBlob { key: String::new(), version_id: None, size: 0 }, "answers 404");
        let blob = OciBlob { key: "providers/h.io/n/t/c.zip".into(), version_id: None, size: 9 };
        let mut rebuilt = Pointer::read(b"{not json");
        rebuilt.apply(&Change::Add { member: &blob.key, blob: &blob });
        assert_eq!((rebuilt.blob, rebuilt.zips.len()), (blob, 1));
    }

    async fn status_of(app: &App<MemoryStorage>, method: &http::Method, path: &str) -> u16 {
        app.handle(&Request::new(method, path)).await.status.as_u16()
    }

    async fn tags_of(app: &App<MemoryStorage>, repository: &str) -> serde_json::Value {
        let reply = app.handle(&Request::get(&format!("{repository}/tags/list"))).await;
        serde_json::from_slice::<serde_json::Value>(&reply.body).unwrap()["tags"].clone()
    }

    /// The layer digest a manifest route answers with, or its status when it does not answer.
    async fn layer_of(app: &App<MemoryStorage>, path: &str) -> Result<String, u16> {
        let reply = app.handle(&Request::get(path)).await;
        match reply.status.as_u16() {
            200 => {
                let manifest: crate::oci::artifacts::ImageManifest = serde_json::from_slice(&reply.body).unwrap();
                Ok(manifest.layers[0].digest.clone())
            }
            status => Err(status),
        }
    }

    /// `latest` (what OpenTofu asks for when an `oci://` source names no tag) is the highest
    /// release with a package, never a pre-release; it moves down when that one is yanked,
    /// with its package when it is overwritten, answers 404 when no release is left, and a
    /// reindex gives it to a module whose manifest predates it. Providers have none.
    #[tokio::test]
    async fn latest_names_the_highest_release() {
        let app = App::new(open(), MemoryStorage::new(), &[Service::Oci]);
        let s = app.storage();
        let zips: Vec<Vec<u8>> =
            ["1.0.0", "1.1.0", "2.0.0-rc.1"].iter().map(|v| crate::testing::module_zip(&[("main.tf", v)])).collect();
        for (v, zip) in ["1.0.0", "1.1.0", "2.0.0-rc.1"].iter().zip(&zips) {
            publish(s, &format!("{MODULE}{v}.zip"), Some(zip)).await;
        }
        let latest = "/v2/modules/acme/vpc/aws/manifests/latest";
        assert_eq!(layer_of(&app, latest).await, Ok(digest(&zips[1])), "1.1.0, not the pre-release");
        assert_eq!(layer_of(&app, latest).await, layer_of(&app, "/v2/modules/acme/vpc/aws/manifests/1.1.0").await);
        let tags = tags_of(&app, "/v2/modules/acme/vpc/aws").await;
        assert_eq!(tags, serde_json::json!(["1.0.0", "1.1.0", "2.0.0-rc.1"]), "latest is not listed");

        let replaced = crate::testing::module_zip(&[("main.tf", "1.1.0 again")]);
        let overwrite = Limits { overwrite_published: true, ..Limits::default() };
        s.insert(&format!("{MODULE}1.1.0.zip"), replaced.clone());
        Indexer::new(s, overwrite).on_object_changed(&format!("{MODULE}1.1.0.zip")).await.unwrap();
        assert_eq!(layer_of(&app, latest).await, Ok(digest(&replaced)), "overwritten");

        publish(s, &format!("{MODULE}1.1.0.zip"), None).await;
        assert_eq!(layer_of(&app, latest).await, Ok(digest(&zips[0])), "1.1.0 yanked");
        publish(s, &format!("{MODULE}1.0.0.zip"), None).await;
        assert_eq!(layer_of(&app, latest).await, Err(404), "only a pre-release left");

        // A manifest written before `latest` existed: a reindex records and tags it.
        publish(s, &format!("{MODULE}1.0.0.zip"), Some(&zips[0])).await;
        let key = "indexed/modules/acme/vpc/aws/manifest.json";
        let mut old: ModuleManifest = ModuleManifest::parse(&s.peek(key).unwrap()).unwrap();
        old.oci_latest = None;
        s.insert(key, serde_json::to_vec(&old).unwrap());
        s.remove(&layout::oci_module_tag(&ModuleAddress::parse("acme", "vpc", "aws").unwrap(), "latest"));
        assert_eq!(layer_of(&app, latest).await, Err(404));
        Indexer::new(s, Limits::default()).reindex_all().await.unwrap();
        assert_eq!(layer_of(&app, latest).await, Ok(digest(&zips[0])), "after reindex");

        let zip = crate::testing::provider_zip("null", "1.0.0", "x");
        publish(s, &format!("{PROVIDER}terraform-provider-null_1.0.0_linux_amd64.zip"), Some(&zip)).await;
        let provider = "/v2/providers/registry.terraform.io/hashicorp/null/manifests/latest";
        assert_eq!(status_of(&app, &http::Method::GET, provider).await, 404);
    }

    /// `tags/list` names exactly the tags that resolve: a version whose document has no image
    /// index (written before OCI support) is left out until a reindex gives it one.
    #[tokio::test]
    async fn a_provider_lists_only_tags_that_resolve() {
        let app = App::new(open(), MemoryStorage::new(), &[Service::Oci]);
        let s = app.storage();
        for v in ["1.0.0", "1.1.0"] {
            let zip = crate::testing::provider_zip("null", v, "x");
            publish(s, &format!("{PROVIDER}terraform-provider-null_{v}_linux_amd64.zip"), Some(&zip)).await;
        }
        let provider = ProviderAddress::parse("registry.terraform.io", "hashicorp", "null").unwrap();
        // 1.1.0 as an older indexer left it: no image index in its document, none in its line.
        let doc_key = layout::provider_version(&provider, &semver::Version::new(1, 1, 0));
        let mut doc = ProviderVersion::parse(&s.peek(&doc_key).unwrap()).unwrap();
        doc.oci_index = None;
        s.insert(&doc_key, serde_json::to_vec(&doc).unwrap());
        let index_key = layout::provider_index(&provider);
        let mut index = crate::manifest::ProviderIndex::parse(&s.peek(&index_key).unwrap()).unwrap();
        index.versions.insert("1.1.0".into(), serde_json::json!({}));
        s.insert(&index_key, serde_json::to_vec(&index).unwrap());

        let repository = "/v2/providers/registry.terraform.io/hashicorp/null";
        let head = |tag: &str| format!("{repository}/manifests/{tag}");
        assert_eq!(tags_of(&app, repository).await, serde_json::json!(["1.0.0"]));
        assert_eq!(status_of(&app, &http::Method::HEAD, &head("1.0.0")).await, 200);
        assert_eq!(status_of(&app, &http::Method::HEAD, &head("1.1.0")).await, 404);
        Indexer::new(s, Limits::default()).reindex_all().await.unwrap();
        assert_eq!(tags_of(&app, repository).await, serde_json::json!(["1.0.0", "1.1.0"]));
        assert_eq!(status_of(&app, &http::Method::HEAD, &head("1.1.0")).await, 200, "every listed tag resolves");
    }

    fn open() -> crate::config::Config {
        let mut config = crate::config::Config::new("bucket");
        config.access.anonymous_providers = vec!["*".into()];
        config.access.anonymous_modules = vec!["*".into()];
        config
    }
}
