//! The OCI artifacts of a provider version, in exactly the shape OpenTofu's `oci_mirror`
//! requires (`internal/getproviders/oci_registry_mirror_source.go`): an image index with
//! artifact type `application/vnd.opentofu.provider`, one image manifest per platform with
//! `application/vnd.opentofu.provider-target` and its `platform`, each with the empty config
//! and a single `archive/zip` layer that is the release zip, byte for byte, whose digest is
//! the zip's SHA-256 (its `zh:` hash). Built by the indexer at publish and stored as bytes, so
//! a digest, once served, never changes. Typed here (serde) rather than taken from `oci-spec`:
//! that crate would add regex, strum and getset to every function for six small structs.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{
    ARTIFACT_TYPE_MODULE, ARTIFACT_TYPE_PROVIDER, ARTIFACT_TYPE_PROVIDER_TARGET, EMPTY_CONFIG_DIGEST, digest_of,
};
use super::{MEDIA_TYPE_EMPTY, MEDIA_TYPE_INDEX, MEDIA_TYPE_MANIFEST, MEDIA_TYPE_ZIP};

/// A content descriptor (image-spec `descriptor.md`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    /// What the content is.
    pub media_type: String,
    /// What the artifact it points to is (OpenTofu reads it on index entries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
    /// `sha256:HEX` of the content.
    pub digest: String,
    /// Its length in bytes.
    pub size: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The content itself, base64, for tiny blobs (the empty config).
    pub data: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The platform an index entry is for.
    pub platform: Option<Platform>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    /// `org.opencontainers.image.title`: the zip's file name, for clients that save layers.
    pub annotations: BTreeMap<String, String>,
}

/// A descriptor's platform, as Go spells it (`linux`, `amd64`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Platform {
    /// `amd64`, `arm64`, …
    pub architecture: String,
    /// `linux`, `darwin`, …
    pub os: String,
}

/// An image manifest (image-spec `manifest.md`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageManifest {
    /// Always 2.
    pub schema_version: u32,
    /// `MEDIA_TYPE_MANIFEST`.
    pub media_type: String,
    /// `ARTIFACT_TYPE_PROVIDER_TARGET`.
    pub artifact_type: String,
    /// The empty config.
    pub config: Descriptor,
    /// The zip, alone.
    pub layers: Vec<Descriptor>,
}

/// An image index (image-spec `image-index.md`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageIndex {
    /// Always 2.
    pub schema_version: u32,
    /// `MEDIA_TYPE_INDEX`.
    pub media_type: String,
    /// `ARTIFACT_TYPE_PROVIDER`.
    pub artifact_type: String,
    /// One per platform.
    pub manifests: Vec<Descriptor>,
}

/// One platform's package of a provider version, as the indexer recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Package<'a> {
    /// `linux`, …
    pub os: &'a str,
    /// `amd64`, …
    pub arch: &'a str,
    /// The zip's SHA-256, hex (its `zh:`).
    pub sha256: &'a str,
    /// The zip's size in bytes.
    pub size: u64,
    /// The zip's file name (`terraform-provider-TYPE_VERSION_OS_ARCH.zip`).
    pub file_name: &'a str,
}

/// A manifest as stored and served: its exact bytes and their digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// `sha256:HEX` of `bytes`.
    pub digest: String,
    /// The JSON, as served.
    pub bytes: Vec<u8>,
}

impl Stored {
    fn of(value: &impl Serialize) -> Result<Stored, serde_json::Error> {
        let bytes = serde_json::to_vec(value)?;
        Ok(Stored { digest: digest_of(&bytes), bytes })
    }
}

/// A provider version's artifacts: the index (what its tag names) and each platform's
/// manifest, in the order of `packages`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderArtifacts {
    /// The image index.
    pub index: Stored,
    /// Each platform's image manifest.
    pub manifests: Vec<Stored>,
}

/// The artifacts of a provider version with these packages (at least one).
pub fn provider_artifacts(packages: &[Package<'_>]) -> Result<ProviderArtifacts, serde_json::Error> {
    let mut manifests = Vec::with_capacity(packages.len());
    let mut descriptors = Vec::with_capacity(packages.len());
    for package in packages {
        let manifest = Stored::of(&platform_manifest(package))?;
        descriptors.push(Descriptor {
            media_type: MEDIA_TYPE_MANIFEST.into(),
            artifact_type: Some(ARTIFACT_TYPE_PROVIDER_TARGET.into()),
            digest: manifest.digest.clone(),
            size: manifest.bytes.len() as u64,
            data: None,
            platform: Some(Platform { architecture: package.arch.into(), os: package.os.into() }),
            annotations: BTreeMap::new(),
        });
        manifests.push(manifest);
    }
    let index = Stored::of(&ImageIndex {
        schema_version: 2,
        media_type: MEDIA_TYPE_INDEX.into(),
        artifact_type: ARTIFACT_TYPE_PROVIDER.into(),
        manifests: descriptors,
    })?;
    Ok(ProviderArtifacts { index, manifests })
}

/// A module version's package: an image manifest (`application/vnd.opentofu.modulepkg`) whose
/// only layer is the zip (`package`'s `os` and `arch` are not read).
pub fn module_artifact(package: &Package<'_>) -> Result<Stored, serde_json::Error> {
    Stored::of(&ImageManifest { artifact_type: ARTIFACT_TYPE_MODULE.into(), ..platform_manifest(package) })
}

fn platform_manifest(package: &Package<'_>) -> ImageManifest {
    ImageManifest {
        schema_version: 2,
        media_type: MEDIA_TYPE_MANIFEST.into(),
        artifact_type: ARTIFACT_TYPE_PROVIDER_TARGET.into(),
        config: Descriptor {
            media_type: MEDIA_TYPE_EMPTY.into(),
            artifact_type: None,
            digest: EMPTY_CONFIG_DIGEST.into(),
            size: 2,
            data: Some("e30=".into()),
            platform: None,
            annotations: BTreeMap::new(),
        },
        layers: vec![Descriptor {
            media_type: MEDIA_TYPE_ZIP.into(),
            artifact_type: None,
            digest: format!("sha256:{}", package.sha256),
            size: package.size,
            data: None,
            platform: None,
            annotations: BTreeMap::from([("org.opencontainers.image.title".into(), package.file_name.into())]),
        }],
    }
}

/// The media type a stored manifest declares (what its `Content-Type` must be).
pub fn media_type(bytes: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Head {
        media_type: String,
    }
    serde_json::from_slice::<Head>(bytes).ok().map(|h| h.media_type)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_provider_version_is_an_index_of_one_manifest_per_platform() {
        let sha = "ab".repeat(32);
        let packages = [
            Package {
                os: "linux",
                arch: "amd64",
                sha256: &sha,
                size: 10,
                file_name: "terraform-provider-x_1.0.0_linux_amd64.zip",
            },
            Package {
                os: "darwin",
                arch: "arm64",
                sha256: &sha,
                size: 10,
                file_name: "terraform-provider-x_1.0.0_darwin_arm64.zip",
            },
        ];
        let artifacts = provider_artifacts(&packages).unwrap();
        let index: ImageIndex = serde_json::from_slice(&artifacts.index.bytes).unwrap();
        assert_eq!(
            (index.media_type.as_str(), index.artifact_type.as_str()),
            (MEDIA_TYPE_INDEX, ARTIFACT_TYPE_PROVIDER)
        );
        assert_eq!(index.manifests.len(), 2);
        for (descriptor, stored) in index.manifests.iter().zip(&artifacts.manifests) {
            assert_eq!(descriptor.digest, digest_of(&stored.bytes));
            assert_eq!(descriptor.size, stored.bytes.len() as u64);
            let manifest: ImageManifest = serde_json::from_slice(&stored.bytes).unwrap();
            assert_eq!(manifest.artifact_type, ARTIFACT_TYPE_PROVIDER_TARGET);
            assert_eq!(manifest.layers.len(), 1);
            assert_eq!(
                (manifest.layers[0].media_type.as_str(), manifest.layers[0].digest.as_str()),
                (MEDIA_TYPE_ZIP, format!("sha256:{sha}").as_str())
            );
        }
        assert_eq!(index.manifests[1].platform, Some(Platform { architecture: "arm64".into(), os: "darwin".into() }));
        assert_eq!(artifacts.index.digest, digest_of(&artifacts.index.bytes));
        assert_eq!(media_type(&artifacts.index.bytes).as_deref(), Some(MEDIA_TYPE_INDEX));
        // The same packages give the same bytes: a digest never changes for a release.
        assert_eq!(provider_artifacts(&packages).unwrap(), artifacts);
    }
}
