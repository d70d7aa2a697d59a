//! The docs hold each fact the code has a table for, and nothing else: every route in
//! docs/API.md is a route key of `router::route_templates` and back, each row's methods are the
//! ones the router answers for its path, the discovery answer shown
//! is the one served, the bucket's notification suffixes and prefixes are in docs/BUCKET.md and
//! docs/DEPLOY.md, every relative link and anchor in README.md, docs/ and infra/README.md
//! resolves, the README stays a newcomer's page (at most 200 lines), and `make help` prints
//! values, not `$(VARIABLES)`, and SECURITY.md counts the hostile corpus as it is. (The configuration table is held to the code by
//! `infra_consistency`, with infra/'s inputs.)

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use registry::layout;
use registry::router::{BasePaths, DEFAULT_ROUTE_KEY, route_key_matches, route_templates};
use support::Harness;

pub(crate) fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ is inside the repository").to_path_buf()
}

fn read(path: &str) -> String {
    std::fs::read_to_string(repo().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Every Markdown file a reader meets.
pub(crate) fn documents() -> Vec<String> {
    let mut out = vec!["README.md".to_string(), "infra/README.md".to_string()];
    for entry in std::fs::read_dir(repo().join("docs")).expect("docs/") {
        let name = entry.expect("an entry").file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") {
            out.push(format!("docs/{name}"));
        }
    }
    out.sort();
    out
}

/// The paths of docs/API.md's table: the first backticked text of each row, from its `/`.
fn documented_paths() -> Vec<String> {
    let api = read("docs/API.md");
    api.lines()
        .filter(|l| l.starts_with("| `"))
        .filter_map(|l| l.split('|').nth(1))
        .filter_map(|cell| cell.find('/').map(|at| cell[at..].to_string()))
        .map(|p| p.split(['`', '?', ' ']).next().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn the_api_table_is_the_routers_route_keys_both_ways() {
    let keys: Vec<String> = route_templates(&BasePaths::default())
        .into_iter()
        .map(|(_, key)| key)
        .filter(|key| key != DEFAULT_ROUTE_KEY)
        .collect();
    let paths = documented_paths();
    assert!(paths.len() >= 20, "{paths:?}");
    let unknown: Vec<&String> = paths.iter().filter(|p| !keys.iter().any(|k| route_key_matches(k, p))).collect();
    assert!(unknown.is_empty(), "docs/API.md documents paths no route key serves: {unknown:?}");
    let undocumented: Vec<&String> = keys.iter().filter(|k| !paths.iter().any(|p| route_key_matches(k, p))).collect();
    assert!(undocumented.is_empty(), "route keys missing from docs/API.md: {undocumented:?}");
}

/// A value for each `{placeholder}` of docs/API.md's paths that the router's grammar accepts.
const SAMPLE_SEGMENTS: [(&str, &str); 13] = [
    ("namespace", "acme"),
    ("name", "network"),
    ("system", "aws"),
    ("version", "1.2.0"),
    ("from", "1.0.0"),
    ("hostname", "registry.example.com"),
    ("type", "widget"),
    ("os", "linux"),
    ("arch", "amd64"),
    ("file", "style.css"),
    ("repository", "providers/registry.example.com/acme/widget"),
    ("reference", "1.2.0"),
    ("digest", "sha256:abababababababababababababababababababababababababababababababab"),
];

/// Each row of docs/API.md's table names the methods the router answers its path for: every
/// method it names routes (a `GET` row's `HEAD` too), and any other method is 405.
#[test]
fn the_api_tables_methods_are_the_routers() {
    use http::Method;
    let api = read("docs/API.md");
    let paths = BasePaths::default();
    let mut checked = 0;
    for row in api.lines().filter(|l| l.starts_with("| `")) {
        let cell = row.split('|').nth(1).unwrap_or_default();
        let quoted: Vec<&str> = cell.split('`').skip(1).step_by(2).collect();
        let methods: Vec<&str> = quoted.iter().filter_map(|q| q.split(' ').next()).collect();
        let request = quoted.iter().find(|q| q.contains('/')).unwrap_or_else(|| panic!("no path in {row}"));
        let target = &request[request.find('/').expect("a path")..];
        let (template, query) = target.split_once('?').map_or((target, None), |(p, q)| (p, Some(q)));
        let mut path = template.to_string();
        for (name, value) in SAMPLE_SEGMENTS {
            path = path.replace(&format!("{{{name}}}"), value);
        }
        assert!(!path.contains('{'), "docs/API.md: no sample value for a placeholder of {template}");
        // The values a row shows are blanks (`offset=`); search needs its text.
        let query = query.filter(|q| q.starts_with("q=")).map(|_| "q=x");
        let mut allowed: Vec<Method> = Vec::new();
        for method in &methods {
            let method = Method::from_bytes(method.as_bytes()).unwrap_or_else(|_| panic!("{method:?} in {row}"));
            if method == Method::GET {
                allowed.push(Method::HEAD);
            }
            allowed.push(method);
        }
        for method in [Method::GET, Method::HEAD, Method::POST, Method::PUT, Method::DELETE] {
            let routed = registry::router::route(&method, &path, query, &paths);
            match allowed.contains(&method) {
                true => {
                    assert!(routed.is_ok(), "docs/API.md: {method} {path} is documented, the router answers {routed:?}")
                }
                false => assert_eq!(
                    routed.map_err(|e| e.status().as_u16()),
                    Err(405),
                    "docs/API.md: {method} {path} is not documented, so the router must answer 405"
                ),
            }
        }
        checked += 1;
    }
    assert!(checked >= 20, "{checked} rows");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_discovery_answer_shown_is_the_one_served() {
    let h = Harness::start().await;
    let (status, served) = h.get_json("/.well-known/terraform.json").await;
    assert_eq!(status, 200);
    let api = read("docs/API.md");
    let row = api.lines().find(|l| l.starts_with("| `GET /.well-known/terraform.json`")).expect("the discovery row");
    let shown = row.split('|').nth(2).and_then(|c| c.split('`').nth(1)).expect("the answer in backticks");
    let shown: serde_json::Value = serde_json::from_str(shown).expect("the shown answer is JSON");
    assert_eq!(shown, served, "docs/API.md's discovery answer vs the local registry's (REGISTRY_HOSTNAME set)");
}

#[test]
fn the_bucket_docs_name_every_notification_and_prefix() {
    let bucket = read("docs/BUCKET.md");
    let deploy = read("docs/DEPLOY.md");
    let notifications = deploy.split("**Notifications**").nth(1).expect("DEPLOY.md's Notifications item");
    let notifications = notifications.split("\n- **").next().unwrap_or_default();
    for (prefix, suffix) in layout::NOTIFICATIONS {
        assert!(bucket.contains(suffix), "docs/BUCKET.md never shows a {prefix}…{suffix} key");
        assert!(notifications.contains(&format!("`{suffix}`")), "DEPLOY.md's notifications miss {prefix} {suffix}");
    }
    let prefixes = layout::PUBLISHER_PREFIXES
        .iter()
        .chain(&layout::KEY_ADMIN_PREFIXES)
        .chain(&layout::INDEXER_PREFIXES)
        .chain([&layout::UPSTREAM_PREFIX, &layout::UPSTREAM_MODULES_PREFIX]);
    for prefix in prefixes {
        assert!(bucket.contains(&format!("── {prefix}")), "docs/BUCKET.md's tree has no {prefix}");
    }
    for key in [layout::CATALOG_INDEX, layout::CATALOG_PROVIDERS, layout::CATALOG_UPSTREAM_MODULES, layout::TOKENS] {
        let file = key.rsplit('/').next().unwrap_or_default();
        assert!(bucket.contains(file), "docs/BUCKET.md's tree has no {key}");
    }
}

/// GitHub's anchor of a heading: lower case, punctuation but `-` and `_` dropped, spaces `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(markdown: &str) -> BTreeSet<String> {
    let mut in_code = false;
    let mut out = BTreeSet::new();
    for line in markdown.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
        } else if !in_code && line.starts_with('#') {
            out.insert(anchor(line.trim_start_matches('#')));
        }
    }
    out
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let mut broken = Vec::new();
    for doc in documents() {
        let text = read(&doc);
        let dir = Path::new(&doc).parent().unwrap_or(Path::new("")).to_path_buf();
        let mut in_code = false;
        for line in text.lines() {
            if line.starts_with("```") {
                in_code = !in_code;
            }
            if in_code {
                continue;
            }
            // Outside inline code (a regular expression may hold `](`).
            let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
            for link in prose.split("](").skip(1).filter_map(|rest| rest.split(')').next()) {
                if link.starts_with("http") || link.starts_with("mailto:") {
                    continue;
                }
                let (file, fragment) = link.split_once('#').unwrap_or((link, ""));
                let target = if file.is_empty() { PathBuf::from(&doc) } else { dir.join(file) };
                let path = repo().join(&target);
                if !path.exists() {
                    broken.push(format!("{doc}: {link} (no {})", target.display()));
                    continue;
                }
                if !fragment.is_empty() && path.extension().is_some_and(|e| e == "md") {
                    let headings = anchors(&std::fs::read_to_string(&path).unwrap_or_default());
                    if !headings.contains(fragment) {
                        broken.push(format!("{doc}: {link} (no heading #{fragment})"));
                    }
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_readme_is_a_newcomers_page() {
    let readme = read("README.md");
    let lines = readme.lines().count();
    assert!(lines <= 200, "README.md has {lines} lines: move detail into docs/ and link it");
    for needed in
        ["make dev", "make test", "## Publish a module", "## Publish a provider", "## Deploy", "docs/screenshots/"]
    {
        assert!(readme.contains(needed), "README.md lost {needed:?}");
    }
    for doc in documents().iter().filter(|d| d.starts_with("docs/")) {
        assert!(readme.contains(&format!("]({doc})")), "README.md's documentation index misses {doc}");
    }
}

#[test]
fn make_help_prints_values_not_variables() {
    let Ok(out) = std::process::Command::new("make").arg("help").current_dir(repo()).output() else {
        eprintln!("=== SKIPPED: make not found ===");
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("  dev "), "{text}");
    assert!(!text.contains("$("), "make help prints a variable's name, not its value:\n{text}");
}

#[test]
fn security_counts_the_hostile_corpus_as_it_is() {
    let said = format!("hostile requests: {} crafted requests", support::hostile::corpus().len());
    assert!(read("docs/SECURITY.md").contains(&said), "docs/SECURITY.md must say {said:?}");
}
