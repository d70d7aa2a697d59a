//! What changed between two versions of a module, for people: a version page's deprecation
//! notice and "Changes since" section, and the upgrade page (`/ui/modules/…/VERSION/from/FROM`),
//! breaking changes first, each with why it breaks a caller. Built within the page's byte
//! budget like every section.

use std::fmt::Write;

use crate::address::ModuleAddress;
use crate::manifest::{ModuleManifest, ModuleVersion, newest_first};
use crate::module_docs::compare::Change;
use crate::router::UI_PATH;

use super::html::{self, Frame, PAGE_BYTES_MAX, clip, escape};

/// Changes listed on one page; the API lists them all.
const CHANGES_SHOWN_MAX: usize = 200;
/// Older versions offered as "upgrade from" links.
const UPGRADE_LINKS_MAX: usize = 10;
/// Characters of one change's line.
const LINE_CHARS_MAX: usize = 400;

/// The deprecation notice of a version, if it is deprecated.
pub fn deprecation(entry: &ModuleVersion) -> String {
    let Some(d) = &entry.deprecation else { return String::new() };
    let sentence = d.sentence(&format!("Version {}", entry.version));
    format!(
        "<p class=\"deprecated\" id=\"deprecation\"><strong class=\"badge\">Deprecated</strong> {}</p>\n",
        escape(&clip(&sentence, LINE_CHARS_MAX + 200))
    )
}

/// "Changes since VERSION": each change, breaking ones flagged, and links to the upgrade page
/// from older versions.
pub fn since_section(
    address: &str,
    entry: &ModuleVersion,
    manifest: &ModuleManifest,
    changes: Option<(&str, &[Change])>,
    budget: &mut usize,
) -> String {
    let mut out = String::from("<section id=\"changes\">\n");
    match changes {
        Some((since, list)) => {
            let _ = writeln!(out, "<h2>Changes since {}</h2>", escape(since));
            out.push_str(&judgment_note(entry, since));
            out.push_str(&change_list(list, *budget / 2));
        }
        None => out.push_str("<h2>Changes</h2>\n<p class=\"note\">No earlier version to compare with.</p>\n"),
    }
    out.push_str(&upgrade_links(address, entry, manifest));
    out.push_str("</section>\n");
    *budget = budget.saturating_sub(out.len());
    out
}

/// What the indexer judged at publish, when it differs from what the list shows (another
/// baseline, a note).
fn judgment_note(entry: &ModuleVersion, since: &str) -> String {
    let Some(judged) = &entry.judged else { return String::new() };
    let text = match (&judged.note, judged.against.as_deref()) {
        (Some(note), _) => note.clone(),
        (None, Some(against)) if against != since => {
            format!("Judged at publish against {against}: {} breaking.", judged.breaking_count())
        }
        (None, None) if since != entry.version => "The first release of its major version: it may break.".into(),
        _ => return String::new(),
    };
    format!("<p class=\"note\">{}</p>\n", escape(&clip(&text, LINE_CHARS_MAX)))
}

fn change_list(changes: &[Change], room: usize) -> String {
    if changes.is_empty() {
        return "<p class=\"note\">No change to the interface.</p>\n".into();
    }
    let breaking = changes.iter().filter(|c| c.breaking.is_some()).count();
    let mut out = format!(
        "<p class=\"meta\">{} changes, <span class=\"breaking\">{breaking} breaking</span></p>\n<ul class=\"changes\">\n",
        changes.len()
    );
    let ordered =
        changes.iter().filter(|c| c.breaking.is_some()).chain(changes.iter().filter(|c| c.breaking.is_none()));
    let mut shown = 0;
    for change in ordered.take(CHANGES_SHOWN_MAX) {
        let line = escape(&clip(&change.line(), LINE_CHARS_MAX));
        let item = match change.breaking {
            Some(_) => format!("<li class=\"breaking\"><strong>breaking</strong> {line}</li>\n"),
            None => format!("<li>{line}</li>\n"),
        };
        if out.len() + item.len() > room {
            break;
        }
        out.push_str(&item);
        shown += 1;
    }
    out.push_str("</ul>\n");
    if shown < changes.len() {
        let _ = writeln!(out, "<p class=\"note\">{} more in the API answer.</p>", changes.len() - shown);
    }
    out
}

fn upgrade_links(address: &str, entry: &ModuleVersion, manifest: &ModuleManifest) -> String {
    let mut older: Vec<&str> = manifest
        .versions
        .iter()
        .map(|v| v.version.as_str())
        .filter(|v| newest_first(v, &entry.version).is_gt())
        .collect();
    older.sort_by(|a, b| newest_first(a, b));
    if older.is_empty() {
        return String::new();
    }
    let links: Vec<String> = older
        .iter()
        .take(UPGRADE_LINKS_MAX)
        .map(|v| {
            let href = format!("{UI_PATH}modules/{address}/{}/from/{v}", entry.version);
            format!("<a href=\"{}\">{}</a>", escape(&href), escape(v))
        })
        .collect();
    format!("<p class=\"upgrade\">Upgrade to {} from: {}</p>\n", escape(&entry.version), links.join(" · "))
}

/// The upgrade page: what a caller of `from` meets in `entry`'s version.
pub fn upgrade(
    module: &ModuleAddress,
    entry: &ModuleVersion,
    from: &str,
    changes: Option<&[Change]>,
    signed_in: bool,
) -> String {
    let address = format!("{}/{}/{}", module.namespace, module.name, module.system);
    let page = format!("{UI_PATH}modules/{address}");
    let mut main = format!(
        "<nav class=\"crumbs\"><a href=\"/\">Catalog</a> / <a href=\"{p}\">{a}</a></nav>\n\
         <h1>Upgrading {a} from <a href=\"{p}/{f}\">{f}</a> to <a href=\"{p}/{v}\">{v}</a></h1>\n",
        p = escape(&page),
        a = escape(&address),
        f = escape(from),
        v = escape(&entry.version),
    );
    main.push_str(&deprecation(entry));
    main.push_str("<section id=\"changes\">\n");
    match changes {
        Some(list) => main.push_str(&change_list(list, PAGE_BYTES_MAX / 2)),
        None => main.push_str(
            "<p class=\"note\">The documentation of one of the two versions has not been read yet (the next \
             indexing pass reads it).</p>\n",
        ),
    }
    main.push_str("</section>\n");
    let title = format!("{address} {from} → {}", entry.version);
    html::document(&Frame { title: &title, search: None, signed_in }, &main)
}
