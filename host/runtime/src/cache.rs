//! On-disk cache of compiled components.
//!
//! An entry lives at `<dir>/<engine>/<component>.cwasm`, where `<engine>` is
//! a digest of the engine's precompile compatibility hash and `<component>`
//! the sha256 of the component bytes. The file is a header (magic, the
//! artifact's length and its CRC-32) followed by the artifact. An entry whose
//! length or checksum does not match, or that the engine refuses, is rebuilt,
//! never trusted.
//!
//! The checksum guards against corruption (a bit-rotted or cut-short file),
//! not against forgery: whoever can write an entry can write its checksum
//! too, so a cryptographic digest would add nothing there. What keeps forged
//! artifacts out is the directory itself, which must be writable by the host
//! alone. The key, which decides *which* component an artifact belongs to, is
//! the component's sha256. CRC-32 (hardware-assisted) instead of sha256 for
//! the artifact takes a third off loading an installed package from the cache.
//!
//! The cache is bounded ([`crate::RuntimeConfig::cache_max_bytes`]): after
//! each entry is written, the least recently used entries of every engine
//! (those of an older Warden included) go until the whole directory fits. An
//! entry is used when written or loaded (its modification time says when).
//! A removed entry costs only a compile; a component already loaded from it
//! is in memory.

use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

const MAGIC: &[u8; 16] = b"warden-cwasm-v2\n";
/// Magic, artifact length (u64 LE), CRC-32 of the artifact (u32 LE).
const HEADER: usize = MAGIC.len() + 8 + 4;

/// What looking an entry up found.
pub(crate) enum Lookup {
    /// A verified, deserialized component.
    Hit(Component),
    /// No entry.
    Miss,
    /// An entry that cannot be trusted or used; it will be rebuilt.
    Invalid(String),
}

/// Temporary files older than this are left over from a writer that
/// stopped midway, and are removed by a trim.
const ABANDONED_TMP: std::time::Duration = std::time::Duration::from_secs(3600);

/// The cache directory of one engine.
#[derive(Debug)]
pub(crate) struct ArtifactCache {
    root: PathBuf,
    dir: PathBuf,
    max_bytes: u64,
}

impl ArtifactCache {
    /// The cache for `engine` under `root`, which all engines' entries keep
    /// under `max_bytes`.
    pub(crate) fn new(root: &Path, engine: &Engine, max_bytes: u64) -> ArtifactCache {
        let mut hasher = ShaHasher(Sha256::new());
        engine.precompile_compatibility_hash().hash(&mut hasher);
        let engine_key = hex::encode(&hasher.0.finalize()[..ENGINE_KEY_LEN / 2]);
        ArtifactCache {
            root: root.to_owned(),
            dir: root.join(engine_key),
            max_bytes,
        }
    }

    fn entry(&self, component_sha: &str) -> PathBuf {
        self.dir.join(format!("{component_sha}.cwasm"))
    }

    /// Look up the artifact of the component whose sha256 is `component_sha`.
    pub(crate) fn load(&self, engine: &Engine, component_sha: &str) -> Lookup {
        let path = self.entry(component_sha);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Lookup::Miss,
            Err(e) => return Lookup::Invalid(format!("unreadable: {e}")),
        };
        let Some(artifact) = verified(&bytes) else {
            return Lookup::Invalid("length or checksum mismatch".into());
        };
        // SAFETY: `Component::deserialize` must only see bytes produced by
        // `Component::serialize` of a compatible engine. The entry was written
        // by `store` below from `Component::serialize`, under a key made of the
        // component's sha256 and this engine's compatibility hash, in the
        // host's own cache directory (which must not be writable by untrusted
        // parties); `verified` checked that the bytes are exactly the ones
        // written (length and CRC-32), and wasmtime re-checks the engine configuration
        // in the artifact header.
        #[allow(unsafe_code)]
        let component = unsafe { Component::deserialize(engine, artifact) };
        match component {
            Ok(component) => {
                touch(&path);
                Lookup::Hit(component)
            }
            Err(e) => Lookup::Invalid(format!("refused by the engine: {e}")),
        }
    }

    /// Whether there is an entry (usable or not) for `component_sha`.
    pub(crate) fn contains(&self, component_sha: &str) -> bool {
        self.entry(component_sha).exists()
    }

    /// Remove the entry of `component_sha`, if any.
    pub(crate) fn remove(&self, component_sha: &str) {
        let _ = std::fs::remove_file(self.entry(component_sha));
    }

    /// Store `artifact` for `component_sha`, atomically (write then rename)
    /// and synced to disk.
    pub(crate) fn store(&self, component_sha: &str, artifact: &[u8]) -> std::io::Result<()> {
        self.write(component_sha, artifact, true)
    }

    /// [`Self::store`] without waiting for the disk: for an entry that is
    /// soon replaced (a torn one fails its checksum and is rebuilt).
    pub(crate) fn store_unsynced(
        &self,
        component_sha: &str,
        artifact: &[u8],
    ) -> std::io::Result<()> {
        self.write(component_sha, artifact, false)
    }

    fn write(&self, component_sha: &str, artifact: &[u8], sync: bool) -> std::io::Result<()> {
        static UNIQUE: AtomicU64 = AtomicU64::new(0);
        // The host's alone (see the module's note on forged artifacts),
        // whatever the umask: directories 0700, entries 0600.
        let mut dirs = std::fs::DirBuilder::new();
        dirs.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut dirs, 0o700);
        dirs.create(&self.dir)?;
        let tmp = self.dir.join(format!(
            ".{component_sha}.{}.{}.tmp",
            std::process::id(),
            UNIQUE.fetch_add(1, Ordering::Relaxed)
        ));
        let result = (|| {
            let mut options = std::fs::File::options();
            options.write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
            let mut file = options.open(&tmp)?;
            file.write_all(&header(artifact))?;
            file.write_all(artifact)?;
            if sync {
                file.sync_all()?;
            }
            std::fs::rename(&tmp, self.entry(component_sha))
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result?;
        // Baseline code (written unsynced) is soon replaced by the optimized
        // code, whose write trims.
        if sync {
            self.trim(&self.entry(component_sha));
        }
        Ok(())
    }

    /// Remove the least recently used entries, never `keep`, until every
    /// engine's entries fit in `max_bytes`; and temporary files abandoned
    /// by writers that stopped midway. Only what this cache names so is
    /// looked at (engine directories of 32 hex digits, entries of 64), so a
    /// cache directory shared with anything else loses nothing else. Best
    /// effort: what cannot be read or removed stays.
    fn trim(&self, keep: &Path) {
        let mut entries = Vec::new();
        let Ok(engines) = std::fs::read_dir(&self.root) else {
            return;
        };
        for engine in engines.flatten() {
            if !is_hex(&engine.file_name().to_string_lossy(), ENGINE_KEY_LEN) {
                continue;
            }
            let Ok(files) = std::fs::read_dir(engine.path()) else {
                continue;
            };
            for file in files.flatten() {
                let name = file.file_name();
                let name = name.to_string_lossy();
                let tmp = name
                    .strip_prefix('.')
                    .and_then(|rest| rest.split_once('.'))
                    .is_some_and(|(sha, rest)| is_hex(sha, 64) && rest.ends_with(".tmp"));
                let entry = name
                    .strip_suffix(".cwasm")
                    .is_some_and(|sha| is_hex(sha, 64));
                let Ok(meta) = file.metadata() else { continue };
                if !meta.is_file() || !(tmp || entry) {
                    continue;
                }
                let path = file.path();
                let modified = meta.modified().unwrap_or(std::time::SystemTime::UNIX_EPOCH);
                if entry {
                    entries.push((modified, meta.len(), path));
                } else if modified.elapsed().is_ok_and(|age| age > ABANDONED_TMP) {
                    let _ = std::fs::remove_file(&path);
                }
            }
        }
        let mut total: u64 = entries.iter().map(|(_, len, _)| len).sum();
        entries.sort();
        for (_, len, path) in entries {
            if total <= self.max_bytes {
                break;
            }
            if path == keep {
                continue;
            }
            // Gone already (another process trimmed it) counts as removed.
            let removed = std::fs::remove_file(&path);
            if removed.is_ok() || removed.is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound) {
                total -= len;
                tracing::debug!(entry = %path.display(), "compile cache entry removed (least recently used)");
            }
        }
    }
}

/// Hex digits in an engine directory's name.
const ENGINE_KEY_LEN: usize = 32;

/// Whether `name` is `len` lowercase hex digits.
fn is_hex(name: &str, len: usize) -> bool {
    name.len() == len && name.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Mark the entry at `path` as used now (best effort).
fn touch(path: &Path) {
    if let Ok(file) = std::fs::File::options().append(true).open(path) {
        let _ = file.set_modified(std::time::SystemTime::now());
    }
}

/// The header of an entry holding `artifact`.
fn header(artifact: &[u8]) -> [u8; HEADER] {
    let mut header = [0; HEADER];
    let (magic, rest) = header.split_at_mut(MAGIC.len());
    let (len, crc) = rest.split_at_mut(8);
    magic.copy_from_slice(MAGIC);
    len.copy_from_slice(&(artifact.len() as u64).to_le_bytes());
    crc.copy_from_slice(&crc32fast::hash(artifact).to_le_bytes());
    header
}

/// The artifact of an entry whose header, length and checksum check out.
fn verified(bytes: &[u8]) -> Option<&[u8]> {
    let (head, artifact) = bytes.split_at_checked(HEADER)?;
    (head == header(artifact)).then_some(artifact)
}

/// A [`Hasher`] feeding sha256, so the engine key is stable across processes.
struct ShaHasher(Sha256);

impl Hasher for ShaHasher {
    fn finish(&self) -> u64 {
        let digest = self.0.clone().finalize();
        u64::from_le_bytes(digest[..8].try_into().unwrap_or([0; 8]))
    }

    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}

/// Hex sha256 of `bytes`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verified_rejects_flipped_and_truncated_entries() {
        let artifact = b"compiled bytes";
        let mut entry = header(artifact).to_vec();
        entry.extend_from_slice(artifact);
        assert_eq!(verified(&entry), Some(&artifact[..]));
        for byte in 0..entry.len() {
            let mut flipped = entry.clone();
            flipped[byte] ^= 0x10;
            assert_eq!(verified(&flipped), None, "byte {byte} flipped");
        }
        for len in 0..entry.len() {
            assert_eq!(verified(&entry[..len]), None, "cut at {len}");
        }
        let mut extended = entry.clone();
        extended.push(0);
        assert_eq!(verified(&extended), None);
    }

    #[test]
    fn missing_and_corrupt_entries_are_not_hits() {
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::default();
        let cache = ArtifactCache::new(dir.path(), &engine, u64::MAX);
        assert!(matches!(cache.load(&engine, "abc"), Lookup::Miss));
        cache.store("abc", b"not an artifact").unwrap();
        assert!(matches!(cache.load(&engine, "abc"), Lookup::Invalid(_)));
        std::fs::write(cache.entry("abc"), b"garbage").unwrap();
        assert!(matches!(cache.load(&engine, "abc"), Lookup::Invalid(_)));
    }

    /// Set the modification time of `path` to `secs` seconds ago.
    fn age(path: &Path, secs: u64) {
        let file = std::fs::File::options().append(true).open(path).unwrap();
        let then = std::time::SystemTime::now() - std::time::Duration::from_secs(secs);
        file.set_modified(then).unwrap();
    }

    // The cache grew with every component ever compiled, by every Warden
    // version that shared the directory.
    #[test]
    fn the_least_recently_used_entries_go_past_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::default();
        // An empty component: loadable, so a hit marks its entry used.
        let empty = [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];
        let artifact = Component::new(&engine, empty).unwrap().serialize().unwrap();
        let entry_len = (HEADER + artifact.len()) as u64;
        let cache = ArtifactCache::new(dir.path(), &engine, 2 * entry_len);
        let sha = |c: char| c.to_string().repeat(64);
        let (a, b, c) = (sha('a'), sha('b'), sha('c'));
        // An older Warden's entry, and a writer's leftovers.
        let older = dir.path().join("0123456789abcdef".repeat(2));
        std::fs::create_dir_all(&older).unwrap();
        let old = older.join(format!("{}.cwasm", sha('0')));
        std::fs::write(&old, vec![0; entry_len as usize]).unwrap();
        age(&old, 4 * 3600);
        let leftover = older.join(format!(".{}.1.2.tmp", sha('0')));
        std::fs::write(&leftover, b"cut short").unwrap();
        age(&leftover, 2 * 3600);
        // What the cache did not name is never its to remove.
        let foreign = [
            dir.path().join("other/old.cwasm"),
            older.join("notes.cwasm"),
        ];
        for path in &foreign {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, vec![0; entry_len as usize]).unwrap();
            age(path, 5 * 3600);
        }

        cache.store(&a, &artifact).unwrap();
        assert!(!leftover.exists(), "abandoned");
        assert!(old.exists(), "two entries fit");
        age(&cache.entry(&a), 3 * 3600);
        cache.store(&b, &artifact).unwrap();
        assert!(!old.exists(), "the oldest went first");
        age(&cache.entry(&b), 2 * 3600);
        // `a` is used: `b` is now the least recently used.
        assert!(matches!(cache.load(&engine, &a), Lookup::Hit(_)));
        cache.store(&c, &artifact).unwrap();
        assert!(cache.contains(&a) && cache.contains(&c));
        assert!(!cache.contains(&b));
        assert!(foreign.iter().all(|path| path.exists()));
    }
}
