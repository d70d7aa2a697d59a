//! The tools the MCP server offers (`tools/list`) and each one's arguments (`tools/call`),
//! read strictly: known names only, each value by the registry's own grammar
//! (addresses, versions, the list's filters), anything else refused with what is allowed. The
//! names follow HashiCorp's terraform-mcp-server (`search_modules`, `get_module_details`,
//! `search_providers`, `get_provider_details`) where a tool does the same thing, so an
//! assistant that knows one knows these.

use serde_json::{Map, Value, json};

use crate::address::{ModuleAddress, ProviderAddress, parse_version};
use crate::query::{LIMIT_MAX, SEARCH_MAX_LEN};

/// Modules a search answers when `limit` is not given.
pub const SEARCH_LIMIT_DEFAULT: usize = 10;
/// Most modules or providers a search answers.
pub const SEARCH_LIMIT_MAX: usize = 50;

/// One tool call, its arguments read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// `search_modules`: the catalog's modules matching every word of `query` (all modules
    /// without one), within `namespace` and `system` when given.
    SearchModules {
        /// The words.
        query: Option<String>,
        /// Only this namespace.
        namespace: Option<String>,
        /// Only this target system (`aws`).
        system: Option<String>,
        /// At most this many.
        limit: usize,
        /// Skipped first.
        offset: usize,
    },
    /// `get_module_details`: a version's interface and README (the latest when none is named).
    ModuleDetails {
        /// The module.
        module: ModuleAddress,
        /// The version.
        version: Option<semver::Version>,
    },
    /// `list_module_versions`: every version, newest first, with deprecations and judgments.
    ModuleVersions {
        /// The module.
        module: ModuleAddress,
    },
    /// `compare_module_versions`: what changed from `from` to `to`, breaking changes first.
    CompareVersions {
        /// The module.
        module: ModuleAddress,
        /// The version a caller uses now.
        from: semver::Version,
        /// The version it would move to.
        to: semver::Version,
    },
    /// `get_module_usage`: the `module` block to copy (the latest version when none is named).
    ModuleUsage {
        /// The module.
        module: ModuleAddress,
        /// The version.
        version: Option<semver::Version>,
    },
    /// `search_providers`: the providers whose address holds every word of `query`.
    SearchProviders {
        /// The words.
        query: Option<String>,
        /// At most this many.
        limit: usize,
    },
    /// `get_provider_details`: a provider's versions, and a version's platforms and snippet
    /// (the latest when none is named).
    ProviderDetails {
        /// The provider.
        provider: ProviderAddress,
        /// The version.
        version: Option<semver::Version>,
    },
}

/// A tool's arguments refused: the message the assistant reads (a tool error, so it can fix
/// its call).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused(pub String);

/// The tools, as `tools/list` answers them: name, title, description, input schema, and
/// annotations (each reads only, and only this registry).
pub fn list() -> Value {
    let segment = "[0-9A-Za-z](?:[0-9A-Za-z_-]{0,62}[0-9A-Za-z])?";
    let module = json!({"type": "string", "description": "The module's address: NAMESPACE/NAME/SYSTEM, e.g. acme/vpc/aws.",
        "pattern": format!("^{segment}/{segment}/[0-9a-z]{{1,64}}$"), "maxLength": 200});
    let version = |what: &str| json!({"type": "string", "description": what, "maxLength": 128});
    let words = json!({"type": "string", "description": "Words to look for (all must match); empty: list everything.", "maxLength": SEARCH_MAX_LEN});
    let tools = vec![
        tool(
            "search_modules",
            "Search private modules",
            "Search the registry's private Terraform/OpenTofu modules by words in their name, namespace, target system or description. Answers each module's address, latest version, description and downloads. Use it before writing a module block for an internal module.",
            json!({
                "query": words,
                "namespace": {"type": "string", "description": "Only modules of this namespace.", "maxLength": 64},
                "system": {"type": "string", "description": "Only modules for this target system (provider), e.g. aws.", "maxLength": 64},
                "limit": {"type": "integer", "minimum": 1, "maximum": SEARCH_LIMIT_MAX, "default": SEARCH_LIMIT_DEFAULT},
                "offset": {"type": "integer", "minimum": 0, "maximum": crate::query::OFFSET_MAX, "default": 0},
            }),
            &[],
        ),
        tool(
            "get_module_details",
            "Module interface and README",
            "A module version's interface as published: inputs (type, default, required, sensitive), outputs, required providers and Terraform version, submodules and examples, its README, deprecation and how its changes were judged. The latest version when none is given.",
            json!({"module": module, "version": version("The version (e.g. 1.4.0); the latest when absent.")}),
            &["module"],
        ),
        tool(
            "list_module_versions",
            "Module versions",
            "Every version of a module, newest first, with when it was published, whether it is deprecated (why, and what to use instead) and how many breaking changes its publish found against the version before it.",
            json!({"module": module}),
            &["module"],
        ),
        tool(
            "compare_module_versions",
            "Changes between two module versions",
            "What changed in a module's interface from one version to another (inputs, outputs, providers, required Terraform version), breaking changes first with why a caller breaks, as compared when the newer version was published. Read it before upgrading a module.",
            json!({
                "module": module,
                "from": version("The version in use now."),
                "to": version("The version to upgrade to."),
            }),
            &["module", "from", "to"],
        ),
        tool(
            "get_module_usage",
            "Module block to copy",
            "The module block that calls a module version from this registry (source, version constraint) with its required inputs named. The latest version when none is given.",
            json!({"module": module, "version": version("The version; the latest when absent.")}),
            &["module"],
        ),
        tool(
            "search_providers",
            "Search providers",
            "Search the providers this registry serves (its own signed providers and mirrored ones) by words in their address. Answers each provider's address, latest version, number of versions and how it is installed.",
            json!({
                "query": words,
                "limit": {"type": "integer", "minimum": 1, "maximum": SEARCH_LIMIT_MAX, "default": SEARCH_LIMIT_DEFAULT},
            }),
            &[],
        ),
        tool(
            "get_provider_details",
            "Provider versions and platforms",
            "A provider's versions (newest first), and for one version (the latest when none is given) its platforms, signing key, deprecation and the required_providers block to copy.",
            json!({
                "provider": {"type": "string", "description": "The provider's address: HOSTNAME/NAMESPACE/TYPE, e.g. registry.terraform.io/hashicorp/aws.", "maxLength": 300},
                "version": version("The version; the latest when absent."),
            }),
            &["provider"],
        ),
    ];
    json!({"tools": tools})
}

fn tool(name: &str, title: &str, description: &str, properties: Value, required: &[&str]) -> Value {
    json!({
        "name": name,
        "title": title,
        "description": description,
        "inputSchema": {"type": "object", "properties": properties, "required": required, "additionalProperties": false},
        "annotations": {"title": title, "readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false},
    })
}

/// The tools' names, in `list`'s order (a test holds the two together).
pub const NAMES: [&str; 7] = [
    "search_modules",
    "get_module_details",
    "list_module_versions",
    "compare_module_versions",
    "get_module_usage",
    "search_providers",
    "get_provider_details",
];

/// Whether `name` is a tool (an unknown one is a JSON-RPC error, not a tool's).
pub fn known(name: &str) -> bool {
    NAMES.contains(&name)
}

impl Call {
    /// Read a known tool's arguments (`known` first).
    pub fn read(name: &str, arguments: &Value) -> Result<Call, Refused> {
        let empty = Map::new();
        let args = match arguments {
            Value::Object(map) => map,
            Value::Null => &empty,
            _ => return Err(Refused("arguments must be an object".into())),
        };
        let allowed: &[&str] = match name {
            "search_modules" => &["query", "namespace", "system", "limit", "offset"],
            "get_module_details" | "get_module_usage" => &["module", "version"],
            "list_module_versions" => &["module"],
            "compare_module_versions" => &["module", "from", "to"],
            "search_providers" => &["query", "limit"],
            "get_provider_details" => &["provider", "version"],
            _ => return Err(Refused(format!("no tool is named {name:?}"))),
        };
        if let Some(other) = args.keys().find(|k| !allowed.contains(&k.as_str())) {
            let other = crate::address::printable(other);
            return Err(Refused(format!("unknown argument {other:?}; {name} takes {}", allowed.join(", "))));
        }
        let a = Args(args);
        Ok(match name {
            "search_modules" => Call::SearchModules {
                query: a.words("query")?,
                namespace: a.segment("namespace")?,
                system: a.segment("system")?,
                limit: a.number("limit", 1, SEARCH_LIMIT_MAX)?.unwrap_or(SEARCH_LIMIT_DEFAULT),
                offset: a.number("offset", 0, crate::query::OFFSET_MAX)?.unwrap_or(0),
            },
            "get_module_details" => Call::ModuleDetails { module: a.module()?, version: a.version("version")? },
            "get_module_usage" => Call::ModuleUsage { module: a.module()?, version: a.version("version")? },
            "list_module_versions" => Call::ModuleVersions { module: a.module()? },
            "compare_module_versions" => Call::CompareVersions {
                module: a.module()?,
                from: a.version("from")?.ok_or_else(|| Refused("from is required".into()))?,
                to: a.version("to")?.ok_or_else(|| Refused("to is required".into()))?,
            },
            "search_providers" => Call::SearchProviders {
                query: a.words("query")?,
                limit: a.number("limit", 1, SEARCH_LIMIT_MAX)?.unwrap_or(SEARCH_LIMIT_DEFAULT),
            },
            _ => Call::ProviderDetails { provider: a.provider()?, version: a.version("version")? },
        })
    }
}

/// A call's arguments, each read by its grammar.
struct Args<'a>(&'a Map<String, Value>);

impl Args<'_> {
    fn text(&self, name: &str, max: usize) -> Result<Option<&str>, Refused> {
        match self.0.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.len() <= max && !s.chars().any(char::is_control) => Ok(Some(s.as_str())),
            Some(Value::String(_)) => {
                Err(Refused(format!("{name} must be at most {max} bytes, without control characters")))
            }
            Some(_) => Err(Refused(format!("{name} must be a string"))),
        }
    }

    fn words(&self, name: &str) -> Result<Option<String>, Refused> {
        Ok(self.text(name, SEARCH_MAX_LEN)?.map(str::trim).filter(|q| !q.is_empty()).map(str::to_string))
    }

    fn segment(&self, name: &str) -> Result<Option<String>, Refused> {
        match self.text(name, 64)? {
            None => Ok(None),
            Some(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') => {
                Ok(Some(s.to_string()))
            }
            Some(_) => Err(Refused(format!("{name} must be 1 to 64 letters, digits, '-' or '_'"))),
        }
    }

    fn number(&self, name: &str, min: usize, max: usize) -> Result<Option<usize>, Refused> {
        match self.0.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => match n.as_u64().and_then(|n| usize::try_from(n).ok()) {
                Some(n) if (min..=max).contains(&n) => Ok(Some(n)),
                _ => Err(Refused(format!("{name} must be a whole number from {min} to {max}"))),
            },
            Some(_) => Err(Refused(format!("{name} must be a number"))),
        }
    }

    fn version(&self, name: &str) -> Result<Option<semver::Version>, Refused> {
        match self.text(name, 128)? {
            None => Ok(None),
            Some(v) => parse_version(v.strip_prefix('v').unwrap_or(v))
                .map(Some)
                .map_err(|_| Refused(format!("{name} must be a version such as 1.4.0, not {:?}", clip(v)))),
        }
    }

    fn module(&self) -> Result<ModuleAddress, Refused> {
        let text = self.text("module", 200)?.ok_or_else(|| Refused("module is required".into()))?;
        let parts: Vec<&str> = text.split('/').collect();
        let bad = || Refused(format!("module must be NAMESPACE/NAME/SYSTEM (e.g. acme/vpc/aws), not {:?}", clip(text)));
        match parts[..] {
            [namespace, name, system] => ModuleAddress::parse(namespace, name, system).map_err(|_| bad()),
            _ => Err(bad()),
        }
    }

    fn provider(&self) -> Result<ProviderAddress, Refused> {
        let text = self.text("provider", 300)?.ok_or_else(|| Refused("provider is required".into()))?;
        let parts: Vec<&str> = text.split('/').collect();
        let bad = || {
            Refused(format!(
                "provider must be HOSTNAME/NAMESPACE/TYPE (e.g. registry.terraform.io/hashicorp/aws), not {:?}",
                clip(text)
            ))
        };
        match parts[..] {
            [hostname, namespace, r#type] => ProviderAddress::parse(hostname, namespace, r#type).map_err(|_| bad()),
            _ => Err(bad()),
        }
    }
}

/// A value as quoted back in a refusal: printable and short.
fn clip(text: &str) -> String {
    crate::address::printable(&text.chars().take(80).collect::<String>()).to_string()
}

/// The `LIMIT_MAX` of the list API bounds a search too (a page of the catalog).
const _: () = assert!(SEARCH_LIMIT_MAX <= LIMIT_MAX);
