//! The hostile-request corpus (`support/hostile.rs`) against the real transports: raw bytes
//! over TLS to the local registry, and API Gateway v2 events through the Lambda adapter. Both
//! read the embedded S3, whose request log shows exactly which keys each request read.

// Test helpers: a failed step is a failed test, with the panic message saying which.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use registry::layout::{self, ObjectKind};
use registry::{App, storage::S3Storage};
use registry_local::embedded_s3::S3Request;
use rustls::pki_types::ServerName;
use support::Harness;
use support::hostile::{self, Auth, Case};
use support::oidc::OidcIssuer;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Everything every test in this binary logs, at DEBUG for all crates (more than the Lambdas'
/// default INFO), so the check that no secret is logged covers the most verbose setting.
fn captured_logs() -> Arc<std::sync::Mutex<Vec<u8>>> {
    static LOGS: std::sync::OnceLock<Arc<std::sync::Mutex<Vec<u8>>>> = std::sync::OnceLock::new();
    LOGS.get_or_init(|| {
        let logs = Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = logs.clone();
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new("debug"))
            .with_ansi(false)
            .with_writer(move || LogWriter(sink.clone()))
            .init();
        logs
    })
    .clone()
}

struct LogWriter(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The logs hold the requests (so they were captured) and none of the secrets: no bearer
/// token, good or bad, and no presigned URL signature.
fn check_logs_hold_no_secrets(secrets: &Secrets) {
    let logs = String::from_utf8_lossy(&captured_logs().lock().unwrap()).to_string();
    assert!(logs.contains("/v1/modules/acme/vpc/aws/1.0.0/download"), "requests are logged");
    let tokens = [secrets.dev.as_str(), hostile::SCOPED_TOKEN, hostile::EXPIRED_TOKEN];
    let jwts = secrets.jwts.values().map(|jwt| {
        // A JWT's signature part: the payload alone is not secret, but the whole token is.
        jwt.rsplit('.').next().filter(|s| s.len() > 20).unwrap_or(jwt.as_str())
    });
    for secret in tokens.into_iter().chain(jwts).chain(["Bearer ", "X-Amz-Signature", "x-amz-signature"]) {
        if let Some(at) = logs.find(secret) {
            let line = logs[..at].rfind('\n').map_or(0, |i| i + 1);
            let end = logs[at..].find('\n').map_or(logs.len(), |i| at + i);
            panic!("the logs hold {secret:?}: {}", &logs[line..end.min(line + 600)]);
        }
    }
}

/// Legitimate traffic that handles every secret: downloads (presigned URLs in the answer) and
/// reads with each token.
async fn normal_traffic<S: registry::storage::Storage>(app: &App<S>, secrets: &Secrets) {
    let (dev, jwt) = (secrets.dev.as_str(), secrets.jwts["valid"].as_str());
    for (path, token) in [
        ("/v1/modules/acme/vpc/aws/1.0.0/download", dev),
        ("/v1/mirror/registry.terraform.io/hashicorp/null/3.2.1.json", dev),
        ("/v1/modules/acme/vpc/aws/1.0.0/download", hostile::SCOPED_TOKEN),
        ("/v1/modules/acme/vpc/aws/1.0.0/download", jwt),
        ("/v1/mirror/registry.terraform.io/hashicorp/null/3.2.1.json", jwt),
    ] {
        let header = format!("Bearer {token}");
        let reply = app.handle(&registry::app::Request::get(path).authorization(Some(&header))).await;
        assert_eq!(reply.status, 200, "{path}");
        assert!(String::from_utf8_lossy(&reply.body).contains("X-Amz-Signature"), "{path}: a presigned URL");
    }
}

const EVENT: &str = include_str!("../../functions/registry/tests/events/apigw_v2_module_versions.json");

/// The tokens the corpus sends: the dev token, and the JWTs by name (`hostile::JWTS`).
struct Secrets {
    dev: String,
    jwts: std::collections::BTreeMap<String, String>,
}

/// Every JWT `hostile::JWTS` names, from `issuer` (and, for `issuer_unreachable`, the issuer
/// configured at `dead`, where nothing answers).
fn mint(issuer: &OidcIssuer, dead: &str) -> std::collections::BTreeMap<String, String> {
    use registry::testing::oidc::TestIssuer;
    let now = registry::clock::now_unix();
    let good = || issuer.claims(600);
    let with = |name: &str, value: serde_json::Value| {
        let mut c = good();
        c.insert(name.into(), value);
        issuer.sign(&c)
    };
    let valid = issuer.sign(&good());
    let tampered = {
        let forged = with("groups", serde_json::json!(["team-x", "everyone", "team-storage"]));
        let parts: Vec<&str> = valid.split('.').collect();
        format!("{}.{}.{}", parts[0], forged.split('.').nth(1).unwrap(), parts[2])
    };
    let unreachable = {
        let elsewhere = TestIssuer::rsa(dead);
        let mut c = registry::testing::oidc::claims(dead, support::oidc::AUDIENCE, 600);
        c.insert("groups".into(), serde_json::json!(["everyone"]));
        elsewhere.sign(&c)
    };
    let kid = issuer.with_key(|k| k.kid.clone());
    let jwts = [
        ("valid", valid.clone()),
        ("expired", with("exp", (now - 3600).into())),
        ("not_yet_valid", with("nbf", (now + 3600).into())),
        ("wrong_audience", with("aud", "https://other.test".into())),
        // Not exactly the configured URL: no configured issuer's, so an unknown token.
        ("wrong_issuer", with("iss", format!("{}/", issuer.url).into())),
        ("alg_none", TestIssuer::unsigned(&good(), &kid)),
        ("hs256_with_public_key", issuer.with_key(|k| k.hs256_with_public_key(&good()))),
        ("unknown_kid", TestIssuer::rsa(&issuer.url).sign(&good())),
        ("tampered", tampered),
        ("issuer_unreachable", unreachable),
        ("grants_nothing", with("groups", serde_json::json!(["nobody"]))),
        ("oversized", with("padding", "x".repeat(registry::auth::BEARER_BYTES_MAX).into())),
    ];
    assert_eq!(jwts.each_ref().map(|(name, _)| *name), hostile::JWTS, "every JWT the corpus names is minted");
    jwts.into_iter().map(|(name, jwt)| (name.to_string(), jwt)).collect()
}

/// A registry with the fixture state the corpus assumes.
async fn fixture() -> (Harness, OidcIssuer, Secrets) {
    let _ = captured_logs();
    let issuer = OidcIssuer::start().await;
    // An issuer configured at a loopback port nobody listens on.
    let dead = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("https://{}", listener.local_addr().unwrap())
    };
    let dead_issuer = serde_json::json!({"issuer": dead, "audience": support::oidc::AUDIENCE,
        "rules": [{"claim": "groups", "equals": "everyone", "modules": ["*"]}]});
    let h = Harness::start_with(&[
        ("REGISTRY_OIDC_ISSUERS", &issuer.issuers_json(false, &[dead_issuer.to_string()])),
        ("REGISTRY_OIDC_CA_FILE", issuer.ca_file.to_str().unwrap()),
    ])
    .await;
    h.upload("modules/acme/vpc/aws/1.0.0.tar.gz", support::module_tar_gz(&[("main.tf", "# vpc\n")])).await;
    h.upload(
        "providers/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.1_linux_amd64.zip",
        support::provider_zip("null", "3.2.1", "hostile"),
    )
    .await;
    let scoped = registry::auth::manage::record("scoped", hostile::SCOPED_TOKEN, vec!["acme".into()], vec![], None);
    let expired = registry::auth::manage::record(
        "expired",
        hostile::EXPIRED_TOKEN,
        vec!["*".into()],
        vec!["*".into()],
        Some("2020-01-01T00:00:00Z".into()),
    );
    for record in [scoped, expired] {
        registry::auth::manage::upsert(&h.running.storage, record).await.unwrap();
    }
    // The fixture is in place: from here on the log holds only what requests cause.
    let _ = h.running.take_s3_requests();
    let secrets = Secrets { dev: h.running.dev_token.clone(), jwts: mint(&issuer, &dead) };
    (h, issuer, secrets)
}

fn authorization(case: &Case, secrets: &Secrets) -> Option<String> {
    match &case.auth {
        Auth::Dev => Some(format!("Bearer {}", secrets.dev)),
        Auth::None => None,
        Auth::Header(value) => {
            let mut value = value.replace("{dev}", &secrets.dev);
            for (name, jwt) in &secrets.jwts {
                value = value.replace(&format!("{{jwt:{name}}}"), jwt);
            }
            assert!(!value.contains("{jwt:"), "a case names a JWT the fixture did not mint: {value}");
            Some(value)
        }
    }
}

/// What a registry request may read: the token store and manifests, with GET or HEAD, signed
/// by the registry. Never a listing, an archive, a rejection record, or a write.
fn check_reads(what: &str, status: u16, requests: &[S3Request]) -> Result<(), String> {
    for r in requests {
        let allowed_key = match r.key.as_deref() {
            Some(layout::TOKENS) => true,
            // The catalog's parts (list, search, the catalog page); which namespaces' shards a
            // token may have read is `browse::tests`' (an unreadable hidden shard is never read).
            Some(layout::CATALOG_INDEX | layout::CATALOG_PROVIDERS | layout::CATALOG_UPSTREAM_MODULES) => true,
            Some(key) if layout::catalog_shard_namespace(key).is_some() => true,
            // OCI manifests and blob pointers, by digest.
            Some(key) if key.starts_with(layout::OCI_PREFIX) => true,
            // A module version's docs (the details routes).
            Some(key) if key.starts_with("indexed/modules/") && key.contains("/docs/") => true,
            // A namespace's modules' download totals (the list's), before the
            // documents' arm below, which would refuse it: usage/modules/NS.json.
            Some(key)
                if key.strip_prefix("usage/modules/").and_then(|k| k.strip_suffix(".json")).is_some_and(
                    |namespace| {
                        !namespace.is_empty()
                            && namespace.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
                    },
                ) =>
            {
                true
            }
            // A module's or provider's download counts (details and pages): NS/NAME/SYSTEM.json,
            // HOST/NS/TYPE.json.
            Some(key) if key.starts_with("usage/modules/") || key.starts_with("usage/providers/") => {
                let rest = key.trim_start_matches("usage/modules/").trim_start_matches("usage/providers/");
                let parts: Vec<&str> = rest.split('/').collect();
                parts.len() == 3 && !parts.iter().any(|p| p.is_empty() || *p == "..") && parts[2].ends_with(".json")
            }
            // An upstream module's pins (its page): HOST/NS/NAME/SYSTEM/pins.json, no more.
            Some(key) if key.starts_with("indexed/upstream-modules/") => {
                let parts: Vec<&str> = key["indexed/upstream-modules/".len()..].split('/').collect();
                parts.len() == 5 && !parts.iter().any(|p| p.is_empty() || *p == "..") && parts[4] == "pins.json"
            }
            // The modules pull-through's index and pins: HOST/NS/NAME/SYSTEM/FILE, no more.
            Some(key) if key.starts_with(layout::UPSTREAM_MODULES_PREFIX) => {
                let rest = &key[layout::UPSTREAM_MODULES_PREFIX.len()..];
                let parts: Vec<&str> = rest.split('/').collect();
                parts.len() == 5
                    && !parts.iter().any(|p| p.is_empty() || *p == "..")
                    && (parts[4] == "index.json"
                        || parts[4].ends_with(layout::UPSTREAM_MODULE_PIN_SUFFIX)
                        || parts[4].ends_with(layout::UPSTREAM_MODULE_PULL_SUFFIX)
                        || parts[4].ends_with(layout::UPSTREAM_MODULE_PULL_FAILURE_SUFFIX))
            }
            Some(key) => matches!(
                layout::classify(key),
                Some(ObjectKind::ModuleManifest(_) | ObjectKind::ProviderIndex(_) | ObjectKind::ProviderVersion { .. })
            ),
            None => false,
        };
        let ok = allowed_key
            && (r.method == http::Method::GET || r.method == http::Method::HEAD)
            && r.signer.as_deref() == Some(registry_local::embedded_s3::REGISTRY_ACCESS_KEY);
        if !ok {
            return Err(format!("{what}: read outside the layout: {r:?}"));
        }
    }
    // A request refused for its shape or method reads nothing at all.
    if (status == 400 || status == 405) && !requests.is_empty() {
        return Err(format!("{what}: answered {status} but read {requests:?}"));
    }
    Ok(())
}

/// The answer a case must get: its status, and a JSON `errors` body, or for a web page's path
/// an HTML page that says the status, under the pages' Content-Security-Policy.
fn check_4xx(
    what: &str,
    case: &Case,
    status: u16,
    header: impl Fn(&str) -> Option<String>,
    body: &[u8],
) -> Result<(), String> {
    let expected = case.status;
    let content_type = header("content-type");
    let content_type = content_type.as_deref();
    let shown = String::from_utf8_lossy(&body[..body.len().min(300)]).to_string();
    if status != expected {
        return Err(format!("{what}: expected {expected}, got {status}: {shown}"));
    }
    if hostile::is_page(&case.target) {
        if content_type != Some("text/html; charset=utf-8") {
            return Err(format!("{what}: a page's error with content-type {content_type:?}"));
        }
        if header("content-security-policy").as_deref() != Some(registry::web::CONTENT_SECURITY_POLICY) {
            return Err(format!("{what}: a page without the Content-Security-Policy"));
        }
        let text = String::from_utf8_lossy(body);
        return match text.contains(&format!("<h1>{status}</h1>")) {
            true => Ok(()),
            false => Err(format!("{what}: the page does not say {status}: {shown}")),
        };
    }
    if content_type != Some("application/json") {
        return Err(format!("{what}: content-type {content_type:?}"));
    }
    let json: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| format!("{what}: not JSON ({e}): {shown}"))?;
    if registry::router::is_oci_path(case.target.split('?').next().unwrap_or_default()) {
        return check_oci_errors(what, case, &json, &shown);
    }
    if registry::router::is_mcp_path(case.target.split('?').next().unwrap_or_default()) {
        return check_rpc_error(what, case, &json, &shown);
    }
    match json["errors"].as_array() {
        Some(errors) if !errors.is_empty() && errors.iter().all(|e| e.is_string()) => match case.says {
            Some(says) if !errors.iter().any(|e| e.as_str().is_some_and(|e| e.contains(says))) => {
                Err(format!("{what}: the answer does not say {says:?}: {shown}"))
            }
            _ => Ok(()),
        },
        _ => Err(format!("{what}: no errors array of strings: {shown}")),
    }
}

/// A JSON-RPC error body, as the MCP endpoint answers one it could not serve:
/// `{"jsonrpc": "2.0", "id", "error": {"code", "message"}}` (the id `null` unless the request's
/// could be read), saying why.
fn check_rpc_error(what: &str, case: &Case, json: &serde_json::Value, shown: &str) -> Result<(), String> {
    let (id, error) = (&json["id"], &json["error"]);
    let id_ok = id.is_null() || id.is_i64() || id.is_string();
    if json["jsonrpc"] != "2.0" || !id_ok || !error["code"].is_i64() || !error["message"].is_string() {
        return Err(format!("{what}: no JSON-RPC error: {shown}"));
    }
    match case.says {
        Some(says) if !error["message"].as_str().unwrap_or_default().contains(says) => {
            Err(format!("{what}: the answer does not say {says:?}: {shown}"))
        }
        _ => Ok(()),
    }
}

/// An OCI error body, as the distribution spec has it: `{"errors": [{"code", "message"}]}`
/// with one of the spec's codes.
fn check_oci_errors(what: &str, case: &Case, json: &serde_json::Value, shown: &str) -> Result<(), String> {
    const CODES: [&str; 9] = [
        "UNAUTHORIZED",
        "NAME_UNKNOWN",
        "MANIFEST_UNKNOWN",
        "BLOB_UNKNOWN",
        "NAME_INVALID",
        "MANIFEST_INVALID",
        "DIGEST_INVALID",
        "PAGINATION_NUMBER_INVALID",
        "UNSUPPORTED",
    ];
    let errors = json["errors"].as_array().filter(|e| !e.is_empty());
    let ok = errors.is_some_and(|errors| {
        errors.iter().all(|e| e["code"].as_str().is_some_and(|c| CODES.contains(&c)) && e["message"].is_string())
    });
    if !ok {
        return Err(format!("{what}: no OCI errors array: {shown}"));
    }
    match case.says {
        Some(says) if !shown.contains(says) => Err(format!("{what}: the answer does not say {says:?}: {shown}")),
        _ => Ok(()),
    }
}

/// One request over a fresh TLS connection, bytes exactly as given; the answer's status,
/// headers and body (`None` if the server closed without answering).
async fn send_raw(
    h: &Harness,
    tls: &Arc<rustls::ClientConfig>,
    request: &[u8],
) -> Option<(u16, Vec<(String, String)>, Vec<u8>)> {
    let tcp = tokio::net::TcpStream::connect(h.running.registry_addr).await.unwrap();
    let connector = tokio_rustls::TlsConnector::from(tls.clone());
    let name = ServerName::IpAddress(h.running.registry_addr.ip().into());
    let mut stream = connector.connect(name, tcp).await.unwrap();
    // The server may answer and close before reading all of an oversized request.
    let _ = stream.write_all(request).await;
    let _ = stream.flush().await;
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut answer)).await;
    assert!(read.is_ok(), "the server must answer or close within 20 s");
    let text = answer.as_slice();
    let split = text.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&text[..split]).ok()?;
    let mut lines = head.split("\r\n");
    let status: u16 = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Some((status, headers, text[split + 4..].to_vec()))
}

fn tls_client(h: &Harness) -> Arc<rustls::ClientConfig> {
    support::tls_client_trusting(&h.running.data_dir.join("ca.pem"))
}

#[tokio::test]
async fn every_hostile_request_over_https_gets_a_4xx_json_answer_and_reads_only_layout_keys() {
    let (h, issuer, secrets) = fixture().await;
    let tls = tls_client(&h);
    let corpus = hostile::corpus();
    assert!(corpus.len() >= 100, "the corpus has {} cases", corpus.len());
    eprintln!("hostile corpus: {} requests, {} transport cases", corpus.len(), hostile::transport_cases().len());

    // A control first: the fixture answers, so the 4xx below are about the requests.
    let control = format!(
        "GET /v1/modules/acme/vpc/aws/versions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\r\n",
        h.running.dev_token
    );
    assert_eq!(send_raw(&h, &tls, control.as_bytes()).await.unwrap().0, 200);
    let _ = h.running.take_s3_requests();

    let mut failures = Vec::new();
    for (i, case) in corpus.iter().enumerate() {
        let what = format!("case {i}: {} {}", case.method, &case.target[..case.target.len().min(120)]);
        let mut request = format!("{} {} HTTP/1.1\r\nHost: {}\r\n", case.method, case.target, h.host());
        if let Some(value) = authorization(case, &secrets) {
            request.push_str(&format!("Authorization: {value}\r\n"));
        }
        for (name, value) in &case.headers {
            request.push_str(&format!("{name}: {}\r\n", value.replace("{host}", &h.host())));
        }
        if let Some(body) = &case.body {
            request.push_str(&format!("Content-Type: application/json\r\nContent-Length: {}\r\n", body.len()));
        }
        request.push_str("Connection: close\r\n\r\n");
        request.push_str(case.body.as_deref().unwrap_or_default());
        let (status, headers, body) =
            send_raw(&h, &tls, request.as_bytes()).await.unwrap_or_else(|| panic!("{what}: no answer"));
        let header = |name: &str| headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
        let mut checked = check_4xx(&what, case, status, header, &body)
            .and_then(|()| check_reads(&what, status, &h.running.take_s3_requests()));
        // The protocols' 401 says how to authenticate (OCI's names its token endpoint); a page
        // says so in words (and a link).
        let realm = format!("Bearer realm=\"https://{}/v2/token\"", h.host());
        let scheme = if registry::router::is_oci_path(&case.target) { realm.as_str() } else { "Bearer" };
        let challenged = headers.iter().any(|(n, v)| n == "www-authenticate" && v.starts_with(scheme));
        if status == 401 && !hostile::is_page(&case.target) && !challenged {
            checked = Err(format!("{what}: 401 without a Bearer challenge"));
        }
        failures.extend(checked.err());
    }

    for (what, bytes) in hostile::transport_cases() {
        let answer = send_raw(&h, &tls, &bytes).await;
        let status = answer.as_ref().map(|a| a.0);
        let reads = h.running.take_s3_requests();
        if !status.is_some_and(|s| (400..500).contains(&s)) || !reads.is_empty() {
            failures.push(format!("transport case {what}: answered {status:?}, read {reads:?}"));
        }
    }
    assert!(failures.is_empty(), "{} of the corpus failed:\n{}", failures.len(), failures.join("\n"));
    normal_traffic(&h.running.app, &secrets).await;
    check_logs_hold_no_secrets(&secrets);
    h.running.stop().await;
    issuer.stop();
}

/// The recorded API Gateway v2 event with this case's method, raw path, query and headers, as
/// the Lambda runtime hands it to the function.
fn event(case: &Case, secrets: &Secrets, host: &str) -> serde_json::Value {
    let mut e: serde_json::Value = serde_json::from_str(EVENT).unwrap();
    let (path, query) = match case.target.split_once('?') {
        Some((p, q)) => (p, q),
        None => (case.target.as_str(), ""),
    };
    e["rawPath"] = path.into();
    e["rawQueryString"] = query.into();
    e["requestContext"]["http"]["path"] = path.into();
    e["requestContext"]["http"]["method"] = case.method.as_str().into();
    e["routeKey"] = "$default".into();
    e["requestContext"]["routeKey"] = "$default".into();
    e.as_object_mut().unwrap().remove("pathParameters");
    let headers = e["headers"].as_object_mut().unwrap();
    headers.remove("authorization");
    if let Some(value) = authorization(case, secrets) {
        headers.insert("authorization".into(), value.into());
    }
    for (name, value) in &case.headers {
        headers.insert(name.clone(), value.replace("{host}", host).into());
    }
    if case.body.is_some() {
        headers.insert("content-type".into(), "application/json".into());
    }
    // Payload 2.0 carries cookies in `cookies`, not as a header.
    if let Some(cookie) = headers.remove("cookie") {
        let cookies: Vec<&str> = cookie.as_str().unwrap_or_default().split("; ").collect();
        e["cookies"] = serde_json::json!(cookies);
    }
    if let Some(body) = &case.body {
        e["body"] = body.as_str().into();
        e["isBase64Encoded"] = false.into();
    }
    e
}

#[tokio::test]
async fn every_hostile_request_as_an_api_gateway_event_gets_a_4xx_json_answer_and_reads_only_layout_keys() {
    let (h, issuer, secrets) = fixture().await;
    // One app serving every route, over the same embedded S3, as the read Lambdas together,
    // built as each Lambda builds its own (with the OpenID Connect issuers' keys).
    let app = App::builder(h.running.app.config().clone(), h.running.storage.clone()).build().unwrap();
    let mut corpus = hostile::corpus();
    // In an event, characters no HTTP request line can carry are just string contents: the
    // handler must refuse those too.
    for path in [
        "/v1/modules/a b/vpc/aws/versions",
        "/v1/modules/acme\0/vpc/aws/versions",
        "/v1/modules/\u{430}cme/vpc/aws/versions",
        "/v1/modules/..\\..\\access/vpc/aws/versions",
        "/v1/mirror/registry.terraform.io/hashicorp/null/3.2.1\u{ff0e}json",
    ] {
        corpus.push(Case {
            method: "GET".into(),
            target: path.into(),
            auth: Auth::Dev,
            headers: vec![],
            status: 400,
            says: None,
            body: None,
        });
    }
    // Values lambda_http's request conversion panics on (`registry::lambda::http::guard`): headers
    // it builds a URL from, on a request that is otherwise an ordinary 404; a path that would
    // end the URL's authority and a query `http::Uri` cannot carry, refused.
    for (name, value) in [
        ("host", "exa mple.com"),
        ("host", "[::1"),
        ("host", "registry.example.com:99999"),
        ("host", "1.2.3.999"),
        ("x-forwarded-proto", "a b"),
        ("x-forwarded-proto", "://"),
    ] {
        corpus.push(Case {
            method: "GET".into(),
            target: "/v1/modules/ghost/vpc/aws/versions".into(),
            auth: Auth::Dev,
            headers: vec![(name.into(), value.into())],
            status: 404,
            says: Some("module ghost/vpc/aws not found"),
            body: None,
        });
    }
    for (target, says) in [(":99999", "the path must start with /"), ("/v1/modules?q=a b", "the query string")] {
        corpus.push(Case {
            method: "GET".into(),
            target: target.into(),
            auth: Auth::Dev,
            headers: vec![],
            status: 400,
            says: Some(says),
            body: None,
        });
    }
    let _ = h.running.take_s3_requests();
    let mut failures = Vec::new();
    for (i, case) in corpus.iter().enumerate() {
        let what = format!("event {i}: {} {}", case.method, &case.target[..case.target.len().min(120)]);
        let host = "abc123def4.execute-api.eu-west-1.amazonaws.com";
        let response = registry::lambda::http::respond_to_payload::<S3Storage>(&app, event(case, &secrets, host)).await;
        let status = response.status_code as u16;
        let header = |name: &str| response.headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
        let body: Vec<u8> = match &response.body {
            Some(aws_lambda_events::encodings::Body::Text(t)) => t.clone().into_bytes(),
            Some(aws_lambda_events::encodings::Body::Binary(b)) => b.clone(),
            _ => vec![],
        };
        let checked = check_4xx(&what, case, status, header, &body)
            .and_then(|()| check_reads(&what, status, &h.running.take_s3_requests()));
        failures.extend(checked.err());
    }
    assert!(failures.is_empty(), "{} of the corpus failed:\n{}", failures.len(), failures.join("\n"));
    normal_traffic(&h.running.app, &secrets).await;
    check_logs_hold_no_secrets(&secrets);
    h.running.stop().await;
    issuer.stop();
}
