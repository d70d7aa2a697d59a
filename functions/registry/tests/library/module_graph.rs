//! The library's modules depend on each other one way: no import cycle. Read from the sources,
//! so a `use crate::…` that closes a loop fails here before it settles in. A module is a file
//! under `src/` or a folder with its `mod.rs`; what its tests use does not count.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// What `lib.rs` re-exports at the crate's root (`pub use config::Config;` → `Config` →
/// `config`), so that `crate::Config` counts as an import of `config`.
fn reexports(src: &Path) -> BTreeMap<String, String> {
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs");
    let mut names = BTreeMap::new();
    for line in lib.lines() {
        let Some(path) = line.trim().strip_prefix("pub use ").and_then(|l| l.strip_suffix(';')) else { continue };
        let Some((module, items)) = path.split_once("::") else { continue };
        for item in items.trim_start_matches('{').trim_end_matches('}').split(',') {
            let item = item.trim().rsplit("::").next().unwrap_or_default();
            if !item.is_empty() {
                names.insert(item.to_string(), module.to_string());
            }
        }
    }
    names
}

/// Module name → the modules its non-test code names through `crate::` (or `super::` from a
/// file inside a module folder), re-exported names included.
fn dependencies() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let reexported = reexports(&src);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut files = vec![];
    for entry in std::fs::read_dir(&src).expect("src/") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            for inner in std::fs::read_dir(&path).expect("module folder") {
                files.push(inner.expect("entry").path());
            }
        } else {
            files.push(path);
        }
    }
    for path in files {
        let relative = path.strip_prefix(&src).expect("under src/");
        let module = relative.iter().next().and_then(|c| c.to_str()).unwrap_or_default().trim_end_matches(".rs");
        // A module folder's `tests.rs` is its test code, like a file's `#[cfg(test)]` tail.
        let test_file = path.file_name().is_some_and(|n| n == "tests.rs");
        if module == "lib" || test_file || path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("readable source");
        // Test code sits at the end of each file, behind `#[cfg(test)]`.
        let code = text.split("\n#[cfg(test)]").next().unwrap_or_default();
        let deps = graph.entry(module.to_string()).or_default();
        for (at, _) in code.match_indices("crate::") {
            let rest = &code[at + "crate::".len()..];
            let names: Vec<&str> = match rest.strip_prefix('{') {
                // `use crate::{a, b::c};`
                Some(group) => group.split('}').next().unwrap_or_default().split(',').collect(),
                None => vec![rest],
            };
            for name in names {
                let name: String = name.trim().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                let name = reexported.get(&name).cloned().unwrap_or(name);
                if !name.is_empty() && name != module && name.starts_with(|c: char| c.is_ascii_lowercase()) {
                    deps.insert(name);
                }
            }
        }
    }
    graph
}

/// A cycle in `graph`, as the path that closes it, if there is one.
fn cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|n| n == node) {
            let mut found = path[start..].to_vec();
            found.push(node.to_string());
            return Some(found);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(found) = visit(next, graph, path, done) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

#[test]
fn module_dependencies_point_one_way() {
    let graph = dependencies();
    assert!(graph.len() >= 15, "every module was read: {graph:?}");
    assert!(graph["app"].contains("router") && graph["index"].contains("archive"), "edges are found: {graph:?}");
    assert_eq!(reexports(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))["Config"], "config");
    if let Some(found) = cycle(&graph) {
        panic!("import cycle among the library's modules: {}\n{graph:#?}", found.join(" -> "));
    }
}

#[test]
fn the_cycle_finder_finds_cycles() {
    let graph = |edges: &[(&str, &str)]| {
        let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in edges {
            g.entry(a.to_string()).or_default().insert(b.to_string());
        }
        g
    };
    assert_eq!(cycle(&graph(&[("a", "b"), ("b", "c")])), None);
    assert_eq!(
        cycle(&graph(&[("a", "b"), ("b", "c"), ("c", "a")])),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    // The one this test was written against: access -> index -> app -> access.
    let old =
        graph(&[("access", "index"), ("index", "app"), ("app", "access"), ("app", "router"), ("router", "config")]);
    assert!(cycle(&old).is_some());
}
