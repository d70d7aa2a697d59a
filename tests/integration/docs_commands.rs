//! Every `sh` block in README.md, docs/ and infra/README.md runs as written against a local
//! registry set up as `make dev` sets it up (`.data/` with `terraform.rc`, `ca.pem`,
//! `local.env`), or says on the line before it why it does not: `<!-- not run: REASON -->`
//! (AWS only, installs tools, starts the registry itself). Each block runs in `bash -eu` in a
//! directory holding what the docs assume is there (`./network`, a provider zip), after the
//! README's environment block, with `$H` the registry's host (as PUBLISHING.md sets it).

use std::path::{Path, PathBuf};
use std::process::Command;

use support::{Harness, TempDir};

use super::docs::{documents, repo};

/// One fenced `sh` block: where it is, its text, and why it is not run (if it is not).
struct Block {
    at: String,
    text: String,
    not_run: Option<String>,
}

fn blocks(doc: &str) -> Vec<Block> {
    let text = std::fs::read_to_string(repo().join(doc)).unwrap_or_else(|e| panic!("{doc}: {e}"));
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim_end() == "```sh" {
            let start = i;
            let end = (i + 1..lines.len()).find(|&j| lines[j].starts_with("```")).unwrap_or(lines.len());
            let not_run = start
                .checked_sub(1)
                .and_then(|p| lines[p].trim().strip_prefix("<!-- not run:"))
                .and_then(|r| r.strip_suffix("-->"))
                .map(|r| r.trim().to_string());
            out.push(Block { at: format!("{doc}:{}", start + 1), text: lines[start + 1..end].join("\n"), not_run });
            i = end;
        }
        i += 1;
    }
    out
}

/// The AWS CLI: `AWS_CLI` (which `make test` sets), else the one tests/setup.sh installs (`~/.cache/tf-registry-tools/awscli`),
/// else `aws` on PATH; `None` without one.
fn aws_cli() -> Option<PathBuf> {
    let home = std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/tf-registry-tools/awscli/bin/aws"));
    let given = std::env::var_os("AWS_CLI").map(PathBuf::from).into_iter().chain(home).find(|p| p.is_file());
    given.or_else(|| {
        std::env::var_os("PATH")
            .and_then(|paths| std::env::split_paths(&paths).map(|d| d.join("aws")).find(|p| p.is_file()))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_shell_block_runs_or_says_why_not() {
    let all: Vec<Block> = documents().iter().flat_map(|d| blocks(d)).collect();
    assert!(all.len() >= 15, "{} sh blocks found", all.len());
    let unexplained: Vec<&str> =
        all.iter().filter(|b| b.not_run.as_deref() == Some("")).map(|b| b.at.as_str()).collect();
    assert!(unexplained.is_empty(), "a `not run` marker must say why: {unexplained:?}");
    let Some(aws) = aws_cli() else {
        eprintln!(
            "\n=== SKIPPED: every_shell_block_runs_or_says_why_not: the aws CLI is not installed (tests/setup.sh installs it, make test runs it) ===\n"
        );
        return;
    };

    let h = Harness::start().await;
    let work = TempDir::new("docs-commands");
    std::os::unix::fs::symlink(&h.running.data_dir, work.path().join(".data")).unwrap();
    std::fs::create_dir_all(work.path().join("network")).unwrap();
    std::fs::write(work.path().join("network/main.tf"), "variable \"cidr\" { default = \"10.0.0.0/16\" }\n").unwrap();
    let zip = support::provider_zip("widget", "0.3.0", "linux_amd64");
    std::fs::write(work.path().join("terraform-provider-widget_0.3.0_linux_amd64.zip"), zip).unwrap();
    let readme = blocks("README.md");
    let environment =
        readme.iter().find(|b| b.text.contains("source .data/local.env")).expect("the README's env block");
    let path =
        format!("{}:{}", aws.parent().unwrap_or(Path::new("/")).display(), std::env::var("PATH").unwrap_or_default());

    let mut ran = Vec::new();
    let mut failures = Vec::new();
    for block in all.iter().filter(|b| b.not_run.is_none()) {
        let script = format!("{}\n{}\n", environment.text, block.text);
        let out = tokio::task::block_in_place(|| {
            Command::new("bash")
                .args(["-eu", "-c", &script])
                .current_dir(work.path())
                .env_clear()
                .env("PATH", &path)
                .env("HOME", work.path())
                .env("H", h.host())
                .output()
                .expect("bash runs")
        });
        if out.status.success() {
            ran.push(block.at.clone());
        } else {
            failures.push(format!(
                "{} failed ({}):\n{}\n--- stderr\n{}",
                block.at,
                out.status,
                block.text,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // What the publishing blocks published is served.
    let (status, versions) = h.get_json("/v1/modules/acme/network/aws/versions").await;
    assert_eq!(status, 200, "{versions}");
    let (status, index) = h.get_json("/v1/mirror/example.com/acme/widget/index.json").await;
    assert_eq!((status, index["versions"]["0.3.0"].is_object()), (200, true), "{index}");
    let skipped: Vec<String> =
        all.iter().filter_map(|b| b.not_run.as_ref().map(|why| format!("{} ({why})", b.at))).collect();
    eprintln!("ran {} blocks: {ran:?}\nnot run, with why: {skipped:#?}", ran.len());
    assert!(ran.len() >= 5, "{ran:?}");
    h.running.stop().await;
}
