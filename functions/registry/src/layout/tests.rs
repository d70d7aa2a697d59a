use super::*;

fn module() -> ModuleAddress {
    ModuleAddress::parse("acme", "vpc", "aws").unwrap()
}
fn provider() -> ProviderAddress {
    ProviderAddress::parse("registry.terraform.io", "hashicorp", "null").unwrap()
}
fn v(s: &str) -> semver::Version {
    semver::Version::parse(s).unwrap()
}

#[test]
fn keys() {
    assert_eq!(module_manifest(&module()), "indexed/modules/acme/vpc/aws/manifest.json");
    assert_eq!(module_prefix(&module()), "modules/acme/vpc/aws/");
    assert_eq!(provider_index(&provider()), "indexed/providers/registry.terraform.io/hashicorp/null/index.json");
    assert_eq!(
        provider_version(&provider(), &v("3.2.1")),
        "indexed/providers/registry.terraform.io/hashicorp/null/3.2.1.json"
    );
    let linux = Platform { os: "linux".into(), arch: "amd64".into() };
    assert_eq!(
        provider_archive_name(&provider(), &v("3.2.1"), &linux),
        "terraform-provider-null_3.2.1_linux_amd64.zip"
    );
}

// A table of keys and what they are (long on purpose): one case per line.
#[test]
fn classify_table() {
    let linux = Platform { os: "linux".into(), arch: "amd64".into() };
    let cases: Vec<(&str, Option<ObjectKind>)> = vec![
        (
            "modules/acme/vpc/aws/1.2.0.tar.gz",
            Some(ObjectKind::ModuleArchive { module: module(), version: v("1.2.0"), extension: "tar.gz" }),
        ),
        (
            "modules/acme/vpc/aws/1.2.0-rc.1.tgz",
            Some(ObjectKind::ModuleArchive { module: module(), version: v("1.2.0-rc.1"), extension: "tgz" }),
        ),
        (
            "modules/acme/vpc/aws/2.0.0.zip",
            Some(ObjectKind::ModuleArchive { module: module(), version: v("2.0.0"), extension: "zip" }),
        ),
        ("indexed/modules/acme/vpc/aws/manifest.json", Some(ObjectKind::ModuleManifest(module()))),
        // A manifest where publishers write is not one: it is never read.
        ("modules/acme/vpc/aws/manifest.json", Some(ObjectKind::Unrecognised(Owner::Module(module())))),
        ("indexed/modules/acme/vpc/aws/1.0.0.tar.gz", None),
        ("indexed/modules/acme/vpc/aws/other.json", None),
        ("modules/acme/vpc/aws/1.2.gz", Some(ObjectKind::Unrecognised(Owner::Module(module())))),
        ("modules/acme/vpc/aws/readme.md", Some(ObjectKind::Unrecognised(Owner::Module(module())))),
        ("modules/acme/vpc/aws/x/1.0.0.zip", None),
        ("modules/acme/vpc/1.0.0.zip", None),
        ("modules/../vpc/aws/1.0.0.zip", None),
        ("other/acme/vpc/aws/1.0.0.zip", None),
        (
            "providers/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.1_linux_amd64.zip",
            Some(ObjectKind::ProviderArchive { provider: provider(), version: v("3.2.1"), platform: linux }),
        ),
        (
            "indexed/providers/registry.terraform.io/hashicorp/null/index.json",
            Some(ObjectKind::ProviderIndex(provider())),
        ),
        (
            "indexed/providers/registry.terraform.io/hashicorp/null/3.2.1.json",
            Some(ObjectKind::ProviderVersion { provider: provider(), version: v("3.2.1") }),
        ),
        // What `terraform providers mirror` writes beside the zips: accepted, never read.
        ("providers/registry.terraform.io/hashicorp/null/index.json", Some(ObjectKind::ProviderMirrorFile(provider()))),
        ("providers/registry.terraform.io/hashicorp/null/3.2.1.json", Some(ObjectKind::ProviderMirrorFile(provider()))),
        ("indexed/providers/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.1_linux_amd64.zip", None),
        (
            "providers/registry.terraform.io/hashicorp/null/terraform-provider-random_3.2.1_linux_amd64.zip",
            Some(ObjectKind::Unrecognised(Owner::Provider(provider()))),
        ),
        (
            "providers/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2_linux_amd64.zip",
            Some(ObjectKind::Unrecognised(Owner::Provider(provider()))),
        ),
        (
            "providers/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.1_SHA256SUMS",
            Some(ObjectKind::ProviderReleaseFile {
                provider: provider(),
                version: v("3.2.1"),
                file: ReleaseFile::Shasums,
            }),
        ),
        (
            "providers/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.1-rc.1_SHA256SUMS.sig",
            Some(ObjectKind::ProviderReleaseFile {
                provider: provider(),
                version: v("3.2.1-rc.1"),
                file: ReleaseFile::Signature,
            }),
        ),
        (
            "providers/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.1_manifest.json",
            Some(ObjectKind::ProviderReleaseFile {
                provider: provider(),
                version: v("3.2.1"),
                file: ReleaseFile::Manifest,
            }),
        ),
        (
            "providers/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2_SHA256SUMS",
            Some(ObjectKind::Unrecognised(Owner::Provider(provider()))),
        ),
        ("signing-keys/registry.terraform.io/hashicorp/key.asc", None),
        ("providers/localhost/hashicorp/null/index.json", None),
        ("indexed/access/tokens.json", None),
        ("access/tokens.json", None),
    ];
    for (key, want) in cases {
        assert_eq!(classify(key), want, "{key}");
    }
}

#[test]
fn presigning_names_only_the_requested_archive() {
    let (m, p) = (module(), provider());
    let wanted_module = Wanted::ModuleArchive { module: &m, version: &v("1.0.0") };
    let wanted_zip = Wanted::ProviderArchive { provider: &p, version: &v("3.2.1"), platform: "linux_amd64" };
    let zip = "providers/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.1_linux_amd64.zip";
    assert_eq!(
        archive_key("modules/acme/vpc/aws/1.0.0.tar.gz", wanted_module).unwrap(),
        "modules/acme/vpc/aws/1.0.0.tar.gz"
    );
    assert_eq!(archive_key("modules/acme/vpc/aws/1.0.0.zip", wanted_module).unwrap(), "modules/acme/vpc/aws/1.0.0.zip");
    assert_eq!(archive_key(zip, wanted_zip).unwrap(), zip);
    let refused = [
        ("access/tokens.json", wanted_module),
        ("modules/acme/vpc/aws/1.0.1.tar.gz", wanted_module),
        ("modules/acme/vpc/aws/1.0.0+b1.tar.gz", wanted_module),
        ("modules/other/vpc/aws/1.0.0.tar.gz", wanted_module),
        ("indexed/modules/acme/vpc/aws/manifest.json", wanted_module),
        ("rejections/modules/acme/vpc/aws/1.0.0.tar.gz.json", wanted_module),
        ("modules/acme/vpc/aws/../../other/vpc/aws/1.0.0.tar.gz", wanted_module),
        (zip, wanted_module),
        ("modules/acme/vpc/aws/1.0.0.tar.gz", wanted_zip),
        ("providers/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.1_darwin_arm64.zip", wanted_zip),
        ("providers/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.0_linux_amd64.zip", wanted_zip),
        ("providers/registry.terraform.io/hashicorp/null/index.json", wanted_zip),
        ("providers/example.com/hashicorp/null/terraform-provider-null_3.2.1_linux_amd64.zip", wanted_zip),
        ("providers/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.1_SHA256SUMS", wanted_zip),
    ];
    let sums = "providers/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.1_SHA256SUMS";
    let version = v("3.2.1");
    let wanted = |file| Wanted::ProviderReleaseFile { provider: &p, version: &version, file };
    assert_eq!(archive_key(sums, wanted(ReleaseFile::Shasums)).unwrap(), sums);
    let sig = format!("{sums}.sig");
    assert_eq!(archive_key(&sig, wanted(ReleaseFile::Signature)).unwrap(), sig);
    assert!(archive_key(&sig, wanted(ReleaseFile::Shasums)).is_err());
    assert!(archive_key(sums, wanted(ReleaseFile::Signature)).is_err());
    assert!(archive_key(zip, wanted(ReleaseFile::Shasums)).is_err());
    let manifest = sums.replace("_SHA256SUMS", "_manifest.json");
    assert!(archive_key(&manifest, wanted(ReleaseFile::Manifest)).is_err(), "never handed out");
    for (key, wanted) in refused {
        assert_eq!(archive_key(key, wanted).unwrap_err().status().as_u16(), 500, "{key}");
    }
}

#[test]
fn the_indexer_never_notifies_itself() {
    // Every filter is under a publisher prefix (or the modules pull-through's, whose pins and
    // refusals the indexer logs), and no indexer prefix is under a filter's.
    for (prefix, _) in NOTIFICATIONS {
        assert!(PUBLISHER_PREFIXES.contains(&prefix) || prefix == UPSTREAM_MODULES_PREFIX, "{prefix}");
        assert!(INDEXER_PREFIXES.iter().all(|i| !i.starts_with(prefix) && !prefix.starts_with(i)), "{prefix}");
    }
    let written = [
        module_manifest(&module()),
        provider_index(&provider()),
        provider_version(&provider(), &v("1.0.0")),
        rejection("modules/acme/vpc/aws/1.0.0.tar.gz"),
        rejection("providers/registry.terraform.io/hashicorp/null/terraform-provider-null_1.0.0_linux_amd64.zip"),
    ];
    for key in written {
        assert!(!notifies(&key), "{key}");
    }
    assert!(notifies("modules/acme/vpc/aws/1.0.0.tgz"));
    let public = crate::address::UpstreamModule::parse("registry.terraform.io", "o", "r", "aws").unwrap();
    let sha = "ab".repeat(32);
    assert!(notifies(&upstream_module_pin(&public, &v("1.0.0"))));
    assert!(notifies(&upstream_module_refusal(&public, &v("1.0.0"), &sha)));
    assert!(!notifies(&upstream_module_index(&public)), "a version list changes nothing logged");
    assert!(!notifies(&upstream_module_archive(&public, &v("1.0.0"), &sha, "tar.gz")), "the pin follows it");
    assert_eq!(
        upstream_module_record(&upstream_module_pin(&public, &v("1.0.0+b.1"))),
        Some(UpstreamModuleRecord::Pin(public.clone(), v("1.0.0+b.1")))
    );
    assert_eq!(
        upstream_module_record(&upstream_module_refusal(&public, &v("1.0.0"), &sha)),
        Some(UpstreamModuleRecord::Refusal(public.clone(), v("1.0.0"), sha.clone()))
    );
    for other in
        ["upstream-modules/registry.terraform.io/o/r/aws/v1.0.0.pin.json", "upstream-modules/h/o/r/aws/1.0.0.pin.json"]
    {
        assert_eq!(upstream_module_record(other), None, "{other}");
    }
    assert!(notifies("providers/h.io/n/t/terraform-provider-t_1.0.0_linux_amd64.zip"));
    assert!(!notifies("providers/h.io/n/t/index.json"), "publisher JSON changes nothing served");
    for file in [ReleaseFile::Shasums, ReleaseFile::Signature, ReleaseFile::Manifest] {
        let p = ProviderAddress::parse("h.io", "n", "t").unwrap();
        let key = format!("{}{}", provider_prefix(&p), provider_release_file_name(&p, &v("1.0.0"), file));
        assert!(notifies(&key), "{key}");
        assert!(matches!(classify(&key), Some(ObjectKind::ProviderReleaseFile { file: f, .. }) if f == file));
    }
    assert!(!notifies("signing-keys/h.io/n/key.asc"), "keys are read at each release's check");
    assert!(!notifies("modules/acme/vpc/aws/manifest.json"));
}

#[test]
fn archive_names_with_prerelease_and_build() {
    let p = provider();
    let (version, platform) =
        parse_provider_archive_name(&p, "terraform-provider-null_1.0.0-beta.2+b7_darwin_arm64.zip").unwrap();
    assert_eq!(version, v("1.0.0-beta.2+b7"));
    assert_eq!(platform.key(), "darwin_arm64");
    assert!(parse_provider_archive_name(&p, "terraform-provider-null_1.0.0_linux.zip").is_none());
    assert!(parse_provider_archive_name(&p, "terraform-provider-null_1.0.0_linux_AMD64.zip").is_none());
}

#[test]
fn a_module_pull_record_invokes_the_puller_and_its_failure_invokes_nothing() {
    let public = crate::address::UpstreamModule::parse("registry.terraform.io", "o", "r", "aws").unwrap();
    let pull = upstream_module_pull(&public, &v("1.0.0+b.1"));
    assert_eq!(pull, "upstream-modules/registry.terraform.io/o/r/aws/1.0.0+b.1.pull.json");
    assert!(notifies_puller(&pull) && !notifies(&pull));
    assert_eq!(upstream_module_pull_release(&pull), Some((public.clone(), v("1.0.0+b.1"))));
    let failure = upstream_module_pull_failure(&public, &v("1.0.0"));
    assert!(!notifies_puller(&failure) && !notifies(&failure), "{failure}");
    assert!(!notifies_puller(&upstream_module_pin(&public, &v("1.0.0"))));
    for other in [
        "upstream-modules/registry.terraform.io/o/r/aws/v1.0.0.pull.json",
        "upstream-modules/registry.terraform.io/o/r/aws/1.0.0/x.pull.json",
        "upstream-modules/h/o/r/aws/1.0.0.pull.json",
        "upstream-modules/registry.terraform.io/o/r/1.0.0.pull.json",
    ] {
        assert_eq!(upstream_module_pull_release(other), None, "{other}");
    }
    // Every puller filter is disjoint from the indexer's: no write invokes both.
    for (prefix, suffix) in PULL_NOTIFICATIONS {
        for (p, s) in NOTIFICATIONS {
            let overlap =
                (prefix.starts_with(p) || p.starts_with(prefix)) && (suffix.ends_with(s) || s.ends_with(suffix));
            assert!(!overlap, "{prefix}*{suffix} and {p}*{s}");
        }
    }
}
