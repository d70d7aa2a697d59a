//! Any bytes as what an upstream registry answers for a release (download answers, the
//! `SHA256SUMS` they point at and its signature) and as what the mirror keeps of an upstream
//! in the bucket (a pull record, a version list). The checks must never panic, and a release
//! they believe must be one the puller believes again from its stored record, with only the
//! hashes the signed file lists; a byte more in that file is refused.
//!
//! Input: three parts each led by its length (u16, little-endian), then the stored object.
#![no_main]

use libfuzzer_sys::fuzz_target;
use registry::address::ProviderAddress;
use registry::upstream::records::{PullRecord, UpstreamVersions};
use registry::upstream::{Download, Release};

const NOW: i64 = 1_800_000_000;

fuzz_target!(|data: &[u8]| {
    let ([answers, sums, signature], stored) = registry::invariants::length_prefixed::<3>(data);

    if let Ok(answers) = serde_json::from_slice::<Vec<Download>>(answers) {
        let downloads: Vec<(String, Download)> =
            answers.into_iter().map(|d| (format!("{}_{}", d.os, d.arch), d)).collect();
        let provider = ProviderAddress::parse("upstream.example", "acme", "widget").unwrap();
        let version = semver::Version::new(1, 0, 0);
        if let Ok(release) = Release::verified(&provider, &version, downloads.clone(), sums.to_vec(), signature, NOW) {
            let kept = serde_json::to_vec(&release.record).unwrap();
            let record = PullRecord::parse(&kept).unwrap();
            record.verify(NOW as u64).expect("the puller believes what the mirror believed");
            let listed = registry::signing::parse_shasums(sums).unwrap();
            for (platform, archive) in &record.archives {
                assert_eq!(listed.get(&archive.filename), Some(&archive.sha256), "{platform}: a hash not listed");
                assert!(release.urls.contains_key(platform));
            }
            let mut more = sums.to_vec();
            more.push(b'\n');
            assert!(
                Release::verified(&provider, &version, downloads, more, signature, NOW).is_err(),
                "a signature verified over other bytes"
            );
        }
    }
    if let Ok(record) = PullRecord::parse(stored) {
        let _ = record.verify(NOW as u64);
    }
    if let Ok(list) = UpstreamVersions::parse(stored) {
        let _ = list.fresh(NOW, std::time::Duration::from_secs(600));
        for version in list.versions.keys().filter_map(|v| semver::Version::parse(v).ok()) {
            let _ = list.platforms(&version);
        }
    }
});
