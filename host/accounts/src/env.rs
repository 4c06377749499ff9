//! Secrets from environment variables: `WARDEN_SECRET_<VENDOR>_<HANDLE>`.

use std::collections::BTreeMap;

use secrecy::SecretString;

use super::{AccountBinding, AccountKey, AccountLookup, AuthReason, CredentialRequest, Lookup};
use super::{SecretError, SecretStore};

/// Reads `<PREFIX><VENDOR>_<HANDLE>` (uppercase, other characters as `_`).
/// Scopes are not checked: the operator who set the variable vouches for them.
/// A variable is used only once the embedder binds it
/// ([`EnvStore::bind`]): the environment cannot record audiences or
/// consumers, and an unbound value would go to any package naming the vendor.
#[derive(Debug, Clone)]
pub struct EnvStore {
    prefix: String,
    bindings: BTreeMap<(String, String), AccountBinding>,
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
            bindings: BTreeMap::new(),
        }
    }

    /// Bind the variable of `vendor`/`handle` (builder style).
    pub fn bind(mut self, vendor: &str, handle: &str, binding: AccountBinding) -> Self {
        self.bindings
            .insert((vendor.to_owned(), handle.to_owned()), binding);
        self
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

#[async_trait::async_trait]
impl SecretStore for EnvStore {
    async fn get(&self, key: &AccountKey) -> Result<Option<SecretString>, SecretError> {
        Ok(std::env::var(self.variable(&key.vendor, &key.handle))
            .ok()
            .filter(|v| !v.is_empty())
            .map(SecretString::from))
    }

    async fn put(&self, _key: &AccountKey, _value: SecretString) -> Result<(), SecretError> {
        Err(SecretError::ReadOnly)
    }

    async fn delete(&self, _key: &AccountKey) -> Result<bool, SecretError> {
        Err(SecretError::ReadOnly)
    }

    /// The environment cannot be mapped back to vendor and handle; lists nothing.
    async fn list(&self) -> Result<Vec<AccountKey>, SecretError> {
        Ok(Vec::new())
    }

    async fn binding(&self, key: &AccountKey) -> Result<Option<AccountBinding>, SecretError> {
        Ok(self
            .bindings
            .get(&(key.vendor.clone(), key.handle.clone()))
            .cloned())
    }

    async fn resolve(&self, request: &CredentialRequest<'_>) -> Result<AccountLookup, SecretError> {
        let key = AccountKey::new(request.vendor, request.handle, Vec::<String>::new());
        // The environment's accounts are the deployment's: a caller's call
        // uses them only for a vendor the operator shares.
        if !request.requester.may_use(&key) {
            return Ok(AccountLookup::refused(AuthReason::Missing));
        }
        let Some(value) = self.get(&key).await? else {
            return Ok(AccountLookup::refused(AuthReason::Missing));
        };
        let binding = self.binding(&key).await?.unwrap_or_default();
        Ok(match binding.check(request.requester, &request.audience) {
            Ok(()) => AccountLookup {
                lookup: Lookup::Found(value),
                account: Some(key),
                grant: None,
            },
            Err(reason) => AccountLookup::refused(reason),
        })
    }
}
