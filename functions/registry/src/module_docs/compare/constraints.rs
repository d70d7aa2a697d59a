//! Version constraints as Terraform reads them (`required_version`, a provider's `version`):
//! comma-separated clauses, all of which a version must meet, each `=`, `!=`, `>`, `>=`, `<`,
//! `<=` or `~>` and a version of one to three numbers. `~>` is hashicorp/go-version's: the
//! rightmost number given may grow (`~> 1.2` is `>= 1.2.0, < 2.0.0`; `~> 1.2.3` is
//! `>= 1.2.3, < 1.3.0`; `~> 1` is `>= 1.0.0`).
//!
//! Two constraints are compared on releases only: which releases one allows that the other
//! does not. Every clause changes its verdict only at its version, so testing each version
//! named by either constraint, the release right after each, and 0.0.0 finds every difference.

/// A release version: major, minor, patch.
type Release = (u64, u64, u64);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
}

/// A parsed constraint: every clause must hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Constraint(Vec<(Op, Release)>);

impl Constraint {
    /// `None` for what this does not compare: a pre-release, a fourth number, an unknown
    /// operator. The empty text allows every version.
    pub fn parse(text: &str) -> Option<Constraint> {
        let mut clauses = Vec::new();
        for clause in text.split(',').map(str::trim).filter(|c| !c.is_empty()) {
            let at = clause.find(|c: char| c.is_ascii_digit() || c == 'v').unwrap_or(clause.len());
            let (op, version) = (clause[..at].trim(), clause[at..].trim().trim_start_matches('v'));
            let numbers: Vec<u64> = version.split('.').map(|n| n.parse().ok()).collect::<Option<_>>()?;
            if numbers.is_empty() || numbers.len() > 3 {
                return None;
            }
            let given = numbers.len();
            let release = (numbers[0], *numbers.get(1).unwrap_or(&0), *numbers.get(2).unwrap_or(&0));
            match op {
                "" | "=" => clauses.push((Op::Eq, release)),
                "!=" => clauses.push((Op::Ne, release)),
                ">" => clauses.push((Op::Gt, release)),
                ">=" => clauses.push((Op::Ge, release)),
                "<" => clauses.push((Op::Lt, release)),
                "<=" => clauses.push((Op::Le, release)),
                "~>" => {
                    clauses.push((Op::Ge, release));
                    match given {
                        2 => clauses.push((Op::Lt, (release.0.checked_add(1)?, 0, 0))),
                        3 => clauses.push((Op::Lt, (release.0, release.1.checked_add(1)?, 0))),
                        _ => {}
                    }
                }
                _ => return None,
            }
        }
        Some(Constraint(clauses))
    }

    fn allows(&self, v: Release) -> bool {
        self.0.iter().all(|&(op, c)| match op {
            Op::Eq => v == c,
            Op::Ne => v != c,
            Op::Gt => v > c,
            Op::Ge => v >= c,
            Op::Lt => v < c,
            Op::Le => v <= c,
        })
    }

    /// A release `self` allows and `other` does not, if there is one.
    pub fn allows_beyond(&self, other: &Constraint) -> Option<String> {
        let named = self.0.iter().chain(&other.0).map(|&(_, v)| v);
        let candidates = named.flat_map(|v| [v, (v.0, v.1, v.2.saturating_add(1))]).chain([(0, 0, 0)]);
        let mut beyond: Vec<Release> = candidates.filter(|&v| self.allows(v) && !other.allows(v)).collect();
        beyond.sort_unstable();
        beyond.first().map(|(a, b, c)| format!("{a}.{b}.{c}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(text: &str) -> Constraint {
        Constraint::parse(text).unwrap_or_else(|| panic!("{text}"))
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
        ];
        for (old, new, witness) in cases {
            assert_eq!(c(old).allows_beyond(&c(new)).as_deref(), witness, "{old:?} → {new:?}");
        }
    }

    #[test]
    fn what_is_not_compared_is_said() {
        for text in [">= 1.0.0-beta", "1.2.3.4", "=> 1.0", "~> x", ">= 99999999999999999999999"] {
            assert_eq!(Constraint::parse(text), None, "{text}");
        }
    }
}
