//! Any bytes as the OpenID Connect configuration (`REGISTRY_OIDC_ISSUERS`), a token's claims
//! and a bearer token. Reading them must never panic, and what a token is granted must come
//! from the rules alone: every scope is a rule's scope as written, or a rule's scope with
//! `{value}` replaced by one of the token's claim values that is a plain name (no glob
//! character, no `/`), so no claim value can widen a grant.
//!
//! Input: two parts each led by its length (u16, little-endian), then the token.
#![no_main]

use libfuzzer_sys::fuzz_target;
use registry::auth::oidc::{grant, parse_issuers, unverified_issuer};
use serde_json::{Map, Value};

fn plain(v: &str) -> bool {
    !v.is_empty() && v.len() <= 64 && v.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

fuzz_target!(|data: &[u8]| {
    let ([config, claims], token) = registry::invariants::length_prefixed::<2>(data);
    let token = String::from_utf8_lossy(token);
    let _ = unverified_issuer(&token);
    let _ = registry::auth::bearer(&token);

    let Ok(issuers) = parse_issuers(&String::from_utf8_lossy(config)) else { return };
    let Ok(claims) = serde_json::from_slice::<Map<String, Value>>(claims) else { return };
    let values: Vec<&str> = claims
        .values()
        .flat_map(|v| match v {
            Value::String(s) => vec![s.as_str()],
            Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        })
        .filter(|v| plain(v))
        .collect();
    for issuer in &issuers {
        let record = grant(issuer, &claims);
        let written = |scope: &str, pick: fn(&registry::auth::oidc::Rule) -> &Vec<String>| {
            issuer.rules.iter().flat_map(pick).any(|t| {
                t == scope || (t.contains("{value}") && values.iter().any(|v| t.replace("{value}", v) == scope))
            })
        };
        for scope in &record.modules {
            assert!(written(scope, |r| &r.modules), "module scope {scope:?} not from the rules");
        }
        for scope in &record.providers {
            assert!(written(scope, |r| &r.providers), "provider scope {scope:?} not from the rules");
        }
    }
});
