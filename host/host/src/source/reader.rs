//! The one package reader every source goes through.
//!
//! A directory, an archive and the embedded bundle all end up here. The
//! reader hands the manifest layer only the files it asks for (the manifest,
//! its schemas and prompts, then the module), so a file the manifest does
//! not reference is never read from a directory and never kept from an
//! archive. Every name is normalised by [`normalise`] (only normal
//! components), every file is bounded ([`MAX_FILE_BYTES`], and
//! [`MAX_PACKAGE_BYTES`] in all), and links, devices and FIFOs are refused.
//! When the package carries a `SHA256SUMS`, each file is checked against it
//! as it is read, and a file it does not list is refused.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::HostError;
use crate::signature::{MAX_SIGNATURE_BYTES, SIGNATURE_FILE};

/// Largest package (every kept file together, or a whole unpacked archive).
pub const MAX_PACKAGE_BYTES: u64 = 64 * 1024 * 1024;
/// Largest single file of a package.
pub const MAX_FILE_BYTES: u64 = 32 * 1024 * 1024;
/// The digest list `cargo xtask bundle` writes into every package.
pub(crate) const SUMS_FILE: &str = "SHA256SUMS";
/// Largest `SHA256SUMS` accepted.
const MAX_SUMS_BYTES: usize = 256 * 1024;

/// Where the reader's bytes come from.
enum Files {
    /// A package directory on disk, read lazily.
    Dir(PathBuf),
    /// An unpacked archive or the embedded bundle.
    Mem(BTreeMap<String, Vec<u8>>),
}

/// Reads one package; see the module documentation.
pub(crate) struct Reader {
    package: String,
    files: Files,
    /// `SHA256SUMS` by path, once read.
    sums: Option<BTreeMap<String, String>>,
    /// Every file read so far: what the package keeps.
    kept: RefCell<BTreeMap<String, Vec<u8>>>,
    /// The first refusal met while the manifest layer was reading.
    refused: RefCell<Option<HostError>>,
}

impl Reader {
    /// A reader over a package directory.
    pub(crate) fn dir(package: String, root: PathBuf) -> Self {
        Self::new(package, Files::Dir(root))
    }

    /// A reader over files already in memory (an embedded package).
    pub(crate) fn mem(package: String, files: BTreeMap<String, Vec<u8>>) -> Self {
        Self::new(package, Files::Mem(files))
    }

    /// A reader over a `.tar.gz`, unpacked into memory with every entry checked.
    pub(crate) fn archive(package: String, path: &Path) -> Result<Self, HostError> {
        let file = std::fs::File::open(path).map_err(|e| HostError::io(path, e))?;
        let files = unpack(&package, file)?;
        Ok(Self::new(package, Files::Mem(files)))
    }

    /// A reader over a package pulled from a registry: its package layer (a
    /// `.tar.gz`, unpacked like an archive) and its component, added at the
    /// path the component layer names, which must be a normal package path
    /// no file of the layer has.
    pub(crate) fn pulled(
        package: String,
        layer: &[u8],
        module: Option<(&str, &[u8])>,
    ) -> Result<Self, HostError> {
        let mut files = unpack(&package, layer)?;
        if let Some((path, bytes)) = module {
            let unsafe_entry = |reason: String| HostError::UnsafeEntry {
                package: package.clone(),
                entry: shown_name(path),
                reason,
            };
            let name = normalise(path).map_err(unsafe_entry)?;
            if bytes.len() as u64 > MAX_FILE_BYTES {
                return Err(HostError::TooLarge {
                    package,
                    path: name,
                    limit: MAX_FILE_BYTES,
                });
            }
            let total: u64 = files.values().map(|f| f.len() as u64).sum();
            if total + bytes.len() as u64 > MAX_PACKAGE_BYTES {
                return Err(HostError::TooLarge {
                    package,
                    path: name,
                    limit: MAX_PACKAGE_BYTES,
                });
            }
            if files.contains_key(&name) {
                return Err(unsafe_entry(format!(
                    "names `{name}`, which the package layer has too"
                )));
            }
            files.insert(name, bytes.to_vec());
        }
        Ok(Self::new(package, Files::Mem(files)))
    }

    fn new(package: String, files: Files) -> Self {
        Reader {
            package,
            files,
            sums: None,
            kept: RefCell::default(),
            refused: RefCell::default(),
        }
    }

    /// Read `SHA256SUMS` if the package has one; with `required`, a package
    /// without one is refused (its manifest is the first file not listed).
    pub(crate) fn load_sums(&mut self, required: bool) -> Result<(), HostError> {
        let sums = match self.fetch(SUMS_FILE, MAX_SUMS_BYTES as u64)? {
            Some(bytes) => parse_sums(&self.package, &bytes)?,
            None if required => BTreeMap::new(),
            None => return Ok(()),
        };
        self.sums = Some(sums);
        Ok(())
    }

    /// Read a package file (at most `limit + 1` bytes, so a caller can tell it
    /// is too large); `None` when it does not exist. The file is kept.
    pub(crate) fn read(&self, path: &str, limit: u64) -> Result<Option<Vec<u8>>, HostError> {
        let rel = normalise(path).map_err(|reason| self.unsafe_entry(path, reason))?;
        let Some(bytes) = self.fetch(&rel, limit.min(MAX_FILE_BYTES))? else {
            return Ok(None);
        };
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(HostError::TooLarge {
                package: self.package.clone(),
                path: rel,
                limit: MAX_FILE_BYTES,
            });
        }
        if let Some(sums) = &self.sums {
            let Some(expected) = sums.get(&rel) else {
                return Err(HostError::NotInSums {
                    package: self.package.clone(),
                    path: rel,
                });
            };
            // A file past the caller's limit is reported as too large by the caller.
            if bytes.len() as u64 <= limit && hex::encode(Sha256::digest(&bytes)) != *expected {
                return Err(HostError::Digest {
                    package: self.package.clone(),
                    path: rel,
                });
            }
        }
        let mut kept = self.kept.borrow_mut();
        kept.insert(rel.clone(), bytes.clone());
        let total: u64 = kept.values().map(|b| b.len() as u64).sum();
        if total > MAX_PACKAGE_BYTES {
            return Err(HostError::TooLarge {
                package: self.package.clone(),
                path: rel,
                limit: MAX_PACKAGE_BYTES,
            });
        }
        Ok(Some(bytes))
    }

    /// Read and keep the package's signature ([`SIGNATURE_FILE`]), which
    /// `SHA256SUMS` does not list (it signs it); `None` when there is none.
    pub(crate) fn read_signature(&self) -> Result<Option<Vec<u8>>, HostError> {
        let Some(bytes) = self.fetch(SIGNATURE_FILE, MAX_SIGNATURE_BYTES)? else {
            return Ok(None);
        };
        if bytes.len() as u64 > MAX_SIGNATURE_BYTES {
            return Err(HostError::TooLarge {
                package: self.package.clone(),
                path: SIGNATURE_FILE.to_owned(),
                limit: MAX_SIGNATURE_BYTES,
            });
        }
        self.kept
            .borrow_mut()
            .insert(SIGNATURE_FILE.to_owned(), bytes.clone());
        Ok(Some(bytes))
    }

    /// Whether a regular file exists at `path` (nothing is read or kept).
    pub(crate) fn exists(&self, path: &str) -> bool {
        let Ok(rel) = normalise(path) else {
            return false;
        };
        match &self.files {
            Files::Mem(files) => files.contains_key(&rel),
            Files::Dir(root) => checked_path(root, &rel).is_ok_and(|p| p.is_some()),
        }
    }

    /// The refusal recorded while the manifest layer read files, if any.
    pub(crate) fn take_refusal(&self) -> Option<HostError> {
        self.refused.borrow_mut().take()
    }

    /// Finish: every line of `SHA256SUMS` must name a file the package has.
    /// Returns the kept files, with a `SHA256SUMS` listing exactly them when
    /// the package had one (so an installed copy verifies on every load).
    pub(crate) fn finish(self) -> Result<BTreeMap<String, Vec<u8>>, HostError> {
        let mut kept = self.kept.take();
        if let Some(sums) = &self.sums
            && let Some(path) = sums
                .keys()
                .find(|p| !kept.contains_key(p.as_str()) && !self.exists(p))
        {
            return Err(HostError::SumsNamesMissingFile {
                package: self.package.clone(),
                path: path.clone(),
            });
        }
        if self.sums.is_some() {
            let list = crate::signature::digest_list(&kept);
            kept.insert(SUMS_FILE.to_owned(), list.into_bytes());
        }
        Ok(kept)
    }

    /// Raw bytes of `rel` (already normalised), at most `limit + 1` of them.
    fn fetch(&self, rel: &str, limit: u64) -> Result<Option<Vec<u8>>, HostError> {
        match &self.files {
            Files::Mem(files) => Ok(files
                .get(rel)
                .map(|b| b[..b.len().min(limit as usize + 1)].to_vec())),
            Files::Dir(root) => {
                let Some((path, checked)) =
                    checked_path(root, rel).map_err(|reason| self.unsafe_entry(rel, reason))?
                else {
                    return Ok(None);
                };
                // The path is walked again by the open: what is read must
                // be the file checked (a directory swapped for a link to
                // elsewhere, or a FIFO, since the check is refused).
                let file = open_no_follow(&path).map_err(|e| HostError::io(&path, e))?;
                let meta = file.metadata().map_err(|e| HostError::io(&path, e))?;
                if !meta.is_file() || !same_file(&meta, &checked) || link_count(&meta) > 1 {
                    return Err(self.unsafe_entry(rel, "changed while it was read".into()));
                }
                let mut bytes = Vec::new();
                file.take(limit + 1)
                    .read_to_end(&mut bytes)
                    .map_err(|e| HostError::io(&path, e))?;
                Ok(Some(bytes))
            }
        }
    }

    fn unsafe_entry(&self, entry: &str, reason: String) -> HostError {
        HostError::UnsafeEntry {
            package: self.package.clone(),
            entry: entry.escape_debug().to_string(),
            reason,
        }
    }
}

/// The manifest layer reads through the same checks; a refusal is recorded
/// (and reported instead of the manifest's "cannot read" diagnostic).
impl warden_manifest::PackageFiles for Reader {
    fn read(&self, path: &str, limit: usize) -> std::io::Result<Vec<u8>> {
        match Reader::read(self, path, limit as u64) {
            Ok(Some(bytes)) => Ok(bytes),
            Ok(None) => Err(std::io::ErrorKind::NotFound.into()),
            Err(error) => {
                let message = error.to_string();
                self.refused.borrow_mut().get_or_insert(error);
                Err(std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    message,
                ))
            }
        }
    }

    fn exists(&self, path: &str) -> bool {
        Reader::exists(self, path)
    }
}

/// A package-relative name reduced to its normal components, `/`-joined.
/// A leading `./` component is dropped (tar writes it); refused: an empty
/// name or component (so `/abs`, `a//b`, `.//tmp/x`), `..`, `\`, NUL, and
/// control characters.
pub(crate) fn normalise(name: &str) -> Result<String, String> {
    if name.is_empty() {
        return Err("the name is empty".into());
    }
    if name.contains('\\') {
        return Err("the name contains `\\`".into());
    }
    if name.chars().any(char::is_control) {
        return Err("the name contains a control character".into());
    }
    let mut parts = Vec::new();
    for part in name.split('/') {
        match part {
            "" => return Err("the name is absolute or has an empty component".into()),
            "." => {}
            ".." => return Err("the name has a `..` component".into()),
            normal => parts.push(normal),
        }
    }
    if parts.is_empty() {
        return Err("the name has no file component".into());
    }
    Ok(parts.join("/"))
}

/// The path of `rel` under `root` when every component is a real directory
/// and the last a regular file with one link; `None` when it does not
/// exist; a reason when a component is a symlink, a device, or a hard link.
fn checked_path(root: &Path, rel: &str) -> Result<Option<(PathBuf, std::fs::Metadata)>, String> {
    let mut path = root.to_path_buf();
    let mut parts = rel.split('/').peekable();
    while let Some(part) = parts.next() {
        path.push(part);
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("cannot be read: {e}")),
        };
        let file_type = meta.file_type();
        if file_type.is_symlink() {
            return Err("is a symbolic link (or lies under one)".into());
        }
        if parts.peek().is_some() {
            if !file_type.is_dir() {
                return Ok(None);
            }
        } else if !file_type.is_file() {
            return Err("is not a regular file".into());
        } else if link_count(&meta) > 1 {
            return Err("is a hard link".into());
        } else {
            return Ok(Some((path, meta)));
        }
    }
    Ok(None)
}

/// Open `path` for reading without following a final symbolic link, and
/// without blocking on a FIFO (Linux).
fn open_no_follow(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::File::options();
    options.read(true);
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        let flags = rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK;
        options.custom_flags(flags.bits() as i32);
    }
    options.open(path)
}

/// Whether `opened` is the file `checked` was (same device and inode).
#[cfg(unix)]
fn same_file(opened: &std::fs::Metadata, checked: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    opened.dev() == checked.dev() && opened.ino() == checked.ino()
}

#[cfg(not(unix))]
fn same_file(_: &std::fs::Metadata, _: &std::fs::Metadata) -> bool {
    true
}

#[cfg(unix)]
fn link_count(meta: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::nlink(meta)
}

#[cfg(not(unix))]
fn link_count(_: &std::fs::Metadata) -> u64 {
    1
}

/// `<sha256>  <path>` lines, by normalised path.
fn parse_sums(package: &str, bytes: &[u8]) -> Result<BTreeMap<String, String>, HostError> {
    let bad = |reason: String| HostError::InvalidPackage {
        package: package.to_owned(),
        reason: format!("{SUMS_FILE}: {reason}"),
    };
    if bytes.len() > MAX_SUMS_BYTES {
        return Err(bad(format!("larger than {MAX_SUMS_BYTES} bytes")));
    }
    let text = std::str::from_utf8(bytes).map_err(|_| bad("not UTF-8".into()))?;
    let mut sums = BTreeMap::new();
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let malformed = || bad(format!("line {} is not `<sha256>  <path>`", n + 1));
        let (digest, path) = line.split_once("  ").ok_or_else(malformed)?;
        if digest.len() != 64 || !digest.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(malformed());
        }
        let path = normalise(path).map_err(|reason| bad(format!("line {}: {reason}", n + 1)))?;
        sums.insert(path, digest.to_ascii_lowercase());
    }
    Ok(sums)
}

/// Longest entry name accepted in an archive (a package's paths are short).
/// The tar reader has read a GNU long name or PAX path whole by then (it is
/// bounded only by the archive's 128 MiB decompression cap); past this it is
/// refused before it is copied, escaped or shown.
const MAX_ENTRY_NAME_BYTES: usize = 4096;
/// How much of a refused entry's name an error shows.
const MAX_SHOWN_NAME_BYTES: usize = 200;

/// `name` as an error shows it: escaped, and cut after
/// [`MAX_SHOWN_NAME_BYTES`] characters.
fn shown_name(name: &str) -> String {
    let mut shown: String = name
        .chars()
        .take(MAX_SHOWN_NAME_BYTES)
        .collect::<String>()
        .escape_debug()
        .to_string();
    if name.chars().nth(MAX_SHOWN_NAME_BYTES).is_some() {
        shown.push('…');
    }
    shown
}

/// Unpack a `.tar.gz` into memory: regular files only (directory entries
/// are skipped; links, devices and FIFOs refused), names normalised, no
/// name twice, each file and the whole bounded.
fn unpack(package: &str, archive: impl Read) -> Result<BTreeMap<String, Vec<u8>>, HostError> {
    let bad = |reason: String| HostError::InvalidPackage {
        package: package.to_owned(),
        reason,
    };
    // Shown shortened: a GNU long name or PAX path can be as long as the
    // archive, and each byte may escape to several.
    let unsafe_entry = |entry: &str, reason: String| HostError::UnsafeEntry {
        package: package.to_owned(),
        entry: shown_name(entry),
        reason,
    };
    let gz = flate2::read::GzDecoder::new(archive).take(MAX_PACKAGE_BYTES * 2);
    let mut archive = tar::Archive::new(gz);
    let mut files = BTreeMap::new();
    let mut total = 0u64;
    for entry in archive
        .entries()
        .map_err(|e| bad(format!("not a .tar.gz archive: {e}")))?
    {
        let mut entry = entry.map_err(|e| bad(format!("corrupt archive: {e}")))?;
        let path_bytes = entry.path_bytes();
        if path_bytes.len() > MAX_ENTRY_NAME_BYTES {
            // One more than is shown, so the name is shown cut short.
            let shown = String::from_utf8_lossy(&path_bytes[..=MAX_SHOWN_NAME_BYTES]);
            return Err(unsafe_entry(
                &shown,
                format!(
                    "has a name of {} bytes; at most {MAX_ENTRY_NAME_BYTES} are accepted",
                    path_bytes.len()
                ),
            ));
        }
        let raw = String::from_utf8_lossy(&path_bytes).into_owned();
        drop(path_bytes);
        let kind = entry.header().entry_type();
        if kind.is_dir() || kind.is_pax_global_extensions() {
            continue;
        }
        if !kind.is_file() {
            return Err(unsafe_entry(
                &raw,
                format!("is a {kind:?} entry; only regular files are accepted"),
            ));
        }
        let name = normalise(&raw).map_err(|reason| unsafe_entry(&raw, reason))?;
        let too_large = |limit| HostError::TooLarge {
            package: package.to_owned(),
            path: name.clone(),
            limit,
        };
        // The size the reader goes by: a PAX `size` record overrides the
        // header's, so the header's alone would let an entry claim 0.
        let size = entry.size();
        if size > MAX_FILE_BYTES {
            return Err(too_large(MAX_FILE_BYTES));
        }
        if total.saturating_add(size) > MAX_PACKAGE_BYTES {
            return Err(too_large(MAX_PACKAGE_BYTES));
        }
        let mut bytes = Vec::with_capacity(size as usize);
        (&mut entry)
            .take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| bad(format!("reading `{name}`: {e}")))?;
        // And what was read counts, whatever any header said.
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(too_large(MAX_FILE_BYTES));
        }
        total = total.saturating_add(bytes.len() as u64);
        if total > MAX_PACKAGE_BYTES {
            return Err(too_large(MAX_PACKAGE_BYTES));
        }
        if files.insert(name.clone(), bytes).is_some() {
            return Err(unsafe_entry(&raw, format!("`{name}` appears twice")));
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::{checked_path, normalise, open_no_follow, same_file};

    #[test]
    fn names_keep_only_normal_components() {
        assert_eq!(normalise("./manifest.toml").unwrap(), "manifest.toml");
        assert_eq!(normalise("schemas/a.json").unwrap(), "schemas/a.json");
        for hostile in [
            ".//tmp/x",
            "././/x",
            "/etc/passwd",
            "a/../../x",
            "a/../x",
            "..",
            "a\\b",
            "a\0b",
            "a//b",
            "",
            ".",
            "./",
            "a/",
            "a\x1b[2J",
        ] {
            assert!(normalise(hostile).is_err(), "{hostile:?} is refused");
        }
    }

    /// What is opened after the check must be the file checked: one
    /// swapped in meanwhile is told apart, and a FIFO does not block the
    /// open (a swap made the host read another file, or hang).
    #[cfg(target_os = "linux")]
    #[test]
    fn a_file_swapped_after_its_check_is_told_apart_and_a_fifo_does_not_block() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.json"), b"{}").unwrap();
        let (path, checked) = checked_path(dir.path(), "a.json").unwrap().unwrap();
        let same = open_no_follow(&path).unwrap().metadata().unwrap();
        assert!(same_file(&same, &checked));

        std::fs::write(dir.path().join("b.json"), b"{\"other\": 1}").unwrap();
        std::fs::rename(dir.path().join("b.json"), &path).unwrap();
        let swapped = open_no_follow(&path).unwrap().metadata().unwrap();
        assert!(!same_file(&swapped, &checked));

        std::fs::remove_file(&path).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &path,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let fifo = open_no_follow(&path).unwrap().metadata().unwrap();
        assert!(!fifo.is_file());

        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", &path).unwrap();
        assert!(open_no_follow(&path).is_err(), "a link is not followed");
    }
}
