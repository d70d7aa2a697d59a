//! The catalog: every module and provider the registry serves, with what a person choosing one
//! wants to see (latest version, description, how many versions, when it last changed), in one
//! document (`layout::CATALOG`). The indexer keeps it (`index::catalog`), with the same
//! conditional writes as manifests; the web function answers list and search from it with one
//! read.
//!
//! Each entry is a function of its owner's manifest as stored, so the indexer can always
//! recompute one from the bucket, and a repair (`reindex_all`) rebuilds the whole document.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::address::{ModuleAddress, ProviderAddress, UpstreamModule};
use crate::error::Error;
use crate::manifest::{ModuleManifest, ModuleVersion, ProviderIndex, newest_first};

/// The `format` of the catalog this code reads and writes.
pub const CATALOG_FORMAT: u32 = 1;

/// `indexed/catalog.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Catalog {
    /// `CATALOG_FORMAT`; another value is refused.
    pub format: u32,
    /// `NAMESPACE/NAME/SYSTEM` → the module.
    #[serde(default)]
    pub modules: BTreeMap<String, ModuleEntry>,
    /// `HOSTNAME/NAMESPACE/TYPE` → the provider.
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderEntry>,
    /// `HOSTNAME/NAMESPACE/NAME/SYSTEM` → an upstream registry's module this registry holds
    /// pinned copies of (the modules pull-through, or an air-gap bundle), added as the indexer
    /// logs each pin. Not derived from a manifest: a rebuild keeps these as they were.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub upstream_modules: BTreeMap<String, UpstreamEntry>,
}

impl Default for Catalog {
    fn default() -> Self {
        Catalog {
            format: CATALOG_FORMAT,
            modules: BTreeMap::new(),
            providers: BTreeMap::new(),
            upstream_modules: BTreeMap::new(),
        }
    }
}

/// One module in the catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleEntry {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Its target system.
    pub system: String,
    /// The version to show and pin: the newest release, or the newest pre-release when there is
    /// no release.
    pub latest: String,
    /// SHA-256 of that version's archive: the description was read from it.
    pub sha256: String,
    /// The first paragraph of that version's README, as plain text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// How many versions are served.
    pub versions: usize,
    /// When the latest version was published.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published_at: Option<String>,
    /// When any version was last published.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated: Option<String>,
}

/// One provider in the catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderEntry {
    /// Its origin hostname.
    pub hostname: String,
    /// Its namespace.
    pub namespace: String,
    /// Its type.
    #[serde(rename = "type")]
    pub r#type: String,
    /// The newest release (or pre-release, when there is no release).
    pub latest: String,
    /// How many versions are served.
    pub versions: usize,
    /// Some versions are signed releases that providers.v1 serves.
    #[serde(default)]
    pub registry: bool,
    /// When the catalog first showed these versions (the index keeps no publish times).
    pub updated: String,
}

/// An upstream registry's module with pinned copies here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpstreamEntry {
    /// The upstream registry's host (`registry.terraform.io`).
    pub hostname: String,
    /// Its namespace there.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Its target system.
    pub system: String,
    /// The copied versions, newest first.
    pub versions: Vec<String>,
    /// When the last copy was pinned.
    pub copied_at: String,
}

impl UpstreamEntry {
    /// `HOSTNAME/NAMESPACE/NAME/SYSTEM`.
    pub fn address(&self) -> String {
        format!("{}/{}/{}/{}", self.hostname, self.namespace, self.name, self.system)
    }

    /// The module, by the address grammar (a stored entry is the indexer's, but is read back).
    pub fn module(&self) -> Option<UpstreamModule> {
        UpstreamModule::parse(&self.hostname, &self.namespace, &self.name, &self.system).ok()
    }

    /// The version to show first (`latest`).
    pub fn latest(&self) -> Option<&str> {
        latest(self.versions.iter().map(String::as_str))
    }
}

impl Catalog {
    /// Read a stored catalog; unreadable or of another format: `Error::Internal`.
    pub fn parse(bytes: &[u8]) -> Result<Self, Error> {
        let c: Catalog = serde_json::from_slice(bytes).map_err(|e| Error::internal_from("catalog", e))?;
        if c.format != CATALOG_FORMAT {
            return Err(Error::internal(format!("catalog format {} is not {CATALOG_FORMAT}", c.format)));
        }
        Ok(c)
    }

    /// Stored as compact JSON: it is read whole on every list and search, and at thousands of
    /// modules pretty-printing would add a third to every read.
    pub fn to_bytes(&self) -> Result<bytes::Bytes, Error> {
        let mut bytes = serde_json::to_vec(self).map_err(|e| Error::internal_from("serialise catalog", e))?;
        bytes.push(b'\n');
        Ok(bytes.into())
    }

    /// Replace (or with `None` remove) a module's entry; whether that changed anything.
    pub fn set_module(&mut self, module: &ModuleAddress, entry: Option<ModuleEntry>) -> bool {
        set(&mut self.modules, module.to_string(), entry)
    }

    /// Replace (or with `None` remove) a provider's entry; whether that changed anything.
    pub fn set_provider(&mut self, provider: &ProviderAddress, entry: Option<ProviderEntry>) -> bool {
        set(&mut self.providers, provider.to_string(), entry)
    }

    /// Add a pinned copy of `version` of an upstream `module`, pinned at `copied_at`; whether
    /// that changed anything. (The pins themselves are the module's pins document's:
    /// `upstream::module_records::ModulePins`.)
    pub fn add_upstream_copy(&mut self, module: &UpstreamModule, version: &str, copied_at: &str) -> bool {
        let entry = self.upstream_modules.entry(module.to_string()).or_insert_with(|| UpstreamEntry {
            hostname: module.hostname.clone(),
            namespace: module.module.namespace.clone(),
            name: module.module.name.clone(),
            system: module.module.system.clone(),
            versions: Vec::new(),
            copied_at: copied_at.to_string(),
        });
        if entry.versions.iter().any(|v| v == version) {
            return false;
        }
        entry.versions.push(version.to_string());
        entry.versions.sort_by(|a, b| newest_first(a, b));
        entry.copied_at = copied_at.to_string();
        true
    }

    /// A module's entry.
    pub fn module(&self, module: &ModuleAddress) -> Option<&ModuleEntry> {
        self.modules.get(&module.to_string())
    }

    /// A provider's entry.
    pub fn provider(&self, provider: &ProviderAddress) -> Option<&ProviderEntry> {
        self.providers.get(&provider.to_string())
    }
}

fn set<T: PartialEq>(map: &mut BTreeMap<String, T>, key: String, entry: Option<T>) -> bool {
    match entry {
        Some(entry) if map.get(&key) == Some(&entry) => false,
        Some(entry) => {
            map.insert(key, entry);
            true
        }
        None => map.remove(&key).is_some(),
    }
}

/// The version to show and pin first: the newest release by SemVer precedence, or, when every
/// version is a pre-release, the newest of those. Strings that are not SemVer are skipped.
pub fn latest<'a>(versions: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut parsed: Vec<(&str, semver::Version)> =
        versions.into_iter().filter_map(|v| semver::Version::parse(v).ok().map(|p| (v, p))).collect();
    parsed.sort_by(|a, b| newest_first(a.0, b.0));
    parsed.iter().find(|(_, p)| p.pre.is_empty()).or(parsed.first()).map(|(v, _)| *v)
}

impl ModuleEntry {
    /// The entry for `module` as `manifest` lists it; `None` when it serves no version.
    /// `description` gives the description of the latest version (read from its docs).
    pub fn from_manifest(
        module: &ModuleAddress,
        manifest: &ModuleManifest,
        description: impl FnOnce(&ModuleVersion) -> Option<String>,
    ) -> Option<ModuleEntry> {
        let latest = latest(manifest.versions.iter().map(|v| v.version.as_str()))?;
        let entry = manifest.versions.iter().find(|v| v.version == latest)?;
        let updated = manifest.versions.iter().filter_map(|v| v.published_at.as_deref()).max().map(str::to_string);
        Some(ModuleEntry {
            namespace: module.namespace.clone(),
            name: module.name.clone(),
            system: module.system.clone(),
            latest: latest.to_string(),
            sha256: entry.sha256.clone(),
            description: description(entry),
            versions: manifest.versions.len(),
            published_at: entry.published_at.clone(),
            updated,
        })
    }

    /// `NAMESPACE/NAME/SYSTEM`.
    pub fn address(&self) -> String {
        format!("{}/{}/{}", self.namespace, self.name, self.system)
    }
}

impl ProviderEntry {
    /// The entry for `provider` as its `index.json` lists it; `None` when it serves no
    /// version. `updated` is kept from `previous` unless the versions changed, then `now`.
    pub fn from_index(
        provider: &ProviderAddress,
        index: &ProviderIndex,
        previous: Option<&ProviderEntry>,
        now: &str,
    ) -> Option<ProviderEntry> {
        let latest = latest(index.versions.keys().map(String::as_str))?.to_string();
        let versions = index.versions.keys().filter(|v| crate::address::parse_version(v).is_ok()).count();
        let registry = index.versions.values().any(|line| line.get("platforms").is_some());
        let updated = match previous {
            Some(p) if p.latest == latest && p.versions == versions && p.registry == registry => p.updated.clone(),
            _ => now.to_string(),
        };
        Some(ProviderEntry {
            hostname: provider.hostname.clone(),
            namespace: provider.namespace.clone(),
            r#type: provider.r#type.clone(),
            latest,
            versions,
            registry,
            updated,
        })
    }

    /// `HOSTNAME/NAMESPACE/TYPE`.
    pub fn address(&self) -> String {
        format!("{}/{}/{}", self.hostname, self.namespace, self.r#type)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mv(v: &str, at: Option<&str>) -> ModuleVersion {
        ModuleVersion {
            sha256: format!("sha-{v}"),
            published_at: at.map(str::to_string),
            ..ModuleVersion::example(v, &format!("modules/acme/vpc/aws/{v}.tar.gz"))
        }
    }

    #[test]
    fn an_upstream_modules_copies_are_listed_newest_first_each_once() {
        let mut catalog = Catalog::default();
        let m = UpstreamModule::parse("registry.terraform.io", "terraform-aws-modules", "vpc", "aws").unwrap();
        assert!(catalog.add_upstream_copy(&m, "5.0.0", "2026-11-27T10:00:00Z"));
        assert!(catalog.add_upstream_copy(&m, "5.10.0", "2026-11-27T11:00:00Z"));
        assert!(!catalog.add_upstream_copy(&m, "5.0.0", "2026-11-27T12:00:00Z"), "each version once");
        let entry = &catalog.upstream_modules["registry.terraform.io/terraform-aws-modules/vpc/aws"];
        assert_eq!(
            (entry.versions.clone(), entry.latest()),
            (vec!["5.10.0".to_string(), "5.0.0".to_string()], Some("5.10.0"))
        );
        assert_eq!(entry.copied_at, "2026-11-27T11:00:00Z");
        assert_eq!(entry.module(), Some(m));
        let stored = catalog.to_bytes().unwrap();
        assert_eq!(Catalog::parse(&stored).unwrap(), catalog);
        let before = Catalog::default().to_bytes().unwrap();
        assert!(!String::from_utf8_lossy(&before).contains("upstream"), "an older reader's catalog, unchanged");
    }

    #[test]
    fn latest_is_the_newest_release_else_the_newest_pre_release() {
        assert_eq!(latest(["1.0.0", "2.0.0-rc.1", "1.10.0", "1.9.0"]), Some("1.10.0"));
        assert_eq!(latest(["2.0.0-rc.1", "2.0.0-beta.2", "1.0.0-alpha"]), Some("2.0.0-rc.1"));
        assert_eq!(latest(["not semver", "0.1.0"]), Some("0.1.0"));
        assert_eq!(latest([]), None);
        assert_eq!(latest(["latest"]), None);
    }

    #[test]
    fn a_module_entry_follows_its_manifest() {
        let module = ModuleAddress::parse("acme", "vpc", "aws").unwrap();
        let manifest = ModuleManifest::new(vec![
            mv("1.0.0", Some("2026-01-01T00:00:00Z")),
            mv("1.1.0", Some("2026-02-01T00:00:00Z")),
            mv("2.0.0-rc.1", Some("2026-03-01T00:00:00Z")),
            mv("0.9.0", None),
        ]);
        let mut asked = Vec::new();
        let entry = ModuleEntry::from_manifest(&module, &manifest, |v| {
            asked.push(v.version.clone());
            Some("A VPC.".into())
        })
        .unwrap();
        assert_eq!(asked, ["1.1.0"], "the description is the latest version's");
        assert_eq!(
            serde_json::to_value(&entry).unwrap(),
            json!({"namespace": "acme", "name": "vpc", "system": "aws", "latest": "1.1.0", "sha256": "sha-1.1.0",
                   "description": "A VPC.", "versions": 4, "published_at": "2026-02-01T00:00:00Z",
                   "updated": "2026-03-01T00:00:00Z"})
        );
        assert_eq!(entry.address(), "acme/vpc/aws");
        assert_eq!(ModuleEntry::from_manifest(&module, &ModuleManifest::new(vec![]), |_| None), None);

        let mut catalog = Catalog::default();
        assert!(catalog.set_module(&module, Some(entry.clone())));
        assert!(!catalog.set_module(&module, Some(entry.clone())), "the same entry again changes nothing");
        assert_eq!(catalog.module(&module), Some(&entry));
        let stored = catalog.to_bytes().unwrap();
        assert_eq!(Catalog::parse(&stored).unwrap(), catalog);
        assert!(catalog.set_module(&module, None));
        assert!(!catalog.set_module(&module, None));
        for bad in [&b"[]"[..], br#"{"format":2}"#, b"{"] {
            assert_eq!(Catalog::parse(bad).unwrap_err().status().as_u16(), 500);
        }
    }

    #[test]
    fn a_provider_entry_follows_its_index_and_keeps_its_time_while_unchanged() {
        let provider = ProviderAddress::parse("registry.example.com", "acme", "widget").unwrap();
        let index: ProviderIndex = serde_json::from_value(json!({"versions": {
            "1.0.0": {}, "1.2.0": {"protocols": ["6.0"], "platforms": [{"os": "linux", "arch": "amd64"}]},
            "2.0.0-beta.1": {}, "junk": {}
        }}))
        .unwrap();
        let first = ProviderEntry::from_index(&provider, &index, None, "2026-01-01T00:00:00Z").unwrap();
        assert_eq!((first.latest.as_str(), first.versions, first.registry), ("1.2.0", 3, true));
        assert_eq!(first.address(), "registry.example.com/acme/widget");
        let again = ProviderEntry::from_index(&provider, &index, Some(&first), "2026-05-05T00:00:00Z").unwrap();
        assert_eq!(again, first, "nothing changed: the time stays");
        let mut more = index.clone();
        more.versions.insert("1.3.0".into(), json!({}));
        let changed = ProviderEntry::from_index(&provider, &more, Some(&first), "2026-05-05T00:00:00Z").unwrap();
        assert_eq!((changed.latest.as_str(), changed.updated.as_str()), ("1.3.0", "2026-05-05T00:00:00Z"));
        assert_eq!(ProviderEntry::from_index(&provider, &ProviderIndex::default(), None, "t"), None);
    }
}
