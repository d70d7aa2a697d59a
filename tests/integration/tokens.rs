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
        admin: false,
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
    assert!(listed.starts_with(&format!("token store: the local registry's, in {}", dir.path().display())), "{listed}");
    let names: Vec<&str> = listed.lines().skip(2).filter_map(|l| l.split_whitespace().next()).collect();
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

/// The `registry-local` binary the build stage built, beside this test's own directory.
fn registry_local() -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("the test's own path");
    exe.parent().and_then(|deps| deps.parent()).expect("target/debug/deps/").join("registry-local")
}

/// `make token-create BUCKET=$(terraform output -raw bucket_name)` where there is no state
/// passes an empty bucket: refused, and nothing written to the local store in its place.
#[test]
fn an_empty_bucket_is_refused_never_the_local_store_in_its_place() {
    let dir = support::TempDir::new("tokens-empty-bucket");
    let out = std::process::Command::new(registry_local())
        .args(["token", "create", "--name", "ci", "--modules", "acme", "--bucket", ""])
        .current_dir(dir.path())
        .output()
        .expect("registry-local runs (the build stage builds it)");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("--bucket is empty"), "{stderr}");
    assert!(!dir.path().join(".data").exists(), "nothing written locally");
}

/// The Makefile sends BUCKET (given, even empty) and DEPLOYED to the deployed store and the
/// rest to the local one; and refuses to act on AWS from a shell that sourced the local
/// registry's local.env (its keys, its endpoint), before anything is built or applied.
#[test]
fn the_makefile_names_the_token_target_and_keeps_local_settings_from_aws() {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ is in the repository");
    let make = |args: &[&str], env: &[(&str, &str)]| {
        let mut command = std::process::Command::new("make");
        command.args(["--no-print-directory", "-C"]).arg(repo).args(args);
        for var in ["AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "BUCKET", "DEPLOYED"] {
            command.env_remove(var);
        }
        command.envs(env.iter().copied()).output().expect("make runs")
    };
    let dry = |args: &[&str]| String::from_utf8_lossy(&make(args, &[]).stdout).to_string();
    assert!(dry(&["-n", "token-create", "NAME=ci"]).contains("--data-dir .data"));
    assert!(dry(&["-n", "token-list", "BUCKET="]).contains("--bucket \"\""), "an empty BUCKET stays a bucket");
    assert!(dry(&["-n", "token-list", "BUCKET=b"]).contains("--bucket \"b\""));
    let deployed = dry(&["-n", "token-list", "DEPLOYED=infra/examples/minimal"]);
    assert!(
        deployed.contains("--bucket \"$(cd infra/examples/minimal && terraform output -raw bucket_name)\""),
        "{deployed}"
    );
    assert!(deployed.contains("AWS_REGION=\"$(cd infra/examples/minimal && terraform output -raw"), "{deployed}");

    // What `source .data/local.env` exports, then a deploy: refused before the build.
    let local = [("AWS_ACCESS_KEY_ID", "publisher-local"), ("AWS_SECRET_ACCESS_KEY", "x")];
    for (args, env) in [
        (&["deploy", "CARGO=false", "TERRAFORM=false"][..], &local[..]),
        (&["token-create", "BUCKET=b", "NAME=ci", "CARGO=false"][..], &local[..]),
        (&["destroy", "TERRAFORM=false"][..], &[("AWS_ENDPOINT_URL", "http://127.0.0.1:8444")][..]),
    ] {
        let out = make(args, env);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} went ahead");
        assert!(
            stderr.contains("sourced .data/local.env") || stderr.contains("AWS_ENDPOINT_URL is set"),
            "{args:?}: {stderr}"
        );
        assert!(stderr.contains(": not-local] Error"), "{args:?}: stopped by not-local, before anything ran: {stderr}");
    }
}
