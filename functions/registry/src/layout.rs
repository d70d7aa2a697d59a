//! The S3 key layout: the only place that knows where things live in the bucket.
//! `docs/BUCKET.md` draws the same tree.
//!
//! ```text
//! modules/NAMESPACE/NAME/SYSTEM/VERSION.tar.gz|.tgz|.zip   module archives (publisher uploads)
//! modules/NAMESPACE/NAME/SYSTEM/manifest.json             module manifest (indexer writes)
//! providers/HOSTNAME/NAMESPACE/TYPE/index.json            as `terraform providers mirror` writes
//! providers/HOSTNAME/NAMESPACE/TYPE/VERSION.json
//! providers/HOSTNAME/NAMESPACE/TYPE/terraform-provider-TYPE_VERSION_OS_ARCH.zip
//! rejections/KEY.json                                     why the upload at KEY was not indexed
//! access/tokens.json                                      token hashes and scopes
//! ```

use crate::address::{ModuleAddress, ProviderAddress};

pub const MODULES_PREFIX: &str = "modules/";
pub const PROVIDERS_PREFIX: &str = "providers/";
pub const REJECTIONS_PREFIX: &str = "rejections/";
/// Token hashes and scopes (`access::TokenStore`); read by the read functions, written by the
/// token command.
pub const TOKENS: &str = "access/tokens.json";
pub const MODULE_MANIFEST_FILE: &str = "manifest.json";
pub const PROVIDER_INDEX_FILE: &str = "index.json";

/// Module archive formats, by the extension go-getter uses to pick its decompressor.
/// Longest first so `.tar.gz` is not mistaken for something ending in `.gz`.
pub const MODULE_ARCHIVE_EXTENSIONS: [&str; 3] = ["tar.gz", "tgz", "zip"];

pub fn module_prefix(m: &ModuleAddress) -> String {
    format!("{MODULES_PREFIX}{}/{}/{}/", m.namespace, m.name, m.system)
}

pub fn module_manifest(m: &ModuleAddress) -> String {
    format!("{}{MODULE_MANIFEST_FILE}", module_prefix(m))
}

pub fn module_archive(m: &ModuleAddress, version: &semver::Version, extension: &str) -> String {
    format!("{}{version}.{extension}", module_prefix(m))
}

pub fn provider_prefix(p: &ProviderAddress) -> String {
    format!("{PROVIDERS_PREFIX}{}/{}/{}/", p.hostname, p.namespace, p.r#type)
}

pub fn provider_index(p: &ProviderAddress) -> String {
    format!("{}{PROVIDER_INDEX_FILE}", provider_prefix(p))
}

pub fn provider_version(p: &ProviderAddress, version: &semver::Version) -> String {
    format!("{}{version}.json", provider_prefix(p))
}

/// Where the indexer explains why it did not index the upload at `key`.
pub fn rejection(key: &str) -> String {
    format!("{REJECTIONS_PREFIX}{key}.json")
}

/// The prefix of the rejection records for uploads under `prefix`.
pub fn rejections_under(prefix: &str) -> String {
    format!("{REJECTIONS_PREFIX}{prefix}")
}

/// The upload a rejection record is about.
pub fn rejected_key(rejection_key: &str) -> Option<&str> {
    rejection_key.strip_prefix(REJECTIONS_PREFIX)?.strip_suffix(".json")
}

/// For a key under `modules/` or `providers/` that the registry does not index, what it
/// expects there instead (the reason in its rejection record). `None` for other prefixes.
pub fn expected_name(key: &str) -> Option<String> {
    let key_text = crate::address::printable(key);
    if key.starts_with(MODULES_PREFIX) {
        Some(format!(
            "{key_text:?} is not a module archive name: the registry indexes modules/NAMESPACE/NAME/SYSTEM/VERSION.tar.gz \
             (or .tgz, .zip), with VERSION in SemVer form such as 1.2.0 (no leading v), NAMESPACE and NAME of letters, \
             digits, '-' and '_', SYSTEM of lower-case letters and digits"
        ))
    } else if key.starts_with(PROVIDERS_PREFIX) {
        Some(format!(
            "{key_text:?} is not a provider package name: the registry indexes \
             providers/HOSTNAME/NAMESPACE/TYPE/terraform-provider-TYPE_VERSION_OS_ARCH.zip, with VERSION in SemVer form \
             (no leading v) and HOSTNAME the provider's lower-case origin host"
        ))
    } else {
        None
    }
}

/// The file name `terraform providers mirror` (and every provider release) uses.
pub fn provider_archive_name(p: &ProviderAddress, version: &semver::Version, platform: &Platform) -> String {
    format!("terraform-provider-{}_{version}_{}_{}.zip", p.r#type, platform.os, platform.arch)
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Platform {
    pub os: String,
    pub arch: String,
}

impl Platform {
    /// `linux_amd64`, the key of the `archives` map in `VERSION.json`.
    pub fn key(&self) -> String {
        format!("{}_{}", self.os, self.arch)
    }
}

/// What an object key is, by where it sits in the layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ObjectKind {
    ModuleArchive {
        module: ModuleAddress,
        version: semver::Version,
        extension: &'static str,
    },
    ModuleManifest(ModuleAddress),
    ProviderArchive {
        provider: ProviderAddress,
        version: semver::Version,
        platform: Platform,
    },
    ProviderIndex(ProviderAddress),
    ProviderVersion {
        provider: ProviderAddress,
        version: semver::Version,
    },
    /// Under a known prefix, but not a name the layout has a place for.
    Unrecognised(Owner),
}

/// The module or provider whose manifest an object belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Owner {
    Module(ModuleAddress),
    Provider(ProviderAddress),
}

impl ObjectKind {
    pub fn owner(&self) -> Owner {
        match self {
            ObjectKind::ModuleArchive { module, .. } | ObjectKind::ModuleManifest(module) => {
                Owner::Module(module.clone())
            }
            ObjectKind::ProviderArchive { provider, .. }
            | ObjectKind::ProviderIndex(provider)
            | ObjectKind::ProviderVersion { provider, .. } => Owner::Provider(provider.clone()),
            ObjectKind::Unrecognised(owner) => owner.clone(),
        }
    }
}

/// Classify a bucket key. `None` means the key is outside the layout entirely (wrong prefix,
/// wrong depth, or segments that are not valid addresses): the indexer ignores such keys.
pub fn classify(key: &str) -> Option<ObjectKind> {
    if let Some(rest) = key.strip_prefix(MODULES_PREFIX) {
        let [namespace, name, system, file] = split4(rest)?;
        let module = ModuleAddress::parse(namespace, name, system).ok()?;
        if file == MODULE_MANIFEST_FILE {
            return Some(ObjectKind::ModuleManifest(module));
        }
        for extension in MODULE_ARCHIVE_EXTENSIONS {
            if let Some(v) = file.strip_suffix(extension).and_then(|s| s.strip_suffix('.'))
                && let Ok(version) = crate::address::parse_version(v)
            {
                return Some(ObjectKind::ModuleArchive { module, version, extension });
            }
        }
        return Some(ObjectKind::Unrecognised(Owner::Module(module)));
    }
    if let Some(rest) = key.strip_prefix(PROVIDERS_PREFIX) {
        let [hostname, namespace, r#type, file] = split4(rest)?;
        let provider = ProviderAddress::parse(hostname, namespace, r#type).ok()?;
        if file == PROVIDER_INDEX_FILE {
            return Some(ObjectKind::ProviderIndex(provider));
        }
        if let Some(v) = file.strip_suffix(".json")
            && let Ok(version) = crate::address::parse_version(v)
        {
            return Some(ObjectKind::ProviderVersion { provider, version });
        }
        if let Some((version, platform)) = parse_provider_archive_name(&provider, file) {
            return Some(ObjectKind::ProviderArchive { provider, version, platform });
        }
        return Some(ObjectKind::Unrecognised(Owner::Provider(provider)));
    }
    None
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
    let platform_ok =
        |s: &str| !s.is_empty() && s.len() <= 32 && s.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if !platform_ok(os) || !platform_ok(arch) {
        return None;
    }
    let version = crate::address::parse_version(version).ok()?;
    Some((version, Platform { os: os.into(), arch: arch.into() }))
}

fn split4(rest: &str) -> Option<[&str; 4]> {
    let mut it = rest.split('/');
    let parts = [it.next()?, it.next()?, it.next()?, it.next()?];
    if it.next().is_some() {
        return None;
    }
    Some(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module() -> ModuleAddress {
        ModuleAddress::parse("acme", "vpc", "aws").unwrap()
    }
    fn provider() -> ProviderAddress {
        ProviderAddress::parse("registry.terraform.io", "hashicorp", "null").unwrap()
    }
    fn v(s: &str) -> semver::Version {
        semver::Version::parse(s).unwrap()
    }

    #[test]
    fn keys() {
        assert_eq!(module_manifest(&module()), "modules/acme/vpc/aws/manifest.json");
        assert_eq!(module_archive(&module(), &v("1.2.0"), "tar.gz"), "modules/acme/vpc/aws/1.2.0.tar.gz");
        assert_eq!(provider_index(&provider()), "providers/registry.terraform.io/hashicorp/null/index.json");
        assert_eq!(
            provider_version(&provider(), &v("3.2.1")),
            "providers/registry.terraform.io/hashicorp/null/3.2.1.json"
        );
        let linux = Platform { os: "linux".into(), arch: "amd64".into() };
        assert_eq!(
            provider_archive_name(&provider(), &v("3.2.1"), &linux),
            "terraform-provider-null_3.2.1_linux_amd64.zip"
        );
    }

    #[test]
    fn classify_table() {
        let linux = Platform { os: "linux".into(), arch: "amd64".into() };
        let cases: Vec<(&str, Option<ObjectKind>)> = vec![
            (
                "modules/acme/vpc/aws/1.2.0.tar.gz",
                Some(ObjectKind::ModuleArchive { module: module(), version: v("1.2.0"), extension: "tar.gz" }),
            ),
            (
                "modules/acme/vpc/aws/1.2.0-rc.1.tgz",
                Some(ObjectKind::ModuleArchive { module: module(), version: v("1.2.0-rc.1"), extension: "tgz" }),
            ),
            (
                "modules/acme/vpc/aws/2.0.0.zip",
                Some(ObjectKind::ModuleArchive { module: module(), version: v("2.0.0"), extension: "zip" }),
            ),
            ("modules/acme/vpc/aws/manifest.json", Some(ObjectKind::ModuleManifest(module()))),
            ("modules/acme/vpc/aws/1.2.gz", Some(ObjectKind::Unrecognised(Owner::Module(module())))),
            ("modules/acme/vpc/aws/readme.md", Some(ObjectKind::Unrecognised(Owner::Module(module())))),
            ("modules/acme/vpc/aws/x/1.0.0.zip", None),
            ("modules/acme/vpc/1.0.0.zip", None),
            ("modules/../vpc/aws/1.0.0.zip", None),
            ("other/acme/vpc/aws/1.0.0.zip", None),
            (
                "providers/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.1_linux_amd64.zip",
                Some(ObjectKind::ProviderArchive { provider: provider(), version: v("3.2.1"), platform: linux }),
            ),
            ("providers/registry.terraform.io/hashicorp/null/index.json", Some(ObjectKind::ProviderIndex(provider()))),
            (
                "providers/registry.terraform.io/hashicorp/null/3.2.1.json",
                Some(ObjectKind::ProviderVersion { provider: provider(), version: v("3.2.1") }),
            ),
            (
                "providers/registry.terraform.io/hashicorp/null/terraform-provider-random_3.2.1_linux_amd64.zip",
                Some(ObjectKind::Unrecognised(Owner::Provider(provider()))),
            ),
            (
                "providers/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2_linux_amd64.zip",
                Some(ObjectKind::Unrecognised(Owner::Provider(provider()))),
            ),
            ("providers/localhost/hashicorp/null/index.json", None),
        ];
        for (key, want) in cases {
            assert_eq!(classify(key), want, "{key}");
        }
    }

    #[test]
    fn archive_names_with_prerelease_and_build() {
        let p = provider();
        let (version, platform) =
            parse_provider_archive_name(&p, "terraform-provider-null_1.0.0-beta.2+b7_darwin_arm64.zip").unwrap();
        assert_eq!(version, v("1.0.0-beta.2+b7"));
        assert_eq!(platform.key(), "darwin_arm64");
        assert!(parse_provider_archive_name(&p, "terraform-provider-null_1.0.0_linux.zip").is_none());
        assert!(parse_provider_archive_name(&p, "terraform-provider-null_1.0.0_linux_AMD64.zip").is_none());
    }
}
