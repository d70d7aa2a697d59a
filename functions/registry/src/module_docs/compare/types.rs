//! Type constraints of variables, as Terraform converts a caller's value to them: whether every
//! value one type accepts, another accepts too. A number or a bool converts to a string; a
//! list, set or tuple to a list or set of a type that accepts each element; an object to a map
//! of a type that accepts each attribute; an object to an object type whose every required
//! attribute it has (attributes the type does not name are dropped, not refused).

use hcl_edit::expr::{Expression, ObjectKey};

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
    /// Attributes: name, type, whether `optional(…)`.
    Object(Vec<(String, Type, bool)>),
    /// `tuple([T, …])`.
    Tuple(Vec<Type>),
}

impl Type {
    /// The type written as `text` (`list(object({ a = optional(string) }))`); an absent type is
    /// `any`. `None` for what is not a type expression this reads.
    pub fn parse(text: Option<&str>) -> Option<Type> {
        match text {
            None => Some(Type::Any),
            Some(text) => of(&hcl_edit::parser::parse_expr(text).ok()?, 0),
        }
    }

    /// Whether every value `old` accepts converts to `self`.
    pub fn accepts(&self, old: &Type) -> bool {
        use Type::*;
        match (self, old) {
            (Any, _) => true,
            (_, Any) => false,
            (String, String | Number | Bool) | (Number, Number) | (Bool, Bool) => true,
            (List(n) | Set(n), List(o) | Set(o)) => n.accepts(o),
            (List(n) | Set(n), Tuple(os)) => os.iter().all(|o| n.accepts(o)),
            (Map(n), Map(o)) => n.accepts(o),
            (Map(n), Object(attrs)) => attrs.iter().all(|(_, o, _)| n.accepts(o)),
            (Object(new), Object(old)) => {
                new.iter().all(|(name, n, optional)| match old.iter().find(|(o, ..)| o == name) {
                    Some((_, o, old_optional)) => n.accepts(o) && (*optional || !old_optional),
                    None => *optional,
                })
            }
            (Tuple(ns), Tuple(os)) => ns.len() == os.len() && ns.iter().zip(os).all(|(n, o)| n.accepts(o)),
            _ => false,
        }
    }
}

/// Deeper than any type a person writes: a bound on the recursion a hostile archive could ask.
const MAX_DEPTH: usize = 32;

fn of(expr: &Expression, depth: usize) -> Option<Type> {
    if depth > MAX_DEPTH {
        return None;
    }
    match expr {
        Expression::Parenthesis(p) => of(p.inner(), depth),
        Expression::Variable(v) => match v.as_str() {
            "any" => Some(Type::Any),
            "string" => Some(Type::String),
            "number" => Some(Type::Number),
            "bool" => Some(Type::Bool),
            _ => None,
        },
        Expression::FuncCall(call) if call.name.namespace.is_empty() => {
            let args: Vec<&Expression> = call.args.iter().collect();
            let inner = || (args.len() == 1).then(|| of(args[0], depth + 1)).flatten().map(Box::new);
            match call.name.name.as_str() {
                "list" => inner().map(Type::List),
                "set" => inner().map(Type::Set),
                "map" => inner().map(Type::Map),
                "tuple" => match args.as_slice() {
                    [Expression::Array(items)] => {
                        items.iter().map(|t| of(t, depth + 1)).collect::<Option<_>>().map(Type::Tuple)
                    }
                    _ => None,
                },
                "object" => match args.as_slice() {
                    [Expression::Object(attrs)] => attrs
                        .iter()
                        .map(|(key, value)| {
                            let name = match key {
                                ObjectKey::Ident(i) => i.as_str().to_string(),
                                ObjectKey::Expression(Expression::String(s)) => s.as_str().to_string(),
                                ObjectKey::Expression(_) => return None,
                            };
                            let (r#type, optional) = attribute(value.expr(), depth + 1)?;
                            Some((name, r#type, optional))
                        })
                        .collect::<Option<_>>()
                        .map(Type::Object),
                    _ => None,
                },
                _ => None,
            }
        }
        _ => None,
    }
}

/// An object attribute's type: `T`, or `optional(T)` / `optional(T, DEFAULT)`.
fn attribute(expr: &Expression, depth: usize) -> Option<(Type, bool)> {
    match expr {
        Expression::FuncCall(call) if call.name.namespace.is_empty() && call.name.name.as_str() == "optional" => {
            let first = call.args.iter().next()?;
            (1..=2).contains(&call.args.iter().count()).then_some(())?;
            Some((of(first, depth)?, true))
        }
        other => Some((of(other, depth)?, false)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(text: &str) -> Type {
        Type::parse(Some(text)).unwrap_or_else(|| panic!("{text}"))
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
            ("tuple([string, number])", "list(string)", true),
            ("tuple([string, number])", "tuple([string])", false),
            ("list(object({ a = number }))", "list(object({ a = string }))", true),
        ];
        for (old, new, accepted) in cases {
            assert_eq!(t(new).accepts(&t(old)), accepted, "{old} → {new}");
        }
        assert_eq!(Type::parse(None), Some(Type::Any));
    }

    #[test]
    fn what_is_not_a_type_is_said() {
        let deep = format!("{}string{}", "list(".repeat(40), ")".repeat(40));
        for text in ["strin", "list(string, number)", "object(1)", "var.x", "list(", "optional(string)", &deep] {
            assert_eq!(Type::parse(Some(text)), None, "{text}");
        }
    }
}
