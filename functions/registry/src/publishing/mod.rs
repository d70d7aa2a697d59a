//! Publishing from a module's source (`make publish`): its archive packed deterministically
//! (`pack.rs`, with what `.terraformignore` leaves out: `ignore.rs`), the version a git tag
//! names, and the checks the indexer would make, run before anything is uploaded
//! (`check.rs`: the archive checks, the docs, the SemVer judgment), against what the registry
//! serves, read through it as the CLI reads it (`remote.rs`). A provider release is a
//! goreleaser `dist/` checked the same way (`release.rs`: `make publish-provider`). The upload
//! itself, and waiting for the indexer's answer, are the command's (`registry-local publish`).

pub mod check;
pub mod ignore;
pub mod pack;
pub mod release;
#[cfg(feature = "aws")]
pub mod remote;

use crate::index::Verdict;

/// The version a git tag names: `v1.2.0` or `1.2.0` (canonical SemVer, as the registry
/// serves it); `None` for any other tag.
pub fn version_of_tag(tag: &str) -> Option<semver::Version> {
    let raw = tag.strip_prefix('v').unwrap_or(tag);
    crate::address::parse_version(raw).ok().filter(|v| v.to_string() == raw)
}

/// What the judgment says, as lines to print: the interface changes since the version before
/// (breaking ones marked), then the verdict.
pub fn describe(judged: &check::Judged) -> Vec<String> {
    let mut lines = Vec::new();
    match &judged.since {
        None => lines.push("interface: nothing published before it to compare with".to_string()),
        Some(c) if c.changes.is_empty() && c.more == 0 => {
            lines.push(format!("interface: unchanged since {}", c.from));
        }
        Some(c) => {
            lines.push(format!("interface changes since {}:", c.from));
            for change in &c.changes {
                let mark = if change.breaking.is_some() { "BREAKING " } else { "" };
                lines.push(format!("  {mark}{}", crate::printed::one_line(&change.line(), 300)));
            }
            if c.more > 0 {
                lines.push(format!("  and {} more", c.more));
            }
        }
    }
    match &judged.verdict {
        Verdict::Publish(None) => lines.push("semver: not judged (REGISTRY_SEMVER_POLICY is off for it)".into()),
        Verdict::Publish(Some(j)) => match (&j.against, &j.note) {
            (_, Some(note)) => lines.push(format!("semver: {note}")),
            (None, None) => lines.push("semver: the first release of its major version, nothing to break".into()),
            (Some(against), None) if j.breaking_count() == 0 => {
                lines.push(format!("semver: keeps the interface of {against}"));
            }
            (Some(against), None) => lines.push(format!(
                "semver: WARNING: {} breaking change(s) since {against}; published anyway (the policy is warn)",
                j.breaking_count()
            )),
        },
        Verdict::Refuse(_) => lines.push("semver: refused (below)".into()),
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_names_a_version_with_or_without_its_v() {
        assert_eq!(version_of_tag("v1.2.0"), Some(semver::Version::new(1, 2, 0)));
        assert_eq!(version_of_tag("1.2.0"), Some(semver::Version::new(1, 2, 0)));
        assert_eq!(version_of_tag("v1.2.0-rc.1").map(|v| v.to_string()).as_deref(), Some("1.2.0-rc.1"));
        for not in ["release-1", "v1.2", "vv1.2.0", "1.2.0/x", "01.2.0", ""] {
            assert_eq!(version_of_tag(not), None, "{not}");
        }
    }
}
