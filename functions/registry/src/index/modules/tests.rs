use super::super::fixtures::*;
use super::super::{Indexer, Limits, Outcome};
use crate::storage::{MemoryStorage, Storage};
use crate::testing::{tar_gz as tar_gz_of, zip as zip_of};
use sha2::{Digest, Sha256};

#[tokio::test]
async fn module_manifest_follows_the_archives() {
    let s = MemoryStorage::new();
    let indexer = Indexer::new(&s, Limits::default());
    s.insert("modules/acme/vpc/aws/1.0.0.tar.gz", tf("one"));
    s.insert("modules/acme/vpc/aws/1.1.0.zip", zip_of(&[("main.tf", b"two")]));
    s.insert("modules/acme/vpc/aws/notes.txt", "ignored");
    assert_eq!(indexer.reindex(&module()).await.unwrap(), Outcome::Written { versions: 2 });
    assert_eq!(versions(&s), ["1.1.0", "1.0.0"]);
    let entry = &manifest(&s).versions[1];
    assert_eq!(entry.sha256, hex::encode(Sha256::digest(tf("one"))));
    assert_eq!(entry.size, tf("one").len() as u64);

    // notes.txt is not indexed, and says why.
    assert!(rejection(&s, "modules/acme/vpc/aws/notes.txt").unwrap().reason.contains("is not a module archive name"));

    // Nothing changed: no write, and unchanged archives are not read again (manifest,
    // archive listing, rejection listing, the one rejection record; then the namespace's
    // catalog shard, the manifest its entry is checked against, and the catalog index).
    let before = s.request_count();
    assert_eq!(indexer.reindex(&module()).await.unwrap(), Outcome::Unchanged);
    assert_eq!(s.request_count() - before, 4 + 3);

    // A second format of a published version is other bytes for it: refused, and the
    // published archive stays served.
    s.insert("modules/acme/vpc/aws/1.1.0.tar.gz", tf("two"));
    indexer.reindex(&module()).await.unwrap();
    assert_eq!(manifest(&s).versions[0].archive, "modules/acme/vpc/aws/1.1.0.zip");
    let record = rejection(&s, "modules/acme/vpc/aws/1.1.0.tar.gz").unwrap();
    assert!(record.reason.contains("is already published with sha256"), "{}", record.reason);
    // Where overwrites are allowed, the preferred extension wins.
    let overwriting = Indexer::new(&s, Limits { overwrite_published: true, ..Limits::default() });
    overwriting.reindex(&module()).await.unwrap();
    assert_eq!(manifest(&s).versions[0].archive, "modules/acme/vpc/aws/1.1.0.tar.gz");

    // Yank everything: the manifest is emptied (never deleted), which answers 404.
    for key in s.keys().into_iter().filter(|k| !k.ends_with("manifest.json")) {
        s.delete(&key).await.unwrap();
    }
    assert_eq!(indexer.reindex(&module()).await.unwrap(), Outcome::Written { versions: 0 });
    assert!(versions(&s).is_empty());
    assert_eq!(indexer.reindex(&module()).await.unwrap(), Outcome::Unchanged);
}

#[tokio::test]
async fn a_bad_upload_is_rejected_visibly_and_harmlessly() {
    let s = MemoryStorage::new();
    let limits = Limits { module_archive_bytes: 10_000, ..Limits::default() };
    let indexer = Indexer::new(&s, limits);
    s.insert("modules/acme/vpc/aws/1.0.0.tar.gz", tf("good"));
    indexer.reindex(&module()).await.unwrap();
    let published = s.peek(MANIFEST);

    let bad = [
        ("modules/acme/vpc/aws/1.1.0.tar.gz", tar_gz_of(&[("README.md", b"no tf")]), "no .tf"),
        ("modules/acme/vpc/aws/1.2.0.zip", b"not a zip".to_vec(), "not a readable zip"),
        ("modules/acme/vpc/aws/1.3.0.tgz", vec![1u8; 20_000], "over the limit of 10000"),
    ];
    for (key, bytes, reason) in &bad {
        s.insert(key, bytes.clone());
        indexer.on_object_changed(key).await.unwrap();
        assert_eq!(s.peek(MANIFEST), published, "{key}: the manifest stays as it was");
        let record = rejection(&s, key).unwrap_or_else(|| panic!("{key} has a rejection record"));
        assert!(record.reason.contains(reason), "{}", record.reason);
        assert_eq!(record.key, *key);
        assert!(record.rejected_at.ends_with('Z') && record.rejected_at.len() == 20, "{}", record.rejected_at);
    }

    // A rejected upload is not read again while its bytes are the same.
    let before = s.request_count();
    indexer.reindex(&module()).await.unwrap();
    let reads = s.request_count() - before;
    assert_eq!(
        reads,
        3 + 3 + 3,
        "manifest, listing, rejection listing, one read per record, catalog shard, manifest, index; no archive read"
    );

    // Overwriting a published version with a bad archive keeps what was published.
    s.insert("modules/acme/vpc/aws/1.0.0.tar.gz", b"corrupt".to_vec());
    indexer.reindex(&module()).await.unwrap();
    assert_eq!(s.peek(MANIFEST), published);

    // Fixing an upload clears its record and publishes it; deleting one clears its record.
    s.insert("modules/acme/vpc/aws/1.1.0.tar.gz", tf("fixed"));
    s.delete("modules/acme/vpc/aws/1.2.0.zip").await.unwrap();
    indexer.reindex(&module()).await.unwrap();
    assert_eq!(versions(&s), ["1.1.0", "1.0.0"]);
    assert!(rejection(&s, "modules/acme/vpc/aws/1.1.0.tar.gz").is_none());
    assert!(rejection(&s, "modules/acme/vpc/aws/1.2.0.zip").is_none());
    assert!(rejection(&s, "modules/acme/vpc/aws/1.3.0.tgz").is_some());
}

/// In a versioned bucket (as deployed), a published version keeps its bytes: the manifest
/// names the object version hashed, a different upload is refused with a record, and the
/// download URL still names the original version, whose bytes are the published ones.
#[tokio::test]
async fn published_versions_are_immutable() {
    let s = MemoryStorage::versioned();
    let indexer = Indexer::new(&s, Limits::default());
    let key = "modules/acme/vpc/aws/1.0.0.tar.gz";
    s.insert(key, tf("original"));
    indexer.on_object_changed(key).await.unwrap();
    let published = manifest(&s).versions[0].clone();
    let original = published.version_id.clone().expect("the version id is recorded");
    assert_eq!(s.peek_version(key, &original).unwrap(), tf("original"));

    // The same bytes again: nothing to refuse, still the original object version.
    s.insert(key, tf("original"));
    indexer.on_object_changed(key).await.unwrap();
    assert_eq!(manifest(&s).versions[0].version_id, Some(original.clone()));
    assert!(rejection(&s, key).is_none());

    // Other bytes: refused, the manifest unchanged, the original still what is named.
    s.insert(key, tf("replaced"));
    indexer.on_object_changed(key).await.unwrap();
    assert_eq!(manifest(&s).versions[0].sha256, published.sha256);
    assert_eq!(manifest(&s).versions[0].version_id, Some(original.clone()));
    let record = rejection(&s, key).unwrap();
    assert!(record.reason.contains("Published versions are immutable"), "{}", record.reason);
    assert!(record.reason.contains(&published.sha256), "{}", record.reason);
    // The refused bytes are not read again while they stay.
    let before = s.request_count();
    indexer.on_object_changed(key).await.unwrap();
    assert_eq!(s.request_count() - before, 4 + 3, "manifest, listing, rejection listing, the record; catalog");

    // Yank stays a delete: the version goes, its record too; a new upload then publishes.
    s.delete(key).await.unwrap();
    indexer.on_object_changed(key).await.unwrap();
    assert!(versions(&s).is_empty());
    assert!(rejection(&s, key).is_none());
    s.insert(key, tf("replaced"));
    indexer.on_object_changed(key).await.unwrap();
    let republished = manifest(&s).versions[0].clone();
    assert_eq!(republished.sha256, hex::encode(Sha256::digest(tf("replaced"))));
    assert_ne!(republished.version_id, Some(original));

    // REGISTRY_ALLOW_OVERWRITE: an upload replaces a published version.
    let overwriting = Indexer::new(&s, Limits { overwrite_published: true, ..Limits::default() });
    s.insert(key, tf("third"));
    overwriting.on_object_changed(key).await.unwrap();
    assert_eq!(manifest(&s).versions[0].sha256, hex::encode(Sha256::digest(tf("third"))));
    assert!(rejection(&s, key).is_none());
}

#[tokio::test]
async fn each_version_gets_its_docs_and_a_published_version_keeps_them() {
    use crate::module_docs::ModuleDocs;
    let s = MemoryStorage::new();
    let indexer = Indexer::new(&s, Limits::default());
    let docs_key = "indexed/modules/acme/vpc/aws/docs/1.0.0.json";
    let docs = |s: &MemoryStorage| -> ModuleDocs { serde_json::from_slice(&s.peek(docs_key).unwrap()).unwrap() };
    let archive = tar_gz_of(&[
        ("README.md", b"# VPC\n".as_slice()),
        ("variables.tf", b"variable \"name\" { type = string }\n"),
        ("modules/subnet/main.tf", b"output \"id\" { value = 1 }\n"),
        ("broken.tf", b"resource {"),
    ]);
    s.insert("modules/acme/vpc/aws/1.0.0.tar.gz", archive.clone());
    indexer.reindex(&module()).await.unwrap();
    let entry = &manifest(&s).versions[0];
    assert!(entry.docs);
    let first = docs(&s);
    assert_eq!(first.sha256, entry.sha256, "the docs name the archive they were read from");
    assert_eq!(first.root.readme.as_deref(), Some("# VPC\n"));
    assert_eq!(first.root.inputs[0].name, "name");
    assert_eq!(first.submodules[0].outputs[0].name, "id");
    assert!(first.warnings[0].starts_with("broken.tf:1:"), "{:?}", first.warnings);

    // Other bytes for the published version: refused, and its docs stay the published ones.
    s.insert("modules/acme/vpc/aws/1.0.0.tar.gz", tar_gz_of(&[("main.tf", b"variable \"evil\" {}\n".as_slice())]));
    indexer.reindex(&module()).await.unwrap();
    assert_eq!(docs(&s), first);

    // A manifest written before docs existed: the next pass reads the archive once more.
    s.insert("modules/acme/vpc/aws/1.0.0.tar.gz", archive);
    indexer.reindex(&module()).await.unwrap();
    let mut old = manifest(&s);
    old.versions[0].docs = false;
    s.insert(MANIFEST, serde_json::to_vec(&old).unwrap());
    s.delete(docs_key).await.unwrap();
    indexer.reindex(&module()).await.unwrap();
    assert!(manifest(&s).versions[0].docs);
    assert_eq!(docs(&s), first);
    let before = s.request_count();
    assert_eq!(indexer.reindex(&module()).await.unwrap(), Outcome::Unchanged);
    assert!(s.request_count() - before <= 4 + 3, "then reused without reading the archive");
}
