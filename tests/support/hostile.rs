//! The hostile-request corpus: requests a scanner or an attacker can craft, each with the
//! status the registry must answer. Every case is answered by the registry's own handler with a
//! 4xx JSON body (a 4xx HTML page with the Content-Security-Policy for the web pages' paths),
//! whichever transport carries it (HTTPS to the local registry, or an API Gateway
//! event to a Lambda). `transport_cases` are byte sequences that are not valid HTTP at all: the
//! HTTP server (hyper here, API Gateway in AWS) refuses them before any handler runs.
//!
//! Fixture state the statuses assume: module `acme/vpc/aws` 1.0.0 and provider
//! `registry.terraform.io/hashicorp/null` 3.2.1 published; the dev token (every scope) sent
//! unless a case says otherwise; a token `SCOPED_TOKEN` for the `acme` namespace only, and an
//! expired `EXPIRED_TOKEN`; an OpenID Connect issuer on loopback (`oidc::OidcIssuer`) and one
//! configured at an address nobody answers, and the JWTs `JWTS` names (`{jwt:NAME}` in a
//! header), minted by the fixture.

/// Who a case authenticates as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Auth {
    /// `Authorization: Bearer DEV_TOKEN` (reads everything).
    Dev,
    /// No `Authorization` header.
    None,
    /// This exact header value (`{dev}` is replaced by the dev token).
    Header(String),
}

#[derive(Debug, Clone)]
pub struct Case {
    pub method: String,
    /// The request target exactly as sent: path and optional `?query`, not normalised.
    pub target: String,
    pub auth: Auth,
    /// Extra headers (name, value); `{host}` in a value is the registry's own address.
    pub headers: Vec<(String, String)>,
    pub status: u16,
    /// Text the answer's message must hold (why it was refused), where a case names one.
    pub says: Option<&'static str>,
    /// A JSON body, sent with its `Content-Type` and `Content-Length` (the MCP endpoint's).
    pub body: Option<String>,
}

/// Scoped to the `acme` module namespace and no provider.
pub const SCOPED_TOKEN: &str = "trg_hostile_scoped_0123456789abcdef0123456789abcdef";
/// Expired in 2020.
pub const EXPIRED_TOKEN: &str = "trg_hostile_expired_0123456789abcdef0123456789abcde";

/// The JWTs the OIDC cases send, by name: every way a token naming a configured issuer must be
/// refused, and a valid one (`valid`: the issuer's user, who may read the `acme` namespace,
/// `team-network` and `registry.terraform.io/hashicorp/*`).
pub const JWTS: [&str; 12] = [
    "valid",
    "expired",
    "not_yet_valid",
    "wrong_audience",
    "wrong_issuer",
    "alg_none",
    "hs256_with_public_key",
    "unknown_kid",
    "tampered",
    "issuer_unreachable",
    "grants_nothing",
    "oversized",
];

const VERSIONS: &str = "/v1/modules/acme/vpc/aws/versions";
const DOWNLOAD: &str = "/v1/modules/acme/vpc/aws/1.0.0/download";
const INDEX: &str = "/v1/mirror/registry.terraform.io/hashicorp/null/index.json";
const VERSION: &str = "/v1/mirror/registry.terraform.io/hashicorp/null/3.2.1.json";
/// providers.v1 routes (the fixture publishes no signed release: these answer 404 when allowed).
const PROVIDER_VERSIONS: &str = "/v1/providers/acme/widget/versions";
const PROVIDER_DOWNLOAD: &str = "/v1/providers/acme/widget/1.0.0/download/linux/amd64";
/// The modules pull-through (the modules function): an upstream registry's module.
const UPSTREAM_VERSIONS: &str = "/v1/modules/upstream/registry.terraform.io/terraform-aws-modules/vpc/aws/versions";
const UPSTREAM_DOWNLOAD: &str =
    "/v1/modules/upstream/registry.terraform.io/terraform-aws-modules/vpc/aws/5.1.0/download";
/// The list, search and details API (the web function).
const LIST: &str = "/v1/modules";
const SEARCH: &str = "/v1/modules/search";
const DETAILS: &str = "/v1/modules/acme/vpc/aws";
const DETAILS_VERSION: &str = "/v1/modules/acme/vpc/aws/1.0.0";
/// The mirrored provider's OCI repository (the oci function).
const OCI_REPO: &str = "/v2/providers/registry.terraform.io/hashicorp/null";

fn basic(credentials: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(credentials)
}

/// The web pages (the web function): their errors are HTML pages, not JSON.
const PAGE_MODULE: &str = "/ui/modules/acme/vpc/aws";
const PAGE_PROVIDER: &str = "/ui/providers/registry.terraform.io/hashicorp/null";
/// An upstream module's page (nothing copied in the fixture: absent for everyone who may look).
const PAGE_UPSTREAM: &str = "/ui/upstream/registry.terraform.io/terraform-aws-modules/vpc/aws";
const SIGN_IN: &str = "/ui/sign-in";
const SIGN_OUT: &str = "/ui/sign-out";

/// Whether `target` is a web page's, whose errors are pages (`text/html`) rather than JSON.
pub fn is_page(target: &str) -> bool {
    let path = target.split('?').next().unwrap_or_default();
    registry::router::is_page_path(path)
}

fn cookie(token: &str) -> String {
    format!("{}={token}", registry::auth::session::COOKIE)
}

fn case(status: u16, target: impl Into<String>) -> Case {
    Case {
        method: "GET".into(),
        target: target.into(),
        auth: Auth::Dev,
        headers: vec![],
        status,
        says: None,
        body: None,
    }
}

/// A POST of `body` to the MCP endpoint.
fn mcp(status: u16, auth: Auth, body: impl Into<String>, says: &'static str) -> Case {
    Case { method: "POST".into(), auth, body: Some(body.into()), says: Some(says), ..case(status, "/mcp") }
}

fn method(status: u16, method: &str, target: &str) -> Case {
    Case { method: method.into(), ..case(status, target) }
}

fn auth(status: u16, target: &str, auth: Auth) -> Case {
    Case { auth, ..case(status, target) }
}

/// A case sending the fixture's JWT `name` (one of `JWTS`).
fn jwt(status: u16, target: &str, name: &str) -> Case {
    debug_assert!(JWTS.contains(&name), "{name}");
    auth(status, target, Auth::Header(format!("Bearer {{jwt:{name}}}")))
}

fn with_header(status: u16, target: &str, auth: Auth, name: &str, value: String) -> Case {
    Case { auth, headers: vec![(name.into(), value)], ..case(status, target) }
}

/// The hostile-request corpus: one table, long on purpose (a case per line, grouped by what
/// it attacks), so a reader sees every case and its expected answer in one place.
pub fn corpus() -> Vec<Case> {
    let long = |n: usize| "a".repeat(n);
    let mut cases = vec![
        // Dot-dot segments, plain: rejected by the segment grammar, never resolved.
        case(400, "/v1/modules/../acme/vpc/aws/versions"),
        case(400, "/v1/modules/acme/../vpc/aws/versions"),
        case(400, "/v1/modules/acme/vpc/aws/../../../../access/tokens.json"),
        case(400, "/v1/modules/./acme/vpc/aws/versions"),
        case(400, "/v1/modules/acme/vpc/aws/1.0.0/download/../../../../../access/tokens.json"),
        case(400, "/v1/mirror/../../access/tokens.json"),
        case(400, "/v1/mirror/registry.terraform.io/hashicorp/null/../../../../access/tokens.json"),
        case(400, "/v1/mirror/registry.terraform.io/hashicorp/null/..%2f..%2faccess%2ftokens.json"),
        case(404, "/.well-known/../v1/modules/acme/vpc/aws/versions"),
        case(404, "/.well-known/terraform.json/.."),
        case(400, "/v1/modules/acme/vpc/aws/versions/.."),
        // Percent-encoded dots and slashes, in every case and depth of encoding.
        case(400, "/v1/modules/%2e%2e/vpc/aws/versions"),
        case(400, "/v1/modules/%2E%2E/vpc/aws/versions"),
        case(400, "/v1/modules/.%2e/vpc/aws/versions"),
        case(400, "/v1/modules/%2e/vpc/aws/versions"),
        case(400, "/v1/modules/acme%2fvpc/aws/x/versions"),
        case(400, "/v1/modules/acme%2Fvpc%2Faws/versions"),
        case(400, "/v1/modules/%252e%252e/vpc/aws/versions"),
        case(400, "/v1/modules/acme%252fvpc/aws/x/versions"),
        case(400, "/v1/modules/%25252e%25252e/vpc/aws/versions"),
        case(400, "/v1/modules/%c0%ae%c0%ae/vpc/aws/versions"),
        case(400, "/v1/modules/%u002e%u002e/vpc/aws/versions"),
        case(400, "/v1/modules/acme/vpc/aws/1.0.0%2f..%2f..%2fdownload"),
        case(404, "/v1%2fmodules%2facme%2fvpc%2faws%2fversions"),
        case(404, "/%2e%2e/v1/modules/acme/vpc/aws/versions"),
        case(404, "/%2e%2e%2f%2e%2e%2faccess%2ftokens.json"),
        // Backslashes, encoded (raw ones are in the transport cases).
        case(400, "/v1/modules/..%5c..%5caccess/vpc/aws/versions"),
        case(400, "/v1/modules/acme%5cvpc/aws/x/versions"),
        case(400, "/v1/mirror/registry.terraform.io/hashicorp/null/..%5C..%5Cindex.json"),
        // Empty segments, case games, matrix parameters.
        case(404, "//v1/modules/acme/vpc/aws/versions"),
        case(400, "/v1/modules//acme/vpc/aws/versions"),
        case(400, "/v1/modules/acme/vpc/aws/versions/"),
        case(400, "/v1/modules/acme/vpc/aws//versions"),
        case(400, "/v1/modules/"),
        case(404, "/V1/modules/acme/vpc/aws/versions"),
        case(404, "/v1/Modules/acme/vpc/aws/versions"),
        case(400, "/v1/modules/acme/vpc/aws/VERSIONS"),
        case(400, "/v1/modules/acme;/vpc/aws/versions"),
        case(400, "/v1/modules/acme/vpc/aws;x=1/versions"),
        case(400, "/v1/modules/acme/vpc/aws/versions;.json"),
        // NUL and control characters, encoded.
        case(400, "/v1/modules/acme%00/vpc/aws/versions"),
        case(400, "/v1/modules/acme/vpc/aws%00.json/versions"),
        case(400, "/v1/modules/acme%0d%0aSet-Cookie:%20x/vpc/aws/versions"),
        case(400, "/v1/modules/acme%0a/vpc/aws/versions"),
        case(400, "/v1/modules/acme%09/vpc/aws/versions"),
        case(400, "/v1/modules/acme%7f/vpc/aws/versions"),
        case(400, "/v1/modules/acme%1b%5b31m/vpc/aws/versions"),
        case(400, "/v1/modules/acme%20/vpc/aws/versions"),
        case(400, "/v1/mirror/registry.terraform.io%00/hashicorp/null/index.json"),
        case(400, "/v1/mirror/registry.terraform.io/hashicorp/null/3.2.1%00.json"),
        case(400, "/v1/mirror/registry.terraform.io/hashicorp/null/index.json%00"),
        case(404, "/.well-known/terraform.json%00"),
        // Overlong segments and paths.
        case(400, format!("/v1/modules/{}/vpc/aws/versions", long(65))),
        case(400, format!("/v1/modules/acme/{}/aws/versions", long(65))),
        case(400, format!("/v1/modules/acme/vpc/{}/versions", long(65))),
        case(400, format!("/v1/modules/{}/vpc/aws/versions", long(5000))),
        case(400, format!("/v1/modules/acme/vpc/aws/{}/versions", "a/".repeat(200))),
        case(400, format!("/v1/modules/{}access/vpc/aws/versions", "../".repeat(300))),
        case(400, format!("/v1/mirror/{}.io/hashicorp/null/index.json", long(300))),
        case(400, format!("/v1/mirror/registry.terraform.io/{}/null/index.json", long(65))),
        case(400, format!("/v1/mirror/registry.terraform.io/hashicorp/{}/index.json", long(65))),
        case(400, format!("{VERSIONS}{}", "/x".repeat(500))),
        case(400, format!("/v1/modules/{}", long(60_000))),
        case(404, format!("/{}", long(1000))),
        // Unicode look-alikes of dots, slashes and letters (percent-encoded UTF-8).
        case(400, "/v1/modules/%EF%BC%8E%EF%BC%8E/vpc/aws/versions"),
        case(400, "/v1/modules/%E2%80%A4%E2%80%A4/vpc/aws/versions"),
        case(400, "/v1/modules/acme%E2%81%84vpc/aws/x/versions"),
        case(400, "/v1/modules/acme%E2%88%95vpc/aws/x/versions"),
        case(400, "/v1/modules/acme%EF%BC%8Fvpc/aws/x/versions"),
        case(400, "/v1/modules/%D0%B0cme/vpc/aws/versions"),
        case(400, "/v1/modules/acm%C4%B1/vpc/aws/versions"),
        case(400, "/v1/modules/acme%E2%80%8B/vpc/aws/versions"),
        case(400, "/v1/modules/acme%E2%80%AE/vpc/aws/versions"),
        case(400, "/v1/modules/%EF%BB%BFacme/vpc/aws/versions"),
        case(400, "/v1/mirror/registry.terraform%E3%80%82io/hashicorp/null/index.json"),
        // Versions: not SemVer, not canonical, too big, constraints instead of versions.
        case(400, "/v1/modules/acme/vpc/aws/v1.0.0/download"),
        case(400, "/v1/modules/acme/vpc/aws/1.0/download"),
        case(400, "/v1/modules/acme/vpc/aws/01.0.0/download"),
        case(400, "/v1/modules/acme/vpc/aws/1.0.0.0/download"),
        case(400, "/v1/modules/acme/vpc/aws/1.0.0-/download"),
        case(400, "/v1/modules/acme/vpc/aws/1.0.0+/download"),
        case(400, "/v1/modules/acme/vpc/aws/18446744073709551616.0.0/download"),
        case(400, "/v1/modules/acme/vpc/aws/99999999999999999999999999999999.0.0/download"),
        case(400, format!("/v1/modules/acme/vpc/aws/1.0.0-{}/download", long(200))),
        case(400, "/v1/modules/acme/vpc/aws/1.0.0-alpha..1/download"),
        case(400, "/v1/modules/acme/vpc/aws/1.0.0-01/download"),
        case(400, "/v1/modules/acme/vpc/aws/%201.0.0/download"),
        case(400, "/v1/modules/acme/vpc/aws/1.0.0%2B001/download"),
        case(400, "/v1/modules/acme/vpc/aws/1.0.0+b%2f../download"),
        case(400, "/v1/modules/acme/vpc/aws/=1.0.0/download"),
        case(400, "/v1/modules/acme/vpc/aws/~%3E1.0/download"),
        case(400, "/v1/modules/acme/vpc/aws/latest/download"),
        // Build metadata is valid SemVer; this one is not published.
        case(404, "/v1/modules/acme/vpc/aws/1.0.0+build.7/download"),
        case(404, "/v1/modules/acme/vpc/aws/1.0.0-rc.1/download"),
        case(400, "/v1/mirror/registry.terraform.io/hashicorp/null/3.2.json"),
        case(400, "/v1/mirror/registry.terraform.io/hashicorp/null/v3.2.1.json"),
        case(400, "/v1/mirror/registry.terraform.io/hashicorp/null/3.2.1.json.json"),
        case(400, "/v1/mirror/registry.terraform.io/hashicorp/null/index.json.bak"),
        case(400, "/v1/mirror/registry.terraform.io/hashicorp/null/3.2.1.JSON"),
        case(400, "/v1/mirror/registry.terraform.io/hashicorp/null/3.2.1.zip"),
        case(400, "/v1/mirror/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.1_linux_amd64.zip"),
        case(400, "/v1/mirror/registry.terraform.io/hashicorp/null/manifest.json"),
        case(400, "/v1/mirror/registry.terraform.io/hashicorp/null/.json"),
        // Wrong methods on real routes.
        method(405, "POST", VERSIONS),
        method(405, "PUT", DOWNLOAD),
        method(405, "DELETE", INDEX),
        method(405, "PATCH", VERSION),
        method(405, "OPTIONS", VERSIONS),
        method(405, "TRACE", VERSIONS),
        method(405, "PROPFIND", INDEX),
        method(405, "POST", "/.well-known/terraform.json"),
        method(405, "DELETE", "/.well-known/terraform.json"),
        method(405, "POST", LIST),
        method(405, "POST", &format!("{SEARCH}?q=vpc")),
        method(405, "PUT", DETAILS),
        method(405, "DELETE", DETAILS_VERSION),
        // Query strings: only list and search take one, with their parameters only.
        case(400, format!("{LIST}?limit=0")),
        case(400, format!("{LIST}?limit=101")),
        case(400, format!("{LIST}?offset=-1")),
        case(400, format!("{LIST}?offset=1e9")),
        case(400, format!("{LIST}?offset=99999999999999999999999")),
        case(400, format!("{LIST}?limit=1&limit=2")),
        case(400, format!("{LIST}?q=vpc")),
        case(400, format!("{LIST}?sort=name")),
        case(400, format!("{LIST}?sort=DOWNLOADS")),
        case(400, format!("{LIST}?sort=downloads&sort=downloads")),
        case(400, format!("{SEARCH}?q=vpc&sort=%64ownloads")),
        case(400, format!("{LIST}?verified=true")),
        case(400, format!("{LIST}?namespace=..%2faccess")),
        case(400, format!("{LIST}?namespace=acme%00")),
        case(400, format!("{LIST}?provider=aws%0d%0aSet-Cookie:%20x")),
        case(400, format!("{LIST}?limit=1%00")),
        case(400, format!("{LIST}?{}", "a=1&".repeat(2000))),
        case(400, format!("{LIST}?offset={}", "9".repeat(600))),
        case(400, SEARCH),
        case(400, format!("{SEARCH}?q=")),
        case(400, format!("{SEARCH}?q=+++")),
        case(400, format!("{SEARCH}?q=%zz")),
        case(400, format!("{SEARCH}?q=%+1")),
        case(400, format!("{SEARCH}?q=%00")),
        case(400, format!("{SEARCH}?q=vpc%0d%0aSet-Cookie:%20x")),
        case(400, format!("{SEARCH}?q=%ff%fe")),
        case(400, format!("{SEARCH}?q=%c0%ae%c0%ae")),
        case(400, format!("{SEARCH}?q={}", long(200))),
        case(400, format!("{SEARCH}?q=vpc&q=dns")),
        case(400, format!("{SEARCH}?q=vpc&callback=alert")),
        case(400, format!("{DETAILS}?x=1")),
        case(400, format!("{DETAILS_VERSION}?versionId=null")),
        // Query strings: no other route takes one.
        case(400, format!("{VERSIONS}?x=1")),
        case(400, format!("{DOWNLOAD}?X-Amz-Signature=00&X-Amz-Expires=604800")),
        case(400, format!("{INDEX}?prefix=access/")),
        case(400, format!("{VERSION}?versionId=null")),
        case(400, "/.well-known/terraform.json?callback=alert"),
        case(400, format!("{VERSIONS}?%00")),
        case(400, format!("{VERSIONS}?../../access/tokens.json")),
        case(400, format!("{VERSIONS}?{}", "a=1&".repeat(2000))),
        // Endpoints we do not have, and bucket keys asked for directly.
        case(404, "/v1/"),
        case(404, "/v2/providers/hashicorp/null/versions"),
        case(404, "/.well-known/terraform.json.bak"),
        case(404, "/.env"),
        case(404, "/.git/config"),
        case(404, "/wp-login.php"),
        case(404, "/server-status"),
        case(404, "/access/tokens.json"),
        case(404, "/modules/acme/vpc/aws/manifest.json"),
        case(404, "/modules/acme/vpc/aws/1.0.0.tar.gz"),
        case(404, "/providers/registry.terraform.io/hashicorp/null/index.json"),
        case(404, "/rejections/modules/acme/vpc/aws/1.0.0.tar.gz.json"),
        case(404, "/indexed/modules/acme/vpc/aws/manifest.json"),
        // Names valid in the grammar that look like other parts of the bucket: they map to
        // keys inside the layout, which do not exist.
        case(404, "/v1/modules/access/tokens/json/versions"),
        case(404, "/v1/modules/rejections/modules/acme/versions"),
        case(404, "/v1/mirror/access.json/tokens/json/index.json"),
        case(404, "/v1/providers/access/tokens/versions"),
        case(404, "/v1/providers/signing-keys/acme/versions"),
        case(404, PROVIDER_VERSIONS),
        case(404, PROVIDER_DOWNLOAD),
        // Details: versions as for downloads; absent modules and versions are 404.
        case(400, "/v1/modules/acme/vpc/aws/latest"),
        case(400, "/v1/modules/acme/vpc/aws/1.0"),
        case(400, "/v1/modules/acme/vpc/aws/v1.0.0"),
        case(400, "/v1/modules/acme/vpc"),
        case(400, "/v1/modules/search/x"),
        case(404, "/v1/modules/acme/vpc/aws/9.9.9"),
        case(404, "/v1/modules/ghost/vpc/aws"),
        case(404, "/v1/modules/access/tokens/json"),
        case(404, "/v1/modules/indexed/catalog/json"),
        // providers.v1 grammar: no hostname segment, OS and ARCH apart and lower-case.
        case(400, "/v1/providers/registry.terraform.io/hashicorp/null/versions"),
        case(400, "/v1/providers/acme/widget/1.0.0/download/linux_amd64"),
        case(400, "/v1/providers/acme/widget/1.0.0/download/linux/amd64/"),
        case(400, "/v1/providers/acme/widget/1.0.0/download/linux/amd64/SHA256SUMS"),
        case(400, "/v1/providers/acme/widget/1.0.0/download/LINUX/amd64"),
        case(400, "/v1/providers/acme/widget/1.0.0/shasums"),
        case(400, "/v1/providers/acme/widget/1.0.0_SHA256SUMS.sig"),
        case(400, format!("/v1/providers/acme/widget/1.0.0/download/{}/amd64", long(33))),
        // Tokens: missing, malformed, unknown, oversized, expired, out of scope.
        auth(401, VERSIONS, Auth::None),
        auth(401, INDEX, Auth::None),
        auth(401, DOWNLOAD, Auth::Header("Bearer".into())),
        auth(401, DOWNLOAD, Auth::Header("Bearer ".into())),
        auth(401, VERSIONS, Auth::Header("Basic dXNlcjpwYXNz".into())),
        auth(401, VERSIONS, Auth::Header("{dev}".into())),
        auth(401, VERSIONS, Auth::Header("Bearer {dev}x".into())),
        auth(401, VERSIONS, Auth::Header("Bearer {dev} {dev}".into())),
        auth(401, VERSIONS, Auth::Header("Token {dev}".into())),
        auth(401, VERSIONS, Auth::Header("Bearer trg_0000000000000000000000000000000000000000000".into())),
        auth(401, VERSIONS, Auth::Header(format!("Bearer trg_{}", long(10_000)))),
        auth(401, VERSIONS, Auth::Header(format!("Bearer {EXPIRED_TOKEN}"))),
        auth(401, INDEX, Auth::Header("Bearer ../../access/tokens.json".into())),
        auth(401, INDEX, Auth::Header("Bearer %00".into())),
        auth(404, "/v1/modules/other/vpc/aws/versions", Auth::Header(format!("Bearer {SCOPED_TOKEN}"))),
        auth(404, INDEX, Auth::Header(format!("Bearer {SCOPED_TOKEN}"))),
        auth(404, VERSION, Auth::Header(format!("Bearer {SCOPED_TOKEN}"))),
        auth(401, LIST, Auth::None),
        auth(401, &format!("{SEARCH}?q=vpc"), Auth::None),
        auth(401, LIST, Auth::Header(format!("Bearer {EXPIRED_TOKEN}"))),
        auth(
            401,
            &format!("{SEARCH}?q=vpc"),
            Auth::Header("Bearer trg_0000000000000000000000000000000000000000000".into()),
        ),
        auth(401, DETAILS, Auth::None),
        auth(401, DETAILS_VERSION, Auth::Header("Basic dXNlcjpwYXNz".into())),
        auth(404, "/v1/modules/other/vpc/aws", Auth::Header(format!("Bearer {SCOPED_TOKEN}"))),
        auth(404, "/v1/modules/other/vpc/aws/1.0.0", Auth::Header(format!("Bearer {SCOPED_TOKEN}"))),
        auth(401, PROVIDER_VERSIONS, Auth::None),
        auth(401, PROVIDER_DOWNLOAD, Auth::Header(format!("Bearer {EXPIRED_TOKEN}"))),
        auth(404, PROVIDER_VERSIONS, Auth::Header(format!("Bearer {SCOPED_TOKEN}"))),
        auth(404, PROVIDER_DOWNLOAD, Auth::Header(format!("Bearer {SCOPED_TOKEN}"))),
        // JWTs from OpenID Connect issuers: each broken one is a 401 (with why), a valid one
        // outside what the issuer's rules grant a 404.
        Case { says: Some("expired token"), ..jwt(401, VERSIONS, "expired") },
        Case { says: Some("not valid yet"), ..jwt(401, VERSIONS, "not_yet_valid") },
        Case { says: Some("not meant for this registry (aud)"), ..jwt(401, VERSIONS, "wrong_audience") },
        Case { says: Some("unknown or revoked token"), ..jwt(401, VERSIONS, "wrong_issuer") },
        Case { says: Some("not a JSON Web Token"), ..jwt(401, VERSIONS, "alg_none") },
        Case { says: Some("HS256 is not accepted"), ..jwt(401, VERSIONS, "hs256_with_public_key") },
        Case { says: Some("unknown key"), ..jwt(401, VERSIONS, "unknown_kid") },
        Case { says: Some("signature does not verify"), ..jwt(401, VERSIONS, "tampered") },
        Case { says: Some("cannot be fetched"), ..jwt(401, VERSIONS, "issuer_unreachable") },
        Case { says: Some("grants this token anything"), ..jwt(401, VERSIONS, "grants_nothing") },
        Case { says: Some("at most 8192 printable characters"), ..jwt(401, VERSIONS, "oversized") },
        jwt(401, INDEX, "expired"),
        jwt(401, LIST, "tampered"),
        jwt(401, DETAILS, "alg_none"),
        jwt(401, PROVIDER_DOWNLOAD, "hs256_with_public_key"),
        jwt(404, "/v1/modules/other/vpc/aws/versions", "valid"),
        jwt(404, "/v1/modules/team-storage/vpc/aws/1.0.0/download", "valid"),
        jwt(404, PROVIDER_VERSIONS, "valid"),
        jwt(404, "/v1/mirror/registry.terraform.io/acme/null/index.json", "valid"),
        jwt(404, "/v1/modules/other/vpc/aws", "valid"),
        // Oversized and spoofing headers never change what is read or who is let in.
        with_header(401, VERSIONS, Auth::None, "x-padding", long(64 * 1024)),
        with_header(401, VERSIONS, Auth::None, "x-forwarded-for", "127.0.0.1".into()),
        with_header(401, VERSIONS, Auth::None, "x-amzn-oidc-identity", "admin".into()),
        with_header(404, "/admin", Auth::Dev, "x-original-url", VERSIONS.into()),
        with_header(404, "/admin", Auth::Dev, "x-rewrite-url", "/access/tokens.json".into()),
        with_header(400, "/v1/modules/%2e%2e/vpc/aws/versions", Auth::Dev, "x-forwarded-prefix", "/v1/modules/".into()),
        // The web pages: the catalog's query grammar, no query elsewhere, forms only by POST
        // from this registry's own pages, and the same scopes through the cookie.
        case(400, "/?q=%zz"),
        case(400, "/?q=a&q=b"),
        case(400, "/?sort=name"),
        case(400, "/?limit=1000"),
        case(400, "/?offset=-1"),
        case(400, format!("/?q={}", long(200))),
        case(400, format!("{PAGE_MODULE}?ref=main")),
        case(400, format!("{SIGN_IN}?next=https://evil.example")),
        case(404, "/ui/admin"),
        case(404, "/ui/assets/..%2f..%2faccess%2ftokens.json"),
        case(404, "/ui/assets/style.css.map"),
        case(404, "/index.html"),
        case(400, "/ui/"),
        case(400, "/ui//modules/acme/vpc/aws"),
        method(405, "POST", "/"),
        method(405, "PUT", SIGN_IN),
        method(405, "DELETE", SIGN_OUT),
        method(405, "GET", SIGN_OUT),
        method(405, "POST", PAGE_MODULE),
        method(403, "POST", SIGN_IN),
        method(403, "POST", SIGN_OUT),
        Case { headers: vec![("origin".into(), "https://evil.example".into())], ..method(403, "POST", SIGN_IN) },
        Case { headers: vec![("origin".into(), "null".into())], ..method(403, "POST", SIGN_OUT) },
        Case { headers: vec![("origin".into(), "http://{host}".into())], ..method(403, "POST", SIGN_IN) },
        // From the registry's own origin but no token in the form: 400, nothing read.
        Case { headers: vec![("origin".into(), "https://{host}".into())], ..method(400, "POST", SIGN_IN) },
        auth(401, PAGE_MODULE, Auth::None),
        auth(401, PAGE_PROVIDER, Auth::Header(format!("Bearer {EXPIRED_TOKEN}"))),
        auth(404, "/ui/modules/other/vpc/aws", Auth::Header(format!("Bearer {SCOPED_TOKEN}"))),
        auth(404, PAGE_PROVIDER, Auth::Header(format!("Bearer {SCOPED_TOKEN}"))),
        auth(404, "/ui/modules/acme/vpc/aws/9.9.9", Auth::Dev),
        // The upgrade page: both versions must be published; the same access as the module's page.
        auth(404, "/ui/modules/acme/vpc/aws/1.0.0/from/9.9.9", Auth::Dev),
        auth(404, "/ui/modules/acme/vpc/aws/9.9.9/from/1.0.0", Auth::Dev),
        auth(401, "/ui/modules/acme/vpc/aws/1.0.0/from/1.0.0", Auth::None),
        auth(404, "/ui/modules/other/vpc/aws/1.0.0/from/1.0.0", Auth::Header(format!("Bearer {SCOPED_TOKEN}"))),
        auth(404, "/ui/providers/registry.terraform.io/hashicorp/null/9.9.9", Auth::Dev),
        auth(404, PAGE_UPSTREAM, Auth::Dev),
        auth(401, PAGE_UPSTREAM, Auth::None),
        auth(404, PAGE_UPSTREAM, Auth::Header(format!("Bearer {SCOPED_TOKEN}"))),
        with_header(404, PAGE_UPSTREAM, Auth::None, "cookie", cookie(SCOPED_TOKEN)),
        case(400, format!("{PAGE_UPSTREAM}?q=x")),
        method(405, "POST", PAGE_UPSTREAM),
        auth(400, "/ui/upstream/localhost/a/b/c", Auth::Dev),
        auth(404, "/ui/upstream/169.254.169.254/latest/meta/data", Auth::Dev),
        auth(404, "/ui/upstream/registry.terraform.io/terraform-aws-modules/vpc/aws/5.1.0", Auth::Dev),
        with_header(401, PAGE_MODULE, Auth::None, "cookie", cookie(EXPIRED_TOKEN)),
        with_header(401, PAGE_MODULE, Auth::None, "cookie", cookie("trg_0000000000000000000000000000000000000000000")),
        with_header(401, PAGE_MODULE, Auth::None, "cookie", cookie(&long(4096))),
        with_header(404, "/ui/modules/other/vpc/aws", Auth::None, "cookie", cookie(SCOPED_TOKEN)),
        with_header(404, PAGE_PROVIDER, Auth::None, "cookie", cookie(SCOPED_TOKEN)),
        // OCI Distribution (/v2/): read-only, OCI's error bodies, a Bearer challenge.
        auth(401, "/v2/", Auth::None),
        auth(401, &format!("{OCI_REPO}/tags/list"), Auth::None),
        auth(401, &format!("{OCI_REPO}/manifests/3.2.1"), Auth::Header("Basic !!!not-base64".into())),
        auth(401, &format!("{OCI_REPO}/manifests/3.2.1"), Auth::Header("Basic Og==".into())),
        auth(401, &format!("{OCI_REPO}/manifests/3.2.1"), Auth::Header(format!("Basic {}", basic("x:trg_unknown")))),
        auth(
            401,
            &format!("{OCI_REPO}/tags/list"),
            Auth::Header(format!("Basic {}", basic(&format!("x:{EXPIRED_TOKEN}")))),
        ),
        auth(
            404,
            &format!("{OCI_REPO}/tags/list"),
            Auth::Header(format!("Basic {}", basic(&format!("x:{SCOPED_TOKEN}")))),
        ),
        case(404, "/v2/providers/registry.terraform.io/hashicorp/gone/tags/list"),
        case(404, format!("{OCI_REPO}/manifests/9.9.9")),
        case(404, format!("{OCI_REPO}/manifests/sha256:{}", "0".repeat(64))),
        case(404, format!("{OCI_REPO}/blobs/sha256:{}", "0".repeat(64))),
        case(404, format!("{OCI_REPO}/referrers/sha256:{}", "0".repeat(64))),
        case(404, "/v2/_catalog"),
        case(400, "/v2/providers/Registry.Terraform.io/hashicorp/null/tags/list"),
        case(400, "/v2/providers/127.0.0.1:8443/acme/widget/tags/list"),
        case(400, "/v2/providers/registry.terraform.io/hashicorp/null/extra/tags/list"),
        case(400, "/v2/providers/registry.terraform.io/hashicorp/../null/tags/list"),
        case(400, "/v2/providers/registry.terraform.io/hashicorp/%2e%2e/tags/list"),
        case(400, "/v2//tags/list"),
        case(404, format!("{OCI_REPO}/manifests/latest")),
        case(400, format!("{OCI_REPO}/manifests/LATEST")),
        case(400, format!("{OCI_REPO}/manifests/3.2.1+x")),
        case(400, format!("{OCI_REPO}/manifests/../../../../access/tokens.json")),
        case(400, format!("{OCI_REPO}/manifests/sha256:{}", "A".repeat(64))),
        case(400, format!("{OCI_REPO}/blobs/sha256:{}", "0".repeat(63))),
        case(400, format!("{OCI_REPO}/blobs/sha256:{}/../x", "0".repeat(64))),
        case(400, format!("{OCI_REPO}/blobs/uploads/")),
        case(400, format!("{OCI_REPO}/tags/list?n=0")),
        case(400, format!("{OCI_REPO}/tags/list?n=99999999999999999999999")),
        case(400, format!("{OCI_REPO}/tags/list?last=../x")),
        case(400, format!("{OCI_REPO}/tags/list?n=1&n=2")),
        case(400, format!("{OCI_REPO}/manifests/3.2.1?x=1")),
        method(405, "POST", &format!("{OCI_REPO}/blobs/uploads/")),
        method(405, "PUT", &format!("{OCI_REPO}/manifests/3.2.1")),
        method(405, "DELETE", &format!("{OCI_REPO}/manifests/3.2.1")),
        method(405, "PATCH", &format!("{OCI_REPO}/blobs/uploads/x")),
        method(405, "POST", "/v2/"),
        case(404, "/v2/modules/acme/vpc/aws/manifests/9.9.9"),
        with_header(404, &format!("{OCI_REPO}/manifests/3.2.1"), Auth::Dev, "accept", "text/html".into()),
        case(404, "/v2/modules/acme/nope/aws/tags/list"),
        case(400, "/v2/modules/Acme/vpc/aws/tags/list"),
        case(400, "/v2/modules/acme/vpc/tags/list"),
        case(400, "/v2/modules/acme/vpc/aws/manifests/1.0"),
        auth(404, "/v2/modules/other/vpc/aws/tags/list", Auth::Header(format!("Bearer {SCOPED_TOKEN}"))),
        auth(401, "/v2/modules/acme/vpc/aws/tags/list", Auth::None),
        // The token endpoint a Bearer challenge names: only credentials it knows are traded.
        auth(401, "/v2/token", Auth::Header(format!("Basic {}", basic("x:trg_unknown")))),
        auth(401, "/v2/token", Auth::Header(format!("Basic {}", basic(&format!("x:{EXPIRED_TOKEN}"))))),
        auth(401, "/v2/token", Auth::Header("Basic !!!not-base64".into())),
        auth(401, &format!("{OCI_REPO}/tags/list"), Auth::Header("Bearer anonymous".into())),
        case(400, "/v2/token?grant_type=password"),
        case(400, "/v2/token?scope=%zz"),
        case(400, format!("/v2/token?scope={}", "%".repeat(3))),
        case(404, "/v2/token/x"),
        method(405, "POST", "/v2/token"),
        // A route's keyword as a component of a repository's name: the route is read from the end.
        case(404, format!("/v2/modules/acme/manifests/aws/blobs/sha256:{}", "0".repeat(64))),
        case(404, format!("/v2/providers/registry.terraform.io/manifests/blobs/blobs/sha256:{}", "0".repeat(64))),
        // The modules pull-through (off in the fixture, nothing copied): absent, whoever asks;
        // a host that is not a host name, a version not canonical, a query, a write: refused.
        case(404, UPSTREAM_VERSIONS),
        case(404, UPSTREAM_DOWNLOAD),
        auth(401, UPSTREAM_VERSIONS, Auth::None),
        auth(401, UPSTREAM_DOWNLOAD, Auth::Header(format!("Bearer {EXPIRED_TOKEN}"))),
        auth(404, UPSTREAM_VERSIONS, Auth::Header(format!("Bearer {SCOPED_TOKEN}"))),
        auth(404, UPSTREAM_DOWNLOAD, Auth::Header(format!("Bearer {SCOPED_TOKEN}"))),
        case(404, "/v1/modules/upstream/169.254.169.254/latest/meta/data/versions"),
        case(404, "/v1/modules/upstream/127.0.0.1:9000/a/b/c/1.0.0/download"),
        case(400, "/v1/modules/upstream/localhost/a/b/c/versions"),
        case(400, "/v1/modules/upstream/Registry.Terraform.io/a/b/c/versions"),
        case(400, "/v1/modules/upstream/registry.terraform.io:99999/a/b/c/versions"),
        case(400, "/v1/modules/upstream/user@registry.terraform.io/a/b/c/versions"),
        case(400, "/v1/modules/upstream/registry.terraform.io/a/b/c/v1.0.0/download"),
        case(400, "/v1/modules/upstream/registry.terraform.io/a/b/c/1.0/download"),
        case(404, "/v1/modules/upstream/registry.terraform.io/a/b/c/1.0.0+git.sha/download"),
        case(400, format!("{UPSTREAM_VERSIONS}?ref=main")),
        method(405, "POST", UPSTREAM_VERSIONS),
        method(405, "PUT", UPSTREAM_DOWNLOAD),
        case(400, "/v1/modules/upstream/registry.terraform.io/a/b/c/1.0.0/download/extra"),
    ];
    // The same traversal attempts against every route's variable segments.
    for template in [
        "/v1/modules/{}/vpc/aws/versions",
        "/v1/modules/acme/{}/aws/versions",
        "/v1/modules/acme/vpc/{}/versions",
        "/v1/modules/acme/vpc/aws/{}/download",
        "/v1/modules/upstream/{}/terraform-aws-modules/vpc/aws/versions",
        "/v1/modules/upstream/registry.terraform.io/{}/vpc/aws/versions",
        "/v1/modules/upstream/registry.terraform.io/terraform-aws-modules/{}/aws/versions",
        "/v1/modules/upstream/registry.terraform.io/terraform-aws-modules/vpc/{}/versions",
        "/v1/modules/upstream/registry.terraform.io/terraform-aws-modules/vpc/aws/{}/download",
        "/v1/mirror/{}/hashicorp/null/index.json",
        "/v1/mirror/registry.terraform.io/{}/null/index.json",
        "/v1/mirror/registry.terraform.io/hashicorp/{}/index.json",
        "/v1/mirror/registry.terraform.io/hashicorp/null/{}.json",
        "/v1/providers/{}/widget/versions",
        "/v1/providers/acme/{}/versions",
        "/v1/providers/acme/widget/{}/download/linux/amd64",
        "/v1/providers/acme/widget/1.0.0/download/{}/amd64",
        "/v1/providers/acme/widget/1.0.0/download/linux/{}",
        "/v1/modules/{}/vpc/aws",
        "/v1/modules/acme/{}/aws",
        "/v1/modules/acme/vpc/{}",
        "/v1/modules/acme/vpc/aws/{}",
        "/ui/modules/{}/vpc/aws",
        "/ui/modules/acme/{}/aws",
        "/ui/modules/acme/vpc/{}",
        "/ui/modules/acme/vpc/aws/{}",
        "/ui/modules/acme/vpc/aws/{}/from/1.0.0",
        "/ui/modules/acme/vpc/aws/1.0.0/from/{}",
        "/ui/providers/{}/hashicorp/null",
        "/ui/providers/registry.terraform.io/{}/null",
        "/ui/providers/registry.terraform.io/hashicorp/{}",
        "/ui/providers/registry.terraform.io/hashicorp/null/{}",
        "/ui/upstream/{}/terraform-aws-modules/vpc/aws",
        "/ui/upstream/registry.terraform.io/{}/vpc/aws",
        "/ui/upstream/registry.terraform.io/terraform-aws-modules/{}/aws",
        "/ui/upstream/registry.terraform.io/terraform-aws-modules/vpc/{}",
    ] {
        for segment in ["..", "%2e%2e", "%00", "%2f"] {
            cases.push(case(400, template.replace("{}", segment)));
        }
    }
    cases.extend(mcp_cases());
    cases
}

/// The MCP endpoint (`POST /mcp`): bodies that are no JSON-RPC message this server reads,
/// refused before anything is read from storage; callers without a usable token; the
/// transport's header rules; methods and paths it does not take. Each answered with a
/// JSON-RPC error body.
fn mcp_cases() -> Vec<Case> {
    let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let deep =
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"a":{}1{}}}}}"#, "[".repeat(64), "]".repeat(64));
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"search_modules","arguments":{{"query":"{}"}}}}}}"#,
        "a".repeat(20_000)
    );
    let with = |case: Case, name: &str, value: &str| Case { headers: vec![(name.into(), value.into())], ..case };
    vec![
        mcp(400, Auth::Dev, "not json", "not JSON"),
        mcp(400, Auth::Dev, "", "not JSON"),
        mcp(400, Auth::Dev, format!("[{ping},{ping}]"), "a batch"),
        mcp(400, Auth::Dev, "\"ping\"", "not an object"),
        mcp(400, Auth::Dev, r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#, "jsonrpc must be"),
        mcp(400, Auth::Dev, r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#, "id must be"),
        mcp(400, Auth::Dev, r#"{"jsonrpc":"2.0","id":{"$ne":1},"method":"ping"}"#, "id must be"),
        mcp(400, Auth::Dev, format!(r#"{{"jsonrpc":"2.0","id":"{}","method":"ping"}}"#, "i".repeat(300)), "id must be"),
        mcp(400, Auth::Dev, r#"{"jsonrpc":"2.0","id":1,"method":["tools/list"]}"#, "string method"),
        mcp(400, Auth::Dev, r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":"x"}"#, "params must be"),
        mcp(400, Auth::Dev, deep, "nested deeper"),
        mcp(400, Auth::Dev, huge, "too large"),
        mcp(401, Auth::None, ping, "bearer token"),
        mcp(401, Auth::Header("Bearer trg_0000000000000000000000000000000000000000000".into()), ping, ""),
        mcp(401, Auth::Header(format!("Bearer {EXPIRED_TOKEN}")), ping, ""),
        mcp(401, Auth::Header("Bearer {jwt:expired}".into()), ping, ""),
        with(mcp(403, Auth::Dev, ping, "origin"), "Origin", "https://evil.example"),
        with(mcp(403, Auth::Dev, ping, "origin"), "Origin", "null"),
        with(mcp(400, Auth::Dev, ping, "MCP-Protocol-Version"), "MCP-Protocol-Version", "1999-01-01"),
        with(mcp(400, Auth::Dev, ping, "MCP-Protocol-Version"), "MCP-Protocol-Version", "2025-11-25, 2025-06-18"),
        method(405, "GET", "/mcp"),
        method(405, "DELETE", "/mcp"),
        method(405, "PUT", "/mcp"),
        Case { target: "/mcp?session=1".into(), ..mcp(400, Auth::Dev, ping, "query strings") },
        Case { target: "/mcp/".into(), ..mcp(404, Auth::Dev, ping, "") },
        Case { target: "/mcp/tools".into(), ..mcp(404, Auth::Dev, ping, "") },
        Case { target: "/MCP".into(), ..mcp(404, Auth::Dev, ping, "") },
        method(405, "POST", "/.well-known/oauth-protected-resource/mcp"),
        case(400, "/.well-known/oauth-protected-resource/mcp?resource=x"),
    ]
}

/// Requests that are not valid HTTP: the HTTP server refuses them before the handler runs
/// (hyper locally, API Gateway in AWS), so their answer has no JSON body. What matters is the
/// 4xx and that nothing is read. Raw bytes, sent as they are.
pub fn transport_cases() -> Vec<(&'static str, Vec<u8>)> {
    let request = |line: &[u8]| {
        let mut r = line.to_vec();
        r.extend_from_slice(b"\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
        r
    };
    vec![
        ("raw space in the path", request(b"GET /v1/modules/a b/vpc/aws/versions HTTP/1.1")),
        ("raw NUL in the path", request(b"GET /v1/modules/acme\0/vpc/aws/versions HTTP/1.1")),
        ("raw DEL in the path", request(b"GET /v1/modules/acme\x7f/vpc/aws/versions HTTP/1.1")),
        ("raw UTF-8 look-alike", request("GET /v1/modules/\u{430}cme/vpc/aws/versions HTTP/1.1".as_bytes())),
        ("raw backslash", request(b"GET /v1/modules/..\\..\\access/vpc/aws/versions HTTP/1.1")),
        ("no leading slash", request(b"GET v1/modules/acme/vpc/aws/versions HTTP/1.1")),
        ("garbage request line", request(b"\x16\x03\x01\x02\x00")),
        ("HTTP/0.9 style", request(b"GET /")),
        ("unknown HTTP version", request(b"GET / HTTP/9.9")),
        ("NUL in a header value", {
            b"GET /v1/modules/acme/vpc/aws/versions HTTP/1.1\r\nHost: x\r\nX-A: a\0b\r\nConnection: close\r\n\r\n"
                .to_vec()
        }),
        ("a header too large for the server", {
            let mut r = b"GET /v1/modules/acme/vpc/aws/versions HTTP/1.1\r\nHost: x\r\nX-A: ".to_vec();
            r.extend(std::iter::repeat_n(b'a', 1 << 20));
            r.extend_from_slice(b"\r\nConnection: close\r\n\r\n");
            r
        }),
        ("too many headers", {
            let mut r = b"GET /v1/modules/acme/vpc/aws/versions HTTP/1.1\r\nHost: x\r\n".to_vec();
            for i in 0..200 {
                r.extend_from_slice(format!("X-H{i}: {i}\r\n").as_bytes());
            }
            r.extend_from_slice(b"Connection: close\r\n\r\n");
            r
        }),
    ]
}

/// The bucket side: objects a publisher can write (a publisher key, a CI job, a compromised
/// pipeline), each with what the registry must do about it. Fixture state as above; every
/// case leaves what was published exactly as it was.
pub struct ObjectCase {
    pub what: &'static str,
    pub key: String,
    pub bytes: Vec<u8>,
    pub reaction: Reaction,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reaction {
    /// The write is refused with S3's `AccessDenied`: the publisher's rights (the publisher
    /// policy in AWS, the publisher key locally) do not reach this key.
    Denied,
    /// Indexed and refused: a rejection record whose reason holds this text.
    Rejected(&'static str),
    /// Stored, and no notification covers it: no indexing runs, nothing served changes, and no
    /// later pass ever reads it.
    Inert,
}

/// Entry limit the object corpus runs with (`REGISTRY_MAX_ARCHIVE_ENTRIES`).
pub const OBJECT_CORPUS_MAX_ENTRIES: usize = 100;

/// The hostile-object corpus: one table, long on purpose (a case per entry), so a reader sees
/// every object and its expected reaction in one place.
pub fn objects() -> Vec<ObjectCase> {
    use registry::testing::{Item, gzip, provider_zip, tar, tar_gz_items, tar_without_end_marker, zip, zip_items};
    let main = Item::File("main.tf", b"# fine\n");
    let planted_manifest = serde_json::to_vec(&serde_json::json!({"format": 1, "versions": [
        {"version": "6.6.6", "archive": "access/tokens.json", "size": 1, "sha256": "00", "etag": "\"x\""}
    ]}))
    .unwrap_or_default();
    let forged_version = serde_json::to_vec(&serde_json::json!({"archives": {"linux_amd64": {
        "url": "../../../../access/tokens.json", "hashes": ["h1:forged="], "indexed": {"size": 1, "etag": "\"x\""}
    }}}))
    .unwrap_or_default();
    let duplicate_names = {
        let mut bytes = zip(&[("main.tf", b"# one"), ("mainXtf", b"# two")]);
        for i in 0..bytes.len().saturating_sub(7) {
            if &bytes[i..i + 7] == b"mainXtf" {
                bytes[i + 4] = b'.';
            }
        }
        bytes
    };
    let many: Vec<String> = (0..=OBJECT_CORPUS_MAX_ENTRIES).map(|i| format!("f{i}.tf")).collect();
    let many: Vec<(&str, &[u8])> = many.iter().map(|n| (n.as_str(), &b""[..])).collect();
    let ten_thousand_variables: String = (0..10_000).map(|i| format!("variable \"v{i}\" {{}}\n")).collect();
    let m = |file: &str| format!("modules/acme/vpc/aws/{file}");
    let p = |file: &str| format!("providers/registry.terraform.io/hashicorp/null/{file}");
    let case = |what, key, bytes, reaction| ObjectCase { what, key, bytes, reaction };
    vec![
        // Derived state and secrets: out of the publisher's reach.
        case(
            "a manifest where the indexer writes",
            format!("indexed/{}", m("manifest.json")),
            planted_manifest.clone(),
            Reaction::Denied,
        ),
        case(
            "a mirror document where the indexer writes",
            format!("indexed/{}", p("3.2.1.json")),
            forged_version.clone(),
            Reaction::Denied,
        ),
        case(
            "a forged rejection record",
            format!("rejections/{}", m("9.0.0.tar.gz.json")),
            b"{}".to_vec(),
            Reaction::Denied,
        ),
        case("the token store", "access/tokens.json".into(), br#"{"format":1,"tokens":[]}"#.to_vec(), Reaction::Denied),
        // A pin of the modules pull-through naming other bytes: only the modules function (and
        // an operator syncing a bundle) writes there.
        case(
            "a pin of an upstream module",
            "upstream-modules/registry.terraform.io/terraform-aws-modules/vpc/aws/5.1.0.pin.json".into(),
            format!(r#"{{"module":"registry.terraform.io/terraform-aws-modules/vpc/aws","version":"5.1.0","sha256":"{}","size":1,"archive":"tar.gz","source":"x","copied_at":"x"}}"#, "0".repeat(64)).into_bytes(),
            Reaction::Denied,
        ),
        // A CI credential must not install a key of its own, then sign anything: key admins only.
        case(
            "a signing key of the publisher's own namespace",
            "signing-keys/registry.terraform.io/hashicorp/mine.asc".into(),
            b"-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n-----END PGP PUBLIC KEY BLOCK-----\n".to_vec(),
            Reaction::Denied,
        ),
        // Planted where publishers may write: stored, never read.
        case(
            "a manifest beside the archives, naming the token store",
            m("manifest.json"),
            planted_manifest,
            Reaction::Inert,
        ),
        case(
            "a VERSION.json with forged hashes and a URL out of the prefix",
            p("3.2.1.json"),
            forged_version,
            Reaction::Inert,
        ),
        case(
            "an index.json listing a version that has no zips",
            p("index.json"),
            br#"{"versions":{"9.9.9":{}}}"#.to_vec(),
            Reaction::Inert,
        ),
        case("a key outside the publisher prefixes", "other/thing.zip".into(), b"x".to_vec(), Reaction::Denied),
        case("a name the layout has no place for, unnotified", m("notes.txt"), b"x".to_vec(), Reaction::Inert),
        // Archives that hide or escape: rejected, with the reason.
        case(
            "a second gzip member after a tar without end marker, holding ../../x.tf",
            m("1.1.0.tar.gz"),
            [gzip(&tar_without_end_marker(&[main])), gzip(&tar(&[Item::File("../../x.tf", b"evil")]))].concat(),
            Reaction::Rejected("outside the module directory"),
        ),
        case(
            "a tar cut before its end marker",
            m("1.2.0.tar.gz"),
            gzip(&tar_without_end_marker(&[main])),
            Reaction::Rejected("no tar end-of-archive marker"),
        ),
        case(
            "a whole archive with another appended",
            m("1.2.1.tar.gz"),
            [gzip(&tar(&[main])), gzip(&tar(&[Item::File("other.tf", b"")]))].concat(),
            Reaction::Rejected("data after the tar end-of-archive marker"),
        ),
        case(
            "a symbolic link climbing out",
            m("1.3.0.tar.gz"),
            tar_gz_items(&[main, Item::Symlink("m", "../../../../home")]),
            Reaction::Rejected("climbs out of the module"),
        ),
        case(
            "an absolute symbolic link",
            m("1.3.1.tar.gz"),
            tar_gz_items(&[main, Item::Symlink("m", "/etc")]),
            Reaction::Rejected("is absolute"),
        ),
        case(
            "a hard link to /etc/shadow",
            m("1.4.0.tgz"),
            tar_gz_items(&[main, Item::Hardlink("h", "/etc/shadow")]),
            Reaction::Rejected("names something outside the module"),
        ),
        case(
            "a file written through a link",
            m("1.4.1.tgz"),
            tar_gz_items(&[main, Item::Symlink("d", "."), Item::File("d/x.tf", b"")]),
            Reaction::Rejected("lies below the symbolic link"),
        ),
        case(
            "a zip symbolic link climbing out",
            m("1.5.0.zip"),
            zip_items(&[main, Item::Symlink("m", "../../../../home")]),
            Reaction::Rejected("climbs out of the module"),
        ),
        case(
            "a named pipe",
            m("1.6.0.tar.gz"),
            tar_gz_items(&[main, Item::Fifo("pipe")]),
            Reaction::Rejected("is a Fifo"),
        ),
        case(
            "a zip naming two entries alike",
            m("1.7.0.zip"),
            duplicate_names,
            Reaction::Rejected("two entries have the same name"),
        ),
        case(
            "more entries than the limit",
            m("1.8.0.zip"),
            zip(&many),
            Reaction::Rejected("more than the limit of 100"),
        ),
        case(
            "garbage over the published 1.0.0",
            m("1.0.0.tar.gz"),
            b"garbage".to_vec(),
            Reaction::Rejected("not a readable tar.gz"),
        ),
        case(
            "a name outside the layout",
            m("v3.0.0.tar.gz"),
            gzip(&tar(&[main])),
            Reaction::Rejected("is not a module archive name"),
        ),
        case(
            "a provider zip with a link out",
            p("terraform-provider-null_3.3.0_linux_amd64.zip"),
            zip_items(&[
                Item::File("terraform-provider-null_v3.3.0", b"bin"),
                Item::Symlink("lib", "../../../../usr/lib"),
            ]),
            Reaction::Rejected("climbs out of the module"),
        ),
        case(
            "a provider zip over the published 3.2.1",
            p("terraform-provider-null_3.2.1_linux_amd64.zip"),
            provider_zip("other", "3.2.1", "hostile"),
            Reaction::Rejected("no provider executable"),
        ),
        // Interfaces judged against the published 1.0.0 (the harness enforces SemVer for acme).
        case(
            "a minor release adding 10,000 required inputs",
            m("1.1.0.tar.gz"),
            tar_gz_items(&[Item::File("main.tf", ten_thousand_variables.as_bytes())]),
            Reaction::Rejected("- and 9950 more"),
        ),
        case(
            "a minor release whose only file does not parse",
            m("1.2.0.tar.gz"),
            tar_gz_items(&[Item::File("main.tf", b"variable \"x\" {")]),
            Reaction::Rejected("does not parse as HCL"),
        ),
        case(
            "a patch release declaring one required input twice",
            m("1.0.1.tar.gz"),
            tar_gz_items(&[Item::File("main.tf", b"variable \"x\" {}\nvariable \"x\" {}\n")]),
            Reaction::Rejected("input \"x\" added, required"),
        ),
        // Deprecation files.
        case(
            "a deprecation file that is not JSON",
            m("1.0.0.deprecation.json"),
            b"{".to_vec(),
            Reaction::Rejected("not a deprecation file"),
        ),
        case(
            "a deprecation file of 1 MiB",
            m("1.0.0.deprecation.json"),
            format!("{{\"reason\": \"{}\"}}", "x".repeat(1 << 20)).into_bytes(),
            Reaction::Rejected("over the 4096"),
        ),
        case(
            "a deprecation of a version never published",
            m("5.0.0.deprecation.json"),
            br#"{"reason": "r"}"#.to_vec(),
            Reaction::Rejected("is not published"),
        ),
        case(
            "a provider deprecation with an unknown field",
            p("terraform-provider-null_3.2.1_deprecation.json"),
            br#"{"reason": "r", "sunset": "2027-01-01"}"#.to_vec(),
            Reaction::Rejected("unknown field"),
        ),
        // Text the CLI prints in its warnings: nothing that reads other than it is written.
        case(
            "a deprecation whose reason holds a right-to-left override",
            m("1.0.0.deprecation.json"),
            "{\"reason\": \"use 2.0.0, not \u{202e}0.1.1\"}".as_bytes().to_vec(),
            Reaction::Rejected("reason holds U+202E"),
        ),
        case(
            "a provider deprecation whose replacement holds a zero-width space",
            p("terraform-provider-null_3.2.1_deprecation.json"),
            "{\"reason\": \"r\", \"replacement\": \"hashicorp/null\u{200b}2\"}".as_bytes().to_vec(),
            Reaction::Rejected("replacement holds U+200B"),
        ),
    ]
}
