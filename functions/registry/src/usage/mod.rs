//! Who downloads what. Every download answer (a module's download location, a provider
//! package's, a mirror `VERSION.json`, an OCI manifest of a version, an upstream module's
//! download through the pull-through) is counted once: the read function writes one record
//! line to its log as it answers (`Sink`), and nothing on the read path waits for more. In AWS
//! a CloudWatch Logs subscription on the four counting functions' log groups
//! (`COUNTING_FUNCTIONS`) delivers those lines in batches to the usage function, which folds them into one document per module or provider
//! (`aggregate`, `document`); the local registry hands the same lines in the same batches to
//! the same code. Why logs and not S3 access logs or a write per download: the line costs the
//! read path nothing but a write to stdout, and a batch of up to thousands of downloads becomes
//! one read and one conditional write per module it names (docs/PERFORMANCE.md, "Download
//! counts").
//!
//! A record names the module or provider, the version, the platform (providers), the protocol
//! and the caller as `auth::Viewer::caller` names it: a token's name (`token NAME`), an
//! OpenID Connect subject (`oidc ISSUER SUBJECT`) or `anonymous`; never a token itself.

mod aggregate;
mod document;
pub mod report;
mod summary;
#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

pub use aggregate::{Batch, Folded, LogEvent, fold_batch, fold_event};
pub use document::{CALLERS_MAX, Caller, DAYS_KEPT, Downloads, OwnerUsage, Settings, Shown, day_of};
pub use summary::{ModuleTotal, NamespaceUsage, SUMMARY_FORMAT};

use crate::address::{ModuleAddress, ProviderAddress, UpstreamModule};
use crate::error::Error;
use crate::layout;

/// The functions (`router::Service::function_name`) whose answers count as downloads: their
/// log groups are the ones infra subscribes the usage function to (`local.usage_sources`; the
/// consistency test compares, and the library's usage test holds every download route to it).
pub const COUNTING_FUNCTIONS: [&str; 4] = ["modules", "mirror", "providers", "oci"];

/// The record format a read function writes (`Record::v`); another is skipped.
pub const RECORD_VERSION: u32 = 1;

/// The longest caller name kept; longer ones are cut (an OIDC subject is already cut to 64).
pub const CALLER_MAX_LEN: usize = 200;

/// What was downloaded: a module, a provider (of this registry's host or a mirrored
/// upstream's), or an upstream module held as a pinned copy.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Counted {
    /// `NAMESPACE/NAME/SYSTEM`.
    Module(ModuleAddress),
    /// `HOSTNAME/NAMESPACE/TYPE`.
    Provider(ProviderAddress),
    /// `HOSTNAME/NAMESPACE/NAME/SYSTEM`.
    UpstreamModule(UpstreamModule),
}

impl Counted {
    /// Its usage document (`layout`).
    pub fn key(&self) -> String {
        match self {
            Counted::Module(m) => layout::module_usage(m),
            Counted::Provider(p) => layout::provider_usage(p),
            Counted::UpstreamModule(m) => layout::upstream_module_usage(m),
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Counted::Module(_) => "module",
            Counted::Provider(_) => "provider",
            Counted::UpstreamModule(_) => "upstream-module",
        }
    }

    /// Read back from a record: every part checked by the address grammar, so a record can
    /// name no key outside its document's place.
    fn parse(kind: &str, address: &str) -> Result<Counted, Error> {
        let parts: Vec<&str> = address.split('/').collect();
        match (kind, &parts[..]) {
            ("module", &[namespace, name, system]) => {
                Ok(Counted::Module(ModuleAddress::parse(namespace, name, system)?))
            }
            ("provider", &[hostname, namespace, r#type]) => {
                Ok(Counted::Provider(ProviderAddress::parse(hostname, namespace, r#type)?))
            }
            ("upstream-module", &[hostname, namespace, name, system]) => {
                Ok(Counted::UpstreamModule(UpstreamModule::parse(hostname, namespace, name, system)?))
            }
            _ => Err(Error::BadRequest(format!("no {kind:?} is addressed {address:?}"))),
        }
    }
}

impl std::fmt::Display for Counted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Counted::Module(m) => m.fmt(f),
            Counted::Provider(p) => p.fmt(f),
            Counted::UpstreamModule(m) => m.fmt(f),
        }
    }
}

/// Which protocol answered the download.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Via {
    /// modules.v1's download (or the modules pull-through's).
    #[serde(rename = "modules.v1")]
    ModulesV1,
    /// providers.v1's download of one platform's package.
    #[serde(rename = "providers.v1")]
    ProvidersV1,
    /// The network mirror's `VERSION.json`.
    #[serde(rename = "mirror")]
    Mirror,
    /// An OCI manifest of a version.
    #[serde(rename = "oci")]
    Oci,
}

/// One download, as a read function counts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Download {
    /// What.
    pub counted: Counted,
    /// Which version (canonical SemVer).
    pub version: String,
    /// Which platform (`linux_amd64`), where the answer is one platform's.
    pub platform: Option<String>,
    /// Through which protocol.
    pub via: Via,
    /// Who (`caller`).
    pub caller: String,
}

/// The record line's JSON: `{"level":"INFO","usage":{…}}`. A `level` of its own so that
/// Lambda's log-level filter (JSON format) reads it as the INFO it is, whatever the function's
/// own subscriber would print.
#[derive(Debug, Serialize, Deserialize)]
struct Line {
    usage: Record,
}

#[derive(Debug, Serialize, Deserialize)]
struct Record {
    v: u32,
    kind: String,
    owner: String,
    version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    platform: Option<String>,
    via: Via,
    caller: String,
}

impl Download {
    /// A download of `counted`'s `version` by `caller` (`auth::Viewer::caller`).
    pub fn new(counted: Counted, version: &semver::Version, via: Via, caller: &str) -> Self {
        Download { counted, version: version.to_string(), platform: None, via, caller: bounded_caller(caller) }
    }

    /// The same, of one platform's package.
    pub fn on(self, platform: &layout::Platform) -> Self {
        Download { platform: Some(format!("{}_{}", platform.os, platform.arch)), ..self }
    }

    /// The log line that carries it (one line: JSON escapes every control character).
    pub fn line(&self) -> String {
        let record = Record {
            v: RECORD_VERSION,
            kind: self.counted.kind().to_string(),
            owner: self.counted.to_string(),
            version: self.version.clone(),
            platform: self.platform.clone(),
            via: self.via,
            caller: self.caller.clone(),
        };
        let line = serde_json::json!({"level": "INFO", "usage": record});
        line.to_string()
    }

    /// A log line read back: `None` for a line that is no usage record (another log line),
    /// an error for one that claims to be and is not valid (an unknown address, version or
    /// platform grammar, another record version).
    pub fn from_line(message: &str) -> Option<Result<Download, Error>> {
        let line: Line = serde_json::from_str(message.trim_end()).ok()?;
        Some(Download::from_record(line.usage))
    }

    fn from_record(record: Record) -> Result<Download, Error> {
        if record.v != RECORD_VERSION {
            return Err(Error::BadRequest(format!("usage record version {} (this reads {RECORD_VERSION})", record.v)));
        }
        let counted = Counted::parse(&record.kind, &record.owner)?;
        let version = crate::address::parse_version(&record.version)?.to_string();
        let platform = match record.platform {
            Some(p) => {
                let (os, arch) = p.split_once('_').ok_or_else(|| Error::BadRequest(format!("platform {p:?}")))?;
                let platform = layout::Platform::parse(os, arch)?;
                Some(format!("{}_{}", platform.os, platform.arch))
            }
            None => None,
        };
        Ok(Download { counted, version, platform, via: record.via, caller: bounded_caller(&record.caller) })
    }
}

/// A caller name as stored: at most `CALLER_MAX_LEN` characters, none of them a control
/// character (a name is shown on pages and printed by reports; it is escaped there too).
fn bounded_caller(name: &str) -> String {
    name.chars().take(CALLER_MAX_LEN).map(|c| if c.is_control() { '?' } else { c }).collect()
}

/// Where a read function's download records go.
#[derive(Debug, Clone)]
pub enum Sink {
    /// Its log (stdout), where the CloudWatch Logs subscription finds them: the Lambdas.
    Log,
    /// A channel to the in-process aggregator: the local registry, and tests.
    Channel(tokio::sync::mpsc::UnboundedSender<String>),
    /// Nowhere.
    Off,
}

impl Sink {
    /// Count `download`. Never fails and never waits: a lost line is a lost count, not a
    /// failed download.
    pub fn count(&self, download: &Download) {
        match self {
            Sink::Log => {
                use std::io::Write;
                // One write of the whole line under the lock: never interleaved with the
                // subscriber's lines.
                let mut line = download.line();
                line.push('\n');
                let _ = std::io::stdout().lock().write_all(line.as_bytes());
            }
            Sink::Channel(sender) => {
                let _ = sender.send(download.line());
            }
            Sink::Off => {}
        }
    }
}
