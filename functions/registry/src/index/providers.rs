//! The provider passes: the network mirror's `index.json` and one `VERSION.json` per version,
//! computed from the zips under the provider's upload prefix, with the hashes the indexer
//! computed itself (`h1:` as the CLI checks a zip, `zh:` of the file). A zip's upload or
//! delete runs the version pass (that version's document and its line in `index.json`: two
//! documents read, two listings, whatever the number of versions); repair runs the full pass
//! (every document).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Seek;

use futures_util::StreamExt;

use super::documents::{self, read_document, read_finished};
use super::indexer::{Indexer, Outcome};
use super::intake::{listed_etag, spool_or_reject};
use super::rejections::{Rejections, immutable, immutable_fingerprint};
use super::releases::{self, ReleaseObjects};
use super::spool::{Spooled, blocking};
use super::{deprecations, oci};
use crate::address::ProviderAddress;
use crate::archive;
use crate::error::{Error, chain};
use crate::layout::{self, ObjectKind, Owner, Platform};
use crate::manifest::{CONTENT_TYPE_JSON, Indexed, ProviderArchive, ProviderIndex, ProviderVersion, to_json};
use crate::publish_log::{Action, Change};
use crate::storage::{Object, ObjectInfo, Precondition, Storage};

/// Concurrent reads of a provider's `VERSION.json` documents in one pass.
const DOCUMENT_READS_IN_FLIGHT: usize = 16;

/// One listing of a provider's uploads (all versions, or one): zips by version and platform,
/// and each version's other release files.
#[derive(Default)]
struct Listing {
    zips: BTreeMap<semver::Version, BTreeMap<Platform, ObjectInfo>>,
    releases: BTreeMap<semver::Version, ReleaseObjects>,
    /// Deprecation files by version.
    deprecations: BTreeMap<semver::Version, ObjectInfo>,
}

/// The documents a pass may replace, as read before its listing (rule 1).
struct Documents {
    versions: BTreeMap<semver::Version, Object>,
    index: Option<Object>,
}

/// Rebuild one provider's mirror documents from its zips.
pub(super) async fn provider_pass<S: Storage>(
    indexer: &Indexer<'_, S>,
    provider: &ProviderAddress,
) -> Result<Outcome, Error> {
    let read = read_documents(indexer, provider).await?;
    let (listing, mut rejections) = list_zips(indexer, provider, &layout::provider_prefix(provider)).await?;

    let mut changed = false;
    let mut listed = BTreeMap::new();
    let all_versions: BTreeSet<semver::Version> = listing
        .zips
        .keys()
        .chain(listing.releases.keys())
        .chain(listing.deprecations.keys())
        .chain(read.versions.keys())
        .cloned()
        .collect();
    for version in all_versions {
        let uploads = Uploads {
            platforms: listing.zips.get(&version).cloned().unwrap_or_default(),
            release: listing.releases.get(&version).cloned().unwrap_or_default(),
            deprecation: listing.deprecations.get(&version).cloned(),
        };
        let stored = read.versions.get(&version);
        let (document, written) =
            update_version_document(indexer, provider, &version, &uploads, stored, &mut rejections).await?;
        if !document.archives.is_empty() {
            listed.insert(version.to_string(), document.index_line());
        }
        changed |= written;
    }
    rejections.clear_stale(indexer.storage).await?;

    // index.json last: it never lists a version whose VERSION.json is not written yet.
    let index = ProviderIndex { versions: listed };
    let existing_index = read.index.as_ref().and_then(|o| ProviderIndex::parse(&o.bytes).ok());
    let same = match &existing_index {
        Some(e) => *e == index,
        None => index.versions.is_empty() && read.index.is_none(),
    };
    if !same {
        let precondition = Precondition::replacing(read.index.as_ref().map(|o| o.etag.as_str()));
        indexer
            .storage
            .put(&layout::provider_index(provider), to_json(&index)?, CONTENT_TYPE_JSON, precondition)
            .await?;
        changed = true;
    }
    Ok(if changed { Outcome::Written { versions: index.versions.len() } } else { Outcome::Unchanged })
}

/// One version: its `VERSION.json` from a listing of its zips alone, then its line in
/// `index.json` (added when the version has a servable zip, removed when none is left).
/// Rules 1 and 2 as in every pass: both documents read before the listing, both written
/// only if still what was read. An `index.json` that does not parse is repaired by the
/// full pass instead.
pub(super) async fn provider_version_pass<S: Storage>(
    indexer: &Indexer<'_, S>,
    provider: &ProviderAddress,
    version: &semver::Version,
) -> Result<Outcome, Error> {
    let (index_key, document_key) = (layout::provider_index(provider), layout::provider_version(provider, version));
    let stored_index = read_document(indexer.storage, &index_key).await?;
    let stored = read_finished::<_, ProviderVersion>(indexer.storage, &document_key).await?;
    let mut index = match &stored_index {
        None => ProviderIndex::default(),
        Some(o) => match ProviderIndex::parse(&o.bytes) {
            Ok(index) => index,
            Err(e) => {
                tracing::warn!(key = index_key, error = %chain(&e), "unreadable; rebuilding the whole provider");
                return provider_pass(indexer, provider).await;
            }
        },
    };
    let prefix = layout::provider_version_prefix(provider, version);
    let (mut listing, mut rejections) = list_zips(indexer, provider, &prefix).await?;
    let uploads = Uploads {
        platforms: listing.zips.remove(version).unwrap_or_default(),
        release: listing.releases.remove(version).unwrap_or_default(),
        deprecation: listing.deprecations.remove(version),
    };
    let (document, mut changed) =
        update_version_document(indexer, provider, version, &uploads, stored.as_ref(), &mut rejections).await?;
    rejections.clear_stale(indexer.storage).await?;

    // index.json after the document: it never lists a version whose VERSION.json is not written yet.
    let line = version.to_string();
    let before = index.versions.get(&line).cloned();
    let after = (!document.archives.is_empty()).then(|| document.index_line());
    match &after {
        Some(value) => index.versions.insert(line, value.clone()),
        None => index.versions.remove(&line),
    };
    if before != after {
        let precondition = Precondition::replacing(stored_index.as_ref().map(|o| o.etag.as_str()));
        indexer.storage.put(&index_key, to_json(&index)?, CONTENT_TYPE_JSON, precondition).await?;
        changed = true;
    }
    Ok(if changed { Outcome::Written { versions: index.versions.len() } } else { Outcome::Unchanged })
}

/// The provider's zips under `prefix` (all of them, or one version's), by version and
/// platform, and the rejection records under it; keys there that fit no name of the layout
/// get theirs now.
async fn list_zips<S: Storage>(
    indexer: &Indexer<'_, S>,
    provider: &ProviderAddress,
    prefix: &str,
) -> Result<(Listing, Rejections), Error> {
    let objects = indexer.storage.list(prefix).await?;
    let mut rejections = Rejections::load(indexer.storage, prefix, indexer.principals()).await?;
    let mut listing = Listing::default();
    let mut misnamed = Vec::new();
    for object in objects {
        match layout::classify(&object.key) {
            Some(ObjectKind::Unrecognised(_)) => misnamed.push(object),
            Some(ObjectKind::Deprecation { owner: Owner::Provider(p), version }) if &p == provider => {
                listing.deprecations.insert(version, object);
            }
            Some(ObjectKind::ProviderArchive { provider: p, version, platform }) if &p == provider => {
                listing.zips.entry(version).or_default().insert(platform, object);
            }
            // Only a release of the registry's own host is signed; elsewhere (a mirrored
            // provider) these files are what a release directory holds, never read.
            Some(ObjectKind::ProviderReleaseFile { provider: p, version, file })
                if &p == provider && releases::signs(indexer, provider) =>
            {
                listing.releases.entry(version).or_default().set(file, object);
            }
            // index.json / VERSION.json from a synced `terraform providers mirror`
            // directory: a name the layout accepts, never read.
            _ => {}
        }
    }
    rejections.reject_misnamed(indexer.storage, &misnamed).await?;
    Ok((listing, rejections))
}

/// Rule 1: every document this pass may replace, before the listing it computes from.
/// They are the indexer's own, under `indexed/`: a `VERSION.json` a publisher uploaded
/// beside the zips is never read, so no hash in it is ever believed. A provider may have
/// hundreds of versions: their documents are read concurrently, a bounded number at a time.
async fn read_documents<S: Storage>(indexer: &Indexer<'_, S>, provider: &ProviderAddress) -> Result<Documents, Error> {
    let index_key = layout::provider_index(provider);
    let written = indexer.storage.list(&layout::provider_documents_prefix(provider)).await?;
    let has_index = written.iter().any(|o| o.key == index_key);
    let mut reads = Vec::new();
    for object in &written {
        if let Some(ObjectKind::ProviderVersion { provider: p, version }) = layout::classify(&object.key)
            && &p == provider
        {
            let (storage, key) = (indexer.storage, object.key.clone());
            reads.push(async move {
                let read = read_finished::<_, ProviderVersion>(storage, &key).await;
                read.map(|doc| doc.map(|doc| (version, doc)))
            });
        }
    }
    let reads: Vec<_> = futures_util::stream::iter(reads).buffer_unordered(DOCUMENT_READS_IN_FLIGHT).collect().await;
    let mut versions = BTreeMap::new();
    for read in reads {
        if let Some((version, doc)) = read? {
            versions.insert(version, doc);
        }
    }
    let index = if has_index { read_document(indexer.storage, &index_key).await? } else { None };
    Ok(Documents { versions, index })
}

/// One version's uploads: its zips by platform, its release files, its deprecation file.
struct Uploads {
    platforms: BTreeMap<Platform, ObjectInfo>,
    release: ReleaseObjects,
    deprecation: Option<ObjectInfo>,
}

/// Rebuild one version's document from its uploads and write it if it changed (only over
/// what was read: `stored`). Returns the document and whether it was written.
async fn update_version_document<S: Storage>(
    indexer: &Indexer<'_, S>,
    provider: &ProviderAddress,
    version: &semver::Version,
    uploads: &Uploads,
    stored: Option<&Object>,
    rejections: &mut Rejections,
) -> Result<(ProviderVersion, bool), Error> {
    let key = layout::provider_version(provider, version);
    let existing = stored.and_then(|o| {
        ProviderVersion::parse(&o.bytes)
            .inspect_err(|e| tracing::warn!(key, error = %chain(e), "unreadable; rebuilding it"))
            .ok()
    });
    let (platforms, release) = (&uploads.platforms, &uploads.release);
    let mut document =
        version_document(indexer, provider, version, platforms, release, existing.as_ref(), rejections).await?;
    let was = existing.as_ref().and_then(|e| e.deprecation.as_ref());
    document.deprecation = match &uploads.deprecation {
        Some(file) if !document.archives.is_empty() => {
            deprecations::read(indexer.storage, file, was, rejections).await?
        }
        Some(file) => {
            let what = format!("version {version} of provider {provider}");
            deprecations::refuse_orphan(indexer.storage, file, &what, rejections).await?;
            None
        }
        None => None,
    };
    let artifacts = oci::attach(provider, &mut document);
    let same = match &existing {
        Some(e) => *e == document,
        None => document == ProviderVersion::default() && stored.is_none(),
    };
    if !same {
        if let Some(artifacts) = &artifacts {
            oci::store(indexer.storage, provider, &document, artifacts).await?;
        }
        let precondition = Precondition::replacing(stored.map(|o| o.etag.as_str()));
        let mut log = changes(provider, existing.as_ref(), &document);
        let deprecation_key = layout::provider_deprecation(provider, version);
        log.extend(deprecations::change(deprecation_key, was, document.deprecation.as_ref()));
        let forget = oci::forget(provider, existing.as_ref(), &document);
        documents::write(indexer.storage, &key, &document, precondition, documents::named(indexer, log), forget)
            .await?;
    }
    Ok((document, !same))
}

/// One version's document: each platform's zip as recorded before if its ETag is
/// unchanged, else checked and hashed now; a zip rejected now keeps what was published for
/// its platform. Under the registry's own host, the release's signature then decides what
/// is served (`releases`).
async fn version_document<S: Storage>(
    indexer: &Indexer<'_, S>,
    provider: &ProviderAddress,
    version: &semver::Version,
    platforms: &BTreeMap<Platform, ObjectInfo>,
    release: &ReleaseObjects,
    existing: Option<&ProviderVersion>,
    rejections: &mut Rejections,
) -> Result<ProviderVersion, Error> {
    let mut checked = BTreeMap::new();
    for (platform, object) in platforms {
        let file = layout::provider_archive_name(provider, version, platform);
        // Served, or checked and waiting for its release's signature.
        let published = existing.and_then(|d| d.archives.get(&platform.key()));
        let previous = published.or_else(|| existing.and_then(|d| d.pending.get(&platform.key())));
        let recorded = previous
            .filter(|a| a.url == file)
            .and_then(|a| a.indexed.as_ref().filter(|i| !i.etag.is_empty()).map(|i| (a, i.etag.as_str())));
        let unchanged = match recorded {
            Some((a, etag)) if listed_etag(indexer, object).await? == etag => Some(a),
            _ => None,
        };
        let archive = match unchanged {
            Some(a) => {
                rejections.keep(&object.key);
                Some(a.clone())
            }
            None => match (index_provider_zip(indexer, provider, object, file, rejections).await?, published) {
                (Some(new), Some(old)) if new.zh() == old.zh() => {
                    // The same bytes again: still the object first published.
                    let etag = new.indexed.map(|i| i.etag).unwrap_or_default();
                    let mut kept = old.clone();
                    if let Some(indexed) = kept.indexed.as_mut() {
                        indexed.etag = etag;
                    }
                    Some(kept)
                }
                (Some(new), Some(old)) if !indexer.limits.overwrite_published => {
                    let what = format!("{} of provider {provider} {version}", platform.key());
                    let reason = immutable(&what, old.zh(), new.zh());
                    let etag = new.indexed.map(|i| i.etag).unwrap_or_default();
                    let uploaded = ObjectInfo { etag: immutable_fingerprint(&etag), ..object.clone() };
                    rejections.reject(indexer.storage, &uploaded, reason).await?;
                    Some(old.clone())
                }
                (Some(new), _) => Some(new),
                (None, published) => published.cloned(),
            },
        };
        if let Some(archive) = archive {
            checked.insert(platform.clone(), (object.clone(), archive));
        }
    }
    if releases::signs(indexer, provider) {
        return releases::sign_off(indexer, provider, version, checked, release, existing, rejections).await;
    }
    let archives = checked.into_iter().map(|(platform, (_, archive))| (platform.key(), archive)).collect();
    Ok(ProviderVersion { archives, ..ProviderVersion::default() })
}

/// Validate and hash a provider zip; `None` (with a rejection record) if it is bad.
async fn index_provider_zip<S: Storage>(
    indexer: &Indexer<'_, S>,
    provider: &ProviderAddress,
    object: &ObjectInfo,
    url: String,
    rejections: &mut Rejections,
) -> Result<Option<ProviderArchive>, Error> {
    let limit = (indexer.limits.provider_zip_bytes, "REGISTRY_MAX_PROVIDER_ZIP_BYTES");
    let Some(Spooled { mut file, sha256, size, etag, version_id }) =
        spool_or_reject(indexer, object, limit, rejections).await?
    else {
        return Ok(None);
    };
    let (r#type, bounds) = (provider.r#type.clone(), indexer.limits.bounds());
    let verdict = blocking(move || {
        file.rewind().map_err(|e| e.to_string())?;
        archive::check_provider_zip(file, &r#type, &bounds)
    })
    .await?;
    match verdict {
        Ok(summary) => {
            if summary.directory_entries > 0 {
                tracing::warn!(
                    key = object.key,
                    directory_entries = summary.directory_entries,
                    "provider zip has directory entries: the CLI checks them as empty files but then locks a files-only hash, \
                     so the next `terraform init` with that lock file fails; rebuild the zip without them (zip -D)"
                );
            }
            rejections.clear(indexer.storage, &object.key).await?;
            Ok(Some(ProviderArchive {
                url,
                // `zh:` first: the cheaper check for the CLI (`hashes_for_cli`).
                hashes: vec![format!("zh:{sha256}"), summary.h1],
                indexed: Some(Indexed { size, etag, version_id }),
            }))
        }
        Err(reason) => {
            rejections.reject(indexer.storage, &ObjectInfo { etag, ..object.clone() }, reason).await?;
            Ok(None)
        }
    }
}

/// What a `VERSION.json` write changed, as publish log entries: each served zip that is new
/// or other bytes is published (the old one yanked if its key changed), each zip no longer
/// served is yanked.
fn changes(provider: &ProviderAddress, before: Option<&ProviderVersion>, after: &ProviderVersion) -> Vec<Change> {
    let prefix = layout::provider_prefix(provider);
    let change = |action, a: &ProviderArchive| Change {
        action,
        key: format!("{prefix}{}", a.url),
        sha256: Some(a.zh().to_string()).filter(|h| !h.is_empty()),
        size: a.indexed.as_ref().map(|i| i.size),
        etag: a.indexed.as_ref().map(|i| i.etag.clone()).filter(|e| !e.is_empty()),
        version_id: a.version_id().map(str::to_string),
        principal: None,
        reason: None,
    };
    let old = |platform: &str| before.and_then(|d| d.archives.get(platform));
    let mut out = Vec::new();
    for (platform, a) in &after.archives {
        match old(platform) {
            Some(o) if o.url == a.url && o.zh() == a.zh() && o.version_id() == a.version_id() => {}
            Some(o) => {
                if o.url != a.url {
                    out.push(change(Action::Yank, o));
                }
                out.push(change(Action::Publish, a));
            }
            None => out.push(change(Action::Publish, a)),
        }
    }
    for (platform, o) in before.map(|d| &d.archives).into_iter().flatten() {
        if !after.archives.contains_key(platform) {
            out.push(change(Action::Yank, o));
        }
    }
    out
}

#[cfg(test)]
mod tests;
