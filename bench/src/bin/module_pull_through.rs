//! The modules pull-through with the real client, side by side (issue 48's targets):
//!
//! - **first init**: `terraform init` of a configuration with 10 public registry modules
//!   (`source = "registry.terraform.io/…"`) through a registry that has never seen them (a fresh
//!   one every round: each version is copied while the CLI waits), against the same init
//!   installing directly from the upstream (its modules.v1, archives over HTTPS);
//! - **second init**: the same init through that registry once it holds the copies, against
//!   the init of the same 10 modules published privately to a registry (the goal: within 5 %).
//!
//! The upstream is the tests' stand-in for the public registry and GitHub's archive host
//! (`support::public_registry`), on loopback TLS: git archives of a tag for the pull-through,
//! the same files as flat archives for the direct install (the CLI would clone the repository
//! with git, which is not here). Fresh working directory for every run; the variants of a pair
//! alternate which goes first; round 0 warms up and is not counted. Each run is checked: all
//! 10 modules installed with their files.
//!
//! usage: module_pull_through [ROUNDS] [FILES_PER_MODULE]

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::Duration;

use registry_bench::registry;
use registry_local::Running;
use support::public_registry::{Answer, PublicRegistry};

const MODULES: usize = 10;
const HOST: &str = "registry.terraform.io";

// Long on purpose: a benchmark reads top to bottom as the table it prints, setup to rows.
#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let rounds: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(5);
    let files_per_module: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(20);
    let Some(tf) = support::terraform_or_skip("bench module_pull_through") else { return };
    let dir = support::TempDir::new("bench-module-pull");

    // Each module: a root module and files of HCL-like text (about 8 KB each), as a public
    // module's repository holds (terraform-aws-modules/vpc: about 30 files).
    let files: Vec<Vec<(String, String)>> = (0..MODULES)
        .map(|m| {
            let mut files = vec![("main.tf".to_string(), format!("output \"id\" {{\n  value = \"m{m}\"\n}}\n"))];
            files.extend((0..files_per_module).map(|f| {
                let body: String =
                    (0..200).map(|l| format!("# module {m} file {f} line {l}: {}\n", l * 7919 % 10007)).collect();
                (format!("modules/part{f}/main.tf"), body)
            }));
            files
        })
        .collect();
    let as_refs = |m: usize| -> Vec<(&str, &str)> { files[m].iter().map(|(n, b)| (n.as_str(), b.as_str())).collect() };

    // The upstream for the pull-through: git archives of tag v1.0.0, as the public registry
    // answers (`git::https://github.com/…?ref=v1.0.0`).
    let git_upstream = PublicRegistry::start().await;
    // The upstream for direct installs: the same files as flat archives over HTTPS.
    let direct_upstream = PublicRegistry::start().await;
    for m in 0..MODULES {
        let module = format!("acme/m{m}/aws");
        git_upstream.publish(&module, "1.0.0", &as_refs(m), Answer::Header);
        let path = format!("/flat/m{m}.tar.gz");
        direct_upstream.set_archive(&path, registry::testing::module_tar_gz(&as_refs(m)));
        direct_upstream.set_location(&module, "1.0.0", &format!("{}{path}", direct_upstream.url), Answer::Header);
    }

    // Private: the same archives published to a registry of their own.
    let private = registry(&dir.path().join("private"), &[]).await;
    for m in 0..MODULES {
        let key = format!("modules/acme/m{m}/aws/1.0.0.tar.gz");
        support::upload(private.publisher_client(), key, registry::testing::module_tar_gz(&as_refs(m))).await;
    }

    let config = |host: &str| -> String {
        (0..MODULES)
            .map(|m| format!("module \"m{m}\" {{\n  source  = \"{host}/acme/m{m}/aws\"\n  version = \"1.0.0\"\n}}\n"))
            .collect()
    };
    let public_config = config(HOST);
    let private_config = config(&private.registry_addr.to_string());
    let through_rc = |r: &Running| {
        registry::cli_config::upstream_modules(
            &[HOST],
            &format!("https://{}/v1/modules/", r.registry_addr),
            &r.dev_token,
        )
    };
    let direct_rc = format!(
        "host \"{HOST}\" {{\n  services = {{\n    \"modules.v1\" = \"{}/v1/modules/\"\n  }}\n}}\n",
        direct_upstream.url
    );
    let private_rc = format!("credentials \"{}\" {{\n  token = \"{}\"\n}}\n", private.registry_addr, private.dev_token);
    let pem = |p: &Path| std::fs::read_to_string(p).unwrap();

    // times: direct, first through the pull-through, second through it, private.
    let mut times: [Vec<Duration>; 4] = Default::default();
    let run = |label: &str, round: usize, main: &str, rc: &str, ca: &Path| -> Duration {
        let work = dir.path().join(format!("run-{round}-{label}"));
        std::fs::create_dir_all(work.join(".home")).unwrap();
        std::fs::write(work.join("main.tf"), main).unwrap();
        std::fs::write(work.join("cli.tfrc"), rc).unwrap();
        let (elapsed, _) = registry_bench::terraform_init(tf.as_path(), &work, ca);
        for m in 0..MODULES {
            assert!(work.join(format!(".terraform/modules/m{m}/modules/part0/main.tf")).is_file(), "{label}: m{m}");
        }
        let _ = std::fs::remove_dir_all(&work);
        elapsed
    };
    for round in 0..rounds + 1 {
        let settings = git_upstream.settings(HOST);
        let settings: Vec<(&str, &str)> = settings.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let through = registry(&dir.path().join(format!("through-{round}")), &settings).await;
        let ca = dir.path().join(format!("ca-{round}.pem"));
        let cas = [
            pem(&through.data_dir.join("ca.pem")),
            pem(&private.data_dir.join("ca.pem")),
            pem(&direct_upstream.ca_file),
            pem(&git_upstream.ca_file),
        ];
        std::fs::write(&ca, cas.concat()).unwrap();
        let through_rc = through_rc(&through);
        // The variants of a pair alternate which goes first, round by round.
        let pair = |a: (&str, &str, &str), b: (&str, &str, &str)| -> (Duration, Duration) {
            tokio::task::block_in_place(|| {
                if round % 2 == 0 {
                    let ta = run(a.0, round, a.1, a.2, &ca);
                    (ta, run(b.0, round, b.1, b.2, &ca))
                } else {
                    let tb = run(b.0, round, b.1, b.2, &ca);
                    (run(a.0, round, a.1, a.2, &ca), tb)
                }
            })
        };
        let first = pair(("direct", &public_config, &direct_rc), ("through-first", &public_config, &through_rc));
        git_upstream.take_requests();
        let second = pair(("through-second", &public_config, &through_rc), ("private", &private_config, &private_rc));
        let fetched: Vec<String> =
            git_upstream.take_requests().into_iter().filter(|p| p.contains("/archive/")).collect();
        assert!(fetched.is_empty(), "the second init fetched archives from the upstream: {fetched:?}");
        through.stop().await;
        if round > 0 {
            times[0].push(first.0);
            times[1].push(first.1);
            times[2].push(second.0);
            times[3].push(second.1);
        }
    }

    registry_bench::print_pairs(
        "init",
        rounds,
        &mut times,
        [
            "first: direct from the upstream (modules.v1, HTTPS archives)",
            "first: through the modules pull-through (copied while the CLI waits)",
            "second: through the modules pull-through (copies in the bucket)",
            "second: the same modules published privately",
        ],
    );
    let bytes: usize = files.iter().flatten().map(|(_, b)| b.len()).sum();
    println!(
        "\n{MODULES} modules of {} files, {} KB of text in all; goals: first ≤ 1.3×, second ≤ 1.05×",
        files_per_module + 1,
        bytes / 1000
    );
    private.stop().await;
}
