//! What a registry serves of a provider release, read through `providers.v1` as the CLI reads
//! it: the versions with their platforms, and each platform's download answer (its SHA-256).

use std::collections::BTreeMap;

use super::Registry;
use crate::address::ProviderAddress;
use crate::http_client::shown;
use crate::layout::Platform;
use crate::upstream::release::Download;
use crate::upstream::{DOWNLOAD_MAX_BYTES, VERSIONS_MAX_BYTES, VersionsBody};

/// A version as `providers.v1` serves it: each platform's SHA-256.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedRelease {
    /// Each platform's `shasum`, lower-case hex.
    pub shasums: BTreeMap<Platform, String>,
}

impl Registry {
    async fn provider_url(&self, provider: &ProviderAddress, rest: &str) -> Result<url::Url, String> {
        let base = self.service("providers.v1").await?;
        base.join(&format!("{}/{}/{rest}", provider.namespace, provider.r#type)).map_err(|e| e.to_string())
    }

    /// The versions `providers.v1` lists of `provider`, each with its platforms (none if it
    /// has none, or the token may not read it: the registry answers both alike).
    pub async fn provider_versions(
        &self,
        provider: &ProviderAddress,
    ) -> Result<BTreeMap<semver::Version, Vec<Platform>>, String> {
        let url = self.provider_url(provider, "versions").await?;
        let Some((url, body, _)) = self.get(url, VERSIONS_MAX_BYTES, None).await? else { return Ok(BTreeMap::new()) };
        let body: VersionsBody =
            serde_json::from_slice(&body).map_err(|e| format!("{}: not a versions answer: {e}", shown(&url)))?;
        let mut versions = BTreeMap::new();
        for entry in body.versions {
            let Ok(version) = crate::address::parse_version(&entry.version) else { continue };
            let platforms = entry.platforms.iter().filter_map(|p| Platform::parse(&p.os, &p.arch).ok()).collect();
            versions.insert(version, platforms);
        }
        Ok(versions)
    }

    /// What `providers.v1` serves of `version`: each of `platforms`' download answer's SHA-256;
    /// `None` while a platform has none.
    pub async fn provider_release(
        &self,
        provider: &ProviderAddress,
        version: &semver::Version,
        platforms: &[Platform],
    ) -> Result<Option<ServedRelease>, String> {
        let mut shasums = BTreeMap::new();
        for platform in platforms {
            let rest = format!("{version}/download/{}/{}", platform.os, platform.arch);
            let url = self.provider_url(provider, &rest).await?;
            let Some((url, body, _)) = self.get(url, DOWNLOAD_MAX_BYTES, None).await? else { return Ok(None) };
            let download: Download =
                serde_json::from_slice(&body).map_err(|e| format!("{}: not a download answer: {e}", shown(&url)))?;
            shasums.insert(platform.clone(), download.shasum.to_ascii_lowercase());
        }
        Ok(Some(ServedRelease { shasums }))
    }
}
