use std::collections::BTreeMap;

use super::super::fixtures::*;
use super::super::{Indexer, Limits};
use crate::catalog::{ModuleEntry, ProviderEntry, UpstreamEntry};
use crate::layout;
use crate::storage::{MemoryStorage, Storage};
use crate::testing::tar_gz as tar_gz_of;

/// Every part of the catalog as stored, flattened.
#[derive(Debug, Clone, PartialEq)]
struct Flat {
    modules: BTreeMap<String, ModuleEntry>,
    providers: BTreeMap<String, ProviderEntry>,
    upstream_modules: BTreeMap<String, UpstreamEntry>,
}

async fn catalog(s: &MemoryStorage) -> Flat {
    let stored = crate::catalog::stored(s).await.unwrap();
    let index =
        s.peek(layout::CATALOG_INDEX).map(|b| <crate::catalog::CatalogIndex as crate::catalog::Part>::parse(&b));
    assert_eq!(index.map(Result::unwrap).unwrap_or_default(), stored.index(), "the index counts every shard");
    Flat {
        modules: stored.modules().map(|e| (e.address(), e.clone())).collect(),
        providers: stored.providers.providers,
        upstream_modules: stored.upstream.modules,
    }
}

/// Every part's bytes: what "nothing written" compares.
fn parts(s: &MemoryStorage) -> Vec<(String, Vec<u8>)> {
    let keys = s.keys().into_iter().filter(|k| k.starts_with(layout::CATALOG_PREFIX));
    keys.map(|k| (k.clone(), s.peek(&k).unwrap().to_vec())).collect()
}

/// Remove every part, as in a bucket from before the catalog.
async fn lose_catalog(s: &MemoryStorage) {
    for key in s.keys().into_iter().filter(|k| k.starts_with(layout::CATALOG_PREFIX)) {
        s.delete(&key).await.unwrap();
    }
}

/// A catalog rebuilt without its previous copy dates providers at the rebuild (their
/// indexes carry no time): compared without that, so no test depends on which second the
/// clock shows.
fn undated(mut catalog: Flat) -> Flat {
    catalog.providers.values_mut().for_each(|p| p.updated.clear());
    catalog
}

#[tokio::test]
async fn the_catalog_follows_publishes_yanks_and_repairs() {
    let s = MemoryStorage::new();
    let indexer = Indexer::new(&s, Limits::default());
    let readme = |text: &str| tar_gz_of(&[("README.md", text.as_bytes()), ("main.tf", b"# x\n")]);
    s.insert("modules/acme/vpc/aws/1.0.0.tar.gz", readme("# VPC\n\nThe first VPC.\n"));
    indexer.on_object_changed("modules/acme/vpc/aws/1.0.0.tar.gz").await.unwrap();
    let entry = catalog(&s).await.modules["acme/vpc/aws"].clone();
    assert_eq!((entry.latest.as_str(), entry.versions), ("1.0.0", 1));
    assert_eq!(entry.description.as_deref(), Some("The first VPC."));
    assert!(entry.published_at.is_some() && entry.updated == entry.published_at);

    // A newer version: its README is the description now. A pre-release does not move latest.
    s.insert("modules/acme/vpc/aws/1.1.0.tar.gz", readme("Better VPC."));
    indexer.on_object_changed("modules/acme/vpc/aws/1.1.0.tar.gz").await.unwrap();
    s.insert("modules/acme/vpc/aws/2.0.0-rc.1.tar.gz", readme("Unstable."));
    indexer.on_object_changed("modules/acme/vpc/aws/2.0.0-rc.1.tar.gz").await.unwrap();
    let entry = catalog(&s).await.modules["acme/vpc/aws"].clone();
    assert_eq!((entry.latest.as_str(), entry.versions), ("1.1.0", 3));
    assert_eq!(entry.description.as_deref(), Some("Better VPC."));

    // A provider too.
    let zip = "providers/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.1_linux_amd64.zip";
    s.insert(zip, provider_zip("one"));
    indexer.on_object_changed(zip).await.unwrap();
    let provider = catalog(&s).await.providers["registry.terraform.io/hashicorp/null"].clone();
    assert_eq!((provider.latest.as_str(), provider.versions, provider.registry), ("3.2.1", 1, false));

    // The same event again: nothing to write.
    let stored = parts(&s);
    indexer.on_object_changed(zip).await.unwrap();
    assert_eq!(parts(&s), stored);

    // Yank the latest: the previous one is latest again, with its own description.
    s.delete("modules/acme/vpc/aws/1.1.0.tar.gz").await.unwrap();
    indexer.on_object_changed("modules/acme/vpc/aws/1.1.0.tar.gz").await.unwrap();
    let entry = catalog(&s).await.modules["acme/vpc/aws"].clone();
    assert_eq!((entry.latest.as_str(), entry.description.as_deref()), ("1.0.0", Some("The first VPC.")));

    // Everything of the module yanked: it leaves the catalog.
    for key in ["modules/acme/vpc/aws/1.0.0.tar.gz", "modules/acme/vpc/aws/2.0.0-rc.1.tar.gz"] {
        s.delete(key).await.unwrap();
        indexer.on_object_changed(key).await.unwrap();
    }
    assert!(catalog(&s).await.modules.is_empty());

    // A damaged part: the next pass that writes it rebuilds it whole (a module's: its shard and
    // the index; a provider's: the providers); a lost catalog: the next pass rebuilds every
    // part, and so does a repair.
    s.insert("modules/acme/dns/aws/0.1.0.tgz", readme("DNS zones."));
    indexer.on_object_changed("modules/acme/dns/aws/0.1.0.tgz").await.unwrap();
    let whole = catalog(&s).await;
    for part in ["indexed/catalog/modules/acme.json", layout::CATALOG_INDEX, layout::CATALOG_PROVIDERS] {
        s.insert(part, b"{ damaged".to_vec());
    }
    s.insert("modules/acme/dns/aws/0.2.0.tgz", readme("DNS zones, v2."));
    indexer.on_object_changed("modules/acme/dns/aws/0.2.0.tgz").await.unwrap();
    indexer.on_object_changed(zip).await.unwrap();
    let rebuilt = catalog(&s).await;
    assert_eq!(
        undated(rebuilt.clone()).providers,
        undated(whole.clone()).providers,
        "entries of other owners are back"
    );
    assert_eq!(rebuilt.modules["acme/dns/aws"].description.as_deref(), Some("DNS zones, v2."));
    lose_catalog(&s).await;
    s.insert("modules/acme/dns/aws/0.3.0.tgz", readme("DNS zones, v3."));
    indexer.on_object_changed("modules/acme/dns/aws/0.3.0.tgz").await.unwrap();
    let upgraded = catalog(&s).await;
    assert_eq!(
        undated(upgraded.clone()).providers,
        undated(whole).providers,
        "a bucket from before the catalog: every owner listed"
    );
    assert_eq!(upgraded.modules["acme/dns/aws"].latest, "0.3.0");
    s.delete("modules/acme/dns/aws/0.3.0.tgz").await.unwrap();
    indexer.on_object_changed("modules/acme/dns/aws/0.3.0.tgz").await.unwrap();
    lose_catalog(&s).await;
    indexer.reindex_all().await.unwrap();
    assert_eq!(undated(catalog(&s).await), undated(rebuilt));
    let before = parts(&s);
    indexer.reindex_all().await.unwrap();
    assert_eq!(parts(&s), before, "a repair of a right catalog writes nothing");
}

#[tokio::test]
async fn a_pinned_upstream_copy_joins_the_catalog_and_a_repair_keeps_it() {
    use crate::upstream::module_records::ModulePin;
    let s = MemoryStorage::new();
    let indexer = Indexer::new(&s, Limits::default());
    let m = crate::address::UpstreamModule::parse("registry.terraform.io", "o", "r", "aws").unwrap();
    let version = semver::Version::new(1, 0, 0);
    let pin = ModulePin {
        module: m.to_string(),
        version: "1.0.0".into(),
        sha256: "ab".repeat(32),
        size: 1,
        archive: "tar.gz".into(),
        source: "git::https://github.com/o/r?ref=v1.0.0".into(),
        copied_at: "2026-11-27T10:00:00Z".into(),
    };
    let key = layout::upstream_module_pin(&m, &version);
    s.insert(&key, serde_json::to_vec(&pin).unwrap());
    indexer.on_object_changed(&key).await.unwrap();
    assert_eq!(catalog(&s).await.upstream_modules["registry.terraform.io/o/r/aws"].versions, ["1.0.0"]);
    s.insert("modules/acme/vpc/aws/1.0.0.tar.gz", tar_gz_of(&[("main.tf", b"# x\n")]));
    indexer.on_object_changed("modules/acme/vpc/aws/1.0.0.tar.gz").await.unwrap();
    indexer.reindex_all().await.unwrap();
    let repaired = catalog(&s).await;
    assert!(repaired.modules.contains_key("acme/vpc/aws"));
    assert_eq!(repaired.upstream_modules["registry.terraform.io/o/r/aws"].versions, ["1.0.0"], "kept by a repair");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_passes_of_many_owners_lose_no_entry() {
    let s = std::sync::Arc::new(MemoryStorage::new());
    let mut tasks = Vec::new();
    for i in 0..40 {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            // Twenty modules with two versions each, published at once.
            let key = format!("modules/acme/m{}/aws/1.{}.0.tar.gz", i % 20, i / 20);
            s.insert(&key, tar_gz_of(&[("main.tf", format!("# {i}\n").as_bytes())]));
            Indexer::new(&*s, Limits::default()).on_object_changed(&key).await.unwrap();
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let catalog = catalog(&s).await;
    assert_eq!(catalog.modules.len(), 20);
    for (address, entry) in &catalog.modules {
        assert_eq!((entry.latest.as_str(), entry.versions), ("1.1.0", 2), "{address}");
    }
}

/// A bucket from before the catalog was sharded: its single document's upstream modules (no
/// manifest holds them) are carried into their part by the first pass, and every module is
/// listed in its namespace's shard.
#[tokio::test]
async fn a_bucket_with_the_single_catalog_of_format_1_keeps_its_upstream_modules() {
    let s = MemoryStorage::new();
    let indexer = Indexer::new(&s, Limits::default());
    s.insert("modules/acme/vpc/aws/1.0.0.tar.gz", tar_gz_of(&[("main.tf", b"# x\n")]));
    indexer.on_object_changed("modules/acme/vpc/aws/1.0.0.tar.gz").await.unwrap();
    lose_catalog(&s).await;
    let legacy = serde_json::json!({"format": 1, "modules": {}, "providers": {}, "upstream_modules": {
        "registry.terraform.io/o/r/aws": {"hostname": "registry.terraform.io", "namespace": "o", "name": "r",
            "system": "aws", "versions": ["1.0.0"], "copied_at": "2026-11-27T10:00:00Z"}}});
    s.insert(layout::LEGACY_CATALOG, serde_json::to_vec(&legacy).unwrap());
    s.insert("modules/other/dns/aws/1.0.0.tar.gz", tar_gz_of(&[("main.tf", b"# y\n")]));
    indexer.on_object_changed("modules/other/dns/aws/1.0.0.tar.gz").await.unwrap();
    let upgraded = catalog(&s).await;
    assert_eq!(upgraded.modules.keys().collect::<Vec<_>>(), ["acme/vpc/aws", "other/dns/aws"]);
    assert_eq!(upgraded.upstream_modules["registry.terraform.io/o/r/aws"].versions, ["1.0.0"]);
}

/// New modules in many namespaces at once all write the index: each marks its namespace
/// first, so a write counts every marked namespace and most passes find their line already
/// written. Every count is right at the end, and no mark is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn new_modules_in_many_namespaces_at_once_are_all_counted() {
    let s = std::sync::Arc::new(MemoryStorage::new());
    s.insert("modules/first/m/aws/1.0.0.tar.gz", tar_gz_of(&[("main.tf", b"# first\n")]));
    Indexer::new(&*s, Limits::default()).on_object_changed("modules/first/m/aws/1.0.0.tar.gz").await.unwrap();
    let mut tasks = Vec::new();
    for i in 0..30 {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            let key = format!("modules/ns{i}/m/aws/1.0.0.tar.gz");
            s.insert(&key, tar_gz_of(&[("main.tf", format!("# {i}\n").as_bytes())]));
            Indexer::new(&*s, Limits::default()).on_object_changed(&key).await.unwrap();
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let catalog = catalog(&s).await;
    assert_eq!(catalog.modules.len(), 31);
    let marks: Vec<String> = s.keys().into_iter().filter(|k| k.starts_with(layout::CATALOG_DIRTY_PREFIX)).collect();
    assert!(marks.is_empty(), "{marks:?}");
}
