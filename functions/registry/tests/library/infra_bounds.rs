//! Every number infra/ hands a function as `REGISTRY_… = tostring(var.NAME)` is validated by
//! infra with the bounds the function's configuration accepts: a value infra lets through and
//! the code refuses would apply cleanly and then stop every function at its cold start.
//!
//! The bounds are read from each variable's `validation` (`var.NAME >= LOW`, `<= HIGH`, and
//! `floor(var.NAME) == var.NAME` for whole numbers); `Config::from_lookup` must accept LOW and
//! HIGH, and refuse the value just outside each, and a fraction.

use std::collections::BTreeMap;
use std::path::Path;

fn infra(file: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../infra").join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `REGISTRY_X = tostring(var.y)` lines of infra/main.tf: (variable, environment name).
fn numbers_passed() -> BTreeMap<String, String> {
    let mut passed = BTreeMap::new();
    for line in infra("main.tf").lines() {
        let Some((env, value)) = line.trim().split_once('=') else { continue };
        let Some(var) = value.trim().strip_prefix("tostring(var.").and_then(|v| v.strip_suffix(')')) else { continue };
        passed.insert(var.to_string(), env.trim().to_string());
    }
    passed
}

/// The text of `variable "NAME" { … }` in infra/variables.tf.
fn variable_block(variables: &str, name: &str) -> String {
    let start = variables.find(&format!("variable \"{name}\" {{")).unwrap_or_else(|| panic!("no variable {name}"));
    let end = variables[start..].find("\n}\n").map_or(variables.len(), |e| start + e);
    variables[start..end].to_string()
}

/// The bound after `var.NAME OP ` in a condition, if any.
fn bound(block: &str, name: &str, op: &str) -> Option<i64> {
    let at = block.find(&format!("var.{name} {op} "))? + format!("var.{name} {op} ").len();
    let digits: String = block[at..].chars().take_while(|c| c.is_ascii_digit()).collect();
    Some(digits.parse().expect("a whole-number bound"))
}

/// Does the configuration load with `env_name` set to `value` (everything else at defaults)?
fn loads(env_name: &str, value: &str) -> bool {
    registry::Config::from_lookup(|k| match k {
        "REGISTRY_BUCKET" => Some("bucket".into()),
        k if k == env_name => Some(value.to_string()),
        _ => None,
    })
    .is_ok()
}

#[test]
fn every_number_infra_passes_is_validated_with_the_bounds_the_code_accepts() {
    let variables = infra("variables.tf");
    let passed = numbers_passed();
    let numbers: Vec<(&String, &String)> =
        passed.iter().filter(|(var, _)| variable_block(&variables, var).contains("type        = number")).collect();
    assert!(numbers.len() >= 7, "infra/main.tf passes at least seven numbers; found {numbers:?}");
    for (var, env_name) in numbers {
        let block = variable_block(&variables, var);
        assert!(
            block.contains(&format!("floor(var.{var}) == var.{var}")),
            "{var} is passed as {env_name}, which takes whole numbers: its validation must say floor(var.{var}) == var.{var}"
        );
        assert!(!loads(env_name, "1.5"), "{env_name} accepts a fraction");
        let low = bound(&block, var, ">=").unwrap_or_else(|| panic!("{var}: no `var.{var} >= LOW` in its validation"));
        assert!(
            loads(env_name, &low.to_string()),
            "infra lets {var} = {low} through; the code refuses {env_name}={low}"
        );
        if low > 0 {
            assert!(
                !loads(env_name, &(low - 1).to_string()),
                "{var}: the code accepts {}, infra's floor is {low}",
                low - 1
            );
        }
        match bound(&block, var, "<=") {
            Some(high) => {
                assert!(loads(env_name, &high.to_string()), "infra lets {var} = {high} through; the code refuses it");
                assert!(
                    !loads(env_name, &(high + 1).to_string()),
                    "{var}: the code accepts {}, above infra's {high}",
                    high + 1
                );
            }
            None => assert!(
                loads(env_name, &(1u64 << 50).to_string()),
                "{var} has no upper bound in infra, but the code refuses {env_name}={}",
                1u64 << 50
            ),
        }
    }
}
