//! Which signers a namespace accepts, and whether it requires them (`REGISTRY_PROVENANCE`): a
//! JSON list of rules, the first whose namespace glob matches deciding. Each rule has a mode
//! (`off`: bundles ignored; `recorded`: verified when present and shown; `required`: a version
//! without a valid bundle is not served) and the signers it admits: an OIDC issuer, source
//! repository globs, workflow paths and ref globs (tags only), all read from the signing
//! certificate's identity (`Identity`), never from the bundle's unsigned parts. A namespace no
//! rule names is `recorded`, admitting any signer the trust roots vouch for.

use serde::Deserialize;

use super::Identity;
use crate::glob::glob;

/// Most rules, and most signers or patterns in one rule.
const RULES_MAX: usize = 64;
const PATTERNS_MAX: usize = 64;
const PATTERN_MAX_BYTES: usize = 512;

/// What a namespace does with bundles.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Bundles are not read.
    Off,
    /// Verified when present and shown; a version without one is served as before.
    #[default]
    Recorded,
    /// A version without a valid bundle from an admitted signer is not served.
    Required,
}

/// A signer a rule admits: every field must match.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Admitted {
    /// The OIDC issuer, exactly (`https://token.actions.githubusercontent.com`).
    pub issuer: String,
    /// Source repository URI globs (`https://github.com/acme/*`).
    pub repositories: Vec<String>,
    /// Workflow paths in the repository (`.github/workflows/release.yml`); empty: any.
    #[serde(default)]
    pub workflows: Vec<String>,
    /// Ref globs, tags only (`refs/tags/v*`); `refs/tags/*` when left out.
    #[serde(default = "any_tag")]
    pub refs: Vec<String>,
    /// The trust roots whose CAs may vouch for this signer, by name (`public-good`, or a file
    /// key admins added: `github.json`); `public-good` when left out. A root an operator adds
    /// vouches for nobody a rule does not name it for.
    #[serde(default = "public_good")]
    pub trust_roots: Vec<String>,
}

fn any_tag() -> Vec<String> {
    vec!["refs/tags/*".into()]
}

fn public_good() -> Vec<String> {
    vec!["public-good".into()]
}

/// One rule.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// Namespace globs the rule covers.
    pub namespaces: Vec<String>,
    /// What those namespaces do with bundles.
    pub mode: Mode,
    /// Who may sign; empty: any signer the trust roots vouch for.
    #[serde(default)]
    pub signers: Vec<Admitted>,
}

/// Every namespace's rule.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policies(Vec<Rule>);

impl Policies {
    /// `REGISTRY_PROVENANCE`'s value (empty: every namespace `recorded`).
    pub fn parse(text: &str) -> Result<Policies, String> {
        if text.trim().is_empty() {
            return Ok(Policies::default());
        }
        let rules: Vec<Rule> = serde_json::from_str(text).map_err(|e| format!("not a JSON list of rules: {e}"))?;
        if rules.len() > RULES_MAX {
            return Err(format!("more than {RULES_MAX} rules"));
        }
        for rule in &rules {
            check_patterns("namespaces", &rule.namespaces)?;
            if rule.mode == Mode::Required && rule.signers.is_empty() {
                return Err("a required rule without signers: anyone can make a bundle public-good Fulcio certifies, so name whose count".into());
            }
            if rule.signers.len() > PATTERNS_MAX {
                return Err(format!("a rule with more than {PATTERNS_MAX} signers"));
            }
            for signer in &rule.signers {
                if !signer.issuer.starts_with("https://") {
                    return Err(format!("issuer {:?} is not an https URL", signer.issuer));
                }
                check_patterns("repositories", &signer.repositories)?;
                check_patterns("refs", &signer.refs)?;
                check_patterns("trust_roots", &signer.trust_roots)?;
                if signer.workflows.len() > PATTERNS_MAX || signer.workflows.iter().any(|w| w.len() > PATTERN_MAX_BYTES)
                {
                    return Err("too many or too long workflows".into());
                }
                if let Some(not_a_tag) = signer.refs.iter().find(|r| !r.starts_with("refs/tags/")) {
                    return Err(format!("ref {not_a_tag:?} is not under refs/tags/: only tags publish versions"));
                }
            }
        }
        Ok(Policies(rules))
    }

    /// A short digest of the rule deciding for `namespace`: what a record of a refusal under it
    /// keeps, so that a changed rule judges again.
    pub fn fingerprint(&self, namespace: &str) -> String {
        use sha2::Digest;
        let rule = self.0.iter().find(|r| r.namespaces.iter().any(|p| glob(p, namespace)));
        hex::encode(&sha2::Sha256::digest(format!("{rule:?}"))[..6])
    }

    /// The rule deciding for `namespace`: its mode and whom it admits.
    pub fn for_namespace(&self, namespace: &str) -> (Mode, &[Admitted]) {
        match self.0.iter().find(|r| r.namespaces.iter().any(|p| glob(p, namespace))) {
            Some(rule) => (rule.mode, &rule.signers),
            None => (Mode::Recorded, &[]),
        }
    }
}

fn check_patterns(what: &str, patterns: &[String]) -> Result<(), String> {
    if patterns.is_empty() {
        return Err(format!("a rule with no {what}"));
    }
    if patterns.len() > PATTERNS_MAX || patterns.iter().any(|p| p.is_empty() || p.len() > PATTERN_MAX_BYTES) {
        return Err(format!("{what}: too many, empty or too long"));
    }
    Ok(())
}

/// Whether `signers` admit `identity`, vouched for by the trust root named `trust_root`: `Ok`
/// when the list is empty or one matches, else why not, naming what the certificate says.
pub fn admits(signers: &[Admitted], identity: &Identity, trust_root: &str) -> Result<(), String> {
    if signers.is_empty() || signers.iter().any(|s| s.matches(identity, trust_root)) {
        return Ok(());
    }
    Err(format!(
        "signed by {:?} (issuer {:?}, repository {:?}, ref {:?}, trust root {trust_root:?}), which the namespace's provenance policy does not admit",
        identity.subject,
        identity.issuer,
        identity.repository.as_deref().unwrap_or("none"),
        identity.git_ref.as_deref().unwrap_or("none"),
    ))
}

impl Admitted {
    fn matches(&self, identity: &Identity, trust_root: &str) -> bool {
        let Some(repository) = identity.repository.as_deref() else { return false };
        let Some(git_ref) = identity.git_ref.as_deref() else { return false };
        self.trust_roots.iter().any(|r| r == trust_root)
            && identity.issuer == self.issuer
            && self.repositories.iter().any(|p| glob(p, repository))
            && self.refs.iter().any(|p| glob(p, git_ref))
            && (self.workflows.is_empty()
                || workflow_path(identity, repository).is_some_and(|w| self.workflows.iter().any(|p| p == w)))
    }
}

/// The workflow's path in its repository, from the build config URI
/// (`https://github.com/acme/net/.github/workflows/release.yml@refs/tags/v1`), which must
/// name the source repository.
pub fn workflow_path<'a>(identity: &'a Identity, repository: &str) -> Option<&'a str> {
    let uri = identity.workflow.as_deref()?;
    let path = uri.strip_prefix(repository)?.strip_prefix('/')?;
    let (path, _at) = path.rsplit_once('@')?;
    Some(path.trim_start_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn github(repository: &str, git_ref: &str, workflow: &str) -> Identity {
        Identity {
            subject: format!("https://github.com/{repository}/{workflow}@{git_ref}"),
            issuer: "https://token.actions.githubusercontent.com".into(),
            repository: Some(format!("https://github.com/{repository}")),
            git_ref: Some(git_ref.into()),
            workflow: Some(format!("https://github.com/{repository}/{workflow}@{git_ref}")),
            ..Identity::default()
        }
    }

    const RULES: &str = r#"[
        {"namespaces": ["acme"], "mode": "required", "signers": [{
            "issuer": "https://token.actions.githubusercontent.com",
            "repositories": ["https://github.com/acme/terraform-*"],
            "workflows": [".github/workflows/release.yml"],
            "refs": ["refs/tags/v*"]}]},
        {"namespaces": ["legacy*"], "mode": "off"}
    ]"#;

    #[test]
    fn the_first_matching_rule_decides_and_the_rest_are_recorded() {
        let policies = Policies::parse(RULES).unwrap();
        assert_eq!(policies.for_namespace("acme").0, Mode::Required);
        assert_eq!(policies.for_namespace("legacy-net").0, Mode::Off);
        assert_eq!(policies.for_namespace("other"), (Mode::Recorded, &[][..]));
        assert_eq!(Policies::parse("").unwrap().for_namespace("acme").0, Mode::Recorded);
    }

    #[test]
    fn only_the_admitted_repository_workflow_and_tag_pass() {
        let policies = Policies::parse(RULES).unwrap();
        let (_, signers) = policies.for_namespace("acme");
        let ok = github("acme/terraform-network", "refs/tags/v1.2.0", ".github/workflows/release.yml");
        assert_eq!(admits(signers, &ok, "public-good"), Ok(()));
        assert!(admits(signers, &ok, "private.json").is_err(), "a root the rule does not name vouches for nobody");
        for (why, bad) in [
            (
                "another repository",
                github("evil/terraform-network", "refs/tags/v1.2.0", ".github/workflows/release.yml"),
            ),
            ("a branch", github("acme/terraform-network", "refs/heads/main", ".github/workflows/release.yml")),
            ("another workflow", github("acme/terraform-network", "refs/tags/v1.2.0", ".github/workflows/other.yml")),
            ("another issuer", Identity { issuer: "https://gitlab.com".into(), ..ok.clone() }),
            ("no repository", Identity { repository: None, ..ok.clone() }),
            (
                "a workflow of another repository",
                Identity {
                    workflow: Some("https://github.com/evil/x/.github/workflows/release.yml@refs/tags/v1".into()),
                    ..ok.clone()
                },
            ),
        ] {
            assert!(admits(signers, &bad, "public-good").is_err(), "{why} admitted");
        }
    }

    #[test]
    fn bad_rules_are_refused_with_a_reason() {
        for (bad, says) in [
            ("{}", "JSON list"),
            (r#"[{"namespaces": [], "mode": "required"}]"#, "no namespaces"),
            (r#"[{"namespaces": ["a"], "mode": "required"}]"#, "without signers"),
            (r#"[{"namespaces": ["a"], "mode": "sometimes"}]"#, "JSON list"),
            (
                r#"[{"namespaces": ["a"], "mode": "required", "signers": [{"issuer": "http://x", "repositories": ["r"]}]}]"#,
                "https",
            ),
            (
                r#"[{"namespaces": ["a"], "mode": "required", "signers": [{"issuer": "https://x", "repositories": ["r"], "refs": ["refs/heads/main"]}]}]"#,
                "refs/tags/",
            ),
            (r#"[{"namespaces": ["a"], "mode": "recorded", "extra": 1}]"#, "JSON list"),
        ] {
            let error = Policies::parse(bad).unwrap_err();
            assert!(error.contains(says), "{bad}: {error}");
        }
    }

    #[test]
    fn a_gitlab_workflow_path_is_read_past_its_double_slash() {
        let identity = Identity {
            workflow: Some("https://gitlab.com/acme/net//.gitlab-ci.yml@refs/tags/v1.0.0".into()),
            ..Identity::default()
        };
        assert_eq!(workflow_path(&identity, "https://gitlab.com/acme/net"), Some(".gitlab-ci.yml"));
    }
}
