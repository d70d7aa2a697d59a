use super::super::fixtures::rejection;
use super::super::{Indexer, Limits};
use super::read_small;
use crate::address::ProviderAddress;
use crate::manifest::{ProviderIndex, ProviderVersion};
use crate::storage::MemoryStorage;
use crate::testing::signing::{TestKey, release};
use sha2::Digest;

const HOST: &str = "registry.example.com";
const PREFIX: &str = "providers/registry.example.com/acme/widget/";
const DOCS: &str = "indexed/providers/registry.example.com/acme/widget/";
const SUMS: &str = "providers/registry.example.com/acme/widget/terraform-provider-widget_1.0.0_SHA256SUMS";

fn upload(s: &MemoryStorage, files: &[(String, Vec<u8>)]) {
    for (name, bytes) in files {
        s.insert(&format!("{PREFIX}{name}"), bytes.clone());
    }
}
async fn index_all(indexer: &Indexer<'_, MemoryStorage>, files: &[(String, Vec<u8>)]) {
    for (name, _) in files {
        indexer.on_object_changed(&format!("{PREFIX}{name}")).await.unwrap();
    }
}
fn document(s: &MemoryStorage, version: &str) -> Option<ProviderVersion> {
    s.peek(&format!("{DOCS}{version}.json")).map(|b| ProviderVersion::parse(&b).unwrap())
}
fn listed(s: &MemoryStorage) -> Vec<String> {
    s.peek(&format!("{DOCS}index.json"))
        .map(|b| ProviderIndex::parse(&b).unwrap().versions.keys().cloned().collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_release_is_served_once_its_signature_verifies() {
    let s = MemoryStorage::new();
    let indexer = Indexer::new(&s, Limits::default()).signing_for(Some(HOST.into()));
    let key = TestKey::generate("acme");
    s.insert("signing-keys/registry.example.com/acme/release.asc", key.public_armor());
    let files = release("widget", "1.0.0", &[("linux", "amd64"), ("darwin", "arm64")], Some(&["6.0"]), &key);
    // Everything but the signature: checked, hashed, kept aside, and explained.
    let (sig, rest) = files.split_last().unwrap();
    upload(&s, rest);
    index_all(&indexer, rest).await;
    assert!(listed(&s).is_empty());
    let doc = document(&s, "1.0.0").unwrap();
    assert!(doc.archives.is_empty() && doc.release.is_none());
    assert_eq!(doc.pending.len(), 2);
    let why = rejection(&s, SUMS).unwrap().reason;
    assert!(why.contains("SHA256SUMS.sig is missing"), "{why}");
    // The signature arrives: published, without reading the zips again.
    upload(&s, std::slice::from_ref(sig));
    let before = s.request_count();
    index_all(&indexer, std::slice::from_ref(sig)).await;
    // 14 for the release, 5 for its two publish log entries, 5 for the OCI artifacts (two
    // platform manifests, the index, two blob pointers), and 9 for the catalog: the first
    // pass of a new bucket builds every part (the index, the providers, found by listing).
    assert!(s.request_count() - before <= 33, "{} requests", s.request_count() - before);
    assert_eq!(listed(&s), ["1.0.0"]);
    let doc = document(&s, "1.0.0").unwrap();
    assert_eq!(doc.archives.keys().collect::<Vec<_>>(), ["darwin_arm64", "linux_amd64"]);
    assert!(doc.pending.is_empty());
    let release = doc.release.clone().unwrap();
    assert_eq!(
        (release.protocols, release.signing_key.key_id.as_str()),
        (vec!["6.0".to_string()], key.key_id().as_str())
    );
    assert!(rejection(&s, SUMS).is_none(), "the record goes once the release is good");
    let index = ProviderIndex::parse(&s.peek(&format!("{DOCS}index.json")).unwrap()).unwrap();
    assert_eq!(
        index.versions["1.0.0"],
        serde_json::json!({"protocols": ["6.0"], "platforms": [{"os": "darwin", "arch": "arm64"}, {"os": "linux", "arch": "amd64"}], "oci": true})
    );
    // Idempotent: nothing changed, nothing written.
    let provider = ProviderAddress::parse(HOST, "acme", "widget").unwrap();
    assert_eq!(
        indexer.reindex(&crate::layout::Owner::Provider(provider)).await.unwrap(),
        super::super::Outcome::Unchanged
    );

    // A bad signature uploaded over a served release: recorded, and the release stays served.
    let impostor = TestKey::generate("impostor");
    s.insert(&format!("{SUMS}.sig"), impostor.sign(&s.peek(SUMS).unwrap()));
    indexer.on_object_changed(&format!("{SUMS}.sig")).await.unwrap();
    assert_eq!(listed(&s), ["1.0.0"]);
    assert_eq!(document(&s, "1.0.0").unwrap().release, doc.release);
    let why = rejection(&s, SUMS).unwrap().reason;
    assert!(why.contains(&impostor.key_id()) && why.contains("not one of the namespace's signing keys"), "{why}");
    assert!(why.contains("stays served as it was") && !why.contains("not published"), "{why}");
}

/// A release file is read no further than its limit, also when it grew after it was listed.
#[tokio::test]
async fn a_release_file_that_grew_after_its_listing_is_read_no_further_than_its_limit() {
    let s = MemoryStorage::new();
    let indexer = Indexer::new(&s, Limits::default());
    s.insert(SUMS, vec![b'x'; 10_000]);
    let listed = crate::storage::ObjectInfo { key: SUMS.into(), etag: String::new(), size: 10 };
    let why = read_small(&indexer, &listed, 100).await.unwrap().unwrap_err();
    assert!(why.contains("over the 100"), "{why}");
    s.insert(SUMS, vec![b'x'; 100]);
    assert_eq!(read_small(&indexer, &listed, 100).await.unwrap().unwrap().len(), 100);
    s.remove(SUMS);
    assert!(read_small(&indexer, &listed, 100).await.unwrap().unwrap_err().contains("is gone"));
}

/// A served release whose files are replaced: each change has its record, saying what it
/// is, and what is served stays. (Reasons once said "not one of the namespace's keys" of
/// the namespace's own key, and "not published" of a listed release; an overwritten zip
/// had its record deleted by the same pass that wrote it.)
#[tokio::test]
async fn changes_to_a_served_release_are_recorded_with_their_true_reason() {
    let s = MemoryStorage::new();
    let indexer = Indexer::new(&s, Limits::default()).signing_for(Some(HOST.into()));
    let key = TestKey::generate("acme");
    s.insert("signing-keys/registry.example.com/acme/release.asc", key.public_armor());
    let files = release("widget", "1.0.0", &[("linux", "amd64")], None, &key);
    upload(&s, &files);
    index_all(&indexer, &files).await;
    let served = document(&s, "1.0.0").unwrap();
    assert!(served.release.is_some());

    // SHA256SUMS replaced, the signature left: the namespace's key is named as the signer.
    let original_sums = s.peek(SUMS).unwrap();
    s.insert(
        SUMS,
        [original_sums.as_ref(), b"0000000000000000000000000000000000000000000000000000000000000000  x.zip\n"].concat(),
    );
    indexer.on_object_changed(SUMS).await.unwrap();
    let why = rejection(&s, SUMS).unwrap().reason;
    assert!(why.contains(&key.key_id()) && why.contains("does not verify over SHA256SUMS"), "{why}");
    assert!(!why.contains("not one of the namespace's") && why.contains("stays served as it was"), "{why}");
    let now = document(&s, "1.0.0").unwrap();
    assert_eq!((now.archives, now.release), (served.archives.clone(), served.release.clone()));
    s.insert(SUMS, original_sums.to_vec());
    indexer.on_object_changed(SUMS).await.unwrap();
    assert!(rejection(&s, SUMS).is_none());

    // A served zip overwritten: its record names both SHA-256s, and stays on the next pass.
    let zip = format!("{PREFIX}terraform-provider-widget_1.0.0_linux_amd64.zip");
    let original = s.peek(&zip).unwrap();
    let other = crate::testing::provider_zip("widget", "1.0.0", "overwritten");
    s.insert(&zip, other.clone());
    for _ in 0..2 {
        indexer.on_object_changed(&zip).await.unwrap();
        let why = rejection(&s, &zip).map(|r| r.reason).unwrap_or_default();
        let (old, new) = (hex::encode(sha2::Sha256::digest(&original)), hex::encode(sha2::Sha256::digest(&other)));
        assert!(why.contains(&old) && why.contains(&new) && why.contains("immutable"), "{why}");
        let now = document(&s, "1.0.0").unwrap();
        assert_eq!((now.archives, now.release), (served.archives.clone(), served.release.clone()));
    }
    // The original bytes back: the record goes.
    s.insert(&zip, original.to_vec());
    indexer.on_object_changed(&zip).await.unwrap();
    assert!(rejection(&s, &zip).is_none());
}

/// docs/OPERATIONS.md, "Rotate a signing key", as written: the new key beside the old,
/// a release signed with it, the old key file removed; then a rebuild of the provider
/// (what `{"reindex":"all"}` runs) keeps the release the old key signed, and serves both.
#[tokio::test]
async fn rotating_a_signing_key_keeps_what_the_old_key_signed() {
    let s = MemoryStorage::new();
    // One indexer per step, as each S3 event and each repair gets one (it keeps a
    // namespace's keys for its own lifetime only).
    let indexer = || Indexer::new(&s, Limits::default()).signing_for(Some(HOST.into()));
    let (old, new) = (TestKey::generate("acme"), TestKey::generate("acme"));
    s.insert("signing-keys/registry.example.com/acme/release-2025.asc", old.public_armor());
    let first = release("widget", "1.0.0", &[("linux", "amd64")], None, &old);
    upload(&s, &first);
    index_all(&indexer(), &first).await;
    s.insert("signing-keys/registry.example.com/acme/release-2026.asc", new.public_armor());
    let second = release("widget", "2.0.0", &[("linux", "amd64")], None, &new);
    upload(&s, &second);
    index_all(&indexer(), &second).await;
    assert_eq!(listed(&s), ["1.0.0", "2.0.0"]);
    s.remove("signing-keys/registry.example.com/acme/release-2025.asc");
    let provider = ProviderAddress::parse(HOST, "acme", "widget").unwrap();
    indexer().reindex(&crate::layout::Owner::Provider(provider)).await.unwrap();
    assert_eq!(listed(&s), ["1.0.0", "2.0.0"]);
    let signer = |v: &str| document(&s, v).and_then(|d| d.release).map(|r| r.signing_key.key_id);
    assert_eq!((signer("1.0.0"), signer("2.0.0")), (Some(old.key_id()), Some(new.key_id())));
}

#[tokio::test]
async fn releases_that_do_not_verify_are_never_listed() {
    let s = MemoryStorage::new();
    let indexer = Indexer::new(&s, Limits::default()).signing_for(Some(HOST.into()));
    let (namespace_key, other) = (TestKey::generate("acme"), TestKey::generate("other"));
    s.insert("signing-keys/registry.example.com/acme/a.asc", namespace_key.public_armor());
    // Signed by a key that is not the namespace's.
    let files = release("widget", "1.0.0", &[("linux", "amd64")], None, &other);
    upload(&s, &files);
    index_all(&indexer, &files).await;
    assert!(listed(&s).is_empty());
    let why = rejection(&s, SUMS).unwrap().reason;
    assert!(why.contains(&other.key_id()), "{why}");

    // Signed right, but a zip's bytes are not the ones SHA256SUMS lists.
    let files = release("widget", "2.0.0", &[("linux", "amd64")], None, &namespace_key);
    upload(&s, &files);
    let zip = format!("{PREFIX}terraform-provider-widget_2.0.0_linux_amd64.zip");
    s.insert(&zip, crate::testing::provider_zip("widget", "2.0.0", "tampered"));
    index_all(&indexer, &files).await;
    assert!(listed(&s).is_empty());
    assert!(rejection(&s, &zip).unwrap().reason.contains("SHA256SUMS lists"));
    // A zip that SHA256SUMS does not list at all.
    let files = release("widget", "3.0.0", &[("linux", "amd64")], None, &namespace_key);
    upload(&s, &files);
    let extra = format!("{PREFIX}terraform-provider-widget_3.0.0_windows_amd64.zip");
    s.insert(&extra, crate::testing::provider_zip("widget", "3.0.0", "extra"));
    index_all(&indexer, &files).await;
    indexer.on_object_changed(&extra).await.unwrap();
    assert!(rejection(&s, &extra).unwrap().reason.contains("not listed in SHA256SUMS"));
    assert!(listed(&s).is_empty());
    // The extra zip goes: the release is published then.
    s.remove(&extra);
    indexer.on_object_changed(&extra).await.unwrap();
    assert_eq!(listed(&s), ["3.0.0"]);
    assert!(rejection(&s, &extra).is_none());

    // Rotation: a second key file; a release signed with it verifies. An indexer reads a
    // namespace's keys once (one event batch, one upload): the next one sees the new key.
    let rotated = TestKey::generate("acme-2026");
    s.insert("signing-keys/registry.example.com/acme/b.asc", rotated.public_armor());
    let files = release("widget", "4.0.0", &[("linux", "amd64")], Some(&["5.0", "6.0"]), &rotated);
    upload(&s, &files);
    index_all(&indexer, &files).await;
    assert_eq!(listed(&s), ["3.0.0"], "this indexer read the keys before the rotation");
    let indexer = Indexer::new(&s, Limits::default()).signing_for(Some(HOST.into()));
    let (sig, _) = files.last().unwrap();
    indexer.on_object_changed(&format!("{PREFIX}{sig}")).await.unwrap();
    assert_eq!(listed(&s), ["3.0.0", "4.0.0"]);
    assert_eq!(document(&s, "4.0.0").unwrap().release.unwrap().signing_key.key_id, rotated.key_id());

    // A manifest.json that SHA256SUMS does not cover: its protocols are not believed.
    let mut files = release("widget", "5.0.0", &[("linux", "amd64")], None, &rotated);
    files.push((
        "terraform-provider-widget_5.0.0_manifest.json".into(),
        br#"{"metadata":{"protocol_versions":["9.9"]}}"#.to_vec(),
    ));
    upload(&s, &files);
    index_all(&indexer, &files).await;
    assert!(!listed(&s).contains(&"5.0.0".to_string()));
    let why = rejection(&s, &SUMS.replace("1.0.0", "5.0.0")).unwrap().reason;
    assert!(why.contains("not listed in SHA256SUMS"), "{why}");
}

/// Providers of other hosts (the mirror's) are not signed releases: their zips are indexed
/// as before, and a SHA256SUMS beside them is never read.
#[tokio::test]
async fn other_hosts_are_mirrored_as_before() {
    let s = MemoryStorage::new();
    let indexer = Indexer::new(&s, Limits::default()).signing_for(Some(HOST.into()));
    let prefix = "providers/registry.terraform.io/hashicorp/null/";
    let key = TestKey::generate("x");
    for (name, bytes) in release("null", "3.2.1", &[("linux", "amd64")], None, &key) {
        s.insert(&format!("{prefix}{name}"), bytes);
        indexer.on_object_changed(&format!("{prefix}{name}")).await.unwrap();
    }
    let doc = s.peek("indexed/providers/registry.terraform.io/hashicorp/null/3.2.1.json").unwrap();
    let doc = ProviderVersion::parse(&doc).unwrap();
    assert_eq!(doc.archives.len(), 1);
    assert!(doc.release.is_none());
    assert!(s.keys().iter().all(|k| !k.starts_with("rejections/")), "{:?}", s.keys());
}
