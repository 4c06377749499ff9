//! Secrets and accounts in PostgreSQL, shared by every host of a
//! deployment, encrypted with the file store's cipher (XChaCha20-Poly1305)
//! under a key that never enters the database (a key file or an
//! environment variable, [`KeySource`]).
//!
//! One row per account: `account` is the JSON of its [`AccountKey`]; the
//! value and its binding are one ciphertext whose associated data is the
//! format version and that JSON, so a row copied onto another account, or
//! a binding edited in the database, does not decrypt. Every method is one
//! statement (or one transaction holding the row's lock) on a pooled
//! connection.

use std::collections::BTreeMap;

use chacha20poly1305::aead::{Aead, AeadCore, OsRng, Payload};
use chacha20poly1305::{Key, KeyInit, XChaCha20Poly1305, XNonce};
use deadpool_postgres::Pool;
use secrecy::{ExposeSecret, SecretString};
use zeroize::Zeroizing;

use super::file::load_key;
use super::{
    Account, AccountBinding, AccountKey, Candidate, GRANT_SUFFIX, KeySource, RefreshGuard,
    SecretError, SecretStore,
};

/// Bound into every ciphertext; a new row format gets a new version.
const AAD_PREFIX: &[u8] = b"warden-secrets/pg/v1\n";

/// How long a refresh waits for another host's refresh of the account.
const REFRESH_LOCK_TIMEOUT: &str = "30s";

/// The advisory lock key under which the table is created ("secret").
const SCHEMA_LOCK: i64 = 0x7365_6372_6574;

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS warden_secrets (
    account    TEXT PRIMARY KEY,
    nonce      BYTEA NOT NULL,
    ciphertext BYTEA NOT NULL
);
CREATE TABLE IF NOT EXISTS warden_secret_key_check (
    id         INT PRIMARY KEY CHECK (id = 1),
    nonce      BYTEA NOT NULL,
    ciphertext BYTEA NOT NULL
)";

/// The name the key check is sealed under (its own table: no account's).
const KEY_CHECK: &str = "#key-check";

/// Why a host's key is refused.
const OTHER_KEY: &str = "it does not open this database's secrets (another host wrote them \
     with another key: every host on one database needs the same key)";

/// A [`SecretStore`] in a PostgreSQL database.
pub struct PgSecretStore {
    pool: Pool,
    cipher: XChaCha20Poly1305,
}

impl std::fmt::Debug for PgSecretStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Neither the key nor the URL (it may hold a password).
        f.debug_struct("PgSecretStore").finish_non_exhaustive()
    }
}

/// The decrypted contents of one row.
#[derive(serde::Serialize, serde::Deserialize)]
struct Sealed {
    value: String,
    #[serde(default)]
    binding: Option<AccountBinding>,
}

impl Drop for Sealed {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.value);
    }
}

fn backend(e: impl std::fmt::Display) -> SecretError {
    SecretError::Io(format!("PostgreSQL: {e}"))
}

impl PgSecretStore {
    /// The store on `pool` (a host shares one pool with its approval
    /// store: `warden_registry::PgStore::pool`), creating the table when
    /// missing, with the key from `key`.
    pub async fn open(pool: Pool, key: KeySource) -> Result<Self, SecretError> {
        let key = load_key(&key)?;
        let cipher = XChaCha20Poly1305::new(Key::from_slice(key.as_slice()));
        let mut client = pool.get().await.map_err(backend)?;
        let tx = client.transaction().await.map_err(backend)?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])
            .await
            .map_err(backend)?;
        tx.batch_execute(SCHEMA).await.map_err(backend)?;
        check_key(&tx, &cipher).await?;
        tx.commit().await.map_err(backend)?;
        drop(client);
        Ok(PgSecretStore { pool, cipher })
    }

    async fn client(&self) -> Result<deadpool_postgres::Client, SecretError> {
        self.pool.get().await.map_err(backend)
    }

    /// The row of `key`, decrypted.
    async fn read(&self, key: &AccountKey) -> Result<Option<Sealed>, SecretError> {
        let account = account_text(key)?;
        let client = self.client().await?;
        let row = client
            .query_opt(
                "SELECT nonce, ciphertext FROM warden_secrets WHERE account = $1",
                &[&account],
            )
            .await
            .map_err(backend)?;
        row.map(|r| open(&self.cipher, &account, r.get(0), r.get(1)))
            .transpose()
    }

    /// Writes `key`'s row as `change` makes it from the current one, in one
    /// transaction holding the row's lock (or, while there is no row, its
    /// name's advisory lock), so two hosts never lose each other's change.
    async fn update(
        &self,
        key: &AccountKey,
        change: impl FnOnce(Option<Sealed>) -> Result<Sealed, SecretError> + Send,
    ) -> Result<(), SecretError> {
        let account = account_text(key)?;
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(backend)?;
        tx.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
            &[&account],
        )
        .await
        .map_err(backend)?;
        let row = tx
            .query_opt(
                "SELECT nonce, ciphertext FROM warden_secrets WHERE account = $1 FOR UPDATE",
                &[&account],
            )
            .await
            .map_err(backend)?;
        let current = row
            .map(|r| open(&self.cipher, &account, r.get(0), r.get(1)))
            .transpose()?;
        let (nonce, ciphertext) = seal(&self.cipher, &account, &change(current)?)?;
        tx.execute(
            "INSERT INTO warden_secrets (account, nonce, ciphertext) VALUES ($1, $2, $3) \
             ON CONFLICT (account) DO UPDATE SET nonce = $2, ciphertext = $3",
            &[&account, &nonce, &ciphertext],
        )
        .await
        .map_err(backend)?;
        // Dropped without a commit (any `?` above), the transaction rolls back.
        tx.commit().await.map_err(backend)
    }
}

fn account_text(key: &AccountKey) -> Result<String, SecretError> {
    serde_json::to_string(key).map_err(|_| SecretError::Corrupt("serialize"))
}

fn aad(account: &str) -> Vec<u8> {
    [AAD_PREFIX, account.as_bytes()].concat()
}

/// Refuse a key that is not the database's: the first host to open it
/// seals a check value with its key, every later one must open it. A host
/// started with another key (its key file not mounted yet, and so
/// generated; a stale `$WARDEN_SECRET_KEY`) wrote accounts no other host
/// could read, and every listing of accounts failed on them. A database
/// written before the check is checked against its rows.
async fn check_key(
    tx: &deadpool_postgres::Transaction<'_>,
    cipher: &XChaCha20Poly1305,
) -> Result<(), SecretError> {
    let check = tx
        .query_opt(
            "SELECT nonce, ciphertext FROM warden_secret_key_check WHERE id = 1",
            &[],
        )
        .await
        .map_err(backend)?;
    if let Some(row) = check {
        open(cipher, KEY_CHECK, row.get(0), row.get(1)).map_err(|_| SecretError::Key(OTHER_KEY))?;
        return Ok(());
    }
    // Any one row the key opens will do (a row edited in the database
    // opens with no key).
    let written = tx
        .query(
            "SELECT account, nonce, ciphertext FROM warden_secrets LIMIT 16",
            &[],
        )
        .await
        .map_err(backend)?;
    let opens = |row: &deadpool_postgres::tokio_postgres::Row| {
        let account: String = row.get(0);
        open(cipher, &account, row.get(1), row.get(2)).is_ok()
    };
    if !written.is_empty() && !written.iter().any(opens) {
        return Err(SecretError::Key(OTHER_KEY));
    }
    let check = Sealed {
        value: KEY_CHECK.to_owned(),
        binding: None,
    };
    let (nonce, ciphertext) = seal(cipher, KEY_CHECK, &check)?;
    tx.execute(
        "INSERT INTO warden_secret_key_check (id, nonce, ciphertext) VALUES (1, $1, $2)",
        &[&nonce, &ciphertext],
    )
    .await
    .map_err(backend)?;
    Ok(())
}

fn seal(
    cipher: &XChaCha20Poly1305,
    account: &str,
    sealed: &Sealed,
) -> Result<(Vec<u8>, Vec<u8>), SecretError> {
    let plain =
        Zeroizing::new(serde_json::to_vec(sealed).map_err(|_| SecretError::Corrupt("serialize"))?);
    let nonce = XChaCha20Poly1305::generate_nonce(&mut OsRng);
    let ciphertext = cipher
        .encrypt(
            &nonce,
            Payload {
                msg: &plain,
                aad: &aad(account),
            },
        )
        .map_err(|_| SecretError::Corrupt("encrypt"))?;
    Ok((nonce.to_vec(), ciphertext))
}

fn open(
    cipher: &XChaCha20Poly1305,
    account: &str,
    nonce: &[u8],
    ciphertext: &[u8],
) -> Result<Sealed, SecretError> {
    if nonce.len() != 24 {
        return Err(SecretError::Corrupt("bad nonce"));
    }
    let plain = Zeroizing::new(
        cipher
            .decrypt(
                XNonce::from_slice(nonce),
                Payload {
                    msg: ciphertext,
                    aad: &aad(account),
                },
            )
            .map_err(|_| SecretError::Corrupt("does not decrypt with this key"))?,
    );
    serde_json::from_slice(&plain).map_err(|_| SecretError::Corrupt("bad contents"))
}

#[async_trait::async_trait]
impl SecretStore for PgSecretStore {
    async fn get(&self, key: &AccountKey) -> Result<Option<SecretString>, SecretError> {
        Ok(self
            .read(key)
            .await?
            .map(|s| SecretString::from(s.value.clone())))
    }

    async fn put(&self, key: &AccountKey, value: SecretString) -> Result<(), SecretError> {
        self.update(key, |current| {
            Ok(Sealed {
                value: value.expose_secret().to_owned(),
                binding: current.and_then(|mut s| s.binding.take()),
            })
        })
        .await
    }

    async fn delete(&self, key: &AccountKey) -> Result<bool, SecretError> {
        let account = account_text(key)?;
        let client = self.client().await?;
        let deleted = client
            .execute("DELETE FROM warden_secrets WHERE account = $1", &[&account])
            .await
            .map_err(backend)?;
        Ok(deleted == 1)
    }

    async fn list(&self) -> Result<Vec<AccountKey>, SecretError> {
        let client = self.client().await?;
        let rows = client
            .query("SELECT account FROM warden_secrets ORDER BY account", &[])
            .await
            .map_err(backend)?;
        rows.iter()
            .map(|r| {
                serde_json::from_str(r.get(0)).map_err(|_| SecretError::Corrupt("account key"))
            })
            .collect()
    }

    async fn binding(&self, key: &AccountKey) -> Result<Option<AccountBinding>, SecretError> {
        Ok(self.read(key).await?.and_then(|mut s| s.binding.take()))
    }

    /// One query: the rows whose account names `vendor` and `handle` (or
    /// its grant's handle), by the prefix of the account's JSON text.
    async fn candidates(&self, vendor: &str, handle: &str) -> Result<Vec<Candidate>, SecretError> {
        let grant_handle = format!("{handle}{GRANT_SUFFIX}");
        let prefix = |handle: &str| -> Result<String, SecretError> {
            let text = account_text(&AccountKey::new(vendor, handle, Vec::<String>::new()))?;
            // `{"vendor":…,"handle":…,"scopes":[]}` up to the scopes.
            let cut = text
                .rfind("\"scopes\":")
                .ok_or(SecretError::Corrupt("serialize"))?;
            Ok(text[..cut].to_owned())
        };
        let (accounts, grants) = (prefix(handle)?, prefix(&grant_handle)?);
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT account, nonce, ciphertext FROM warden_secrets \
                 WHERE left(account, length($1)) = $1 OR left(account, length($2)) = $2 \
                 ORDER BY account",
                &[&accounts, &grants],
            )
            .await
            .map_err(backend)?;
        let mut values = BTreeMap::new();
        for row in rows {
            let account: String = row.get(0);
            let key: AccountKey =
                serde_json::from_str(&account).map_err(|_| SecretError::Corrupt("account key"))?;
            let sealed = open(&self.cipher, &account, row.get(1), row.get(2))?;
            values.insert(key, sealed);
        }
        let mut candidates = Vec::new();
        for (key, sealed) in &values {
            // The prefix selected them; the key decides.
            if key.vendor != vendor || key.handle != handle {
                continue;
            }
            let grant = key.sibling(&grant_handle);
            candidates.push(Candidate {
                key: key.clone(),
                value: SecretString::from(sealed.value.clone()),
                binding: sealed.binding.clone(),
                grant: values
                    .get(&grant)
                    .map(|g| SecretString::from(g.value.clone())),
            });
        }
        Ok(candidates)
    }

    /// A session advisory lock on a connection taken out of the pool: the
    /// guard owns the connection, so dropping it (or this host dying)
    /// closes the session and PostgreSQL releases the lock. Waits at most
    /// [`REFRESH_LOCK_TIMEOUT`] for another host's refresh.
    async fn lock_refresh(&self, key: &AccountKey) -> Result<Option<RefreshGuard>, SecretError> {
        let client = deadpool_postgres::Object::take(self.client().await?);
        client
            .batch_execute(&format!("SET lock_timeout = '{REFRESH_LOCK_TIMEOUT}'"))
            .await
            .map_err(backend)?;
        client
            .execute(
                "SELECT pg_advisory_lock($1)",
                &[&i64::from_be_bytes(key.refresh_lock_id().to_be_bytes())],
            )
            .await
            .map_err(backend)?;
        Ok(Some(RefreshGuard::new(client)))
    }

    async fn set_binding(
        &self,
        key: &AccountKey,
        binding: &AccountBinding,
    ) -> Result<(), SecretError> {
        self.update(key, |current| match current {
            Some(mut sealed) => {
                sealed.binding = Some(binding.clone());
                Ok(sealed)
            }
            None => Err(SecretError::NoSuchAccount(key.to_string())),
        })
        .await
    }

    async fn put_bound(
        &self,
        key: &AccountKey,
        binding: &AccountBinding,
        value: SecretString,
    ) -> Result<(), SecretError> {
        self.update(key, |_| {
            Ok(Sealed {
                value: value.expose_secret().to_owned(),
                binding: Some(binding.clone()),
            })
        })
        .await
    }

    async fn accounts(&self) -> Result<Vec<Account>, SecretError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT account, nonce, ciphertext FROM warden_secrets ORDER BY account",
                &[],
            )
            .await
            .map_err(backend)?;
        rows.iter()
            .map(|r| {
                let account: &str = r.get(0);
                let key = serde_json::from_str(account)
                    .map_err(|_| SecretError::Corrupt("account key"))?;
                let mut sealed = open(&self.cipher, account, r.get(1), r.get(2))?;
                let binding = sealed.binding.take().unwrap_or_default();
                Ok(Account { key, binding })
            })
            .collect()
    }
}
