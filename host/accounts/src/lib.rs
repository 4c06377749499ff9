//! Accounts: the secret stores where credential values live between calls,
//! and the binding that decides which call may use one. Apart from egress
//! (which injects a value a lookup here allows, and re-exports this crate
//! as `warden_egress::secrets`) so a store can be used, and tested, on its
//! own.
//!
//! [`SecretStore`] is the (async) trait the host composes;
//! [`EncryptedFileStore`] is the embedded default (ChaCha20-Poly1305 at rest,
//! read once into memory; a change rewrites the small file),
//! [`PgSecretStore`] keeps accounts in PostgreSQL for many hosts, [`EnvStore`]
//! reads the environment, and [`MemoryStore`] is for embedders and tests. Values are
//! [`SecretString`]s (zeroized on drop); listing returns keys only.
//!
//! Every account is bound ([`AccountBinding`]): the audiences it may be sent
//! to and the extensions allowed to use it. [`SecretStore::lookup`] is the
//! one way a call gets a value, and it applies that binding (see [`account`]).
//!
//! ```
//! use secrecy::SecretString;
//! use warden_accounts::{AccountAudience, AccountBinding, AccountKey, MemoryStore, SecretStore};
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let store = MemoryStore::new();
//! let key = AccountKey::new("github", "github_token", ["repo"]);
//! let api = AccountAudience { scheme: "https".into(), host: "api.github.com".into(), port: 443 };
//! let binding = AccountBinding::new("github", [api]);
//! store.put_bound(&key, &binding, SecretString::from("ghp_example")).await.unwrap();
//! assert_eq!(store.list().await.unwrap(), vec![key]);
//! # });
//! ```

pub mod account;
#[cfg(any(test, feature = "testing"))]
pub mod conformance;
mod env;
mod file;
mod postgres;
mod shared_file;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Mutex;

use secrecy::SecretString;

pub use account::{
    Account, AccountAudience, AccountBinding, AccountLookup, AuthReason, BUNDLED,
    CredentialRequest, Lookup, Requester,
};

/// Suffix of the handle an OAuth account's grant is stored under, beside
/// the account (`github_token#oauth2`; see `warden_egress::auth::grant`).
pub const GRANT_SUFFIX: &str = "#oauth2";

/// A stored account as one read of the store returns it for a call: key,
/// value, binding, and the grant stored beside it.
#[derive(Debug)]
pub struct Candidate {
    /// Vendor, handle and scopes.
    pub key: AccountKey,
    /// The value (the access token or key).
    pub value: SecretString,
    /// Where it may go and who may use it; `None` when none is recorded.
    pub binding: Option<AccountBinding>,
    /// The grant stored under `<handle>#oauth2` with the same scopes (JSON).
    pub grant: Option<SecretString>,
}
pub use env::EnvStore;
pub use file::{EncryptedFileStore, KeySource};
pub use postgres::PgSecretStore;

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
    /// A binding was set for an account that is not stored.
    #[error("no account {0} is stored")]
    NoSuchAccount(String),
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
    /// The authenticated caller the account belongs to (a JWT subject of a
    /// team endpoint): used for that caller's calls only. `None`: the
    /// deployment's own account (stdio, the CLI, the static bearer token),
    /// which serves an authenticated caller only for the vendors the
    /// operator shares ([`crate::Requester::shared`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
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
            owner: None,
        }
    }

    /// This key, for the account of caller `owner` (builder style).
    pub fn owned_by(mut self, owner: impl Into<String>) -> Self {
        self.owner = Some(owner.into());
        self
    }

    /// The key of the same vendor, scopes and owner under `handle` (an
    /// account's grant, `<handle>#oauth2`).
    pub fn sibling(&self, handle: &str) -> AccountKey {
        AccountKey {
            handle: handle.to_owned(),
            ..self.clone()
        }
    }

    /// Whether this account can serve a request for `vendor`/`handle` needing `scopes`.
    pub fn covers(&self, vendor: &str, handle: &str, scopes: &[String]) -> bool {
        self.vendor == vendor
            && self.handle == handle
            && scopes.iter().all(|s| self.scopes.contains(s))
    }
}

impl AccountKey {
    /// A 64-bit name for this account's refresh lock, the same in every
    /// process and store (the first eight bytes of a SHA-256 of the key; a
    /// collision only makes two accounts' refreshes take turns).
    pub(crate) fn refresh_lock_id(&self) -> u64 {
        use sha2::Digest as _;
        let digest = sha2::Sha256::digest(format!("refresh\n{self}"));
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        u64::from_be_bytes(first)
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
        )?;
        match &self.owner {
            Some(owner) => write!(f, " of {owner}"),
            None => Ok(()),
        }
    }
}

/// Holds an account's refresh lock ([`SecretStore::lock_refresh`]) until
/// dropped.
pub struct RefreshGuard {
    _held: Box<dyn Send + Sync>,
}

impl RefreshGuard {
    /// A guard that releases the lock when `held` is dropped.
    pub fn new(held: impl Send + Sync + 'static) -> Self {
        RefreshGuard {
            _held: Box::new(held),
        }
    }
}

impl fmt::Debug for RefreshGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RefreshGuard")
    }
}

/// A store of credential values and the binding of each.
#[async_trait::async_trait]
pub trait SecretStore: Send + Sync + fmt::Debug {
    /// The value stored under exactly `key` (no binding check: for the
    /// host's own flows, never for a call).
    async fn get(&self, key: &AccountKey) -> Result<Option<SecretString>, SecretError>;

    /// Store `value` under `key`, replacing any previous value and keeping
    /// its binding. A new account has none (unbound: refused) until
    /// [`SecretStore::set_binding`]; prefer [`SecretStore::put_bound`].
    async fn put(&self, key: &AccountKey, value: SecretString) -> Result<(), SecretError>;

    /// Remove `key` and its binding; whether it existed.
    async fn delete(&self, key: &AccountKey) -> Result<bool, SecretError>;

    /// Every stored key (never values).
    async fn list(&self) -> Result<Vec<AccountKey>, SecretError>;

    /// The binding of `key`; `None` when none is recorded (such an account
    /// is refused as unbound). A store that keeps none records none.
    async fn binding(&self, _key: &AccountKey) -> Result<Option<AccountBinding>, SecretError> {
        Ok(None)
    }

    /// Record the binding of the stored account `key`.
    async fn set_binding(
        &self,
        _key: &AccountKey,
        _binding: &AccountBinding,
    ) -> Result<(), SecretError> {
        Err(SecretError::ReadOnly)
    }

    /// Store `value` under `key` with `binding` (connecting an account).
    async fn put_bound(
        &self,
        key: &AccountKey,
        binding: &AccountBinding,
        value: SecretString,
    ) -> Result<(), SecretError> {
        self.put(key, value).await?;
        self.set_binding(key, binding).await
    }

    /// Take account `key`'s refresh lock, shared with every host of this
    /// store, until the guard is dropped: hosts on one database refresh an
    /// account once, and a provider that revokes a grant when a rotated
    /// refresh token is presented again never sees one. `None` from a store
    /// that offers no such lock (one process's: each host's own single
    /// flight, and a refused refresh's check for a grant another host
    /// stored, cover it).
    async fn lock_refresh(&self, _key: &AccountKey) -> Result<Option<RefreshGuard>, SecretError> {
        Ok(None)
    }

    /// Every account with its binding (never values).
    async fn accounts(&self) -> Result<Vec<Account>, SecretError> {
        let mut accounts = Vec::new();
        for key in self.list().await? {
            let binding = self.binding(&key).await?.unwrap_or_default();
            accounts.push(Account { key, binding });
        }
        Ok(accounts)
    }

    /// Every stored account of `vendor` and `handle` (any scopes), with its
    /// value, binding and grant: what one credential of one call needs. The
    /// default composes [`list`](Self::list), [`get`](Self::get) and
    /// [`binding`](Self::binding); a store that can answers in one read.
    async fn candidates(&self, vendor: &str, handle: &str) -> Result<Vec<Candidate>, SecretError> {
        let grant_handle = format!("{handle}{GRANT_SUFFIX}");
        let mut candidates = Vec::new();
        for key in self.list().await? {
            if key.vendor != vendor || key.handle != handle {
                continue;
            }
            let Some(value) = self.get(&key).await? else {
                continue;
            };
            let grant_key = key.sibling(&grant_handle);
            candidates.push(Candidate {
                binding: self.binding(&key).await?,
                grant: self.get(&grant_key).await?,
                key,
                value,
            });
        }
        Ok(candidates)
    }

    /// The value a call may use for `request` and the account that serves
    /// it, or why none may: the account must cover the scopes, allow the
    /// extension and include the audience (see [`account`]).
    async fn resolve(&self, request: &CredentialRequest<'_>) -> Result<AccountLookup, SecretError> {
        account::resolve(self, request).await
    }

    /// [`resolve`](Self::resolve)'s value or refusal alone.
    async fn lookup(&self, request: &CredentialRequest<'_>) -> Result<Lookup, SecretError> {
        Ok(self.resolve(request).await?.lookup)
    }

    /// Allow `requester` to use every bound account of `vendor` (toward
    /// those accounts' own audiences only), pinned to its package's
    /// content; the accounts it now may use.
    async fn allow(
        &self,
        vendor: &str,
        requester: Requester<'_>,
    ) -> Result<Vec<Account>, SecretError> {
        account::allow(self, vendor, requester).await
    }
}

/// An in-memory store (nothing persists).
#[derive(Debug, Default)]
pub struct MemoryStore {
    values: Mutex<BTreeMap<AccountKey, (SecretString, Option<AccountBinding>)>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// A store holding `value` under `key`, bound by `binding` (builder style).
    pub fn with(self, key: AccountKey, binding: AccountBinding, value: impl Into<String>) -> Self {
        self.lock()
            .insert(key, (SecretString::from(value.into()), Some(binding)));
        self
    }

    /// A store holding `value` under `key` with no binding, as a store
    /// written before accounts were bound holds it (builder style).
    pub fn with_unbound(self, key: AccountKey, value: impl Into<String>) -> Self {
        self.lock()
            .insert(key, (SecretString::from(value.into()), None));
        self
    }

    #[allow(clippy::type_complexity)]
    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, BTreeMap<AccountKey, (SecretString, Option<AccountBinding>)>>
    {
        self.values.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[async_trait::async_trait]
impl SecretStore for MemoryStore {
    async fn get(&self, key: &AccountKey) -> Result<Option<SecretString>, SecretError> {
        Ok(self.lock().get(key).map(|(value, _)| value.clone()))
    }

    async fn put(&self, key: &AccountKey, value: SecretString) -> Result<(), SecretError> {
        let mut values = self.lock();
        let binding = values.remove(key).and_then(|(_, binding)| binding);
        values.insert(key.clone(), (value, binding));
        Ok(())
    }

    async fn delete(&self, key: &AccountKey) -> Result<bool, SecretError> {
        Ok(self.lock().remove(key).is_some())
    }

    async fn list(&self) -> Result<Vec<AccountKey>, SecretError> {
        Ok(self.lock().keys().cloned().collect())
    }

    async fn binding(&self, key: &AccountKey) -> Result<Option<AccountBinding>, SecretError> {
        Ok(self
            .lock()
            .get(key)
            .and_then(|(_, binding)| binding.clone()))
    }

    async fn set_binding(
        &self,
        key: &AccountKey,
        binding: &AccountBinding,
    ) -> Result<(), SecretError> {
        match self.lock().get_mut(key) {
            Some((_, slot)) => {
                *slot = Some(binding.clone());
                Ok(())
            }
            None => Err(SecretError::NoSuchAccount(key.to_string())),
        }
    }

    async fn candidates(&self, vendor: &str, handle: &str) -> Result<Vec<Candidate>, SecretError> {
        let values = self.lock();
        let grant_handle = format!("{handle}{GRANT_SUFFIX}");
        Ok(values
            .iter()
            .filter(|(key, _)| key.vendor == vendor && key.handle == handle)
            .map(|(key, (value, binding))| {
                let grant = key.sibling(&grant_handle);
                Candidate {
                    key: key.clone(),
                    value: value.clone(),
                    binding: binding.clone(),
                    grant: values.get(&grant).map(|(g, _)| g.clone()),
                }
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use secrecy::ExposeSecret;

    use super::*;

    fn api(host: &str) -> AccountAudience {
        AccountAudience {
            scheme: "https".into(),
            host: host.into(),
            port: 443,
        }
    }

    fn request<'a>(
        extension: &'a str,
        handle: &'a str,
        scopes: &'a [String],
        host: &str,
    ) -> CredentialRequest<'a> {
        CredentialRequest {
            vendor: "github",
            handle,
            scopes,
            requester: extension.into(),
            audience: api(host),
        }
    }

    fn found(lookup: Lookup) -> String {
        match lookup {
            Lookup::Found(value) => value.expose_secret().to_owned(),
            Lookup::Refused(reason) => panic!("refused: {reason}"),
        }
    }

    fn refused(lookup: Lookup) -> AuthReason {
        match lookup {
            Lookup::Found(_) => panic!("a value was handed out"),
            Lookup::Refused(reason) => reason,
        }
    }

    #[tokio::test]
    async fn memory_store_conforms() {
        conformance::run(&MemoryStore::new()).await;
        conformance::accounts_per_caller(&MemoryStore::new()).await;
    }

    #[tokio::test]
    async fn lookup_prefers_exact_then_covering_scopes() {
        let wide = AccountKey::new("github", "gh", ["repo", "read:org"]);
        let bound = AccountBinding::new("github", [api("api.github.com")]);
        let store = MemoryStore::new().with(wide, bound, "wide-value");
        let repo = ["repo".to_owned()];
        let lookup = store
            .lookup(&request("github", "gh", &repo, "api.github.com"))
            .await;
        assert_eq!(found(lookup.unwrap()), "wide-value");
        let admin = ["admin".to_owned()];
        let lookup = store
            .lookup(&request("github", "gh", &admin, "api.github.com"))
            .await;
        assert_eq!(refused(lookup.unwrap()), AuthReason::Missing);
    }

    #[tokio::test]
    async fn an_account_stored_without_scopes_serves_no_request_that_needs_one() {
        let key = AccountKey::new("github", "gh", Vec::<String>::new());
        let bound = AccountBinding::new("github", [api("api.github.com")]);
        let store = MemoryStore::new().with(key, bound, "no-scopes");
        let repo = ["repo".to_owned()];
        let lookup = store
            .lookup(&request("github", "gh", &repo, "api.github.com"))
            .await;
        assert_eq!(refused(lookup.unwrap()), AuthReason::Missing);
        let lookup = store
            .lookup(&request("github", "gh", &[], "api.github.com"))
            .await;
        assert_eq!(found(lookup.unwrap()), "no-scopes");
    }

    #[tokio::test]
    async fn another_extension_needs_consent_and_then_only_reaches_the_accounts_audience() {
        let key = AccountKey::new("github", "gh", ["repo"]);
        let bound = AccountBinding::new("github", [api("api.github.com")]);
        let store = MemoryStore::new().with(key.clone(), bound, "ghp_value");
        let repo = ["repo".to_owned()];
        let thief = request("thief", "gh", &repo, "collector.thief.example");
        assert_eq!(
            refused(store.lookup(&thief).await.unwrap()),
            AuthReason::Consent
        );
        let shared = request("github_extra", "gh", &repo, "api.github.com");
        assert_eq!(
            refused(store.lookup(&shared).await.unwrap()),
            AuthReason::Consent
        );

        let allowed = store.allow("github", "thief".into()).await.unwrap();
        assert_eq!(allowed[0].binding.extensions, ["github", "thief"]);
        assert_eq!(
            refused(store.lookup(&thief).await.unwrap()),
            AuthReason::Audience
        );
        store.allow("github", "github_extra".into()).await.unwrap();
        assert_eq!(found(store.lookup(&shared).await.unwrap()), "ghp_value");
        // Allowing never widened the audiences.
        assert_eq!(
            store.binding(&key).await.unwrap().unwrap().audiences,
            [api("api.github.com")]
        );
    }

    #[tokio::test]
    async fn a_legacy_account_is_refused_and_a_creators_account_binds_on_first_use() {
        let legacy = AccountKey::new("github", "gh", ["repo"]);
        let store = MemoryStore::new().with_unbound(legacy, "old");
        let repo = ["repo".to_owned()];
        let call = request("github", "gh", &repo, "api.github.com");
        assert_eq!(
            refused(store.lookup(&call).await.unwrap()),
            AuthReason::Unbound
        );
        // Nobody can claim it by allowing it either.
        assert!(
            store
                .allow("github", "github".into())
                .await
                .unwrap()
                .is_empty()
        );

        let key = AccountKey::new("google", "g", Vec::<String>::new());
        let created = AccountBinding {
            created_by: Some("gmail".into()),
            ..AccountBinding::default()
        };
        let store = MemoryStore::new().with(key.clone(), created, "ya29");
        let mut other = request("thief", "g", &[], "collector.thief.example");
        other.vendor = "google";
        assert_eq!(
            refused(store.lookup(&other).await.unwrap()),
            AuthReason::Consent
        );
        let mut first = request("gmail", "g", &[], "gmail.googleapis.com");
        first.vendor = "google";
        assert_eq!(found(store.lookup(&first).await.unwrap()), "ya29");
        let binding = store.binding(&key).await.unwrap().unwrap();
        assert_eq!(binding.audiences, [api("gmail.googleapis.com")]);
        assert_eq!(binding.extensions, ["gmail"]);
        // The creator's own later manifest cannot move it.
        let mut moved = request("gmail", "g", &[], "collector.thief.example");
        moved.vendor = "google";
        assert_eq!(
            refused(store.lookup(&moved).await.unwrap()),
            AuthReason::Audience
        );
    }

    #[tokio::test]
    async fn consent_is_pinned_to_the_package_content_it_was_given_for() {
        let key = AccountKey::new("github", "gh", ["repo"]);
        let bound = AccountBinding::new("github", [api("api.github.com")])
            .pinned(Requester::new("github", "digest-one"));
        let store = MemoryStore::new().with(key.clone(), bound, "ghp_value");
        let repo = ["repo".to_owned()];
        let mut call = request("github", "gh", &repo, "api.github.com");
        call.requester = Requester::new("github", "digest-one");
        assert_eq!(found(store.lookup(&call).await.unwrap()), "ghp_value");

        // The same id, other content: a package installed over it.
        let mut replaced = call.clone();
        replaced.requester = Requester::new("github", "digest-two");
        assert_eq!(
            refused(store.lookup(&replaced).await.unwrap()),
            AuthReason::Changed
        );
        let mut bundled = call.clone();
        bundled.requester = Requester::new("github", BUNDLED);
        assert_eq!(
            refused(store.lookup(&bundled).await.unwrap()),
            AuthReason::Changed
        );

        // Allowing the new content moves the pin: the old content is out.
        store
            .allow("github", Requester::new("github", "digest-two"))
            .await
            .unwrap();
        assert_eq!(found(store.lookup(&replaced).await.unwrap()), "ghp_value");
        assert_eq!(
            refused(store.lookup(&call).await.unwrap()),
            AuthReason::Changed
        );
    }

    #[tokio::test]
    async fn an_unpinned_consent_is_pinned_by_its_next_call() {
        let key = AccountKey::new("github", "gh", ["repo"]);
        let bound = AccountBinding::new("github", [api("api.github.com")]);
        assert!(bound.pins.is_empty());
        let store = MemoryStore::new().with(key.clone(), bound, "ghp_value");
        let repo = ["repo".to_owned()];
        let mut call = request("github", "gh", &repo, "api.github.com");
        call.requester = Requester::new("github", "digest-one");
        assert_eq!(found(store.lookup(&call).await.unwrap()), "ghp_value");
        let pins = store.binding(&key).await.unwrap().unwrap().pins;
        assert_eq!(pins.get("github").map(String::as_str), Some("digest-one"));
        call.requester = Requester::new("github", "digest-two");
        assert_eq!(
            refused(store.lookup(&call).await.unwrap()),
            AuthReason::Changed
        );
        // A requester that names no content is judged by its id alone.
        call.requester = "github".into();
        assert_eq!(found(store.lookup(&call).await.unwrap()), "ghp_value");
    }

    #[tokio::test]
    async fn put_keeps_the_binding() {
        let key = AccountKey::new("github", "gh", ["repo"]);
        let bound = AccountBinding::new("github", [api("api.github.com")]);
        let store = MemoryStore::new().with(key.clone(), bound.clone(), "old");
        store.put(&key, SecretString::from("new")).await.unwrap();
        assert_eq!(store.binding(&key).await.unwrap(), Some(bound));
    }

    #[tokio::test]
    async fn scopes_are_normalized() {
        assert_eq!(
            AccountKey::new("v", "h", ["b", "a", "b"]),
            AccountKey::new("v", "h", ["a", "b"])
        );
    }
}
