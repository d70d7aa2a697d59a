//! tar headers read as Go's archive/tar reads them (go-getter unpacks modules with it, so this
//! is what the CLI installs), cross-checked against what tar-rs makes of the same bytes: where
//! the two could name, type or size an entry differently, the archive is refused.
//!
//! tar-rs only frames the stream (`Entries::raw`: one header block, its checksum, its data by
//! the header's size); the headers that describe the next entry (pax `x`, GNU `L` and `K`)
//! are read here, each pax record by its length prefix as POSIX and Go parse it. tar-rs
//! splits pax data at newlines, so a record whose value held `\n…size=0` or `\npath=…` made
//! it frame or name an entry unlike Go: a hidden `evil.tf` the CLI unpacked and no check saw.

use std::collections::BTreeMap;

use super::Kind;
use super::tree::entry_name;

/// Largest pax header or GNU long name Go's reader accepts (`maxSpecialFileSize`): the reader
/// holds it in memory.
pub(super) const SPECIAL_FILE_BYTES: u64 = 1 << 20;

/// The fields of one 512-byte header block as Go's `Reader.readHeader` parses them.
pub(super) struct GoHeader {
    pub(super) typeflag: u8,
    /// The name, with the ustar prefix when Go joins one (up to its first NUL, as Go).
    pub(super) name: Vec<u8>,
    pub(super) linkname: Vec<u8>,
    pub(super) size: i64,
    pub(super) mode: i64,
    /// ustar (`ustar\0` `00`) or GNU (`ustar ` ` \0`) magic: what tar-rs takes extension
    /// headers from.
    pub(super) recognised: bool,
}

/// `s` up to its first NUL (Go's `parser.parseString`, tar-rs's `truncate`).
fn c_string(s: &[u8]) -> &[u8] {
    s.iter().position(|b| *b == 0).map_or(s, |i| &s[..i])
}

/// Go's `parser.parseOctal`: spaces and NULs trimmed at both ends, then up to the first NUL,
/// then octal digits only (`strconv.ParseUint(s, 8, 64)`); `None` where Go fails.
fn go_octal(field: &[u8]) -> Option<i64> {
    let trim = |b: &u8| *b != b' ' && *b != 0;
    let Some(start) = field.iter().position(trim) else { return Some(0) };
    let end = field.iter().rposition(trim).map_or(start, |i| i + 1);
    let digits = c_string(&field[start..end]);
    if digits.is_empty() || !digits.iter().all(|b| (b'0'..=b'7').contains(b)) {
        return None;
    }
    let value = u64::from_str_radix(std::str::from_utf8(digits).ok()?, 8).ok()?;
    // Go converts with int64(x): a 12-digit field cannot reach the sign bit.
    i64::try_from(value).ok()
}

/// Go's `parser.parseNumeric`: base-256 (two's complement, every byte of the field) when the
/// first byte's high bit is set, octal otherwise; `None` where Go fails.
fn go_numeric(field: &[u8]) -> Option<i64> {
    let Some(&first) = field.first() else { return Some(0) };
    if first & 0x80 == 0 {
        return go_octal(field);
    }
    let inv = if first & 0x40 != 0 { 0xff } else { 0 };
    let mut x: u64 = 0;
    for (i, byte) in field.iter().enumerate() {
        let mut c = byte ^ inv;
        if i == 0 {
            c &= 0x7f;
        }
        if x >> 56 > 0 {
            return None;
        }
        x = (x << 8) | u64::from(c);
    }
    let x = i64::try_from(x).ok()?;
    Some(if inv == 0xff { !x } else { x })
}

/// One header block as Go reads it, or why Go refuses it (the CLI would fail to install what
/// the registry accepted) or reads it as tar-rs does not.
pub(super) fn go_header(block: &[u8; 512]) -> Result<GoHeader, String> {
    let shown = crate::address::printable(&String::from_utf8_lossy(c_string(&block[..100]))).to_string();
    let refuse = |why: &str| Err(format!("the tar header of entry {shown:?} {why}"));
    let go_refuses = |field: &str| {
        refuse(&format!(
            "has a {field} field that Go's archive/tar does not read as a number: the terraform CLI would fail to \
             unpack it"
        ))
    };
    // The checksum: Go accepts the unsigned or the signed sum; tar-rs checked the unsigned one.
    let (unsigned, signed) = block.iter().enumerate().fold((0i64, 0i64), |(u, s), (i, b)| {
        let b = if (148..156).contains(&i) { b' ' } else { *b };
        (u + i64::from(b), s + i64::from(b as i8))
    });
    match go_octal(&block[148..156]) {
        Some(sum) if sum == unsigned || sum == signed => {}
        _ => return go_refuses("checksum"),
    }
    let (magic, version, trailer) = (&block[257..263], &block[263..265], &block[508..512]);
    let ustar = magic == b"ustar\0";
    let gnu = magic == b"ustar " && version == b" \0";
    if ustar && trailer == b"tar\0" {
        return refuse(
            "carries star's `tar\\0` trailer: Go's archive/tar then reads a shorter directory prefix than \
             other readers (so another path); archive with GNU tar, bsdtar or git archive",
        );
    }
    // Go parses every numeric field of the header and fails the archive on any it cannot.
    let mut fields = vec![("size", 124..136), ("mode", 100..108), ("uid", 108..116), ("gid", 116..124)];
    fields.push(("mtime", 136..148));
    if ustar || gnu {
        fields.extend([("devmajor", 329..337), ("devminor", 337..345)]);
    }
    let mut numbers = Vec::with_capacity(fields.len());
    for (field, range) in fields {
        match go_numeric(&block[range]) {
            Some(value) => numbers.push(value),
            None => return go_refuses(field),
        }
    }
    let (size, mode) = (numbers[0], numbers[1]);
    let prefix: &[u8] = if ustar {
        c_string(&block[345..500])
    } else if gnu {
        // Go reads GNU's access and change times; where either is set and not a number, it
        // takes the bytes as a ustar prefix (files of Go before 1.8). tar-rs never does.
        let unparsable = |field: &[u8]| field[0] != 0 && go_numeric(field).is_none();
        let prefix = c_string(&block[345..500]);
        if (unparsable(&block[345..357]) || unparsable(&block[357..369])) && prefix.is_ascii() { prefix } else { b"" }
    } else {
        b""
    };
    let mut name = Vec::with_capacity(prefix.len() + 101);
    if !prefix.is_empty() {
        name.extend_from_slice(prefix);
        name.push(b'/');
    }
    name.extend_from_slice(c_string(&block[..100]));
    Ok(GoHeader {
        typeflag: block[156],
        name,
        linkname: c_string(&block[157..257]).to_vec(),
        size,
        mode,
        recognised: (ustar && version == b"00") || gnu,
    })
}

/// A pax header's records by key, read by their length prefix exactly as Go's
/// `parsePAXRecord` reads them (`"%d %s=%s\n"`, the length counting the whole record), and
/// refused where a reader that splits at newlines (tar-rs), or one that applies what Go
/// ignores, could read them otherwise: a malformed record, a newline or NUL in a key or a
/// value, a key twice, a value that is not UTF-8 (binary extended attributes,
/// `SCHILY.xattr.*`, excepted: macOS tar writes them raw, and no reader takes a name or a
/// size from them), or a value Go fails to parse.
pub(super) fn pax_records(data: &[u8]) -> Result<BTreeMap<String, Vec<u8>>, String> {
    let mut records = BTreeMap::new();
    let mut rest = data;
    while !rest.is_empty() {
        let at = data.len() - rest.len();
        let malformed = |why: &str| format!("pax record at byte {at} {why}");
        let space = rest.iter().position(|b| *b == b' ').ok_or_else(|| malformed("has no length"))?;
        let digits = &rest[..space];
        let length: usize = match std::str::from_utf8(digits) {
            Ok(d) if !d.is_empty() && d.len() <= 9 && d.bytes().all(|b| b.is_ascii_digit()) => {
                d.parse().map_err(|_| malformed("has no decimal length"))?
            }
            _ => return Err(malformed("has no decimal length")),
        };
        if length < 5 || length > rest.len() || length <= space + 1 {
            return Err(malformed(&format!("claims {length} bytes, not what the header holds")));
        }
        let (record, after) = rest.split_at(length);
        let Some((b'\n', record)) = record[space + 1..].split_last().map(|(last, r)| (*last, r)) else {
            return Err(malformed("does not end in a newline where its length says"));
        };
        let equals = record.iter().position(|b| *b == b'=').ok_or_else(|| malformed("has no `=`"))?;
        let (key, value) = (&record[..equals], &record[equals + 1..]);
        let key = match std::str::from_utf8(key) {
            Ok(k) if !k.is_empty() && !k.contains(['\n', '\0']) => k,
            _ => return Err(malformed("has an empty key, or one that is not UTF-8 or holds a newline or NUL")),
        };
        let binary = key.starts_with("SCHILY.xattr.");
        if !binary && (value.contains(&b'\n') || value.contains(&0) || std::str::from_utf8(value).is_err()) {
            return Err(format!(
                "pax record {key:?} has a value holding a newline or NUL, or not UTF-8: readers that split pax \
                 data at newlines read other records out of it"
            ));
        }
        check_pax_value(key, value)?;
        // GNU.sparse.* (format 0.0 repeats offsets) is refused as sparse once the entry is known.
        if records.insert(key.to_string(), value.to_vec()).is_some() && !key.starts_with("GNU.sparse.") {
            return Err(format!("pax record {key:?} appears twice in one header: readers keep different ones"));
        }
        rest = after;
    }
    Ok(records)
}

/// A value Go parses (into the header, failing the archive when it cannot), and `path`,
/// `linkpath` and `size` not empty (an empty one makes Go keep the header's field instead).
fn check_pax_value(key: &str, value: &[u8]) -> Result<(), String> {
    let text = std::str::from_utf8(value).unwrap_or_default();
    // strconv.ParseInt(s, 10, 64): an optional sign, then decimal digits.
    let integer = |s: &str| s.parse::<i64>().is_ok();
    let readable = match key {
        "path" | "linkpath" | "size" if value.is_empty() => {
            return Err(format!(
                "pax record {key:?} is empty: Go then keeps the header's field, other readers take the empty value"
            ));
        }
        "size" | "uid" | "gid" => integer(text),
        // parsePAXTime: seconds, then optionally `.` and digits.
        "mtime" | "atime" | "ctime" => {
            let (seconds, fraction) = text.split_once('.').unwrap_or((text, ""));
            integer(seconds) && fraction.bytes().all(|b| b.is_ascii_digit())
        }
        _ => true,
    };
    if readable {
        Ok(())
    } else {
        Err(format!(
            "pax record {key:?} has the value {:?}, which Go's archive/tar cannot parse: the terraform CLI would fail \
             to unpack the archive",
            String::from_utf8_lossy(value)
        ))
    }
}

/// An archive-wide pax header (`g`): Go returns it as an entry of its own and applies none of
/// it to later entries, tar-rs likewise, but GNU tar and libarchive apply its `path`, `size`
/// and the rest to every entry after it. Only a `comment` (`git archive` writes the commit id
/// as one) is accepted.
pub(super) fn global_header(go: &GoHeader, data: &[u8]) -> Result<(), String> {
    let shown = || crate::address::printable(&String::from_utf8_lossy(&go.name)).to_string();
    let records = pax_records(data).map_err(|e| format!("the global pax header {:?}: {e}", shown()))?;
    match records.keys().find(|k| *k != "comment") {
        Some(key) => Err(format!(
            "the global pax header {:?} sets {key:?}: readers disagree on whether it applies to the entries after \
             it (only a comment, as git archive writes, is accepted)",
            shown()
        )),
        None => Ok(()),
    }
}

/// The headers read since the last entry that describe the next one.
#[derive(Default)]
pub(super) struct Pending {
    pax: Option<Vec<u8>>,
    long_name: Option<Vec<u8>>,
    long_link: Option<Vec<u8>>,
}

/// An entry as both readers agree it is.
pub(super) struct Resolved {
    pub(super) name: String,
    pub(super) kind: Kind,
    /// Its permission bits.
    pub(super) mode: u32,
}

impl Pending {
    pub(super) fn is_empty(&self) -> bool {
        self.pax.is_none() && self.long_name.is_none() && self.long_link.is_none()
    }

    /// Bytes of extension headers the next one may still hold: together at most
    /// `SPECIAL_FILE_BYTES`, held in memory until their entry comes.
    pub(super) fn room(&self) -> u64 {
        let held = [&self.pax, &self.long_name, &self.long_link]
            .iter()
            .filter_map(|d| d.as_ref())
            .map(Vec::len)
            .sum::<usize>();
        SPECIAL_FILE_BYTES.saturating_sub(held as u64)
    }

    /// An extension header's data: pax `x`, GNU `L` (long name) or `K` (long link name).
    /// Go lets a second one of a kind replace the first, tar-rs refuses it; so is it here.
    pub(super) fn add(&mut self, go: &GoHeader, data: Vec<u8>) -> Result<(), String> {
        let slot = match go.typeflag {
            b'x' => &mut self.pax,
            b'L' => &mut self.long_name,
            _ => &mut self.long_link,
        };
        if slot.replace(data).is_some() {
            return Err(format!(
                "two {} headers describe one entry: readers keep different ones",
                if go.typeflag == b'x' { "pax" } else { "GNU long name" }
            ));
        }
        Ok(())
    }

    /// The entry `header` (read by Go as `go`, framed by tar-rs as `size` bytes of data)
    /// describes, with the headers before it: its name and link target as Go reads them
    /// (the CLI) and as tar-rs would, refused where the two differ, and refused where Go
    /// frames, types or names it unlike every reader of the registry.
    pub(super) fn resolve(self, header: &tar::Header, go: GoHeader, size: u64) -> Result<Resolved, String> {
        let shown = |raw: &[u8]| crate::address::printable(&String::from_utf8_lossy(raw)).to_string();
        let records = match &self.pax {
            Some(data) => {
                pax_records(data).map_err(|e| format!("the pax header of entry {:?}: {e}", shown(&go.name)))?
            }
            None => BTreeMap::new(),
        };
        if go.typeflag == b'S' || records.keys().any(|k| k.starts_with("GNU.sparse.")) {
            return Err(format!(
                "entry {:?} is a sparse file (tar --sparse): unpacking writes its holes out as zeros the archive \
                 does not hold; archive the module without --sparse",
                shown(&go.name)
            ));
        }
        // Go: the header's field, then a non-empty pax record, then a non-empty GNU long name.
        // tar-rs: a GNU long name (less one final NUL), else the first newline-split line
        // that parses as the record, else the header's field.
        let go_view = |field: &[u8], key: &str, long: &Option<Vec<u8>>| -> Vec<u8> {
            match (long.as_deref().map(c_string), records.get(key)) {
                (Some(long), _) if !long.is_empty() => long.to_vec(),
                (_, Some(value)) => value.clone(),
                _ => field.to_vec(),
            }
        };
        let tar_rs_view = |field: Option<Vec<u8>>, key: &[u8], long: &Option<Vec<u8>>| -> Option<Vec<u8>> {
            if let Some(long) = long {
                return Some(long.strip_suffix(b"\0").unwrap_or(long).to_vec());
            }
            let pax = self.pax.as_deref().and_then(|data| {
                tar::PaxExtensions::new(data).flatten().find(|r| r.key_bytes() == key).map(|r| r.value_bytes().to_vec())
            });
            pax.or(field)
        };
        let disagree = |what: &str, go: &[u8], tar_rs: &[u8]| {
            format!(
                "tar readers disagree on the {what} of an entry: Go's archive/tar (the terraform CLI) reads {:?}, \
                 other readers {:?}; rewrite the archive with GNU tar, bsdtar or git archive",
                shown(go),
                shown(tar_rs)
            )
        };
        let raw_name = go_view(&go.name, "path", &self.long_name);
        let tar_rs_name = tar_rs_view(Some(header.path_bytes().into_owned()), b"path", &self.long_name);
        if tar_rs_name.as_deref() != Some(raw_name.as_slice()) {
            return Err(disagree("name", &raw_name, &tar_rs_name.unwrap_or_default()));
        }
        let name = entry_name(&raw_name)?;
        let link = || -> Result<String, String> {
            let go_link = go_view(&go.linkname, "linkpath", &self.long_link);
            let tar_rs_link =
                tar_rs_view(header.link_name_bytes().map(|l| l.into_owned()), b"linkpath", &self.long_link);
            match tar_rs_link {
                None if go_link.is_empty() => Err(format!("link {:?} has no target", shown(&raw_name))),
                Some(other) if other == go_link => entry_name(&go_link),
                other => Err(disagree("link target", &go_link, &other.unwrap_or_default())),
            }
        };
        let kind = match go.typeflag {
            // Go reads an old-style regular file (typeflag NUL) named `…/` as a directory;
            // a `0` or `7` file so named it unpacks as a file (without the slash).
            0 if name.ends_with('/') => Kind::Directory,
            0 | b'0' | b'7' => Kind::File,
            b'5' => Kind::Directory,
            b'2' => Kind::Symlink(link()?),
            b'1' => Kind::Hardlink(link()?),
            other => {
                return Err(format!(
                    "entry {:?} is a {:?}: a module holds files, directories and links only",
                    shown(&raw_name),
                    tar::EntryType::new(other)
                ));
            }
        };
        let described = match &kind {
            Kind::File => "a file",
            Kind::Directory => "a directory",
            Kind::Symlink(_) => "a symbolic link",
            Kind::Hardlink(_) => "a hard link",
        };
        if name.ends_with('/') && kind != Kind::Directory {
            return Err(format!(
                "entry {:?} is {described} whose name ends in `/`: Go's archive/tar unpacks it as a file, other \
                 readers as a directory",
                shown(&raw_name)
            ));
        }
        // Sizes: Go's and tar-rs's reading of the header agree, a pax size (which Go applies)
        // says the same, and an entry Go reads no data for (directories, links) has none:
        // else what one reader takes as data the other reads as further entries.
        let go_size = records.get("size").map_or(Some(go.size), |v| std::str::from_utf8(v).ok()?.parse().ok());
        if go_size != Some(go.size) || u64::try_from(go.size).ok() != Some(size) {
            return Err(format!(
                "tar readers disagree on the size of entry {:?} (its header, its pax size): what one reads as its \
                 data the other reads as further entries",
                shown(&raw_name)
            ));
        }
        if kind != Kind::File && size != 0 {
            return Err(format!(
                "entry {:?} is {described} with {size} bytes of data: Go's archive/tar reads no data for it and \
                 takes those bytes as further entries, other readers as its data",
                shown(&raw_name)
            ));
        }
        // Go's FileInfo takes the type from the mode's file-type bits as well (go-getter makes
        // a directory of a file whose mode says directory): the bits above the permissions
        // are none, or the ones the type flag means.
        let type_bits = go.mode & !0o7777;
        let expected = match kind {
            Kind::File | Kind::Hardlink(_) => 0o100000,
            Kind::Directory => 0o040000,
            Kind::Symlink(_) => 0o120000,
        };
        if type_bits != 0 && type_bits != expected {
            return Err(format!(
                "entry {:?} is {described} whose mode {:o} says another type: readers disagree on what it is",
                shown(&raw_name),
                go.mode
            ));
        }
        Ok(Resolved { name, kind, mode: (go.mode & 0o777) as u32 })
    }
}
