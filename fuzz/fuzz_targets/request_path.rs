//! Any bytes as a request target, path and `?query` (and as the tail of each route prefix and
//! of the web pages', and as the query of the list, search and catalog page routes): the router must never panic, only the list and
//! search routes (and OCI's tags/list) may take a query, and whatever it accepts must lead to a
//! clean key of its own owner (`registry::invariants`), the OCI routes' content-addressed keys
//! included, and a 401's challenge names a repository plainly. Also feeds the same bytes to the Authorization parsers (Bearer, and OCI's Basic).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for path in [
        text.to_string(),
        format!("/v1/modules/{text}"),
        format!("/v1/mirror/{text}"),
        format!("/v1/providers/{text}"),
        format!("/v1/modules?{text}"),
        format!("/v1/modules/search?{text}"),
        format!("/ui/{text}"),
        format!("/?{text}"),
        format!("/v2/{text}"),
        format!("/v2/token?{text}"),
        format!("/v2/providers/registry.terraform.io/hashicorp/null/tags/list?{text}"),
        format!("/v2/providers/registry.terraform.io/hashicorp/null/manifests/{text}"),
        format!("/v2/providers/registry.terraform.io/hashicorp/null/blobs/{text}"),
        format!("/v2/modules/acme/vpc/aws/manifests/{text}"),
        format!("/v2/modules/{text}"),
    ] {
        if let Err(broken) = registry::invariants::check_request_path(&path) {
            panic!("{broken}");
        }
    }
    if let Some(token) = registry::auth::bearer(text) {
        assert!(!token.is_empty() && token.bytes().all(|b| b.is_ascii_graphic()));
    }
    // OCI clients' Basic credentials: a password that could be a bearer token, or a refusal.
    if let Some(Ok(password)) = registry::auth::basic_password(text) {
        assert!(!password.is_empty() && password.bytes().all(|b| b.is_ascii_graphic()));
    }
});
