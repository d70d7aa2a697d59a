//! The deployment matches the code: every route the router serves has an API Gateway route
//! to the function that serves it, every API Gateway route has a handler, every Lambda
//! binary has a function resource (and nothing else does), and the bucket's notification
//! filters and trust-boundary prefixes are the ones the layout (and the local registry) use.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use registry::layout;
use registry::router::BasePaths;
use registry::router::route_templates;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ is inside the repository").to_path_buf()
}

/// The entries of a `NAME = { ... }` map in `infra/main.tf`'s locals: (key, value) per line.
fn hcl_map(name: &str) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(repo().join("infra/main.tf")).expect("infra/main.tf");
    let start = text.find(&format!("\n  {name} = {{")).unwrap_or_else(|| panic!("no `{name} = {{` in infra/main.tf"));
    let body = &text[start..];
    let body =
        &body[body.find('{').unwrap_or(0) + 1..body.find("\n  }").unwrap_or_else(|| panic!("`{name}` not closed"))];
    body.lines()
        .filter_map(|line| {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                return None;
            }
            let (key, value) = line.split_once('=')?;
            Some((key.trim().trim_matches('"').to_string(), value.trim().trim_matches('"').to_string()))
        })
        .collect()
}

#[test]
fn every_router_route_has_an_api_gateway_route_and_back() {
    let router: BTreeSet<(String, String)> = route_templates(&BasePaths::default())
        .into_iter()
        .map(|(service, key)| (key, service.function_name().to_string()))
        .collect();
    let infra: BTreeSet<(String, String)> = hcl_map("routes").into_iter().collect();
    let missing_in_infra: Vec<_> = router.difference(&infra).collect();
    let unknown_to_router: Vec<_> = infra.difference(&router).collect();
    assert!(missing_in_infra.is_empty(), "routes the router serves but API Gateway lacks: {missing_in_infra:?}");
    assert!(unknown_to_router.is_empty(), "API Gateway routes no handler serves: {unknown_to_router:?}");
}

#[test]
fn every_lambda_binary_has_a_function_and_back() {
    // Lambda binaries: the crates under functions/ with a main, except the local registry.
    let mut binaries = BTreeSet::new();
    for entry in std::fs::read_dir(repo().join("functions")).expect("functions/") {
        let dir = entry.expect("entry").path();
        let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        if dir.join("src/main.rs").is_file() && name != "local" {
            binaries.insert(name);
        }
    }
    let functions: BTreeSet<String> = hcl_map("functions").into_iter().map(|(k, _)| k).collect();
    assert_eq!(binaries, functions, "Lambda binaries in functions/ vs function resources in infra/main.tf");
    for (_, function) in hcl_map("routes") {
        assert!(functions.contains(&function), "a route targets {function}, which has no function resource");
    }
}

/// A `NAME = ["a", "b"]` list in `infra/main.tf`'s locals.
fn hcl_list(name: &str) -> Vec<String> {
    let text = std::fs::read_to_string(repo().join("infra/main.tf")).expect("infra/main.tf");
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| l.split('=').next().is_some_and(|k| k.trim() == name) && l.contains('['))
        .unwrap_or_else(|| panic!("no `{name} = [...]` in infra/main.tf"));
    let list = &line[line.find('[').unwrap_or(0) + 1..line.rfind(']').unwrap_or(line.len())];
    list.split(',').map(|i| i.trim().trim_matches('"').to_string()).filter(|i| !i.is_empty()).collect()
}

/// The indexer in AWS sees exactly the uploads the local registry indexes: infra's S3
/// notification filters are `layout::NOTIFICATIONS`, and the prefixes IAM gives publishers
/// and the indexer are the layout's.
#[test]
fn notifications_and_prefixes_are_the_layouts() {
    let field = |value: &str, name: &str| -> String {
        let at = value.find(&format!("{name} ")).unwrap_or_else(|| panic!("no {name} in {value}"));
        value[at..].split('"').nth(1).unwrap_or_default().to_string()
    };
    let infra: BTreeSet<(String, String)> =
        hcl_map("notifications").into_iter().map(|(_, v)| (field(&v, "prefix"), field(&v, "suffix"))).collect();
    let code: BTreeSet<(String, String)> =
        layout::NOTIFICATIONS.iter().map(|(p, s)| (p.to_string(), s.to_string())).collect();
    assert_eq!(infra, code, "infra/main.tf local.notifications vs layout::NOTIFICATIONS");
    assert_eq!(hcl_list("publisher_prefixes"), layout::PUBLISHER_PREFIXES, "publisher prefixes");
    assert_eq!(hcl_list("key_admin_prefixes"), layout::KEY_ADMIN_PREFIXES, "key admin prefixes");
    assert_eq!(hcl_list("indexer_prefixes"), layout::INDEXER_PREFIXES, "indexer prefixes");
    let infra: BTreeSet<(String, String)> =
        hcl_map("pull_notifications").into_iter().map(|(_, v)| (field(&v, "prefix"), field(&v, "suffix"))).collect();
    let code: BTreeSet<(String, String)> =
        layout::PULL_NOTIFICATIONS.iter().map(|(p, s)| (p.to_string(), s.to_string())).collect();
    assert_eq!(infra, code, "infra/main.tf local.pull_notifications vs layout::PULL_NOTIFICATIONS");
    assert_eq!(hcl_list("mirror_prefixes"), [layout::UPSTREAM_PREFIX], "mirror prefixes");
}
