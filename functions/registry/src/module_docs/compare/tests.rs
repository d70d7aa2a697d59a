//! The corpus of interface changes: each kind judged breaking or not, read from module files
//! as the indexer reads them.

use super::*;
use crate::archive::KeptFile;
use crate::module_docs::extract;

fn docs(files: &[(&str, &str)]) -> ModuleDocs {
    let kept: Vec<KeptFile> =
        files.iter().map(|(p, t)| KeptFile { path: p.to_string(), bytes: Some(t.as_bytes().to_vec()) }).collect();
    extract(&kept, "00")
}

/// The changes from `old` to `new` (root `main.tf` each), as (line, breaking).
fn judged(old: &str, new: &str) -> Vec<(String, bool)> {
    let changes = compare(&docs(&[("main.tf", old)]), &docs(&[("main.tf", new)]));
    changes.iter().map(|c| (c.line(), c.breaking.is_some())).collect()
}

const BASE: &str = r#"
terraform {
  required_version = ">= 1.3"
  required_providers {
    aws = { source = "hashicorp/aws", version = "~> 5.0" }
  }
}
variable "name" { type = string }
variable "cidr" {
  type    = string
  default = "10.0.0.0/16"
}
variable "tags" {
  type    = map(string)
  default = {}
}
output "id" { value = 1 }
"#;

/// `BASE` with one edit.
fn edited(from: &str, to: &str) -> String {
    assert!(BASE.contains(from), "{from}");
    BASE.replacen(from, to, 1)
}

#[test]
fn each_kind_of_change_is_judged() {
    let cases: Vec<(&str, String, &str, bool)> = vec![
        // Breaking.
        ("input removed", edited("variable \"name\" { type = string }", ""), "input \"name\" removed", true),
        (
            "required input added",
            format!("{BASE}variable \"zone\" {{ type = string }}\n"),
            "input \"zone\" added, required",
            true,
        ),
        ("default removed", edited("  default = \"10.0.0.0/16\"\n", ""), "input \"cidr\" default removed", true),
        (
            "type narrowed",
            edited("type    = map(string)", "type    = map(number)"),
            "type map(string) → map(number)",
            true,
        ),
        (
            "nullable = false",
            edited("variable \"name\" { type = string }", "variable \"name\" {\n type = string\n nullable = false\n}"),
            "nullable = false",
            true,
        ),
        ("output removed", edited("output \"id\" { value = 1 }", ""), "output \"id\" removed", true),
        (
            "output made sensitive",
            edited("output \"id\" { value = 1 }", "output \"id\" {\n value = 1\n sensitive = true\n}"),
            "output \"id\" sensitive now",
            true,
        ),
        ("required_version narrowed", edited(">= 1.3", ">= 1.5"), "Terraform 1.3.0 was allowed", true),
        ("provider constraint narrowed", edited("~> 5.0", "~> 5.40"), "hashicorp/aws 5.0.0 was allowed", true),
        ("provider source changed", edited("hashicorp/aws", "acme/aws"), "source hashicorp/aws → acme/aws", true),
        // Not breaking.
        (
            "optional input added",
            format!("{BASE}variable \"zone\" {{\n type = string\n default = \"a\"\n}}\n"),
            "input \"zone\" added, optional",
            false,
        ),
        ("output added", format!("{BASE}output \"arn\" {{ value = 2 }}\n"), "output \"arn\" added", false),
        ("type widened", edited("type    = map(string)", "type    = map(any)"), "(widened)", false),
        ("default changed", edited("10.0.0.0/16", "10.1.0.0/16"), "default \"10.0.0.0/16\" → \"10.1.0.0/16\"", false),
        (
            "default added",
            edited("variable \"name\" { type = string }", "variable \"name\" {\n type = string\n default = \"x\"\n}"),
            "optional now",
            false,
        ),
        ("required_version widened", edited(">= 1.3", ">= 1.0"), "(widened)", false),
        ("provider constraint widened", edited("~> 5.0", ">= 4.0"), "(widened)", false),
        ("same source, other spelling", edited("hashicorp/aws", "registry.terraform.io/HashiCorp/aws"), "", false),
        ("whitespace in a type", edited("type    = map(string)", "type = map( string )"), "", false),
    ];
    for (what, new, expected, breaking) in cases {
        let changes = judged(BASE, &new);
        if expected.is_empty() {
            assert!(changes.is_empty(), "{what}: {changes:?}");
            continue;
        }
        assert_eq!(changes.len(), 1, "{what}: {changes:?}");
        let (line, judged_breaking) = &changes[0];
        assert!(line.contains(expected), "{what}: {line}");
        assert_eq!(*judged_breaking, breaking, "{what}: {line}");
    }
}

#[test]
fn submodules_are_part_of_the_interface() {
    let old = docs(&[
        ("main.tf", "variable \"a\" {}\n"),
        ("modules/subnet/main.tf", "variable \"cidr\" {}\n"),
        ("modules/route/main.tf", "output \"id\" { value = 1 }\n"),
        ("examples/basic/main.tf", "variable \"gone\" {}\n"),
    ]);
    let new = docs(&[
        ("main.tf", "variable \"a\" {}\n"),
        ("modules/subnet/main.tf", "variable \"cidr\" {}\nvariable \"zone\" {}\n"),
        ("modules/nat/main.tf", "output \"id\" { value = 1 }\n"),
    ]);
    let lines: Vec<(String, bool)> = compare(&old, &new).iter().map(|c| (c.line(), c.breaking.is_some())).collect();
    assert_eq!(
        lines,
        [
            ("submodule modules/route removed: a caller whose source ends in //modules/route finds no module".into(), true),
            ("input \"zone\" of modules/subnet added, required: it has no default: a caller that does not set it fails".into(), true),
            ("submodule modules/nat added".into(), false),
        ],
        "examples are not compared"
    );
}

#[test]
fn hostile_interfaces_are_judged_in_bounded_time() {
    // 10,000 variables, every one removed; duplicates are read once (the first).
    let many: String = (0..10_000).map(|i| format!("variable \"v{i}\" {{}}\n")).collect();
    let dupes = "variable \"x\" {}\nvariable \"x\" { default = 1 }\n";
    let changes = compare(&docs(&[("main.tf", &many)]), &docs(&[("main.tf", dupes)]));
    assert_eq!(changes.len(), 10_001);
    assert_eq!(changes.iter().filter(|c| c.breaking.is_some()).count(), 10_001, "10,000 removed and a required x");
    // A file that does not parse leaves its blocks out, and says so in the docs' warnings;
    // the indexer judges nothing from such docs (index::semver).
    let broken = docs(&[("main.tf", "variable \"x\" {")]);
    assert!(broken.warnings[0].contains("does not parse"), "{:?}", broken.warnings);
    // Types and constraints nobody could judge are shown, never called breaking.
    let odd = compare(
        &docs(&[("main.tf", "variable \"x\" { type = string }\nterraform { required_version = \">= 1.0\" }\n")]),
        &docs(&[(
            "main.tf",
            "variable \"x\" { type = custom(string) }\nterraform { required_version = \">= 1.0-beta\" }\n",
        )]),
    );
    assert!(odd.iter().all(|c| c.breaking.is_none() && c.detail.contains("not judged")), "{odd:?}");
}
