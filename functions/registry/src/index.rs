//! The indexing core: given the archives present under one module or provider prefix, write
//! that owner's manifest. The local registry calls it on every upload or delete through its
//! embedded S3; the indexer Lambda will call it on S3 events; `reindex_all` rebuilds every
//! manifest. It is idempotent: when nothing changed it writes nothing, so its own manifest
//! writes (which also raise events) end after one extra, read-only pass.

use std::collections::BTreeMap;
use std::io::{Read, Seek, Write};

use base64::Engine;
use bytes::Bytes;
use sha2::{Digest, Sha256};

use crate::address::{ModuleAddress, ProviderAddress};
use crate::error::Error;
use crate::layout::{self, ObjectKind, Owner, Platform};
use crate::manifest::{
    Indexed, ModuleManifest, ModuleVersion, ProviderArchive, ProviderIndex, ProviderVersion,
};
use crate::storage::{ObjectInfo, Storage};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The manifest already said this.
    Unchanged,
    /// Manifests were written (module: 1; provider: index plus changed VERSION.json files).
    Written { versions: usize },
    /// The last archive went, so the manifest went too (the module or provider is now 404).
    Removed,
}

/// React to one changed key (created or removed): rebuild the manifest of its owner.
/// Keys outside the layout are ignored (`None`).
pub async fn on_object_changed<S: Storage>(
    storage: &S,
    key: &str,
) -> Result<Option<(Owner, Outcome)>, Error> {
    let Some(kind) = layout::classify(key) else {
        tracing::debug!(key = %crate::address::printable(key), "key outside the registry layout; ignored");
        return Ok(None);
    };
    let owner = kind.owner();
    let outcome = reindex(storage, &owner).await?;
    Ok(Some((owner, outcome)))
}

pub async fn reindex<S: Storage>(storage: &S, owner: &Owner) -> Result<Outcome, Error> {
    let outcome = match owner {
        Owner::Module(m) => reindex_module(storage, m).await?,
        Owner::Provider(p) => reindex_provider(storage, p).await?,
    };
    tracing::info!(?owner, ?outcome, "indexed");
    Ok(outcome)
}

/// Rebuild every manifest from the archives present (repair, migration). Idempotent.
pub async fn reindex_all<S: Storage>(storage: &S) -> Result<Vec<(Owner, Outcome)>, Error> {
    let mut owners = std::collections::BTreeSet::new();
    for prefix in [layout::MODULES_PREFIX, layout::PROVIDERS_PREFIX] {
        for object in storage.list(prefix).await? {
            if let Some(kind) = layout::classify(&object.key) {
                owners.insert(kind.owner());
            }
        }
    }
    let mut results = Vec::with_capacity(owners.len());
    for owner in owners {
        let outcome = reindex(storage, &owner).await?;
        results.push((owner, outcome));
    }
    Ok(results)
}

async fn reindex_module<S: Storage>(storage: &S, module: &ModuleAddress) -> Result<Outcome, Error> {
    let manifest_key = layout::module_manifest(module);
    let objects = storage.list(&layout::module_prefix(module)).await?;
    let existing = match storage.get(&manifest_key).await? {
        Some(o) => ModuleManifest::parse(&o.bytes)
            .inspect_err(|e| tracing::warn!(key = manifest_key, error = %e, "existing manifest unreadable; rebuilding it"))
            .ok(),
        None => None,
    };

    // One archive per version. Two formats of one version is a publishing mistake: keep the
    // first by extension preference (the order of MODULE_ARCHIVE_EXTENSIONS) and say so.
    let mut chosen: BTreeMap<semver::Version, (ObjectInfo, usize)> = BTreeMap::new();
    for object in objects {
        if let Some(ObjectKind::ModuleArchive {
            module: m,
            version,
            extension,
        }) = layout::classify(&object.key)
            && &m == module
        {
            let rank = layout::MODULE_ARCHIVE_EXTENSIONS
                .iter()
                .position(|e| *e == extension)
                .unwrap_or(usize::MAX);
            match chosen.get(&version) {
                Some((kept, kept_rank)) if *kept_rank <= rank => {
                    tracing::warn!(
                        kept = kept.key,
                        ignored = object.key,
                        "two archives for one version; serving the first"
                    );
                }
                _ => {
                    chosen.insert(version, (object, rank));
                }
            }
        }
    }

    let mut versions = Vec::with_capacity(chosen.len());
    for (version, (object, _)) in chosen {
        let reused = existing
            .as_ref()
            .and_then(|m| m.find(&version))
            .filter(|e| e.archive == object.key && e.etag == object.etag && !e.etag.is_empty());
        let entry = match reused {
            Some(e) => e.clone(),
            None => {
                let mut hasher = Sha256::new();
                let mut size = 0u64;
                let etag = storage
                    .stream(&object.key, |chunk| {
                        hasher.update(chunk);
                        size += chunk.len() as u64;
                        Ok(())
                    })
                    .await?;
                let Some(etag) = etag else { continue }; // deleted since the listing
                ModuleVersion {
                    version: version.to_string(),
                    archive: object.key,
                    size,
                    sha256: hex::encode(hasher.finalize()),
                    etag,
                }
            }
        };
        versions.push(entry);
    }

    if versions.is_empty() {
        if existing.is_some() {
            storage.delete(&manifest_key).await?;
            return Ok(Outcome::Removed);
        }
        return Ok(Outcome::Unchanged);
    }
    let manifest = ModuleManifest::new(versions);
    if existing.as_ref() == Some(&manifest) {
        return Ok(Outcome::Unchanged);
    }
    let count = manifest.versions.len();
    storage
        .put(
            &manifest_key,
            to_json(&manifest)?,
            crate::app::CONTENT_TYPE_JSON,
        )
        .await?;
    Ok(Outcome::Written { versions: count })
}

async fn reindex_provider<S: Storage>(
    storage: &S,
    provider: &ProviderAddress,
) -> Result<Outcome, Error> {
    let index_key = layout::provider_index(provider);
    let objects = storage.list(&layout::provider_prefix(provider)).await?;

    let mut zips: BTreeMap<semver::Version, BTreeMap<Platform, ObjectInfo>> = BTreeMap::new();
    let mut documents: Vec<semver::Version> = Vec::new();
    let mut has_index = false;
    for object in objects {
        match layout::classify(&object.key) {
            Some(ObjectKind::ProviderArchive {
                provider: p,
                version,
                platform,
            }) if &p == provider => {
                zips.entry(version).or_default().insert(platform, object);
            }
            Some(ObjectKind::ProviderVersion {
                provider: p,
                version,
            }) if &p == provider => documents.push(version),
            Some(ObjectKind::ProviderIndex(p)) if &p == provider => has_index = true,
            _ => {}
        }
    }

    let mut changed = false;
    for (version, platforms) in &zips {
        let key = layout::provider_version(provider, version);
        let existing = if documents.contains(version) {
            match storage.get(&key).await? {
                Some(o) => ProviderVersion::parse(&o.bytes)
                    .inspect_err(|e| tracing::warn!(key, error = %e, "unreadable; rebuilding it"))
                    .ok(),
                None => None,
            }
        } else {
            None
        };
        let mut doc = ProviderVersion::default();
        for (platform, object) in platforms {
            let file = layout::provider_archive_name(provider, version, platform);
            let reused = existing
                .as_ref()
                .and_then(|d| d.archives.get(&platform.key()))
                .filter(|a| {
                    a.url == file
                        && a.indexed
                            .as_ref()
                            .is_some_and(|i| i.etag == object.etag && !i.etag.is_empty())
                });
            let archive = match reused {
                Some(a) => a.clone(),
                None => match hash_provider_zip(storage, &object.key).await? {
                    Some(h) => ProviderArchive {
                        url: file,
                        hashes: vec![h.h1, h.zh],
                        indexed: Some(Indexed {
                            size: h.size,
                            etag: h.etag,
                        }),
                    },
                    None => continue, // deleted since the listing
                },
            };
            doc.archives.insert(platform.key(), archive);
        }
        if existing.as_ref() != Some(&doc) {
            storage
                .put(&key, to_json(&doc)?, crate::app::CONTENT_TYPE_JSON)
                .await?;
            changed = true;
        }
    }

    // index.json after the VERSION.json files it points at; stale VERSION.json files after
    // index.json stopped pointing at them. A reader never follows a link to nothing.
    if zips.is_empty() {
        if has_index {
            storage.delete(&index_key).await?;
            changed = true;
        }
    } else {
        let index = ProviderIndex {
            versions: zips
                .keys()
                .map(|v| (v.to_string(), serde_json::json!({})))
                .collect(),
        };
        let existing = match has_index {
            true => storage
                .get(&index_key)
                .await?
                .and_then(|o| ProviderIndex::parse(&o.bytes).ok()),
            false => None,
        };
        if existing.as_ref() != Some(&index) {
            storage
                .put(&index_key, to_json(&index)?, crate::app::CONTENT_TYPE_JSON)
                .await?;
            changed = true;
        }
    }
    for version in documents.iter().filter(|v| !zips.contains_key(v)) {
        storage
            .delete(&layout::provider_version(provider, version))
            .await?;
        changed = true;
    }
    Ok(match (changed, zips.is_empty()) {
        (false, _) => Outcome::Unchanged,
        (true, true) => Outcome::Removed,
        (true, false) => Outcome::Written {
            versions: zips.len(),
        },
    })
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<Bytes, Error> {
    let mut bytes = serde_json::to_vec_pretty(value)
        .map_err(|e| Error::Internal(format!("serialise manifest: {e}")))?;
    bytes.push(b'\n');
    Ok(bytes.into())
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZipHashes {
    /// What the CLI checks: `h1:` over every entry of the zip.
    pub h1: String,
    /// SHA-256 of the zip file itself.
    pub zh: String,
    pub size: u64,
    pub etag: String,
    /// Directory entries found (see `h1_of_zip`).
    pub directory_entries: usize,
}

/// Spool the zip to a temporary file (Lambda's `/tmp`), hashing it on the way (`zh:`), then
/// hash its entries (`h1:`). Memory stays at one chunk plus one entry buffer, whatever the size.
pub async fn hash_provider_zip<S: Storage>(
    storage: &S,
    key: &str,
) -> Result<Option<ZipHashes>, Error> {
    let io = |e: std::io::Error| Error::Internal(format!("temporary file for {key}: {e}"));
    let mut file = tempfile::tempfile().map_err(io)?;
    let mut zh = Sha256::new();
    let mut size = 0u64;
    let etag = storage
        .stream(key, |chunk| {
            zh.update(chunk);
            size += chunk.len() as u64;
            file.write_all(chunk).map_err(io)
        })
        .await?;
    let Some(etag) = etag else { return Ok(None) };
    let zh = format!("zh:{}", hex::encode(zh.finalize()));
    let key_owned = key.to_string();
    let (h1, directory_entries) = tokio::task::spawn_blocking(move || {
        file.rewind()
            .map_err(|e| Error::Internal(format!("rewind {key_owned}: {e}")))?;
        h1_of_zip(file).map_err(|e| {
            Error::BadRequest(format!("{key_owned} is not a readable provider zip: {e}"))
        })
    })
    .await
    .map_err(|e| Error::Internal(format!("hashing task: {e}")))??;
    if directory_entries > 0 {
        tracing::warn!(
            key,
            directory_entries,
            "provider zip has directory entries: the CLI checks them as empty files and then locks a files-only hash, \
             so the next `terraform init` with that lock file fails; rebuild the zip without directory entries (zip -D)"
        );
    }
    Ok(Some(ZipHashes {
        h1,
        zh,
        size,
        etag,
        directory_entries,
    }))
}

/// The `h1:` hash exactly as the CLI computes it for a zip (Go's `dirhash.HashZip` with
/// `Hash1`): for every entry, sorted by name, the line `"<sha256 hex>  <name>\n"`, then
/// base64 of the SHA-256 of all lines. Directory entries count as empty files, as they do in
/// the CLI's check. Answers the hash and the number of directory entries.
pub fn h1_of_zip<R: Read + Seek>(reader: R) -> Result<(String, usize), String> {
    let mut archive = zip::ZipArchive::new(reader).map_err(|e| e.to_string())?;
    let mut lines: Vec<(Vec<u8>, String)> = Vec::with_capacity(archive.len());
    let mut directory_entries = 0;
    let mut buffer = vec![0u8; 64 * 1024];
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).map_err(|e| e.to_string())?;
        let name = entry.name_raw().to_vec();
        if name.contains(&b'\n') {
            return Err("an entry name contains a newline".into());
        }
        if name.ends_with(b"/") {
            directory_entries += 1;
        }
        let mut hasher = Sha256::new();
        loop {
            let n = entry
                .read(&mut buffer)
                .map_err(|e| format!("entry {}: {e}", String::from_utf8_lossy(&name)))?;
            if n == 0 {
                break;
            }
            hasher.update(&buffer[..n]);
        }
        lines.push((name, hex::encode(hasher.finalize())));
    }
    lines.sort_by(|a, b| a.0.cmp(&b.0));
    let mut summary = Sha256::new();
    for (name, hex) in &lines {
        summary.update(hex.as_bytes());
        summary.update(b"  ");
        summary.update(name);
        summary.update(b"\n");
    }
    Ok((
        format!(
            "h1:{}",
            base64::engine::general_purpose::STANDARD.encode(summary.finalize())
        ),
        directory_entries,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::MemoryStorage;

    fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        for (name, data) in entries {
            if name.ends_with('/') {
                w.add_directory(*name, zip::write::SimpleFileOptions::default())
                    .unwrap();
            } else {
                w.start_file(*name, zip::write::SimpleFileOptions::default())
                    .unwrap();
                w.write_all(data).unwrap();
            }
        }
        w.finish().unwrap().into_inner()
    }

    #[test]
    fn h1_matches_the_cli_algorithm() {
        // Independent computation of the documented algorithm for a two-file zip.
        let zip = zip_of(&[("terraform-provider-x_v1", b"binary"), ("LICENSE", b"MIT")]);
        let line =
            |data: &[u8], name: &str| format!("{}  {name}\n", hex::encode(Sha256::digest(data)));
        let expected = format!(
            "{}{}",
            line(b"MIT", "LICENSE"),
            line(b"binary", "terraform-provider-x_v1")
        );
        let expected = format!(
            "h1:{}",
            base64::engine::general_purpose::STANDARD.encode(Sha256::digest(expected.as_bytes()))
        );
        assert_eq!(h1_of_zip(std::io::Cursor::new(zip)).unwrap(), (expected, 0));
        // Directory entries count as empty files and are reported.
        let with_dir = zip_of(&[("docs/", b""), ("docs/a", b"a")]);
        let lines = format!("{}{}", line(b"", "docs/"), line(b"a", "docs/a"));
        let expected = format!(
            "h1:{}",
            base64::engine::general_purpose::STANDARD.encode(Sha256::digest(lines.as_bytes()))
        );
        assert_eq!(
            h1_of_zip(std::io::Cursor::new(with_dir)).unwrap(),
            (expected, 1)
        );
        assert!(h1_of_zip(std::io::Cursor::new(b"not a zip".to_vec())).is_err());
    }

    #[tokio::test]
    async fn module_manifest_follows_the_archives() {
        let s = MemoryStorage::new();
        s.insert("modules/acme/vpc/aws/1.0.0.tar.gz", "one");
        s.insert("modules/acme/vpc/aws/1.1.0.zip", "two");
        s.insert("modules/acme/vpc/aws/notes.txt", "ignored");
        let owner = Owner::Module(ModuleAddress::parse("acme", "vpc", "aws").unwrap());
        assert_eq!(
            reindex(&s, &owner).await.unwrap(),
            Outcome::Written { versions: 2 }
        );
        let m =
            ModuleManifest::parse(&s.peek("modules/acme/vpc/aws/manifest.json").unwrap()).unwrap();
        assert_eq!(
            m.versions
                .iter()
                .map(|v| v.version.as_str())
                .collect::<Vec<_>>(),
            ["1.1.0", "1.0.0"]
        );
        assert_eq!(m.versions[1].sha256, hex::encode(Sha256::digest(b"one")));
        assert_eq!(m.versions[1].size, 3);
        assert_eq!(m.versions[0].archive, "modules/acme/vpc/aws/1.1.0.zip");

        // Nothing changed: no write, and unchanged archives are not read again.
        let before = s.request_count();
        assert_eq!(reindex(&s, &owner).await.unwrap(), Outcome::Unchanged);
        assert_eq!(
            s.request_count() - before,
            2,
            "one list and one manifest read"
        );

        // A second format of one version: the preferred extension wins.
        s.insert("modules/acme/vpc/aws/1.1.0.tar.gz", "two-tgz");
        reindex(&s, &owner).await.unwrap();
        let m =
            ModuleManifest::parse(&s.peek("modules/acme/vpc/aws/manifest.json").unwrap()).unwrap();
        assert_eq!(m.versions[0].archive, "modules/acme/vpc/aws/1.1.0.tar.gz");

        // Yank everything: the manifest goes.
        for key in s.keys() {
            if !key.ends_with("manifest.json") {
                s.delete(&key).await.unwrap();
            }
        }
        assert_eq!(reindex(&s, &owner).await.unwrap(), Outcome::Removed);
        assert!(s.peek("modules/acme/vpc/aws/manifest.json").is_none());
    }

    #[tokio::test]
    async fn provider_documents_follow_the_zips() {
        let s = MemoryStorage::new();
        let prefix = "providers/registry.terraform.io/hashicorp/null/";
        let zip_a = zip_of(&[("terraform-provider-null_v3.2.1_x5", b"linux")]);
        let zip_b = zip_of(&[("terraform-provider-null_v3.2.1_x5", b"darwin")]);
        s.insert(
            &format!("{prefix}terraform-provider-null_3.2.1_linux_amd64.zip"),
            zip_a.clone(),
        );
        s.insert(
            &format!("{prefix}terraform-provider-null_3.2.1_darwin_arm64.zip"),
            zip_b,
        );
        s.insert(
            &format!("{prefix}terraform-provider-null_3.1.0_linux_amd64.zip"),
            zip_a.clone(),
        );
        // A stale document written by `terraform providers mirror` for a version with no zips.
        s.insert(&format!("{prefix}2.0.0.json"), r#"{"archives":{}}"#);
        let (owner, outcome) = on_object_changed(&s, &format!("{prefix}index.json"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(outcome, Outcome::Written { versions: 2 });
        let index = ProviderIndex::parse(&s.peek(&format!("{prefix}index.json")).unwrap()).unwrap();
        assert_eq!(
            index.versions.keys().collect::<Vec<_>>(),
            ["3.1.0", "3.2.1"]
        );
        assert!(s.peek(&format!("{prefix}2.0.0.json")).is_none());
        let doc = ProviderVersion::parse(&s.peek(&format!("{prefix}3.2.1.json")).unwrap()).unwrap();
        let linux = &doc.archives["linux_amd64"];
        assert_eq!(linux.url, "terraform-provider-null_3.2.1_linux_amd64.zip");
        assert_eq!(
            linux.hashes[0],
            h1_of_zip(std::io::Cursor::new(zip_a.clone())).unwrap().0
        );
        assert_eq!(
            linux.hashes[1],
            format!("zh:{}", hex::encode(Sha256::digest(&zip_a)))
        );
        assert_eq!(reindex(&s, &owner).await.unwrap(), Outcome::Unchanged);

        // A corrupt zip fails indexing with a clear error and leaves the manifests as they were.
        let before = s.peek(&format!("{prefix}index.json"));
        s.insert(
            &format!("{prefix}terraform-provider-null_4.0.0_linux_amd64.zip"),
            "garbage",
        );
        let err = reindex(&s, &owner).await.unwrap_err();
        assert!(
            err.to_string().contains("not a readable provider zip"),
            "{err}"
        );
        assert_eq!(s.peek(&format!("{prefix}index.json")), before);
    }

    #[tokio::test]
    async fn reindex_all_is_idempotent() {
        let s = MemoryStorage::new();
        s.insert("modules/a/b/c/1.0.0.tgz", "x");
        s.insert("modules/d/e/f/0.1.0.zip", "y");
        s.insert(
            "providers/example.com/acme/thing/terraform-provider-thing_1.0.0_linux_amd64.zip",
            zip_of(&[("bin", b"z")]),
        );
        s.insert("elsewhere/file", "ignored");
        let first = reindex_all(&s).await.unwrap();
        assert_eq!(first.len(), 3);
        assert!(
            first
                .iter()
                .all(|(_, o)| matches!(o, Outcome::Written { .. }))
        );
        let snapshot: Vec<_> = s
            .keys()
            .into_iter()
            .map(|k| (k.clone(), s.peek(&k)))
            .collect();
        let second = reindex_all(&s).await.unwrap();
        assert!(
            second.iter().all(|(_, o)| *o == Outcome::Unchanged),
            "{second:?}"
        );
        let after: Vec<_> = s
            .keys()
            .into_iter()
            .map(|k| (k.clone(), s.peek(&k)))
            .collect();
        assert_eq!(snapshot, after);
    }
}
