//! A README's first paragraph of prose as plain text: a module's description in the catalog.

/// Longest description the catalog keeps, in characters.
pub const SUMMARY_MAX_CHARS: usize = 280;

/// The first paragraph of prose of a README, as plain text: what the catalog shows as a
/// module's description. Headings, badges, images, HTML, code blocks, tables and front matter
/// before it are skipped; links keep their text; emphasis and code marks are dropped; it is
/// cut at a word to `SUMMARY_MAX_CHARS`. `None` when the README has no such paragraph.
pub fn summary(readme: &str) -> Option<String> {
    let mut lines = readme.lines().map(str::trim).peekable();
    // YAML front matter.
    if lines.peek() == Some(&"---") {
        lines.next();
        for line in lines.by_ref() {
            if line == "---" {
                break;
            }
        }
    }
    let mut in_fence = false;
    let mut paragraph: Vec<&str> = Vec::new();
    for line in lines {
        if line.starts_with("```") || line.starts_with("~~~") {
            in_fence = !in_fence;
            if !paragraph.is_empty() {
                break;
            }
            continue;
        }
        // A line of `=` or `-` under text makes that text a (setext) heading.
        let underline = !line.is_empty() && line.chars().all(|c| matches!(c, '=' | '-' | ' '));
        if underline && !paragraph.is_empty() {
            paragraph.clear();
            continue;
        }
        let skipped = in_fence
            || line.starts_with('#')
            || line.starts_with('<')
            || line.starts_with("![")
            || line.starts_with("[![")
            || line.starts_with('|')
            || line.starts_with('>')
            || line.chars().all(|c| matches!(c, '=' | '-' | '*' | '_' | ' '));
        if line.is_empty() || skipped {
            if !paragraph.is_empty() {
                break;
            }
            continue;
        }
        paragraph.push(line);
    }
    let text = plain(&paragraph.join(" "));
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.is_empty() {
        return None;
    }
    if text.chars().count() <= SUMMARY_MAX_CHARS {
        return Some(text);
    }
    let cut: String = text.chars().take(SUMMARY_MAX_CHARS).collect();
    let cut = cut.rsplit_once(' ').map_or(cut.as_str(), |(head, _)| head).trim_end_matches([',', ';', ':', '.']);
    Some(format!("{cut}…"))
}

/// Markdown inline marks removed: `[text](url)` → `text`, `**`, `__`, `` ` `` and `*` dropped.
fn plain(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut rest = markdown;
    while let Some(c) = rest.chars().next() {
        if c == ']' && rest[1..].starts_with('(') {
            // The link's target, up to its closing parenthesis, is not text.
            match rest.find(')') {
                Some(end) => rest = &rest[end + 1..],
                None => rest = "",
            }
            continue;
        }
        if !matches!(c, '[' | ']' | '*' | '`') && !rest.starts_with("__") {
            out.push(c);
        } else if rest.starts_with("__") {
            rest = &rest[2..];
            continue;
        }
        rest = &rest[c.len_utf8()..];
    }
    out
}
