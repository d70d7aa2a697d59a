//! Any bytes as what `make publish` and `make publish-provider` read from the publisher's
//! side: a `.terraformignore` and the paths it is matched against, a git tag, a `dist/`
//! directory's file names and its `SHA256SUMS`. No panic; `.git` is left out at any depth
//! whatever the patterns say; the matching stops at its bound; a tag's version prints back as
//! the tag; a release found uploads only names of the directory, its signature last, and its
//! `SHA256SUMS` is accepted only when it lists every zip of the release.
#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use registry::publishing::{ignore::Ignore, release, version_of_tag};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    // Three parts, split at the first two NUL characters: the ignore file, paths (one a
    // line), names and sums.
    let mut parts = text.splitn(3, '\0');
    let (rules, paths, dist) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    if let Ok(ignore) = Ignore::parse(rules) {
        for path in paths.lines().take(200) {
            let is_dir = path.ends_with('/');
            match ignore.leaves_out(path.trim_end_matches('/'), is_dir) {
                Ok(out) if path.trim_end_matches('/').rsplit('/').next() == Some(".git") => assert!(out),
                Ok(_) => {}
                Err(why) => assert!(why.contains("comparisons")),
            }
        }
    }
    for tag in paths.lines().take(20) {
        if let Some(version) = version_of_tag(tag) {
            assert_eq!(version.to_string(), tag.strip_prefix('v').unwrap_or(tag));
        }
    }
    let (names, sums) = dist.split_once("\n\n").unwrap_or((dist, ""));
    let names: Vec<String> = names.lines().take(100).map(str::to_string).collect();
    if let Ok(found) = release::Release::find("registry.example.com", "acme", &names, None) {
        let order = found.upload_order();
        assert!(order.iter().all(|n| names.iter().any(|m| m == n)));
        assert_eq!(order.last(), Some(&found.signature.as_str()));
        let digests: BTreeMap<String, String> = names.iter().map(|n| (n.clone(), "0".repeat(64))).collect();
        if let Ok(listed) = release::check_sums(&found, sums.as_bytes(), &digests) {
            assert!(found.zips.values().all(|z| listed.contains_key(z)));
        }
    }
});
