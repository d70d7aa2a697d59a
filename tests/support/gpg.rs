//! Real GnuPG, for signatures the registry's own test keys cannot make (an RSA key signing
//! over SHA-1, as an old release pipeline would).

use std::process::{Command, Stdio};

use crate::TempDir;

/// A key made by `gpg --quick-gen-key` in a home directory of its own.
pub struct Gpg {
    home: TempDir,
}

impl Gpg {
    /// A new signing key of `algorithm` (gpg's names: `ed25519`, `rsa2048`, …), or `None`
    /// (said loudly by the caller) without gpg.
    pub fn new_key(name: &str, algorithm: &str) -> Option<Gpg> {
        Command::new("gpg").arg("--version").stdout(Stdio::null()).status().ok()?;
        let gpg = Gpg { home: TempDir::new("gnupg") };
        let uid = format!("{name} <{name}@example.com>");
        gpg.run(&["--quick-gen-key", &uid, algorithm, "sign", "never"]);
        Some(gpg)
    }

    fn run(&self, args: &[&str]) -> Vec<u8> {
        let out = Command::new("gpg")
            .env("GNUPGHOME", self.home.path())
            .args(["--batch", "--quiet", "--pinentry-mode", "loopback", "--passphrase", ""])
            .args(args)
            .output()
            .expect("gpg runs");
        assert!(out.status.success(), "gpg {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        out.stdout
    }

    /// `gpg --armor --export`.
    pub fn public_armor(&self) -> Vec<u8> {
        self.run(&["--armor", "--export"])
    }

    /// `gpg --detach-sign --digest-algo DIGEST` of `document`: a binary detached signature.
    pub fn sign(&self, document: &[u8], digest: &str) -> Vec<u8> {
        let file = self.home.path().join("document");
        std::fs::write(&file, document).expect("write the document");
        let file = file.to_str().expect("UTF-8 path");
        self.run(&["--digest-algo", digest, "--detach-sign", "--output", "-", file])
    }
}
