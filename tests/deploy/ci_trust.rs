//! The publishers' CI roles as applied: only the tag jobs of the repositories a publisher
//! lists (infra/tests/deploy/main.tf: `github`, `gitlab`) may assume its role.
//!
//! moto stores a role's trust policy but evaluates none of its Conditions, and its
//! AssumeRoleWithWebIdentity hands out credentials for any token. So this test evaluates each
//! statement as IAM does for a web identity, against the claims of a JWT the local test
//! issuer signs: the statement allows `sts:AssumeRoleWithWebIdentity` to the Federated
//! principal that is the IAM OIDC provider of the token's `iss` (whose audiences hold its
//! `aud`), and every condition holds (within an operator every key, for a key any value; a
//! key the token lacks fails StringEquals and StringLike and passes StringNotLike). moto is
//! asked only what it does check: that the role is there to assume with that token.

use std::process::Command;

use registry::testing::oidc::TestIssuer;
use serde_json::{Map, Value, json};

use super::{NAME, moto::Moto};

const GITHUB: &str = "https://token.actions.githubusercontent.com";
const GITLAB: &str = "https://gitlab.com";
const AUDIENCE: &str = "sts.amazonaws.com";

fn as_list(v: &Value) -> Vec<&str> {
    match v {
        Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
        Value::String(s) => vec![s.as_str()],
        _ => Vec::new(),
    }
}

/// IAM's StringLike: `*` any run of characters (`/` and `:` too), `?` any one.
fn like(pattern: &str, value: &str) -> bool {
    let (p, v): (Vec<char>, Vec<char>) = (pattern.chars().collect(), value.chars().collect());
    let mut reach = vec![false; v.len() + 1];
    reach[0] = true;
    for c in &p {
        let mut next = vec![false; v.len() + 1];
        for i in 0..=v.len() {
            if !reach[i] {
                continue;
            }
            match c {
                '*' => next[i..].iter_mut().for_each(|n| *n = true),
                '?' if i < v.len() => next[i + 1] = true,
                c if i < v.len() && v[i] == *c => next[i + 1] = true,
                _ => {}
            }
        }
        reach = next;
    }
    reach[v.len()]
}

/// Whether `trust` lets a token with `claims` assume the role, given the providers applied.
fn admits(trust: &Value, providers: &[Value], claims: &Map<String, Value>) -> bool {
    let iss = claims["iss"].as_str().unwrap().trim_start_matches("https://");
    let aud = claims["aud"].as_str().unwrap();
    let Some(provider) = providers.iter().find(|p| p["url"].as_str().unwrap().trim_start_matches("https://") == iss)
    else {
        return false;
    };
    if !as_list(&provider["audiences"]).contains(&aud) {
        return false;
    }
    let claim = |key: &str| -> Option<String> {
        let (host, name) = key.rsplit_once(':')?;
        (host == iss).then(|| claims.get(name)?.as_str().map(str::to_string))?
    };
    let holds = |operator: &str, conditions: &Map<String, Value>| {
        conditions.iter().all(|(key, values)| {
            let values = as_list(values);
            match (operator, claim(key)) {
                ("StringEquals", Some(c)) => values.contains(&c.as_str()),
                ("StringLike", Some(c)) => values.iter().any(|p| like(p, &c)),
                ("StringNotLike", Some(c)) => !values.iter().any(|p| like(p, &c)),
                ("StringNotLike", None) => true,
                _ => false,
            }
        })
    };
    let statements = match &trust["Statement"] {
        Value::Array(s) => s.clone(),
        one => vec![one.clone()],
    };
    statements.iter().any(|s| {
        s["Effect"] == "Allow"
            && as_list(&s["Action"]).contains(&"sts:AssumeRoleWithWebIdentity")
            && as_list(&s["Principal"]["Federated"]).contains(&provider["arn"].as_str().unwrap())
            && s["Condition"].as_object().is_none_or(|c| {
                c.iter().all(|(operator, conditions)| conditions.as_object().is_some_and(|m| holds(operator, m)))
            })
    })
}

fn claims(iss: &str, aud: &str, sub: &str) -> Map<String, Value> {
    let now = registry::clock::now_unix();
    let claims = json!({"iss": iss, "aud": aud, "sub": sub, "iat": now, "nbf": now, "exp": now + 600});
    claims.as_object().unwrap().clone()
}

/// moto's AssumeRoleWithWebIdentity with `token`: the assumed role's ARN.
fn assume(moto: &Moto, role_arn: &str, token: &str) -> String {
    let script = "import boto3, sys\n\
                  r = boto3.client('sts').assume_role_with_web_identity(RoleArn=sys.argv[1], \
                  RoleSessionName='tag-job', WebIdentityToken=sys.argv[2])\n\
                  print(r['AssumedRoleUser']['Arn'])";
    let out = moto.aws_env(&mut Command::new(moto.python())).args(["-c", script, role_arn, token]).output().unwrap();
    assert!(out.status.success(), "AssumeRoleWithWebIdentity: {}", support::text(&out));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

pub fn ci_roles_admit_only_the_listed_tags(deployed: &Value, moto: &Moto, role_arns: &Value) {
    let role = format!("role/{NAME}-publish-platform");
    let trust = &deployed["principals"][&role]["trust"];
    let providers = deployed["oidc_providers"].as_array().expect("oidc_providers");
    assert_eq!(providers.len(), 2, "one provider per CI: {providers:?}");
    let admitted = [
        (GITHUB, "repo:acme/terraform-aws-platform:ref:refs/tags/v1.2.0"),
        (GITHUB, "repo:acme-modules/vpc:ref:refs/tags/v0.1.0"),
        (GITLAB, "project_path:acme/platform/network:ref_type:tag:ref:v1.0.0"),
    ];
    let refused = [
        (GITHUB, AUDIENCE, "repo:acme/terraform-aws-platform:ref:refs/heads/main"),
        (GITHUB, AUDIENCE, "repo:acme/terraform-aws-platform:pull_request"),
        (GITHUB, AUDIENCE, "repo:acme/other:ref:refs/tags/v1.0.0"),
        (GITHUB, AUDIENCE, "repo:acme-modules-evil/vpc:ref:refs/tags/v1.0.0"),
        (GITHUB, AUDIENCE, "repo:acme-modules/vpc2:ref:refs/tags/v1.0.0"),
        // An environment, or a customised subject template's free-text claims, named to look
        // like a tag ref: repositories are exact, so none reaches the pattern's tag.
        (GITHUB, AUDIENCE, "repo:acme-modules/vpc:environment:x:ref:refs/tags/v1"),
        (GITHUB, AUDIENCE, "repo:acme-modules/vpc:workflow:x:ref:refs/tags/y"),
        (
            GITHUB,
            AUDIENCE,
            "repo:acme-modules/vpc:job_workflow_ref:acme-modules/vpc/.github/workflows/a:ref:refs/tags/b.yml@refs/heads/main",
        ),
        (GITHUB, "https://registry.example.com", "repo:acme/terraform-aws-platform:ref:refs/tags/v1.2.0"),
        (GITLAB, AUDIENCE, "project_path:acme/platform/network:ref_type:branch:ref:main"),
        (GITLAB, AUDIENCE, "project_path:acme/platform/network-fork:ref_type:tag:ref:v1.0.0"),
        // GitHub's subject from GitLab's issuer (and the reverse) matches no statement.
        (GITLAB, AUDIENCE, "repo:acme/terraform-aws-platform:ref:refs/tags/v1.2.0"),
        (GITHUB, AUDIENCE, "project_path:acme/platform/network:ref_type:tag:ref:v1.0.0"),
    ];
    let role_arn = role_arns["platform"].as_str().expect("publisher_role_arns has the platform publisher");
    for (iss, sub) in admitted {
        let claims = claims(iss, AUDIENCE, sub);
        assert!(admits(trust, providers, &claims), "{sub} from {iss} must be admitted by {trust}");
        let token = TestIssuer::rsa(iss).sign(&claims);
        assert!(assume(moto, role_arn, &token).contains(&format!("{NAME}-publish-platform/")));
    }
    for (iss, aud, sub) in refused {
        assert!(!admits(trust, providers, &claims(iss, aud, sub)), "{sub} from {iss} for {aud} must be refused");
    }
    // The evaluation bites: without its conditions the same statements admit every token.
    let mut bare = trust.clone();
    for s in bare["Statement"].as_array_mut().unwrap() {
        s.as_object_mut().unwrap().remove("Condition");
    }
    assert!(admits(&bare, providers, &claims(GITHUB, AUDIENCE, "repo:acme/other:ref:refs/heads/main")));
    assert!(like("repo:a/*:ref:refs/tags/*", "repo:a/b:ref:refs/tags/v1") && !like("a?c", "ac"));
}
