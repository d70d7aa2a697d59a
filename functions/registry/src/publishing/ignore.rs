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
//! Bounded: at most `MAX_RULES` lines of `MAX_FILE_BYTES`; matching one segment is at most
//! its length times the pattern's, and every comparison of a packing counts against
//! `MAX_COMPARISONS`, past which it stops with an error rather than run for hours on patterns
//! built to backtrack.

/// The file read from the module directory's root.
pub const FILE: &str = ".terraformignore";
/// Largest `.terraformignore` read.
pub const MAX_FILE_BYTES: usize = 64 << 10;
/// Most patterns it may hold.
pub const MAX_RULES: usize = 1000;
/// Longest pattern.
const MAX_PATTERN_BYTES: usize = 1024;

/// Most character comparisons matching may make over one packing (seconds of work; a real
/// file's patterns over 100,000 paths make a few million).
pub const MAX_COMPARISONS: u64 = 500_000_000;

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
    /// Comparisons made so far (`MAX_COMPARISONS`).
    spent: std::cell::Cell<u64>,
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
        Ok(Ignore { rules, spent: std::cell::Cell::new(0) })
    }

    /// Whether the entry at `path` (relative, `/`-separated, no `.` or `..` segments) is left
    /// out; its parent directories were not (the walk does not enter one that is). An error
    /// once the packing's matching has made `MAX_COMPARISONS`.
    pub fn leaves_out(&self, path: &str, is_directory: bool) -> Result<bool, String> {
        let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        match segments.last() {
            Some(&".git") => return Ok(true),
            Some(name) if is_directory && ALWAYS_LEFT_OUT.contains(name) => return Ok(true),
            _ => {}
        }
        let mut budget = MAX_COMPARISONS.saturating_sub(self.spent.get());
        let mut left_out = false;
        for rule in &self.rules {
            if rule.directories_only && !is_directory {
                continue;
            }
            if rule.include == left_out && matches_path(&rule.segments, &segments, &mut budget) {
                left_out = !rule.include;
            }
        }
        self.spent.set(MAX_COMPARISONS - budget);
        if budget == 0 {
            return Err(format!(
                "{FILE}'s patterns took more than {MAX_COMPARISONS} comparisons to match the directory's paths: \
                 simplify them (fewer `*` in one segment, fewer patterns)"
            ));
        }
        Ok(left_out)
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
fn matches_path(pattern: &[String], path: &[&str], budget: &mut u64) -> bool {
    // reachable[j]: the pattern so far matches the first j path segments.
    let mut reachable = vec![false; path.len() + 1];
    reachable[0] = true;
    for (at, segment) in pattern.iter().enumerate() {
        *budget = budget.saturating_sub(path.len() as u64 + 1);
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
                if reachable[j] && matches_segment(segment.as_bytes(), path[j].as_bytes(), budget) {
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
fn matches_segment(pattern: &[u8], name: &[u8], budget: &mut u64) -> bool {
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        if *budget == 0 {
            return false;
        }
        *budget -= 1;
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
        Ignore::parse(rules).unwrap().leaves_out(path, dir).unwrap()
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
        let unlimited = || u64::MAX;
        assert!(matches_segment(b"a*b*c*d", b"aXXbYYcZZd", &mut unlimited()));
        assert!(!matches_segment(b"a*b*c*d", b"aXXbYYcZZ", &mut unlimited()));
        assert!(matches_segment(b"f?o", b"foo", &mut unlimited()));
        assert!(matches_segment(b"\\*x", b"*x", &mut unlimited()));
        assert!(!matches_segment(b"\\*x", b"ax", &mut unlimited()));
        // A pattern of many stars against a long name that never matches: the two-pointer
        // walk, product-bounded (a backtracking matcher takes exponential time here).
        let pattern = "*a".repeat(500) + "b";
        let name = "a".repeat(1000);
        assert!(!matches_segment(pattern.as_bytes(), name.as_bytes(), &mut unlimited()));
        let many = vec!["**".to_string(); 1].into_iter().chain((0..200).map(|_| "x*".to_string())).collect::<Vec<_>>();
        let path: Vec<&str> = std::iter::repeat_n("xy", 127).collect();
        assert!(!matches_path(&many, &path, &mut unlimited()));
    }

    #[test]
    fn oversized_files_and_lines_are_refused() {
        assert!(Ignore::parse(&"a\n".repeat(MAX_RULES + 1)).unwrap_err().contains("more than"));
        assert!(Ignore::parse(&"a".repeat(MAX_PATTERN_BYTES + 1)).unwrap_err().contains("line 1"));
        assert!(Ignore::parse(&"#".repeat(MAX_FILE_BYTES + 1)).unwrap_err().contains("larger"));
    }

    /// At its maximum (1,000 patterns in 64 KiB, each built to backtrack, over names of 255
    /// bytes) matching stops with an error at `MAX_COMPARISONS`, counted, not timed; a
    /// realistic file over 100,000 paths spends a small part of it.
    #[test]
    fn matching_is_bounded_at_the_files_maximum() {
        let hostile: String = (0..MAX_RULES).map(|i| format!("{}{}\n", "*a".repeat(31), i % 10)).collect();
        assert!(hostile.len() <= MAX_FILE_BYTES);
        let rules = Ignore::parse(&hostile).unwrap();
        let name = "a".repeat(255);
        let mut refused = None;
        for n in 0..10_000 {
            if let Err(why) = rules.leaves_out(&format!("d{n}/{name}"), false) {
                refused = Some((n, why));
                break;
            }
        }
        let (n, why) = refused.expect("the budget ends the matching");
        assert!(why.contains("comparisons") && n > 0, "{n}: {why}");
        assert_eq!(rules.spent.get(), MAX_COMPARISONS);

        let real = "*.tfstate\n*.tfstate.*\n.terraform.lock.hcl\n*.tfvars\n!example.tfvars\nexamples/**/.terraform/\ncrash.log\n/tests/fixtures/\n";
        let rules = Ignore::parse(real).unwrap();
        for n in 0..100_000 {
            rules.leaves_out(&format!("modules/m{}/files/file-{n}.tf", n % 100), false).unwrap();
        }
        assert!(rules.spent.get() < MAX_COMPARISONS / 20, "{}", rules.spent.get());
    }
}
