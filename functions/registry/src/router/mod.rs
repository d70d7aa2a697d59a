//! The one pure router, shared by the Lambdas and the local registry: (method, raw path) to a
//! route with validated addresses. It reads the raw path as the client sent it, never a
//! decoded or normalised one, so `%2e%2e` or `%2f` cannot turn into `..` or `/` later: `%`
//! is not in the grammar of any segment, and such paths are rejected here.

use std::sync::OnceLock;

use http::Method;

use crate::address::printable;
use crate::error::Error;

mod capture;
mod fit;
mod table;

pub use capture::{Capture, Captures};
pub use table::{ROUTES, Reads, Route, RouteDef, RouteKind};

/// Where the CLI looks for the services a host offers.
pub const DISCOVERY_PATH: &str = "/.well-known/terraform.json";
/// The MCP server's endpoint (`mcp`).
pub const MCP_PATH: &str = "/mcp";
/// Where RFC 9728 puts a resource's metadata: this, then the resource's path
/// (`/.well-known/oauth-protected-resource/mcp`).
pub const MCP_RESOURCE_METADATA_PATH: &str = "/.well-known/oauth-protected-resource";
/// The module protocol's base path, as infra deploys it.
pub const MODULES_BASE_PATH_DEFAULT: &str = "/v1/modules/";
/// The network mirror's base path, as infra deploys it.
pub const MIRROR_BASE_PATH_DEFAULT: &str = "/v1/mirror/";
/// The provider registry protocol's base path, as infra deploys it.
pub const PROVIDERS_BASE_PATH_DEFAULT: &str = "/v1/providers/";

/// Where the protocol routes live (`REGISTRY_MODULES_BASE_PATH`, `REGISTRY_MIRROR_BASE_PATH`,
/// `REGISTRY_PROVIDERS_BASE_PATH` for the local registry; infra deploys the defaults). Each
/// starts and ends with `/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BasePaths {
    /// `REGISTRY_MODULES_BASE_PATH`, default `/v1/modules/`.
    pub modules: String,
    /// `REGISTRY_MIRROR_BASE_PATH`, default `/v1/mirror/`.
    pub mirror: String,
    /// `REGISTRY_PROVIDERS_BASE_PATH`, default `/v1/providers/`.
    pub providers: String,
}

impl Default for BasePaths {
    fn default() -> Self {
        BasePaths {
            modules: MODULES_BASE_PATH_DEFAULT.into(),
            mirror: MIRROR_BASE_PATH_DEFAULT.into(),
            providers: PROVIDERS_BASE_PATH_DEFAULT.into(),
        }
    }
}

/// The web pages other than the catalog (which is at `/`). Fixed, not configurable: the pages
/// link to each other by these paths.
pub const UI_PATH: &str = "/ui/";

/// Longer than any valid route (base path + hostname + 2 segments + version + file name).
pub const PATH_MAX_LEN: usize = 1024;

/// The files the pages load (the CSP allows no inline style or script).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asset {
    /// `style.css`
    Style,
    /// `copy.js`: the copy buttons (the pages work without it).
    Script,
}

impl Asset {
    /// Its file name under `/ui/assets/`.
    pub fn file_name(&self) -> &'static str {
        match self {
            Asset::Style => "style.css",
            Asset::Script => "copy.js",
        }
    }
}

/// The Lambda function that serves a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Service {
    /// Service discovery.
    Discovery,
    /// The module registry protocol.
    Modules,
    /// The provider network mirror protocol.
    Mirror,
    /// The provider registry protocol (providers.v1).
    Providers,
    /// For people and tools: the module list, search and details API (the public registry's
    /// v1 shape), and the web pages.
    Web,
    /// OCI Distribution, read-only (`/v2/`).
    Oci,
    /// The MCP server for coding assistants (`/mcp`).
    Mcp,
}

impl Service {
    /// Every service: what the local registry serves in one process.
    pub const ALL: [Service; 7] = [
        Service::Discovery,
        Service::Modules,
        Service::Mirror,
        Service::Providers,
        Service::Web,
        Service::Oci,
        Service::Mcp,
    ];

    /// The Lambda binary (and infra function key) that serves it.
    pub fn function_name(&self) -> &'static str {
        match self {
            Service::Discovery => "discovery",
            Service::Modules => "modules",
            Service::Mirror => "mirror",
            Service::Providers => "providers",
            Service::Web => "web",
            Service::Oci => "oci",
            Service::Mcp => "mcp",
        }
    }
}

impl Route {
    /// Its row of the route table.
    pub fn def(&self) -> &'static RouteDef {
        &ROUTES[self.kind() as usize]
    }

    /// The service (so the Lambda function) that answers it.
    pub fn service(&self) -> Service {
        self.def().service
    }

    /// A short name for logs and metrics (an OCI route's says which of OCI's it is).
    pub fn name(&self) -> &'static str {
        match self {
            Route::Oci { oci } => oci.log_name(),
            _ => self.def().name,
        }
    }
}

/// Where a route's path starts: the paths a deployment configures, the pages' and OCI's fixed
/// prefixes, and the root for the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Base {
    /// `/`: discovery and the catalog page.
    Root,
    /// `REGISTRY_MODULES_BASE_PATH`
    Modules,
    /// `REGISTRY_MIRROR_BASE_PATH`
    Mirror,
    /// `REGISTRY_PROVIDERS_BASE_PATH`
    Providers,
    /// `UI_PATH`
    Ui,
    /// `/v2/`
    Oci,
}

impl Base {
    /// Every base, in declaration order (`Base as usize` indexes it).
    const ALL: [Base; 6] = [Base::Root, Base::Modules, Base::Mirror, Base::Providers, Base::Ui, Base::Oci];

    /// The bases a path is tried against, in order (the root takes what none of them does).
    const PREFIXED: [Base; 5] = [Base::Oci, Base::Ui, Base::Modules, Base::Mirror, Base::Providers];

    /// Its prefix, ending in `/`.
    pub fn prefix(self, paths: &BasePaths) -> &str {
        match self {
            Base::Root => "/",
            Base::Modules => &paths.modules,
            Base::Mirror => &paths.mirror,
            Base::Providers => &paths.providers,
            Base::Ui => UI_PATH,
            Base::Oci => crate::oci::BASE_PATH,
        }
    }

    /// The base whose routes `path` is one of, and the rest of it: `None` for the base itself
    /// without its trailing `/` (`/v1/modules`, `/v2`, `/`).
    fn of<'p>(path: &'p str, paths: &BasePaths) -> (Base, Option<&'p str>) {
        for base in Base::PREFIXED {
            let prefix = base.prefix(paths);
            if path == prefix.trim_end_matches('/') && base.takes_bare() {
                return (base, None);
            }
            if let Some(rest) = path.strip_prefix(prefix) {
                return (base, Some(rest));
            }
        }
        match path {
            "/" => (Base::Root, None),
            _ => (Base::Root, Some(path.strip_prefix('/').unwrap_or(path))),
        }
    }

    /// What a path under this base that fits no row gets: 400 under a protocol's base path,
    /// naming the routes there; 404 elsewhere.
    fn miss(self, path: &str, rest: &str) -> Error {
        // Each base's list is built once from the table: a hostile path costs no more than a
        // good one.
        static LISTED: [OnceLock<String>; 3] = [const { OnceLock::new() }; 3];
        let (what, slot) = match self {
            Base::Modules => ("module", 0),
            Base::Mirror => ("mirror", 1),
            Base::Providers => ("provider", 2),
            Base::Ui => return Error::NotFound(format!("no page at {UI_PATH}{:?}", printable(rest))),
            Base::Root | Base::Oci => return Error::NotFound(format!("no endpoint at {:?}", printable(path))),
        };
        let listed = LISTED[slot].get_or_init(|| {
            let shapes: Vec<String> = ROUTES
                .iter()
                .filter(|row| row.base == self && !row.path.is_empty())
                .map(|row| row.path.replace('{', ":").replace('}', ""))
                .collect();
            match shapes.split_last() {
                Some((last, [])) => last.clone(),
                Some((last, first)) => format!("{} and {last}", first.join(", ")),
                None => String::new(),
            }
        });
        Error::BadRequest(format!("{what} routes are {listed}"))
    }

    /// Whether a row takes the base itself without its trailing `/` (the module list's `""`,
    /// OCI's `{proxy+}` for `/v2`); for the others that path is not ours (404).
    fn takes_bare(self) -> bool {
        fit::rows_of(self).iter().any(|c| c.is_catch_all() || c.row.path.is_empty())
    }

    /// Whether a path under it is held to the segment grammar (no empty segment, at most 8):
    /// a protocol's or the pages'. The root's others are simply not ours (404); OCI's grammar
    /// is its own (`oci::name`).
    fn strict(self) -> bool {
        !matches!(self, Base::Root | Base::Oci)
    }
}

/// The methods a route answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Methods {
    /// `GET` and `HEAD` (answered as `GET` without the body).
    Read,
    /// `POST`: a form.
    Post,
}

impl Methods {
    fn allow(self, method: &Method) -> bool {
        match self {
            Methods::Read => method == Method::GET || method == Method::HEAD,
            Methods::Post => method == Method::POST,
        }
    }
}

/// The query string a route reads. Only the list, search and catalog routes (and OCI's) read
/// one; the others refuse one rather than ignore it: one URL per answer, so a cache in front
/// can never be keyed by, or poisoned through, parameters we do not read (and the terraform
/// CLI sends none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Query {
    /// None: a query string is refused (400).
    #[default]
    None,
    /// The list's `offset`, `limit`, `namespace`, `provider`.
    List,
    /// The list's, with `q` required.
    Search,
    /// The catalog page's: the list's, with `q` optional.
    Catalog,
    /// OCI's own (`oci::name`).
    Oci,
}

/// The API Gateway route key that catches every request no other route key matches.
pub const DEFAULT_ROUTE_KEY: &str = "$default";

/// The service whose function answers `DEFAULT_ROUTE_KEY`: a path no route serves (404), or
/// one under a base path that breaks the grammar (400), is answered by `route` before any
/// service is asked, so any function gives the same JSON as the local registry; discovery's is
/// the cheapest to start (no S3 client).
pub const DEFAULT_ROUTE_SERVICE: Service = Service::Discovery;

/// Whether API Gateway sends `path` to the route key `key` (`ANY /a/{x}/b`): a `{x}` matches one
/// segment, a final `{x+}` the rest; a trailing `/` is not significant. `$default` matches
/// nothing here (it takes what no key matches).
pub fn route_key_matches(key: &str, path: &str) -> bool {
    let Some(template) = key.split_once(' ').map(|(_, t)| t) else { return false };
    let trim = |p: &str| if p.len() > 1 { p.trim_end_matches('/').to_string() } else { p.to_string() };
    let (template, path) = (trim(template), trim(path));
    let (t, p): (Vec<&str>, Vec<&str>) = (template.split('/').collect(), path.split('/').collect());
    let same = |(t, p): (&&str, &&str)| t.starts_with('{') || t == p;
    match t.last() {
        Some(last) if last.ends_with("+}") => p.len() >= t.len() && t[..t.len() - 1].iter().zip(&p).all(same),
        _ => t.len() == p.len() && t.iter().zip(&p).all(same),
    }
}

/// API Gateway's route keys (`ANY /template`, and `$default`) with the service that answers
/// each, derived from the route table; the infra consistency test compares them with
/// infra/main.tf and the deployment check with what was applied. A route key takes every
/// method, so that the function's `route` answers HEAD as GET and another method 405, as
/// locally, rather than API Gateway's own 404. API Gateway matches whole segments, so a
/// placeholder inside a file name (`{version}.json`) is keyed as `{file}`; a key whose every
/// path a key of the same service already takes is left out (the mirror's `index.json` is a
/// `{file}` too), and so is a second row of the same path (`POST /ui/sign-in`).
pub fn route_templates(paths: &BasePaths) -> Vec<(Service, String)> {
    let mut keys: Vec<(Service, String)> = Vec::new();
    for row in ROUTES {
        let prefix = row.base.prefix(paths);
        let trimmed = if prefix.len() > 1 { prefix.trim_end_matches('/') } else { prefix };
        let gateway = |segment: &str| match segment.starts_with('{') && !segment.ends_with('}') {
            true => "{file}".to_string(),
            false => segment.to_string(),
        };
        let tail: Vec<String> = row.path.split('/').map(gateway).collect();
        if row.path.is_empty() || row.path == "{proxy+}" {
            keys.push((row.service, format!("ANY {trimmed}")));
        }
        if !row.path.is_empty() {
            keys.push((row.service, format!("ANY {prefix}{}", tail.join("/"))));
        }
    }
    let mut kept: Vec<(Service, String)> = Vec::new();
    for (service, key) in &keys {
        let path = key.trim_start_matches("ANY ");
        let taken = keys.iter().any(|(s, k)| s == service && k != key && route_key_matches(k, path));
        if !taken && !kept.iter().any(|(_, k)| k == key) {
            kept.push((*service, key.clone()));
        }
    }
    kept.push((DEFAULT_ROUTE_SERVICE, DEFAULT_ROUTE_KEY.to_string()));
    kept
}

/// The OCI routes' prefix, as an API Gateway route key spells it (no trailing slash).
pub const OCI_ROUTE_BASE: &str = "/v2";

/// Whether `raw_path` is an OCI route's (so its errors are OCI's `{"errors": [{"code"…}]}`).
pub fn is_oci_path(raw_path: &str) -> bool {
    raw_path == OCI_ROUTE_BASE || raw_path.starts_with(crate::oci::BASE_PATH)
}

/// Whether `raw_path` is the MCP endpoint's (so its errors are JSON-RPC's).
pub fn is_mcp_path(raw_path: &str) -> bool {
    raw_path == MCP_PATH
}

/// Whether `raw_path` is a web page's (so its errors are pages too, not JSON).
pub fn is_page_path(raw_path: &str) -> bool {
    raw_path == "/" || raw_path.starts_with(UI_PATH)
}

/// Route a request by its method, raw path and raw query: 404 for a path that is not ours, 400
/// for one that breaks the grammar under a base path or a query string where the route takes
/// none (or not that one, `Query`), 405 for a method the route does not answer. The first row
/// of the route table whose path fits is the route (for a form, the row of that path that
/// takes the method).
pub fn route(method: &Method, raw_path: &str, query: Option<&str>, paths: &BasePaths) -> Result<Route, Error> {
    let (base, rest) = Base::of(raw_path, paths);
    let rows = fit::rows_of(base);
    // A catch-all's grammar is its protocol's: a push to OCI (POST to blobs/uploads/, PUT of a
    // manifest, DELETE) is refused as such, 405 `UNSUPPORTED`, before its path is judged.
    if rows.iter().any(|c| c.is_catch_all() && !c.row.methods.allow(method)) {
        return Err(Error::MethodNotAllowed);
    }
    check_path_len(raw_path)?;
    let mut parts = [""; fit::MAX_SEGMENTS + 1];
    let count = match rest {
        None => 0,
        Some(rest) => split(rest, &mut parts, base.strict())?,
    };
    let segments = &parts[..count];
    // The first row that fits and takes the method; else the first that fits, whose grammar and
    // query string are judged before the method (400 before 405).
    let (mut taking, mut first) = (None, None);
    for compiled in rows {
        let Some(filled) = compiled.fit(rest.is_none(), segments) else { continue };
        if compiled.row.methods.allow(method) {
            taking = Some((compiled.row, filled));
            break;
        }
        first = first.or(Some((compiled.row, filled)));
    }
    let Some((row, filled)) = taking.or(first) else {
        return Err(base.miss(raw_path, rest.unwrap_or_default()));
    };
    let query = query.filter(|q| !q.is_empty());
    let captures = Captures { filled, rest: rest.unwrap_or_default(), query, query_use: row.query };
    let route = (row.build)(&captures)?;
    if row.query == Query::None && query.is_some() {
        return Err(Error::BadRequest("query strings are not part of this API".into()));
    }
    match row.methods.allow(method) {
        true => Ok(route),
        false => Err(Error::MethodNotAllowed),
    }
}

/// 400 for a path longer than any route's (`PATH_MAX_LEN`), before any other check.
pub fn check_path_len(path: &str) -> Result<(), Error> {
    match path.len() > PATH_MAX_LEN {
        true => Err(Error::BadRequest(format!("path longer than {PATH_MAX_LEN} bytes"))),
        false => Ok(()),
    }
}

/// Split a route's tail into `parts`, returning how many. Under a strict base an empty segment
/// (`//`, a trailing `/`) or more than `MAX_SEGMENTS` breaks the grammar (400); elsewhere a path
/// of more segments than any row has fits none, so the count stops there.
fn split<'a>(rest: &'a str, parts: &mut [&'a str; fit::MAX_SEGMENTS + 1], strict: bool) -> Result<usize, Error> {
    let mut count = 0;
    for segment in rest.split('/') {
        if strict && (segment.is_empty() || count == fit::MAX_SEGMENTS) {
            return Err(Error::BadRequest("empty path segment or too many segments".into()));
        }
        if count == parts.len() {
            break;
        }
        parts[count] = segment;
        count += 1;
    }
    Ok(count)
}

#[cfg(test)]
mod tests;
