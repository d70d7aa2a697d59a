//! The pages, as pure functions of what the handlers read: the catalog, a module, a provider,
//! the sign-in form, an error. Every value is escaped (`html::escape`) or sanitised
//! (`markdown::render`) where it is written.

use std::fmt::Write;

use crate::address::{ModuleAddress, ProviderAddress};
use crate::catalog::{ModuleEntry, ProviderEntry, UpstreamEntry};
use crate::manifest::{ModuleManifest, ModuleVersion, ProviderVersion, newest_first};
use crate::module_docs::compare::Change;
use crate::module_docs::snippet as hcl_snippet;
use crate::module_docs::{ModuleDir, ModuleDocs};
use crate::query::Listing;
use crate::router::UI_PATH;

use super::html::{self, Frame, PAGE_BYTES_MAX, clip, code, count, date, escape, snippet, table};
use super::markdown;

/// Version links shown on a module or provider page; the API lists the rest.
const VERSION_LINKS_MAX: usize = 60;
/// Longest description, type or default shown in a table cell (characters).
const CELL_CHARS_MAX: usize = 600;
/// Room kept for the frame and what follows the budgeted sections.
const FRAME_BYTES: usize = 4_000;
/// Characters of a submodule's or example's path shown.
const PATH_CHARS_MAX: usize = 128;

/// Where this registry is, as the snippets name it, and its mirror's base path.
pub struct Place<'a> {
    /// `registry.example.com` (or `127.0.0.1:8443`).
    pub host: &'a str,
    /// The network mirror's base path (`/v1/mirror/`).
    pub mirror_path: &'a str,
    /// The module protocol's base path, for links to the API (`/v1/modules/`).
    pub modules_path: &'a str,
}

/// The catalog page: the modules of `listing`'s page (of `total` found), the providers, and the
/// upstream registries' modules copied here. Long (≈ 90 lines) on purpose: it reads top to
/// bottom as the page does, section by section.
pub fn catalog(
    listing: &Listing,
    modules: &[(&ModuleEntry, u64)],
    total: usize,
    providers: &[&ProviderEntry],
    upstream: &[&UpstreamEntry],
    signed_in: bool,
) -> String {
    let mut main = String::new();
    match &listing.q {
        Some(q) => {
            let _ = writeln!(main, "<h1>Search: {}</h1>", escape(q));
        }
        None => main.push_str("<h1>Modules and providers</h1>\n"),
    }
    if !signed_in && total == 0 && providers.is_empty() {
        let _ = writeln!(
            main,
            "<p class=\"notice\">Nothing here is public. <a href=\"{UI_PATH}sign-in\">Sign in</a> with a token to see the \
             modules and providers it may read.</p>"
        );
    }
    let _ = writeln!(main, "<section id=\"modules\">\n<h2>Modules <span class=\"count\">{total}</span></h2>");
    if modules.is_empty() {
        main.push_str("<p class=\"empty\">No modules found.</p>\n");
    } else {
        main.push_str(&sort_choice(listing));
        let rows: Vec<Vec<String>> = modules
            .iter()
            .map(|(m, downloads)| {
                let address = format!("{}/{}/{}", m.namespace, m.name, m.system);
                vec![
                    format!("<a href=\"{UI_PATH}modules/{a}\">{a}</a>", a = escape(&address)),
                    code(&m.latest),
                    escape(&clip(m.description.as_deref().unwrap_or_default(), 280)),
                    escape(date(m.published_at.as_deref().or(m.updated.as_deref()).unwrap_or_default())),
                    downloads.to_string(),
                ]
            })
            .collect();
        let mut budget = PAGE_BYTES_MAX / 2;
        main.push_str(&table(
            "catalog",
            &["Module", "Latest", "Description", "Published", "Downloads"],
            &rows,
            &mut budget,
            "/v1/modules",
        ));
    }
    let mut pages = Vec::new();
    if listing.offset > 0 {
        let prev = listing.offset.saturating_sub(listing.limit);
        pages.push(format!("<a rel=\"prev\" href=\"/?{}\">Previous</a>", escape(&listing.query_at(prev))));
    }
    if listing.offset + listing.limit < total {
        let next = listing.offset + listing.limit;
        pages.push(format!("<a rel=\"next\" href=\"/?{}\">Next</a>", escape(&listing.query_at(next))));
    }
    if !pages.is_empty() {
        let _ = writeln!(main, "<nav class=\"pages\">{}</nav>", pages.join(" "));
    }
    main.push_str("</section>\n");
    let _ = writeln!(
        main,
        "<section id=\"providers\">\n<h2>Providers <span class=\"count\">{}</span></h2>",
        providers.len()
    );
    if providers.is_empty() {
        main.push_str("<p class=\"empty\">No providers found.</p>\n");
    } else {
        let rows: Vec<Vec<String>> = providers
            .iter()
            .map(|p| {
                let address = p.address();
                vec![
                    format!("<a href=\"{UI_PATH}providers/{a}\">{a}</a>", a = escape(&address)),
                    code(&p.latest),
                    p.versions.to_string(),
                    if p.registry { "providers.v1 and mirror" } else { "mirror" }.to_string(),
                    escape(date(&p.updated)),
                ]
            })
            .collect();
        let mut budget = PAGE_BYTES_MAX / 3;
        main.push_str(&table(
            "catalog",
            &["Provider", "Latest", "Versions", "Installed through", "Updated"],
            &rows,
            &mut budget,
            "/",
        ));
    }
    main.push_str("</section>\n");
    if !upstream.is_empty() {
        main.push_str(&super::upstream::section(upstream));
    }
    let title = listing.q.as_deref().map_or_else(|| "Catalog".to_string(), |q| format!("Search: {q}"));
    html::document(&Frame { title: &title, search: listing.q.as_deref(), signed_in }, &main)
}

/// What a module version's page shows: the version, every version, its docs (when read from
/// the bytes served), the changes since the one before, and its downloads (when counted).
#[derive(Debug, Clone, Copy)]
pub struct Shown<'a> {
    /// The version.
    pub entry: &'a ModuleVersion,
    /// Every version.
    pub manifest: &'a ModuleManifest,
    /// Its docs.
    pub docs: Option<&'a ModuleDocs>,
    /// The version compared with, and the changes since it.
    pub changes: Option<(&'a str, &'a [Change])>,
    /// Its downloads.
    pub downloads: Option<&'a crate::usage::Shown>,
}

/// The order the modules are in, and a link to the other (the first page of it).
fn sort_choice(listing: &Listing) -> String {
    let other = Listing { by_downloads: !listing.by_downloads, offset: 0, ..listing.clone() };
    let link = format!("/?{}", escape(&other.query_at(0)));
    let usual = if listing.q.is_some() { "best match" } else { "name" };
    let (now, then) = if listing.by_downloads { ("most downloaded", usual) } else { (usual, "most downloaded") };
    format!("<p class=\"sort\">Sorted by {now} · <a href=\"{link}\">sort by {then}</a></p>\n")
}

/// A module version's page: usage, downloads, README, inputs, outputs, requirements,
/// submodules, examples, versions. Long (≈ 110 lines) on purpose: it reads top to bottom as
/// the page does, each section a few lines, all sharing one byte budget.
pub fn module(place: &Place<'_>, module: &ModuleAddress, shown: &Shown<'_>, signed_in: bool) -> String {
    let Shown { entry, manifest, docs, changes, downloads } = *shown;
    let address = format!("{}/{}/{}", module.namespace, module.name, module.system);
    let api = format!("{}{address}/{}", place.modules_path, entry.version);
    let mut budget = PAGE_BYTES_MAX - FRAME_BYTES;
    let empty = ModuleDir::default();
    let root = docs.map_or(&empty, |d| &d.root);

    let mut head = String::new();
    let _ = write!(
        head,
        "<nav class=\"crumbs\"><a href=\"/\">Catalog</a> / {}</nav>\n<h1>{} <span class=\"version\">{}</span></h1>\n",
        escape(&address),
        escape(&address),
        escape(&entry.version)
    );
    head.push_str(&super::changes::deprecation(entry));
    head.push_str(&super::provenance::badge(entry));
    if let Some(summary) = root.readme.as_deref().and_then(crate::module_docs::summary) {
        let _ = writeln!(head, "<p class=\"description\">{}</p>", escape(&summary));
    }
    let latest = crate::catalog::latest(manifest.versions.iter().map(|v| v.version.as_str())).unwrap_or_default();
    let mut meta = vec![count(manifest.versions.len(), "version")];
    if latest != entry.version {
        meta.push(format!(
            "latest is <a href=\"{UI_PATH}modules/{}/{}\">{}</a>",
            escape(&address),
            escape(latest),
            escape(latest)
        ));
    }
    if let Some(at) = &entry.published_at {
        meta.push(format!("published {}", escape(date(at))));
    }
    if let Some(required) = &root.required_version {
        meta.push(format!("Terraform {}", escape(&clip(required, CELL_CHARS_MAX))));
    }
    meta.push(format!("<a href=\"{a}\">API</a>", a = escape(&api)));
    let _ = writeln!(head, "<p class=\"meta\">{}</p>", meta.join(" · "));

    let usage = hcl_snippet::module_block(&module.name, &format!("{}/{address}", place.host), &entry.version, root);
    let _ = writeln!(head, "<section id=\"usage\">\n<h2>Usage</h2>\n{}</section>", snippet("usage-snippet", &usage));
    if let Some(downloads) = downloads {
        head.push_str(&super::usage::section(downloads, entry.deprecation.is_some(), "module"));
    }
    budget = budget.saturating_sub(head.len());

    let mut warnings = String::new();
    let mut notes: Vec<String> = docs.map(|d| d.warnings.clone()).unwrap_or_default();
    if docs.is_none() {
        notes.push("The documentation of this version has not been read yet (the next indexing pass reads it).".into());
    }
    if !notes.is_empty() {
        warnings.push_str("<section id=\"warnings\">\n<h2>Warnings</h2>\n<ul class=\"warnings\">\n");
        for note in notes.iter().take(20) {
            let _ = writeln!(warnings, "<li>{}</li>", escape(&clip(note, CELL_CHARS_MAX)));
        }
        warnings.push_str("</ul>\n</section>\n");
    }
    budget = budget.saturating_sub(warnings.len());

    let versions = versions_section(
        manifest.versions.iter().map(|v| v.version.as_str()),
        &entry.version,
        &format!("{UI_PATH}modules/{address}"),
        &format!("{}{address}/versions", place.modules_path),
    );
    budget = budget.saturating_sub(versions.len());

    let since = super::changes::since_section(&address, entry, manifest, docs, changes, &mut budget);
    let inputs = inputs_section("inputs", root, &mut budget, &api);
    let outputs = outputs_section("outputs", root, &mut budget, &api);
    let requirements = requirements_section(root, &mut budget, &api);

    // The README gets what the tables left, less room for the submodules' and examples' names.
    let dirs = docs.map_or(0, |d| d.submodules.len() + d.examples.len());
    let readme_room = budget.saturating_sub(dirs * 200 + 1000);
    let readme = root.readme.as_deref().map(|r| readme_section(r, readme_room)).unwrap_or_default();
    budget = budget.saturating_sub(readme.len());

    let mut directories = String::new();
    if let Some(docs) = docs {
        for (id, title, list) in
            [("submodules", "Submodules", &docs.submodules), ("examples", "Examples", &docs.examples)]
        {
            if list.is_empty() {
                continue;
            }
            let _ = writeln!(directories, "<section id=\"{id}\">\n<h2>{title}</h2>");
            for (shown, dir) in list.iter().enumerate() {
                // Past the budget, one line for all the rest, not one each.
                if budget < 2000 {
                    let _ = writeln!(
                        directories,
                        "<p class=\"note\">{} more not shown on this page (the details API lists more, within its own bound).</p>",
                        list.len() - shown
                    );
                    break;
                }
                let before = budget;
                let piece = directory(place, &address, &entry.version, dir, &mut budget, &api, id == "submodules");
                // Charged whole: its sections charge their rows, not what frames them; one larger
                // than what was left is not shown, and ends the list.
                if piece.len() > before {
                    let _ = writeln!(
                        directories,
                        "<p class=\"note\">{} more not shown on this page (the details API lists more, within its own bound).</p>",
                        list.len() - shown
                    );
                    budget = 0;
                    break;
                }
                budget = before - piece.len();
                directories.push_str(&piece);
            }
            directories.push_str("</section>\n");
        }
    }

    let main = format!(
        "{head}<div class=\"columns\">\n<div class=\"body\">\n{readme}{since}{inputs}{outputs}{requirements}{directories}</div>\n\
         <aside>\n{versions}{warnings}</aside>\n</div>\n"
    );
    html::document(&Frame { title: &address, search: None, signed_in }, &main)
}

fn versions_section<'a>(versions: impl Iterator<Item = &'a str>, shown: &str, base: &str, all: &str) -> String {
    let mut versions: Vec<&str> = versions.collect();
    versions.sort_by(|a, b| newest_first(a, b));
    let mut out = String::from("<section id=\"versions\">\n<h2>Versions</h2>\n<ul class=\"versions\">\n");
    for v in versions.iter().take(VERSION_LINKS_MAX) {
        let current = if *v == shown { " aria-current=\"page\"" } else { "" };
        let _ = writeln!(out, "<li><a href=\"{}/{}\"{current}>{}</a></li>", escape(base), escape(v), escape(v));
    }
    out.push_str("</ul>\n");
    if versions.len() > VERSION_LINKS_MAX {
        let _ = writeln!(
            out,
            "<p class=\"note\">{} more: <a href=\"{a}\">{a}</a>.</p>",
            count(versions.len() - VERSION_LINKS_MAX, "older version"),
            a = escape(all)
        );
    }
    out.push_str("</section>\n");
    out
}

fn cell(text: Option<&str>) -> String {
    match text {
        Some(t) if !t.is_empty() => escape(&clip(t, CELL_CHARS_MAX)),
        _ => String::new(),
    }
}

fn inputs_section(id: &str, dir: &ModuleDir, budget: &mut usize, api: &str) -> String {
    let mut out =
        format!("<section id=\"{}\">\n<h2>Inputs <span class=\"count\">{}</span></h2>\n", escape(id), dir.inputs.len());
    if dir.inputs.is_empty() {
        out.push_str("<p class=\"empty\">No inputs.</p>\n");
    } else {
        // Required first, as a reader fills them in; each group in name order.
        let mut inputs: Vec<_> = dir.inputs.iter().collect();
        inputs.sort_by(|a, b| b.required.cmp(&a.required).then_with(|| a.name.cmp(&b.name)));
        let rows: Vec<Vec<String>> = inputs
            .iter()
            .map(|i| {
                let mut name = code(&i.name);
                if i.sensitive {
                    name.push_str(" <span class=\"tag\">sensitive</span>");
                }
                vec![
                    name,
                    i.r#type.as_deref().map(|t| code(&clip(t, CELL_CHARS_MAX))).unwrap_or_default(),
                    cell(i.description.as_deref()),
                    i.default.as_deref().map(|d| code(&clip(d, CELL_CHARS_MAX))).unwrap_or_default(),
                    if i.required { "yes" } else { "no" }.to_string(),
                ]
            })
            .collect();
        out.push_str(&table("inputs", &["Name", "Type", "Description", "Default", "Required"], &rows, budget, api));
    }
    out.push_str("</section>\n");
    out
}

fn outputs_section(id: &str, dir: &ModuleDir, budget: &mut usize, api: &str) -> String {
    let mut out = format!(
        "<section id=\"{}\">\n<h2>Outputs <span class=\"count\">{}</span></h2>\n",
        escape(id),
        dir.outputs.len()
    );
    if dir.outputs.is_empty() {
        out.push_str("<p class=\"empty\">No outputs.</p>\n");
    } else {
        let rows: Vec<Vec<String>> = dir
            .outputs
            .iter()
            .map(|o| {
                vec![code(&o.name), cell(o.description.as_deref()), if o.sensitive { "yes" } else { "no" }.to_string()]
            })
            .collect();
        out.push_str(&table("outputs", &["Name", "Description", "Sensitive"], &rows, budget, api));
    }
    out.push_str("</section>\n");
    out
}

fn requirements_section(dir: &ModuleDir, budget: &mut usize, api: &str) -> String {
    if dir.provider_dependencies.is_empty() && dir.dependencies.is_empty() {
        return String::new();
    }
    let mut out = String::from("<section id=\"requirements\">\n<h2>Requirements</h2>\n");
    if !dir.provider_dependencies.is_empty() {
        let rows: Vec<Vec<String>> = dir
            .provider_dependencies
            .iter()
            .map(|p| vec![code(&p.name), code(&p.source), cell(Some(&p.version))])
            .collect();
        out.push_str(&table("providers", &["Provider", "Source", "Version"], &rows, budget, api));
    }
    if !dir.dependencies.is_empty() {
        let rows: Vec<Vec<String>> = dir
            .dependencies
            .iter()
            .map(|d| vec![code(&d.name), code(&clip(&d.source, 200)), cell(Some(&d.version))])
            .collect();
        out.push_str(&table("modules", &["Module call", "Source", "Version"], &rows, budget, api));
    }
    out.push_str("</section>\n");
    out
}

/// The README, rendered, cut to fit `room` bytes (at a line end; said so when cut).
fn readme_section(readme: &str, room: usize) -> String {
    let mut max = readme.len().min(room);
    for _ in 0..6 {
        let (text, cut) = markdown::cut(readme, max);
        let rendered = markdown::render(text);
        let note = if cut {
            format!(
                "<p class=\"note\">The README continues past {} KB; the rest is in the module's archive.</p>\n",
                text.len() / 1024
            )
        } else {
            String::new()
        };
        let out = format!(
            "<section id=\"readme\">\n<h2>README</h2>\n<div class=\"readme\">\n{rendered}</div>\n{note}</section>\n"
        );
        if out.len() <= room || max == 0 {
            return out;
        }
        max /= 2;
    }
    String::new()
}

fn directory(
    place: &Place<'_>,
    address: &str,
    version: &str,
    dir: &ModuleDir,
    budget: &mut usize,
    api: &str,
    submodule: bool,
) -> String {
    let name = dir.path.rsplit('/').next().unwrap_or_default();
    // A path is the publisher's: cut, as every other field the page shows.
    let path = clip(&dir.path, PATH_CHARS_MAX);
    let mut out =
        format!("<details class=\"directory\" id=\"{}\">\n<summary>{}</summary>\n", escape(&path), code(&path));
    if *budget < 2000 {
        out.push_str("<p class=\"note\">Not shown on this page (the details API shows it, within its own bound).</p>\n</details>\n");
        *budget = budget.saturating_sub(out.len());
        return out;
    }
    if submodule {
        let source = format!("{}/{address}//{}", place.host, dir.path);
        let usage = hcl_snippet::module_block(name, &source, version, dir);
        // (The snippet quotes the path as the `source` the CLI needs: whole, and escaped.)
        out.push_str(&snippet(&format!("usage-{}", path.replace('/', "-")), &usage));
    }
    if let Some(readme) = &dir.readme {
        let room = (*budget / 4).min(8_000);
        let (text, _) = markdown::cut(readme, room);
        let rendered = markdown::render(text);
        if rendered.len() <= room {
            let _ = writeln!(out, "<div class=\"readme\">\n{rendered}</div>");
        }
    }
    *budget = budget.saturating_sub(out.len());
    out.push_str(&inputs_section(&format!("inputs-{}", path.replace('/', "-")), dir, budget, api));
    out.push_str(&outputs_section(&format!("outputs-{}", path.replace('/', "-")), dir, budget, api));
    out.push_str("</details>\n");
    out
}

/// What a provider version's page shows: the version, every version, its document, whether
/// its host is this registry's (providers.v1), and its downloads (when counted).
#[derive(Debug, Clone, Copy)]
pub struct Release<'a> {
    /// The version.
    pub version: &'a str,
    /// Every version, newest first.
    pub versions: &'a [&'a str],
    /// Its archives, and its signed release if it is one.
    pub document: &'a ProviderVersion,
    /// Its host is `REGISTRY_HOSTNAME`.
    pub own_hostname: bool,
    /// Its downloads.
    pub downloads: Option<&'a crate::usage::Shown>,
}

/// A provider version's page: the snippets to install it, its downloads, its platforms and
/// hashes, versions.
pub fn provider(place: &Place<'_>, provider: &ProviderAddress, release: &Release<'_>, signed_in: bool) -> String {
    let Release { version, versions, document, own_hostname, downloads } = *release;
    let address = provider.to_string();
    let mut main = String::new();
    let _ = write!(
        main,
        "<nav class=\"crumbs\"><a href=\"/\">Catalog</a> / {a}</nav>\n<h1>{a} <span class=\"version\">{v}</span></h1>\n",
        a = escape(&address),
        v = escape(version)
    );
    let mut meta = vec![count(versions.len(), "version"), count(document.archives.len(), "platform")];
    if let Some(release) = &document.release {
        meta.push(format!("signed by key {}", code(&release.signing_key.key_id)));
        meta.push(format!("protocols {}", escape(&release.protocols.join(", "))));
    }
    let _ = writeln!(main, "<p class=\"meta\">{}</p>", meta.join(" · "));
    if let Some(downloads) = downloads {
        main.push_str(&super::usage::section(downloads, document.deprecation.is_some(), "provider"));
    }

    main.push_str("<div class=\"columns\">\n<div class=\"body\">\n<section id=\"usage\">\n<h2>Use it</h2>\n");
    if document.release.is_some() && own_hostname {
        let _ = write!(
            main,
            "<h3>From this registry (providers.v1)</h3>\n<p>No CLI configuration beyond a <code>credentials</code> block; \
             the CLI checks the release's signature.</p>\n{}",
            snippet("providers-snippet", &hcl_snippet::provider_block(&provider.r#type, &address, version))
        );
    }
    let _ = write!(
        main,
        "<h3>Through the network mirror</h3>\n<p>In the CLI configuration file (<code>TF_CLI_CONFIG_FILE</code>):</p>\n{}",
        snippet(
            "mirror-snippet",
            &format!(
                "provider_installation {{\n  network_mirror {{\n    url     = \"https://{host}{mirror}\"\n    include = [\"{address}\"]\n  }}\n  direct {{\n    exclude = [\"{address}\"]\n  }}\n}}\n\n\
                 credentials \"{host}\" {{\n  token = \"trg_…\" # a token that may read {address}\n}}\n",
                host = place.host,
                mirror = place.mirror_path,
            )
        )
    );
    main.push_str("</section>\n");

    let mut budget = PAGE_BYTES_MAX - FRAME_BYTES - main.len() - 6_000;
    let rows: Vec<Vec<String>> = document
        .archives
        .iter()
        .map(|(platform, archive)| {
            let hashes: Vec<String> = archive.hashes.iter().map(|h| code(h)).collect();
            vec![code(platform), code(&archive.url), hashes.join("<br>")]
        })
        .collect();
    let _ =
        writeln!(main, "<section id=\"platforms\">\n<h2>Platforms <span class=\"count\">{}</span></h2>", rows.len());
    let all = format!("{}{address}/{version}.json", place.mirror_path);
    main.push_str(&table("platforms", &["Platform", "File", "Hashes"], &rows, &mut budget, &all));
    main.push_str("<p class=\"note\">The <code>h1:</code> hash is what <code>.terraform.lock.hcl</code> records for an install \
                   from the mirror; <code>zh:</code> is the zip's SHA-256, as <code>SHA256SUMS</code> lists it.</p>\n</section>\n");
    main.push_str("</div>\n<aside>\n");
    main.push_str(&versions_section(
        versions.iter().copied(),
        version,
        &format!("{UI_PATH}providers/{address}"),
        &format!("{}{address}/index.json", place.mirror_path),
    ));
    main.push_str("</aside>\n</div>\n");
    html::document(&Frame { title: &address, search: None, signed_in }, &main)
}

/// The sign-in form, with what went wrong with the last attempt.
pub fn sign_in(problem: Option<&str>, signed_in: bool) -> String {
    let mut main = String::from("<h1>Sign in</h1>\n");
    if let Some(problem) = problem {
        let _ = writeln!(main, "<p class=\"error\" role=\"alert\">{}</p>", escape(problem));
    }
    let _ = write!(
        main,
        "<form method=\"post\" action=\"{UI_PATH}sign-in\" class=\"sign-in\">\n\
         <label for=\"token\">Token</label>\n\
         <input type=\"password\" id=\"token\" name=\"token\" autocomplete=\"off\" required maxlength=\"3800\" \
         placeholder=\"trg_…\">\n<button type=\"submit\">Sign in</button>\n</form>\n\
         <p class=\"note\">Paste a token of this registry (the one in your <code>credentials</code> block, or one \
         <code>make token-create</code> printed). This browser keeps it in a cookie that page scripts cannot read, sent \
         only to this registry over HTTPS, for 8 hours or until you sign out; you see what the token may read.</p>\n"
    );
    html::document(&Frame { title: "Sign in", search: None, signed_in }, &main)
}

/// An error as a page: its status and its public message.
pub fn error(status: u16, message: &str, sign_in: bool, signed_in: bool) -> String {
    let mut main = format!("<h1>{status}</h1>\n<p class=\"error\">{}</p>\n", escape(message));
    if sign_in {
        let _ = writeln!(main, "<p><a href=\"{UI_PATH}sign-in\">Sign in</a> with a token that may read it.</p>");
    }
    main.push_str("<p><a href=\"/\">Back to the catalog</a></p>\n");
    html::document(&Frame { title: &status.to_string(), search: None, signed_in }, &main)
}
