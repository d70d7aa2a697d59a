//! Versions that mean what they say, through the embedded S3 and the routes: a module version
//! that breaks its major line refused under `enforce` (its record names the break and the
//! version to use), published under `warn` with the break shown by the API and the web
//! page, the upgrade page, and a deprecation shown and undone.

// Test helpers: a failed step is a failed test, with the panic message saying which.
#![allow(clippy::unwrap_used)]

use support::{Harness, module_tar_gz};

const V120: &str =
    "variable \"region\" { type = string }\nvariable \"name\" { type = string }\noutput \"id\" { value = 1 }\n";
const V130: &str = "variable \"name\" { type = string }\noutput \"id\" { value = 1 }\noutput \"arn\" { value = 2 }\n";

async fn page(h: &Harness, path: &str) -> (u16, String) {
    let token = format!("Bearer {}", h.running.dev_token);
    let request = registry::app::Request::get(path).authorization(Some(&token));
    let reply = h.running.app.handle(&request).await;
    (reply.status.as_u16(), String::from_utf8_lossy(&reply.body).into_owned())
}

fn record(h: &Harness, key: &str) -> Option<serde_json::Value> {
    h.rejection(key)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enforce_refuses_a_minor_release_that_breaks_and_accepts_the_major() {
    let h = Harness::start_with(&[("REGISTRY_SEMVER_POLICY", "warn, acme=enforce")]).await;
    h.upload("modules/acme/vpc/aws/1.2.0.tar.gz", module_tar_gz(&[("main.tf", V120)])).await;
    h.upload("modules/acme/vpc/aws/1.3.0.tar.gz", module_tar_gz(&[("main.tf", V130)])).await;
    let (_, versions) = h.get_json("/v1/modules/acme/vpc/aws/versions").await;
    assert_eq!(versions["modules"][0]["versions"].as_array().unwrap().len(), 1, "{versions}");
    let reason = record(&h, "modules/acme/vpc/aws/1.3.0.tar.gz").unwrap()["reason"].as_str().unwrap().to_string();
    assert!(reason.contains("input \"region\" removed"), "{reason}");
    assert!(reason.contains("publish this archive as 2.0.0"), "{reason}");
    eprintln!("the rejection record says:\n{reason}");

    h.upload("modules/acme/vpc/aws/2.0.0.tar.gz", module_tar_gz(&[("main.tf", V130)])).await;
    let (status, details) = h.get_json("/v1/modules/acme/vpc/aws/2.0.0").await;
    assert_eq!(status, 200, "{details}");
    assert_eq!(details["changes"]["since"], "1.2.0", "{details}");
    let changes = details["changes"]["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 2, "region removed, arn added: {details}");
    assert!(changes.iter().any(|c| c["name"] == "region" && c["kind"] == "removed" && c["breaking"].is_string()));
    assert!(changes.iter().any(|c| c["name"] == "arn" && c["kind"] == "added" && c.get("breaking").is_none()));
    // Another namespace has the default, warn.
    h.upload("modules/other/vpc/aws/1.2.0.tar.gz", module_tar_gz(&[("main.tf", V120)])).await;
    h.upload("modules/other/vpc/aws/1.3.0.tar.gz", module_tar_gz(&[("main.tf", V130)])).await;
    let (_, details) = h.get_json("/v1/modules/other/vpc/aws/1.3.0").await;
    assert_eq!(details["judged"]["against"], "1.2.0", "{details}");
    assert!(details["judged"]["breaking"][0].as_str().unwrap().starts_with("input \"region\" removed"), "{details}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warn_publishes_and_the_pages_show_the_break_and_the_deprecation() {
    let h = Harness::start().await;
    h.upload("modules/acme/vpc/aws/1.2.0.tar.gz", module_tar_gz(&[("main.tf", V120)])).await;
    h.upload("modules/acme/vpc/aws/1.3.0.tar.gz", module_tar_gz(&[("main.tf", V130)])).await;
    let (status, html) = page(&h, "/ui/modules/acme/vpc/aws/1.3.0").await;
    assert_eq!(status, 200);
    assert!(html.contains("<h2>Changes since 1.2.0</h2>"), "{html}");
    assert!(
        html.contains("<li class=\"breaking\"><strong>breaking</strong> input &quot;region&quot; removed"),
        "{html}"
    );
    assert!(html.contains("/ui/modules/acme/vpc/aws/1.3.0/from/1.2.0"), "the upgrade link: {html}");
    let (status, upgrade) = page(&h, "/ui/modules/acme/vpc/aws/1.3.0/from/1.2.0").await;
    assert_eq!(status, 200, "{upgrade}");
    assert!(upgrade.contains("Upgrading acme/vpc/aws from"), "{upgrade}");
    assert!(upgrade.contains("2 changes, <span class=\"breaking\">1 breaking</span>"), "{upgrade}");
    let (status, _) = page(&h, "/ui/modules/acme/vpc/aws/1.3.0/from/9.9.9").await;
    assert_eq!(status, 404, "no such version to upgrade from");

    let file = "modules/acme/vpc/aws/1.2.0.deprecation.json";
    h.upload(file, br#"{"reason": "drops the NAT gateway on apply", "replacement": "1.3.0"}"#.to_vec()).await;
    let (_, html) = page(&h, "/ui/modules/acme/vpc/aws/1.2.0").await;
    assert!(html.contains("Version 1.2.0 is deprecated: drops the NAT gateway on apply. Use 1.3.0 instead."), "{html}");
    let (_, details) = h.get_json("/v1/modules/acme/vpc/aws/1.2.0").await;
    assert_eq!(details["deprecation"]["replacement"], "1.3.0", "{details}");
    let client = h.running.publisher_client();
    client.delete_object().bucket(registry_local::BUCKET).key(file).send().await.unwrap();
    let (_, details) = h.get_json("/v1/modules/acme/vpc/aws/1.2.0").await;
    assert!(details["deprecation"].is_null(), "{details}");
    let report = registry::publish_log::audit::audit(&h.running.storage).await.unwrap();
    assert!(report.is_clean(), "{:?}", report.chain);
}
