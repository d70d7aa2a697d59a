//! What parsing a text of HCL will cost, found in one linear pass before hcl-edit parses it.
//! hcl-edit keeps an object's attributes in a `VecMap`, whose every insert compares the new key
//! with each one before it: an object constructor of n attributes costs n²/2 comparisons (one
//! of 150,000 attributes, in a 1.4 MB file, took 300 s). Blocks, tuples, calls and templates
//! parse in linear time. So the object constructors of the text are counted first: outside
//! strings, heredocs and comments, but inside their `${…}` and `%{…}`, where objects parse too.
//! A `{` opens an object where an expression is (after `=`, `(`, an operator…) and a block body
//! where a body item is (after a block's type or label); its keys are counted by their `=` or
//! `:`, which can only count too many (`==`, `? :`), never too few.

/// Key comparisons the parser may make for one file or one type: one object of about 3,160
/// attributes, or many smaller ones; tens of milliseconds.
pub const MAX_KEY_COMPARISONS: u64 = 5_000_000;

/// The object constructors of a text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Objects {
    /// Keys of all of them.
    pub keys: u64,
    /// Keys of the largest.
    pub largest: u64,
    /// The comparisons parsing them costs: n(n-1)/2 for each of n keys.
    pub comparisons: u64,
}

/// What the scan is inside.
#[derive(Debug, Clone, Copy)]
enum Frame {
    /// The file's body or a block's: a `{` after a name or a label opens a block body.
    Body,
    /// `(`, `[`, `${`, `%{`, or an object constructor (`keys` counted).
    Expression { keys: Option<u64> },
    /// A quoted string (a template).
    Quoted,
    /// A heredoc (a template) up to the line that is its marker (`start..end` of the text).
    Heredoc { start: usize, end: usize },
}

/// The object constructors of `text` (HCL: a file's body, or an expression), in one pass.
pub fn objects(text: &str) -> Objects {
    let bytes = text.as_bytes();
    let mut scan = Scan { stack: vec![Frame::Body], out: Objects::default(), previous: b'\n' };
    let mut at = 0;
    while at < bytes.len() {
        at = match scan.stack.last().copied().unwrap_or(Frame::Body) {
            Frame::Quoted => scan.quoted(bytes, at),
            Frame::Heredoc { start, end } => scan.heredoc(bytes, at, &bytes[start..end]),
            Frame::Body | Frame::Expression { .. } => scan.code(bytes, at),
        };
    }
    // What is still open at the end was parsed (and compared) before the parser gave up.
    while scan.stack.len() > 1 {
        scan.close();
    }
    scan.out
}

struct Scan {
    stack: Vec<Frame>,
    out: Objects,
    /// The last byte of code that is not white space: whether a `{` opens a block body.
    previous: u8,
}

impl Scan {
    /// One step in code; the next position.
    fn code(&mut self, bytes: &[u8], at: usize) -> usize {
        let (byte, next) = (bytes[at], bytes.get(at + 1).copied());
        match (byte, next) {
            (b'#', _) | (b'/', Some(b'/')) => return find(bytes, at, b"\n"),
            (b'/', Some(b'*')) => return find(bytes, at + 2, b"*/") + 2,
            (b'<', Some(b'<')) => {
                if let Some((marker, body)) = heredoc_marker(bytes, at + 2) {
                    self.stack.push(Frame::Heredoc { start: marker.0, end: marker.1 });
                    return body;
                }
            }
            (b'"', _) => self.stack.push(Frame::Quoted),
            (b'(' | b'[', _) => self.stack.push(Frame::Expression { keys: None }),
            (b'{', _) => {
                let in_body = matches!(self.stack.last(), Some(Frame::Body));
                // Not after `-`: an operator there (`a - {…}`), though names may end with one.
                let after_label = self.previous == b'"' || (is_name_byte(self.previous) && self.previous != b'-');
                let frame = if in_body && after_label { Frame::Body } else { Frame::Expression { keys: Some(0) } };
                self.stack.push(frame);
            }
            (b'}' | b')' | b']', _) => self.close(),
            (b'=' | b':', _) => {
                if let Some(Frame::Expression { keys: Some(keys) }) = self.stack.last_mut() {
                    *keys += 1;
                }
            }
            _ => {}
        }
        if !byte.is_ascii_whitespace() {
            self.previous = byte;
        }
        at + 1
    }

    /// One step in a quoted string; the next position.
    fn quoted(&mut self, bytes: &[u8], at: usize) -> usize {
        match (bytes[at], bytes.get(at + 1).copied(), bytes.get(at + 2).copied()) {
            (b'\\', ..) => at + 2,
            (b'"', ..) => {
                self.stack.pop();
                self.previous = b'"';
                at + 1
            }
            _ => self.template(bytes, at),
        }
    }

    /// One step in a template's text: `${` and `%{` open an expression, `$${` and `%%{` are
    /// the text `${` and `%{`.
    fn template(&mut self, bytes: &[u8], at: usize) -> usize {
        match (bytes[at], bytes.get(at + 1).copied(), bytes.get(at + 2).copied()) {
            (b'$', Some(b'$'), Some(b'{')) | (b'%', Some(b'%'), Some(b'{')) => at + 3,
            (b'$' | b'%', Some(b'{'), _) => {
                self.stack.push(Frame::Expression { keys: None });
                at + 2
            }
            _ => at + 1,
        }
    }

    /// One step in a heredoc: its end where a line is spaces, `marker` and no more of a name
    /// (as hcl-edit ends it: `EOT)` ends one), else as a quoted string without escapes.
    fn heredoc(&mut self, bytes: &[u8], at: usize, marker: &[u8]) -> usize {
        if at == 0 || bytes[at - 1] == b'\n' {
            let indent = bytes[at..].iter().take_while(|b| matches!(b, b' ' | b'\t')).count();
            let rest = &bytes[at + indent..];
            if rest.starts_with(marker) && !rest.get(marker.len()).is_some_and(|b| is_name_byte(*b)) {
                self.stack.pop();
                self.previous = b'E';
                return at + indent + marker.len();
            }
        }
        self.template(bytes, at)
    }

    /// The innermost bracket closed; an object's keys counted. The file's body stays.
    fn close(&mut self) {
        if self.stack.len() <= 1 {
            return;
        }
        if let Some(Frame::Expression { keys: Some(n) }) = self.stack.pop() {
            self.out.keys = self.out.keys.saturating_add(n);
            self.out.largest = self.out.largest.max(n);
            let pairs = n.saturating_mul(n.saturating_sub(1)) / 2;
            self.out.comparisons = self.out.comparisons.saturating_add(pairs);
        }
        self.previous = b')';
    }
}

/// Where `needle` starts at or after `from`, else the end.
fn find(bytes: &[u8], from: usize, needle: &[u8]) -> usize {
    let rest = bytes.get(from..).unwrap_or_default();
    rest.windows(needle.len()).position(|w| w == needle).map_or(bytes.len(), |p| from + p)
}

/// A byte of a name: ASCII letters, digits, `_`, `-`, and any byte of a character past ASCII
/// (hcl-edit's names are Unicode's).
fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || !b.is_ascii()
}

/// After `<<`: `-`, a name and the line's end open a heredoc: its marker's span, and where its
/// body starts.
fn heredoc_marker(bytes: &[u8], at: usize) -> Option<((usize, usize), usize)> {
    let start = if bytes.get(at) == Some(&b'-') { at + 1 } else { at };
    let end = start + bytes.get(start..)?.iter().take_while(|b| is_name_byte(**b)).count();
    let first = *bytes.get(start)?;
    if end == start || first.is_ascii_digit() || first == b'-' {
        return None;
    }
    let line_end = find(bytes, end, b"\n");
    bytes[end..line_end].trim_ascii().is_empty().then_some(((start, end), (line_end + 1).min(bytes.len())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(text: &str) -> (u64, u64) {
        let o = objects(text);
        (o.keys, o.largest)
    }

    #[test]
    fn objects_are_counted_and_blocks_are_not() {
        let cases = [
            ("locals {\n  a = 1\n  b = 2\n}\n", (0, 0)),
            ("resource \"x\" \"y\" {\n  tags = { a = 1, b = 2 }\n  lifecycle {\n    c = 3\n  }\n}\n", (2, 2)),
            ("x = {\n  a = { b = 1 }\n  c : 2\n}\n", (3, 2)),
            ("x = [for k, v in { a = 1 } : { (k) = v }]\n", (2, 1)),
            ("x = f({ a = 1 }, \"${ {b = 2, c = 3} }\")\n", (3, 2)),
            ("x = \"{ a = 1 } $${ {b = 2} } \\\" { c = 3 }\"\n", (0, 0)),
            ("# { a = 1 }\n// { b = 2 }\n/* { c = 3 } */\nx = 1\n", (0, 0)),
            ("x = <<-EOT\n  { a = 1 }\n  ${ {b = 2} }\n  EOT\ny = { c = 3 }\n", (2, 1)),
            ("x = f(<<EOT\n\"\nEOTX\nEOT, { a = 1 })\ny = \"\"\n", (1, 1)),
            ("x = <<\u{c9}OT\n\"\n\u{c9}OT\ny = { a = 1 }\n", (1, 1)),
            ("x = \"$%{ if { a = 1 } }%{ endif }\"\n", (1, 1)),
            ("x = 1 - { a = 1 }\nresource-type {\n  b = 2\n}\n", (1, 1)),
            ("x = { a = 1, b = 2", (2, 2)),
            ("object({ a = string, b = optional(number, 1) })", (2, 2)),
        ];
        for (text, expected) in cases {
            assert_eq!(keys(text), expected, "{text}");
        }
        let o = objects("x = { a = 1, b = 2, c = 3 }\ny = { d = 4 }\n");
        assert_eq!(o.comparisons, 3, "3 for the first, 0 for the second");
    }

    #[test]
    fn any_text_is_scanned_without_a_panic() {
        for text in ["", "{", "}", "\"", "\"${", "<<", "<<EOT", "<<-\n", "/*", "x = <<EOT\n${\n", "\u{e9}{=\u{e9}"] {
            objects(text);
        }
    }
}
