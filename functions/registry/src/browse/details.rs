//! A version's details (`GET /v1/modules/NAMESPACE/NAME/SYSTEM[/VERSION]`), within
//! `DETAILS_MAX` bytes as serialised, whatever the module holds: one budget every part draws
//! from (`bounded`). First what has bounds of its own (the module object, the versions, the
//! standing, the downloads, the warnings, the README cut to `README_CHARS`), then the changes
//! since the version before it, the root's interface, each submodule and each example, item by
//! item, while the budget lasts; `truncated` says whether it ran out. Every publisher string is
//! cut: names, types, defaults and sources to one line (`printed::one_line`), descriptions and
//! READMEs with their lines kept but nothing invisible (`printed::kept_lines`).

use serde_json::{Value, json};

use crate::address::ModuleAddress;
use crate::bounded::{self, Budget};
use crate::manifest::{ModuleManifest, ModuleVersion};
use crate::module_docs::compare::Comparison;
use crate::module_docs::{ModuleDir, ModuleDocs};
use crate::printed::{kept_lines, one_line};

/// Bytes of a details answer, as serialised.
pub const DETAILS_MAX: usize = 1 << 20;
/// Characters of a README shown (the page shows what its own 100 KB leaves).
pub const README_CHARS: usize = 64 * 1024;
/// Characters of a description.
pub const DESCRIPTION_CHARS: usize = 2_000;
/// Characters of a type, a default, a source or a constraint.
pub const VALUE_CHARS: usize = 1_000;
/// Characters of a name or a path.
pub const NAME_CHARS: usize = 256;
/// Versions listed, newest first (`versions_count` says how many there are).
pub const VERSIONS_MAX: usize = 5_000;
/// Warnings listed.
const WARNINGS_MAX: usize = 100;
/// Providers the root requires listed (`providers_count` says how many).
const PROVIDERS_MAX: usize = 200;
/// Room kept for the fixed keys no part is charged for (`root`, `changes`, `truncated`, …).
const SLACK: usize = 512;

/// A version's details: the module object, `root`, `submodules`, `examples`, `providers`,
/// `versions` (newest first), the docs' `warnings`, its standing (`deprecation`, `judged`), the
/// `changes` since the version before it as compared at publish, its downloads (`usage`;
/// callers only when `usage` holds them), and `truncated`.
pub fn details(
    module: &ModuleAddress,
    entry: &ModuleVersion,
    manifest: &ModuleManifest,
    docs: Option<&ModuleDocs>,
    changes: Option<&Comparison>,
    usage: &crate::usage::Shown,
) -> Value {
    let mut body = head(module, entry, manifest, docs);
    add_downloads(&mut body, usage);
    let readme = docs.and_then(|d| d.root.readme.as_deref()).map(|r| kept_lines(r, README_CHARS));
    let mut budget = Budget::new(DETAILS_MAX - SLACK);
    // What has bounds of its own, and the README (its `"readme": ""` is in the root's skeleton).
    budget.take(bounded::json_len(&body) + readme.as_deref().map_or(0, |r| bounded::string_len(r) - 2));
    body["changes"] = changes_since(changes, &mut budget);
    let empty = ModuleDir::default();
    let root = docs.map_or(&empty, |d| &d.root);
    // The root's skeleton is small and bounded: shown even once the budget has run out.
    let mut shown = directory(root, &module.name, &mut budget).unwrap_or_else(|| json!({"path": "", "readme": ""}));
    shown["readme"] = json!(readme.unwrap_or_default());
    body["root"] = shown;
    for (field, list) in [("submodules", docs.map(|d| &d.submodules)), ("examples", docs.map(|d| &d.examples))] {
        let mut dirs = Vec::new();
        for dir in list.into_iter().flatten() {
            // The directory (its `"readme": ""` included) and the comma before the next.
            let Some(mut shown) = directory(dir, "", &mut budget) else { break };
            let readme = dir.readme.as_deref().map(|r| kept_lines(r, README_CHARS)).unwrap_or_default();
            if !readme.is_empty() && budget.take(bounded::string_len(&readme) - 2) {
                shown["readme"] = json!(readme);
            }
            dirs.push(shown);
        }
        body[field] = dirs.into();
    }
    body["truncated"] = json!(budget.full());
    within_bound(body)
}

/// `body`, or, should what has bounds of its own outgrow `DETAILS_MAX` together (thousands of
/// long versions, every warning at its longest, a README of four-byte letters), the same with
/// fewer versions, warnings and providers, then without them: the bound holds for every answer.
fn within_bound(mut body: Value) -> Value {
    for (versions, warnings, providers) in [(500, 20, 20), (0, 0, 0)] {
        if bounded::json_len(&body) <= DETAILS_MAX {
            return body;
        }
        body["truncated"] = json!(true);
        if let Some(listed) = body["versions"].as_array_mut() {
            listed.truncate(versions);
        }
        if let Some(listed) = body["warnings"].as_array_mut() {
            listed.truncate(warnings);
        }
        if let Some(listed) = body["providers"].as_array_mut() {
            listed.truncate(providers);
        }
    }
    if bounded::json_len(&body) > DETAILS_MAX {
        for field in ["submodules", "examples", "changes"] {
            body[field] = Value::Null;
        }
        body["root"] = json!({"path": "", "readme": ""});
    }
    body
}

/// What has bounds of its own: the module object, providers, versions, standing, warnings.
fn head(module: &ModuleAddress, entry: &ModuleVersion, manifest: &ModuleManifest, docs: Option<&ModuleDocs>) -> Value {
    let description = docs
        .and_then(|d| d.root.readme.as_deref())
        .and_then(crate::module_docs::summary)
        .map(|s| one_line(&s, crate::module_docs::SUMMARY_MAX_CHARS));
    let mut body = super::module_object(
        &module.namespace,
        &module.name,
        &module.system,
        &entry.version,
        description.as_deref(),
        entry.published_at.as_deref(),
    );
    let root = docs.map(|d| &d.root);
    let mut providers: Vec<String> =
        root.into_iter().flat_map(|r| &r.provider_dependencies).map(|p| one_line(&p.name, NAME_CHARS)).collect();
    providers.sort_unstable();
    providers.dedup();
    if providers.is_empty() {
        providers.push(module.system.clone());
    }
    let providers_count = providers.len();
    providers.truncate(PROVIDERS_MAX);
    // Newest first, as the manifest keeps them.
    let versions: Vec<&str> = manifest.versions.iter().map(|v| v.version.as_str()).collect();
    let mut warnings: Vec<String> = docs
        .map(|d| d.warnings.iter().take(WARNINGS_MAX).map(|w| one_line(w, DESCRIPTION_CHARS)).collect())
        .unwrap_or_default();
    if docs.is_none() {
        warnings
            .push("the documentation of this version has not been read yet (the next indexing pass reads it)".into());
    }
    body["providers"] = json!(providers);
    body["providers_count"] = json!(providers_count);
    body["versions_count"] = json!(versions.len());
    body["versions"] = json!(versions.into_iter().take(VERSIONS_MAX).collect::<Vec<_>>());
    body["warnings"] = json!(warnings);
    body["deprecation"] = match &entry.deprecation {
        Some(d) => json!({"reason": one_line(&d.reason, DESCRIPTION_CHARS),
            "replacement": d.replacement.as_deref().map(|r| one_line(r, NAME_CHARS))}),
        None => Value::Null,
    };
    body["provenance"] = entry.provenance.as_ref().map_or(Value::Null, crate::manifest::Provenance::shown);
    body["judged"] = match &entry.judged {
        Some(j) => json!({
            "against": j.against, "more": j.more,
            "breaking": j.breaking.iter().map(|b| one_line(b, DESCRIPTION_CHARS)).collect::<Vec<_>>(),
            "note": j.note.as_deref().map(|n| one_line(n, DESCRIPTION_CHARS)),
        }),
        None => Value::Null,
    };
    body
}

/// A version's downloads in its details: `downloads` (every version's, as the public
/// registry's module object counts them) and `usage` (this version's and the module's over
/// the windows kept; `callers` only when shown).
fn add_downloads(body: &mut Value, usage: &crate::usage::Shown) {
    body["downloads"] = json!(usage.module.total);
    let mut shown = json!({"version": usage.version, "module": usage.module});
    if let Some(callers) = &usage.callers {
        shown["callers"] = json!(callers);
        shown["callers_days"] = json!(usage.caller_days);
    }
    body["usage"] = shown;
}

/// The changes since the version before it, as compared at publish (`since` and the list,
/// each change with `breaking` saying why when it is; past `CHANGES_KEPT`, `more` and
/// `more_breaking` count those not kept; `truncated` says whether the budget cut the list).
fn changes_since(changes: Option<&Comparison>, budget: &mut Budget) -> Value {
    let Some(c) = changes else { return Value::Null };
    let mut listed = Vec::new();
    for change in &c.changes {
        let mut item = serde_json::to_value(change).unwrap_or(Value::Null);
        if !change.path.is_empty() {
            item["path"] = json!(one_line(&change.path, NAME_CHARS));
        }
        item["name"] = json!(one_line(&change.name, NAME_CHARS));
        item["detail"] = json!(one_line(&change.detail, DESCRIPTION_CHARS));
        if let Some(breaking) = &change.breaking {
            item["breaking"] = json!(one_line(breaking, DESCRIPTION_CHARS));
        }
        if !budget.take(bounded::json_len(&item) + 1) {
            break;
        }
        listed.push(item);
    }
    let mut out = json!({"since": c.from, "changes": listed});
    if c.more > 0 {
        out["more"] = json!(c.more);
        out["more_breaking"] = json!(c.more_breaking);
    }
    out
}

/// One directory (root, submodule, example) in the public registry's shape, with the
/// registry's additions (`type`, `required`, `sensitive`, `required_version`), itself charged,
/// then each list item by item while `budget` lasts (`inputs_count` and the others say how many
/// there are). `None` when not even the directory fits.
fn directory(dir: &ModuleDir, root_name: &str, budget: &mut Budget) -> Option<Value> {
    let name = if dir.path.is_empty() { root_name } else { dir.path.rsplit('/').next().unwrap_or_default() };
    let value = |t: &Option<String>| one_line(t.as_deref().unwrap_or_default(), VALUE_CHARS);
    let mut out = json!({
        "path": one_line(&dir.path, NAME_CHARS),
        "name": one_line(name, NAME_CHARS),
        "empty": dir.inputs.is_empty() && dir.outputs.is_empty() && dir.resources.is_empty(),
        "inputs": [], "outputs": [], "dependencies": [], "provider_dependencies": [], "resources": [],
        "inputs_count": dir.inputs.len(),
        "outputs_count": dir.outputs.len(),
        "dependencies_count": dir.dependencies.len(),
        "resources_count": dir.resources.len(),
        "required_version": value(&dir.required_version),
        "readme": "",
    });
    if !budget.take(bounded::json_len(&out) + 1) {
        return None;
    }
    out["inputs"] = kept(
        budget,
        dir.inputs.iter().map(|i| {
            json!({
                "name": one_line(&i.name, NAME_CHARS),
                "type": value(&i.r#type),
                "description": kept_lines(i.description.as_deref().unwrap_or_default(), DESCRIPTION_CHARS),
                "default": value(&i.default),
                "required": i.required,
                "sensitive": i.sensitive,
            })
        }),
    );
    out["outputs"] = kept(
        budget,
        dir.outputs.iter().map(|o| {
            json!({"name": one_line(&o.name, NAME_CHARS),
                "description": kept_lines(o.description.as_deref().unwrap_or_default(), DESCRIPTION_CHARS),
                "sensitive": o.sensitive})
        }),
    );
    out["dependencies"] = kept(
        budget,
        dir.dependencies.iter().map(|d| {
            json!({"name": one_line(&d.name, NAME_CHARS), "source": one_line(&d.source, VALUE_CHARS),
                "version": one_line(&d.version, VALUE_CHARS)})
        }),
    );
    out["provider_dependencies"] = kept(
        budget,
        dir.provider_dependencies.iter().map(|p| {
            json!({"name": one_line(&p.name, NAME_CHARS), "namespace": one_line(&p.namespace, NAME_CHARS),
                "source": one_line(&p.source, VALUE_CHARS), "version": one_line(&p.version, VALUE_CHARS)})
        }),
    );
    out["resources"] = kept(
        budget,
        dir.resources
            .iter()
            .map(|r| json!({"name": one_line(&r.name, NAME_CHARS), "type": one_line(&r.r#type, NAME_CHARS)})),
    );
    Some(out)
}

/// The items of `items` that fit in `budget`, in order, made one at a time.
fn kept(budget: &mut Budget, items: impl Iterator<Item = Value>) -> Value {
    let mut out = Vec::new();
    for item in items {
        if !budget.take(bounded::json_len(&item) + 1) {
            break;
        }
        out.push(item);
    }
    out.into()
}
