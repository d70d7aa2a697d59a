//! The pages of upstream registries' modules this registry holds pinned copies of (the modules
//! pull-through, or an air-gap bundle): their section of the catalog page (from the catalog),
//! and a page per module listing its copied versions' pins (from its pins document). The
//! indexer writes both as it logs each pin.

use std::fmt::Write;

use crate::address::UpstreamModule;
use crate::catalog::UpstreamEntry;
use crate::router::UI_PATH;
use crate::upstream::module_records::ModulePins;

use super::html::{self, Frame, PAGE_BYTES_MAX, code, count, date, escape, snippet, table, table_noting};
use crate::module_docs::snippet::constraint;

/// The `source` line that installs it through the CLI's `host` block: the upstream's address,
/// without the host when it is the public registry's (the CLI's default host).
fn source(hostname: &str, address: String, without_host: String) -> String {
    match hostname {
        "registry.terraform.io" => without_host,
        _ => address,
    }
}

/// The module's address, linking to its page.
fn link(m: &UpstreamEntry) -> String {
    format!("<a href=\"{UI_PATH}upstream/{}\">{}</a>", escape(&m.address()), escape(&m.address()))
}

/// The catalog's section of upstream registries' modules this registry holds pinned copies of:
/// installed with their own `source` line (the CLI's `host` block sends it here), so the source
/// shown is the upstream's address, without the host when it is the public registry's.
pub(super) fn section(upstream: &[&UpstreamEntry]) -> String {
    let rows: Vec<Vec<String>> = upstream
        .iter()
        .map(|m| {
            vec![
                link(m),
                code(&format!(
                    "source = \"{}\"",
                    source(&m.hostname, m.address(), format!("{}/{}/{}", m.namespace, m.name, m.system))
                )),
                code(m.latest().unwrap_or_default()),
                m.versions.len().to_string(),
                escape(date(&m.copied_at)),
            ]
        })
        .collect();
    let mut budget = PAGE_BYTES_MAX / 6;
    let mut section = format!(
        "<section id=\"upstream\">\n<h2>Public modules copied here <span class=\"count\">{}</span></h2>\n\
         <p>Copies of upstream registries' modules, each version pinned to the SHA-256 of its first copy \
         (the modules pull-through, or an air-gap bundle).</p>\n",
        upstream.len()
    );
    section.push_str(&table(
        "catalog",
        &["Upstream module", "Source", "Latest copied", "Versions copied", "Copied"],
        &rows,
        &mut budget,
        "/",
    ));
    section.push_str("</section>\n");
    section
}

/// An upstream module's page: how to install it through this registry, and each copied
/// version's pin (the only bytes served for it), newest first. `host` is this registry's, for
/// the CLI configuration shown.
pub fn module(host: &str, modules_path: &str, module: &UpstreamModule, pins: &ModulePins, signed_in: bool) -> String {
    let address = module.to_string();
    let mut main = String::new();
    let _ = write!(
        main,
        "<nav class=\"crumbs\"><a href=\"/\">Catalog</a> / {a}</nav>\n<h1>{a}</h1>\n<p class=\"meta\">{} copied from \
         {} · pinned to the SHA-256 of each first copy</p>\n",
        count(pins.pins.len(), "version"),
        escape(&module.hostname),
        a = escape(&address),
    );
    main.push_str("<section id=\"usage\">\n<h2>Use it</h2>\n");
    let latest = crate::catalog::latest(pins.pins.iter().map(|p| p.version.as_str())).unwrap_or_default();
    let source = source(&module.hostname, address.clone(), module.module.to_string());
    let usage = format!(
        "module \"{name}\" {{\n  source  = \"{source}\"\n  version = \"{constraint}\"\n}}\n",
        name = module.module.name,
        constraint = constraint(latest)
    );
    main.push_str(&snippet("upstream-usage", &usage));
    let config = crate::cli_config::upstream_modules(
        &[module.hostname.as_str()],
        &format!("https://{host}{modules_path}"),
        "TOKEN",
    );
    let _ = write!(
        main,
        "<p>The <code>source</code> line is the upstream's: a <code>host</code> block in the CLI configuration sends \
         it here, and the <code>credentials</code> block gives this registry's token to it.</p>\n{}</section>\n",
        snippet("upstream-cli-config", &config)
    );
    let mut budget = PAGE_BYTES_MAX / 2;
    // Rows past what the page can hold are not built (a module may have thousands of copies):
    // a row is more than 100 bytes.
    let rows: Vec<Vec<String>> = pins
        .pins
        .iter()
        .take(budget / 100 + 1)
        .map(|p| {
            vec![code(&p.version), code(&p.sha256), p.size.to_string(), escape(&p.source), escape(date(&p.copied_at))]
        })
        .collect();
    let pins_at = format!("{}VERSION.pin.json", crate::layout::upstream_module_prefix(module));
    let _ = write!(
        main,
        "<section id=\"pins\">\n<h2>Pinned copies <span class=\"count\">{}</span></h2>\n<p>Each version is served only \
         as the bytes of its first copy: the download URL ends in <code>checksum=sha256:</code> and the CLI checks it. \
         Bytes fetched later that differ are refused and recorded on the publish log.</p>\n{}</section>\n",
        pins.pins.len(),
        table_noting(
            "pins",
            &["Version", "SHA-256", "Bytes", "Copied from", "Copied"],
            &rows,
            &mut budget,
            &format!("older versions, each pin in the bucket at <code>{}</code>", escape(&pins_at)),
            pins.pins.len(),
        ),
    );
    html::document(&Frame { title: &address, search: None, signed_in }, &main)
}
