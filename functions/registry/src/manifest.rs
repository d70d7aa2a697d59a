//! Manifest formats and the pure transforms from a stored manifest to a protocol response.
//!
//! All of them are written by the indexer only, under `indexed/` (`docs/BUCKET.md` shows each).
//! Module manifests are ours. Provider manifests have the shape of the `index.json` /
//! `VERSION.json` files `terraform providers mirror` writes, plus an `indexed` record per
//! archive (size and ETag of the zip the indexer hashed, so it can skip unchanged zips); the
//! mirror function serves only the protocol's `url` and `hashes`.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::error::Error;

/// The `format` of module manifests this code reads and writes.
pub const MODULE_MANIFEST_FORMAT: u32 = 1;

/// The content type of every document the registry writes and every answer it gives.
pub const CONTENT_TYPE_JSON: &str = "application/json";

/// A document as the registry stores it: pretty JSON with a final newline, so a person
/// reading the bucket (`aws s3 cp … -`) sees something readable.
pub fn to_json<T: Serialize>(value: &T) -> Result<bytes::Bytes, Error> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(|e| Error::internal_from("serialise document", e))?;
    bytes.push(b'\n');
    Ok(bytes.into())
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
/// `indexed/modules/…/manifest.json`: a module's published versions.
pub struct ModuleManifest {
    /// `MODULE_MANIFEST_FORMAT`; another value is refused.
    pub format: u32,
    /// Newest first, by SemVer precedence.
    pub versions: Vec<ModuleVersion>,
    /// The version OCI's `latest` tag names (`indexed/oci/…/tags/latest`): the highest one that
    /// is not a pre-release and has an OCI package. Recorded here so that the pass which moves
    /// it writes that tag, and a `reindex` gives it to modules published before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oci_latest: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
/// One published version of a module.
pub struct ModuleVersion {
    /// Its SemVer string, canonical.
    pub version: String,
    /// Full bucket key of the archive; its extension tells go-getter how to unpack it.
    pub archive: String,
    /// Size of the archive in bytes.
    pub size: u64,
    /// Hex SHA-256 of the archive bytes.
    pub sha256: String,
    /// ETag of the archive object when it was hashed; an equal ETag means no need to re-read it.
    pub etag: String,
    /// Version id of the archive object that was hashed, in a versioned bucket: download URLs
    /// name it, so what is served stays the bytes hashed here whatever is uploaded later.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_id: Option<String>,
    /// Its documentation was read from this archive and stored (`layout::module_docs`). False
    /// in manifests written before docs existed: the next pass reads the archive once more.
    #[serde(default)]
    pub docs: bool,
    /// Its stored docs hold the comparisons with the versions before it (`compared`, made at
    /// publish). False in manifests written before comparisons were stored: the next pass
    /// reads the archive once more and compares it.
    #[serde(default)]
    pub compared: bool,
    /// When the indexer first published it (`2026-11-23T10:00:00Z`); absent in manifests
    /// written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published_at: Option<String>,
    /// Its OCI module package's layer (`oci`): absent in manifests written before OCI, so the
    /// next pass reads the archive once more and builds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oci: Option<OciLayer>,
    /// How its interface was judged when it was published (`index::judgment`); absent under
    /// the policy `off` and in manifests written before judgments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judged: Option<Judgment>,
    /// Marked deprecated by its publisher (`layout::module_deprecation`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecation: Option<Deprecation>,
    /// Who built it, by its Sigstore bundle (`layout::module_bundle`), verified at publish;
    /// absent without a bundle, or with one that did not verify (its rejection says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Provenance>,
}

impl Provenance {
    /// What the details API and the MCP server show of it: the certificate's facts, each text
    /// a line of at most 256 characters (the certificate bounds them too).
    pub fn shown(&self) -> serde_json::Value {
        use crate::printed::one_line;
        const CHARS: usize = 256;
        let text = |t: Option<&String>| t.map(|t| one_line(t, CHARS));
        let identity = self.verified.identity.clone().unwrap_or_default();
        serde_json::json!({
            "repository": text(identity.repository.as_ref()),
            "commit": text(identity.commit.as_ref()),
            "ref": text(identity.git_ref.as_ref()),
            "workflow": text(identity.workflow.as_ref()),
            "run": text(identity.run.as_ref()),
            "builder": text(identity.builder.as_ref()),
            "issuer": one_line(&identity.issuer, CHARS),
            "subject": one_line(&identity.subject, CHARS),
            "predicate_type": text(self.verified.predicate_type.as_ref()),
            "log": text(self.verified.log.as_ref()),
            "log_index": self.verified.log_index,
            "timestamps": self.verified.timestamps,
            "signed_at": crate::clock::rfc3339(self.verified.signed_at),
            "trust_root": one_line(&self.trust_root, CHARS),
            "verified_at": one_line(&self.verified_at, CHARS),
            "signer_checked": self.checked,
        })
    }
}

/// A version's Sigstore provenance as the indexer verified it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    /// The bundle's key and ETag: it is not read again while they are the same.
    pub bundle: String,
    /// (As listed.)
    pub bundle_etag: String,
    /// The trust root that vouched for it: `public-good`, or the operator's object under
    /// `layout::SIGSTORE_TRUST_ROOTS_PREFIX`.
    pub trust_root: String,
    /// Who signed, when, where it was logged.
    pub verified: crate::provenance::Verified,
    /// When the indexer verified it (`2026-12-04T18:00:00Z`).
    pub verified_at: String,
    /// Whether the namespace's rule named who may sign (else any signer a trust root vouched
    /// for was taken, and the page says so).
    #[serde(default)]
    pub checked: bool,
}

#[cfg(any(test, feature = "test-support"))]
impl ModuleVersion {
    /// A published version for tests: `archive`, one byte, docs read and compared, nothing
    /// more; a test sets what it is about with `..ModuleVersion::example(…)`.
    pub fn example(version: &str, archive: &str) -> Self {
        ModuleVersion {
            version: version.into(),
            archive: archive.into(),
            size: 1,
            sha256: "00".into(),
            etag: "\"e\"".into(),
            version_id: None,
            docs: true,
            compared: true,
            published_at: None,
            oci: None,
            judged: None,
            deprecation: None,
            provenance: None,
        }
    }
}

/// A version's interface judged against the one before it in its major line.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Judgment {
    /// The version compared with; absent for the first release of a major version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub against: Option<String>,
    /// Each breaking change, one line each (the first 20).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub breaking: Vec<String>,
    /// Breaking changes beyond those listed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub more: u64,
    /// Why it was not judged (a file that does not parse), when it was not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Judgment {
    /// How many breaking changes it found.
    pub fn breaking_count(&self) -> u64 {
        self.breaking.len() as u64 + self.more
    }
}

/// A publisher's deprecation of a version (`layout::module_deprecation`,
/// `layout::provider_deprecation`: a small JSON file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deprecation {
    /// Why, as the publisher wrote it.
    pub reason: String,
    /// What to use instead (a version, or another module or provider), if given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replacement: Option<String>,
    /// ETag of the file it was read from: an unchanged file is not read again.
    #[serde(default)]
    pub etag: String,
}

impl Deprecation {
    /// Longest reason accepted, in characters.
    pub const REASON_MAX_CHARS: usize = 500;
    /// Longest replacement accepted, in characters.
    pub const REPLACEMENT_MAX_CHARS: usize = 200;
    /// Largest file read.
    pub const FILE_MAX_BYTES: u64 = 4096;

    /// Whether its text still passes the rules `parse` applies (a deprecation read before a
    /// rule was added may not).
    pub fn reads_as_written(&self) -> bool {
        self.reason
            .chars()
            .chain(self.replacement.iter().flat_map(|r| r.chars()))
            .all(|c| crate::printed::refused(c).is_none())
            && self.replacement.as_deref().is_none_or(names_a_version_or_address)
    }

    /// The file's content: `{"reason": "…", "replacement": "…"}` (replacement optional, no
    /// other field), or why it is refused.
    pub fn parse(bytes: &[u8], etag: &str) -> Result<Deprecation, String> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct File {
            reason: String,
            #[serde(default)]
            replacement: Option<String>,
        }
        let file: File = serde_json::from_slice(bytes).map_err(|e| {
            format!("not a deprecation file ({e}): expected {{\"reason\": \"…\", \"replacement\": \"…\"}}")
        })?;
        let clean = |text: &str, max: usize, what: &str| -> Result<String, String> {
            let text = text.trim();
            if text.chars().count() > max {
                return Err(format!("{what} is longer than {max} characters"));
            }
            if let Some((c, kind)) = text.chars().find_map(|c| crate::printed::refused(c).map(|kind| (c, kind))) {
                return Err(format!(
                    "{what} holds U+{:04X}, {kind}: the CLI prints this text, which must read as it is written",
                    u32::from(c)
                ));
            }
            Ok(text.to_string())
        };
        let reason = clean(&file.reason, Self::REASON_MAX_CHARS, "reason")?;
        if reason.is_empty() {
            return Err("reason is empty: say why the version is deprecated".into());
        }
        let replacement = match file.replacement {
            Some(r) => Some(clean(&r, Self::REPLACEMENT_MAX_CHARS, "replacement")?).filter(|r| !r.is_empty()),
            None => None,
        };
        if let Some(r) = replacement.as_deref().filter(|r| !names_a_version_or_address(r)) {
            return Err(format!(
                "replacement {:?} is not a version or an address: it is printed after \"Use\", so it may hold \
                 only ASCII letters, digits and punctuation (1.1.0, acme/vpc2/aws, registry.example.com/acme/widget)",
                crate::address::printable(r)
            ));
        }
        Ok(Deprecation { reason, replacement, etag: etag.to_string() })
    }

    /// One sentence for people and the CLI: `Version 1.2.0 of X is deprecated: REASON. Use R instead.`
    pub fn sentence(&self, what: &str) -> String {
        let reason = self.reason.trim_end_matches('.');
        match &self.replacement {
            Some(r) => format!("{what} is deprecated: {reason}. Use {r} instead."),
            None => format!("{what} is deprecated: {reason}."),
        }
    }
}

/// A replacement as the CLI prints it after "Use": a version or an address, so printable
/// ASCII with no space (no character there can be anything but what it looks like).
fn names_a_version_or_address(replacement: &str) -> bool {
    replacement.chars().all(|c| c.is_ascii_graphic())
}

/// A module version's one `archive/zip` layer: the archive itself when it is a `.zip`, else a
/// zip the indexer made of it (`archive::tar_gz_to_zip`, under `indexed/oci/`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OciLayer {
    /// Hex SHA-256 of the zip; empty when the archive cannot be a zip (a tar hard link): the
    /// version then has no OCI package.
    pub sha256: String,
    /// Its size in bytes.
    pub size: u64,
    /// Whether the indexer made it (stored at `layout::oci_module_zip`) rather than it being the
    /// archive.
    pub derived: bool,
}

impl ModuleManifest {
    /// A manifest of these versions, sorted newest first.
    pub fn new(mut versions: Vec<ModuleVersion>) -> Self {
        versions.sort_by(|a, b| newest_first(&a.version, &b.version));
        let oci_latest = versions
            .iter()
            .filter(|v| v.oci.as_ref().is_some_and(|l| !l.sha256.is_empty()))
            .filter_map(|v| crate::address::parse_version(&v.version).ok())
            .filter(|v| v.pre.is_empty())
            .max()
            .map(|v| v.to_string());
        ModuleManifest { format: MODULE_MANIFEST_FORMAT, versions, oci_latest }
    }

    /// Read a stored manifest; unreadable or of another format: `Error::Internal`.
    pub fn parse(bytes: &[u8]) -> Result<Self, Error> {
        let m: ModuleManifest =
            serde_json::from_slice(bytes).map_err(|e| Error::internal_from("module manifest", e))?;
        if m.format != MODULE_MANIFEST_FORMAT {
            return Err(Error::internal(format!(
                "module manifest format {} is not {MODULE_MANIFEST_FORMAT}",
                m.format
            )));
        }
        Ok(m)
    }

    /// The entry of `version`, if published.
    pub fn find(&self, version: &semver::Version) -> Option<&ModuleVersion> {
        let wanted = version.to_string();
        self.versions.iter().find(|v| v.version == wanted)
    }

    /// `GET :namespace/:name/:system/versions`: `{"modules":[{"versions":[{"version":…}]}]}`,
    /// serialised straight from the manifest (no intermediate JSON tree: at thousands of
    /// versions that tree cost more than the rest of the request).
    pub fn versions_response(&self) -> VersionsResponse<'_> {
        VersionsResponse { modules: [ModuleVersions { versions: &self.versions }] }
    }
}

/// The `versions` answer, borrowed from the manifest.
#[derive(Debug, Serialize)]
pub struct VersionsResponse<'a> {
    modules: [ModuleVersions<'a>; 1],
}

#[derive(Debug, Serialize)]
struct ModuleVersions<'a> {
    #[serde(serialize_with = "version_objects")]
    versions: &'a [ModuleVersion],
}

fn version_objects<S: serde::Serializer>(versions: &&[ModuleVersion], s: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Entry<'a> {
        version: &'a str,
    }
    s.collect_seq(versions.iter().map(|v| Entry { version: &v.version }))
}

/// Order two version strings newest first by SemVer precedence; build metadata (which has no
/// precedence) and unparsable strings break ties deterministically.
pub fn newest_first(a: &str, b: &str) -> Ordering {
    match (semver::Version::parse(a), semver::Version::parse(b)) {
        (Ok(x), Ok(y)) => y.cmp_precedence(&x).then_with(|| y.cmp(&x)),
        (Ok(_), Err(_)) => Ordering::Less,
        (Err(_), Ok(_)) => Ordering::Greater,
        (Err(_), Err(_)) => a.cmp(b),
    }
}

/// `providers/HOSTNAME/NAMESPACE/TYPE/index.json`: `{"versions": {"2.0.0": {}}}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderIndex {
    /// Version → `{}` (the protocol has nothing to say per version).
    pub versions: BTreeMap<String, Value>,
}

/// `providers/HOSTNAME/NAMESPACE/TYPE/VERSION.json`: `{"archives": {"linux_amd64": {...}}}`.
/// For a signed release of the registry's own host, also what providers.v1 serves.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderVersion {
    /// `linux_amd64` → that platform's package: what is served.
    pub archives: BTreeMap<String, ProviderArchive>,
    /// The release's verified signature: present exactly when `archives` of a signed release
    /// are served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release: Option<SignedRelease>,
    /// Zips of a signed release already checked and hashed, not served while its signature
    /// does not verify (so they are not read again when it is fixed).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pending: BTreeMap<String, ProviderArchive>,
    /// The version's OCI image index, exactly as its tag serves it (`oci::artifacts`): written
    /// with the document, so the tag and the archives it names change together. Absent when
    /// nothing is served, or the provider's address has no OCI repository name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oci_index: Option<String>,
    /// Marked deprecated by its publisher (`layout::provider_deprecation`); only a version
    /// with something served can be.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecation: Option<Deprecation>,
}

/// `indexed/oci/…/blobs/sha256/HEX.json`: where the bytes of an OCI blob are (a served zip,
/// and the object version the indexer hashed), for the OCI function to presign.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OciBlob {
    /// The bucket key of the zip.
    pub key: String,
    /// Its object version, in a versioned bucket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_id: Option<String>,
    /// Its size in bytes.
    pub size: u64,
}

/// What the indexer verified of a signed release (`index::releases`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignedRelease {
    /// Plugin protocol versions, from `_manifest.json`; empty when it is absent (no claim:
    /// the CLI then skips its protocol check, and the plugin handshake decides).
    pub protocols: Vec<String>,
    /// The key whose signature over `SHA256SUMS` verified.
    pub signing_key: RecordedKey,
}

/// A signing key as the CLI is given it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedKey {
    /// Upper-case hex long key ID.
    pub key_id: String,
    /// The public key, ASCII-armored.
    pub ascii_armor: String,
}

/// One platform's package in `VERSION.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderArchive {
    /// Relative to the JSON document, as `terraform providers mirror` writes it: the zip's file name.
    pub url: String,
    /// `zh:` and `h1:` of the zip, as the indexer computed them (in that order, see
    /// `hashes_for_cli`; documents written before 2026-11-24 have `h1:` first).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hashes: Vec<String>,
    /// Written by the indexer only; absent in files written by `terraform providers mirror`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub indexed: Option<Indexed>,
}

/// Which bytes the indexer hashed: an unchanged ETag means no need to read them again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Indexed {
    /// Size of the zip in bytes.
    pub size: u64,
    /// ETag of the zip when it was hashed.
    pub etag: String,
    /// Version id of the zip that was hashed, in a versioned bucket (as for modules).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_id: Option<String>,
}

impl ProviderArchive {
    /// Its `zh:` hash (hex SHA-256 of the zip), which says whether two are the same bytes;
    /// empty if it has none.
    pub fn zh(&self) -> &str {
        self.hashes.iter().find_map(|h| h.strip_prefix("zh:")).unwrap_or_default()
    }

    /// Its hashes in the order the CLI should try them: `zh:` first. Terraform checks a
    /// downloaded zip against a mirror's hashes in the order given and stops at the first match
    /// (`getproviders.PackageMatchesAnyHash`; OpenTofu 1.10+ computes every scheme it is given,
    /// `HashesMatchingPackage`, so there the order saves nothing): a `zh:` is one SHA-256
    /// over the zip, an `h1:` first unpacks the whole archive into a temporary directory (for
    /// the 700 MB AWS provider, seconds: the network mirror install then took 2× a filesystem
    /// mirror's, docs/PERFORMANCE.md). Both pin the same bytes, and the lock file gets the
    /// `h1:` the CLI computes after unpacking either way.
    pub fn hashes_for_cli(&self) -> Vec<&str> {
        let (zip, other): (Vec<&str>, Vec<&str>) =
            self.hashes.iter().map(String::as_str).partition(|h| h.starts_with("zh:"));
        zip.into_iter().chain(other).collect()
    }

    /// The version id of the zip the indexer hashed, if the bucket keeps versions.
    pub fn version_id(&self) -> Option<&str> {
        self.indexed.as_ref().and_then(|i| i.version_id.as_deref())
    }
}

impl ProviderIndex {
    /// Read a stored `index.json`; unreadable: `Error::Internal`.
    pub fn parse(bytes: &[u8]) -> Result<Self, Error> {
        serde_json::from_slice(bytes).map_err(|e| Error::internal_from("provider index.json", e))
    }

    /// `GET :hostname/:namespace/:type/index.json`: only SemVer keys, each with `{}`.
    pub fn response(&self) -> Value {
        let mut versions = serde_json::Map::new();
        for v in self.versions.keys() {
            if crate::address::parse_version(v).is_ok() {
                versions.insert(v.clone(), json!({}));
            } else {
                tracing::warn!(version = %crate::address::printable(v), "index.json lists a version that is not SemVer; not served");
            }
        }
        json!({ "versions": versions })
    }
}

impl ProviderVersion {
    /// Read a stored `VERSION.json`; unreadable: `Error::Internal`.
    pub fn parse(bytes: &[u8]) -> Result<Self, Error> {
        serde_json::from_slice(bytes).map_err(|e| Error::internal_from("provider VERSION.json", e))
    }

    /// The version's line in `index.json`: `{}` for the mirror; for a signed release also its
    /// protocols and platforms, which providers.v1 lists (so its `versions` answer is one read).
    pub fn index_line(&self) -> Value {
        let mut line = match &self.release {
            None => json!({}),
            Some(release) => {
                let platforms: Vec<Value> = self
                    .archives
                    .keys()
                    .filter_map(|k| k.split_once('_'))
                    .map(|(os, arch)| json!({"os": os, "arch": arch}))
                    .collect();
                json!({"protocols": release.protocols, "platforms": platforms})
            }
        };
        if let Some(d) = &self.deprecation {
            line["deprecation"] = json!({"reason": d.reason, "replacement": d.replacement});
        }
        // Whether the version has an OCI tag (`oci_index`), so that `tags/list` names exactly
        // the tags that resolve, from this one document.
        if self.oci_index.is_some() {
            line["oci"] = json!(true);
        }
        line
    }
}

impl ProviderIndex {
    /// providers.v1 `GET :namespace/:type/versions`: the signed releases, newest first, each
    /// with its protocols and platforms.
    pub fn registry_versions(&self) -> Value {
        let mut versions: Vec<(&String, &Value)> = self
            .versions
            .iter()
            .filter(|(v, line)| crate::address::parse_version(v).is_ok() && line.get("platforms").is_some())
            .collect();
        versions.sort_by(|a, b| newest_first(a.0, b.0));
        let versions: Vec<Value> = versions
            .into_iter()
            .map(|(v, line)| {
                json!({
                    "version": v,
                    "protocols": line.get("protocols").cloned().unwrap_or_else(|| json!([])),
                    "platforms": line.get("platforms").cloned().unwrap_or_else(|| json!([])),
                })
            })
            .collect();
        // The protocol's `warnings`, which the CLI prints under "Additional provider
        // information from registry": one per deprecated version, newest first.
        let warnings: Vec<String> = versions
            .iter()
            .filter_map(|v| v["version"].as_str())
            .filter_map(|v| {
                let line = self.versions.get(v)?.get("deprecation")?;
                let deprecation: Deprecation = serde_json::from_value(line.clone()).ok()?;
                Some(deprecation.sentence(&format!("Version {v}")))
            })
            .collect();
        if warnings.is_empty() {
            return json!({ "versions": versions });
        }
        json!({ "versions": versions, "warnings": warnings })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Refused in a reason or a replacement, each named by its code point (`printed` has the
    /// whole list); a replacement is a version or an address, printable ASCII; a reason in any
    /// script passes.
    #[test]
    fn deprecation_text_that_could_read_other_than_written_is_refused() {
        for c in
            ['\u{1b}', '\u{202e}', '\u{2066}', '\u{200b}', '\u{feff}', '\u{3164}', '\u{fe0f}', '\u{2800}', '\u{a0}']
        {
            let code = format!("U+{:04X}", u32::from(c));
            for (file, what) in [
                (json!({"reason": format!("fixed in 2.0{c}.0")}), "reason"),
                (json!({"reason": "r", "replacement": format!("acme/vpc{c}2/aws")}), "replacement"),
            ] {
                let why = Deprecation::parse(file.to_string().as_bytes(), "e").unwrap_err();
                assert!(why.starts_with(&format!("{what} holds {code}, ")), "{why}");
            }
        }
        for replacement in ["acme/vрc2/aws", "1.1.0 or later", "日本"] {
            let why =
                Deprecation::parse(json!({"reason": "r", "replacement": replacement}).to_string().as_bytes(), "e");
            assert!(why.unwrap_err().contains("is not a version or an address"), "{replacement}");
        }
        for fine in ["CVE-2026-1234: use 2.0.0 — «vite» ", "استخدم 2.0", "שימוש ב-2.0", "日本語 ⚠ ✓ é"]
        {
            let file = json!({"reason": fine, "replacement": "registry.example.com/acme/vpc2/aws"});
            let parsed = Deprecation::parse(file.to_string().as_bytes(), "e");
            assert_eq!(parsed.map(|d| d.reason), Ok(fine.trim().to_string()));
        }
    }

    #[test]
    fn deprecated_releases_become_the_protocols_warnings() {
        let release = ProviderVersion {
            release: Some(SignedRelease {
                protocols: vec!["6.0".into()],
                signing_key: RecordedKey { key_id: "K".into(), ascii_armor: "A".into() },
            }),
            ..ProviderVersion::default()
        };
        let deprecated = ProviderVersion {
            deprecation: Some(Deprecation {
                reason: "broken".into(),
                replacement: Some("1.1.0".into()),
                etag: "e".into(),
            }),
            ..release.clone()
        };
        let index = ProviderIndex {
            versions: [("1.0.0".to_string(), deprecated.index_line()), ("1.1.0".to_string(), release.index_line())]
                .into_iter()
                .collect(),
        };
        let answer = index.registry_versions();
        assert_eq!(answer["warnings"], json!(["Version 1.0.0 is deprecated: broken. Use 1.1.0 instead."]));
        let clean = ProviderIndex { versions: [("1.1.0".to_string(), release.index_line())].into_iter().collect() };
        assert!(clean.registry_versions().get("warnings").is_none(), "no warnings key without a deprecation");
    }

    fn mv(v: &str) -> ModuleVersion {
        ModuleVersion::example(v, &format!("modules/a/b/c/{v}.tar.gz"))
    }

    #[test]
    fn versions_sorted_by_precedence() {
        let m = ModuleManifest::new(
            ["1.0.0", "1.10.0", "1.2.0", "1.10.0-rc.1", "0.9.9", "1.10.0-alpha", "2.0.0-beta.10", "2.0.0-beta.2"]
                .map(mv)
                .to_vec(),
        );
        let order: Vec<&str> = m.versions.iter().map(|v| v.version.as_str()).collect();
        assert_eq!(
            order,
            ["2.0.0-beta.10", "2.0.0-beta.2", "1.10.0", "1.10.0-rc.1", "1.10.0-alpha", "1.2.0", "1.0.0", "0.9.9"]
        );
        assert_eq!(
            serde_json::to_value(m.versions_response()).unwrap(),
            json!({"modules":[{"versions":[
                {"version":"2.0.0-beta.10"},{"version":"2.0.0-beta.2"},{"version":"1.10.0"},{"version":"1.10.0-rc.1"},
                {"version":"1.10.0-alpha"},{"version":"1.2.0"},{"version":"1.0.0"},{"version":"0.9.9"}]}]})
        );
    }

    #[test]
    fn manifest_round_trip_and_bad_input() {
        let m = ModuleManifest::new(vec![mv("1.0.0")]);
        let bytes = serde_json::to_vec(&m).unwrap();
        assert_eq!(ModuleManifest::parse(&bytes).unwrap(), m);
        assert!(m.find(&semver::Version::parse("1.0.0").unwrap()).is_some());
        assert!(m.find(&semver::Version::parse("1.0.1").unwrap()).is_none());
        for bad in [&b"not json"[..], br#"{"format":2,"versions":[]}"#, br#"{"versions":[]}"#] {
            assert_eq!(ModuleManifest::parse(bad).unwrap_err().status().as_u16(), 500);
        }
    }

    #[test]
    fn provider_documents_from_terraform_providers_mirror() {
        // Shape written by `terraform providers mirror` (Terraform 1.11).
        let index = br#"{"versions":{"3.2.1":{},"3.2.0":{},"latest":{}}}"#;
        assert_eq!(ProviderIndex::parse(index).unwrap().response(), json!({"versions":{"3.2.0":{},"3.2.1":{}}}));
        assert!(ProviderIndex::parse(b"[]").is_err());
    }
}
