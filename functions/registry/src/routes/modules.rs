//! modules.v1 (versions and download) and the v1 API's list, search and details of modules
//! (`browse` shapes those answers). Every answer is one read of what the indexer wrote, plus
//! the version's docs for details.

use std::sync::Arc;

use http::StatusCode;
use serde_json::json;

use crate::address::ModuleAddress;
use crate::auth::{Resource, Viewer};
use crate::browse::{details as details_body, page};
use crate::catalog::{self, Catalog};
use crate::context::Context;
use crate::error::Error;
use crate::exchange::{NO_CACHE, Reply};
use crate::layout::{self, Wanted};
use crate::manifest::{ModuleManifest, ModuleVersion};
use crate::module_docs::ModuleDocs;
use crate::query::Listing;
use crate::storage::Storage;

/// `GET …/:namespace/:name/:system/versions`: every version, from one read.
pub(super) async fn versions<S: Storage>(
    ctx: &Context<S>,
    module: &ModuleAddress,
    deadline: tokio::time::Instant,
) -> Result<Reply, Error> {
    let read = manifest(ctx, module, deadline).await?;
    Ok(Reply::json(StatusCode::OK, &read.value.versions_response())
        .header("cache-control", NO_CACHE)
        .etag()
        .stale(read.stale))
}

/// `GET …/:namespace/:name/:system/:version/download`: where the archive is, presigned, with
/// its SHA-256 for go-getter to check.
pub(super) async fn download<S: Storage>(
    ctx: &Context<S>,
    module: &ModuleAddress,
    version: &semver::Version,
    deadline: tokio::time::Instant,
) -> Result<Reply, Error> {
    let read = manifest(ctx, module, deadline).await?;
    let entry =
        read.value.find(version).ok_or_else(|| Error::NotFound(format!("module {module} has no version {version}")))?;
    let wanted = Wanted::ModuleArchive { module, version };
    let url = ctx.reader.presign(&entry.archive, entry.version_id.as_deref(), wanted).await?;
    let url = with_checksum(url, &entry.sha256)?;
    // Terraform 1.11 reads the header (204 or 200); OpenTofu prefers the body.
    // A 200 with both works for both and keeps every answer JSON.
    Ok(Reply::json(StatusCode::OK, &json!({ "location": url }))
        .header("x-terraform-get", url)
        .header("cache-control", "no-store")
        .stale(read.stale))
}

/// The module's manifest; absent or empty: the module is not found.
async fn manifest<S: Storage>(
    ctx: &Context<S>,
    module: &ModuleAddress,
    deadline: tokio::time::Instant,
) -> Result<crate::reader::Fetched<ModuleManifest>, Error> {
    let missing = || Error::NotFound(format!("module {module} not found"));
    ctx.reader
        .manifest(&layout::module_manifest(module), ModuleManifest::parse, |m| m.versions.is_empty(), missing, deadline)
        .await
}

/// A module download URL with the archive's SHA-256 for go-getter to check: it reads
/// `checksum=sha256:HEX` from the URL, removes it before the request (so the presigned
/// signature still matches) and refuses bytes that differ with "Checksums did not match". So
/// the CLI installs exactly the bytes the indexer hashed, even if the object is replaced or
/// altered in the bucket afterwards. Last in the query: go-getter finds it anywhere, and the
/// path's extension still tells it the archive type.
fn with_checksum(url: String, sha256: &str) -> Result<String, Error> {
    if sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return Err(Error::Internal(format!("the manifest records no valid SHA-256 ({sha256:?})")));
    }
    let separator = if url.contains('?') { '&' } else { '?' };
    Ok(format!("{url}{separator}checksum=sha256:{sha256}"))
}

/// `GET /v1/modules` and `GET /v1/modules/search`: a page of the catalog's modules this
/// viewer may read, from one read.
pub(super) async fn listing<S: Storage>(
    ctx: &Context<S>,
    listing: &Listing,
    viewer: &Viewer,
    deadline: tokio::time::Instant,
) -> Result<Reply, Error> {
    let (catalog, stale) = catalog(ctx, deadline).await?;
    let policy = ctx.verifier.policy();
    let visible = |m: &ModuleAddress| viewer.may_read(policy, Resource::Module(m));
    let base = ctx.config.paths.modules.trim_end_matches('/');
    let path = if listing.q.is_some() { format!("{base}/search") } else { base.to_string() };
    let body = page(&catalog, listing, visible, &path);
    Ok(Reply::json(StatusCode::OK, &body).header("cache-control", NO_CACHE).etag().stale(stale))
}

/// The catalog (empty before anything is published), and whether it is a copy served
/// through a storage fault.
pub(super) async fn catalog<S: Storage>(
    ctx: &Context<S>,
    deadline: tokio::time::Instant,
) -> Result<(Arc<Catalog>, bool), Error> {
    let missing = || Error::NotFound(String::new());
    match ctx.reader.manifest(layout::CATALOG, Catalog::parse, |_| false, missing, deadline).await {
        Ok(read) => Ok((read.value, read.stale)),
        Err(Error::NotFound(_)) => Ok((Arc::new(Catalog::default()), false)),
        Err(e) => Err(e),
    }
}

/// `GET /v1/modules/:namespace/:name/:system[/:version]`: the version's details (the latest
/// when none is named), its docs, and every version. Access was checked by the caller.
pub(super) async fn details<S: Storage>(
    ctx: &Context<S>,
    module: &ModuleAddress,
    version: Option<&semver::Version>,
    absent: impl Fn() -> Error,
    deadline: tokio::time::Instant,
) -> Result<Reply, Error> {
    let view = module_version(ctx, module, version, Compare::Previous, absent, deadline).await?;
    let mut body = details_body(module, view.entry(), &view.manifest, view.docs.as_deref());
    crate::browse::add_changes(&mut body, view.entry(), view.changes().as_ref().map(|(v, c)| (*v, c.as_slice())));
    Ok(Reply::json(StatusCode::OK, &body).header("cache-control", NO_CACHE).etag().stale(view.stale))
}

/// Which version a shown version is compared with.
#[derive(Debug, Clone, Copy)]
pub(super) enum Compare<'a> {
    /// The one before it (`previous`).
    Previous,
    /// This one (the upgrade page).
    From(&'a semver::Version),
}

/// A module version as the API and the web page show it: the manifest, the version (the
/// latest when none is named), its docs when they were read from the served archive, and the
/// docs of the version it is compared with. Two reads, at once when the version is named,
/// then the other version's docs.
pub(super) async fn module_version<S: Storage>(
    ctx: &Context<S>,
    module: &ModuleAddress,
    version: Option<&semver::Version>,
    compare: Compare<'_>,
    absent: impl Fn() -> Error,
    deadline: tokio::time::Instant,
) -> Result<ModuleView, Error> {
    let manifest_key = layout::module_manifest(module);
    let manifest =
        || ctx.reader.manifest(&manifest_key, ModuleManifest::parse, |m| m.versions.is_empty(), &absent, deadline);
    let docs_key = |v: &semver::Version| layout::module_docs(module, v);
    let no_docs = || Error::NotFound(String::new());
    let (manifest, docs, wanted) = match version {
        // Both keys are known: read them at once.
        Some(v) => {
            let key = docs_key(v);
            let (manifest, docs) =
                tokio::join!(manifest(), ctx.reader.manifest(&key, parse_docs, |_| false, no_docs, deadline));
            (manifest?, docs, v.clone())
        }
        None => {
            let manifest = manifest().await?;
            let latest = catalog::latest(manifest.value.versions.iter().map(|v| v.version.as_str()))
                .and_then(|v| crate::address::parse_version(v).ok())
                .ok_or_else(&absent)?;
            let docs = ctx.reader.manifest(&docs_key(&latest), parse_docs, |_| false, no_docs, deadline).await;
            (manifest, docs, latest)
        }
    };
    let wanted_text = wanted.to_string();
    let index = manifest
        .value
        .versions
        .iter()
        .position(|v| v.version == wanted_text)
        .ok_or_else(|| Error::NotFound(format!("module {module} has no version {wanted}")))?;
    let docs = match docs {
        Ok(read) => Some(read.value),
        Err(Error::NotFound(_)) => None,
        Err(e) => return Err(e),
    };
    // Docs read from other bytes than those served are not these docs.
    let sha256 = &manifest.value.versions[index].sha256;
    let docs = docs.filter(|d| d.sha256 == *sha256);
    let other = match compare {
        Compare::Previous => previous(&manifest.value, index),
        Compare::From(v) => {
            let wanted = v.to_string();
            let position = manifest.value.versions.iter().position(|e| e.version == wanted);
            Some(position.ok_or_else(|| Error::NotFound(format!("module {module} has no version {v}")))?)
        }
    };
    let before = match other {
        None => None,
        Some(i) => {
            let entry = &manifest.value.versions[i];
            let read = match crate::address::parse_version(&entry.version) {
                Ok(v) => ctx.reader.manifest(&docs_key(&v), parse_docs, |_| false, no_docs, deadline).await,
                Err(e) => Err(e),
            };
            let docs = match read {
                Ok(read) => Some(read.value).filter(|d| d.sha256 == entry.sha256),
                Err(Error::NotFound(_) | Error::BadRequest(_)) => None,
                Err(e) => return Err(e),
            };
            Some((entry.version.clone(), docs))
        }
    };
    Ok(ModuleView { manifest: manifest.value, index, docs, before, stale: manifest.stale })
}

/// The version before the one at `index` (newest first): the next older one, a release unless
/// the shown version is a pre-release.
fn previous(manifest: &ModuleManifest, index: usize) -> Option<usize> {
    let is_pre = |v: &str| crate::address::parse_version(v).is_ok_and(|v| !v.pre.is_empty());
    let shown_pre = is_pre(&manifest.versions[index].version);
    (index + 1..manifest.versions.len()).find(|&i| shown_pre || !is_pre(&manifest.versions[i].version))
}

/// What `module_version` read.
pub(super) struct ModuleView {
    /// Every version.
    pub(crate) manifest: Arc<ModuleManifest>,
    /// The shown version's place in `manifest.versions`.
    index: usize,
    /// Its docs, when read from the bytes served.
    pub(crate) docs: Option<Arc<ModuleDocs>>,
    /// The version it is compared with, and that version's docs (when read).
    pub(crate) before: Option<(String, Option<Arc<ModuleDocs>>)>,
    /// Made from a copy kept through a storage fault.
    pub(crate) stale: bool,
}

impl ModuleView {
    /// The shown version.
    pub(crate) fn entry(&self) -> &ModuleVersion {
        &self.manifest.versions[self.index]
    }

    /// The version compared with and every change since it, when both versions' docs are here.
    pub(crate) fn changes(&self) -> Option<(&str, Vec<crate::module_docs::compare::Change>)> {
        let (version, Some(before)) = self.before.as_ref()? else { return None };
        let docs = self.docs.as_deref()?;
        Some((version.as_str(), crate::module_docs::compare::compare(before, docs)))
    }
}

fn parse_docs(bytes: &[u8]) -> Result<ModuleDocs, Error> {
    serde_json::from_slice(bytes).map_err(|e| Error::Internal(format!("module docs: {e}")))
}
