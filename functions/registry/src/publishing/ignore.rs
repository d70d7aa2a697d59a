//! What a module directory's `.terraformignore` leaves out of the archive packed from it, in
//! `.gitignore`'s syntax (Terraform reads the file with the same syntax when it uploads a
//! configuration): a line a pattern, `#` a comment, `!` includes again what an earlier line
//! left out, a trailing `/` matches only directories, a pattern with a `/` elsewhere is
//! anchored to the module's root (a leading `/` too), one without matches a name at any depth,
//! `*` and `?` match within one path segment, `**` any number of segments (a trailing `/**`
//! at least one: what is inside, not the directory). No `[...]` classes; trailing spaces are
//! dropped. The last matching line decides; a directory left out takes everything in it
//! (nothing inside can be included again, as with git). `.git` (a directory, or a linked work
//! tree's file) and `.terraform/` are left out at any depth, as Terraform leaves them out.
//!
//! Bounded: at most `MAX_RULES` lines of `MAX_FILE_BYTES`, and matching is linear in the
//! segments times the pattern's (no backtracking that grows with input).

/// The file read from the module directory's root.
pub const FILE: &str = ".terraformignore";
/// Largest `.terraformignore` read.
pub const MAX_FILE_BYTES: usize = 64 << 10;
/// Most patterns it may hold.
pub const MAX_RULES: usize = 1000;
/// Longest pattern.
const MAX_PATTERN_BYTES: usize = 1024;

/// Directories never packed: the repository and the CLI's working directory.
const ALWAYS_LEFT_OUT: [&str; 2] = [".git", ".terraform"];

/// One line of the file.
#[derive(Debug, Clone)]
struct Rule {
    /// `!`: what it matches is included again.
    include: bool,
    /// A trailing `/`: it matches only directories.
    directories_only: bool,
    /// Its segments; a pattern not anchored starts with `**`.
    segments: Vec<String>,
}

/// The rules of one `.terraformignore`.
#[derive(Debug, Clone, Default)]
pub struct Ignore {
    rules: Vec<Rule>,
}

impl Ignore {
    /// Read the file's text; a file too large, with too many lines or one too long, is
    /// refused (it could only be a mistake, and its cost would be the packer's).
    pub fn parse(text: &str) -> Result<Ignore, String> {
        if text.len() > MAX_FILE_BYTES {
            return Err(format!("{FILE} is larger than {MAX_FILE_BYTES} bytes"));
        }
        let mut rules = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim_end_matches('\r');
            let line = line.trim_end();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if line.len() > MAX_PATTERN_BYTES {
                return Err(format!("{FILE} line {}: longer than {MAX_PATTERN_BYTES} bytes", n + 1));
            }
            if rules.len() == MAX_RULES {
                return Err(format!("{FILE} has more than {MAX_RULES} patterns"));
            }
            if let Some(rule) = Rule::parse(line) {
                rules.push(rule);
            }
        }
        Ok(Ignore { rules })
    }

    /// Whether the entry at `path` (relative, `/`-separated, no `.` or `..` segments) is left
    /// out; its parent directories were not (the walk does not enter one that is).
    pub fn leaves_out(&self, path: &str, is_directory: bool) -> bool {
        let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        match segments.last() {
            Some(&".git") => return true,
            Some(name) if is_directory && ALWAYS_LEFT_OUT.contains(name) => return true,
            _ => {}
        }
        let mut left_out = false;
        for rule in &self.rules {
            if rule.directories_only && !is_directory {
                continue;
            }
            if rule.include == left_out && matches_path(&rule.segments, &segments) {
                left_out = !rule.include;
            }
        }
        left_out
    }
}

impl Rule {
    fn parse(line: &str) -> Option<Rule> {
        let (include, pattern) = match line.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, line.strip_prefix('\\').unwrap_or(line)),
        };
        let directories_only = pattern.ends_with('/');
        let pattern = pattern.trim_end_matches('/');
        let anchored = pattern.contains('/');
        let pattern = pattern.trim_start_matches('/');
        if pattern.is_empty() {
            return None;
        }
        let mut segments: Vec<String> = Vec::new();
        if !anchored {
            segments.push("**".into());
        }
        for segment in pattern.split('/').filter(|s| !s.is_empty()) {
            // `**/**` is one `**`.
            if segment == "**" && segments.last().is_some_and(|s| s == "**") {
                continue;
            }
            segments.push(segment.to_string());
        }
        Some(Rule { include, directories_only, segments })
    }
}

/// Whether the pattern's segments match the path's: `**` takes zero or more segments. A
/// table over (pattern position, path position), so a pattern of many `**` costs their
/// count times the path's length, never more.
fn matches_path(pattern: &[String], path: &[&str]) -> bool {
    // reachable[j]: the pattern so far matches the first j path segments.
    let mut reachable = vec![false; path.len() + 1];
    reachable[0] = true;
    for (at, segment) in pattern.iter().enumerate() {
        let mut next = vec![false; path.len() + 1];
        // `dir/**` is what `dir` holds: at least one segment when last (and not alone).
        let at_least_one = at + 1 == pattern.len() && at > 0;
        if segment == "**" {
            let mut any = false;
            for j in 0..=path.len() {
                if at_least_one {
                    next[j] = any;
                    any |= reachable[j];
                } else {
                    any |= reachable[j];
                    next[j] = any;
                }
            }
        } else {
            for j in 0..path.len() {
                if reachable[j] && matches_segment(segment.as_bytes(), path[j].as_bytes()) {
                    next[j + 1] = true;
                }
            }
        }
        reachable = next;
    }
    reachable[path.len()]
}

/// `*` and `?` within one segment (a `\` escapes the next byte), by the two-pointer walk:
/// at most the product of the lengths, with no recursion.
fn matches_segment(pattern: &[u8], name: &[u8]) -> bool {
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some(b'*') => {
                star = Some((p, n));
                p += 1;
            }
            Some(b'?') => (p, n) = (p + 1, n + 1),
            Some(b'\\') if pattern.get(p + 1) == Some(&name[n]) => (p, n) = (p + 2, n + 1),
            Some(&c) if c != b'\\' && c == name[n] => (p, n) = (p + 1, n + 1),
            _ => match star {
                Some((sp, sn)) => {
                    (p, n) = (sp + 1, sn + 1);
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(rules: &str, path: &str, dir: bool) -> bool {
        Ignore::parse(rules).unwrap().leaves_out(path, dir)
    }

    #[test]
    fn names_match_at_any_depth_and_anchored_patterns_at_the_root() {
        assert!(out("*.tfstate\n", "terraform.tfstate", false));
        assert!(out("*.tfstate\n", "examples/a/terraform.tfstate", false));
        assert!(!out("*.tfstate\n", "main.tf", false));
        assert!(out("/docs\n", "docs", true));
        assert!(!out("/docs\n", "modules/docs", true));
        assert!(out("examples/*.md\n", "examples/x.md", false));
        assert!(!out("examples/*.md\n", "a/examples/x.md", false));
        assert!(out("**/fixtures/**\n", "a/b/fixtures/c/d.tf", false));
        // `dir/**` is what it holds, not `dir`: a file inside can be included again.
        assert!(!out("build/**\n", "build", true));
        assert!(out("build/**\n", "build/x", true));
        assert!(!out("build/**\n!build/keep.tf\n", "build/keep.tf", false));
        assert!(out("**\n", "anything", false));
        assert!(out("test/**/*.json\n", "test/x.json", false));
    }

    #[test]
    fn the_last_matching_line_decides_and_directories_only_match_directories() {
        let rules = "*.md\n!README.md\n";
        assert!(out(rules, "CHANGES.md", false));
        assert!(!out(rules, "README.md", false));
        assert!(out("build/\n", "build", true));
        assert!(!out("build/\n", "build", false));
        assert!(out("# a comment\n\\#literal\n", "#literal", false));
        assert!(!out("# a comment\n", "# a comment", false));
    }

    #[test]
    fn git_and_the_working_directory_are_always_left_out_at_any_depth() {
        assert!(out("", ".git", true));
        assert!(out("", ".terraform", true));
        assert!(!out("", ".terraform.lock.hcl", false));
        assert!(out("", "examples/x/.terraform", true));
        assert!(out("", "sub/.git", false), "a linked work tree's .git file");
        assert!(!out("", "modules/.gitkeep", false));
    }

    #[test]
    fn segments_match_without_backtracking_blowups() {
        assert!(matches_segment(b"a*b*c*d", b"aXXbYYcZZd"));
        assert!(!matches_segment(b"a*b*c*d", b"aXXbYYcZZ"));
        assert!(matches_segment(b"f?o", b"foo"));
        assert!(matches_segment(b"\\*x", b"*x"));
        assert!(!matches_segment(b"\\*x", b"ax"));
        // A pattern of many stars against a long name that never matches: the two-pointer
        // walk, product-bounded (a backtracking matcher takes exponential time here).
        let pattern = "*a".repeat(500) + "b";
        let name = "a".repeat(1000);
        assert!(!matches_segment(pattern.as_bytes(), name.as_bytes()));
        let many = vec!["**".to_string(); 1].into_iter().chain((0..200).map(|_| "x*".to_string())).collect::<Vec<_>>();
        let path: Vec<&str> = std::iter::repeat_n("xy", 127).collect();
        assert!(!matches_path(&many, &path));
    }

    #[test]
    fn oversized_files_and_lines_are_refused() {
        assert!(Ignore::parse(&"a\n".repeat(MAX_RULES + 1)).unwrap_err().contains("more than"));
        assert!(Ignore::parse(&"a".repeat(MAX_PATTERN_BYTES + 1)).unwrap_err().contains("line 1"));
        assert!(Ignore::parse(&"#".repeat(MAX_FILE_BYTES + 1)).unwrap_err().contains("larger"));
    }
}
