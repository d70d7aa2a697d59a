//! The one query string grammar the registry reads: the parameters of the module list and
//! search routes (`GET /v1/modules`, `GET /v1/modules/search`), as the public registry names
//! them, and `sort=downloads`, the registry's own. Bounded and strict: a known name at most once, each value by its own grammar, the
//! whole string short; anything else is a 400 that says what is allowed. Every other route
//! refuses a query string (`router`).

use crate::address::printable;
use crate::error::Error;

/// Longest raw query string read.
pub const QUERY_MAX_LEN: usize = 512;
/// Longest search text, in bytes once decoded.
pub const SEARCH_MAX_LEN: usize = 128;
/// Modules per page when `limit` is not given (the public registry's default).
pub const LIMIT_DEFAULT: usize = 15;
/// Most modules per page (the public registry's maximum).
pub const LIMIT_MAX: usize = 100;
/// Largest `offset`: far beyond any catalog, and it keeps the number small.
pub const OFFSET_MAX: usize = 1_000_000;

/// What a list or search asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    /// `q`: the search text (search only), trimmed, never empty.
    pub q: Option<String>,
    /// `namespace`: only modules of this namespace.
    pub namespace: Option<String>,
    /// `provider`: only modules of this target system (the public registry's name for it).
    pub provider: Option<String>,
    /// `offset`: modules skipped.
    pub offset: usize,
    /// `limit`: modules on the page.
    pub limit: usize,
    /// `sort=downloads` (the registry's own): most downloaded first (every version's total,
    /// `usage`); otherwise address order, or for a search relevance.
    pub by_downloads: bool,
}

impl Default for Listing {
    fn default() -> Self {
        Listing { q: None, namespace: None, provider: None, offset: 0, limit: LIMIT_DEFAULT, by_downloads: false }
    }
}

impl Listing {
    /// Parse the raw query of a list (`search: false`) or search (`search: true`) request.
    pub fn parse(raw: Option<&str>, search: bool) -> Result<Listing, Error> {
        Listing::parse_as(raw, if search { Text::Required } else { Text::Refused })
    }

    /// Parse the raw query of the web catalog page: a search when `q` has text, the plain list
    /// when it is absent or blank (what a search box submitted empty sends).
    pub fn parse_page(raw: Option<&str>) -> Result<Listing, Error> {
        Listing::parse_as(raw, Text::Optional)
    }

    fn parse_as(raw: Option<&str>, text: Text) -> Result<Listing, Error> {
        let search = text != Text::Refused;
        let raw = raw.unwrap_or_default();
        if raw.len() > QUERY_MAX_LEN {
            return Err(Error::BadRequest(format!("query string longer than {QUERY_MAX_LEN} bytes")));
        }
        let allowed = if search {
            "q, namespace, provider, offset, limit, sort"
        } else {
            "namespace, provider, offset, limit, sort"
        };
        let mut listing = Listing::default();
        let mut seen: Vec<&str> = Vec::new();
        for pair in raw.split('&').filter(|p| !p.is_empty()) {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            if seen.contains(&name) {
                return Err(Error::BadRequest(format!("query parameter {:?} given twice", printable(name))));
            }
            match name {
                "q" if search => {
                    let decoded = decode(value)?;
                    let decoded = decoded.trim();
                    if decoded.is_empty() && text == Text::Required {
                        return Err(Error::BadRequest("q must not be empty".into()));
                    }
                    listing.q = Some(decoded.to_string()).filter(|q| !q.is_empty());
                }
                "namespace" => listing.namespace = Some(segment(name, value)?),
                "provider" => listing.provider = Some(segment(name, value)?),
                "offset" => listing.offset = number(name, value, OFFSET_MAX)?,
                "limit" => {
                    listing.limit = number(name, value, LIMIT_MAX)?;
                    if listing.limit == 0 {
                        return Err(Error::BadRequest(format!("limit must be 1 to {LIMIT_MAX}")));
                    }
                }
                "sort" if value == "downloads" => listing.by_downloads = true,
                "sort" => {
                    return Err(Error::BadRequest(format!(
                        "sort must be downloads (most downloaded first), not {:?}",
                        printable(value)
                    )));
                }
                _ => {
                    return Err(Error::BadRequest(format!(
                        "unknown query parameter {:?}; this route takes {allowed}",
                        printable(name)
                    )));
                }
            }
            seen.push(name);
        }
        if text == Text::Required && listing.q.is_none() {
            return Err(Error::BadRequest("search needs q, the text to look for".into()));
        }
        Ok(listing)
    }

    /// The query string of the page at `offset` with the same filters (for `next_url`),
    /// encoded so that `parse` reads back the same listing.
    pub fn query_at(&self, offset: usize) -> String {
        let mut pairs = Vec::new();
        if let Some(q) = &self.q {
            pairs.push(format!("q={}", encode(q)));
        }
        if let Some(namespace) = &self.namespace {
            pairs.push(format!("namespace={namespace}"));
        }
        if let Some(provider) = &self.provider {
            pairs.push(format!("provider={provider}"));
        }
        if self.by_downloads {
            pairs.push("sort=downloads".to_string());
        }
        pairs.push(format!("limit={}", self.limit));
        pairs.push(format!("offset={offset}"));
        pairs.join("&")
    }
}

/// What a route does with `q`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Text {
    Refused,
    Required,
    Optional,
}

/// A namespace or system filter: the address grammar's characters only (so nothing to decode).
fn segment(name: &str, value: &str) -> Result<String, Error> {
    let ok = !value.is_empty()
        && value.len() <= 64
        && value.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok {
        Ok(value.to_string())
    } else {
        Err(Error::BadRequest(format!(
            "{name} must be 1 to 64 letters, digits, '-' or '_', not {:?}",
            printable(value)
        )))
    }
}

fn number(name: &str, value: &str, max: usize) -> Result<usize, Error> {
    let parsed = (!value.is_empty() && value.len() <= 7 && value.bytes().all(|b| b.is_ascii_digit()))
        .then(|| value.parse::<usize>().ok())
        .flatten()
        .filter(|n| *n <= max);
    parsed.ok_or_else(|| Error::BadRequest(format!("{name} must be a whole number from 0 to {max}")))
}

/// Form decoding (`+` is a space, `%XX` a byte), strictly: a `%` not followed by two hex digits,
/// bytes that are not UTF-8, control characters or more than `SEARCH_MAX_LEN` bytes are refused.
fn decode(value: &str) -> Result<String, Error> {
    let bad = |why: &str| Error::BadRequest(format!("q {why}"));
    let out = crate::percent::decode(value, true).ok_or_else(|| bad("has a bad % escape"))?;
    if out.len() > SEARCH_MAX_LEN {
        return Err(bad(&format!("is longer than {SEARCH_MAX_LEN} bytes")));
    }
    let text = String::from_utf8(out).map_err(|_| bad("is not UTF-8"))?;
    if text.chars().any(char::is_control) {
        return Err(bad("has control characters"));
    }
    Ok(text)
}

/// The inverse of `decode` for what `next_url` carries: unreserved bytes as they are, the rest
/// `%XX`.
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(raw: &str, search: bool) -> Listing {
        Listing::parse(Some(raw), search).unwrap_or_else(|e| panic!("{raw}: {e}"))
    }
    fn bad(raw: &str, search: bool) -> String {
        match Listing::parse(Some(raw), search) {
            Err(e) => {
                assert_eq!(e.status().as_u16(), 400, "{raw}");
                e.to_string()
            }
            Ok(l) => panic!("{raw} accepted as {l:?}"),
        }
    }

    #[test]
    fn the_public_registrys_parameters_and_nothing_else() {
        assert_eq!(Listing::parse(None, false).unwrap(), Listing::default());
        assert_eq!(ok("", false), Listing::default());
        let l = ok("offset=30&limit=10&provider=aws&namespace=acme", false);
        assert_eq!(
            (l.offset, l.limit, l.provider.as_deref(), l.namespace.as_deref()),
            (30, 10, Some("aws"), Some("acme"))
        );
        let l = ok("q=vpc+peering%20%C3%A9&limit=100", true);
        assert_eq!((l.q.as_deref(), l.limit), (Some("vpc peering é"), 100));
        assert!(ok("sort=downloads", false).by_downloads && ok("q=vpc&sort=downloads", true).by_downloads);
        assert_eq!(ok("q=%20x%20", true).q.as_deref(), Some("x"));

        for (raw, search, says) in [
            ("q=vpc", false, "unknown query parameter"),
            ("verified=true", false, "unknown query parameter"),
            ("offset=1&offset=2", false, "given twice"),
            ("limit=0", false, "limit must be 1"),
            ("limit=101", false, "from 0 to 100"),
            ("offset=-1", false, "whole number"),
            ("offset=1e3", false, "whole number"),
            ("offset=99999999999999999999", false, "whole number"),
            ("namespace=../x", false, "namespace must be"),
            ("provider=", false, "provider must be"),
            ("namespace=a%2fb", false, "namespace must be"),
            ("limit=10", true, "search needs q"),
            ("q=", true, "must not be empty"),
            ("q=+++", true, "must not be empty"),
            ("q=%zz", true, "bad % escape"),
            ("q=%4", true, "bad % escape"),
            ("q=%+1", true, "bad % escape"),
            ("q=%ff%fe", true, "not UTF-8"),
            ("q=a%00b", true, "control characters"),
            ("q=a%0Ab", true, "control characters"),
            ("sort=name", false, "sort must be downloads"),
            ("sort=", false, "sort must be downloads"),
            ("sort=downloads&sort=downloads", false, "given twice"),
        ] {
            let message = bad(raw, search);
            assert!(message.contains(says), "{raw}: {message}");
        }
        let long_q = format!("q={}", "a".repeat(SEARCH_MAX_LEN + 1));
        assert!(bad(&long_q, true).contains("longer than"));
        assert!(bad(&"a=1&".repeat(200), false).contains("longer than 512"));
    }

    #[test]
    fn the_catalog_page_searches_only_when_there_is_text() {
        let page = |raw: &str| Listing::parse_page(Some(raw)).unwrap_or_else(|e| panic!("{raw}: {e}"));
        assert_eq!(page(""), Listing::default());
        assert_eq!(page("q="), Listing::default());
        assert_eq!(page("q=+%20+&offset=15"), Listing { offset: 15, ..Listing::default() });
        assert_eq!(page("q=vpc").q.as_deref(), Some("vpc"));
        assert!(Listing::parse_page(Some("q=%zz")).is_err());
        assert!(Listing::parse_page(Some("q=a&q=b")).is_err());
        assert!(Listing::parse_page(Some("x=1")).is_err());
    }

    #[test]
    fn next_pages_read_back_as_the_same_listing() {
        for raw in ["q=vpc+%C3%A9%26x%3D1&namespace=acme&limit=5", "provider=aws&offset=3", "sort=downloads&limit=2"] {
            let search = raw.starts_with("q=");
            let listing = ok(raw, search);
            let next = ok(&listing.query_at(listing.offset + listing.limit), search);
            assert_eq!(next, Listing { offset: listing.offset + listing.limit, ..listing.clone() }, "{raw}");
        }
    }
}
