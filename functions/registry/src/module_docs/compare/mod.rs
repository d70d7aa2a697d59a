//! How two versions of a module differ for a caller, and which differences break one: the
//! interface of the root and of each submodule (inputs with their type, default and
//! nullability; outputs; `required_version`; required providers and their constraints), each
//! change with a line saying what it is and, when a caller written for the old version fails
//! with the new one, why. Examples are not part of the interface.
//!
//! Pure, and bounded by the size of the two interfaces: items are matched by name in sorted
//! maps (n log n), a type or constraint compares in n log n of its parts (`types`,
//! `constraints`), one past `MAX_TYPE_PARTS` or `MAX_CLAUSES` is not compared at all ("not
//! judged"), and a change shows at most `SHOWN_CHARS` of each text it quotes. The indexer
//! compares a version once, at publish, and stores the `Comparison`s with its docs: nothing
//! here runs per request.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Input, ModuleDir, ModuleDocs, Output, ProviderDependency};

mod constraints;
mod types;

pub use constraints::{Constraint, MAX_CLAUSES};
pub use types::{MAX_TYPE_PARTS, Type};

/// Changes one comparison keeps: far more than a page shows (200). Past it, breaking ones are
/// kept first and the rest only counted, so a hostile interface stores a bounded list.
pub const CHANGES_KEPT: usize = 1_000;

/// Versions below a new one that it is compared with at publish, newest first: its page links
/// to the upgrade page from each.
pub const COMPARED_BEFORE: usize = 10;

/// Characters of a type, default or constraint a change quotes (its `detail`); the docs keep
/// the whole text.
pub const SHOWN_CHARS: usize = 120;

/// What a change is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Subject {
    /// A `variable`.
    Input,
    /// An `output`.
    Output,
    /// `terraform { required_version }`.
    RequiredVersion,
    /// An entry of `required_providers`.
    Provider,
    /// A directory under `modules/`.
    Submodule,
}

/// Added, removed or changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// In the new version only.
    Added,
    /// In the old version only.
    Removed,
    /// In both, different.
    Changed,
}

/// One difference between two versions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// `""` for the module itself, `modules/NAME` for a submodule.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
    /// What it is about.
    pub subject: Subject,
    /// The input's, output's or provider's name, the submodule's path; `""` for `required_version`.
    pub name: String,
    /// Added, removed or changed.
    pub kind: Kind,
    /// What changed, for a person (`type list(string) → set(string)`).
    pub detail: String,
    /// Why a caller written for the old version fails with the new one; `None`: it does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breaking: Option<String>,
}

impl Change {
    /// One line: `input "region" removed: a caller that sets it fails …`.
    pub fn line(&self) -> String {
        let subject = match self.subject {
            Subject::Input => format!("input {:?}", self.name),
            Subject::Output => format!("output {:?}", self.name),
            Subject::RequiredVersion => "required_version".to_string(),
            Subject::Provider => format!("provider {:?}", self.name),
            Subject::Submodule => format!("submodule {}", self.name),
        };
        let place = if self.path.is_empty() || self.subject == Subject::Submodule {
            String::new()
        } else {
            format!(" of {}", self.path)
        };
        match &self.breaking {
            Some(why) => format!("{subject}{place} {}: {why}", self.detail),
            None => format!("{subject}{place} {}", self.detail),
        }
    }
}

/// What a version was compared with at publish (`index::judgment`), stored with its docs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Compared {
    /// The version before it then (the highest below it; a release unless it is a
    /// pre-release): what its page and API answer show the changes since.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// Each comparison, newest version first.
    #[serde(default)]
    pub with: Vec<Comparison>,
}

impl Compared {
    /// The comparison from `version`, if it was made with the bytes it serves now (`sha256`).
    pub fn from(&self, version: &str, sha256: &str) -> Option<&Comparison> {
        self.with.iter().find(|c| c.from == version && c.sha256 == sha256)
    }
}

/// The changes from an earlier version to this one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Comparison {
    /// The earlier version.
    pub from: String,
    /// SHA-256 of the archive of `from` it was made with: shown only while those bytes are served.
    pub sha256: String,
    /// The changes (at most `CHANGES_KEPT`, breaking ones first when there were more).
    #[serde(default)]
    pub changes: Vec<Change>,
    /// Changes past `CHANGES_KEPT`, counted only.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub more: u64,
    /// Breaking ones among `more`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub more_breaking: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Comparison {
    /// `new` compared with `old`, the docs of version `from`.
    pub fn new(from: &str, old: &ModuleDocs, new: &ModuleDocs) -> Comparison {
        let mut changes = compare(old, new);
        let (mut more, mut more_breaking) = (0, 0);
        if changes.len() > CHANGES_KEPT {
            // Stable: the order of `compare` within the breaking and the other changes.
            changes.sort_by_key(|c| c.breaking.is_none());
            let rest = changes.split_off(CHANGES_KEPT);
            more = rest.len() as u64;
            more_breaking = rest.iter().filter(|c| c.breaking.is_some()).count() as u64;
        }
        // A name or path is quoted as the texts are: a change keeps `SHOWN_CHARS` of it, so the
        // stored comparisons grow with the number of changes, not with what they name.
        for change in &mut changes {
            change.name = clip(&change.name);
            change.path = clip(&change.path);
        }
        Comparison { from: from.to_string(), sha256: old.sha256.clone(), changes, more, more_breaking }
    }

    /// How many changes it found.
    pub fn total(&self) -> u64 {
        self.changes.len() as u64 + self.more
    }

    /// How many of them break a caller.
    pub fn breaking(&self) -> u64 {
        self.changes.iter().filter(|c| c.breaking.is_some()).count() as u64 + self.more_breaking
    }
}

/// Every difference from `old` to `new`, the root's first, then each submodule's by path.
pub fn compare(old: &ModuleDocs, new: &ModuleDocs) -> Vec<Change> {
    let mut out = Vec::new();
    directory(&old.root, &new.root, &mut out);
    let by_path = |dirs: &[ModuleDir]| dirs.iter().map(|d| (d.path.clone(), d.clone())).collect::<BTreeMap<_, _>>();
    let (before, after) = (by_path(&old.submodules), by_path(&new.submodules));
    for (path, dir) in &before {
        match after.get(path) {
            Some(now) => directory(dir, now, &mut out),
            None => out.push(Change {
                path: path.clone(),
                subject: Subject::Submodule,
                name: path.clone(),
                kind: Kind::Removed,
                detail: "removed".into(),
                breaking: Some(format!("a caller whose source ends in //{path} finds no module")),
            }),
        }
    }
    for path in after.keys().filter(|p| !before.contains_key(*p)) {
        out.push(change(path, Subject::Submodule, path, Kind::Added, "added".into(), None));
    }
    out
}

fn change(path: &str, subject: Subject, name: &str, kind: Kind, detail: String, breaking: Option<String>) -> Change {
    Change { path: path.to_string(), subject, name: name.to_string(), kind, detail, breaking }
}

/// The differences of one directory (the root or a submodule present in both).
fn directory(old: &ModuleDir, new: &ModuleDir, out: &mut Vec<Change>) {
    let path = new.path.as_str();
    let (before, after) = (named(&old.inputs, |i| &i.name), named(&new.inputs, |i| &i.name));
    for (name, was) in &before {
        match after.get(name) {
            Some(now) => input_changes(path, was, now, out),
            None => out.push(change(
                path,
                Subject::Input,
                name,
                Kind::Removed,
                "removed".into(),
                Some("a caller that sets it fails (Unsupported argument)".into()),
            )),
        }
    }
    for (name, now) in after.iter().filter(|(n, _)| !before.contains_key(*n)) {
        let breaking = now.required.then(|| "it has no default: a caller that does not set it fails".to_string());
        let detail = if now.required { "added, required" } else { "added, optional" };
        out.push(change(path, Subject::Input, name, Kind::Added, detail.into(), breaking));
    }
    let (before, after) = (named(&old.outputs, |o| &o.name), named(&new.outputs, |o| &o.name));
    for (name, was) in &before {
        match after.get(name) {
            Some(now) => output_changes(path, was, now, out),
            None => out.push(change(
                path,
                Subject::Output,
                name,
                Kind::Removed,
                "removed".into(),
                Some(format!("a caller that reads module.NAME.{name} fails (Unsupported attribute)")),
            )),
        }
    }
    for name in after.keys().filter(|n| !before.contains_key(*n)) {
        out.push(change(path, Subject::Output, name, Kind::Added, "added".into(), None));
    }
    if let Some(c) = constraint_change(old.required_version.as_deref(), new.required_version.as_deref(), "Terraform") {
        out.push(Change { path: path.into(), subject: Subject::RequiredVersion, name: String::new(), ..c });
    }
    provider_changes(path, &old.provider_dependencies, &new.provider_dependencies, out);
}

/// Items by name (the docs keep one of each name).
fn named<T>(items: &[T], name: impl Fn(&T) -> &String) -> BTreeMap<&str, &T> {
    items.iter().map(|i| (name(i).as_str(), i)).collect()
}

fn input_changes(path: &str, was: &Input, now: &Input, out: &mut Vec<Change>) {
    let mut push = |detail: String, breaking: Option<String>| {
        out.push(change(path, Subject::Input, &was.name, Kind::Changed, detail, breaking));
    };
    let (old_type, new_type) = (was.r#type.as_deref().map(spaceless), now.r#type.as_deref().map(spaceless));
    if old_type != new_type {
        let shown = |t: &Option<String>| clip(t.as_deref().unwrap_or("any"));
        let detail = format!("type {} → {}", shown(&was.r#type), shown(&now.r#type));
        match (Type::parse(was.r#type.as_deref()), Type::parse(now.r#type.as_deref())) {
            (Ok(old), Ok(new)) if new.accepts(&old) => push(format!("{detail} (widened)"), None),
            (Ok(_), Ok(_)) => {
                push(detail, Some("the new type accepts fewer values: a caller's value may no longer convert".into()))
            }
            (Err(why), _) | (_, Err(why)) => push(format!("{detail} (not judged: {why})"), None),
        }
    }
    match (&was.default, &now.default) {
        (Some(_), None) => {
            push("default removed".into(), Some("it is required now: a caller that did not set it fails".into()))
        }
        (None, Some(d)) => push(format!("default added ({}): optional now", clip(d)), None),
        (Some(a), Some(b)) if a != b => push(format!("default {} → {}", clip(a), clip(b)), None),
        _ => {}
    }
    if !was.non_nullable && now.non_nullable {
        push("nullable = false".into(), Some("a caller that passes null fails".into()));
    } else if was.non_nullable && !now.non_nullable {
        push("accepts null now".into(), None);
    }
}

fn output_changes(path: &str, was: &Output, now: &Output, out: &mut Vec<Change>) {
    if !was.sensitive && now.sensitive {
        let why = "a caller that shows it in an output not marked sensitive fails (Output refers to sensitive values)";
        out.push(change(path, Subject::Output, &was.name, Kind::Changed, "sensitive now".into(), Some(why.into())));
    } else if was.sensitive && !now.sensitive {
        out.push(change(path, Subject::Output, &was.name, Kind::Changed, "no longer sensitive".into(), None));
    }
}

/// A constraint's change, judged: narrowed (breaking, with a version it no longer allows),
/// widened, or not comparable.
fn constraint_change(old: Option<&str>, new: Option<&str>, of: &str) -> Option<Change> {
    let (old_text, new_text) = (old.unwrap_or("").trim(), new.unwrap_or("").trim());
    if spaceless(old_text) == spaceless(new_text) {
        return None;
    }
    let shown = |t: &str| if t.is_empty() { "(none)".to_string() } else { format!("{:?}", clip(t)) };
    let detail = format!("{} → {}", shown(old_text), shown(new_text));
    let (detail, breaking) = match (Constraint::parse(old_text), Constraint::parse(new_text)) {
        (Ok(o), Ok(n)) => match o.allows_beyond(&n) {
            Some(v) => (detail, Some(format!("{of} {v} was allowed and is not now: a caller on it fails"))),
            None => (format!("{detail} (widened)"), None),
        },
        (Err(why), _) | (_, Err(why)) => (format!("{detail} (not judged: {why})"), None),
    };
    Some(Change {
        path: String::new(),
        subject: Subject::RequiredVersion,
        name: String::new(),
        kind: Kind::Changed,
        detail,
        breaking,
    })
}

fn provider_changes(path: &str, old: &[ProviderDependency], new: &[ProviderDependency], out: &mut Vec<Change>) {
    let by_name =
        |ps: &[ProviderDependency]| ps.iter().map(|p| (p.name.clone(), p.clone())).collect::<BTreeMap<_, _>>();
    let (before, after) = (by_name(old), by_name(new));
    for (name, was) in &before {
        let Some(now) = after.get(name) else {
            out.push(change(path, Subject::Provider, name, Kind::Removed, "no longer required".into(), None));
            continue;
        };
        if source(was) != source(now) {
            let detail = format!("source {} → {}", clip(&source(was)), clip(&source(now)));
            let why = "another provider: a caller's configuration and lock file name the old one";
            out.push(change(path, Subject::Provider, name, Kind::Changed, detail, Some(why.into())));
        } else if let Some(c) = constraint_change(Some(&was.version), Some(&now.version), &source(now)) {
            out.push(Change { path: path.into(), subject: Subject::Provider, name: name.clone(), ..c });
        }
    }
    for (name, now) in after.iter().filter(|(n, _)| !before.contains_key(*n)) {
        let detail = format!("required ({} {})", clip(&source(now)), clip(&now.version)).trim_end().to_string();
        out.push(change(path, Subject::Provider, name, Kind::Added, detail, None));
    }
}

/// A provider's source as the CLI resolves it: no source is `hashicorp/NAME`, the public
/// registry's host is implied, and addresses compare without case.
fn source(p: &ProviderDependency) -> String {
    let written = if p.source.is_empty() { format!("hashicorp/{}", p.name) } else { p.source.clone() };
    let lower = written.to_ascii_lowercase();
    lower.strip_prefix("registry.terraform.io/").map(str::to_string).unwrap_or(lower)
}

/// At most `SHOWN_CHARS` of a text a change quotes, `…` marking the cut.
fn clip(text: &str) -> String {
    match text.char_indices().nth(SHOWN_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// Text without whitespace, so `list( string )` and `list(string)` are one type.
fn spaceless(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

#[cfg(test)]
mod tests;
