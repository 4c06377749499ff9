//! What the package and `SHA256SUMS` targets share: an archive written to
//! a scratch file and loaded as `warden install` loads one, and the
//! properties of a package that loaded.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::OnceLock;

use sha2::{Digest, Sha256};
use warden_host::{HostError, LoadedPackage, PackageSource, content_digest, load_package};
use warden_manifest::ValidationOptions;

/// Longest entry name an error shows (escaped, each character at most 10
/// bytes as `\u{10ffff}`), plus the ellipsis.
const MAX_SHOWN_ENTRY_BYTES: usize = 200 * 10 + '…'.len_utf8();

/// The scratch archive of this process.
fn scratch() -> &'static PathBuf {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        DIR.get_or_init(|| tempfile::tempdir().expect("a scratch directory"))
            .path()
            .join("package.tar.gz")
    })
}

/// Load `tar` (an uncompressed tar stream), gzipped, as an archive package.
pub(crate) fn load_tar(tar: &[u8]) -> Result<LoadedPackage, HostError> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(tar).expect("gzip in memory");
    let path = scratch();
    std::fs::write(path, gz.finish().expect("gzip in memory")).expect("write the scratch archive");
    load_package(
        &PackageSource::Archive(path.clone()),
        &ValidationOptions::default(),
    )
}

/// A tar stream of `files`, in order.
pub(crate) fn tar_of(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (name, bytes) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        builder
            .append_data(&mut header, name, *bytes)
            .expect("tar in memory");
    }
    builder.into_inner().expect("tar in memory")
}

/// A name as the reader keeps it: normal components only.
fn is_normal(name: &str) -> bool {
    !name.is_empty()
        && name
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != ".." && !c.contains(['\\', '\0']))
        && !name.chars().any(char::is_control)
}

/// A loaded package keeps the manifest, only normal names, and a
/// `SHA256SUMS` listing exactly its other files with their digests; its
/// digest is the content digest of those files.
pub(crate) fn check_loaded(loaded: &LoadedPackage) {
    assert!(
        loaded.files.contains_key("manifest.toml"),
        "no manifest kept"
    );
    for name in loaded.files.keys() {
        assert!(is_normal(name), "kept a file named {name:?}");
    }
    let sums = loaded
        .files
        .get("SHA256SUMS")
        .expect("an archive's package keeps its SHA256SUMS");
    let sums = std::str::from_utf8(sums).expect("SHA256SUMS is UTF-8");
    let listed: BTreeMap<&str, &str> = sums
        .lines()
        .map(|line| {
            let (digest, path) = line.split_once("  ").expect("`<sha256>  <path>`");
            (path, digest)
        })
        .collect();
    let others: BTreeMap<&str, String> = loaded
        .files
        .iter()
        .filter(|(name, _)| name.as_str() != "SHA256SUMS")
        .map(|(name, bytes)| (name.as_str(), hex::encode(Sha256::digest(bytes))))
        .collect();
    assert_eq!(
        listed,
        others.iter().map(|(k, v)| (*k, v.as_str())).collect(),
        "SHA256SUMS does not list exactly the kept files"
    );
    assert_eq!(loaded.digest, content_digest(&loaded.files));
    if let Some(module) = &loaded.module {
        assert!(
            loaded.files.values().any(|bytes| bytes == module),
            "the module is not one of the kept files"
        );
    }
}

/// A refusal says what was wrong, and shows an entry name cut short.
pub(crate) fn check_refusal(error: &HostError) {
    assert!(!error.to_string().is_empty());
    if let HostError::UnsafeEntry { entry, .. } = error {
        assert!(
            entry.len() <= MAX_SHOWN_ENTRY_BYTES,
            "an entry name of {} bytes is shown",
            entry.len()
        );
    }
}
