//! READMEs as HTML: CommonMark (with tables and strikethrough) rendered by pulldown-cmark,
//! then sanitised by ammonia's allowlist. A README is the publisher's text, so anyone who may
//! publish could otherwise run script in every reader's session: raw HTML in it is allowed
//! only as far as ammonia's allowlist goes (no script, no event handlers, no `style`, no
//! `javascript:` or `data:` URLs, no forms), and the page's Content-Security-Policy would stop
//! what the sanitiser missed.

use std::collections::HashSet;

use pulldown_cmark::{Options, Parser, html};

/// Schemes a link in a README may use.
const SCHEMES: [&str; 3] = ["http", "https", "mailto"];

/// A README, as sanitised HTML.
pub fn render(markdown: &str) -> String {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    let mut unsafe_html = String::with_capacity(markdown.len() * 3 / 2);
    html::push_html(&mut unsafe_html, Parser::new_ext(markdown, options));
    ammonia::Builder::default()
        .url_schemes(HashSet::from(SCHEMES))
        // A relative link or image points into the archive, which the pages do not serve:
        // dropped rather than left to 404 (or to resolve against a page path).
        .url_relative(ammonia::UrlRelative::Deny)
        .link_rel(Some("noopener noreferrer nofollow"))
        // ammonia checks the scheme only: `https:E//x` (an autolink) passes as https, though it
        // is no absolute URL. Only links that say where they go, in full, are kept.
        .attribute_filter(|_, attribute, value| match attribute {
            "href" | "src" if !absolute(value) => None,
            _ => Some(value.into()),
        })
        .clean(&unsafe_html)
        .to_string()
}

/// Whether a link is an absolute http(s) URL (`scheme://host…`) or a mailto: address.
fn absolute(url: &str) -> bool {
    let url = url.trim_start().to_ascii_lowercase();
    ["http://", "https://", "mailto:"].iter().any(|p| url.starts_with(p))
}

/// `markdown` cut to at most `max` bytes at a line end (so no construct is cut mid-line),
/// and whether it was cut.
pub fn cut(markdown: &str, max: usize) -> (&str, bool) {
    if markdown.len() <= max {
        return (markdown, false);
    }
    let mut end = max;
    while !markdown.is_char_boundary(end) {
        end -= 1;
    }
    let end = markdown[..end].rfind('\n').unwrap_or(end);
    (&markdown[..end], true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_renders_and_hostile_html_does_not_survive() {
        let html =
            render("# Title\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```hcl\nx = 1\n```\n\n[docs](https://example.com)\n");
        for want in [
            "<h1>Title</h1>",
            "<table>",
            "<td>1</td>",
            "<pre><code>x = 1",
            "href=\"https://example.com\"",
            "rel=\"noopener noreferrer nofollow\"",
        ] {
            assert!(html.contains(want), "{want} in {html}");
        }
        let hostile = [
            "<script>alert(1)</script>",
            "<img src=x onerror=alert(1)>",
            "[click](javascript:alert(1))",
            "<a href=\"JaVaScRiPt:alert(1)\">x</a>",
            "<svg><script>alert(1)</script></svg>",
            "<svg onload=alert(1)></svg>",
            "<!-- --><script>alert(1)</script><!-- -->",
            "--><script>alert(1)</script>",
            "<iframe src=\"https://evil.example\"></iframe>",
            "<form action=\"https://evil.example\"><input name=t></form>",
            "<div style=\"background:url(https://evil.example)\">x</div>",
            "<a href=\"data:text/html,<script>alert(1)</script>\">x</a>",
            "<object data=\"x.swf\"></object>",
            "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
            "<details open ontoggle=alert(1)>",
        ];
        for input in hostile {
            let out = render(input).to_lowercase();
            for banned in [
                "<script",
                "onerror",
                "onload",
                "ontoggle",
                "javascript:",
                "<iframe",
                "<form",
                "<input",
                "style=",
                "data:",
                "<object",
                "<svg",
            ] {
                assert!(!out.contains(banned), "{input:?} rendered {out:?}");
            }
        }
        assert!(!render("![x](images/a.png) [y](docs/b.md)").contains("images/a.png"), "relative URLs dropped");
    }

    #[test]
    fn cuts_at_a_line_end() {
        assert_eq!(cut("abc", 10), ("abc", false));
        assert_eq!(cut("line one\nline two\n", 12), ("line one", true));
        assert_eq!(cut("ééé", 3), ("é", true));
    }
}
