//! A module archive published as `.tar.gz` as the `.zip` OCI module packages must be
//! (OpenTofu's module-package docs: one `archive/zip` layer). Deterministic, so the same
//! archive always gives the same bytes and digest: the tar's order, every timestamp the zip
//! epoch (1980-01-01), each file's permission bits kept, deflate at one fixed level. Run only
//! on an archive `read_module_archive` accepted, and read through the same `tar_gz_each`, so
//! bounded by the same limits and refusing the same entries.

use std::io::{Seek, Write};

use super::readers::tar_gz_each;
use super::{Bounds, Kind};

/// Write the `.tar.gz` read from `reader` into `writer` as a zip. A hard link (which a zip
/// cannot hold) is refused: the version then has no OCI package.
pub fn tar_gz_to_zip<R: std::io::Read, W: Write + Seek>(reader: R, writer: W, bounds: &Bounds) -> Result<W, String> {
    let mut zip = zip::ZipWriter::new(writer);
    let written = |e: zip::result::ZipError| format!("writing the zip: {e}");
    let base = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .compression_level(Some(6))
        .last_modified_time(zip::DateTime::default());
    tar_gz_each(reader, bounds, |entry| {
        let (name, options) = (entry.name.as_str(), base.unix_permissions(entry.mode));
        match &entry.kind {
            Kind::Directory => zip.add_directory(name.trim_end_matches('/'), options).map_err(written)?,
            Kind::File => {
                zip.start_file(name, options).map_err(written)?;
                // Written from the counted reading: the zip holds no byte the bound did not see.
                entry.read(|chunk| zip.write_all(chunk).map_err(|e| format!("writing the zip: {e}")))?;
            }
            Kind::Symlink(target) => zip.add_symlink(name, target.as_str(), options).map_err(written)?,
            Kind::Hardlink(_) => return Err(format!("a hard link ({name:?}) cannot be written to a zip")),
        }
        Ok(())
    })?;
    zip.finish().map_err(written)
}
