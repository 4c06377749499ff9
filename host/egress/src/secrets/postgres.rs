//! Secrets and accounts in PostgreSQL, shared by every host of a
//! deployment, encrypted with the file store's cipher (XChaCha20-Poly1305)
//! under a key that never enters the database (a key file or an
//! environment variable, [`KeySource`]).
//!
//! One row per account: `account` is the JSON of its [`AccountKey`]; the
//! value and its binding are one ciphertext whose associated data is the
//! format version and that JSON, so a row copied onto another account, or
//! a binding edited in the database, does not decrypt.
//!
//! [`SecretStore`] is synchronous (the egress session stages credentials
//! synchronously). The store keeps one connection on a thread of its own
//! and each method waits for its round trip there: a caller never needs a
//! runtime, and a lost connection is opened again on the next call.

use std::sync::Mutex;
use std::sync::mpsc;

use chacha20poly1305::aead::{Aead, AeadCore, OsRng, Payload};
use chacha20poly1305::{Key, KeyInit, XChaCha20Poly1305, XNonce};
use secrecy::{ExposeSecret, SecretString};
use tokio_postgres::{Client, NoTls};
use zeroize::Zeroizing;

use super::file::load_key;
use super::{Account, AccountBinding, AccountKey, KeySource, SecretError, SecretStore};

/// Bound into every ciphertext; a new row format gets a new version.
const AAD_PREFIX: &[u8] = b"warden-secrets/pg/v1\n";

/// The advisory lock key under which the table is created ("secret").
const SCHEMA_LOCK: i64 = 0x7365_6372_6574;

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS warden_secrets (
    account    TEXT PRIMARY KEY,
    nonce      BYTEA NOT NULL,
    ciphertext BYTEA NOT NULL
)";

type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// A [`SecretStore`] in a PostgreSQL database.
pub struct PgSecretStore {
    jobs: Mutex<mpsc::Sender<Job>>,
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
    /// Connects to `url`, creates the table when missing, and loads the key
    /// from `key`.
    pub fn connect(url: &str, key: KeySource) -> Result<Self, SecretError> {
        let config: tokio_postgres::Config = url
            .parse()
            .map_err(|e| SecretError::Io(format!("the PostgreSQL URL is invalid: {e}")))?;
        let key = load_key(&key)?;
        let cipher = XChaCha20Poly1305::new(Key::from_slice(key.as_slice()));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(backend)?;
        let mut connection = Connection {
            runtime,
            config,
            client: None,
        };
        let (jobs, receiver) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("warden-pg-secrets".into())
            .spawn(move || {
                // Ends when the store (the only sender) is dropped.
                for job in receiver {
                    job(&mut connection);
                }
            })
            .map_err(backend)?;
        let store = PgSecretStore {
            jobs: Mutex::new(jobs),
            cipher,
        };
        // On the connection thread, like every query: a caller may be on an
        // async runtime, where this thread could not block on another.
        store.run(|c| c.create_table())?;
        Ok(store)
    }

    /// Runs `job` on the connection thread and waits for its result.
    fn run<T: Send + 'static>(
        &self,
        job: impl FnOnce(&mut Connection) -> Result<T, SecretError> + Send + 'static,
    ) -> Result<T, SecretError> {
        let (reply, result) = mpsc::sync_channel(1);
        let stopped = || SecretError::Io("the PostgreSQL connection thread stopped".into());
        self.jobs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .send(Box::new(move |connection| {
                let _ = reply.send(job(connection));
            }))
            .map_err(|_| stopped())?;
        result.recv().map_err(|_| stopped())?
    }

    /// The row of `key`, decrypted.
    fn read(&self, key: &AccountKey) -> Result<Option<Sealed>, SecretError> {
        let account = account_text(key)?;
        let row = {
            let account = account.clone();
            self.run(move |c| c.row(&account))?
        };
        row.map(|(nonce, ciphertext)| open(&self.cipher, &account, &nonce, &ciphertext))
            .transpose()
    }

    /// Writes `key`'s row as `change` makes it from the current one, in one
    /// transaction holding the row's lock, so two hosts never lose each
    /// other's change. `None` from `change` writes nothing.
    fn update(
        &self,
        key: &AccountKey,
        change: impl FnOnce(Option<Sealed>) -> Result<Option<Sealed>, SecretError> + Send + 'static,
    ) -> Result<(), SecretError> {
        let account = account_text(key)?;
        let cipher = self.cipher.clone();
        self.run(move |c| c.update(&account, &cipher, change))
    }
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

fn account_text(key: &AccountKey) -> Result<String, SecretError> {
    serde_json::to_string(key).map_err(|_| SecretError::Corrupt("serialize"))
}

fn aad(account: &str) -> Vec<u8> {
    [AAD_PREFIX, account.as_bytes()].concat()
}

impl SecretStore for PgSecretStore {
    fn get(&self, key: &AccountKey) -> Result<Option<SecretString>, SecretError> {
        Ok(self.read(key)?.map(|s| SecretString::from(s.value.clone())))
    }

    fn put(&self, key: &AccountKey, value: SecretString) -> Result<(), SecretError> {
        self.update(key, move |current| {
            let binding = current.and_then(|mut s| s.binding.take());
            Ok(Some(Sealed {
                value: value.expose_secret().to_owned(),
                binding,
            }))
        })
    }

    fn delete(&self, key: &AccountKey) -> Result<bool, SecretError> {
        let account = account_text(key)?;
        self.run(move |c| c.delete(&account))
    }

    fn list(&self) -> Result<Vec<AccountKey>, SecretError> {
        let rows = self.run(|c| c.all())?;
        rows.iter()
            .map(|(account, _, _)| {
                serde_json::from_str(account).map_err(|_| SecretError::Corrupt("account key"))
            })
            .collect()
    }

    fn binding(&self, key: &AccountKey) -> Result<Option<AccountBinding>, SecretError> {
        Ok(self.read(key)?.and_then(|mut s| s.binding.take()))
    }

    fn set_binding(&self, key: &AccountKey, binding: &AccountBinding) -> Result<(), SecretError> {
        let (binding, name) = (binding.clone(), key.to_string());
        self.update(key, move |current| match current {
            Some(mut sealed) => {
                sealed.binding = Some(binding);
                Ok(Some(sealed))
            }
            None => Err(SecretError::NoSuchAccount(name)),
        })
    }

    fn put_bound(
        &self,
        key: &AccountKey,
        binding: &AccountBinding,
        value: SecretString,
    ) -> Result<(), SecretError> {
        let binding = binding.clone();
        self.update(key, move |_| {
            Ok(Some(Sealed {
                value: value.expose_secret().to_owned(),
                binding: Some(binding),
            }))
        })
    }

    fn accounts(&self) -> Result<Vec<Account>, SecretError> {
        let rows = self.run(|c| c.all())?;
        rows.iter()
            .map(|(account, nonce, ciphertext)| {
                let key = serde_json::from_str(account)
                    .map_err(|_| SecretError::Corrupt("account key"))?;
                let mut sealed = open(&self.cipher, account, nonce, ciphertext)?;
                let binding = sealed.binding.take().unwrap_or_default();
                Ok(Account { key, binding })
            })
            .collect()
    }
}

/// The connection thread's state: a current-thread runtime and one client.
struct Connection {
    runtime: tokio::runtime::Runtime,
    config: tokio_postgres::Config,
    client: Option<Client>,
}

/// `(account, nonce, ciphertext)`.
type Row = (String, Vec<u8>, Vec<u8>);

/// `(nonce, ciphertext)`.
type SealedRow = (Vec<u8>, Vec<u8>);

impl Connection {
    /// The client, connecting first when there is none or it was lost.
    fn client(&mut self) -> Result<&mut Client, SecretError> {
        if self.client.as_ref().is_none_or(Client::is_closed) {
            let (client, connection) = self
                .runtime
                .block_on(self.config.connect(NoTls))
                .map_err(backend)?;
            // Polled whenever this thread blocks on a query.
            self.runtime.spawn(connection);
            self.client = Some(client);
        }
        Ok(self.client.as_mut().expect("connected above"))
    }

    fn block_on<T>(
        &mut self,
        query: impl AsyncFnOnce(&mut Client) -> Result<T, tokio_postgres::Error>,
    ) -> Result<T, SecretError> {
        self.client()?;
        let Connection {
            runtime, client, ..
        } = self;
        let client = client.as_mut().expect("connected above");
        runtime.block_on(query(client)).map_err(backend)
    }

    fn create_table(&mut self) -> Result<(), SecretError> {
        self.block_on(async |c| {
            let tx = c.transaction().await?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])
                .await?;
            tx.batch_execute(SCHEMA).await?;
            tx.commit().await
        })
    }

    fn row(&mut self, account: &str) -> Result<Option<SealedRow>, SecretError> {
        self.block_on(async |c| {
            let row = c
                .query_opt(
                    "SELECT nonce, ciphertext FROM warden_secrets WHERE account = $1",
                    &[&account],
                )
                .await?;
            Ok(row.map(|r| (r.get(0), r.get(1))))
        })
    }

    fn all(&mut self) -> Result<Vec<Row>, SecretError> {
        self.block_on(async |c| {
            let rows = c
                .query(
                    "SELECT account, nonce, ciphertext FROM warden_secrets ORDER BY account",
                    &[],
                )
                .await?;
            Ok(rows
                .iter()
                .map(|r| (r.get(0), r.get(1), r.get(2)))
                .collect())
        })
    }

    fn delete(&mut self, account: &str) -> Result<bool, SecretError> {
        self.block_on(async |c| {
            let n = c
                .execute("DELETE FROM warden_secrets WHERE account = $1", &[&account])
                .await?;
            Ok(n == 1)
        })
    }

    /// One read-modify-write of `account` in a transaction: the row (or,
    /// while there is none, its name's advisory lock) is locked first, so
    /// two first writes of one account also serialise.
    fn update(
        &mut self,
        account: &str,
        cipher: &XChaCha20Poly1305,
        change: impl FnOnce(Option<Sealed>) -> Result<Option<Sealed>, SecretError>,
    ) -> Result<(), SecretError> {
        let current = self.block_on(async |c| {
            c.batch_execute("BEGIN").await?;
            c.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
                &[&account],
            )
            .await?;
            let row = c
                .query_opt(
                    "SELECT nonce, ciphertext FROM warden_secrets WHERE account = $1 FOR UPDATE",
                    &[&account],
                )
                .await?;
            Ok(row.map(|r| (r.get::<_, Vec<u8>>(0), r.get::<_, Vec<u8>>(1))))
        });
        let next = current
            .and_then(|row| {
                row.map(|(nonce, ciphertext)| open(cipher, account, &nonce, &ciphertext))
                    .transpose()
            })
            .and_then(change)
            .and_then(|next| next.map(|s| seal(cipher, account, &s)).transpose());
        let written = match next {
            Ok(Some((nonce, ciphertext))) => self.block_on(async |c| {
                c.execute(
                    "INSERT INTO warden_secrets (account, nonce, ciphertext) VALUES ($1, $2, $3) \
                     ON CONFLICT (account) DO UPDATE SET nonce = $2, ciphertext = $3",
                    &[&account, &nonce, &ciphertext],
                )
                .await?;
                c.batch_execute("COMMIT").await
            }),
            // Nothing to write: end the transaction.
            Ok(None) => return self.block_on(async |c| c.batch_execute("ROLLBACK").await),
            Err(error) => Err(error),
        };
        if written.is_err() {
            // Best effort: a lost connection has no transaction left to end.
            let _ = self.block_on(async |c| c.batch_execute("ROLLBACK").await);
        }
        written
    }
}
