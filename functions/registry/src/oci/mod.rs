//! OCI Distribution (spec v1.1), read-only, as OpenTofu installs providers from it
//! (`oci_mirror`, website/docs/cli/oci_registries/provider-mirror.mdx in opentofu/opentofu):
//! the grammar of repository names, tags and digests (`name`), and the artifacts the indexer
//! writes for a provider version at publish (`artifacts`), so that a read is one S3 GET and a
//! digest never changes once published.

pub mod artifacts;
pub mod name;

/// An image index (a provider version: one manifest per platform).
pub const MEDIA_TYPE_INDEX: &str = "application/vnd.oci.image.index.v1+json";
/// An image manifest (one platform's package).
pub const MEDIA_TYPE_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
/// The empty config of an artifact (image-spec 1.1: `{}`, inline as `e30=`).
pub const MEDIA_TYPE_EMPTY: &str = "application/vnd.oci.empty.v1+json";
/// A provider package's only layer: the release zip, byte for byte.
pub const MEDIA_TYPE_ZIP: &str = "archive/zip";
/// What OpenTofu requires of a provider version's index (`ociIndexManifestArtifactType`).
pub const ARTIFACT_TYPE_PROVIDER: &str = "application/vnd.opentofu.provider";
/// ... and of each platform's manifest (`ociPackageManifestArtifactType`).
pub const ARTIFACT_TYPE_PROVIDER_TARGET: &str = "application/vnd.opentofu.provider-target";
/// What OpenTofu requires of a module package's manifest (`oci://` sources).
pub const ARTIFACT_TYPE_MODULE: &str = "application/vnd.opentofu.modulepkg";
/// The empty config blob (the same for every artifact).
pub const EMPTY_CONFIG: &[u8] = b"{}";
/// Its digest.
pub const EMPTY_CONFIG_DIGEST: &str = "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a";
/// The header in which registries name a manifest's or blob's digest.
pub const DIGEST_HEADER: &str = "docker-content-digest";
/// The path every OCI route starts with.
pub const BASE_PATH: &str = "/v2/";
/// How many tags one page lists when the client does not say (`n`), and at most.
pub const TAGS_PAGE_MAX: usize = 1000;

/// `sha256:HEX` of `bytes`.
pub fn digest_of(bytes: &[u8]) -> String {
    use sha2::Digest;
    format!("sha256:{}", hex::encode(sha2::Sha256::digest(bytes)))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_empty_config_digest_is_its_bytes() {
        assert_eq!(super::digest_of(super::EMPTY_CONFIG), super::EMPTY_CONFIG_DIGEST);
    }
}
