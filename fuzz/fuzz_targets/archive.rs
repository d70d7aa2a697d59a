//! Any bytes as an uploaded archive (publishers choose the bytes): the module and provider
//! checks never panic, and memory stays bounded whatever the archive claims (libFuzzer's RSS
//! limit stops a run that grows past it). The first byte picks the reader: a tar stream
//! (gzipped here, so the fuzzer explores tar parsing), a module zip, a provider zip, or the
//! raw bytes as a `.tar.gz` (the gzip layer itself). A `.tar.gz` the module check accepts is
//! also repacked as the zip OCI serves (`tar_gz_to_zip`): it never panics, and what it writes
//! is a zip the provider-zip reader can open, or a refusal.
#![no_main]

use std::io::Cursor;

use libfuzzer_sys::fuzz_target;
use registry::archive::{Bounds, check_module_archive, check_provider_zip, summarise_zip, tar_gz_to_zip};

const BOUNDS: Bounds = Bounds { unpacked_bytes: 64 << 20, entries: 1_000 };

fuzz_target!(|data: &[u8]| {
    let Some((mode, bytes)) = data.split_first() else { return };
    let tar_gz = match mode % 4 {
        0 => registry::testing::gzip(bytes),
        3 => bytes.to_vec(),
        1 => return drop(check_module_archive(Cursor::new(bytes), "zip", &BOUNDS)),
        _ => return drop(check_provider_zip(Cursor::new(bytes), "null", &BOUNDS)),
    };
    if check_module_archive(Cursor::new(&tar_gz), "tgz", &BOUNDS).is_ok()
        && let Ok(zip) = tar_gz_to_zip(Cursor::new(&tar_gz), Cursor::new(Vec::new()), &BOUNDS)
    {
        assert!(summarise_zip(Cursor::new(zip.into_inner()), &BOUNDS).is_ok(), "a repacked module is a readable zip");
    }
});
