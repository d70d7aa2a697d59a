//! Any bytes as an uploaded archive (publishers choose the bytes): the module and provider
//! checks never panic, and memory stays bounded whatever the archive claims (libFuzzer's RSS
//! limit stops a run that grows past it). The first byte picks the reader: a tar stream
//! (gzipped here, so the fuzzer explores tar parsing), a module zip, a provider zip, or the
//! raw bytes as a `.tar.gz` (the gzip layer itself).
#![no_main]

use std::io::Cursor;

use libfuzzer_sys::fuzz_target;
use registry::archive::{Bounds, check_module_archive, check_provider_zip};

const BOUNDS: Bounds = Bounds { unpacked_bytes: 64 << 20, entries: 1_000 };

fuzz_target!(|data: &[u8]| {
    let Some((mode, bytes)) = data.split_first() else { return };
    let _ = match mode % 4 {
        0 => check_module_archive(Cursor::new(registry::testing::gzip(bytes)), "tar.gz", &BOUNDS),
        1 => check_module_archive(Cursor::new(bytes), "zip", &BOUNDS),
        2 => check_provider_zip(Cursor::new(bytes), "null", &BOUNDS).map(|_| ()),
        _ => check_module_archive(Cursor::new(bytes), "tgz", &BOUNDS),
    };
});
