//! What the network mirror keeps of an upstream registry in the bucket (`layout::UPSTREAM_PREFIX`):
//! an upstream provider's version list with the time it was fetched, and pull records, the
//! verified releases the puller copies. Both are written by the mirror function only.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::layout::Platform;
use crate::manifest::RecordedKey;
use crate::signing;

/// `upstream/versions/HOST/NS/TYPE/index.json`: an upstream provider's versions and platforms.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpstreamVersions {
    /// When the upstream answered it (Unix seconds).
    pub fetched_at: i64,
    /// Version → its platforms (`linux_amd64`), as the upstream's providers.v1 lists them.
    pub versions: BTreeMap<String, UpstreamVersion>,
}

/// One version of an upstream provider.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpstreamVersion {
    /// Plugin protocol versions the upstream claims.
    #[serde(default)]
    pub protocols: Vec<String>,
    /// Its platforms, as `os_arch`.
    #[serde(default)]
    pub platforms: Vec<String>,
}

impl UpstreamVersions {
    /// Read a stored list; unreadable: `Error::Internal`.
    pub fn parse(bytes: &[u8]) -> Result<Self, Error> {
        serde_json::from_slice(bytes).map_err(|e| Error::internal_from("upstream version list", e))
    }

    /// Still to be used without asking the upstream at `now`: fetched less than `ttl` ago (a
    /// time in the future, from a skewed clock, is not fresh).
    pub fn fresh(&self, now: i64, ttl: std::time::Duration) -> bool {
        crate::clock::fresh(self.fetched_at, now, ttl)
    }

    /// The platforms of `version`, or `None` if the upstream does not list it.
    pub fn platforms(&self, version: &semver::Version) -> Option<Vec<Platform>> {
        let entry = self.versions.get(&version.to_string())?;
        Some(
            entry
                .platforms
                .iter()
                .filter_map(|key| key.split_once('_'))
                .filter_map(|(os, arch)| Platform::parse(os, arch).ok())
                .collect(),
        )
    }
}

/// `upstream/pulls/HOST/NS/TYPE/VERSION.json`: an upstream release whose `SHA256SUMS` verified
/// against the upstream's signing key, with everything needed to check that again. The mirror
/// writes it once (`If-None-Match: *`); its write invokes the puller, which copies the zips.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullRecord {
    /// `HOST/NS/TYPE`.
    pub provider: String,
    /// The version.
    pub version: String,
    /// When the copy was last asked for (Unix seconds); asked again after `PULL_RETRY_SECONDS`
    /// while a platform is still missing from the bucket.
    pub requested_at: i64,
    /// The upstream's `SHA256SUMS`, as served.
    pub shasums: String,
    /// Its detached signature, base64.
    pub signature: String,
    /// The upstream key whose signature verified.
    pub signing_key: RecordedKey,
    /// Platform (`linux_amd64`) → its zip, as the verified `SHA256SUMS` names and hashes it.
    pub archives: BTreeMap<String, PulledArchive>,
}

/// One platform's zip of a pull record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PulledArchive {
    /// The file name `SHA256SUMS` lists it under.
    pub filename: String,
    /// Its SHA-256 there (hex): the only bytes that may be stored or installed.
    pub sha256: String,
}

/// How long a copy may take before a request for the version asks for it again (a pull
/// record rewritten with a new `requested_at` invokes the puller once more).
pub const PULL_RETRY_SECONDS: i64 = 600;

impl PullRecord {
    /// Read a stored record; unreadable: `Error::Internal`.
    pub fn parse(bytes: &[u8]) -> Result<Self, Error> {
        serde_json::from_slice(bytes).map_err(|e| Error::internal_from("upstream pull record", e))
    }

    /// Check again what the mirror checked before writing it: the signature over `shasums`
    /// with `signing_key`, and every archive's SHA-256 being what the signed file lists for
    /// its name. The puller believes nothing else of a record.
    pub fn verify(&self, now: u64) -> Result<(), String> {
        use base64::Engine;
        let keys = signing::parse_keys("of the pull record", self.signing_key.ascii_armor.as_bytes())?;
        let signature = base64::engine::general_purpose::STANDARD
            .decode(&self.signature)
            .map_err(|_| "the recorded signature is not base64".to_string())?;
        signing::verify(&keys, self.shasums.as_bytes(), &signature, now)?;
        let sums = signing::parse_shasums(self.shasums.as_bytes())?;
        for (platform, archive) in &self.archives {
            match sums.get(&archive.filename) {
                Some(listed) if *listed == archive.sha256 => {}
                _ => return Err(format!("{platform}: {} is not listed with that SHA-256", archive.filename)),
            }
        }
        Ok(())
    }
}
