//! Percent-decoding, one way for every caller (request paths and queries, form bodies, S3
//! event keys, the embedded S3's request paths): `%XX` is exactly two hex digits, so `%+1`,
//! which `u8::from_str_radix` alone would take, is malformed like `%zz` or a cut `%2`.

/// `s` with its `%XX` escapes decoded, or `None` if one is malformed. `plus_is_space` for
/// form encoding and S3 event keys, where `+` stands for a space (and `%2B` for a plus).
pub fn decode(s: &str, plus_is_space: bool) -> Option<Vec<u8>> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' if plus_is_space => out.push(b' '),
            b'%' => {
                let hex = bytes.get(i + 1..i + 3).filter(|h| h.iter().all(u8::is_ascii_hexdigit))?;
                out.push(u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    Some(out)
}

/// [`decode`], as UTF-8 text: `None` also when the bytes are not UTF-8.
pub fn decode_text(s: &str, plus_is_space: bool) -> Option<String> {
    String::from_utf8(decode(s, plus_is_space)?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_two_hex_digits_exactly() {
        assert_eq!(decode_text("a%2Fb%2bc", false).as_deref(), Some("a/b+c"));
        assert_eq!(decode_text("a+b%2B", true).as_deref(), Some("a b+"));
        assert_eq!(decode_text("a+b", false).as_deref(), Some("a+b"));
        for bad in ["bad%zz", "cut%2", "%", "%+1", "%-1", "% 1"] {
            assert_eq!(decode(bad, false), None, "{bad}");
        }
        assert_eq!(decode("%ff", false), Some(vec![0xff]));
        assert_eq!(decode_text("%ff", false), None, "not UTF-8");
    }
}
