//! The DER a Sigstore bundle carries (X.509 certificates, RFC 3161 timestamps, SCT lists), read
//! one element at a time. The reader never recurses: a caller descends into a SEQUENCE by making
//! a reader of its contents, so nesting costs the caller's code, not the input's depth. Only the
//! forms DER allows are read (definite lengths, minimal length octets, single-octet tags), every
//! length checked against what is left.

use super::Refused;

pub(crate) const BOOLEAN: u8 = 0x01;
pub(crate) const INTEGER: u8 = 0x02;
pub(crate) const BIT_STRING: u8 = 0x03;
pub(crate) const OCTET_STRING: u8 = 0x04;
pub(crate) const OID: u8 = 0x06;
pub(crate) const UTF8_STRING: u8 = 0x0c;
pub(crate) const UTC_TIME: u8 = 0x17;
pub(crate) const GENERALIZED_TIME: u8 = 0x18;
pub(crate) const SEQUENCE: u8 = 0x30;
pub(crate) const SET: u8 = 0x31;

/// A context-specific tag `[n]`, constructed.
pub(crate) const fn explicit(n: u8) -> u8 {
    0xa0 | n
}

/// A context-specific tag `[n]`, primitive.
pub(crate) const fn implicit(n: u8) -> u8 {
    0x80 | n
}

/// One element: its tag, its contents, and the whole encoding (what a signature covers).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tlv<'a> {
    pub tag: u8,
    pub value: &'a [u8],
    pub raw: &'a [u8],
}

impl<'a> Tlv<'a> {
    /// A reader of this element's contents.
    pub fn contents(&self) -> Der<'a> {
        Der(self.value)
    }
}

/// Elements one after another.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Der<'a>(&'a [u8]);

impl<'a> Der<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Der(bytes)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn peek_tag(&self) -> Option<u8> {
        self.0.first().copied()
    }

    /// The next element, whatever its tag.
    pub fn any(&mut self, what: &str) -> Result<Tlv<'a>, Refused> {
        let bytes = self.0;
        let bad = || Refused::new(format!("{what}: not DER"));
        let (&tag, rest) = bytes.split_first().ok_or_else(bad)?;
        if tag & 0x1f == 0x1f {
            return Err(bad());
        }
        let (&first, rest) = rest.split_first().ok_or_else(bad)?;
        let (len, rest) = if first < 0x80 {
            (usize::from(first), rest)
        } else {
            let count = usize::from(first & 0x7f);
            if count == 0 || count > 4 || rest.len() < count || rest[0] == 0 {
                return Err(bad());
            }
            let len = rest[..count].iter().fold(0usize, |n, &b| (n << 8) | usize::from(b));
            if len < 0x80 {
                return Err(bad());
            }
            (len, &rest[count..])
        };
        if rest.len() < len {
            return Err(bad());
        }
        let header = bytes.len() - rest.len();
        self.0 = &rest[len..];
        Ok(Tlv { tag, value: &rest[..len], raw: &bytes[..header + len] })
    }

    /// The next element, which must have `tag`.
    pub fn element(&mut self, tag: u8, what: &str) -> Result<Tlv<'a>, Refused> {
        let tlv = self.any(what)?;
        if tlv.tag != tag {
            return Err(Refused::new(format!("{what}: unexpected DER tag {:#04x}", tlv.tag)));
        }
        Ok(tlv)
    }

    /// The contents of the next element, which must have `tag`.
    pub fn take(&mut self, tag: u8, what: &str) -> Result<&'a [u8], Refused> {
        Ok(self.element(tag, what)?.value)
    }

    /// A reader of the next element's contents, which must have `tag`.
    pub fn enter(&mut self, tag: u8, what: &str) -> Result<Der<'a>, Refused> {
        Ok(self.element(tag, what)?.contents())
    }

    /// The next element if it has `tag`.
    pub fn optional(&mut self, tag: u8, what: &str) -> Result<Option<Tlv<'a>>, Refused> {
        if self.peek_tag() == Some(tag) { self.element(tag, what).map(Some) } else { Ok(None) }
    }

    /// Nothing may follow.
    pub fn end(&self, what: &str) -> Result<(), Refused> {
        if self.0.is_empty() { Ok(()) } else { Err(Refused::new(format!("{what}: trailing bytes"))) }
    }

    /// A BIT STRING with no unused bits: its bytes.
    pub fn bits(&mut self, what: &str) -> Result<&'a [u8], Refused> {
        match self.take(BIT_STRING, what)? {
            [0, bits @ ..] => Ok(bits),
            _ => Err(Refused::new(format!("{what}: a bit string with unused bits"))),
        }
    }

    /// A non-negative INTEGER that fits in 64 bits.
    pub fn small_uint(&mut self, what: &str) -> Result<u64, Refused> {
        let value = self.take(INTEGER, what)?;
        let digits = match value {
            [0, rest @ ..] => rest,
            [first, ..] if first & 0x80 != 0 => return Err(Refused::new(format!("{what}: negative"))),
            _ => value,
        };
        if value.is_empty() || digits.len() > 8 {
            return Err(Refused::new(format!("{what}: not a small integer")));
        }
        Ok(digits.iter().fold(0u64, |n, &b| (n << 8) | u64::from(b)))
    }

    /// A UTCTime or GeneralizedTime: Unix time in nanoseconds.
    pub fn time(&mut self, what: &str) -> Result<i64, Refused> {
        let tlv = self.any(what)?;
        // ASCII only: a time is digits and a few letters, and slicing it below must not split a
        // character.
        if !tlv.value.is_ascii() {
            return Err(Refused::new(format!("{what}: not a time")));
        }
        let text = std::str::from_utf8(tlv.value).map_err(|_| Refused::new(format!("{what}: not a time")))?;
        let full = match tlv.tag {
            UTC_TIME if text.len() == 13 => {
                let century = if text[..2].parse::<u8>().unwrap_or(99) < 50 { "20" } else { "19" };
                format!("{century}{text}")
            }
            GENERALIZED_TIME => text.to_string(),
            _ => return Err(Refused::new(format!("{what}: not a time"))),
        };
        generalized_time(&full).ok_or_else(|| Refused::new(format!("{what}: not a time: {text:?}")))
    }
}

/// `YYYYMMDDHHMMSS[.fraction]Z` → Unix nanoseconds, saturated past 2262 (RFC 5280's "no
/// expiry", `99991231235959Z`, reads as the latest instant there is).
fn generalized_time(text: &str) -> Option<i64> {
    let text = text.strip_suffix('Z')?;
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    if whole.len() != 14 || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let rfc3339 = format!(
        "{}-{}-{}T{}:{}:{}Z",
        &whole[..4],
        &whole[4..6],
        &whole[6..8],
        &whole[8..10],
        &whole[10..12],
        &whole[12..14]
    );
    let seconds = crate::clock::parse_rfc3339(&rfc3339)?;
    Some(seconds.saturating_mul(1_000_000_000).saturating_add(nanos(fraction)?))
}

/// A decimal fraction of a second (up to nine digits) as nanoseconds.
pub(crate) fn nanos(fraction: &str) -> Option<i64> {
    if fraction.len() > 9 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let padded = format!("{fraction:0<9}");
    padded.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_are_checked_and_minimal() {
        assert!(Der::new(&[0x30, 0x03, 1, 2]).any("x").is_err(), "longer than the input");
        assert!(Der::new(&[0x30, 0x81, 0x05, 1, 2, 3, 4, 5]).any("x").is_err(), "long form for a short length");
        assert!(Der::new(&[0x30, 0x80, 0, 0]).any("x").is_err(), "indefinite length");
        assert!(Der::new(&[0x1f, 0x01, 0x00]).any("x").is_err(), "high tag number");
        let mut der = Der::new(&[0x02, 0x01, 0x05, 0x04, 0x00]);
        assert_eq!(der.small_uint("n").unwrap(), 5);
        assert!(der.take(OCTET_STRING, "o").unwrap().is_empty());
        der.end("x").unwrap();
        assert!(Der::new(&[0x02, 0x01, 0xff]).small_uint("n").is_err(), "negative");
    }

    #[test]
    fn a_time_that_is_not_ascii_is_refused_not_sliced() {
        let utc = [&[UTC_TIME, 13][..], "2\u{e9}010100000Z".as_bytes()].concat();
        assert_eq!(utc.len(), 15);
        assert!(Der::new(&utc).time("t").is_err());
        let no_expiry = [&[GENERALIZED_TIME, 15][..], b"99991231235959Z"].concat();
        assert_eq!(Der::new(&no_expiry).time("t").unwrap(), i64::MAX);
    }

    #[test]
    fn times_read_both_forms() {
        let utc = [&[UTC_TIME, 13][..], b"241204231401Z"].concat();
        assert_eq!(Der::new(&utc).time("t").unwrap(), 1_733_354_041 * 1_000_000_000);
        let generalized = [&[GENERALIZED_TIME, 18][..], b"20241204231401.25Z"].concat();
        assert_eq!(Der::new(&generalized).time("t").unwrap(), 1_733_354_041 * 1_000_000_000 + 250_000_000);
        let bad = [&[UTC_TIME, 13][..], b"241304231401Z"].concat();
        assert!(Der::new(&bad).time("t").is_err());
    }
}
