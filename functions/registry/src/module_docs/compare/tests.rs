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

/// The constraint checks and type steps the comparisons since the last call made (counted by
/// `constraints` and `types` in tests): the work asserted without a clock.
fn work() -> (u64, u64) {
    (constraints::CHECKS.with(|c| c.replace(0)), types::VISITS.with(|c| c.replace(0)))
}

/// `main.tf` of a version whose Terraform and `aws` constraints are both `constraint`.
fn constrained(constraint: &str) -> String {
    format!(
        "terraform {{\n  required_version = \"{constraint}\"\n  required_providers {{\n    aws = {{ source = \"hashicorp/aws\", version = \"{constraint}\" }}\n  }}\n}}\n"
    )
}

#[test]
fn constraints_past_the_cap_are_not_judged_and_not_evaluated() {
    // The report's 40,000 clauses, and as many as one file kept (1 MiB) holds: `1,1,…`.
    let clauses = |n: usize, major: usize| (0..n).map(|i| format!("!= {major}.{i}.0")).collect::<Vec<_>>().join(", ");
    let fill = crate::archive::KEPT_FILE_BYTES - constrained("").len();
    let widest = vec!["1"; fill / 4].join(",");
    assert!(constrained(&widest).len() <= crate::archive::KEPT_FILE_BYTES);
    for (old, new) in [(clauses(40_000, 1), clauses(40_000, 2)), (widest.clone(), widest.replace('1', "2"))] {
        let (old, new) = (constrained(&old), constrained(&new));
        work();
        let changes = compare(&docs(&[("main.tf", &old)]), &docs(&[("main.tf", &new)]));
        assert_eq!(work(), (0, 0), "read up to the cap, never evaluated");
        assert_eq!(changes.len(), 2, "{changes:?}");
        for c in &changes {
            assert!(c.detail.ends_with("(not judged: more than 1000 clauses, the most this registry compares)"));
            assert!(c.detail.chars().count() < 3 * SHOWN_CHARS, "the texts quoted are clipped: {}", c.detail);
            assert_eq!(c.breaking, None, "never called breaking");
        }
    }
}

#[test]
fn constraints_at_the_cap_compare_in_n_log_n() {
    // Every release a clause names is a candidate, each once, and each candidate is checked
    // with a lookup, not against every clause: at most two checks a candidate.
    let clauses = |major: usize| (0..MAX_CLAUSES).map(|i| format!("!= {major}.{i}.0")).collect::<Vec<_>>().join(", ");
    let (old, new) = (constrained(&clauses(1)), constrained(&clauses(2)));
    work();
    let changes = compare(&docs(&[("main.tf", &old)]), &docs(&[("main.tf", &new)]));
    let (checks, _) = work();
    let candidates = 2 * (2 * MAX_CLAUSES) + 1;
    assert!(checks <= 2 * 2 * candidates as u64, "{checks} checks for two comparisons of {candidates} candidates");
    assert_eq!(changes.len(), 2, "{changes:?}");
    assert!(changes.iter().all(|c| c.breaking.as_deref().is_some_and(|b| b.contains(" 2.0.0 was allowed"))));
    // The same releases named twice over are candidates once.
    let twice = constrained(&vec![">= 1.0, < 2.0, != 1.5.0"; MAX_CLAUSES / 3].join(", "));
    compare(&docs(&[("main.tf", &twice)]), &docs(&[("main.tf", &constrained(">= 1.0, < 3.0"))]));
    assert!(work().0 <= 2 * 2 * 7, "three releases and the ones after them, and 0.0.0");
}

#[test]
fn types_past_the_cap_are_not_judged_and_not_evaluated() {
    // In `.tf.json` a type is a string, parsed only when compared: the report's 40,000
    // attributes, and as many as a file kept (1 MiB) holds.
    let object = |n: usize, t: &str| {
        let attributes: Vec<String> = (0..n).map(|i| format!("a{i}={t}")).collect();
        format!("{{\"variable\": {{\"x\": {{\"type\": \"object({{{}}})\"}}}}}}", attributes.join(","))
    };
    let widest = (crate::archive::KEPT_FILE_BYTES - object(0, "").len()) / "a99999=number,".len();
    for n in [40_000, widest] {
        let (old, new) = (object(n, "string"), object(n, "number"));
        assert!(new.len() <= crate::archive::KEPT_FILE_BYTES, "{} bytes", new.len());
        work();
        let changes = compare(&docs(&[("main.tf.json", &old)]), &docs(&[("main.tf.json", &new)]));
        assert_eq!(work(), (0, 0), "never compared");
        assert_eq!(changes.len(), 1, "{changes:?}");
        let detail = &changes[0].detail;
        assert!(detail.ends_with("(not judged: a type of more than 1000 parts, the most this registry compares)"));
        assert!(detail.chars().count() < 3 * SHOWN_CHARS, "the texts quoted are clipped: {detail}");
        assert_eq!(changes[0].breaking, None);
    }
    // The largest type compared: the object and its attributes are the cap.
    let (old, new) = (object(MAX_TYPE_PARTS - 1, "string"), object(MAX_TYPE_PARTS - 1, "number"));
    let changes = compare(&docs(&[("main.tf.json", &old)]), &docs(&[("main.tf.json", &new)]));
    assert!(changes[0].breaking.is_some(), "{changes:?}");
}

#[test]
fn types_compare_in_the_size_of_the_old_type() {
    // One element type met by every element of a tuple: each old part is paired with one new
    // part, and an attribute is found by name, not by a scan of the new type's.
    let attributes: Vec<String> = (0..MAX_TYPE_PARTS / 2 - 2).map(|i| format!("a{i} = optional(string)")).collect();
    let new = format!("variable \"x\" {{ type = list(object({{ {} }})) }}\n", attributes.join(", "));
    let elements = vec!["object({ a0 = string })"; MAX_TYPE_PARTS / 4 - 1].join(", ");
    let old = format!("variable \"x\" {{ type = tuple([{elements}]) }}\n");
    work();
    let changes = compare(&docs(&[("main.tf", &old)]), &docs(&[("main.tf", &new)]));
    let (_, steps) = work();
    assert!(steps <= MAX_TYPE_PARTS as u64, "{steps} steps for an old type of {} parts", MAX_TYPE_PARTS - 3);
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert!(changes[0].detail.ends_with("(widened)"), "{changes:?}");
}

#[test]
fn a_comparison_keeps_a_bounded_list_breaking_first() {
    // 10,000 inputs removed (breaking) and 10,000 outputs added: 1,000 kept, the rest counted.
    let old: String = (0..10_000).map(|i| format!("variable \"v{i}\" {{}}\n")).collect();
    let new: String = (0..10_000).map(|i| format!("output \"o{i}\" {{ value = 1 }}\n")).collect();
    let (old, new) = (docs(&[("main.tf", &old)]), docs(&[("main.tf", &new)]));
    let kept = Comparison::new("1.0.0", &old, &new);
    assert_eq!((kept.changes.len(), kept.more, kept.more_breaking), (CHANGES_KEPT, 19_000, 9_000));
    assert_eq!((kept.total(), kept.breaking()), (20_000, 10_000));
    assert!(kept.changes.iter().all(|c| c.breaking.is_some()), "breaking ones first");
    assert_eq!(kept.changes[0].name, "v0", "in the order compared");
    assert_eq!((kept.from.as_str(), kept.sha256.as_str()), ("1.0.0", "00"));
    let stored: Comparison = serde_json::from_slice(&serde_json::to_vec(&kept).unwrap()).unwrap();
    assert_eq!(stored, kept);
    let compared = Compared { since: Some("1.0.0".into()), with: vec![kept] };
    assert!(compared.from("1.0.0", "00").is_some());
    assert!(compared.from("1.0.0", "other bytes").is_none(), "another archive of 1.0.0 was not compared");
}
