//! What a caller may read: the anonymous policy, a token's scopes (globs over module
//! namespaces and provider addresses), and the decision for one resource.

use crate::address::{ModuleAddress, ProviderAddress, UpstreamModule};

use super::tokens::{TokenRecord, TokenStore, bearer};

/// Who may read without a token; from `REGISTRY_ANONYMOUS_MODULES` and
/// `REGISTRY_ANONYMOUS_PROVIDERS` (comma-separated globs; empty: nobody).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// Module namespaces anyone may read (globs).
    pub anonymous_modules: Vec<String>,
    /// Providers anyone may read (`HOSTNAME/NAMESPACE/TYPE` globs).
    pub anonymous_providers: Vec<String>,
}

/// What a request reads.
#[derive(Debug, Clone, Copy)]
pub enum Resource<'a> {
    /// A module's versions or download.
    Module(&'a ModuleAddress),
    /// A mirrored provider's versions or packages.
    Provider(&'a ProviderAddress),
    /// An upstream registry's module (the modules pull-through): module globs that hold a `/`
    /// match `HOSTNAME/NAMESPACE` (`UpstreamModule::scope`), so `registry.terraform.io/*`
    /// grants every module of that host; `*` grants everything, as for private modules; any
    /// other glob without a `/` is one of private namespaces (`acme`, `*-modules`) and grants
    /// none (`upstream_glob`).
    UpstreamModule(&'a UpstreamModule),
}

#[derive(Debug, Clone, PartialEq, Eq)]
/// What one request may do.
pub enum Decision {
    /// Answer it.
    Allow,
    /// No usable token: 401.
    Unauthenticated(&'static str),
    /// A valid token that may not read this: 404, indistinguishable from "does not exist".
    Hidden,
}

impl Policy {
    /// Whether `resource` may be read without a token.
    pub fn anonymous(&self, resource: Resource<'_>) -> bool {
        match resource {
            Resource::Module(m) => self.anonymous_modules.iter().any(|g| glob(g, &m.namespace)),
            Resource::Provider(p) => self.anonymous_providers.iter().any(|g| glob(g, &p.to_string())),
            Resource::UpstreamModule(m) => self.anonymous_modules.iter().any(|g| upstream_glob(g, m)),
        }
    }
}

/// Who is asking: what an answer that lists many things (the catalog, a search) filters
/// each item by, with the same rules as `decision` for one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Viewer {
    /// No token: what the anonymous policy allows.
    Anonymous,
    /// A valid, unexpired token: its scopes, and what the anonymous policy allows.
    Token(TokenRecord),
}

impl Viewer {
    /// Whether this viewer may read the modules of `namespace` under `policy`: module scopes
    /// are namespace globs, so this is `may_read` of any module there (what the catalog's
    /// index is filtered by before a shard is read).
    pub fn may_read_namespace(&self, policy: &Policy, namespace: &str) -> bool {
        let token = match self {
            Viewer::Anonymous => false,
            Viewer::Token(record) => record.modules.iter().any(|g| glob(g, namespace)),
        };
        token || policy.anonymous_modules.iter().any(|g| glob(g, namespace))
    }

    /// Who this is, as download counts name a caller (`usage`): `anonymous`, `token NAME`, or
    /// an OpenID Connect caller as the verifier names it (`oidc ISSUER SUBJECT`); never the
    /// token itself.
    pub fn caller(&self) -> String {
        match self {
            Viewer::Anonymous => "anonymous".to_string(),
            Viewer::Token(record) if record.name.starts_with("oidc ") => record.name.clone(),
            Viewer::Token(record) => format!("token {}", record.name),
        }
    }

    /// Whether this viewer may see who downloads `resource` (`usage`): an admin token whose
    /// own scopes cover it. The anonymous policy opens a module to everyone; never its callers.
    pub fn may_see_callers(&self, resource: Resource<'_>) -> bool {
        matches!(self, Viewer::Token(record) if record.admin && scopes_cover(record, resource))
    }

    /// Whether this viewer may read `resource` under `policy`.
    pub fn may_read(&self, policy: &Policy, resource: Resource<'_>) -> bool {
        let token = match self {
            Viewer::Anonymous => false,
            Viewer::Token(record) => scopes_cover(record, resource),
        };
        token || policy.anonymous(resource)
    }
}

/// Whether a token's scopes cover `resource`.
fn scopes_cover(record: &TokenRecord, resource: Resource<'_>) -> bool {
    match resource {
        Resource::Module(m) => record.modules.iter().any(|g| glob(g, &m.namespace)),
        Resource::Provider(p) => record.providers.iter().any(|g| glob(g, &p.to_string())),
        Resource::UpstreamModule(m) => record.modules.iter().any(|g| upstream_glob(g, m)),
    }
}

/// Whether a module glob grants an upstream module: `*`, or a glob naming a host (`HOST/NS`).
/// A glob of private namespaces alone (`*-modules`, `*aws*`) must not reach across the `/` of
/// `registry.terraform.io/terraform-aws-modules`.
fn upstream_glob(pattern: &str, module: &UpstreamModule) -> bool {
    pattern == "*" || (pattern.contains('/') && glob(pattern, &module.scope()))
}

/// Why a header that holds no bearer token is refused.
const NOT_BEARER: &str =
    "the Authorization header must be \"Bearer TOKEN\", a token of at most 8192 printable characters";

/// Who presents `authorization`: `Err` (why) for a header that is not a usable token (401).
/// `store` is `None` when no token store exists yet (nobody has a token).
pub fn viewer(store: Option<&TokenStore>, authorization: Option<&str>, now_unix: i64) -> Result<Viewer, &'static str> {
    let Some(header) = authorization else { return Ok(Viewer::Anonymous) };
    let Some(token) = bearer(header) else {
        return Err(NOT_BEARER);
    };
    let Some(record) = store.and_then(|s| s.find(token)) else {
        return Err("unknown or revoked token");
    };
    if record.expired(now_unix) {
        return Err("expired token");
    }
    Ok(Viewer::Token(record.clone()))
}

/// Decide one request. `store` is `None` when no token store exists yet (nobody has a token).
pub fn decision_for_header(
    policy: &Policy,
    store: Option<&TokenStore>,
    authorization: Option<&str>,
    resource: Resource<'_>,
    now_unix: i64,
) -> Decision {
    match viewer(store, authorization, now_unix) {
        Err(why) => Decision::Unauthenticated(why),
        Ok(viewer) => decision(policy, &viewer, resource),
    }
}

/// Decide for a viewer already known (a static token found in the store, or a verified JWT):
/// what `decision_for_header` does once the token is resolved.
pub fn decision(policy: &Policy, viewer: &Viewer, resource: Resource<'_>) -> Decision {
    match viewer {
        viewer if viewer.may_read(policy, resource) => Decision::Allow,
        Viewer::Anonymous => Decision::Unauthenticated("a bearer token is required"),
        Viewer::Token(_) => Decision::Hidden,
    }
}

pub use crate::glob::glob;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::tokens::hash;

    fn record(name: &str, token: &str, modules: &[&str], providers: &[&str], expires_at: Option<&str>) -> TokenRecord {
        TokenRecord {
            name: name.into(),
            sha256: hex::encode(hash(token)),
            created_at: "2026-11-22T00:00:00Z".into(),
            expires_at: expires_at.map(str::to_string),
            modules: modules.iter().map(|s| s.to_string()).collect(),
            providers: providers.iter().map(|s| s.to_string()).collect(),
            admin: false,
        }
    }

    #[test]
    fn only_star_or_a_glob_naming_a_host_grants_an_upstream_module() {
        let m = UpstreamModule::parse("registry.terraform.io", "terraform-aws-modules", "vpc", "aws").unwrap();
        for (pattern, grants) in [
            ("*", true),
            ("registry.terraform.io/*", true),
            ("registry.terraform.io/terraform-aws-*", true),
            ("*/terraform-aws-modules", true),
            ("registry.opentofu.org/*", false),
            ("*-modules", false),
            ("*aws*", false),
            ("r*", false),
            ("terraform-aws-modules", false),
        ] {
            let token = record("t", "trg_t", &[pattern], &[], None);
            let viewer = Viewer::Token(token);
            assert_eq!(viewer.may_read(&Policy::default(), Resource::UpstreamModule(&m)), grants, "{pattern}");
            let anonymous = Policy { anonymous_modules: vec![pattern.into()], ..Policy::default() };
            assert_eq!(
                Viewer::Anonymous.may_read(&anonymous, Resource::UpstreamModule(&m)),
                grants,
                "anonymous {pattern}"
            );
        }
    }

    #[test]
    fn a_namespace_is_readable_exactly_when_its_modules_are() {
        let m = ModuleAddress::parse("team-net", "vpc", "aws").unwrap();
        for pattern in ["*", "team-*", "team-net", "team", "other", "t?am-net", "registry.terraform.io/*"] {
            let viewer = Viewer::Token(record("t", "trg_t", &[pattern], &[], None));
            let policy = Policy { anonymous_modules: vec![pattern.into()], ..Policy::default() };
            for (viewer, policy) in [(&viewer, &Policy::default()), (&Viewer::Anonymous, &policy)] {
                assert_eq!(
                    viewer.may_read_namespace(policy, &m.namespace),
                    viewer.may_read(policy, Resource::Module(&m)),
                    "{pattern}"
                );
            }
        }
    }

    #[test]
    fn globs() {
        let cases = [
            ("*", "anything/at/all", true),
            ("acme", "acme", true),
            ("acme", "acme2", false),
            ("team-*", "team-net", true),
            ("team-*", "teams", false),
            ("registry.terraform.io/hashicorp/*", "registry.terraform.io/hashicorp/aws", true),
            ("registry.terraform.io/hashicorp/*", "registry.terraform.io/acme/aws", false),
            ("*/acme/*", "example.com/acme/widget", true),
            ("a?c", "abc", true),
            ("a?c", "ac", false),
            ("", "", true),
            ("", "a", false),
        ];
        for (pattern, text, want) in cases {
            assert_eq!(glob(pattern, text), want, "{pattern} ~ {text}");
        }
    }

    #[test]
    fn decisions() {
        let store = TokenStore {
            format: 1,
            tokens: vec![
                record(
                    "ci",
                    "trg_ci",
                    &["acme", "team-*"],
                    &["registry.terraform.io/hashicorp/*"],
                    Some("2030-01-01T00:00:00Z"),
                ),
                record("old", "trg_old", &["*"], &["*"], Some("2020-01-01T00:00:00Z")),
                record("bad-expiry", "trg_bad", &["*"], &["*"], Some("next year")),
            ],
        };
        let policy = Policy { anonymous_modules: vec!["public".into()], anonymous_providers: vec![] };
        let now = crate::clock::parse_rfc3339("2026-11-22T00:00:00Z").unwrap();
        let acme = ModuleAddress::parse("acme", "vpc", "aws").unwrap();
        let team = ModuleAddress::parse("team-net", "vpc", "aws").unwrap();
        let other = ModuleAddress::parse("other", "vpc", "aws").unwrap();
        let public = ModuleAddress::parse("public", "vpc", "aws").unwrap();
        let aws = ProviderAddress::parse("registry.terraform.io", "hashicorp", "aws").unwrap();
        let widget = ProviderAddress::parse("example.com", "acme", "widget").unwrap();
        use Decision::*;
        use Resource::*;
        let cases: Vec<(Option<&str>, Resource<'_>, Decision)> = vec![
            (None, Module(&acme), Unauthenticated("a bearer token is required")),
            (None, Module(&public), Allow),
            (None, Provider(&aws), Unauthenticated("a bearer token is required")),
            (Some("Bearer trg_ci"), Module(&acme), Allow),
            (Some("bearer   trg_ci "), Module(&team), Allow),
            (Some("Bearer trg_ci"), Module(&other), Hidden),
            (Some("Bearer trg_ci"), Module(&public), Allow),
            (Some("Bearer trg_ci"), Provider(&aws), Allow),
            (Some("Bearer trg_ci"), Provider(&widget), Hidden),
            (Some("Bearer trg_wrong"), Module(&public), Unauthenticated("unknown or revoked token")),
            (Some("Bearer trg_old"), Module(&acme), Unauthenticated("expired token")),
            (Some("Bearer trg_bad"), Module(&acme), Unauthenticated("expired token")),
            (Some("Basic dXNlcjpwYXNz"), Module(&acme), Unauthenticated(NOT_BEARER)),
            (Some("Bearer"), Module(&acme), Unauthenticated(NOT_BEARER)),
            (Some("Bearer trg\u{7f}x"), Module(&acme), Unauthenticated(NOT_BEARER)),
        ];
        for (header, resource, want) in cases {
            assert_eq!(
                decision_for_header(&policy, Some(&store), header, resource, now),
                want,
                "{header:?} {resource:?}"
            );
        }
        // No token store yet: every token is unknown.
        assert_eq!(
            decision_for_header(&policy, None, Some("Bearer trg_ci"), Module(&acme), now),
            Unauthenticated("unknown or revoked token")
        );
    }
}
