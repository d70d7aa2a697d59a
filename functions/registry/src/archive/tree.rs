//! The checks of entry names and of the tree they make: every entry stays inside the module
//! directory, links included.

use std::collections::HashMap;

use super::{Entry, Kind, NAME_MAX_BYTES, PATH_MAX_DEPTH};

/// A path inside an archive that stays inside the directory it is unpacked into.
pub(super) fn check_entry_path(name: &str) -> Result<(), String> {
    let bad = name.is_empty()
        || name.starts_with('/')
        || name.contains('\\')
        || name.contains('\0')
        || name.split('/').any(|part| part == "..")
        || name.as_bytes().get(1) == Some(&b':');
    if bad {
        Err(format!("entry {:?} would unpack outside the module directory", crate::address::printable(name)))
    } else {
        Ok(())
    }
}

/// An entry name or link target from the archive's bytes: UTF-8, at most `NAME_MAX_BYTES`, at
/// most `PATH_MAX_DEPTH` components.
pub(super) fn entry_name(raw: &[u8]) -> Result<String, String> {
    if raw.len() > NAME_MAX_BYTES {
        return Err(format!("an entry name or link target is longer than {NAME_MAX_BYTES} bytes"));
    }
    if raw.contains(&b'\n') {
        return Err("an entry name contains a newline".into());
    }
    let name = String::from_utf8(raw.to_vec()).map_err(|_| {
        format!("entry name {:?} is not UTF-8", String::from_utf8_lossy(raw).chars().take(64).collect::<String>())
    })?;
    if depth(&name) > PATH_MAX_DEPTH {
        let shown: String = name.chars().take(120).collect();
        return Err(format!(
            "entry name or link target {:?}{} has {} path components, more than the limit of {PATH_MAX_DEPTH}: no \
             module nests directories that deep",
            crate::address::printable(&shown),
            if shown.len() < name.len() { "…" } else { "" },
            depth(&name)
        ));
    }
    Ok(name)
}

/// A path without `.` and empty components, and without a trailing `/` (`./a//b/` is `a/b`).
pub(super) fn normalise(name: &str) -> String {
    name.split('/').filter(|p| !p.is_empty() && *p != ".").collect::<Vec<_>>().join("/")
}

/// The archive's symbolic links as a tree of path components, so that whether a path lies
/// below a link is one step per component (a set of link paths, looked up once per proper
/// prefix, cost the square of a path's depth: 19,981 entries 2,040 directories deep took
/// seconds).
struct Links {
    /// Each node's children by component; node 0 is the module root.
    children: Vec<HashMap<String, usize>>,
    /// Whether the path a node stands for is a link.
    link: Vec<bool>,
}

impl Links {
    fn new<'a>(paths: impl Iterator<Item = &'a str>) -> Self {
        let mut links = Links { children: vec![HashMap::new()], link: vec![false] };
        for path in paths {
            let mut node = 0;
            for part in path.split('/').filter(|p| !p.is_empty()) {
                node = match links.children[node].get(part) {
                    Some(child) => *child,
                    None => {
                        links.children.push(HashMap::new());
                        links.link.push(false);
                        let child = links.link.len() - 1;
                        links.children[node].insert(part.to_string(), child);
                        child
                    }
                };
            }
            // The root itself (a link named `.`) is never a proper prefix of a path.
            links.link[node] = node != 0;
        }
        links
    }

    /// The node of `part` below `node` (`None`: no link lies at or below that path).
    fn step(&self, node: Option<usize>, part: &str) -> Option<usize> {
        #[cfg(test)]
        READ.with(|read| read.set(read.get() + part.len() + 1));
        node.and_then(|n| self.children[n].get(part).copied())
    }

    fn is_link(&self, node: Option<usize>) -> bool {
        node.is_some_and(|n| self.link[n])
    }

    /// The first proper prefix of the normalised `path` that is a link.
    fn above<'p>(&self, path: &'p str) -> Option<&'p str> {
        let mut node = Some(0);
        let mut end = 0;
        let mut parts = path.split('/').peekable();
        while let Some(part) = parts.next() {
            parts.peek()?;
            end += part.len() + usize::from(end != 0);
            node = self.step(node, part);
            if self.is_link(node) {
                return Some(&path[..end]);
            }
            node?;
        }
        None
    }
}

/// Components of a path or link target that count (not empty, not `.`).
fn depth(path: &str) -> usize {
    path.split('/').filter(|p| !p.is_empty() && *p != ".").count()
}

/// Every entry's path, and every link, against the rules in the module documentation.
pub(super) fn check_tree(entries: &[Entry]) -> Result<(), String> {
    let paths: Vec<String> = entries.iter().map(|e| normalise(&e.name)).collect();
    let links = Links::new(
        entries.iter().zip(&paths).filter(|(e, _)| matches!(e.kind, Kind::Symlink(_))).map(|(_, p)| p.as_str()),
    );
    for (entry, path) in entries.iter().zip(&paths) {
        check_entry_path(&entry.name)?;
        if let Some(link) = links.above(path) {
            return Err(format!(
                "entry {:?} lies below the symbolic link {:?}: unpacking it would write through the link",
                crate::address::printable(&entry.name),
                crate::address::printable(link)
            ));
        }
        match &entry.kind {
            Kind::Symlink(target) => check_symlink(path, target, &links)?,
            Kind::Hardlink(target) => {
                let bad = |why: &str| {
                    format!(
                        "hard link {:?} -> {:?} {why}",
                        crate::address::printable(&entry.name),
                        crate::address::printable(target)
                    )
                };
                check_entry_path(target).map_err(|_| bad("names something outside the module"))?;
                if links.above(&normalise(target)).is_some() {
                    return Err(bad("passes through a symbolic link"));
                }
            }
            Kind::File | Kind::Directory => {}
        }
    }
    Ok(())
}

/// A symbolic link at `path` is relative, and resolving `target` from the link's directory
/// step by step, without passing through another link, never leaves the module. Each step
/// moves one node in the tree of links, so the walk costs the target's length.
fn check_symlink(path: &str, target: &str, links: &Links) -> Result<(), String> {
    let bad = |why: &str| {
        Err(format!(
            "symbolic link {:?} -> {:?} {why}: links must be relative and stay inside the module",
            crate::address::printable(path),
            crate::address::printable(target)
        ))
    };
    if target.is_empty()
        || target.starts_with('/')
        || target.contains('\\')
        || target.contains('\0')
        || target.as_bytes().get(1) == Some(&b':')
    {
        return bad("is absolute or empty");
    }
    // Where the walk is (the link's directory first), and the tree node of each step.
    let mut at: Vec<Option<usize>> = Vec::new();
    let mut node = Some(0);
    let mut parts: Vec<&str> = path.split('/').collect();
    parts.pop();
    for part in parts {
        node = links.step(node, part);
        at.push(node);
    }
    for part in target.split('/').filter(|p| !p.is_empty() && *p != ".") {
        if at.last().is_some_and(|n| links.is_link(*n)) {
            return bad("passes through another link");
        }
        if part == ".." {
            if at.pop().is_none() {
                return bad("climbs out of the module");
            }
        } else {
            let here = at.last().copied().unwrap_or(Some(0));
            at.push(links.step(here, part));
        }
    }
    Ok(())
}

#[cfg(test)]
thread_local! {
    /// Bytes of paths looked up in the tree of links on this thread (each component and its
    /// `/`): the work the test of the tree check counts.
    pub(super) static READ: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}
