//! Released OpenTofu's OCI client, request for request: OpenTofu 1.10 to 1.12 (oras-go 2.5 to
//! 2.6.1) pings `GET /v2/` before each repository and stops on anything but 200
//! (`cmd/tofu/oci_distribution.go` at v1.12.6); on a 401 it parses the `Bearer` challenge,
//! fetches a token with a `GET` to the realm (`service=`, one `scope=` per scope, keys sorted,
//! `Basic` only when it holds credentials: `registry/remote/auth/client.go`), resends once, and
//! caches the token per scope set, so the first request of a repository goes out bare. Then,
//! for a provider (`internal/getproviders/oci_registry_mirror_source.go`): `tags/list` with no
//! `n`, `HEAD` of the version's tag with five manifest types in `Accept`, which must answer
//! `Content-Type`, `Content-Length` and `Docker-Content-Digest` (`repository.go`,
//! `generateDescriptor`), `GET` of the index and of the platform's manifest by digest with
//! exactly their media type in `Accept`, `GET` of the blob, following the redirect without the
//! token. For a module (`internal/getmodules/oci_getter.go`): no tag list, the tag `latest`
//! when the source names none. OpenTofu is not installable here: this replays that sequence,
//! anonymously and with a token, over HTTPS to the local registry and as API Gateway events
//! through the Lambda adapter, and checks every answer as oras-go would.

// Test helpers: a failed step is a failed test, with the panic message saying which.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::Arc;

use registry::app::App;
use registry::storage::S3Storage;
use sha2::Digest;
use support::Harness;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const EVENT: &str = include_str!("../../functions/registry/tests/events/apigw_v2_module_versions.json");
/// What oras-go's `Resolve` sends in `Accept` for a tag.
const RESOLVE_ACCEPT: &str = "application/vnd.docker.distribution.manifest.v2+json, \
     application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.oci.image.manifest.v1+json, \
     application/vnd.oci.image.index.v1+json, application/vnd.oci.artifact.manifest.v1+json";
const INDEX: &str = "application/vnd.oci.image.index.v1+json";
const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";

/// One answer, headers by lower-case name.
struct Answer {
    status: u16,
    headers: BTreeMap<String, String>,
    body: Vec<u8>,
}

/// How requests reach the registry: HTTPS to the local server, or API Gateway events through
/// the Lambda adapter (the same config and bucket).
enum Via {
    Https(Arc<rustls::ClientConfig>),
    Lambda(Box<App<S3Storage>>),
}

/// A client that behaves as oras-go's `auth.Client` does, and keeps the requests it sent.
struct Oras<'h> {
    h: &'h Harness,
    via: Via,
    /// `Basic` user and password for the realm (OpenTofu's `oci_credentials`), if any.
    credentials: Option<String>,
    /// Tokens by scope set (`""` for the ping), as oras caches them.
    tokens: BTreeMap<String, String>,
    /// `METHOD path status` of every request, in order.
    log: Vec<String>,
}

impl Oras<'_> {
    async fn send(&mut self, method: &str, target: &str, headers: Vec<(&str, String)>) -> Answer {
        let answer = match &self.via {
            Via::Https(tls) => https(self.h, tls, method, target, &headers).await,
            Via::Lambda(app) => lambda(self.h, app, method, target, &headers).await,
        };
        self.log.push(format!("{method} {target} {}", answer.status));
        answer
    }

    /// One operation: sent with the cached token of its scope (none the first time), and on a
    /// 401 the challenge answered once: a token fetched from the realm, the request resent.
    async fn request(&mut self, method: &str, path: &str, accept: Option<&str>, scope: &str) -> Answer {
        let headers = |token: Option<&String>| {
            let mut headers: Vec<(&str, String)> = accept.map(|a| ("accept", a.to_string())).into_iter().collect();
            headers.extend(token.map(|t| ("authorization", format!("Bearer {t}"))));
            headers
        };
        let answer = self.send(method, path, headers(self.tokens.get(scope))).await;
        if answer.status != 401 {
            return answer;
        }
        let challenge = answer.headers.get("www-authenticate").cloned().unwrap_or_default();
        let params = challenge_params(&challenge);
        assert_eq!(params.get("realm"), Some(&format!("https://{}/v2/token", self.h.host())), "{challenge}");
        let mut scopes: Vec<String> = [scope.to_string()].into_iter().filter(|s| !s.is_empty()).collect();
        scopes.extend(params.get("scope").cloned().filter(|s| !scopes.contains(s)));
        let mut query: Vec<String> = scopes.iter().map(|s| format!("scope={}", encode(s))).collect();
        query.push(format!("service={}", encode(&params["service"])));
        let basic = self.credentials.as_ref().map(|c| {
            use base64::Engine;
            ("authorization", format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(c)))
        });
        let token = self.send("GET", &format!("/v2/token?{}", query.join("&")), basic.into_iter().collect()).await;
        assert_eq!(token.status, 200, "the token endpoint: {}", String::from_utf8_lossy(&token.body));
        let body: serde_json::Value = serde_json::from_slice(&token.body).unwrap();
        let token = body["access_token"].as_str().or(body["token"].as_str()).unwrap().to_string();
        self.tokens.insert(scope.to_string(), token);
        self.send(method, path, headers(self.tokens.get(scope))).await
    }

    /// `Ping`: exactly 200, or OpenTofu stops ("failed to contact OCI registry").
    async fn ping(&mut self) {
        let answer = self.request("GET", "/v2/", None, "").await;
        assert_eq!(answer.status, 200, "ping: {}", String::from_utf8_lossy(&answer.body));
    }

    /// `Resolve` of a tag: HEAD, and the descriptor oras-go builds from the headers.
    async fn resolve(&mut self, repository: &str, tag: &str) -> (String, String, u64) {
        let path = format!("/v2/{repository}/manifests/{tag}");
        let head = self.request("HEAD", &path, Some(RESOLVE_ACCEPT), &scope(repository)).await;
        assert_eq!(head.status, 200, "HEAD {path}");
        assert!(head.body.is_empty(), "HEAD {path}: no body");
        let media_type = head.headers.get("content-type").cloned().expect("HEAD answers Content-Type");
        let size =
            head.headers.get("content-length").and_then(|l| l.parse().ok()).expect("HEAD answers Content-Length");
        let digest = head.headers.get("docker-content-digest").cloned().expect("HEAD by tag answers the digest");
        (media_type, digest, size)
    }

    /// `GET` of a manifest by digest, checked as oras-go and OpenTofu check it.
    async fn manifest(&mut self, repository: &str, (media_type, digest, size): (&str, &str, u64)) -> Vec<u8> {
        let path = format!("/v2/{repository}/manifests/{digest}");
        let answer = self.request("GET", &path, Some(media_type), &scope(repository)).await;
        assert_eq!(answer.status, 200, "GET {path}");
        assert_eq!(answer.headers.get("content-type").map(String::as_str), Some(media_type), "{path}");
        assert_eq!(answer.body.len() as u64, size, "{path}: the size HEAD said");
        assert_eq!(sha256(&answer.body), digest, "{path}: the bytes hash to the digest");
        answer.body
    }

    /// `GET` of a blob: a redirect, followed without the token (another origin), to its bytes.
    async fn blob(&mut self, repository: &str, digest: &str, size: u64) -> Vec<u8> {
        let path = format!("/v2/{repository}/blobs/{digest}");
        let answer = self.request("GET", &path, None, &scope(repository)).await;
        assert_eq!(answer.status, 307, "GET {path}");
        let location = answer.headers.get("location").cloned().unwrap();
        let bytes = plain_get(&location).await;
        assert_eq!((bytes.len() as u64, sha256(&bytes)), (size, digest.to_string()), "{path}");
        bytes
    }
}

fn scope(repository: &str) -> String {
    format!("repository:{repository}:pull")
}

fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(sha2::Sha256::digest(bytes)))
}

fn encode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// `Bearer realm="…",service="…",scope="…"` as oras-go's `parseChallenge` reads it.
fn challenge_params(challenge: &str) -> BTreeMap<String, String> {
    let rest = challenge.strip_prefix("Bearer ").unwrap_or_else(|| panic!("not a Bearer challenge: {challenge}"));
    rest.split("\",")
        .filter_map(|p| p.split_once("=\""))
        .map(|(k, v)| (k.trim().to_string(), v.trim_end_matches('"').to_string()))
        .collect()
}

async fn https(
    h: &Harness,
    tls: &Arc<rustls::ClientConfig>,
    method: &str,
    target: &str,
    headers: &[(&str, String)],
) -> Answer {
    let tcp = tokio::net::TcpStream::connect(h.running.registry_addr).await.unwrap();
    let name = rustls::pki_types::ServerName::IpAddress(h.running.registry_addr.ip().into());
    let mut stream = tokio_rustls::TlsConnector::from(tls.clone()).connect(name, tcp).await.unwrap();
    let mut request = format!("{method} {target} HTTP/1.1\r\nHost: {}\r\n", h.host());
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("Connection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw).await;
    parse_http(&raw)
}

/// An HTTP/1.1 answer read to the end of the connection.
fn parse_http(raw: &[u8]) -> Answer {
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("an HTTP answer");
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().into()))
        .collect();
    Answer { status, headers, body: raw[split + 4..].to_vec() }
}

/// A presigned URL of the embedded S3 (plain HTTP), fetched as Go's client follows a redirect
/// to another origin: no `Authorization`.
async fn plain_get(url: &str) -> Vec<u8> {
    let url = url::Url::parse(url).unwrap();
    let address = format!("{}:{}", url.host_str().unwrap(), url.port().unwrap());
    let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
    let target = format!("{}?{}", url.path(), url.query().unwrap_or_default());
    let request = format!("GET {target} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.unwrap();
    let answer = parse_http(&raw);
    assert_eq!(answer.status, 200, "{}", String::from_utf8_lossy(&answer.body));
    answer.body
}

/// The request as API Gateway hands it to the function, and the function's answer as API
/// Gateway would send it (the response event's status, headers and body).
async fn lambda(h: &Harness, app: &App<S3Storage>, method: &str, target: &str, headers: &[(&str, String)]) -> Answer {
    let mut event: serde_json::Value = serde_json::from_str(EVENT).unwrap();
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    event["rawPath"] = path.into();
    event["rawQueryString"] = query.into();
    event["requestContext"]["http"]["path"] = path.into();
    event["requestContext"]["http"]["method"] = method.into();
    event["routeKey"] = "ANY /v2/{proxy+}".into();
    event["requestContext"]["routeKey"] = "ANY /v2/{proxy+}".into();
    event.as_object_mut().unwrap().remove("pathParameters");
    let map = event["headers"].as_object_mut().unwrap();
    map.remove("authorization");
    map.insert("host".into(), h.host().into());
    for (name, value) in headers {
        map.insert(name.to_string(), value.clone().into());
    }
    let response = registry::lambda::http::respond_to_payload::<S3Storage>(app, event).await;
    let mut all = BTreeMap::new();
    for (name, value) in response.headers.iter().chain(response.multi_value_headers.iter()) {
        all.insert(name.as_str().to_string(), value.to_str().unwrap().to_string());
    }
    let body = match response.body {
        Some(aws_lambda_events::encodings::Body::Text(text)) => text.into_bytes(),
        Some(aws_lambda_events::encodings::Body::Binary(bytes)) => bytes,
        _ => Vec::new(),
    };
    Answer { status: response.status_code as u16, headers: all, body }
}

/// The `main.tf` of a module package (a zip).
fn main_tf(zip: &[u8]) -> String {
    use std::io::Read;
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(zip)).unwrap();
    let mut text = String::new();
    archive.by_name("main.tf").unwrap().read_to_string(&mut text).unwrap();
    text
}

const PROVIDERS: [(&str, &str); 2] = [
    ("providers/registry.terraform.io/public/tool", "tool"),
    ("providers/registry.terraform.io/hashicorp/null", "null"),
];
const MODULES: [&str; 2] = ["modules/open/vpc/aws", "modules/acme/vpc/aws"];

/// A registry where `public/tool` and the `open` modules are anonymous, `hashicorp/null` and
/// the `acme` modules need the token; each provider at 3.2.1 for two platforms, each module at
/// 1.1.0, 1.2.0 and 2.0.0-rc.1. Answers the zips by repository and platform.
async fn published() -> (Harness, BTreeMap<(String, String), Vec<u8>>) {
    let h = Harness::start_with(&[
        ("REGISTRY_ANONYMOUS_MODULES", "open"),
        ("REGISTRY_ANONYMOUS_PROVIDERS", "registry.terraform.io/public/*"),
    ])
    .await;
    let mut zips = BTreeMap::new();
    for (repository, r#type) in PROVIDERS {
        for platform in ["linux_amd64", "darwin_arm64"] {
            let zip = support::provider_zip(r#type, "3.2.1", platform);
            h.upload(&format!("{repository}/terraform-provider-{type}_3.2.1_{platform}.zip"), zip.clone()).await;
            zips.insert((repository.to_string(), platform.to_string()), zip);
        }
    }
    for repository in MODULES {
        for version in ["1.1.0", "1.2.0", "2.0.0-rc.1"] {
            let archive = support::module_tar_gz(&[("main.tf", &format!("# {version}\n"))]);
            h.upload(&format!("{repository}/{version}.tar.gz"), archive).await;
        }
    }
    (h, zips)
}

/// What OpenTofu sends to install one provider for linux_amd64; the zip it gets.
async fn install_provider(oras: &mut Oras<'_>, repository: &str) -> Vec<u8> {
    oras.ping().await;
    let tags = oras.request("GET", &format!("/v2/{repository}/tags/list"), None, &scope(repository)).await;
    assert_eq!(tags.status, 200);
    let tags: serde_json::Value = serde_json::from_slice(&tags.body).unwrap();
    assert_eq!(tags["tags"], serde_json::json!(["3.2.1"]));
    let (media_type, digest, size) = oras.resolve(repository, "3.2.1").await;
    assert_eq!(media_type, INDEX);
    let index: registry::oci::artifacts::ImageIndex =
        serde_json::from_slice(&oras.manifest(repository, (INDEX, &digest, size)).await).unwrap();
    let target = index
        .manifests
        .iter()
        .find(|m| m.platform.as_ref().is_some_and(|p| p.os == "linux" && p.architecture == "amd64"))
        .unwrap();
    let manifest: registry::oci::artifacts::ImageManifest =
        serde_json::from_slice(&oras.manifest(repository, (MANIFEST, &target.digest, target.size)).await).unwrap();
    let layer = &manifest.layers[0];
    assert_eq!(layer.media_type, "archive/zip");
    oras.blob(repository, &layer.digest, layer.size).await
}

/// What OpenTofu sends to install `oci://HOST/REPOSITORY` (tag `latest`) or `?tag=TAG`.
async fn install_module(oras: &mut Oras<'_>, repository: &str, tag: &str) -> Vec<u8> {
    oras.ping().await;
    let (media_type, digest, size) = oras.resolve(repository, tag).await;
    assert_eq!(media_type, MANIFEST);
    let manifest: registry::oci::artifacts::ImageManifest =
        serde_json::from_slice(&oras.manifest(repository, (MANIFEST, &digest, size)).await).unwrap();
    assert_eq!(manifest.artifact_type, registry::oci::ARTIFACT_TYPE_MODULE);
    let layer = &manifest.layers[0];
    oras.blob(repository, &layer.digest, layer.size).await
}

#[tokio::test]
async fn released_opentofu_installs_anonymously_and_with_a_token_over_https_and_through_lambda() {
    let (h, zips) = published().await;
    let host = h.host();
    for lambda in [false, true] {
        for (anonymous, provider, module) in [(true, PROVIDERS[0].0, MODULES[0]), (false, PROVIDERS[1].0, MODULES[1])] {
            let via = match lambda {
                false => Via::Https(support::tls_client_trusting(&h.running.data_dir.join("ca.pem"))),
                true => {
                    let config = h.running.app.config().clone();
                    Via::Lambda(Box::new(App::builder(config, h.running.storage.clone()).build().unwrap()))
                }
            };
            let credentials = (!anonymous).then(|| format!("opentofu:{}", h.running.dev_token));
            let mut oras = Oras { h: &h, via, credentials, tokens: BTreeMap::new(), log: Vec::new() };
            let what = format!(
                "{} {}",
                if lambda { "Lambda" } else { "HTTPS" },
                if anonymous { "anonymous" } else { "token" }
            );

            let zip = install_provider(&mut oras, provider).await;
            assert!(zip == zips[&(provider.to_string(), "linux_amd64".to_string())], "{what}: the published zip");
            let (scope, service) = (encode(&scope(provider)), encode(&host));
            let mut expected =
                vec!["GET /v2/ 401".to_string(), format!("GET /v2/token?service={service} 200"), "GET /v2/ 200".into()];
            // An anonymous repository answers at once; a private one challenges the bare request.
            if !anonymous {
                expected.push(format!("GET /v2/{provider}/tags/list 401"));
                expected.push(format!("GET /v2/token?scope={scope}&service={service} 200"));
            }
            expected.push(format!("GET /v2/{provider}/tags/list 200"));
            expected.push(format!("HEAD /v2/{provider}/manifests/3.2.1 200"));
            assert_eq!(oras.log[..expected.len()], expected, "{what}: the handshake, as oras-go sends it");
            assert_eq!(oras.log.len(), expected.len() + 3, "{what}: index, manifest, blob: {:?}", oras.log);

            // A module: a store of its own (a ping of its own), tag `latest`, then a version.
            for tag in ["latest", "1.1.0"] {
                oras.tokens.clear();
                let zip = install_module(&mut oras, module, tag).await;
                let expected = if tag == "latest" { "# 1.2.0\n" } else { "# 1.1.0\n" };
                assert_eq!(main_tf(&zip), expected, "{what} {tag}: the module package's main.tf");
            }
        }
    }
    h.running.stop().await;
}
