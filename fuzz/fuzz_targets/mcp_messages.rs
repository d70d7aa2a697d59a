//! Any bytes as a request body to the MCP endpoint: reading them never panics and never
//! recurses past its bound; a request read back echoes its id; a `tools/call`'s arguments are
//! either refused with a message or read into a call whose module or provider names only
//! clean keys of its own (the manifest or provider index it would read first).
#![no_main]

use libfuzzer_sys::fuzz_target;
use registry::mcp::tools::Call;
use registry::mcp::{Incoming, read};

fuzz_target!(|data: &[u8]| {
    let Ok(Incoming::Request { id, method, params }) = read(data) else { return };
    let answered = registry::mcp::result(&id, serde_json::json!({}));
    let sent: serde_json::Value = serde_json::from_slice(data).expect("a request read is JSON");
    assert_eq!((&answered["jsonrpc"], &answered["id"]), (&serde_json::json!("2.0"), &sent["id"]));
    if method != "tools/call" {
        return;
    }
    let name = params.get("name").and_then(|n| n.as_str()).unwrap_or_default();
    if !registry::mcp::tools::known(name) {
        return;
    }
    let Ok(call) = Call::read(name, params.get("arguments").unwrap_or(&serde_json::Value::Null)) else { return };
    let clean = |key: &str| {
        key.bytes().all(|b| b.is_ascii_graphic()) && !key.split('/').any(|s| s.is_empty() || s == "." || s == "..")
    };
    match call {
        Call::ModuleDetails { module, .. }
        | Call::ModuleUsage { module, .. }
        | Call::ModuleVersions { module }
        | Call::CompareVersions { module, .. } => {
            let key = registry::layout::module_manifest(&module);
            assert!(clean(&key) && key.starts_with("indexed/modules/"), "{key}");
        }
        Call::ProviderDetails { provider, .. } => {
            let key = registry::layout::provider_index(&provider);
            assert!(clean(&key) && key.starts_with("indexed/providers/"), "{key}");
        }
        Call::SearchModules { limit, .. } | Call::SearchProviders { limit, .. } => {
            assert!((1..=registry::mcp::tools::SEARCH_LIMIT_MAX).contains(&limit));
        }
    }
});
