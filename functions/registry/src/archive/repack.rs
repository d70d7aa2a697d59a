//! A module archive published as `.tar.gz` as the `.zip` OCI module packages must be
//! (OpenTofu's module-package docs: one `archive/zip` layer). Deterministic, so the same
//! archive always gives the same bytes and digest: the tar's order, every timestamp the zip
//! epoch (1980-01-01), each file's permission bits kept, deflate at one fixed level. Run only
//! on an archive `read_module_archive` accepted, and bounded the same way.

use std::io::{Read, Seek, Write};

use super::bounded::{Meter, Metered};
use super::tree::entry_name;
use super::{Bounds, TAR_HEADER_BYTES};

/// Write the `.tar.gz` read from `reader` into `writer` as a zip. A hard link (which a zip
/// cannot hold) is refused: the version then has no OCI package.
pub fn tar_gz_to_zip<R: Read, W: Write + Seek>(reader: R, writer: W, bounds: &Bounds) -> Result<W, String> {
    let meter = Meter::new(bounds.unpacked_bytes);
    let stream = Metered { inner: flate2::read::MultiGzDecoder::new(reader), meter: meter.clone(), total: true };
    let mut archive = tar::Archive::new(stream);
    let unreadable = |e: std::io::Error| meter.explain("not a readable tar.gz", e);
    let mut zip = zip::ZipWriter::new(writer);
    let written = |e: zip::result::ZipError| format!("writing the zip: {e}");
    let base = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .compression_level(Some(6))
        .last_modified_time(zip::DateTime::default());
    meter.phase(Some((TAR_HEADER_BYTES, "a tar header is larger than 1 MiB")));
    for entry in archive.entries().map_err(unreadable)? {
        let mut entry = entry.map_err(unreadable)?;
        let name = entry_name(&entry.path_bytes())?;
        let mode = entry.header().mode().unwrap_or(0o644) & 0o777;
        let options = base.unix_permissions(mode);
        match entry.header().entry_type() {
            tar::EntryType::XGlobalHeader => {}
            tar::EntryType::Directory => zip.add_directory(name.trim_end_matches('/'), options).map_err(written)?,
            tar::EntryType::Regular if name.ends_with('/') => {
                zip.add_directory(name.trim_end_matches('/'), options).map_err(written)?
            }
            tar::EntryType::Regular | tar::EntryType::Continuous | tar::EntryType::GNUSparse => {
                zip.start_file(name.as_str(), options).map_err(written)?;
                std::io::copy(&mut entry, &mut zip).map_err(|e| format!("writing the zip: {e}"))?;
            }
            tar::EntryType::Symlink => {
                let target = entry.link_name_bytes().ok_or_else(|| format!("link {name:?} has no target"))?;
                zip.add_symlink(name.as_str(), entry_name(&target)?, options).map_err(written)?;
            }
            other => return Err(format!("a {other:?} entry ({name:?}) cannot be written to a zip")),
        }
    }
    zip.finish().map_err(written)
}
