//! Any text as a module's README, input description, type and default, output description and
//! docs warning: rendering never panics, and the README and the whole module page are inert
//! HTML (`registry::invariants::check_page_text`: no script or embedding tag beyond the page's
//! own, no event handler or style attribute, no URL but http(s), mailto or the registry's own);
//! and the same text in every field of a module larger than any answer can hold leaves the
//! details API, the MCP server's details and the page within their bounds
//! (`registry::invariants::check_answers_bounded`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Err(broken) = registry::invariants::check_page_text(text) {
        panic!("{broken}");
    }
    if let Err(broken) = registry::invariants::check_answers_bounded(text) {
        panic!("{broken}");
    }
});
