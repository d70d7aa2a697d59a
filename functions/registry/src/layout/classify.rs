//! Reading a key back: what an object key is, by where it sits in the layout (`classify`),
//! whose manifest it belongs to, and the check every presigning route makes that a key from a
//! manifest is the very archive the request named (`archive_key`). The names themselves are
//! written in `mod.rs`.

use crate::address::{ModuleAddress, ProviderAddress};
use crate::error::Error;

use super::{
    BUNDLE_SUFFIX, INDEXED_PREFIX, MODULE_ARCHIVE_EXTENSIONS, MODULE_DEPRECATION_SUFFIX, MODULE_MANIFEST_FILE,
    MODULES_PREFIX, PROVIDER_DEPRECATION_SUFFIX, PROVIDER_INDEX_FILE, PROVIDERS_PREFIX, Platform, ReleaseFile,
    oci_module_prefix, split4,
};

/// What an object key is, by where it sits in the layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ObjectKind {
    /// `modules/NAMESPACE/NAME/SYSTEM/VERSION.EXT`, uploaded by a publisher.
    ModuleArchive {
        /// Whose archive.
        module: ModuleAddress,
        /// Which version it publishes.
        version: semver::Version,
        /// `tar.gz`, `tgz` or `zip`: how go-getter unpacks it.
        extension: &'static str,
    },
    /// `providers/HOSTNAME/NAMESPACE/TYPE/terraform-provider-…zip`, uploaded by a publisher.
    ProviderArchive {
        /// Whose package.
        provider: ProviderAddress,
        /// Which version it publishes.
        version: semver::Version,
        /// For which OS and architecture.
        platform: Platform,
    },
    /// `providers/…/terraform-provider-TYPE_VERSION_SHA256SUMS` (or `.sig`, `_manifest.json`).
    ProviderReleaseFile {
        /// Whose release.
        provider: ProviderAddress,
        /// Which version.
        version: semver::Version,
        /// Which of its files.
        file: ReleaseFile,
    },
    /// A module version's Sigstore bundle (`module_bundle`), uploaded by a publisher.
    Bundle {
        /// Whose version.
        owner: Owner,
        /// Which.
        version: semver::Version,
        /// The extension of the archive it names.
        extension: &'static str,
    },
    /// A version's deprecation file (`module_deprecation`, `provider_deprecation`).
    Deprecation {
        /// Whose version.
        owner: Owner,
        /// Which.
        version: semver::Version,
    },
    /// `index.json` or `VERSION.json` beside the zips, as a synced `terraform providers mirror`
    /// directory holds them: a name the layout accepts, whose content is never read.
    ProviderMirrorFile(ProviderAddress),
    /// `indexed/…/manifest.json`, written by the indexer.
    ModuleManifest(ModuleAddress),
    /// `indexed/…/index.json`, written by the indexer.
    ProviderIndex(ProviderAddress),
    /// `indexed/…/VERSION.json`, written by the indexer.
    ProviderVersion {
        /// Whose document.
        provider: ProviderAddress,
        /// Which version it describes.
        version: semver::Version,
    },
    /// Under a module's or provider's upload prefix, but not a name the layout has a place for.
    Unrecognised(Owner),
}

/// The module or provider whose manifest an object belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Owner {
    /// A module: one manifest.
    Module(ModuleAddress),
    /// A provider: its `index.json` and one `VERSION.json` per version.
    Provider(ProviderAddress),
}

impl std::fmt::Display for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Owner::Module(m) => write!(f, "module {m}"),
            Owner::Provider(p) => write!(f, "provider {p}"),
        }
    }
}

impl ObjectKind {
    /// The module or provider the object belongs to.
    pub fn owner(&self) -> Owner {
        match self {
            ObjectKind::ModuleArchive { module, .. } | ObjectKind::ModuleManifest(module) => {
                Owner::Module(module.clone())
            }
            ObjectKind::ProviderArchive { provider, .. }
            | ObjectKind::ProviderReleaseFile { provider, .. }
            | ObjectKind::ProviderMirrorFile(provider)
            | ObjectKind::ProviderIndex(provider)
            | ObjectKind::ProviderVersion { provider, .. } => Owner::Provider(provider.clone()),
            ObjectKind::Unrecognised(owner)
            | ObjectKind::Deprecation { owner, .. }
            | ObjectKind::Bundle { owner, .. } => owner.clone(),
        }
    }

    /// Written by the indexer (under `indexed/`), not by a publisher.
    pub fn is_derived(&self) -> bool {
        matches!(
            self,
            ObjectKind::ModuleManifest(_) | ObjectKind::ProviderIndex(_) | ObjectKind::ProviderVersion { .. }
        )
    }
}

/// A module archive's file name (`1.2.0.tar.gz`): its version and extension.
fn archive_name(file: &str) -> Option<(semver::Version, &'static str)> {
    MODULE_ARCHIVE_EXTENSIONS.into_iter().find_map(|extension| {
        let version = file.strip_suffix(extension)?.strip_suffix('.')?;
        Some((crate::address::parse_version(version).ok()?, extension))
    })
}

/// Classify a bucket key. `None` means the key is outside the layout entirely (wrong prefix,
/// wrong depth, or segments that are not valid addresses): the indexer ignores such keys.
pub fn classify(key: &str) -> Option<ObjectKind> {
    if let Some(rest) = key.strip_prefix(INDEXED_PREFIX) {
        return classify_derived(rest);
    }
    if let Some(rest) = key.strip_prefix(MODULES_PREFIX) {
        let [namespace, name, system, file] = split4(rest)?;
        let module = ModuleAddress::parse(namespace, name, system).ok()?;
        if let Some(archive) = file.strip_suffix(BUNDLE_SUFFIX) {
            return Some(match archive_name(archive) {
                Some((version, extension)) => ObjectKind::Bundle { owner: Owner::Module(module), version, extension },
                None => ObjectKind::Unrecognised(Owner::Module(module)),
            });
        }
        if let Some(version) =
            file.strip_suffix(MODULE_DEPRECATION_SUFFIX).and_then(|v| crate::address::parse_version(v).ok())
        {
            return Some(ObjectKind::Deprecation { owner: Owner::Module(module), version });
        }
        return Some(match archive_name(file) {
            Some((version, extension)) => ObjectKind::ModuleArchive { module, version, extension },
            None => ObjectKind::Unrecognised(Owner::Module(module)),
        });
    }
    if let Some(rest) = key.strip_prefix(PROVIDERS_PREFIX) {
        let [hostname, namespace, r#type, file] = split4(rest)?;
        let provider = ProviderAddress::parse(hostname, namespace, r#type).ok()?;
        if file == PROVIDER_INDEX_FILE
            || file.strip_suffix(".json").is_some_and(|v| crate::address::parse_version(v).is_ok())
        {
            return Some(ObjectKind::ProviderMirrorFile(provider));
        }
        let deprecated = file
            .strip_prefix(&format!("terraform-provider-{}_", provider.r#type))
            .and_then(|rest| rest.strip_suffix(PROVIDER_DEPRECATION_SUFFIX))
            .and_then(|v| crate::address::parse_version(v).ok());
        if let Some(version) = deprecated {
            return Some(ObjectKind::Deprecation { owner: Owner::Provider(provider), version });
        }
        if let Some((version, file)) = parse_release_file_name(&provider, file) {
            return Some(ObjectKind::ProviderReleaseFile { provider, version, file });
        }
        if let Some((version, platform)) = parse_provider_archive_name(&provider, file) {
            return Some(ObjectKind::ProviderArchive { provider, version, platform });
        }
        return Some(ObjectKind::Unrecognised(Owner::Provider(provider)));
    }
    None
}

/// Keys under `indexed/`: only the names the indexer writes.
fn classify_derived(rest: &str) -> Option<ObjectKind> {
    if let Some(rest) = rest.strip_prefix(MODULES_PREFIX) {
        let [namespace, name, system, file] = split4(rest)?;
        let module = ModuleAddress::parse(namespace, name, system).ok()?;
        return (file == MODULE_MANIFEST_FILE).then_some(ObjectKind::ModuleManifest(module));
    }
    let [hostname, namespace, r#type, file] = split4(rest.strip_prefix(PROVIDERS_PREFIX)?)?;
    let provider = ProviderAddress::parse(hostname, namespace, r#type).ok()?;
    if file == PROVIDER_INDEX_FILE {
        return Some(ObjectKind::ProviderIndex(provider));
    }
    let version = crate::address::parse_version(file.strip_suffix(".json")?).ok()?;
    Some(ObjectKind::ProviderVersion { provider, version })
}

/// The one archive a download asks for, named by the request (never by a manifest).
#[derive(Debug, Clone, Copy)]
pub enum Wanted<'a> {
    /// A module version's archive (`…/download`).
    ModuleArchive {
        /// The module the request names.
        module: &'a ModuleAddress,
        /// The version the request names.
        version: &'a semver::Version,
    },
    /// A provider version's package for one platform (`VERSION.json`).
    ProviderArchive {
        /// The provider the request names.
        provider: &'a ProviderAddress,
        /// The version the request names.
        version: &'a semver::Version,
        /// The `archives` key of `VERSION.json` (`linux_amd64`).
        platform: &'a str,
    },
    /// A blob of a provider's OCI repository (`/v2/providers/…/blobs/DIGEST`): any served zip
    /// of that provider (the pointer the indexer wrote names which; the client checks the
    /// digest of what it gets).
    OciProviderBlob {
        /// The provider whose repository the request names.
        provider: &'a ProviderAddress,
    },
    /// A blob of a module's OCI repository: a `.zip` archive of that module, or a zip the
    /// indexer made of one of its archives.
    OciModuleBlob {
        /// The module whose repository the request names.
        module: &'a ModuleAddress,
    },
    /// The pinned copy of an upstream module's version (the modules pull-through).
    UpstreamModuleArchive {
        /// The module the request names.
        module: &'a crate::address::UpstreamModule,
        /// The version the request names.
        version: &'a semver::Version,
        /// The SHA-256 its pin records.
        sha256: &'a str,
    },
    /// A signed release's `SHA256SUMS` or its signature (providers.v1 `…/download/OS/ARCH`).
    ProviderReleaseFile {
        /// The provider the request names.
        provider: &'a ProviderAddress,
        /// The version the request names.
        version: &'a semver::Version,
        /// Which file.
        file: ReleaseFile,
    },
}

/// The check every presigning route makes: `key`, taken from a manifest, is presigned only if
/// it classifies as exactly the archive the request named (same module or provider, same
/// version, same platform), so no manifest entry can hand out a URL to anything else (the
/// token store, another namespace's archive, a rejection record). `Error::Internal`
/// otherwise: a manifest only the indexer writes said something it never writes.
pub fn archive_key<'k>(key: &'k str, wanted: Wanted<'_>) -> Result<&'k str, Error> {
    let matches = match (classify(key), wanted) {
        (Some(ObjectKind::ModuleArchive { module, version, .. }), Wanted::ModuleArchive { module: m, version: v }) => {
            module == *m && version == *v
        }
        (
            Some(ObjectKind::ProviderArchive { provider, version, platform }),
            Wanted::ProviderArchive { provider: p, version: v, platform: k },
        ) => provider == *p && version == *v && platform.key() == k,
        (
            Some(ObjectKind::ProviderReleaseFile { provider, version, file }),
            Wanted::ProviderReleaseFile { provider: p, version: v, file: f },
        ) => provider == *p && version == *v && file == f && file != ReleaseFile::Manifest,
        (Some(ObjectKind::ProviderArchive { provider, .. }), Wanted::OciProviderBlob { provider: p }) => provider == *p,
        (Some(ObjectKind::ModuleArchive { module, extension, .. }), Wanted::OciModuleBlob { module: m }) => {
            module == *m && extension == "zip"
        }
        (None, Wanted::UpstreamModuleArchive { module, version, sha256 }) => super::upstream_module_archive_parts(key)
            .is_some_and(|(m, v, s)| m == *module && v == *version && s == sha256),
        (None, Wanted::OciModuleBlob { module }) => {
            let zips = format!("{}zips/", oci_module_prefix(module));
            key.strip_prefix(&zips).and_then(|f| f.strip_suffix(".zip")).is_some_and(|hex| {
                hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            })
        }
        _ => false,
    };
    if matches {
        Ok(key)
    } else {
        Err(Error::internal(format!(
            "manifest entry {:?} is not the archive of {wanted:?}: not presigned",
            crate::address::printable(key)
        )))
    }
}

/// Parse `terraform-provider-TYPE_VERSION_SHA256SUMS` (or `.sig`, `_manifest.json`).
pub fn parse_release_file_name(p: &ProviderAddress, file: &str) -> Option<(semver::Version, ReleaseFile)> {
    let rest = file.strip_prefix("terraform-provider-")?.strip_prefix(p.r#type.as_str())?.strip_prefix('_')?;
    [ReleaseFile::Signature, ReleaseFile::Shasums, ReleaseFile::Manifest].into_iter().find_map(|kind| {
        let version = crate::address::parse_version(rest.strip_suffix(kind.suffix())?).ok()?;
        Some((version, kind))
    })
}

/// Parse `terraform-provider-TYPE_VERSION_OS_ARCH.zip` for this provider's TYPE.
pub fn parse_provider_archive_name(p: &ProviderAddress, file: &str) -> Option<(semver::Version, Platform)> {
    let rest = file.strip_prefix("terraform-provider-")?.strip_suffix(".zip")?;
    let rest = rest.strip_prefix(p.r#type.as_str())?.strip_prefix('_')?;
    // VERSION may contain '-' and '+' but never '_'; OS and ARCH never contain '_'.
    let mut parts = rest.rsplitn(3, '_');
    let arch = parts.next()?;
    let os = parts.next()?;
    let version = parts.next()?;
    let platform = Platform::parse(os, arch).ok()?;
    let version = crate::address::parse_version(version).ok()?;
    Some((version, platform))
}
