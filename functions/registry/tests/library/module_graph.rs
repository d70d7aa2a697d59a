//! The library's modules depend on each other one way, downward through the layers that
//! docs/CODE_MAP.md lists. Read from the sources, so a `use crate::…` (or `crate::X` in an
//! expression) that points up, or closes a loop, fails here before it settles in. A module is
//! a file under `src/` or a folder (everything beneath it counts as that module); what its
//! tests use does not count.
//! Within a folder, its files (named by `super::FILE`) may not close a loop either; in
//! `index/`, they name only each other, never an item of the folder's `mod.rs`.
//! And only the HTTP edge (`HTTP_EDGE`) maps an `Error` to a status or a client's body.

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
    let mut folders = vec![src.clone()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).expect("source folder") {
            let path = entry.expect("entry").path();
            if path.is_dir() { folders.push(path) } else { files.push(path) }
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

/// Module → layer, from the table under "## Layers" in docs/CODE_MAP.md (rows
/// `| LAYER | \`module\` | what it owns |`).
fn layers(code_map: &str) -> BTreeMap<String, u32> {
    let table = code_map.split("\n## Layers").nth(1).expect("docs/CODE_MAP.md has a Layers section");
    let table = table.split("\n## ").next().unwrap_or_default();
    let mut layers = BTreeMap::new();
    for line in table.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let (Some(layer), Some(module)) = (cells.get(1), cells.get(2)) else { continue };
        let Ok(layer) = layer.parse::<u32>() else { continue };
        let module = module.trim_matches('`').to_string();
        assert!(layers.insert(module.clone(), layer).is_none(), "{module} is listed twice in docs/CODE_MAP.md");
    }
    layers
}

/// Every import of `graph` that does not point to a lower layer, as (importer, imported).
fn upward(graph: &BTreeMap<String, BTreeSet<String>>, layers: &BTreeMap<String, u32>) -> Vec<(String, String)> {
    let mut found = vec![];
    for (module, deps) in graph {
        for dep in deps {
            if let (Some(from), Some(to)) = (layers.get(module), layers.get(dep))
                && to >= from
            {
                found.push((module.clone(), dep.clone()));
            }
        }
    }
    found
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
    assert!(graph["app"].contains("routes") && graph["index"].contains("archive"), "edges are found: {graph:?}");
    assert!(graph["auth"].contains("http_client"), "files in nested folders are read (auth/oidc/keys.rs)");
    assert_eq!(reexports(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))["Config"], "config");
    if let Some(found) = cycle(&graph) {
        panic!("import cycle among the library's modules: {}\n{graph:#?}", found.join(" -> "));
    }
}

#[test]
fn every_import_points_down_the_code_maps_layers() {
    let graph = dependencies();
    let map = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/CODE_MAP.md");
    let layers = layers(&std::fs::read_to_string(map).expect("docs/CODE_MAP.md"));
    let unlisted: Vec<&String> = graph.keys().filter(|m| !layers.contains_key(*m)).collect();
    assert!(unlisted.is_empty(), "modules missing from docs/CODE_MAP.md's layers: {unlisted:?}");
    let gone: Vec<&String> = layers.keys().filter(|m| !graph.contains_key(*m)).collect();
    assert!(gone.is_empty(), "docs/CODE_MAP.md lists modules that do not exist: {gone:?}");
    let up = upward(&graph, &layers);
    assert!(up.is_empty(), "imports that do not point to a lower layer (docs/CODE_MAP.md): {up:?}");
}

#[test]
fn the_layer_check_finds_upward_imports() {
    let map = "# Code map\n\n## Layers\n\n| layer | module | what |\n| --- | --- | --- |\n\
               | 0 | `error` | errors |\n| 1 | `storage` | storage |\n| 1 | `layout` | keys |\n\
               | 2 | `app` | handler |\n\n## Elsewhere\n\n| 9 | `not_a_layer` | ignored |\n";
    let layers = layers(map);
    assert_eq!(layers.len(), 4, "{layers:?}");
    let graph = |edges: &[(&str, &str)]| {
        let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in edges {
            g.entry(a.to_string()).or_default().insert(b.to_string());
        }
        g
    };
    assert!(upward(&graph(&[("app", "storage"), ("storage", "error")]), &layers).is_empty());
    // The import this test was written against: storage reading the configuration.
    assert_eq!(upward(&graph(&[("storage", "app")]), &layers), vec![("storage".into(), "app".into())]);
    // Within one layer is not down either.
    assert_eq!(upward(&graph(&[("storage", "layout")]), &layers), vec![("storage".into(), "layout".into())]);
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

/// A file's code without its tests (at the end, behind `#[cfg(test)]`) and without comments:
/// a doc comment's link to a sibling (`[`super::policy`]`) is no import.
fn code_only(text: &str) -> String {
    text.split("\n#[cfg(test)]")
        .next()
        .unwrap_or_default()
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first name after each `super::` in `code`, each of a group's (`use super::{a, b::c}`:
/// `a`, `b`) included.
fn super_names(code: &str) -> Vec<String> {
    let name =
        |s: &str| -> String { s.trim().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect() };
    let mut names = vec![];
    for (at, _) in code.match_indices("super::") {
        let rest = &code[at + "super::".len()..];
        match rest.strip_prefix('{') {
            Some(group) => names.extend(group.split('}').next().unwrap_or_default().split(',').map(name)),
            None => names.push(name(rest)),
        }
    }
    names.retain(|n| !n.is_empty());
    names
}

/// A folder's files (not `mod.rs`, `lib.rs` or a `tests.rs`) by name, and the names of all its
/// children: those files and its subfolders.
fn folder_children(folder: &Path) -> (Vec<(String, std::path::PathBuf)>, BTreeSet<String>, Vec<std::path::PathBuf>) {
    let (mut files, mut children, mut subfolders) = (vec![], BTreeSet::new(), vec![]);
    for entry in std::fs::read_dir(folder).expect("source folder") {
        let path = entry.expect("entry").path();
        let name = path.file_stem().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        if path.is_dir() {
            subfolders.push(path.clone());
            children.insert(name);
        } else if path.extension().is_some_and(|e| e == "rs") && !["mod", "lib", "tests"].contains(&name.as_str()) {
            children.insert(name.clone());
            files.push((name, path));
        }
    }
    (files, children, subfolders)
}

/// Within each module folder, file → the sibling files and folders its non-test code names
/// through `super::NAME` or `super::{NAME, …}` (`mod.rs`, the folder's own root, is left out:
/// it declares its children). Keyed by the folder's path under `src/`.
fn sibling_dependencies() -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut folders = vec![src.clone()];
    let mut found = BTreeMap::new();
    while let Some(folder) = folders.pop() {
        let (files, siblings, subfolders) = folder_children(&folder);
        folders.extend(subfolders);
        let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (name, path) in files {
            let code = code_only(&std::fs::read_to_string(&path).expect("readable source"));
            let deps = graph.entry(name.clone()).or_default();
            deps.extend(super_names(&code).into_iter().filter(|named| *named != name && siblings.contains(named)));
        }
        let relative = folder.strip_prefix(&src).expect("under src/").display().to_string();
        found.insert(relative, graph);
    }
    found
}

/// Files of one folder depend on each other one way too: a helper two of them share lives
/// below both (the last cycle, routes/mirror.rs <-> routes/pull_through.rs, went when the
/// archives' presigning moved to the reader).
#[test]
fn files_within_a_folder_depend_on_each_other_one_way() {
    let folders = sibling_dependencies();
    assert!(folders["routes"]["mirror"].contains("pull_through"), "sibling edges are found: {folders:#?}");
    assert!(folders["index"]["modules"].contains("oci"), "edges in a group are found (`use super::{{…, oci}}`)");
    for (folder, graph) in &folders {
        if let Some(found) = cycle(graph) {
            panic!("import cycle among the files of src/{folder}: {}", found.join(" -> "));
        }
    }
}

#[test]
fn super_names_reads_paths_and_groups() {
    let code = "use super::{a, b::c};\nuse super::d::E;\nlet x = super::f(super::super::g);";
    assert_eq!(super_names(code), ["a", "b", "d", "f", "super", "g"]);
}

/// Folders whose `mod.rs` is their top: it declares their files, runs them and re-exports,
/// and what the files share lives in a file below them, never in `mod.rs`, so a file names
/// only its siblings through `super::` (issue 47: the indexer's walk climbed back into
/// `index/mod.rs` seven times). Only these: other folders keep, by design, what their files
/// share in their `mod.rs` (`storage`'s trait its backends implement, `archive`'s and `oci`'s
/// constants, …), which this check would report.
const FOLDERS_WITH_MOD_RS_ON_TOP: &[&str] = &["index"];

#[test]
fn no_file_of_the_indexer_names_an_item_of_its_mod_rs() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut climbs = vec![];
    for folder in FOLDERS_WITH_MOD_RS_ON_TOP {
        let (files, siblings, _) = folder_children(&src.join(folder));
        assert!(files.len() > 5, "src/{folder} was read: {files:?}");
        for (name, path) in files {
            let code = code_only(&std::fs::read_to_string(&path).expect("readable source"));
            for named in super_names(&code) {
                // `super::super::…` names the folder's parent, not its `mod.rs`.
                if !siblings.contains(&named) && named != "super" {
                    climbs.push(format!("src/{folder}/{name}.rs: super::{named}"));
                }
            }
        }
    }
    assert!(
        climbs.is_empty(),
        "items of a mod.rs named by its files (move them to a file below those that share them): {climbs:?}"
    );
}

/// Where a module's unit tests live (docs/CODE_MAP.md, "Tests"): at the end of its file
/// while short, else in a `tests.rs` of their own beside it, so that a file reads as its code.
#[test]
fn long_unit_tests_live_in_a_tests_file_of_their_own() {
    const MOST_INLINE_LINES: usize = 150;
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut folders = vec![src];
    let mut long = vec![];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).expect("source folder") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                folders.push(path);
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            if let Some(at) = text.find("\n#[cfg(test)]\nmod tests {") {
                let lines = text[at..].lines().count();
                if lines > MOST_INLINE_LINES {
                    long.push(format!("{} ({lines} lines)", path.display()));
                }
            }
        }
    }
    assert!(
        long.is_empty(),
        "inline tests over {MOST_INLINE_LINES} lines: move them to tests.rs beside the file: {long:?}"
    );
}

/// The route docs/CODE_MAP.md shows as "the last route added" is a row of the route table, word
/// for word, so the example a newcomer copies is one that compiles.
#[test]
fn the_route_code_map_shows_is_a_row_of_the_table() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let map = std::fs::read_to_string(root.join("../../docs/CODE_MAP.md")).expect("docs/CODE_MAP.md");
    let table = std::fs::read_to_string(root.join("src/router/table.rs")).expect("router/table.rs");
    let section = map.split("\n## Where to add a route").nth(1).expect("a \"Where to add a route\" section");
    let row = section.split("```rust\n").nth(1).and_then(|s| s.split("```").next()).expect("a rust block");
    assert!(
        !row.trim().is_empty() && table.contains(row),
        "docs/CODE_MAP.md shows a row the table does not have:\n{row}"
    );
}

/// The HTTP edge: the files that turn an `Error` into what a client gets (`Error::status`,
/// `public_message`, `body`, and `is_server_error`, the edge's choice of log level). Everywhere
/// else (the indexer, the puller, maintenance, the publish log, storage) code matches on the
/// variant, or asks a method named for what it decides (`retry::on_conflict` matches
/// `Error::Unavailable`): a status is the client's business, and a decision read off it would
/// change whenever a mapping does (issue 47).
/// (`routes/oci.rs` and `routes/mcp.rs` answer in their protocols' own error bodies.)
const HTTP_EDGE: &[&str] =
    &["error.rs", "exchange.rs", "app/mod.rs", "lambda/http.rs", "routes/web.rs", "routes/oci.rs", "routes/mcp.rs"];

/// Receivers of `.status()` that are an HTTP response, not an `Error`: the SDK's raw response
/// (`se.raw().status()`, storage/s3.rs) and hyper's (`response.status()`, http_client.rs).
const HTTP_RESPONSES: &[&str] = &["raw()", "response"];

/// The lines of `code` that map an error to the client's terms: a call of `.status()` (on
/// anything but an HTTP response), `.public_message()`, `.body()` or `.is_server_error()`.
fn status_calls(code: &str) -> Vec<String> {
    let mut found = vec![];
    for line in code.lines() {
        let calls = [".status()", ".public_message()", ".body()", ".is_server_error()"];
        let mapped = calls.iter().flat_map(|call| line.match_indices(call)).any(|(at, call)| {
            call != ".status()" || !HTTP_RESPONSES.iter().any(|response| line[..at].ends_with(response))
        });
        if mapped {
            found.push(line.trim().to_string());
        }
    }
    found
}

#[test]
fn status_calls_finds_an_errors_status_and_not_a_responses() {
    let code = "let s = err.status();\nlet c = se.raw().status().as_u16();\nlet r = response.status();\n\
                let f = reply.status;\nlet b = e.body();\nif e.is_server_error() {}";
    assert_eq!(status_calls(code), ["let s = err.status();", "let b = e.body();", "if e.is_server_error() {}"]);
    assert!(status_calls(&code_only("// err.status()\n#[cfg(test)]\nfn t() { e.status(); }")).is_empty());
}

/// Only the HTTP edge maps an error to a status or a client's body (`HTTP_EDGE`); tests
/// (a `tests.rs`, a file's `#[cfg(test)]` tail) and comments do not count.
#[test]
fn only_the_http_edge_maps_errors_to_statuses() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let (mut outside, mut at_the_edge) = (vec![], 0);
    let mut folders = vec![src.clone()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).expect("source folder") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                folders.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") || path.file_name().is_some_and(|n| n == "tests.rs") {
                continue;
            }
            let relative = path.strip_prefix(&src).expect("under src/").to_string_lossy().replace('\\', "/");
            let calls = status_calls(&code_only(&std::fs::read_to_string(&path).expect("readable source")));
            if HTTP_EDGE.contains(&relative.as_str()) {
                at_the_edge += calls.len();
            } else {
                outside.extend(calls.into_iter().map(|line| format!("src/{relative}: {line}")));
            }
        }
    }
    assert!(at_the_edge >= 10, "the edge's own calls are found ({at_the_edge})");
    assert!(
        outside.is_empty(),
        "an error mapped to a status outside the HTTP edge (match on the variant instead, or add a method \
         named for the decision): {outside:#?}"
    );
}
