//! What each MCP tool returns, as pure functions of what `routes::mcp` read: a text for the
//! assistant to read (Markdown, the facts it needs to write correct configuration) and the
//! same facts as `structuredContent` JSON for a client that reads fields. Each is bounded: a
//! README is cut, lists stop at a count and say how many more there were, so no answer
//! outgrows an assistant's context however large a module is.

use std::fmt::Write;

use serde_json::{Value, json};

use crate::address::{ModuleAddress, ProviderAddress};
use crate::catalog::{ModuleEntry, ProviderEntry};
use crate::manifest::{ModuleManifest, ModuleVersion, ProviderVersion, newest_first};
use crate::module_docs::compare::{COMPARED_BEFORE, Comparison};
use crate::module_docs::snippet;
use crate::module_docs::{ModuleDir, ModuleDocs};

/// Characters of a README handed over; the rest is cut (the page and the API have it whole).
pub const README_CHARS_MAX: usize = 20_000;
/// Inputs or outputs listed per directory.
const ITEMS_MAX: usize = 200;
/// Versions listed.
const VERSIONS_MAX: usize = 100;
/// Changes listed in a comparison.
const CHANGES_MAX: usize = 200;
/// Characters of any one description or default shown.
const FIELD_CHARS_MAX: usize = 1_000;

/// A tool's answer: `text` for the assistant, `structured` for a client that reads fields.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// Markdown.
    pub text: String,
    /// The same facts as JSON.
    pub structured: Value,
}

impl Answer {
    /// The `tools/call` result.
    pub fn result(self) -> Value {
        json!({"content": [{"type": "text", "text": self.text}], "structuredContent": self.structured, "isError": false})
    }
}

/// A tool's failure the assistant should read (a module it may not see, a bad argument): a
/// result with `isError`, so it can correct its call, rather than a protocol error.
pub fn failed(message: &str) -> Value {
    json!({"content": [{"type": "text", "text": message}], "isError": true})
}

fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// `search_modules`: a page of the catalog, with each module's downloads.
pub fn modules_found(host: &str, total: usize, offset: usize, page: &[(&ModuleEntry, u64)]) -> Answer {
    let mut text = format!("{total} modules found");
    if page.len() < total {
        let _ = write!(text, " (showing {} from {})", page.len(), offset + 1);
    }
    text.push_str(".\n");
    let mut modules = Vec::new();
    for (m, downloads) in page {
        let address = format!("{}/{}/{}", m.namespace, m.name, m.system);
        let description = clip(m.description.as_deref().unwrap_or_default(), FIELD_CHARS_MAX);
        let _ = writeln!(
            text,
            "\n- **{address}** {latest} (source \"{host}/{address}\"; {n} versions; {downloads} downloads){sep}{description}",
            latest = m.latest,
            n = m.versions,
            sep = if description.is_empty() { "" } else { ": " },
        );
        modules.push(json!({
            "module": address, "latest": m.latest, "source": format!("{host}/{address}"),
            "description": description, "versions": m.versions, "downloads": downloads,
            "published_at": m.published_at,
        }));
    }
    if total > offset + page.len() {
        let _ = writeln!(text, "\nMore: call again with offset {}.", offset + page.len());
    }
    Answer { text, structured: json!({"total": total, "offset": offset, "modules": modules}) }
}

/// `get_module_details`: a version's interface, README and standing.
pub fn module_details(
    host: &str,
    module: &ModuleAddress,
    entry: &ModuleVersion,
    manifest: &ModuleManifest,
    docs: Option<&ModuleDocs>,
) -> Answer {
    let latest = crate::catalog::latest(manifest.versions.iter().map(|v| v.version.as_str())).unwrap_or_default();
    let mut text = format!("# {module} {}\n\nsource = \"{host}/{module}\"", entry.version);
    if latest != entry.version {
        let _ = write!(text, " (the latest version is {latest})");
    }
    text.push('\n');
    standing(&mut text, entry);
    let mut structured = json!({
        "module": module.to_string(), "version": entry.version, "latest": latest,
        "source": format!("{host}/{module}"), "published_at": entry.published_at,
        "deprecation": entry.deprecation.as_ref().map(|d| json!({"reason": d.reason, "replacement": d.replacement})),
    });
    let Some(docs) = docs else {
        text.push_str("\nThe documentation of this version has not been read yet.\n");
        return Answer { text, structured };
    };
    directory(&mut text, &docs.root, "Interface");
    structured["root"] = dir_json(&docs.root);
    for (title, list) in [("Submodule", &docs.submodules), ("Example", &docs.examples)] {
        for dir in list.iter().take(20) {
            let _ = writeln!(text, "\n## {title} {}\n\nsource = \"{host}/{module}//{}\"", dir.path, dir.path);
            directory(&mut text, dir, "");
        }
    }
    structured["submodules"] = docs.submodules.iter().map(dir_json).collect();
    structured["examples"] = docs.examples.iter().map(|d| json!({"path": d.path})).collect();
    if let Some(readme) = &docs.root.readme {
        let _ = write!(text, "\n## README\n\n{}\n", clip(readme, README_CHARS_MAX));
        structured["readme"] = json!(clip(readme, README_CHARS_MAX));
    }
    if !docs.warnings.is_empty() {
        structured["warnings"] = json!(docs.warnings.iter().take(20).collect::<Vec<_>>());
    }
    Answer { text, structured }
}

/// A version's deprecation and judgment, one line each.
fn standing(text: &mut String, entry: &ModuleVersion) {
    if let Some(d) = &entry.deprecation {
        let _ = write!(text, "\n**Deprecated**: {}", clip(&d.reason, FIELD_CHARS_MAX));
        if let Some(r) = &d.replacement {
            let _ = write!(text, " Use instead: {}.", clip(r, FIELD_CHARS_MAX));
        }
        text.push('\n');
    }
    if let Some(j) = &entry.judged
        && let Some(against) = &j.against
    {
        let _ = writeln!(text, "\nJudged at publish against {against}: {} breaking changes.", j.breaking_count());
    }
}

/// A directory's interface as text: inputs (required first), outputs, requirements.
fn directory(text: &mut String, dir: &ModuleDir, heading: &str) {
    if !heading.is_empty() {
        let _ = writeln!(text, "\n## {heading}");
    }
    if let Some(v) = &dir.required_version {
        let _ = writeln!(text, "\nTerraform: {v}");
    }
    if !dir.provider_dependencies.is_empty() {
        text.push_str("\nProviders:\n");
        for p in dir.provider_dependencies.iter().take(ITEMS_MAX) {
            let _ = writeln!(text, "- {} = {} {}", p.name, p.source, p.version);
        }
    }
    let mut inputs: Vec<_> = dir.inputs.iter().collect();
    inputs.sort_by_key(|i| !i.required);
    if !inputs.is_empty() {
        text.push_str("\nInputs:\n");
        for i in inputs.iter().take(ITEMS_MAX) {
            let _ = write!(text, "- {} ({})", i.name, i.r#type.as_deref().unwrap_or("any"));
            if i.required {
                text.push_str(", required");
            } else if let Some(d) = &i.default {
                let _ = write!(text, ", default {}", clip(d, FIELD_CHARS_MAX));
            }
            if i.sensitive {
                text.push_str(", sensitive");
            }
            if let Some(d) = i.description.as_deref().filter(|d| !d.is_empty()) {
                let _ = write!(text, ": {}", clip(d, FIELD_CHARS_MAX));
            }
            text.push('\n');
        }
        more(text, dir.inputs.len(), "inputs");
    }
    if !dir.outputs.is_empty() {
        text.push_str("\nOutputs:\n");
        for o in dir.outputs.iter().take(ITEMS_MAX) {
            let _ = write!(text, "- {}", o.name);
            if let Some(d) = o.description.as_deref().filter(|d| !d.is_empty()) {
                let _ = write!(text, ": {}", clip(d, FIELD_CHARS_MAX));
            }
            text.push('\n');
        }
        more(text, dir.outputs.len(), "outputs");
    }
}

fn more(text: &mut String, count: usize, what: &str) {
    if count > ITEMS_MAX {
        let _ = writeln!(text, "- … {} more {what} (the registry's API lists all)", count - ITEMS_MAX);
    }
}

/// A directory's interface as JSON: the stored docs' own fields, bounded.
fn dir_json(dir: &ModuleDir) -> Value {
    json!({
        "path": dir.path,
        "inputs": dir.inputs.iter().take(ITEMS_MAX).collect::<Vec<_>>(),
        "outputs": dir.outputs.iter().take(ITEMS_MAX).collect::<Vec<_>>(),
        "provider_dependencies": dir.provider_dependencies.iter().take(ITEMS_MAX).collect::<Vec<_>>(),
        "required_version": dir.required_version,
    })
}

/// `list_module_versions`: newest first, each with its standing.
pub fn module_versions(module: &ModuleAddress, manifest: &ModuleManifest) -> Answer {
    let mut versions: Vec<&ModuleVersion> = manifest.versions.iter().collect();
    versions.sort_by(|a, b| newest_first(&a.version, &b.version));
    let latest = crate::catalog::latest(versions.iter().map(|v| v.version.as_str())).unwrap_or_default();
    let mut text = format!("{module}: {} versions, latest {latest}.\n\n", versions.len());
    let mut listed = Vec::new();
    for v in versions.iter().take(VERSIONS_MAX) {
        let _ = write!(text, "- {}", v.version);
        if let Some(at) = &v.published_at {
            let _ = write!(text, ", published {}", at.get(..10).unwrap_or(at));
        }
        let breaking = v.judged.as_ref().filter(|j| j.against.is_some()).map(|j| j.breaking_count());
        if let (Some(n), Some(j)) = (breaking, &v.judged) {
            let _ = write!(text, ", {n} breaking changes against {}", j.against.as_deref().unwrap_or_default());
        }
        if let Some(d) = &v.deprecation {
            let _ = write!(text, ", DEPRECATED: {}", clip(&d.reason, FIELD_CHARS_MAX));
            if let Some(r) = &d.replacement {
                let _ = write!(text, " (use {})", clip(r, FIELD_CHARS_MAX));
            }
        }
        text.push('\n');
        listed.push(json!({
            "version": v.version, "published_at": v.published_at,
            "breaking_changes": breaking, "judged_against": v.judged.as_ref().and_then(|j| j.against.clone()),
            "deprecation": v.deprecation.as_ref().map(|d| json!({"reason": d.reason, "replacement": d.replacement})),
        }));
    }
    if versions.len() > VERSIONS_MAX {
        let _ = writeln!(text, "- … {} older versions", versions.len() - VERSIONS_MAX);
    }
    Answer {
        text,
        structured: json!({"module": module.to_string(), "latest": latest, "count": versions.len(), "versions": listed}),
    }
}

/// `compare_module_versions`: the changes from `from` to `to` as compared at `to`'s publish,
/// breaking ones first; or why there is no comparison.
pub fn comparison(module: &ModuleAddress, from: &str, to: &ModuleVersion, compared: Option<&Comparison>) -> Answer {
    let mut text = format!("# {module}: upgrading from {from} to {}\n", to.version);
    standing(&mut text, to);
    let Some(c) = compared else {
        let why = if from == to.version {
            "The same version: nothing changes.".to_string()
        } else {
            format!(
                "Not compared: when {} was published it was compared with the {COMPARED_BEFORE} versions before it; {from} \
                 was not one of them, no longer serves the bytes compared, or the documentation of one of the two was not \
                 read. Compare the two with get_module_details.",
                to.version
            )
        };
        let _ = writeln!(text, "\n{why}");
        let structured =
            json!({"module": module.to_string(), "from": from, "to": to.version, "compared": false, "note": why});
        return Answer { text, structured };
    };
    let mut changes: Vec<_> = c.changes.iter().collect();
    changes.sort_by_key(|change| change.breaking.is_none());
    let breaking = changes.iter().filter(|change| change.breaking.is_some()).count() as u64 + c.more_breaking;
    let total = changes.len() as u64 + c.more;
    let _ = writeln!(
        text,
        "\n{total} changes, {breaking} breaking{}.\n",
        if breaking > 0 { ": a caller written for the old version must change before it upgrades" } else { "" }
    );
    for change in changes.iter().take(CHANGES_MAX) {
        let _ = writeln!(text, "- {}{}", if change.breaking.is_some() { "BREAKING: " } else { "" }, change.line());
    }
    let shown = changes.len().min(CHANGES_MAX) as u64;
    if total > shown {
        let _ = writeln!(text, "- … {} more changes", total - shown);
    }
    let listed: Vec<_> = changes.iter().take(CHANGES_MAX).collect();
    Answer {
        text,
        structured: json!({
            "module": module.to_string(), "from": from, "to": to.version, "compared": true,
            "changes": total, "breaking": breaking, "list": listed,
        }),
    }
}

/// `get_module_usage`: the block to copy.
pub fn module_usage(host: &str, module: &ModuleAddress, entry: &ModuleVersion, docs: Option<&ModuleDocs>) -> Answer {
    let empty = ModuleDir::default();
    let root = docs.map_or(&empty, |d| &d.root);
    let block = snippet::module_block(&module.name, &format!("{host}/{module}"), &entry.version, root);
    let mut text = format!("```hcl\n{block}```\n");
    standing(&mut text, entry);
    Answer {
        text,
        structured: json!({"module": module.to_string(), "version": entry.version, "snippet": block,
            "deprecated": entry.deprecation.is_some()}),
    }
}

/// `search_providers`: the providers found.
pub fn providers_found(found: &[&ProviderEntry], total: usize) -> Answer {
    let mut text = format!("{total} providers found.\n\n");
    let mut listed = Vec::new();
    for p in found {
        let through = if p.registry { "providers.v1 and the network mirror" } else { "the network mirror" };
        let _ =
            writeln!(text, "- **{}** {} ({} versions; installed through {through})", p.address(), p.latest, p.versions);
        listed.push(
            json!({"provider": p.address(), "latest": p.latest, "versions": p.versions, "providers_v1": p.registry}),
        );
    }
    if total > found.len() {
        let _ = writeln!(text, "- … {} more: narrow the words", total - found.len());
    }
    Answer { text, structured: json!({"total": total, "providers": listed}) }
}

/// `get_provider_details`: the versions, and one version's platforms, key and snippet.
pub fn provider_details(
    provider: &ProviderAddress,
    version: &str,
    versions: &[&str],
    document: &ProviderVersion,
) -> Answer {
    let block = snippet::provider_block(&provider.r#type, &provider.to_string(), version);
    let platforms: Vec<&str> = document.archives.keys().map(String::as_str).collect();
    let mut text = format!("# {provider} {version}\n\nPlatforms: {}\n", platforms.join(", "));
    if let Some(release) = &document.release {
        let _ =
            writeln!(text, "Signed by key {}; protocols {}.", release.signing_key.key_id, release.protocols.join(", "));
    }
    if let Some(d) = &document.deprecation {
        let _ = writeln!(text, "**Deprecated**: {}", clip(&d.reason, FIELD_CHARS_MAX));
    }
    let _ = write!(text, "\n```hcl\n{block}```\n\nVersions, newest first: ");
    let shown: Vec<&str> = versions.iter().take(VERSIONS_MAX).copied().collect();
    text.push_str(&shown.join(", "));
    if versions.len() > VERSIONS_MAX {
        let _ = write!(text, ", … {} older", versions.len() - VERSIONS_MAX);
    }
    text.push('\n');
    Answer {
        text,
        structured: json!({
            "provider": provider.to_string(), "version": version, "platforms": platforms, "snippet": block,
            "signing_key": document.release.as_ref().map(|r| r.signing_key.key_id.clone()),
            "deprecation": document.deprecation.as_ref().map(|d| json!({"reason": d.reason, "replacement": d.replacement})),
            "versions": shown,
        }),
    }
}
