//! Access to a package's files: a directory on disk or bytes in memory.

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// Reads package-relative files. Paths are already checked to be relative,
/// `/`-separated and free of `..`.
pub trait PackageFiles {
    /// The bytes of `path`, or at most `limit + 1` of them so a caller can
    /// tell the file is too large. `ErrorKind::NotFound` when it does not exist.
    fn read(&self, path: &str, limit: usize) -> io::Result<Vec<u8>>;

    /// Whether `path` exists.
    fn exists(&self, path: &str) -> bool {
        self.read(path, 0).is_ok()
    }
}

impl<F> PackageFiles for F
where
    F: Fn(&str) -> io::Result<Vec<u8>>,
{
    fn read(&self, path: &str, _limit: usize) -> io::Result<Vec<u8>> {
        self(path)
    }
}

/// Files of a package directory. Refuses paths that resolve outside it (symlinks).
#[derive(Debug, Clone)]
pub struct DirFiles {
    root: PathBuf,
}

impl DirFiles {
    /// Files under `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        DirFiles { root: root.into() }
    }

    fn resolve(&self, path: &str) -> io::Result<PathBuf> {
        let full = self.root.join(path);
        let real = full.canonicalize()?;
        let root = self.root.canonicalize()?;
        if real.starts_with(&root) {
            Ok(real)
        } else {
            Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("`{path}` resolves outside the package"),
            ))
        }
    }
}

impl PackageFiles for DirFiles {
    fn read(&self, path: &str, limit: usize) -> io::Result<Vec<u8>> {
        let file = std::fs::File::open(self.resolve(path)?)?;
        let mut bytes = Vec::new();
        file.take(limit as u64 + 1).read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    fn exists(&self, path: &str) -> bool {
        self.resolve(path).is_ok_and(|p| p.is_file())
    }
}

/// Files held in memory, as an embedded bundle has them.
#[derive(Debug, Clone, Default)]
pub struct MemFiles {
    files: BTreeMap<String, Vec<u8>>,
}

impl MemFiles {
    /// No files.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add a file at a package-relative path.
    pub fn with(mut self, path: impl Into<String>, bytes: impl Into<Vec<u8>>) -> Self {
        self.files.insert(path.into(), bytes.into());
        self
    }
}

impl<P: Into<String>, B: Into<Vec<u8>>> FromIterator<(P, B)> for MemFiles {
    fn from_iter<I: IntoIterator<Item = (P, B)>>(iter: I) -> Self {
        MemFiles {
            files: iter
                .into_iter()
                .map(|(p, b)| (p.into(), b.into()))
                .collect(),
        }
    }
}

impl PackageFiles for MemFiles {
    fn read(&self, path: &str, _limit: usize) -> io::Result<Vec<u8>> {
        self.files
            .get(path)
            .cloned()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, path.to_owned()))
    }
}

/// The manifest path of a package directory.
pub(crate) fn manifest_path(dir: &Path) -> PathBuf {
    dir.join("manifest.toml")
}
