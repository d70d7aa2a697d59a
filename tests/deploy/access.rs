//! The trust boundary as applied: for every role and managed policy, which keys of the layout
//! it may read, write and delete, from its policy documents as deployed (evaluated by moto's
//! IAM evaluator in read_back.py), against what `layout` says each principal owns.

use std::collections::{BTreeMap, BTreeSet};

use registry::address::{ModuleAddress, ProviderAddress, UpstreamModule};
use registry::layout::{self, Platform, ReleaseFile};
use serde_json::{Value, json};

use super::NAME;

const GET: &str = "s3:GetObject";
const PUT: &str = "s3:PutObject";
const DELETE: &str = "s3:DeleteObject";

/// The publisher's and key admin's own namespace, and provider host (infra/tests/deploy/main.tf).
const TEAM: &str = "platform";
const TEAM_HOST: &str = "registry.example.com";
/// The upstream host the root pulls through.
const UPSTREAM_HOST: &str = "registry.terraform.io";

/// One key of each kind the layout has, by a name for the messages: the registry's own
/// hostname (providers.v1) is known only after the apply.
fn keys(hostname: &str) -> BTreeMap<&'static str, String> {
    let v = registry::address::parse_version("1.0.0").unwrap();
    let module = |ns: &str| ModuleAddress::parse(ns, "vpc", "aws").unwrap();
    let provider = |host: &str, ns: &str, t: &str| ProviderAddress::parse(host, ns, t).unwrap();
    let linux = Platform::parse("linux", "amd64").unwrap();
    let zip =
        |p: &ProviderAddress| format!("{}{}", layout::provider_prefix(p), layout::provider_archive_name(p, &v, &linux));
    let release = |p: &ProviderAddress, file| {
        format!("{}{}", layout::provider_prefix(p), layout::provider_release_file_name(p, &v, file))
    };
    let own = provider(TEAM_HOST, TEAM, "thing");
    let served = provider(hostname, TEAM, "thing");
    let upstream = provider(UPSTREAM_HOST, "hashicorp", "null");
    let own_module_archive = format!("{}1.0.0.tar.gz", layout::module_prefix(&module(TEAM)));
    let public = UpstreamModule::parse(UPSTREAM_HOST, "terraform-aws-modules", "vpc", "aws").unwrap();
    BTreeMap::from([
        ("own module archive", own_module_archive.clone()),
        ("other module archive", format!("{}1.0.0.zip", layout::module_prefix(&module("other")))),
        ("own module deprecation", layout::module_deprecation(&module(TEAM), &v)),
        ("own module bundle", layout::module_bundle(&module(TEAM), &v, "tar.gz")),
        ("sigstore trust root", format!("{}github.json", layout::SIGSTORE_TRUST_ROOTS_PREFIX)),
        ("own provider zip", zip(&own)),
        ("own provider shasums", release(&own, ReleaseFile::Shasums)),
        ("other provider zip", zip(&provider(TEAM_HOST, "other", "thing"))),
        ("served provider zip", zip(&served)),
        ("served provider signature", release(&served, ReleaseFile::Signature)),
        ("upstream copy", zip(&upstream)),
        ("own signing key", format!("{}release.asc", layout::signing_keys_prefix(&own))),
        (
            "other signing key",
            format!("{}release.asc", layout::signing_keys_prefix(&provider(TEAM_HOST, "other", "x"))),
        ),
        ("module manifest", layout::module_manifest(&module(TEAM))),
        ("provider index", layout::provider_index(&own)),
        ("served provider index", layout::provider_index(&served)),
        ("catalog index", layout::CATALOG_INDEX.to_string()),
        ("catalog shard", layout::catalog_shard(TEAM)),
        ("catalog providers", layout::CATALOG_PROVIDERS.to_string()),
        ("catalog upstream modules", layout::CATALOG_UPSTREAM_MODULES.to_string()),
        ("legacy catalog", layout::LEGACY_CATALOG.to_string()),
        ("catalog dirty mark", layout::catalog_dirty(TEAM)),
        ("publish log entry", layout::publish_log_entry(&format!("modules/{TEAM}"), 1)),
        ("legacy publish log entry", layout::publish_log_entry("", 1)),
        ("legacy publish log head", layout::PUBLISH_LOG_HEAD.to_string()),
        ("publish log head", layout::publish_log_head(&format!("modules/{TEAM}"))),
        ("oci manifest", layout::oci_manifest(&own, &format!("sha256:{}", "ab".repeat(32)))),
        ("own rejection", layout::rejection(&own_module_archive)),
        ("token store", layout::TOKENS.to_string()),
        ("upstream versions", layout::upstream_versions(&upstream)),
        ("upstream pull", layout::upstream_pull(&upstream, &v)),
        ("upstream module index", layout::upstream_module_index(&public)),
        ("upstream module pin", layout::upstream_module_pin(&public, &v)),
        ("upstream module archive", layout::upstream_module_archive(&public, &v, &"ab".repeat(32), "tar.gz")),
        ("upstream module refusal", layout::upstream_module_refusal(&public, &v, &"cd".repeat(32))),
        ("upstream module pull", layout::upstream_module_pull(&public, &v)),
        ("upstream module pull failure", layout::upstream_module_pull_failure(&public, &v)),
        ("upstream module pins", layout::upstream_module_pins(&public)),
        ("module usage", layout::module_usage(&module(TEAM))),
        ("namespace usage", layout::namespace_usage(TEAM)),
        ("provider usage", layout::provider_usage(&own)),
        ("upstream module usage", layout::upstream_module_usage(&public)),
    ])
}

/// What read_back.py asks each principal's policies about.
pub fn probes(hostname: &str) -> Value {
    json!({"actions": [GET, PUT, DELETE], "keys": keys(hostname).into_values().collect::<Vec<_>>()})
}

/// (principal, action, the keys it may act on): everything else is denied. Read from the
/// layout's table of who writes what (`layout`'s module comment and its *_PREFIXES), and from
/// what each read function serves (infra/iam.tf says why each reads what it reads).
fn expected() -> Vec<(String, &'static str, Vec<&'static str>)> {
    let role = |f: &str| format!("role/{NAME}-{f}");
    let indexer_reads = vec![
        "own module archive",
        "own module deprecation",
        "own module bundle",
        "sigstore trust root",
        "other module archive",
        "own provider zip",
        "own provider shasums",
        "other provider zip",
        "served provider zip",
        "served provider signature",
        "upstream copy",
        "own signing key",
        "other signing key",
        "upstream module pin",
        "upstream module refusal",
        // The chain of before: audited, never written (`ChainOfBeforeIsClosed`).
        "legacy publish log entry",
        "legacy publish log head",
    ];
    // What the indexer derives (under indexed/ and rejections/): it reads and writes all of it.
    let indexer_writes = vec![
        "module manifest",
        "provider index",
        "served provider index",
        "catalog index",
        "catalog shard",
        "catalog providers",
        "catalog upstream modules",
        "legacy catalog",
        "catalog dirty mark",
        "publish log head",
        "publish log entry",
        "oci manifest",
        "own rejection",
        "upstream module pins",
    ];
    let indexer_reads = [indexer_reads, indexer_writes.clone()].concat();
    // The publish log only grows (`PublishLogOnlyGrows`).
    let indexer_deletes: Vec<&str> =
        indexer_writes.iter().copied().filter(|w| !["publish log head", "publish log entry"].contains(w)).collect();
    // Everything the modules pull-through keeps: the modules function and the puller (which
    // copies the archives too large to copy while the CLI waits) read and write all of it.
    let upstream_modules = vec![
        "upstream module index",
        "upstream module pin",
        "upstream module archive",
        "upstream module refusal",
        "upstream module pull",
        "upstream module pull failure",
    ];
    let publisher_writes = vec![
        "own module archive",
        "own module deprecation",
        "own module bundle",
        "own provider zip",
        "own provider shasums",
    ];
    // What it wrote, why an upload was rejected, and (make publish-provider checks the
    // signature before it uploads) its namespace's keys.
    let publisher_reads = [publisher_writes.clone(), vec!["own rejection", "own signing key"]].concat();
    vec![
        (role("discovery"), GET, vec![]),
        (
            role("modules"),
            GET,
            [
                vec!["own module archive", "other module archive", "module manifest", "token store"],
                upstream_modules.clone(),
            ]
            .concat(),
        ),
        (role("modules"), PUT, upstream_modules.clone()),
        (
            role("mirror"),
            GET,
            vec![
                "own provider zip",
                "other provider zip",
                "served provider zip",
                "upstream copy",
                "provider index",
                "served provider index",
                "token store",
                "upstream versions",
                "upstream pull",
            ],
        ),
        (role("mirror"), PUT, vec!["upstream versions", "upstream pull"]),
        (
            role("providers"),
            GET,
            vec!["served provider zip", "served provider signature", "served provider index", "token store"],
        ),
        (
            role("web"),
            GET,
            vec![
                "module manifest",
                "provider index",
                "served provider index",
                "catalog index",
                "catalog shard",
                "catalog providers",
                "catalog upstream modules",
                "token store",
                "upstream module pins",
                "module usage",
                "namespace usage",
                "provider usage",
            ],
        ),
        // The MCP server reads what the list, details and provider pages read: the namespaces'
        // totals, never a module's own counts (which name callers: denied), no archive.
        (
            role("mcp"),
            GET,
            vec![
                "module manifest",
                "provider index",
                "served provider index",
                "catalog index",
                "catalog shard",
                "catalog providers",
                "token store",
                "namespace usage",
            ],
        ),
        (
            role("oci"),
            GET,
            vec![
                "other module archive",
                "module manifest",
                "own provider zip",
                "other provider zip",
                "served provider zip",
                "upstream copy",
                "provider index",
                "served provider index",
                "oci manifest",
                "token store",
            ],
        ),
        (role("indexer"), GET, indexer_reads),
        (role("indexer"), PUT, indexer_writes.clone()),
        (role("indexer"), DELETE, indexer_deletes),
        (role("puller"), GET, [vec!["upstream pull"], upstream_modules.clone()].concat()),
        // Download counts: the usage function alone reads and writes them all.
        (role("usage"), GET, vec!["module usage", "namespace usage", "provider usage", "upstream module usage"]),
        (role("usage"), PUT, vec!["module usage", "namespace usage", "provider usage", "upstream module usage"]),
        (role("puller"), PUT, [vec!["upstream copy"], upstream_modules].concat()),
        (format!("policy/{NAME}-publish-{TEAM}"), GET, publisher_reads.clone()),
        (format!("policy/{NAME}-publish-{TEAM}"), PUT, publisher_writes.clone()),
        (format!("policy/{NAME}-publish-{TEAM}"), DELETE, publisher_writes.clone()),
        // The publisher's CI role (its github and gitlab identities) holds exactly its policy.
        (role(&format!("publish-{TEAM}")), GET, publisher_reads),
        (role(&format!("publish-{TEAM}")), PUT, publisher_writes.clone()),
        (role(&format!("publish-{TEAM}")), DELETE, publisher_writes),
        // A key admin given trust_roots: its namespace's keys and the Sigstore trust roots.
        (format!("policy/{NAME}-signing-keys-security"), GET, vec!["own signing key", "sigstore trust root"]),
        (format!("policy/{NAME}-signing-keys-security"), PUT, vec!["own signing key", "sigstore trust root"]),
        (format!("policy/{NAME}-signing-keys-security"), DELETE, vec!["own signing key", "sigstore trust root"]),
    ]
}

/// The layout's writers: whoever may write a key must be the one its prefix belongs to.
fn layout_allows_write(principal: &str, key: &str) -> bool {
    let under = |prefixes: &[&str]| prefixes.iter().any(|p| key.starts_with(p));
    match principal.rsplit('-').next().unwrap_or_default() {
        "indexer" => under(&layout::INDEXER_PREFIXES),
        "mirror" => under(&[layout::UPSTREAM_PREFIX]),
        "modules" => under(&[layout::UPSTREAM_MODULES_PREFIX]),
        "usage" => under(&[layout::USAGE_PREFIX]),
        "puller" => {
            key.starts_with(&format!("{}{UPSTREAM_HOST}/", layout::PROVIDERS_PREFIX))
                || key.starts_with(layout::UPSTREAM_MODULES_PREFIX)
        }
        _ if principal.contains("-publish-") => under(&layout::PUBLISHER_PREFIXES),
        _ if principal.contains("-signing-keys-") => under(&layout::KEY_ADMIN_PREFIXES),
        _ => false,
    }
}

pub fn each_principal_reaches_what_the_layout_says(deployed: &Value, hostname: &str) {
    let keys = keys(hostname);
    let name_of: BTreeMap<&str, &str> = keys.iter().map(|(name, key)| (key.as_str(), *name)).collect();
    let principals = deployed["principals"].as_object().expect("principals");
    let mut applied: BTreeSet<(String, String, String)> = BTreeSet::new();
    for (principal, found) in principals {
        let attached: Vec<&str> =
            found.get("attached").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
        let ci_role = format!("role/{NAME}-publish-{TEAM}");
        let may_attach = format!("{NAME}-publish-{TEAM}");
        let wanted: &[&str] = if *principal == ci_role { &[&may_attach] } else { &[] };
        assert_eq!(attached, wanted, "{principal}: its attached policies");
        for pair in found["allows"].as_array().expect("allows") {
            let (action, key) = (pair[0].as_str().unwrap(), pair[1].as_str().unwrap());
            if action != GET {
                assert!(
                    layout_allows_write(principal, key),
                    "{principal} may {action} {key}, outside its layout prefixes"
                );
            }
            applied.insert((principal.clone(), action.to_string(), name_of[key].to_string()));
        }
    }
    let wanted: BTreeSet<(String, String, String)> = expected()
        .into_iter()
        .flat_map(|(p, action, names)| names.into_iter().map(move |n| (p.clone(), action.to_string(), n.to_string())))
        .collect();
    let extra: Vec<_> = applied.difference(&wanted).collect();
    let missing: Vec<_> = wanted.difference(&applied).collect();
    assert!(
        extra.is_empty() && missing.is_empty(),
        "IAM as applied: allowed beyond the layout {extra:#?}; denied but needed {missing:#?}"
    );
    let expected_principals: BTreeSet<String> = expected().into_iter().map(|(p, ..)| p).collect();
    let applied_principals: BTreeSet<String> = principals.keys().cloned().collect();
    assert_eq!(applied_principals, expected_principals, "roles and managed policies as applied");
    // Nobody but the indexer writes what the read functions serve, and nobody the token store.
    for (principal, action, name) in &applied {
        let key = &keys[name.as_str()];
        if action != GET && key.starts_with(layout::INDEXED_PREFIX) {
            assert!(principal.ends_with("-indexer"), "{principal} may {action} {key}");
        }
        assert!(!(action != GET && key == layout::TOKENS), "{principal} may {action} the token store");
    }
    list_prefixes_are_what_each_reads(principals);
}

/// s3:ListBucket is the one conditioned action (its s3:prefix values): each principal lists
/// only under what it owns or reads.
fn list_prefixes_are_what_each_reads(principals: &serde_json::Map<String, Value>) {
    let listed = |p: &str| -> Vec<String> {
        principals[p]["list_prefixes"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect()
    };
    let mut indexer: Vec<String> = layout::PUBLISHER_PREFIXES
        .iter()
        .chain(&layout::KEY_ADMIN_PREFIXES)
        .chain(&layout::INDEXER_PREFIXES)
        .map(|p| format!("{p}*"))
        .collect();
    indexer.sort();
    assert_eq!(listed(&format!("role/{NAME}-indexer")), indexer);
    assert_eq!(listed(&format!("role/{NAME}-puller")), [format!("{}{UPSTREAM_HOST}/*", layout::PROVIDERS_PREFIX)]);
    assert_eq!(listed(&format!("role/{NAME}-usage")), [format!("{}*", layout::USAGE_PREFIX)]);
    assert_eq!(
        listed(&format!("policy/{NAME}-signing-keys-security")),
        [
            format!("{}{TEAM_HOST}/{TEAM}/*", layout::SIGNING_KEYS_PREFIX),
            format!("{}*", layout::SIGSTORE_TRUST_ROOTS_PREFIX)
        ]
    );
    let publisher = listed(&format!("policy/{NAME}-publish-{TEAM}"));
    assert_eq!(publisher.len(), 5, "{publisher:?}");
    let keys = format!("{}{TEAM_HOST}/{TEAM}/*", layout::SIGNING_KEYS_PREFIX);
    assert!(publisher.contains(&keys), "the publisher lists its namespace's keys: {publisher:?}");
    for prefix in publisher.into_iter().filter(|p| *p != keys) {
        let upload = prefix.strip_prefix(layout::REJECTIONS_PREFIX).unwrap_or(&prefix);
        assert!(layout_allows_write(&format!("{NAME}-publish-{TEAM}"), upload), "publisher lists {prefix}");
    }
    for f in ["discovery", "modules", "mirror", "providers", "web", "oci", "mcp"] {
        assert!(listed(&format!("role/{NAME}-{f}")).is_empty(), "{f} lists nothing: a missing key is a 403");
    }
}
