//! The route table: every route the registry answers, each declared once, in one row. A row
//! names its `Route` variant and the values it carries, the log name, the service (so the
//! Lambda function) that answers it, where its path starts and the rest of its path, which
//! query string and methods it takes, what it reads (so what the verifier checks) and how its
//! absence is named. `route`, the API Gateway route keys (`route_templates`), `Route::service`,
//! `Route::reads` and `Route::not_found` all derive from these rows; the answer is one
//! function in the protocol's file under `routes/`.
//!
//! In a path, `{namespace}/{name}/{system}` is a module address, `{hostname}/{namespace}/{type}`
//! a provider's, `{namespace}/{type}` a providers.v1 name, `{os}/{arch}` a platform, `{version}`
//! (or any other field's name) a version; `{version}.json` is a version in a file name, and
//! `{proxy+}` the rest of the path, read by the field's own grammar (OCI's). Rows are tried in
//! order: the first whose path fits wins, so a literal (`versions`) comes before a placeholder
//! that would take it.

use crate::address::{ModuleAddress, ProviderAddress, ProviderName, UpstreamModule};
use crate::layout::Platform;
use crate::oci::name::OciRoute;
use crate::query::Listing;

use super::capture::{Capture, Captures};
use super::{Asset, Base, Methods, Query, Service};
use crate::error::Error;

/// Declares the route table: the `Route` enum (one variant per row), `RouteKind` (the same
/// without values) and `ROUTES` (the rows, in the same order), with the functions that read a
/// route's row: `kind`, `reads`, `not_found`. See the rows below for the grammar of one.
macro_rules! route_table {
    ($(
        $(#[doc = $doc:literal])+
        $variant:ident { $($field:ident : $ty:ty),* }
            name $name:literal, service $service:ident, path $base:ident $path:literal
            $(, query $query:ident)? $(, methods $methods:ident)?,
            reads $reads:ident $(($read:ident))?, absent $absent:literal;
    )+) => {
        /// What a request asks for, with its addresses validated: one variant per row of the
        /// route table (`router/table.rs`).
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum Route {
            $( $(#[doc = $doc])+ $variant { $(#[allow(missing_docs)] $field: $ty),* }, )+
        }

        /// Which route a `Route` is, without its values: its row of `ROUTES`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum RouteKind {
            $( $(#[doc = $doc])+ $variant, )+
        }

        /// The route table, in `RouteKind`'s order.
        pub static ROUTES: &[RouteDef] = &[$(
            RouteDef {
                kind: RouteKind::$variant,
                name: $name,
                service: Service::$service,
                base: Base::$base,
                path: $path,
                query: route_table!(@query $($query)?),
                methods: route_table!(@methods $($methods)?),
                build: |c| {
                    let _ = c;
                    Ok(Route::$variant { $($field: <$ty as Capture>::capture(c, stringify!($field))?),* })
                },
            },
        )+];

        impl Route {
            /// Which row it is.
            pub fn kind(&self) -> RouteKind {
                match self { $( Route::$variant { .. } => RouteKind::$variant, )+ }
            }

            /// What answering it reads, so what the verifier checks.
            pub fn reads(&self) -> Reads<'_> {
                match self { $( Route::$variant { $($read,)? .. } => Reads::$reads $(($read))?, )+ }
            }

            /// What a request for something that does not exist gets. A token that may not read
            /// it gets exactly this too: one builder for both, so the two answers can never drift
            /// apart and a token cannot tell hidden from absent.
            #[allow(unused_variables)]
            pub fn not_found(&self) -> Error {
                match self { $( Route::$variant { $($field),* } => Error::NotFound(format!($absent)), )+ }
            }
        }
    };
    (@query) => { Query::None };
    (@query $query:ident) => { Query::$query };
    (@methods) => { Methods::Read };
    (@methods $methods:ident) => { Methods::$methods };
}

/// One row of the route table.
#[derive(Debug)]
pub struct RouteDef {
    /// Which route.
    pub kind: RouteKind,
    /// Its name in logs and metrics.
    pub name: &'static str,
    /// The service (so the Lambda function) that answers it.
    pub service: Service,
    /// Where its path starts.
    pub base: Base,
    /// The rest of its path: `""` is the base itself, without its trailing `/`.
    pub path: &'static str,
    /// The query string it reads (others refuse one).
    pub query: Query,
    /// The methods it answers.
    pub methods: Methods,
    /// The route, from what its path and query captured.
    pub build: fn(&Captures<'_>) -> Result<Route, Error>,
}

#[cfg(any(test, feature = "test-support"))]
impl RouteDef {
    /// A request this row answers: its path with every placeholder filled with a valid value,
    /// a method it takes and the query string it needs. What the tests send to prove each row
    /// reachable, answered by its function and access-checked.
    pub fn example(&self, paths: &super::BasePaths) -> (http::Method, String, Option<&'static str>) {
        let sample = |placeholder: &str| match placeholder {
            "namespace" => "acme",
            "name" => "vpc",
            "system" => "aws",
            "hostname" => "registry.example.com",
            "type" => "thing",
            "os" => "linux",
            "arch" => "amd64",
            "file" => "style.css",
            "from" => "1.0.0",
            "proxy+" => "",
            _ => "1.2.3",
        };
        let filled: Vec<String> = self
            .path
            .split('/')
            .map(|part| match part.strip_prefix('{').and_then(|p| p.split_once('}')) {
                Some((name, suffix)) => format!("{}{suffix}", sample(name)),
                None => part.to_string(),
            })
            .collect();
        let prefix = self.base.prefix(paths);
        let path = match self.path {
            "" if prefix.len() > 1 => prefix.trim_end_matches('/').to_string(),
            "" => prefix.to_string(),
            _ => format!("{prefix}{}", filled.join("/")),
        };
        let method = match self.methods {
            Methods::Read => http::Method::GET,
            Methods::Post => http::Method::POST,
        };
        (method, path, (self.query == Query::Search).then_some("q=x"))
    }
}

/// What a route reads, so what the verifier checks before it answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reads<'a> {
    /// Nothing anyone may not see (discovery, the sign-in form, the pages' assets).
    Anyone,
    /// A listing, filtered item by item (`Verifier::lister`), not allowed or refused whole.
    Listed,
    /// OCI Distribution, which checks its own credentials and repository.
    Oci,
    /// A module.
    Module(&'a ModuleAddress),
    /// A provider, by its full address.
    Provider(&'a ProviderAddress),
    /// A module of an upstream registry (the modules pull-through).
    UpstreamModule(&'a UpstreamModule),
    /// A providers.v1 provider: its name at this registry's own host.
    OwnProvider(&'a ProviderName),
}

type Version = semver::Version;

route_table! {
    /// `GET /.well-known/terraform.json`: the services this host offers.
    Discovery {}
        name "discovery", service Discovery, path Root ".well-known/terraform.json",
        reads Anyone, absent "not found";
    /// `GET …/NAMESPACE/NAME/SYSTEM/versions` (modules.v1)
    ModuleVersions { module: ModuleAddress }
        name "module_versions", service Modules, path Modules "{namespace}/{name}/{system}/versions",
        reads Module(module), absent "module {module} not found";
    /// `GET …/NAMESPACE/NAME/SYSTEM/VERSION/download` (modules.v1)
    ModuleDownload { module: ModuleAddress, version: Version }
        name "module_download", service Modules, path Modules "{namespace}/{name}/{system}/{version}/download",
        reads Module(module), absent "module {module} not found";
    /// `GET …/upstream/HOSTNAME/NAMESPACE/NAME/SYSTEM/versions`: modules.v1 of an upstream
    /// registry through this one (the CLI's `host` block points the upstream's modules.v1 here).
    UpstreamModuleVersions { module: UpstreamModule }
        name "upstream_module_versions", service Modules,
        path Modules "upstream/{hostname}/{namespace}/{name}/{system}/versions",
        reads UpstreamModule(module), absent "module {module} not found";
    /// `GET …/upstream/HOSTNAME/NAMESPACE/NAME/SYSTEM/VERSION/download`: the pinned copy.
    UpstreamModuleDownload { module: UpstreamModule, version: Version }
        name "upstream_module_download", service Modules,
        path Modules "upstream/{hostname}/{namespace}/{name}/{system}/{version}/download",
        reads UpstreamModule(module), absent "module {module} has no version {version}";
    /// `GET …/HOSTNAME/NAMESPACE/TYPE/index.json` (the network mirror)
    MirrorIndex { provider: ProviderAddress }
        name "mirror_index", service Mirror, path Mirror "{hostname}/{namespace}/{type}/index.json",
        reads Provider(provider), absent "provider {provider} not found";
    /// `GET …/HOSTNAME/NAMESPACE/TYPE/VERSION.json` (the network mirror)
    MirrorVersion { provider: ProviderAddress, version: Version }
        name "mirror_version", service Mirror, path Mirror "{hostname}/{namespace}/{type}/{version}.json",
        reads Provider(provider), absent "provider {provider} has no version {version}";
    /// `GET …/NAMESPACE/TYPE/versions` (providers.v1)
    ProviderVersions { name: ProviderName }
        name "provider_versions", service Providers, path Providers "{namespace}/{type}/versions",
        reads OwnProvider(name), absent "provider {name} not found";
    /// `GET …/NAMESPACE/TYPE/VERSION/download/OS/ARCH` (providers.v1)
    ProviderDownload { name: ProviderName, version: Version, platform: Platform }
        name "provider_download", service Providers,
        path Providers "{namespace}/{type}/{version}/download/{os}/{arch}",
        reads OwnProvider(name), absent "provider {name} has no version {version} for {platform}";
    /// `GET /v1/modules?offset=&limit=…`: the catalog's modules, a page at a time.
    ModuleList { listing: Listing }
        name "module_list", service Web, path Modules "", query List,
        reads Listed, absent "not found";
    /// `GET /v1/modules/search?q=…`
    ModuleSearch { listing: Listing }
        name "module_search", service Web, path Modules "search", query Search,
        reads Listed, absent "not found";
    /// `GET …/NAMESPACE/NAME/SYSTEM`: the latest version's details (docs, versions).
    ModuleLatest { module: ModuleAddress }
        name "module_latest", service Web, path Modules "{namespace}/{name}/{system}",
        reads Module(module), absent "module {module} not found";
    /// `GET …/NAMESPACE/NAME/SYSTEM/VERSION`: one version's details.
    ModuleDetails { module: ModuleAddress, version: Version }
        name "module_details", service Web, path Modules "{namespace}/{name}/{system}/{version}",
        reads Module(module), absent "module {module} not found";
    /// `GET /?q=&offset=…`: the catalog page, or a search of it.
    CatalogPage { listing: Listing }
        name "page_catalog", service Web, path Root "", query Catalog,
        reads Listed, absent "not found";
    /// `GET /ui/modules/NAMESPACE/NAME/SYSTEM`: a module's page, at its latest version.
    ModulePage { module: ModuleAddress }
        name "page_module", service Web, path Ui "modules/{namespace}/{name}/{system}",
        reads Module(module), absent "module {module} not found";
    /// `GET /ui/modules/NAMESPACE/NAME/SYSTEM/VERSION`: a module version's page.
    ModuleVersionPage { module: ModuleAddress, version: Version }
        name "page_module", service Web, path Ui "modules/{namespace}/{name}/{system}/{version}",
        reads Module(module), absent "module {module} not found";
    /// `GET /ui/modules/NAMESPACE/NAME/SYSTEM/VERSION/from/FROM`: upgrading from FROM to VERSION.
    UpgradePage { module: ModuleAddress, version: Version, from: Version }
        name "page_upgrade", service Web, path Ui "modules/{namespace}/{name}/{system}/{version}/from/{from}",
        reads Module(module), absent "module {module} not found";
    /// `GET /ui/providers/HOSTNAME/NAMESPACE/TYPE`: a provider's page, at its latest version.
    ProviderPage { provider: ProviderAddress }
        name "page_provider", service Web, path Ui "providers/{hostname}/{namespace}/{type}",
        reads Provider(provider), absent "provider {provider} not found";
    /// `GET /ui/providers/HOSTNAME/NAMESPACE/TYPE/VERSION`: a provider version's page.
    ProviderVersionPage { provider: ProviderAddress, version: Version }
        name "page_provider", service Web, path Ui "providers/{hostname}/{namespace}/{type}/{version}",
        reads Provider(provider), absent "provider {provider} not found";
    /// `GET /ui/upstream/HOSTNAME/NAMESPACE/NAME/SYSTEM`: an upstream module's page: the
    /// versions copied here, each with its pin.
    UpstreamModulePage { module: UpstreamModule }
        name "page_upstream_module", service Web, path Ui "upstream/{hostname}/{namespace}/{name}/{system}",
        reads UpstreamModule(module), absent "module {module} has no copies here";
    /// `GET /ui/sign-in`: the form.
    SignIn {}
        name "page_sign_in", service Web, path Ui "sign-in",
        reads Anyone, absent "not found";
    /// `POST /ui/sign-in`: a token pasted into the form.
    SignInSubmit {}
        name "sign_in", service Web, path Ui "sign-in", methods Post,
        reads Anyone, absent "not found";
    /// `POST /ui/sign-out`: only a POST, so a link or an image elsewhere cannot sign anyone out.
    SignOut {}
        name "sign_out", service Web, path Ui "sign-out", methods Post,
        reads Anyone, absent "not found";
    /// `GET /ui/assets/FILE`: the stylesheet and the script, compiled in.
    PageAsset { asset: Asset }
        name "asset", service Web, path Ui "assets/{file}",
        reads Anyone, absent "not found";
    /// `POST /mcp`: the MCP server (Model Context Protocol, Streamable HTTP, stateless): one
    /// JSON-RPC message per request; its tools read the catalog and docs as the caller may.
    Mcp {}
        name "mcp", service Mcp, path Root "mcp", methods Post,
        reads Listed, absent "not found";
    /// `GET /.well-known/oauth-protected-resource/mcp`: where an MCP client signs in (RFC 9728),
    /// when an OpenID Connect issuer has a login client; 404 otherwise.
    McpResourceMetadata {}
        name "mcp_resource_metadata", service Mcp, path Root ".well-known/oauth-protected-resource/mcp",
        reads Anyone, absent "no protected resource metadata: this registry signs MCP clients in with tokens only";
    /// `GET|HEAD /v2/…`: OCI Distribution (OpenTofu's `oci_mirror`), read-only; its own grammar
    /// (`oci::name`) reads the rest of the path and the query.
    Oci { oci: OciRoute }
        name "oci", service Oci, path Oci "{proxy+}", query Oci,
        reads Oci, absent "not found";
}
