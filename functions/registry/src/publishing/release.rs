//! A provider release as goreleaser's Terraform provider configuration leaves it in `dist/`
//! (`make publish-provider`): which files are the release, the checks the indexer makes of a
//! signed release, made before anything is uploaded (every zip listed in `SHA256SUMS` with
//! its SHA-256, the manifest's protocols, the signature against the namespace's keys), and
//! the order of the upload, which never lets the indexer serve half a release. Reading the
//! files and the keys, the upload and the wait are the command's.

use std::collections::BTreeMap;

use crate::address::ProviderAddress;
use crate::layout::{self, Platform, ReleaseFile};
use crate::signing::{self, SigningKey};

/// One release's files in `dist/`, by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Release {
    /// Its hostname (the registry's own), namespace and type.
    pub provider: ProviderAddress,
    /// Its version, as its file names spell it.
    pub version: semver::Version,
    /// Each platform's zip.
    pub zips: BTreeMap<Platform, String>,
    /// `terraform-provider-TYPE_VERSION_SHA256SUMS`.
    pub shasums: String,
    /// Its binary detached signature, `…_SHA256SUMS.sig`.
    pub signature: String,
    /// `…_manifest.json`, when `dist/` has it.
    pub manifest: Option<String>,
}

/// `terraform-provider-TYPE_VERSION_SHA256SUMS` → (TYPE, VERSION). TYPE never holds `_`.
fn shasums_name(name: &str) -> Option<(String, semver::Version)> {
    let rest = name.strip_prefix("terraform-provider-")?.strip_suffix(layout::SHASUMS_SUFFIX)?;
    let (r#type, version) = rest.split_once('_')?;
    Some((r#type.to_string(), crate::address::parse_version(version).ok()?))
}

impl Release {
    /// The release among `names` (a `dist/` directory's files) of the provider its
    /// `_SHA256SUMS` names, under `hostname`/`namespace`; `version` picks one of several.
    pub fn find(
        hostname: &str,
        namespace: &str,
        names: &[String],
        version: Option<&semver::Version>,
    ) -> Result<Release, String> {
        let mut found: Vec<(String, semver::Version)> = names.iter().filter_map(|n| shasums_name(n)).collect();
        found.sort();
        found.dedup();
        found.retain(|(_, v)| version.is_none_or(|wanted| v == wanted));
        let (r#type, version) = match found.as_slice() {
            [one] => one.clone(),
            [] => {
                let which = version.map_or("VERSION".to_string(), |v| v.to_string());
                return Err(format!(
                    "no terraform-provider-TYPE_{which}_SHA256SUMS in it: a provider release is what goreleaser's \
                     checksum and signs steps leave in dist/ (docs/PUBLISHING.md)"
                ));
            }
            many => {
                let listed: Vec<String> = many.iter().map(|(t, v)| format!("{t} {v}")).collect();
                return Err(format!("it holds several releases ({}): say which with VERSION=", listed.join(", ")));
            }
        };
        let provider = ProviderAddress::parse(hostname, namespace, &r#type).map_err(|e| e.to_string())?;
        let (mut zips, mut signature, mut manifest) = (BTreeMap::new(), None, None);
        for name in names {
            if let Some((v, platform)) = layout::parse_provider_archive_name(&provider, name)
                && v == version
            {
                zips.insert(platform, name.clone());
            }
            match layout::parse_release_file_name(&provider, name) {
                Some((v, ReleaseFile::Signature)) if v == version => signature = Some(name.clone()),
                Some((v, ReleaseFile::Manifest)) if v == version => manifest = Some(name.clone()),
                _ => {}
            }
        }
        let shasums = layout::provider_release_file_name(&provider, &version, ReleaseFile::Shasums);
        let signature = signature.ok_or_else(|| {
            format!("{shasums}.sig is missing: goreleaser's signs step makes it (gpg --detach-sign, not --armor)")
        })?;
        if zips.is_empty() {
            return Err(format!("no terraform-provider-{}_{version}_OS_ARCH.zip beside {shasums}", provider.r#type));
        }
        Ok(Release { provider, version, zips, shasums, signature, manifest })
    }

    /// The name `SHA256SUMS` lists the manifest under, in `dist/` or not.
    pub fn manifest_name(&self) -> String {
        layout::provider_release_file_name(&self.provider, &self.version, ReleaseFile::Manifest)
    }

    /// The files in the order they are uploaded: the zips and the manifest, then
    /// `SHA256SUMS`, its signature last. The indexer serves a signed release once its
    /// signature verifies, with the zips uploaded by then: each zip is there before that.
    pub fn upload_order(&self) -> Vec<&str> {
        let mut order: Vec<&str> = self.zips.values().map(String::as_str).collect();
        order.extend(self.manifest.as_deref());
        order.push(&self.shasums);
        order.push(&self.signature);
        order
    }
}

/// `SHA256SUMS` (`sums`) against the release's files (`sha256_of`: name → hex SHA-256): each
/// zip is listed with its SHA-256 and each zip listed is there, as is the manifest it lists.
/// The list, parsed.
pub fn check_sums(
    release: &Release,
    sums: &[u8],
    sha256_of: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, String> {
    let listed = signing::parse_shasums(sums).map_err(|why| format!("{}: {why}", release.shasums))?;
    let mut problems = Vec::new();
    for name in release.zips.values().chain(&release.manifest) {
        match (listed.get(name), sha256_of.get(name)) {
            (None, _) => problems.push(format!("{name} is not listed in it")),
            (Some(l), Some(actual)) if l != actual => {
                problems.push(format!("{name} has SHA-256 {actual}, it lists {l}"))
            }
            _ => {}
        }
    }
    let zip_of_release = |name: &str| {
        layout::parse_provider_archive_name(&release.provider, name).is_some_and(|(v, _)| v == release.version)
    };
    for name in listed.keys().filter(|n| zip_of_release(n) && !release.zips.values().any(|z| z == *n)) {
        problems.push(format!("it lists {name}, which is not in the directory"));
    }
    let manifest = release.manifest_name();
    if release.manifest.is_none() && listed.contains_key(&manifest) {
        problems.push(format!(
            "it lists {manifest}, which is not in the directory: goreleaser lists it but does not copy it \
             (cp terraform-registry-manifest.json DIST/{manifest})"
        ));
    }
    if problems.is_empty() {
        Ok(listed)
    } else {
        Err(format!("{} does not match the files: {}", release.shasums, problems.join("; ")))
    }
}

/// A zip checked as the indexer checks it (the executable at its root, every entry bounded),
/// and refused with directory entries, which the CLI's lock file cannot hold.
pub fn check_zip<R: std::io::Read + std::io::Seek>(
    zip: R,
    name: &str,
    release: &Release,
    bounds: &crate::archive::Bounds,
) -> Result<(), String> {
    let summary = crate::archive::check_provider_zip(zip, &release.provider.r#type, bounds)
        .map_err(|why| format!("{name}: {why}"))?;
    if summary.directory_entries > 0 {
        return Err(format!(
            "{name} has directory entries: the lock file the CLI writes would then hold a hash the next init \
             refuses; build it without them (zip -D)"
        ));
    }
    Ok(())
}

/// The namespace's keys (`key_files`: name and bytes, as listed under `signing-keys/`;
/// `unread`: why some were not read) and the key among them that signed `sums`, checked as
/// the indexer checks it at `now` (Unix seconds).
pub fn signing_key(
    key_files: &[(String, Vec<u8>)],
    unread: &[String],
    sums: &[u8],
    signature: &[u8],
    now: u64,
) -> Result<SigningKey, String> {
    let (mut keys, mut problems) = (Vec::new(), unread.to_vec());
    for (name, bytes) in key_files {
        match signing::parse_keys(&crate::address::printable(name), bytes) {
            Ok(mut parsed) => keys.append(&mut parsed),
            Err(why) => problems.push(why),
        }
    }
    signing::verify_with(&keys, &problems, sums, signature, now).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::signing::{TestKey, release};

    fn names(files: &[(String, Vec<u8>)]) -> Vec<String> {
        files.iter().map(|(n, _)| n.clone()).collect()
    }

    fn digests(files: &[(String, Vec<u8>)]) -> BTreeMap<String, String> {
        use sha2::Digest;
        files.iter().map(|(n, b)| (n.clone(), hex::encode(sha2::Sha256::digest(b)))).collect()
    }

    #[test]
    fn a_dist_directory_names_its_release_and_uploads_the_signature_last() {
        let key = TestKey::generate("acme");
        let mut files = release("widget", "1.2.0", &[("linux", "amd64"), ("darwin", "arm64")], Some(&["6.0"]), &key);
        files.push(("config.yaml".into(), b"goreleaser's own".to_vec()));
        let found = Release::find("r.example", "acme", &names(&files), None).unwrap();
        assert_eq!((found.provider.r#type.as_str(), found.version.to_string()), ("widget", "1.2.0".into()));
        let order = found.upload_order();
        assert_eq!(order.len(), 5, "{order:?}");
        assert!(order[..2].iter().all(|n| n.ends_with(".zip")), "{order:?}");
        assert_eq!(&order[2..], ["terraform-provider-widget_1.2.0_manifest.json", &found.shasums, &found.signature]);
        let sums = &files.iter().find(|(n, _)| *n == found.shasums).unwrap().1;
        let listed = check_sums(&found, sums, &digests(&files)).unwrap();
        assert_eq!(listed.len(), 3);
        let sig = &files.iter().find(|(n, _)| *n == found.signature).unwrap().1;
        let now = u64::try_from(crate::clock::now_unix()).unwrap();
        let keys = [("acme.asc".to_string(), key.public_armor().into_bytes())];
        assert_eq!(signing_key(&keys, &[], sums, sig, now).unwrap().key_id, key.key_id());
        let other = [("x.asc".to_string(), TestKey::generate("x").public_armor().into_bytes())];
        let refused = signing_key(&other, &["y.asc: gone".into()], sums, sig, now).unwrap_err();
        assert!(refused.contains(&key.key_id()) && refused.contains("key files not used: y.asc: gone"), "{refused}");
    }

    #[test]
    fn what_does_not_add_up_is_named() {
        let key = TestKey::generate("acme");
        let files = release("widget", "1.2.0", &[("linux", "amd64"), ("darwin", "arm64")], Some(&["6.0"]), &key);
        let found = Release::find("r.example", "acme", &names(&files), None).unwrap();
        let sums = files.iter().find(|(n, _)| *n == found.shasums).unwrap().1.clone();
        let mut other_bytes = digests(&files);
        other_bytes.insert("terraform-provider-widget_1.2.0_linux_amd64.zip".into(), "0".repeat(64));
        let why = check_sums(&found, &sums, &other_bytes).unwrap_err();
        assert!(why.contains("linux_amd64.zip has SHA-256 0000"), "{why}");
        let without: Vec<String> = names(&files).into_iter().filter(|n| !n.contains("darwin")).collect();
        let partial = Release::find("r.example", "acme", &without, None).unwrap();
        let why = check_sums(&partial, &sums, &digests(&files)).unwrap_err();
        assert!(why.contains("lists terraform-provider-widget_1.2.0_darwin_arm64.zip, which is not"), "{why}");
        let no_manifest: Vec<String> = names(&files).into_iter().filter(|n| !n.ends_with(".json")).collect();
        let bare = Release::find("r.example", "acme", &no_manifest, None).unwrap();
        assert!(
            check_sums(&bare, &sums, &digests(&files)).unwrap_err().contains("cp terraform-registry-manifest.json")
        );
        let unsigned: Vec<String> = names(&files).into_iter().filter(|n| !n.ends_with(".sig")).collect();
        assert!(Release::find("r.example", "acme", &unsigned, None).unwrap_err().contains(".sig is missing"));
        let mut two = names(&files);
        two.push("terraform-provider-widget_1.3.0_SHA256SUMS".into());
        assert!(Release::find("r.example", "acme", &two, None).unwrap_err().contains("VERSION="));
        let v = semver::Version::new(1, 2, 0);
        assert_eq!(Release::find("r.example", "acme", &two, Some(&v)).unwrap(), found);
        assert!(Release::find("r.example", "acme", &[], None).unwrap_err().contains("goreleaser"));
        assert!(Release::find("r.example", "a/b", &names(&files), None).is_err());
    }
}
