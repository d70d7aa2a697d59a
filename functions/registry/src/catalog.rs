//! The catalog: every module and provider the registry serves, with what a person choosing one
//! wants to see (latest version, description, how many versions, when it last changed). The
//! indexer keeps it (`index::catalog`), with the same conditional writes as manifests; the web
//! function answers list and search from it.
//!
//! It is stored in parts (`layout::catalog_*`), so that a publish rewrites only its own
//! namespace's part and publishes in different namespaces never contend:
//! - one `ModuleShard` per namespace: its modules' entries;
//! - the `CatalogIndex`: for each namespace, how many modules of each system it holds. It
//!   changes only when a module appears or goes, and lets a list find the shards that hold a
//!   page without reading the others;
//! - `ProviderCatalog` and `UpstreamCatalog`: the providers and the upstream modules copied
//!   here, each one document (published far more rarely than modules, and listed whole on
//!   the catalog page).
//!
//! Each entry is a function of its owner's manifest as stored, so the indexer can always
//! recompute one from the bucket, and a repair (`reindex_all`) rebuilds every part.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::address::{ModuleAddress, ProviderAddress, UpstreamModule};
use crate::error::Error;
use crate::manifest::{ModuleManifest, ModuleVersion, ProviderIndex, newest_first};

/// The `format` of the catalog's parts this code reads and writes (1 was the single document
/// `layout::LEGACY_CATALOG`, read now only for the upstream modules it held).
pub const CATALOG_FORMAT: u32 = 2;

/// What the four parts share: a `format`, checked on read, and compact JSON.
pub trait Part: Serialize + DeserializeOwned {
    /// What the part is called in errors.
    const WHAT: &'static str;
    /// Its `format`.
    fn format(&self) -> u32;

    /// Read a stored part; unreadable or of another format: `Error::Internal`.
    fn parse(bytes: &[u8]) -> Result<Self, Error> {
        let part: Self = serde_json::from_slice(bytes).map_err(|e| Error::internal_from(Self::WHAT, e))?;
        if part.format() != CATALOG_FORMAT {
            return Err(Error::internal(format!("{} format {} is not {CATALOG_FORMAT}", Self::WHAT, part.format())));
        }
        Ok(part)
    }

    /// Stored as compact JSON: lists and searches read parts whole, and pretty-printing would
    /// add a third to every read.
    fn to_bytes(&self) -> Result<bytes::Bytes, Error> {
        let mut bytes = serde_json::to_vec(self).map_err(|e| Error::internal_from(Self::WHAT, e))?;
        bytes.push(b'\n');
        Ok(bytes.into())
    }
}

/// `indexed/catalog/index.json`: each namespace that holds a module, with how many modules of
/// each system it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogIndex {
    /// `CATALOG_FORMAT`; another value is refused.
    pub format: u32,
    /// Namespace → system → modules.
    #[serde(default)]
    pub namespaces: BTreeMap<String, BTreeMap<String, usize>>,
}

/// `indexed/catalog/modules/NAMESPACE.json`: the entries of one namespace's modules.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleShard {
    /// `CATALOG_FORMAT`; another value is refused.
    pub format: u32,
    /// `NAMESPACE/NAME/SYSTEM` → the module (the whole address, so that entries read the same
    /// in every part and in `Catalog`).
    #[serde(default)]
    pub modules: BTreeMap<String, ModuleEntry>,
}

/// `indexed/catalog/providers.json`: every provider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderCatalog {
    /// `CATALOG_FORMAT`; another value is refused.
    pub format: u32,
    /// `HOSTNAME/NAMESPACE/TYPE` → the provider.
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderEntry>,
}

/// `indexed/catalog/upstream-modules.json`: the upstream registries' modules this registry
/// holds pinned copies of (the modules pull-through, or an air-gap bundle), added as the
/// indexer logs each pin. Not derived from a manifest: a rebuild keeps these as they were.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpstreamCatalog {
    /// `CATALOG_FORMAT`; another value is refused.
    pub format: u32,
    /// `HOSTNAME/NAMESPACE/NAME/SYSTEM` → the module.
    #[serde(default)]
    pub modules: BTreeMap<String, UpstreamEntry>,
}

macro_rules! part {
    ($($t:ident { $field:ident } => $what:literal),*) => {$(
        impl Part for $t {
            const WHAT: &'static str = $what;
            fn format(&self) -> u32 {
                self.format
            }
        }
        impl Default for $t {
            fn default() -> Self {
                $t { format: CATALOG_FORMAT, $field: BTreeMap::new() }
            }
        }
    )*};
}
part!(CatalogIndex { namespaces } => "catalog index", ModuleShard { modules } => "catalog shard",
      ProviderCatalog { providers } => "provider catalog", UpstreamCatalog { modules } => "upstream modules catalog");

impl CatalogIndex {
    /// Set a namespace's counts from its shard (no module: the namespace goes); whether that
    /// changed anything.
    pub fn set_namespace(&mut self, namespace: &str, shard: &ModuleShard) -> bool {
        let counts = shard.counts();
        if counts.is_empty() {
            return self.namespaces.remove(namespace).is_some();
        }
        if self.namespaces.get(namespace) == Some(&counts) {
            return false;
        }
        self.namespaces.insert(namespace.to_string(), counts);
        true
    }
}

impl ModuleShard {
    /// System → modules.
    pub fn counts(&self) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for entry in self.modules.values() {
            *counts.entry(entry.system.clone()).or_insert(0) += 1;
        }
        counts
    }

    /// Replace (or with `None` remove) a module's entry; whether that changed anything.
    pub fn set_module(&mut self, module: &ModuleAddress, entry: Option<ModuleEntry>) -> bool {
        set(&mut self.modules, module.to_string(), entry)
    }

    /// A module's entry.
    pub fn module(&self, module: &ModuleAddress) -> Option<&ModuleEntry> {
        self.modules.get(&module.to_string())
    }
}

impl ProviderCatalog {
    /// Replace (or with `None` remove) a provider's entry; whether that changed anything.
    pub fn set_provider(&mut self, provider: &ProviderAddress, entry: Option<ProviderEntry>) -> bool {
        set(&mut self.providers, provider.to_string(), entry)
    }

    /// A provider's entry.
    pub fn provider(&self, provider: &ProviderAddress) -> Option<&ProviderEntry> {
        self.providers.get(&provider.to_string())
    }
}

impl UpstreamCatalog {
    /// Add a pinned copy of `version` of an upstream `module`, pinned at `copied_at`; whether
    /// that changed anything. (The pins themselves are the module's pins document's:
    /// `upstream::module_records::ModulePins`.)
    pub fn add_copy(&mut self, module: &UpstreamModule, version: &str, copied_at: &str) -> bool {
        let entry = self.modules.entry(module.to_string()).or_insert_with(|| UpstreamEntry {
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
}

/// The single document of format 1 (`layout::LEGACY_CATALOG`), read only for its upstream
/// modules, which no manifest holds: a bucket upgraded to the sharded catalog keeps them.
#[derive(Debug, Deserialize)]
pub struct LegacyCatalog {
    /// `HOSTNAME/NAMESPACE/NAME/SYSTEM` → the module, as `UpstreamCatalog` holds them now.
    #[serde(default)]
    pub upstream_modules: BTreeMap<String, UpstreamEntry>,
}

/// The whole catalog in memory: what a repair computes before writing each part, and what
/// tests compare.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Catalog {
    /// Every namespace's shard.
    pub shards: BTreeMap<String, ModuleShard>,
    /// The providers.
    pub providers: ProviderCatalog,
    /// The upstream modules.
    pub upstream: UpstreamCatalog,
}

impl Catalog {
    /// The index of these shards.
    pub fn index(&self) -> CatalogIndex {
        let mut index = CatalogIndex::default();
        for (namespace, shard) in &self.shards {
            index.set_namespace(namespace, shard);
        }
        index
    }

    /// Every module's entry, in address order.
    pub fn modules(&self) -> impl Iterator<Item = &ModuleEntry> {
        self.shards.values().flat_map(|s| s.modules.values())
    }

    /// A module's entry.
    pub fn module(&self, module: &ModuleAddress) -> Option<&ModuleEntry> {
        self.shards.get(&module.namespace)?.module(module)
    }

    /// Replace (or with `None` remove) a module's entry; whether that changed anything.
    pub fn set_module(&mut self, module: &ModuleAddress, entry: Option<ModuleEntry>) -> bool {
        self.shards.entry(module.namespace.clone()).or_default().set_module(module, entry)
    }
}

/// The catalog as stored, every part (tests, and tools that show the whole catalog).
pub async fn stored<S: crate::storage::Storage>(storage: &S) -> Result<Catalog, Error> {
    let mut catalog = Catalog::default();
    for object in storage.list(crate::layout::CATALOG_SHARDS_PREFIX).await? {
        let Some(namespace) = crate::layout::catalog_shard_namespace(&object.key) else { continue };
        if let Some(shard) = read_part::<ModuleShard, _>(storage, &object.key).await? {
            catalog.shards.insert(namespace.to_string(), shard);
        }
    }
    catalog.providers = read_part(storage, crate::layout::CATALOG_PROVIDERS).await?.unwrap_or_default();
    catalog.upstream = read_part(storage, crate::layout::CATALOG_UPSTREAM_MODULES).await?.unwrap_or_default();
    Ok(catalog)
}

async fn read_part<P: Part, S: crate::storage::Storage>(storage: &S, key: &str) -> Result<Option<P>, Error> {
    storage.get(key).await?.map(|o| P::parse(&o.bytes)).transpose()
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
        let mut catalog = UpstreamCatalog::default();
        let m = UpstreamModule::parse("registry.terraform.io", "terraform-aws-modules", "vpc", "aws").unwrap();
        assert!(catalog.add_copy(&m, "5.0.0", "2026-11-27T10:00:00Z"));
        assert!(catalog.add_copy(&m, "5.10.0", "2026-11-27T11:00:00Z"));
        assert!(!catalog.add_copy(&m, "5.0.0", "2026-11-27T12:00:00Z"), "each version once");
        let entry = &catalog.modules["registry.terraform.io/terraform-aws-modules/vpc/aws"];
        assert_eq!(
            (entry.versions.clone(), entry.latest()),
            (vec!["5.10.0".to_string(), "5.0.0".to_string()], Some("5.10.0"))
        );
        assert_eq!(entry.copied_at, "2026-11-27T11:00:00Z");
        assert_eq!(entry.module(), Some(m));
        let stored = catalog.to_bytes().unwrap();
        assert_eq!(UpstreamCatalog::parse(&stored).unwrap(), catalog);
        let legacy: LegacyCatalog =
            serde_json::from_value(json!({"format": 1, "modules": {}, "upstream_modules": catalog.modules})).unwrap();
        assert_eq!(legacy.upstream_modules, catalog.modules, "a format-1 catalog's copies are read");
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

        let mut shard = ModuleShard::default();
        assert!(shard.set_module(&module, Some(entry.clone())));
        assert!(!shard.set_module(&module, Some(entry.clone())), "the same entry again changes nothing");
        assert_eq!(shard.module(&module), Some(&entry));
        let stored = shard.to_bytes().unwrap();
        assert_eq!(ModuleShard::parse(&stored).unwrap(), shard);
        let mut index = CatalogIndex::default();
        assert!(index.set_namespace("acme", &shard));
        assert!(!index.set_namespace("acme", &shard));
        assert_eq!(index.namespaces["acme"], BTreeMap::from([("aws".to_string(), 1)]));
        assert!(shard.set_module(&module, None));
        assert!(!shard.set_module(&module, None));
        assert!(index.set_namespace("acme", &shard), "a namespace with no module leaves the index");
        assert!(index.namespaces.is_empty());
        for bad in [&b"[]"[..], br#"{"format":1}"#, br#"{"modules":{}}"#, b"{"] {
            assert_eq!(ModuleShard::parse(bad).unwrap_err().status().as_u16(), 500);
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
