//! The worst module the indexer accepts, and every answer about it within its documented bound,
//! whole, in every channel: the details API, the MCP server's `get_module_details` (its text and
//! its structured JSON together), and the version's page. Two archives at the indexer's limits:
//! one with every file it keeps for docs at its largest (`archive::KEPT_FILE_BYTES` each,
//! `KEPT_TOTAL_BYTES` in all), its text made of what costs most once serialised (control
//! characters, six bytes each in a JSON string; quotes and backslashes, two; blanks a one-line
//! field would drop), and one with as many documented directories as its entries allow.

#![allow(clippy::unwrap_used)]

use registry::auth::{TokenStore, manage};
use registry::index::{Indexer, Limits};
use registry::storage::MemoryStorage;
use registry::{App, Config, Request};
use serde_json::{Value, json};

const TOKEN: &str = "Bearer trg_bounds_library_0123456789abcdef";

/// A text of `bytes` bytes of what costs most: controls, quotes, backslashes, blanks, four-byte
/// letters, and a fence that would close the README's.
fn costly(bytes: usize) -> String {
    let unit = "\u{1}\"\\ \u{202e}\u{1f980}\n````\n";
    unit.repeat(bytes / unit.len() + 1)[..bytes / unit.len() * unit.len()].to_string()
}

/// A `.tf` file of about `bytes` bytes: variables and outputs whose descriptions are `costly`
/// heredocs, with long names and types.
fn module_file(bytes: usize) -> String {
    let mut out = String::new();
    let mut n = 0;
    while out.len() + 2_000 < bytes {
        let description = costly(700).replace("EOT", "");
        let name = format!("v{n}_{}", "n".repeat(200));
        let fields: Vec<String> = (0..60).map(|k| format!("a{k} = string")).collect();
        let r#type = format!("object({{ {} }})", fields.join(", "));
        out.push_str(&format!(
            "variable \"{name}\" {{\n  type = {type}\n  description = <<EOT\n{description}\nEOT\n}}\n\
             output \"{name}\" {{\n  value = 1\n  description = <<EOT\n{description}\nEOT\n}}\n"
        ));
        n += 1;
    }
    out
}

/// Both worst archives, published; answers the app and the two modules' addresses.
async fn published() -> (App<MemoryStorage>, [&'static str; 2]) {
    let storage = MemoryStorage::new();
    let indexer = Indexer::new(&storage, Limits::default());
    let kept = registry::archive::KEPT_FILE_BYTES;
    // Eight directories of a README and a module file, each at the largest kept: 16 MiB.
    let big = module_file(kept - 4_096);
    let readme = costly(kept - 4_096);
    let mut fat: Vec<(String, String)> = vec![("README.md".into(), readme.clone()), ("main.tf".into(), big.clone())];
    for i in 0..7 {
        fat.push((format!("modules/m{i}/README.md"), readme.clone()));
        fat.push((format!("modules/m{i}/main.tf"), big.clone()));
    }
    // As many directories as the entries allow, each a small module of its own.
    let small = "variable \"x\" {\n  description = \"\u{1}\u{1}\"\n}\noutput \"y\" {\n  value = 1\n}\n";
    let entries = Limits::default().archive_entries as usize;
    let mut many: Vec<(String, String)> = vec![("main.tf".into(), small.into())];
    for i in 0..(entries / 3) {
        let parent = if i % 2 == 0 { "modules" } else { "examples" };
        many.push((format!("{parent}/d{i}_{}/main.tf", "p".repeat(100)), small.into()));
    }
    for (name, files) in [("fat", fat), ("many", many)] {
        let files: Vec<(&str, &str)> = files.iter().map(|(p, c)| (p.as_str(), c.as_str())).collect();
        let key = format!("modules/acme/{name}/aws/1.0.0.tar.gz");
        storage.insert(&key, registry::testing::module_tar_gz(&files));
        indexer.on_object_changed(&key).await.unwrap();
        assert!(
            storage.peek(&format!("indexed/modules/acme/{name}/aws/manifest.json")).is_some(),
            "{name} is published"
        );
    }
    let record = manage::record("reader", "trg_bounds_library_0123456789abcdef", vec!["acme".into()], vec![], None);
    storage
        .insert(registry::layout::TOKENS, serde_json::to_vec(&TokenStore { format: 1, tokens: vec![record] }).unwrap());
    let mut config = Config::new("bucket");
    config.hostname = Some("registry.example.com".into());
    (App::builder(config, storage).build().unwrap(), ["acme/fat/aws", "acme/many/aws"])
}

/// No field of a structured answer holds a character a one-line field may not.
fn one_line_everywhere(value: &Value, path: &str, readme: bool) -> Result<(), String> {
    match value {
        Value::String(s) if !readme && s.chars().any(|c| c.is_control() || registry::printed::refused(c).is_some()) => {
            Err(format!("{path} holds {s:.80?}"))
        }
        Value::Object(map) => {
            map.iter().try_for_each(|(k, v)| one_line_everywhere(v, &format!("{path}.{k}"), k == "readme" || readme))
        }
        Value::Array(items) => items.iter().try_for_each(|v| one_line_everywhere(v, &format!("{path}[]"), readme)),
        _ => Ok(()),
    }
}

#[tokio::test]
async fn every_answer_about_the_worst_module_stays_within_its_bound() {
    let (app, modules) = published().await;
    for module in modules {
        let details =
            app.handle(&Request::get(&format!("/v1/modules/{module}/1.0.0")).authorization(Some(TOKEN))).await;
        assert_eq!(details.status, 200, "{module}");
        assert!(details.body.len() <= registry::browse::DETAILS_MAX, "{module}: details {} bytes", details.body.len());
        let body: Value = serde_json::from_slice(&details.body).unwrap();
        eprintln!(
            "{module}: details {} bytes, root inputs {} of {}, {} submodules, warnings {:.300}",
            details.body.len(),
            body["root"]["inputs"].as_array().map_or(0, Vec::len),
            body["root"]["inputs_count"],
            body["submodules"].as_array().map_or(0, Vec::len),
            body["warnings"].to_string()
        );
        assert_eq!(body["truncated"], json!(true), "{module}: it did not all fit, and says so");

        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "get_module_details", "arguments": {"module": module, "version": "1.0.0"}}});
        let bytes = call.to_string().into_bytes();
        let request = Request::new(&http::Method::POST, "/mcp")
            .body(&bytes)
            .authorization(Some(TOKEN))
            .mcp_protocol_version(Some("2025-06-18"));
        let mcp = app.handle(&request).await;
        let answer: Value = serde_json::from_slice(&mcp.body).unwrap();
        let result = &answer["result"];
        assert_eq!(
            result["isError"],
            json!(false),
            "{module}: {}",
            &answer.to_string()[..400.min(answer.to_string().len())]
        );
        let size = serde_json::to_vec(result).unwrap().len();
        assert!(size <= registry::mcp::answers::ANSWER_MAX, "{module}: MCP result {size} bytes");
        let structured = &result["structuredContent"];
        one_line_everywhere(structured, "structuredContent", false).unwrap();
        let fenced = structured["readme"]["fenced"].as_str().unwrap_or_default();
        assert!(
            module.ends_with("many/aws") || fenced.starts_with("`````"),
            "{module}: README fenced past its own fences"
        );
        let text = result["content"][0]["text"].as_str().unwrap();
        assert!(
            text.lines().filter(|l| l.starts_with("## ")).all(|l| [
                "## Interface",
                "## Submodule ",
                "## Example ",
                "## README"
            ]
            .iter()
            .any(|p| l.starts_with(p)))
        );

        let page = app.handle(&Request::get(&format!("/ui/modules/{module}/1.0.0")).authorization(Some(TOKEN))).await;
        assert_eq!(page.status, 200, "{module}");
        assert!(page.body.len() <= registry::web::PAGE_BYTES_MAX, "{module}: page {} bytes", page.body.len());
    }
}
