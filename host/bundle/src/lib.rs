//! The default packages built into the `warden` binary.
//!
//! `cargo xtask bundle` writes each package's `SHA256SUMS`; this crate's
//! build script embeds every listed file with `include_bytes!` next to its
//! digest, and [`EmbeddedPackage::verify`] checks the bytes against the
//! digests before a host loads them.
//!
//! ```
//! for package in warden_bundle::PACKAGES {
//!     package.verify().expect("embedded bytes match their digests");
//!     assert!(package.file("manifest.toml").is_some());
//! }
//! ```

use sha2::{Digest, Sha256};

/// One file of an embedded package.
#[derive(Debug)]
pub struct EmbeddedFile {
    /// Package-relative path (`schemas/echo/echo.input.v1.json`).
    pub path: &'static str,
    /// Hex sha256 recorded at bundle time.
    pub sha256: &'static str,
    /// The file's bytes.
    pub bytes: &'static [u8],
}

/// A package built into the binary.
#[derive(Debug)]
pub struct EmbeddedPackage {
    /// Directory name under `packages/` (the extension id).
    pub name: &'static str,
    /// Every file of the package's `SHA256SUMS`.
    pub files: &'static [EmbeddedFile],
}

/// An embedded file whose bytes do not match its recorded digest.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("embedded package `{package}`: `{path}` does not match its recorded sha256")]
pub struct DigestMismatch {
    /// Package name.
    pub package: &'static str,
    /// File path inside the package.
    pub path: &'static str,
}

impl EmbeddedPackage {
    /// The bytes of `path`, if the package has that file.
    pub fn file(&self, path: &str) -> Option<&'static [u8]> {
        self.files.iter().find(|f| f.path == path).map(|f| f.bytes)
    }

    /// Check every file against its recorded digest.
    pub fn verify(&self) -> Result<(), DigestMismatch> {
        for file in self.files {
            if hex::encode(Sha256::digest(file.bytes)) != file.sha256 {
                return Err(DigestMismatch {
                    package: self.name,
                    path: file.path,
                });
            }
        }
        Ok(())
    }
}

include!(concat!(env!("OUT_DIR"), "/bundle.rs"));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tampered_file_fails_verification() {
        static FILES: [EmbeddedFile; 1] = [EmbeddedFile {
            path: "manifest.toml",
            sha256: "00",
            bytes: b"id = 1",
        }];
        let package = EmbeddedPackage {
            name: "x",
            files: &FILES,
        };
        assert_eq!(
            package.verify(),
            Err(DigestMismatch {
                package: "x",
                path: "manifest.toml"
            })
        );
    }

    #[test]
    fn bundled_packages_are_embedded_whole() {
        assert!(
            UNBUILT.is_empty(),
            "packages not bundled: {UNBUILT:?}; run `cargo xtask bundle`"
        );
        let echo = PACKAGES
            .iter()
            .find(|p| p.name == "echo")
            .expect("echo is bundled");
        echo.verify().unwrap();
        assert!(
            echo.file("wasm/echo.wasm")
                .is_some_and(|b| b.starts_with(b"\0asm"))
        );
    }
}
