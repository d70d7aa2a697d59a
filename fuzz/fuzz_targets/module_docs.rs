//! Any bytes as a module's files (publishers write them): the same bytes as `main.tf` (HCL),
//! as `main.tf.json` and as a submodule's `README.md`, through the docs the indexer reads at
//! publish time. Never a panic, and what is read survives its stored form unchanged. The same
//! docs are then judged against a fixed earlier interface and against themselves (the SemVer
//! judgment at publish): never a panic, and a version never differs from itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use registry::archive::KeptFile;
use registry::module_docs::compare::compare;
use registry::module_docs::{ModuleDocs, extract};

const EARLIER: &str = "terraform {\n  required_version = \">= 1.3\"\n  required_providers {\n    aws = { source = \"hashicorp/aws\", version = \"~> 5.0\" }\n  }\n}\nvariable \"name\" { type = list(object({ a = optional(string) })) }\noutput \"id\" { value = 1 }\n";

fuzz_target!(|data: &[u8]| {
    let file = |path: &str| KeptFile { path: path.to_string(), bytes: Some(data.to_vec()) };
    let files = [file("main.tf"), file("main.tf.json"), file("modules/a/README.md"), file("modules/a/x.tf")];
    let docs = extract(&files, "sha");
    let stored = serde_json::to_vec(&docs).unwrap();
    let back: ModuleDocs = serde_json::from_slice(&stored).unwrap();
    assert_eq!(back, docs, "the docs change when stored");
    let earlier = extract(&[KeptFile { path: "main.tf".into(), bytes: Some(EARLIER.as_bytes().to_vec()) }], "old");
    for change in compare(&earlier, &docs).iter().chain(&compare(&docs, &earlier)) {
        let _ = change.line();
    }
    assert!(compare(&docs, &docs).is_empty(), "a version differs from itself");
});
