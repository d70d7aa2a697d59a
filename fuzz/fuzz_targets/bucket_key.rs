//! Any bytes as a bucket key (publishers choose keys): classification never panics and the
//! keys the indexer derives are clean; scope globs never panic on any pattern and text.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for key in
        [text.to_string(), format!("modules/{text}"), format!("providers/{text}"), format!("upstream-modules/{text}")]
    {
        if let Err(broken) = registry::invariants::check_bucket_key(&key) {
            panic!("{broken}");
        }
    }
    if let Some((pattern, subject)) = text.split_once('\n') {
        let _ = registry::auth::glob(pattern, subject);
    }
});
