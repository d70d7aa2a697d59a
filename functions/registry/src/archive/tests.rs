use super::*;
use crate::testing::{Item, gzip, tar, tar_gz, tar_gz_items, tar_without_end_marker, zip, zip_items};
use std::io::Cursor;

const ANY: Bounds = Bounds::UNLIMITED;

fn h1_reference(files: &[(&str, &[u8])]) -> String {
    let mut lines: Vec<String> =
        files.iter().map(|(n, d)| format!("{}  {n}\n", hex::encode(Sha256::digest(d)))).collect();
    lines.sort_by(|a, b| a.split("  ").nth(1).cmp(&b.split("  ").nth(1)));
    format!("h1:{}", base64::engine::general_purpose::STANDARD.encode(Sha256::digest(lines.concat().as_bytes())))
}

/// The pax global header `git archive` writes first (the commit id as a comment).
fn git_archive_header() -> Vec<u8> {
    let record = b"52 comment=0123456789abcdef0123456789abcdef01234567\n";
    let mut header = ::tar::Header::new_ustar();
    header.set_entry_type(::tar::EntryType::XGlobalHeader);
    header.set_path("pax_global_header").unwrap();
    header.set_size(record.len() as u64);
    header.set_cksum();
    let mut block = header.as_bytes().to_vec();
    block.extend_from_slice(record);
    block.resize(1024, 0);
    block
}

fn module(bytes: Vec<u8>, extension: &str) -> Result<(), String> {
    check_module_archive(Cursor::new(bytes), extension, &ANY)
}

#[test]
fn h1_matches_the_cli_algorithm() {
    let files: [(&str, &[u8]); 2] = [("terraform-provider-x_v1", b"binary"), ("LICENSE", b"MIT")];
    let summary = summarise_zip(Cursor::new(zip(&files)), &ANY).unwrap();
    assert_eq!(summary.h1, h1_reference(&files));
    assert_eq!(summary.directory_entries, 0);
    // Directory entries count as empty files and are reported.
    let with_dir: [(&str, &[u8]); 2] = [("docs/", b""), ("docs/a", b"a")];
    let summary = summarise_zip(Cursor::new(zip(&with_dir)), &ANY).unwrap();
    assert_eq!((summary.h1, summary.directory_entries), (h1_reference(&with_dir), 1));
}

#[test]
fn provider_zips() {
    let good = zip(&[("terraform-provider-null_v3.2.1_x5", b"bin"), ("LICENSE", b"x")]);
    assert!(check_provider_zip(Cursor::new(good.clone()), "null", &ANY).is_ok());
    let small = Bounds { unpacked_bytes: 2, entries: u64::MAX };
    let one_entry = Bounds { unpacked_bytes: u64::MAX, entries: 1 };
    let cases: Vec<(Vec<u8>, &str, Bounds, &str)> = vec![
        (b"not a zip".to_vec(), "null", ANY, "not a readable zip"),
        (good.clone(), "random", ANY, "no provider executable terraform-provider-random*"),
        (zip(&[("bin/terraform-provider-null", b"x")]), "null", ANY, "no provider executable"),
        (zip(&[("../terraform-provider-null", b"x")]), "null", ANY, "outside the module directory"),
        (good.clone(), "null", small, "more than the size limit"),
        (good, "null", one_entry, "2 entries, more than the limit of 1"),
        (
            zip_items(&[Item::File("terraform-provider-null", b"x"), Item::Symlink("lib", "/usr/lib")]),
            "null",
            ANY,
            "is absolute",
        ),
    ];
    for (bytes, r#type, bounds, needle) in cases {
        let err = check_provider_zip(Cursor::new(bytes), r#type, &bounds).unwrap_err();
        assert!(err.contains(needle), "{err} lacks {needle}");
    }
}

#[test]
fn module_archives() {
    let ok: Vec<(Vec<u8>, &str)> = vec![
        (tar_gz(&[("main.tf", b"")]), "tar.gz"),
        (tar_gz(&[("./variables.tf.json", b"{}"), ("./modules/x/main.tf", b"")]), "tgz"),
        (zip(&[("main.tofu", b"")]), "zip"),
        // GNU tar pads the archive with zeros to a 10 KiB record: still the end marker.
        (gzip(&[tar(&[Item::File("main.tf", b"")]), vec![0u8; 10240]].concat()), "tar.gz"),
        (tar_gz_items(&[Item::Dir("modules/"), Item::File("main.tf", b"")]), "tar.gz"),
        // `git archive` starts with an archive-wide pax record.
        (gzip(&[git_archive_header(), tar(&[Item::File("main.tf", b"")])].concat()), "tar.gz"),
    ];
    for (bytes, ext) in ok {
        module(bytes, ext).unwrap();
    }
    let mut truncated = tar_gz(&[("main.tf", &[7u8; 50_000])]);
    truncated.truncate(truncated.len() / 2);
    let tiny = Bounds { unpacked_bytes: 1000, entries: u64::MAX };
    let bad: Vec<(Vec<u8>, &str, Bounds, &str)> = vec![
        (b"garbage".to_vec(), "tar.gz", ANY, "not a readable tar.gz"),
        (truncated, "tar.gz", ANY, "not a readable tar.gz"),
        (tar_gz(&[("README.md", b"")]), "tar.gz", ANY, "no .tf, .tf.json or .tofu file in the archive"),
        (tar_gz(&[("vpc-1.0.0/main.tf", b"")]), "tgz", ANY, "not the directory"),
        (zip(&[("/etc/main.tf", b"")]), "zip", ANY, "outside"),
        (tar_gz(&[("main.tf", &[0u8; 10_000])]), "tar.gz", tiny, "size limit"),
        (zip(&[("main.tf", b"")]), "tar.gz", ANY, "not a readable tar.gz"),
        (tar_gz_items(&[Item::File("main.tf", b""), Item::Fifo("pipe")]), "tar.gz", ANY, "is a Fifo"),
    ];
    for (bytes, ext, bounds, needle) in bad {
        let err = check_module_archive(Cursor::new(bytes), ext, &bounds).unwrap_err();
        assert!(err.contains(needle), "{err} lacks {needle}");
    }
}

/// Go's gzip reader (so go-getter, so the CLI) reads every member of a `.tar.gz`; a check
/// that stopped after the first would pass what the second member holds.
#[test]
fn every_gzip_member_is_read_and_the_tar_must_end() {
    let innocent = gzip(&tar_without_end_marker(&[Item::File("main.tf", b"# fine\n")]));
    let hidden_traversal = [innocent.clone(), gzip(&tar(&[Item::File("../../x.tf", b"evil")]))].concat();
    assert!(module(hidden_traversal, "tar.gz").unwrap_err().contains("outside the module directory"));

    let bomb = [innocent.clone(), gzip(&tar(&[Item::File("big.tf", &vec![b'x'; 100_000])]))].concat();
    let bounds = Bounds { unpacked_bytes: 50_000, entries: u64::MAX };
    let err = check_module_archive(Cursor::new(bomb), "tar.gz", &bounds).unwrap_err();
    assert!(err.contains("size limit"), "{err}");

    let whole = gzip(&tar(&[Item::File("main.tf", b"")]));
    let appended = [whole, gzip(&tar(&[Item::File("other.tf", b"")]))].concat();
    assert!(module(appended, "tar.gz").unwrap_err().contains("data after the tar end-of-archive marker"));

    assert!(module(innocent, "tar.gz").unwrap_err().contains("no tar end-of-archive marker"));
}

#[test]
fn links_stay_inside_the_module() {
    let main = Item::File("main.tf", b"");
    let ok: Vec<Vec<Item<'_>>> = vec![
        vec![main, Item::Dir("modules/x/"), Item::Symlink("modules/x/versions.tf", "../../versions.tf")],
        vec![main, Item::Symlink("a/b", ".."), Item::Symlink("c", "./a/b")],
        vec![main, Item::Hardlink("copy.tf", "main.tf")],
    ];
    for items in ok {
        module(tar_gz_items(&items), "tar.gz").unwrap_or_else(|e| panic!("{items:?}: {e}"));
    }
    let bad: Vec<(Vec<Item<'_>>, &str)> = vec![
        (vec![main, Item::Symlink("m", "../../../../home")], "climbs out of the module"),
        (vec![main, Item::Symlink("m", "/home")], "is absolute"),
        (vec![main, Item::Symlink("sub/m", "../..")], "climbs out of the module"),
        (vec![main, Item::Hardlink("h", "/etc/shadow")], "names something outside the module"),
        (vec![main, Item::Hardlink("h", "../x")], "names something outside the module"),
        // Written through a link: `d` is the module root, so `d/..` is outside it.
        (vec![main, Item::Symlink("d", "."), Item::File("d/x.tf", b"")], "lies below the symbolic link"),
        (vec![main, Item::Symlink("a/b", ".."), Item::Symlink("a/b/l", "../..")], "lies below the symbolic link"),
        (vec![main, Item::Symlink("s", "."), Item::Symlink("l", "s/..")], "passes through another link"),
        (vec![main, Item::Symlink("s", "."), Item::Hardlink("h", "s/main.tf")], "passes through a symbolic link"),
    ];
    for (items, needle) in bad {
        let err = module(tar_gz_items(&items), "tar.gz").unwrap_err();
        assert!(err.contains(needle), "{items:?}: {err} lacks {needle}");
    }
    let zipped = zip_items(&[main, Item::Symlink("m", "../../../../home")]);
    assert!(module(zipped, "zip").unwrap_err().contains("climbs out of the module"));
    module(zip_items(&[main, Item::Dir("x/"), Item::Symlink("x/v.tf", "../main.tf")]), "zip").unwrap();
}

#[test]
fn memory_is_bounded_whatever_the_archive_says() {
    let many: Vec<(String, Vec<u8>)> = (0..11).map(|i| (format!("f{i}.tf"), vec![])).collect();
    let many: Vec<(&str, &[u8])> = many.iter().map(|(n, d)| (n.as_str(), d.as_slice())).collect();
    let ten = Bounds { unpacked_bytes: u64::MAX, entries: 10 };
    let err = check_module_archive(Cursor::new(tar_gz(&many)), "tar.gz", &ten).unwrap_err();
    assert!(err.contains("more entries than the limit of 10"), "{err}");
    let err = check_module_archive(Cursor::new(zip(&many)), "zip", &ten).unwrap_err();
    assert!(err.contains("11 entries, more than the limit of 10"), "{err}");

    // A pax header the tar reader would hold in memory whole: refused at 1 MiB.
    let mut header = ::tar::Header::new_ustar();
    header.set_entry_type(::tar::EntryType::XHeader);
    header.set_path("pax").unwrap();
    let records = vec![b'x'; 2 << 20];
    header.set_size(records.len() as u64);
    header.set_cksum();
    let mut builder = ::tar::Builder::new(Vec::new());
    builder.append(&header, records.as_slice()).unwrap();
    let mut file = ::tar::Header::new_ustar();
    file.set_path("main.tf").unwrap();
    file.set_size(0);
    file.set_cksum();
    builder.append(&file, std::io::empty()).unwrap();
    let err = module(gzip(&builder.into_inner().unwrap()), "tar.gz").unwrap_err();
    assert!(err.contains("larger than 1 MiB"), "{err}");

    let long = format!("{}.tf", "a/".repeat(2100));
    assert!(module(tar_gz(&[("main.tf", b""), (&long, b"")]), "tar.gz").unwrap_err().contains("longer than 4096"));
}

/// Two entries with one name: which one a reader unpacks differs between implementations.
#[test]
fn a_zip_may_not_name_two_entries_alike() {
    let mut bytes = zip(&[("main.tf", b"# one"), ("mainXtf", b"# two")]);
    let at: Vec<usize> = bytes.windows(7).enumerate().filter(|(_, w)| *w == b"mainXtf").map(|(i, _)| i).collect();
    assert_eq!(at.len(), 2, "the name in the local and the central header");
    for i in at {
        bytes[i + 4] = b'.';
    }
    assert!(module(bytes, "zip").unwrap_err().contains("two entries have the same name"));
}

#[test]
fn the_check_keeps_the_wanted_files_in_the_same_pass() {
    let big = vec![b'x'; KEPT_FILE_BYTES + 1];
    let files: [(&str, &[u8]); 5] = [
        ("main.tf", b"first"),
        ("./README.md", b"readme"),
        ("notes.txt", b"not wanted"),
        ("big.tf", &big),
        ("main.tf", b"second"),
    ];
    let wanted = |p: &str| p.ends_with(".tf") || p == "README.md";
    let tar = read_module_archive(Cursor::new(tar_gz(&files)), "tar.gz", &ANY, &wanted).unwrap();
    let kept = |k: &[KeptFile], path: &str| k.iter().find(|f| f.path == path).map(|f| f.bytes.clone());
    assert_eq!(kept(&tar, "README.md"), Some(Some(b"readme".to_vec())));
    assert_eq!(kept(&tar, "main.tf"), Some(Some(b"second".to_vec())), "a later entry replaces, as unpacking does");
    assert_eq!(kept(&tar, "big.tf"), Some(None), "named, not kept");
    assert_eq!(kept(&tar, "notes.txt"), None);
    assert_eq!(tar.len(), 3);
    let zipped = read_module_archive(Cursor::new(zip(&files[..4])), "zip", &ANY, &wanted).unwrap();
    assert_eq!(kept(&zipped, "main.tf"), Some(Some(b"first".to_vec())));
    assert_eq!(kept(&zipped, "big.tf"), Some(None));
    assert_eq!(zipped.len(), 3);
    // A bad archive keeps nothing: the check's verdict comes first.
    assert!(read_module_archive(Cursor::new(zip(&[("README.md", b"x".as_slice())])), "zip", &ANY, &wanted).is_err());
}

/// A GNU sparse entry (`tar --sparse`) of `real_size` bytes that holds no data: one hole to
/// its end. The tar crate's builder writes no sparse entries, so the header is made by hand.
fn gnu_sparse(name: &str, real_size: u64) -> ::tar::Header {
    let mut header = ::tar::Header::new_gnu();
    header.set_entry_type(::tar::EntryType::GNUSparse);
    header.set_path(name).unwrap();
    header.set_mode(0o644);
    header.set_size(0);
    let gnu = header.as_gnu_mut().unwrap();
    gnu.sparse[0].set_offset(real_size);
    gnu.sparse[0].set_length(0);
    gnu.set_real_size(real_size);
    header.set_cksum();
    header
}

/// A pax extended header of `records`, for the entry after it, and its data.
fn pax(records: &[(&str, &str)]) -> (::tar::Header, Vec<u8>) {
    let mut data = Vec::new();
    for (key, value) in records {
        // The length counts the whole record, its own digits included.
        let rest = format!(" {key}={value}\n");
        let mut len = rest.len() + 1;
        while format!("{len}").len() + rest.len() != len {
            len += 1;
        }
        data.extend_from_slice(format!("{len}{rest}").as_bytes());
    }
    let mut header = ::tar::Header::new_ustar();
    header.set_entry_type(::tar::EntryType::XHeader);
    header.set_path("PaxHeaders/x").unwrap();
    header.set_size(data.len() as u64);
    header.set_cksum();
    (header, data)
}

/// A regular file's ustar header; its `size` bytes of data are the caller's.
fn ustar_file(name: &str, size: u64) -> ::tar::Header {
    let mut header = ::tar::Header::new_ustar();
    header.set_path(name).unwrap();
    header.set_mode(0o644);
    header.set_size(size);
    header.set_cksum();
    header
}

/// A `.tar.gz` of `main.tf`, then `entries` (each header with its data) as given.
fn module_then(entries: &[(::tar::Header, Vec<u8>)]) -> Vec<u8> {
    let mut builder = ::tar::Builder::new(Vec::new());
    builder.append(&ustar_file("main.tf", 0), std::io::empty()).unwrap();
    for (header, data) in entries {
        builder.append(header, data.as_slice()).unwrap();
    }
    gzip(&builder.into_inner().unwrap())
}

fn repack(bytes: &[u8], bounds: &Bounds) -> Result<Vec<u8>, String> {
    tar_gz_to_zip(Cursor::new(bytes), Cursor::new(Vec::new()), bounds).map(Cursor::into_inner)
}

/// A sparse entry's holes are zeros the tar reader makes up while unpacking (tar-rs for GNU
/// sparse, Go's for GNU and PAX sparse), after the gzip stream the size meter counted: 136
/// bytes became a 64 MiB file past an 8 MiB bound, and its OCI zip. Refused on the header,
/// before a hole is read, in the check and in the repack.
#[test]
fn sparse_files_are_refused_before_their_holes_are_read() {
    const MIB: u64 = 1 << 20;
    let eight = Bounds { unpacked_bytes: 8 * MIB, entries: 100 };
    let default = Bounds { unpacked_bytes: 4 << 30, entries: 100 };
    let map = |map: &str| {
        let mut block = map.as_bytes().to_vec();
        block.resize(512, 0);
        block
    };
    let cases: Vec<(&str, Vec<u8>, Bounds)> = vec![
        ("GNU", module_then(&[(gnu_sparse("zeros.tf", 64 * MIB), vec![])]), eight),
        ("GNU, 5 GiB", module_then(&[(gnu_sparse("zeros.tf", 5 << 30), vec![])]), default),
        (
            "PAX 1.0",
            module_then(&[
                pax(&[
                    ("GNU.sparse.major", "1"),
                    ("GNU.sparse.minor", "0"),
                    ("GNU.sparse.name", "zeros.tf"),
                    ("GNU.sparse.realsize", "67108864"),
                ]),
                (ustar_file("GNUSparseFile.0/zeros.tf", 512), map("1\n67108864\n0\n")),
            ]),
            eight,
        ),
        (
            "PAX 0.1",
            module_then(&[
                pax(&[
                    ("GNU.sparse.size", "67108864"),
                    ("GNU.sparse.numblocks", "1"),
                    ("GNU.sparse.map", "67108864,0"),
                ]),
                (ustar_file("zeros.tf", 0), vec![]),
            ]),
            eight,
        ),
    ];
    for (what, bytes, bounds) in cases {
        let err = check_module_archive(Cursor::new(&bytes), "tar.gz", &bounds).unwrap_err();
        assert!(err.contains("is a sparse file (tar --sparse)"), "{what}: {err}");
        // The repack is bounded on its own, not only because it runs after the check.
        let err = repack(&bytes, &bounds).unwrap_err();
        assert!(err.contains("is a sparse file"), "{what}: repacked: {err}");
    }
}

/// The check and the repack read through one reader with one set of bounds: what the check
/// passes the repack writes, and what exceeds the bound is refused by both. Pax headers under
/// 1 MiB each count against the unpacked size (the stream is counted, not only file data).
#[test]
fn the_repack_is_bounded_as_the_check_is() {
    let comment = "x".repeat(600 << 10);
    let bloated: Vec<(::tar::Header, Vec<u8>)> = (0..3)
        .flat_map(|i| [pax(&[("comment", comment.as_str())]), (ustar_file(&format!("f{i}.tf"), 0), vec![])])
        .collect();
    let bloated = module_then(&bloated);
    let big = tar_gz(&[("main.tf", &vec![b'#'; 2 << 20])]);
    for (what, bytes) in [("1.8 MiB of pax headers", &bloated), ("a 2 MiB file", &big)] {
        check_module_archive(Cursor::new(bytes), "tar.gz", &ANY).unwrap();
        let zipped = repack(bytes, &ANY).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(summarise_zip(Cursor::new(zipped), &ANY).is_ok(), "{what}");
        let one = Bounds { unpacked_bytes: 1 << 20, entries: 100 };
        let err = check_module_archive(Cursor::new(bytes), "tar.gz", &one).unwrap_err();
        assert!(err.contains("more than the size limit"), "{what}: {err}");
        let err = repack(bytes, &one).unwrap_err();
        assert!(err.contains("more than the size limit"), "{what}: repacked: {err}");
    }
    let many: Vec<(String, Vec<u8>)> = (0..11).map(|i| (format!("f{i}.tf"), vec![])).collect();
    let many: Vec<(&str, &[u8])> = many.iter().map(|(n, d)| (n.as_str(), d.as_slice())).collect();
    let ten = Bounds { unpacked_bytes: u64::MAX, entries: 10 };
    assert!(repack(&tar_gz(&many), &ten).unwrap_err().contains("more entries than the limit of 10"));
}

/// Go's zip reader (so the CLI, installing or computing `h1:`) refuses an entry that unpacks
/// to more or fewer bytes than its headers declare; the zip crate refuses only more.
#[test]
fn a_zip_entry_unpacks_to_its_declared_size() {
    let declaring = |delta: i64| {
        let mut bytes = zip(&[("main.tf", b"# a module\n")]);
        // The uncompressed size, in the local and the central header alike.
        for (signature, at) in [(b"PK\x03\x04", 22), (b"PK\x01\x02", 24)] {
            let i = bytes.windows(4).position(|w| w == signature).unwrap() + at;
            let size = u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap());
            bytes[i..i + 4].copy_from_slice(&size.checked_add_signed(delta as i32).unwrap().to_le_bytes());
        }
        bytes
    };
    module(declaring(0), "zip").unwrap();
    let err = module(declaring(1), "zip").unwrap_err();
    assert!(err.contains("unpacks to 11 bytes, not the 12 its header declares"), "{err}");
    let err = module(declaring(-1), "zip").unwrap_err();
    assert!(err.contains("larger than its declared uncompressed size"), "{err}");
}

/// One pax record, `"%d %s=%s\n"`, its length counting the whole record.
fn pax_record(key: &str, value: &[u8]) -> Vec<u8> {
    let rest = key.len() + value.len() + 3;
    let mut length = rest + 1;
    while format!("{length}").len() + rest != length {
        length += 1;
    }
    [format!("{length} {key}=").as_bytes(), value, b"\n"].concat()
}

/// A ustar header block of `name` (at most 100 bytes), `typeflag` and `size` (the data is the
/// caller's), its raw bytes edited by `edit` before the checksum.
fn block(name: &str, typeflag: u8, size: u64, edit: impl FnOnce(&mut [u8; 512])) -> Vec<u8> {
    let mut header = ::tar::Header::new_ustar();
    header.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
    header.set_mode(0o644);
    header.set_mtime(0);
    header.set_size(size);
    // Raw: the tar crate writes an old-style regular file (NUL) as `0`.
    header.as_mut_bytes()[156] = typeflag;
    edit(header.as_mut_bytes());
    header.set_cksum();
    header.as_bytes().to_vec()
}

/// `data` padded with zeros to whole 512-byte blocks.
fn padded(data: &[u8]) -> Vec<u8> {
    let mut data = data.to_vec();
    data.resize(data.len().div_ceil(512) * 512, 0);
    data
}

/// A regular file's header and data.
fn file(name: &str, data: &[u8]) -> Vec<u8> {
    [block(name, b'0', data.len() as u64, |_| {}), padded(data)].concat()
}

/// A pax header (`x`, or `g` for archive-wide) of `records`.
fn pax_header(typeflag: u8, records: &[Vec<u8>]) -> Vec<u8> {
    let data = records.concat();
    [block("PaxHeaders/x", typeflag, data.len() as u64, |_| {}), padded(&data)].concat()
}

/// A `.tar.gz` of `main.tf`, then `parts` (header blocks and padded data) as given, then the
/// end-of-archive marker.
fn after_main(parts: &[Vec<u8>]) -> Vec<u8> {
    gzip(&[file("main.tf", b"variable \"region\" {}\n"), parts.concat(), vec![0; 1024]].concat())
}

/// Each (what, entries after main.tf, words of the refusal) is refused, as an upload and
/// when repacked for OCI, with those words.
fn each_is_refused(cases: Vec<(&str, Vec<Vec<u8>>, &str)>) {
    for (what, parts, needle) in cases {
        let bytes = after_main(&parts);
        let err = module(bytes.clone(), "tar.gz").unwrap_err();
        assert!(err.contains(needle), "{what}: {err}");
        let err = repack(&bytes, &ANY).unwrap_err();
        assert!(err.contains(needle), "{what}: repacked: {err}");
    }
}

/// Each (what, entries after main.tf, name) is accepted and, asked for `name` only, keeps it.
fn each_keeps_only_its_file(accepted: Vec<(&str, Vec<Vec<u8>>, &str)>) {
    for (what, parts, name) in accepted {
        let kept = read_module_archive(Cursor::new(after_main(&parts)), "tar.gz", &ANY, &|p| p == name)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(kept.iter().map(|k| k.path.as_str()).collect::<Vec<_>>(), [name], "{what}");
    }
}

/// A file Go's reader would find hidden in another entry's data: its header and data, 1024 bytes.
fn hidden_evil_tf() -> Vec<u8> {
    let hidden = file("evil.tf", b"resource \"terraform_data\" \"pwn\" {}\n");
    assert_eq!(hidden.len(), 1024);
    hidden
}

/// Go's archive/tar (go-getter, so the CLI) reads pax records by their length prefix, so a
/// value may hold a newline; tar-rs split them at newlines. The red team's two archives: a
/// `comment` of `a\nb` hid a `size=0` from tar-rs (1024 bytes of `notes.txt` to the registry, a
/// header and an `evil.tf` to terraform 1.11.4, which unpacked it), and a fake `path` line in a
/// comment named the entry README.md to the registry and evil.tf to the CLI. Each is refused,
/// by the check and by the repack, as is every record Go and tar-rs could read apart; what
/// real writers emit is read as Go reads it.
#[test]
fn pax_records_are_read_by_their_length_as_go_reads_them() {
    let x = |records: &[Vec<u8>]| pax_header(b'x', records);
    let evil = b"resource \"terraform_data\" \"pwn\" {}\n".as_slice();
    let notes = block("notes.txt", b'0', 1024, |_| {});
    let fake_path = pax_record("path", b"README.md");
    let fake_path = [b"x\n".as_slice(), &fake_path[..fake_path.len() - 1]].concat();
    let mut unterminated = pax_record("path", b"evil.tf");
    *unterminated.last_mut().unwrap() = b' ';
    let comment = pax_record("comment", b"0123456789abcdef0123456789abcdef01234567");
    let cases: Vec<(&str, Vec<Vec<u8>>, &str)> = vec![
        (
            "a newline in a value hides a pax size from tar-rs",
            vec![x(&[pax_record("comment", b"a\nb"), pax_record("size", b"0")]), notes.clone(), hidden_evil_tf()],
            "has a value holding a newline",
        ),
        (
            "a path line inside a value",
            vec![x(&[pax_record("comment", &fake_path), pax_record("path", b"evil.tf")]), file("placeholder", evil)],
            "has a value holding a newline",
        ),
        (
            "a key twice: Go keeps the last, tar-rs the first",
            vec![x(&[pax_record("path", b"README.md"), pax_record("path", b"evil.tf")]), file("placeholder", evil)],
            "appears twice in one header",
        ),
        (
            "a pax size other than the header's",
            vec![x(&[pax_record("size", b"0")]), notes.clone(), hidden_evil_tf()],
            "disagree on the size of entry",
        ),
        ("a length past the data", vec![x(&[b"99 path=evil.tf\n".to_vec()]), file("p", evil)], "claims 99 bytes"),
        ("no newline where the length ends", vec![x(&[unterminated]), file("p", evil)], "does not end in a newline"),
        ("no `=`", vec![x(&[b"7 path\n".to_vec()]), file("p", evil)], "has no `=`"),
        ("a NUL in a path", vec![x(&[pax_record("path", b"evil.tf\0.md")]), file("p", evil)], "newline or NUL"),
        ("an empty path: Go keeps the header's", vec![x(&[pax_record("path", b"")]), file("p", evil)], "is empty"),
        ("a time Go cannot parse", vec![x(&[pax_record("mtime", b"soon")]), file("p", evil)], "cannot parse"),
        ("a pax header describing nothing", vec![x(&[pax_record("path", b"evil.tf")])], "describes no entry"),
        (
            "a global header with a path (GNU tar applies it, Go does not)",
            vec![pax_header(b'g', &[pax_record("path", b"evil.tf")]), file("p", evil)],
            "sets \"path\"",
        ),
        (
            "a pax header before a global one",
            vec![
                x(&[pax_record("path", b"evil.tf")]),
                pax_header(b'g', std::slice::from_ref(&comment)),
                file("p", evil),
            ],
            "comes before a global pax header",
        ),
    ];
    each_is_refused(cases);

    let long = format!("{}/main.tf", "d".repeat(150));
    let accepted: Vec<(&str, Vec<Vec<u8>>, &str)> = vec![
        (
            "GNU tar --format=posix: a long path and times",
            vec![
                x(&[
                    pax_record("path", long.as_bytes()),
                    pax_record("mtime", b"1700000000.123456789"),
                    pax_record("atime", b"1700000000.5"),
                    pax_record("ctime", b"1700000000"),
                ]),
                file("placeholder", b"# long\n"),
            ],
            &long,
        ),
        ("a pax size the header's", vec![x(&[pax_record("size", b"3")]), file("notes.tf", b"# x")], "notes.tf"),
        (
            "macOS tar: an extended attribute, raw binary",
            vec![
                x(&[
                    pax_record("SCHILY.xattr.com.apple.provenance", b"\x01\x02\x00\n\x07"),
                    pax_record("LIBARCHIVE.xattr.com.apple.provenance", b"AQIACgc="),
                    pax_record("path", b"notes.tf"),
                ]),
                file("placeholder", b"# x"),
            ],
            "notes.tf",
        ),
        ("git archive: a global comment", vec![pax_header(b'g', &[comment]), file("notes.tf", b"# x")], "notes.tf"),
    ];
    each_keeps_only_its_file(accepted);
}

/// Where Go's reader takes a header's name, type or size from other bytes than tar-rs does,
/// or fails on a field tar-rs accepts, the archive is refused: star's trailer (the red team's
/// archive: the registry saw `ddd…x00000000000/x.tf`, terraform unpacked `ddd…x/x.tf`), a
/// ustar magic with another version or GNU times that are not numbers (Go joins a prefix
/// tar-rs ignores), data after a link or directory (Go reads it as further entries), a file
/// named `…/` or whose mode says directory, and numbers Go cannot read.
#[test]
fn headers_go_reads_otherwise_are_refused() {
    let star = [b"d".repeat(130), b"x00000000000\0".to_vec(), b"00000000000\0".to_vec()].concat();
    let gnu = |b: &mut [u8; 512]| {
        b[257..265].copy_from_slice(b"ustar  \0");
        b[345..348].copy_from_slice(b"dir");
    };
    let link_to_main = |b: &mut [u8; 512]| b[157..164].copy_from_slice(b"main.tf");
    let evil = b"resource \"terraform_data\" \"pwn\" {}\n".as_slice();
    let cases: Vec<(&str, Vec<Vec<u8>>, &str)> = vec![
        (
            "star's trailer",
            vec![
                block("x.tf", b'0', 7, |b| {
                    b[345..345 + star.len()].copy_from_slice(&star);
                    b[508..512].copy_from_slice(b"tar\0");
                }),
                padded(b"# star\n"),
            ],
            "carries star's `tar\\0` trailer",
        ),
        (
            "ustar magic, version not 00",
            vec![block("x.tf", b'0', 0, |b| {
                b[263..265].copy_from_slice(b"\0\0");
                b[345..348].copy_from_slice(b"dir");
            })],
            "reads \"dir/x.tf\", other readers \"x.tf\"",
        ),
        ("GNU times that are not numbers", vec![block("x.tf", b'0', 0, gnu)], "reads \"dir/x.tf\""),
        (
            "a symbolic link with data",
            vec![block("l.tf", b'2', 1024, link_to_main), hidden_evil_tf()],
            "is a symbolic link with 1024 bytes of data",
        ),
        (
            "a hard link with data",
            vec![block("h.tf", b'1', 1024, link_to_main), hidden_evil_tf()],
            "is a hard link with 1024 bytes of data",
        ),
        ("a directory with data", vec![block("d/", b'5', 1024, |_| {}), hidden_evil_tf()], "is a directory with 1024"),
        (
            "an old-style directory (typeflag NUL, `…/`) with data",
            vec![block("d/", 0, 1024, |_| {}), hidden_evil_tf()],
            "is a directory with 1024",
        ),
        ("a file named `…/`", vec![file("evil.tf/", evil)], "is a file whose name ends in `/`"),
        (
            "a file whose mode says directory",
            vec![block("x.tf", b'0', 0, |b| b[100..108].copy_from_slice(b"0040644\0"))],
            "whose mode 40644 says another type",
        ),
        (
            "a mode Go cannot read",
            vec![block("x.tf", b'0', 0, |b| b[100..108].copy_from_slice(b"+000644\0"))],
            "has a mode field that Go's archive/tar does not read",
        ),
        (
            "a base-256 size wider than tar-rs reads",
            vec![block("x.tf", b'0', 0, |b| {
                b[124..136].copy_from_slice(&[0x80, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0]);
            })],
            "has a size field",
        ),
    ];
    each_is_refused(cases);

    let long = format!("{}/main.tf", "d".repeat(150));
    let mut prefixed = ::tar::Header::new_ustar();
    prefixed.set_path(&long).unwrap();
    prefixed.set_size(0);
    prefixed.set_cksum();
    let accepted: Vec<(&str, Vec<Vec<u8>>, &str)> = vec![
        ("ustar, a name with a prefix", vec![prefixed.as_bytes().to_vec()], &long),
        ("an old-style directory", vec![block("d/", 0, 0, |_| {}), file("d/x.tf", b"")], "d/x.tf"),
        ("pre-POSIX (v7)", vec![block("x.tf", b'0', 0, |b| b[257..265].fill(0))], "x.tf"),
        (
            "GNU, times that are numbers",
            vec![block("x.tf", b'0', 0, |b| {
                gnu(b);
                b[345..357].copy_from_slice(b"15000000000\0")
            })],
            "x.tf",
        ),
        (
            "a mode with the type bits",
            vec![block("x.tf", b'0', 0, |b| b[100..108].copy_from_slice(b"0100644\0"))],
            "x.tf",
        ),
    ];
    each_keeps_only_its_file(accepted);
}

/// No module nests 128 directories; past that an entry is refused as it is read (the red
/// team's 300 KB archive of 19,981 entries 2,040 directories deep cost the tree check 25.6 s).
#[test]
fn paths_are_at_most_128_components_deep() {
    let at = |depth: usize| format!("{}x.tf", "d/".repeat(depth - 1));
    let main = Item::File("main.tf", b"");
    module(tar_gz_items(&[main, Item::File(&at(128), b"")]), "tar.gz").unwrap();
    module(zip(&[("main.tf", b""), (&at(128), b"")]), "zip").unwrap();
    let deep_target = format!("{}x", "a/".repeat(128));
    let refused: Vec<(&str, Vec<u8>)> = vec![
        ("a file", tar_gz_items(&[main, Item::File(&at(129), b"")])),
        ("a link's target", tar_gz_items(&[main, Item::Symlink("l", &deep_target)])),
        ("a zip entry", zip(&[("main.tf", b""), (&at(129), b"")])),
    ];
    for (what, bytes) in refused {
        let extension = if what.contains("zip") { "zip" } else { "tar.gz" };
        let err = module(bytes, extension).unwrap_err();
        assert!(err.contains("129 path components, more than the limit of 128"), "{what}: {err}");
    }
}

/// The tree check reads each entry's path once (and a link's target once more), counted, not
/// timed: a set of link paths looked up once per prefix read each entry's path once per
/// component, the square of its depth (5.1 s for the red team's archive at -O).
#[test]
fn the_tree_check_is_linear_in_the_paths() {
    let spine = "d/".repeat(126);
    let link = |name: String, target: &str| Entry { name, kind: Kind::Symlink(target.into()) };
    // A link beside every directory of the spine, so no walk down it ends early.
    let mut entries: Vec<Entry> = (0..126).map(|depth| link(format!("{}l", "d/".repeat(depth)), "x")).collect();
    for i in 0..1000 {
        entries.push(link(format!("{spine}l{i}"), "../x"));
        entries.push(Entry { name: format!("{spine}f{i}"), kind: Kind::File });
    }
    let bytes: usize = entries
        .iter()
        .map(|e| match &e.kind {
            Kind::Symlink(target) => e.name.len() + target.len(),
            _ => e.name.len(),
        })
        .sum();
    tree::READ.with(|read| read.set(0));
    tree::check_tree(&entries).unwrap();
    let read = tree::READ.with(std::cell::Cell::get);
    assert!(read <= 2 * bytes, "{read} bytes read for {bytes} bytes of paths");
    assert!(read >= bytes / 2, "{read} bytes read: the walk is counted");
}
