//! Sign-in for browsers: the token a person pasted, kept in a cookie the page scripts cannot
//! read (`HttpOnly`), sent only over HTTPS (`Secure`) and never with a request another site
//! starts (`SameSite=Strict`). The `__Host-` prefix makes the browser refuse the cookie unless
//! it is exactly that: Secure, for this host only (no `Domain`), `Path=/`. The token is checked
//! at every request by the same code as an `Authorization` header (`Verifier`), so revoking or
//! expiring it signs the browser out too.

use crate::error::Error;

/// The cookie's name.
pub const COOKIE: &str = "__Host-registry-token";
/// How long a browser keeps the cookie: a working day. The token's own expiry still applies.
pub const COOKIE_MAX_AGE_SECONDS: u64 = 8 * 3600;
/// Longest token kept in the cookie: browsers keep cookies of up to 4096 bytes, name and
/// attributes included. Static tokens are 68 bytes; a JWT from an OpenID Connect issuer
/// (`oidc`) is usually 1–2 KB.
pub const COOKIE_TOKEN_MAX_BYTES: usize = 3800;
/// Longest form body read (a token, plus room for its field name and escapes).
pub const FORM_MAX_BYTES: usize = 8192;

/// The token in a `Cookie` header, if it holds ours.
pub fn token(cookie_header: Option<&str>) -> Option<&str> {
    cookie_header?
        .split(';')
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.trim())
        .filter(|value| !value.is_empty())
}

/// The `Set-Cookie` value that keeps `token`.
pub fn keep(token: &str) -> String {
    format!("{COOKIE}={token}; Path=/; Max-Age={COOKIE_MAX_AGE_SECONDS}; HttpOnly; Secure; SameSite=Strict")
}

/// The `Set-Cookie` value that removes it.
pub fn clear() -> String {
    format!("{COOKIE}=; Path=/; Max-Age=0; HttpOnly; Secure; SameSite=Strict")
}

/// Whether a token can be a cookie value as it is (RFC 6265 `cookie-octet`, narrowed to what
/// tokens are made of: `trg_` tokens, and base64url JWTs).
pub fn cookie_safe(token: &str) -> bool {
    !token.is_empty()
        && token.len() <= COOKIE_TOKEN_MAX_BYTES
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b'+' | b'/' | b'='))
}

/// A form post must come from one of this registry's own pages: its `Origin` is
/// `https://HOST` for the `Host` it was sent to (or the registry's configured hostname).
/// Without the check another site could post its own token into a visitor's browser (login
/// CSRF) or sign them out. Browsers send `Origin` with every POST; a request without one is
/// not from a browser form and is refused too.
pub fn same_origin(origin: Option<&str>, host: Option<&str>, hostname: Option<&str>) -> Result<(), Error> {
    let refused = |why: String| Err(Error::CrossSite(why));
    let Some(origin) = origin else {
        return refused("a form post needs an Origin header (browsers send one)".into());
    };
    let Some(authority) = origin.strip_prefix("https://") else {
        return refused("forms are posted from this registry's own https:// pages only".into());
    };
    if [host, hostname].into_iter().flatten().any(|h| h.eq_ignore_ascii_case(authority)) {
        Ok(())
    } else {
        refused("forms are posted from this registry's own pages only".into())
    }
}

/// The `token` field of an `application/x-www-form-urlencoded` body, decoded and trimmed.
pub fn form_token(body: &[u8]) -> Result<String, Error> {
    let bad = |why: &str| Error::BadRequest(format!("sign-in form: {why}"));
    if body.len() > FORM_MAX_BYTES {
        return Err(bad(&format!("longer than {FORM_MAX_BYTES} bytes")));
    }
    let body = std::str::from_utf8(body).map_err(|_| bad("not UTF-8"))?;
    let mut token = None;
    for pair in body.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        if name == "token" {
            if token.is_some() {
                return Err(bad("token given twice"));
            }
            token = Some(decode(value).ok_or_else(|| bad("bad % escape or not UTF-8"))?);
        }
    }
    let token = token.map(|t| t.trim().to_string()).filter(|t| !t.is_empty());
    token.ok_or_else(|| bad("paste a token into the field"))
}

/// A form value as text; `None` for a bad escape or bytes that are not UTF-8.
fn decode(value: &str) -> Option<String> {
    crate::percent::decode_text(value, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cookie_is_read_back_and_only_ours() {
        let header = format!("theme=dark; {COOKIE}=trg_abc; other=1");
        assert_eq!(token(Some(&header)), Some("trg_abc"));
        assert_eq!(token(Some("registry-token=trg_abc")), None);
        assert_eq!(token(Some(&format!("{COOKIE}="))), None);
        assert_eq!(token(None), None);
        let kept = keep("trg_abc");
        for attribute in ["HttpOnly", "Secure", "SameSite=Strict", "Path=/"] {
            assert!(kept.contains(attribute) && clear().contains(attribute), "{attribute}");
        }
        assert!(!kept.contains("Domain"), "__Host- cookies carry no Domain");
        assert!(clear().contains("Max-Age=0"));
        assert!(cookie_safe("trg_abc") && cookie_safe("eyJ.a-b_c.d"));
        assert!(!cookie_safe("a;b") && !cookie_safe("a b") && !cookie_safe("a\"b") && !cookie_safe(""));
        assert!(cookie_safe(&"a".repeat(COOKIE_TOKEN_MAX_BYTES)));
        assert!(!cookie_safe(&"a".repeat(COOKIE_TOKEN_MAX_BYTES + 1)));
        assert!(keep(&"a".repeat(COOKIE_TOKEN_MAX_BYTES)).len() < 4096, "a browser keeps the longest cookie");
    }

    #[test]
    fn forms_only_from_this_registrys_pages() {
        let ok = |o, h, n| same_origin(o, h, n).is_ok();
        assert!(ok(Some("https://registry.example.com"), Some("registry.example.com"), None));
        assert!(ok(Some("https://127.0.0.1:8443"), Some("127.0.0.1:8443"), None));
        assert!(ok(Some("https://registry.example.com"), Some("abc.execute-api.aws"), Some("registry.example.com")));
        assert!(!ok(Some("https://evil.example"), Some("registry.example.com"), None));
        assert!(!ok(Some("http://registry.example.com"), Some("registry.example.com"), None));
        assert!(!ok(Some("null"), Some("registry.example.com"), None));
        assert!(!ok(None, Some("registry.example.com"), None));
        assert!(!ok(Some("https://registry.example.com.evil.example"), Some("registry.example.com"), None));
        assert_eq!(same_origin(None, None, None).unwrap_err().status().as_u16(), 403);
    }

    #[test]
    fn the_form_gives_its_token() {
        assert_eq!(form_token(b"token=trg_abc").unwrap(), "trg_abc");
        assert_eq!(form_token(b"token=+trg_a%2Bb%3D+&x=1").unwrap(), "trg_a+b=");
        for bad in [&b"token="[..], b"", b"token=a&token=b", b"token=%zz", b"token=%ff"] {
            assert_eq!(form_token(bad).unwrap_err().status().as_u16(), 400, "{:?}", String::from_utf8_lossy(bad));
        }
        assert!(form_token(&vec![b'a'; FORM_MAX_BYTES + 1]).is_err());
    }
}
