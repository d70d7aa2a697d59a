//! Any bytes as a module's files (publishers write them): the same bytes as `main.tf` (HCL),
//! as `main.tf.json` and as a submodule's `README.md`, through the docs the indexer reads at
//! publish time. Never a panic, and what is read survives its stored form unchanged.
#![no_main]

use libfuzzer_sys::fuzz_target;
use registry::archive::KeptFile;
use registry::module_docs::{ModuleDocs, extract};

fuzz_target!(|data: &[u8]| {
    let file = |path: &str| KeptFile { path: path.to_string(), bytes: Some(data.to_vec()) };
    let files = [file("main.tf"), file("main.tf.json"), file("modules/a/README.md"), file("modules/a/x.tf")];
    let docs = extract(&files, "sha");
    let stored = serde_json::to_vec(&docs).unwrap();
    let back: ModuleDocs = serde_json::from_slice(&stored).unwrap();
    assert_eq!(back, docs, "the docs change when stored");
});
