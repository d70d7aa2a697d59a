//! The bucket's rights against clients that do not play by the SDK's rules: every operation a
//! publisher or key admin could send (GET, HEAD, PUT, DELETE, copy, multipart, DeleteObjects,
//! a listing, a POST form, a presigned URL), signed with Version 4, Version 2 or not at all,
//! with keys S3 stores literally but a file system resolves (`..`, `.`, `//`, a leading `/`,
//! a backslash, each also percent-encoded). Each answers as its row says, and afterwards
//! nothing outside the publisher's prefixes exists or changed.

// Test helpers: a failed step is a failed test, with the panic message saying which.
#![allow(clippy::unwrap_used)]

use registry::storage::Storage;
use registry_local::embedded_s3::{FUNCTIONS_ACCESS_KEY, KEY_ADMIN_ACCESS_KEY, PUBLISHER_ACCESS_KEY};
use support::Harness;
use support::raw_s3::{RawRequest, Signing};

/// Who signs a row.
#[derive(Debug, Clone, Copy)]
enum Who {
    Publisher,
    KeyAdmin,
    /// The functions' key: everything the registry's own key may do.
    Functions,
}

/// A row: who, how signed, method, target (path and query as sent), headers, body, the POST
/// form's key, and the expected status and S3 error code (`None` for a success).
struct Row {
    what: &'static str,
    who: Who,
    signing: Signing,
    method: &'static str,
    target: String,
    headers: Vec<(&'static str, String)>,
    body: Vec<u8>,
    form_key: Option<&'static str>,
    expect: (u16, Option<&'static str>),
}

const KEY_ASC: &str = "signing-keys/registry.terraform.io/acme/planted.asc";
const TOKENS: &str = "access/tokens.json";
const V2: (u16, Option<&str>) = (400, Some("InvalidRequest"));
const DENIED: (u16, Option<&str>) = (403, Some("AccessDenied"));
const NOT_LITERAL: (u16, Option<&str>) = (400, Some("InvalidArgument"));

fn row(
    what: &'static str,
    who: Who,
    signing: Signing,
    method: &'static str,
    target: &str,
    expect: (u16, Option<&'static str>),
) -> Row {
    Row {
        what,
        who,
        signing,
        method,
        target: format!("/registry/{target}"),
        headers: vec![],
        body: b"x".to_vec(),
        form_key: None,
        expect,
    }
}

fn with_header(mut r: Row, name: &'static str, value: &str) -> Row {
    r.headers.push((name, value.to_string()));
    r
}

fn form(what: &'static str, who: Who, signing: Signing, key: &'static str, expect: (u16, Option<&'static str>)) -> Row {
    Row { form_key: Some(key), target: "/registry".into(), ..row(what, who, signing, "POST", "", expect) }
}

fn delete_objects(what: &'static str, keys: &[&str], expect: (u16, Option<&'static str>)) -> Row {
    let objects: String = keys.iter().map(|k| format!("<Object><Key>{k}</Key></Object>")).collect();
    let body = format!("<Delete>{objects}</Delete>").into_bytes();
    let md5 = support::raw_s3::content_md5(&body);
    let r = row(what, Who::Publisher, Signing::V4Header, "POST", "?delete", expect);
    Row { target: "/registry?delete".into(), body, ..with_header(r, "content-md5", &md5) }
}

/// The table: long on purpose, one row per case, so every answer is in one place.
fn rows() -> Vec<Row> {
    use Signing::*;
    use Who::*;
    let dots = format!("modules/../{KEY_ASC}");
    vec![
        // Controls: the signer is right, and the publisher writes where it may.
        row("a publisher PUT in its prefix", Publisher, V4Header, "PUT", "modules/acme/vpc/aws/notes.txt", (200, None)),
        row(
            "a publisher presigned PUT in its prefix",
            Publisher,
            V4Presigned,
            "PUT",
            "modules/acme/vpc/aws/notes2.txt",
            (200, None),
        ),
        row(
            "a publisher GET of its own upload",
            Publisher,
            V4Header,
            "GET",
            "modules/acme/vpc/aws/notes.txt",
            (200, None),
        ),
        // Signature Version 2, whatever the key: refused, as S3 refuses it on new buckets.
        row("a V2 PUT of a signing key", Publisher, V2Header, "PUT", KEY_ASC, V2),
        row("a V2 PUT in the publisher's prefix", Publisher, V2Header, "PUT", "modules/acme/vpc/aws/v2.txt", V2),
        row("a V2 GET of the token store", Publisher, V2Header, "GET", TOKENS, V2),
        row("a V2 PUT of the token store", Publisher, V2Header, "PUT", TOKENS, V2),
        row("a V2 PUT of a manifest", Publisher, V2Header, "PUT", "indexed/modules/acme/vpc/aws/manifest.json", V2),
        row("a V2 presigned GET of the token store", Publisher, V2Presigned, "GET", TOKENS, V2),
        row("a V2 presigned PUT of a signing key", Publisher, V2Presigned, "PUT", KEY_ASC, V2),
        form("a V2 POST form writing a signing key", Publisher, V2Post, KEY_ASC, V2),
        form("a V2 POST form in the publisher's prefix", Publisher, V2Post, "modules/acme/vpc/aws/v2post.txt", V2),
        row("a V2 GET by the functions' key", Functions, V2Header, "GET", TOKENS, V2),
        // Version 4, out of the principal's reach.
        row("a PUT of a signing key", Publisher, V4Header, "PUT", KEY_ASC, DENIED),
        row("a GET of the token store", Publisher, V4Header, "GET", TOKENS, DENIED),
        row("a HEAD of the token store", Publisher, V4Header, "HEAD", TOKENS, (403, None)),
        row("a GET of a manifest", Publisher, V4Header, "GET", "indexed/modules/acme/vpc/aws/manifest.json", DENIED),
        row(
            "a DELETE of a manifest",
            Publisher,
            V4Header,
            "DELETE",
            "indexed/modules/acme/vpc/aws/manifest.json",
            DENIED,
        ),
        row("a presigned PUT of a signing key", Publisher, V4Presigned, "PUT", KEY_ASC, DENIED),
        row("a presigned GET of the token store", Publisher, V4Presigned, "GET", TOKENS, DENIED),
        row("a multipart upload of a signing key", Publisher, V4Header, "POST", &format!("{KEY_ASC}?uploads"), DENIED),
        with_header(
            row(
                "a copy of the token store into the prefix",
                Publisher,
                V4Header,
                "PUT",
                "modules/acme/vpc/aws/t.txt",
                DENIED,
            ),
            "x-amz-copy-source",
            &format!("registry/{TOKENS}"),
        ),
        with_header(
            row("a copy from another bucket", Publisher, V4Header, "PUT", "modules/acme/vpc/aws/t.txt", DENIED),
            "x-amz-copy-source",
            "other/modules/x",
        ),
        delete_objects(
            "DeleteObjects naming a manifest",
            &["modules/acme/vpc/aws/notes.txt", "indexed/modules/acme/vpc/aws/manifest.json"],
            DENIED,
        ),
        row("a listing of the whole bucket", Publisher, V4Header, "GET", "?list-type=2", DENIED),
        row(
            "a listing of the token store's prefix",
            Publisher,
            V4Header,
            "GET",
            "?list-type=2&prefix=access%2F",
            DENIED,
        ),
        row("the bucket list", Publisher, V4Header, "GET", "", DENIED),
        form("a POST form writing a signing key", Publisher, V4Post, KEY_ASC, DENIED),
        form("a POST form key naming ${filename}", Publisher, V4Post, "modules/acme/vpc/aws/${filename}", NOT_LITERAL),
        row("a key admin PUT of an archive", KeyAdmin, V4Header, "PUT", "modules/acme/vpc/aws/9.0.0.zip", DENIED),
        row("a key admin GET of the token store", KeyAdmin, V4Header, "GET", TOKENS, DENIED),
        // Keys a file system resolves: refused for every principal and operation.
        row("a PUT through ..", Publisher, V4Header, "PUT", &dots, NOT_LITERAL),
        row("a PUT through %2e%2e", Publisher, V4Header, "PUT", &format!("modules/%2e%2e/{KEY_ASC}"), NOT_LITERAL),
        row(
            "a PUT through an encoded ../",
            Publisher,
            V4Header,
            "PUT",
            &format!("modules%2F%2E%2E%2F{}", KEY_ASC.replace('/', "%2F")),
            NOT_LITERAL,
        ),
        row("a PUT through .", Publisher, V4Header, "PUT", "modules/./acme/vpc/aws/x.txt", NOT_LITERAL),
        row("a PUT with an empty segment", Publisher, V4Header, "PUT", "modules//acme/vpc/aws/x.txt", NOT_LITERAL),
        row("a PUT with a trailing /", Publisher, V4Header, "PUT", "modules/acme/", NOT_LITERAL),
        row("a PUT with a leading /", Publisher, V4Header, "PUT", "/modules/acme/vpc/aws/x.txt", NOT_LITERAL),
        row("a PUT with backslashes", Publisher, V4Header, "PUT", "modules%5C..%5Csigning-keys%5Cx.asc", NOT_LITERAL),
        row("a GET through ..", Publisher, V4Header, "GET", &format!("modules/../{TOKENS}"), NOT_LITERAL),
        row(
            "a DELETE through ..",
            Publisher,
            V4Header,
            "DELETE",
            "modules/../indexed/modules/acme/vpc/aws/manifest.json",
            NOT_LITERAL,
        ),
        row("a presigned PUT through ..", Publisher, V4Presigned, "PUT", &dots, NOT_LITERAL),
        row("a multipart upload through ..", Publisher, V4Header, "POST", &format!("{dots}?uploads"), NOT_LITERAL),
        with_header(
            row("a copy from ..", Publisher, V4Header, "PUT", "modules/acme/vpc/aws/t.txt", NOT_LITERAL),
            "x-amz-copy-source",
            &format!("registry/modules/../{TOKENS}"),
        ),
        delete_objects(
            "DeleteObjects through ..",
            &["modules/../indexed/modules/acme/vpc/aws/manifest.json"],
            NOT_LITERAL,
        ),
        form(
            "a POST form through ..",
            Publisher,
            V4Post,
            "modules/../signing-keys/registry.terraform.io/acme/planted.asc",
            NOT_LITERAL,
        ),
        row("a key admin PUT through ..", KeyAdmin, V4Header, "PUT", &format!("signing-keys/../{TOKENS}"), NOT_LITERAL),
        row("the functions' key through ..", Functions, V4Header, "PUT", &format!("modules/../{TOKENS}"), NOT_LITERAL),
        // No signature: nothing.
        row("an anonymous GET", Publisher, Anonymous, "GET", "modules/acme/vpc/aws/notes.txt", DENIED),
        row("an anonymous PUT", Publisher, Anonymous, "PUT", "modules/acme/vpc/aws/anon.txt", DENIED),
        form("an anonymous POST form", Publisher, Anonymous, "modules/acme/vpc/aws/anon.txt", DENIED),
    ]
}

#[tokio::test]
async fn every_operation_and_signature_gets_the_principals_rights_and_nothing_more() {
    let h = Harness::start().await;
    let functions_secret = std::fs::read_to_string(h.running.data_dir.join("functions.secret")).unwrap();
    let tokens_before = h.running.storage.get(registry::layout::TOKENS).await.unwrap().map(|o| o.bytes);
    let mut failures = Vec::new();
    for r in rows() {
        let (access_key, secret) = match r.who {
            Who::Publisher => (PUBLISHER_ACCESS_KEY, h.running.publisher_secret.as_str()),
            Who::KeyAdmin => (KEY_ADMIN_ACCESS_KEY, h.running.key_admin_secret.as_str()),
            Who::Functions => (FUNCTIONS_ACCESS_KEY, functions_secret.trim()),
        };
        let request = RawRequest {
            access_key,
            secret,
            signing: r.signing,
            method: r.method,
            target: r.target.clone(),
            headers: r.headers.iter().map(|(n, v)| (n.to_string(), v.clone())).collect(),
            body: r.body.clone(),
            form_key: r.form_key.map(str::to_string),
        };
        let answer = request.send(h.running.s3_addr).await;
        let got = (answer.status, answer.code());
        let success = (200..300).contains(&answer.status) && r.expect.1.is_none();
        if !(got == r.expect || success && (200..300).contains(&r.expect.0)) {
            failures.push(format!(
                "{} ({:?} {} {}): expected {:?}, got {got:?}: {}",
                r.what, r.signing, r.method, r.target, r.expect, answer.body
            ));
        }
    }
    assert!(failures.is_empty(), "{} rows failed:\n{}", failures.len(), failures.join("\n"));

    // Nothing reached a key outside the publisher's prefixes, and the token store is as it was.
    let everything: Vec<String> = h.running.storage.list("").await.unwrap().into_iter().map(|o| o.key).collect();
    let stray: Vec<&String> = everything
        .iter()
        .filter(|k| k.starts_with("signing-keys/") || k.contains("planted") || k.contains("anon") || k.contains("v2"))
        .collect();
    assert!(stray.is_empty(), "{stray:?}");
    assert_eq!(h.running.storage.get(registry::layout::TOKENS).await.unwrap().map(|o| o.bytes), tokens_before);
    assert!(h.running.storage.get("indexed/modules/acme/vpc/aws/manifest.json").await.unwrap().is_none());
    h.running.stop().await;
}

/// A POST form upload is notified as S3 notifies `ObjectCreated:Post`, and its publish log
/// entry names the principal s3s verified.
#[tokio::test]
async fn a_post_form_upload_is_published_under_its_verified_principal() {
    let h = Harness::start().await;
    let key = "modules/acme/post/aws/1.0.0.tar.gz";
    let request = RawRequest {
        access_key: PUBLISHER_ACCESS_KEY,
        secret: &h.running.publisher_secret,
        signing: Signing::V4Post,
        method: "POST",
        target: "/registry".into(),
        headers: vec![],
        body: support::module_tar_gz(&[("main.tf", "# posted\n")]),
        form_key: Some(key.into()),
    };
    let answer = request.send(h.running.s3_addr).await;
    assert!((200..300).contains(&answer.status), "{} {}", answer.status, answer.body);
    let (status, versions) = h.get_json("/v1/modules/acme/post/aws/versions").await;
    assert_eq!((status, versions), (200, serde_json::json!({"modules": [{"versions": [{"version": "1.0.0"}]}]})));
    let key = registry::layout::publish_log_entry("modules/acme", 1);
    let entry = h.running.storage.get(&key).await.unwrap().unwrap();
    let entry: registry::publish_log::Entry = serde_json::from_slice(&entry.bytes).unwrap();
    assert_eq!(entry.change.principal.as_deref(), Some("local:publisher-local"), "{entry:?}");
    h.running.stop().await;
}
