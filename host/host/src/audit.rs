//! The audit log: one JSON line per authorization decision and per call.
//!
//! Each line records when, where (Location and session — an authenticated
//! MCP caller runs in `caller:<subject>`), who (origin), what (capability,
//! package digest), the invocation's fingerprint, the rule or approval that
//! decided, and the outcome code with the call's usage. It never holds an
//! input value, an output or a secret: the fingerprint (sha256 over the
//! canonical invocation, input included) identifies the call instead.
//!
//! The file is bounded: when a line would take it past `max_bytes`, it is
//! renamed to `<name>.1` (replacing the previous one) and a new file starts,
//! so at most twice `max_bytes` is kept.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::Serialize;

/// Default bound of one audit file: 16 MiB.
pub const DEFAULT_AUDIT_MAX_BYTES: u64 = 16 << 20;

/// Why the audit log could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuditError {
    /// The file could not be read.
    #[error("cannot read the audit log {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// One line of the audit log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct AuditEntry {
    /// Unix milliseconds.
    pub time: i64,
    /// The Location.
    pub location: String,
    /// The session (for an authenticated MCP caller, `caller:<subject>`).
    pub session: Option<String>,
    /// Who called: `loop_run`, `product` or `automation`.
    pub origin: String,
    /// The capability called.
    pub capability: String,
    /// The content digest of the package that provides it.
    pub package_digest: Option<String>,
    /// sha256 over the canonical invocation (input included): identifies the
    /// call without recording its input.
    pub fingerprint: String,
    /// The authorization rule that decided, when one did.
    pub rule: Option<String>,
    /// The approval that was asked for, or claimed to run the call.
    pub approval_id: Option<String>,
    /// `ok`, `approval_required`, or the failure's stable code.
    pub outcome: String,
    /// Fuel the guest consumed, when it ran.
    pub fuel: Option<u64>,
    /// Wall-clock milliseconds of the run, when it ran.
    pub wall_ms: Option<u64>,
}

/// An append-only, size-bounded JSON-lines audit file.
#[derive(Debug)]
pub struct AuditLog {
    path: PathBuf,
    max_bytes: u64,
    /// The file appended to, kept open between lines (a call costs a stat
    /// and a write, not an open and a close as well).
    open: Mutex<Option<OpenLog>>,
}

/// The audit file this log has open, and which file it is.
#[derive(Debug)]
struct OpenLog {
    file: File,
    identity: Option<FileIdentity>,
}

impl AuditLog {
    /// A log at `path` rotated at `max_bytes` (at least one line is always kept).
    pub fn new(path: impl Into<PathBuf>, max_bytes: u64) -> Self {
        AuditLog {
            path: path.into(),
            max_bytes,
            open: Mutex::new(None),
        }
    }

    /// The file written to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `entry`; a failure is logged, never the call's failure.
    pub(crate) fn record(&self, entry: &AuditEntry) {
        if let Err(error) = self.append(entry) {
            tracing::error!(path = %self.path.display(), %error, "could not write the audit log");
        }
    }

    fn append(&self, entry: &AuditEntry) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(entry)?;
        line.push(b'\n');
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        // The file at the path now: this or another process (sharing the
        // data directory) may have rotated it since the last line.
        let mut current = Found::at(&self.path).ok();
        let size = current.as_ref().map_or(0, |found| found.size);
        if size > 0 && size + line.len() as u64 > self.max_bytes {
            std::fs::rename(&self.path, rotated(&self.path))?;
            current = None;
        }
        let still_current = match (open.as_ref(), current.as_ref()) {
            (Some(log), Some(found)) => log.identity.is_some() && log.identity == found.identity,
            _ => false,
        };
        if !still_current {
            // 0600: the log names callers and what they ran.
            let file = crate::private::file_options()
                .create(true)
                .append(true)
                .open(&self.path)?;
            let identity = Found::of(&file).ok().and_then(|found| found.identity);
            *open = Some(OpenLog { file, identity });
        }
        let log = open.as_mut().expect("opened above");
        // One write per line: appends from several processes do not interleave.
        log.file.write_all(&line)
    }
}

/// Which file a path (or an open file) is, and its size.
struct Found {
    identity: Option<FileIdentity>,
    size: u64,
}

/// Which file a path names (device and inode), to notice a rotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileIdentity {
    device: u64,
    inode: u64,
}

#[cfg(target_os = "linux")]
impl Found {
    /// Asks for the inode and the size only. Asking for a timestamp (as
    /// `std::fs::metadata` does) marks the file's times as queried, and a
    /// file system with multigrain timestamps (Linux 6.13 and later; ext4
    /// among them) then gives the next write a fine-grained mtime, so every
    /// line dirtied the inode (docs/benchmarks/mcp-server.md, "The audit line's stat asks
    /// for no timestamp": stat and line 3.9-4.5 us that way, 2.2-3.0 us now).
    const ASKED: rustix::fs::StatxFlags =
        rustix::fs::StatxFlags::INO.union(rustix::fs::StatxFlags::SIZE);

    fn at(path: &Path) -> std::io::Result<Found> {
        let asked = rustix::fs::statx(
            rustix::fs::CWD,
            path,
            rustix::fs::AtFlags::empty(),
            Self::ASKED,
        );
        Found::from_statx_or(asked, || std::fs::metadata(path))
    }

    fn of(file: &File) -> std::io::Result<Found> {
        let asked = rustix::fs::statx(file, c"", rustix::fs::AtFlags::EMPTY_PATH, Self::ASKED);
        Found::from_statx_or(asked, || file.metadata())
    }

    /// What `statx` answered, or what `std` reads where `statx` is refused
    /// (ENOSYS, or EPERM under a seccomp filter) or left out what was asked.
    fn from_statx_or(
        asked: rustix::io::Result<rustix::fs::Statx>,
        metadata: impl FnOnce() -> std::io::Result<std::fs::Metadata>,
    ) -> std::io::Result<Found> {
        match asked {
            Ok(statx) if Self::answered(&statx) => Ok(Found::from_statx(&statx)),
            Ok(_) | Err(rustix::io::Errno::NOSYS | rustix::io::Errno::PERM) => {
                Ok(Found::from_metadata(&metadata()?))
            }
            Err(error) => Err(error.into()),
        }
    }

    /// Whether the file system filled in what was asked (one that does not
    /// know inode numbers leaves them out, and every file would look alike).
    fn answered(statx: &rustix::fs::Statx) -> bool {
        rustix::fs::StatxFlags::from_bits_retain(statx.stx_mask).contains(Self::ASKED)
    }

    fn from_statx(statx: &rustix::fs::Statx) -> Found {
        Found {
            identity: Some(FileIdentity {
                device: rustix::fs::makedev(statx.stx_dev_major, statx.stx_dev_minor),
                inode: statx.stx_ino,
            }),
            size: statx.stx_size,
        }
    }
}

#[cfg(not(target_os = "linux"))]
impl Found {
    fn at(path: &Path) -> std::io::Result<Found> {
        Ok(Found::from_metadata(&std::fs::metadata(path)?))
    }

    fn of(file: &File) -> std::io::Result<Found> {
        Ok(Found::from_metadata(&file.metadata()?))
    }
}

impl Found {
    fn from_metadata(metadata: &std::fs::Metadata) -> Found {
        Found {
            identity: FileIdentity::of(metadata),
            size: metadata.len(),
        }
    }
}

impl FileIdentity {
    #[cfg(unix)]
    fn of(metadata: &std::fs::Metadata) -> Option<Self> {
        use std::os::unix::fs::MetadataExt as _;
        Some(Self {
            device: metadata.dev(),
            inode: metadata.ino(),
        })
    }

    /// Elsewhere the file is opened for every line.
    #[cfg(not(unix))]
    fn of(_metadata: &std::fs::Metadata) -> Option<Self> {
        None
    }
}

/// `<path>.1`.
fn rotated(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".1");
    PathBuf::from(name)
}

/// The last `n` lines of the log at `path` (the rotated file first when the
/// current one holds fewer), oldest first.
pub fn audit_tail(path: &Path, n: usize) -> Result<Vec<String>, AuditError> {
    let mut lines = read_lines(path)?;
    if lines.len() < n {
        let mut older = read_lines(&rotated(path))?;
        older.append(&mut lines);
        lines = older;
    }
    let skip = lines.len().saturating_sub(n);
    Ok(lines.split_off(skip))
}

fn read_lines(path: &Path) -> Result<Vec<String>, AuditError> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(AuditError::Read {
                path: path.to_owned(),
                source,
            });
        }
    };
    BufReader::new(file)
        .lines()
        .collect::<Result<_, _>>()
        .map_err(|source| AuditError::Read {
            path: path.to_owned(),
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(i: i64) -> AuditEntry {
        AuditEntry {
            time: i,
            location: "default".into(),
            session: None,
            origin: "loop_run".into(),
            capability: "echo.echo".into(),
            package_digest: Some("d".into()),
            fingerprint: format!("{i:064}"),
            rule: None,
            approval_id: None,
            outcome: "ok".into(),
            fuel: Some(1),
            wall_ms: Some(2),
        }
    }

    #[test]
    fn the_log_is_bounded_and_rotated_and_tail_reads_across_the_rotation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let line_len = serde_json::to_vec(&entry(0)).unwrap().len() as u64 + 1;
        let log = AuditLog::new(&path, line_len * 3);
        for i in 0..8 {
            log.record(&entry(i));
        }
        let size = |p: &Path| std::fs::metadata(p).unwrap().len();
        assert!(size(&path) <= line_len * 3);
        assert!(size(&rotated(&path)) <= line_len * 3);
        let tail: Vec<AuditEntry> = audit_tail(&path, 4)
            .unwrap()
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(
            tail.iter().map(|e| e.time).collect::<Vec<_>>(),
            [4, 5, 6, 7]
        );
        assert!(audit_tail(&dir.path().join("none"), 3).unwrap().is_empty());
    }

    /// The path's and the open file's identities are read alike (and as the
    /// standard library reads them): otherwise the log would reopen the
    /// file for every line, or miss a rotation.
    #[test]
    fn the_path_and_the_open_file_have_one_identity() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap();
        let (at, of) = (Found::at(&path).unwrap(), Found::of(&file).unwrap());
        let standard = Found::from_metadata(&std::fs::metadata(&path).unwrap());
        assert!(at.identity.is_some());
        assert_eq!(at.identity, of.identity);
        assert_eq!(at.identity, standard.identity);
        std::fs::rename(&path, rotated(&path)).unwrap();
        File::create(&path).unwrap();
        assert_ne!(Found::at(&path).unwrap().identity, of.identity);
    }

    /// Two hosts on one data directory: each keeps the file open, and a
    /// rotation by one moves the other to the new file (no line is written
    /// into the rotated file after it was rotated).
    #[test]
    fn a_log_kept_open_follows_a_rotation_by_another_writer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let line_len = serde_json::to_vec(&entry(0)).unwrap().len() as u64 + 1;
        let (a, b) = (
            AuditLog::new(&path, line_len * 4),
            AuditLog::new(&path, line_len * 4),
        );
        a.record(&entry(0));
        b.record(&entry(1));
        for i in 2..6 {
            a.record(&entry(i)); // the fifth line rotates
        }
        b.record(&entry(6)); // b's open file is now `.1`: it must reopen
        let times = |p: &Path| -> Vec<i64> {
            read_lines(p)
                .unwrap()
                .iter()
                .map(|l| serde_json::from_str::<AuditEntry>(l).unwrap().time)
                .collect()
        };
        assert_eq!(times(&rotated(&path)), [0, 1, 2, 3]);
        assert_eq!(times(&path), [4, 5, 6]);
        // A file removed under the log is created again.
        std::fs::remove_file(&path).unwrap();
        a.record(&entry(7));
        assert_eq!(times(&path), [7]);
    }
}
