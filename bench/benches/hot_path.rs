//! Criterion micro-benchmarks of what every request does besides its S3 read: routing,
//! the access check, manifest parsing and transformation, presigning, and one whole answer
//! (a 12-platform `VERSION.json`). `make bench-micro`.

// Benchmark setup: a failed step is a broken benchmark.
#![allow(clippy::unwrap_used)]

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use http::Method;
use registry::address::ModuleAddress;
use registry::app::{App, Request};
use registry::auth::{Policy, Resource, TokenStore, decision_for_header, manage};
use registry::config::Config;
use registry::error::Error;
use registry::manifest::{ModuleManifest, ModuleVersion, ProviderVersion};
use registry::router;
use registry::router::{BasePaths, Service};
use registry::storage::{MemoryStorage, Object, ObjectInfo, Precondition, Revalidated, S3Storage, Storage, Stored};

fn module_manifest(versions: usize) -> Vec<u8> {
    let versions = (0..versions)
        .map(|i| {
            let version = format!("{}.{}.{}", i / 100, (i / 10) % 10, i % 10);
            ModuleVersion {
                size: 12_345,
                sha256: "0".repeat(64),
                etag: "\"0123456789abcdef0123456789abcdef\"".into(),
                ..ModuleVersion::example(&version, &format!("modules/acme/vpc/aws/{version}.tar.gz"))
            }
        })
        .collect();
    serde_json::to_vec(&ModuleManifest::new(versions)).unwrap()
}

fn provider_version(platforms: usize) -> Vec<u8> {
    let archives: serde_json::Map<String, serde_json::Value> = (0..platforms)
        .map(|i| {
            (
                format!("os{i}_arch{i}"),
                serde_json::json!({
                    "url": format!("terraform-provider-null_3.2.1_os{i}_arch{i}.zip"),
                    "hashes": ["h1:qKn6RNHnOiLNeAWyUw65+y0GHHx2qBP27nJTmHKWB0Y=", format!("zh:{}", "0".repeat(64))],
                    "indexed": {"size": 1, "etag": "\"e\""}
                }),
            )
        })
        .collect();
    serde_json::to_vec(&serde_json::json!({ "archives": archives })).unwrap()
}

fn routing(c: &mut Criterion) {
    let paths = BasePaths::default();
    let mut g = c.benchmark_group("router");
    for (name, path) in [
        ("module_versions", "/v1/modules/acme/vpc/aws/versions"),
        ("module_download", "/v1/modules/acme/vpc/aws/1.2.3-rc.1+build.5/download"),
        ("mirror_version", "/v1/mirror/registry.terraform.io/hashicorp/null/3.2.1.json"),
        ("hostile_rejected", "/v1/modules/%2e%2e/%2e%2e/access/tokens.json"),
    ] {
        g.bench_function(name, |b| b.iter(|| router::route(&Method::GET, black_box(path), None, &paths)));
    }
    g.finish();
}

fn access(c: &mut Criterion) {
    // 100 tokens: the lookup compares against every record (constant time in which matches).
    let tokens =
        (0..100).map(|i| manage::record(&format!("t{i}"), &format!("trg_{i:064}"), vec!["acme".into()], vec![], None));
    let store = TokenStore { format: 1, tokens: tokens.collect() };
    let module = ModuleAddress::parse("acme", "vpc", "aws").unwrap();
    let header = format!("Bearer trg_{:064}", 99);
    c.bench_function("access/decide_100_tokens", |b| {
        b.iter(|| {
            decision_for_header(
                &Policy::default(),
                Some(&store),
                Some(black_box(&header)),
                Resource::Module(&module),
                0,
            )
        })
    });
}

/// A JWT from an OpenID Connect issuer, checked against its kept key set (what a request with
/// one costs instead of the token store lookup above; the key set fetch is not on this path).
fn oidc(c: &mut Criterion) {
    use registry::testing::oidc::{TestIssuer, claims};
    let mut g = c.benchmark_group("oidc");
    for (name, test) in [
        ("verify_rs256", TestIssuer::rsa("https://issuer.test")),
        ("verify_es256", TestIssuer::ec("https://issuer.test")),
    ] {
        let issuer = registry::auth::oidc::parse_issuers(
            r#"[{"issuer": "https://issuer.test", "audience": "registry",
                 "rules": [{"claim": "groups", "equals": "team-*", "modules": ["{value}"]}]}]"#,
        )
        .unwrap()
        .remove(0);
        let mut c = claims(&test.url, "registry", 3600);
        c.insert("groups".into(), serde_json::json!(["team-network", "everyone"]));
        let token = test.sign(&c);
        let keys = test.jwks();
        g.bench_function(name, |b| b.iter(|| registry::auth::oidc::verify(black_box(&token), &issuer, &keys).unwrap()));
    }
    g.finish();
}

fn manifests(c: &mut Criterion) {
    let mut g = c.benchmark_group("manifest");
    for versions in [20, 5000] {
        let bytes = module_manifest(versions);
        g.bench_function(format!("module_parse_and_versions_response_{versions}"), |b| {
            b.iter(|| {
                let m = ModuleManifest::parse(black_box(&bytes)).unwrap();
                serde_json::to_vec(&m.versions_response()).unwrap()
            })
        });
        let parsed = ModuleManifest::parse(&bytes).unwrap();
        g.bench_function(format!("module_versions_response_cached_{versions}"), |b| {
            b.iter(|| serde_json::to_vec(&black_box(&parsed).versions_response()).unwrap())
        });
    }
    let bytes = provider_version(12);
    g.bench_function("provider_version_parse_12_platforms", |b| {
        b.iter(|| ProviderVersion::parse(black_box(&bytes)).unwrap().archives.len())
    });
    g.finish();
}

/// S3 storage as a Lambda has it (static credentials here; presigning makes no request).
fn s3_storage() -> S3Storage {
    s3().1
}

fn s3() -> (aws_sdk_s3::Client, S3Storage) {
    let credentials = aws_sdk_s3::config::SharedCredentialsProvider::new(aws_sdk_s3::config::Credentials::new(
        "AKIDEXAMPLE",
        "secret",
        Some("session-token".into()),
        None,
        "bench",
    ));
    let config = aws_sdk_s3::config::Builder::new()
        .behavior_version(aws_sdk_s3::config::BehaviorVersion::latest())
        .region(aws_sdk_s3::config::Region::new("eu-west-1"))
        .credentials_provider(credentials.clone())
        .build();
    let client = aws_sdk_s3::Client::from_conf(config);
    (client.clone(), S3Storage::new(client, Some(credentials), "registry-bucket"))
}

fn presigning(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (client, storage) = s3();
    let key = "providers/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.1_linux_amd64.zip";
    c.bench_function("presign/one_archive_url", |b| {
        b.iter(|| runtime.block_on(storage.presign_get(black_box(key), None, Duration::from_secs(300))).unwrap())
    });
    // The SDK's presigner, as the registry presigned before (same client, key and lifetime).
    c.bench_function("presign/one_archive_url_sdk_presigner", |b| {
        b.iter(|| {
            let config = aws_sdk_s3::presigning::PresigningConfig::expires_in(Duration::from_secs(300)).unwrap();
            let request = client.get_object().bucket("registry-bucket").key(black_box(key)).presigned(config);
            runtime.block_on(request).unwrap().uri().len()
        })
    });
}

/// Reads from memory, URLs presigned for S3: what a warm container does for a request whose
/// manifest is cached (its revalidation answered "unchanged"), without the round trip.
struct PresignedMemory {
    memory: MemoryStorage,
    s3: S3Storage,
}

impl Storage for PresignedMemory {
    async fn get(&self, key: &str) -> Result<Option<Object>, Error> {
        self.memory.get(key).await
    }
    async fn get_if_changed(&self, key: &str, etag: &str) -> Result<Revalidated, Error> {
        self.memory.get_if_changed(key, etag).await
    }
    async fn etag(&self, key: &str) -> Result<Option<String>, Error> {
        self.memory.etag(key).await
    }
    async fn put(
        &self,
        key: &str,
        body: bytes::Bytes,
        content_type: &str,
        condition: Precondition,
    ) -> Result<(), Error> {
        self.memory.put(key, body, content_type, condition).await
    }
    async fn put_etag(
        &self,
        key: &str,
        body: bytes::Bytes,
        content_type: &str,
        condition: Precondition,
    ) -> Result<String, Error> {
        self.memory.put_etag(key, body, content_type, condition).await
    }
    async fn put_file(&self, key: &str, path: &Path, content_type: &str, condition: Precondition) -> Result<(), Error> {
        self.memory.put_file(key, path, content_type, condition).await
    }
    async fn delete(&self, key: &str) -> Result<(), Error> {
        self.memory.delete(key).await
    }
    async fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>, Error> {
        self.memory.list(prefix).await
    }
    async fn stream<F>(&self, key: &str, sink: F) -> Result<Option<Stored>, Error>
    where
        F: FnMut(&[u8]) -> Result<(), Error> + Send,
    {
        self.memory.stream(key, sink).await
    }
    async fn presign_get(&self, key: &str, version_id: Option<&str>, ttl: Duration) -> Result<String, Error> {
        self.s3.presign_get(key, version_id, ttl).await
    }
}

fn answers(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let memory = MemoryStorage::new();
    memory.insert("indexed/providers/registry.terraform.io/hashicorp/null/3.2.1.json", provider_version(12));
    let storage = PresignedMemory { memory, s3: s3_storage() };
    let mut config = Config::new("bucket");
    config.access.anonymous_providers = vec!["*".into()];
    let app = App::builder(config, storage).services(&[Service::Mirror]).build().unwrap();
    let request = Request::get("/v1/mirror/registry.terraform.io/hashicorp/null/3.2.1.json");
    let reply = runtime.block_on(app.handle(&request));
    assert_eq!(reply.status, 200, "{}", String::from_utf8_lossy(&reply.body));
    assert_eq!(String::from_utf8_lossy(&reply.body).matches("X-Amz-Signature=").count(), 12);
    c.bench_function("answer/version_json_12_platforms_warm", |b| {
        b.iter(|| runtime.block_on(app.handle(black_box(&request))).body.len())
    });
    // The same request as the Lambda function gets it: API Gateway's event JSON through the
    // adapter, and the response event serialised as the runtime sends it back.
    let mut event: serde_json::Value =
        serde_json::from_str(include_str!("../../functions/registry/tests/events/apigw_v2_module_versions.json"))
            .unwrap();
    let path = "/v1/mirror/registry.terraform.io/hashicorp/null/3.2.1.json";
    event["rawPath"] = path.into();
    event["requestContext"]["http"]["path"] = path.into();
    // Anonymous, as the request above (the recorded event's token is in no store here).
    event["headers"].as_object_mut().unwrap().remove("authorization");
    let respond = |event: serde_json::Value| {
        let event = lambda_runtime::LambdaEvent::new(event, lambda_runtime::Context::default());
        let answer = runtime.block_on(registry::lambda::http::respond(&app, event)).unwrap();
        serde_json::to_vec(&answer).unwrap()
    };
    let answered: serde_json::Value = serde_json::from_slice(&respond(event.clone())).unwrap();
    assert_eq!(answered["statusCode"], 200, "{answered}");
    c.bench_function("answer/version_json_12_platforms_warm_lambda_event", |b| {
        b.iter(|| respond(black_box(event.clone())).len())
    });
}

criterion_group!(benches, routing, access, oidc, manifests, presigning, answers);
criterion_main!(benches);
