//! What changed between two versions of a module, for people: a version page's deprecation
//! notice and "Changes since" section, and the upgrade page (`/ui/modules/…/VERSION/from/FROM`),
//! breaking changes first, each with why it breaks a caller. Built within the page's byte
//! budget like every section, from the comparisons made once at publish and stored with the
//! version's docs (`index::judgment`): a page compares nothing.

use std::fmt::Write;

use crate::address::ModuleAddress;
use crate::manifest::{ModuleManifest, ModuleVersion};
use crate::module_docs::ModuleDocs;
use crate::module_docs::compare::{CHANGES_KEPT, COMPARED_BEFORE, Change, Compared};
use crate::router::UI_PATH;

use super::html::{self, Frame, PAGE_BYTES_MAX, clip, escape};

/// Changes listed on one page; the API lists those kept at publish, within its own bound.
const CHANGES_SHOWN_MAX: usize = 200;
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
/// from each older version it was compared with at publish (in `docs`).
pub fn since_section(
    address: &str,
    entry: &ModuleVersion,
    manifest: &ModuleManifest,
    docs: Option<&ModuleDocs>,
    changes: Option<(&str, &[Change])>,
    budget: &mut usize,
) -> String {
    let compared = docs.and_then(|d| d.compared.as_ref());
    let mut out = String::from("<section id=\"changes\">\n");
    match changes {
        Some((since, list)) => {
            let _ = writeln!(out, "<h2>Changes since {}</h2>", escape(since));
            out.push_str(&judgment_note(entry, since));
            let stored = compared.and_then(|c| c.with.iter().find(|w| w.from == since));
            let uncounted = stored.map_or((0, 0), |w| (w.more, w.more_breaking));
            out.push_str(&change_list(list, uncounted, *budget / 2, " in the API answer"));
        }
        None => {
            let why = not_compared(docs.is_some(), compared);
            let _ = writeln!(out, "<h2>Changes</h2>\n<p class=\"note\">{}</p>", escape(&why));
        }
    }
    out.push_str(&upgrade_links(address, entry, manifest, compared));
    out.push_str("</section>\n");
    *budget = budget.saturating_sub(out.len());
    out
}

/// Why a version page shows no changes.
fn not_compared(docs_read: bool, compared: Option<&Compared>) -> String {
    match compared.map(|c| c.since.as_deref()) {
        _ if !docs_read => "Not compared yet: the documentation of this version has not been read.".into(),
        None => {
            "Not compared: this version's documentation was stored before versions were compared at publish.".into()
        }
        Some(None) => "No earlier version to compare with.".into(),
        Some(Some(since)) => format!(
            "Not compared with {since}, the version before it when it was published: {since} no longer serves \
             the bytes it was compared with, or its documentation was not read."
        ),
    }
}

/// What the indexer judged at publish, when it differs from what the list shows (another
/// baseline, a note).
fn judgment_note(entry: &ModuleVersion, since: &str) -> String {
    let Some(judged) = &entry.judged else { return String::new() };
    let text = match (&judged.note, judged.against.as_deref()) {
        (Some(note), _) => note.clone(),
        (None, Some(against)) if against != since => match judged.breaking_count() {
            0 => format!("Judged at publish against {against}: no breaking change."),
            n => format!("Judged at publish against {against}: {n} breaking."),
        },
        (None, None) if since != entry.version => "The first release of its major version: it may break.".into(),
        _ => return String::new(),
    };
    format!("<p class=\"note\">{}</p>\n", escape(&clip(&text, LINE_CHARS_MAX)))
}

/// The changes, breaking first, within `room` bytes; `uncounted`: changes (and breaking ones)
/// past those kept at publish; `rest`: where the ones not shown are.
fn change_list(changes: &[Change], uncounted: (u64, u64), room: usize, rest: &str) -> String {
    if changes.is_empty() {
        return "<p class=\"note\">No change to the interface.</p>\n".into();
    }
    let breaking = changes.iter().filter(|c| c.breaking.is_some()).count() as u64 + uncounted.1;
    let mut out = format!(
        "<p class=\"meta\">{}, {}</p>\n<ul class=\"changes\">\n",
        count_changes(changes.len() as u64 + uncounted.0),
        breaking_count(breaking)
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
        let _ = writeln!(out, "<p class=\"note\">{} more{rest}.</p>", changes.len() - shown);
    }
    if uncounted.0 > 0 {
        let _ = writeln!(
            out,
            "<p class=\"note\">{} more ({} breaking) were counted at publish, not kept: a comparison keeps {CHANGES_KEPT}.</p>",
            uncounted.0, uncounted.1
        );
    }
    out
}

/// `1 change`, `3 changes`.
fn count_changes(n: u64) -> String {
    if n == 1 { "1 change".into() } else { format!("{n} changes") }
}

/// How many of the changes break a caller, as HTML: in the alarm colour (`breaking`) only when
/// some do; none is good news, said in words and in a calm colour (`compatible`).
fn breaking_count(n: u64) -> String {
    if n == 0 {
        "<span class=\"compatible\">none breaking</span>".into()
    } else {
        format!("<span class=\"breaking\">{n} breaking</span>")
    }
}

/// Links to the upgrade page from each older version this one was compared with at publish
/// and that still serves the bytes compared, newest first.
fn upgrade_links(
    address: &str,
    entry: &ModuleVersion,
    manifest: &ModuleManifest,
    compared: Option<&Compared>,
) -> String {
    let served = |from: &str| manifest.versions.iter().find(|v| v.version == from).map(|v| v.sha256.as_str());
    let older = compared.map_or(&[][..], |c| c.with.as_slice());
    let links: Vec<String> = older
        .iter()
        .filter(|c| served(&c.from) == Some(c.sha256.as_str()))
        .map(|c| {
            let href = format!("{UI_PATH}modules/{address}/{}/from/{}", entry.version, c.from);
            format!("<a href=\"{}\">{}</a>", escape(&href), escape(&c.from))
        })
        .collect();
    if links.is_empty() {
        return String::new();
    }
    format!("<p class=\"upgrade\">Upgrade to {} from: {}</p>\n", escape(&entry.version), links.join(" · "))
}

/// The upgrade page: what a caller of `from` meets in `entry`'s version, as compared when it
/// was published (`changes`; `None` when it was not compared with `from`).
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
        Some(list) => {
            main.push_str(&change_list(list, (0, 0), PAGE_BYTES_MAX / 2, " not shown"));
            if list.len() >= CHANGES_KEPT {
                let _ = writeln!(
                    main,
                    "<p class=\"note\">A comparison keeps at most {CHANGES_KEPT} changes, breaking ones first.</p>"
                );
            }
        }
        None if from == entry.version => main.push_str("<p class=\"note\">The same version: nothing changes.</p>\n"),
        None => {
            let why = format!(
                "Not compared: when {v} was published it was compared with the {COMPARED_BEFORE} versions before it \
                 (its page links to each). {from} was not one of them, no longer serves the bytes compared, or the \
                 documentation of one of the two was not read.",
                v = entry.version
            );
            let _ = writeln!(main, "<p class=\"note\">{}</p>", escape(&why));
        }
    }
    main.push_str("</section>\n");
    let title = format!("{address} {from} → {}", entry.version);
    html::document(&Frame { title: &title, search: None, signed_in }, &main)
}
