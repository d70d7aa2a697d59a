//! Reading uploaded archives: what makes a module archive or a provider zip acceptable, and
//! the `h1:` hash of a provider zip. Pure functions over a seekable file; the indexer runs
//! them on a blocking thread over a spooled copy.

use std::io::{Read, Seek};

use base64::Engine;
use sha2::{Digest, Sha256};

/// Files that make a directory a Terraform/OpenTofu module.
pub const MODULE_FILE_SUFFIXES: [&str; 4] = [".tf", ".tf.json", ".tofu", ".tofu.json"];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZipSummary {
    /// What the CLI checks: `h1:` over every entry of the zip.
    pub h1: String,
    /// Directory entries (the CLI counts them as empty files when it checks, but not when it
    /// locks; see `docs/BUCKET.md`).
    pub directory_entries: usize,
    /// Names of the file entries.
    pub files: Vec<String>,
}

/// Reads every entry (so corrupt data is found now, not at `terraform init`), counting the
/// unpacked bytes against `max_unpacked`.
struct Budget {
    left: u64,
    buffer: Vec<u8>,
}

impl Budget {
    fn new(max_unpacked: u64) -> Self {
        Budget { left: max_unpacked, buffer: vec![0u8; 64 * 1024] }
    }

    fn drain(&mut self, name: &str, mut reader: impl Read, mut sink: impl FnMut(&[u8])) -> Result<(), String> {
        loop {
            let n = reader.read(&mut self.buffer).map_err(|e| format!("entry {name:?} is unreadable: {e}"))?;
            if n == 0 {
                return Ok(());
            }
            self.left =
                self.left.checked_sub(n as u64).ok_or_else(|| "unpacks to more than the size limit".to_string())?;
            sink(&self.buffer[..n]);
        }
    }
}

/// A path inside an archive that stays inside the directory it is unpacked into.
fn check_entry_path(name: &str) -> Result<(), String> {
    let bad = name.is_empty()
        || name.starts_with('/')
        || name.contains('\\')
        || name.contains('\0')
        || name.split('/').any(|part| part == "..")
        || name.as_bytes().get(1) == Some(&b':');
    if bad {
        Err(format!("entry {:?} would unpack outside the module directory", crate::address::printable(name)))
    } else {
        Ok(())
    }
}

/// The `h1:` hash exactly as the CLI computes it for a zip (Go's `dirhash.HashZip` with
/// `Hash1`): for every entry, sorted by name, the line `"<sha256 hex>  <name>\n"`, then
/// base64 of the SHA-256 of all lines. Directory entries count as empty files, as in the
/// CLI's check.
pub fn summarise_zip<R: Read + Seek>(reader: R, max_unpacked: u64) -> Result<ZipSummary, String> {
    let mut archive = zip::ZipArchive::new(reader).map_err(|e| format!("not a readable zip: {e}"))?;
    let mut lines: Vec<(Vec<u8>, String)> = Vec::with_capacity(archive.len());
    let mut directory_entries = 0;
    let mut files = Vec::new();
    let mut budget = Budget::new(max_unpacked);
    for i in 0..archive.len() {
        let entry = archive.by_index(i).map_err(|e| format!("not a readable zip: {e}"))?;
        let raw_name = entry.name_raw().to_vec();
        let name = String::from_utf8_lossy(&raw_name).into_owned();
        if raw_name.contains(&b'\n') {
            return Err("an entry name contains a newline".into());
        }
        check_entry_path(&name)?;
        if raw_name.ends_with(b"/") {
            directory_entries += 1;
        } else {
            files.push(name.clone());
        }
        let mut hasher = Sha256::new();
        budget.drain(&name, entry, |chunk| hasher.update(chunk))?;
        lines.push((raw_name, hex::encode(hasher.finalize())));
    }
    lines.sort_by(|a, b| a.0.cmp(&b.0));
    let mut summary = Sha256::new();
    for (name, hex) in &lines {
        summary.update(hex.as_bytes());
        summary.update(b"  ");
        summary.update(name);
        summary.update(b"\n");
    }
    let h1 = format!("h1:{}", base64::engine::general_purpose::STANDARD.encode(summary.finalize()));
    Ok(ZipSummary { h1, directory_entries, files })
}

/// A provider package: a readable zip with the provider executable
/// (`terraform-provider-TYPE…`) at its root.
pub fn check_provider_zip<R: Read + Seek>(reader: R, r#type: &str, max_unpacked: u64) -> Result<ZipSummary, String> {
    let summary = summarise_zip(reader, max_unpacked)?;
    let executable = format!("terraform-provider-{type}");
    if !summary.files.iter().any(|f| !f.contains('/') && f.starts_with(&executable)) {
        return Err(format!("no provider executable {executable}* at the root of the zip"));
    }
    Ok(summary)
}

/// A module archive: readable to the end, every path inside the module directory, and at
/// least one `.tf`, `.tf.json`, `.tofu` or `.tofu.json` file at its root (Terraform uses the
/// archive root as the module directory).
pub fn check_module_archive<R: Read + Seek>(reader: R, extension: &str, max_unpacked: u64) -> Result<(), String> {
    let mut budget = Budget::new(max_unpacked);
    let mut names = Vec::new();
    match extension {
        "zip" => {
            let mut archive = zip::ZipArchive::new(reader).map_err(|e| format!("not a readable zip: {e}"))?;
            for i in 0..archive.len() {
                let entry = archive.by_index(i).map_err(|e| format!("not a readable zip: {e}"))?;
                let name = String::from_utf8_lossy(entry.name_raw()).into_owned();
                check_entry_path(&name)?;
                budget.drain(&name, entry, |_| {})?;
                names.push(name);
            }
        }
        "tar.gz" | "tgz" => {
            let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(reader));
            let entries = archive.entries().map_err(|e| format!("not a readable tar.gz: {e}"))?;
            for entry in entries {
                let entry = entry.map_err(|e| format!("not a readable tar.gz: {e}"))?;
                let name = entry.path().map_err(|e| format!("bad entry name: {e}"))?.to_string_lossy().into_owned();
                check_entry_path(&name)?;
                let is_file = entry.header().entry_type().is_file();
                budget.drain(&name, entry, |_| {})?;
                if is_file {
                    names.push(name);
                }
            }
        }
        other => return Err(format!("unsupported archive type {other:?}")),
    }
    let root_module_files = names
        .iter()
        .map(|n| n.strip_prefix("./").unwrap_or(n))
        .filter(|n| !n.contains('/') && MODULE_FILE_SUFFIXES.iter().any(|s| n.ends_with(s)))
        .count();
    if root_module_files > 0 {
        return Ok(());
    }
    let nested = names.iter().find(|n| MODULE_FILE_SUFFIXES.iter().any(|s| n.ends_with(s)));
    Err(match nested {
        Some(n) => format!(
            "no .tf, .tf.json or .tofu file at the archive root (found {:?}): archive the module directory's contents, not the directory",
            crate::address::printable(n)
        ),
        None => "no .tf, .tf.json or .tofu file in the archive".into(),
    })
}

#[cfg(test)]
pub(crate) mod test_archives {
    use std::io::{Cursor, Write};

    pub fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
        for (name, data) in entries {
            if name.ends_with('/') {
                w.add_directory(*name, zip::write::SimpleFileOptions::default()).unwrap();
            } else {
                w.start_file(*name, zip::write::SimpleFileOptions::default()).unwrap();
                w.write_all(data).unwrap();
            }
        }
        w.finish().unwrap().into_inner()
    }

    pub fn tar_gz_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut tar = tar::Builder::new(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast()));
        for (name, data) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            tar.append_data(&mut header, name, *data).unwrap();
        }
        tar.into_inner().unwrap().finish().unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::test_archives::*;
    use super::*;
    use std::io::Cursor;

    fn h1_reference(files: &[(&str, &[u8])]) -> String {
        let mut lines: Vec<String> =
            files.iter().map(|(n, d)| format!("{}  {n}\n", hex::encode(Sha256::digest(d)))).collect();
        lines.sort_by(|a, b| a.split("  ").nth(1).cmp(&b.split("  ").nth(1)));
        format!("h1:{}", base64::engine::general_purpose::STANDARD.encode(Sha256::digest(lines.concat().as_bytes())))
    }

    #[test]
    fn h1_matches_the_cli_algorithm() {
        let files: [(&str, &[u8]); 2] = [("terraform-provider-x_v1", b"binary"), ("LICENSE", b"MIT")];
        let summary = summarise_zip(Cursor::new(zip_of(&files)), u64::MAX).unwrap();
        assert_eq!(summary.h1, h1_reference(&files));
        assert_eq!(summary.directory_entries, 0);
        // Directory entries count as empty files and are reported.
        let with_dir: [(&str, &[u8]); 2] = [("docs/", b""), ("docs/a", b"a")];
        let summary = summarise_zip(Cursor::new(zip_of(&with_dir)), u64::MAX).unwrap();
        assert_eq!((summary.h1, summary.directory_entries), (h1_reference(&with_dir), 1));
    }

    #[test]
    fn provider_zips() {
        let good = zip_of(&[("terraform-provider-null_v3.2.1_x5", b"bin"), ("LICENSE", b"x")]);
        assert!(check_provider_zip(Cursor::new(good.clone()), "null", u64::MAX).is_ok());
        let cases: Vec<(Vec<u8>, &str, u64, &str)> = vec![
            (b"not a zip".to_vec(), "null", u64::MAX, "not a readable zip"),
            (good.clone(), "random", u64::MAX, "no provider executable terraform-provider-random*"),
            (zip_of(&[("bin/terraform-provider-null", b"x")]), "null", u64::MAX, "no provider executable"),
            (zip_of(&[("../terraform-provider-null", b"x")]), "null", u64::MAX, "outside the module directory"),
            (good, "null", 2, "more than the size limit"),
        ];
        for (bytes, r#type, max, needle) in cases {
            let err = check_provider_zip(Cursor::new(bytes), r#type, max).unwrap_err();
            assert!(err.contains(needle), "{err} lacks {needle}");
        }
    }

    #[test]
    fn module_archives() {
        let ok: Vec<(Vec<u8>, &str)> = vec![
            (tar_gz_of(&[("main.tf", b"")]), "tar.gz"),
            (tar_gz_of(&[("./variables.tf.json", b"{}"), ("./modules/x/main.tf", b"")]), "tgz"),
            (zip_of(&[("main.tofu", b"")]), "zip"),
        ];
        for (bytes, ext) in ok {
            check_module_archive(Cursor::new(bytes), ext, u64::MAX).unwrap();
        }
        let mut truncated = tar_gz_of(&[("main.tf", &[7u8; 50_000])]);
        truncated.truncate(truncated.len() / 2);
        let bad: Vec<(Vec<u8>, &str, u64, &str)> = vec![
            (b"garbage".to_vec(), "tar.gz", u64::MAX, "not a readable tar.gz"),
            (truncated, "tar.gz", u64::MAX, "unreadable"),
            (tar_gz_of(&[("README.md", b"")]), "tar.gz", u64::MAX, "no .tf, .tf.json or .tofu file in the archive"),
            (tar_gz_of(&[("vpc-1.0.0/main.tf", b"")]), "tgz", u64::MAX, "not the directory"),
            (zip_of(&[("/etc/main.tf", b"")]), "zip", u64::MAX, "outside"),
            (tar_gz_of(&[("main.tf", &[0u8; 10_000])]), "tar.gz", 1000, "size limit"),
            (zip_of(&[("main.tf", b"")]), "tar.gz", u64::MAX, "not a readable tar.gz"),
        ];
        for (bytes, ext, max, needle) in bad {
            let err = check_module_archive(Cursor::new(bytes), ext, max).unwrap_err();
            assert!(err.contains(needle), "{err} lacks {needle}");
        }
    }
}
