//! `make publish-provider`: a goreleaser `dist/` of a provider release checked as the indexer
//! checks a signed release (each zip, `SHA256SUMS`, the manifest, the signature against the
//! namespace's keys in the bucket), refused when the registry serves that version or holds
//! files of it, uploaded in the order that never lets the indexer serve half of it
//! (`release::Release::upload_order`), each only where nothing is (`If-None-Match: *`), and
//! followed (bounded) until `providers.v1` serves every platform or the indexer rejects the
//! release.
//! The checks are the library's (`registry::publishing::release`); this file is the I/O.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use registry::address::ProviderAddress;
use registry::layout::{self, Platform};
use registry::publishing::release::{self, Release};
use registry::publishing::remote::Registry;
use registry::storage::{Precondition, S3Storage, Storage};

use crate::LocalError;
use crate::publish::{PublishTarget, connect, err, read_hint, registry_config};

/// One provider release to publish.
#[derive(Debug, Clone)]
pub struct ProviderPublish {
    /// goreleaser's `dist/`.
    pub dist: PathBuf,
    /// The provider's namespace (its type is in the files' names).
    pub namespace: String,
    /// Which release, when `dist/` holds several.
    pub version: Option<semver::Version>,
    pub target: PublishTarget,
    /// How long to wait for the indexer's answer.
    pub wait: Duration,
    /// Settings ahead of the environment, as for modules ([`crate::publish::ModulePublish`]).
    pub settings: Vec<(String, String)>,
}

/// What was published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishedRelease {
    pub provider: ProviderAddress,
    pub version: semver::Version,
    /// The long ID of the key that signed it.
    pub key_id: String,
    pub platforms: Vec<Platform>,
}

/// Publish, printing each step to `out`; an error says why nothing (or what) was written.
pub async fn publish_provider(options: &ProviderPublish, out: &mut dyn Write) -> Result<PublishedRelease, LocalError> {
    let config = registry_config(&options.settings)?;
    let (storage, registry) = connect(&options.target).await?;
    let dist = &options.dist;
    let names = dist_names(dist)?;
    let release = Release::find(&registry.host(), &options.namespace, &names, options.version.as_ref())
        .map_err(|why| err(format!("{}: {why}", dist.display())))?;
    let (provider, version) = (&release.provider, &release.version);
    let platforms: Vec<String> = release.zips.keys().map(Platform::key).collect();
    say(out, format!("{provider} {version}: {} ({})", dist.display(), platforms.join(", ")));
    let sha256_of = check_files(dist, &release, &config)?;
    let sums = read_limited(&dist.join(&release.shasums), registry::signing::SHASUMS_MAX_BYTES)?;
    let signature = read_limited(&dist.join(&release.signature), registry::signing::SIGNATURE_MAX_BYTES)?;
    let listed = release::check_sums(&release, &sums, &sha256_of).map_err(refused)?;
    let protocols = match &release.manifest {
        None => "none claimed (no _manifest.json: the plugin handshake decides)".to_string(),
        Some(name) => {
            let bytes = read_limited(&dist.join(name), registry::index::RELEASE_MANIFEST_MAX_BYTES)?;
            registry::index::manifest_protocols(name, &bytes, &listed).map_err(refused)?.join(", ")
        }
    };
    say(out, format!("protocols: {protocols}"));
    let (key_files, unread) = namespace_keys(&storage, provider).await?;
    let now = u64::try_from(registry::clock::now_unix()).unwrap_or(0);
    let key = release::signing_key(&key_files, &unread, &sums, &signature, now)
        .map_err(|why| refused(format!("the signature of {}: {why}", release.shasums)))?;
    say(out, format!("signature: verifies with key {} of {}", key.key_id, layout::signing_keys_prefix(provider)));
    refuse_a_served_version(&registry, &release, &sha256_of).await?;
    refuse_earlier_files(&storage, &release).await?;
    let shasums_key = format!("{}{}", layout::provider_prefix(provider), release.shasums);
    let record = layout::rejection(&shasums_key);
    let record_before = storage.etag(&record).await.map_err(|e| err(registry::error::chain(&e)))?;
    upload(&storage, dist, &release, out).await?;
    let zips: Vec<(&Platform, &String)> = release.zips.iter().map(|(p, name)| (p, &sha256_of[name])).collect();
    wait_for_release(&storage, &registry, &release, &zips, (&shasums_key, record_before), options.wait, out).await?;
    let source = provider.to_string();
    say(out, format!("served: {provider} {version}, signed by key {}. Use it with:\n", key.key_id));
    say(out, registry::module_docs::snippet::provider_block(&provider.r#type, &source, &version.to_string()));
    Ok(PublishedRelease {
        provider: provider.clone(),
        version: version.clone(),
        key_id: key.key_id,
        platforms: release.zips.keys().cloned().collect(),
    })
}

fn say(out: &mut dyn Write, line: String) {
    let _ = writeln!(out, "{line}");
}

fn refused(why: String) -> LocalError {
    err(format!("refused before upload (the indexer would reject it): {why}\nNothing was uploaded."))
}

/// The names of the files in `dist/` (goreleaser's directories in it are not the release's).
fn dist_names(dist: &Path) -> Result<Vec<String>, LocalError> {
    let entries = std::fs::read_dir(dist).map_err(|e| err(format!("{}: {e}", dist.display())))?;
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| err(format!("{}: {e}", dist.display())))?;
        let is_file = entry.file_type().map(|t| t.is_file()).unwrap_or(false);
        if let (true, Some(name)) = (is_file, entry.file_name().to_str()) {
            names.push(name.to_string());
        }
    }
    Ok(names)
}

/// Each zip checked as the indexer checks it (its size, the executable at its root) and every
/// file's SHA-256, by name.
fn check_files(
    dist: &Path,
    release: &Release,
    config: &registry::config::Config,
) -> Result<BTreeMap<String, String>, LocalError> {
    let (max, bounds) = (config.limits.provider_zip_bytes, config.archive_bounds());
    let mut sha256_of = BTreeMap::new();
    for name in release.zips.values() {
        let path = dist.join(name);
        let size = std::fs::metadata(&path).map_err(|e| err(format!("{}: {e}", path.display())))?.len();
        if size > max {
            return Err(refused(format!("{name} is {size} bytes, over REGISTRY_MAX_PROVIDER_ZIP_BYTES ({max})")));
        }
        let file = std::fs::File::open(&path).map_err(|e| err(format!("{}: {e}", path.display())))?;
        release::check_zip(file, name, release, &bounds).map_err(refused)?;
        sha256_of.insert(name.clone(), sha256_file(&path)?);
    }
    if let Some(name) = &release.manifest {
        let bytes = read_limited(&dist.join(name), registry::index::RELEASE_MANIFEST_MAX_BYTES)?;
        use sha2::Digest;
        sha256_of.insert(name.clone(), hex::encode(sha2::Sha256::digest(&bytes)));
    }
    Ok(sha256_of)
}

fn sha256_file(path: &Path) -> Result<String, LocalError> {
    use sha2::Digest;
    let mut file = std::fs::File::open(path).map_err(|e| err(format!("{}: {e}", path.display())))?;
    let (mut hasher, mut buffer) = (sha2::Sha256::new(), vec![0u8; 1 << 16]);
    loop {
        let n = file.read(&mut buffer).map_err(|e| err(format!("{}: {e}", path.display())))?;
        if n == 0 {
            return Ok(hex::encode(hasher.finalize()));
        }
        hasher.update(&buffer[..n]);
    }
}

/// A small file's bytes, refused over `limit` as the indexer refuses it.
fn read_limited(path: &Path, limit: usize) -> Result<Vec<u8>, LocalError> {
    let file = std::fs::File::open(path).map_err(|e| err(format!("{}: {e}", path.display())))?;
    let mut bytes = Vec::new();
    file.take(limit as u64 + 1).read_to_end(&mut bytes).map_err(|e| err(format!("{}: {e}", path.display())))?;
    if bytes.len() > limit {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        return Err(refused(format!("{name} is over the {limit} bytes a release file may have")));
    }
    Ok(bytes)
}

/// The namespace's key files as the indexer reads them (`signing-keys/HOSTNAME/NAMESPACE/`,
/// at most `KEY_FILES_MAX`), and why any was not read.
async fn namespace_keys(
    storage: &S3Storage,
    provider: &ProviderAddress,
) -> Result<(Vec<(String, Vec<u8>)>, Vec<String>), LocalError> {
    let prefix = layout::signing_keys_prefix(provider);
    let chain = |e: registry::Error| err(format!("read {prefix}: {}", registry::error::chain(&e)));
    let listed = storage.list(&prefix).await.map_err(chain)?;
    if listed.is_empty() {
        return Err(refused(format!(
            "the namespace has no signing keys: a key admin uploads its public key to {prefix} first \
             (docs/PUBLISHING.md, A private provider)"
        )));
    }
    let (mut files, mut unread) = (Vec::new(), Vec::new());
    for object in listed.iter().take(registry::index::KEY_FILES_MAX) {
        let name = object.key.clone();
        if object.size > registry::signing::KEY_FILE_MAX_BYTES as u64 {
            unread.push(format!("{name:?} is {} bytes, over {}", object.size, registry::signing::KEY_FILE_MAX_BYTES));
            continue;
        }
        match storage.get(&object.key).await.map_err(chain)? {
            Some(found) => files.push((name, found.bytes.to_vec())),
            None => unread.push(format!("{name:?} is gone")),
        }
    }
    if listed.len() > registry::index::KEY_FILES_MAX {
        unread.push(format!("only the first {} key files are read", registry::index::KEY_FILES_MAX));
    }
    Ok((files, unread))
}

/// A version `providers.v1` serves already: said (with the same bytes or not), nothing written.
async fn refuse_a_served_version(
    registry: &Registry,
    release: &Release,
    sha256_of: &BTreeMap<String, String>,
) -> Result<(), LocalError> {
    let (provider, version) = (&release.provider, &release.version);
    let versions = registry.provider_versions(provider).await.map_err(|e| err(read_hint(&e)))?;
    let Some(platforms) = versions.get(version) else { return Ok(()) };
    let served = registry.provider_release(provider, version, platforms).await.map_err(err)?;
    let ours: BTreeMap<&Platform, &String> = release.zips.iter().map(|(p, n)| (p, &sha256_of[n])).collect();
    let same = served.is_some_and(|s| s.shasums.iter().collect::<BTreeMap<_, _>>() == ours);
    let how = if same { "with these same zips" } else { "with other zips or platforms" };
    Err(err(format!(
        "{provider} {version} is already published {how}: nothing was uploaded. A published version never \
         changes: publish a new version"
    )))
}

/// Files of this version in the bucket that the registry does not serve (an upload that
/// stopped half-way, or one the indexer rejected): named, with the rejection, nothing written.
async fn refuse_earlier_files(storage: &S3Storage, release: &Release) -> Result<(), LocalError> {
    let prefix = layout::provider_version_prefix(&release.provider, &release.version);
    let chain = |e: registry::Error| err(format!("list {prefix}: {}", registry::error::chain(&e)));
    let listed = storage.list(&prefix).await.map_err(chain)?;
    if listed.is_empty() {
        return Ok(());
    }
    let shasums_key = format!("{}{}", layout::provider_prefix(&release.provider), release.shasums);
    let why = match crate::publish::rejection(storage, &shasums_key).await? {
        Some(r) => format!("the indexer rejected the release: {}", registry::printed::kept_lines(&r.reason, 4 << 10)),
        None => "the registry does not serve it".into(),
    };
    let keys: Vec<&str> = listed.iter().map(|o| o.key.as_str()).collect();
    Err(err(format!(
        "files of {} {} are in the bucket already ({}), and {why}. Nothing was uploaded: delete them to \
         publish this version again",
        release.provider,
        release.version,
        keys.join(", ")
    )))
}

/// Each file in `upload_order`, only where nothing is.
async fn upload(storage: &S3Storage, dist: &Path, release: &Release, out: &mut dyn Write) -> Result<(), LocalError> {
    let prefix = layout::provider_prefix(&release.provider);
    let mut uploaded = Vec::new();
    for name in release.upload_order() {
        let key = format!("{prefix}{name}");
        let content_type = if name.ends_with(".zip") { "application/zip" } else { "application/octet-stream" };
        match storage.put_file(&key, &dist.join(name), content_type, Precondition::IfAbsent).await {
            Ok(()) => uploaded.push(name),
            // A retried PUT whose first try landed: these bytes are there.
            Err(registry::Error::Conflict(_))
                if crate::publish::stored_sha256(storage, &key).await?.map(|(sha256, _)| sha256)
                    == Some(sha256_file(&dist.join(name))?) =>
            {
                uploaded.push(name)
            }
            Err(registry::Error::Conflict(_)) => {
                return Err(err(format!(
                    "{key} was uploaded meanwhile: nothing was overwritten (uploaded before it: {})",
                    if uploaded.is_empty() { "nothing".to_string() } else { uploaded.join(", ") }
                )));
            }
            Err(e) => return Err(err(format!("upload {key}: {}", registry::error::chain(&e)))),
        }
    }
    say(out, format!("uploaded {} files to {prefix}, {} last", uploaded.len(), release.signature));
    Ok(())
}

/// Wait, bounded, until `providers.v1` serves every zip with its SHA-256, or the indexer writes
/// a rejection of the release (the record of `shasums_key`, other than it was before the upload and not one of
/// the "is missing" records an upload in progress leaves), one progress line meanwhile.
async fn wait_for_release(
    storage: &S3Storage,
    registry: &Registry,
    release: &Release,
    zips: &[(&Platform, &String)],
    (shasums_key, record_before): (&str, Option<String>),
    wait: Duration,
    out: &mut dyn Write,
) -> Result<(), LocalError> {
    let (provider, version) = (&release.provider, &release.version);
    let platforms: Vec<Platform> = zips.iter().map(|(p, _)| (*p).clone()).collect();
    let record = layout::rejection(shasums_key);
    let started = Instant::now();
    loop {
        let versions = registry.provider_versions(provider).await.map_err(|e| err(read_hint(&e)))?;
        if versions.get(version).is_some_and(|served| platforms.iter().all(|p| served.contains(p)))
            && let Some(served) = registry.provider_release(provider, version, &platforms).await.map_err(err)?
        {
            let _ = writeln!(out);
            let differs: Vec<String> =
                zips.iter().filter(|(p, sha)| served.shasums.get(*p) != Some(*sha)).map(|(p, _)| p.key()).collect();
            if !differs.is_empty() {
                return Err(err(format!(
                    "{provider} {version} is served, but {} from other bytes than this upload's",
                    differs.join(", ")
                )));
            }
            return Ok(());
        }
        let now = storage.etag(&record).await.map_err(|e| err(registry::error::chain(&e)))?;
        if now.is_some()
            && now != record_before
            && let Some(r) = crate::publish::rejection(storage, shasums_key).await?
            && !r.reason.contains(&format!("is missing: {}", registry::index::INCOMPLETE_RELEASE))
        {
            let _ = writeln!(out);
            return Err(err(format!(
                "rejected by the indexer: {}\n(The files stay under {}; delete them to try this version again.)",
                registry::printed::kept_lines(&r.reason, 16 << 10),
                layout::provider_prefix(provider)
            )));
        }
        if started.elapsed() >= wait {
            let _ = writeln!(out);
            // The indexer does not write the same verdict twice: a record from before this
            // upload may be its answer.
            let said = match crate::publish::rejection(storage, shasums_key).await? {
                Some(r) => format!(
                    "; the release's rejection record says (it may be from before this upload: the indexer \
                     writes a verdict once): {}",
                    registry::printed::kept_lines(&r.reason, 4 << 10)
                ),
                None => format!("; the release's rejection record would be at {record}"),
            };
            return Err(err(format!(
                "not served within {} s: the files are under {}{said}",
                wait.as_secs(),
                layout::provider_prefix(provider)
            )));
        }
        let _ = write!(out, "\rwaiting for the indexer: {} s", started.elapsed().as_secs());
        let _ = out.flush();
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}
