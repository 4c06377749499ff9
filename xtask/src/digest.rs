//! Digests: a package's `SHA256SUMS` and a guest's source fingerprint.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

use crate::guests::Guest;
use crate::workspace;

/// The digest list of a package, relative to its directory.
pub(crate) const SUMS_FILE: &str = "SHA256SUMS";

/// Its signature, when the package was signed (`warden sign`).
pub(crate) const SIGNATURE_FILE: &str = "SHA256SUMS.minisig";

/// `sha256sum`-format lines for the manifest, every schema, prompt and wasm file.
pub(crate) fn package_sums(package_dir: &Path) -> Result<String> {
    let mut files = vec![package_dir.join("manifest.toml")];
    for sub in ["schemas", "prompts", "wasm"] {
        collect_files(&package_dir.join(sub), &mut files)?;
    }
    files.retain(|p| p.extension().is_none_or(|ext| ext != "sha256"));
    files.sort();
    let mut out = String::new();
    for file in files {
        let bytes = std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
        let rel = file
            .strip_prefix(package_dir)
            .expect("collected under the package")
            .to_string_lossy()
            .replace('\\', "/");
        out.push_str(&format!("{}  {rel}\n", hex::encode(Sha256::digest(&bytes))));
    }
    Ok(out)
}

/// A fingerprint of everything a guest's component is built from: its crate,
/// the SDK, the contract, and the guest workspace's manifest and lockfile.
pub(crate) fn source_fingerprint(guest: &Guest) -> Result<String> {
    let guests = workspace::guests_dir();
    let mut files = Vec::new();
    for dir in [guest.dir.clone(), guests.join("sdk"), workspace::wit_dir()] {
        collect_files(&dir, &mut files)?;
    }
    files.extend(
        [guests.join("Cargo.toml"), guests.join("Cargo.lock")]
            .into_iter()
            .filter(|p| p.is_file()),
    );
    files.sort();
    let mut hasher = Sha256::new();
    for file in files {
        let rel = file.strip_prefix(workspace::root()).unwrap_or(&file);
        hasher.update(rel.to_string_lossy().as_bytes());
        hasher.update([0]);
        hasher.update(std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?);
        hasher.update([0]);
    }
    Ok(hex::encode(hasher.finalize()))
}

/// Where the fingerprint of the sources a module was built from is kept.
pub(crate) fn fingerprint_path(guest: &Guest) -> PathBuf {
    guest
        .package_dir
        .join("wasm")
        .join(format!("{}.source.sha256", guest.module))
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    if !dir.is_dir() {
        return Ok(());
    }
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if name == "target" || name.starts_with('.') {
            continue;
        }
        if path.is_dir() {
            collect_files(&path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}
