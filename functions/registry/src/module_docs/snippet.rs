//! The configuration a user copies to call a module version or require a provider: the pages
//! show it, and the MCP server's `get_usage` tool hands it to a coding assistant. One text
//! for both, so what an assistant writes is what a person would copy.

use std::fmt::Write;

use super::ModuleDir;

/// Required inputs named in a module snippet; more are left to the docs.
const REQUIRED_SHOWN_MAX: usize = 30;

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
    let label = name.replace('-', "_");
    let mut text =
        format!("module \"{label}\" {{\n  source  = \"{source}\"\n  version = \"{}\"\n", constraint(version));
    let required: Vec<_> = dir.inputs.iter().filter(|i| i.required).collect();
    if !required.is_empty() {
        text.push_str("\n  # Required inputs:\n");
        for input in required.iter().take(REQUIRED_SHOWN_MAX) {
            let _ = writeln!(text, "  # {} = {}", input.name, input.r#type.as_deref().unwrap_or("any"));
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
