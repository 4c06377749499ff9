//! Files and directories of the data directory: its owner's alone.
//!
//! The data directory holds every approval's input and its callers'
//! subjects (`approvals.sqlite3`), the audit log, the encrypted secrets, the
//! installed packages and compiled code. Whatever the process's umask, what
//! the host creates there is 0700 (directories) or 0600 (files), and when a
//! host opens the directory it takes group and other permissions off it and
//! its top-level entries (tightening only: an owner's bits are never added
//! or removed, and links are left alone).

use std::fs::OpenOptions;
use std::io;
use std::path::Path;

/// Group and other permission bits.
#[cfg(unix)]
const NOT_OWNER: u32 = 0o077;

/// Create `dir` and its missing parents as 0700.
pub(crate) fn create_dir_all(dir: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Create `dir` (which must not exist; its parent must) as 0700.
pub(crate) fn create_dir(dir: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Options that create a file as 0600 (they write; the caller adds the rest).
pub(crate) fn file_options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.write(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options
}

/// Create the data directory `dir` (0700) if it is missing, and take group
/// and other permissions off it and off every entry directly in it.
pub(crate) fn open_data_dir(dir: &Path) -> io::Result<()> {
    create_dir_all(dir)?;
    tighten(dir)?;
    for entry in std::fs::read_dir(dir)? {
        tighten(&entry?.path())?;
    }
    Ok(())
}

/// Take group and other permissions off `path` (not followed if a link).
#[cfg(unix)]
fn tighten(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        // Gone meanwhile (another process renamed a staging entry).
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    let mode = meta.permissions().mode();
    if meta.file_type().is_symlink() || mode & NOT_OWNER == 0 {
        return Ok(());
    }
    match std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode & !NOT_OWNER)) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

#[cfg(not(unix))]
fn tighten(_path: &Path) -> io::Result<()> {
    Ok(())
}
