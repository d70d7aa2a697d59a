use super::*;
use crate::address::{ModuleAddress, ProviderAddress, ProviderName};
use crate::layout::Platform;
use crate::query::Listing;

fn r(method: Method, path: &str) -> Result<Route, u16> {
    route(&method, path, None, &BasePaths::default()).map_err(|e| e.status().as_u16())
}
fn m(ns: &str, n: &str, s: &str) -> ModuleAddress {
    ModuleAddress::parse(ns, n, s).unwrap()
}
fn p(h: &str, ns: &str, t: &str) -> ProviderAddress {
    ProviderAddress::parse(h, ns, t).unwrap()
}
fn v(s: &str) -> semver::Version {
    semver::Version::parse(s).unwrap()
}

// A table of paths and their routes (long on purpose): one case per line.
#[test]
fn routes_table() {
    use Method as M;
    let cases: Vec<(Method, &str, Result<Route, u16>)> = vec![
        (M::GET, "/.well-known/terraform.json", Ok(Route::Discovery {})),
        (M::HEAD, "/.well-known/terraform.json", Ok(Route::Discovery {})),
        (M::GET, "/v1/modules/acme/vpc/aws/versions", Ok(Route::ModuleVersions { module: m("acme", "vpc", "aws") })),
        (
            M::GET,
            "/v1/modules/acme/vpc/aws/1.2.3/download",
            Ok(Route::ModuleDownload { module: m("acme", "vpc", "aws"), version: v("1.2.3") }),
        ),
        (
            M::GET,
            "/v1/modules/acme/vpc/aws/1.2.3-rc.1+b5/download",
            Ok(Route::ModuleDownload { module: m("acme", "vpc", "aws"), version: v("1.2.3-rc.1+b5") }),
        ),
        (
            M::GET,
            "/v1/mirror/registry.terraform.io/hashicorp/null/index.json",
            Ok(Route::MirrorIndex { provider: p("registry.terraform.io", "hashicorp", "null") }),
        ),
        (
            M::GET,
            "/v1/mirror/example.com:8443/acme/thing/1.0.0.json",
            Ok(Route::MirrorVersion { provider: p("example.com:8443", "acme", "thing"), version: v("1.0.0") }),
        ),
        // The list, search and details API (the web function).
        (M::GET, "/v1/modules", Ok(Route::ModuleList { listing: Listing::default() })),
        (M::GET, "/v1/modules/acme/vpc/aws", Ok(Route::ModuleLatest { module: m("acme", "vpc", "aws") })),
        (
            M::GET,
            "/v1/modules/acme/vpc/aws/1.2.3",
            Ok(Route::ModuleDetails { module: m("acme", "vpc", "aws"), version: v("1.2.3") }),
        ),
        // A module may be called "versions" (a valid system): its details, not a version list.
        (M::GET, "/v1/modules/acme/vpc/versions", Ok(Route::ModuleLatest { module: m("acme", "vpc", "versions") })),
        (M::GET, "/v1/modules/search", Err(400)),
        (M::GET, "/v1/modules/", Err(400)),
        (M::GET, "/v1/modules/acme", Err(400)),
        (M::GET, "/v1/modules/acme/vpc", Err(400)),
        (M::GET, "/v1/modules/acme/vpc/aws/1.0", Err(400)),
        (M::POST, "/v1/modules", Err(405)),
        // Grammar breaks: 400.
        (M::GET, "/v1/modules/acme/vpc/aws/versions/", Err(400)),
        (M::GET, "/v1/modules/acme//aws/versions", Err(400)),
        (M::GET, "/v1/modules/../vpc/aws/versions", Err(400)),
        (M::GET, "/v1/modules/%2e%2e/vpc/aws/versions", Err(400)),
        (M::GET, "/v1/modules/acme%2fvpc/x/aws/versions", Err(400)),
        (M::GET, "/v1/modules/acme/vpc/aws/1.0/download", Err(400)),
        (M::GET, "/v1/modules/acme/vpc/aws/v1.0.0/download", Err(400)),
        (M::GET, "/v1/modules/acme/vpc/aws/1.0.0/downloads", Err(400)),
        (M::GET, "/v1/mirror/registry.terraform.io/hashicorp/null/3.2.1.zip", Err(400)),
        (M::GET, "/v1/mirror/registry.terraform.io/hashicorp/null/latest.json", Err(400)),
        (M::GET, "/v1/mirror/registry.terraform.io/hashicorp/index.json", Err(400)),
        (M::GET, "/v1/mirror/..%2f..%2fetc/hashicorp/null/index.json", Err(400)),
        (
            M::GET,
            "/v1/mirror/registry.terraform.io/hashicorp/null/terraform-provider-null_1.0.0_linux_amd64.zip",
            Err(400),
        ),
        (
            M::GET,
            "/v1/providers/acme/widget/versions",
            Ok(Route::ProviderVersions { name: ProviderName::parse("acme", "widget").unwrap() }),
        ),
        (
            M::GET,
            "/v1/providers/acme/widget/1.0.0-rc.1/download/linux/amd64",
            Ok(Route::ProviderDownload {
                name: ProviderName::parse("acme", "widget").unwrap(),
                version: v("1.0.0-rc.1"),
                platform: Platform { os: "linux".into(), arch: "amd64".into() },
            }),
        ),
        (M::GET, "/v1/providers/acme/widget", Err(400)),
        (M::GET, "/v1/providers/acme/wid_get/versions", Err(400)),
        (M::GET, "/v1/providers/example.com/acme/widget/versions", Err(400)),
        (M::GET, "/v1/providers/acme/widget/1.0.0/download/linux", Err(400)),
        (M::GET, "/v1/providers/acme/widget/1.0.0/download/Linux/amd64", Err(400)),
        (M::GET, "/v1/providers/acme/widget/1.0.0/download/linux/amd64/", Err(400)),
        (M::GET, "/v1/providers/acme/widget/v1.0.0/download/linux/amd64", Err(400)),
        (M::GET, "/v1/providers/acme/widget/1.0.0/download/linux_x/amd64", Err(400)),
        (M::GET, "/v1/providers/%2e%2e/widget/versions", Err(400)),
        (M::POST, "/v1/providers/acme/widget/versions", Err(405)),
        // The web pages.
        (M::GET, "/", Ok(Route::CatalogPage { listing: Listing::default() })),
        (M::POST, "/", Err(405)),
        (M::GET, "/ui/modules/acme/vpc/aws", Ok(Route::ModulePage { module: m("acme", "vpc", "aws") })),
        (
            M::GET,
            "/ui/modules/acme/vpc/aws/1.2.3",
            Ok(Route::ModuleVersionPage { module: m("acme", "vpc", "aws"), version: v("1.2.3") }),
        ),
        (
            M::GET,
            "/ui/modules/acme/vpc/aws/2.0.0/from/1.2.3",
            Ok(Route::UpgradePage { module: m("acme", "vpc", "aws"), version: v("2.0.0"), from: v("1.2.3") }),
        ),
        (
            M::GET,
            "/ui/providers/example.com:8443/acme/thing",
            Ok(Route::ProviderPage { provider: p("example.com:8443", "acme", "thing") }),
        ),
        (M::GET, "/ui/sign-in", Ok(Route::SignIn {})),
        (M::POST, "/ui/sign-in", Ok(Route::SignInSubmit {})),
        (M::PUT, "/ui/sign-in", Err(405)),
        (M::POST, "/ui/sign-out", Ok(Route::SignOut {})),
        (M::GET, "/ui/sign-out", Err(405)),
        (M::GET, "/ui/assets/style.css", Ok(Route::PageAsset { asset: Asset::Style })),
        (M::GET, "/ui/assets/../../etc/passwd", Err(404)),
        (M::GET, "/ui/assets/other.js", Err(404)),
        (M::GET, "/ui/modules/acme/vpc", Err(404)),
        (M::GET, "/ui/modules/acme/vpc/aws/x", Err(400)),
        (M::GET, "/ui/modules/%2e%2e/vpc/aws", Err(400)),
        (M::GET, "/ui/", Err(400)),
        // Not ours: 404.
        (M::GET, "/index.html", Err(404)),
        (M::GET, "/v2/providers/hashicorp/null/versions", Err(404)),
        (M::GET, "/.well-known/terraform.json/", Err(404)),
        (M::GET, "/V1/modules/acme/vpc/aws/versions", Err(404)),
        // Wrong method on a real route: 405.
        (M::POST, "/v1/modules/acme/vpc/aws/versions", Err(405)),
        (M::PUT, "/v1/mirror/registry.terraform.io/hashicorp/null/index.json", Err(405)),
        (M::DELETE, "/.well-known/terraform.json", Err(405)),
    ];
    // In AWS each route reaches its function only through a route key that matches its path
    // (a `{x}` one segment, `{proxy+}` the rest); anything else goes to `$default`.
    let templates = route_templates(&BasePaths::default());
    for (method, path, want) in cases {
        assert_eq!(r(method.clone(), path), want, "{method} {path}");
        if let Ok(route) = want {
            let path = path.split('?').next().unwrap_or_default();
            let keyed =
                templates.iter().filter(|(_, t)| t != DEFAULT_ROUTE_KEY).find(|(_, t)| route_key_matches(t, path));
            assert_eq!(keyed.map(|(s, _)| *s), Some(route.service()), "{path}: no route key of its function");
        }
    }
    let long = format!("/v1/modules/{}", "a/".repeat(600));
    assert_eq!(r(Method::GET, &long), Err(400));
}

#[test]
fn route_keys_match_as_api_gateway_matches_them() {
    let key = "ANY /ui/modules/{namespace}/{name}/{system}/{version}";
    assert!(route_key_matches(key, "/ui/modules/a/b/c/1.0.0"));
    assert!(route_key_matches(key, "/ui/modules/a/b/c/1.0.0/"));
    assert!(!route_key_matches(key, "/ui/modules/a/b/c/1.0.0/from/0.9.0"), "one segment per {{x}}");
    assert!(!route_key_matches(key, "/ui/modules/a/b/c"));
    assert!(route_key_matches("ANY /v2/{proxy+}", "/v2/providers/h/n/t/tags/list"));
    assert!(route_key_matches("ANY /v2", "/v2/"));
    assert!(!route_key_matches("ANY /v2/{proxy+}", "/v2"));
    assert!(route_key_matches("ANY /", "/") && !route_key_matches("ANY /", "/x"));
    assert!(!route_key_matches(DEFAULT_ROUTE_KEY, "/anything"));
}

/// Only the list and search routes read a query string, and only their parameters.
#[test]
fn query_strings_only_where_read() {
    let q = |path: &str, query: &str| {
        route(&Method::GET, path, Some(query), &BasePaths::default()).map_err(|e| e.status().as_u16())
    };
    let listing = Listing { offset: 15, limit: 5, ..Listing::default() };
    assert_eq!(q("/v1/modules", "offset=15&limit=5"), Ok(Route::ModuleList { listing }));
    let search = Listing { q: Some("vpc".into()), ..Listing::default() };
    assert_eq!(q("/v1/modules/search", "q=vpc"), Ok(Route::ModuleSearch { listing: search }));
    assert_eq!(q("/v1/modules", "q=vpc"), Err(400));
    assert_eq!(q("/v1/modules/acme/vpc/aws", ""), Ok(Route::ModuleLatest { module: m("acme", "vpc", "aws") }));
    for path in [
        "/.well-known/terraform.json",
        "/v1/modules/acme/vpc/aws/versions",
        "/v1/modules/acme/vpc/aws",
        "/v1/modules/acme/vpc/aws/1.0.0",
        "/v1/mirror/registry.terraform.io/hashicorp/null/index.json",
        "/v1/providers/acme/widget/versions",
    ] {
        assert_eq!(q(path, "offset=1"), Err(400), "{path}");
    }
    assert_eq!(q("/elsewhere", "a=1"), Err(404), "not ours stays 404");
}

#[test]
fn custom_base_paths() {
    let paths = BasePaths { modules: "/m/".into(), mirror: "/providers/".into(), providers: "/p/".into() };
    assert_eq!(
        route(&Method::GET, "/m/a/b/c/versions", None, &paths),
        Ok(Route::ModuleVersions { module: m("a", "b", "c") })
    );
    assert_eq!(route(&Method::GET, "/v1/modules/a/b/c/versions", None, &paths).unwrap_err().status().as_u16(), 404);
    let templates = route_templates(&paths);
    assert_eq!(templates.len(), 27);
    assert!(templates.iter().any(|(s, t)| *s == Service::Web && t == "ANY /m"));
    assert_eq!(route(&Method::GET, "/m", None, &paths), Ok(Route::ModuleList { listing: Listing::default() }));
    assert!(
        templates
            .iter()
            .any(|(s, t)| *s == Service::Mirror && t == "ANY /providers/{hostname}/{namespace}/{type}/{file}")
    );
}

/// Every row of the route table is reachable: a path built from its own template (each
/// placeholder filled with a valid value) routes to that row, by the method it answers, and
/// reaches its function through a route key. A row whose values its path does not hold, or
/// that an earlier row shadows, fails here.
#[test]
fn every_row_routes_its_own_path() {
    let paths = BasePaths::default();
    let templates = route_templates(&paths);
    for row in ROUTES {
        let (method, path, query) = row.example(&paths);
        let routed = route(&method, &path, query, &paths);
        assert_eq!(routed.as_ref().map(Route::kind), Ok(row.kind), "{method} {path}");
        assert_eq!(routed.map(|r| r.service()), Ok(row.service));
        let keyed = templates.iter().find(|(_, t)| route_key_matches(t, &path)).map(|(s, _)| *s);
        assert_eq!(keyed, Some(row.service), "{path}: no route key of its function");
    }
    assert_eq!(route(&Method::GET, DISCOVERY_PATH, None, &paths), Ok(Route::Discovery {}));
}

/// A path under a protocol's base that fits none of its rows is told the routes there, from
/// the table.
#[test]
fn a_miss_under_a_base_names_its_routes() {
    let message = |path: &str| match route(&Method::GET, path, None, &BasePaths::default()) {
        Err(Error::BadRequest(m)) => m,
        other => panic!("{path}: {other:?}"),
    };
    assert_eq!(
        message("/v1/providers/acme/widget"),
        "provider routes are :namespace/:type/versions and :namespace/:type/:version/download/:os/:arch"
    );
    assert_eq!(
        message("/v1/mirror/registry.terraform.io/hashicorp/null/3.2.1.zip"),
        "mirror routes are :hostname/:namespace/:type/index.json and :hostname/:namespace/:type/:version.json"
    );
    assert!(message("/v1/modules/acme").starts_with("module routes are :namespace/:name/:system/versions, "));
}

/// What the differential run of the old and new routers over 1.4 million requests found: a
/// base path without its `/` is ours only where a row takes it (the module list, OCI's `/v2`),
/// and a push to OCI is refused as such (405) before its length is judged.
#[test]
fn bare_bases_and_long_pushes_answer_as_before_the_table() {
    assert_eq!(r(Method::GET, "/v1/mirror"), Err(404));
    assert_eq!(r(Method::GET, "/v1/providers"), Err(404));
    assert_eq!(r(Method::GET, "/ui"), Err(404));
    assert_eq!(r(Method::GET, "/v1/modules"), Ok(Route::ModuleList { listing: Listing::default() }));
    let long_push = format!("/v2/{}", "a".repeat(1021));
    assert_eq!(r(Method::POST, &long_push), Err(405));
    assert_eq!(r(Method::GET, &long_push), Err(400));
    let deep_root = format!("/{}", "/".repeat(1020));
    assert_eq!(r(Method::GET, &deep_root), Err(404));
}

/// `fit::rows_of` indexes its rows by `Base as usize`: `Base::ALL` must list every base in its
/// declaration order, and `PREFIXED` every base but the root.
#[test]
fn every_base_is_listed_where_it_is_indexed() {
    for (i, base) in Base::ALL.iter().enumerate() {
        assert_eq!(*base as usize, i, "{base:?}");
    }
    assert!(Base::PREFIXED.iter().all(|b| *b != Base::Root && Base::ALL.contains(b)));
    assert_eq!(Base::PREFIXED.len(), Base::ALL.len() - 1);
    for row in ROUTES {
        assert!(fit::rows_of(row.base).iter().any(|c| std::ptr::eq(c.row, row)), "{} not indexed", row.name);
    }
}

#[test]
fn upstream_modules_are_named_by_host_and_never_taken_for_a_namespace() {
    let paths = BasePaths::default();
    let up =
        crate::address::UpstreamModule::parse("registry.terraform.io", "terraform-aws-modules", "vpc", "aws").unwrap();
    assert_eq!(
        route(
            &Method::GET,
            "/v1/modules/upstream/registry.terraform.io/terraform-aws-modules/vpc/aws/versions",
            None,
            &paths
        ),
        Ok(Route::UpstreamModuleVersions { module: up.clone() })
    );
    assert_eq!(
        route(
            &Method::GET,
            "/v1/modules/upstream/registry.terraform.io/terraform-aws-modules/vpc/aws/5.1.0/download",
            None,
            &paths
        ),
        Ok(Route::UpstreamModuleDownload { module: up, version: semver::Version::new(5, 1, 0) })
    );
    // A private namespace named "upstream" keeps its routes.
    assert_eq!(
        route(&Method::GET, "/v1/modules/upstream/vpc/aws/versions", None, &paths),
        Ok(Route::ModuleVersions { module: m("upstream", "vpc", "aws") })
    );
    for bad in [
        "/v1/modules/upstream/localhost/a/b/c/versions",
        "/v1/modules/upstream/Registry.io/a/b/c/versions",
        "/v1/modules/upstream/registry.terraform.io/a/b/c/v1.0.0/download",
    ] {
        assert_eq!(route(&Method::GET, bad, None, &paths).unwrap_err().status().as_u16(), 400, "{bad}");
    }
}
