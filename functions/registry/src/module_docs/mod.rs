//! A module version's documentation, read from its archive at publish time: the root README,
//! inputs, outputs, module calls, required providers and `required_version`, resources, and the
//! same for each submodule under `modules/` and each example under `examples/`. HCL is parsed
//! with `hcl-edit` (the HCL parser that keeps source spans, so a type or default is shown as
//! written); `.tf.json` files with `serde_json`. A file that does not parse never rejects the
//! upload: it is named in `warnings` and the rest is read. Pure: the indexer hands it the
//! files `archive::read_module_archive` kept (`wanted` says which).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::archive::{KEPT_FILE_BYTES, KeptFile, MODULE_FILE_SUFFIXES};

pub mod compare;
mod hcl;
pub mod scan;
pub mod snippet;
mod summary;
#[cfg(test)]
mod tests;

use hcl::DirReader;
pub use summary::{SUMMARY_MAX_CHARS, summary};

/// The directory whose children are documented as submodules.
pub const SUBMODULES_DIR: &str = "modules";
/// The directory whose children are documented as examples.
pub const EXAMPLES_DIR: &str = "examples";

/// The documentation of one module version (`layout::module_docs`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleDocs {
    /// SHA-256 of the archive it was read from: a reader shows it only for the archive the
    /// manifest serves for that version.
    pub sha256: String,
    /// The module itself (the archive root).
    pub root: ModuleDir,
    /// `modules/NAME`, by path.
    #[serde(default)]
    pub submodules: Vec<ModuleDir>,
    /// `examples/NAME`, by path.
    #[serde(default)]
    pub examples: Vec<ModuleDir>,
    /// What could not be read (a file that does not parse, one too large), for the publisher.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// The versions before it it was compared with, once, at publish (`index::judgment`): what
    /// its page, upgrade pages and API answer show. Absent in docs stored before comparisons
    /// were, and in docs not yet judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compared: Option<compare::Compared>,
}

/// One directory of a module: the root, a submodule or an example.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleDir {
    /// Path inside the archive: `""` for the root, `modules/vpc`.
    pub path: String,
    /// Its README (Markdown, as published).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readme: Option<String>,
    /// Its `variable` blocks, in file order (files by path).
    #[serde(default)]
    pub inputs: Vec<Input>,
    /// Its `output` blocks, likewise.
    #[serde(default)]
    pub outputs: Vec<Output>,
    /// Module calls (`module "x" { source = … }`).
    #[serde(default)]
    pub dependencies: Vec<Dependency>,
    /// `terraform { required_providers { … } }`.
    #[serde(default)]
    pub provider_dependencies: Vec<ProviderDependency>,
    /// `terraform { required_version = … }`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required_version: Option<String>,
    /// Managed resources (`resource "TYPE" "NAME"`).
    #[serde(default)]
    pub resources: Vec<Resource>,
}

/// A `variable` block.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Input {
    /// The variable's name.
    pub name: String,
    /// The type constraint as written (`list(object({ name = string }))`).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub r#type: Option<String>,
    /// Its description (a heredoc's text; an expression as written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The default as JSON text when it is a literal value (`"eu-west-1"`, `["a"]`, `null`),
    /// else as written. Absent when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// No default: a caller must set it.
    pub required: bool,
    /// `sensitive = true`.
    #[serde(default)]
    pub sensitive: bool,
    /// `nullable = false`: a caller may not pass null. Absent in docs read before it was.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub non_nullable: bool,
}

/// An `output` block.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Output {
    /// The output's name.
    pub name: String,
    /// Its description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `sensitive = true`.
    #[serde(default)]
    pub sensitive: bool,
}

/// A `module` call.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dependency {
    /// The call's name.
    pub name: String,
    /// Its `source`.
    pub source: String,
    /// Its `version` constraint, empty if none.
    #[serde(default)]
    pub version: String,
}

/// An entry of `required_providers`, in the public registry's shape.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderDependency {
    /// The local name (`aws`).
    pub name: String,
    /// The source's namespace (`hashicorp`), empty when no source is given.
    pub namespace: String,
    /// The source as written (`hashicorp/aws`, `registry.example.com/acme/widget`).
    pub source: String,
    /// The version constraint.
    #[serde(default)]
    pub version: String,
}

/// A `resource` block.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resource {
    /// The resource's name.
    pub name: String,
    /// Its type (`aws_vpc`).
    #[serde(rename = "type")]
    pub r#type: String,
}

/// Whether the file at `path` (normalised, inside the archive) is read for the docs: a README
/// or a module file in the root, in `modules/NAME` or in `examples/NAME`.
pub fn wanted(path: &str) -> bool {
    let (dir, file) = path.rsplit_once('/').unwrap_or(("", path));
    documented_dir(dir) && (is_readme(file) || is_module_file(file))
}

fn documented_dir(dir: &str) -> bool {
    match dir.split_once('/') {
        None => dir.is_empty(),
        Some((parent, child)) => (parent == SUBMODULES_DIR || parent == EXAMPLES_DIR) && !child.contains('/'),
    }
}

fn is_readme(file: &str) -> bool {
    let lower = file.to_ascii_lowercase();
    matches!(lower.as_str(), "readme.md" | "readme.markdown" | "readme")
}

fn is_module_file(file: &str) -> bool {
    MODULE_FILE_SUFFIXES.iter().any(|s| file.ends_with(s))
}

/// The documentation of the archive whose SHA-256 is `sha256`, from the files it kept.
pub fn extract(files: &[KeptFile], sha256: &str) -> ModuleDocs {
    let mut warnings = Vec::new();
    // Directory → (README candidates, module files), each sorted by path for a stable result.
    let mut dirs: BTreeMap<&str, (Vec<&KeptFile>, Vec<&KeptFile>)> = BTreeMap::new();
    let mut sorted: Vec<&KeptFile> = files.iter().filter(|f| wanted(&f.path)).collect();
    sorted.sort_by(|a, b| a.path.cmp(&b.path));
    for file in sorted {
        let (dir, name) = file.path.rsplit_once('/').unwrap_or(("", &file.path));
        let entry = dirs.entry(dir).or_default();
        if is_readme(name) { entry.0.push(file) } else { entry.1.push(file) }
    }
    let mut docs = ModuleDocs { sha256: sha256.to_string(), ..ModuleDocs::default() };
    for (dir, (readmes, module_files)) in dirs {
        // A directory with no module file is not a module (a README alone under modules/).
        if !dir.is_empty() && module_files.is_empty() {
            continue;
        }
        let mut out = ModuleDir { path: dir.to_string(), ..ModuleDir::default() };
        // README.md before README.markdown before README, whatever the case.
        let mut readmes = readmes;
        readmes.sort_by_key(|f| {
            let lower = f.path.to_ascii_lowercase();
            (!lower.ends_with(".md"), !lower.ends_with(".markdown"))
        });
        if let Some(readme) = readmes.first() {
            out.readme = text(readme, &mut warnings);
        }
        let mut reader = DirReader::new(&mut out, &mut warnings);
        for file in module_files {
            let Some(source) = text(file, reader.warnings) else { continue };
            if file.path.ends_with(".json") {
                reader.json_file(&file.path, &source);
            } else {
                reader.hcl_file(&file.path, &source);
            }
        }
        reader.finish();
        match dir.split_once('/') {
            None => docs.root = out,
            Some((SUBMODULES_DIR, _)) => docs.submodules.push(out),
            Some(_) => docs.examples.push(out),
        }
    }
    docs.warnings = warnings;
    docs
}

/// A kept file as text, or a warning saying why not.
fn text(file: &KeptFile, warnings: &mut Vec<String>) -> Option<String> {
    let Some(bytes) = &file.bytes else {
        warnings.push(format!("{}: larger than {} KiB, not read", file.path, KEPT_FILE_BYTES >> 10));
        return None;
    };
    match String::from_utf8(bytes.clone()) {
        Ok(text) => Some(text),
        Err(_) => {
            warnings.push(format!("{}: not UTF-8, not read", file.path));
            None
        }
    }
}
