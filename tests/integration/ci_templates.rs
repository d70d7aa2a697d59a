//! The CI a module repository adds to publish (ci/): the GitHub action, the example workflow
//! and the GitLab template hold to the schemas GitHub and GitLab publish (check-jsonschema's
//! built-in copies), and the steps they run (ci/publish-module.sh) publish against a local
//! registry with the environment each CI sets: the job's OIDC token reads the registry, a
//! failing `terraform test` stops the job before anything is uploaded, the summary carries the
//! result and the interface changes.
//!
//! What does not run here: the steps that only exist on a runner (the build step,
//! setup-terraform, configure-aws-credentials, the ID token requests, the GitLab jobs' apt-get,
//! terraform download and the publish job's env -i script); the roles they assume are tested
//! in tests/deploy/ci_trust.rs.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use registry::storage::Storage;
use registry_local::LocalOptions;
use support::oidc::OidcIssuer;
use support::{TempDir, git, skipped, terraform_or_skip, text};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn check_jsonschema() -> Option<PathBuf> {
    let tools =
        std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/tf-registry-tools/bin/check-jsonschema"));
    let found = std::env::var_os("CHECK_JSONSCHEMA").map(PathBuf::from).or(tools).filter(|p| p.is_file());
    if found.is_none() {
        skipped("the CI files against their schemas", "check-jsonschema not found (tests/setup.sh installs it)");
    }
    found
}

fn validate(tool: &Path, schema: &str, file: &Path) -> Output {
    Command::new(tool).args(["--builtin-schema", schema]).arg(file).output().unwrap()
}

#[test]
fn the_ci_files_hold_to_github_and_gitlab_schemas() {
    let Some(tool) = check_jsonschema() else { return };
    let work = TempDir::new("ci-schemas");
    let files = [
        ("vendor.github-actions", "ci/github/publish-module/action.yml", "using: composite", "using: compost"),
        ("vendor.github-actions", "ci/github/check-module/action.yml", "  using: composite", "  usin: composite"),
        ("vendor.github-workflows", "ci/github/example-workflow.yml", "runs-on:", "runs_on:"),
        ("vendor.gitlab-ci", "ci/gitlab/publish-module.yml", "  needs:", "  needz:"),
    ];
    for (schema, file, good, bad) in files {
        let path = repo().join(file);
        let out = validate(&tool, schema, &path);
        assert!(out.status.success(), "{file} against {schema}:\n{}", text(&out));
        // The schema bites: one key misspelt fails it.
        let text_of = std::fs::read_to_string(&path).unwrap();
        assert!(text_of.contains(good), "{file} has {good:?}");
        let broken = work.path().join(Path::new(file).file_name().unwrap());
        std::fs::write(&broken, text_of.replacen(good, bad, 1)).unwrap();
        assert!(!validate(&tool, schema, &broken).status.success(), "{file} with {bad:?} must fail {schema}");
    }
}

/// The lines of `text` without comments and blank lines, each trimmed at its end.
fn yaml_lines(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.split(" #").next().unwrap_or(l).trim_end().to_string())
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .collect()
}

/// PUBLISHING.md's copy of the example workflow says what the file says, and names every
/// variable the GitLab template's header asks for.
#[test]
fn the_docs_show_the_ci_files_as_they_are() {
    let docs = std::fs::read_to_string(repo().join("docs/PUBLISHING.md")).unwrap();
    let section = docs.split("## CI: a tag published with no stored secrets").nth(1).unwrap();
    let block = section.split("```yaml\n").nth(1).unwrap().split("```").next().unwrap();
    let example = yaml_lines(&std::fs::read_to_string(repo().join("ci/github/example-workflow.yml")).unwrap());
    for line in yaml_lines(block) {
        assert!(
            example.contains(&line),
            "PUBLISHING.md's workflow line {line:?} is not in ci/github/example-workflow.yml"
        );
    }
    let template = std::fs::read_to_string(repo().join("ci/gitlab/publish-module.yml")).unwrap();
    let header: Vec<&str> = template.lines().take_while(|l| l.starts_with('#')).collect();
    let asked: Vec<&str> = header
        .iter()
        .filter_map(|l| l.trim_start_matches('#').trim().split_once(": "))
        .map(|(k, _)| k)
        .filter(|k| k.chars().all(|c| c.is_ascii_uppercase() || c == '_') && !k.is_empty())
        .collect();
    assert!(asked.len() >= 7, "{asked:?}");
    for variable in asked {
        assert!(section.contains(&format!("`{variable}`")), "PUBLISHING.md does not name {variable}");
    }
}

/// The defaults both CI files write (the CLI's version, the audience that assumes the role)
/// are the same, and the audience is infra's `ci_oidc.audience` default.
#[test]
fn the_ci_files_agree_on_their_defaults() {
    let read = |f: &str| std::fs::read_to_string(repo().join(f)).unwrap();
    let (action, check, template, variables) = (
        read("ci/github/publish-module/action.yml"),
        read("ci/github/check-module/action.yml"),
        read("ci/gitlab/publish-module.yml"),
        read("infra/variables.tf"),
    );
    let after = |text: &str, key: &str| -> String {
        let at = text.find(key).unwrap_or_else(|| panic!("{key} not found")) + key.len();
        text[at..].lines().next().unwrap().trim().trim_matches('"').to_string()
    };
    let terraform = after(&check, "description: The terraform CLI the checks run with.\n    default: ");
    assert_eq!(terraform, after(&template, "TERRAFORM_VERSION: "));
    let audience = after(&variables, "audience            = optional(string, ");
    let audience = audience.trim_end_matches(')').trim_matches('"');
    assert_eq!(audience, after(&action, "(infra ci_oidc.audience).\n    default: "));
    assert_eq!(audience, after(&template, "REGISTRY_AWS_AUDIENCE: "));
}

const TEST_PASSES: &str = "run \"region_is_set\" {\n  command = plan\n  assert {\n    condition     = output.region == \"eu-west-1\"\n    error_message = \"region\"\n  }\n}\n";

fn module(repo: &Path, region_default: &str, extra: &str, tag: &str) {
    let main = format!(
        "variable \"region\" {{\n  type    = string\n  default = \"{region_default}\"\n}}\n{extra}\noutput \"region\" {{\n  value = var.region\n}}\n"
    );
    std::fs::write(repo.join("main.tf"), main).unwrap();
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", tag]);
    git(repo, &["tag", tag]);
}

/// The registry-local binary `make test`'s build stage made beside this test's executable.
fn registry_local_bin() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let bin = exe.parent().and_then(Path::parent).unwrap().join("registry-local");
    assert!(bin.is_file(), "{} is missing: cargo build --workspace --bins first (make test does)", bin.display());
    bin
}

/// ci/publish-module.sh STEP in `repo`, with `env` as the CI sets it.
fn step(step: &str, repo: &Path, env: &[(String, String)]) -> Output {
    Command::new("bash")
        .arg(self::repo().join("ci/publish-module.sh"))
        .arg(step)
        .current_dir(repo)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ci_steps_publish_a_tag_with_the_jobs_own_token_and_stop_at_a_failing_test() {
    let Some(tf) = terraform_or_skip("the_ci_steps_publish_a_tag_with_the_jobs_own_token_and_stop_at_a_failing_test")
    else {
        return;
    };
    let issuer = OidcIssuer::start().await;
    let data = TempDir::new("ci-registry");
    let running = registry_local::start(LocalOptions {
        write_client_files: true,
        settings: vec![
            ("REGISTRY_OIDC_ISSUERS".into(), issuer.issuers_json(false, &[])),
            ("REGISTRY_OIDC_CA_FILE".into(), issuer.ca_file.display().to_string()),
        ],
        ..LocalOptions::ephemeral(data.path())
    })
    .await
    .unwrap();
    let local: Vec<(String, String)> = std::fs::read_to_string(data.path().join("local.env"))
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("export ")?.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let var = |name: &str| local.iter().find(|(k, _)| k == name).unwrap().1.clone();
    let ca = data.path().join(registry_local::tls::CA_FILE).display().to_string();
    let home = TempDir::new("ci-home");
    let work = TempDir::new("ci-module");
    git(work.path(), &["init", "-q"]);
    std::fs::create_dir_all(work.path().join("tests")).unwrap();
    std::fs::write(work.path().join("tests/region.tftest.hcl"), TEST_PASSES).unwrap();
    let summary = work.path().join("../ci-summary.md");
    // What both CIs set that the steps read; the role's credentials are the local publisher's
    // (in CI, configure-aws-credentials or the web identity token file gives them).
    let common = |summary_var: &str| {
        let mut env: Vec<(String, String)> = [
            "AWS_ENDPOINT_URL",
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_REGION",
            "REGISTRY_URL",
            "REGISTRY_BUCKET",
        ]
        .iter()
        .map(|k| (k.to_string(), var(k)))
        .collect();
        env.extend([
            ("HOME".into(), home.path().display().to_string()),
            ("TERRAFORM".into(), tf.display().to_string()),
            ("TF_CLI_CONFIG_FILE".into(), "/dev/null".into()),
            ("REGISTRY_MODULE".into(), "acme/net/aws".into()),
            ("REGISTRY_PUBLISH".into(), registry_local_bin().display().to_string()),
            ("REGISTRY_CA_FILE".into(), ca.clone()),
            // The job's own OIDC token, from an issuer the registry trusts: no token stored.
            ("REGISTRY_TOKEN".into(), issuer.sign(&issuer.claims(600))),
            (summary_var.into(), summary.display().to_string()),
        ]);
        env
    };
    let mut github = common("GITHUB_STEP_SUMMARY");
    github.extend(
        [("GITHUB_ACTIONS", "true"), ("GITHUB_REF", "refs/tags/v1.0.0"), ("GITHUB_REF_NAME", "v1.0.0")]
            .map(|(k, v)| (k.to_string(), v.to_string())),
    );

    module(work.path(), "eu-west-1", "", "v1.0.0");
    for name in ["check", "publish"] {
        let out = step(name, work.path(), &github);
        assert!(out.status.success(), "{name}:\n{}", text(&out));
        if name == "check" {
            assert!(
                text(&out).contains("terraform test") && text(&out).contains("1 passed, 0 failed"),
                "{}",
                text(&out)
            );
        }
    }
    let written = std::fs::read_to_string(&summary).unwrap();
    assert!(written.starts_with("### acme/net/aws: published\n"), "{written}");
    assert!(written.contains("module \"net\" {") && written.contains("served: acme/net/aws 1.0.0"), "{written}");

    // A release whose own test fails: the job stops at the check (the runner stops at the first
    // failing step or script line), and nothing is uploaded.
    module(work.path(), "us-east-1", "", "v1.1.0");
    let job = |env: &[(String, String)]| {
        let out = step("check", work.path(), env);
        if out.status.success() { Some(step("publish", work.path(), env)) } else { None }
    };
    std::fs::remove_file(&summary).unwrap();
    assert!(job(&github).is_none(), "a failing terraform test stops the job");
    let written = std::fs::read_to_string(&summary).unwrap();
    assert_eq!(written, "### acme/net/aws: not published, `terraform test` failed (the job's log says why)\n");
    // The registry reads with the job's token, and only with a valid one (no other credential).
    let mut forged = github.clone();
    forged.iter_mut().find(|(k, _)| k == "REGISTRY_TOKEN").unwrap().1 =
        registry::testing::oidc::TestIssuer::rsa(&issuer.url).sign(&issuer.claims(600));
    let out = step("publish", work.path(), &forged);
    assert!(!out.status.success() && text(&out).contains("refused the token"), "{}", text(&out));
    let listed = running.storage.list("modules/acme/net/aws/").await.unwrap();
    assert_eq!(listed.iter().map(|o| o.key.as_str()).collect::<Vec<_>>(), ["modules/acme/net/aws/1.0.0.tar.gz"]);

    // Fixed, and published from GitLab's environment: its summary file shows what changed.
    std::fs::remove_file(&summary).unwrap();
    let mut gitlab = common("REGISTRY_SUMMARY_FILE");
    gitlab.extend(
        [("GITLAB_CI", "true"), ("CI_COMMIT_TAG", "v1.2.0"), ("CI_PROJECT_PATH", "acme/platform/net")]
            .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    module(work.path(), "eu-west-1", "variable \"zones\" {\n  type    = number\n  default = 3\n}\n", "v1.2.0");
    let out = job(&gitlab).expect("the check passes");
    assert!(out.status.success(), "{}", text(&out));
    let written = std::fs::read_to_string(&summary).unwrap();
    assert!(written.contains("since 1.0.0") && written.contains("zones"), "{written}");
    assert!(!written.contains('\r'), "{written}");
}
