//! Module and provider addresses, validated against the protocol grammar before any of their
//! parts is used in an S3 key. The grammar is deliberately the registry's own (as Terraform's
//! `regsrc`/`tfaddr` packages define it), which has no room for `.`, `/`, `%`, `\` or
//! control characters, so a valid address can never escape its key prefix.

use std::fmt;

use crate::error::Error;

/// Longest version string we accept; SemVer puts no bound on it, we do.
pub const VERSION_MAX_LEN: usize = 128;
/// Longest provider origin hostname (DNS limit) plus an optional `:port`.
pub const HOSTNAME_MAX_LEN: usize = 253 + 6;

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
/// A module's address in the registry: `NAMESPACE/NAME/SYSTEM`.
pub struct ModuleAddress {
    /// The publisher's namespace (`acme`).
    pub namespace: String,
    /// The module's name (`network`).
    pub name: String,
    /// The target system, usually a provider type (`aws`).
    pub system: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
/// A provider's address: `HOSTNAME/NAMESPACE/TYPE`.
pub struct ProviderAddress {
    /// The provider's origin registry host (e.g. `registry.terraform.io`), not the mirror's.
    pub hostname: String,
    /// The provider's namespace (`hashicorp`).
    pub namespace: String,
    /// The provider's type (`aws`).
    pub r#type: String,
}

impl ModuleAddress {
    /// Validate each part against the protocol grammar (400 otherwise).
    pub fn parse(namespace: &str, name: &str, system: &str) -> Result<Self, Error> {
        check("namespace", namespace, is_module_name)?;
        check("name", name, is_module_name)?;
        check("system", system, is_module_system)?;
        Ok(ModuleAddress { namespace: namespace.into(), name: name.into(), system: system.into() })
    }
}

impl fmt::Display for ModuleAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.namespace, self.name, self.system)
    }
}

impl ProviderAddress {
    /// Validate each part against the protocol grammar (400 otherwise).
    pub fn parse(hostname: &str, namespace: &str, r#type: &str) -> Result<Self, Error> {
        check("hostname", hostname, is_hostname)?;
        check("namespace", namespace, is_provider_part)?;
        check("type", r#type, is_provider_part)?;
        Ok(ProviderAddress { hostname: hostname.into(), namespace: namespace.into(), r#type: r#type.into() })
    }
}

impl fmt::Display for ProviderAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.hostname, self.namespace, self.r#type)
    }
}

/// A module of an upstream registry, as the pull-through names it: `HOSTNAME/NAMESPACE/NAME/SYSTEM`
/// (`registry.terraform.io/terraform-aws-modules/vpc/aws`). The hostname follows the provider
/// hostname grammar (a dot, lower case), so it can never be a namespace.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UpstreamModule {
    /// The upstream registry's host (`registry.terraform.io`).
    pub hostname: String,
    /// The module's address at that host.
    pub module: ModuleAddress,
}

impl UpstreamModule {
    /// Validate each part against the protocol grammar (400 otherwise).
    pub fn parse(hostname: &str, namespace: &str, name: &str, system: &str) -> Result<Self, Error> {
        check("hostname", hostname, is_hostname)?;
        Ok(UpstreamModule { hostname: hostname.into(), module: ModuleAddress::parse(namespace, name, system)? })
    }

    /// `HOSTNAME/NAMESPACE`: what a token's module scopes and the anonymous policy match for it
    /// (an upstream host is a scope as a namespace is: `registry.terraform.io/*`).
    pub fn scope(&self) -> String {
        format!("{}/{}", self.hostname, self.module.namespace)
    }
}

impl fmt::Display for UpstreamModule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.hostname, self.module)
    }
}

/// A provider of this registry's own host, as providers.v1 names it (`NAMESPACE/TYPE`; the
/// host is the one the request was sent to, `REGISTRY_HOSTNAME`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProviderName {
    /// The provider's namespace (`acme`).
    pub namespace: String,
    /// The provider's type (`widget`).
    pub r#type: String,
}

impl ProviderName {
    /// Validate each part against the protocol grammar (400 otherwise).
    pub fn parse(namespace: &str, r#type: &str) -> Result<Self, Error> {
        check("namespace", namespace, is_provider_part)?;
        check("type", r#type, is_provider_part)?;
        Ok(ProviderName { namespace: namespace.into(), r#type: r#type.into() })
    }

    /// The full address at the registry's host (already validated by `Config`).
    pub fn at(&self, hostname: &str) -> ProviderAddress {
        ProviderAddress { hostname: hostname.into(), namespace: self.namespace.clone(), r#type: self.r#type.clone() }
    }
}

impl fmt::Display for ProviderName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.r#type)
    }
}

/// Parse a SemVer 2.0 version. Only the canonical spelling is accepted, so each version has
/// exactly one URL and one S3 key (`1.0.0`, never `v1.0.0` or `1.0`).
pub fn parse_version(raw: &str) -> Result<semver::Version, Error> {
    if raw.is_empty() || raw.len() > VERSION_MAX_LEN {
        return Err(Error::BadRequest(format!("version must be 1 to {VERSION_MAX_LEN} characters")));
    }
    let version = semver::Version::parse(raw)
        .map_err(|e| Error::BadRequest(format!("version {:?} is not SemVer 2.0: {e}", printable(raw))))?;
    if version.to_string() != raw {
        return Err(Error::BadRequest(format!("version {:?} is not in canonical SemVer form", printable(raw))));
    }
    Ok(version)
}

fn check(what: &str, value: &str, ok: fn(&str) -> bool) -> Result<(), Error> {
    if ok(value) { Ok(()) } else { Err(Error::BadRequest(format!("invalid {what} {:?}", printable(value)))) }
}

/// Echo at most 64 printable ASCII characters of hostile input back in an error message.
pub(crate) fn printable(raw: &str) -> String {
    raw.chars().take(64).map(|c| if c.is_ascii_graphic() || c == ' ' { c } else { '?' }).collect()
}

/// Module namespace and name: `[0-9A-Za-z](?:[0-9A-Za-z-_]{0,62}[0-9A-Za-z])?`.
fn is_module_name(s: &str) -> bool {
    let b = s.as_bytes();
    (1..=64).contains(&b.len())
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-' || *c == b'_')
}

/// Module target system: `[0-9a-z]{1,64}`.
fn is_module_system(s: &str) -> bool {
    (1..=64).contains(&s.len()) && s.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
}

/// Provider namespace and type: `[0-9A-Za-z](?:[0-9A-Za-z-]{0,62}[0-9A-Za-z])?`. No `_`: the
/// package file name `terraform-provider-TYPE_VERSION_OS_ARCH.zip` uses it as a separator.
fn is_provider_part(s: &str) -> bool {
    let b = s.as_bytes();
    (1..=64).contains(&b.len())
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
}

/// A lower-case DNS name of at least two labels (Terraform normalises provider hostnames to
/// lower case), optionally with `:port`.
fn is_hostname(s: &str) -> bool {
    if s.is_empty() || s.len() > HOSTNAME_MAX_LEN {
        return false;
    }
    let (host, port) = match s.split_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (s, None),
    };
    if let Some(p) = port {
        let ok = !p.is_empty()
            && p.len() <= 5
            && p.bytes().all(|c| c.is_ascii_digit())
            && p.parse::<u16>().is_ok_and(|n| n > 0);
        if !ok {
            return false;
        }
    }
    let labels: Vec<&str> = host.split('.').collect();
    host.len() <= 253
        && labels.len() >= 2
        && labels.iter().all(|l| {
            let b = l.as_bytes();
            (1..=63).contains(&b.len())
                && b[0] != b'-'
                && b[b.len() - 1] != b'-'
                && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_addresses() {
        let ok = [
            ("hashicorp", "consul", "aws"),
            ("a", "b", "c"),
            ("My_Org-1", "vpc_module", "azurerm2"),
            (&"x".repeat(64)[..], "n", "s"),
        ];
        for (ns, n, s) in ok {
            assert!(ModuleAddress::parse(ns, n, s).is_ok(), "{ns}/{n}/{s}");
        }
        let bad = [
            ("", "n", "s"),
            ("..", "n", "s"),
            (".", "n", "s"),
            ("-ns", "n", "s"),
            ("ns_", "n", "s"),
            ("n%2e", "n", "s"),
            ("ns", "a/b", "s"),
            ("ns", "a\\b", "s"),
            ("ns", "n", "AWS"),
            ("ns", "n", "a-b"),
            ("ns", "n\0", "s"),
            ("ns", "ｎ", "s"),
            (&"x".repeat(65)[..], "n", "s"),
        ];
        for (ns, n, s) in bad {
            let err = ModuleAddress::parse(ns, n, s).unwrap_err();
            assert_eq!(err.status().as_u16(), 400, "{ns:?}/{n:?}/{s:?}");
        }
    }

    #[test]
    fn provider_addresses() {
        let ok = [
            ("registry.terraform.io", "hashicorp", "aws"),
            ("example.com:8443", "acme", "my-thing"),
            ("a.b", "C0", "t"),
        ];
        for (h, ns, t) in ok {
            assert!(ProviderAddress::parse(h, ns, t).is_ok(), "{h}/{ns}/{t}");
        }
        let bad = [
            ("localhost", "ns", "t"),
            ("Registry.terraform.io", "ns", "t"),
            ("a..b", "ns", "t"),
            ("..", "ns", "t"),
            ("a.b:", "ns", "t"),
            ("a.b:0", "ns", "t"),
            ("a.b:99999", "ns", "t"),
            ("a.b:80:80", "ns", "t"),
            ("-a.b", "ns", "t"),
            ("a.b", "n_s", "t"),
            ("a.b", "ns", "t_x"),
            ("a.b", "ns", "t.json"),
            ("a.b", "ns", ""),
        ];
        for (h, ns, t) in bad {
            assert!(ProviderAddress::parse(h, ns, t).is_err(), "{h:?}/{ns:?}/{t:?}");
        }
    }

    #[test]
    fn versions() {
        for ok in ["0.0.1", "1.2.3", "1.0.0-beta.1", "1.0.0+build.5", "10.20.30-rc.1+meta"] {
            assert_eq!(parse_version(ok).unwrap().to_string(), ok);
        }
        let long = format!("1.0.0-{}", "a".repeat(200));
        for bad in [
            "",
            "1",
            "1.0",
            "v1.0.0",
            "01.0.0",
            "1.0.0-",
            "1.0.0/..",
            "1.0.0%2f",
            " 1.0.0",
            "99999999999999999999.0.0",
            &long[..],
        ] {
            assert_eq!(parse_version(bad).unwrap_err().status().as_u16(), 400, "{bad:?}");
        }
    }
}
