//! OCI artifacts (`oci::artifacts`), kept in line with the manifests they come from.
//!
//! A provider version's image index goes into `VERSION.json` itself (`oci_index`), so a tag
//! and the archives it names change together in one conditional write; the platform
//! manifests, the index by its digest and the blob pointers are content-addressed objects
//! written before that document (so nothing it names is missing when it appears), and the
//! pointers of zips no longer served are deleted after it.
//!
//! A module version's package (one image manifest, under its tag and by digest, and its blob
//! pointer) is written before the module manifest that lists the version and removed after
//! the one that yanks it; a `.tar.gz` archive's zip is made when the archive is read.

use crate::address::{ModuleAddress, ProviderAddress};
use crate::error::Error;
use crate::layout;
use crate::manifest::{CONTENT_TYPE_JSON, ModuleManifest, OciBlob, OciLayer, ProviderVersion};
use crate::oci::artifacts::{Package, ProviderArtifacts, module_artifact, provider_artifacts};
use crate::oci::name::Repository;
use crate::oci::{MEDIA_TYPE_INDEX, MEDIA_TYPE_MANIFEST};
use crate::storage::{Precondition, Storage};

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

/// Before the document is written: every manifest by its digest and every served zip's blob
/// pointer (idempotent: the same digest is always the same bytes).
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
    for archive in document.archives.values() {
        let blob = OciBlob {
            key: format!("{}{}", layout::provider_prefix(provider), archive.url),
            version_id: archive.version_id().map(str::to_string),
            size: archive.indexed.as_ref().map(|i| i.size).unwrap_or_default(),
        };
        put_pointer(storage, &layout::oci_blob(provider, &format!("sha256:{}", archive.zh())), &blob).await?;
    }
    Ok(())
}

/// After the document is written: the blob pointers of zips it no longer serves (a yank, an
/// overwrite allowed by `REGISTRY_ALLOW_OVERWRITE`), so their digests answer 404.
pub(super) async fn forget<S: Storage>(
    storage: &S,
    provider: &ProviderAddress,
    before: Option<&ProviderVersion>,
    after: &ProviderVersion,
) -> Result<(), Error> {
    let Some(before) = before else { return Ok(()) };
    let served: std::collections::BTreeSet<&str> = after.archives.values().map(|a| a.zh()).collect();
    for gone in before.archives.values().map(|a| a.zh()).filter(|zh| !zh.is_empty() && !served.contains(zh)) {
        storage.delete(&layout::oci_blob(provider, &format!("sha256:{gone}"))).await?;
    }
    Ok(())
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
        let blob = match layer.derived {
            true => OciBlob { key: layout::oci_module_zip(module, &layer.sha256), version_id: None, size: layer.size },
            false => OciBlob { key: version.archive.clone(), version_id: version.version_id.clone(), size: layer.size },
        };
        put_pointer(storage, &layout::oci_module_blob(module, &format!("sha256:{}", layer.sha256)), &blob).await?;
    }
    Ok(())
}

/// After a module manifest is written: the tags and blob pointers of versions it no longer
/// serves (yanked), so they answer 404.
pub(super) async fn forget_module<S: Storage>(
    storage: &S,
    module: &ModuleAddress,
    before: Option<&ModuleManifest>,
    after: &ModuleManifest,
) -> Result<(), Error> {
    let Some(before) = before else { return Ok(()) };
    let served: std::collections::BTreeSet<&str> =
        after.versions.iter().filter_map(|v| v.oci.as_ref()).map(|l| l.sha256.as_str()).collect();
    for gone in &before.versions {
        // Stored versions are canonical SemVer; one that is not was never tagged.
        let Ok(version) = crate::address::parse_version(&gone.version) else { continue };
        if after.find(&version).is_some() {
            continue;
        }
        storage.delete(&layout::oci_module_tag(module, &crate::oci::name::tag(&version))).await?;
        if let Some(layer) = gone.oci.as_ref().filter(|l| !l.sha256.is_empty() && !served.contains(l.sha256.as_str())) {
            storage.delete(&layout::oci_module_blob(module, &format!("sha256:{}", layer.sha256))).await?;
        }
    }
    Ok(())
}

/// A blob pointer, stored (idempotent: a digest always names the same bytes).
async fn put_pointer<S: Storage>(storage: &S, key: &str, blob: &OciBlob) -> Result<(), Error> {
    let bytes = serde_json::to_vec(blob).map_err(|e| Error::Internal(format!("serialise OCI blob: {e}")))?;
    storage.put(key, bytes.into(), CONTENT_TYPE_JSON, Precondition::None).await
}
