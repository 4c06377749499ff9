//! The server [`ApprovalStore`]: PostgreSQL, shared by every host of a
//! deployment.
//!
//! Each method is one statement (or one transaction) on a pooled
//! connection. Claims are single conditional `UPDATE`s: under PostgreSQL's
//! row locks, two hosts claiming the same lease serialise, and the second
//! finds it claimed, so an approved call is dispatched once whichever host
//! resumes it. Connections are plain TCP or a Unix socket (no TLS): run
//! the database on a private network or the same machine.

mod clock;
mod packages;
mod schema;

pub use packages::{MAX_STORED_PACKAGE_BYTES, PackageRecord, StoredPackage};

use std::time::Duration;

use deadpool_postgres::{Hook, HookError, Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use tokio_postgres::error::SqlState;
use tokio_postgres::{GenericClient, NoTls, Row};

use super::columns::{APPROVAL_COLUMNS, Columns, approval_from, corrupt, encoded};
use super::{
    ApprovalId, ApprovalRequest, ApprovalState, ApprovalStore, Lease, LeaseId, LeaseState,
    Resolved, StoreError,
};
use crate::approvals::Fingerprint;
use crate::{Grant, GrantId, LocationId, UnixMillis};
use schema::{MIGRATIONS, migrate};

/// Connections one host keeps open by default.
pub const DEFAULT_POOL_SIZE: usize = 8;

/// How long connecting, or waiting for a pooled connection, may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a statement, or a connection the database stopped answering,
/// may take (`statement_timeout`, `tcp_user_timeout`, keepalive idle time).
const UNANSWERED_TIMEOUT: Duration = Duration::from_secs(30);

/// tokio-postgres's keepalive idle time when the URL sets none (2 hours).
const DEFAULT_KEEPALIVES_IDLE: Duration = Duration::from_secs(2 * 60 * 60);

fn pg_error(e: tokio_postgres::Error) -> StoreError {
    StoreError::Backend(Box::new(e))
}

fn pool_error(e: deadpool_postgres::PoolError) -> StoreError {
    StoreError::Backend(Box::new(e))
}

/// An [`ApprovalStore`] in a PostgreSQL database.
#[derive(Clone)]
pub struct PgStore {
    pool: Pool,
    clock: std::sync::Arc<clock::DbClock>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The pool's configuration holds the password: never printed.
        f.debug_struct("PgStore")
            .field("pool", &self.pool.status())
            .finish_non_exhaustive()
    }
}

impl PgStore {
    /// Connects to `url` (`postgres://user:password@host:port/db`, or the
    /// key/value form), with [`DEFAULT_POOL_SIZE`] connections, and
    /// migrates the schema.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        Self::connect_with(url, DEFAULT_POOL_SIZE).await
    }

    /// [`PgStore::connect`] with at most `pool_size` connections.
    pub async fn connect_with(url: &str, pool_size: usize) -> Result<Self, StoreError> {
        let mut config: tokio_postgres::Config = url
            .parse()
            .map_err(|e| StoreError::Config(format!("the PostgreSQL URL is invalid: {e}")))?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        // A database that stops answering (a partition, a failover) fails
        // a statement within about half a minute, not when TCP gives up on
        // its retransmissions (about 15 minutes, the pool's connections
        // stuck meanwhile). What the URL sets is kept.
        if config.get_tcp_user_timeout().is_none() {
            config.tcp_user_timeout(UNANSWERED_TIMEOUT);
        }
        if config.get_keepalives_idle() == DEFAULT_KEEPALIVES_IDLE {
            config.keepalives_idle(UNANSWERED_TIMEOUT);
        }
        // Set on each new connection rather than as a startup option (a
        // URL may carry its own `options`, and poolers such as PgBouncer
        // refuse that parameter unless told to ignore it).
        let set_timeout = !config
            .get_options()
            .is_some_and(|options| options.contains("statement_timeout"));
        config.application_name("warden");
        let manager = Manager::from_config(
            config,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let mut builder = Pool::builder(manager);
        if set_timeout {
            builder = builder.post_create(Hook::async_fn(|client, _| {
                Box::pin(async move {
                    let sql = format!(
                        "SET statement_timeout = '{}s'",
                        UNANSWERED_TIMEOUT.as_secs()
                    );
                    client.batch_execute(&sql).await.map_err(HookError::Backend)
                })
            }));
        }
        let pool = builder
            .max_size(pool_size.max(1))
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(CONNECT_TIMEOUT))
            .create_timeout(Some(CONNECT_TIMEOUT))
            .build()
            .map_err(|e| StoreError::Config(format!("building the connection pool: {e}")))?;
        let mut client = pool.get().await.map_err(pool_error)?;
        migrate(&mut client).await?;
        Ok(PgStore {
            pool,
            clock: Default::default(),
        })
    }

    /// The schema version this build migrates to.
    pub fn schema_version() -> i64 {
        MIGRATIONS.len() as i64
    }

    /// The connection pool, for the host's other PostgreSQL stores (its
    /// secret store) to share.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    async fn client(&self) -> Result<deadpool_postgres::Client, StoreError> {
        self.pool.get().await.map_err(pool_error)
    }
}

impl Columns for Row {
    fn text(&self, i: usize) -> Result<Option<String>, StoreError> {
        self.try_get(i).map_err(pg_error)
    }

    fn int(&self, i: usize) -> Result<Option<i64>, StoreError> {
        self.try_get(i).map_err(pg_error)
    }
}

fn grant_from_row(row: &Row, location: &LocationId) -> Result<Grant, StoreError> {
    let origin: String = row.try_get(3).map_err(pg_error)?;
    Ok(Grant {
        id: GrantId(row.try_get(0).map_err(pg_error)?),
        capability_id: row.try_get(1).map_err(pg_error)?,
        session: row.try_get(2).map_err(pg_error)?,
        origin: origin.parse().map_err(|_| corrupt("grant origin"))?,
        created_at: row.try_get(4).map_err(pg_error)?,
        expires_at: row.try_get(5).map_err(pg_error)?,
        package_digest: row.try_get(6).map_err(pg_error)?,
        location: location.clone(),
    })
}

/// `Duplicate` for a unique violation, else a backend error.
fn insert_error(e: tokio_postgres::Error, id: &str) -> StoreError {
    if e.code() != Some(&SqlState::UNIQUE_VIOLATION) {
        return pg_error(e);
    }
    let one_pending = e
        .as_db_error()
        .and_then(|db| db.constraint())
        .is_some_and(|c| c == "warden_approvals_one_pending");
    if one_pending {
        StoreError::AlreadyPending
    } else {
        StoreError::Duplicate { id: id.to_owned() }
    }
}

/// Inserts a grant through `client` (a connection or a transaction).
async fn insert_grant_on(client: &impl GenericClient, g: &Grant) -> Result<(), StoreError> {
    client
        .execute(
            INSERT_GRANT,
            &[
                &g.id.0,
                &g.capability_id,
                &g.location.0,
                &g.session,
                &g.origin.as_str(),
                &g.created_at,
                &g.expires_at,
                &g.package_digest,
            ],
        )
        .await
        .map_err(|e| insert_error(e, &g.id.0))?;
    Ok(())
}

const INSERT_GRANT: &str = "INSERT INTO warden_grants (id, capability_id, location, session, \
     origin, created_at, expires_at, package_digest) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";

#[async_trait::async_trait]
impl ApprovalStore for PgStore {
    async fn insert_approval(&self, r: &ApprovalRequest) -> Result<(), StoreError> {
        let (rule, package) = encoded(r)?;
        let client = self.client().await?;
        let statement = client
            .prepare_cached(&format!(
                "INSERT INTO warden_approvals ({APPROVAL_COLUMNS}) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, NULL, NULL, $11)"
            ))
            .await
            .map_err(pg_error)?;
        let inserted = client
            .execute(
                &statement,
                &[
                    &r.id.0,
                    &r.capability_id,
                    &r.scope.location.0,
                    &r.scope.session,
                    &r.origin.as_str(),
                    &r.input.to_string(),
                    &r.fingerprint.0,
                    &rule,
                    &r.created_at,
                    &r.state.as_str(),
                    &package,
                ],
            )
            .await
            .map_err(|e| insert_error(e, &r.id.0));
        match inserted {
            // An id taken is a duplicate whichever index saw it first.
            Err(StoreError::AlreadyPending) if self.approval(&r.id).await?.is_some() => {
                Err(StoreError::Duplicate { id: r.id.0.clone() })
            }
            other => other.map(drop),
        }
    }

    async fn approval(&self, id: &ApprovalId) -> Result<Option<ApprovalRequest>, StoreError> {
        let client = self.client().await?;
        let statement = client
            .prepare_cached(&format!(
                "SELECT {APPROVAL_COLUMNS} FROM warden_approvals WHERE id = $1"
            ))
            .await
            .map_err(pg_error)?;
        let row = client
            .query_opt(&statement, &[&id.0])
            .await
            .map_err(pg_error)?;
        row.as_ref().map(approval_from).transpose()
    }

    async fn pending_approvals(
        &self,
        location: &LocationId,
    ) -> Result<Vec<ApprovalRequest>, StoreError> {
        let client = self.client().await?;
        let statement = client
            .prepare_cached(&format!(
                "SELECT {APPROVAL_COLUMNS} FROM warden_approvals \
                 WHERE location = $1 AND state = 'pending' ORDER BY created_at, id"
            ))
            .await
            .map_err(pg_error)?;
        let rows = client
            .query(&statement, &[&location.0])
            .await
            .map_err(pg_error)?;
        rows.iter().map(approval_from).collect()
    }

    async fn resolve(&self, id: &ApprovalId, resolved: &Resolved) -> Result<bool, StoreError> {
        let feedback = match &resolved.state {
            ApprovalState::Denied { feedback } => feedback.clone(),
            _ => None,
        };
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(pg_error)?;
        // A concurrent resolution waits on the row lock, then finds the
        // request no longer pending.
        let changed = tx
            .execute(
                "UPDATE warden_approvals SET state = $2, feedback = $3, resolved_at = $4 \
                 WHERE id = $1 AND state = 'pending'",
                &[&id.0, &resolved.state.as_str(), &feedback, &resolved.at],
            )
            .await
            .map_err(pg_error)?;
        if changed != 1 {
            return Ok(false);
        }
        if let Some(l) = &resolved.lease {
            tx.execute(
                "INSERT INTO warden_leases (id, approval_id, fingerprint, issued_at, \
                 expires_at, state) VALUES ($1, $2, $3, $4, $5, 'issued')",
                &[
                    &l.id.0,
                    &l.approval_id.0,
                    &l.fingerprint.0,
                    &l.issued_at,
                    &l.expires_at,
                ],
            )
            .await
            .map_err(|e| insert_error(e, &l.id.0))?;
        }
        if let Some(g) = &resolved.grant {
            insert_grant_on(&*tx, g).await?;
        }
        tx.commit().await.map_err(pg_error)?;
        Ok(true)
    }

    async fn lease(&self, approval_id: &ApprovalId) -> Result<Option<Lease>, StoreError> {
        let client = self.client().await?;
        let statement = client
            .prepare_cached(
                "SELECT id, fingerprint, issued_at, expires_at, state, claimed_at \
                 FROM warden_leases WHERE approval_id = $1",
            )
            .await
            .map_err(pg_error)?;
        let Some(row) = client
            .query_opt(&statement, &[&approval_id.0])
            .await
            .map_err(pg_error)?
        else {
            return Ok(None);
        };
        let state: String = row.try_get(4).map_err(pg_error)?;
        let state = match state.as_str() {
            "issued" => LeaseState::Issued,
            "claimed" => LeaseState::Claimed,
            _ => return Err(corrupt("lease state")),
        };
        Ok(Some(Lease {
            id: LeaseId(row.try_get(0).map_err(pg_error)?),
            approval_id: approval_id.clone(),
            fingerprint: Fingerprint(row.try_get(1).map_err(pg_error)?),
            issued_at: row.try_get(2).map_err(pg_error)?,
            expires_at: row.try_get(3).map_err(pg_error)?,
            state,
            claimed_at: row.try_get(5).map_err(pg_error)?,
        }))
    }

    async fn claim_lease(
        &self,
        approval_id: &ApprovalId,
        fingerprint: &Fingerprint,
        now: UnixMillis,
    ) -> Result<bool, StoreError> {
        let client = self.client().await?;
        let statement = client
            .prepare_cached(
                "UPDATE warden_leases SET state = 'claimed', claimed_at = $3 \
                 WHERE approval_id = $1 AND fingerprint = $2 AND state = 'issued' \
                 AND expires_at > $3",
            )
            .await
            .map_err(pg_error)?;
        let changed = client
            .execute(&statement, &[&approval_id.0, &fingerprint.0, &now])
            .await
            .map_err(pg_error)?;
        Ok(changed == 1)
    }

    async fn release_lease(
        &self,
        approval_id: &ApprovalId,
        fingerprint: &Fingerprint,
    ) -> Result<bool, StoreError> {
        let client = self.client().await?;
        let changed = client
            .execute(
                "UPDATE warden_leases SET state = 'issued', claimed_at = NULL \
                 WHERE approval_id = $1 AND fingerprint = $2 AND state = 'claimed'",
                &[&approval_id.0, &fingerprint.0],
            )
            .await
            .map_err(pg_error)?;
        Ok(changed == 1)
    }

    async fn claim_approved(
        &self,
        fingerprint: &Fingerprint,
        now: UnixMillis,
    ) -> Result<Option<ApprovalId>, StoreError> {
        // The oldest claimable lease is locked as it is chosen; a concurrent
        // claim waits for the lock and then sees it claimed (the outer
        // `state = 'issued'` is checked again on the locked row).
        let client = self.client().await?;
        let statement = client
            .prepare_cached(
                "UPDATE warden_leases SET state = 'claimed', claimed_at = $2 \
                 WHERE state = 'issued' AND id = (SELECT id FROM warden_leases \
                 WHERE fingerprint = $1 AND state = 'issued' AND expires_at > $2 \
                 ORDER BY issued_at, id LIMIT 1 FOR UPDATE) RETURNING approval_id",
            )
            .await
            .map_err(pg_error)?;
        let row = client
            .query_opt(&statement, &[&fingerprint.0, &now])
            .await
            .map_err(pg_error)?;
        row.map(|r| r.try_get(0).map(ApprovalId).map_err(pg_error))
            .transpose()
    }

    async fn pending_with(
        &self,
        fingerprint: &Fingerprint,
    ) -> Result<Option<ApprovalRequest>, StoreError> {
        let client = self.client().await?;
        let statement = client
            .prepare_cached(&format!(
                "SELECT {APPROVAL_COLUMNS} FROM warden_approvals \
                 WHERE fingerprint = $1 AND state = 'pending' ORDER BY created_at, id LIMIT 1"
            ))
            .await
            .map_err(pg_error)?;
        let row = client
            .query_opt(&statement, &[&fingerprint.0])
            .await
            .map_err(pg_error)?;
        row.as_ref().map(approval_from).transpose()
    }

    async fn insert_grant(&self, g: &Grant) -> Result<(), StoreError> {
        let client = self.client().await?;
        insert_grant_on(&**client, g).await
    }

    async fn grants(
        &self,
        capability_id: &str,
        location: &LocationId,
        now: UnixMillis,
    ) -> Result<Vec<Grant>, StoreError> {
        self.live(Some(capability_id), location, now).await
    }

    async fn live_grants(
        &self,
        location: &LocationId,
        now: UnixMillis,
    ) -> Result<Vec<Grant>, StoreError> {
        self.live(None, location, now).await
    }

    async fn revoke_grant(&self, id: &GrantId) -> Result<bool, StoreError> {
        let client = self.client().await?;
        let changed = client
            .execute(
                "UPDATE warden_grants SET revoked = TRUE WHERE id = $1 AND NOT revoked",
                &[&id.0],
            )
            .await
            .map_err(pg_error)?;
        Ok(changed == 1)
    }

    async fn now(&self) -> Result<Option<UnixMillis>, StoreError> {
        self.clock.now(&self.pool).await.map(Some)
    }

    async fn prune(&self, before: UnixMillis) -> Result<u64, StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(pg_error)?;
        let mut deleted = 0;
        for sql in [
            "DELETE FROM warden_leases WHERE approval_id IN (SELECT id FROM warden_approvals \
             WHERE state <> 'pending' AND resolved_at < $1)",
            "DELETE FROM warden_approvals WHERE state <> 'pending' AND resolved_at < $1",
            "DELETE FROM warden_grants WHERE expires_at < $1 OR (revoked AND created_at < $1)",
        ] {
            deleted += tx.execute(sql, &[&before]).await.map_err(pg_error)?;
        }
        tx.commit().await.map_err(pg_error)?;
        Ok(deleted)
    }
}

impl PgStore {
    /// Live, package-bound grants of `location` (of one capability, or all).
    async fn live(
        &self,
        capability_id: Option<&str>,
        location: &LocationId,
        now: UnixMillis,
    ) -> Result<Vec<Grant>, StoreError> {
        let client = self.client().await?;
        let statement = client
            .prepare_cached(
                "SELECT id, capability_id, session, origin, created_at, expires_at, \
                 package_digest FROM warden_grants \
                 WHERE ($1::TEXT IS NULL OR capability_id = $1) AND location = $2 \
                 AND NOT revoked \
                 AND (expires_at IS NULL OR expires_at > $3) ORDER BY created_at, id",
            )
            .await
            .map_err(pg_error)?;
        let rows = client
            .query(&statement, &[&capability_id, &location.0, &now])
            .await
            .map_err(pg_error)?;
        rows.iter().map(|r| grant_from_row(r, location)).collect()
    }
}
