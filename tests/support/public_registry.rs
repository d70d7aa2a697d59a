//! A stand-in for the public module registry and GitHub's archive host, on loopback TLS, for
//! the modules pull-through tests: it answers modules.v1 as registry.terraform.io does (a 204
//! with `X-Terraform-Get: git::https://github.com/OWNER/REPO?ref=REF`) or as
//! registry.opentofu.org does (a 200 with a JSON `location`), and `/OWNER/REPO/archive/REF.tar.gz`
//! as GitHub does (one top-level directory, a pax header naming the commit). The registry
//! under test reaches both through `REGISTRY_UPSTREAM_MODULES` and `REGISTRY_UPSTREAM_GIT_HOSTS`
//! endpoints, and trusts its CA through `REGISTRY_UPSTREAM_CA_FILE`. Tests move tags, stop it,
//! and make it answer as a hostile upstream would.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::json;

use crate::TempDir;

/// How a version's download is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// registry.terraform.io: 204, `X-Terraform-Get`.
    Header,
    /// registry.opentofu.org: 200, `{"location": …}`, no header.
    Json,
}

#[derive(Default)]
struct State {
    /// `NS/NAME/SYSTEM` → version as listed → (location, answer).
    modules: BTreeMap<String, BTreeMap<String, (String, Answer)>>,
    /// A raw versions body for a module (the hostile cases).
    raw_versions: BTreeMap<String, String>,
    /// Request path → archive bytes.
    archives: BTreeMap<String, Vec<u8>>,
    /// Every request's path, in order.
    requests: Vec<String>,
    /// Answer 503 to everything.
    down: bool,
}

/// A running stand-in.
pub struct PublicRegistry {
    /// `https://127.0.0.1:PORT`.
    pub url: String,
    /// The PEM file of its CA.
    pub ca_file: PathBuf,
    state: Arc<Mutex<State>>,
    task: tokio::task::JoinHandle<()>,
    _dir: TempDir,
}

impl PublicRegistry {
    /// Start on an ephemeral loopback port.
    pub async fn start() -> PublicRegistry {
        let dir = TempDir::new("public-registry");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr: SocketAddr = listener.local_addr().unwrap();
        let tls = registry_local::tls::server_config(dir.path(), addr.ip()).unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(tls);
        let state = Arc::new(Mutex::new(State::default()));
        let served = state.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else { continue };
                let (acceptor, state) = (acceptor.clone(), served.clone());
                tokio::spawn(async move {
                    let Ok(stream) = acceptor.accept(stream).await else { return };
                    let service = service_fn(move |request| {
                        let state = state.clone();
                        async move { Ok::<_, Infallible>(answer(&state, request)) }
                    });
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        PublicRegistry {
            url: format!("https://{addr}"),
            ca_file: dir.path().join(registry_local::tls::CA_FILE),
            state,
            task,
            _dir: dir,
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap()
    }

    /// The settings that make a registry fetch `host`'s modules (and github.com's archives)
    /// from this stand-in, trusting its CA.
    pub fn settings(&self, host: &str) -> Vec<(String, String)> {
        vec![
            ("REGISTRY_UPSTREAM_MODULES".into(), format!("{host}={}", self.url)),
            ("REGISTRY_UPSTREAM_GIT_HOSTS".into(), format!("github.com={}", self.url)),
            ("REGISTRY_UPSTREAM_CA_FILE".into(), self.ca_file.display().to_string()),
        ]
    }

    /// Publish `NS/NAME/SYSTEM` `version` as the public registry does: a GitHub repository
    /// `NS/terraform-SYSTEM-NAME` whose tag `v{version}` holds `files`; listed as `listed`
    /// (`1.0.0`, or `v1.0.0` as registry.opentofu.org lists it). Answers the archive's path.
    pub fn publish(&self, module: &str, listed: &str, files: &[(&str, &str)], answer: Answer) -> String {
        let [namespace, name, system] = parts(module);
        let version = listed.trim_start_matches('v');
        let repo = format!("terraform-{system}-{name}");
        let reference = format!("v{version}");
        let location = format!("git::https://github.com/{namespace}/{repo}?ref={reference}");
        self.set_location(module, listed, &location, answer);
        self.set_tag(namespace, &repo, &reference, files)
    }

    /// Point `reference` of `OWNER/REPO` at `files` (a new tag, or a moved one). Answers the
    /// archive's path.
    pub fn set_tag(&self, owner: &str, repo: &str, reference: &str, files: &[(&str, &str)]) -> String {
        let top = format!("{repo}-{}", reference.trim_start_matches('v'));
        let commit = hex::encode(sha2::Sha256::digest(format!("{owner}/{repo}@{reference}:{files:?}").as_bytes()));
        let archive = registry::testing::git_archive(&top, &commit[..40], files);
        let path = format!("/{owner}/{repo}/archive/{reference}.tar.gz");
        self.set_archive(&path, archive);
        path
    }

    /// Answer `bytes` at `path`.
    pub fn set_archive(&self, path: &str, bytes: Vec<u8>) {
        self.state().archives.insert(path.to_string(), bytes);
    }

    /// Answer `version`'s download with `location`.
    pub fn set_location(&self, module: &str, listed: &str, location: &str, answer: Answer) {
        self.state()
            .modules
            .entry(module.to_string())
            .or_default()
            .insert(listed.to_string(), (location.to_string(), answer));
    }

    /// Answer `module`'s versions with `body` as it is.
    pub fn set_raw_versions(&self, module: &str, body: String) {
        self.state().raw_versions.insert(module.to_string(), body);
    }

    /// Answer 503 to everything (`true`), or serve again.
    pub fn down(&self, down: bool) {
        self.state().down = down;
    }

    /// The paths requested since the last call.
    pub fn take_requests(&self) -> Vec<String> {
        std::mem::take(&mut self.state().requests)
    }
}

impl Drop for PublicRegistry {
    fn drop(&mut self) {
        self.task.abort();
    }
}

use sha2::Digest;

fn parts(module: &str) -> [&str; 3] {
    let mut it = module.split('/');
    [it.next().unwrap(), it.next().unwrap(), it.next().unwrap()]
}

fn answer(state: &Mutex<State>, request: Request<Incoming>) -> Response<Full<Bytes>> {
    let path = request.uri().path().to_string();
    let mut state = state.lock().unwrap();
    state.requests.push(path.clone());
    let reply = |status: StatusCode, body: Vec<u8>| {
        Response::builder().status(status).body(Full::new(Bytes::from(body))).unwrap()
    };
    if state.down {
        return reply(StatusCode::SERVICE_UNAVAILABLE, b"down".to_vec());
    }
    if path == "/.well-known/terraform.json" {
        return reply(StatusCode::OK, json!({"modules.v1": "/v1/modules/"}).to_string().into_bytes());
    }
    if path == "/loop.tar.gz" {
        return Response::builder()
            .status(StatusCode::FOUND)
            .header(header::LOCATION, "/loop.tar.gz")
            .body(Full::new(Bytes::new()))
            .unwrap();
    }
    if let Some(archive) = state.archives.get(&path) {
        return reply(StatusCode::OK, archive.clone());
    }
    let Some(rest) = path.strip_prefix("/v1/modules/") else { return reply(StatusCode::NOT_FOUND, Vec::new()) };
    let segments: Vec<&str> = rest.split('/').collect();
    match segments[..] {
        [ns, name, system, "versions"] => {
            let module = format!("{ns}/{name}/{system}");
            if let Some(raw) = state.raw_versions.get(&module) {
                return reply(StatusCode::OK, raw.clone().into_bytes());
            }
            let Some(versions) = state.modules.get(&module) else { return reply(StatusCode::NOT_FOUND, Vec::new()) };
            let listed: Vec<_> = versions.keys().map(|v| json!({ "version": v })).collect();
            reply(StatusCode::OK, json!({"modules": [{"source": module, "versions": listed}]}).to_string().into_bytes())
        }
        [ns, name, system, version, "download"] => {
            let module = format!("{ns}/{name}/{system}");
            let found = state.modules.get(&module).and_then(|v| {
                v.iter().find(|(listed, _)| listed.trim_start_matches('v') == version).map(|(_, a)| a.clone())
            });
            match found {
                Some((location, Answer::Header)) => Response::builder()
                    .status(StatusCode::NO_CONTENT)
                    .header("x-terraform-get", location)
                    .body(Full::new(Bytes::new()))
                    .unwrap(),
                Some((location, Answer::Json)) => {
                    reply(StatusCode::OK, json!({ "location": location }).to_string().into_bytes())
                }
                None => reply(StatusCode::NOT_FOUND, Vec::new()),
            }
        }
        _ => reply(StatusCode::NOT_FOUND, Vec::new()),
    }
}

/// Incompressible text (its gzip about as large): `len` bytes, the same each time.
pub fn noise(len: usize) -> String {
    const LETTERS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/";
    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    (0..len)
        .map(|_| {
            // xorshift64: no pattern gzip finds.
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            LETTERS[(state % 64) as usize] as char
        })
        .collect()
}
