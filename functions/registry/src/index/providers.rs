//! The provider passes: the network mirror's `index.json` and one `VERSION.json` per version,
//! computed from the zips under the provider's upload prefix, with the hashes the indexer
//! computed itself (`h1:` as the CLI checks a zip, `zh:` of the file). A zip's upload or
//! delete runs the version pass (that version's document and its line in `index.json`: two
//! documents read, two listings, whatever the number of versions); repair runs the full pass
//! (every document).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Seek;

use futures_util::StreamExt;

use super::releases::ReleaseObjects;
use super::spool::{Spooled, blocking};
use super::{Indexer, Outcome, Rejections, deprecations};
use crate::address::ProviderAddress;
use crate::archive;
use crate::error::Error;
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
    let stored_index = Indexer::read_document(indexer.storage, &index_key).await?;
    let stored = Indexer::read_document(indexer.storage, &document_key).await?;
    let mut index = match &stored_index {
        None => ProviderIndex::default(),
        Some(o) => match ProviderIndex::parse(&o.bytes) {
            Ok(index) => index,
            Err(e) => {
                tracing::warn!(key = index_key, error = %e, "unreadable; rebuilding the whole provider");
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
                if &p == provider && super::releases::signs(indexer, provider) =>
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
            reads.push(
                async move { Indexer::read_document(storage, &key).await.map(|doc| doc.map(|doc| (version, doc))) },
            );
        }
    }
    let reads: Vec<_> = futures_util::stream::iter(reads).buffer_unordered(DOCUMENT_READS_IN_FLIGHT).collect().await;
    let mut versions = BTreeMap::new();
    for read in reads {
        if let Some((version, doc)) = read? {
            versions.insert(version, doc);
        }
    }
    let index = if has_index { Indexer::read_document(indexer.storage, &index_key).await? } else { None };
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
            .inspect_err(|e| tracing::warn!(key, error = %e, "unreadable; rebuilding it"))
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
    let artifacts = super::oci::attach(provider, &mut document);
    let same = match &existing {
        Some(e) => *e == document,
        None => document == ProviderVersion::default() && stored.is_none(),
    };
    if !same {
        if let Some(artifacts) = &artifacts {
            super::oci::store(indexer.storage, provider, &document, artifacts).await?;
        }
        let precondition = Precondition::replacing(stored.map(|o| o.etag.as_str()));
        indexer.storage.put(&key, to_json(&document)?, CONTENT_TYPE_JSON, precondition).await?;
        super::oci::forget(indexer.storage, provider, existing.as_ref(), &document).await?;
        let mut log = changes(provider, existing.as_ref(), &document);
        let deprecation_key = layout::provider_deprecation(provider, version);
        log.extend(deprecations::change(deprecation_key, was, document.deprecation.as_ref()));
        indexer.log_changes(log).await?;
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
            Some((a, etag)) if indexer.listed_etag(object).await? == etag => Some(a),
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
                    let reason = super::immutable(&what, old.zh(), new.zh());
                    let etag = new.indexed.map(|i| i.etag).unwrap_or_default();
                    let uploaded = ObjectInfo { etag: super::immutable_fingerprint(&etag), ..object.clone() };
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
    if super::releases::signs(indexer, provider) {
        return super::releases::sign_off(indexer, provider, version, checked, release, existing, rejections).await;
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
        indexer.spool_or_reject(object, limit, rejections).await?
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
mod tests {
    use super::super::fixtures::*;
    use super::super::{Indexer, Limits, Outcome};
    use crate::archive;
    use crate::manifest::{ProviderIndex, ProviderVersion};
    use crate::storage::{MemoryStorage, Storage};
    use crate::testing::zip as zip_of;
    use sha2::{Digest, Sha256};

    #[tokio::test]
    async fn provider_documents_follow_the_zips() {
        let s = MemoryStorage::new();
        let indexer = Indexer::new(&s, Limits::default());
        let prefix = "providers/registry.terraform.io/hashicorp/null/";
        let docs = "indexed/providers/registry.terraform.io/hashicorp/null/";
        let zip_a = provider_zip("linux");
        s.insert(&format!("{prefix}terraform-provider-null_3.2.1_linux_amd64.zip"), zip_a.clone());
        s.insert(&format!("{prefix}terraform-provider-null_3.2.1_darwin_arm64.zip"), provider_zip("darwin"));
        s.insert(&format!("{prefix}terraform-provider-null_3.1.0_linux_amd64.zip"), zip_a.clone());
        // A document the indexer wrote for a version whose zips have all gone since.
        s.insert(
            &format!("{docs}2.0.0.json"),
            r#"{"archives":{"linux_amd64":{"url":"terraform-provider-null_2.0.0_linux_amd64.zip","hashes":["h1:x"]}}}"#,
        );
        // An upload's event indexes its own version only; the repair pass, everything.
        let key = format!("{prefix}terraform-provider-null_3.1.0_linux_amd64.zip");
        let (owner, outcome) = indexer.on_object_changed(&key).await.unwrap().unwrap();
        assert_eq!(outcome, Outcome::Written { versions: 1 });
        let index = ProviderIndex::parse(&s.peek(&format!("{docs}index.json")).unwrap()).unwrap();
        assert_eq!(index.versions.keys().collect::<Vec<_>>(), ["3.1.0"]);
        assert_eq!(indexer.reindex(&owner).await.unwrap(), Outcome::Written { versions: 2 });
        let index = ProviderIndex::parse(&s.peek(&format!("{docs}index.json")).unwrap()).unwrap();
        assert_eq!(index.versions.keys().collect::<Vec<_>>(), ["3.1.0", "3.2.1"]);
        let stale = ProviderVersion::parse(&s.peek(&format!("{docs}2.0.0.json")).unwrap()).unwrap();
        assert!(stale.archives.is_empty(), "a version with no zips is emptied, which answers 404");
        let doc = ProviderVersion::parse(&s.peek(&format!("{docs}3.2.1.json")).unwrap()).unwrap();
        let linux = &doc.archives["linux_amd64"];
        assert_eq!(linux.url, "terraform-provider-null_3.2.1_linux_amd64.zip");
        let h1 = archive::summarise_zip(std::io::Cursor::new(zip_a.clone()), &archive::Bounds::UNLIMITED).unwrap().h1;
        assert_eq!(linux.hashes, [format!("zh:{}", hex::encode(Sha256::digest(&zip_a))), h1]);
        assert_eq!(indexer.reindex(&owner).await.unwrap(), Outcome::Unchanged);

        // A bad zip is rejected; the rest of the provider is indexed as before.
        let before = s.peek(&format!("{docs}index.json"));
        let bad = format!("{prefix}terraform-provider-null_4.0.0_linux_amd64.zip");
        s.insert(&bad, "garbage");
        s.insert(
            &format!("{prefix}terraform-provider-null_3.2.1_windows_amd64.zip"),
            zip_of(&[("README", b"no binary")]),
        );
        indexer.reindex(&owner).await.unwrap();
        assert_eq!(s.peek(&format!("{docs}index.json")), before);
        assert!(rejection(&s, &bad).unwrap().reason.contains("not a readable zip"));
        let doc = ProviderVersion::parse(&s.peek(&format!("{docs}3.2.1.json")).unwrap()).unwrap();
        assert_eq!(doc.archives.keys().collect::<Vec<_>>(), ["darwin_arm64", "linux_amd64"]);
    }

    /// A published zip keeps its bytes (versioned bucket, as deployed): other bytes for its
    /// platform are refused with a record and the original object version stays named; a
    /// platform not yet published is added as before.
    #[tokio::test]
    async fn published_zips_are_immutable() {
        let s = MemoryStorage::versioned();
        let indexer = Indexer::new(&s, Limits::default());
        let key = "providers/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.1_linux_amd64.zip";
        let doc_key = "indexed/providers/registry.terraform.io/hashicorp/null/3.2.1.json";
        s.insert(key, provider_zip("original"));
        indexer.on_object_changed(key).await.unwrap();
        let published = ProviderVersion::parse(&s.peek(doc_key).unwrap()).unwrap();
        let original = published.archives["linux_amd64"].version_id().unwrap().to_string();

        s.insert(key, provider_zip("replaced"));
        indexer.on_object_changed(key).await.unwrap();
        let doc = ProviderVersion::parse(&s.peek(doc_key).unwrap()).unwrap();
        assert_eq!(doc, published, "the published zip stays as it was");
        assert_eq!(s.peek_version(key, &original).unwrap(), provider_zip("original"));
        let record = rejection(&s, key).unwrap();
        assert!(record.reason.contains("linux_amd64 of provider"), "{}", record.reason);
        assert!(record.reason.contains("Published versions are immutable"), "{}", record.reason);

        let other = "providers/registry.terraform.io/hashicorp/null/terraform-provider-null_3.2.1_darwin_arm64.zip";
        s.insert(other, provider_zip("darwin"));
        indexer.on_object_changed(other).await.unwrap();
        let doc = ProviderVersion::parse(&s.peek(doc_key).unwrap()).unwrap();
        assert_eq!(doc.archives.keys().collect::<Vec<_>>(), ["darwin_arm64", "linux_amd64"]);
        assert_eq!(doc.archives["linux_amd64"], published.archives["linux_amd64"]);
    }

    /// Publishing or deleting one zip costs the same requests whatever the number of versions:
    /// two documents read, two listings, the zip, two writes at most.
    #[tokio::test]
    async fn one_zip_costs_the_same_at_any_number_of_versions() {
        let prefix = "providers/registry.terraform.io/hashicorp/null/";
        let docs = "indexed/providers/registry.terraform.io/hashicorp/null/";
        let mut costs = Vec::new();
        for versions in [3, 60] {
            let s = MemoryStorage::new();
            let indexer = Indexer::new(&s, Limits::default());
            let zip = provider_zip("any");
            for v in 0..versions {
                s.insert(&format!("{prefix}terraform-provider-null_1.{v}.0_linux_amd64.zip"), zip.clone());
            }
            indexer.reindex(&provider()).await.unwrap();
            let key = format!("{prefix}terraform-provider-null_9.0.0_linux_amd64.zip");
            // Bytes of its own, as a new release has: a zip another version already has also
            // joins that digest's blob pointer (`index::oci`), two requests more.
            s.insert(&key, provider_zip("nine"));
            let before = s.request_count();
            let (_, outcome) = indexer.on_object_changed(&key).await.unwrap().unwrap();
            assert_eq!(outcome, Outcome::Written { versions: versions + 1 });
            let publish = s.request_count() - before;
            let index = ProviderIndex::parse(&s.peek(&format!("{docs}index.json")).unwrap()).unwrap();
            assert_eq!(index.versions.len(), versions + 1);
            assert!(index.versions.contains_key("9.0.0"));
            s.remove(&key);
            let before = s.request_count();
            let (_, outcome) = indexer.on_object_changed(&key).await.unwrap().unwrap();
            assert_eq!(outcome, Outcome::Written { versions });
            let delete = s.request_count() - before;
            let index = ProviderIndex::parse(&s.peek(&format!("{docs}index.json")).unwrap()).unwrap();
            assert!(!index.versions.contains_key("9.0.0"));
            let doc = ProviderVersion::parse(&s.peek(&format!("{docs}9.0.0.json")).unwrap()).unwrap();
            assert!(doc.archives.is_empty(), "emptied, which answers 404");
            // What the full pass would write: the same.
            assert_eq!(indexer.reindex(&provider()).await.unwrap(), Outcome::Unchanged);
            costs.push((publish, delete));
        }
        eprintln!("requests (publish, delete) at 3 and at 60 versions: {costs:?}");
        assert_eq!(costs[0], costs[1], "requests for one publish and one delete at 3 and at 60 versions");
        // At most 8 for the documents, 4 for the publish log (its head, a probe for a newer
        // entry, the entry, the head again), 3 for the catalog (it, the index, the write), and
        // 3 for the OCI artifacts (the platform's manifest, the index, the blob pointer).
        assert!(costs[0].0 <= 18, "{costs:?}");
    }

    /// A version pass over an `index.json` that does not parse repairs the whole provider.
    #[tokio::test]
    async fn an_unreadable_index_is_rebuilt_whole() {
        let s = MemoryStorage::new();
        let indexer = Indexer::new(&s, Limits::default());
        let prefix = "providers/registry.terraform.io/hashicorp/null/";
        let docs = "indexed/providers/registry.terraform.io/hashicorp/null/";
        s.insert(&format!("{prefix}terraform-provider-null_1.0.0_linux_amd64.zip"), provider_zip("a"));
        indexer.reindex(&provider()).await.unwrap();
        s.insert(&format!("{docs}index.json"), "{not json");
        let key = format!("{prefix}terraform-provider-null_2.0.0_linux_amd64.zip");
        s.insert(&key, provider_zip("b"));
        indexer.on_object_changed(&key).await.unwrap();
        let index = ProviderIndex::parse(&s.peek(&format!("{docs}index.json")).unwrap()).unwrap();
        assert_eq!(index.versions.keys().collect::<Vec<_>>(), ["1.0.0", "2.0.0"]);
    }

    /// What a publisher writes beside the zips is an input, never a trusted hash: a
    /// `VERSION.json` claiming the very ETag of a zip, with hashes of other bytes, changes
    /// nothing the mirror serves.
    #[tokio::test]
    async fn publisher_documents_are_never_believed() {
        let s = MemoryStorage::new();
        let indexer = Indexer::new(&s, Limits::default());
        let prefix = "providers/registry.terraform.io/hashicorp/null/";
        let zip_key = format!("{prefix}terraform-provider-null_3.2.1_linux_amd64.zip");
        let zip = provider_zip("real");
        s.insert(&zip_key, zip.clone());
        let etag = s.etag(&zip_key).await.unwrap().unwrap();
        let forged = serde_json::json!({"archives": {"linux_amd64": {
            "url": "terraform-provider-null_3.2.1_linux_amd64.zip",
            "hashes": ["h1:forgedforgedforgedforgedforgedforgedforged00=", "zh:00"],
            "indexed": {"size": zip.len(), "etag": etag}
        }}});
        s.insert(&format!("{prefix}3.2.1.json"), serde_json::to_vec(&forged).unwrap());
        s.insert(&format!("{prefix}index.json"), r#"{"versions":{"3.2.1":{},"9.9.9":{}}}"#);
        indexer.reindex(&provider()).await.unwrap();
        let docs = "indexed/providers/registry.terraform.io/hashicorp/null/";
        let doc = ProviderVersion::parse(&s.peek(&format!("{docs}3.2.1.json")).unwrap()).unwrap();
        let h1 = archive::summarise_zip(std::io::Cursor::new(zip.clone()), &archive::Bounds::UNLIMITED).unwrap().h1;
        assert_eq!(doc.archives["linux_amd64"].hashes, [format!("zh:{}", hex::encode(Sha256::digest(&zip))), h1]);
        let index = ProviderIndex::parse(&s.peek(&format!("{docs}index.json")).unwrap()).unwrap();
        assert_eq!(index.versions.keys().collect::<Vec<_>>(), ["3.2.1"], "only versions with zips");
        // The publisher's files stay as they were, and are not rejected: they are names a
        // synced `terraform providers mirror` directory holds.
        assert_eq!(s.peek(&format!("{prefix}3.2.1.json")).unwrap(), serde_json::to_vec(&forged).unwrap());
        assert!(rejection(&s, &format!("{prefix}3.2.1.json")).is_none());
    }
}
