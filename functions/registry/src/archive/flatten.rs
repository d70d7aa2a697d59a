//! A git host's archive of a ref (`OWNER-REPO-REF/…` inside) rewritten with the module at its
//! root, as the CLI lays a `git::` clone out: `.terraform/modules/NAME` is the repository's
//! root, so `path.module` and a `//modules/x` subdirectory mean what they would have meant.
//! Deterministic, so the same archive always gives the same bytes (and the same pin): the
//! tar's order, every timestamp 0, owners 0, permission bits kept, gzip at one fixed level. Read
//! through `tar_gz_each`, so bounded by the same limits and refusing the same entries as a
//! published archive.

use std::io::{Read, Write};

use super::readers::tar_gz_each;
use super::{Bounds, Kind};

/// Write the `.tar.gz` read from `reader` into `writer` without its single top-level
/// directory. Refused: an entry outside that directory, or a second top-level name.
pub fn strip_top_directory<R: Read, W: Write>(reader: R, writer: W, bounds: &Bounds) -> Result<W, String> {
    let gzip = flate2::write::GzEncoder::new(writer, flate2::Compression::new(6));
    let mut tar = tar::Builder::new(gzip);
    let mut top: Option<String> = None;
    let written = |e: std::io::Error| format!("writing the archive: {e}");
    tar_gz_each(reader, bounds, |entry| {
        let name = entry.name.trim_start_matches("./").to_string();
        let (first, rest) = name.split_once('/').unwrap_or((&name, ""));
        match &top {
            None => top = Some(first.to_string()),
            Some(t) if t != first => {
                return Err(format!(
                    "the archive has more than one top-level entry ({:?} and {:?}): not a git host's archive",
                    crate::address::printable(t),
                    crate::address::printable(first)
                ));
            }
            Some(_) => {}
        }
        let rest = rest.trim_start_matches('/');
        if rest.is_empty() {
            return match entry.kind {
                Kind::Directory => Ok(()),
                _ => Err("the archive's top-level entry is not a directory".into()),
            };
        }
        let mut header = tar::Header::new_gnu();
        header.set_mode(entry.mode);
        header.set_mtime(0);
        header.set_uid(0);
        header.set_gid(0);
        match entry.kind.clone() {
            Kind::Directory => {
                header.set_entry_type(tar::EntryType::Directory);
                header.set_size(0);
                tar.append_data(&mut header, rest, std::io::empty()).map_err(written)
            }
            Kind::File => {
                let mut data = Vec::new();
                entry.read(|chunk| {
                    data.extend_from_slice(chunk);
                    Ok(())
                })?;
                header.set_entry_type(tar::EntryType::Regular);
                header.set_size(data.len() as u64);
                tar.append_data(&mut header, rest, data.as_slice()).map_err(written)
            }
            Kind::Symlink(target) => {
                header.set_entry_type(tar::EntryType::Symlink);
                header.set_size(0);
                tar.append_link(&mut header, rest, &target).map_err(written)
            }
            Kind::Hardlink(target) => {
                let target = target.trim_start_matches("./");
                let Some(inside) = target.strip_prefix(&format!("{first}/")) else {
                    return Err("a hard link names an entry outside the top-level directory".into());
                };
                header.set_entry_type(tar::EntryType::Link);
                header.set_size(0);
                tar.append_link(&mut header, rest, inside).map_err(written)
            }
        }
    })?;
    if top.is_none() {
        return Err("the archive is empty".into());
    }
    tar.into_inner().and_then(|gzip| gzip.finish()).map_err(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Item, git_archive, tar_gz_items};

    fn strip(bytes: &[u8]) -> Result<Vec<u8>, String> {
        strip_top_directory(bytes, Vec::new(), &Bounds { unpacked_bytes: 1 << 20, entries: 100 })
    }

    fn names(tar_gz: &[u8]) -> Vec<String> {
        let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(tar_gz));
        archive.entries().unwrap().map(|e| e.unwrap().path().unwrap().display().to_string()).collect()
    }

    #[test]
    fn a_git_archive_becomes_the_module_at_the_root_the_same_bytes_every_time() {
        let sha = "29230f956912d751a01a5694510f684754a93196";
        let files = [("main.tf", "variable \"x\" {}\n"), ("modules/x/main.tf", "output \"y\" { value = 1 }\n")];
        let github = git_archive("terraform-aws-demo-29230f9", sha, &files);
        let flat = strip(&github).unwrap();
        assert_eq!(names(&flat), ["main.tf", "modules/x/main.tf"]);
        super::super::read_module_archive(std::io::Cursor::new(&flat), "tar.gz", &Bounds::UNLIMITED, &|_| false)
            .expect("accepted as a published archive");
        assert_eq!(strip(&github).unwrap(), flat, "deterministic");
        let other_top = git_archive("renamed-repo-v1", sha, &files);
        assert_eq!(strip(&other_top).unwrap(), flat, "the top directory's name does not matter");
    }

    #[test]
    fn links_stay_inside_and_anything_beside_the_top_directory_is_refused() {
        let linked = tar_gz_items(&[
            Item::Dir("r/"),
            Item::File("r/main.tf", b"x"),
            Item::Symlink("r/alias.tf", "main.tf"),
            Item::Hardlink("r/copy.tf", "r/main.tf"),
        ]);
        assert_eq!(names(&strip(&linked).unwrap()), ["main.tf", "alias.tf", "copy.tf"]);
        for (items, says) in [
            (vec![Item::File("a/main.tf", b"x"), Item::File("b/main.tf", b"x")], "more than one top-level"),
            (vec![Item::File("main.tf", b"x")], "not a directory"),
            (vec![Item::Dir("r/"), Item::File("r/a", b"x"), Item::Hardlink("r/b", "other/a")], "outside"),
            (vec![Item::Dir("r/"), Item::File("r/../x", b"x")], ".."),
        ] {
            let got = strip(&tar_gz_items(&items));
            assert!(got.as_ref().is_err_and(|e| e.contains(says)), "{items:?}: {got:?}");
        }
    }
}
