//! Where a package comes from: a directory, a `.tar.gz` archive, or the
//! bundle built into the binary. Every source is read into memory, checked
//! against its `SHA256SUMS` when it has one (archives and the bundle must),
//! and validated by the manifest layer.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use warden_manifest::{Implementation, MemFiles, Package, ValidationOptions};

use crate::error::HostError;

/// Largest archive accepted (compressed or not), to bound memory.
const MAX_ARCHIVE_BYTES: u64 = 64 * 1024 * 1024;
/// The digest list `cargo xtask bundle` writes into every package.
const SUMS_FILE: &str = "SHA256SUMS";

/// A package to install.
#[derive(Debug, Clone)]
pub enum PackageSource {
    /// A package directory (`packages/echo`).
    Dir(PathBuf),
    /// A `.tar.gz` written by `cargo xtask bundle` (`target/packages/echo.tar.gz`).
    Archive(PathBuf),
    /// A package built into the binary.
    Embedded(&'static warden_bundle::EmbeddedPackage),
}

impl PackageSource {
    /// A directory or an archive, by what `path` is.
    pub fn from_path(path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        if path.is_dir() {
            PackageSource::Dir(path)
        } else {
            PackageSource::Archive(path)
        }
    }

    /// A short description for messages.
    pub fn describe(&self) -> String {
        match self {
            PackageSource::Dir(p) | PackageSource::Archive(p) => p.display().to_string(),
            PackageSource::Embedded(p) => format!("built-in package `{}`", p.name),
        }
    }
}

/// A validated package with its module bytes.
#[derive(Debug, Clone)]
pub struct LoadedPackage {
    /// The resolved manifest.
    pub package: Package,
    /// The component, for `[runtime] kind = "wasm"` packages.
    pub module: Option<Vec<u8>>,
    /// Every file read, by package-relative path (to persist an installed copy).
    pub files: BTreeMap<String, Vec<u8>>,
    /// The package's content digest (see [`content_digest`]): with the id,
    /// what identifies an installed package.
    pub digest: String,
}

/// Read, verify and validate a package.
pub fn load(source: &PackageSource, opts: &ValidationOptions) -> Result<LoadedPackage, HostError> {
    let (root, files) = match source {
        PackageSource::Dir(dir) => (dir.clone(), read_dir_files(dir)?),
        PackageSource::Archive(path) => (path.clone(), read_archive(path)?),
        PackageSource::Embedded(p) => {
            p.verify().map_err(|e| HostError::Digest {
                package: source.describe(),
                path: e.path.to_owned(),
            })?;
            (
                PathBuf::from(p.name),
                p.files
                    .iter()
                    .map(|f| (f.path.to_owned(), f.bytes.to_vec()))
                    .collect(),
            )
        }
    };
    // The embedded bundle was verified above; an archive must carry its
    // digest list; a directory is checked when it has one.
    match files.get(SUMS_FILE) {
        Some(sums) => verify_sums(&source.describe(), sums, &files)?,
        None if matches!(source, PackageSource::Archive(_)) => {
            return Err(HostError::Digest {
                package: source.describe(),
                path: SUMS_FILE.into(),
            });
        }
        None => {}
    }
    let manifest = files
        .get("manifest.toml")
        .ok_or_else(|| HostError::InvalidPackage {
            package: source.describe(),
            reason: "no manifest.toml".into(),
        })?;
    let mem: MemFiles = files.iter().map(|(p, b)| (p.clone(), b.clone())).collect();
    // Packages built into the binary validate as bundled (their tier may use first_party features).
    let opts = &match source {
        PackageSource::Embedded(_) => opts.clone().source(warden_manifest::Source::Bundled),
        _ => opts.clone(),
    };
    let package = warden_manifest::load_from_files("manifest.toml", manifest, &root, &mem, opts)
        .map_err(|diagnostics| HostError::Manifest {
            package: source.describe(),
            diagnostics: Box::new(diagnostics),
        })?;
    let module = match &package.implementation {
        Implementation::Wasm { module } => Some(files.get(module.as_str()).cloned().ok_or_else(
            || HostError::InvalidPackage {
                package: source.describe(),
                reason: format!("module `{module}` is missing; run `cargo xtask bundle`"),
            },
        )?),
        _ => None,
    };
    let digest = content_digest(&files);
    Ok(LoadedPackage {
        package,
        module,
        files,
        digest,
    })
}

/// The sha256 (hex) of the package's digest list: one `<sha256>  <path>`
/// line per file in path order, `SHA256SUMS` itself left out. Two packages
/// with the same files have the same digest, wherever they came from.
pub fn content_digest(files: &BTreeMap<String, Vec<u8>>) -> String {
    let mut list = Sha256::new();
    for (path, bytes) in files.iter().filter(|(path, _)| path.as_str() != SUMS_FILE) {
        list.update(hex::encode(Sha256::digest(bytes)));
        list.update(b"  ");
        list.update(path.as_bytes());
        list.update(b"\n");
    }
    hex::encode(list.finalize())
}

/// Check every line of a `SHA256SUMS` against the files.
fn verify_sums(
    package: &str,
    sums: &[u8],
    files: &BTreeMap<String, Vec<u8>>,
) -> Result<(), HostError> {
    let text = std::str::from_utf8(sums).map_err(|_| HostError::Digest {
        package: package.to_owned(),
        path: SUMS_FILE.into(),
    })?;
    for line in text.lines() {
        let mismatch = || HostError::Digest {
            package: package.to_owned(),
            path: line.to_owned(),
        };
        let (digest, path) = line.split_once("  ").ok_or_else(mismatch)?;
        let bytes = files.get(path).ok_or_else(mismatch)?;
        if hex::encode(Sha256::digest(bytes)) != digest {
            return Err(HostError::Digest {
                package: package.to_owned(),
                path: path.to_owned(),
            });
        }
    }
    Ok(())
}

/// The package's files: `manifest.toml`, `SHA256SUMS`, and everything under
/// `schemas/`, `prompts/` and `wasm/`.
fn read_dir_files(dir: &Path) -> Result<BTreeMap<String, Vec<u8>>, HostError> {
    let mut files = BTreeMap::new();
    for name in ["manifest.toml", SUMS_FILE] {
        let path = dir.join(name);
        if path.is_file() {
            files.insert(name.to_owned(), read(&path)?);
        }
    }
    for sub in ["schemas", "prompts", "wasm"] {
        collect(dir, &dir.join(sub), &mut files)?;
    }
    Ok(files)
}

fn collect(
    root: &Path,
    dir: &Path,
    files: &mut BTreeMap<String, Vec<u8>>,
) -> Result<(), HostError> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries {
        let path = entry.map_err(|e| HostError::io(dir, e))?.path();
        // Symlinks are not followed: a package cannot pull files from outside itself.
        let meta = std::fs::symlink_metadata(&path).map_err(|e| HostError::io(&path, e))?;
        if meta.is_dir() {
            collect(root, &path, files)?;
        } else if meta.is_file() {
            let rel = path
                .strip_prefix(root)
                .expect("under root")
                .to_string_lossy()
                .replace('\\', "/");
            files.insert(rel, read(&path)?);
        }
    }
    Ok(())
}

fn read(path: &Path) -> Result<Vec<u8>, HostError> {
    std::fs::read(path).map_err(|e| HostError::io(path, e))
}

/// Unpack a `.tar.gz` into memory, refusing unsafe or oversized entries.
fn read_archive(path: &Path) -> Result<BTreeMap<String, Vec<u8>>, HostError> {
    let bad = |reason: String| HostError::InvalidPackage {
        package: path.display().to_string(),
        reason,
    };
    let file = std::fs::File::open(path).map_err(|e| HostError::io(path, e))?;
    let gz = flate2::read::GzDecoder::new(file).take(MAX_ARCHIVE_BYTES);
    let mut archive = tar::Archive::new(gz);
    let mut files = BTreeMap::new();
    for entry in archive
        .entries()
        .map_err(|e| bad(format!("not a .tar.gz archive: {e}")))?
    {
        let mut entry = entry.map_err(|e| bad(format!("corrupt archive: {e}")))?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let name = entry
            .path()
            .map_err(|e| bad(format!("bad entry name: {e}")))?
            .to_string_lossy()
            .into_owned();
        if name.starts_with('/') || name.split('/').any(|s| s == "..") || name.contains('\\') {
            return Err(bad(format!("entry `{name}` escapes the package")));
        }
        let mut bytes = Vec::new();
        entry
            .read_to_end(&mut bytes)
            .map_err(|e| bad(format!("reading `{name}`: {e}")))?;
        files.insert(name.trim_start_matches("./").to_owned(), bytes);
    }
    Ok(files)
}
