//! The configuration a user copies to call a module version or require a provider: the pages
//! show it, and the MCP server's `get_module_usage` tool hands it to a coding assistant. One
//! text for both, so what an assistant writes is what a person would copy. What a publisher
//! wrote (an input's name and type) goes only into comments, each on one line: a type written
//! over several lines would otherwise end its comment and put the publisher's text into the
//! caller's own configuration.

use std::fmt::Write;

use super::ModuleDir;

/// Required inputs named in a module snippet; more are left to the docs.
const REQUIRED_SHOWN_MAX: usize = 30;
/// Characters of an input's name or type kept in its comment.
const COMMENT_CHARS_MAX: usize = 120;

/// Publisher text as one line of a comment: every run of whitespace or control characters one
/// space, cut at `COMMENT_CHARS_MAX`.
fn one_line(text: &str) -> String {
    // No control, format or invisible character either: this is configuration people copy
    // (Trojan Source would read one way and parse another).
    crate::printed::one_line(text, COMMENT_CHARS_MAX)
}

/// A module block's label from a directory's name: an HCL identifier (letters, digits, `_`; a
/// letter or `_` first), whatever the publisher named the directory, so the block parses as one.
fn label(name: &str) -> String {
    let mut label: String =
        name.chars().take(64).map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    if !label.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        label.insert(0, '_');
    }
    label
}

/// `text` inside an HCL string literal: quotes, backslashes and template openings escaped,
/// what shown text may not hold dropped.
fn hcl_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars().filter(|c| crate::printed::refused(*c).is_none()) {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out.replace("${", "$${").replace("%{", "%%{")
}

/// The `version` constraint a snippet suggests: `~> MAJOR.MINOR` (this minor and later
/// patches and minors of the major); a pre-release exactly, since no range selects one.
pub fn constraint(version: &str) -> String {
    match semver::Version::parse(version) {
        Ok(v) if v.pre.is_empty() => format!("~> {}.{}", v.major, v.minor),
        _ => version.to_string(),
    }
}

/// A `module` block calling `source` at `version`, labelled after the module's name, with the
/// required inputs of `dir` (its root) named in comments with their types.
pub fn module_block(name: &str, source: &str, version: &str, dir: &ModuleDir) -> String {
    let (label, source) = (label(name), hcl_string(source));
    let mut text =
        format!("module \"{label}\" {{\n  source  = \"{source}\"\n  version = \"{}\"\n", constraint(version));
    let required: Vec<_> = dir.inputs.iter().filter(|i| i.required).collect();
    if !required.is_empty() {
        text.push_str("\n  # Required inputs:\n");
        for input in required.iter().take(REQUIRED_SHOWN_MAX) {
            let _ = writeln!(
                text,
                "  # {} = {}",
                one_line(&input.name),
                one_line(input.r#type.as_deref().unwrap_or("any"))
            );
        }
    }
    text.push_str("}\n");
    text
}

/// A `required_providers` entry for `address` (`HOSTNAME/NAMESPACE/TYPE`) at `version`.
pub fn provider_block(r#type: &str, address: &str, version: &str) -> String {
    format!(
        "terraform {{\n  required_providers {{\n    {type} = {{\n      source  = \"{address}\"\n      version = \"{}\"\n    }}\n  }}\n}}\n",
        constraint(version)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::module_docs::Input;

    /// A type written over several lines (a comment inside it, valid HCL) stays in its comment:
    /// the snippet is one `module` block whatever the publisher wrote.
    #[test]
    fn publisher_text_never_leaves_its_comment() {
        let hostile = "object(/*\n}\n\nresource \"terraform_data\" \"pwned\" {}\n# */ {})";
        let dir = ModuleDir {
            inputs: vec![
                Input { name: "name".into(), r#type: Some(hostile.into()), required: true, ..Input::default() },
                Input { name: "a\nb\r\u{2028}c".into(), r#type: None, required: true, ..Input::default() },
            ],
            ..ModuleDir::default()
        };
        let block = module_block("evil", "registry.example.com/acme/evil/aws", "1.2.0", &dir);
        let body: hcl_edit::structure::Body = block.parse().expect("the snippet is HCL");
        assert_eq!(body.into_iter().count(), 1, "one block: {block}");
        assert!(block.contains("  # a b c = any\n"), "{block}");
        assert!(block.lines().filter(|l| l.contains("pwned")).all(|l| l.trim_start().starts_with('#')), "{block}");
    }
}
