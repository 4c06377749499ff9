//! The embedded default [`ApprovalStore`]: one SQLite file in WAL mode.
//!
//! SQLite is synchronous: every method runs on Tokio's blocking pool, so a
//! write waiting on the file lock never stalls the threads that run calls.
//!
//! Schema versions are tracked with `PRAGMA user_version`; the migrations
//! run in order, each in its own transaction. Several stores (threads or
//! processes) may open the same file: writes wait up to the busy timeout,
//! and lease claims are a single conditional `UPDATE` whose affected-row
//! count decides the one winner.

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::{Connection, Row};

use super::columns::Columns;
use super::{
    ApprovalId, ApprovalRequest, ApprovalState, ApprovalStore, Lease, LeaseId, LeaseState,
    Resolved, StoreError,
};
use crate::approvals::Fingerprint;
use crate::{Grant, GrantId, LocationId, UnixMillis};
use queries::{insert_grant, live_grants};
use schema::{MIGRATIONS, migrate};

mod queries;
mod schema;

/// How long a write waits for another connection's lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

fn backend(e: rusqlite::Error) -> StoreError {
    StoreError::Backend(Box::new(e))
}

/// Create the database file at `path` as 0600 if it is missing, and take
/// group and other permissions off it and its side files.
#[cfg(unix)]
fn private_files(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
    // An empty file is an empty database to SQLite.
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut file = path.as_os_str().to_owned();
        file.push(suffix);
        // Not followed: a link is left as it is (and SQLite opens its target).
        let Ok(meta) = std::fs::symlink_metadata(&file) else {
            continue;
        };
        let mode = meta.permissions().mode();
        if meta.is_file() && mode & 0o077 != 0 {
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode & !0o077))?;
        }
    }
    Ok(())
}

#[cfg(not(unix))]
fn private_files(_path: &Path) -> std::io::Result<()> {
    Ok(())
}

/// An [`ApprovalStore`] in a SQLite database.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    db: Arc<Db>,
}

/// The connection and the synchronous queries the store runs off the
/// async threads.
#[derive(Debug)]
struct Db {
    conn: Mutex<Connection>,
}

impl SqliteStore {
    /// Opens (creating and migrating as needed) the database at `path`.
    ///
    /// The file holds every approval's input and its callers' subjects: it
    /// is created readable by its owner alone (0600) whatever the umask,
    /// and an existing one (with its `-wal`, `-shm` and `-journal` files)
    /// loses any group or other permission. SQLite creates those side files
    /// with the database file's permissions.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref();
        private_files(path).map_err(|e| StoreError::Backend(Box::new(e)))?;
        Db::setup(Connection::open(path).map_err(backend)?)
    }

    /// A private in-memory database (for tests).
    pub fn open_in_memory() -> Result<Self, StoreError> {
        Db::setup(Connection::open_in_memory().map_err(backend)?)
    }

    /// The schema version this build migrates to.
    pub fn schema_version() -> i64 {
        MIGRATIONS.len() as i64
    }

    /// Runs `query` on the blocking pool.
    async fn blocking<T: Send + 'static>(
        &self,
        query: impl FnOnce(&Db) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let db = self.db.clone();
        tokio::task::spawn_blocking(move || query(&db))
            .await
            .map_err(|e| StoreError::Backend(Box::new(e)))?
    }
}

impl Db {
    fn setup(mut conn: Connection) -> Result<SqliteStore, StoreError> {
        conn.busy_timeout(BUSY_TIMEOUT).map_err(backend)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(backend)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(backend)?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(backend)?;
        migrate(&mut conn)?;
        Ok(SqliteStore {
            db: Arc::new(Db {
                conn: Mutex::new(conn),
            }),
        })
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Columns for Row<'_> {
    fn text(&self, i: usize) -> Result<Option<String>, StoreError> {
        self.get(i).map_err(backend)
    }

    fn int(&self, i: usize) -> Result<Option<i64>, StoreError> {
        self.get(i).map_err(backend)
    }
}

#[async_trait::async_trait]
impl ApprovalStore for SqliteStore {
    async fn insert_approval(&self, request: &ApprovalRequest) -> Result<(), StoreError> {
        let request = request.clone();
        self.blocking(move |db| db.insert_approval(&request)).await
    }

    async fn approval(&self, id: &ApprovalId) -> Result<Option<ApprovalRequest>, StoreError> {
        let id = id.clone();
        self.blocking(move |db| db.approval(&id)).await
    }

    async fn pending_approvals(
        &self,
        location: &LocationId,
    ) -> Result<Vec<ApprovalRequest>, StoreError> {
        let location = location.clone();
        self.blocking(move |db| db.pending_approvals(&location))
            .await
    }

    async fn resolve(&self, id: &ApprovalId, resolved: &Resolved) -> Result<bool, StoreError> {
        let (id, resolved) = (id.clone(), resolved.clone());
        self.blocking(move |db| db.resolve(&id, &resolved)).await
    }

    async fn lease(&self, approval_id: &ApprovalId) -> Result<Option<Lease>, StoreError> {
        let approval_id = approval_id.clone();
        self.blocking(move |db| db.lease(&approval_id)).await
    }

    async fn claim_lease(
        &self,
        approval_id: &ApprovalId,
        fingerprint: &Fingerprint,
        now: UnixMillis,
    ) -> Result<bool, StoreError> {
        let (approval_id, fingerprint) = (approval_id.clone(), fingerprint.clone());
        self.blocking(move |db| db.claim_lease(&approval_id, &fingerprint, now))
            .await
    }

    async fn release_lease(
        &self,
        approval_id: &ApprovalId,
        fingerprint: &Fingerprint,
    ) -> Result<bool, StoreError> {
        let (approval_id, fingerprint) = (approval_id.clone(), fingerprint.clone());
        self.blocking(move |db| db.release_lease(&approval_id, &fingerprint))
            .await
    }

    async fn claim_approved(
        &self,
        fingerprint: &Fingerprint,
        now: UnixMillis,
    ) -> Result<Option<ApprovalId>, StoreError> {
        let fingerprint = fingerprint.clone();
        self.blocking(move |db| db.claim_approved(&fingerprint, now))
            .await
    }

    async fn pending_with(
        &self,
        fingerprint: &Fingerprint,
    ) -> Result<Option<ApprovalRequest>, StoreError> {
        let fingerprint = fingerprint.clone();
        self.blocking(move |db| db.pending_with(&fingerprint)).await
    }

    async fn insert_grant(&self, grant: &Grant) -> Result<(), StoreError> {
        let grant = grant.clone();
        self.blocking(move |db| insert_grant(&db.conn(), &grant))
            .await
    }

    async fn grants(
        &self,
        capability_id: &str,
        location: &LocationId,
        now: UnixMillis,
    ) -> Result<Vec<Grant>, StoreError> {
        let (capability_id, location) = (capability_id.to_owned(), location.clone());
        self.blocking(move |db| live_grants(&db.conn(), Some(&capability_id), &location, now))
            .await
    }

    async fn live_grants(
        &self,
        location: &LocationId,
        now: UnixMillis,
    ) -> Result<Vec<Grant>, StoreError> {
        let location = location.clone();
        self.blocking(move |db| live_grants(&db.conn(), None, &location, now))
            .await
    }

    async fn revoke_grant(&self, id: &GrantId) -> Result<bool, StoreError> {
        let id = id.clone();
        self.blocking(move |db| db.revoke_grant(&id)).await
    }

    async fn prune(&self, before: UnixMillis) -> Result<u64, StoreError> {
        self.blocking(move |db| db.prune(before)).await
    }
}

#[cfg(test)]
mod tests;
