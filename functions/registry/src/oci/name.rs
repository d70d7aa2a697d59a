//! The OCI routes' grammar, on the raw path: `/v2/`, `/v2/token`, `/v2/NAME/tags/list`,
//! `/v2/NAME/manifests/REFERENCE` and `/v2/NAME/blobs/DIGEST`, where NAME is a provider's
//! repository, `providers/HOSTNAME/NAMESPACE/TYPE` (what an `oci_mirror`'s
//! `repository_template` names), or a module's, `modules/NAMESPACE/NAME/SYSTEM` (an `oci://`
//! source), and a tag is a version with `_` for SemVer's `+` (OpenTofu's rule for providers;
//! modules follow it too). Every component must be one the OCI name grammar allows (lower
//! case), so an address that is not (a hostname with a port) has no repository.

use crate::address::{ModuleAddress, ProviderAddress, parse_version, printable};
use crate::error::Error;

/// The first component of a provider's repository name.
pub const PROVIDERS: &str = "providers";
/// The first component of a module's repository name.
pub const MODULES: &str = "modules";

/// A repository this registry serves.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Repository {
    /// `providers/HOSTNAME/NAMESPACE/TYPE`: a provider's versions as tags.
    Provider(ProviderAddress),
    /// `modules/NAMESPACE/NAME/SYSTEM`: a module's versions as tags.
    Module(ModuleAddress),
}

impl Repository {
    /// The repository of a provider, if its address fits the OCI name grammar.
    pub fn of_provider(provider: &ProviderAddress) -> Option<Repository> {
        let parts = [provider.hostname.as_str(), provider.namespace.as_str(), provider.r#type.as_str()];
        parts.iter().all(|p| is_component(p)).then(|| Repository::Provider(provider.clone()))
    }

    /// The repository of a module, if its address fits the OCI name grammar.
    pub fn of_module(module: &ModuleAddress) -> Option<Repository> {
        let parts = [module.namespace.as_str(), module.name.as_str(), module.system.as_str()];
        parts.iter().all(|p| is_component(p)).then(|| Repository::Module(module.clone()))
    }

    /// Parse a repository name (400 `NAME_INVALID` for one that is no provider's or module's).
    pub fn parse(name: &str) -> Result<Repository, Error> {
        let refuse = || {
            Error::BadRequest(format!(
                "repository name {:?} is not providers/HOSTNAME/NAMESPACE/TYPE or modules/NAMESPACE/NAME/SYSTEM in lower case",
                printable(name)
            ))
        };
        let parts: Vec<&str> = name.split('/').collect();
        match parts.as_slice() {
            [PROVIDERS, hostname, namespace, r#type] => {
                let provider = ProviderAddress::parse(hostname, namespace, r#type).map_err(|_| refuse())?;
                Repository::of_provider(&provider).ok_or_else(refuse)
            }
            [MODULES, namespace, name, system] => {
                let module = ModuleAddress::parse(namespace, name, system).map_err(|_| refuse())?;
                Repository::of_module(&module).ok_or_else(refuse)
            }
            _ => Err(refuse()),
        }
    }

    /// The repository's name, as clients spell it.
    pub fn name(&self) -> String {
        match self {
            Repository::Provider(p) => format!("{PROVIDERS}/{}/{}/{}", p.hostname, p.namespace, p.r#type),
            Repository::Module(m) => format!("{MODULES}/{}/{}/{}", m.namespace, m.name, m.system),
        }
    }
}

/// One component of a repository name: `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*`.
fn is_component(s: &str) -> bool {
    let alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    let bytes = s.as_bytes();
    if bytes.is_empty() || !alnum(bytes[0]) || !alnum(bytes[bytes.len() - 1]) || s.len() > 128 {
        return false;
    }
    // Separators: one `.`, one or two `_`, any run of `-`; never mixed, never at the ends.
    s.split(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        .filter(|sep| !sep.is_empty())
        .all(|sep| sep == "." || sep == "_" || sep == "__" || sep.bytes().all(|b| b == b'-'))
        && bytes.iter().all(|b| alnum(*b) || matches!(b, b'.' | b'_' | b'-'))
}

/// A manifest's reference: a tag (a version) or a digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reference {
    /// A version, spelled as a tag.
    Tag(semver::Version),
    /// `latest` ([`LATEST`]): a module's highest release, what OpenTofu asks for when an
    /// `oci://` source names no tag (`internal/getmodules/oci_getter.go`). Providers have none.
    Latest,
    /// `sha256:HEX`, as sent (64 lower-case hex digits).
    Digest(String),
}

/// The one tag that is not a version.
pub const LATEST: &str = "latest";

/// A version's tag: SemVer with `_` for `+` (a tag cannot hold `+`).
pub fn tag(version: &semver::Version) -> String {
    version.to_string().replace('+', "_")
}

/// The version a tag names (400 for a tag that is none).
pub fn version_of_tag(tag: &str) -> Result<semver::Version, Error> {
    if tag.contains('+') {
        return Err(Error::BadRequest(format!("tag {:?}: build metadata is written with `_`", printable(tag))));
    }
    parse_version(&tag.replacen('_', "+", 1))
}

/// A digest this registry can hold: `sha256:` and 64 lower-case hex digits.
pub fn parse_digest(raw: &str) -> Result<String, Error> {
    match raw.strip_prefix("sha256:") {
        Some(hex) if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) => {
            Ok(raw.to_string())
        }
        _ => Err(Error::BadRequest(format!("digest {:?} is not sha256:<64 hex digits>", printable(raw)))),
    }
}

/// What an OCI route asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OciRoute {
    /// `/v2/`: may this client talk to the registry.
    Base,
    /// `/v2/token?service=…&scope=…`: the token endpoint a `Bearer` challenge names
    /// (distribution's token authentication), where a client trades what it holds for the
    /// bearer token it sends next.
    Token,
    /// `/v2/NAME/tags/list[?n=N&last=TAG]`
    Tags {
        /// NAME.
        repository: Repository,
        /// At most this many tags.
        n: Option<usize>,
        /// Only tags after this one.
        last: Option<String>,
    },
    /// `/v2/NAME/manifests/REFERENCE`
    Manifest {
        /// NAME.
        repository: Repository,
        /// A tag or a digest.
        reference: Reference,
    },
    /// `/v2/NAME/blobs/DIGEST`
    Blob {
        /// NAME.
        repository: Repository,
        /// `sha256:HEX`.
        digest: String,
    },
}

impl OciRoute {
    /// Its name in logs and metrics.
    pub fn log_name(&self) -> &'static str {
        match self {
            OciRoute::Base => "oci_base",
            OciRoute::Token => "oci_token",
            OciRoute::Tags { .. } => "oci_tags",
            OciRoute::Manifest { .. } => "oci_manifest",
            OciRoute::Blob { .. } => "oci_blob",
        }
    }
}

/// Which kind of route a path under `/v2/` is, by its tail alone: what an error answer
/// names (`MANIFEST_UNKNOWN` or `BLOB_UNKNOWN`, …) even when the rest does not parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `/v2/`
    Base,
    /// `/v2/token`
    Token,
    /// `…/tags/list`
    Tags,
    /// `…/manifests/…`
    Manifest,
    /// `…/blobs/…`
    Blob,
    /// Anything else.
    Other,
}

/// The kind of `rest` (the path after `/v2/`), and its repository name and last segment.
fn split(rest: &str) -> (Kind, &str, &str) {
    if rest.is_empty() {
        return (Kind::Base, "", "");
    }
    if rest == TOKEN {
        return (Kind::Token, "", "");
    }
    // A reference or digest holds no `/`, so a route's keyword is the path's second-to-last
    // segment, and a name may hold `tags`, `manifests` or `blobs` as a component (a module
    // named `manifests`): the keyword nearest the end decides.
    if let Some(name) = rest.strip_suffix("/tags/list") {
        return (Kind::Tags, name, "");
    }
    let manifest = rest.rsplit_once("/manifests/").map(|(name, last)| (Kind::Manifest, name, last));
    let blob = rest.rsplit_once("/blobs/").map(|(name, last)| (Kind::Blob, name, last));
    // The later keyword (the longer name) is the one whose remainder can be a reference; when
    // neither's is, it still says which route an error answers for.
    [manifest, blob].into_iter().flatten().max_by_key(|(_, name, _)| name.len()).unwrap_or((Kind::Other, rest, ""))
}

/// The kind of a raw path under `/v2/` (`Other` for any other path).
pub fn kind(raw_path: &str) -> Kind {
    raw_path.strip_prefix(BASE_PATH_TRIMMED).map_or(Kind::Other, |rest| match rest {
        "" | "/" => Kind::Base,
        rest => split(rest.strip_prefix('/').unwrap_or(rest)).0,
    })
}

const BASE_PATH_TRIMMED: &str = "/v2";

/// The token endpoint's path after `/v2/` (no repository name is one word).
pub const TOKEN: &str = "token";

/// What a token request may say (distribution's token authentication spec, "Requesting a
/// Token"): none of it changes the answer, since the token is the credential presented and
/// every route checks it anew, but anything else is refused, as on every route.
const TOKEN_QUERY_KEYS: [&str; 5] = ["service", "scope", "account", "client_id", "offline_token"];

/// Whether a bad request under `/v2/` is about its repository name (`NAME_INVALID`) rather
/// than its reference, digest or query.
pub fn name_is_invalid(raw_path: &str) -> bool {
    let rest = raw_path.strip_prefix(super::BASE_PATH).unwrap_or_default();
    let (kind, name, _) = split(rest);
    !matches!(kind, Kind::Base | Kind::Token) && Repository::parse(name).is_err()
}

/// The repository a raw path under `/v2/` names, if it names one this registry could serve.
pub fn repository_of(raw_path: &str) -> Option<Repository> {
    let rest = raw_path.strip_prefix(super::BASE_PATH)?;
    let (kind, name, _) = split(rest);
    matches!(kind, Kind::Tags | Kind::Manifest | Kind::Blob).then(|| Repository::parse(name).ok()).flatten()
}

/// Route a path under `/v2/` (`rest`: after `/v2/`) with its query.
pub fn parse(rest: &str, query: Option<&str>) -> Result<OciRoute, Error> {
    let query = query.filter(|q| !q.is_empty());
    let (kind, name, last) = split(rest);
    if kind == Kind::Other {
        return Err(Error::NotFound(format!("no OCI endpoint at /v2/{:?}", printable(rest))));
    }
    if kind == Kind::Token {
        token_query(query)?;
        return Ok(OciRoute::Token);
    }
    if kind != Kind::Tags && query.is_some() {
        return Err(Error::BadRequest("query strings are only read by tags/list and token".into()));
    }
    if kind == Kind::Base {
        return Ok(OciRoute::Base);
    }
    let repository = Repository::parse(name)?;
    Ok(match kind {
        Kind::Tags => {
            let (n, last) = tags_query(query)?;
            OciRoute::Tags { repository, n, last }
        }
        Kind::Manifest if last.starts_with("sha256:") => {
            OciRoute::Manifest { repository, reference: Reference::Digest(parse_digest(last)?) }
        }
        Kind::Manifest if last == LATEST => OciRoute::Manifest { repository, reference: Reference::Latest },
        Kind::Manifest => OciRoute::Manifest { repository, reference: Reference::Tag(version_of_tag(last)?) },
        Kind::Blob => OciRoute::Blob { repository, digest: parse_digest(last)? },
        Kind::Base | Kind::Token | Kind::Other => unreachable!("answered above"),
    })
}

/// A token request's query: only the keys the token spec names (`scope` may repeat).
fn token_query(query: Option<&str>) -> Result<(), Error> {
    let Some(query) = query else { return Ok(()) };
    for pair in query.split('&') {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if crate::percent::decode(value, true).is_none() {
            return Err(Error::BadRequest(format!("{:?} is not percent-encoded", printable(value))));
        }
        if !TOKEN_QUERY_KEYS.contains(&key) {
            return Err(Error::BadRequest(format!(
                "the token endpoint reads {}, not {:?}",
                TOKEN_QUERY_KEYS.join(", "),
                printable(key)
            )));
        }
    }
    Ok(())
}

/// `n` (1 to `TAGS_PAGE_MAX`) and `last` (a tag), each at most once; nothing else.
fn tags_query(query: Option<&str>) -> Result<(Option<usize>, Option<String>), Error> {
    let (mut n, mut last) = (None, None);
    let Some(query) = query else { return Ok((n, last)) };
    for pair in query.split('&') {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "n" if n.is_none() => {
                let parsed = value.parse::<usize>().ok().filter(|n| (1..=super::TAGS_PAGE_MAX).contains(n));
                n = Some(parsed.ok_or_else(|| {
                    Error::BadRequest(format!("n must be 1 to {}, not {:?}", super::TAGS_PAGE_MAX, printable(value)))
                })?);
            }
            "last" if last.is_none() => {
                version_of_tag(value)?;
                last = Some(value.to_string());
            }
            _ => {
                return Err(Error::BadRequest(format!(
                    "tags/list reads n and last once each, not {:?}",
                    printable(key)
                )));
            }
        }
    }
    Ok((n, last))
}

#[cfg(test)]
mod tests;
