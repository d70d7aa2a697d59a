//! `make publish`: a module directory (a git tag's tree, or the directory as it is) packed,
//! checked as the indexer would check it against what the registry serves, uploaded only
//! where nothing is (`If-None-Match: *`), and followed until the registry serves it or the
//! indexer rejects it. The checks are the library's (`registry::publishing`); this file is the
//! I/O around them: git, the upload, the wait.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use registry::address::ModuleAddress;
use registry::index::Verdict;
use registry::publishing::{self, check, pack, remote::Registry};
use registry::storage::{Precondition, S3Storage, Storage};

use crate::LocalError;

/// Where to publish.
#[derive(Debug, Clone)]
pub enum PublishTarget {
    /// The local registry `make dev` runs over this data directory (its `local.env`).
    Local(PathBuf),
    /// A deployed registry: its bucket (AWS credentials from the environment) and its URL
    /// (read with `REGISTRY_TOKEN`, trusting `REGISTRY_CA_FILE` too when set).
    Deployed { bucket: String, registry: String },
}

/// One module version to publish.
#[derive(Debug, Clone)]
pub struct ModulePublish {
    pub dir: PathBuf,
    pub module: ModuleAddress,
    /// Given, or the tag at HEAD names it.
    pub version: Option<semver::Version>,
    pub target: PublishTarget,
    /// How long to wait for the indexer's answer.
    pub wait: Duration,
    /// Settings (`REGISTRY_SEMVER_POLICY`, the archive limits) ahead of the environment: what
    /// the registry published to runs with, which the checks must apply too.
    pub settings: Vec<(String, String)>,
}

/// The version published and its archive's SHA-256.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    pub version: semver::Version,
    pub sha256: String,
    pub key: String,
}

pub(crate) fn err(message: impl Into<String>) -> LocalError {
    LocalError(message.into())
}

/// Publish, printing each step to `out`; an error says why nothing (or what) was written.
pub async fn publish_module(options: &ModulePublish, out: &mut dyn Write) -> Result<Published, LocalError> {
    let config = registry_config(&options.settings)?;
    let (bounds, max_bytes) = (config.archive_bounds(), config.limits.module_archive_bytes);
    let (storage, registry) = connect(&options.target).await?;
    let module = &options.module;
    let source = Source::find(&options.dir, options.version.as_ref())?;
    let version = source.version.clone();
    let packed = match &source.tag {
        Some(tag) => git_archive(&options.dir, tag, &bounds, max_bytes)?,
        None => pack::directory(&options.dir, &bounds, max_bytes).map_err(err)?,
    };
    let say = |out: &mut dyn Write, line: String| {
        let _ = writeln!(out, "{line}");
    };
    say(out, format!("{module} {version}: {}", source.describe(packed.files)));
    if !packed.left_out.is_empty() {
        let shown = registry::printed::one_line(&packed.left_out.join(", "), 2000);
        say(out, format!("left out ({}): {shown}", packed.left_out.len()));
    }
    let checked = check::archive(&packed.bytes, "tar.gz", &bounds, max_bytes)
        .map_err(|why| err(format!("refused before upload (the indexer would reject it): {why}")))?;
    say(out, format!("archive: {} bytes, SHA-256 {}", checked.size, checked.sha256));
    let published = registry.versions(module).await.map_err(|e| err(read_hint(&e)))?;
    if published.contains(&version) {
        let served = registry.archive(module, &version, &bounds, max_bytes).await.map_err(err)?;
        let same = if served.sha256 == checked.sha256 { "with these same bytes" } else { "with other bytes" };
        return Err(err(format!(
            "{module} {version} is already published {same} (SHA-256 {}): nothing was uploaded. A published \
             version never changes: publish a new version",
            served.sha256
        )));
    }
    refuse_an_earlier_upload(&storage, module, &version).await?;
    let mut docs = checked.docs.clone();
    let mut earlier = Vec::new();
    for v in check::versions_to_compare(&version, &published) {
        let served = registry.archive(module, &v, &bounds, max_bytes).await.map_err(err)?;
        earlier.push(check::Earlier { version: v, checked: served });
    }
    let judged = check::judge(&config.limits.semver, module, &version, &mut docs, &published, &earlier)
        .await
        .map_err(|e| err(registry::error::chain(&e)))?;
    for line in publishing::describe(&judged) {
        say(out, line);
    }
    if let Verdict::Refuse(why) = &judged.verdict {
        return Err(err(format!("refused before upload: {why}\nNothing was uploaded.")));
    }
    let key = format!("{}{version}.tar.gz", registry::layout::module_prefix(module));
    let etag =
        match storage.put_etag(&key, packed.bytes.clone().into(), "application/gzip", Precondition::IfAbsent).await {
            Ok(etag) => etag,
            Err(registry::Error::Conflict(_)) => match stored_sha256(&storage, &key).await? {
                // A retried PUT whose first try landed: these bytes are there.
                Some((sha256, etag)) if sha256 == checked.sha256 => etag,
                _ => return Err(err(format!("an archive was uploaded at {key} meanwhile: nothing was overwritten"))),
            },
            Err(e) => return Err(err(format!("upload {key}: {}", registry::error::chain(&e)))),
        };
    say(out, format!("uploaded {key}"));
    let uploaded = (key.as_str(), etag.as_str(), checked.sha256.as_str());
    wait_for_answer(&storage, &registry, module, &version, uploaded, (&bounds, max_bytes), options.wait, out).await?;
    let source_address = format!("{}/{}", registry.host(), module);
    say(out, format!("served: {module} {version}. Use it with:\n"));
    say(
        out,
        registry::module_docs::snippet::module_block(&module.name, &source_address, &version.to_string(), &docs.root),
    );
    Ok(Published { version, sha256: checked.sha256, key })
}

/// The registry's settings as the checks must apply them: `settings`, then the environment.
pub(crate) fn registry_config(settings: &[(String, String)]) -> Result<registry::config::Config, LocalError> {
    registry::config::Config::from_lookup(|k| match k {
        "REGISTRY_BUCKET" => Some("publish".into()),
        k => settings.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()).or_else(|| std::env::var(k).ok()),
    })
    .map_err(|e| err(e.to_string()))
}

/// The SHA-256 and ETag of the object at `key`, read through without holding it; `None` if
/// there is none. Tells a retried conditional PUT whose first try landed (the same bytes)
/// from another upload.
pub(crate) async fn stored_sha256(storage: &S3Storage, key: &str) -> Result<Option<(String, String)>, LocalError> {
    use sha2::Digest;
    let mut hasher = sha2::Sha256::new();
    let stored = storage
        .stream(key, |chunk| {
            hasher.update(chunk);
            Ok(())
        })
        .await
        .map_err(|e| err(format!("read {key}: {}", registry::error::chain(&e))))?;
    Ok(stored.map(|s| (hex::encode(hasher.finalize()), s.etag)))
}

/// A refusal for a read the registry answered 401 or 403: which token to give.
pub(crate) fn read_hint(why: &str) -> String {
    if why.contains(" 401") || why.contains(" 403") {
        format!("{why}: the registry refused the token (REGISTRY_TOKEN must be one that may read the namespace)")
    } else {
        why.to_string()
    }
}

/// The bucket and the registry of `target`.
pub(crate) async fn connect(target: &PublishTarget) -> Result<(S3Storage, Registry), LocalError> {
    let timeout = Duration::from_secs(30);
    match target {
        PublishTarget::Local(data_dir) => {
            let env = read_env(&data_dir.join("local.env"))?;
            let var = |name: &str| {
                env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()).ok_or_else(|| {
                    err(format!(
                        "{} has no {name}: restart make dev to write it again",
                        data_dir.join("local.env").display()
                    ))
                })
            };
            let client = crate::publisher_client(&var("AWS_ENDPOINT_URL")?, &var("AWS_SECRET_ACCESS_KEY")?);
            let storage = S3Storage::new(client, None, crate::BUCKET);
            let ca = data_dir.join(crate::tls::CA_FILE).display().to_string();
            let registry = Registry::new(&var("REGISTRY_URL")?, Some(&var("REGISTRY_TOKEN")?), Some(&ca), timeout)
                .map_err(|e| err(registry::error::chain(&e)))?;
            Ok((storage, registry))
        }
        PublishTarget::Deployed { bucket, registry } => {
            let storage = S3Storage::from_env(bucket, false).await;
            let token = std::env::var("REGISTRY_TOKEN").ok().filter(|t| !t.is_empty());
            let ca = std::env::var("REGISTRY_CA_FILE").ok().filter(|c| !c.is_empty());
            let registry = Registry::new(registry, token.as_deref(), ca.as_deref(), timeout)
                .map_err(|e| err(registry::error::chain(&e)))?;
            Ok((storage, registry))
        }
    }
}

/// `export NAME=VALUE` lines of `local.env`.
fn read_env(path: &Path) -> Result<Vec<(String, String)>, LocalError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| err(format!("{}: {e}. Is the local registry running? Start it with make dev", path.display())))?;
    Ok(text
        .lines()
        .filter_map(|l| l.strip_prefix("export "))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect())
}

/// An archive of this version already uploaded under another extension (`.zip`, `.tgz`), or
/// rejected: said, and nothing written.
async fn refuse_an_earlier_upload(
    storage: &S3Storage,
    module: &ModuleAddress,
    version: &semver::Version,
) -> Result<(), LocalError> {
    let prefix = format!("{}{version}.", registry::layout::module_prefix(module));
    let listed =
        storage.list(&prefix).await.map_err(|e| err(format!("list {prefix}: {}", registry::error::chain(&e))))?;
    let Some(object) = listed.iter().find(|o| {
        matches!(registry::layout::classify(&o.key), Some(registry::layout::ObjectKind::ModuleArchive { version: v, .. }) if &v == version)
    }) else {
        return Ok(());
    };
    let why = match rejection(storage, &object.key).await? {
        Some(r) => format!("the indexer rejected it: {}", r.reason),
        None => "it is not served yet (the indexer may still be reading it)".into(),
    };
    Err(err(format!(
        "{} is already uploaded, and {why}. Nothing was uploaded: delete that object to publish {version} again",
        object.key
    )))
}

pub(crate) async fn rejection(
    storage: &S3Storage,
    key: &str,
) -> Result<Option<registry::index::Rejection>, LocalError> {
    let record_key = registry::layout::rejection(key);
    let found = storage
        .get(&record_key)
        .await
        .map_err(|e| err(format!("read {record_key}: {}", registry::error::chain(&e))))?;
    Ok(found.and_then(|o| serde_json::from_slice(&o.bytes).ok()))
}

/// Wait, bounded, until the registry serves `version` or the indexer rejects the upload
/// (`key` with `etag`), one progress line meanwhile.
#[allow(clippy::too_many_arguments)]
async fn wait_for_answer(
    storage: &S3Storage,
    registry: &Registry,
    module: &ModuleAddress,
    version: &semver::Version,
    (key, etag, sha256): (&str, &str, &str),
    (bounds, max_bytes): (&registry::config::ArchiveBounds, u64),
    wait: Duration,
    out: &mut dyn Write,
) -> Result<(), LocalError> {
    let started = Instant::now();
    let ours = |r: &registry::index::Rejection| {
        // An overwrite refused is recorded under `overwrite:ETAG`.
        let rejected = r.etag.strip_prefix("overwrite:").unwrap_or(&r.etag).trim_matches('"');
        r.key == key && !etag.trim_matches('"').is_empty() && rejected == etag.trim_matches('"')
    };
    loop {
        if registry.versions(module).await.map_err(|e| err(read_hint(&e)))?.contains(version) {
            let _ = writeln!(out);
            // Listed is not enough: another upload of the version (another extension) may be
            // what it serves.
            let served = registry.archive(module, version, bounds, max_bytes).await.map_err(err)?;
            if served.sha256 != sha256 {
                return Err(err(format!(
                    "{module} {version} is served, but from other bytes (SHA-256 {}) than this upload's ({sha256}): \
                     another upload of it was published first",
                    served.sha256
                )));
            }
            return Ok(());
        }
        if let Some(r) = rejection(storage, key).await?.filter(ours) {
            let _ = writeln!(out);
            return Err(err(format!(
                "rejected by the indexer: {}\n(The upload stays at {key}; delete it to try this version again.)",
                registry::printed::kept_lines(&r.reason, 16 << 10)
            )));
        }
        if started.elapsed() >= wait {
            let _ = writeln!(out);
            return Err(err(format!(
                "not served within {} s: the upload is at {key}; its rejection record would be at {}",
                wait.as_secs(),
                registry::layout::rejection(key)
            )));
        }
        let _ = write!(out, "\rwaiting for the indexer: {} s", started.elapsed().as_secs());
        let _ = out.flush();
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// What is packed: a git tag's tree, or the directory as it is.
struct Source {
    version: semver::Version,
    tag: Option<String>,
    /// The tag's commit, or why the directory is packed as it is.
    note: String,
}

impl Source {
    fn find(dir: &Path, given: Option<&semver::Version>) -> Result<Source, LocalError> {
        if !dir.is_dir() {
            return Err(err(format!("{} is not a directory", dir.display())));
        }
        let in_git = git(dir, &["rev-parse", "--is-inside-work-tree"]).is_ok_and(|o| o.trim() == "true");
        if !in_git {
            let version = given.cloned().ok_or_else(|| {
                err(format!("{} is not in a git work tree: give the version (VERSION=1.2.0)", dir.display()))
            })?;
            return Ok(Source { version, tag: None, note: "the directory as it is (not a git work tree)".into() });
        }
        let tags = |args: &[&str]| -> Result<Vec<(String, semver::Version)>, LocalError> {
            let listed = git(dir, args)?;
            Ok(listed
                .lines()
                .filter_map(|t| publishing::version_of_tag(t.trim()).map(|v| (t.trim().to_string(), v)))
                .collect())
        };
        match given {
            Some(version) => {
                let named: Vec<_> = tags(&["tag", "--list"])?.into_iter().filter(|(_, v)| v == version).collect();
                // Never a work tree as it is: what .gitignore keeps out of git (tfvars, state,
                // .env) is in it, and the version would name no commit.
                match named.first() {
                    Some((tag, _)) => Source::tagged(dir, version.clone(), tag),
                    None => Err(err(format!(
                        "no tag names {version} in this git repository: tag the commit to publish it (git tag v{version})"
                    ))),
                }
            }
            None => {
                let at_head = tags(&["tag", "--points-at", "HEAD"])?;
                let mut versions: Vec<&semver::Version> = at_head.iter().map(|(_, v)| v).collect();
                versions.dedup();
                match (at_head.first(), versions.len()) {
                    (None, _) => Err(err(
                        "no tag at HEAD names a version (v1.2.0 or 1.2.0): tag the commit (git tag v1.2.0), or give \
                         the version (VERSION=1.2.0)",
                    )),
                    (Some((tag, version)), 1) => Source::tagged(dir, version.clone(), tag),
                    _ => Err(err(format!(
                        "the tags at HEAD name more than one version ({}): give the version (VERSION=...)",
                        at_head.iter().map(|(t, _)| t.as_str()).collect::<Vec<_>>().join(", ")
                    ))),
                }
            }
        }
    }

    fn tagged(dir: &Path, version: semver::Version, tag: &str) -> Result<Source, LocalError> {
        let commit = git(dir, &["rev-list", "-n", "1", &format!("refs/tags/{tag}")])?;
        let note = format!("tag {tag} (commit {}), as git archive makes it", commit.trim());
        Ok(Source { version, tag: Some(tag.to_string()), note })
    }

    fn describe(&self, files: usize) -> String {
        let files = if files == 1 { "1 file".to_string() } else { format!("{files} files") };
        format!("packed {files} from {}", self.note)
    }
}

/// `git -C dir ARGS`'s standard output.
/// What every git command here runs with: no hooks and no file system monitor, programs a
/// clone's own `.git/config` could name (one a job before left on a reused CI runner).
const GIT_SAFE: [&str; 4] = ["-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"];

fn git(dir: &Path, args: &[&str]) -> Result<String, LocalError> {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(GIT_SAFE)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| err(format!("git: {e}")))?;
    if !output.status.success() {
        return Err(err(format!("git {}: {}", args.join(" "), String::from_utf8_lossy(&output.stderr).trim())));
    }
    String::from_utf8(output.stdout).map_err(|_| err(format!("git {}: not UTF-8", args.join(" "))))
}

/// The tag's tree of the module directory (the directory's own path in the repository), as
/// `git archive` makes it (`export-ignore` applied), packed deterministically.
fn git_archive(
    dir: &Path,
    tag: &str,
    bounds: &registry::config::ArchiveBounds,
    max_bytes: u64,
) -> Result<pack::Packed, LocalError> {
    let prefix = git(dir, &["rev-parse", "--show-prefix"])?;
    // From the top: run in a subdirectory, git archive would take only that part of the tree.
    let top = PathBuf::from(git(dir, &["rev-parse", "--show-toplevel"])?.trim_end_matches('\n'));
    let tree = match prefix.trim_end_matches('\n') {
        "" => format!("refs/tags/{tag}"),
        sub => format!("refs/tags/{tag}:{sub}"),
    };
    // git archive runs the filter drivers attributes name, as a checkout would: one the
    // clone's own config defines is a program nobody reviewed (git-lfs is the user's or the
    // system's, and stays allowed).
    // The clone's config and its work tree's, with what they include (`include.path`,
    // `includeIf`), as git archive reads them.
    let pattern = r"^filter\..*\.(smudge|clean|process)$";
    let mut local = String::new();
    for scope in ["--local", "--worktree"] {
        local +=
            &git(&top, &["config", scope, "--includes", "--name-only", "--get-regexp", pattern]).unwrap_or_default();
    }
    if let Some(driver) = local.lines().next() {
        return Err(err(format!(
            "{}/.git/config (or a file it includes) defines the filter {driver}, which git archive would run on \
             the tag's files: \
             publish from a fresh clone (nothing was uploaded)",
            top.display()
        )));
    }
    // The same bytes whoever packs: no line-ending conversion, one umask (0644 and 0755).
    let mut child = Command::new("git")
        .arg("-C")
        .arg(&top)
        .args(GIT_SAFE)
        .args(["-c", "core.autocrlf=false", "-c", "tar.umask=0022"])
        .args(["archive", "--format=tar", "--prefix=module/", &tree])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        // Its messages straight to the terminal: a pipe nobody reads meanwhile could block it.
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| err(format!("git archive: {e}")))?;
    let stdout = child.stdout.take().ok_or_else(|| err("git archive: no output"))?;
    let packed = pack::git_archive(stdout, bounds, max_bytes);
    let output = child.wait_with_output().map_err(|e| err(format!("git archive: {e}")))?;
    if !output.status.success() && packed.is_ok() {
        return Err(err(format!("git archive {tree} failed ({})", output.status)));
    }
    packed.map_err(err)
}
