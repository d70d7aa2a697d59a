//! A module version's documentation, read from its archive at publish time: the root README,
//! inputs, outputs, module calls, required providers and `required_version`, resources, and the
//! same for each submodule under `modules/` and each example under `examples/`. HCL is parsed
//! with `hcl-edit` (the HCL parser that keeps source spans, so a type or default is shown as
//! written); `.tf.json` files with `serde_json`. A file that does not parse never rejects the
//! upload: it is named in `warnings` and the rest is read. Pure: the indexer hands it the
//! files `archive::read_module_archive` kept (`wanted` says which).

use std::collections::BTreeMap;

use hcl_edit::Span;
use hcl_edit::expr::{Expression, ObjectKey};
use hcl_edit::structure::Block;
use hcl_edit::template::{Element, Template};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::archive::{KEPT_FILE_BYTES, KeptFile, MODULE_FILE_SUFFIXES};

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
        let mut reader = DirReader { dir: &mut out, warnings: &mut warnings };
        for file in module_files {
            let Some(source) = text(file, reader.warnings) else { continue };
            if file.path.ends_with(".json") {
                reader.json_file(&file.path, &source);
            } else {
                reader.hcl_file(&file.path, &source);
            }
        }
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

/// Reads the module files of one directory into its `ModuleDir`.
struct DirReader<'a> {
    dir: &'a mut ModuleDir,
    warnings: &'a mut Vec<String>,
}

impl DirReader<'_> {
    fn hcl_file(&mut self, path: &str, source: &str) {
        let body = match hcl_edit::parser::parse_body(source) {
            Ok(body) => body,
            Err(e) => {
                let at = e.location();
                self.warnings.push(format!(
                    "{path}:{}:{}: does not parse as HCL ({}); its inputs, outputs and other blocks are not shown",
                    at.line(),
                    at.column(),
                    e.message()
                ));
                return;
            }
        };
        let raw = |expr: &Expression| -> String {
            expr.span().and_then(|r| source.get(r)).map(str::trim).unwrap_or_default().to_string()
        };
        for block in body.blocks() {
            let labels: Vec<&str> = block.labels.iter().map(|l| l.as_str()).collect();
            match (block.ident.as_str(), labels.as_slice()) {
                ("variable", [name]) => {
                    let attr = |key: &str| block.body.get_attribute(key).map(|a| &a.value);
                    let default = attr("default").map(|e| literal(e).map_or_else(|| raw(e), |v| v.to_string()));
                    self.input(
                        path,
                        Input {
                            name: name.to_string(),
                            r#type: attr("type").map(raw),
                            description: attr("description").map(|e| string(e).unwrap_or_else(|| raw(e))),
                            required: default.is_none(),
                            default,
                            sensitive: attr("sensitive").and_then(literal) == Some(Value::Bool(true)),
                        },
                    );
                }
                ("output", [name]) => {
                    let attr = |key: &str| block.body.get_attribute(key).map(|a| &a.value);
                    self.output(
                        path,
                        Output {
                            name: name.to_string(),
                            description: attr("description").map(|e| string(e).unwrap_or_else(|| raw(e))),
                            sensitive: attr("sensitive").and_then(literal) == Some(Value::Bool(true)),
                        },
                    );
                }
                ("module", [name]) => {
                    let attr = |key: &str| block.body.get_attribute(key).map(|a| string(&a.value).unwrap_or_default());
                    self.dir.dependencies.push(Dependency {
                        name: name.to_string(),
                        source: attr("source").unwrap_or_default(),
                        version: attr("version").unwrap_or_default(),
                    });
                }
                ("resource", [r#type, name]) => {
                    self.dir.resources.push(Resource { name: name.to_string(), r#type: r#type.to_string() });
                }
                ("terraform", []) => self.terraform_block(block),
                _ => {}
            }
        }
    }

    fn terraform_block(&mut self, block: &Block) {
        if let Some(version) = block.body.get_attribute("required_version").and_then(|a| string(&a.value)) {
            self.dir.required_version = Some(version);
        }
        for required in block.body.get_blocks("required_providers") {
            for attr in required.body.attributes() {
                let name = attr.key.as_str();
                let (source, version) = match &attr.value {
                    Expression::Object(object) => {
                        let field = |key: &str| {
                            object
                                .iter()
                                .find(|(k, _)| object_key(k).as_deref() == Some(key))
                                .and_then(|(_, v)| string(v.expr()))
                        };
                        (field("source").unwrap_or_default(), field("version").unwrap_or_default())
                    }
                    // The 0.12 form: `aws = ">= 2.0"`.
                    other => (String::new(), string(other).unwrap_or_default()),
                };
                self.provider(name, source, version);
            }
        }
    }

    fn json_file(&mut self, path: &str, source: &str) {
        let document: Value = match serde_json::from_str(source) {
            Ok(v) => v,
            Err(e) => {
                // serde_json's message ends with the location, which the prefix already says.
                let message = e.to_string();
                let message = message.split(" at line ").next().unwrap_or_default();
                self.warnings.push(format!(
                    "{path}:{}:{}: does not parse as JSON ({message}); its inputs, outputs and other blocks are not shown",
                    e.line(),
                    e.column()
                ));
                return;
            }
        };
        // JSON syntax: `"variable": {"NAME": {…}}`, or a list of such objects.
        let labelled = |key: &str| -> Vec<(String, Value)> {
            let mut out = Vec::new();
            let blocks = match document.get(key) {
                Some(Value::Array(items)) => items.clone(),
                Some(other) => vec![other.clone()],
                None => Vec::new(),
            };
            for block in blocks {
                if let Value::Object(map) = block {
                    out.extend(map);
                }
            }
            out
        };
        let text = |v: &Value| v.as_str().map(str::to_string);
        for (name, body) in labelled("variable") {
            let default = body.get("default").map(Value::to_string);
            self.input(
                path,
                Input {
                    name,
                    r#type: body.get("type").map(|t| text(t).unwrap_or_else(|| t.to_string())),
                    description: body.get("description").and_then(text),
                    required: default.is_none(),
                    default,
                    sensitive: body.get("sensitive") == Some(&Value::Bool(true)),
                },
            );
        }
        for (name, body) in labelled("output") {
            self.output(
                path,
                Output {
                    name,
                    description: body.get("description").and_then(text),
                    sensitive: body.get("sensitive") == Some(&Value::Bool(true)),
                },
            );
        }
        for (name, body) in labelled("module") {
            let field = |key: &str| body.get(key).and_then(text).unwrap_or_default();
            self.dir.dependencies.push(Dependency { name, source: field("source"), version: field("version") });
        }
        for (r#type, names) in labelled("resource") {
            for name in names.as_object().map(|m| m.keys().cloned().collect::<Vec<_>>()).unwrap_or_default() {
                self.dir.resources.push(Resource { name, r#type: r#type.clone() });
            }
        }
        let terraform = match document.get("terraform") {
            Some(Value::Array(items)) => items.clone(),
            Some(other) => vec![other.clone()],
            None => Vec::new(),
        };
        for block in terraform {
            if let Some(version) = block.get("required_version").and_then(text) {
                self.dir.required_version = Some(version);
            }
            let providers = match block.get("required_providers") {
                Some(Value::Array(items)) => items.clone(),
                Some(other) => vec![other.clone()],
                None => Vec::new(),
            };
            for map in providers.iter().filter_map(Value::as_object) {
                for (name, spec) in map {
                    let (source, version) = match spec {
                        Value::String(version) => (String::new(), version.clone()),
                        other => (
                            other.get("source").and_then(text).unwrap_or_default(),
                            other.get("version").and_then(text).unwrap_or_default(),
                        ),
                    };
                    self.provider(name, source, version);
                }
            }
        }
    }

    fn input(&mut self, path: &str, input: Input) {
        if self.dir.inputs.iter().any(|i| i.name == input.name) {
            self.warnings.push(format!("{path}: variable {:?} is declared twice; the first is shown", input.name));
        } else {
            self.dir.inputs.push(input);
        }
    }

    fn output(&mut self, path: &str, output: Output) {
        if self.dir.outputs.iter().any(|o| o.name == output.name) {
            self.warnings.push(format!("{path}: output {:?} is declared twice; the first is shown", output.name));
        } else {
            self.dir.outputs.push(output);
        }
    }

    fn provider(&mut self, name: &str, source: String, version: String) {
        // `hashicorp/aws` or `HOST/hashicorp/aws`: the namespace is the second segment from the end.
        let segments: Vec<&str> = source.split('/').collect();
        let namespace = if segments.len() >= 2 { segments[segments.len() - 2].to_string() } else { String::new() };
        self.dir.provider_dependencies.retain(|p| p.name != name);
        self.dir.provider_dependencies.push(ProviderDependency { name: name.to_string(), namespace, source, version });
    }
}

/// An object key as text: an identifier or a literal string.
fn object_key(key: &ObjectKey) -> Option<String> {
    match key {
        ObjectKey::Ident(ident) => Some(ident.as_str().to_string()),
        ObjectKey::Expression(expr) => string(expr),
    }
}

/// The text of a string without interpolations (quoted, a template of literals, a heredoc).
fn string(expr: &Expression) -> Option<String> {
    match expr {
        Expression::String(s) => Some(s.as_str().to_string()),
        Expression::StringTemplate(t) => literal_template(t),
        Expression::HeredocTemplate(h) => literal_template(&h.template),
        Expression::Parenthesis(p) => string(p.inner()),
        _ => None,
    }
}

fn literal_template(template: &Template) -> Option<String> {
    let mut out = String::new();
    for element in template.iter() {
        match element {
            Element::Literal(text) => out.push_str(text.as_str()),
            _ => return None,
        }
    }
    Some(out)
}

/// The JSON value of a literal expression (what a variable's default must be), or `None`.
fn literal(expr: &Expression) -> Option<Value> {
    Some(match expr {
        Expression::Null(_) => Value::Null,
        Expression::Bool(b) => Value::Bool(*b.value()),
        Expression::Number(n) => serde_json::from_str(&n.value().to_string()).ok()?,
        Expression::Array(items) => Value::Array(items.iter().map(literal).collect::<Option<_>>()?),
        Expression::Object(object) => {
            let mut map = serde_json::Map::new();
            for (key, value) in object.iter() {
                map.insert(object_key(key)?, literal(value.expr())?);
            }
            Value::Object(map)
        }
        Expression::Parenthesis(p) => literal(p.inner())?,
        other => Value::String(string(other)?),
    })
}

/// Longest description the catalog keeps, in characters.
pub const SUMMARY_MAX_CHARS: usize = 280;

/// The first paragraph of prose of a README, as plain text: what the catalog shows as a
/// module's description. Headings, badges, images, HTML, code blocks, tables and front matter
/// before it are skipped; links keep their text; emphasis and code marks are dropped; it is
/// cut at a word to `SUMMARY_MAX_CHARS`. `None` when the README has no such paragraph.
pub fn summary(readme: &str) -> Option<String> {
    let mut lines = readme.lines().map(str::trim).peekable();
    // YAML front matter.
    if lines.peek() == Some(&"---") {
        lines.next();
        for line in lines.by_ref() {
            if line == "---" {
                break;
            }
        }
    }
    let mut in_fence = false;
    let mut paragraph: Vec<&str> = Vec::new();
    for line in lines {
        if line.starts_with("```") || line.starts_with("~~~") {
            in_fence = !in_fence;
            if !paragraph.is_empty() {
                break;
            }
            continue;
        }
        // A line of `=` or `-` under text makes that text a (setext) heading.
        let underline = !line.is_empty() && line.chars().all(|c| matches!(c, '=' | '-' | ' '));
        if underline && !paragraph.is_empty() {
            paragraph.clear();
            continue;
        }
        let skipped = in_fence
            || line.starts_with('#')
            || line.starts_with('<')
            || line.starts_with("![")
            || line.starts_with("[![")
            || line.starts_with('|')
            || line.starts_with('>')
            || line.chars().all(|c| matches!(c, '=' | '-' | '*' | '_' | ' '));
        if line.is_empty() || skipped {
            if !paragraph.is_empty() {
                break;
            }
            continue;
        }
        paragraph.push(line);
    }
    let text = plain(&paragraph.join(" "));
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.is_empty() {
        return None;
    }
    if text.chars().count() <= SUMMARY_MAX_CHARS {
        return Some(text);
    }
    let cut: String = text.chars().take(SUMMARY_MAX_CHARS).collect();
    let cut = cut.rsplit_once(' ').map_or(cut.as_str(), |(head, _)| head).trim_end_matches([',', ';', ':', '.']);
    Some(format!("{cut}…"))
}

/// Markdown inline marks removed: `[text](url)` → `text`, `**`, `__`, `` ` `` and `*` dropped.
fn plain(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut rest = markdown;
    while let Some(c) = rest.chars().next() {
        if c == ']' && rest[1..].starts_with('(') {
            // The link's target, up to its closing parenthesis, is not text.
            match rest.find(')') {
                Some(end) => rest = &rest[end + 1..],
                None => rest = "",
            }
            continue;
        }
        if !matches!(c, '[' | ']' | '*' | '`') && !rest.starts_with("__") {
            out.push(c);
        } else if rest.starts_with("__") {
            rest = &rest[2..];
            continue;
        }
        rest = &rest[c.len_utf8()..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, text: &str) -> KeptFile {
        KeptFile { path: path.to_string(), bytes: Some(text.as_bytes().to_vec()) }
    }

    const README: &str = "# VPC\n\n[![CI](https://ci.example/badge.svg)](https://ci.example)\n\nA VPC with public and private subnets.\n\n| Name | Value |\n|---|---|\n| a | b |\n\n```hcl\nmodule \"vpc\" {\n  source = \"x\"\n}\n```\n";

    const VARIABLES: &str = r#"
variable "name" {
  type        = string
  description = "Name of the VPC."
}

variable "cidr" {
  description = "CIDR block"
  type        = string
  default     = "10.0.0.0/16"
}

variable "subnets" {
  type = list(object({
    name = string
    cidr = string
    tags = optional(map(string), {})
  }))
  default = [{ name = "a", cidr = "10.0.1.0/24" }]
  description = <<-EOT
    The subnets to create.
    One per zone.
  EOT
}

variable "password" {
  type      = string
  sensitive = true
  default   = null
}

variable "count_of" {
  type    = number
  default = 3
}

variable "untyped" {}
"#;

    const OUTPUTS: &str = r#"
output "vpc_id" {
  description = "The VPC's id."
  value       = aws_vpc.this.id
}

output "secret" {
  value     = var.password
  sensitive = true
}
"#;

    const MAIN: &str = r#"
terraform {
  required_version = ">= 1.5"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.0, < 6.0"
    }
    widget = {
      source = "registry.example.com/acme/widget"
    }
    legacy = ">= 2.0"
  }
}

resource "aws_vpc" "this" {
  cidr_block = var.cidr
}

module "labels" {
  source  = "app.terraform.io/acme/labels/null"
  version = "~> 1.2"
}
"#;

    #[test]
    fn summary_is_the_first_paragraph_of_prose() {
        let readme = "---\ntitle: x\n---\n# VPC module\n\n[![CI](https://ci/badge.svg)](https://ci)\n\n\
                      Creates a **VPC** with [subnets](https://example.com/x) and `NAT`\ngateways.\n\nMore text.\n";
        assert_eq!(summary(readme).as_deref(), Some("Creates a VPC with subnets and NAT gateways."));
        assert_eq!(
            summary("# Title\n\n```hcl\nmodule {}\n```\n\n| a | b |\n|---|---|\n\nText after.").as_deref(),
            Some("Text after.")
        );
        assert_eq!(
            summary("<p align=center><img src=x></p>\nSetext\n======\n\nBody __here__.").as_deref(),
            Some("Body here.")
        );
        assert_eq!(summary("# Only a heading\n"), None);
        assert_eq!(summary(""), None);
        let long = format!("{} end", "word ".repeat(100));
        let cut = summary(&long).unwrap();
        assert!(cut.ends_with("word…") && cut.chars().count() <= SUMMARY_MAX_CHARS + 1, "{cut}");
        // Not Markdown at all, odd bytes: never a panic.
        assert_eq!(summary("é]( ]").as_deref(), Some("é"));
    }

    #[test]
    fn reads_a_real_world_module() {
        let files = [
            file("README.md", README),
            file("variables.tf", VARIABLES),
            file("outputs.tf", OUTPUTS),
            file("main.tf", MAIN),
            file("modules/subnet/main.tf", "variable \"zone\" { type = string }\noutput \"id\" { value = 1 }\n"),
            file("modules/subnet/README.md", "# Subnet\n"),
            file("modules/notes/README.md", "not a module: no .tf file"),
            file("examples/complete/main.tf", "module \"vpc\" {\n  source = \"../..\"\n  name = \"x\"\n}\n"),
        ];
        let docs = extract(&files, "abc");
        assert_eq!(docs.sha256, "abc");
        assert!(docs.warnings.is_empty(), "{:?}", docs.warnings);
        let root = &docs.root;
        assert_eq!(root.path, "");
        assert_eq!(root.readme.as_deref(), Some(README));
        let input = |name: &str| root.inputs.iter().find(|i| i.name == name).unwrap().clone();
        assert_eq!(
            input("name"),
            Input {
                name: "name".into(),
                r#type: Some("string".into()),
                description: Some("Name of the VPC.".into()),
                default: None,
                required: true,
                sensitive: false
            }
        );
        assert_eq!(input("cidr").default.as_deref(), Some("\"10.0.0.0/16\""));
        assert!(!input("cidr").required);
        let subnets = input("subnets");
        assert_eq!(
            subnets.r#type.as_deref(),
            Some("list(object({\n    name = string\n    cidr = string\n    tags = optional(map(string), {})\n  }))")
        );
        assert_eq!(subnets.default.as_deref(), Some(r#"[{"cidr":"10.0.1.0/24","name":"a"}]"#));
        assert_eq!(subnets.description.as_deref(), Some("The subnets to create.\nOne per zone.\n"));
        assert_eq!((input("password").default.as_deref(), input("password").sensitive), (Some("null"), true));
        assert!(!input("password").required, "a null default makes a variable optional");
        assert_eq!(input("count_of").default.as_deref(), Some("3"));
        assert_eq!((input("untyped").r#type, input("untyped").required), (None, true));
        assert_eq!(root.inputs.len(), 6);

        assert_eq!(
            root.outputs,
            [
                Output { name: "vpc_id".into(), description: Some("The VPC's id.".into()), sensitive: false },
                Output { name: "secret".into(), description: None, sensitive: true },
            ]
        );
        assert_eq!(root.required_version.as_deref(), Some(">= 1.5"));
        let provider = |name: &str| root.provider_dependencies.iter().find(|p| p.name == name).unwrap().clone();
        assert_eq!(
            provider("aws"),
            ProviderDependency {
                name: "aws".into(),
                namespace: "hashicorp".into(),
                source: "hashicorp/aws".into(),
                version: ">= 5.0, < 6.0".into()
            }
        );
        assert_eq!(provider("widget").namespace, "acme");
        assert_eq!((provider("legacy").source.as_str(), provider("legacy").version.as_str()), ("", ">= 2.0"));
        assert_eq!(root.resources, [Resource { name: "this".into(), r#type: "aws_vpc".into() }]);
        assert_eq!(
            root.dependencies,
            [Dependency {
                name: "labels".into(),
                source: "app.terraform.io/acme/labels/null".into(),
                version: "~> 1.2".into()
            }]
        );

        assert_eq!(docs.submodules.len(), 1, "modules/notes has no module file");
        let subnet = &docs.submodules[0];
        assert_eq!((subnet.path.as_str(), subnet.readme.as_deref()), ("modules/subnet", Some("# Subnet\n")));
        assert_eq!((subnet.inputs[0].name.as_str(), subnet.outputs[0].name.as_str()), ("zone", "id"));
        assert_eq!(docs.examples.len(), 1);
        assert_eq!(docs.examples[0].dependencies[0].source, "../..");
    }

    #[test]
    fn a_file_that_does_not_parse_is_a_warning_and_the_rest_is_read() {
        let files = [
            file("broken.tf", "variable \"x\" {\n  type = \n"),
            file("variables.tf", "variable \"ok\" { default = true }\n"),
            file("broken.tf.json", "{\"variable\": "),
            KeptFile { path: "huge.tf".into(), bytes: None },
            KeptFile { path: "latin1.tf".into(), bytes: Some(vec![0xe9, b'\n']) },
            file("zz_dup.tf", "variable \"ok\" {}\n"),
        ];
        let docs = extract(&files, "");
        assert_eq!(docs.root.inputs.len(), 1);
        assert_eq!(docs.root.inputs[0].default.as_deref(), Some("true"));
        let warnings = docs.warnings.join("\n");
        assert!(warnings.contains("broken.tf:2:10: does not parse as HCL (invalid expression"), "{warnings}");
        assert!(
            warnings.contains("broken.tf.json:1:13: does not parse as JSON (EOF while parsing a value);"),
            "{warnings}"
        );
        assert!(warnings.contains("huge.tf: larger than 1024 KiB, not read"), "{warnings}");
        assert!(warnings.contains("latin1.tf: not UTF-8"), "{warnings}");
        assert!(warnings.contains("zz_dup.tf: variable \"ok\" is declared twice"), "{warnings}");
    }

    #[test]
    fn reads_json_syntax() {
        let json = r#"{
          "variable": {"region": {"type": "string", "default": "eu-west-1", "description": "Where."}},
          "output": [{"arn": {"value": "${aws_vpc.this.arn}", "sensitive": true}}],
          "terraform": {"required_version": ">= 1.6", "required_providers": {"aws": {"source": "hashicorp/aws", "version": "~> 5.0"}}},
          "resource": {"aws_vpc": {"this": {}, "other": {}}},
          "module": {"m": {"source": "./m"}}
        }"#;
        let docs = extract(&[file("main.tf.json", json)], "");
        let root = &docs.root;
        assert_eq!(root.inputs[0].default.as_deref(), Some("\"eu-west-1\""));
        assert_eq!(root.inputs[0].description.as_deref(), Some("Where."));
        assert!(root.outputs[0].sensitive);
        assert_eq!(root.required_version.as_deref(), Some(">= 1.6"));
        assert_eq!(root.provider_dependencies[0].version, "~> 5.0");
        assert_eq!(root.resources.len(), 2);
        assert_eq!(root.dependencies[0].source, "./m");
    }

    #[test]
    fn wanted_files_are_readmes_and_module_files_of_documented_directories() {
        for path in [
            "README.md",
            "readme.markdown",
            "main.tf",
            "x.tf.json",
            "x.tofu",
            "modules/a/main.tf",
            "examples/b/README.md",
        ] {
            assert!(wanted(path), "{path}");
        }
        for path in [
            "docs/README.md",
            "modules/a/b/main.tf",
            "modules/main.tf",
            "main.go",
            "examples/b/notes.txt",
            "README.txt",
        ] {
            assert!(!wanted(path), "{path}");
        }
    }
}
