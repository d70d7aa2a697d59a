//! OpenID Connect sign-in against a real issuer on loopback TLS (`support/oidc.rs`): key
//! rotation at the issuer, the bound on key set fetches, and claims mapped to exactly the
//! scopes configured. The hostile tokens are cases of the hostile corpus
//! (`hostile_requests.rs`); `terraform init` with a JWT and `terraform login` are in
//! `terraform_cli.rs`.

// Test helpers: a failed step is a failed test, with the panic message saying which.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use registry::auth::oidc::keys::{KEYS_STALE_MAX, KEYS_TTL, Keys, REFRESH_MIN_INTERVAL};
use registry::clock::Monotonic;
use support::Harness;
use support::oidc::OidcIssuer;

/// A registry trusting `issuer`, whose key set bounds run on `clock`.
async fn registry_trusting(issuer: &OidcIssuer, clock: Monotonic) -> Harness {
    let settings = [
        ("REGISTRY_OIDC_ISSUERS", issuer.issuers_json(false, &[])),
        ("REGISTRY_OIDC_CA_FILE", issuer.ca_file.to_str().unwrap().to_string()),
    ];
    Harness::start_with_clock(&settings.each_ref().map(|(n, v)| (*n, v.as_str())), clock).await
}

/// Just short of `bound`, and just past it.
const BEFORE: Duration = Duration::from_millis(1);

const VERSIONS: &str = "/v1/modules/acme/network/aws/versions";

/// The issuer rotates its key: tokens signed with the new key are refused only until the
/// registry may fetch the key set again (at most once per `REFRESH_MIN_INTERVAL`, however many
/// tokens name unknown keys), then accepted; the withdrawn key's tokens are refused from then on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_rotation_is_picked_up_and_key_set_fetches_are_bounded() {
    let issuer = OidcIssuer::start().await;
    let clock = Monotonic::manual();
    let h = registry_trusting(&issuer, clock.clone()).await;
    h.upload("modules/acme/network/aws/1.0.0.tar.gz", support::module_tar_gz(&[("main.tf", "# network\n")])).await;
    let old = issuer.sign(&issuer.claims(600));

    let (status, body) = h.get_json_as(VERSIONS, &old).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(h.get_json_as(VERSIONS, &old).await.0, 200);
    assert_eq!(issuer.jwks_fetches(), 1, "the key set is kept, not fetched per request");

    issuer.rotate();
    let new = issuer.sign(&issuer.claims(600));
    for _ in 0..20 {
        // Each with a kid of its own, as an attacker would send.
        let made_up = registry::testing::oidc::TestIssuer::rsa(&issuer.url).sign(&issuer.claims(600));
        let (status, body) = h.get_json_as(VERSIONS, &made_up).await;
        assert_eq!(status, 401, "{body}");
    }
    let (status, body) = h.get_json_as(VERSIONS, &new).await;
    assert_eq!(status, 401, "fetched moments ago: not fetched again yet: {body}");
    assert!(body.to_string().contains("unknown key"), "{body}");
    assert_eq!(issuer.jwks_fetches(), 1, "unknown kids within the interval fetch nothing");

    clock.advance(REFRESH_MIN_INTERVAL - BEFORE);
    let (status, body) = h.get_json_as(VERSIONS, &new).await;
    assert_eq!(status, 401, "still within the interval: {body}");
    assert_eq!(issuer.jwks_fetches(), 1, "not fetched a moment before the bound");

    clock.advance(BEFORE);
    let (status, body) = h.get_json_as(VERSIONS, &new).await;
    assert_eq!(status, 200, "the rotated key is picked up: {body}");
    assert_eq!(issuer.jwks_fetches(), 2);
    let (status, body) = h.get_json_as(VERSIONS, &old).await;
    assert_eq!(status, 401, "the withdrawn key no longer signs anything in: {body}");
    assert_eq!(issuer.jwks_fetches(), 2, "and asking about it again so soon fetches nothing");
    h.running.stop().await;
    issuer.stop();
}

/// What a token may read is exactly what the issuer's rules grant its claims: the listing, the
/// modules and the mirror agree, and a value that is no plain name grants nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_map_to_exactly_the_configured_scopes() {
    let issuer = OidcIssuer::start().await;
    let h = registry_trusting(&issuer, Monotonic::real()).await;
    for namespace in ["acme", "team-network", "team-storage", "other"] {
        h.upload(
            &format!("modules/{namespace}/network/aws/1.0.0.tar.gz"),
            support::module_tar_gz(&[("main.tf", "#\n")]),
        )
        .await;
    }
    let platform = support::this_platform();
    for (namespace, r#type) in [("hashicorp", "null"), ("acme", "widget")] {
        let key = format!(
            "providers/registry.terraform.io/{namespace}/{type}/terraform-provider-{type}_1.0.0_{platform}.zip"
        );
        h.upload(&key, support::provider_zip(r#type, "1.0.0", &platform)).await;
    }
    let namespaces = |listing: &serde_json::Value| -> Vec<String> {
        let mut n: Vec<String> = listing["modules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["namespace"].as_str().unwrap().to_string())
            .collect();
        n.sort();
        n
    };
    let with_groups = |groups: serde_json::Value| {
        let mut claims = issuer.claims(600);
        claims.insert("groups".into(), groups);
        issuer.sign(&claims)
    };

    let user = issuer.sign(&issuer.claims(600)); // groups: team-network, everyone
    let (status, listing) = h.get_json_as("/v1/modules", &user).await;
    assert_eq!(status, 200, "{listing}");
    assert_eq!(namespaces(&listing), ["acme", "team-network"]);
    for (path, want) in [
        ("/v1/modules/acme/network/aws/versions", 200),
        ("/v1/modules/team-network/network/aws/versions", 200),
        ("/v1/modules/team-storage/network/aws/versions", 404),
        ("/v1/modules/other/network/aws/versions", 404),
        ("/v1/mirror/registry.terraform.io/hashicorp/null/index.json", 200),
        ("/v1/mirror/registry.terraform.io/acme/widget/index.json", 404),
    ] {
        assert_eq!(h.get_json_as(path, &user).await.0, want, "{path}");
    }

    // Only a team's group: its namespace and nothing else (no `everyone` grants).
    let team = with_groups(serde_json::json!(["team-storage"]));
    assert_eq!(namespaces(&h.get_json_as("/v1/modules", &team).await.1), ["team-storage"]);
    assert_eq!(h.get_json_as("/v1/mirror/registry.terraform.io/hashicorp/null/index.json", &team).await.0, 404);
    // Group names that match `team-*` but are no plain name grant nothing: not `*`, not a path.
    let (status, body) = h.get_json_as("/v1/modules", &with_groups(serde_json::json!(["team-*", "team-a/b"]))).await;
    assert_eq!(status, 401, "a token granted nothing is refused, visibly: {body}");
    h.running.stop().await;
    issuer.stop();
}

/// An issuer that goes down: its kept key set still verifies its tokens after the TTL (each
/// failed fetch at most once per refresh interval), up to the stale bound, then its tokens are
/// refused with why; back up, the next token fetches again. The deployed bounds (10 min, 1 h,
/// 30 s), on a clock the test moves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_key_set_outlives_an_issuer_outage_for_a_bounded_time() {
    let issuer = OidcIssuer::start().await;
    let issuers = registry::auth::oidc::parse_issuers(&issuer.issuers_json(false, &[])).unwrap();
    let clock = Monotonic::manual();
    let keys = Keys::new(&issuers, issuer.ca_file.to_str()).unwrap().with_clock(clock.clone());
    let token = issuer.sign(&issuer.claims(7200));
    let verify = || async { keys.verify(&token).await.expect("names a configured issuer") };

    assert!(verify().await.is_ok());
    clock.advance(KEYS_TTL - BEFORE);
    assert!(verify().await.is_ok());
    assert_eq!(issuer.jwks_fetches(), 1, "kept within the TTL");

    issuer.outage(true);
    clock.advance(BEFORE);
    assert!(verify().await.is_ok(), "past the TTL, the issuer down: the kept set still verifies");
    assert_eq!(issuer.jwks_fetches(), 1, "the failed fetch is not counted as one");
    assert!(verify().await.is_ok(), "and the next request within the refresh interval does not ask again");
    assert_eq!(issuer.outage_refusals(), 1, "asked once: {}", issuer.outage_refusals());
    clock.advance(REFRESH_MIN_INTERVAL);
    assert!(verify().await.is_ok(), "after the interval: asked again, still the kept set");
    assert_eq!(issuer.outage_refusals(), 2);

    clock.advance(KEYS_STALE_MAX - KEYS_TTL - REFRESH_MIN_INTERVAL - BEFORE);
    assert!(verify().await.is_ok(), "a moment before the stale bound");
    clock.advance(BEFORE);
    let refused = verify().await.unwrap_err();
    assert!(refused.contains("cannot be fetched") && refused.contains("503"), "{refused}");

    issuer.outage(false);
    clock.advance(REFRESH_MIN_INTERVAL);
    assert!(verify().await.is_ok(), "the issuer back: fetched again");
    assert_eq!(issuer.jwks_fetches(), 2);
    issuer.stop();
}
