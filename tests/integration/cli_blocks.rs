//! The CLI configuration the docs give is `registry::cli_config`'s, word for word: README and
//! docs/DEPLOY.md for a deployed registry, the docs that show `make dev`'s for the local one
//! (infra's `cli_config` output is held to it by deploy-check, `make dev`'s terraform.rc by
//! being written with it and used by every e2e test). One block, one security posture: the
//! registry's own providers install directly, where the CLI checks their signatures.

use registry::cli_config::provider_installation;

use super::docs::repo;

#[test]
fn every_doc_shows_the_one_provider_installation_block() {
    let deployed = ("registry.example.com", "https://registry.example.com/v1/mirror/");
    let local = ("127.0.0.1:8443", "https://127.0.0.1:8443/v1/mirror/");
    for (doc, (host, mirror)) in [
        ("README.md", deployed),
        ("docs/DEPLOY.md", deployed),
        ("docs/PUBLISHING.md", local),
        ("docs/TROUBLESHOOTING.md", local),
    ] {
        let text = std::fs::read_to_string(repo().join(doc)).unwrap();
        let block = provider_installation(Some(host), mirror);
        assert!(text.contains(&block), "{doc} must show, as it is:\n{block}");
    }
}
