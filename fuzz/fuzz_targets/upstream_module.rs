//! Any bytes as what an upstream module registry answers and what the modules pull-through
//! keeps: a download answer's location, a pin, index or pull record read back from the bucket, a git host's
//! archive, and an air-gap bundle's input (a `modules.json` or a list) and its `SHA256SUMS`.
//! Nothing may panic; a
//! location read must fetch only from its git host's origin (`/OWNER/REPO/archive/REF.tar.gz`,
//! no query) or an HTTPS URL without credentials or go-getter's parameters; every key a bundle
//! item names stays under its module's prefix, and every file a `SHA256SUMS` accepts under
//! `upstream-modules/`; an archive whose top directory is removed reads back through the same
//! checks.
//!
//! Input: three parts each led by its length (u16, little-endian), then a bundle input.
#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use registry::archive::{Bounds, strip_top_directory};
use registry::layout;
use registry::upstream::bundle::{from_list, from_modules_json, parse_sums};
use registry::upstream::module_records::{ModuleIndex, ModulePin, ModulePull, ModulePullFailure, PullState};
use registry::upstream::module_source::{ModuleSource, parse_location};

fuzz_target!(|data: &[u8]| {
    let ([location, stored, archive], input) = registry::invariants::length_prefixed::<3>(data);

    let origin = "https://git.example:8443";
    let git_hosts: BTreeMap<String, String> = [("github.com".to_string(), origin.to_string())].into();
    let base = url::Url::parse("https://registry.example/v1/modules/a/b/c/1.0.0/download").unwrap();
    if let Ok(location) = std::str::from_utf8(location) {
        match parse_location(location, &base, &git_hosts) {
            Ok(ModuleSource::Git { owner, repo, reference, archive, .. }) => {
                let expected = format!("{origin}/{owner}/{repo}/archive/{reference}.tar.gz");
                assert_eq!(archive.as_str(), expected, "{location:?}");
                assert!(archive.query().is_none() && archive.fragment().is_none(), "{location:?}");
            }
            Ok(ModuleSource::Https { url, .. }) => {
                assert_eq!(url.scheme(), "https", "{location:?}");
                assert!(url.username().is_empty() && url.password().is_none(), "{location:?}");
                assert!(url.query_pairs().all(|(k, _)| k != "checksum" && k != "archive"), "{location:?}");
            }
            Err(_) => {}
        }
    }
    if let Ok(pin) = ModulePin::parse(stored) {
        assert!(pin.sha256.len() == 64 && matches!(pin.archive.as_str(), "tar.gz" | "zip"));
    }
    // The puller's records, read back: any times at all (a skewed clock, a tampered record).
    let pull = serde_json::from_slice::<ModulePull>(stored).ok();
    let failure = serde_json::from_slice::<ModulePullFailure>(stored).ok();
    for now in [0, 1_800_000_000, i64::MIN, i64::MAX] {
        let _ = PullState::of(pull.as_ref(), failure.as_ref(), now);
    }
    if let Ok(index) = ModuleIndex::parse(stored) {
        let _ = index.response();
        let _ = index.fresh(1_800_000_000, std::time::Duration::from_secs(600));
    }
    let bounds = Bounds { unpacked_bytes: 1 << 20, entries: 1000 };
    if let Ok(flat) = strip_top_directory(archive, Vec::new(), &bounds) {
        let _ = registry::archive::read_module_archive(std::io::Cursor::new(&flat), "tar.gz", &bounds, &|_| false);
    }
    let items = from_modules_json(input).into_iter().flatten().chain(
        std::str::from_utf8(input).ok().and_then(|text| from_list(text).ok()).into_iter().flatten(),
    );
    for item in items {
        let prefix = layout::upstream_module_prefix(&item.module);
        for key in [
            layout::upstream_module_index(&item.module),
            layout::upstream_module_pin(&item.module, &item.version),
            layout::upstream_module_archive(&item.module, &item.version, &"0".repeat(64), "tar.gz"),
        ] {
            assert!(key.starts_with(&prefix) && !key.contains("/../") && !key.contains("//"), "{key}");
        }
    }
    // A bundle's SHA256SUMS: every file it accepts stays under upstream-modules/, no segment
    // climbing out, each with a SHA-256.
    if let Ok(listed) = parse_sums(input) {
        for (key, sha256) in listed {
            let rest = key.strip_prefix(layout::UPSTREAM_MODULES_PREFIX).unwrap();
            assert!(rest.split('/').all(|s| !s.is_empty() && s != ".." && s != "."), "{key}");
            assert!(sha256.len() == 64, "{sha256}");
        }
    }
});
