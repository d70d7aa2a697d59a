//! Two local registries for the pull-through tests: an upstream serving signed releases
//! through providers.v1 with its own key and TLS, and a downstream whose mirror pulls from it.

use std::time::Duration;

use registry::testing::signing::{TestKey, release};

use crate::Harness;

/// The name the upstream's providers have (`REGISTRY_HOSTNAME`), reached at its loopback
/// address: the terraform CLI cannot ask a mirror for a provider whose host has a port.
pub const UPSTREAM_NAME: &str = "upstream.example";

/// The upstream: a registry whose providers anyone may read, as the public registry's.
pub async fn upstream() -> Harness {
    Harness::start_with(&[("REGISTRY_ANONYMOUS_PROVIDERS", "*"), ("REGISTRY_HOSTNAME", UPSTREAM_NAME)]).await
}

/// Publish a signed release of `acme/TYPE` on the upstream (its own hostname, providers.v1):
/// the namespace key, the zips, `SHA256SUMS` and its signature. Answers the zips' bytes by
/// platform.
pub async fn publish(
    upstream: &Harness,
    key: &TestKey,
    r#type: &str,
    version: &str,
    platforms: &[&str],
) -> Vec<(String, Vec<u8>)> {
    let host = UPSTREAM_NAME;
    upstream
        .upload_key(&format!("signing-keys/{host}/acme/{}.asc", key.key_id()), key.public_armor().into_bytes())
        .await;
    let pairs: Vec<(&str, &str)> = platforms.iter().map(|p| p.split_once('_').expect("os_arch")).collect();
    let mut zips = Vec::new();
    for (name, bytes) in release(r#type, version, &pairs, Some(&["5.0"]), key) {
        if let Some(platform) =
            name.strip_suffix(".zip").and_then(|n| n.strip_prefix(&format!("terraform-provider-{type}_{version}_")))
        {
            zips.push((platform.to_string(), bytes.clone()));
        }
        upstream.upload(&format!("providers/{host}/acme/{type}/{name}"), bytes).await;
    }
    let (status, body) = upstream.get_json(&format!("/v1/providers/acme/{type}/versions")).await;
    assert_eq!(status, 200, "the upstream serves its release: {body}");
    zips
}

/// A registry whose mirror pulls providers of `upstream`'s host from it, trusting its CA.
pub async fn downstream(upstream: &Harness) -> Harness {
    let ca = upstream.running.data_dir.join("ca.pem");
    Harness::start_with(&[
        ("REGISTRY_UPSTREAM_HOSTS", &upstream_hosts(upstream)),
        ("REGISTRY_UPSTREAM_CA_FILE", ca.to_str().expect("UTF-8 path")),
    ])
    .await
}

/// `REGISTRY_UPSTREAM_HOSTS` naming `upstream`.
pub fn upstream_hosts(upstream: &Harness) -> String {
    format!("{UPSTREAM_NAME}=https://{}", upstream.host())
}

/// Wait for the downstream's background copies to finish (bounded).
pub async fn copies_done(downstream: &Harness) {
    assert!(downstream.running.wait_for_pulls(Duration::from_secs(60)).await, "copies finished within 60 s");
}

/// Keys of the downstream's bucket under `prefix` (as its own storage lists them).
pub async fn keys_under(h: &Harness, prefix: &str) -> Vec<String> {
    use registry::storage::Storage;
    h.running.storage.list(prefix).await.expect("list").into_iter().map(|o| o.key).collect()
}
