//! Property tests of the request path, in the normal suite: whatever path a client sends,
//! routing never panics, and anything it accepts maps to a key inside the bucket layout that
//! classifies back to the same module or provider. The fuzz target (`fuzz/`) explores the same
//! properties with coverage guidance for longer.

use http::Method;
use proptest::prelude::*;
use registry::invariants;
use registry::router::BasePaths;
use registry::router::{self, Route};

/// Pieces a path is made of: the routes' own words, separators and their encodings, and
/// characters that have no place in any key.
const PIECES: &[&str] = &[
    "v1",
    "modules",
    "mirror",
    ".well-known",
    "terraform.json",
    "versions",
    "download",
    "index.json",
    ".json",
    "acme",
    "vpc",
    "aws",
    "registry.terraform.io",
    "hashicorp",
    "null",
    "1.0.0",
    "1.2.3-rc.1",
    "+b5",
    "0",
    "/",
    "/",
    "/",
    ".",
    "..",
    "%",
    "%2e",
    "%2f",
    "%2F",
    "%25",
    "%5c",
    "%00",
    "\\",
    "\0",
    "\n",
    "\r",
    " ",
    "\t",
    "\u{7f}",
    "é",
    "\u{ff0e}",
    "\u{2215}",
    "а",
    "?",
    "#",
    ";",
    ":",
    "=",
    "~",
    "*",
    "-",
    "_",
    "A",
    "z",
    "9",
    "//",
    "./",
    "../",
];

/// Paths near the valid ones: a valid route with up to four segment edits (replace, extend,
/// prefix, insert), so that a good share is accepted and the rest fail in every way nearby.
fn raw_path() -> impl Strategy<Value = String> {
    let templates = prop::sample::select(vec![
        "/v1/modules/acme/vpc/aws/versions",
        "/v1/modules/acme/vpc/aws/1.0.0/download",
        "/v1/mirror/registry.terraform.io/hashicorp/null/index.json",
        "/v1/mirror/registry.terraform.io/hashicorp/null/1.2.3-rc.1.json",
        "/.well-known/terraform.json",
        "/v1/modules/upstream/registry.terraform.io/terraform-aws-modules/vpc/aws/versions",
        "/v1/modules/upstream/registry.terraform.io/terraform-aws-modules/vpc/aws/5.1.0/download",
        "/ui/upstream/registry.terraform.io/terraform-aws-modules/vpc/aws",
    ]);
    let edit = (0usize..4, any::<prop::sample::Index>(), prop::sample::select(PIECES.to_vec()));
    (templates, prop::collection::vec(edit, 0..5)).prop_map(|(template, edits)| {
        let mut segments: Vec<String> = template.split('/').map(str::to_string).collect();
        for (kind, at, piece) in edits {
            let i = at.index(segments.len());
            match kind {
                0 => segments[i] = piece.to_string(),
                1 => segments[i].push_str(piece),
                2 => segments[i].insert_str(0, piece),
                _ => segments.insert(i, piece.to_string()),
            }
        }
        segments.join("/")
    })
}

/// Anything at all from the pieces, behind a route prefix.
fn piece_soup() -> impl Strategy<Value = String> {
    let prefix = prop::sample::select(vec!["/v1/modules/", "/v1/mirror/", "/.well-known/", "/", ""]);
    let tail = prop::collection::vec(prop::sample::select(PIECES.to_vec()), 0..24);
    (prefix, tail).prop_map(|(p, t)| format!("{p}{}", t.concat()))
}

fn check(path: &str) -> Result<(), TestCaseError> {
    invariants::check_request_path(path).map_err(TestCaseError::fail)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]

    #[test]
    fn any_accepted_path_reads_a_clean_key_of_its_own_owner(path in raw_path()) {
        check(&path)?;
    }

    #[test]
    fn piece_soup_never_reaches_a_foreign_key(path in piece_soup()) {
        check(&path)?;
    }

    #[test]
    fn arbitrary_strings_never_panic_the_router(path in any::<String>()) {
        check(&path)?;
        check(&format!("/v1/modules/{path}"))?;
        check(&format!("/v1/mirror/{path}"))?;
    }

    /// Bucket keys are publisher input: whatever they are, what the indexer derives is clean.
    #[test]
    fn any_bucket_key_derives_clean_keys(tail in piece_soup(), top in prop::sample::select(vec!["modules/", "providers/", ""])) {
        let key = format!("{top}{}", tail.trim_start_matches('/'));
        invariants::check_bucket_key(&key).map_err(TestCaseError::fail)?;
        invariants::check_bucket_key("providers/registry.terraform.io/hashicorp/null/terraform-provider-null_1.0.0_linux_amd64.zip")
            .map_err(TestCaseError::fail)?;
    }

    /// The other direction: every valid address routes, to itself (no false rejections).
    #[test]
    fn valid_addresses_route_to_themselves(
        namespace in "[a-z0-9]{1,8}",
        name in "[a-z0-9]{1,8}",
        system in "[a-z0-9]{1,8}",
        major in 0u64..1000, minor in 0u64..1000, patch in 0u64..1000,
    ) {
        let version = semver::Version::new(major, minor, patch);
        let path = format!("/v1/modules/{namespace}/{name}/{system}/{version}/download");
        let route = router::route(&Method::GET, &path, None, &BasePaths::default());
        prop_assert!(
            matches!(&route, Ok(Route::ModuleDownload { module: m, version: v }) if m.namespace == namespace && m.name == name && m.system == system && *v == version),
            "{path}: {route:?}"
        );
        let path = format!("/v1/mirror/example.{namespace}/{name}/{system}/{version}.json");
        prop_assert!(matches!(router::route(&Method::GET, &path, None, &BasePaths::default()), Ok(Route::MirrorVersion { .. })), "{path}");
        check(&path)?;
    }
}
