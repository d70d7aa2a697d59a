//! What a registry serves of a module, read through the registry as the CLI reads it (service
//! discovery, `modules.v1`'s versions and download, the archive at the location it names), so
//! a publisher needs no more rights than a reader: its token goes to the registry's own origin,
//! never to the archive's URL.

use std::time::Duration;

use serde::Deserialize;
use url::Url;

use super::check::{self, Checked};
use crate::address::ModuleAddress;
use crate::archive::Bounds;
use crate::error::Error;
use crate::http_client::{Got, HttpClient, shown};

/// Longest discovery or download answer read.
const SMALL_ANSWER_BYTES: usize = 64 << 10;
use crate::upstream::modules::{MAX_VERSIONS, VERSIONS_MAX_BYTES, VersionEntry, VersionsBody};

/// A registry reached over HTTPS with a token (or none).
pub struct Registry {
    client: HttpClient,
    base: Url,
    authorization: Option<String>,
    /// Service discovery, read once: the wait asks for the versions every second.
    discovery: tokio::sync::OnceCell<(Url, Discovery)>,
}

#[derive(Deserialize)]
struct Discovery {
    #[serde(rename = "modules.v1")]
    modules: Option<String>,
    #[serde(rename = "providers.v1")]
    providers: Option<String>,
}

impl Registry {
    /// The registry at `base` (`https://registry.example.com`), `token` sent as a bearer token,
    /// `ca_file` PEM roots trusted besides the system's (the local registry's CA).
    pub fn new(base: &str, token: Option<&str>, ca_file: Option<&str>, timeout: Duration) -> Result<Self, Error> {
        let base = Url::parse(base).map_err(|e| Error::internal(format!("the registry URL {base:?}: {e}")))?;
        if base.scheme() != "https" {
            return Err(Error::internal(format!("the registry URL {} is not HTTPS", shown(&base))));
        }
        let client = HttpClient::new(ca_file, "the registry's CA file", timeout)?;
        let authorization = token.map(|t| format!("Bearer {t}"));
        Ok(Registry { client, base, authorization, discovery: tokio::sync::OnceCell::new() })
    }

    /// The host a `module` block's `source` names (with its port, if it has one).
    pub fn host(&self) -> String {
        let host = self.base.host_str().unwrap_or_default();
        match self.base.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_string(),
        }
    }

    pub(super) async fn get(
        &self,
        url: Url,
        limit: usize,
        header: Option<&str>,
    ) -> Result<Option<(Url, Vec<u8>, Option<String>)>, String> {
        // The token is the registry's: not for another host its discovery document names.
        let authorization = self.authorization.as_deref().filter(|_| url.origin() == self.base.origin());
        let got = self.client.get_authorized(url, limit, true, header, authorization).await;
        match got.map_err(|f| f.why)? {
            Got::Found(url, (body, value)) => Ok(Some((url, body.to_vec(), value))),
            Got::NotFound => Ok(None),
        }
    }

    /// A service of the registry's discovery document (`modules.v1`, `providers.v1`), as a URL.
    async fn service(&self, name: &str) -> Result<Url, String> {
        let (url, discovery) = self
            .discovery
            .get_or_try_init(|| async {
                let url = self.base.join("/.well-known/terraform.json").map_err(|e| e.to_string())?;
                let Some((url, body, _)) = self.get(url, SMALL_ANSWER_BYTES, None).await? else {
                    return Err(format!("{} has no service discovery document: not a registry", shown(&self.base)));
                };
                let discovery: Discovery = serde_json::from_slice(&body)
                    .map_err(|e| format!("{}: not a discovery document: {e}", shown(&url)))?;
                Ok((url, discovery))
            })
            .await?;
        let path = match name {
            "modules.v1" => discovery.modules.as_ref(),
            _ => discovery.providers.as_ref(),
        };
        let path = path.ok_or_else(|| format!("{} serves no {name}", shown(&self.base)))?;
        url.join(path).map_err(|e| format!("{}: {name} {path:?}: {e}", shown(url)))
    }

    async fn module_url(&self, module: &ModuleAddress, rest: &str) -> Result<Url, String> {
        let base = self.service("modules.v1").await?;
        let path = format!("{}/{}/{}/{rest}", module.namespace, module.name, module.system);
        base.join(&path).map_err(|e| e.to_string())
    }

    /// The versions the registry serves of `module` (none if it has none, or the token may
    /// not read it: the registry answers both alike).
    pub async fn versions(&self, module: &ModuleAddress) -> Result<Vec<semver::Version>, String> {
        let url = self.module_url(module, "versions").await?;
        let Some((url, body, _)) = self.get(url, VERSIONS_MAX_BYTES, None).await? else { return Ok(Vec::new()) };
        let body: VersionsBody =
            serde_json::from_slice(&body).map_err(|e| format!("{}: not a versions answer: {e}", shown(&url)))?;
        let listed: Vec<&VersionEntry> = body.modules.iter().flat_map(|m| &m.versions).collect();
        if listed.len() > MAX_VERSIONS {
            return Err(format!("{}: more than {MAX_VERSIONS} versions", shown(&url)));
        }
        let mut versions: Vec<semver::Version> =
            listed.iter().filter_map(|v| crate::address::parse_version(&v.version).ok()).collect();
        versions.sort_by(|a, b| a.cmp_precedence(b));
        versions.dedup();
        Ok(versions)
    }

    /// The archive the registry serves for `version`, fetched from the location its download
    /// answer names (without the token) and checked as the indexer checks an upload.
    pub async fn archive(
        &self,
        module: &ModuleAddress,
        version: &semver::Version,
        bounds: &Bounds,
        max_bytes: u64,
    ) -> Result<Checked, String> {
        let url = self.module_url(module, &format!("{version}/download")).await?;
        let Some((url, _, location)) = self.get(url, SMALL_ANSWER_BYTES, Some("x-terraform-get")).await? else {
            return Err(format!("{module} {version}: the registry has no download for it"));
        };
        let location = location
            .filter(|l| !l.is_empty())
            .ok_or_else(|| format!("{module} {version}: the download answer has no X-Terraform-Get header"))?;
        let (archive_url, extension, sha256) =
            archive_location(&location, &url).map_err(|why| format!("{module} {version}: {why}"))?;
        let archive_url = &archive_url;
        let limit = usize::try_from(max_bytes.saturating_add(1)).unwrap_or(usize::MAX);
        let bytes = match self.client.get(archive_url.clone(), limit, false).await? {
            Got::Found(_, bytes) => bytes,
            Got::NotFound => {
                return Err(format!("{module} {version}: its archive is not found at {}", shown(archive_url)));
            }
        };
        let checked = check::archive(&bytes, extension, bounds, max_bytes)
            .map_err(|why| format!("{module} {version} as served: {why}"))?;
        if checked.sha256 != sha256 {
            return Err(format!(
                "{module} {version}: the archive's SHA-256 is {}, its checksum {sha256}",
                checked.sha256
            ));
        }
        Ok(checked)
    }
}

/// The archive URL of a download location as this registry answers it (resolved against the
/// answer's URL, go-getter's `archive=` and `checksum=sha256:` taken out), its type and the
/// SHA-256 it demands. The checksum is required: it is what makes the bytes the registry's
/// own, fetched over plain HTTP too (the local registry's embedded S3).
fn archive_location(location: &str, base: &Url) -> Result<(Url, &'static str, String), String> {
    let mut url = base.join(location).map_err(|e| format!("the download location is not a URL: {e}"))?;
    if !matches!(url.scheme(), "https" | "http") {
        return Err(format!("the download location is not HTTP(S): {}", shown(&url)));
    }
    let (mut extension, mut sha256, mut kept) = (None, None, Vec::new());
    for (key, value) in url.query_pairs() {
        match key.as_ref() {
            "archive" if matches!(value.as_ref(), "tar.gz" | "tgz") => extension = Some("tar.gz"),
            "archive" if value == "zip" => extension = Some("zip"),
            "checksum" => sha256 = value.strip_prefix("sha256:").map(str::to_ascii_lowercase),
            _ => kept.push((key.into_owned(), value.into_owned())),
        }
    }
    let path = url.path().to_ascii_lowercase();
    let extension = extension
        .or_else(|| (path.ends_with(".tar.gz") || path.ends_with(".tgz")).then_some("tar.gz"))
        .or_else(|| path.ends_with(".zip").then_some("zip"))
        .ok_or_else(|| format!("the download location {} names no archive type", shown(&url)))?;
    let sha256 = sha256
        .filter(|s| s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()))
        .ok_or_else(|| format!("the download location {} has no checksum=sha256:", shown(&url)))?;
    if kept.is_empty() {
        url.set_query(None);
    } else {
        url.query_pairs_mut().clear().extend_pairs(kept);
    }
    Ok((url, extension, sha256))
}

mod providers;
pub use providers::ServedRelease;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_location_names_its_archive_type_and_checksum_which_are_taken_out() {
        let base = Url::parse("https://r.example/v1/modules/a/n/s/1.0.0/download").unwrap();
        let hex = "AB".repeat(32);
        let location = format!("http://127.0.0.1:9/b/k.tar.gz?X-Amz-Signature=1&checksum=sha256:{hex}");
        let (url, extension, sha256) = archive_location(&location, &base).unwrap();
        assert_eq!(
            (url.as_str(), extension, sha256),
            ("http://127.0.0.1:9/b/k.tar.gz?X-Amz-Signature=1", "tar.gz", "ab".repeat(32))
        );
        let relative = format!("/archives/k?archive=zip&checksum=sha256:{hex}");
        let (url, extension, _) = archive_location(&relative, &base).unwrap();
        assert_eq!((url.as_str(), extension), ("https://r.example/archives/k", "zip"));
        assert!(archive_location("https://s.example/k.tar.gz", &base).unwrap_err().contains("no checksum"));
        assert!(archive_location(&format!("file:///k.tar.gz?checksum=sha256:{hex}"), &base).is_err());
        assert!(
            archive_location(&format!("https://s/k?checksum=sha256:{hex}"), &base)
                .unwrap_err()
                .contains("archive type")
        );
    }
}
