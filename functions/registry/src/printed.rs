//! Which characters publisher text may hold where a terminal or a page shows it as written:
//! a deprecation's reason, which `terraform init` prints in its warnings. Nothing in it may move
//! the cursor, hide, or change unseen how the text around it reads (Trojan Source, invisible
//! letters): control characters; Unicode's format characters (category Cf: bidirectional
//! overrides and isolates, zero-width characters, the BOM); its default-ignorable code points
//! (variation selectors, Hangul fillers, the combining grapheme joiner, the tag and unassigned
//! ignorable planes), which render as nothing; line and paragraph separators; spaces other than
//! ASCII's, and the blank Braille pattern, which look like a space or nothing. Combining marks
//! pass: many scripts are written with them.
//!
//! The standard library has no query for these categories, and the lists are short: Unicode
//! 16.0's, as ranges.

/// What `c` is, if shown text may not hold it.
pub fn refused(c: char) -> Option<&'static str> {
    let within = |ranges: &[(char, char)]| ranges.iter().any(|(first, last)| (*first..=*last).contains(&c));
    if c.is_control() {
        Some("a control character")
    } else if matches!(c, '\u{2028}' | '\u{2029}') {
        Some("a line or paragraph separator")
    } else if within(&FORMAT) {
        Some("an invisible format character (a bidirectional override or isolate, a zero-width character, …)")
    } else if within(&IGNORABLE) {
        Some("a character that renders as nothing (a variation selector, a Hangul filler, …)")
    } else if within(&SPACES) {
        Some("a space other than ASCII's, or a blank that looks like one")
    } else {
        None
    }
}

/// General category Cf (format).
pub const FORMAT: [(char, char); 21] = [
    ('\u{ad}', '\u{ad}'),
    ('\u{600}', '\u{605}'),
    ('\u{61c}', '\u{61c}'),
    ('\u{6dd}', '\u{6dd}'),
    ('\u{70f}', '\u{70f}'),
    ('\u{890}', '\u{891}'),
    ('\u{8e2}', '\u{8e2}'),
    ('\u{180e}', '\u{180e}'),
    ('\u{200b}', '\u{200f}'),
    ('\u{202a}', '\u{202e}'),
    ('\u{2060}', '\u{2064}'),
    ('\u{2066}', '\u{206f}'),
    ('\u{feff}', '\u{feff}'),
    ('\u{fff9}', '\u{fffb}'),
    ('\u{110bd}', '\u{110bd}'),
    ('\u{110cd}', '\u{110cd}'),
    ('\u{13430}', '\u{1343f}'),
    ('\u{1bca0}', '\u{1bca3}'),
    ('\u{1d173}', '\u{1d17a}'),
    ('\u{e0001}', '\u{e0001}'),
    ('\u{e0020}', '\u{e007f}'),
];

/// Default_Ignorable_Code_Point, less what `FORMAT` has already.
pub const IGNORABLE: [(char, char); 10] = [
    ('\u{34f}', '\u{34f}'),
    ('\u{115f}', '\u{1160}'),
    ('\u{17b4}', '\u{17b5}'),
    ('\u{180b}', '\u{180f}'),
    ('\u{2065}', '\u{2065}'),
    ('\u{3164}', '\u{3164}'),
    ('\u{fe00}', '\u{fe0f}'),
    ('\u{ffa0}', '\u{ffa0}'),
    ('\u{fff0}', '\u{fff8}'),
    ('\u{e0000}', '\u{e0fff}'),
];

/// General category Zs but U+0020, and U+2800 (a Braille cell with no dots).
pub const SPACES: [(char, char); 7] = [
    ('\u{a0}', '\u{a0}'),
    ('\u{1680}', '\u{1680}'),
    ('\u{2000}', '\u{200a}'),
    ('\u{202f}', '\u{202f}'),
    ('\u{205f}', '\u{205f}'),
    ('\u{2800}', '\u{2800}'),
    ('\u{3000}', '\u{3000}'),
];

/// Publisher text as one line of at most `max` characters: every run of whitespace and of
/// characters shown text may not hold (`refused`) one space, the ends trimmed, and past `max`
/// cut with `…`. What the MCP answers show of a description, a type, a default or a name, and
/// the details API of a name, a type, a default or a source, in each of their channels alike.
pub fn one_line(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max * 4 + 4));
    let (mut chars, mut gap) = (0, false);
    for c in text.chars() {
        if c.is_whitespace() || refused(c).is_some() {
            gap = !out.is_empty();
            continue;
        }
        if chars == max {
            out.push('…');
            return out;
        }
        if gap {
            out.push(' ');
            chars += 1;
            gap = false;
            if chars == max {
                out.push('…');
                return out;
            }
        }
        out.push(c);
        chars += 1;
    }
    out
}

/// Publisher text that keeps its lines (a README, a multi-line description) cut to `max`
/// characters (with `…`): what shown text may not hold dropped, but newlines and tabs, so that
/// no character of it is invisible, and none is written as a six-byte `\uXXXX` escape in JSON.
pub fn kept_lines(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max * 4 + 4));
    for (n, c) in text.chars().filter(|c| matches!(c, '\n' | '\t') || refused(*c).is_none()).enumerate() {
        if n == max {
            out.push('…');
            break;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first and last of every range is refused, and so are controls and separators; text
    /// in any script, combining accents and emoji without a variation selector pass.
    #[test]
    fn what_could_read_other_than_written_is_refused() {
        let ends = FORMAT.iter().chain(&IGNORABLE).chain(&SPACES).flat_map(|(first, last)| [*first, *last]);
        for c in ends.chain(['\u{0}', '\u{1b}', '\u{7f}', '\u{85}', '\u{2028}', '\u{2029}']) {
            assert!(refused(c).is_some(), "U+{:04X}", u32::from(c));
        }
        let fine = "CVE-2026-1234: use 2.0.0 — «vite» استخدم שימוש 日本語 ⚠ ✓ é e\u{301} 한글";
        assert_eq!(fine.chars().find(|c| refused(*c).is_some()), None);
    }

    /// A field of controls and blanks is nothing; words keep one space between them; the cut
    /// counts characters, spaces included, and says so.
    #[test]
    fn one_line_leaves_no_gap_and_no_invisible_character() {
        assert_eq!(one_line(&"\u{1}".repeat(500), 10), "");
        assert_eq!(one_line(" a\n\n\u{202e}b \t c\u{200b}", 100), "a b c");
        assert_eq!(one_line("abcdef", 3), "abc…");
        assert_eq!(one_line("ab cd", 3), "ab …");
        assert_eq!(one_line("ab", 2), "ab");
        assert_eq!(kept_lines("a\n\u{1}b\tc", 100), "a\nb\tc");
        assert_eq!(kept_lines("abc", 2), "ab…");
    }
}
