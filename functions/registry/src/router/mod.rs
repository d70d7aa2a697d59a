//! The one pure router, shared by the Lambdas and the local registry: (method, raw path) to a
//! route with validated addresses. It reads the raw path as the client sent it, never a
//! decoded or normalised one, so `%2e%2e` or `%2f` cannot turn into `..` or `/` later: `%`
//! is not in the grammar of any segment, and such paths are rejected here.

use http::Method;

use crate::address::{ModuleAddress, ProviderAddress, ProviderName, parse_version, printable};
use crate::error::Error;
use crate::layout::Platform;
use crate::oci::name::OciRoute;
use crate::query::Listing;

/// Where the CLI looks for the services a host offers.
pub const DISCOVERY_PATH: &str = "/.well-known/terraform.json";
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

/// What a request asks for, with its addresses validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `GET /.well-known/terraform.json`
    Discovery,
    /// `GET …/NAMESPACE/NAME/SYSTEM/versions`
    ModuleVersions(ModuleAddress),
    /// `GET …/NAMESPACE/NAME/SYSTEM/VERSION/download`
    ModuleDownload(ModuleAddress, semver::Version),
    /// `GET …/HOSTNAME/NAMESPACE/TYPE/index.json`
    MirrorIndex(ProviderAddress),
    /// `GET …/HOSTNAME/NAMESPACE/TYPE/VERSION.json`
    MirrorVersion(ProviderAddress, semver::Version),
    /// `GET …/NAMESPACE/TYPE/versions` (providers.v1)
    ProviderVersions(ProviderName),
    /// `GET …/NAMESPACE/TYPE/VERSION/download/OS/ARCH` (providers.v1)
    ProviderDownload(ProviderName, semver::Version, Platform),
    /// `GET /v1/modules?offset=&limit=…`: the catalog's modules, a page at a time.
    ModuleList(Listing),
    /// `GET /v1/modules/search?q=…`
    ModuleSearch(Listing),
    /// `GET …/NAMESPACE/NAME/SYSTEM`: the latest version's details (docs, versions).
    ModuleLatest(ModuleAddress),
    /// `GET …/NAMESPACE/NAME/SYSTEM/VERSION`: one version's details.
    ModuleDetails(ModuleAddress, semver::Version),
    /// A web page, for people in a browser.
    Page(Page),
    /// `GET|HEAD /v2/…`: OCI Distribution (OpenTofu's `oci_mirror`).
    Oci(OciRoute),
}

/// The web pages (`web`): HTML, with the viewer from the `Authorization` header or the
/// sign-in cookie.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Page {
    /// `GET /?q=&offset=…`: the catalog, or a search of it.
    Catalog(Listing),
    /// `GET /ui/modules/NAMESPACE/NAME/SYSTEM[/VERSION]`
    Module(ModuleAddress, Option<semver::Version>),
    /// `GET /ui/modules/NAMESPACE/NAME/SYSTEM/VERSION/from/FROM`: upgrading from FROM to VERSION.
    Upgrade(ModuleAddress, semver::Version, semver::Version),
    /// `GET /ui/providers/HOSTNAME/NAMESPACE/TYPE[/VERSION]`
    Provider(ProviderAddress, Option<semver::Version>),
    /// `GET /ui/sign-in`: the form.
    SignIn,
    /// `POST /ui/sign-in`: a token pasted into the form.
    SignInSubmit,
    /// `POST /ui/sign-out`
    SignOut,
    /// `GET /ui/assets/FILE`: the stylesheet and the script, compiled in.
    Asset(Asset),
}

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
}

impl Service {
    /// Every service: what the local registry serves in one process.
    pub const ALL: [Service; 6] =
        [Service::Discovery, Service::Modules, Service::Mirror, Service::Providers, Service::Web, Service::Oci];

    /// The Lambda binary (and infra function key) that serves it.
    pub fn function_name(&self) -> &'static str {
        match self {
            Service::Discovery => "discovery",
            Service::Modules => "modules",
            Service::Mirror => "mirror",
            Service::Providers => "providers",
            Service::Web => "web",
            Service::Oci => "oci",
        }
    }
}

impl Route {
    /// The service (so the Lambda function) that answers it.
    pub fn service(&self) -> Service {
        match self {
            Route::Discovery => Service::Discovery,
            Route::ModuleVersions(_) | Route::ModuleDownload(..) => Service::Modules,
            Route::MirrorIndex(_) | Route::MirrorVersion(..) => Service::Mirror,
            Route::ProviderVersions(_) | Route::ProviderDownload(..) => Service::Providers,
            Route::ModuleList(_)
            | Route::ModuleSearch(_)
            | Route::ModuleLatest(_)
            | Route::ModuleDetails(..)
            | Route::Page(_) => Service::Web,
            Route::Oci(_) => Service::Oci,
        }
    }

    /// A short name for logs and metrics.
    pub fn name(&self) -> &'static str {
        match self {
            Route::Discovery => "discovery",
            Route::ModuleVersions(_) => "module_versions",
            Route::ModuleDownload(..) => "module_download",
            Route::MirrorIndex(_) => "mirror_index",
            Route::MirrorVersion(..) => "mirror_version",
            Route::ProviderVersions(_) => "provider_versions",
            Route::ProviderDownload(..) => "provider_download",
            Route::ModuleList(_) => "module_list",
            Route::ModuleSearch(_) => "module_search",
            Route::ModuleLatest(_) => "module_latest",
            Route::ModuleDetails(..) => "module_details",
            Route::Oci(OciRoute::Base) => "oci_base",
            Route::Oci(OciRoute::Token) => "oci_token",
            Route::Oci(OciRoute::Tags { .. }) => "oci_tags",
            Route::Oci(OciRoute::Manifest { .. }) => "oci_manifest",
            Route::Oci(OciRoute::Blob { .. }) => "oci_blob",
            Route::Page(Page::Catalog(_)) => "page_catalog",
            Route::Page(Page::Module(..)) => "page_module",
            Route::Page(Page::Upgrade(..)) => "page_upgrade",
            Route::Page(Page::Provider(..)) => "page_provider",
            Route::Page(Page::SignIn) => "page_sign_in",
            Route::Page(Page::SignInSubmit) => "sign_in",
            Route::Page(Page::SignOut) => "sign_out",
            Route::Page(Page::Asset(_)) => "asset",
        }
    }
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
/// each; the infra consistency test compares them with infra/main.tf and the deployment check
/// with what was applied. A route key takes every method, so that the function's `route`
/// answers HEAD as GET and another method 405, as locally, rather than API Gateway's own 404.
pub fn route_templates(paths: &BasePaths) -> Vec<(Service, String)> {
    let any = |service, path: String| (service, format!("ANY {path}"));
    vec![
        any(Service::Discovery, DISCOVERY_PATH.to_string()),
        any(Service::Modules, format!("{}{{namespace}}/{{name}}/{{system}}/versions", paths.modules)),
        any(Service::Modules, format!("{}{{namespace}}/{{name}}/{{system}}/{{version}}/download", paths.modules)),
        any(Service::Mirror, format!("{}{{hostname}}/{{namespace}}/{{type}}/{{file}}", paths.mirror)),
        any(Service::Providers, format!("{}{{namespace}}/{{type}}/versions", paths.providers)),
        any(
            Service::Providers,
            format!("{}{{namespace}}/{{type}}/{{version}}/download/{{os}}/{{arch}}", paths.providers),
        ),
        any(Service::Web, paths.modules.trim_end_matches('/').to_string()),
        any(Service::Web, format!("{}search", paths.modules)),
        any(Service::Web, format!("{}{{namespace}}/{{name}}/{{system}}", paths.modules)),
        any(Service::Web, format!("{}{{namespace}}/{{name}}/{{system}}/{{version}}", paths.modules)),
        any(Service::Web, "/".to_string()),
        any(Service::Web, format!("{UI_PATH}modules/{{namespace}}/{{name}}/{{system}}")),
        any(Service::Web, format!("{UI_PATH}modules/{{namespace}}/{{name}}/{{system}}/{{version}}")),
        any(Service::Web, format!("{UI_PATH}modules/{{namespace}}/{{name}}/{{system}}/{{version}}/from/{{from}}")),
        any(Service::Web, format!("{UI_PATH}providers/{{hostname}}/{{namespace}}/{{type}}")),
        any(Service::Web, format!("{UI_PATH}providers/{{hostname}}/{{namespace}}/{{type}}/{{version}}")),
        any(Service::Web, format!("{UI_PATH}sign-in")),
        any(Service::Web, format!("{UI_PATH}sign-out")),
        any(Service::Web, format!("{UI_PATH}assets/{{file}}")),
        // OCI: `/v2/` (API Gateway routes it by `ANY /v2`, which takes the trailing slash) and
        // everything under it.
        any(Service::Oci, OCI_ROUTE_BASE.to_string()),
        any(Service::Oci, format!("{OCI_ROUTE_BASE}/{{proxy+}}")),
        (DEFAULT_ROUTE_SERVICE, DEFAULT_ROUTE_KEY.to_string()),
    ]
}

/// The OCI routes' prefix, as an API Gateway route key spells it (no trailing slash).
pub const OCI_ROUTE_BASE: &str = "/v2";

/// Whether `raw_path` is an OCI route's (so its errors are OCI's `{"errors": [{"code"…}]}`).
pub fn is_oci_path(raw_path: &str) -> bool {
    raw_path == OCI_ROUTE_BASE || raw_path.starts_with(crate::oci::BASE_PATH)
}

/// Whether `raw_path` is a web page's (so its errors are pages too, not JSON).
pub fn is_page_path(raw_path: &str) -> bool {
    raw_path == "/" || raw_path.starts_with(UI_PATH)
}

/// Route a request by its method, raw path and raw query: 404 for a path that is not ours, 400
/// for one that breaks the grammar under a base path or a query string where the route takes
/// none (or not that one, `query`), 405 for another method than GET or HEAD.
pub fn route(method: &Method, raw_path: &str, query: Option<&str>, paths: &BasePaths) -> Result<Route, Error> {
    let read = method == Method::GET || method == Method::HEAD;
    // A push (POST to blobs/uploads/, PUT of a manifest, DELETE) is refused as such, 405
    // `UNSUPPORTED`, before its path is judged: the OCI routes are read-only.
    if is_oci_path(raw_path) && !read {
        return Err(Error::MethodNotAllowed);
    }
    let route = match_path(raw_path, query, paths)?;
    match route {
        // The forms: sign-in is a page to GET and a form to POST; sign-out only a POST, so a
        // link or an image elsewhere cannot sign anyone out.
        Route::Page(Page::SignIn) if method == Method::POST => Ok(Route::Page(Page::SignInSubmit)),
        Route::Page(Page::SignOut) if method == Method::POST => Ok(route),
        Route::Page(Page::SignOut) => Err(Error::MethodNotAllowed),
        _ if read => Ok(route),
        _ => Err(Error::MethodNotAllowed),
    }
}

/// 400 for a path longer than any route's (`PATH_MAX_LEN`), before any other check.
pub fn check_path_len(path: &str) -> Result<(), Error> {
    match path.len() > PATH_MAX_LEN {
        true => Err(Error::BadRequest(format!("path longer than {PATH_MAX_LEN} bytes"))),
        false => Ok(()),
    }
}

fn match_path(path: &str, query: Option<&str>, paths: &BasePaths) -> Result<Route, Error> {
    check_path_len(path)?;
    if is_oci_path(path) {
        let rest = path.strip_prefix(crate::oci::BASE_PATH).unwrap_or_default();
        return crate::oci::name::parse(rest, query).map(Route::Oci);
    }
    // Only the list and search routes read a query string. The others refuse one rather than
    // ignore it: one URL per answer, so a cache in front can never be keyed by, or poisoned
    // through, parameters we do not read (and the terraform CLI sends none).
    if path == paths.modules.trim_end_matches('/') {
        return Ok(Route::ModuleList(Listing::parse(query, false)?));
    }
    if path.strip_prefix(paths.modules.as_str()) == Some("search") {
        return Ok(Route::ModuleSearch(Listing::parse(query, true)?));
    }
    if path == "/" {
        return Ok(Route::Page(Page::Catalog(Listing::parse_page(query)?)));
    }
    if query.is_some_and(|q| !q.is_empty()) {
        // Still 404 for a path that is not ours.
        match_path(path, None, paths)?;
        return Err(Error::BadRequest("query strings are not part of this API".into()));
    }
    if path == DISCOVERY_PATH {
        return Ok(Route::Discovery);
    }
    if let Some(rest) = path.strip_prefix(UI_PATH) {
        return page(rest).map(Route::Page);
    }
    if let Some(rest) = path.strip_prefix(paths.modules.as_str()) {
        return match segments(rest)?.as_slice() {
            [namespace, name, system] => Ok(Route::ModuleLatest(ModuleAddress::parse(namespace, name, system)?)),
            [namespace, name, system, "versions"] => {
                Ok(Route::ModuleVersions(ModuleAddress::parse(namespace, name, system)?))
            }
            [namespace, name, system, version, "download"] => {
                Ok(Route::ModuleDownload(ModuleAddress::parse(namespace, name, system)?, parse_version(version)?))
            }
            [namespace, name, system, version] => {
                Ok(Route::ModuleDetails(ModuleAddress::parse(namespace, name, system)?, parse_version(version)?))
            }
            _ => Err(Error::BadRequest(
                "module routes are :namespace/:name/:system/versions, :namespace/:name/:system/:version/download, \
                 :namespace/:name/:system[/:version] and search"
                    .into(),
            )),
        };
    }
    if let Some(rest) = path.strip_prefix(paths.mirror.as_str()) {
        return match segments(rest)?.as_slice() {
            [hostname, namespace, r#type, "index.json"] => {
                Ok(Route::MirrorIndex(ProviderAddress::parse(hostname, namespace, r#type)?))
            }
            [hostname, namespace, r#type, file] => {
                let Some(version) = file.strip_suffix(".json") else {
                    return Err(Error::BadRequest(format!(
                        "mirror routes end in index.json or :version.json, not {:?}",
                        printable(file)
                    )));
                };
                Ok(Route::MirrorVersion(ProviderAddress::parse(hostname, namespace, r#type)?, parse_version(version)?))
            }
            _ => Err(Error::BadRequest(
                "mirror routes are :hostname/:namespace/:type/index.json and :hostname/:namespace/:type/:version.json"
                    .into(),
            )),
        };
    }
    if let Some(rest) = path.strip_prefix(paths.providers.as_str()) {
        return match segments(rest)?.as_slice() {
            [namespace, r#type, "versions"] => Ok(Route::ProviderVersions(ProviderName::parse(namespace, r#type)?)),
            [namespace, r#type, version, "download", os, arch] => Ok(Route::ProviderDownload(
                ProviderName::parse(namespace, r#type)?,
                parse_version(version)?,
                Platform::parse(os, arch)?,
            )),
            _ => Err(Error::BadRequest(
                "provider routes are :namespace/:type/versions and :namespace/:type/:version/download/:os/:arch".into(),
            )),
        };
    }
    Err(Error::NotFound(format!("no endpoint at {:?}", printable(path))))
}

/// A web page's path under `UI_PATH`, by the same address grammar as the protocol routes.
fn page(rest: &str) -> Result<Page, Error> {
    let version = |v: &str| parse_version(v);
    match segments(rest)?.as_slice() {
        ["modules", namespace, name, system] => Ok(Page::Module(ModuleAddress::parse(namespace, name, system)?, None)),
        ["modules", namespace, name, system, v] => {
            Ok(Page::Module(ModuleAddress::parse(namespace, name, system)?, Some(version(v)?)))
        }
        ["modules", namespace, name, system, v, "from", from] => {
            Ok(Page::Upgrade(ModuleAddress::parse(namespace, name, system)?, version(v)?, version(from)?))
        }
        ["providers", hostname, namespace, r#type] => {
            Ok(Page::Provider(ProviderAddress::parse(hostname, namespace, r#type)?, None))
        }
        ["providers", hostname, namespace, r#type, v] => {
            Ok(Page::Provider(ProviderAddress::parse(hostname, namespace, r#type)?, Some(version(v)?)))
        }
        ["sign-in"] => Ok(Page::SignIn),
        ["sign-out"] => Ok(Page::SignOut),
        ["assets", "style.css"] => Ok(Page::Asset(Asset::Style)),
        ["assets", "copy.js"] => Ok(Page::Asset(Asset::Script)),
        _ => Err(Error::NotFound(format!("no page at {UI_PATH}{:?}", printable(rest)))),
    }
}

/// Split a route's tail into segments; empty segments (`//`, a trailing `/`) break the grammar.
fn segments(rest: &str) -> Result<Vec<&str>, Error> {
    let parts: Vec<&str> = rest.split('/').collect();
    if parts.len() > 8 || parts.iter().any(|s| s.is_empty()) {
        return Err(Error::BadRequest("empty path segment or too many segments".into()));
    }
    Ok(parts)
}

#[cfg(test)]
mod tests;
