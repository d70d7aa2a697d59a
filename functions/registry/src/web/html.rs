//! The pages' HTML, built as text with every value escaped where it is written: no template
//! engine, and no value reaches a page any other way than through `escape` (or, for a README,
//! through the sanitiser in `markdown`).

use std::fmt::Write;

use crate::router::UI_PATH;

/// Every page stays under this many bytes; what does not fit is named and left to the API.
pub const PAGE_BYTES_MAX: usize = 100_000;

/// `text` for an HTML text node or a quoted attribute value.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `text` cut to `max` characters, with `…` when cut.
pub fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((at, _)) => format!("{}…", &text[..at]),
    }
}

/// What the frame around every page shows.
pub struct Frame<'a> {
    /// The `<title>` (before the registry's name).
    pub title: &'a str,
    /// The search box's text.
    pub search: Option<&'a str>,
    /// Whether the browser holds a sign-in cookie (a sign-out button, not a sign-in link).
    pub signed_in: bool,
}

/// A whole page: the frame around `main` (already HTML).
pub fn document(frame: &Frame<'_>, main: &str) -> String {
    let page = render(frame, main);
    if page.len() <= PAGE_BYTES_MAX {
        return page;
    }
    // Every page's bound, whatever its sections' budgets missed: one over it says so instead.
    let over = format!(
        "<p class=\"note\">This page would be over {PAGE_BYTES_MAX} bytes: the details API answers what fits its own bound.</p>"
    );
    let title = clip(frame.title, 200);
    render(
        &Frame { title: &title, search: frame.search.map(|s| &s[..s.floor_char_boundary(128.min(s.len()))]), ..*frame },
        &over,
    )
}

fn render(frame: &Frame<'_>, main: &str) -> String {
    let mut out = String::with_capacity(main.len() + 1500);
    let account = if frame.signed_in {
        format!(
            "<form method=\"post\" action=\"{UI_PATH}sign-out\" class=\"account\"><button type=\"submit\">Sign out</button></form>"
        )
    } else {
        format!("<a class=\"account\" href=\"{UI_PATH}sign-in\">Sign in</a>")
    };
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title} · Terraform registry</title>\n\
         <link rel=\"stylesheet\" href=\"{UI_PATH}assets/style.css\">\n\
         <script src=\"{UI_PATH}assets/copy.js\" defer></script>\n</head>\n<body>\n\
         <header class=\"top\">\n<a class=\"brand\" href=\"/\">Terraform registry</a>\n\
         <form class=\"search\" action=\"/\" method=\"get\" role=\"search\">\
         <input type=\"search\" name=\"q\" value=\"{search}\" maxlength=\"128\" placeholder=\"Search modules and providers\" \
         aria-label=\"Search modules and providers\"><button type=\"submit\">Search</button></form>\n\
         {account}\n</header>\n<main>\n{main}\n</main>\n\
         <footer>Served by this registry; the same answers are in its API (<a href=\"/v1/modules\">/v1/modules</a>).</footer>\n\
         </body>\n</html>\n",
        title = escape(frame.title),
        search = escape(frame.search.unwrap_or_default()),
    );
    out
}

/// A table: a header row and rows of cells already HTML, as many as fit in `budget` bytes (it
/// is reduced by what is written). The rows left out are counted in a note that says where
/// they all are. No cell is cut: text wraps, and a table wider than a narrow screen scrolls
/// sideways in its own box (`div.scroll`), not the page.
pub fn table(class: &str, head: &[&str], rows: &[Vec<String>], budget: &mut usize, all_at: &str) -> String {
    let all = format!("the API's answer has more, <a href=\"{all}\">{all}</a>", all = escape(all_at));
    table_noting(class, head, rows, budget, &all, rows.len())
}

/// `table`, of `total` rows of which `rows` were built, saying where those not shown are with
/// `elsewhere` (HTML).
pub fn table_noting(
    class: &str,
    head: &[&str],
    rows: &[Vec<String>],
    budget: &mut usize,
    elsewhere: &str,
    total: usize,
) -> String {
    let mut out = format!("<div class=\"scroll\">\n<table class=\"{class}\">\n<thead><tr>");
    for h in head {
        let _ = write!(out, "<th scope=\"col\">{}</th>", escape(h));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    let mut shown = 0;
    for row in rows {
        let mut line = String::from("<tr>");
        for cell in row {
            let _ = write!(line, "<td>{cell}</td>");
        }
        line.push_str("</tr>\n");
        if line.len() > budget.saturating_sub(out.len()) {
            break;
        }
        out.push_str(&line);
        shown += 1;
    }
    out.push_str("</tbody>\n</table>\n</div>\n");
    if shown < total {
        let _ = writeln!(out, "<p class=\"note\">{} more not shown on this page: {elsewhere}.</p>", total - shown);
    }
    *budget = budget.saturating_sub(out.len());
    out
}

/// Text in `<code>`, escaped.
pub fn code(text: &str) -> String {
    format!("<code>{}</code>", escape(text))
}

/// A snippet to copy: `<pre data-copy>` (the script adds a copy button; without it the text is
/// there to select).
pub fn snippet(id: &str, text: &str) -> String {
    format!("<pre class=\"snippet\" id=\"{}\" data-copy><code>{}</code></pre>\n", escape(id), escape(text))
}

/// `1 version`, `2 versions`.
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}

/// The day of an RFC 3339 time (`2026-11-27`).
pub fn date(timestamp: &str) -> &str {
    timestamp.get(..10).unwrap_or(timestamp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_and_clipping() {
        assert_eq!(escape("<a href=\"x\" onclick='y'>&"), "&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;");
        assert_eq!(clip("abcdef", 3), "abc…");
        assert_eq!(clip("ééé", 5), "ééé");
    }

    #[test]
    fn tables_stop_at_their_budget_and_say_where_the_rest_is() {
        let rows: Vec<Vec<String>> = (0..100).map(|i| vec![format!("row{i}"), "x".repeat(50)]).collect();
        let mut budget = 2000;
        let html = table("inputs", &["Name", "Value"], &rows, &mut budget, "/v1/modules/a/b/c");
        assert!(html.len() <= 2000 + 300, "{}", html.len());
        assert!(html.contains("row0") && !html.contains("row99"));
        assert!(html.contains("more not shown on this page") && html.contains("/v1/modules/a/b/c"));
        let mut budget = 100_000;
        let html = table("inputs", &["Name", "Value"], &rows, &mut budget, "/x");
        assert!(html.contains("row99") && !html.contains("more not shown"));
    }
}
