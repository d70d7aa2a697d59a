use std::io::Read as _;

use super::*;
use crate::testing::{git_archive as github_archive, tar_gz_names};

const BOUNDS: Bounds = Bounds { unpacked_bytes: 1 << 20, entries: 100 };

fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn module_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "main.tf", "variable \"x\" {}\n");
    write(dir.path(), "modules/vpc/main.tf", "output \"id\" { value = 1 }\n");
    write(dir.path(), "README.md", "# net\n");
    write(dir.path(), ".git/HEAD", "ref: refs/heads/main\n");
    write(dir.path(), ".terraform/modules/modules.json", "{}\n");
    write(dir.path(), "terraform.tfstate", "{}\n");
    write(dir.path(), "examples/basic/terraform.tfstate", "{}\n");
    write(dir.path(), "examples/basic/main.tf", "module \"n\" { source = \"../..\" }\n");
    write(dir.path(), ".terraformignore", "*.tfstate\n/README.md\n!README.md\nbuild/\n");
    dir
}

#[test]
fn the_same_tree_packs_to_the_same_bytes_whatever_the_times_and_the_order_made() {
    let a = module_dir();
    let b = module_dir();
    // Other modification times, and one file written last in the other order.
    std::fs::write(a.path().join("main.tf"), "variable \"x\" {}\n").unwrap();
    let first = directory(a.path(), &BOUNDS, 1 << 20).unwrap();
    let second = directory(b.path(), &BOUNDS, 1 << 20).unwrap();
    assert_eq!(first.bytes, second.bytes);
    assert_eq!(first.bytes, directory(a.path(), &BOUNDS, 1 << 20).unwrap().bytes);
    assert_eq!(
        tar_gz_names(&first.bytes),
        [
            ".terraformignore",
            "README.md",
            "examples/",
            "examples/basic/",
            "examples/basic/main.tf",
            "main.tf",
            "modules/",
            "modules/vpc/",
            "modules/vpc/main.tf"
        ]
    );
    assert_eq!(first.left_out, [".git/", ".terraform/", "examples/basic/terraform.tfstate", "terraform.tfstate"]);
    assert_eq!(first.files, 5);
    // What the indexer reads of it: a module at the root.
    crate::publishing::check::archive(&first.bytes, "tar.gz", &BOUNDS, 1 << 20).unwrap();
}

#[test]
fn modes_are_normalised_and_headers_carry_no_time_or_owner() {
    let dir = module_dir();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        write(dir.path(), "scripts/run.sh", "#!/bin/sh\n");
        std::fs::set_permissions(dir.path().join("scripts/run.sh"), std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::set_permissions(dir.path().join("main.tf"), std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let packed = directory(dir.path(), &BOUNDS, 1 << 20).unwrap();
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(packed.bytes.as_slice()));
    for entry in archive.entries().unwrap() {
        let entry = entry.unwrap();
        let header = entry.header();
        let path = entry.path().unwrap().display().to_string();
        assert_eq!((header.mtime().unwrap(), header.uid().unwrap(), header.gid().unwrap()), (0, 0, 0), "{path}");
        let want = match path.as_str() {
            p if p.ends_with('/') => 0o755,
            "scripts/run.sh" => 0o755,
            _ => 0o644,
        };
        assert_eq!(header.mode().unwrap(), want, "{path}");
    }
}

#[test]
fn limits_are_held_while_packing() {
    let dir = module_dir();
    let why = directory(dir.path(), &BOUNDS, 64).unwrap_err();
    assert!(why.contains("larger than 64 bytes (REGISTRY_MAX_MODULE_ARCHIVE_BYTES)"), "{why}");
    let why = directory(dir.path(), &Bounds { unpacked_bytes: 1 << 20, entries: 3 }, 1 << 20).unwrap_err();
    assert!(why.contains("more than 3 entries"), "{why}");
    let why = directory(dir.path(), &Bounds { unpacked_bytes: 10, entries: 100 }, 1 << 20).unwrap_err();
    assert!(why.contains("more than 10 bytes"), "{why}");
    std::fs::write(dir.path().join(".terraformignore"), "a\n".repeat(ignore::MAX_RULES + 1)).unwrap();
    assert!(directory(dir.path(), &BOUNDS, 1 << 20).unwrap_err().contains("more than 1000 patterns"));
}

#[test]
fn a_git_archive_becomes_the_module_at_its_root_the_same_bytes_every_time() {
    let gzipped = github_archive("module", "0123abcd", &[("main.tf", "variable \"x\" {}\n"), ("sub/a.tf", "")]);
    let mut tar = Vec::new();
    flate2::read::GzDecoder::new(gzipped.as_slice()).read_to_end(&mut tar).unwrap();
    let first = git_archive(tar.as_slice(), &BOUNDS, 1 << 20).unwrap();
    let second = git_archive(tar.as_slice(), &BOUNDS, 1 << 20).unwrap();
    assert_eq!(first.bytes, second.bytes);
    assert_eq!(tar_gz_names(&first.bytes), ["main.tf", "sub/a.tf"]);
    assert_eq!(first.files, 2);
    let why = git_archive(tar.as_slice(), &BOUNDS, 16).unwrap_err();
    // Refused while it is read, before the whole of it is held.
    assert!(why.contains("larger than 32 bytes") || why.contains("larger than 16 bytes"), "{why}");
}
