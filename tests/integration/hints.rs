//! What `make dev` prints points at docs that exist: every `docs/NAME.md` named in the local
//! registry's source (its printed hints and errors) is a file of the repository.

use super::docs::repo;

#[test]
fn every_doc_the_local_registry_names_exists() {
    let mut named = 0;
    for file in ["main.rs", "client_files.rs", "tokens.rs", "lib.rs"] {
        let source = std::fs::read_to_string(repo().join("functions/local/src").join(file)).unwrap();
        for (at, _) in source.match_indices("docs/") {
            let name: String =
                source[at..].chars().take_while(|c| c.is_ascii_alphanumeric() || "/._-".contains(*c)).collect();
            let name = name.trim_end_matches('.');
            if name.ends_with(".md") {
                assert!(repo().join(name).is_file(), "functions/local/src/{file} names {name}, which does not exist");
                named += 1;
            }
        }
    }
    assert!(named >= 2, "the hints name docs/PUBLISHING.md and docs/MIRROR.md");
}
