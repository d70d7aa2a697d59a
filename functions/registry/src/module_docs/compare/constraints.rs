//! Version constraints as Terraform reads them (`required_version`, a provider's `version`):
//! comma-separated clauses, all of which a version must meet, each `=`, `!=`, `>`, `>=`, `<`,
//! `<=` or `~>` and a version of one to three numbers. `~>` is hashicorp/go-version's: the
//! rightmost number given may grow (`~> 1.2` is `>= 1.2.0, < 2.0.0`; `~> 1.2.3` is
//! `>= 1.2.3, < 1.3.0`; `~> 1` is `>= 1.0.0`).
//!
//! Two constraints are compared on releases only: which releases one allows that the other
//! does not. A constraint is read into what its clauses say together: its highest lower
//! bound, its lowest upper bound, the releases it pins (`=`) and those it excludes (`!=`), so
//! whether it allows a release is a few comparisons and one lookup, however many clauses it
//! has. Its verdict changes only at one of those releases or at the release right after it,
//! so testing each of them, of both constraints, and 0.0.0, each once and in order, finds the
//! lowest release one allows and the other does not: n log n in the clauses. A constraint of
//! more than `MAX_CLAUSES` clauses is not compared at all.

use std::collections::BTreeSet;

/// Clauses of one constraint compared at most: far more than a person writes
/// (`>= 1.2, < 2.0, != 1.5.0`). Beyond it the change is not judged (never called breaking),
/// and reading stops there.
pub const MAX_CLAUSES: usize = 1_000;

/// A release version: major, minor, patch.
type Release = (u64, u64, u64);

/// A bound: its release, and whether that release is allowed itself (`>=`, `<=`).
type Bound = (Release, bool);

/// A parsed constraint: what its clauses allow together.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Constraint {
    /// The highest lower bound (`>`, `>=`, `~>`), if any.
    lower: Option<Bound>,
    /// The lowest upper bound (`<`, `<=`, `~>`), if any.
    upper: Option<Bound>,
    /// `=`: every release pinned; two different ones allow nothing.
    pinned: BTreeSet<Release>,
    /// `!=`.
    excluded: BTreeSet<Release>,
}

impl Constraint {
    /// The constraint, or why it is not compared: a pre-release, a fourth number, an unknown
    /// operator, more than `MAX_CLAUSES` clauses. The empty text allows every version.
    pub fn parse(text: &str) -> Result<Constraint, String> {
        let mut out = Constraint::default();
        for (n, clause) in text.split(',').map(str::trim).filter(|c| !c.is_empty()).enumerate() {
            if n == MAX_CLAUSES {
                return Err(format!("more than {MAX_CLAUSES} clauses, the most this registry compares"));
            }
            out.add(clause).ok_or_else(|| "a constraint this registry does not compare".to_string())?;
        }
        Ok(out)
    }

    /// One clause added; `None` when it is not one this reads.
    fn add(&mut self, clause: &str) -> Option<()> {
        let at = clause.find(|c: char| c.is_ascii_digit() || c == 'v').unwrap_or(clause.len());
        let (op, version) = (clause[..at].trim(), clause[at..].trim().trim_start_matches('v'));
        let numbers: Vec<u64> = version.split('.').map(|n| n.parse().ok()).collect::<Option<_>>()?;
        if numbers.is_empty() || numbers.len() > 3 {
            return None;
        }
        let release = (numbers[0], *numbers.get(1).unwrap_or(&0), *numbers.get(2).unwrap_or(&0));
        match op {
            "" | "=" => {
                self.pinned.insert(release);
            }
            "!=" => {
                self.excluded.insert(release);
            }
            ">" => self.at_least((release, false)),
            ">=" => self.at_least((release, true)),
            "<" => self.below((release, false)),
            "<=" => self.below((release, true)),
            "~>" => {
                self.at_least((release, true));
                match numbers.len() {
                    2 => self.below(((release.0.checked_add(1)?, 0, 0), false)),
                    3 => self.below(((release.0, release.1.checked_add(1)?, 0), false)),
                    _ => {}
                }
            }
            _ => return None,
        }
        Some(())
    }

    /// Another lower bound: the higher one holds (at one release, the one that excludes it).
    fn at_least(&mut self, bound: Bound) {
        let tighter = |(r, inclusive): Bound, (kept, _): Bound| r > kept || (r == kept && !inclusive);
        if self.lower.is_none_or(|kept| tighter(bound, kept)) {
            self.lower = Some(bound);
        }
    }

    /// Another upper bound: the lower one holds.
    fn below(&mut self, bound: Bound) {
        let tighter = |(r, inclusive): Bound, (kept, _): Bound| r < kept || (r == kept && !inclusive);
        if self.upper.is_none_or(|kept| tighter(bound, kept)) {
            self.upper = Some(bound);
        }
    }

    fn allows(&self, v: Release) -> bool {
        tally();
        let above = self.lower.is_none_or(|(r, inclusive)| v > r || (inclusive && v == r));
        let under = self.upper.is_none_or(|(r, inclusive)| v < r || (inclusive && v == r));
        let pinned = match self.pinned.len() {
            0 => true,
            1 => self.pinned.contains(&v),
            _ => false,
        };
        above && under && pinned && !self.excluded.contains(&v)
    }

    /// The releases at which its verdict may change (it may again at the release after each).
    fn turns(&self) -> impl Iterator<Item = Release> + '_ {
        let bounds = self.lower.iter().chain(&self.upper).map(|&(r, _)| r);
        bounds.chain(self.pinned.iter().copied()).chain(self.excluded.iter().copied())
    }

    /// The lowest release `self` allows and `other` does not, if there is one.
    pub fn allows_beyond(&self, other: &Constraint) -> Option<String> {
        let turns = self.turns().chain(other.turns());
        let mut candidates: Vec<Release> =
            turns.flat_map(|v| [v, (v.0, v.1, v.2.saturating_add(1))]).chain([(0, 0, 0)]).collect();
        candidates.sort_unstable();
        candidates.dedup();
        let beyond = candidates.into_iter().find(|&v| self.allows(v) && !other.allows(v));
        beyond.map(|(a, b, c)| format!("{a}.{b}.{c}"))
    }
}

#[cfg(test)]
thread_local! {
    /// How many times a test's constraints were asked whether they allow a release.
    pub(super) static CHECKS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// One check counted, in tests: the work a comparison does, asserted without a clock.
fn tally() {
    #[cfg(test)]
    CHECKS.with(|c| c.set(c.get() + 1));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(text: &str) -> Constraint {
        Constraint::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn narrowing_is_found_with_a_witness() {
        // (old, new, a release old allows and new does not)
        let cases = [
            (">= 1.3", ">= 1.5", Some("1.3.0")),
            (">= 1.5", ">= 1.3", None),
            ("~> 5.0", "~> 5.10", Some("5.0.0")),
            ("~> 5.10", "~> 5.0", None),
            ("~> 1.2.3", "~> 1.2", None),
            ("~> 1.2", "~> 1.2.3", Some("1.2.0")),
            ("", ">= 1.0", Some("0.0.0")),
            (">= 1.0", "", None),
            (">= 1.0, < 2.0", ">= 1.0, < 2.0, != 1.5.0", Some("1.5.0")),
            ("= 1.2.3", "1.2.3", None),
            ("1.2.3", "v1.2.3", None),
            ("~> 1", ">= 1.0.0", None),
            ("> 1.0.0", ">= 1.0.1", None),
            ("<= 2.0", "< 2.0", Some("2.0.0")),
            // Bounds that overlap: the tightest of each side holds.
            (">= 1.0, >= 1.2, > 1.2", ">= 1.2.1", None),
            (">= 1.2.1", ">= 1.0, > 1.2", None),
            ("< 3.0, <= 2.0", "< 2.0.1", None),
            ("< 2.0.1", "<= 2.0, < 3.0", None),
            ("1.2.3, 1.2.4", ">= 9.0", None),
            (">= 1.0, 1.2.3", "1.2.3, != 1.2.3", Some("1.2.3")),
        ];
        for (old, new, witness) in cases {
            assert_eq!(c(old).allows_beyond(&c(new)).as_deref(), witness, "{old:?} → {new:?}");
        }
    }

    #[test]
    fn what_is_not_compared_is_said() {
        for text in [">= 1.0.0-beta", "1.2.3.4", "=> 1.0", "~> x", ">= 99999999999999999999999"] {
            assert!(Constraint::parse(text).is_err(), "{text}");
        }
        let many = vec!["!= 1.0.0"; MAX_CLAUSES + 1].join(", ");
        assert_eq!(Constraint::parse(&many), Err("more than 1000 clauses, the most this registry compares".into()));
        assert!(Constraint::parse(&many[..many.len() - 10]).is_ok(), "{MAX_CLAUSES} clauses are compared");
    }
}
