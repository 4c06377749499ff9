//! Secrets from environment variables: `WARDEN_SECRET_<VENDOR>_<HANDLE>`.

use secrecy::SecretString;

use super::{AccountKey, SecretError, SecretStore};

/// Reads `<PREFIX><VENDOR>_<HANDLE>` (uppercase, other characters as `_`).
/// Scopes are not checked: the operator who set the variable vouches for them.
#[derive(Debug, Clone)]
pub struct EnvStore {
    prefix: String,
}

impl Default for EnvStore {
    fn default() -> Self {
        Self::with_prefix("WARDEN_SECRET_")
    }
}

impl EnvStore {
    /// The default prefix, `WARDEN_SECRET_`.
    pub fn new() -> Self {
        Self::default()
    }

    /// A custom variable prefix.
    pub fn with_prefix(prefix: &str) -> Self {
        Self {
            prefix: prefix.to_owned(),
        }
    }

    /// The variable that holds `vendor`/`handle`.
    pub fn variable(&self, vendor: &str, handle: &str) -> String {
        let word = |s: &str| {
            s.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() {
                        c.to_ascii_uppercase()
                    } else {
                        '_'
                    }
                })
                .collect::<String>()
        };
        format!("{}{}_{}", self.prefix, word(vendor), word(handle))
    }
}

impl SecretStore for EnvStore {
    fn get(&self, key: &AccountKey) -> Result<Option<SecretString>, SecretError> {
        Ok(std::env::var(self.variable(&key.vendor, &key.handle))
            .ok()
            .filter(|v| !v.is_empty())
            .map(SecretString::from))
    }

    fn put(&self, _key: &AccountKey, _value: SecretString) -> Result<(), SecretError> {
        Err(SecretError::ReadOnly)
    }

    fn delete(&self, _key: &AccountKey) -> Result<bool, SecretError> {
        Err(SecretError::ReadOnly)
    }

    /// The environment cannot be mapped back to vendor and handle; lists nothing.
    fn list(&self) -> Result<Vec<AccountKey>, SecretError> {
        Ok(Vec::new())
    }

    fn find(
        &self,
        vendor: &str,
        handle: &str,
        _scopes: &[String],
    ) -> Result<Option<SecretString>, SecretError> {
        self.get(&AccountKey::new(vendor, handle, Vec::<String>::new()))
    }
}
