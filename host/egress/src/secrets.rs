//! Secret stores: where credential values live between calls.
//!
//! [`SecretStore`] is the trait the host composes; [`EncryptedFileStore`] is
//! the embedded default (ChaCha20-Poly1305 at rest), [`EnvStore`] reads the
//! environment, and [`MemoryStore`] is for embedders and tests. Values are
//! [`SecretString`]s (zeroized on drop); listing returns keys only.
//!
//! ```
//! use secrecy::SecretString;
//! use warden_egress::secrets::{AccountKey, MemoryStore, SecretStore};
//! let store = MemoryStore::new();
//! let key = AccountKey::new("github", "github_token", ["repo"]);
//! store.put(&key, SecretString::from("ghp_example")).unwrap();
//! assert_eq!(store.list().unwrap(), vec![key]);
//! ```

mod env;
mod file;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Mutex;

use secrecy::SecretString;

pub use env::EnvStore;
pub use file::{EncryptedFileStore, KeySource};

/// Why a secret store operation failed. Never carries a value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SecretError {
    /// Reading or writing the store failed.
    #[error("secret store I/O failed: {0}")]
    Io(String),
    /// The store file or key is malformed, of an unknown version, or does not decrypt.
    #[error("secret store is unreadable: {0}")]
    Corrupt(&'static str),
    /// The key file is readable by other users.
    #[error("secret store key file must not be readable by group or others (chmod 600)")]
    KeyPermissions,
    /// The key is missing or malformed.
    #[error("secret store key: {0}")]
    Key(&'static str),
    /// The store does not support writing.
    #[error("this secret store is read-only")]
    ReadOnly,
}

/// Identifies a stored account: vendor, credential handle and scopes
/// (sorted and de-duplicated).
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct AccountKey {
    /// Credential-authority namespace (`github`).
    pub vendor: String,
    /// Credential handle the value is staged for.
    pub handle: String,
    /// Scopes the account was granted.
    pub scopes: Vec<String>,
}

impl AccountKey {
    /// A key with normalized scopes.
    pub fn new<S: Into<String>>(
        vendor: impl Into<String>,
        handle: impl Into<String>,
        scopes: impl IntoIterator<Item = S>,
    ) -> Self {
        let mut scopes: Vec<String> = scopes.into_iter().map(Into::into).collect();
        scopes.sort();
        scopes.dedup();
        Self {
            vendor: vendor.into(),
            handle: handle.into(),
            scopes,
        }
    }

    /// Whether this account can serve a request for `vendor`/`handle` needing `scopes`.
    pub fn covers(&self, vendor: &str, handle: &str, scopes: &[String]) -> bool {
        self.vendor == vendor
            && self.handle == handle
            && scopes.iter().all(|s| self.scopes.contains(s))
    }
}

impl fmt::Display for AccountKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{} [{}]",
            self.vendor,
            self.handle,
            self.scopes.join(" ")
        )
    }
}

/// A store of credential values.
pub trait SecretStore: Send + Sync + fmt::Debug {
    /// The value stored under exactly `key`.
    fn get(&self, key: &AccountKey) -> Result<Option<SecretString>, SecretError>;

    /// Store `value` under `key`, replacing any previous value.
    fn put(&self, key: &AccountKey, value: SecretString) -> Result<(), SecretError>;

    /// Remove `key`; whether it existed.
    fn delete(&self, key: &AccountKey) -> Result<bool, SecretError>;

    /// Every stored key (never values).
    fn list(&self) -> Result<Vec<AccountKey>, SecretError>;

    /// The value for a credential: the exact key, else an account whose scopes cover `scopes`.
    fn find(
        &self,
        vendor: &str,
        handle: &str,
        scopes: &[String],
    ) -> Result<Option<SecretString>, SecretError> {
        let exact = AccountKey::new(vendor, handle, scopes.iter().cloned());
        if let Some(value) = self.get(&exact)? {
            return Ok(Some(value));
        }
        for key in self.list()? {
            if key.covers(vendor, handle, scopes)
                && let Some(value) = self.get(&key)?
            {
                return Ok(Some(value));
            }
        }
        Ok(None)
    }
}

/// An in-memory store (nothing persists).
#[derive(Debug, Default)]
pub struct MemoryStore {
    values: Mutex<BTreeMap<AccountKey, SecretString>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// A store holding `value` under `key` (builder style).
    pub fn with(self, key: AccountKey, value: impl Into<String>) -> Self {
        self.lock().insert(key, SecretString::from(value.into()));
        self
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<AccountKey, SecretString>> {
        self.values.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl SecretStore for MemoryStore {
    fn get(&self, key: &AccountKey) -> Result<Option<SecretString>, SecretError> {
        Ok(self.lock().get(key).cloned())
    }

    fn put(&self, key: &AccountKey, value: SecretString) -> Result<(), SecretError> {
        self.lock().insert(key.clone(), value);
        Ok(())
    }

    fn delete(&self, key: &AccountKey) -> Result<bool, SecretError> {
        Ok(self.lock().remove(key).is_some())
    }

    fn list(&self) -> Result<Vec<AccountKey>, SecretError> {
        Ok(self.lock().keys().cloned().collect())
    }
}

#[cfg(test)]
mod tests {
    use secrecy::ExposeSecret;

    use super::*;

    #[test]
    fn find_prefers_exact_then_covering_scopes() {
        let wide = AccountKey::new("github", "gh", ["repo", "read:org"]);
        let store = MemoryStore::new().with(wide, "wide-value");
        let found = store
            .find("github", "gh", &["repo".into()])
            .unwrap()
            .unwrap();
        assert_eq!(found.expose_secret(), "wide-value");
        assert!(
            store
                .find("github", "gh", &["admin".into()])
                .unwrap()
                .is_none()
        );
        assert!(store.find("google", "gh", &[]).unwrap().is_none());
    }

    #[test]
    fn scopes_are_normalized() {
        assert_eq!(
            AccountKey::new("v", "h", ["b", "a", "b"]),
            AccountKey::new("v", "h", ["a", "b"])
        );
    }
}
