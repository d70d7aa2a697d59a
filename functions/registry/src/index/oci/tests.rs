use bytes::Bytes;
use sha2::{Digest, Sha256};

use super::*;
use crate::app::{App, Request};
use crate::index::{Indexer, Limits};
use crate::router::Service;
use crate::storage::MemoryStorage;

const PROVIDER: &str = "providers/registry.terraform.io/hashicorp/null/";
const MODULE: &str = "modules/acme/vpc/aws/";

/// The bytes a blob pointer leads to now (what the blob route's redirect downloads), if it
/// leads anywhere: an unversioned bucket, so a pointer naming a deleted zip leads nowhere.
fn resolve(s: &MemoryStorage, pointer: &str) -> Option<Bytes> {
    let blob: OciBlob = serde_json::from_slice(&s.peek(pointer)?).ok()?;
    match &blob.version_id {
        _ if blob.key.is_empty() => None,
        Some(v) => s.peek_version(&blob.key, v),
        None => s.peek(&blob.key),
    }
}

fn digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

async fn publish(s: &MemoryStorage, key: &str, bytes: Option<&[u8]>) {
    match bytes {
        Some(bytes) => s.insert(key, bytes.to_vec()),
        None => s.remove(key),
    }
    Indexer::new(s, Limits::default()).on_object_changed(key).await.unwrap();
}

/// What the blob route answers for `digest` in `repository`: its status, and where a
/// redirect sends the client (the key, before the presigned query).
async fn route(app: &App<MemoryStorage>, repository: &str, digest: &str) -> (u16, Option<String>) {
    let reply = app.handle(&Request::get(&format!("/v2/{repository}blobs/{digest}"))).await;
    let location = reply.header_value("location").and_then(|l| l.split('?').next()).map(str::to_string);
    (reply.status.as_u16(), location)
}

/// Two provider zips with the same bytes (two versions, or two platforms of one) are one
/// blob: yanking either leaves it served, from the other; yanking both makes it unknown.
#[tokio::test]
async fn a_provider_blob_shared_by_two_zips_goes_with_the_last() {
    let zip = crate::testing::provider_zip("null", "1.0.0", "same bytes");
    let key = |(v, p): (&str, &str)| format!("{PROVIDER}terraform-provider-null_{v}_{p}.zip");
    let provider = ProviderAddress::parse("registry.terraform.io", "hashicorp", "null").unwrap();
    let (digest, pointer) = (digest(&zip), layout::oci_blob(&provider, &digest(&zip)));
    let pairs =
        [[("1.0.0", "linux_amd64"), ("1.0.1", "linux_amd64")], [("1.0.0", "linux_amd64"), ("1.0.0", "darwin_arm64")]];
    for [a, b] in pairs {
        for (first, second) in [(a, b), (b, a)] {
            let app = App::builder(open(), MemoryStorage::new()).services(&[Service::Oci]).build().unwrap();
            for zip_key in [key(a), key(b)] {
                publish(app.storage(), &zip_key, Some(&zip)).await;
            }
            assert_eq!(resolve(app.storage(), &pointer).as_deref(), Some(&zip[..]));
            publish(app.storage(), &key(first), None).await;
            assert_eq!(resolve(app.storage(), &pointer).as_deref(), Some(&zip[..]), "{first:?} yanked");
            let location = format!("https://memory.invalid/{}", key(second));
            assert_eq!(route(&app, PROVIDER, &digest).await, (307, Some(location)), "{first:?} yanked");
            publish(app.storage(), &key(second), None).await;
            assert_eq!(resolve(app.storage(), &pointer), None, "both yanked");
            assert_eq!(route(&app, PROVIDER, &digest).await, (404, None), "both yanked");
        }
    }
}

/// The same for a module's versions: two `.zip` archives with the same bytes.
#[tokio::test]
async fn a_module_blob_shared_by_two_versions_goes_with_the_last() {
    let zip = crate::testing::module_zip(&[("main.tf", "# same")]);
    let module = ModuleAddress::parse("acme", "vpc", "aws").unwrap();
    let (digest, pointer) = (digest(&zip), layout::oci_module_blob(&module, &digest(&zip)));
    for (first, second) in [("1.0.0", "1.1.0"), ("1.1.0", "1.0.0")] {
        let app = App::builder(open(), MemoryStorage::new()).services(&[Service::Oci]).build().unwrap();
        for v in ["1.0.0", "1.1.0"] {
            publish(app.storage(), &format!("{MODULE}{v}.zip"), Some(&zip)).await;
        }
        assert_eq!(resolve(app.storage(), &pointer).as_deref(), Some(&zip[..]));
        publish(app.storage(), &format!("{MODULE}{first}.zip"), None).await;
        assert_eq!(resolve(app.storage(), &pointer).as_deref(), Some(&zip[..]), "{first} yanked");
        let location = format!("https://memory.invalid/{MODULE}{second}.zip");
        assert_eq!(route(&app, MODULE, &digest).await, (307, Some(location)), "{first} yanked");
        publish(app.storage(), &format!("{MODULE}{second}.zip"), None).await;
        assert_eq!(resolve(app.storage(), &pointer), None, "both yanked");
        assert_eq!(route(&app, MODULE, &digest).await, (404, None), "both yanked");
    }
}

/// A yank racing a publish of the same bytes (two `.tar.gz` versions, one repacked zip): the
/// publishing pass adds its version to the pointer after the yanking pass read the
/// manifest, and before that pass takes its own version out. The pointer keeps serving.
#[tokio::test]
async fn a_yank_racing_a_publish_of_the_same_bytes_keeps_the_blob() {
    let archive = crate::testing::module_tar_gz(&[("main.tf", "# same")]);
    let module = ModuleAddress::parse("acme", "vpc", "aws").unwrap();
    let app = App::builder(open(), MemoryStorage::new()).services(&[Service::Oci]).build().unwrap();
    let s = app.storage();
    let manifest = || ModuleManifest::parse(&s.peek(&layout::module_manifest(&module)).unwrap()).unwrap();
    publish(s, &format!("{MODULE}1.0.0.tar.gz"), Some(&archive)).await;
    let one = manifest();
    publish(s, &format!("{MODULE}1.1.0.tar.gz"), Some(&archive)).await;
    let both = manifest();
    let layer = one.versions[0].oci.clone().unwrap();
    let digest = format!("sha256:{}", layer.sha256);
    // The yanking pass read `one` and writes a manifest without 1.0.0; the publishing pass
    // (which read `one` too) added 1.1.0 to the pointer first.
    let yanked = ModuleManifest::new(Vec::new());
    let tags = store_module(s, &module, Some(&one), &both).await.unwrap();
    apply(s, &tags).await.unwrap();
    apply(s, &forget_module(&module, Some(&one), &yanked)).await.unwrap();
    let pointer = layout::oci_module_blob(&module, &digest);
    let zip = resolve(s, &pointer).expect("1.1.0 still serves the blob");
    assert_eq!(super::tests::digest(&zip), digest);
    assert_eq!(route(&app, MODULE, &digest).await.0, 307);
}

/// A pointer written before the set was kept knows the one zip it names: taking out another
/// keeps it (now with its set), taking out that one empties it; an unreadable one is
/// rebuilt from the change.
#[test]
fn a_pointer_from_before_the_set_knows_its_own_zip() {
    let legacy = br#"{"key": "providers/h.io/n/t/a.zip", "version_id": "v1", "size": 3}"#;
    let mut pointer = Pointer::read(legacy);
    pointer.apply(&Change::Remove("providers/h.io/n/t/b.zip"));
    assert_eq!(
        (pointer.blob.key.as_str(), pointer.blob.version_id.as_deref()),
        ("providers/h.io/n/t/a.zip", Some("v1"))
    );
    let mut pointer = Pointer::read(&serde_json::to_vec(&pointer).unwrap());
    pointer.apply(&Change::Remove("providers/h.io/n/t/a.zip"));
    let emptied: OciBlob = serde_json::from_slice(&serde_json::to_vec(&pointer).unwrap()).unwrap();
    assert_eq!(emptied, OciBlob { key: String::new(), version_id: None, size: 0 }, "answers 404");
    let blob = OciBlob { key: "providers/h.io/n/t/c.zip".into(), version_id: None, size: 9 };
    let mut rebuilt = Pointer::read(b"{not json");
    rebuilt.apply(&Change::Add { member: &blob.key, blob: &blob });
    assert_eq!((rebuilt.blob, rebuilt.zips.len()), (blob, 1));
}

async fn status_of(app: &App<MemoryStorage>, method: &http::Method, path: &str) -> u16 {
    app.handle(&Request::new(method, path)).await.status.as_u16()
}

async fn tags_of(app: &App<MemoryStorage>, repository: &str) -> serde_json::Value {
    let reply = app.handle(&Request::get(&format!("{repository}/tags/list"))).await;
    serde_json::from_slice::<serde_json::Value>(&reply.body).unwrap()["tags"].clone()
}

/// The layer digest a manifest route answers with, or its status when it does not answer.
async fn layer_of(app: &App<MemoryStorage>, path: &str) -> Result<String, u16> {
    let reply = app.handle(&Request::get(path)).await;
    match reply.status.as_u16() {
        200 => {
            let manifest: crate::oci::artifacts::ImageManifest = serde_json::from_slice(&reply.body).unwrap();
            Ok(manifest.layers[0].digest.clone())
        }
        status => Err(status),
    }
}

/// `latest` (what OpenTofu asks for when an `oci://` source names no tag) is the highest
/// release with a package, never a pre-release; it moves down when that one is yanked,
/// with its package when it is overwritten, answers 404 when no release is left, and a
/// reindex gives it to a module whose manifest predates it. Providers have none.
#[tokio::test]
async fn latest_names_the_highest_release() {
    let app = App::builder(open(), MemoryStorage::new()).services(&[Service::Oci]).build().unwrap();
    let s = app.storage();
    let zips: Vec<Vec<u8>> =
        ["1.0.0", "1.1.0", "2.0.0-rc.1"].iter().map(|v| crate::testing::module_zip(&[("main.tf", v)])).collect();
    for (v, zip) in ["1.0.0", "1.1.0", "2.0.0-rc.1"].iter().zip(&zips) {
        publish(s, &format!("{MODULE}{v}.zip"), Some(zip)).await;
    }
    let latest = "/v2/modules/acme/vpc/aws/manifests/latest";
    assert_eq!(layer_of(&app, latest).await, Ok(digest(&zips[1])), "1.1.0, not the pre-release");
    assert_eq!(layer_of(&app, latest).await, layer_of(&app, "/v2/modules/acme/vpc/aws/manifests/1.1.0").await);
    let tags = tags_of(&app, "/v2/modules/acme/vpc/aws").await;
    assert_eq!(tags, serde_json::json!(["1.0.0", "1.1.0", "2.0.0-rc.1"]), "latest is not listed");

    let replaced = crate::testing::module_zip(&[("main.tf", "1.1.0 again")]);
    let overwrite = Limits { overwrite_published: true, ..Limits::default() };
    s.insert(&format!("{MODULE}1.1.0.zip"), replaced.clone());
    Indexer::new(s, overwrite).on_object_changed(&format!("{MODULE}1.1.0.zip")).await.unwrap();
    assert_eq!(layer_of(&app, latest).await, Ok(digest(&replaced)), "overwritten");

    publish(s, &format!("{MODULE}1.1.0.zip"), None).await;
    assert_eq!(layer_of(&app, latest).await, Ok(digest(&zips[0])), "1.1.0 yanked");
    publish(s, &format!("{MODULE}1.0.0.zip"), None).await;
    assert_eq!(layer_of(&app, latest).await, Err(404), "only a pre-release left");

    // A manifest written before `latest` existed: a reindex records and tags it.
    publish(s, &format!("{MODULE}1.0.0.zip"), Some(&zips[0])).await;
    let key = "indexed/modules/acme/vpc/aws/manifest.json";
    let mut old: ModuleManifest = ModuleManifest::parse(&s.peek(key).unwrap()).unwrap();
    old.oci_latest = None;
    s.insert(key, serde_json::to_vec(&old).unwrap());
    s.remove(&layout::oci_module_tag(&ModuleAddress::parse("acme", "vpc", "aws").unwrap(), "latest"));
    assert_eq!(layer_of(&app, latest).await, Err(404));
    Indexer::new(s, Limits::default()).reindex_all().await.unwrap();
    assert_eq!(layer_of(&app, latest).await, Ok(digest(&zips[0])), "after reindex");

    let zip = crate::testing::provider_zip("null", "1.0.0", "x");
    publish(s, &format!("{PROVIDER}terraform-provider-null_1.0.0_linux_amd64.zip"), Some(&zip)).await;
    let provider = "/v2/providers/registry.terraform.io/hashicorp/null/manifests/latest";
    assert_eq!(status_of(&app, &http::Method::GET, provider).await, 404);
}

/// `tags/list` names exactly the tags that resolve: a version whose document has no image
/// index (written before OCI support) is left out until a reindex gives it one.
#[tokio::test]
async fn a_provider_lists_only_tags_that_resolve() {
    let app = App::builder(open(), MemoryStorage::new()).services(&[Service::Oci]).build().unwrap();
    let s = app.storage();
    for v in ["1.0.0", "1.1.0"] {
        let zip = crate::testing::provider_zip("null", v, "x");
        publish(s, &format!("{PROVIDER}terraform-provider-null_{v}_linux_amd64.zip"), Some(&zip)).await;
    }
    let provider = ProviderAddress::parse("registry.terraform.io", "hashicorp", "null").unwrap();
    // 1.1.0 as an older indexer left it: no image index in its document, none in its line.
    let doc_key = layout::provider_version(&provider, &semver::Version::new(1, 1, 0));
    let mut doc = ProviderVersion::parse(&s.peek(&doc_key).unwrap()).unwrap();
    doc.oci_index = None;
    s.insert(&doc_key, serde_json::to_vec(&doc).unwrap());
    let index_key = layout::provider_index(&provider);
    let mut index = crate::manifest::ProviderIndex::parse(&s.peek(&index_key).unwrap()).unwrap();
    index.versions.insert("1.1.0".into(), serde_json::json!({}));
    s.insert(&index_key, serde_json::to_vec(&index).unwrap());

    let repository = "/v2/providers/registry.terraform.io/hashicorp/null";
    let head = |tag: &str| format!("{repository}/manifests/{tag}");
    assert_eq!(tags_of(&app, repository).await, serde_json::json!(["1.0.0"]));
    assert_eq!(status_of(&app, &http::Method::HEAD, &head("1.0.0")).await, 200);
    assert_eq!(status_of(&app, &http::Method::HEAD, &head("1.1.0")).await, 404);
    Indexer::new(s, Limits::default()).reindex_all().await.unwrap();
    assert_eq!(tags_of(&app, repository).await, serde_json::json!(["1.0.0", "1.1.0"]));
    assert_eq!(status_of(&app, &http::Method::HEAD, &head("1.1.0")).await, 200, "every listed tag resolves");
}

fn open() -> crate::config::Config {
    let mut config = crate::config::Config::new("bucket");
    config.access.anonymous_providers = vec!["*".into()];
    config.access.anonymous_modules = vec!["*".into()];
    config
}
