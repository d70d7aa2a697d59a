//! The checks of entry names and of the tree they make: every entry stays inside the module
//! directory, links included.

use std::collections::BTreeSet;

use super::{Entry, Kind, NAME_MAX_BYTES};

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

/// An entry name or link target from the archive's bytes: UTF-8, at most `NAME_MAX_BYTES`.
pub(super) fn entry_name(raw: &[u8]) -> Result<String, String> {
    if raw.len() > NAME_MAX_BYTES {
        return Err(format!("an entry name or link target is longer than {NAME_MAX_BYTES} bytes"));
    }
    if raw.contains(&b'\n') {
        return Err("an entry name contains a newline".into());
    }
    String::from_utf8(raw.to_vec()).map_err(|_| {
        format!("entry name {:?} is not UTF-8", String::from_utf8_lossy(raw).chars().take(64).collect::<String>())
    })
}

/// A path without `.` and empty components, and without a trailing `/` (`./a//b/` is `a/b`).
pub(super) fn normalise(name: &str) -> String {
    name.split('/').filter(|p| !p.is_empty() && *p != ".").collect::<Vec<_>>().join("/")
}

/// `a` and `a/b` for `a/b/c`.
pub(super) fn proper_prefixes(path: &str) -> impl Iterator<Item = &str> {
    path.match_indices('/').map(move |(i, _)| &path[..i])
}

/// Every entry's path, and every link, against the rules in the module documentation.
pub(super) fn check_tree(entries: &[Entry]) -> Result<(), String> {
    let links: BTreeSet<String> =
        entries.iter().filter(|e| matches!(e.kind, Kind::Symlink(_))).map(|e| normalise(&e.name)).collect();
    let below_link = |path: &str| proper_prefixes(path).find(|p| links.contains(*p)).map(str::to_string);
    for entry in entries {
        check_entry_path(&entry.name)?;
        let path = normalise(&entry.name);
        if let Some(link) = below_link(&path) {
            return Err(format!(
                "entry {:?} lies below the symbolic link {:?}: unpacking it would write through the link",
                crate::address::printable(&entry.name),
                crate::address::printable(&link)
            ));
        }
        match &entry.kind {
            Kind::Symlink(target) => check_symlink(&path, target, &links)?,
            Kind::Hardlink(target) => {
                let bad = |why: &str| {
                    format!(
                        "hard link {:?} -> {:?} {why}",
                        crate::address::printable(&entry.name),
                        crate::address::printable(target)
                    )
                };
                check_entry_path(target).map_err(|_| bad("names something outside the module"))?;
                if below_link(&normalise(target)).is_some() {
                    return Err(bad("passes through a symbolic link"));
                }
            }
            Kind::File | Kind::Directory => {}
        }
    }
    Ok(())
}

/// A symbolic link at `path` is relative, and resolving `target` from the link's directory
/// step by step, without passing through another link, never leaves the module.
pub(super) fn check_symlink(path: &str, target: &str, links: &BTreeSet<String>) -> Result<(), String> {
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
    let mut at: Vec<&str> = path.split('/').collect();
    at.pop();
    for part in target.split('/').filter(|p| !p.is_empty() && *p != ".") {
        if !at.is_empty() && links.contains(&at.join("/")) {
            return bad("passes through another link");
        }
        if part == ".." {
            if at.pop().is_none() {
                return bad("climbs out of the module");
            }
        } else {
            at.push(part);
        }
    }
    Ok(())
}
