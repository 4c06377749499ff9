//! What tests look for in a data directory.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

/// Every file and directory under `dir` (itself included) with a group or
/// other permission bit, and its mode; links are not followed.
pub fn readable_by_others(dir: &Path) -> Vec<(PathBuf, u32)> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(path) = pending.pop() {
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            found.push((path.clone(), mode));
        }
        if meta.is_dir() {
            for entry in std::fs::read_dir(&path).unwrap() {
                pending.push(entry.unwrap().path());
            }
        }
    }
    found
}

/// Compiled components (`.cwasm` files) under `dir`, at any depth.
pub fn compiled_artifacts(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .map(|e| {
            let path = e.path();
            if path.is_dir() {
                compiled_artifacts(&path)
            } else {
                usize::from(path.extension().is_some_and(|x| x == "cwasm"))
            }
        })
        .sum()
}
