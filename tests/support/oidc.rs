//! An OpenID Connect issuer on loopback TLS for the sign-in tests: a discovery document, a key
//! set (keys made by the test, rotatable), and an OAuth authorization server for `terraform
//! login` (authorization code grant with PKCE) whose user approves every request it is shown.
//! Its CA is its own: the registry trusts it through `REGISTRY_OIDC_CA_FILE`.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use base64::Engine;
use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use registry::testing::oidc::{TestIssuer, claims};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::TempDir;

/// The audience the registry is configured with, as tokens must carry it in `aud`.
pub const AUDIENCE: &str = "https://registry.test";
/// The OAuth client `terraform login` is told to use.
pub const CLIENT_ID: &str = "terraform-cli";
/// The groups the issuer's user belongs to (a rule grants `{value}` for `team-*`).
pub const USER_GROUPS: [&str; 2] = ["team-network", "everyone"];

struct State {
    /// The key tokens are signed with now.
    signing: TestIssuer,
    /// The keys the key set publishes.
    published: Vec<Value>,
    /// How many times the key set was fetched.
    jwks_fetches: usize,
    /// Authorization codes handed out and not yet redeemed: (redirect URI, PKCE challenge).
    codes: HashMap<String, (String, String)>,
    /// Every token endpoint request's problem, if it had one (for the test's message).
    refusals: Vec<String>,
    /// An outage: every request answered 503.
    down: bool,
    /// Requests answered 503 for the outage.
    outage_refusals: usize,
}

/// A running issuer.
pub struct OidcIssuer {
    /// `https://127.0.0.1:PORT`: `iss` of its tokens.
    pub url: String,
    /// The PEM file of its CA.
    pub ca_file: PathBuf,
    state: Arc<Mutex<State>>,
    task: tokio::task::JoinHandle<()>,
    _dir: TempDir,
}

impl OidcIssuer {
    /// Start on an ephemeral loopback port, signing with a new RSA key.
    pub async fn start() -> OidcIssuer {
        let dir = TempDir::new("oidc-issuer");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr: SocketAddr = listener.local_addr().unwrap();
        let url = format!("https://{addr}");
        let tls = registry_local::tls::server_config(dir.path(), addr.ip()).unwrap();
        let signing = TestIssuer::rsa(&url);
        let state = Arc::new(Mutex::new(State {
            published: vec![signing.jwk()],
            signing,
            jwks_fetches: 0,
            codes: HashMap::new(),
            refusals: Vec::new(),
            down: false,
            outage_refusals: 0,
        }));
        let acceptor = tokio_rustls::TlsAcceptor::from(tls);
        let served = state.clone();
        let base = url.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else { continue };
                let (acceptor, state, base) = (acceptor.clone(), served.clone(), base.clone());
                tokio::spawn(async move {
                    let Ok(stream) = acceptor.accept(stream).await else { return };
                    let service = service_fn(move |request| {
                        let (state, base) = (state.clone(), base.clone());
                        async move { Ok::<_, Infallible>(answer(&state, &base, request).await) }
                    });
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        OidcIssuer { ca_file: dir.path().join(registry_local::tls::CA_FILE), url, state, task, _dir: dir }
    }

    /// `REGISTRY_OIDC_ISSUERS` for this issuer (and `more`, other issuers' JSON objects):
    /// `groups` `team-*` grants the module namespace named after the team, `everyone` the
    /// `acme` namespace and `registry.terraform.io/hashicorp/*`; with `login`, the
    /// `terraform login` client.
    pub fn issuers_json(&self, login: bool, more: &[String]) -> String {
        let mut issuer = json!({
            "issuer": self.url,
            "audience": AUDIENCE,
            "rules": [
                {"claim": "groups", "equals": "team-*", "modules": ["{value}"]},
                {"claim": "groups", "equals": "everyone", "modules": ["acme"],
                 "providers": ["registry.terraform.io/hashicorp/*"]},
            ],
        });
        if login {
            issuer["login"] = json!({"client": CLIENT_ID, "authz": format!("{}/authorize", self.url),
                                     "token": format!("{}/token", self.url), "scopes": ["openid", "groups"]});
        }
        let mut all = vec![issuer.to_string()];
        all.extend(more.iter().cloned());
        format!("[{}]", all.join(","))
    }

    /// Claims of a token for this registry from this issuer, valid for `lifetime` seconds,
    /// with the user's groups.
    pub fn claims(&self, lifetime: i64) -> Map<String, Value> {
        let mut c = claims(&self.url, AUDIENCE, lifetime);
        c.insert("groups".into(), json!(USER_GROUPS));
        c
    }

    /// `claims` signed with the current key.
    pub fn sign(&self, claims: &Map<String, Value>) -> String {
        self.state.lock().unwrap().signing.sign(claims)
    }

    /// Run `f` with the current signing key (to make hostile tokens).
    pub fn with_key<T>(&self, f: impl FnOnce(&TestIssuer) -> T) -> T {
        f(&self.state.lock().unwrap().signing)
    }

    /// Rotate: a new key signs from now on, and the key set publishes only it.
    pub fn rotate(&self) {
        let mut state = self.state.lock().unwrap();
        state.signing = TestIssuer::rsa(&self.url);
        state.published = vec![state.signing.jwk()];
    }

    /// Start or end an outage (every request answered 503).
    pub fn outage(&self, down: bool) {
        self.state.lock().unwrap().down = down;
    }

    /// How many requests the outage refused so far (a fetch asks for the discovery document
    /// first, so each fetch attempt during an outage is one).
    pub fn outage_refusals(&self) -> usize {
        self.state.lock().unwrap().outage_refusals
    }

    /// How many times the key set was fetched so far.
    pub fn jwks_fetches(&self) -> usize {
        self.state.lock().unwrap().jwks_fetches
    }

    /// What the token endpoint refused so far.
    pub fn refusals(&self) -> Vec<String> {
        self.state.lock().unwrap().refusals.clone()
    }

    /// What a person's browser does with the URL `terraform login` prints: open the issuer's
    /// authorization page (the user is signed in there and approves), then follow its redirect
    /// to the CLI's callback on localhost. The callback's status, or why it went wrong.
    pub async fn approve(&self, authorize_url: &str) -> Result<u16, String> {
        let url = url::Url::parse(authorize_url).map_err(|e| format!("{authorize_url}: {e}"))?;
        if !authorize_url.starts_with(&format!("{}/authorize?", self.url)) {
            return Err(format!("not this issuer's authorization URL: {authorize_url}"));
        }
        let target = format!("{}?{}", url.path(), url.query().unwrap_or_default());
        let addr: SocketAddr = self.url.trim_start_matches("https://").parse().unwrap();
        let tls = crate::tls_client_trusting(&self.ca_file);
        let tcp = tokio::net::TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
        let name = rustls::pki_types::ServerName::IpAddress(addr.ip().into());
        let stream = tokio_rustls::TlsConnector::from(tls).connect(name, tcp).await.map_err(|e| e.to_string())?;
        let (status, location) = get(stream, &target, &addr.to_string()).await?;
        let location = location.ok_or_else(|| format!("the authorization page answered {status}, no redirect"))?;
        // The CLI listens on 127.0.0.1 and names it localhost in the redirect URI.
        let callback = url::Url::parse(&location).map_err(|e| format!("{location}: {e}"))?;
        if callback.scheme() != "http" || callback.host_str() != Some("localhost") {
            return Err(format!("the redirect is not to the CLI's callback: {location}"));
        }
        let port = callback.port().ok_or("no port in the callback URL")?;
        let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.map_err(|e| e.to_string())?;
        let target = format!("{}?{}", callback.path(), callback.query().unwrap_or_default());
        Ok(get(tcp, &target, &format!("localhost:{port}")).await?.0)
    }

    pub fn stop(self) {
        self.task.abort();
    }
}

fn reply(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, content_type)
        .header(header::CACHE_CONTROL, "no-store")
        .body(Full::new(body.into()))
        .unwrap()
}

fn json_reply(status: StatusCode, value: Value) -> Response<Full<Bytes>> {
    reply(status, "application/json", value.to_string())
}

/// The parameters of a query string or form body.
fn params(text: &str) -> HashMap<String, String> {
    url::form_urlencoded::parse(text.as_bytes()).into_owned().collect()
}

// The issuer's routes in one match (long on purpose): each is a few lines of a fake server.
async fn answer(state: &Mutex<State>, base: &str, request: Request<Incoming>) -> Response<Full<Bytes>> {
    let (parts, body) = request.into_parts();
    let query = params(parts.uri.query().unwrap_or_default());
    {
        let mut state = state.lock().unwrap();
        if state.down {
            state.outage_refusals += 1;
            return reply(StatusCode::SERVICE_UNAVAILABLE, "text/plain", "down");
        }
    }
    match (parts.method.as_str(), parts.uri.path()) {
        ("GET", "/.well-known/openid-configuration") => json_reply(
            StatusCode::OK,
            json!({"issuer": base, "jwks_uri": format!("{base}/jwks"),
                   "authorization_endpoint": format!("{base}/authorize"), "token_endpoint": format!("{base}/token"),
                   "response_types_supported": ["code"], "id_token_signing_alg_values_supported": ["RS256"],
                   "code_challenge_methods_supported": ["S256"]}),
        ),
        ("GET", "/jwks") => {
            let mut state = state.lock().unwrap();
            state.jwks_fetches += 1;
            json_reply(StatusCode::OK, json!({"keys": state.published}))
        }
        // The user is signed in at the issuer and approves: straight back to the CLI's
        // callback with a code, after the checks an authorization server makes.
        ("GET", "/authorize") => {
            let get = |name: &str| query.get(name).cloned().unwrap_or_default();
            let redirect = get("redirect_uri");
            let problem = if get("client_id") != CLIENT_ID {
                Some("unknown client_id")
            } else if get("response_type") != "code" {
                Some("response_type must be code")
            } else if get("code_challenge_method") != "S256" || get("code_challenge").is_empty() {
                Some("PKCE with S256 is required")
            } else if !(redirect.starts_with("http://localhost:") && redirect.ends_with("/login")) {
                Some("redirect_uri is not an allowed callback")
            } else {
                None
            };
            if let Some(problem) = problem {
                return reply(StatusCode::BAD_REQUEST, "text/plain", problem);
            }
            let mut state = state.lock().unwrap();
            // Unique per request (a test server: not meant to resist guessing).
            let code =
                hex::encode(&Sha256::digest(format!("{}{:?}", state.codes.len(), std::time::Instant::now()))[..16]);
            state.codes.insert(code.clone(), (redirect.clone(), get("code_challenge")));
            let location = format!("{redirect}?code={code}&state={}", encode(&get("state")));
            Response::builder()
                .status(StatusCode::FOUND)
                .header(header::LOCATION, location)
                .body(Full::default())
                .unwrap()
        }
        ("POST", "/token") => {
            let body = Limited::new(body, 64 * 1024).collect().await.map(|b| b.to_bytes()).unwrap_or_default();
            let form = params(&String::from_utf8_lossy(&body));
            // A public client: its id in the form, or as the Basic user with an empty password
            // (golang.org/x/oauth2 tries that first).
            let basic = parts
                .headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Basic "))
                .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
                .map(|b| String::from_utf8_lossy(&b).split(':').next().unwrap_or_default().to_string());
            let client = form.get("client_id").cloned().or(basic).unwrap_or_default();
            let mut state = state.lock().unwrap();
            let pending = form.get("code").and_then(|c| state.codes.remove(c));
            let verifier = form.get("code_verifier").cloned().unwrap_or_default();
            let problem = match pending {
                _ if form.get("grant_type").map(String::as_str) != Some("authorization_code") => {
                    Some("grant_type must be authorization_code")
                }
                _ if client != CLIENT_ID => Some("unknown client"),
                None => Some("unknown or used code"),
                Some((redirect, _)) if form.get("redirect_uri") != Some(&redirect) => Some("redirect_uri differs"),
                Some((_, challenge)) if pkce_s256(&verifier) != challenge => Some("code_verifier does not match"),
                Some(_) => None,
            };
            if let Some(problem) = problem {
                state.refusals.push(problem.to_string());
                return json_reply(
                    StatusCode::BAD_REQUEST,
                    json!({"error": "invalid_grant", "error_description": problem}),
                );
            }
            let mut c = claims(base, AUDIENCE, 3600);
            c.insert("groups".into(), json!(USER_GROUPS));
            c.insert("sub".into(), "user-1234".into());
            let token = state.signing.sign(&c);
            json_reply(StatusCode::OK, json!({"access_token": token, "token_type": "Bearer", "expires_in": 3600}))
        }
        _ => reply(StatusCode::NOT_FOUND, "text/plain", "not found"),
    }
}

/// BASE64URL(SHA256(verifier)), RFC 7636's S256.
fn pkce_s256(verifier: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

fn encode(value: &str) -> String {
    url::form_urlencoded::byte_serialize(value.as_bytes()).collect()
}

/// One HTTP/1.1 GET over `stream`: the status and the `Location` header.
async fn get(
    mut stream: impl tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    target: &str,
    host: &str,
) -> Result<(u16, Option<String>), String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let request = format!("GET {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.map_err(|e| e.to_string())?;
    let mut answer = Vec::new();
    tokio::time::timeout(std::time::Duration::from_secs(30), stream.read_to_end(&mut answer))
        .await
        .map_err(|_| format!("no answer to GET {target} within 30 s"))?
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&answer);
    let status = text.split(' ').nth(1).and_then(|s| s.parse().ok()).ok_or_else(|| format!("not HTTP: {text}"))?;
    let location = text.split("\r\n\r\n").next().unwrap_or_default().lines().find_map(|l| {
        l.split_once(':').filter(|(n, _)| n.eq_ignore_ascii_case("location")).map(|(_, v)| v.trim().to_string())
    });
    Ok((status, location))
}
