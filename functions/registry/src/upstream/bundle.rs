//! What an air-gap bundle holds: the upstream module versions a configuration uses, read from
//! the CLI's module manifest (`.terraform/modules/modules.json`, written by `terraform init`
//! and `tofu init`) or from a list, and its `SHA256SUMS` (`parse_sums`). Pure; `registry-local
//! bundle` copies each into a directory laid out as the bucket keeps copies
//! (`upstream::module_copy`), and `registry-local bundle-import` checks one against its list.

use std::collections::BTreeSet;

use serde::Deserialize;

use crate::address::UpstreamModule;

/// Longest manifest or list read (a configuration with thousands of modules is about 1 MB).
pub const INPUT_MAX_BYTES: usize = 16 << 20;

/// One module version to copy.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct BundleItem {
    /// The module, at its registry host.
    pub module: UpstreamModule,
    /// The version the configuration installed.
    pub version: semver::Version,
}

impl std::fmt::Display for BundleItem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.module, self.version)
    }
}

#[derive(Deserialize)]
struct Manifest {
    #[serde(rename = "Modules")]
    modules: Vec<Record>,
}

#[derive(Deserialize)]
struct Record {
    #[serde(rename = "Source", default)]
    source: String,
    #[serde(rename = "Version", default)]
    version: Option<String>,
}

/// The registry modules of a module manifest (`{"Modules": [{"Key", "Source", "Version",
/// "Dir"}]}`, Terraform's and OpenTofu's `internal/modsdir`): each record with a version and a
/// registry source (`HOST/NAMESPACE/NAME/SYSTEM`, a `//subdir` dropped: the package is the
/// same). Local paths and direct sources (git, HTTP) have no version and are left out.
pub fn from_modules_json(bytes: &[u8]) -> Result<Vec<BundleItem>, String> {
    if bytes.len() > INPUT_MAX_BYTES {
        return Err(format!("the module manifest is larger than {INPUT_MAX_BYTES} bytes"));
    }
    let manifest: Manifest =
        serde_json::from_slice(bytes).map_err(|e| format!("not a module manifest (modules.json): {e}"))?;
    let mut items = BTreeSet::new();
    for record in manifest.modules {
        let Some(version) = record.version.filter(|v| !v.is_empty()) else { continue };
        items.insert(item(&record.source, &version).map_err(|e| format!("module {:?}: {e}", record.source))?);
    }
    Ok(items.into_iter().collect())
}

/// A list, one module version a line: `HOST/NAMESPACE/NAME/SYSTEM VERSION` (or `…@VERSION`);
/// blank lines and `#` comments are skipped.
pub fn from_list(text: &str) -> Result<Vec<BundleItem>, String> {
    if text.len() > INPUT_MAX_BYTES {
        return Err(format!("the list is larger than {INPUT_MAX_BYTES} bytes"));
    }
    let mut items = BTreeSet::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let (source, version) = line
            .split_once(char::is_whitespace)
            .or_else(|| line.rsplit_once('@'))
            .ok_or_else(|| format!("line {}: not HOST/NAMESPACE/NAME/SYSTEM VERSION", n + 1))?;
        items.insert(item(source.trim(), version.trim()).map_err(|e| format!("line {}: {e}", n + 1))?);
    }
    Ok(items.into_iter().collect())
}

fn item(source: &str, version: &str) -> Result<BundleItem, String> {
    let package = source.split("//").next().unwrap_or(source);
    let parts: Vec<&str> = package.split('/').collect();
    let [host, namespace, name, system] = parts[..] else {
        return Err("not a registry module address HOST/NAMESPACE/NAME/SYSTEM".into());
    };
    let module = UpstreamModule::parse(host, namespace, name, system).map_err(|e| e.to_string())?;
    let version =
        crate::address::parse_version(version.strip_prefix('v').unwrap_or(version)).map_err(|e| e.to_string())?;
    Ok(BundleItem { module, version })
}

/// A bundle's `SHA256SUMS`, as `sha256sum` writes it (`HEX  FILE` lines) and `registry-local
/// bundle` writes it: each file under `upstream-modules/` once, with its lower-case hex SHA-256.
/// Anything else (a line of another form, a file elsewhere, one listed twice) is refused, naming
/// the line. Pure: the import checks the files against it.
pub fn parse_sums(bytes: &[u8]) -> Result<std::collections::BTreeMap<String, String>, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "not UTF-8".to_string())?;
    let mut listed = std::collections::BTreeMap::new();
    for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.is_empty()) {
        let Some((sha256, key)) = line.split_once("  ") else {
            return Err(format!("line {}: not `SHA256  FILE`", n + 1));
        };
        let hex = sha256.len() == 64 && sha256.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        let under = key.strip_prefix(crate::layout::UPSTREAM_MODULES_PREFIX).is_some_and(|rest| {
            !rest.is_empty() && rest.split('/').all(|s| !s.is_empty() && s != "." && s != "..") && !rest.contains('\\')
        });
        if !hex || !under {
            return Err(format!(
                "line {}: not a SHA-256 and a file under {}",
                n + 1,
                crate::layout::UPSTREAM_MODULES_PREFIX
            ));
        }
        if listed.insert(key.to_string(), sha256.to_string()).is_some() {
            return Err(format!("line {}: {key} is listed twice", n + 1));
        }
    }
    Ok(listed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_module_manifest_names_each_registry_package_once() {
        // As Terraform 1.11 wrote it for a root, two registry modules (one a subdirectory of
        // the other's package) and a local child.
        let manifest = br#"{"Modules":[{"Key":"","Source":"","Dir":"."},
            {"Key":"a","Source":"registry.terraform.io/hashicorp/demo/aws","Version":"1.0.0","Dir":".terraform/modules/a"},
            {"Key":"b","Source":"registry.terraform.io/hashicorp/demo/aws//modules/x","Version":"1.0.0","Dir":".terraform/modules/b/modules/x"},
            {"Key":"a.c","Source":"./child","Dir":".terraform/modules/a/child"},
            {"Key":"d","Source":"git::https://example.com/r.git","Dir":".terraform/modules/d"}]}"#;
        let items = from_modules_json(manifest).unwrap();
        assert_eq!(
            items.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["registry.terraform.io/hashicorp/demo/aws 1.0.0"]
        );
        assert!(from_modules_json(br#"{"Modules":[{"Source":"hashicorp/demo/aws","Version":"1.0.0"}]}"#).is_err());
        assert!(from_modules_json(b"[]").is_err());
    }

    #[test]
    fn a_list_takes_either_separator_and_comments() {
        let items = from_list(
            "# public modules\nregistry.terraform.io/a/b/c 1.0.0\n\nregistry.opentofu.org/a/b/c@v2.0.0 # pinned\n",
        )
        .unwrap();
        assert_eq!(
            items.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["registry.opentofu.org/a/b/c 2.0.0", "registry.terraform.io/a/b/c 1.0.0"]
        );
        for bad in
            ["a/b/c 1.0.0", "registry.terraform.io/a/b/c", "registry.terraform.io/a/b/c 1.0", "h.io/../b/c 1.0.0"]
        {
            assert!(from_list(bad).is_err(), "{bad}");
        }
    }
}
