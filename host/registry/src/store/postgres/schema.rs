//! The PostgreSQL schema and its versioned migrations.
//!
//! The version lives in `warden_schema`; every table is prefixed `warden_`
//! so the store can share a database with other applications. Hosts that
//! start together migrate one at a time: the migration transaction first
//! takes a transaction-scoped advisory lock.

use deadpool_postgres::Client;

use super::pg_error;
use crate::StoreError;

/// The advisory lock key migrations hold ("warden" in ASCII).
const MIGRATION_LOCK: i64 = 0x7761_7264_656e;

/// Schema migrations; index `i` upgrades version `i` to `i + 1`. Version 1
/// is the SQLite schema at its version 3 (package identity, fingerprint
/// indexes), with booleans and 64-bit times.
pub(super) const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE warden_approvals (
    id            TEXT PRIMARY KEY,
    capability_id TEXT NOT NULL,
    location      TEXT NOT NULL,
    session       TEXT,
    origin        TEXT NOT NULL,
    input         TEXT NOT NULL,
    fingerprint   TEXT NOT NULL,
    rule          TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    state         TEXT NOT NULL,
    feedback      TEXT,
    resolved_at   BIGINT,
    package       TEXT
);
CREATE INDEX warden_approvals_pending ON warden_approvals (location, state, created_at);
CREATE INDEX warden_approvals_fingerprint ON warden_approvals (fingerprint, state);
CREATE TABLE warden_leases (
    id          TEXT PRIMARY KEY,
    approval_id TEXT NOT NULL UNIQUE REFERENCES warden_approvals (id),
    fingerprint TEXT NOT NULL,
    issued_at   BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL,
    state       TEXT NOT NULL,
    claimed_at  BIGINT
);
CREATE INDEX warden_leases_fingerprint ON warden_leases (fingerprint, state);
CREATE TABLE warden_grants (
    id             TEXT PRIMARY KEY,
    capability_id  TEXT NOT NULL,
    location       TEXT NOT NULL,
    session        TEXT,
    origin         TEXT NOT NULL,
    created_at     BIGINT NOT NULL,
    expires_at     BIGINT,
    revoked        BOOLEAN NOT NULL DEFAULT FALSE,
    package_digest TEXT
);
CREATE INDEX warden_grants_lookup ON warden_grants (location, capability_id);
"#,
    // Version 2: at most one pending request per fingerprint, whichever host
    // opens it (duplicates from version 1: the oldest stays pending).
    r#"
UPDATE warden_approvals AS a SET state = 'dismissed', resolved_at = a.created_at
WHERE a.state = 'pending' AND EXISTS (
    SELECT 1 FROM warden_approvals AS older
    WHERE older.fingerprint = a.fingerprint AND older.state = 'pending'
      AND (older.created_at < a.created_at
           OR (older.created_at = a.created_at AND older.id < a.id)));
CREATE UNIQUE INDEX warden_approvals_one_pending ON warden_approvals (fingerprint)
    WHERE state = 'pending';
"#,
    // Version 3: the deployment's package set (see `packages.rs`). Each
    // change takes the next revision, so a host finds out with one read.
    r#"
CREATE SEQUENCE warden_package_revision;
CREATE TABLE warden_packages (
    id            TEXT PRIMARY KEY,
    digest        TEXT NOT NULL,
    reference     TEXT,
    trust         TEXT NOT NULL,
    removed       BOOLEAN NOT NULL DEFAULT FALSE,
    revision      BIGINT NOT NULL,
    recorded_at   BIGINT NOT NULL,
    module_path   TEXT,
    module        BYTEA,
    package_layer BYTEA
);
"#,
];

/// Brings the database to the newest schema this build knows, refusing one
/// written by a newer build.
pub(super) async fn migrate(client: &mut Client) -> Result<(), StoreError> {
    let supported = MIGRATIONS.len() as i64;
    let tx = client.transaction().await.map_err(pg_error)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(pg_error)?;
    tx.batch_execute("CREATE TABLE IF NOT EXISTS warden_schema (version BIGINT NOT NULL)")
        .await
        .map_err(pg_error)?;
    let found: Option<i64> = tx
        .query_one("SELECT max(version) FROM warden_schema", &[])
        .await
        .map_err(pg_error)?
        .get(0);
    let found = found.unwrap_or(0);
    if found > supported {
        return Err(StoreError::UnsupportedSchema { found, supported });
    }
    for (version, migration) in MIGRATIONS.iter().enumerate().skip(found as usize) {
        tx.batch_execute(migration).await.map_err(pg_error)?;
        let next = version as i64 + 1;
        tx.execute("DELETE FROM warden_schema", &[])
            .await
            .map_err(pg_error)?;
        tx.execute("INSERT INTO warden_schema (version) VALUES ($1)", &[&next])
            .await
            .map_err(pg_error)?;
    }
    tx.commit().await.map_err(pg_error)
}
