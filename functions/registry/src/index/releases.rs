//! Signed releases: a provider version under the registry's own hostname (`REGISTRY_HOSTNAME`,
//! the providers.v1 protocol) is served, by providers.v1 and by the mirror alike, only once
//! its `SHA256SUMS` carries a signature that verifies with one of the namespace's keys
//! (`signing-keys/HOSTNAME/NAMESPACE/`), every zip's SHA-256 is the one `SHA256SUMS` lists,
//! and its `_manifest.json`, if any, is covered by `SHA256SUMS` too. Until then its zips are
//! checked and hashed as any other but kept aside (`pending`), and a rejection record at the
//! `SHA256SUMS` key says what is missing or wrong. A release already served stays served when
//! a later upload to it does not verify: bad input never unpublishes.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::indexer::{Indexer, NamespaceKeys};
use super::intake::{self, listed_etag};
use super::rejections::Rejections;
use crate::address::ProviderAddress;
use crate::error::Error;
use crate::layout::{self, Platform, ReleaseFile};
use crate::manifest::{ProviderArchive, ProviderVersion, RecordedKey, SignedRelease};
use crate::signing;
use crate::storage::{ObjectInfo, Storage};

/// What the record of a release that lacks `SHA256SUMS` or its signature says after "is
/// missing: ", which an upload in progress leaves for a moment (`make publish-provider`
/// waits past it).
pub const INCOMPLETE_RELEASE: &str = "a signed release is its zips, terraform-provider-TYPE_VERSION_SHA256SUMS";

/// Longest `_manifest.json` read.
pub const RELEASE_MANIFEST_MAX_BYTES: usize = 64 << 10;
/// Most key files a namespace may have; more is a mistake, not a rotation.
pub const KEY_FILES_MAX: usize = 32;

/// A release's files besides its zips, as listed.
#[derive(Debug, Clone, Default)]
pub(super) struct ReleaseObjects {
    pub shasums: Option<ObjectInfo>,
    pub signature: Option<ObjectInfo>,
    pub manifest: Option<ObjectInfo>,
}

impl ReleaseObjects {
    pub(super) fn set(&mut self, file: ReleaseFile, object: ObjectInfo) {
        match file {
            ReleaseFile::Shasums => self.shasums = Some(object),
            ReleaseFile::Signature => self.signature = Some(object),
            ReleaseFile::Manifest => self.manifest = Some(object),
        }
    }

    fn is_empty(&self) -> bool {
        self.shasums.is_none() && self.signature.is_none() && self.manifest.is_none()
    }
}

/// What a release record keeps in its `etag` field: a digest of the verdict, so the same
/// verdict is not written again (a redelivered event writes nothing) and a new one always is
/// (the checks read several objects, and some S3-compatible servers list no ETags).
fn verdict_fingerprint(reason: &str) -> String {
    use sha2::Digest;
    format!("verdict:{}", hex::encode(&sha2::Sha256::digest(reason.as_bytes())[..12]))
}

/// Whether this provider's releases must be signed: it is under the registry's own host.
pub(super) fn signs<S: Storage>(indexer: &Indexer<'_, S>, provider: &ProviderAddress) -> bool {
    indexer.registry_hostname.as_deref() == Some(provider.hostname.as_str())
}

/// What of a signed release is served, from its zips as checked now (`checked`: platform
/// key → archive) and its other files; writes or clears the rejection records.
pub(super) async fn sign_off<S: Storage>(
    indexer: &Indexer<'_, S>,
    provider: &ProviderAddress,
    version: &semver::Version,
    checked: BTreeMap<Platform, (ObjectInfo, ProviderArchive)>,
    objects: &ReleaseObjects,
    existing: Option<&ProviderVersion>,
    rejections: &mut Rejections,
) -> Result<ProviderVersion, Error> {
    let record = format!(
        "{}{}",
        layout::provider_prefix(provider),
        layout::provider_release_file_name(provider, version, ReleaseFile::Shasums)
    );
    for object in [&objects.signature, &objects.manifest].into_iter().flatten() {
        rejections.keep(&object.key);
    }
    if checked.is_empty() && objects.is_empty() {
        return Ok(ProviderVersion::default());
    }
    let verdict = verify_release(indexer, provider, objects, &checked, rejections).await?;
    let archives = checked.into_iter().map(|(platform, (_, archive))| (platform.key(), archive)).collect();
    match verdict {
        Ok(release) => {
            rejections.clear(indexer.storage, &record).await?;
            Ok(ProviderVersion {
                archives,
                release: Some(release),
                pending: BTreeMap::new(),
                oci_index: None,
                deprecation: None,
            })
        }
        Err(reason) => {
            let served = existing.and_then(|e| e.release.as_ref().map(|r| (e, r)));
            let reason = match served {
                Some((_, release)) => format!(
                    "release {provider} {version} stays served as it was (signed by key {}); what changed is \
                     not accepted: {reason}",
                    release.signing_key.key_id
                ),
                None => format!("release {provider} {version} not published: {reason}"),
            };
            let fingerprint = verdict_fingerprint(&reason);
            if !rejections.rejected_before(&record, &fingerprint) {
                let object = ObjectInfo {
                    key: record.clone(),
                    etag: fingerprint,
                    size: objects.shasums.as_ref().map(|o| o.size).unwrap_or(0),
                };
                rejections.reject(indexer.storage, &object, reason).await?;
            } else {
                rejections.keep(&record);
            }
            match served {
                // Served before: it stays as it was; what was checked now waits aside.
                Some((served, _)) => Ok(ProviderVersion { pending: archives, ..served.clone() }),
                None => Ok(ProviderVersion {
                    archives: BTreeMap::new(),
                    release: None,
                    pending: archives,
                    oci_index: None,
                    deprecation: None,
                }),
            }
        }
    }
}

/// The checks of one release; `Ok(Err(reason))` for a release that is not (yet) good.
async fn verify_release<S: Storage>(
    indexer: &Indexer<'_, S>,
    provider: &ProviderAddress,
    objects: &ReleaseObjects,
    checked: &BTreeMap<Platform, (ObjectInfo, ProviderArchive)>,
    rejections: &mut Rejections,
) -> Result<Result<SignedRelease, String>, Error> {
    let (Some(shasums), Some(signature)) = (&objects.shasums, &objects.signature) else {
        let missing = if objects.shasums.is_none() { "SHA256SUMS is missing" } else { "SHA256SUMS.sig is missing" };
        return Ok(Err(format!(
            "{missing}: {INCOMPLETE_RELEASE} and its binary detached signature \
             terraform-provider-TYPE_VERSION_SHA256SUMS.sig (goreleaser's Terraform provider configuration makes all \
             of them)"
        )));
    };
    let sums_bytes = match read_small(indexer, shasums, signing::SHASUMS_MAX_BYTES).await? {
        Ok(bytes) => bytes,
        Err(why) => return Ok(Err(why)),
    };
    let sig_bytes = match read_small(indexer, signature, signing::SIGNATURE_MAX_BYTES).await? {
        Ok(bytes) => bytes,
        Err(why) => return Ok(Err(why)),
    };
    let namespace = namespace_keys(indexer, provider).await?;
    let (keys, key_problems) = (&namespace.keys, &namespace.problems);
    let now = u64::try_from(crate::clock::now_unix()).unwrap_or(0);
    let key = match signing::verify_with(keys, key_problems, &sums_bytes, &sig_bytes, now) {
        Ok(key) => key,
        Err(why) => return Ok(Err(why)),
    };
    let sums = match signing::parse_shasums(&sums_bytes) {
        Ok(sums) => sums,
        Err(why) => return Ok(Err(why)),
    };
    let mut mismatches = Vec::new();
    for (object, archive) in checked.values() {
        let sha256 = archive.zh();
        let problem = match sums.get(&archive.url) {
            None => Some(format!("{} is not listed in SHA256SUMS", archive.url)),
            Some(listed) if listed != sha256 => {
                Some(format!("{} has SHA-256 {sha256}, SHA256SUMS lists {listed}", archive.url))
            }
            Some(_) => None,
        };
        match problem {
            Some(problem) => {
                let fingerprint = verdict_fingerprint(&format!("{}+{problem}", object.etag));
                if !rejections.rejected_before(&object.key, &fingerprint) {
                    let record = ObjectInfo { etag: fingerprint, ..object.clone() };
                    rejections.reject(indexer.storage, &record, problem.clone()).await?;
                }
                rejections.keep(&object.key);
                mismatches.push(problem);
            }
            None => {
                // The published bytes check out; an overwrite refused in their place keeps
                // its record while those bytes are still there.
                let refused = rejections.refused_overwrite(&object.key).map(str::to_string);
                match refused {
                    Some(etag) if listed_etag(indexer, object).await? == etag => rejections.keep(&object.key),
                    _ => rejections.clear(indexer.storage, &object.key).await?,
                }
            }
        }
    }
    if !mismatches.is_empty() {
        return Ok(Err(mismatches.join("; ")));
    }
    let protocols = match &objects.manifest {
        None => Vec::new(),
        Some(manifest) => match release_protocols(indexer, manifest, &sums).await? {
            Ok(protocols) => protocols,
            Err(why) => return Ok(Err(why)),
        },
    };
    Ok(Ok(SignedRelease {
        protocols,
        signing_key: RecordedKey { key_id: key.key_id.clone(), ascii_armor: key.ascii_armor.clone() },
    }))
}

/// `_manifest.json`'s protocol versions, once its bytes are the ones `SHA256SUMS` lists.
async fn release_protocols<S: Storage>(
    indexer: &Indexer<'_, S>,
    manifest: &ObjectInfo,
    sums: &BTreeMap<String, String>,
) -> Result<Result<Vec<String>, String>, Error> {
    let name = manifest.key.rsplit('/').next().unwrap_or_default();
    let bytes = match read_small(indexer, manifest, RELEASE_MANIFEST_MAX_BYTES).await? {
        Ok(bytes) => bytes,
        Err(why) => return Ok(Err(why)),
    };
    Ok(manifest_protocols(name, &bytes, sums))
}

/// The protocol versions a release's `_manifest.json` (`name`, `bytes`) claims, once its bytes
/// are the ones `SHA256SUMS` (`sums`) lists; or why not. `make publish-provider` checks with it
/// too, before it uploads.
pub fn manifest_protocols(name: &str, bytes: &[u8], sums: &BTreeMap<String, String>) -> Result<Vec<String>, String> {
    use sha2::Digest;
    let sha256 = hex::encode(sha2::Sha256::digest(bytes));
    match sums.get(name) {
        None => return Err(format!("{name} is not listed in SHA256SUMS, so its protocols are not signed")),
        Some(listed) if *listed != sha256 => {
            return Err(format!("{name} has SHA-256 {sha256}, SHA256SUMS lists {listed}"));
        }
        Some(_) => {}
    }
    let parsed: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| format!("{name} is not JSON: {e}"))?;
    let Some(list) = parsed.pointer("/metadata/protocol_versions").and_then(|v| v.as_array()) else {
        return Err(format!("{name} has no metadata.protocol_versions list"));
    };
    let valid = |p: &str| {
        p.split_once('.').is_some_and(|(a, b)| {
            [a, b].iter().all(|n| (1..=3).contains(&n.len()) && n.bytes().all(|c| c.is_ascii_digit()))
        })
    };
    let mut protocols = Vec::new();
    for p in list {
        match p.as_str().filter(|p| valid(p)) {
            Some(p) => protocols.push(p.to_string()),
            None => return Err(format!("{name}: protocol version {p} is not MAJOR.MINOR")),
        }
    }
    Ok(protocols)
}

/// The namespace's public keys, and the key files that could not be used (with why); read
/// at the first release of the namespace this indexer checks, then kept.
async fn namespace_keys<S: Storage>(
    indexer: &Indexer<'_, S>,
    provider: &ProviderAddress,
) -> Result<Arc<NamespaceKeys>, Error> {
    let prefix = layout::signing_keys_prefix(provider);
    let cache = || indexer.keys.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(known) = cache().get(&prefix) {
        return Ok(known.clone());
    }
    let files = indexer.storage.list(&prefix).await?;
    let (mut keys, mut problems) = (Vec::new(), Vec::new());
    for file in files.iter().take(KEY_FILES_MAX) {
        let name = crate::address::printable(&file.key);
        let parsed = match read_small(indexer, file, signing::KEY_FILE_MAX_BYTES).await? {
            Ok(bytes) => signing::parse_keys(&name, &bytes),
            Err(why) => Err(why),
        };
        match parsed {
            Ok(mut parsed) => keys.append(&mut parsed),
            Err(why) => problems.push(why),
        }
    }
    if files.len() > KEY_FILES_MAX {
        problems.push(format!("only the first {KEY_FILES_MAX} key files are read"));
    }
    let read = Arc::new(NamespaceKeys { keys, problems });
    cache().insert(prefix, read.clone());
    Ok(read)
}

/// A release file's bytes, or why not (gone, or over `limit`: `intake::read_small`).
async fn read_small<S: Storage>(
    indexer: &Indexer<'_, S>,
    object: &ObjectInfo,
    limit: usize,
) -> Result<Result<Vec<u8>, String>, Error> {
    let name = crate::address::printable(object.key.rsplit('/').next().unwrap_or_default());
    Ok(match intake::read_small(indexer, object, limit, "a release file").await? {
        Err(why) => Err(why),
        Ok(None) => Err(format!("{name} is gone")),
        Ok(Some(bytes)) => Ok(bytes),
    })
}

#[cfg(test)]
mod tests;
