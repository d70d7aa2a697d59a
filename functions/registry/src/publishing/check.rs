//! The checks an upload would meet, made before it is uploaded, with the indexer's own code:
//! the archive read as the indexer reads it (`archive::read_module_archive`, the same
//! rejection text), the module's docs (`module_docs::extract`), and the SemVer judgment against
//! the versions published before it (`index::judge_unpublished`). Pure: what the registry
//! serves is handed in (`remote` reads it through the registry).

use std::collections::BTreeMap;

use crate::address::ModuleAddress;
use crate::archive::{self, Bounds};
use crate::error::Error;
use crate::index::{SemverPolicy, Verdict};
use crate::manifest::ModuleVersion;
use crate::module_docs::compare::Comparison;
use crate::module_docs::{self, ModuleDocs};

/// An archive that passed the checks, and its docs.
#[derive(Debug, Clone)]
pub struct Checked {
    /// The archive's SHA-256, hex.
    pub sha256: String,
    /// Its size.
    pub size: u64,
    /// Its docs as the indexer reads them.
    pub docs: ModuleDocs,
}

/// Check `bytes` as a module archive of type `extension` (`tar.gz`, `zip`) the way the indexer
/// checks an upload: over `max_bytes` (`REGISTRY_MAX_MODULE_ARCHIVE_BYTES`) or failing a check,
/// the reason its rejection record would give.
pub fn archive(bytes: &[u8], extension: &str, bounds: &Bounds, max_bytes: u64) -> Result<Checked, String> {
    use sha2::Digest as _;
    let size = bytes.len() as u64;
    if size > max_bytes {
        return Err(format!("{size} bytes, over the limit of {max_bytes} (REGISTRY_MAX_MODULE_ARCHIVE_BYTES)"));
    }
    let kept = archive::read_module_archive(std::io::Cursor::new(bytes), extension, bounds, &module_docs::wanted)?;
    let sha256 = hex::encode(sha2::Sha256::digest(bytes));
    let docs = module_docs::extract(&kept, &sha256);
    Ok(Checked { sha256, size, docs })
}

/// The versions whose docs the judgment needs of those `published`: the one before `version`
/// (what its page shows the changes since) and its baseline (the highest release below it in
/// its major line, which a breaking change is judged against), each once, newest first.
pub fn versions_to_compare(version: &semver::Version, published: &[semver::Version]) -> Vec<semver::Version> {
    let below = || published.iter().filter(|v| v.cmp_precedence(version).is_lt());
    let highest = |vs: Vec<&semver::Version>| vs.into_iter().max_by(|a, b| a.cmp_precedence(b)).cloned();
    let since = highest(below().filter(|v| !version.pre.is_empty() || v.pre.is_empty()).collect());
    let baseline = highest(below().filter(|v| v.major == version.major && v.pre.is_empty()).collect());
    let mut out: Vec<semver::Version> = since.into_iter().collect();
    if let Some(b) = baseline.filter(|b| !out.contains(b)) {
        out.push(b);
    }
    out
}

/// An earlier version as the registry serves it: its archive checked and its docs read.
#[derive(Debug, Clone)]
pub struct Earlier {
    /// Its version.
    pub version: semver::Version,
    /// Its archive, checked.
    pub checked: Checked,
}

/// What the judgment said of a version not uploaded yet.
#[derive(Debug)]
pub struct Judged {
    /// Served, or refused (and why) under the namespace's policy.
    pub verdict: Verdict,
    /// How its interface differs from the version before it, when that one was compared.
    pub since: Option<Comparison>,
}

/// Judge `docs` of `module` `version` against the `earlier` versions, as the indexer would
/// judge the upload, `published` naming every version served.
pub async fn judge(
    policy: &SemverPolicy,
    module: &ModuleAddress,
    version: &semver::Version,
    docs: &mut ModuleDocs,
    published: &[semver::Version],
    earlier: &[Earlier],
) -> Result<Judged, Error> {
    let entries: Vec<ModuleVersion> = published
        .iter()
        .map(|v| {
            let sha256 = earlier.iter().find(|e| &e.version == v).map(|e| e.checked.sha256.clone()).unwrap_or_default();
            entry(v, sha256)
        })
        .collect();
    let fresh: BTreeMap<String, ModuleDocs> =
        earlier.iter().map(|e| (e.version.to_string(), e.checked.docs.clone())).collect();
    let verdict = crate::index::judge_unpublished(policy, module, version, docs, &entries, &fresh).await?;
    let compared = docs.compared.as_ref();
    let since = compared.and_then(|c| c.since.as_ref().and_then(|s| c.with.iter().find(|w| &w.from == s))).cloned();
    Ok(Judged { verdict, since })
}

/// A served version as a manifest entry would record it, for the judgment (which reads only
/// its version and SHA-256: docs read from other bytes than it serves are not compared).
fn entry(version: &semver::Version, sha256: String) -> ModuleVersion {
    ModuleVersion {
        version: version.to_string(),
        archive: String::new(),
        size: 0,
        sha256,
        etag: String::new(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{module_tar_gz, module_zip};

    fn v(s: &str) -> semver::Version {
        semver::Version::parse(s).unwrap()
    }

    const BOUNDS: Bounds = Bounds { unpacked_bytes: 1 << 20, entries: 100 };

    #[test]
    fn the_versions_compared_are_the_one_before_and_the_baseline() {
        let published = [v("1.0.0"), v("1.4.0"), v("2.0.0-rc.1"), v("2.0.0"), v("2.1.0")];
        assert_eq!(versions_to_compare(&v("2.2.0"), &published), [v("2.1.0")]);
        assert_eq!(versions_to_compare(&v("1.5.0"), &published), [v("1.4.0")]);
        // The first release of a major: the one before it, no baseline.
        assert_eq!(versions_to_compare(&v("3.0.0"), &published), [v("2.1.0")]);
        // A pre-release is compared with the highest below, pre-release or not; no release of
        // its major is below it to be its baseline.
        assert_eq!(versions_to_compare(&v("2.0.0-rc.2"), &published), [v("2.0.0-rc.1")]);
        assert!(versions_to_compare(&v("0.1.0"), &published).is_empty());
    }

    #[test]
    fn an_archive_is_refused_with_the_indexers_reason() {
        let nested = module_tar_gz(&[("module/main.tf", "variable \"x\" {}\n")]);
        let why = archive(&nested, "tar.gz", &BOUNDS, 1 << 20).unwrap_err();
        assert!(why.contains("no .tf, .tf.json or .tofu file at the archive root"), "{why}");
        let good = module_zip(&[("main.tf", "variable \"x\" {}\n")]);
        assert!(archive(&good, "zip", &BOUNDS, 1 << 20).is_ok());
        let why = archive(&good, "zip", &BOUNDS, 10).unwrap_err();
        assert!(why.ends_with("over the limit of 10 (REGISTRY_MAX_MODULE_ARCHIVE_BYTES)"), "{why}");
    }

    #[tokio::test]
    async fn a_breaking_change_is_shown_and_refused_under_enforce_before_upload() {
        let module = ModuleAddress::parse("acme", "net", "aws").unwrap();
        let old = archive(
            &module_tar_gz(&[("main.tf", "variable \"a\" {}\nvariable \"b\" {}\n")]),
            "tar.gz",
            &BOUNDS,
            1 << 20,
        )
        .unwrap();
        let earlier = [Earlier { version: v("1.0.0"), checked: old }];
        let new_bytes = module_tar_gz(&[("main.tf", "variable \"a\" {}\n")]);
        let published = [v("1.0.0")];
        let policy = SemverPolicy::parse("enforce").unwrap();
        let mut docs = archive(&new_bytes, "tar.gz", &BOUNDS, 1 << 20).unwrap().docs;
        let judged = judge(&policy, &module, &v("1.1.0"), &mut docs, &published, &earlier).await.unwrap();
        let Verdict::Refuse(why) = judged.verdict else { panic!("{:?}", judged.verdict) };
        assert!(why.contains("input \"b\"") && why.contains("publish this archive as 2.0.0"), "{why}");
        assert_eq!(judged.since.unwrap().from, "1.0.0");
        // Under warn: served, the change recorded.
        let mut docs = archive(&new_bytes, "tar.gz", &BOUNDS, 1 << 20).unwrap().docs;
        let warn = SemverPolicy::default();
        let judged = judge(&warn, &module, &v("1.1.0"), &mut docs, &published, &earlier).await.unwrap();
        let Verdict::Publish(Some(j)) = judged.verdict else { panic!() };
        assert_eq!((j.against.as_deref(), j.breaking_count()), (Some("1.0.0"), 1));
    }
}
