//! The deployment matches the code: every route the router serves has an API Gateway route
//! to the function that serves it, every API Gateway route has a handler, every Lambda
//! binary has a function resource (and nothing else does), the bucket's notification
//! filters and trust-boundary prefixes are the ones the layout (and the local registry) use,
//! and every variable the code reads is an infra input or documented as not one.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use hcl_edit::expr::{Expression, ObjectKey};
use registry::layout;
use registry::router::BasePaths;
use registry::router::route_templates;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ is inside the repository").to_path_buf()
}

/// The expression of `NAME` in `infra/main.tf`'s `locals`, parsed as Terraform does (hcl-edit),
/// so that layout, comments and alignment in the file do not matter.
fn local(name: &str) -> Expression {
    let text = std::fs::read_to_string(repo().join("infra/main.tf")).expect("infra/main.tf");
    let body = hcl_edit::parser::parse_body(&text).expect("infra/main.tf parses");
    body.get_blocks("locals")
        .find_map(|block| block.body.get_attribute(name).map(|a| a.value.clone()))
        .unwrap_or_else(|| panic!("no local `{name}` in infra/main.tf"))
}

/// A literal string, or `None` for anything computed.
fn string(expr: &Expression) -> Option<String> {
    match expr {
        Expression::String(s) => Some(s.as_str().to_string()),
        _ => None,
    }
}

/// A `NAME = { key = value, ... }` local: each key, with its value.
fn hcl_entries(name: &str) -> Vec<(String, Expression)> {
    let Expression::Object(object) = local(name) else { panic!("local `{name}` is not a map") };
    object
        .iter()
        .map(|(key, value)| {
            let key = match key {
                ObjectKey::Ident(ident) => ident.as_str().to_string(),
                ObjectKey::Expression(expr) => string(expr).unwrap_or_else(|| panic!("`{name}` has a computed key")),
            };
            (key, value.expr().clone())
        })
        .collect()
}

/// A `NAME = { key = "value", ... }` local of strings.
fn hcl_map(name: &str) -> Vec<(String, String)> {
    hcl_entries(name)
        .into_iter()
        .map(|(key, value)| {
            let value = string(&value).unwrap_or_else(|| panic!("`{name}.{key}` is not a string"));
            (key, value)
        })
        .collect()
}

/// A `NAME = { key = { prefix = "...", suffix = "..." }, ... }` local: the (prefix, suffix) pairs.
fn hcl_filters(name: &str) -> BTreeSet<(String, String)> {
    hcl_entries(name)
        .into_iter()
        .map(|(key, value)| {
            let Expression::Object(filter) = value else { panic!("`{name}.{key}` is not an object") };
            let field = |wanted: &str| {
                filter
                    .iter()
                    .find(|(k, _)| matches!(k, ObjectKey::Ident(i) if i.as_str() == wanted))
                    .and_then(|(_, v)| string(v.expr()))
                    .unwrap_or_else(|| panic!("`{name}.{key}` has no {wanted}"))
            };
            (field("prefix"), field("suffix"))
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
    let binaries = support::lambda_binaries();
    let functions: BTreeSet<String> = hcl_entries("functions").into_iter().map(|(k, _)| k).collect();
    assert_eq!(binaries, functions, "Lambda binaries in functions/ vs function resources in infra/main.tf");
    for (_, function) in hcl_map("routes") {
        assert!(functions.contains(&function), "a route targets {function}, which has no function resource");
    }
}

/// A `NAME = ["a", "b"]` local.
fn hcl_list(name: &str) -> Vec<String> {
    let Expression::Array(items) = local(name) else { panic!("local `{name}` is not a list") };
    items.iter().map(|item| string(item).unwrap_or_else(|| panic!("`{name}` holds a computed item"))).collect()
}

/// The indexer in AWS sees exactly the uploads the local registry indexes: infra's S3
/// notification filters are `layout::NOTIFICATIONS`, and the prefixes IAM gives publishers
/// and the indexer are the layout's.
#[test]
fn notifications_and_prefixes_are_the_layouts() {
    let infra = hcl_filters("notifications");
    let code: BTreeSet<(String, String)> =
        layout::NOTIFICATIONS.iter().map(|(p, s)| (p.to_string(), s.to_string())).collect();
    assert_eq!(infra, code, "infra/main.tf local.notifications vs layout::NOTIFICATIONS");
    assert_eq!(hcl_list("publisher_prefixes"), layout::PUBLISHER_PREFIXES, "publisher prefixes");
    assert_eq!(hcl_list("key_admin_prefixes"), layout::KEY_ADMIN_PREFIXES, "key admin prefixes");
    assert_eq!(hcl_list("indexer_prefixes"), layout::INDEXER_PREFIXES, "indexer prefixes");
    let infra = hcl_filters("pull_notifications");
    let code: BTreeSet<(String, String)> =
        layout::PULL_NOTIFICATIONS.iter().map(|(p, s)| (p.to_string(), s.to_string())).collect();
    assert_eq!(infra, code, "infra/main.tf local.pull_notifications vs layout::PULL_NOTIFICATIONS");
    assert_eq!(hcl_list("mirror_prefixes"), [layout::UPSTREAM_PREFIX], "mirror prefixes");
    assert_eq!(hcl_list("modules_prefixes"), [layout::UPSTREAM_MODULES_PREFIX], "modules pull-through prefixes");
    assert_eq!(string(&local("usage_prefix")).as_deref(), Some(layout::USAGE_PREFIX), "the usage function's prefix");
    assert_eq!(hcl_list("usage_sources"), registry::usage::COUNTING_FUNCTIONS, "log groups the usage function reads");
    let archives: Vec<String> = layout::MODULE_ARCHIVE_EXTENSIONS.iter().map(|e| format!(".{e}")).collect();
    assert_eq!(hcl_list("module_archive_suffixes"), archives, "what the modules function may read");
}

/// The variables each function's environment gets from infra/ (`common_environment`, and the
/// maps merged into it per function).
fn infra_environment() -> BTreeSet<String> {
    let key = |key: &ObjectKey| match key {
        ObjectKey::Ident(ident) => ident.as_str().to_string(),
        ObjectKey::Expression(expr) => string(expr).expect("a literal variable name"),
    };
    let mut names: BTreeSet<String> = hcl_entries("common_environment").into_iter().map(|(k, _)| k).collect();
    for (_, value) in hcl_entries("environment") {
        if let Expression::FuncCall(call) = value {
            for arg in call.args.iter() {
                if let Expression::Object(object) = arg {
                    names.extend(object.iter().map(|(k, _)| key(k)));
                }
            }
        }
    }
    names
}

/// Every `REGISTRY_*` variable the functions read is set by infra/ or documented in the
/// configuration table (docs/CONFIGURATION.md) as not an infra input (local registry only, or the default
/// applies in AWS); infra sets none the code does not read, and the table lists no other.
#[test]
fn every_variable_the_code_reads_is_an_infra_input_or_documented_as_not_one() {
    // What the code reads: every name `Config::from_lookup` asks for (all of them, when only
    // the bucket is set and nothing fails).
    let asked = std::sync::Mutex::new(BTreeSet::new());
    registry::Config::from_lookup(|name| {
        asked.lock().unwrap_or_else(|p| p.into_inner()).insert(name.to_string());
        (name == "REGISTRY_BUCKET").then(|| "bucket".to_string())
    })
    .expect("the defaults load");
    let read: BTreeSet<String> = asked.into_inner().unwrap_or_default();
    assert!(read.len() >= 20, "every variable was asked for: {read:?}");
    let infra = infra_environment();
    let unread: Vec<&String> = infra.iter().filter(|v| !read.contains(*v)).collect();
    assert!(unread.is_empty(), "infra/ sets variables the code does not read: {unread:?}");

    let table = std::fs::read_to_string(repo().join("docs/CONFIGURATION.md")).expect("docs/CONFIGURATION.md");
    let rows: Vec<(String, String)> = table
        .lines()
        .filter_map(|line| line.strip_prefix("| `REGISTRY_"))
        .filter_map(|rest| rest.split_once("` |").map(|(name, row)| (format!("REGISTRY_{name}"), row.to_string())))
        .collect();
    let documented: BTreeSet<&String> = rows.iter().map(|(name, _)| name).collect();
    let undocumented: Vec<&String> = read.iter().filter(|v| !documented.contains(v)).collect();
    assert!(undocumented.is_empty(), "variables missing from docs/CONFIGURATION.md's table: {undocumented:?}");
    let stale: Vec<&&String> = documented.iter().filter(|v| !read.contains(**v)).collect();
    assert!(stale.is_empty(), "docs/CONFIGURATION.md documents variables the code does not read: {stale:?}");
    for (name, row) in &rows {
        let marked = row.contains("local registry only") || row.contains("not an infra input");
        assert!(
            infra.contains(name) || marked,
            "{name} is no infra/ input: its docs/CONFIGURATION.md row must say `local registry only` or `not an infra input`"
        );
        assert!(
            !(infra.contains(name) && marked),
            "{name} is an infra/ input, but its docs/CONFIGURATION.md row says it is not"
        );
    }
}

/// docs/DEPLOY.md's variables table lists exactly infra/'s variables (a row may name several,
/// `a`, `b`), so an input added, removed or renamed cannot leave the guide behind.
#[test]
fn the_deploy_guide_lists_every_infra_variable() {
    let text = std::fs::read_to_string(repo().join("infra/variables.tf")).expect("infra/variables.tf");
    let body = hcl_edit::parser::parse_body(&text).expect("infra/variables.tf parses");
    let declared: BTreeSet<String> = body
        .get_blocks("variable")
        .filter_map(|block| block.labels.first().map(|label| label.as_str().to_string()))
        .collect();
    let guide = std::fs::read_to_string(repo().join("docs/DEPLOY.md")).expect("docs/DEPLOY.md");
    let table = guide.split("## Variables").nth(1).expect("a Variables section").split("\n## ").next().unwrap_or("");
    let documented: BTreeSet<String> = table
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|row| row.split(" |").next())
        .flat_map(|names| names.split(", ").map(|n| n.trim_matches('`').to_string()).collect::<Vec<_>>())
        .collect();
    assert!(declared.len() >= 30, "{declared:?}");
    assert_eq!(documented, declared, "docs/DEPLOY.md's variables table vs infra/variables.tf");
}
