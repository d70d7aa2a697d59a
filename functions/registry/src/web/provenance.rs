//! A version's provenance on its page: who built it, from which commit and workflow run, by its
//! verified Sigstore bundle, with links to the repository, the commit and the run. Every value
//! is the signing certificate's, escaped and cut; only `https` URLs become links.

use crate::manifest::ModuleVersion;
use crate::provenance::policy::workflow_path;

use super::html::{clip, escape};

/// Longest value shown.
const VALUE_CHARS_MAX: usize = 200;

/// `<a href>` for an https URL, else the text alone.
fn link(url: &str, text: &str) -> String {
    if url.starts_with("https://") && !url.contains(char::is_whitespace) {
        format!("<a href=\"{}\">{}</a>", escape(url), escape(&clip(text, VALUE_CHARS_MAX)))
    } else {
        escape(&clip(text, VALUE_CHARS_MAX))
    }
}

/// The provenance badge, or nothing for a version without verified provenance.
pub fn badge(entry: &ModuleVersion) -> String {
    let Some(p) = &entry.provenance else { return String::new() };
    let Some(identity) = &p.verified.identity else { return String::new() };
    let mut parts = vec![];
    match identity.repository.as_deref() {
        Some(repository) => {
            // Host and path: the same path on another forge is another repository.
            let name = repository.split_once("://").map_or(repository, |(_, rest)| rest);
            parts.push(format!("Built by {}", link(repository, name)));
            if let Some(commit) = identity.commit.as_deref() {
                let short = commit.get(..12).unwrap_or(commit);
                let url = if commit.chars().all(|c| c.is_ascii_hexdigit()) {
                    format!("{repository}/commit/{commit}")
                } else {
                    String::new()
                };
                parts.push(format!("at commit {}", link(&url, short)));
            }
            if let Some(git_ref) = identity.git_ref.as_deref() {
                parts.push(format!("(<code>{}</code>)", escape(&clip(git_ref, VALUE_CHARS_MAX))));
            }
            if let Some(workflow) = workflow_path(identity, repository) {
                let run = identity.run.as_deref().unwrap_or_default();
                parts.push(format!("by workflow {}", link(run, workflow)));
            }
        }
        None => parts.push(format!("Signed by {}", escape(&clip(&identity.subject, VALUE_CHARS_MAX)))),
    }
    let mut logged = format!("signed {}", escape(super::html::date(&crate::clock::rfc3339(p.verified.signed_at))));
    if let (Some(log), Some(index)) = (&p.verified.log, p.verified.log_index) {
        logged.push_str(&format!(", logged in {} at index {index}", escape(&clip(log, VALUE_CHARS_MAX))));
    }
    // Said first when no rule named who may sign: then anyone a trust root vouches for passes.
    let checked = if p.checked { "" } else { " (no rule checks who signs for this namespace)" };
    format!(
        "<p class=\"provenance\" id=\"provenance\"><strong class=\"badge\">Verified provenance</strong>{checked} {}; {} \
         (issuer {}, trust root {})</p>\n",
        parts.join(" "),
        logged,
        escape(&clip(&identity.issuer, VALUE_CHARS_MAX)),
        escape(&clip(&p.trust_root, VALUE_CHARS_MAX)),
    )
}
