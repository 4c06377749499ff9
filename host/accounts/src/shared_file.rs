//! What lets several processes share one store file (`warden serve` and the
//! CLI on one data directory): a stamp that tells whether the file changed
//! since it was read, and advisory locks on files beside it (`flock` on
//! unix, `LockFileEx` on Windows, through `std::fs::File::lock`).

use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use super::SecretError;

/// Which version of a file was read: a write replaces the file (rename), so
/// on unix its inode changes; length and modification time cover the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FileStamp {
    len: u64,
    modified: Option<SystemTime>,
    inode: Option<(u64, u64)>,
}

impl FileStamp {
    /// The stamp of the file at `path` now; `None` when there is none.
    pub(super) fn of(path: &Path) -> Result<Option<Self>, SecretError> {
        match fs::metadata(path) {
            Ok(meta) => Ok(Some(Self {
                len: meta.len(),
                modified: meta.modified().ok(),
                inode: inode(&meta),
            })),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(SecretError::Io(e.kind().to_string())),
        }
    }
}

#[cfg(unix)]
fn inode(meta: &fs::Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt as _;
    Some((meta.dev(), meta.ino()))
}

#[cfg(not(unix))]
fn inode(_meta: &fs::Metadata) -> Option<(u64, u64)> {
    None
}

/// `<path><suffix>`.
pub(super) fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

fn open_lock_file(path: &Path) -> Result<File, SecretError> {
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| SecretError::Io(e.kind().to_string()))
}

/// Hold the exclusive lock on `path` (created when missing) until the file
/// is dropped. Blocks: for the short read-change-write of a store file.
pub(super) fn lock(path: &Path) -> Result<File, SecretError> {
    let file = open_lock_file(path)?;
    file.lock()
        .map_err(|e| SecretError::Io(e.kind().to_string()))?;
    Ok(file)
}

/// Hold the exclusive lock on `path` until the file is dropped, waiting
/// for it without blocking a thread, at most `patience`.
pub(super) async fn lock_within(path: &Path, patience: Duration) -> Result<File, SecretError> {
    let file = open_lock_file(path)?;
    let deadline = Instant::now() + patience;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(std::fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(SecretError::Io(format!(
                    "{} is still locked after {} s",
                    path.display(),
                    patience.as_secs()
                )));
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(SecretError::Io(e.kind().to_string()));
            }
        }
    }
}
