//! Requests to the embedded S3 exactly as written, signed in every way S3 has known: Signature
//! Version 4 in a header or a presigned URL, Version 2 in a header, a presigned URL or a POST
//! form, a Version 4 POST form, or not at all. The SDK cannot send a path such as
//! `/registry/modules/%2e%2e/signing-keys/k` or sign with Version 2; a hostile client can.
//! Signed as s3s verifies (its canonical URI is the decoded path, encoded again), so that a
//! refusal is the rights check's and never a signature mismatch.

use base64::Engine;
use hmac::{KeyInit, Mac};
use sha2::Digest;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How a request is signed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signing {
    V4Header,
    V4Presigned,
    V2Header,
    V2Presigned,
    /// A browser-form upload (`POST /BUCKET` with the key a form field), Version 4.
    V4Post,
    V2Post,
    Anonymous,
}

/// One request: who signs it, how, and what is sent.
pub struct RawRequest<'a> {
    pub access_key: &'a str,
    pub secret: &'a str,
    pub signing: Signing,
    pub method: &'a str,
    /// The path and query as sent, encoded as the attacker likes (for a POST form: `/BUCKET`).
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// For a POST form: the key field.
    pub form_key: Option<String>,
}

/// What the embedded S3 answered: status and body (S3's XML error, if any).
pub struct RawAnswer {
    pub status: u16,
    pub body: String,
}

impl RawAnswer {
    /// The S3 error code in the body (`<Code>…</Code>`), if any.
    pub fn code(&self) -> Option<&str> {
        self.body.split("<Code>").nth(1)?.split("</Code>").next()
    }
}

const REGION: &str = "us-east-1";

type HmacSha256 = hmac::Hmac<sha2::Sha256>;
type HmacSha1 = hmac::Hmac<sha1::Sha1>;

fn hmac256(key: &[u8], data: &str) -> Vec<u8> {
    let mut mac = HmacSha256::new_from_slice(key).unwrap();
    mac.update(data.as_bytes());
    mac.finalize().into_bytes().to_vec()
}

fn hmac1_base64(key: &str, data: &str) -> String {
    let mut mac = HmacSha1::new_from_slice(key.as_bytes()).unwrap();
    mac.update(data.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

/// `Content-MD5` of a body (base64), as DeleteObjects wants it.
pub fn content_md5(body: &[u8]) -> String {
    use md5::Digest as _;
    base64::engine::general_purpose::STANDARD.encode(md5::Md5::digest(body))
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(sha2::Sha256::digest(bytes))
}

/// SigV4's URI encoding: every byte but the unreserved ones (and `/` where asked).
fn encode(s: &str, keep_slash: bool) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            b'/' if keep_slash => "/".into(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn decode(s: &str) -> String {
    registry::percent::decode_text(s, false).unwrap_or_else(|| s.to_string())
}

/// `20261126T120000Z` and `20261126` for now.
fn amz_dates() -> (String, String) {
    let stamp = registry::clock::rfc3339(registry::clock::now_unix()).replace(['-', ':'], "");
    let day = stamp[..8].to_string();
    (stamp, day)
}

fn signing_key(secret: &str, day: &str) -> Vec<u8> {
    let k = hmac256(format!("AWS4{secret}").as_bytes(), day);
    let k = hmac256(&k, REGION);
    let k = hmac256(&k, "s3");
    hmac256(&k, "aws4_request")
}

/// The canonical query as s3s builds it: names and values decoded, encoded again, sorted by name.
fn canonical_query(query: &str, skip: &str) -> String {
    let mut pairs: Vec<(String, String)> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (n, v) = p.split_once('=').unwrap_or((p, ""));
            (encode(&decode(n), false), encode(&decode(v), false))
        })
        .filter(|(n, _)| n != skip)
        .collect();
    pairs.sort_by(|a, b| a.0.cmp(&b.0));
    pairs.iter().map(|(n, v)| format!("{n}={v}")).collect::<Vec<_>>().join("&")
}

/// The string a Version 4 signature signs, and its signed header names.
fn v4_string_to_sign(
    method: &str,
    target: &str,
    headers: &[(String, String)],
    payload: &str,
    stamp: &str,
    scope: &str,
    skip: &str,
) -> (String, String) {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let mut lower: Vec<(String, String)> =
        headers.iter().map(|(n, v)| (n.to_ascii_lowercase(), v.trim().to_string())).collect();
    lower.sort();
    let canonical_headers: String = lower.iter().map(|(n, v)| format!("{n}:{v}\n")).collect();
    let signed: Vec<&str> = lower.iter().map(|(n, _)| n.as_str()).collect();
    let signed = signed.join(";");
    let canonical = format!(
        "{method}\n{}\n{}\n{canonical_headers}\n{signed}\n{payload}",
        encode(&decode(path), true),
        canonical_query(query, skip)
    );
    (format!("AWS4-HMAC-SHA256\n{stamp}\n{scope}\n{}", sha256_hex(canonical.as_bytes())), signed)
}

impl RawRequest<'_> {
    /// Signs and sends it to `addr` (plain HTTP), and reads the whole answer.
    pub async fn send(mut self, addr: std::net::SocketAddr) -> RawAnswer {
        let host = addr.to_string();
        self.headers.push(("host".into(), host.clone()));
        match self.signing {
            Signing::V4Header => self.sign_v4_header(),
            Signing::V4Presigned => self.sign_v4_presigned(),
            Signing::V2Header => self.sign_v2_header(),
            Signing::V2Presigned => self.sign_v2_presigned(),
            Signing::V4Post | Signing::V2Post => self.form(),
            Signing::Anonymous if self.form_key.is_some() => self.form(),
            Signing::Anonymous => {}
        }
        exchange(addr, self.method, &self.target, &self.headers, &self.body).await
    }

    fn sign_v4_header(&mut self) {
        let (stamp, day) = amz_dates();
        let scope = format!("{day}/{REGION}/s3/aws4_request");
        let payload = sha256_hex(&self.body);
        self.headers.push(("x-amz-date".into(), stamp.clone()));
        self.headers.push(("x-amz-content-sha256".into(), payload.clone()));
        let (to_sign, signed) =
            v4_string_to_sign(self.method, &self.target, &self.headers, &payload, &stamp, &scope, "");
        let signature = hex::encode(hmac256(&signing_key(self.secret, &day), &to_sign));
        let auth = format!(
            "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={signed}, Signature={signature}",
            self.access_key
        );
        self.headers.push(("authorization".into(), auth));
    }

    fn sign_v4_presigned(&mut self) {
        let (stamp, day) = amz_dates();
        let scope = format!("{day}/{REGION}/s3/aws4_request");
        let credential = encode(&format!("{}/{scope}", self.access_key), false);
        let join = if self.target.contains('?') { "&" } else { "?" };
        self.target = format!(
            "{}{join}X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential={credential}&X-Amz-Date={stamp}&X-Amz-Expires=300&X-Amz-SignedHeaders=host",
            self.target
        );
        let host: Vec<(String, String)> = self.headers.iter().filter(|(n, _)| n == "host").cloned().collect();
        let (to_sign, _) =
            v4_string_to_sign(self.method, &self.target, &host, "UNSIGNED-PAYLOAD", &stamp, &scope, "X-Amz-Signature");
        let signature = hex::encode(hmac256(&signing_key(self.secret, &day), &to_sign));
        self.target = format!("{}&X-Amz-Signature={signature}", self.target);
    }

    /// Version 2's string to sign: method, MD5, type, date (or expiry), `x-amz-` headers, the
    /// raw path (subresources: none of the requests here use them but `delete` and `uploads`).
    fn v2_string_to_sign(&self, date: &str) -> String {
        let (path, query) = self.target.split_once('?').unwrap_or((&self.target, ""));
        let header = |name: &str| {
            self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str()).unwrap_or("")
        };
        let mut amz: Vec<(String, &str)> = self
            .headers
            .iter()
            .filter(|(n, _)| n.to_ascii_lowercase().starts_with("x-amz-"))
            .map(|(n, v)| (n.to_ascii_lowercase(), v.as_str()))
            .collect();
        amz.sort();
        let amz: String = amz.iter().map(|(n, v)| format!("{n}:{v}\n")).collect();
        let sub: Vec<&str> = query.split('&').filter(|p| ["delete", "uploads"].contains(p)).collect();
        let sub = if sub.is_empty() { String::new() } else { format!("?{}", sub.join("&")) };
        format!("{}\n{}\n{}\n{date}\n{amz}{path}{sub}", self.method, header("content-md5"), header("content-type"))
    }

    fn sign_v2_header(&mut self) {
        let date = "Thu, 26 Nov 2026 12:00:00 GMT";
        self.headers.push(("date".into(), date.into()));
        let signature = hmac1_base64(self.secret, &self.v2_string_to_sign(date));
        self.headers.push(("authorization".into(), format!("AWS {}:{signature}", self.access_key)));
    }

    fn sign_v2_presigned(&mut self) {
        let expires = (registry::clock::now_unix() + 300).to_string();
        let signature = hmac1_base64(self.secret, &self.v2_string_to_sign(&expires));
        let join = if self.target.contains('?') { "&" } else { "?" };
        self.target = format!(
            "{}{join}AWSAccessKeyId={}&Expires={expires}&Signature={}",
            self.target,
            self.access_key,
            encode(&signature, false)
        );
    }

    /// A POST form: the policy (an hour from now, any key), signed as its version signs it (or
    /// not, for an anonymous form), then the file.
    fn form(&mut self) {
        let key = self.form_key.clone().unwrap_or_default();
        let expiration = registry::clock::rfc3339(registry::clock::now_unix() + 3600).replace('Z', ".000Z");
        let (stamp, day) = amz_dates();
        let credential = format!("{}/{day}/{REGION}/s3/aws4_request", self.access_key);
        let mut fields: Vec<(&str, String)> = vec![("key", key)];
        let conditions = match self.signing {
            Signing::V4Post => {
                fields.push(("x-amz-algorithm", "AWS4-HMAC-SHA256".into()));
                fields.push(("x-amz-credential", credential.clone()));
                fields.push(("x-amz-date", stamp.clone()));
                serde_json::json!([["starts-with", "$key", ""], {"x-amz-algorithm": "AWS4-HMAC-SHA256"},
                    {"x-amz-credential": credential}, {"x-amz-date": stamp}])
            }
            _ => serde_json::json!([["starts-with", "$key", ""]]),
        };
        let policy = serde_json::json!({"expiration": expiration, "conditions": conditions}).to_string();
        let policy = base64::engine::general_purpose::STANDARD.encode(policy);
        fields.push(("policy", policy.clone()));
        match self.signing {
            Signing::V4Post => {
                fields.push(("x-amz-signature", hex::encode(hmac256(&signing_key(self.secret, &day), &policy))))
            }
            Signing::V2Post => {
                fields.push(("AWSAccessKeyId", self.access_key.to_string()));
                fields.push(("signature", hmac1_base64(self.secret, &policy)));
            }
            // An unsigned form: the policy alone.
            _ => {}
        }
        let boundary = "raw-s3-form-boundary";
        let mut body = Vec::new();
        for (name, value) in fields {
            body.extend(
                format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n")
                    .as_bytes(),
            );
        }
        body.extend(format!("--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f\"\r\nContent-Type: application/octet-stream\r\n\r\n").as_bytes());
        body.extend(&self.body);
        body.extend(format!("\r\n--{boundary}--\r\n").as_bytes());
        self.body = body;
        self.headers.push(("content-type".into(), format!("multipart/form-data; boundary={boundary}")));
    }
}

/// One HTTP/1.1 exchange on a new connection, closed after the answer.
async fn exchange(
    addr: std::net::SocketAddr,
    method: &str,
    target: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> RawAnswer {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut head = format!("{method} {target} HTTP/1.1\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!("content-length: {}\r\nconnection: close\r\n\r\n", body.len()));
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    let text = String::from_utf8_lossy(&answer).to_string();
    let status = text.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    RawAnswer { status, body }
}
