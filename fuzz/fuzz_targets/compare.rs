//! Any text as what two versions of a module declare (publishers write both): its first line
//! the old version's, the rest the new one's, read as constraints, as types, and as the
//! `main.tf` of each, and compared as the indexer compares at publish. Never a panic; a
//! constraint, a type and a version never differ from themselves; a comparison keeps at most
//! `CHANGES_KEPT` changes; and every input ends within the run's `-timeout` (tests/suite.sh),
//! so a comparison that grows faster than its input is a crash. And the scan that decides what
//! hcl-edit is handed (`module_docs::scan`) never counts fewer keys than an object hcl-edit
//! parses from the same text: what it bounds is what the parser pays.
#![no_main]

use hcl_edit::expr::Object;
use hcl_edit::visit::{Visit, visit_object};
use libfuzzer_sys::fuzz_target;
use registry::archive::KeptFile;
use registry::module_docs::compare::{CHANGES_KEPT, Comparison, Constraint, Type};
use registry::module_docs::{ModuleDocs, extract, scan};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (old, new) = text.split_once('\n').unwrap_or((text, text));
    constraints(old, new);
    types(old, new);
    modules(old, new);
    scanned(text);
});

fn constraints(old: &str, new: &str) {
    let (Ok(a), Ok(b)) = (Constraint::parse(old), Constraint::parse(new)) else { return };
    assert_eq!(a.allows_beyond(&a), None, "{old:?} allows a release beyond itself");
    let _ = (a.allows_beyond(&b), b.allows_beyond(&a));
}

fn types(old: &str, new: &str) {
    let (Ok(a), Ok(b)) = (Type::parse(Some(old)), Type::parse(Some(new))) else { return };
    assert!(a.accepts(&a), "{old:?} refuses its own values");
    let _ = (a.accepts(&b), b.accepts(&a));
}

/// The texts as a constraint, a type and the whole of a `main.tf`.
fn modules(old: &str, new: &str) {
    let file = |text: &str| {
        let quoted = text.replace('\\', "\\\\").replace('"', "\\\"");
        format!(
            "terraform {{\n  required_version = \"{quoted}\"\n  required_providers {{\n    aws = {{ source = \"hashicorp/aws\", version = \"{quoted}\" }}\n  }}\n}}\nvariable \"x\" {{\n  type = {text}\n}}\n"
        )
    };
    let docs = |text: &str| -> [ModuleDocs; 2] {
        let kept = |path: &str, text: String| KeptFile { path: path.into(), bytes: Some(text.into_bytes()) };
        [extract(&[kept("main.tf", file(text))], "sha"), extract(&[kept("main.tf", text.to_string())], "sha")]
    };
    let (before, after) = (docs(old), docs(new));
    for (o, n) in before.iter().zip(&after) {
        let comparison = Comparison::new("1.0.0", o, n);
        assert!(comparison.changes.len() <= CHANGES_KEPT, "{} changes kept", comparison.changes.len());
        assert!(comparison.total() >= comparison.changes.len() as u64);
        for change in &comparison.changes {
            let _ = change.line();
        }
        assert!(Comparison::new("1.0.0", n, n).changes.is_empty(), "a version differs from itself");
    }
}

/// Every object hcl-edit parses from `text`, as a body or as an expression, is counted by the
/// scan, keys and all. Past `MAX_KEY_COMPARISONS` the registry hands hcl-edit nothing, and nor
/// does this: such a text could take this input past its timeout.
fn scanned(text: &str) {
    let scan = scan::objects(text);
    if scan.comparisons > scan::MAX_KEY_COMPARISONS {
        return;
    }
    let mut parses = Vec::new();
    if let Ok(body) = hcl_edit::parser::parse_body(text) {
        let mut parsed = Parsed::default();
        parsed.visit_body(&body);
        parses.push(parsed);
    }
    if let Ok(expr) = hcl_edit::parser::parse_expr(text) {
        let mut parsed = Parsed::default();
        parsed.visit_expr(&expr);
        parses.push(parsed);
    }
    for parsed in parses {
        assert!(parsed.largest <= scan.largest && parsed.keys <= scan.keys, "{parsed:?} parsed, {scan:?} scanned");
    }
}

/// The objects of one parse: the largest, and the keys of all.
#[derive(Debug, Default)]
struct Parsed {
    largest: u64,
    keys: u64,
}

impl Visit for Parsed {
    fn visit_object(&mut self, node: &Object) {
        self.largest = self.largest.max(node.len() as u64);
        self.keys += node.len() as u64;
        visit_object(self, node);
    }
}
