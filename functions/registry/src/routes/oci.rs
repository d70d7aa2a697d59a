//! OCI Distribution v1.1, read-only (`/v2/…`): providers as OpenTofu's `oci_mirror` installs
//! them, modules as its `oci://` sources do. One read per request: a provider's tag from the
//! version's document (`VERSION.json` holds its image index), a module's from its tag object,
//! a manifest by digest or a blob's pointer from `indexed/oci/`, the tag list from `index.json`
//! or the module manifest. A blob is a redirect to a presigned URL of the zip itself. Credentials
//! come the way OCI clients send them: `Basic` with the registry's token (or a JWT) as the
//! password, or `Bearer` with the token itself or what the token endpoint handed out for it
//! (`/v2/token`, which a `Bearer` challenge names); the access check, scopes and
//! 404-for-hidden are every route's.

use bytes::Bytes;
use http::{Method, StatusCode};
use serde_json::json;

use crate::auth::{Resource, Viewer};
use crate::context::Context;
use crate::error::Error;
use crate::exchange::{NO_CACHE, Reply, Request};
use crate::layout::{self, Wanted};
use crate::manifest::{ModuleManifest, OciBlob, ProviderIndex, ProviderVersion};
use crate::oci::name::{self, Kind, OciRoute, Reference, Repository};
use crate::oci::{DIGEST_HEADER, EMPTY_CONFIG, EMPTY_CONFIG_DIGEST, MEDIA_TYPE_MANIFEST, TAGS_PAGE_MAX, digest_of};
use crate::router::Route;
use crate::storage::Storage;
use crate::usage::{Counted, Download, Via};

/// What every OCI answer says of the protocol (clients check it at `/v2/`).
const API_VERSION: (&str, &str) = ("docker-distribution-api-version", "registry/2.0");

/// OCI Distribution: its own credentials (Basic or Bearer) and error bodies; it checks access
/// itself, per repository.
pub(super) async fn answer<S: Storage>(
    ctx: &Context<S>,
    route: Route,
    request: &Request<'_>,
    deadline: tokio::time::Instant,
) -> Result<Reply, Error> {
    match &route {
        Route::Oci { oci } => answer_oci(ctx, oci, request, deadline).await,
        _ => Err(super::elsewhere(&route)),
    }
}

async fn answer_oci<S: Storage>(
    ctx: &Context<S>,
    route: &OciRoute,
    request: &Request<'_>,
    deadline: tokio::time::Instant,
) -> Result<Reply, Error> {
    let authorization = credentials(request.authorization)?;
    let authorization = authorization.as_deref();
    let head = *request.method == Method::HEAD;
    match route {
        OciRoute::Base => {
            // Clients ask here first (released OpenTofu, 1.10 to 1.12: oras-go's `Ping` in
            // cmd/tofu/oci_distribution.go, which stops on anything but 200), and send what the
            // token endpoint handed them once challenged: the anonymous token too, which must
            // be answered 200 here or no anonymous read ever starts. Without an `Authorization`
            // header they are challenged; credentials presented must be known.
            if request.authorization.is_none() {
                return Err(Error::Unauthorized("credentials are required".into()));
            }
            if authorization.is_some() {
                ctx.verifier.caller(ctx.storage(), authorization).await?;
            }
            Ok(Reply::json(StatusCode::OK, &json!({})).header(API_VERSION.0, API_VERSION.1))
        }
        OciRoute::Token => token(ctx, authorization).await,
        OciRoute::Tags { repository, n, last } => {
            check(ctx, repository, authorization, Kind::Tags).await?;
            tags(ctx, repository, *n, last.as_deref(), deadline).await
        }
        OciRoute::Manifest { repository, reference } => {
            let viewer = check(ctx, repository, authorization, Kind::Manifest).await?;
            // The version `latest` names is read beside its manifest, at once: counting adds
            // no round trip to the answer.
            let (reply, version) = tokio::join!(
                manifest(ctx, repository, reference, head, deadline),
                tagged_version(ctx, repository, reference, deadline)
            );
            let reply = accepted(reply?, request.accept)?;
            // A pull starts by resolving its tag: released OpenTofu with a HEAD (then the
            // manifest by digest, oci_handshake.rs), other clients may GET it. That request
            // counts, whatever its method; requests by digest, and blobs, are the same pull's.
            if let Some(version) = version {
                let counted = match repository {
                    Repository::Provider(provider) => Counted::Provider(provider.clone()),
                    Repository::Module(module) => Counted::Module(module.clone()),
                };
                ctx.usage.count(&Download::new(counted, &version, Via::Oci, &viewer.caller()));
            }
            Ok(reply)
        }
        OciRoute::Blob { repository, digest } => {
            check(ctx, repository, authorization, Kind::Blob).await?;
            blob(ctx, repository, digest, head, deadline).await
        }
    }
}

/// The version a tag names: itself, or for a module's `latest` its highest release (the
/// manifest's `oci_latest`, read through the cache; `None` if it cannot be read now: the pull
/// goes on uncounted). A digest names no tag.
async fn tagged_version<S: Storage>(
    ctx: &Context<S>,
    repository: &Repository,
    reference: &Reference,
    deadline: tokio::time::Instant,
) -> Option<semver::Version> {
    match (reference, repository) {
        (Reference::Tag(version), _) => Some(version.clone()),
        (Reference::Latest, Repository::Module(module)) => {
            let key = layout::module_manifest(module);
            let none = || Error::NotFound(String::new());
            let read = ctx.reader.manifest(&key, ModuleManifest::parse, |_| false, none, deadline).await.ok()?;
            crate::address::parse_version(read.value.oci_latest.as_deref()?).ok()
        }
        _ => None,
    }
}

/// The bearer token the token endpoint hands a caller without credentials. It grants nothing:
/// presented, it counts as no credentials at all, so it reads what anonymous callers may
/// (`REGISTRY_ANONYMOUS_*`). Clients fetch one before any request once challenged, even for a
/// repository anyone may read. No token of the registry's (`trg_…`) or JWT looks like it.
pub(crate) const ANONYMOUS_TOKEN: &str = "anonymous";

/// `Basic` credentials with neither user name nor password: what Go clients send when they
/// hold none and were challenged for `Basic` (base64 of `:`).
const EMPTY_BASIC: &str = "Og==";

/// The `Authorization` header as the verifier reads it: `Basic` credentials become their
/// password as a bearer token (the user name is not read: OCI clients need one, any will do);
/// the anonymous token and empty `Basic` credentials are none.
fn credentials(header: Option<&str>) -> Result<Option<String>, Error> {
    let Some(header) = header else { return Ok(None) };
    if crate::auth::bearer(header) == Some(ANONYMOUS_TOKEN) {
        return Ok(None);
    }
    if header
        .trim()
        .split_once(' ')
        .is_some_and(|(scheme, rest)| scheme.eq_ignore_ascii_case("basic") && rest.trim() == EMPTY_BASIC)
    {
        return Ok(None);
    }
    match crate::auth::basic_password(header) {
        Some(Ok(password)) => Ok(Some(format!("Bearer {password}"))),
        Some(Err(why)) => Err(Error::Unauthorized(why.into())),
        None => Ok(Some(header.to_string())),
    }
}

/// The token endpoint: the bearer token is the credential presented, once the verifier knows
/// it (so a registry token or a JWT, `Basic` or `Bearer`, works as `docker login`,
/// skopeo, ORAS and OpenTofu's `oci_credentials` use it), or the anonymous token without
/// one. Nothing is minted or stored: each later request is checked anew, scopes and expiry
/// included. No `expires_in` (the token spec's default is 60 seconds; oras-go ignores it and
/// asks again only when a request is answered 401).
async fn token<S: Storage>(ctx: &Context<S>, authorization: Option<&str>) -> Result<Reply, Error> {
    let token = match authorization {
        None => ANONYMOUS_TOKEN,
        Some(header) => {
            ctx.verifier.caller(ctx.storage(), Some(header)).await?;
            crate::auth::bearer(header).ok_or_else(|| Error::Unauthorized("not a bearer token".into()))?
        }
    };
    let reply = Reply::json(StatusCode::OK, &json!({"token": token, "access_token": token}));
    Ok(reply.header("cache-control", "no-store").header(API_VERSION.0, API_VERSION.1))
}

/// The access check of every route that names a repository: the provider's or the module's
/// scope, as for the mirror and modules.v1; hidden and absent are one answer.
async fn check<S: Storage>(
    ctx: &Context<S>,
    repository: &Repository,
    authorization: Option<&str>,
    kind: Kind,
) -> Result<Viewer, Error> {
    let resource = match repository {
        Repository::Provider(provider) => Resource::Provider(provider),
        Repository::Module(module) => Resource::Module(module),
    };
    ctx.verifier.check(ctx.storage(), authorization, resource, || absent(repository, kind)).await
}

/// A repository, manifest or blob that does not exist (or that the caller may not see).
pub(crate) fn absent(repository: &Repository, kind: Kind) -> Error {
    let what = match kind {
        Kind::Manifest => "manifest unknown",
        Kind::Blob => "blob unknown",
        Kind::Base | Kind::Token | Kind::Tags | Kind::Other => "repository name not known to registry",
    };
    Error::NotFound(format!("{what}: {}", repository.name()))
}

/// The versions a repository has tags for: a provider's with an image index, a module's with a
/// package. (`latest` is not listed: it is another name for one of them.)
async fn versions<S: Storage>(
    ctx: &Context<S>,
    repository: &Repository,
    deadline: tokio::time::Instant,
) -> Result<(Vec<String>, bool), Error> {
    let missing = || absent(repository, Kind::Tags);
    Ok(match repository {
        Repository::Provider(provider) => {
            let key = layout::provider_index(provider);
            let read =
                ctx.reader.manifest(&key, ProviderIndex::parse, |i| i.versions.is_empty(), missing, deadline).await?;
            // Only versions whose document holds an image index: a tag listed must resolve
            // (OpenTofu fails outright when the newest listed tag does not).
            let tagged = read.value.versions.iter().filter(|(_, line)| line.get("oci") == Some(&json!(true)));
            (tagged.map(|(v, _)| v.clone()).collect(), read.stale)
        }
        Repository::Module(module) => {
            let key = layout::module_manifest(module);
            let read =
                ctx.reader.manifest(&key, ModuleManifest::parse, |m| m.versions.is_empty(), missing, deadline).await?;
            let packaged = read.value.versions.iter().filter(|v| v.oci.as_ref().is_some_and(|l| !l.sha256.is_empty()));
            (packaged.map(|v| v.version.clone()).collect(), read.stale)
        }
    })
}

/// `tags/list`: the versions as tags, in lexical order, `n` at a time after `last`.
async fn tags<S: Storage>(
    ctx: &Context<S>,
    repository: &Repository,
    n: Option<usize>,
    last: Option<&str>,
    deadline: tokio::time::Instant,
) -> Result<Reply, Error> {
    let (versions, stale) = versions(ctx, repository, deadline).await?;
    let mut all: Vec<String> = versions
        .iter()
        .filter_map(|v| crate::address::parse_version(v).ok())
        .map(|v| name::tag(&v))
        .filter(|t| last.is_none_or(|last| t.as_str() > last))
        .collect();
    all.sort();
    let page = n.unwrap_or(TAGS_PAGE_MAX);
    let more = all.len() > page;
    all.truncate(page);
    let mut reply = Reply::json(StatusCode::OK, &json!({"name": repository.name(), "tags": all}))
        .header("cache-control", NO_CACHE)
        .header(API_VERSION.0, API_VERSION.1);
    if let (true, Some(last)) = (more, all.last()) {
        let next = format!("</v2/{}/tags/list?n={page}&last={last}>; rel=\"next\"", repository.name());
        reply = reply.header("link", next);
    }
    Ok(reply.stale(stale))
}

/// A manifest by tag (a provider version's image index, from its document; a module version's
/// package manifest, stored under its tag) or by digest.
async fn manifest<S: Storage>(
    ctx: &Context<S>,
    repository: &Repository,
    reference: &Reference,
    head: bool,
    deadline: tokio::time::Instant,
) -> Result<Reply, Error> {
    let missing = || absent(repository, Kind::Manifest);
    let (bytes, stale) = match (repository, reference) {
        (Repository::Provider(provider), Reference::Tag(version)) => {
            let key = layout::provider_version(provider, version);
            let read =
                ctx.reader.manifest(&key, ProviderVersion::parse, |d| d.oci_index.is_none(), missing, deadline).await?;
            (Bytes::from(read.value.oci_index.clone().unwrap_or_default()), read.stale)
        }
        (Repository::Module(module), Reference::Tag(version)) => {
            let key = layout::oci_module_tag(module, &name::tag(version));
            stored(ctx, &key, None, missing, deadline).await?
        }
        // Stored by the indexer beside the versions' tags when the highest release moves.
        (Repository::Module(module), Reference::Latest) => {
            stored(ctx, &layout::oci_module_tag(module, name::LATEST), None, missing, deadline).await?
        }
        // Providers are installed by version: OpenTofu never asks for `latest`.
        (Repository::Provider(_), Reference::Latest) => return Err(missing()),
        (Repository::Provider(provider), Reference::Digest(digest)) => {
            stored(ctx, &layout::oci_manifest(provider, digest), Some(digest), missing, deadline).await?
        }
        (Repository::Module(module), Reference::Digest(digest)) => {
            let key = layout::oci_module_manifest(module, digest);
            stored(ctx, &key, Some(digest), missing, deadline).await?
        }
    };
    let media_type = crate::oci::artifacts::media_type(&bytes).unwrap_or_else(|| MEDIA_TYPE_MANIFEST.into());
    Ok(content(bytes, &media_type, head).header("cache-control", NO_CACHE).stale(stale))
}

/// Content negotiation (distribution spec, "Pulling manifests"): a client whose `Accept` lists
/// neither the manifest's media type nor a wildcard covering it gets `MANIFEST_UNKNOWN` (the
/// registry converts nothing); no `Accept` takes what there is.
fn accepted(reply: Reply, accept: Option<&str>) -> Result<Reply, Error> {
    let (Some(accept), Some(media_type)) = (accept, reply.header_value("content-type")) else { return Ok(reply) };
    let kind = media_type.split('/').next().unwrap_or_default();
    let takes = accept
        .split(',')
        .map(|a| a.split(';').next().unwrap_or_default().trim())
        .any(|a| a == media_type || a == "*/*" || a.strip_suffix("/*").is_some_and(|k| k == kind));
    match takes {
        true => Ok(reply),
        false => Err(Error::NotFound(format!("the manifest is {media_type}, which the Accept header does not list"))),
    }
}

/// A stored manifest's bytes; one stored by its digest is checked against it first.
async fn stored<S: Storage>(
    ctx: &Context<S>,
    key: &str,
    digest: Option<&str>,
    missing: impl Fn() -> Error,
    deadline: tokio::time::Instant,
) -> Result<(Bytes, bool), Error> {
    let read = ctx.reader.manifest(key, |b| Ok(Bytes::copy_from_slice(b)), Bytes::is_empty, missing, deadline).await?;
    if digest.is_some_and(|d| digest_of(&read.value) != d) {
        return Err(Error::internal(format!("stored manifest {key} does not hash to its digest")));
    }
    Ok(((*read.value).clone(), read.stale))
}

/// A blob: the empty config inline; a zip by a redirect to a presigned URL of the object
/// version the indexer hashed, or of the zip it made (HEAD: size and digest, from the pointer).
async fn blob<S: Storage>(
    ctx: &Context<S>,
    repository: &Repository,
    digest: &str,
    head: bool,
    deadline: tokio::time::Instant,
) -> Result<Reply, Error> {
    if digest == EMPTY_CONFIG_DIGEST {
        return Ok(content(Bytes::from_static(EMPTY_CONFIG), "application/vnd.oci.empty.v1+json", head));
    }
    let missing = || absent(repository, Kind::Blob);
    let (key, wanted) = match repository {
        Repository::Provider(provider) => (layout::oci_blob(provider, digest), Wanted::OciProviderBlob { provider }),
        Repository::Module(module) => (layout::oci_module_blob(module, digest), Wanted::OciModuleBlob { module }),
    };
    let parse = |b: &[u8]| serde_json::from_slice::<OciBlob>(b).map_err(|e| Error::internal_from("OCI blob", e));
    let read = ctx.reader.manifest(&key, parse, |b| b.key.is_empty(), missing, deadline).await?;
    let pointer = &read.value;
    let mut reply = match head {
        true => Reply { status: StatusCode::OK, headers: vec![], body: Bytes::new() }
            .header("content-type", "application/octet-stream")
            .header("content-length", pointer.size.to_string()),
        false => {
            let url = ctx.reader.presign(&pointer.key, pointer.version_id.as_deref(), wanted).await?;
            Reply { status: StatusCode::TEMPORARY_REDIRECT, headers: vec![("location", url)], body: Bytes::new() }
        }
    };
    reply = reply.header(DIGEST_HEADER, digest.to_string()).header(API_VERSION.0, API_VERSION.1);
    Ok(reply.header("cache-control", "no-store"))
}

/// Bytes as an OCI answer: their media type, digest and length (a HEAD too: clients size
/// what they fetch next by it).
fn content(bytes: Bytes, media_type: &str, head: bool) -> Reply {
    let mut reply =
        Reply { status: StatusCode::OK, headers: vec![("content-type", media_type.to_string())], body: Bytes::new() }
            .header(DIGEST_HEADER, digest_of(&bytes))
            .header(API_VERSION.0, API_VERSION.1);
    if head {
        reply = reply.header("content-length", bytes.len().to_string());
    } else {
        reply.body = bytes;
    }
    reply
}

/// An error as OCI clients read it: `{"errors": [{"code", "message"}]}` with the code the
/// distribution spec gives the status and the kind of route, and for 401 a challenge
/// (`challenge`) that names the registry's address `host`, when known.
pub(crate) fn error_reply(error: &Error, raw_path: &str, host: Option<&str>) -> Reply {
    let kind = name::kind(raw_path);
    let code = match (error.status().as_u16(), kind) {
        (401, _) => "UNAUTHORIZED",
        (404, Kind::Manifest) => "MANIFEST_UNKNOWN",
        (404, Kind::Blob) => "BLOB_UNKNOWN",
        (404, _) => "NAME_UNKNOWN",
        (400, _) if name::name_is_invalid(raw_path) => "NAME_INVALID",
        (400, Kind::Manifest) => "MANIFEST_INVALID",
        (400, Kind::Blob) => "DIGEST_INVALID",
        (400, Kind::Token) => "UNSUPPORTED",
        (400, _) => "PAGINATION_NUMBER_INVALID",
        (405, _) => "UNSUPPORTED",
        (429, _) => "TOOMANYREQUESTS",
        _ => "UNKNOWN",
    };
    let body = json!({"errors": [{"code": code, "message": error.public_message(), "detail": null}]});
    let mut reply = Reply::json(error.status(), &body).header(API_VERSION.0, API_VERSION.1);
    if error.status() == StatusCode::UNAUTHORIZED {
        reply = reply.header("www-authenticate", challenge(raw_path, host));
    }
    if error.status() == StatusCode::SERVICE_UNAVAILABLE {
        reply = reply.header("retry-after", "1");
    }
    reply
}

/// The `WWW-Authenticate` of a 401: `Bearer` naming the token endpoint at `host` (and the
/// repository asked for, as `scope`), as registries answer and every OCI client follows,
/// so OpenTofu's `access_token` credentials work as well as a user name and password; `Basic`
/// when the registry's address is not known, since a realm must be absolute. A `Basic`
/// header is read on every route either way.
fn challenge(raw_path: &str, host: Option<&str>) -> String {
    let Some(host) = host else { return r#"Basic realm="terraform-registry", charset="UTF-8""#.into() };
    let mut challenge =
        format!(r#"Bearer realm="https://{host}{}{}",service="{host}""#, crate::oci::BASE_PATH, name::TOKEN);
    // A repository name is lower-case letters, digits, `.`, `_`, `-` and `/`: nothing to quote.
    if let Some(repository) = name::repository_of(raw_path) {
        challenge.push_str(&format!(r#",scope="repository:{}:pull""#, repository.name()));
    }
    challenge
}
