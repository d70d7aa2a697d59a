//! modules.v1 (versions and download) and the v1 API's list, search and details of modules
//! (`browse` shapes those answers). Every answer is one read of what the indexer wrote, plus
//! the version's docs for details.

use std::sync::Arc;

use http::StatusCode;
use serde_json::json;

use crate::address::ModuleAddress;
use crate::auth::Viewer;
use crate::browse::{details as details_body, page};
use crate::catalog;
use crate::context::Context;
use crate::error::Error;
use crate::exchange::Request;
use crate::exchange::{NO_CACHE, Reply};
use crate::layout::{self, Wanted};
use crate::manifest::{ModuleManifest, ModuleVersion};
use crate::module_docs::ModuleDocs;
use crate::module_docs::compare::{Change, Comparison};
use crate::query::Listing;
use crate::router::Route;
use crate::storage::Storage;
use crate::usage::{Counted, Download, Via};

/// modules.v1: the versions and the download of a module, and of an upstream registry's
/// module (`module_pull_through`). (The v1 list, search and details
/// API is the web function's: `web::answer` reads through `listing` and `details` here.)
pub(super) async fn answer<S: Storage>(
    ctx: &Context<S>,
    route: Route,
    request: &Request<'_>,
    deadline: tokio::time::Instant,
) -> Result<Reply, Error> {
    match &route {
        Route::ModuleVersions { module } => {
            super::authorize(ctx, &route, request.authorization).await?;
            versions(ctx, module, || route.not_found(), deadline).await
        }
        Route::ModuleDownload { module, version } => {
            let viewer = super::authorize(ctx, &route, request.authorization).await?;
            let reply = download(ctx, module, version, || route.not_found(), deadline).await?;
            super::count(
                ctx,
                request,
                Download::new(Counted::Module(module.clone()), version, Via::ModulesV1, &viewer.caller()),
            );
            Ok(reply)
        }
        Route::UpstreamModuleVersions { module } => {
            super::authorize(ctx, &route, request.authorization).await?;
            super::module_pull_through::versions(ctx, module, || route.not_found(), deadline).await
        }
        Route::UpstreamModuleDownload { module, version } => {
            let viewer = super::authorize(ctx, &route, request.authorization).await?;
            let reply =
                super::module_pull_through::download(ctx, module, version, || route.not_found(), deadline).await?;
            let counted = Counted::UpstreamModule(module.clone());
            super::count(ctx, request, Download::new(counted, version, Via::ModulesV1, &viewer.caller()));
            Ok(reply)
        }
        _ => Err(super::elsewhere(&route)),
    }
}

/// `GET …/:namespace/:name/:system/versions`: every version, from one read.
async fn versions<S: Storage>(
    ctx: &Context<S>,
    module: &ModuleAddress,
    absent: impl Fn() -> Error,
    deadline: tokio::time::Instant,
) -> Result<Reply, Error> {
    let read = manifest(ctx, module, absent, deadline).await?;
    Ok(Reply::json(StatusCode::OK, &read.value.versions_response())
        .header("cache-control", NO_CACHE)
        .etag()
        .stale(read.stale))
}

/// `GET …/:namespace/:name/:system/:version/download`: where the archive is, presigned, with
/// its SHA-256 for go-getter to check.
async fn download<S: Storage>(
    ctx: &Context<S>,
    module: &ModuleAddress,
    version: &semver::Version,
    absent: impl Fn() -> Error,
    deadline: tokio::time::Instant,
) -> Result<Reply, Error> {
    let read = manifest(ctx, module, absent, deadline).await?;
    let entry =
        read.value.find(version).ok_or_else(|| Error::NotFound(format!("module {module} has no version {version}")))?;
    let wanted = Wanted::ModuleArchive { module, version };
    let url = ctx.reader.presign(&entry.archive, entry.version_id.as_deref(), wanted).await?;
    let url = super::with_checksum(url, &entry.sha256)?;
    // Terraform 1.11 reads the header (204 or 200); OpenTofu prefers the body.
    // A 200 with both works for both and keeps every answer JSON.
    Ok(Reply::json(StatusCode::OK, &json!({ "location": url }))
        .header("x-terraform-get", url)
        .header("cache-control", "no-store")
        .stale(read.stale))
}

/// The module's manifest; absent or empty: `absent()`, the route's not-found answer (the same
/// a token that may not read the module gets).
pub(super) async fn manifest<S: Storage>(
    ctx: &Context<S>,
    module: &ModuleAddress,
    absent: impl Fn() -> Error,
    deadline: tokio::time::Instant,
) -> Result<crate::reader::Fetched<ModuleManifest>, Error> {
    ctx.reader
        .manifest(&layout::module_manifest(module), ModuleManifest::parse, |m| m.versions.is_empty(), absent, deadline)
        .await
}

/// `GET /v1/modules` and `GET /v1/modules/search`: a page of the catalog's modules this
/// viewer may read (`super::catalog`: the index, then the shards that hold the page).
pub(super) async fn listing<S: Storage>(
    ctx: &Context<S>,
    listing: &Listing,
    viewer: &Viewer,
    deadline: tokio::time::Instant,
) -> Result<Reply, Error> {
    let found = super::catalog::modules(ctx, listing, viewer, deadline).await?;
    let base = ctx.config.paths.modules.trim_end_matches('/');
    let path = if listing.q.is_some() { format!("{base}/search") } else { base.to_string() };
    let body = page(found.total, &found.page, listing, &path);
    Ok(Reply::json(StatusCode::OK, &body).header("cache-control", NO_CACHE).etag().stale(found.stale))
}

/// `GET /v1/modules/:namespace/:name/:system[/:version]`: the version's details (the latest
/// when none is named), its docs, every version, and its downloads (`usage`; who downloaded
/// it only for an admin token). Access was checked by the caller, who is `viewer`.
pub(super) async fn details<S: Storage>(
    ctx: &Context<S>,
    module: &ModuleAddress,
    version: Option<&semver::Version>,
    viewer: &Viewer,
    absent: impl Fn() -> Error,
    deadline: tokio::time::Instant,
) -> Result<Reply, Error> {
    let counted = Counted::Module(module.clone());
    let (view, usage) = tokio::join!(
        module_version(ctx, module, version, Compare::Previous, absent, deadline),
        super::counts::read(ctx, &counted, deadline)
    );
    let view = view?;
    let resource = crate::auth::Resource::Module(module);
    let shown = super::counts::shown(ctx, usage.as_deref(), &view.entry().version, viewer, resource);
    let docs = view.docs.as_deref();
    let body = details_body(module, view.entry(), &view.manifest, docs, view.comparison(), &shown);
    Ok(Reply::json(StatusCode::OK, &body).header("cache-control", NO_CACHE).etag().stale(view.stale))
}

/// Which version a shown version is compared with.
#[derive(Debug, Clone, Copy)]
pub(super) enum Compare<'a> {
    /// The one before it when it was published (what its docs' comparisons call `since`).
    Previous,
    /// This one (the upgrade page).
    From(&'a semver::Version),
}

/// A module version as the API and the web page show it: the manifest, the version (the
/// latest when none is named), and its docs when they were read from the served archive, with
/// the changes compared at publish. Two reads, at once when the version is named.
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
    let has = |v: &semver::Version| {
        let text = v.to_string();
        manifest.value.versions.iter().position(|e| e.version == text)
    };
    let index = has(&wanted).ok_or_else(|| Error::NotFound(format!("module {module} has no version {wanted}")))?;
    let docs = match docs {
        Ok(read) => Some(read.value),
        Err(Error::NotFound(_)) => None,
        Err(e) => return Err(e),
    };
    // Docs read from other bytes than those served are not these docs.
    let sha256 = &manifest.value.versions[index].sha256;
    let docs = docs.filter(|d| d.sha256 == *sha256);
    let from = match compare {
        Compare::Previous => None,
        Compare::From(v) => {
            has(v).ok_or_else(|| Error::NotFound(format!("module {module} has no version {v}")))?;
            Some(v.to_string())
        }
    };
    Ok(ModuleView { manifest: manifest.value, index, docs, from, stale: manifest.stale })
}

/// What `module_version` read.
pub(super) struct ModuleView {
    /// Every version.
    pub(crate) manifest: Arc<ModuleManifest>,
    /// The shown version's place in `manifest.versions`.
    index: usize,
    /// Its docs, when read from the bytes served.
    pub(crate) docs: Option<Arc<ModuleDocs>>,
    /// The version it is compared with (the upgrade page); `None`: the one before it.
    from: Option<String>,
    /// Made from a copy kept through a storage fault.
    pub(crate) stale: bool,
}

impl ModuleView {
    /// The shown version.
    pub(crate) fn entry(&self) -> &ModuleVersion {
        &self.manifest.versions[self.index]
    }

    /// The changes since the version compared with, as stored at publish with the shown
    /// version's docs (`index::judgment`): from the version before it then, or from the one
    /// the upgrade page names; shown only while that version serves the bytes compared.
    /// Nothing is compared per request: a hostile pair of interfaces costs its publish, once.
    pub(crate) fn comparison(&self) -> Option<&Comparison> {
        let compared = self.docs.as_deref()?.compared.as_ref()?;
        let from = self.from.as_deref().or(compared.since.as_deref())?;
        let served = self.manifest.versions.iter().find(|e| e.version == from)?;
        compared.from(from, &served.sha256)
    }

    /// `comparison` as the pages take it (`routes::web` slices the `Vec`): the version compared
    /// with and the changes kept.
    pub(crate) fn changes(&self) -> Option<(&str, &Vec<Change>)> {
        self.comparison().map(|c| (c.from.as_str(), &c.changes))
    }
}

fn parse_docs(bytes: &[u8]) -> Result<ModuleDocs, Error> {
    serde_json::from_slice(bytes).map_err(|e| Error::internal_from("module docs", e))
}
