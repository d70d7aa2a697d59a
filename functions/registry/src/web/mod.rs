//! The web pages' HTML, for people in a browser: the catalog with search, a page per module,
//! per provider and per upstream module copied here (`upstream`), sign-in and sign-out (`pages`, built safely by `html`; READMEs rendered by
//! `markdown`). `routes::web` answers the requests.
//!
//! Every page carries a Content-Security-Policy that allows only this registry's own
//! stylesheet and script (no inline script or style, no other origin, no frames), and works
//! without the script (which only adds copy buttons).

pub mod changes;
mod html;
pub mod markdown;
pub mod pages;
mod provenance;
pub mod upstream;
pub mod usage;

pub use html::PAGE_BYTES_MAX;

/// What every page allows itself: its own stylesheet, script and images; forms posted to
/// itself only; no plugins, no frames, no `<base>` rewriting, nothing fetched by script.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; \
     form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

pub(crate) const STYLE: &str = include_str!("assets/style.css");
pub(crate) const SCRIPT: &str = include_str!("assets/copy.js");

#[cfg(test)]
mod tests;
