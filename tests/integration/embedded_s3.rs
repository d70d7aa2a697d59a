//! Integration against the embedded S3-compatible server: real HTTP, real SigV4 presigned
//! URLs, verified by the server.

// Test helpers: a failed step is a failed test, with the panic message saying which.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use registry::storage::Storage;
use support::Harness;
use support::presigned::fetch;

/// MD5, for the ETag check (S3's ETag of a single-part upload).
fn md5_of(bytes: &[u8]) -> [u8; 16] {
    use md5::Digest;
    md5::Md5::digest(bytes).into()
}

#[tokio::test]
async fn presigned_urls_fetch_exact_bytes_and_nothing_else() {
    let h = Harness::start().await;
    let key = "modules/acme/network/aws/1.0.0.tar.gz";
    let archive = support::module_tar_gz(&[("main.tf", "# exact bytes\n")]);
    h.upload(key, archive.clone()).await;
    h.upload("modules/acme/other/aws/1.0.0.tar.gz", support::module_tar_gz(&[("main.tf", "# other\n")])).await;

    let url = h.running.storage.presign_get(key, None, Duration::from_secs(60)).await.unwrap();
    assert!(url.contains(".tar.gz?"), "the extension stays visible to go-getter: {url}");
    let (status, body) = fetch(&url).await;
    assert_eq!(status, 200);
    assert_eq!(body.as_ref(), archive.as_slice(), "the presigned URL serves exactly the archive bytes");

    // Tampered signature, tampered key, stretched lifetime, no signature: all 403.
    let signature = url.split("X-Amz-Signature=").nth(1).unwrap();
    let flipped: String = signature.chars().rev().collect();
    let tampered = [
        url.replace(signature, &flipped),
        url.replace("modules/acme/network/", "modules/acme/other/"),
        url.replace("X-Amz-Expires=60", "X-Amz-Expires=3600"),
        url.split('?').next().unwrap().to_string(),
    ];
    for bad in tampered {
        let (status, _) = fetch(&bad).await;
        assert_eq!(status, 403, "{bad}");
    }

    // Lifetimes, signed at chosen instants (no waiting, no second boundary to straddle): a
    // one-minute URL signed two minutes ago is refused, one signed a minute ago for an hour
    // is served, and so is a one-minute URL signed half a minute ago.
    let ago = |seconds| std::time::SystemTime::now() - Duration::from_secs(seconds);
    let minute = Duration::from_secs(60);
    let presign_at = |ttl, at| h.running.storage.presign_get_at(key, None, ttl, at);
    let expired = presign_at(minute, ago(120)).await.unwrap();
    assert_eq!(fetch(&expired).await.0, 403, "an expired URL is refused");
    let hour = presign_at(Duration::from_secs(3600), ago(60)).await.unwrap();
    assert_eq!(fetch(&hour).await.0, 200, "a URL within its lifetime is served");
    let closing = presign_at(minute, ago(30)).await.unwrap();
    assert_eq!(fetch(&closing).await.0, 200, "half a minute before it expires");
    h.running.stop().await;
}

/// Bodies are read from disk in large chunks (`object_files`), not s3s-fs's 4 KiB ones: every
/// byte must still be the object's, whole and by range, with S3's headers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_objects_are_served_whole_and_by_range() {
    let h = Harness::start().await;
    let key = "providers/registry.terraform.io/hashicorp/big/terraform-provider-big_1.0.0_linux_amd64.zip";
    // Not a multiple of any chunk size, incompressible.
    let zip = registry::testing::sized_provider_zip("big", "1.0.0", (3 << 20) + 4099, 3);
    h.upload(key, zip.clone()).await;

    let url = h.running.storage.presign_get(key, None, Duration::from_secs(60)).await.unwrap();
    let client: Client<_, Empty<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let response = client.get(url.parse().unwrap()).await.unwrap();
    assert_eq!(response.status(), 200);
    let length = response.headers().get(http::header::CONTENT_LENGTH).unwrap().to_str().unwrap().to_string();
    assert_eq!(length, zip.len().to_string());
    let etag = response.headers().get(http::header::ETAG).unwrap().to_str().unwrap().to_string();
    let md5 = format!("\"{}\"", hex::encode(md5_of(&zip)));
    assert_eq!(etag, md5, "the ETag is the body's MD5, as S3's for a single PUT");
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert!(body.as_ref() == zip.as_slice(), "{} bytes served for {}", body.len(), zip.len());

    // Ranges are s3s-fs's own reads: first bytes, a middle slice across chunk borders, the tail.
    let publisher = h.running.publisher_client();
    let len = zip.len();
    for (range, slice) in [
        ("bytes=0-9".to_string(), &zip[..10]),
        (format!("bytes={}-{}", (256 << 10) - 3, (256 << 10) + 5), &zip[(256 << 10) - 3..(256 << 10) + 6]),
        ("bytes=-7".to_string(), &zip[len - 7..]),
    ] {
        let got = publisher.get_object().bucket(registry_local::BUCKET).key(key).range(&range).send().await.unwrap();
        let bytes = got.body.collect().await.unwrap().into_bytes();
        assert_eq!(bytes.as_ref(), slice, "{range}");
    }
    h.running.stop().await;
}

#[tokio::test]
async fn uploads_and_deletes_through_s3_update_the_manifest() {
    let h = Harness::start().await;
    for v in ["1.0.0", "1.1.0"] {
        h.upload(&format!("modules/acme/network/aws/{v}.tar.gz"), support::module_tar_gz(&[("main.tf", v)])).await;
    }
    let (status, body) = h.get_json("/v1/modules/acme/network/aws/versions").await;
    assert_eq!(
        (status, body),
        (200, serde_json::json!({"modules":[{"versions":[{"version":"1.1.0"},{"version":"1.0.0"}]}]}))
    );

    // Yank one version with DeleteObject, the other with DeleteObjects (`aws s3 rm --recursive`).
    let client = h.running.publisher_client();
    client
        .delete_object()
        .bucket(registry_local::BUCKET)
        .key("modules/acme/network/aws/1.1.0.tar.gz")
        .send()
        .await
        .unwrap();
    let (_, body) = h.get_json("/v1/modules/acme/network/aws/versions").await;
    assert_eq!(body, serde_json::json!({"modules":[{"versions":[{"version":"1.0.0"}]}]}));
    let (status, _) = h.get_json("/v1/modules/acme/network/aws/1.1.0/download").await;
    assert_eq!(status, 404);

    use aws_sdk_s3::types::{Delete, ObjectIdentifier};
    let delete = Delete::builder()
        .objects(ObjectIdentifier::builder().key("modules/acme/network/aws/1.0.0.tar.gz").build().unwrap())
        .build()
        .unwrap();
    client.delete_objects().bucket(registry_local::BUCKET).delete(delete).send().await.unwrap();
    let (status, body) = h.get_json("/v1/modules/acme/network/aws/versions").await;
    assert_eq!(status, 404, "{body}");

    // The publisher's key cannot be guessed: a wrong secret is refused by SigV4 verification.
    let wrong = aws_sdk_s3::Client::from_conf(
        client
            .config()
            .to_builder()
            .credentials_provider(aws_sdk_s3::config::Credentials::new("publisher-local", "wrong", None, None, "test"))
            .build(),
    );
    let err =
        wrong.put_object().bucket(registry_local::BUCKET).key("modules/acme/network/aws/9.9.9.tar.gz").send().await;
    assert!(err.is_err());
    let (status, _) = h.get_json("/v1/modules/acme/network/aws/versions").await;
    assert_eq!(status, 404, "a refused upload publishes nothing");
    h.running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_providers_mirror_directory_synced_to_the_bucket_is_merged_not_clobbered() {
    let h = Harness::start().await;
    let first = support::TempDir::new("mirror-1");
    let written = support::write_providers_mirror(
        first.path(),
        &[
            ("registry.terraform.io/hashicorp/random", "3.6.0", &["linux_amd64", "darwin_arm64"]),
            ("example.com/acme/widget", "0.4.0", &["linux_amd64"]),
        ],
    );
    h.sync(first.path(), "providers/").await;
    // A second mirror run made elsewhere, holding only a newer version: its index.json lists
    // only 3.7.0, and syncing it must not drop 3.6.0.
    let second = support::TempDir::new("mirror-2");
    let newer = support::write_providers_mirror(
        second.path(),
        &[("registry.terraform.io/hashicorp/random", "3.7.0", &["linux_amd64"])],
    );
    h.sync(second.path(), "providers/").await;

    let (status, index) = h.get_json("/v1/mirror/registry.terraform.io/hashicorp/random/index.json").await;
    assert_eq!((status, index), (200, serde_json::json!({"versions": {"3.6.0": {}, "3.7.0": {}}})));
    for (address, version, platform, h1) in written.iter().chain(&newer) {
        let (status, doc) = h.get_json(&format!("/v1/mirror/{address}/{version}.json")).await;
        assert_eq!(status, 200, "{address} {version}: {doc}");
        let hashes = &doc["archives"][platform]["hashes"];
        assert!(hashes[0].as_str().unwrap().starts_with("zh:"), "{hashes}");
        assert_eq!(hashes[1], *h1, "{address} {version} {platform}: the h1 terraform providers mirror wrote");
    }
    h.running.stop().await;
}

/// `reindex` runs on ephemeral ports; it must judge the registry's own providers under the
/// hostname the registry serves, or signed releases lose their signature check.
#[tokio::test]
async fn reindex_leaves_every_signed_release_byte_identical() {
    use registry::testing::signing::{TestKey, release};
    let h = Harness::start().await;
    let (host, key) = (h.host(), TestKey::generate("acme"));
    h.upload_key(&format!("signing-keys/{host}/acme/release.asc"), key.public_armor().into_bytes()).await;
    for version in ["1.0.0", "1.1.0"] {
        for (name, bytes) in
            release("widget", version, &[("linux", "amd64"), ("darwin", "arm64")], Some(&["6.0"]), &key)
        {
            h.upload(&format!("providers/{host}/acme/widget/{name}"), bytes).await;
        }
    }
    let indexed = format!("indexed/providers/{host}/acme/widget/");
    let snapshot = || async {
        let mut all = Vec::new();
        for object in h.running.storage.list(&indexed).await.unwrap() {
            all.push((object.key.clone(), h.running.storage.get(&object.key).await.unwrap().unwrap().bytes));
        }
        all
    };
    let before = snapshot().await;
    assert_eq!(
        before.len(),
        3,
        "index.json and two VERSION.json: {:?}",
        before.iter().map(|o| &o.0).collect::<Vec<_>>()
    );
    let signed: serde_json::Value = serde_json::from_slice(&before[0].1).unwrap();
    assert!(signed["release"]["signing_key"]["key_id"] == key.key_id(), "{signed}");
    // Both the rebuild from nothing and the rebuild over what is there.
    registry_local::reindex(&h.running.data_dir).await.unwrap();
    assert_eq!(snapshot().await, before, "a re-index changed a signed release");
    for (key, _) in &before {
        std::fs::remove_file(h.object_path(key)).unwrap();
    }
    registry_local::reindex(&h.running.data_dir).await.unwrap();
    assert_eq!(snapshot().await, before, "a rebuild from nothing changed a signed release");
    assert_eq!(h.get_json("/v1/providers/acme/widget/versions").await.0, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reindex_rebuilds_lost_or_corrupt_manifests_and_is_idempotent() {
    let h = Harness::start().await;
    for v in ["1.0.0", "1.1.0"] {
        h.upload(&format!("modules/acme/network/aws/{v}.tar.gz"), support::module_tar_gz(&[("main.tf", v)])).await;
    }
    let zip = "providers/example.com/acme/widget/terraform-provider-widget_0.1.0_linux_amd64.zip";
    h.upload(zip, support::provider_zip("widget", "0.1.0", "linux_amd64")).await;
    let (_, versions_before) = h.get_json("/v1/modules/acme/network/aws/versions").await;
    let (_, widget_before) = h.get_json("/v1/mirror/example.com/acme/widget/0.1.0.json").await;

    // Manifests lost and corrupted behind the registry's back.
    std::fs::remove_file(h.object_path("indexed/modules/acme/network/aws/manifest.json")).unwrap();
    std::fs::write(h.object_path("indexed/providers/example.com/acme/widget/index.json"), "{corrupt").unwrap();
    assert_eq!(h.get_json("/v1/modules/acme/network/aws/versions").await.0, 404);
    // Unreadable: 503 when the bytes fail S3 checksum validation, 500 when they parse badly.
    assert!(h.get_json("/v1/mirror/example.com/acme/widget/index.json").await.0 >= 500);

    let first = registry_local::reindex(&h.running.data_dir).await.unwrap();
    assert_eq!(first.len(), 2, "{first:?}");
    assert!(first.iter().all(|(_, o)| matches!(o, Ok(registry::index::Outcome::Written { .. }))), "{first:?}");
    assert_eq!(h.get_json("/v1/modules/acme/network/aws/versions").await.1, versions_before);
    let (_, widget_after) = h.get_json("/v1/mirror/example.com/acme/widget/0.1.0.json").await;
    assert_eq!(widget_after["archives"]["linux_amd64"]["hashes"], widget_before["archives"]["linux_amd64"]["hashes"]);
    assert_eq!(h.get_json("/v1/mirror/example.com/acme/widget/index.json").await.0, 200);

    let second = registry_local::reindex(&h.running.data_dir).await.unwrap();
    assert!(second.iter().all(|(_, o)| matches!(o, Ok(registry::index::Outcome::Unchanged))), "{second:?}");

    // Archives corrupted at rest (their bytes no longer match S3's stored checksum; their ETag
    // does): with the manifests intact, a rebuild does not re-read archives whose ETag it has
    // recorded, so what was published stays published.
    std::fs::write(h.object_path("modules/acme/network/aws/1.0.0.tar.gz"), b"bit rot").unwrap();
    std::fs::write(h.object_path(zip), b"bit rot").unwrap();
    let third = registry_local::reindex(&h.running.data_dir).await.unwrap();
    assert!(third.iter().all(|(_, o)| matches!(o, Ok(registry::index::Outcome::Unchanged))), "{third:?}");
    assert_eq!(h.get_json("/v1/modules/acme/network/aws/versions").await.1, versions_before);
    // With the manifests lost too, the rebuild must read every archive: it rejects the ones it
    // cannot read and keeps going with the rest.
    std::fs::remove_file(h.object_path("indexed/modules/acme/network/aws/manifest.json")).unwrap();
    std::fs::remove_file(h.object_path("indexed/providers/example.com/acme/widget/0.1.0.json")).unwrap();
    registry_local::reindex(&h.running.data_dir).await.expect("the rebuild does not stop at a corrupt archive");
    let (_, versions) = h.get_json("/v1/modules/acme/network/aws/versions").await;
    assert_eq!(versions, serde_json::json!({"modules":[{"versions":[{"version":"1.1.0"}]}]}));
    for key in ["modules/acme/network/aws/1.0.0.tar.gz", zip] {
        let record =
            h.running.storage.get(&registry::layout::rejection(key)).await.unwrap().expect("a rejection record");
        let record: serde_json::Value = serde_json::from_slice(&record.bytes).unwrap();
        assert!(record["reason"].as_str().unwrap().contains("integrity check"), "{record}");
    }
    h.running.stop().await;
}

/// The warm cache against the real S3 protocol: a cold request reads the manifest, a warm one
/// sends one `If-None-Match` GET that is answered 304, and a publish shows at the next request.
#[tokio::test]
async fn warm_requests_revalidate_with_one_conditional_get() {
    let h = Harness::start().await;
    let key = "indexed/modules/acme/network/aws/manifest.json";
    h.upload("modules/acme/network/aws/1.0.0.tar.gz", support::module_tar_gz(&[("main.tf", "# 1\n")])).await;
    let reads = |log: Vec<registry_local::embedded_s3::S3Request>| -> Vec<(bool, u16)> {
        log.into_iter().filter(|r| r.key.as_deref() == Some(key)).map(|r| (r.if_none_match, r.status)).collect()
    };
    let _ = h.running.take_s3_requests();

    assert_eq!(h.get_json("/v1/modules/acme/network/aws/versions").await.0, 200);
    assert_eq!(reads(h.running.take_s3_requests()), [(false, 200)], "cold: one plain GET");
    for _ in 0..3 {
        assert_eq!(h.get_json("/v1/modules/acme/network/aws/versions").await.0, 200);
        let log = h.running.take_s3_requests();
        assert_eq!(log.len(), 1, "warm: exactly one S3 request per registry request: {log:?}");
        assert_eq!(reads(log), [(true, 304)], "warm: a conditional GET, answered 304");
    }

    h.upload("modules/acme/network/aws/1.1.0.tar.gz", support::module_tar_gz(&[("main.tf", "# 2\n")])).await;
    let _ = h.running.take_s3_requests();
    let (_, body) = h.get_json("/v1/modules/acme/network/aws/versions").await;
    assert_eq!(body, serde_json::json!({"modules":[{"versions":[{"version":"1.1.0"},{"version":"1.0.0"}]}]}));
    assert_eq!(reads(h.running.take_s3_requests()), [(true, 200)], "changed: the conditional GET returns the new one");
    h.running.stop().await;
}

/// Publishing reads only the new archive: the pass reuses what the manifest recorded for
/// archives whose ETag is unchanged (a module with thousands of versions must not re-read
/// them all).
#[tokio::test]
async fn a_publish_reads_only_the_new_archive() {
    let h = Harness::start().await;
    for v in ["1.0.0", "1.1.0", "1.2.0"] {
        h.upload(&format!("modules/acme/network/aws/{v}.tar.gz"), support::module_tar_gz(&[("main.tf", v)])).await;
    }
    let provider = "providers/example.com/acme/widget/terraform-provider-widget";
    for v in ["0.1.0", "0.2.0"] {
        h.upload(&format!("{provider}_{v}_linux_amd64.zip"), support::provider_zip("widget", v, "p")).await;
    }
    let _ = h.running.take_s3_requests();
    h.upload("modules/acme/network/aws/1.3.0.tar.gz", support::module_tar_gz(&[("main.tf", "1.3.0")])).await;
    h.upload(&format!("{provider}_0.3.0_linux_amd64.zip"), support::provider_zip("widget", "0.3.0", "p")).await;
    let archive_reads: Vec<String> = h
        .running
        .take_s3_requests()
        .into_iter()
        .filter(|r| r.signer.as_deref() == Some(registry_local::embedded_s3::REGISTRY_ACCESS_KEY))
        .filter(|r| r.method == http::Method::GET)
        .filter_map(|r| r.key)
        .filter(|k| k.ends_with(".tar.gz") || k.ends_with(".zip"))
        .collect();
    assert_eq!(
        archive_reads,
        ["modules/acme/network/aws/1.3.0.tar.gz".to_string(), format!("{provider}_0.3.0_linux_amd64.zip")]
    );
    h.running.stop().await;
}

/// A presigned PUT of `key` by `client` (the SDK's own signing, unsigned payload): the target
/// and the headers to send, with `If-None-Match` and `x-amz-checksum-sha256` if given.
async fn presigned_put(
    client: &aws_sdk_s3::Client,
    key: &str,
    if_none_match: Option<&str>,
    sha256: Option<String>,
) -> (String, Vec<(String, String)>) {
    let config = aws_sdk_s3::presigning::PresigningConfig::expires_in(Duration::from_secs(300)).unwrap();
    let put = client.put_object().bucket(registry_local::BUCKET).key(key);
    let presigned = put.set_if_none_match(if_none_match.map(str::to_owned)).set_checksum_sha256(sha256);
    let presigned = presigned.presigned(config).await.unwrap();
    let uri: http::Uri = presigned.uri().parse().unwrap();
    let headers = presigned.headers().map(|(n, v)| (n.to_string(), v.to_string())).collect();
    (uri.path_and_query().unwrap().to_string(), headers)
}

/// A PUT's head (with `Content-Length: length`) and `body` (all of it, part or none) sent on
/// a new connection, left open.
async fn send_put(
    addr: std::net::SocketAddr,
    (target, headers): &(String, Vec<(String, String)>),
    length: usize,
    body: &[u8],
) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt;
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut head = format!("PUT {target} HTTP/1.1\r\nhost: {addr}\r\ncontent-length: {length}\r\n");
    for (name, value) in headers.iter().filter(|(n, _)| !n.eq_ignore_ascii_case("host")) {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    stream.write_all(format!("{head}\r\n").as_bytes()).await.unwrap();
    stream.write_all(body).await.unwrap();
    stream.flush().await.unwrap();
    stream
}

/// The status and headers (names in lower case) of the answer on `stream`, read up to the end
/// of its head.
async fn answer_head(stream: &mut tokio::net::TcpStream) -> (u16, Vec<(String, String)>) {
    use tokio::io::AsyncReadExt;
    let mut read = Vec::new();
    while !read.windows(4).any(|w| w == b"\r\n\r\n") {
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "the connection closed before an answer: {:?}", String::from_utf8_lossy(&read));
        read.extend_from_slice(&chunk[..n]);
    }
    let text = String::from_utf8_lossy(&read).to_string();
    let mut lines = text.split("\r\n");
    let status = lines.next().and_then(|l| l.split(' ').nth(1)).and_then(|s| s.parse().ok()).unwrap_or(0);
    let headers = lines
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    (status, headers)
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
}

/// An answer given before the request's body was read (a 412 to `If-None-Match: *`, which
/// s3s-fs checks first) says `Connection: close`: hyper cannot drain a large unread body and
/// closes the connection, which a client would otherwise have pooled and failed its next
/// request on. The body is never sent here, so the server surely answers before reading it,
/// as it does for a client that sends it all. A PUT that reads its body keeps the connection.
#[tokio::test]
async fn a_put_answered_before_its_body_is_read_closes_its_connection() {
    let h = Harness::start().await;
    let publisher = h.running.publisher_client();
    let (existing, fresh) = ("modules/acme/probe/exists.bin", "modules/acme/probe/fresh.bin");
    let put = publisher.put_object().bucket(registry_local::BUCKET).key(existing);
    put.body(aws_sdk_s3::primitives::ByteStream::from_static(b"{}")).send().await.unwrap();
    let body = vec![b'x'; 1 << 20];

    let refused = presigned_put(&publisher, existing, Some("*"), None).await;
    let mut stream = send_put(h.running.s3_addr, &refused, body.len(), &[]).await;
    let (status, headers) = answer_head(&mut stream).await;
    assert_eq!(status, 412, "{headers:?}");
    assert_eq!(header(&headers, "connection"), Some("close"), "{headers:?}");

    let accepted = presigned_put(&publisher, fresh, Some("*"), None).await;
    let mut stream = send_put(h.running.s3_addr, &accepted, body.len(), &body).await;
    let (status, headers) = answer_head(&mut stream).await;
    assert_eq!(status, 200, "{headers:?}");
    assert_ne!(header(&headers, "connection"), Some("close"), "{headers:?}");
    h.running.stop().await;
}

/// The embedded S3's answer to the PUT of `key` (its status), once it has given it: the
/// request log records an answer once s3s-fs has committed or refused the write, whether or
/// not its client is still there. (A bounded wait for an event, not a timing assertion.)
async fn put_answered(h: &Harness, key: &str) -> Option<u16> {
    for _ in 0..1000 {
        let log = h.running.take_s3_requests();
        if let Some(put) = log.iter().find(|r| r.method == http::Method::PUT && r.key.as_deref() == Some(key)) {
            return Some(put.status);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    None
}

/// A body's SHA-256 as `x-amz-checksum-sha256` carries it.
fn sha256_base64(body: &[u8]) -> String {
    use base64::Engine;
    use sha2::Digest;
    base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(body))
}

/// `key` holds `body` whole: those bytes, their MD5 as ETag and their SHA-256 as checksum.
async fn assert_stored(client: &aws_sdk_s3::Client, key: &str, body: &[u8]) {
    let got = client.get_object().bucket(registry_local::BUCKET).key(key);
    let got = got.checksum_mode(aws_sdk_s3::types::ChecksumMode::Enabled).send().await.unwrap();
    let (etag, checksum) = (got.e_tag.clone(), got.checksum_sha256.clone());
    let stored = got.body.collect().await.unwrap().into_bytes();
    assert!(stored.as_ref() == body, "{} bytes stored for {}", stored.len(), body.len());
    assert_eq!(etag, Some(format!("\"{}\"", hex::encode(md5_of(body)))), "the ETag is the body's");
    assert_eq!(checksum, Some(sha256_base64(body)), "the checksum is the body's");
}

/// A PUT whose client hangs up once its body is sent (as an SDK does at its attempt timeout)
/// is committed whole, as S3 commits a PUT it received: the new body with its own ETag (the
/// MD5 s3s-fs computes) and checksum, never the new body with the old ones. One whose body
/// stops short commits nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_put_whose_client_hangs_up_is_committed_whole_or_not_at_all() {
    let h = Harness::start().await;
    let publisher = h.running.publisher_client();
    let key = "modules/acme/probe/hung-up.bin";
    let old = vec![b'o'; 1000];
    let put = publisher.put_object().bucket(registry_local::BUCKET).key(key).checksum_sha256(sha256_base64(&old));
    put.body(aws_sdk_s3::primitives::ByteStream::from(old)).send().await.unwrap();
    let new: Vec<u8> = (0..3u32 << 20).map(|i| (i % 251) as u8).collect();
    let _ = h.running.take_s3_requests();

    let request = presigned_put(&publisher, key, None, Some(sha256_base64(&new))).await;
    drop(send_put(h.running.s3_addr, &request, new.len(), &new).await);
    assert_eq!(put_answered(&h, key).await, Some(200), "the PUT whose client left is answered");
    assert_stored(&publisher, key, &new).await;

    let request = presigned_put(&publisher, key, None, Some(sha256_base64(&[0; 4]))).await;
    drop(send_put(h.running.s3_addr, &request, new.len(), &new[..new.len() / 2]).await);
    let status = put_answered(&h, key).await.unwrap();
    assert!(!(200..300).contains(&status), "a PUT whose body stopped short fails: {status}");
    assert_stored(&publisher, key, &new).await;
    h.running.stop().await;
}
