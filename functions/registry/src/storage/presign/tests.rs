use super::*;

fn client(
    endpoint: Option<&str>,
    path_style: bool,
    session_token: Option<&str>,
) -> (Client, SharedCredentialsProvider) {
    let credentials = Credentials::new(
        "AKIDEXAMPLE",
        "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
        session_token.map(Into::into),
        None,
        "t",
    );
    let provider = SharedCredentialsProvider::new(credentials);
    let mut config = aws_sdk_s3::Config::builder()
        .behavior_version(aws_sdk_s3::config::BehaviorVersion::latest())
        .region(aws_sdk_s3::config::Region::new("eu-west-1"))
        .credentials_provider(provider.clone())
        .force_path_style(path_style);
    if let Some(url) = endpoint {
        config = config.endpoint_url(url);
    }
    (Client::from_conf(config.build()), provider)
}

async fn sdk(client: &Client, bucket: &str, key: &str, version: Option<&str>, ttl: Duration, at: SystemTime) -> String {
    let config = PresigningConfig::builder().start_time(at).expires_in(ttl).build().unwrap();
    let request = client
        .get_object()
        .bucket(bucket)
        .key(key)
        .set_version_id(version.map(str::to_string))
        .presigned(config)
        .await
        .unwrap();
    request.uri().to_string()
}

#[tokio::test]
async fn matches_the_sdk_presigner() {
    let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000);
    let keys = [
        "providers/registry.terraform.io/hashicorp/aws/terraform-provider-aws_5.100.0_linux_amd64.zip",
        "modules/acme/vpc/aws/1.0.0.tar.gz",
        "modules/acme/with space+plus/aws/1.0.0-rc.1+build.5.tar.gz",
        "modules/ünï/çødé/aws/~tilde%percent&amp=eq?q#h.zip",
        "a//double/slash/",
    ];
    let clients = [
        ("AWS, virtual-hosted", client(None, false, None), "registry-bucket"),
        ("AWS, path style, session token", client(None, true, Some("FwoGZXIvYXdzE+/token=")), "registry-bucket"),
        ("custom endpoint, path style", client(Some("http://127.0.0.1:9000"), true, None), "registry"),
        ("dotted bucket", client(None, false, Some("tok")), "registry.example.com"),
    ];
    for (what, (client, provider), bucket) in &clients {
        let presigner = Presigner::new(client.clone(), Some(provider.clone()), bucket.to_string());
        for key in keys {
            for version in [None, Some("3HL4kqtJlcpXroDTDmJ+rmSpXd3dIbrHY+MTRCxf3vjVBH40Nr8X8gdRQBpUMLUo")] {
                for ttl in [Duration::from_secs(1), Duration::from_secs(900), MAX_LIFETIME] {
                    let expected = sdk(client, bucket, key, version, ttl, at).await;
                    let ours = presigner.presign_get(key, version, ttl, at).await.unwrap();
                    assert_eq!(ours, expected, "{what}: {key} {version:?} {ttl:?}");
                }
            }
        }
    }
}

#[tokio::test]
async fn lifetimes_outside_s3s_bounds_are_refused() {
    let (client, provider) = client(None, false, None);
    let presigner = Presigner::new(client, Some(provider), "b".into());
    let now = SystemTime::now();
    for ttl in [Duration::ZERO, MAX_LIFETIME + Duration::from_secs(1)] {
        assert!(presigner.presign_get("k", None, ttl, now).await.is_err(), "{ttl:?}");
    }
}

/// Credentials that expire an hour after `start`, counting how often they are asked for.
#[derive(Debug, Clone)]
struct Expiring {
    start: SystemTime,
    calls: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl ProvideCredentials for Expiring {
    fn provide_credentials<'a>(&'a self) -> aws_credential_types::provider::future::ProvideCredentials<'a>
    where
        Self: 'a,
    {
        let n = self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let expiry = self.start + Duration::from_secs(3600 * (n as u64 + 1));
        let credentials = Credentials::new(format!("AKID{n}"), "secret", Some("token".into()), Some(expiry), "t");
        aws_credential_types::provider::future::ProvideCredentials::ready(Ok(credentials))
    }
}

#[tokio::test]
async fn credentials_are_kept_until_shortly_before_they_expire() {
    let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000);
    let provider = Expiring { start, calls: Default::default() };
    let (client, _) = client(None, false, None);
    let presigner = Presigner::new(client, Some(SharedCredentialsProvider::new(provider.clone())), "b".into());
    let calls = || provider.calls.load(std::sync::atomic::Ordering::SeqCst);
    let signed_by =
        |url: String| url.split("X-Amz-Credential=").nth(1).unwrap().split("%2F").next().unwrap().to_string();
    let ttl = Duration::from_secs(900);
    for minutes in [0, 10, 54] {
        let at = start + Duration::from_secs(60 * minutes);
        assert_eq!(signed_by(presigner.presign_get("k", None, ttl, at).await.unwrap()), "AKID0", "{minutes} min");
    }
    assert_eq!(calls(), 1, "one fetch while the credentials have more than 5 minutes left");
    // 56 minutes in, 4 left: fetched again, and the new ones (2 h) kept.
    for minutes in [56, 60, 100] {
        let at = start + Duration::from_secs(60 * minutes);
        assert_eq!(signed_by(presigner.presign_get("k", None, ttl, at).await.unwrap()), "AKID1", "{minutes} min");
    }
    assert_eq!(calls(), 2);
    let url = presigner.presign_get("k", None, ttl, start).await.unwrap();
    assert!(url.ends_with("&X-Amz-Security-Token=token"), "{url}");
}

#[test]
fn the_probe_url_gives_base_and_scope() {
    let url = "https://b.s3.eu-west-1.amazonaws.com/registry-presign-probe?x-id=GetObject&X-Amz-Algorithm=AWS4-HMAC-SHA256\
                   &X-Amz-Credential=AKID%2F20261123%2Feu-west-1%2Fs3%2Faws4_request&X-Amz-Date=20261123T000000Z";
    assert_eq!(
        endpoint_of(url).unwrap(),
        Endpoint {
            base: "https://b.s3.eu-west-1.amazonaws.com/".into(),
            region: "eu-west-1".into(),
            service: "s3".into()
        }
    );
    for bad in [
        "https://b.s3.amazonaws.com/other-key?X-Amz-Credential=A%2FD%2Fr%2Fs3%2Faws4_request",
        "https://b.s3.amazonaws.com/registry-presign-probe",
        "https://b.s3.amazonaws.com/registry-presign-probe?X-Amz-Credential=A%2FD%2Fr",
    ] {
        assert!(endpoint_of(bad).is_err(), "{bad}");
    }
}
