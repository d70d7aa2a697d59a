//! Where an upstream registry's module download answer points, and what the pull-through
//! fetches for it. Public registries answer with a git repository at a ref
//! (`git::https://github.com/OWNER/REPO?ref=v5.1.0`, lately `?ref=<commit SHA>`; the CLI would
//! clone it); the pull-through fetches that ref's archive from the git host instead, over
//! HTTPS. A plain HTTPS archive URL (another registry of this kind, a presigned URL) is
//! fetched as it is. Anything else is refused with an error naming it: a scheme the
//! pull-through does not fetch, a host not allowed, a subdirectory. Pure (and fuzzed).

use std::collections::BTreeMap;

use url::Url;

/// Longest location read (a presigned URL is about 1.5 KB).
pub const LOCATION_MAX_BYTES: usize = 4096;
/// Longest git ref (a tag or a commit SHA).
const REF_MAX_BYTES: usize = 200;

/// What to fetch for a module version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModuleSource {
    /// A git host's archive of a ref: one top-level directory, removed when copied.
    Git {
        /// The git host as the location names it (`github.com`).
        host: String,
        /// `OWNER`.
        owner: String,
        /// `REPO` (without `.git`).
        repo: String,
        /// The tag or commit.
        reference: String,
        /// Where its archive is fetched (`https://github.com/OWNER/REPO/archive/REF.tar.gz`).
        archive: Url,
    },
    /// An archive at an HTTPS URL, stored as it is.
    Https {
        /// The URL, without go-getter's `archive=` and `checksum=`.
        url: Url,
        /// `tar.gz` or `zip`.
        archive: &'static str,
        /// The SHA-256 the location's `checksum=sha256:` demands, if any.
        sha256: Option<String>,
        /// Whether the archive's single top-level directory is the module (`//*`).
        strip_top: bool,
    },
}

impl ModuleSource {
    /// Where it came from, as a pin records it: never a URL's query (which may hold
    /// credentials).
    pub fn shown(&self) -> String {
        match self {
            ModuleSource::Git { host, owner, repo, reference, .. } => {
                format!("git::https://{host}/{owner}/{repo}?ref={reference}")
            }
            ModuleSource::Https { url, .. } => {
                let port = url.port().map(|p| format!(":{p}")).unwrap_or_default();
                format!("https://{}{port}{}", url.host_str().unwrap_or(""), url.path())
            }
        }
    }

    /// `tar.gz` or `zip`.
    pub fn archive_type(&self) -> &'static str {
        match self {
            ModuleSource::Git { .. } => "tar.gz",
            ModuleSource::Https { archive, .. } => archive,
        }
    }
}

/// Read a download answer's location, resolved against the answer's URL `base` as the CLI
/// resolves it (only `/`, `./` and `../` are relative). `git_hosts`: git host → the origin its
/// archives are fetched from (`REGISTRY_UPSTREAM_GIT_HOSTS`).
pub fn parse_location(
    location: &str,
    base: &Url,
    git_hosts: &BTreeMap<String, String>,
) -> Result<ModuleSource, String> {
    if location.len() > LOCATION_MAX_BYTES {
        return Err(format!("the download location is longer than {LOCATION_MAX_BYTES} bytes"));
    }
    if location.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err("the download location holds a control character or a space".into());
    }
    if let Some(rest) = location.strip_prefix("git::") {
        return git(rest, git_hosts);
    }
    // go-getter's GitHub shorthand (`github.com/OWNER/REPO?ref=…`) is a git clone.
    if location.starts_with("github.com/") {
        return git(&format!("https://{location}"), git_hosts);
    }
    if location.starts_with('/') || location.starts_with("./") || location.starts_with("../") {
        let resolved = base.join(location).map_err(|e| format!("the relative download location is not a URL: {e}"))?;
        return https(resolved.as_str());
    }
    // go-getter's forced getter: `NAME::` with NAME letters and digits (an IPv6 URL's `[::1]`
    // is not one).
    match location.split_once("::") {
        Some((forced, _)) if !forced.is_empty() && forced.bytes().all(|b| b.is_ascii_alphanumeric()) => Err(format!(
            "the download location is a {} source, which the pull-through does not fetch (only git:: of an allowed \
             git host and HTTPS archives)",
            crate::address::printable(forced)
        )),
        _ => https(location),
    }
}

/// `https://HOST/OWNER/REPO[.git][?ref=REF]`, HOST an allowed git host.
fn git(rest: &str, git_hosts: &BTreeMap<String, String>) -> Result<ModuleSource, String> {
    let (address, subdir) = split_subdir(rest);
    if let Some(subdir) = subdir {
        return Err(format!(
            "the download location names a subdirectory ({:?}) of its repository, which the pull-through does not copy",
            crate::address::printable(subdir)
        ));
    }
    let url = Url::parse(&address).map_err(|e| format!("the git location is not a URL: {e}"))?;
    if url.scheme() != "https" {
        return Err(format!("the git location uses {}, not https", crate::address::printable(url.scheme())));
    }
    if !url.username().is_empty() || url.password().is_some() || url.fragment().is_some() {
        return Err("the git location holds credentials or a fragment".into());
    }
    let host = match (url.host_str(), url.port()) {
        (Some(h), None) => h.to_string(),
        (Some(h), Some(p)) => format!("{h}:{p}"),
        (None, _) => return Err("the git location has no host".into()),
    };
    let Some(origin) = git_hosts.get(&host) else {
        return Err(format!(
            "the git host {} is not allowed (REGISTRY_UPSTREAM_GIT_HOSTS)",
            crate::address::printable(&host)
        ));
    };
    let segments: Vec<&str> = url.path().trim_start_matches('/').split('/').collect();
    let [owner, repo] = segments[..] else {
        return Err("the git location is not https://HOST/OWNER/REPO".into());
    };
    let repo = repo.strip_suffix(".git").unwrap_or(repo);
    if ![owner, repo].iter().all(|s| repo_name(s)) {
        return Err("the git location's owner or repository is not a GitHub name".into());
    }
    let mut reference = None;
    for (key, value) in url.query_pairs() {
        match key.as_ref() {
            "ref" if reference.is_none() => reference = Some(value.into_owned()),
            other => {
                return Err(format!(
                    "the git location sets {:?}, which the pull-through does not read",
                    crate::address::printable(other)
                ));
            }
        }
    }
    let Some(reference) = reference else {
        return Err("the git location names no ref: a branch's head is not a version, so it is not copied".into());
    };
    if !git_ref(&reference) {
        return Err(format!("the git ref {:?} is not a tag or commit name", crate::address::printable(&reference)));
    }
    let archive = Url::parse(&format!("{origin}/{owner}/{repo}/archive/{reference}.tar.gz"))
        .map_err(|e| format!("the git host's archive URL: {e}"))?;
    Ok(ModuleSource::Git { host, owner: owner.into(), repo: repo.into(), reference, archive })
}

/// An HTTPS archive URL, with go-getter's `//subdir`, `archive=` and `checksum=` read.
fn https(location: &str) -> Result<ModuleSource, String> {
    let (address, subdir) = split_subdir(location);
    let strip_top = match subdir {
        None => false,
        Some("*") => true,
        Some(other) => {
            return Err(format!(
                "the download location names a subdirectory ({:?}) of its archive, which the pull-through does not copy",
                crate::address::printable(other)
            ));
        }
    };
    let mut url = Url::parse(&address).map_err(|e| format!("the download location is not a URL: {e}"))?;
    if url.scheme() != "https" {
        return Err(format!(
            "the download location uses {}, which the pull-through does not fetch (only HTTPS)",
            crate::address::printable(url.scheme())
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("the download location holds credentials".into());
    }
    let (mut archive, mut sha256, mut kept) = (None, None, Vec::new());
    for (key, value) in url.query_pairs() {
        match key.as_ref() {
            "archive" => archive = Some(archive_type(&value)?),
            "checksum" => sha256 = Some(checksum(&value)?),
            _ => kept.push((key.into_owned(), value.into_owned())),
        }
    }
    let path = url.path().to_ascii_lowercase();
    let archive = match archive {
        Some(a) => a,
        None if path.ends_with(".tar.gz") || path.ends_with(".tgz") => "tar.gz",
        None if path.ends_with(".zip") => "zip",
        None => return Err("the download location is not a .tar.gz or .zip archive".into()),
    };
    url.set_fragment(None);
    if kept.is_empty() {
        url.set_query(None);
    } else {
        url.query_pairs_mut().clear().extend_pairs(&kept);
    }
    Ok(ModuleSource::Https { url, archive, sha256, strip_top })
}

/// go-getter's split of `//subdir` from a source address: the first `//` after the scheme's
/// and before the query.
fn split_subdir(source: &str) -> (String, Option<&str>) {
    let end = source.find('?').unwrap_or(source.len());
    let start = source[..end].find("://").map_or(0, |i| i + 3);
    match source[start..end].find("//") {
        Some(i) => {
            let at = start + i;
            let subdir = &source[at + 2..end];
            (format!("{}{}", &source[..at], &source[end..]), Some(subdir))
        }
        None => (source.to_string(), None),
    }
}

fn archive_type(value: &str) -> Result<&'static str, String> {
    match value {
        "tar.gz" | "tgz" => Ok("tar.gz"),
        "zip" => Ok("zip"),
        other => Err(format!(
            "the download location's archive type {:?} is not copied (tar.gz, zip)",
            crate::address::printable(other)
        )),
    }
}

fn checksum(value: &str) -> Result<String, String> {
    let hex = value.strip_prefix("sha256:").unwrap_or(value);
    let ok = hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit());
    if ok { Ok(hex.to_ascii_lowercase()) } else { Err("the download location's checksum is not sha256:HEX".into()) }
}

/// A GitHub owner or repository name.
fn repo_name(s: &str) -> bool {
    (1..=100).contains(&s.len())
        && s != "."
        && s != ".."
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// A tag or commit name as git allows it, narrowed to what needs no escaping in a URL path.
fn git_ref(s: &str) -> bool {
    (1..=REF_MAX_BYTES).contains(&s.len())
        && !s.starts_with(['-', '.', '/'])
        && !s.ends_with(['/', '.'])
        && !s.contains("..")
        && !s.contains("//")
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'/' | b'+'))
}

/// The archive as kept: without its top-level directory where `strip_top`, and accepted by
/// the same check as a published module archive. Ends, refused, once `stop` is set (its
/// request's budget ran out): every read of the archive looks at it first.
pub fn prepare(
    bytes: Vec<u8>,
    archive: &str,
    strip_top: bool,
    bounds: &crate::archive::Bounds,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<Vec<u8>, String> {
    let bytes = match (strip_top, archive) {
        (true, "tar.gz") => {
            crate::archive::strip_top_directory(Stoppable(std::io::Cursor::new(&bytes), stop), Vec::new(), bounds)?
        }
        (true, _) => return Err("only a .tar.gz archive's top-level directory can be removed".into()),
        (false, _) => bytes,
    };
    crate::archive::read_module_archive(Stoppable(std::io::Cursor::new(&bytes), stop), archive, bounds, &|_| false)?;
    Ok(bytes)
}

/// Whether `reader` holds an archive of type `archive` (`tar.gz`, `zip`) the registry serves:
/// the check a published module archive passes, within `bounds` (the air-gap bundle's import
/// runs it on every archive before writing any).
pub fn check_archive<R: std::io::Read + std::io::Seek>(
    reader: R,
    archive: &str,
    bounds: &crate::archive::Bounds,
) -> Result<(), String> {
    crate::archive::read_module_archive(reader, archive, bounds, &|_| false).map(drop)
}

/// A reader that fails once its flag is set.
struct Stoppable<'a, R>(R, &'a std::sync::atomic::AtomicBool);

impl<R: std::io::Read> std::io::Read for Stoppable<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.1.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(std::io::Error::other("stopped: the request's time ran out"));
        }
        self.0.read(buf)
    }
}

impl<R: std::io::Seek> std::io::Seek for Stoppable<'_, R> {
    fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
        self.0.seek(to)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A check whose request ran out of time stops at its next read, refused.
    #[test]
    fn a_stopped_check_ends_refused() {
        let archive = crate::testing::module_tar_gz(&[("main.tf", "# x\n")]);
        let (go, stop) = (std::sync::atomic::AtomicBool::new(false), std::sync::atomic::AtomicBool::new(true));
        let bounds = crate::archive::Bounds::UNLIMITED;
        assert!(prepare(archive.clone(), "tar.gz", false, &bounds, &go).is_ok());
        let stopped = prepare(archive, "tar.gz", false, &bounds, &stop).unwrap_err();
        assert!(stopped.contains("stopped"), "{stopped}");
    }

    fn hosts() -> BTreeMap<String, String> {
        [("github.com".to_string(), "https://github.com".to_string())].into()
    }

    fn parse(location: &str) -> Result<ModuleSource, String> {
        parse_location(
            location,
            &Url::parse("https://registry.example/v1/modules/a/b/c/1.0.0/download").unwrap(),
            &hosts(),
        )
    }

    #[test]
    fn public_registry_answers_are_github_archives() {
        let sha = "29230f956912d751a01a5694510f684754a93196";
        for (location, reference) in [
            ("git::https://github.com/terraform-aws-modules/terraform-aws-vpc?ref=v5.1.0", "v5.1.0"),
            (&format!("git::https://github.com/terraform-aws-modules/terraform-aws-vpc.git?ref={sha}") as &str, sha),
            ("github.com/terraform-aws-modules/terraform-aws-vpc?ref=v5.1.0", "v5.1.0"),
        ] {
            let Ok(ModuleSource::Git { owner, repo, reference: r, archive, .. }) = parse(location) else {
                panic!("{location}")
            };
            assert_eq!(
                (owner.as_str(), repo.as_str(), r.as_str()),
                ("terraform-aws-modules", "terraform-aws-vpc", reference)
            );
            assert_eq!(
                archive.as_str(),
                format!("https://github.com/terraform-aws-modules/terraform-aws-vpc/archive/{reference}.tar.gz")
            );
        }
    }

    #[test]
    fn https_archives_keep_their_query_without_go_getters_parameters() {
        let hex = "ab".repeat(32);
        let got = parse(&format!("https://s3.example/b/k.tar.gz?X-Amz-Signature=1&checksum=sha256:{hex}")).unwrap();
        let ModuleSource::Https { url, archive, sha256, strip_top } = got else { panic!() };
        assert_eq!(
            (url.as_str(), archive, sha256.as_deref(), strip_top),
            ("https://s3.example/b/k.tar.gz?X-Amz-Signature=1", "tar.gz", Some(hex.as_str()), false)
        );
        let old =
            parse("https://api.github.com/repos/h/terraform-aws-consul/tarball/v0.0.1//*?archive=tar.gz").unwrap();
        assert!(matches!(old, ModuleSource::Https { strip_top: true, archive: "tar.gz", .. }), "{old:?}");
        assert!(matches!(parse("/archives/m.zip").unwrap(), ModuleSource::Https { archive: "zip", .. }));
    }

    #[test]
    fn anything_else_is_refused_by_name() {
        for (location, says) in [
            ("git::ssh://git@github.com/o/r.git?ref=v1", "not https"),
            ("git::https://gitlab.com/o/r?ref=v1", "not allowed"),
            ("git::https://github.com/o/r//modules/x?ref=v1", "subdirectory"),
            ("git::https://github.com/o/r", "no ref"),
            ("git::https://github.com/o/r?ref=v1&depth=1", "depth"),
            ("git::https://github.com/o/r?ref=../../x", "not a tag"),
            ("git::https://github.com/o/r/x?ref=v1", "OWNER/REPO"),
            ("s3::https://s3.amazonaws.com/b/k.zip", "s3 source"),
            ("http://example.com/m.tar.gz", "only HTTPS"),
            ("https://example.com/m", "not a .tar.gz"),
            ("https://example.com/m.tar.gz//modules/x", "subdirectory"),
            ("https://u:p@example.com/m.tar.gz", "credentials"),
            ("https://example.com/m.tar.gz?archive=rar", "not copied"),
            ("https://example.com/m.tar.gz\n", "control"),
            // A query before any scheme: found by the fuzz target (a panic slicing it once).
            ("git::hance?ref=2923https://github.com/o/r?ref=v1", "not a URL"),
        ] {
            let got = parse(location);
            assert!(got.as_ref().is_err_and(|e| e.contains(says)), "{location}: {got:?}");
        }
    }
}
