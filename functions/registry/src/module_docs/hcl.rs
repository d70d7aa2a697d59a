//! One directory's module files read into its `ModuleDir`: HCL with `hcl-edit` (types and
//! defaults shown as written), `.tf.json` with `serde_json`.

use std::collections::{BTreeMap, BTreeSet};

use hcl_edit::Span;
use hcl_edit::expr::{Expression, ObjectKey};
use hcl_edit::structure::Block;
use hcl_edit::template::{Element, Template};
use serde_json::Value;

use super::scan::MAX_KEY_COMPARISONS;
use super::{Dependency, Input, ModuleDir, Output, ProviderDependency, Resource};

/// Reads the module files of one directory into its `ModuleDir`.
pub(super) struct DirReader<'a> {
    pub(super) dir: &'a mut ModuleDir,
    pub(super) warnings: &'a mut Vec<String>,
    /// The names read so far, and where each provider is: a name declared again is found in
    /// log n, not by a scan of all before it (a hostile directory declares hundreds of
    /// thousands, which a scan each makes quadratic).
    inputs: BTreeSet<String>,
    outputs: BTreeSet<String>,
    providers: BTreeMap<String, usize>,
    /// Places in `provider_dependencies` a later declaration replaced, removed by `finish`.
    replaced: BTreeSet<usize>,
}

impl<'a> DirReader<'a> {
    pub(super) fn new(dir: &'a mut ModuleDir, warnings: &'a mut Vec<String>) -> Self {
        let (inputs, outputs) = (BTreeSet::new(), BTreeSet::new());
        DirReader { dir, warnings, inputs, outputs, providers: BTreeMap::new(), replaced: BTreeSet::new() }
    }

    /// Once every file is read: a provider declared again is where its last declaration is.
    pub(super) fn finish(self) {
        let DirReader { dir, replaced, .. } = self;
        let mut at = 0;
        dir.provider_dependencies.retain(|_| {
            at += 1;
            !replaced.contains(&(at - 1))
        });
    }

    pub(super) fn hcl_file(&mut self, path: &str, source: &str) {
        // hcl-edit's objects parse in quadratic time: a file whose objects would cost more
        // than `MAX_KEY_COMPARISONS` is not parsed (`scan`).
        let objects = super::scan::objects(source);
        if objects.comparisons > MAX_KEY_COMPARISONS {
            self.warnings.push(format!(
                "{path}: objects of up to {} attributes, {} in all, more than this registry parses in one file; its \
                 inputs, outputs and other blocks are not read",
                objects.largest, objects.keys
            ));
            return;
        }
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
                            non_nullable: attr("nullable").and_then(literal) == Some(Value::Bool(false)),
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

    pub(super) fn json_file(&mut self, path: &str, source: &str) {
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
                    non_nullable: body.get("nullable") == Some(&Value::Bool(false)),
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
        self.json_terraform(&document);
    }

    /// `"terraform"` blocks of a `.tf.json` file: `required_version` and `required_providers`.
    fn json_terraform(&mut self, document: &Value) {
        let text = |v: &Value| v.as_str().map(str::to_string);
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
        if self.inputs.insert(input.name.clone()) {
            self.dir.inputs.push(input);
        } else {
            self.warnings.push(format!("{path}: variable {:?} is declared twice; the first is shown", input.name));
        }
    }

    fn output(&mut self, path: &str, output: Output) {
        if self.outputs.insert(output.name.clone()) {
            self.dir.outputs.push(output);
        } else {
            self.warnings.push(format!("{path}: output {:?} is declared twice; the first is shown", output.name));
        }
    }

    fn provider(&mut self, name: &str, source: String, version: String) {
        // `hashicorp/aws` or `HOST/hashicorp/aws`: the namespace is the second segment from the end.
        let segments: Vec<&str> = source.split('/').collect();
        let namespace = if segments.len() >= 2 { segments[segments.len() - 2].to_string() } else { String::new() };
        // The last declaration holds, in its place (`finish` removes the one it replaces).
        let at = self.dir.provider_dependencies.len();
        if let Some(was) = self.providers.insert(name.to_string(), at) {
            self.replaced.insert(was);
        }
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
