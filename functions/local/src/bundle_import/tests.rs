//! The bundle import's checks, on bundles made whole and made hostile.

#![allow(clippy::unwrap_used)]
use super::*;
use registry::storage::MemoryStorage;

const MODULE: &str = "upstream-modules/registry.terraform.io/ns/vpc/aws/";

/// A bundle directory holding one pinned version, as `bundle` writes it; answers the
/// SHA-256 of its `SHA256SUMS`.
fn bundle(dir: &Path, archive: &[u8]) -> String {
    let sha256 = hex::encode(sha2::Sha256::digest(archive));
    let pin = serde_json::json!({"module": "registry.terraform.io/ns/vpc/aws", "version": "1.0.0",
        "sha256": sha256, "size": archive.len(), "archive": "tar.gz", "source": "git::https://example.com/x",
        "copied_at": "2026-12-01T00:00:00Z"});
    let files = [
        (format!("{MODULE}1.0.0/{sha256}.tar.gz"), archive.to_vec()),
        (format!("{MODULE}1.0.0.pin.json"), serde_json::to_vec(&pin).unwrap()),
        (format!("{MODULE}index.json"), br#"{"copied":["1.0.0"]}"#.to_vec()),
    ];
    write_bundle(dir, &files)
}

fn write_bundle(dir: &Path, files: &[(String, Vec<u8>)]) -> String {
    let mut sums = String::new();
    for (key, bytes) in files {
        let path = dir.join(key);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, bytes).unwrap();
        sums.push_str(&format!("{}  {key}\n", hex::encode(sha2::Sha256::digest(bytes))));
    }
    std::fs::write(dir.join(SUMS_FILE), &sums).unwrap();
    hex::encode(sha2::Sha256::digest(sums.as_bytes()))
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bundle-import-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn archive(marker: &str) -> Vec<u8> {
    registry::testing::module_tar_gz(&[("main.tf", marker)])
}

/// A whole bundle is imported, pin last; a second import changes nothing.
#[tokio::test]
async fn a_whole_bundle_is_imported() {
    let dir = temp("whole");
    let sums = bundle(&dir, &archive("# real\n"));
    let storage = MemoryStorage::new();
    let report = import_into(&dir, Sums::Sha256(&sums), &storage, Bounds::UNLIMITED).await.unwrap();
    assert_eq!((report.pinned.len(), report.written), (1, 2), "{report:?}");
    assert!(storage.peek(&format!("{MODULE}1.0.0.pin.json")).is_some());
    let again = import_into(&dir, Sums::Sha256(&sums), &storage, Bounds::UNLIMITED).await.unwrap();
    assert_eq!((again.pinned.len(), again.present.len()), (0, 1), "{again:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The issue's bundle: an archive planted beside the real one, named by its own SHA-256,
/// the pin pointed at it. With the old list (archives only) `sha256sum -c` passed; the
/// import refuses it by the list, and with the list made to agree, by `SUMS`; a planted pin
/// whose archive differs in size, an unlisted file, a listed file missing, and an archive
/// the registry would not serve each refuse it too. Nothing is written.
#[tokio::test]
async fn a_bundle_with_a_repointed_pin_is_refused_whole() {
    let real = archive("# real\n");
    let planted = archive("# planted\n");
    let dir = temp("repointed");
    let sums = bundle(&dir, &real);
    let planted_sha = hex::encode(sha2::Sha256::digest(&planted));
    std::fs::write(dir.join(format!("{MODULE}1.0.0/{planted_sha}.tar.gz")), &planted).unwrap();
    let pin_path = dir.join(format!("{MODULE}1.0.0.pin.json"));
    let pin = std::fs::read_to_string(&pin_path).unwrap();
    let real_sha = hex::encode(sha2::Sha256::digest(&real));
    std::fs::write(
        &pin_path,
        pin.replace(&real_sha, &planted_sha).replace(&real.len().to_string(), &planted.len().to_string()),
    )
    .unwrap();
    let storage = MemoryStorage::new();
    let refused = import_into(&dir, Sums::Sha256(&sums), &storage, Bounds::UNLIMITED).await.unwrap_err();
    assert!(refused.0.contains("is not listed") && refused.0.contains("1.0.0.pin.json has SHA-256"), "{}", refused.0);
    assert!(storage.keys().is_empty(), "nothing written");
    // The list rewritten to agree with the planted files: only SUMS tells.
    let files: Vec<(String, Vec<u8>)> = files_under(&dir, layout::UPSTREAM_MODULES_PREFIX)
        .unwrap()
        .into_iter()
        .map(|(k, p)| (k, std::fs::read(p).unwrap()))
        .collect();
    let forged = write_bundle(&dir, &files);
    let refused = import_into(&dir, Sums::Sha256(&sums), &storage, Bounds::UNLIMITED).await.unwrap_err();
    assert!(refused.0.contains("SHA256SUMS has SHA-256"), "{}", refused.0);
    assert!(import_into(&dir, Sums::Sha256(&forged), &storage, Bounds::UNLIMITED).await.is_ok(), "a consistent bundle");
    // A listed file missing, and an archive the registry would not serve.
    let dir = temp("broken");
    let sha = hex::encode(sha2::Sha256::digest(b"not an archive"));
    let pin = serde_json::json!({"module": "registry.terraform.io/ns/vpc/aws", "version": "1.0.0", "sha256": sha,
        "size": 14, "archive": "tar.gz", "source": "x", "copied_at": "2026-12-01T00:00:00Z"});
    let sums = write_bundle(
        &dir,
        &[
            (format!("{MODULE}1.0.0/{sha}.tar.gz"), b"not an archive".to_vec()),
            (format!("{MODULE}1.0.0.pin.json"), serde_json::to_vec(&pin).unwrap()),
        ],
    );
    std::fs::OpenOptions::new()
        .append(true)
        .open(dir.join(SUMS_FILE))
        .unwrap()
        .write_all(format!("{}  {MODULE}2.0.0.pin.json\n", "0".repeat(64)).as_bytes())
        .unwrap();
    let storage = MemoryStorage::new();
    let refused = import_into(&dir, Sums::Unchecked, &storage, Bounds::UNLIMITED).await.unwrap_err();
    assert!(
        refused.0.contains("is listed but missing") && refused.0.contains("not an archive the registry serves"),
        "{}",
        refused.0
    );
    assert!(storage.keys().is_empty());
    let _ = sums;
    let _ = std::fs::remove_dir_all(&dir);
}

/// A pin the target holds with other bytes refuses the bundle before anything is written.
#[tokio::test]
async fn a_pin_the_target_holds_otherwise_refuses_the_bundle() {
    let dir = temp("held");
    let sums = bundle(&dir, &archive("# real\n"));
    let storage = MemoryStorage::new();
    let held = serde_json::json!({"module": "registry.terraform.io/ns/vpc/aws", "version": "1.0.0",
        "sha256": "a".repeat(64), "size": 1, "archive": "tar.gz", "source": "x", "copied_at": "2026-11-01T00:00:00Z"});
    storage.insert(&format!("{MODULE}1.0.0.pin.json"), serde_json::to_vec(&held).unwrap());
    let refused = import_into(&dir, Sums::Sha256(&sums), &storage, Bounds::UNLIMITED).await.unwrap_err();
    assert!(refused.0.contains("the target pins SHA-256"), "{}", refused.0);
    assert_eq!(storage.keys().len(), 1, "nothing written");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Bundles a red-team review built against the import, each held to what must happen.
mod hostile {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn sha(bytes: &[u8]) -> String {
        hex::encode(sha2::Sha256::digest(bytes))
    }

    fn pin(version: &str, archive: &[u8]) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({"module": "registry.terraform.io/ns/vpc/aws", "version": version,
            "sha256": sha(archive), "size": archive.len(), "archive": "tar.gz", "source": "git::https://example.com/x",
            "copied_at": "2026-12-01T00:00:00Z"}))
        .unwrap()
    }

    /// An `index.json` that does not parse refuses the bundle before anything is written (it
    /// once failed the import after the archives were).
    #[tokio::test]
    async fn an_unreadable_version_list_refuses_the_bundle_before_any_write() {
        let dir = temp("hostile-b1");
        let real = archive("# real\n");
        let sums = write_bundle(
            &dir,
            &[
                (format!("{MODULE}1.0.0/{}.tar.gz", sha(&real)), real.clone()),
                (format!("{MODULE}1.0.0.pin.json"), pin("1.0.0", &real)),
                (format!("{MODULE}index.json"), b"not json".to_vec()),
            ],
        );
        let storage = MemoryStorage::new();
        let result = import_into(&dir, Sums::Sha256(&sums), &storage, Bounds::UNLIMITED).await;
        assert!(result.is_err());
        assert!(storage.keys().is_empty(), "written before the import failed: {:?}", storage.keys());
    }

    /// Other bytes under the name of an archive the target already pins: refused (an archive is
    /// named by its own SHA-256), and what the target holds is never replaced (it once was).
    #[tokio::test]
    async fn an_archive_not_of_its_names_bytes_never_replaces_the_targets() {
        let real = archive("# real\n");
        let other = archive("# other\n");
        let storage = MemoryStorage::new();
        let key = format!("{MODULE}1.0.0/{}.tar.gz", sha(&real));
        storage.insert(&key, real.clone());
        storage.insert(&format!("{MODULE}1.0.0.pin.json"), pin("1.0.0", &real));
        let dir = temp("hostile-b2");
        let sums = write_bundle(&dir, &[(key.clone(), other.clone())]);
        let refused = import_into(&dir, Sums::Sha256(&sums), &storage, Bounds::UNLIMITED).await.unwrap_err();
        assert!(refused.0.contains("has SHA-256"), "{}", refused.0);
        let held = storage.peek(&key).unwrap();
        assert_eq!(sha(&held), sha(&real), "the pinned archive was replaced by other bytes");
    }

    /// A pin changed between the check and the write: the pin written is the one checked (it
    /// was once read again from disk).
    #[tokio::test]
    async fn the_pin_written_is_the_pin_checked() {
        let dir = temp("hostile-b3");
        let real = archive("# real\n");
        let sums = write_bundle(
            &dir,
            &[
                (format!("{MODULE}1.0.0/{}.tar.gz", sha(&real)), real.clone()),
                (format!("{MODULE}1.0.0.pin.json"), pin("1.0.0", &real)),
            ],
        );
        let verified = verify(&dir, Sums::Sha256(&sums), Bounds::UNLIMITED).unwrap();
        // Swapped after the check (a writable drop directory, a second process).
        std::fs::write(dir.join(format!("{MODULE}1.0.0.pin.json")), pin("1.0.0", b"evil")).unwrap();
        let storage = MemoryStorage::new();
        write(&storage, &verified).await.unwrap();
        let written = ModulePin::parse(&storage.peek(&format!("{MODULE}1.0.0.pin.json")).unwrap()).unwrap();
        assert_eq!(written.sha256, sha(&real), "the pin written is not the pin verified");
    }

    /// A version list naming versions that are no SemVer, or that the bundle does not pin, and
    /// one at a path no module's list has: refused (they were once merged into the target's).
    #[tokio::test]
    async fn a_version_list_of_unpinned_versions_refuses_the_bundle() {
        let dir = temp("hostile-b4");
        let sums = write_bundle(
            &dir,
            &[
                (format!("{MODULE}index.json"), br#"{"copied":["not-a-version","9.9.9"]}"#.to_vec()),
                ("upstream-modules/anything/at/all/index.json".into(), br#"{"copied":["x"]}"#.to_vec()),
            ],
        );
        let storage = MemoryStorage::new();
        let refused = import_into(&dir, Sums::Sha256(&sums), &storage, Bounds::UNLIMITED).await.unwrap_err();
        assert!(refused.0.contains("does not pin"), "{}", refused.0);
        let index = storage.peek(&format!("{MODULE}index.json"));
        let index = index.map(|b| ModuleIndex::parse(&b).unwrap()).unwrap_or_default();
        assert!(index.copied.is_empty(), "listed with no pin, or no version: {:?}", index.copied);
    }
}
