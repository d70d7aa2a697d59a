use super::super::fixtures::*;
use super::super::{Indexer, Limits, Outcome};
use crate::archive;
use crate::manifest::{ProviderIndex, ProviderVersion};
use crate::storage::{MemoryStorage, Storage};
use crate::testing::zip as zip_of;
use sha2::{Digest, Sha256};

#[tokio::test]
async fn provider_documents_follow_the_zips() {
    let s = MemoryStorage::new();
    let indexer = Indexer::new(&s, Limits::default());
    let prefix = "providers/registry.terraform.io/hashicorp/null/";
    let docs = "indexed/providers/registry.terraform.io/hashicorp/null/";
    let zip_a = provider_zip("linux");
    s.insert(&format!("{prefix}terraform-provider-null_3.2.1_linux_amd64.zip"), zip_a.clone());
    s.insert(&format!("{prefix}terraform-provider-null_3.2.1_darwin_arm64.zip"), provider_zip("darwin"));
    s.insert(&format!("{prefix}terraform-provider-null_3.1.0_linux_amd64.zip"), zip_a.clone());
    // A document the indexer wrote for a version whose zips have all gone since.
    s.insert(
        &format!("{docs}2.0.0.json"),
        r#"{"archives":{"linux_amd64":{"url":"terraform-provider-null_2.0.0_linux_amd64.zip","hashes":["h1:x"]}}}"#,
    );
    // An upload's event indexes its own version only; the repair pass, everything.
    let key = format!("{prefix}terraform-provider-null_3.1.0_linux_amd64.zip");
    let (owner, outcome) = indexer.on_object_changed(&key).await.unwrap().unwrap();
    assert_eq!(outcome, Outcome::Written { versions: 1 });
    let index = ProviderIndex::parse(&s.peek(&format!("{docs}index.json")).unwrap()).unwrap();
    assert_eq!(index.versions.keys().collect::<Vec<_>>(), ["3.1.0"]);
    assert_eq!(indexer.reindex(&owner).await.unwrap(), Outcome::Written { versions: 2 });
    let index = ProviderIndex::parse(&s.peek(&format!("{docs}index.json")).unwrap()).unwrap();
    assert_eq!(index.versions.keys().collect::<Vec<_>>(), ["3.1.0", "3.2.1"]);
    let stale = ProviderVersion::parse(&s.peek(&format!("{docs}2.0.0.json")).unwrap()).unwrap();
    assert!(stale.archives.is_empty(), "a version with no zips is emptied, which answers 404");
    let doc = ProviderVersion::parse(&s.peek(&format!("{docs}3.2.1.json")).unwrap()).unwrap();
    let linux = &doc.archives["linux_amd64"];
    assert_eq!(linux.url, "terraform-provider-null_3.2.1_linux_amd64.zip");
    let h1 = archive::summarise_zip(std::io::Cursor::new(zip_a.clone()), &archive::Bounds::UNLIMITED).unwrap().h1;
    assert_eq!(linux.hashes, [format!("zh:{}", hex::encode(Sha256::digest(&zip_a))), h1]);
    assert_eq!(indexer.reindex(&owner).await.unwrap(), Outcome::Unchanged);

    // A bad zip is rejected; the rest of the provider is indexed as before.
    let before = s.peek(&format!("{docs}index.json"));
    let bad = format!("{prefix}terraform-provider-null_4.0.0_linux_amd64.zip");
    s.insert(&bad, "garbage");
    s.insert(&format!("{prefix}terraform-provider-null_3.2.1_windows_amd64.zip"), zip_of(&[("README", b"no binary")]));
    indexer.reindex(&owner).await.unwrap();
    assert_eq!(s.peek(&format!("{docs}index.json")), before);
    assert!(rejection(&s, &bad).unwrap().reason.contains("not a readable zip"));
    let doc = ProviderVersion::parse(&s.peek(&format!("{docs}3.2.1.json")).unwrap()).unwrap();
    assert_eq!(doc.archives.keys().collect::<Vec<_>>(), ["darwin_arm64", "linux_amd64"]);
}

/// A published zip keeps its bytes (versioned bucket, as deployed): other bytes for its
/// platform are refused with a record and the original object version stays named; a
/// platform not yet published is added as before.
#[tokio::test]
async fn published_zips_are_immutable() {
    let s = MemoryStorage::versioned();
    let indexer = Indexer::new(&s, Limits::default());
    let key = "providers/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.1_linux_amd64.zip";
    let doc_key = "indexed/providers/registry.terraform.io/hashicorp/null/3.2.1.json";
    s.insert(key, provider_zip("original"));
    indexer.on_object_changed(key).await.unwrap();
    let published = ProviderVersion::parse(&s.peek(doc_key).unwrap()).unwrap();
    let original = published.archives["linux_amd64"].version_id().unwrap().to_string();

    s.insert(key, provider_zip("replaced"));
    indexer.on_object_changed(key).await.unwrap();
    let doc = ProviderVersion::parse(&s.peek(doc_key).unwrap()).unwrap();
    assert_eq!(doc, published, "the published zip stays as it was");
    assert_eq!(s.peek_version(key, &original).unwrap(), provider_zip("original"));
    let record = rejection(&s, key).unwrap();
    assert!(record.reason.contains("linux_amd64 of provider"), "{}", record.reason);
    assert!(record.reason.contains("Published versions are immutable"), "{}", record.reason);

    let other = "providers/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.1_darwin_arm64.zip";
    s.insert(other, provider_zip("darwin"));
    indexer.on_object_changed(other).await.unwrap();
    let doc = ProviderVersion::parse(&s.peek(doc_key).unwrap()).unwrap();
    assert_eq!(doc.archives.keys().collect::<Vec<_>>(), ["darwin_arm64", "linux_amd64"]);
    assert_eq!(doc.archives["linux_amd64"], published.archives["linux_amd64"]);
}

/// Publishing or deleting one zip costs the same requests whatever the number of versions:
/// two documents read, two listings, the zip, two writes at most.
#[tokio::test]
async fn one_zip_costs_the_same_at_any_number_of_versions() {
    let prefix = "providers/registry.terraform.io/hashicorp/null/";
    let docs = "indexed/providers/registry.terraform.io/hashicorp/null/";
    let mut costs = Vec::new();
    for versions in [3, 60] {
        let s = MemoryStorage::new();
        let indexer = Indexer::new(&s, Limits::default());
        let zip = provider_zip("any");
        for v in 0..versions {
            s.insert(&format!("{prefix}terraform-provider-null_1.{v}.0_linux_amd64.zip"), zip.clone());
        }
        indexer.reindex(&provider()).await.unwrap();
        let key = format!("{prefix}terraform-provider-null_9.0.0_linux_amd64.zip");
        // Bytes of its own, as a new release has: a zip another version already has also
        // joins that digest's blob pointer (`index::oci`), two requests more.
        s.insert(&key, provider_zip("nine"));
        let before = s.request_count();
        let (_, outcome) = indexer.on_object_changed(&key).await.unwrap().unwrap();
        assert_eq!(outcome, Outcome::Written { versions: versions + 1 });
        let publish = s.request_count() - before;
        let index = ProviderIndex::parse(&s.peek(&format!("{docs}index.json")).unwrap()).unwrap();
        assert_eq!(index.versions.len(), versions + 1);
        assert!(index.versions.contains_key("9.0.0"));
        s.remove(&key);
        let before = s.request_count();
        let (_, outcome) = indexer.on_object_changed(&key).await.unwrap().unwrap();
        assert_eq!(outcome, Outcome::Written { versions });
        let delete = s.request_count() - before;
        let index = ProviderIndex::parse(&s.peek(&format!("{docs}index.json")).unwrap()).unwrap();
        assert!(!index.versions.contains_key("9.0.0"));
        let doc = ProviderVersion::parse(&s.peek(&format!("{docs}9.0.0.json")).unwrap()).unwrap();
        assert!(doc.archives.is_empty(), "emptied, which answers 404");
        // What the full pass would write: the same.
        assert_eq!(indexer.reindex(&provider()).await.unwrap(), Outcome::Unchanged);
        costs.push((publish, delete));
    }
    eprintln!("requests (publish, delete) at 3 and at 60 versions: {costs:?}");
    assert_eq!(costs[0], costs[1], "requests for one publish and one delete at 3 and at 60 versions");
    // At most 8 for the documents, 5 for the publish log (its head, a probe for a newer
    // entry, the entry, the head again, and the document written again once the entry is
    // there: `index::documents`), 3 for the catalog (it, the index, the write), and 3 for
    // the OCI artifacts (the platform's manifest, the index, the blob pointer).
    assert!(costs[0].0 <= 19, "{costs:?}");
}

/// A version pass over an `index.json` that does not parse repairs the whole provider.
#[tokio::test]
async fn an_unreadable_index_is_rebuilt_whole() {
    let s = MemoryStorage::new();
    let indexer = Indexer::new(&s, Limits::default());
    let prefix = "providers/registry.terraform.io/hashicorp/null/";
    let docs = "indexed/providers/registry.terraform.io/hashicorp/null/";
    s.insert(&format!("{prefix}terraform-provider-null_1.0.0_linux_amd64.zip"), provider_zip("a"));
    indexer.reindex(&provider()).await.unwrap();
    s.insert(&format!("{docs}index.json"), "{not json");
    let key = format!("{prefix}terraform-provider-null_2.0.0_linux_amd64.zip");
    s.insert(&key, provider_zip("b"));
    indexer.on_object_changed(&key).await.unwrap();
    let index = ProviderIndex::parse(&s.peek(&format!("{docs}index.json")).unwrap()).unwrap();
    assert_eq!(index.versions.keys().collect::<Vec<_>>(), ["1.0.0", "2.0.0"]);
}

/// What a publisher writes beside the zips is an input, never a trusted hash: a
/// `VERSION.json` claiming the very ETag of a zip, with hashes of other bytes, changes
/// nothing the mirror serves.
#[tokio::test]
async fn publisher_documents_are_never_believed() {
    let s = MemoryStorage::new();
    let indexer = Indexer::new(&s, Limits::default());
    let prefix = "providers/registry.terraform.io/hashicorp/null/";
    let zip_key = format!("{prefix}terraform-provider-null_3.2.1_linux_amd64.zip");
    let zip = provider_zip("real");
    s.insert(&zip_key, zip.clone());
    let etag = s.etag(&zip_key).await.unwrap().unwrap();
    let forged = serde_json::json!({"archives": {"linux_amd64": {
        "url": "terraform-provider-null_3.2.1_linux_amd64.zip",
        "hashes": ["h1:forgedforgedforgedforgedforgedforgedforged00=", "zh:00"],
        "indexed": {"size": zip.len(), "etag": etag}
    }}});
    s.insert(&format!("{prefix}3.2.1.json"), serde_json::to_vec(&forged).unwrap());
    s.insert(&format!("{prefix}index.json"), r#"{"versions":{"3.2.1":{},"9.9.9":{}}}"#);
    indexer.reindex(&provider()).await.unwrap();
    let docs = "indexed/providers/registry.terraform.io/hashicorp/null/";
    let doc = ProviderVersion::parse(&s.peek(&format!("{docs}3.2.1.json")).unwrap()).unwrap();
    let h1 = archive::summarise_zip(std::io::Cursor::new(zip.clone()), &archive::Bounds::UNLIMITED).unwrap().h1;
    assert_eq!(doc.archives["linux_amd64"].hashes, [format!("zh:{}", hex::encode(Sha256::digest(&zip))), h1]);
    let index = ProviderIndex::parse(&s.peek(&format!("{docs}index.json")).unwrap()).unwrap();
    assert_eq!(index.versions.keys().collect::<Vec<_>>(), ["3.2.1"], "only versions with zips");
    // The publisher's files stay as they were, and are not rejected: they are names a
    // synced `terraform providers mirror` directory holds.
    assert_eq!(s.peek(&format!("{prefix}3.2.1.json")).unwrap(), serde_json::to_vec(&forged).unwrap());
    assert!(rejection(&s, &format!("{prefix}3.2.1.json")).is_none());
}
