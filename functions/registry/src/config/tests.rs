use super::*;
use std::collections::HashMap;

fn load(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
    let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    Config::from_lookup(|k| map.get(k).cloned())
}

#[test]
fn module_upstreams_name_hosts_namespaces_and_addresses() {
    let c = load(&[
        ("REGISTRY_BUCKET", "b"),
        ("REGISTRY_UPSTREAM_MODULES", "registry.terraform.io/terraform-aws-*, up.example=https://127.0.0.1:9443"),
        ("REGISTRY_UPSTREAM_GIT_HOSTS", "github.com=https://127.0.0.1:9444,ghe.corp.example"),
        ("REGISTRY_UPSTREAM_MODULE_MAX_BYTES", "1000"),
        ("REGISTRY_UPSTREAM_MODULE_RETRY_AFTER_SECONDS", "45"),
    ])
    .unwrap();
    let m = &c.upstream_modules;
    assert!(m.allows("registry.terraform.io", "terraform-aws-modules") && !m.allows("registry.terraform.io", "acme"));
    assert!(m.allows("up.example", "acme") && !m.allows("registry.opentofu.org", "acme"));
    assert_eq!(m.endpoints.get("up.example").map(String::as_str), Some("https://127.0.0.1:9443"));
    assert_eq!(m.git_hosts.get("github.com").map(String::as_str), Some("https://127.0.0.1:9444"));
    assert_eq!(m.git_hosts.get("ghe.corp.example").map(String::as_str), Some("https://ghe.corp.example"));
    assert_eq!((m.max_bytes, m.retry_after), (1000, 45));
    for (var, value, says) in [
        ("REGISTRY_UPSTREAM_MODULES", "registry.terraform.io/a/b", "not a namespace glob"),
        ("REGISTRY_UPSTREAM_MODULES", "Registry.io", "not a lower-case host"),
        ("REGISTRY_UPSTREAM_MODULES", "own.example", "its own upstream"),
        ("REGISTRY_UPSTREAM_GIT_HOSTS", "github.com=http://x", "not an https"),
        ("REGISTRY_UPSTREAM_MODULE_MAX_BYTES", "0", "more than 0"),
        ("REGISTRY_UPSTREAM_MODULE_MAX_BYTES", "67108865", "REGISTRY_UPSTREAM_MODULE_MAX_BYTES"),
        ("REGISTRY_UPSTREAM_MODULE_RETRY_AFTER_SECONDS", "0", "more than 0"),
        ("REGISTRY_UPSTREAM_MODULE_RETRY_AFTER_SECONDS", "301", "REGISTRY_UPSTREAM_MODULE_RETRY_AFTER_SECONDS"),
    ] {
        let got = load(&[("REGISTRY_BUCKET", "b"), ("REGISTRY_HOSTNAME", "own.example"), (var, value)]);
        assert!(got.as_ref().is_err_and(|e| e.0.contains(says)), "{var}={value}: {got:?}");
    }
}

#[test]
fn defaults() {
    let c = load(&[("REGISTRY_BUCKET", "b")]).unwrap();
    let upstream = UpstreamSettings { hosts: vec!["registry.terraform.io".into()], ..UpstreamSettings::off() };
    let upstream_modules = ModuleUpstreamSettings {
        allowed: vec![("registry.terraform.io".into(), "*".into()), ("registry.opentofu.org".into(), "*".into())],
        ..ModuleUpstreamSettings::off()
    };
    assert_eq!(c, Config { upstream, upstream_modules, ..Config::new("b") });
    let off =
        load(&[("REGISTRY_BUCKET", "b"), ("REGISTRY_UPSTREAM_HOSTS", " "), ("REGISTRY_UPSTREAM_MODULES", "")]).unwrap();
    assert_eq!(off, Config::new("b"), "empty upstream lists turn both pull-throughs off");
    assert_eq!(c.presign_ttl, Duration::from_secs(300));
}

#[test]
fn errors_name_the_variable() {
    let cases: &[(&[(&str, &str)], &str)] = &[
        (&[], "REGISTRY_BUCKET"),
        (&[("REGISTRY_BUCKET", " ")], "REGISTRY_BUCKET"),
        (&[("REGISTRY_BUCKET", "b"), ("REGISTRY_PRESIGN_TTL_SECONDS", "abc")], "REGISTRY_PRESIGN_TTL_SECONDS"),
        (&[("REGISTRY_BUCKET", "b"), ("REGISTRY_PRESIGN_TTL_SECONDS", "0")], "REGISTRY_PRESIGN_TTL_SECONDS"),
        (&[("REGISTRY_BUCKET", "b"), ("REGISTRY_PRESIGN_TTL_SECONDS", "86400")], "REGISTRY_PRESIGN_TTL_SECONDS"),
        (&[("REGISTRY_BUCKET", "b"), ("REGISTRY_MODULES_BASE_PATH", "v1/modules")], "REGISTRY_MODULES_BASE_PATH"),
        (&[("REGISTRY_BUCKET", "b"), ("REGISTRY_MIRROR_BASE_PATH", "/a/../b/")], "REGISTRY_MIRROR_BASE_PATH"),
        (&[("REGISTRY_BUCKET", "b"), ("REGISTRY_MIRROR_BASE_PATH", "/v1/modules/x/")], "must not overlap"),
        (&[("REGISTRY_BUCKET", "b"), ("REGISTRY_MODULES_BASE_PATH", "/ui/x/")], "must not overlap /ui/"),
        (&[("REGISTRY_BUCKET", "b"), ("REGISTRY_MIRROR_BASE_PATH", "/v2/m/")], "must not overlap /v2/"),
        (&[("REGISTRY_BUCKET", "b"), ("REGISTRY_MIRROR_BASE_PATH", "/mcp/")], "must not overlap /mcp"),
        (&[("REGISTRY_BUCKET", "b"), ("REGISTRY_PROVIDERS_BASE_PATH", "/.well-known/")], "must not overlap"),
        (&[("REGISTRY_BUCKET", "b"), ("REGISTRY_TOKENS_CACHE_SECONDS", "3600")], "REGISTRY_TOKENS_CACHE_SECONDS"),
        (&[("REGISTRY_BUCKET", "b"), ("REGISTRY_MANIFEST_CACHE_SECONDS", "61")], "REGISTRY_MANIFEST_CACHE_SECONDS"),
        (&[("REGISTRY_BUCKET", "b"), ("REGISTRY_MANIFEST_CACHE_BYTES", "-1")], "REGISTRY_MANIFEST_CACHE_BYTES"),
        (&[("REGISTRY_BUCKET", "b"), ("REGISTRY_ANONYMOUS_MODULES", "acme, bad glob")], "REGISTRY_ANONYMOUS_MODULES"),
        (&[("REGISTRY_BUCKET", "b"), ("REGISTRY_MAX_PROVIDER_ZIP_BYTES", "1GB")], "REGISTRY_MAX_PROVIDER_ZIP_BYTES"),
        (&[("REGISTRY_BUCKET", "b"), ("REGISTRY_MAX_UNPACKED_BYTES", "0")], "REGISTRY_MAX_UNPACKED_BYTES"),
        (&[("REGISTRY_BUCKET", "b"), ("REGISTRY_MAX_ARCHIVE_ENTRIES", "2000000")], "REGISTRY_MAX_ARCHIVE_ENTRIES"),
        (&[("REGISTRY_BUCKET", "b"), ("REGISTRY_MAX_ARCHIVE_ENTRIES", "0")], "REGISTRY_MAX_ARCHIVE_ENTRIES"),
        (&[("REGISTRY_BUCKET", "b"), ("REGISTRY_S3_FORCE_PATH_STYLE", "yes")], "REGISTRY_S3_FORCE_PATH_STYLE"),
        (
            &[("REGISTRY_BUCKET", "b"), ("REGISTRY_UPSTREAM_HOSTS", "registry.terraform.io,https://x.y")],
            "REGISTRY_UPSTREAM_HOSTS",
        ),
        (&[("REGISTRY_BUCKET", "b"), ("REGISTRY_UPSTREAM_HOSTS", "up.example=http://127.0.0.1:1")], "https://ADDRESS"),
        (&[("REGISTRY_BUCKET", "b"), ("REGISTRY_UPSTREAM_HOSTS", "up.example=https://a/b")], "https://ADDRESS"),
        (
            &[
                ("REGISTRY_BUCKET", "b"),
                ("REGISTRY_HOSTNAME", "r.example.com"),
                ("REGISTRY_UPSTREAM_HOSTS", "r.example.com"),
            ],
            "its own upstream",
        ),
        (&[("REGISTRY_BUCKET", "b"), ("REGISTRY_UPSTREAM_TIMEOUT_SECONDS", "0")], "REGISTRY_UPSTREAM_TIMEOUT_SECONDS"),
        (&[("REGISTRY_BUCKET", "b"), ("REGISTRY_UPSTREAM_TIMEOUT_SECONDS", "30")], "REGISTRY_UPSTREAM_TIMEOUT_SECONDS"),
        (
            &[("REGISTRY_BUCKET", "b"), ("REGISTRY_UPSTREAM_VERSIONS_TTL_SECONDS", "ten")],
            "REGISTRY_UPSTREAM_VERSIONS_TTL_SECONDS",
        ),
        (&[("REGISTRY_BUCKET", "b"), ("REGISTRY_OIDC_ISSUERS", "[{}]")], "REGISTRY_OIDC_ISSUERS"),
    ];
    for (vars, needle) in cases {
        let err = load(vars).unwrap_err();
        assert!(err.0.contains(needle), "{vars:?}: {err}");
    }
}

#[test]
fn custom_values() {
    let c = load(&[
        ("REGISTRY_BUCKET", "b"),
        ("REGISTRY_PRESIGN_TTL_SECONDS", "60"),
        ("REGISTRY_MODULES_BASE_PATH", "/modules/"),
        ("REGISTRY_MIRROR_BASE_PATH", "/providers/"),
    ])
    .unwrap();
    assert_eq!(c.presign_ttl, Duration::from_secs(60));
    assert_eq!(c.paths.modules, "/modules/");
    assert_eq!(c.paths.mirror, "/providers/");
    let c = load(&[
        ("REGISTRY_BUCKET", "b"),
        ("REGISTRY_UPSTREAM_HOSTS", "registry.terraform.io, 127.0.0.1:8443, up.example=https://127.0.0.1:9443/"),
        ("REGISTRY_UPSTREAM_VERSIONS_TTL_SECONDS", "0"),
        ("REGISTRY_UPSTREAM_CA_FILE", "/tmp/ca.pem"),
    ])
    .unwrap();
    assert_eq!(c.upstream.hosts, ["registry.terraform.io", "127.0.0.1:8443", "up.example"]);
    assert_eq!(c.upstream.endpoints.get("up.example").map(String::as_str), Some("https://127.0.0.1:9443"));
    assert_eq!(c.upstream.versions_ttl, Duration::ZERO);
    assert_eq!(c.upstream.ca_file.as_deref(), Some("/tmp/ca.pem"));
    let issuers = r#"[{"issuer": "https://token.actions.githubusercontent.com", "audience": "https://r.example.com",
                       "rules": [{"claim": "repository_owner", "equals": "acme", "modules": ["acme"]}]}]"#;
    let c =
        load(&[("REGISTRY_BUCKET", "b"), ("REGISTRY_OIDC_ISSUERS", issuers), ("REGISTRY_OIDC_CA_FILE", " ")]).unwrap();
    assert_eq!(c.oidc_issuers.len(), 1);
    assert_eq!(c.oidc_ca_file, None);
    assert_eq!(load(&[("REGISTRY_BUCKET", "b"), ("REGISTRY_OIDC_ISSUERS", " ")]).unwrap().oidc_issuers, []);
}
