//! Archive builders for every test layer (unit, integration, end to end, benchmarks): the one
//! place that makes module archives and provider zips, well-formed and hostile. Compiled for
//! the crate's own tests and, for other crates, with the `test-support` feature; never in a
//! Lambda.

// Builders for tests: a failure to build is a failed test.
#![allow(clippy::unwrap_used)]

use std::io::{Cursor, Write};

#[cfg(feature = "aws")]
pub mod oidc;

/// One entry of an archive to build.
#[derive(Debug, Clone, Copy)]
pub enum Item<'a> {
    /// A regular file and its content.
    File(&'a str, &'a [u8]),
    /// A directory.
    Dir(&'a str),
    /// A symbolic link and its target.
    Symlink(&'a str, &'a str),
    /// A tar hard link and the entry it names.
    Hardlink(&'a str, &'a str),
    /// A named pipe (tar only).
    Fifo(&'a str),
}

/// A tar stream of `items`, ending with the end-of-archive marker (two zero blocks). Names
/// and link targets are written as given, `..` and absolute paths included (the tar crate's
/// own setters refuse those, and hostile archives need them).
pub fn tar(items: &[Item<'_>]) -> Vec<u8> {
    let mut tar = tar::Builder::new(Vec::new());
    for item in items {
        let (name, entry_type, data, link): (&str, tar::EntryType, &[u8], Option<&str>) = match *item {
            Item::File(name, data) => (name, tar::EntryType::Regular, data, None),
            Item::Dir(name) => (name, tar::EntryType::Directory, b"", None),
            Item::Symlink(name, target) => (name, tar::EntryType::Symlink, b"", Some(target)),
            Item::Hardlink(name, target) => (name, tar::EntryType::Link, b"", Some(target)),
            Item::Fifo(name) => (name, tar::EntryType::Fifo, b"", None),
        };
        let mut header = tar::Header::new_gnu();
        header.set_mtime(0);
        header.set_mode(if entry_type == tar::EntryType::Directory { 0o755 } else { 0o644 });
        header.set_entry_type(entry_type);
        header.set_size(data.len() as u64);
        let raw = header.as_old_mut();
        if name.len() <= raw.name.len() && link.is_none_or(|l| l.len() <= raw.linkname.len()) {
            raw.name[..name.len()].copy_from_slice(name.as_bytes());
            if let Some(link) = link {
                raw.linkname[..link.len()].copy_from_slice(link.as_bytes());
            }
            header.set_cksum();
            tar.append(&header, data).unwrap();
        } else if let Some(link) = link {
            tar.append_link(&mut header, name, link).unwrap();
        } else {
            tar.append_data(&mut header, name, data).unwrap();
        }
    }
    tar.into_inner().unwrap()
}

/// The same tar stream cut before its end-of-archive marker: Go's reader accepts it, and a
/// reader that also stops at the end of the first gzip member sees nothing after it.
pub fn tar_without_end_marker(items: &[Item<'_>]) -> Vec<u8> {
    let mut bytes = tar(items);
    bytes.truncate(bytes.len() - 1024);
    bytes
}

/// One gzip member holding `bytes`.
pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

/// A `.tar.gz` of `items`.
pub fn tar_gz_items(items: &[Item<'_>]) -> Vec<u8> {
    gzip(&tar(items))
}

/// A git host's archive of a ref as GitHub makes one (`git archive`): a pax global header
/// naming the commit, then a top-level directory `top/` holding `files`.
pub fn git_archive(top: &str, commit: &str, files: &[(&str, &str)]) -> Vec<u8> {
    let record = |body: &str| {
        // A pax record's length counts its own digits.
        let mut length = body.len() + 2;
        while format!("{length} {body}\n").len() != length {
            length += 1;
        }
        format!("{length} {body}\n")
    };
    let comment = record(&format!("comment={commit}"));
    let mut global = tar::Header::new_ustar();
    global.set_path("pax_global_header").unwrap();
    global.set_entry_type(tar::EntryType::XGlobalHeader);
    global.set_size(comment.len() as u64);
    global.set_mode(0o666);
    global.set_mtime(0);
    global.set_cksum();
    let mut builder = tar::Builder::new(Vec::new());
    builder.append(&global, comment.as_bytes()).unwrap();
    let mut inner = tar(&[Item::Dir(&format!("{top}/"))]);
    inner.truncate(inner.len() - 1024);
    let mut bytes = builder.into_inner().unwrap();
    bytes.truncate(bytes.len() - 1024);
    bytes.extend(inner);
    let named: Vec<(String, &str)> = files.iter().map(|(n, d)| (format!("{top}/{n}"), *d)).collect();
    let items: Vec<Item<'_>> = named.iter().map(|(n, d)| Item::File(n, d.as_bytes())).collect();
    bytes.extend(tar(&items));
    gzip(&bytes)
}

/// The entry names of a `.tar.gz`, in order.
pub fn tar_gz_names(tar_gz: &[u8]) -> Vec<String> {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(tar_gz));
    archive.entries().unwrap().map(|e| e.unwrap().path().unwrap().display().to_string()).collect()
}

/// A `.tar.gz` holding these files.
pub fn tar_gz(files: &[(&str, &[u8])]) -> Vec<u8> {
    tar_gz_items(&files.iter().map(|(n, d)| Item::File(n, d)).collect::<Vec<_>>())
}

/// A module archive (`.tar.gz`) holding these text files.
pub fn module_tar_gz(files: &[(&str, &str)]) -> Vec<u8> {
    tar_gz(&files.iter().map(|(n, d)| (*n, d.as_bytes())).collect::<Vec<_>>())
}

/// A zip of `items` (names ending in `/` are directories).
pub fn zip_items(items: &[Item<'_>]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default();
    for item in items {
        match *item {
            Item::File(name, data) => {
                w.start_file(name, options).unwrap();
                w.write_all(data).unwrap();
            }
            Item::Dir(name) => w.add_directory(name, options).unwrap(),
            Item::Symlink(name, target) => w.add_symlink(name, target, options).unwrap(),
            Item::Hardlink(..) | Item::Fifo(_) => panic!("zip has no {item:?}"),
        }
    }
    w.finish().unwrap().into_inner()
}

/// A zip holding these files (names ending in `/` are directories).
pub fn zip(files: &[(&str, &[u8])]) -> Vec<u8> {
    zip_items(
        &files.iter().map(|(n, d)| if n.ends_with('/') { Item::Dir(n) } else { Item::File(n, d) }).collect::<Vec<_>>(),
    )
}

/// A module archive in `.zip` form holding these text files.
pub fn module_zip(files: &[(&str, &str)]) -> Vec<u8> {
    zip(&files.iter().map(|(n, d)| (*n, d.as_bytes())).collect::<Vec<_>>())
}

/// A provider package as releases ship it: one executable named
/// `terraform-provider-TYPE_vVERSION`, no directory entries. `terraform init` installs it
/// without running it, so the executable is a small script that says what it is.
pub fn provider_zip(r#type: &str, version: &str, marker: &str) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default().unix_permissions(0o755);
    w.start_file(format!("terraform-provider-{type}_v{version}"), options).unwrap();
    w.write_all(format!("#!/bin/sh\n# {type} {version} {marker}\nexit 1\n").as_bytes()).unwrap();
    w.finish().unwrap().into_inner()
}

/// A provider package of about `size` bytes: the executable, then a stored (uncompressed)
/// payload of pseudo-random bytes from `seed`, so no layer can compress or deduplicate it.
/// For benchmarks that move real-size packages.
pub fn sized_provider_zip(r#type: &str, version: &str, size: usize, seed: u8) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let exec = zip::write::SimpleFileOptions::default().unix_permissions(0o755);
    w.start_file(format!("terraform-provider-{type}_v{version}"), exec).unwrap();
    w.write_all(b"#!/bin/sh\nexit 1\n").unwrap();
    let stored = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    w.start_file("payload.bin", stored).unwrap();
    let mut state = 0x9E37_79B9_7F4A_7C15u64 ^ u64::from(seed);
    let mut chunk = vec![0u8; 1 << 16];
    let mut left = size;
    while left > 0 {
        for b in chunk.iter_mut() {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            *b = state as u8;
        }
        let n = left.min(chunk.len());
        w.write_all(&chunk[..n]).unwrap();
        left -= n;
    }
    w.finish().unwrap().into_inner()
}

/// OpenPGP keys made by the tests (no private key is ever committed) and provider releases
/// signed with them, as goreleaser's Terraform provider configuration lays them out.
pub mod signing {
    use pgp::composed::{
        ArmorOptions, DetachedSignature, EncryptionCaps, KeyType, SecretKeyParamsBuilder, SignedPublicKey,
        SignedSecretKey,
    };
    use pgp::crypto::hash::HashAlgorithm;
    use pgp::packet::{KeyFlags, SignatureConfig, SignatureType, Subpacket, SubpacketData};
    use pgp::ser::Serialize;
    use pgp::types::{KeyDetails, Password, Tag, Timestamp};
    use sha2::Digest;

    /// A signing key pair, generated now (Ed25519: fast to make, and what the CLI reads).
    pub struct TestKey {
        secret: SignedSecretKey,
    }

    impl TestKey {
        /// A new key with user ID `NAME <NAME@example.com>`, never expiring.
        pub fn generate(name: &str) -> Self {
            let params = SecretKeyParamsBuilder::default()
                .key_type(KeyType::Ed25519Legacy)
                .can_sign(true)
                .can_certify(true)
                .can_encrypt(EncryptionCaps::None)
                .primary_user_id(format!("{name} <{name}@example.com>"))
                .build()
                .unwrap();
            TestKey { secret: params.generate(rand::thread_rng()).unwrap() }
        }

        /// A new key whose self-signature says it expires `seconds` after its creation.
        pub fn generate_expiring(name: &str, seconds: u32) -> Self {
            let mut key = Self::generate(name);
            let primary = &key.secret.primary_key;
            let mut flags = KeyFlags::default();
            flags.set_sign(true);
            flags.set_certify(true);
            let mut config =
                SignatureConfig::v4(SignatureType::CertPositive, primary.algorithm(), HashAlgorithm::Sha256);
            config.hashed_subpackets = vec![
                Subpacket::regular(SubpacketData::SignatureCreationTime(Timestamp::now())).unwrap(),
                Subpacket::regular(SubpacketData::IssuerFingerprint(primary.fingerprint())).unwrap(),
                Subpacket::regular(SubpacketData::KeyFlags(flags)).unwrap(),
                Subpacket::regular(SubpacketData::KeyExpirationTime(pgp::types::Duration::from_secs(seconds))).unwrap(),
            ];
            let user = key.secret.details.users[0].id.clone();
            let public = primary.public_key();
            let sig = config.sign_certification(primary, &public, &Password::empty(), Tag::UserId, &user).unwrap();
            key.secret.details.users[0].signatures = vec![sig];
            key
        }

        /// The public key, ASCII-armored, as `gpg --armor --export` writes it.
        pub fn public_armor(&self) -> String {
            SignedPublicKey::from(self.secret.clone()).to_armored_string(ArmorOptions::default()).unwrap()
        }

        /// The secret key, armored: only to test that the registry refuses it.
        pub fn secret_armor(&self) -> String {
            self.secret.to_armored_string(ArmorOptions::default()).unwrap()
        }

        /// The primary key's long key ID, upper-case hex.
        pub fn key_id(&self) -> String {
            self.secret.legacy_key_id().to_string().to_uppercase()
        }

        /// A binary detached signature over `document` (`gpg --detach-sign`).
        pub fn sign(&self, document: &[u8]) -> Vec<u8> {
            let sig = DetachedSignature::sign_binary_data(
                rand::thread_rng(),
                &self.secret.primary_key,
                &Password::empty(),
                HashAlgorithm::Sha256,
                document,
            )
            .unwrap();
            let mut out = Vec::new();
            sig.to_writer(&mut out).unwrap();
            out
        }
    }

    /// The files of one provider release: (file name, bytes), zips first, then
    /// `_manifest.json`, `_SHA256SUMS` (over all of them) and `_SHA256SUMS.sig`.
    pub fn release(
        r#type: &str,
        version: &str,
        platforms: &[(&str, &str)],
        protocols: Option<&[&str]>,
        key: &TestKey,
    ) -> Vec<(String, Vec<u8>)> {
        let zips = platforms.iter().map(|(os, arch)| {
            let platform = format!("{os}_{arch}");
            let zip = super::provider_zip(r#type, version, &platform);
            (platform, zip)
        });
        release_of(r#type, version, zips.collect(), protocols, key)
    }

    /// [`release`] of given zips, by platform (`os_arch`): for releases of a chosen size.
    pub fn release_of(
        r#type: &str,
        version: &str,
        zips: Vec<(String, Vec<u8>)>,
        protocols: Option<&[&str]>,
        key: &TestKey,
    ) -> Vec<(String, Vec<u8>)> {
        let mut files = Vec::new();
        for (platform, zip) in zips {
            files.push((format!("terraform-provider-{type}_{version}_{platform}.zip"), zip));
        }
        if let Some(protocols) = protocols {
            let manifest = serde_json::json!({"version": 1, "metadata": {"protocol_versions": protocols}});
            files.push((
                format!("terraform-provider-{type}_{version}_manifest.json"),
                manifest.to_string().into_bytes(),
            ));
        }
        let sums: String = files
            .iter()
            .map(|(name, bytes)| format!("{}  {name}\n", hex::encode(sha2::Sha256::digest(bytes))))
            .collect();
        let signature = key.sign(sums.as_bytes());
        files.push((format!("terraform-provider-{type}_{version}_SHA256SUMS"), sums.into_bytes()));
        files.push((format!("terraform-provider-{type}_{version}_SHA256SUMS.sig"), signature));
        files
    }
}
