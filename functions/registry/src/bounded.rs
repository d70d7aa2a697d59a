//! One byte budget every part of an answer draws from, each part measured as it will be
//! serialised (JSON, string escapes included), so that a bound holds for the whole answer in
//! every channel it has (an MCP result's text and its structured JSON, the details API's body),
//! whatever the publisher's text holds: a bound on one field or one channel is no bound on the
//! answer.

/// Bytes left for an answer's parts.
#[derive(Debug, Clone)]
pub struct Budget {
    left: usize,
    full: bool,
}

impl Budget {
    /// A budget of `bytes`.
    pub fn new(bytes: usize) -> Budget {
        Budget { left: bytes, full: false }
    }

    /// Take `bytes` if that many are left, and say whether they were. Once a part is refused
    /// the answer is full and every later part is refused too, however small, so what an
    /// answer shows of each list is where it stopped, never a list with holes.
    pub fn take(&mut self, bytes: usize) -> bool {
        if self.full || bytes > self.left {
            self.full = true;
            return false;
        }
        self.left -= bytes;
        true
    }

    /// Whether a part was refused.
    pub fn full(&self) -> bool {
        self.full
    }
}

/// The bytes `value` takes serialised as compact JSON.
pub fn json_len(value: &serde_json::Value) -> usize {
    let mut counter = Counter(0);
    match serde_json::to_writer(&mut counter, value) {
        Ok(()) => counter.0,
        Err(_) => usize::MAX,
    }
}

/// Counts what is written to it.
struct Counter(usize);

impl std::io::Write for Counter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0 += bytes.len();
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The bytes `text` takes as a JSON string, its quotes and escapes included (a control
/// character is six: `\u0001`).
pub fn string_len(text: &str) -> usize {
    2 + text
        .chars()
        .map(|c| match c {
            '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
            c if u32::from(c) < 0x20 => 6,
            c => c.len_utf8(),
        })
        .sum::<usize>()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Measured as serde_json writes them.
    #[test]
    fn lengths_are_what_serde_json_writes() {
        for text in ["", "plain", "quote \" and \\ and \n\t\r", "\u{1}\u{1f}\u{7f}", "é日本語 🦀"] {
            assert_eq!(string_len(text), serde_json::to_string(text).unwrap().len(), "{text:?}");
        }
        let value = serde_json::json!({"a": [1, "b\u{1}", {"c": null}]});
        assert_eq!(json_len(&value), serde_json::to_vec(&value).unwrap().len());
    }

    /// What does not fit is refused, and everything after it.
    #[test]
    fn a_full_budget_refuses_every_later_part() {
        let mut budget = Budget::new(10);
        assert!(budget.take(6));
        assert!(!budget.take(5));
        assert!(!budget.take(1), "full: a smaller part after a refused one is refused too");
        assert!(budget.full());
    }
}
