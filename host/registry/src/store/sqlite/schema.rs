//! The SQLite schema and its versioned migrations (`PRAGMA user_version`).

use rusqlite::{Connection, TransactionBehavior};

use super::backend;
use crate::StoreError;

/// Schema migrations; index `i` upgrades `user_version` `i` to `i + 1`.
///
/// Version 2 binds approvals and grants to package identity. Approvals get
/// the package (JSON of `PackageIdentity`) they were asked for; rows from
/// version 1 have none, so their fingerprint (which now covers the package
/// digest) no longer matches and a resume is refused as "package changed".
/// Grants get the package digest they cover and `package_bound`; rows from
/// version 1 keep `package_bound = 0` and are never returned, so a grant
/// given before identity was recorded covers no package: the user approves
/// again once (deliberate: we cannot tell which content it was given to).
///
/// Version 3 indexes fingerprints: an identical call finds the approved (or
/// pending) request it repeats ("approve, then call again").
///
/// Version 4 keeps at most one pending request per fingerprint (a unique
/// partial index), so hosts sharing a store never open two for one call.
/// Of duplicates left by earlier versions the oldest stays pending; the
/// others are settled as dismissed.
pub(super) const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE approvals (
    id            TEXT PRIMARY KEY,
    capability_id TEXT NOT NULL,
    location      TEXT NOT NULL,
    session       TEXT,
    origin        TEXT NOT NULL,
    input         TEXT NOT NULL,
    fingerprint   TEXT NOT NULL,
    rule          TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    state         TEXT NOT NULL,
    feedback      TEXT,
    resolved_at   INTEGER
);
CREATE INDEX approvals_pending ON approvals (location, state, created_at);
CREATE TABLE leases (
    id          TEXT PRIMARY KEY,
    approval_id TEXT NOT NULL UNIQUE REFERENCES approvals (id),
    fingerprint TEXT NOT NULL,
    issued_at   INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    state       TEXT NOT NULL,
    claimed_at  INTEGER
);
CREATE TABLE grants (
    id            TEXT PRIMARY KEY,
    capability_id TEXT NOT NULL,
    location      TEXT NOT NULL,
    session       TEXT,
    origin        TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    expires_at    INTEGER,
    revoked       INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX grants_lookup ON grants (capability_id, location);
"#,
    r#"
ALTER TABLE approvals ADD COLUMN package TEXT;
ALTER TABLE grants ADD COLUMN package_digest TEXT;
ALTER TABLE grants ADD COLUMN package_bound INTEGER NOT NULL DEFAULT 0;
"#,
    r#"
CREATE INDEX approvals_fingerprint ON approvals (fingerprint, state);
CREATE INDEX leases_fingerprint ON leases (fingerprint, state);
"#,
    r#"
UPDATE approvals SET state = 'dismissed', resolved_at = created_at
WHERE state = 'pending' AND EXISTS (
    SELECT 1 FROM approvals AS older
    WHERE older.fingerprint = approvals.fingerprint AND older.state = 'pending'
      AND (older.created_at < approvals.created_at
           OR (older.created_at = approvals.created_at AND older.id < approvals.id)));
CREATE UNIQUE INDEX approvals_one_pending ON approvals (fingerprint) WHERE state = 'pending';
"#,
];

pub(super) fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    let supported = MIGRATIONS.len() as i64;
    loop {
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(backend)?;
        let found: i64 = tx
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(backend)?;
        if found > supported {
            return Err(StoreError::UnsupportedSchema { found, supported });
        }
        if found == supported {
            return tx.commit().map_err(backend);
        }
        tx.execute_batch(MIGRATIONS[found as usize])
            .map_err(backend)?;
        tx.pragma_update(None, "user_version", found + 1)
            .map_err(backend)?;
        tx.commit().map_err(backend)?;
    }
}
