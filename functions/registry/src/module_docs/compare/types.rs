//! Type constraints of variables, as Terraform converts a caller's value to them: whether every
//! value one type accepts, another accepts too. A number or a bool converts to a string; a
//! list, set or tuple to a list or set of a type that accepts each element; an object to a map
//! of a type that accepts each attribute; an object to an object type whose every required
//! attribute it has (attributes the type does not name are dropped, not refused).
//!
//! Comparing two types pairs each part of the old type with at most one part of the new one
//! (an attribute is found by name in the new type's sorted attributes), so it costs the old
//! type's size times a logarithm, however often one `list(object(…))` meets the elements of a
//! tuple. A type of more than `MAX_TYPE_PARTS` parts is not compared at all.

use hcl_edit::expr::{Expression, ObjectKey};

/// Parts (`string`, `list(…)`, each attribute's type) of one type compared at most: far more
/// than a person writes. Beyond it the change is not judged (never called breaking), and
/// reading stops there.
pub const MAX_TYPE_PARTS: usize = 1_000;

/// Deeper than any type a person writes: a bound on the recursion a hostile archive could ask.
const MAX_DEPTH: usize = 32;

/// A type constraint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Type {
    /// `any`, or no type given.
    Any,
    /// `string`.
    String,
    /// `number`.
    Number,
    /// `bool`.
    Bool,
    /// `list(T)`.
    List(Box<Type>),
    /// `set(T)`.
    Set(Box<Type>),
    /// `map(T)`.
    Map(Box<Type>),
    /// `object({…})`.
    Object {
        /// Name, type, whether `optional(…)`: sorted by name, each name once.
        attributes: Vec<(String, Type, bool)>,
        /// How many are not optional.
        required: usize,
    },
    /// `tuple([T, …])`.
    Tuple(Vec<Type>),
}

/// Why a type is not compared.
enum Unread {
    /// Not a type expression this reads.
    Unknown,
    /// More than `MAX_TYPE_PARTS` parts.
    TooLarge,
}

impl Type {
    /// The type written as `text` (`list(object({ a = optional(string) }))`); an absent type is
    /// `any`. Else why it is not compared: not a type expression this reads (a function it
    /// does not know, an attribute named twice), or more than `MAX_TYPE_PARTS` parts.
    pub fn parse(text: Option<&str>) -> Result<Type, String> {
        let Some(text) = text else { return Ok(Type::Any) };
        let unknown = || "a type this registry does not read".to_string();
        let too_large = || format!("a type of more than {MAX_TYPE_PARTS} parts, the most this registry compares");
        // Each attribute is a part: one past the cap is found before hcl-edit parses the
        // objects (in quadratic time), and the parse is bounded by the cap.
        if crate::module_docs::scan::objects(text).keys > MAX_TYPE_PARTS as u64 {
            return Err(too_large());
        }
        let expr = hcl_edit::parser::parse_expr(text).map_err(|_| unknown())?;
        Reader { parts: 0 }.of(&expr, 0).map_err(|why| match why {
            Unread::Unknown => unknown(),
            Unread::TooLarge => too_large(),
        })
    }

    /// Whether every value `old` accepts converts to `self`.
    pub fn accepts(&self, old: &Type) -> bool {
        use Type::*;
        tally();
        match (self, old) {
            (Any, _) => true,
            (_, Any) => false,
            (String, String | Number | Bool) | (Number, Number) | (Bool, Bool) => true,
            (List(n) | Set(n), List(o) | Set(o)) => n.accepts(o),
            (List(n) | Set(n), Tuple(os)) => os.iter().all(|o| n.accepts(o)),
            (Map(n), Map(o)) => n.accepts(o),
            (Map(n), Object { attributes, .. }) => attributes.iter().all(|(_, o, _)| n.accepts(o)),
            (Object { attributes: new, required }, Object { attributes: old, .. }) => {
                object_accepts(new, *required, old)
            }
            (Tuple(ns), Tuple(os)) => ns.len() == os.len() && ns.iter().zip(os).all(|(n, o)| n.accepts(o)),
            _ => false,
        }
    }
}

/// Whether object type `new` (its attributes sorted, `required` of them not optional) accepts
/// every value of `old`: each attribute both name converts, and each one `new` requires is one
/// `old` requires. Walks `old`'s attributes only, each looked up in `new`'s.
fn object_accepts(new: &[(String, Type, bool)], required: usize, old: &[(String, Type, bool)]) -> bool {
    let mut met = 0;
    for (name, o, old_optional) in old {
        tally();
        let Ok(at) = new.binary_search_by(|(n, ..)| n.as_str().cmp(name)) else { continue };
        let (_, n, optional) = &new[at];
        if !n.accepts(o) || (!optional && *old_optional) {
            return false;
        }
        met += usize::from(!optional);
    }
    met == required
}

#[cfg(test)]
thread_local! {
    /// Type parts and attributes a test's comparisons visited.
    pub(super) static VISITS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// One step counted, in tests: the work a comparison does, asserted without a clock.
fn tally() {
    #[cfg(test)]
    VISITS.with(|c| c.set(c.get() + 1));
}

/// Reads one type expression, counting its parts.
struct Reader {
    parts: usize,
}

impl Reader {
    fn of(&mut self, expr: &Expression, depth: usize) -> Result<Type, Unread> {
        self.parts += 1;
        if self.parts > MAX_TYPE_PARTS {
            return Err(Unread::TooLarge);
        }
        if depth > MAX_DEPTH {
            return Err(Unread::Unknown);
        }
        match expr {
            Expression::Parenthesis(p) => self.of(p.inner(), depth + 1),
            Expression::Variable(v) => match v.as_str() {
                "any" => Ok(Type::Any),
                "string" => Ok(Type::String),
                "number" => Ok(Type::Number),
                "bool" => Ok(Type::Bool),
                _ => Err(Unread::Unknown),
            },
            Expression::FuncCall(call) if call.name.namespace.is_empty() => {
                let args: Vec<&Expression> = call.args.iter().collect();
                let inner = |reader: &mut Reader| match args.as_slice() {
                    [arg] => reader.of(arg, depth + 1).map(Box::new),
                    _ => Err(Unread::Unknown),
                };
                match (call.name.name.as_str(), args.as_slice()) {
                    ("list", _) => inner(self).map(Type::List),
                    ("set", _) => inner(self).map(Type::Set),
                    ("map", _) => inner(self).map(Type::Map),
                    ("tuple", [Expression::Array(items)]) => {
                        items.iter().map(|t| self.of(t, depth + 1)).collect::<Result<_, _>>().map(Type::Tuple)
                    }
                    ("object", [Expression::Object(attrs)]) => self.object(attrs, depth + 1),
                    _ => Err(Unread::Unknown),
                }
            }
            _ => Err(Unread::Unknown),
        }
    }

    /// `object({…})`'s attributes, sorted by name; a name given twice is not read.
    fn object(&mut self, attrs: &hcl_edit::expr::Object, depth: usize) -> Result<Type, Unread> {
        let mut attributes = Vec::with_capacity(attrs.len());
        for (key, value) in attrs.iter() {
            let name = match key {
                ObjectKey::Ident(i) => i.as_str().to_string(),
                ObjectKey::Expression(Expression::String(s)) => s.as_str().to_string(),
                ObjectKey::Expression(_) => return Err(Unread::Unknown),
            };
            let (r#type, optional) = self.attribute(value.expr(), depth)?;
            attributes.push((name, r#type, optional));
        }
        attributes.sort_by(|a, b| a.0.cmp(&b.0));
        if attributes.windows(2).any(|w| w[0].0 == w[1].0) {
            return Err(Unread::Unknown);
        }
        let required = attributes.iter().filter(|(.., optional)| !optional).count();
        Ok(Type::Object { attributes, required })
    }

    /// An object attribute's type: `T`, or `optional(T)` / `optional(T, DEFAULT)`.
    fn attribute(&mut self, expr: &Expression, depth: usize) -> Result<(Type, bool), Unread> {
        match expr {
            Expression::FuncCall(call) if call.name.namespace.is_empty() && call.name.name.as_str() == "optional" => {
                let first = call.args.iter().next().ok_or(Unread::Unknown)?;
                if !(1..=2).contains(&call.args.iter().count()) {
                    return Err(Unread::Unknown);
                }
                Ok((self.of(first, depth)?, true))
            }
            other => Ok((self.of(other, depth)?, false)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(text: &str) -> Type {
        Type::parse(Some(text)).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn widening_is_accepted_and_narrowing_is_not() {
        // (old, new, new accepts every value old did)
        let cases = [
            ("string", "string", true),
            ("number", "string", true),
            ("bool", "string", true),
            ("string", "number", false),
            ("string", "any", true),
            ("any", "string", false),
            ("list(string)", "list(any)", true),
            ("list(string)", "set(string)", true),
            ("list(number)", "list(string)", true),
            ("list(string)", "list(number)", false),
            ("map(string)", "map(number)", false),
            ("object({ a = string })", "map(string)", true),
            ("object({ a = string, b = number })", "object({ a = string })", true),
            ("object({ a = string })", "object({ a = string, b = string })", false),
            ("object({ a = string })", "object({ a = string, b = optional(string) })", true),
            ("object({ a = string })", "object({ a = string, b = optional(string, \"x\") })", true),
            ("object({ a = optional(string) })", "object({ a = string })", false),
            ("object({ a = string })", "object({ a = optional(string) })", true),
            ("object({ b = number, a = string })", "object({ a = string, b = string })", true),
            ("object({ b = string, a = string })", "object({ a = string, b = number })", false),
            ("object({ z = string })", "object({ a = optional(string), z = string })", true),
            ("object({ z = string })", "object({ a = string, z = string })", false),
            ("tuple([string, number])", "list(string)", true),
            ("tuple([string, number])", "tuple([string])", false),
            ("list(object({ a = number }))", "list(object({ a = string }))", true),
            ("tuple([object({ a = number }), object({ b = bool })])", "list(object({ a = optional(string) }))", true),
            ("tuple([object({ a = number }), object({ b = bool })])", "list(object({ a = string }))", false),
        ];
        for (old, new, accepted) in cases {
            assert_eq!(t(new).accepts(&t(old)), accepted, "{old} → {new}");
        }
        assert_eq!(Type::parse(None), Ok(Type::Any));
    }

    #[test]
    fn what_is_not_a_type_is_said() {
        let deep = format!("{}string{}", "list(".repeat(40), ")".repeat(40));
        let parens = format!("{}string{}", "(".repeat(40), ")".repeat(40));
        let twice = "object({ a = string, a = number })";
        for text in
            ["strin", "list(string, number)", "object(1)", "var.x", "list(", "optional(string)", &deep, &parens, twice]
        {
            assert_eq!(Type::parse(Some(text)), Err("a type this registry does not read".into()), "{text}");
        }
        let wide = |n: usize| {
            format!("object({{ {} }})", (0..n).map(|i| format!("a{i} = string")).collect::<Vec<_>>().join(", "))
        };
        assert!(Type::parse(Some(&wide(MAX_TYPE_PARTS - 1))).is_ok(), "the object and its attributes: the cap");
        let over = Type::parse(Some(&wide(MAX_TYPE_PARTS)));
        assert_eq!(over, Err("a type of more than 1000 parts, the most this registry compares".into()));
    }
}
