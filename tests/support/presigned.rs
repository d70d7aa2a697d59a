//! Presigned URLs in answers. Two answers a second apart carry different URLs for the same
//! archive (`X-Amz-Date`, the date in `X-Amz-Credential`, and so `X-Amz-Signature`), so tests
//! never compare them as text: they compare what does not depend on the instant of signing
//! (`timeless`), check the signing time and lifetime against bounds taken around the request
//! (`signed`), and prove the signature good by fetching the URL from the embedded S3 (`fetch`).

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;

/// The query parameters that change with the instant a URL is signed.
const SIGNING_TIME: [&str; 2] = ["X-Amz-Date", "X-Amz-Signature"];

/// Whether `text` is a presigned URL.
pub fn is_presigned(text: &str) -> bool {
    text.contains("X-Amz-Signature=")
}

/// `url` without what depends on when it was signed: the time and signature dropped, the
/// credential scope's date cut out. Everything else (host, key, version, lifetime, access
/// key, region) stays.
pub fn timeless(url: &str) -> String {
    let Some((base, query)) = url.split_once('?') else { return url.to_string() };
    let kept: Vec<String> = query
        .split('&')
        .filter(|pair| !SIGNING_TIME.iter().any(|name| pair.split('=').next() == Some(name)))
        .map(|pair| match pair.strip_prefix("X-Amz-Credential=") {
            // KEY%2F20261124%2FREGION%2Fs3%2Faws4_request: the second field is the date.
            Some(scope) => {
                let mut fields: Vec<&str> = scope.split("%2F").collect();
                if fields.len() > 1 {
                    fields[1] = "DATE";
                }
                format!("X-Amz-Credential={}", fields.join("%2F"))
            }
            None => pair.to_string(),
        })
        .collect();
    format!("{base}?{}", kept.join("&"))
}

/// `value` with every presigned URL in it made `timeless`.
pub fn timeless_json(value: &Value) -> Value {
    match value {
        Value::String(s) if is_presigned(s) => Value::String(timeless(s)),
        Value::Array(items) => Value::Array(items.iter().map(timeless_json).collect()),
        Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), timeless_json(v))).collect()),
        other => other.clone(),
    }
}

/// When a presigned URL was signed (Unix seconds) and for how long it is valid (seconds).
pub fn signed(url: &str) -> (i64, u64) {
    let param = |name: &str| {
        url.split(['?', '&'])
            .find_map(|pair| pair.strip_prefix(name).and_then(|rest| rest.strip_prefix('=')))
            .unwrap_or_else(|| panic!("no {name} in {url}"))
    };
    // 20261124T023519Z, as `YYYY-MM-DDTHH:MM:SSZ` for the clock's parser.
    let date = param("X-Amz-Date");
    let b = date.as_bytes();
    let rfc3339 = if b.len() == 16 {
        format!("{}-{}-{}T{}:{}:{}Z", &date[0..4], &date[4..6], &date[6..8], &date[9..11], &date[11..13], &date[13..15])
    } else {
        String::new()
    };
    let at = registry::clock::parse_rfc3339(&rfc3339).unwrap_or_else(|| panic!("X-Amz-Date {date:?} in {url}"));
    let lifetime = param("X-Amz-Expires").parse().unwrap_or_else(|_| panic!("X-Amz-Expires in {url}"));
    (at, lifetime)
}

/// GET `url` over plain HTTP (the embedded S3): its status and body.
pub async fn fetch(url: &str) -> (u16, Bytes) {
    let client: Client<_, Empty<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let response = client.get(url.parse().unwrap()).await.unwrap();
    let status = response.status().as_u16();
    (status, response.into_body().collect().await.unwrap().to_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    const URL: &str = "http://127.0.0.1:9/registry/modules/a/b/c/1.0.0.tar.gz?x-id=GetObject\
        &X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=registry-local%2F20261124%2Fus-east-1%2Fs3%2Faws4_request\
        &X-Amz-Date=20261124T023519Z&X-Amz-Expires=300&X-Amz-SignedHeaders=host&X-Amz-Signature=abc";

    #[test]
    fn the_signing_instant_is_cut_and_nothing_else() {
        let later = URL.replace("20261124T023519Z", "20261125T000001Z").replace("%2F20261124%2F", "%2F20261125%2F");
        let later = later.replace("Signature=abc", "Signature=def");
        assert_eq!(timeless(URL), timeless(&later));
        for changed in [
            URL.replace("1.0.0", "1.0.1"),
            URL.replace("Expires=300", "Expires=3600"),
            URL.replace("registry-local%2F", "other%2F"),
            URL.replace("us-east-1", "eu-west-1"),
        ] {
            assert_ne!(timeless(URL), timeless(&changed), "{changed}");
        }
        assert_eq!(signed(URL), (registry::clock::parse_rfc3339("2026-11-24T02:35:19Z").unwrap(), 300));
        let answer = serde_json::json!({"a": [{"url": URL}], "b": "plain"});
        assert_eq!(timeless_json(&answer), serde_json::json!({"a": [{"url": timeless(URL)}], "b": "plain"}));
    }
}
