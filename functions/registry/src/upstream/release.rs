//! An upstream release as the mirror checks it before believing anything it says, the same
//! checks the terraform CLI makes installing from a registry: `SHA256SUMS` signed by a key the
//! download answer names, and every platform's SHA-256 the one that signed file lists for its
//! file name. Pure: the client (`super::Upstream`) fetches, this decides (and is fuzzed).

use std::collections::BTreeMap;

use serde::Deserialize;

use super::records::{PullRecord, PulledArchive};
use crate::address::ProviderAddress;
use crate::error::Error;
use crate::manifest::RecordedKey;
use crate::signing;

/// What a failure of `host` is: a 502 naming it (its message is shown to the client).
pub fn failed(host: &str, what: impl std::fmt::Display) -> Error {
    Error::BadGateway(format!("upstream registry {host}: {what}"))
}

/// providers.v1 `…/:version/download/:os/:arch`, its URLs made absolute.
#[derive(Debug, Clone, Deserialize)]
pub struct Download {
    /// Plugin protocol versions.
    #[serde(default)]
    pub protocols: Vec<String>,
    /// The platform it is for.
    pub os: String,
    /// The platform it is for.
    pub arch: String,
    /// The zip's name, as `SHA256SUMS` lists it.
    pub filename: String,
    /// Where the zip is.
    pub download_url: String,
    /// Where `SHA256SUMS` is.
    pub shasums_url: String,
    /// Where its detached signature is.
    pub shasums_signature_url: String,
    /// The zip's SHA-256, hex, as the upstream claims it (checked against `SHA256SUMS`).
    pub shasum: String,
    /// The keys the signature may verify with.
    #[serde(default)]
    pub signing_keys: SigningKeys,
}

/// `signing_keys` of a download answer.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct SigningKeys {
    /// ASCII-armored public keys.
    #[serde(default)]
    pub gpg_public_keys: Vec<GpgKey>,
}

/// One key of `signing_keys`.
#[derive(Debug, Clone, Deserialize)]
pub struct GpgKey {
    /// The armored public key.
    pub ascii_armor: String,
}

/// A release whose `SHA256SUMS` verified: the record to keep, and each platform's zip URL
/// as the upstream gave it in this answer (possibly presigned, so never stored).
#[derive(Debug, Clone)]
pub struct Release {
    /// What the puller needs, checkable again.
    pub record: PullRecord,
    /// Platform (`linux_amd64`) → where the upstream serves its zip now.
    pub urls: BTreeMap<String, String>,
}

impl Release {
    /// Version `version` of `provider` from its download answers (platform → answer, URLs
    /// already absolute), the `SHA256SUMS` the first one points at and its detached
    /// `signature`, checked at `now`. Any failed check is a `BadGateway` naming it, and nothing
    /// of the release is believed.
    pub fn verified(
        provider: &ProviderAddress,
        version: &semver::Version,
        downloads: Vec<(String, Download)>,
        sums: Vec<u8>,
        signature: &[u8],
        now: i64,
    ) -> Result<Release, Error> {
        use base64::Engine;
        let host = provider.hostname.as_str();
        let Some((_, first)) = downloads.first() else {
            return Err(failed(host, format!("{provider} {version}: no download answers")));
        };
        let release = format!("{provider} {version}");
        let mut keys = Vec::new();
        for key in &first.signing_keys.gpg_public_keys {
            match signing::parse_keys("from the upstream", key.ascii_armor.as_bytes()) {
                Ok(parsed) => keys.extend(parsed),
                Err(why) => tracing::warn!(%provider, %version, why, "upstream signing key not usable"),
            }
        }
        if keys.is_empty() {
            return Err(failed(host, format!("{release}: the download answer names no usable signing key")));
        }
        let key = signing::verify(&keys, &sums, signature, u64::try_from(now).unwrap_or(0))
            .map_err(|why| failed(host, format!("{release}: SHA256SUMS signature does not verify: {why}")))?;
        let listed = signing::parse_shasums(&sums)
            .map_err(|why| failed(host, format!("{release}: SHA256SUMS unreadable: {why}")))?;
        let mut archives = BTreeMap::new();
        let mut urls = BTreeMap::new();
        for (platform, download) in downloads {
            match listed.get(&download.filename) {
                Some(sha256) if *sha256 == download.shasum.to_ascii_lowercase() => {
                    archives.insert(
                        platform.clone(),
                        PulledArchive { filename: download.filename.clone(), sha256: sha256.clone() },
                    );
                    urls.insert(platform, download.download_url);
                }
                Some(sha256) => {
                    return Err(failed(
                        host,
                        format!(
                            "{release} {platform}: the download answer says SHA-256 {}, the signed SHA256SUMS lists {sha256}",
                            crate::address::printable(&download.shasum)
                        ),
                    ));
                }
                None => {
                    return Err(failed(
                        host,
                        format!(
                            "{release} {platform}: {} is not listed in the signed SHA256SUMS",
                            crate::address::printable(&download.filename)
                        ),
                    ));
                }
            }
        }
        let record = PullRecord {
            provider: provider.to_string(),
            version: version.to_string(),
            requested_at: now,
            shasums: String::from_utf8(sums).map_err(|_| failed(host, format!("{release}: SHA256SUMS is not text")))?,
            signature: base64::engine::general_purpose::STANDARD.encode(signature),
            signing_key: RecordedKey { key_id: key.key_id.clone(), ascii_armor: key.ascii_armor.clone() },
            archives,
        };
        Ok(Release { record, urls })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::signing::{TestKey, release};

    const NOW: i64 = 1_800_000_000;

    /// A signed release of `acme/widget` 1.0.0 as an upstream serves it: download answers
    /// naming `answer_key`, `SHA256SUMS` and its signature by `key`.
    fn served(key: &TestKey, answer_key: &TestKey) -> (Vec<(String, Download)>, Vec<u8>, Vec<u8>) {
        let files = release("widget", "1.0.0", &[("linux", "amd64"), ("darwin", "arm64")], None, key);
        let file = |suffix: &str| files.iter().find(|(n, _)| n.ends_with(suffix)).unwrap().1.clone();
        let sums = file("_SHA256SUMS");
        let downloads = ["linux_amd64", "darwin_arm64"]
            .iter()
            .map(|platform| {
                let (os, arch) = platform.split_once('_').unwrap();
                let filename = format!("terraform-provider-widget_1.0.0_{platform}.zip");
                let zip = files.iter().find(|(n, _)| *n == filename).unwrap();
                let shasum = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&zip.1));
                let download = Download {
                    protocols: vec!["5.0".into()],
                    os: os.into(),
                    arch: arch.into(),
                    download_url: format!("https://up.example/{filename}"),
                    filename,
                    shasums_url: "https://up.example/SHA256SUMS".into(),
                    shasums_signature_url: "https://up.example/SHA256SUMS.sig".into(),
                    shasum,
                    signing_keys: SigningKeys {
                        gpg_public_keys: vec![GpgKey { ascii_armor: answer_key.public_armor() }],
                    },
                };
                (platform.to_string(), download)
            })
            .collect();
        (downloads, sums, file("_SHA256SUMS.sig"))
    }

    fn check(served: (Vec<(String, Download)>, Vec<u8>, Vec<u8>)) -> Result<Release, Error> {
        let provider = ProviderAddress::parse("up.example", "acme", "widget").unwrap();
        let version = semver::Version::new(1, 0, 0);
        Release::verified(&provider, &version, served.0, served.1, &served.2, NOW)
    }

    fn refused(served: (Vec<(String, Download)>, Vec<u8>, Vec<u8>), why: &str) {
        match check(served) {
            Err(Error::BadGateway(message)) => {
                assert!(message.starts_with("upstream registry up.example: "), "{message}");
                assert!(message.contains(why), "{message} should say {why}");
            }
            other => panic!("expected a 502 saying {why}, got {other:?}"),
        }
    }

    #[test]
    fn a_signed_release_gives_a_record_the_puller_verifies_again() {
        let key = TestKey::generate("upstream");
        let release = check(served(&key, &key)).unwrap();
        assert_eq!(release.record.signing_key.key_id, key.key_id());
        assert_eq!(release.record.archives.len(), 2);
        assert_eq!(release.urls["linux_amd64"], "https://up.example/terraform-provider-widget_1.0.0_linux_amd64.zip");
        release.record.verify(NOW as u64).unwrap();
    }

    #[test]
    fn every_failed_check_is_a_502_naming_it() {
        let key = TestKey::generate("upstream");
        let other = TestKey::generate("someone else");
        refused(served(&key, &other), "signature does not verify");

        let (downloads, mut sums, signature) = served(&key, &key);
        sums.extend_from_slice(b"0000000000000000000000000000000000000000000000000000000000000000  extra.zip\n");
        refused((downloads, sums, signature), "signature does not verify");

        let (mut downloads, sums, signature) = served(&key, &key);
        downloads[1].1.shasum = "ab".repeat(32);
        refused((downloads, sums, signature), "the signed SHA256SUMS lists");

        let (mut downloads, sums, signature) = served(&key, &key);
        downloads[0].1.filename = "terraform-provider-widget_1.0.0_evil.zip".into();
        refused((downloads, sums, signature), "is not listed in the signed SHA256SUMS");

        let (mut downloads, sums, signature) = served(&key, &key);
        downloads[0].1.signing_keys.gpg_public_keys[0].ascii_armor = "not a key".into();
        refused((downloads, sums, signature), "names no usable signing key");

        refused((Vec::new(), Vec::new(), Vec::new()), "no download answers");
    }
}
