//! The embedded default store: one file, encrypted with XChaCha20-Poly1305.
//!
//! File format (JSON): `{"format": "warden-secrets", "version": 2, "nonce":
//! b64, "ciphertext": b64}`; the plaintext is a JSON list of accounts with
//! their values and bindings, authenticated with the format and version as
//! associated data. Writes go to a 0600 temporary file that is synced and
//! renamed.
//!
//! Several processes may share the file (`warden serve` and the CLI on one
//! data directory): a change takes an exclusive lock on `<file>.lock`,
//! reads the file again when it changed since this process read it, applies
//! the change and writes, so no process's change is lost; reads notice a
//! newer file by its stamp (inode, length, modification time) and read it
//! again. Refreshes of one OAuth account take turns on a lock file of its
//! own in `<file>.locks/`.
//!
//! Versions: 2 adds each account's `binding` (audiences, allowed extensions,
//! creator). Version 1 files (no bindings) are still read; their accounts
//! are unbound, so calls refuse them until the user stores them again, and
//! the next write saves the file as version 2.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use chacha20poly1305::aead::{Aead, AeadCore, OsRng, Payload};
use chacha20poly1305::{Key, KeyInit, XChaCha20Poly1305, XNonce};
use secrecy::{ExposeSecret, SecretString};
use zeroize::Zeroizing;

use super::shared_file::{self, FileStamp};
use super::{
    AccountBinding, AccountKey, Candidate, GRANT_SUFFIX, RefreshGuard, SecretError, SecretStore,
};

const FORMAT: &str = "warden-secrets";
const VERSION: u32 = 2;

/// The associated data of a version (binds the ciphertext to it).
fn aad(version: u32) -> Option<&'static [u8]> {
    match version {
        1 => Some(b"warden-secrets/v1"),
        2 => Some(b"warden-secrets/v2"),
        _ => None,
    }
}

/// Where the 32-byte store key comes from.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum KeySource {
    /// A key file (hex); created with mode 0600 when missing, refused when
    /// readable by group or others.
    File(PathBuf),
    /// An environment variable holding the key as hex or base64.
    Env(String),
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Envelope {
    format: String,
    version: u32,
    nonce: String,
    ciphertext: String,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Entry {
    #[serde(flatten)]
    key: AccountKey,
    /// Absent in version 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    binding: Option<AccountBinding>,
    value: String,
}

/// A value and its binding, in memory.
#[derive(Debug)]
struct Stored {
    value: SecretString,
    binding: Option<AccountBinding>,
}

type Values = BTreeMap<AccountKey, Stored>;

impl Drop for Entry {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.value);
    }
}

/// An encrypted-at-rest file store.
#[derive(Debug)]
pub struct EncryptedFileStore {
    path: PathBuf,
    cipher: XChaCha20Poly1305Debug,
    state: Mutex<State>,
}

/// What this process last read or wrote, and which file that was.
#[derive(Debug, Default)]
struct State {
    values: Values,
    seen: Option<FileStamp>,
}

/// The cipher, without a `Debug` that could print key material.
struct XChaCha20Poly1305Debug(XChaCha20Poly1305);

impl std::fmt::Debug for XChaCha20Poly1305Debug {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("XChaCha20Poly1305")
    }
}

impl EncryptedFileStore {
    /// Open (or start) the store at `path` with the key from `key`.
    pub fn open(path: impl Into<PathBuf>, key: KeySource) -> Result<Self, SecretError> {
        let path = path.into();
        let key = load_key(&key)?;
        let cipher = XChaCha20Poly1305::new(Key::from_slice(key.as_slice()));
        let store = Self {
            path,
            cipher: XChaCha20Poly1305Debug(cipher),
            state: Mutex::new(State::default()),
        };
        drop(store.current()?);
        Ok(store)
    }

    /// The store file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn save(&self, values: &Values) -> Result<(), SecretError> {
        let entries: Vec<Entry> = values
            .iter()
            .map(|(key, stored)| Entry {
                key: key.clone(),
                binding: stored.binding.clone(),
                value: stored.value.expose_secret().to_owned(),
            })
            .collect();
        let plain = Zeroizing::new(
            serde_json::to_vec(&entries).map_err(|_| SecretError::Corrupt("serialize"))?,
        );
        drop(entries);
        let nonce = XChaCha20Poly1305::generate_nonce(&mut OsRng);
        let ciphertext = self
            .cipher
            .0
            .encrypt(
                &nonce,
                Payload {
                    msg: &plain,
                    aad: aad(VERSION).unwrap_or_default(),
                },
            )
            .map_err(|_| SecretError::Corrupt("encrypt"))?;
        let envelope = Envelope {
            format: FORMAT.into(),
            version: VERSION,
            nonce: STANDARD.encode(nonce),
            ciphertext: STANDARD.encode(ciphertext),
        };
        let bytes =
            serde_json::to_vec_pretty(&envelope).map_err(|_| SecretError::Corrupt("serialize"))?;
        write_atomic(&self.path, &bytes)
    }

    /// The values as the file holds them now: read again when another
    /// process replaced the file since this one last read or wrote it.
    fn current(&self) -> Result<std::sync::MutexGuard<'_, State>, SecretError> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let stamp = FileStamp::of(&self.path)?;
        if stamp != state.seen || stamp.is_none() {
            state.values = match fs::read(&self.path) {
                Ok(bytes) => decrypt(&self.cipher.0, &bytes)?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
                Err(e) => return Err(SecretError::Io(e.kind().to_string())),
            };
            state.seen = stamp;
        }
        Ok(state)
    }

    /// Apply `change` to the file's current values and save, holding the
    /// file's lock so a change by another process in between is not lost;
    /// on a failed save, restore the previous entry.
    fn update<T>(
        &self,
        key: &AccountKey,
        change: impl FnOnce(&mut Values) -> T,
    ) -> Result<T, SecretError> {
        let _exclusive = shared_file::lock(&shared_file::beside(&self.path, ".lock"))?;
        let mut state = self.current()?;
        let previous = state.values.get(key).map(|s| Stored {
            value: s.value.clone(),
            binding: s.binding.clone(),
        });
        let result = change(&mut state.values);
        if let Err(e) = self.save(&state.values) {
            match previous {
                Some(previous) => state.values.insert(key.clone(), previous),
                None => state.values.remove(key),
            };
            return Err(e);
        }
        state.seen = FileStamp::of(&self.path)?;
        Ok(result)
    }
}

#[async_trait::async_trait]
impl SecretStore for EncryptedFileStore {
    async fn get(&self, key: &AccountKey) -> Result<Option<SecretString>, SecretError> {
        Ok(self.current()?.values.get(key).map(|s| s.value.clone()))
    }

    async fn put(&self, key: &AccountKey, value: SecretString) -> Result<(), SecretError> {
        self.update(key, |values| {
            let binding = values.remove(key).and_then(|s| s.binding);
            values.insert(key.clone(), Stored { value, binding });
        })
    }

    async fn delete(&self, key: &AccountKey) -> Result<bool, SecretError> {
        if !self.current()?.values.contains_key(key) {
            return Ok(false);
        }
        self.update(key, |values| values.remove(key).is_some())
    }

    async fn list(&self) -> Result<Vec<AccountKey>, SecretError> {
        Ok(self.current()?.values.keys().cloned().collect())
    }

    /// One look at the file (one `stat` while nothing changed).
    async fn candidates(&self, vendor: &str, handle: &str) -> Result<Vec<Candidate>, SecretError> {
        let state = self.current()?;
        let grant_handle = format!("{handle}{GRANT_SUFFIX}");
        Ok(state
            .values
            .iter()
            .filter(|(key, _)| key.vendor == vendor && key.handle == handle)
            .map(|(key, stored)| {
                let grant = key.sibling(&grant_handle);
                Candidate {
                    key: key.clone(),
                    value: stored.value.clone(),
                    binding: stored.binding.clone(),
                    grant: state.values.get(&grant).map(|g| g.value.clone()),
                }
            })
            .collect())
    }

    async fn binding(&self, key: &AccountKey) -> Result<Option<AccountBinding>, SecretError> {
        Ok(self
            .current()?
            .values
            .get(key)
            .and_then(|s| s.binding.clone()))
    }

    async fn set_binding(
        &self,
        key: &AccountKey,
        binding: &AccountBinding,
    ) -> Result<(), SecretError> {
        if !self.current()?.values.contains_key(key) {
            return Err(SecretError::NoSuchAccount(key.to_string()));
        }
        self.update(key, |values| {
            if let Some(stored) = values.get_mut(key) {
                stored.binding = Some(binding.clone());
            }
        })
    }

    async fn put_bound(
        &self,
        key: &AccountKey,
        binding: &AccountBinding,
        value: SecretString,
    ) -> Result<(), SecretError> {
        self.update(key, |values| {
            let binding = Some(binding.clone());
            values.insert(key.clone(), Stored { value, binding });
        })
    }

    /// An exclusive lock on the account's file in `<file>.locks/`, shared
    /// by every process on this file, waited for at most 30 s.
    async fn lock_refresh(&self, key: &AccountKey) -> Result<Option<RefreshGuard>, SecretError> {
        let dir = shared_file::beside(&self.path, ".locks");
        fs::create_dir_all(&dir).map_err(|e| SecretError::Io(e.kind().to_string()))?;
        let path = dir.join(format!("refresh-{:016x}", key.refresh_lock_id()));
        let held = shared_file::lock_within(&path, Duration::from_secs(30)).await?;
        Ok(Some(RefreshGuard::new(held)))
    }
}

fn decrypt(cipher: &XChaCha20Poly1305, bytes: &[u8]) -> Result<Values, SecretError> {
    let envelope: Envelope = serde_json::from_slice(bytes)
        .map_err(|_| SecretError::Corrupt("not a secret store file"))?;
    if envelope.format != FORMAT {
        return Err(SecretError::Corrupt("not a secret store file"));
    }
    let Some(aad) = aad(envelope.version) else {
        return Err(SecretError::Corrupt("unsupported store version"));
    };
    let nonce = STANDARD
        .decode(&envelope.nonce)
        .map_err(|_| SecretError::Corrupt("bad nonce"))?;
    if nonce.len() != 24 {
        return Err(SecretError::Corrupt("bad nonce"));
    }
    let ciphertext = STANDARD
        .decode(&envelope.ciphertext)
        .map_err(|_| SecretError::Corrupt("bad ciphertext"))?;
    let plain = Zeroizing::new(
        cipher
            .decrypt(
                XNonce::from_slice(&nonce),
                Payload {
                    msg: &ciphertext,
                    aad,
                },
            )
            .map_err(|_| SecretError::Corrupt("does not decrypt with this key"))?,
    );
    let entries: Vec<Entry> =
        serde_json::from_slice(&plain).map_err(|_| SecretError::Corrupt("bad contents"))?;
    Ok(entries
        .iter()
        .map(|e| {
            // Version 1 had no bindings; a version 1 file carries none.
            let binding = e.binding.clone().filter(|_| envelope.version >= 2);
            let value = SecretString::from(e.value.clone());
            (e.key.clone(), Stored { value, binding })
        })
        .collect())
}

pub(super) fn load_key(source: &KeySource) -> Result<Zeroizing<Vec<u8>>, SecretError> {
    let text = match source {
        KeySource::Env(var) => Zeroizing::new(
            std::env::var(var).map_err(|_| SecretError::Key("environment variable is not set"))?,
        ),
        KeySource::File(path) => match fs::metadata(path) {
            Ok(meta) => {
                check_permissions(&meta)?;
                Zeroizing::new(
                    fs::read_to_string(path).map_err(|e| SecretError::Io(e.kind().to_string()))?,
                )
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let key = XChaCha20Poly1305::generate_key(&mut OsRng);
                let text = Zeroizing::new(hex_encode(&key));
                write_new_private(path, text.as_bytes())?;
                text
            }
            Err(e) => return Err(SecretError::Io(e.kind().to_string())),
        },
    };
    let text = text.trim();
    let key = Zeroizing::new(
        hex_decode(text)
            .or_else(|| STANDARD.decode(text).ok())
            .ok_or(SecretError::Key("key is neither hex nor base64"))?,
    );
    if key.len() != 32 {
        return Err(SecretError::Key("key must be 32 bytes"));
    }
    Ok(key)
}

fn hex_encode(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn hex_decode(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

#[cfg(unix)]
fn check_permissions(meta: &fs::Metadata) -> Result<(), SecretError> {
    use std::os::unix::fs::PermissionsExt as _;
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(SecretError::KeyPermissions);
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_permissions(_meta: &fs::Metadata) -> Result<(), SecretError> {
    Ok(())
}

fn private_options() -> fs::OpenOptions {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    options
}

fn write_new_private(path: &Path, bytes: &[u8]) -> Result<(), SecretError> {
    let io = |e: std::io::Error| SecretError::Io(e.kind().to_string());
    let mut file = private_options().open(path).map_err(io)?;
    file.write_all(bytes).map_err(io)?;
    file.sync_all().map_err(io)
}

fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), SecretError> {
    let io = |e: std::io::Error| SecretError::Io(e.kind().to_string());
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp.{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let _ = fs::remove_file(&tmp);
    write_new_private(&tmp, bytes)?;
    fs::rename(&tmp, path).map_err(io)?;
    if let Some(dir) = path.parent()
        && let Ok(dir) = fs::File::open(dir)
    {
        let _ = dir.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn file_store_conforms() {
        let dir = tempfile::tempdir().unwrap();
        let key = KeySource::File(dir.path().join("key"));
        let store = EncryptedFileStore::open(dir.path().join("secrets.enc"), key).unwrap();
        crate::conformance::run(&store).await;
        crate::conformance::accounts_per_caller(&store).await;
    }

    /// `warden serve` and the CLI on one data directory: each sees what the
    /// other stored, and neither's change is lost when the other writes.
    #[tokio::test]
    async fn two_processes_on_one_file_see_each_others_changes_and_lose_none() {
        let (dir, serve, cli) = two_on_one_file();
        let github = AccountKey::new("github", "gh", ["repo"]);
        let notion = AccountKey::new("notion", "token", ["read"]);
        cli.put(&github, SecretString::from("ghp_from_cli"))
            .await
            .unwrap();
        let seen = serve
            .get(&github)
            .await
            .unwrap()
            .expect("the CLI's account");
        assert_eq!(seen.expose_secret(), "ghp_from_cli");
        serve
            .put(&notion, SecretString::from("secret_from_serve"))
            .await
            .unwrap();
        assert_eq!(cli.list().await.unwrap(), [github.clone(), notion.clone()]);
        let reopened = EncryptedFileStore::open(
            dir.path().join("secrets.enc"),
            KeySource::File(dir.path().join("key")),
        )
        .unwrap();
        assert_eq!(reopened.list().await.unwrap(), [github, notion]);
    }

    #[tokio::test]
    async fn processes_on_one_file_take_turns_to_refresh() {
        let (_dir, one, two) = two_on_one_file();
        crate::conformance::refresh_lock(&one, &two).await;
    }

    /// Two stores on one file and key, as two processes have them.
    fn two_on_one_file() -> (tempfile::TempDir, EncryptedFileStore, EncryptedFileStore) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secrets.enc");
        let key = KeySource::File(dir.path().join("key"));
        let one = EncryptedFileStore::open(&path, key.clone()).unwrap();
        let two = EncryptedFileStore::open(&path, key).unwrap();
        (dir, one, two)
    }

    #[tokio::test]
    async fn values_round_trip_encrypted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secrets.json");
        let key = KeySource::File(dir.path().join("key"));
        let account = AccountKey::new("github", "gh", ["repo"]);
        let store = EncryptedFileStore::open(&path, key.clone()).unwrap();
        store
            .put(&account, SecretString::from("ghp_plaintext_value"))
            .await
            .unwrap();
        let on_disk = fs::read_to_string(&path).unwrap();
        assert!(!on_disk.contains("ghp_plaintext_value"), "{on_disk}");
        assert!(on_disk.contains("\"version\": 2"));
        let reopened = EncryptedFileStore::open(&path, key).unwrap();
        assert_eq!(
            reopened
                .get(&account)
                .await
                .unwrap()
                .unwrap()
                .expose_secret(),
            "ghp_plaintext_value"
        );
        assert_eq!(reopened.list().await.unwrap(), vec![account.clone()]);
        assert!(reopened.delete(&account).await.unwrap());
        assert!(reopened.list().await.unwrap().is_empty());
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn key_file_is_private_and_checked() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let key_path = dir.path().join("key");
        EncryptedFileStore::open(dir.path().join("s"), KeySource::File(key_path.clone())).unwrap();
        let mode = fs::metadata(&key_path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        fs::set_permissions(&key_path, fs::Permissions::from_mode(0o644)).unwrap();
        let err =
            EncryptedFileStore::open(dir.path().join("s"), KeySource::File(key_path)).unwrap_err();
        assert!(matches!(err, SecretError::KeyPermissions), "{err}");
    }

    #[tokio::test]
    async fn wrong_key_does_not_decrypt() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let store =
            EncryptedFileStore::open(&path, KeySource::File(dir.path().join("k1"))).unwrap();
        store
            .put(
                &AccountKey::new("v", "h", ["s"]),
                SecretString::from("value"),
            )
            .await
            .unwrap();
        let err =
            EncryptedFileStore::open(&path, KeySource::File(dir.path().join("k2"))).unwrap_err();
        assert!(matches!(err, SecretError::Corrupt(_)), "{err}");
    }

    #[tokio::test]
    async fn bindings_persist_and_a_version_1_file_reads_as_unbound() {
        use crate::{AccountAudience, AuthReason, CredentialRequest, Lookup};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let key_source = KeySource::File(dir.path().join("k"));
        let account = AccountKey::new("github", "gh", ["repo"]);
        let api = AccountAudience {
            scheme: "https".into(),
            host: "api.github.com".into(),
            port: 443,
        };
        let binding = AccountBinding::new("github", [api.clone()]);
        let store = EncryptedFileStore::open(&path, key_source.clone()).unwrap();
        store
            .put_bound(&account, &binding, SecretString::from("ghp_v2"))
            .await
            .unwrap();
        let reopened = EncryptedFileStore::open(&path, key_source.clone()).unwrap();
        assert_eq!(reopened.binding(&account).await.unwrap(), Some(binding));

        // A file written by version 1: same key, old associated data, no bindings.
        let cipher = XChaCha20Poly1305::new(Key::from_slice(&load_key(&key_source).unwrap()));
        let plain = br#"[{"vendor":"github","handle":"gh","scopes":["repo"],"value":"ghp_v1"}]"#;
        let nonce = XChaCha20Poly1305::generate_nonce(&mut OsRng);
        let payload = Payload {
            msg: plain,
            aad: b"warden-secrets/v1",
        };
        let ciphertext = cipher.encrypt(&nonce, payload).unwrap();
        let v1 = serde_json::json!({
            "format": "warden-secrets", "version": 1,
            "nonce": STANDARD.encode(nonce), "ciphertext": STANDARD.encode(ciphertext),
        });
        fs::write(&path, v1.to_string()).unwrap();
        let legacy = EncryptedFileStore::open(&path, key_source.clone()).unwrap();
        assert_eq!(
            legacy.get(&account).await.unwrap().unwrap().expose_secret(),
            "ghp_v1"
        );
        assert_eq!(legacy.binding(&account).await.unwrap(), None);
        let scopes = ["repo".to_owned()];
        let request = CredentialRequest {
            vendor: "github",
            handle: "gh",
            scopes: &scopes,
            requester: "github".into(),
            audience: api,
        };
        assert!(matches!(
            legacy.lookup(&request).await.unwrap(),
            Lookup::Refused(AuthReason::Unbound)
        ));
        // Storing it again writes version 2.
        legacy
            .put_bound(
                &account,
                &AccountBinding::new("github", [request.audience.clone()]),
                SecretString::from("ghp_again"),
            )
            .await
            .unwrap();
        assert!(
            fs::read_to_string(&path)
                .unwrap()
                .contains("\"version\": 2")
        );
        assert!(matches!(
            legacy.lookup(&request).await.unwrap(),
            Lookup::Found(_)
        ));
    }
}
