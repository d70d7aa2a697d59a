//! The token commands (`make token-create`, `token-list`, `token-revoke`) against a local
//! registry's data directory, as an operator runs them.

use registry_local::{TokenAction, TokenTarget, token_command};

fn create(name: &str, modules: &str, replace: bool) -> TokenAction {
    TokenAction::Create {
        name: name.into(),
        modules: vec![modules.into()],
        providers: vec![],
        expires_days: None,
        replace,
    }
}

/// A taken name is refused, so a second `token-create` cannot cut off the first token's
/// clients by accident; rotation with overlap is a new name, then a revoke; `--replace` is the
/// deliberate replacement.
#[tokio::test]
async fn token_create_refuses_a_taken_name_unless_asked_to_replace() {
    let dir = support::TempDir::new("tokens");
    let target = || TokenTarget::DataDir(dir.path().to_path_buf());
    let first = token_command(create("ci", "acme", false), target()).await.unwrap();
    let token = |printed: &str| printed.lines().map(str::trim).find(|l| l.starts_with("trg_")).unwrap().to_string();
    let old = token(&first);
    let refused = token_command(create("ci", "*", false), target()).await.unwrap_err().to_string();
    assert!(refused.contains("a token named \"ci\" exists") && refused.contains("--replace"), "{refused}");
    let listed = token_command(TokenAction::List, target()).await.unwrap();
    let ci: Vec<&str> = listed.lines().filter(|l| l.starts_with("ci ")).collect();
    assert_eq!(ci.len(), 1, "{listed}");
    assert!(ci[0].contains("acme"), "the first token is untouched: {listed}");
    // Rotation with overlap: the new token under a new name, then the old one revoked.
    token_command(create("ci-2", "acme", false), target()).await.unwrap();
    token_command(TokenAction::Revoke { name: "ci".into() }, target()).await.unwrap();
    // Replacing on purpose: a new secret under the same name.
    let replaced = token_command(create("ci-2", "*", true), target()).await.unwrap();
    assert_ne!(token(&replaced), old);
    let listed = token_command(TokenAction::List, target()).await.unwrap();
    let names: Vec<&str> = listed.lines().skip(1).filter_map(|l| l.split_whitespace().next()).collect();
    assert_eq!(names, ["local-dev", "ci-2"], "{listed}");
    assert!(listed.lines().any(|l| l.starts_with("ci-2 ") && l.contains(" * ")), "{listed}");
}

/// docs/OPERATIONS.md, "Rotate a token", as written: the new token works beside the old one
/// while clients move over, and once the old one is revoked it is refused and the new one
/// still works. (Token cache off, so the revocation shows at once, as it does in AWS after
/// `tokens_cache_seconds`.)
#[tokio::test]
async fn rotating_a_token_with_overlap_keeps_clients_working() {
    let harness = support::Harness::start_with(&[("REGISTRY_TOKENS_CACHE_SECONDS", "0")]).await;
    let target = || TokenTarget::DataDir(harness.running.data_dir.clone());
    let token = |printed: &str| printed.lines().map(str::trim).find(|l| l.starts_with("trg_")).unwrap().to_string();
    let old = token(&token_command(create("ci", "acme", false), target()).await.unwrap());
    // In scope and absent: 404; an unknown or revoked token: 401.
    let status = |token: String| {
        let harness = &harness;
        async move { harness.get_json_as("/v1/modules/acme/vpc/aws/versions", &token).await.0 }
    };
    assert_eq!(status(old.clone()).await, 404);
    let new = token(&token_command(create("ci-2026-11", "acme", false), target()).await.unwrap());
    assert_eq!((status(old.clone()).await, status(new.clone()).await), (404, 404), "both work during the overlap");
    token_command(TokenAction::Revoke { name: "ci".into() }, target()).await.unwrap();
    assert_eq!((status(old).await, status(new).await), (401, 404), "the old token is refused, the new one works");
}
