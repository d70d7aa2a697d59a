//! docs/TROUBLESHOOTING.md quotes what the CLI prints for the mistakes users make; this runs
//! each mistake with the real CLI and requires the quoted lines, word for word (the CLI wraps
//! its diagnostics, so whitespace is compared collapsed), in the CLI's output and in the doc.
//! Every Terraform version `make test` runs (the installed binary, 1.6, 1.8 to 1.15) must print
//! them, or the doc must say which does.

// Test helpers: a failed step is a failed test, with the panic message saying which.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use support::{Harness, TempDir, module_tar_gz, terraform_command, terraform_or_skip, text};

fn collapsed(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The quoted blocks of the doc (```text fences), whitespace collapsed.
fn quoted() -> String {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/TROUBLESHOOTING.md"))
        .expect("docs/TROUBLESHOOTING.md");
    let blocks: Vec<&str> = doc.split("```text\n").skip(1).filter_map(|b| b.split("```").next()).collect();
    collapsed(&blocks.join("\n"))
}

/// One mistake: the module source (`provider:ADDRESS` for a provider) and whether it sets a
/// version, the CLI configuration and CA bundle it runs with, and the
/// lines the CLI must print (with `HOST` for the registry's address).
struct Mistake {
    name: &'static str,
    source: String,
    /// Whether the module block sets `version` (a registry address then).
    version: bool,
    cli_config: Option<String>,
    ca_file: Option<std::path::PathBuf>,
    expected: &'static [&'static str],
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_prints_what_troubleshooting_quotes() {
    let Some(tf) = terraform_or_skip("the_cli_prints_what_troubleshooting_quotes") else { return };
    let h = Harness::start().await;
    let host = h.host();
    h.upload("modules/acme/network/aws/1.0.0.tar.gz", module_tar_gz(&[("main.tf", "# network\n")])).await;
    h.upload("modules/acme/tampered/aws/1.0.0.tar.gz", module_tar_gz(&[("main.tf", "# original\n")])).await;
    std::fs::write(
        h.object_path("modules/acme/tampered/aws/1.0.0.tar.gz"),
        module_tar_gz(&[("main.tf", "# changed behind the registry's back\n")]),
    )
    .unwrap();
    let rc = std::fs::read_to_string(h.running.data_dir.join("terraform.rc")).unwrap();
    let without_credentials = rc[..rc.find("credentials").unwrap()].to_string();
    let other_ca = TempDir::new("other-ca");
    let other_ca_file = other_ca.path().join("ca.pem");
    // A CA bundle without the registry's CA (the system's, or none at all).
    let system = std::fs::read("/etc/ssl/certs/ca-certificates.crt").unwrap_or_default();
    std::fs::write(&other_ca_file, system).unwrap();
    let localhost = host.replace("127.0.0.1", "localhost");

    let mistakes = [
        Mistake {
            name: "untrusted CA",
            source: format!("{host}/acme/network/aws"),
            version: true,
            cli_config: None,
            ca_file: Some(other_ca_file.clone()),
            expected: &["tls: failed to verify certificate: x509: certificate signed by unknown authority"],
        },
        Mistake {
            name: "no token",
            source: format!("{host}/acme/network/aws"),
            version: true,
            cli_config: Some(without_credentials),
            ca_file: None,
            expected: &[
                "Error: Error accessing remote module registry",
                "error looking up module versions: 401 Unauthorized",
            ],
        },
        Mistake {
            name: "a module that is not there (or the token may not read)",
            source: format!("{host}/acme/nothing/aws"),
            version: true,
            cli_config: None,
            ca_file: None,
            expected: &["Error: Module not found", "cannot be found in the module registry at"],
        },
        Mistake {
            name: "bytes changed after indexing",
            source: format!("{host}/acme/tampered/aws"),
            version: true,
            cli_config: None,
            ca_file: None,
            expected: &["Error: Failed to download module", "Checksums did not match for"],
        },
        Mistake {
            name: "a host without a dot",
            source: format!("{localhost}/acme/network/aws"),
            version: true,
            cli_config: None,
            ca_file: None,
            expected: &["invalid module registry hostname: must contain at least one dot"],
        },
        Mistake {
            name: "a host without a dot, and no version",
            source: format!("{localhost}/acme/network/aws"),
            version: false,
            cli_config: None,
            ca_file: None,
            expected: &["download not supported for scheme 'localhost'"],
        },
        Mistake {
            name: "a provider of a host with a port, through the mirror",
            source: format!("provider:{host}/acme/widget"),
            version: true,
            cli_config: Some(format!(
                "provider_installation {{\n  network_mirror {{\n    url = \"https://{host}/v1/mirror/\"\n  }}\n}}\n{}",
                &rc[rc.find("credentials").unwrap()..]
            )),
            ca_file: None,
            expected: &["first path segment in URL cannot contain colon"],
        },
    ];
    let doc = quoted();
    let mut failures = Vec::new();
    for mistake in &mistakes {
        let work = TempDir::new("tf-mistake");
        let version = if mistake.version { "  version = \"1.0.0\"\n" } else { "" };
        let config = match mistake.source.strip_prefix("provider:") {
            Some(source) => format!(
                "terraform {{\n  required_providers {{\n    widget = {{\n      source = \"{source}\"\n    }}\n  }}\n}}\n"
            ),
            None => format!("module \"m\" {{\n  source  = \"{}\"\n{version}}}\n", mistake.source),
        };
        std::fs::write(work.path().join("main.tf"), config).unwrap();
        let rc_path = work.path().join("cli.rc");
        std::fs::write(&rc_path, mistake.cli_config.clone().unwrap_or_else(|| rc.clone())).unwrap();
        let mut command = terraform_command(&tf, &h, &rc_path, work.path());
        if let Some(ca) = &mistake.ca_file {
            command.env("SSL_CERT_FILE", ca);
        }
        let out = tokio::task::block_in_place(|| command.args(["init", "-input=false", "-no-color"]).output().unwrap());
        let printed = collapsed(&text(&out).replace(&host, "HOST").replace(&localhost, "HOST"));
        eprintln!("--- {}:\n{}", mistake.name, text(&out));
        if out.status.success() {
            failures.push(format!("{}: terraform init succeeded", mistake.name));
        }
        for line in mistake.expected {
            if !printed.contains(line) {
                failures.push(format!("{}: the CLI did not print {line:?}", mistake.name));
            }
            if !doc.contains(line) {
                failures.push(format!("{}: docs/TROUBLESHOOTING.md does not quote {line:?}", mistake.name));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    h.running.stop().await;
}
