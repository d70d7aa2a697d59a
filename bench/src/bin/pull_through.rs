//! The pull-through mirror with the real client, side by side (issue 12's targets):
//!
//! - **first install**: `terraform init` of 4 providers that exist only upstream, through a
//!   downstream registry's pull-through mirror that has never seen them (a fresh downstream every
//!   round), against the same init installing directly from the upstream's providers.v1;
//! - **second install**: the same init through that downstream once its copies are in, against
//!   a mirror pre-synced with the same zips (uploaded to its bucket, no upstream configured).
//!
//! The upstream is a local registry serving signed releases (its own key and TLS), reached by
//! the CLI through a `host` block because `upstream.example` has no DNS. Fresh working directory
//! and no plugin cache for every run; the variants of a pair alternate which goes first; round 0
//! warms up and is not counted. Each run is checked: 4 providers installed with the upstream's
//! bytes (their `h1:` in the lock file), and the second install read no byte from the upstream.
//!
//! usage: pull_through [ROUNDS] [PROVIDER_ZIP_MB]

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use registry::testing::signing::{TestKey, release_of};
use registry_bench::registry;
use registry_local::Running;

const PROVIDERS: usize = 4;
const UPSTREAM: &str = "upstream.example";

// Long on purpose: a benchmark reads top to bottom as the table it prints, setup to rows.
#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let rounds: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(5);
    let zip_mb: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(4);
    let Some(tf) = support::terraform_or_skip("bench pull_through") else { return };
    let dir = support::TempDir::new("bench-pull");

    // The upstream: 4 signed releases of 4 platforms each; anyone may read, as the public registry.
    let upstream = registry(
        &dir.path().join("upstream"),
        &[("REGISTRY_HOSTNAME", UPSTREAM), ("REGISTRY_ANONYMOUS_PROVIDERS", "*")],
    )
    .await;
    let key = TestKey::generate("bench-upstream");
    let up_client = upstream.publisher_client();
    support::upload(
        upstream.key_admin_client(),
        format!("signing-keys/{UPSTREAM}/acme/{}.asc", key.key_id()),
        key.public_armor().into(),
    )
    .await;
    let here = support::this_platform();
    let mut platforms = vec![here.clone()];
    platforms
        .extend(["linux_arm64", "darwin_arm64", "windows_amd64"].iter().map(|p| p.to_string()).filter(|p| *p != here));
    let mut installed_h1 = Vec::new();
    let mut synced_zips = Vec::new();
    for p in 0..PROVIDERS {
        let r#type = format!("p{p}");
        let zips: Vec<(String, Vec<u8>)> = platforms
            .iter()
            .take(4)
            .enumerate()
            .map(|(i, platform)| {
                let seed = (p * 4 + i) as u8;
                (platform.clone(), registry::testing::sized_provider_zip(&r#type, "1.0.0", zip_mb << 20, seed))
            })
            .collect();
        installed_h1.push(support::h1_reference(&zips[0].1));
        for (name, bytes) in release_of(&r#type, "1.0.0", zips, Some(&["5.0"]), &key) {
            if name.ends_with(".zip") {
                synced_zips.push((format!("providers/{UPSTREAM}/acme/{type}/{name}"), bytes.clone()));
            }
            support::upload(up_client.clone(), format!("providers/{UPSTREAM}/acme/{type}/{name}"), bytes).await;
        }
    }

    let required: String = (0..PROVIDERS)
        .map(|p| {
            format!("    p{p} = {{\n      source  = \"{UPSTREAM}/acme/p{p}\"\n      version = \"1.0.0\"\n    }}\n")
        })
        .collect();
    let config = format!("terraform {{\n  required_providers {{\n{required}  }}\n}}\n");
    let direct_rc = format!(
        "host \"{UPSTREAM}\" {{\n  services = {{\n    \"providers.v1\" = \"https://{}/v1/providers/\"\n  }}\n}}\n",
        upstream.registry_addr
    );
    let mirror_rc = |r: &Running| {
        format!(
            "provider_installation {{\n  network_mirror {{\n    url = \"https://{host}/v1/mirror/\"\n  }}\n}}\n\
             credentials \"{host}\" {{\n  token = \"{}\"\n}}\n",
            r.dev_token,
            host = r.registry_addr
        )
    };
    let ca_of = |r: &Running| std::fs::read_to_string(r.data_dir.join("ca.pem")).unwrap();

    // times: direct, first through the pull-through mirror, second through it, pre-synced.
    let mut times: [Vec<Duration>; 4] = Default::default();
    let run = |label: &str, round: usize, rc: &str, ca: &Path| -> Duration {
        let work = dir.path().join(format!("run-{round}-{label}"));
        std::fs::create_dir_all(work.join(".home")).unwrap();
        std::fs::write(work.join("main.tf"), &config).unwrap();
        std::fs::write(work.join("cli.tfrc"), rc).unwrap();
        let elapsed = init(&tf, &work, ca, &installed_h1);
        let _ = std::fs::remove_dir_all(&work);
        elapsed
    };
    for round in 0..rounds + 1 {
        let downstream = registry(
            &dir.path().join(format!("downstream-{round}")),
            &[
                ("REGISTRY_UPSTREAM_HOSTS", &format!("{UPSTREAM}=https://{}", upstream.registry_addr)),
                ("REGISTRY_UPSTREAM_CA_FILE", upstream.data_dir.join("ca.pem").to_str().unwrap()),
            ],
        )
        .await;
        // A mirror pre-synced with the same zips (as `terraform providers mirror` and an upload
        // leave it), fresh like the downstream, so neither answers from a warmer cache.
        let synced = registry(&dir.path().join(format!("synced-{round}")), &[]).await;
        for (key, bytes) in &synced_zips {
            support::upload(synced.publisher_client(), key.clone(), bytes.clone()).await;
        }
        let synced_rc = mirror_rc(&synced);
        let ca: PathBuf = dir.path().join(format!("ca-{round}.pem"));
        std::fs::write(&ca, [ca_of(&upstream), ca_of(&downstream), ca_of(&synced)].concat()).unwrap();
        let pulling_rc = mirror_rc(&downstream);
        // The variants of a pair alternate which goes first, round by round.
        let pair = |a: (&str, &str), b: (&str, &str)| -> (Duration, Duration) {
            tokio::task::block_in_place(|| {
                if round % 2 == 0 {
                    let ta = run(a.0, round, a.1, &ca);
                    (ta, run(b.0, round, b.1, &ca))
                } else {
                    let tb = run(b.0, round, b.1, &ca);
                    (run(a.0, round, a.1, &ca), tb)
                }
            })
        };
        let first = pair(("direct", &direct_rc), ("pull-first", &pulling_rc));
        // The copies land (in AWS: the puller Lambda), then the second install.
        assert!(downstream.wait_for_pulls(Duration::from_secs(120)).await, "copies finished within 120 s");
        upstream.take_s3_requests();
        let second = pair(("pull-second", &pulling_rc), ("synced", &synced_rc));
        let zips_read: Vec<String> =
            upstream.take_s3_requests().into_iter().filter_map(|r| r.key).filter(|k| k.ends_with(".zip")).collect();
        assert!(zips_read.is_empty(), "the second install read zips from the upstream: {zips_read:?}");
        downstream.stop().await;
        synced.stop().await;
        if round > 0 {
            times[0].push(first.0);
            times[1].push(first.1);
            times[2].push(second.0);
            times[3].push(second.1);
        }
    }

    registry_bench::print_pairs(
        "install",
        rounds,
        &mut times,
        [
            "first: direct from the upstream (providers.v1)",
            "first: through the pull-through mirror",
            "second: through the pull-through mirror (copied)",
            "second: from a pre-synced mirror",
        ],
    );
    println!("\n{PROVIDERS} providers, {zip_mb} MB zip each, 4 platforms upstream (the CLI fetches its own)");
    upstream.stop().await;
}

/// One `terraform init`, checked: every provider installed, locked with the `h1:` of the
/// upstream's bytes for this platform.
fn init(tf: &Path, work: &Path, ca: &Path, installed_h1: &[String]) -> Duration {
    let (elapsed, stdout) = registry_bench::terraform_init(tf, work, ca);
    assert_eq!(stdout.matches(&format!("- Installed {UPSTREAM}/acme/")).count(), PROVIDERS, "{stdout}");
    let lock = std::fs::read_to_string(work.join(".terraform.lock.hcl")).unwrap();
    for h1 in installed_h1 {
        assert!(lock.contains(h1.as_str()), "{h1} locked:\n{lock}");
    }
    elapsed
}
