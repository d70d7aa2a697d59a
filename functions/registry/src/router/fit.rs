//! Whether a request's segments fit a row's path. Each row's path is read once into its parts
//! (the table is static; reading its text on every request cost as much as the rest of routing),
//! and what a path fills is kept in a fixed array: routing allocates no more than it did before
//! the table.

use std::sync::OnceLock;

use super::{Base, ROUTES, RouteDef};

/// More segments than any row's path has: a longer path fits no row.
pub(super) const MAX_SEGMENTS: usize = 8;

/// What a path filled: each placeholder's name and segment, in order.
pub(super) type Filled<'a> = ([(&'static str, &'a str); MAX_SEGMENTS], usize);

/// One part of a row's path.
#[derive(Debug)]
enum Part {
    /// A segment spelled exactly so (`versions`).
    Literal(&'static str),
    /// Any one segment, named (`{version}`).
    Value(&'static str),
    /// A segment ending in a suffix, the rest named (`{version}.json`).
    Suffixed(&'static str, &'static str),
}

/// A row with its path read into parts.
#[derive(Debug)]
pub(super) struct Compiled {
    /// The row.
    pub(super) row: &'static RouteDef,
    /// Its parts; empty for `""` (the base itself) and for a catch-all.
    parts: Vec<Part>,
    /// `{proxy+}`: whatever follows the base, read by the row's own grammar.
    catch_all: bool,
}

impl Compiled {
    fn new(row: &'static RouteDef) -> Self {
        let catch_all = row.path.ends_with("+}");
        let parts = match row.path.is_empty() || catch_all {
            true => Vec::new(),
            false => row
                .path
                .split('/')
                .map(|part| match part.strip_prefix('{').and_then(|p| p.split_once('}')) {
                    Some((name, "")) => Part::Value(name),
                    Some((name, suffix)) => Part::Suffixed(name, suffix),
                    None => Part::Literal(part),
                })
                .collect(),
        };
        Compiled { row, parts, catch_all }
    }

    /// Whether this is a catch-all row.
    pub(super) fn is_catch_all(&self) -> bool {
        self.catch_all
    }

    /// What `segments` fill, if they fit: a literal equal, a `{x}` any segment, a `{x}.json` a
    /// segment of that suffix, a catch-all whatever is there. `""` fits only the base itself
    /// (`bare`).
    pub(super) fn fit<'a>(&self, bare: bool, segments: &[&'a str]) -> Option<Filled<'a>> {
        let mut filled: Filled<'a> = ([("", ""); MAX_SEGMENTS], 0);
        if self.catch_all {
            return Some(filled);
        }
        if self.parts.is_empty() || bare {
            return (self.parts.is_empty() && bare).then_some(filled);
        }
        if self.parts.len() != segments.len() {
            return None;
        }
        for (part, segment) in self.parts.iter().zip(segments) {
            let value = match part {
                Part::Literal(literal) if literal == segment => continue,
                Part::Literal(_) => return None,
                Part::Value(name) => (*name, *segment),
                Part::Suffixed(name, suffix) => (*name, segment.strip_suffix(suffix)?),
            };
            filled.0[filled.1] = value;
            filled.1 += 1;
        }
        Some(filled)
    }
}

/// The rows of `base`, in the table's order, each read into parts once per process.
pub(super) fn rows_of(base: Base) -> &'static [Compiled] {
    static BY_BASE: OnceLock<Vec<Vec<Compiled>>> = OnceLock::new();
    let by_base = BY_BASE.get_or_init(|| {
        Base::ALL.iter().map(|b| ROUTES.iter().filter(|row| row.base == *b).map(Compiled::new).collect()).collect()
    });
    &by_base[base as usize]
}
