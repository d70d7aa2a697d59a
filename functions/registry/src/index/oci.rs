//! A provider version's OCI artifacts (`oci::artifacts`), kept in line with its document: the
//! image index goes into `VERSION.json` itself (`oci_index`), so a tag and the archives it
//! names change together in one conditional write; the platform manifests, the index by its
//! digest and the blob pointers are content-addressed objects written before that document
//! (so nothing it names is missing when it appears), and the pointers of zips no longer
//! served are deleted after it.

use crate::address::ProviderAddress;
use crate::error::Error;
use crate::layout;
use crate::manifest::{CONTENT_TYPE_JSON, OciBlob, ProviderVersion};
use crate::oci::artifacts::{Package, ProviderArtifacts, provider_artifacts};
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
        let bytes = serde_json::to_vec(&blob).map_err(|e| Error::Internal(format!("serialise OCI blob: {e}")))?;
        let key = layout::oci_blob(provider, &format!("sha256:{}", archive.zh()));
        storage.put(&key, bytes.into(), CONTENT_TYPE_JSON, Precondition::None).await?;
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
