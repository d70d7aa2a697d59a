//! A version page's downloads (a module's or a provider's): its counts over the windows kept,
//! every version's, and for an admin token the callers of the version (`usage`). Every name is
//! escaped: a caller's name comes from a token or an OIDC subject.

use std::fmt::Write;

use super::html::escape;
use crate::usage::{Downloads, Shown};

/// Callers listed on a page at most (the API lists every one kept).
const CALLERS_SHOWN: usize = 50;

/// The section, of a version of a `what` (`module`, `provider`).
pub(super) fn section(usage: &Shown, deprecated: bool, what: &str) -> String {
    let line = |d: &Downloads| {
        format!(
            "{} in the last 7 days, {} in 30, {} in 90, {} in all",
            d.last_7_days, d.last_30_days, d.last_90_days, d.total
        )
    };
    let mut out = String::from("<section id=\"downloads\">\n<h2>Downloads</h2>\n");
    let _ = writeln!(
        out,
        "<p class=\"meta\">This version: {}. The {what}: {}.</p>",
        line(&usage.version),
        line(&usage.module)
    );
    if let Some(callers) = &usage.callers {
        let days = usage.caller_days;
        let what = if deprecated { "Still installing this deprecated version" } else { "Installed by" };
        if callers.is_empty() {
            let _ = writeln!(out, "<p>{what}: nobody in the last {days} days.</p>");
        } else {
            let _ = writeln!(out, "<h3>{what} (the last {days} days; seen by admin tokens only)</h3>");
            out.push_str("<table class=\"callers\">\n<tr><th>caller</th><th>downloads</th><th>last</th></tr>\n");
            for c in callers.iter().take(CALLERS_SHOWN) {
                let _ = writeln!(
                    out,
                    "<tr><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
                    escape(&c.caller),
                    c.downloads,
                    escape(&c.last)
                );
            }
            out.push_str("</table>\n");
            if callers.len() > CALLERS_SHOWN {
                let _ = writeln!(out, "<p>{} more in the API's answer.</p>", callers.len() - CALLERS_SHOWN);
            }
        }
    }
    out.push_str("</section>\n");
    out
}
