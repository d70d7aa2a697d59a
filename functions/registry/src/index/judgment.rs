//! SemVer judgment at publish: each new module version's interface compared with the version
//! before it in its major line (`module_docs::compare`), and the namespace's policy applied.
//!
//! The rules, from SemVer 2.0.0:
//! - A version is compared with the highest earlier *release* of the same major version that
//!   is published (§8: within a major version, changes must be backward compatible). The
//!   first release of a major version has nothing to break (§8: a major bump may break).
//! - `0.y.z` is initial development (§4: "anything MAY change at any time"): judged and shown,
//!   never refused.
//! - A pre-release "might not satisfy the intended compatibility requirements" (§9): judged
//!   and shown, never refused, and never the version others are compared with.
//!
//! Versions are judged in ascending order within a pass, each against what is published or
//! accepted before it in that pass, and the judgment is stored in the manifest entry the
//! conditional write commits: two versions uploaded at once end as if published one after the
//! other, the lower first when one pass sees both, never judged against a version that was not
//! published.

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::address::ModuleAddress;
use crate::error::Error;
use crate::layout;
use crate::manifest::{Judgment, ModuleVersion};
use crate::module_docs::ModuleDocs;
use crate::module_docs::compare::{COMPARED_BEFORE, Change, Compared, Comparison};
use crate::storage::Storage;

/// What a namespace does with breaking changes in a minor or patch release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Policy {
    /// Not judged.
    Off,
    /// Published; the breaking changes are recorded and shown.
    #[default]
    Warn,
    /// Refused, with a rejection record naming each breaking change and the version to use.
    Enforce,
}

/// `REGISTRY_SEMVER_POLICY`: a default and per-namespace exceptions, `warn` when unset.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SemverPolicy {
    /// For namespaces not named.
    pub default: Policy,
    /// Namespace → its policy.
    pub namespaces: BTreeMap<String, Policy>,
}

impl SemverPolicy {
    /// `enforce`, or `warn, acme=enforce, sandbox=off`: at most one bare policy (the default)
    /// and `NAMESPACE=POLICY` pairs, comma-separated.
    pub fn parse(text: &str) -> Result<Self, String> {
        let policy = |p: &str| match p.trim() {
            "off" => Ok(Policy::Off),
            "warn" => Ok(Policy::Warn),
            "enforce" => Ok(Policy::Enforce),
            other => Err(format!("{other:?} is not off, warn or enforce")),
        };
        let mut out = SemverPolicy::default();
        let mut default_given = false;
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match part.split_once('=') {
                None if default_given => return Err("more than one default policy".into()),
                None => (out.default, default_given) = (policy(part)?, true),
                Some((namespace, p)) => {
                    let namespace = namespace.trim().to_ascii_lowercase();
                    crate::address::ModuleAddress::parse(&namespace, "n", "s")
                        .map_err(|_| format!("{namespace:?} is not a namespace"))?;
                    if out.namespaces.insert(namespace.clone(), policy(p)?).is_some() {
                        return Err(format!("namespace {namespace:?} is named twice"));
                    }
                }
            }
        }
        Ok(out)
    }

    /// The policy of `namespace`.
    pub fn of(&self, namespace: &str) -> Policy {
        self.namespaces.get(&namespace.to_ascii_lowercase()).copied().unwrap_or(self.default)
    }
}

/// Breaking changes kept in a manifest entry; the comparisons stored with the version's docs
/// keep the changes (`CHANGES_KEPT` of them, breaking ones first, the rest counted).
const KEPT_LINES: usize = 20;

/// Breaking changes a rejection record lists (a hostile archive may have thousands).
const REFUSAL_LINES: usize = 50;

/// A new version's verdict: its judgment, or why it is refused.
#[derive(Debug)]
pub enum Verdict {
    /// Served, with its judgment (`None` under the policy `off`).
    Publish(Option<Judgment>),
    /// Refused, with the rejection record's reason.
    Refuse(String),
}

/// `judge` for an archive not uploaded yet (`publishing`, before anything is written):
/// `published` as the registry serves it, the earlier versions' docs in `fresh` (read from the
/// archives it serves); a version whose docs are not there is not compared, as at publish.
pub async fn judge_unpublished(
    policy: &SemverPolicy,
    module: &ModuleAddress,
    version: &semver::Version,
    docs: &mut ModuleDocs,
    published: &[ModuleVersion],
    fresh: &BTreeMap<String, ModuleDocs>,
) -> Result<Verdict, Error> {
    let nothing_else = crate::storage::MemoryStorage::default();
    judge(&nothing_else, policy, module, version, docs, published, fresh).await
}

/// Judge `version` (its `docs`) of `module` against `published` (the entries accepted so far
/// in this pass, all lower), reading earlier docs from `fresh` (this pass's) or storage. First,
/// whatever the policy, `docs` is compared with the versions before it and the comparisons
/// kept in `docs.compared`, stored with them: the pages and answers that show changes read
/// those, and compare nothing per request.
pub(super) async fn judge<S: Storage>(
    storage: &S,
    policy: &SemverPolicy,
    module: &ModuleAddress,
    version: &semver::Version,
    docs: &mut ModuleDocs,
    published: &[ModuleVersion],
    fresh: &BTreeMap<String, ModuleDocs>,
) -> Result<Verdict, Error> {
    let baseline = baseline(version, published);
    let earlier = Earlier::pick(version, published, baseline);
    let (compared, baseline_warnings) = earlier.compare(storage, module, docs, fresh).await?;
    let found = baseline.and_then(|b| compared.with.iter().find(|c| c.from == b.version)).map(breaks);
    docs.compared = Some(compared);
    let policy = policy.of(&module.namespace);
    if policy == Policy::Off {
        return Ok(Verdict::Publish(None));
    }
    let Some(baseline) = baseline else {
        return Ok(Verdict::Publish(Some(Judgment::default())));
    };
    let against = Some(baseline.version.clone());
    let note = match (&baseline_warnings, unreadable(&docs.warnings)) {
        (_, Some(why)) => Some(format!("not judged: {why}")),
        (None, _) => Some(format!("not judged: the docs of {} are not stored", baseline.version)),
        (Some(old), None) => unreadable(old).map(|why| format!("not judged: {} has {why}", baseline.version)),
    };
    if let Some(note) = note {
        // A new version whose files cannot be read cannot be shown to keep its interface.
        if policy == Policy::Enforce && enforced(version) && unreadable(&docs.warnings).is_some() {
            return Ok(Verdict::Refuse(format!("{note}. Fix the file and upload the archive again")));
        }
        return Ok(Verdict::Publish(Some(Judgment { against, note: Some(note), ..Judgment::default() })));
    }
    let (breaking, count) = found.unwrap_or_default();
    if policy == Policy::Enforce && enforced(version) && count > 0 {
        return Ok(Verdict::Refuse(refusal(version, &baseline.version, &breaking, count)));
    }
    let more = count.saturating_sub(KEPT_LINES as u64);
    let breaking = breaking.into_iter().take(KEPT_LINES).collect();
    Ok(Verdict::Publish(Some(Judgment { against, breaking, more, note: None })))
}

/// Compare `docs` with the versions before it, as `judge` does, without judging: for docs read
/// again for a version published before docs were.
pub(super) async fn compare<S: Storage>(
    storage: &S,
    module: &ModuleAddress,
    version: &semver::Version,
    docs: &mut ModuleDocs,
    published: &[ModuleVersion],
    fresh: &BTreeMap<String, ModuleDocs>,
) -> Result<(), Error> {
    let earlier = Earlier::pick(version, published, baseline(version, published));
    docs.compared = Some(earlier.compare(storage, module, docs, fresh).await?.0);
    Ok(())
}

/// The first warning saying a file was not read (does not parse, too large, not UTF-8): such
/// a file hides part of the interface.
fn unreadable(warnings: &[String]) -> Option<String> {
    warnings.iter().find(|w| w.contains("does not parse") || w.ends_with("not read")).cloned()
}

/// A comparison's breaking changes as lines (as many as a rejection record lists), and how
/// many there are.
fn breaks(comparison: &Comparison) -> (Vec<String>, u64) {
    let breaking = comparison.changes.iter().filter(|c| c.breaking.is_some());
    (breaking.take(REFUSAL_LINES).map(Change::line).collect(), comparison.breaking())
}

/// The versions a new one is compared with at publish, newest first: the `COMPARED_BEFORE`
/// published below it, the version before it (`since`: the highest below, a release unless
/// the new one is a pre-release, as its page shows it) and its baseline, each once.
struct Earlier<'a> {
    since: Option<&'a ModuleVersion>,
    baseline: Option<&'a ModuleVersion>,
    versions: Vec<&'a ModuleVersion>,
}

impl<'a> Earlier<'a> {
    fn pick(version: &semver::Version, published: &'a [ModuleVersion], baseline: Option<&'a ModuleVersion>) -> Self {
        let mut below: Vec<(semver::Version, &ModuleVersion)> = published
            .iter()
            .filter_map(|e| crate::address::parse_version(&e.version).ok().map(|v| (v, e)))
            .filter(|(v, _)| v.cmp_precedence(version).is_lt())
            .collect();
        below.sort_by(|a, b| b.0.cmp_precedence(&a.0));
        let since = below.iter().find(|(v, _)| !version.pre.is_empty() || v.pre.is_empty()).map(|&(_, e)| e);
        let mut versions: Vec<&ModuleVersion> = below.iter().take(COMPARED_BEFORE).map(|&(_, e)| e).collect();
        // Below the ten when not among them: appended, the order stays newest first.
        for extra in [since, baseline].into_iter().flatten() {
            if !versions.iter().any(|e| e.version == extra.version) {
                versions.push(extra);
            }
        }
        Earlier { since, baseline, versions }
    }

    /// `docs` compared with each, their docs read one at a time (from `fresh`, else storage; a
    /// version whose docs are not stored, or were read from other bytes than it serves, is not
    /// compared); and the baseline's docs' warnings, `None` when those were not read.
    async fn compare<S: Storage>(
        &self,
        storage: &S,
        module: &ModuleAddress,
        docs: &ModuleDocs,
        fresh: &BTreeMap<String, ModuleDocs>,
    ) -> Result<(Compared, Option<Vec<String>>), Error> {
        let mut compared = Compared { since: self.since.map(|e| e.version.clone()), with: Vec::new() };
        let mut baseline_warnings = None;
        for entry in &self.versions {
            let stored = match fresh.get(&entry.version) {
                Some(d) => Some(Cow::Borrowed(d)),
                None => read_docs(storage, module, &entry.version).await?.map(Cow::Owned),
            };
            let Some(old) = stored.filter(|d| d.sha256 == entry.sha256) else { continue };
            if self.baseline.is_some_and(|b| b.version == entry.version) {
                baseline_warnings = Some(old.warnings.clone());
            }
            compared.with.push(Comparison::new(&entry.version, &old, docs));
        }
        Ok((compared, baseline_warnings))
    }
}

/// The highest published release below `version` in its major line.
fn baseline<'a>(version: &semver::Version, published: &'a [ModuleVersion]) -> Option<&'a ModuleVersion> {
    published
        .iter()
        .filter_map(|e| crate::address::parse_version(&e.version).ok().map(|v| (v, e)))
        .filter(|(v, _)| v.major == version.major && v.pre.is_empty() && v.cmp_precedence(version).is_lt())
        .max_by(|a, b| a.0.cmp_precedence(&b.0))
        .map(|(_, e)| e)
}

/// Whether `enforce` may refuse `version`: a release of a major version from 1 on.
fn enforced(version: &semver::Version) -> bool {
    version.major >= 1 && version.pre.is_empty()
}

/// The rejection record's reason: each breaking change listed (`count` in all), and the
/// version that says them.
fn refusal(version: &semver::Version, against: &str, breaking: &[String], count: u64) -> String {
    let honest = semver::Version::new(version.major + 1, 0, 0);
    let mut lines: Vec<String> = breaking.iter().take(REFUSAL_LINES).map(|b| format!("- {b}")).collect();
    let listed = lines.len() as u64;
    if count > listed {
        lines.push(format!("- and {} more", count - listed));
    }
    format!(
        "{version} breaks callers of {against} (REGISTRY_SEMVER_POLICY is enforce for this namespace):\n{}\n\
         A release with breaking changes is a new major version: publish this archive as {honest}",
        lines.join("\n")
    )
}

async fn read_docs<S: Storage>(
    storage: &S,
    module: &ModuleAddress,
    version: &str,
) -> Result<Option<ModuleDocs>, Error> {
    let Ok(version) = crate::address::parse_version(version) else { return Ok(None) };
    let Some(object) = storage.get(&layout::module_docs(module, &version)).await? else { return Ok(None) };
    Ok(serde_json::from_slice(&object.bytes).ok())
}

#[cfg(test)]
mod tests;
