//! The statements of the SQLite store, one method of [`Db`] each, run on
//! the blocking pool by the [`ApprovalStore`](super::ApprovalStore) impl.

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::{
    ApprovalId, ApprovalRequest, ApprovalState, Db, Lease, LeaseId, LeaseState, Resolved,
    StoreError, backend,
};
use crate::approvals::Fingerprint;
use crate::store::columns::{APPROVAL_COLUMNS, approval_from, corrupt, encoded};
use crate::{Grant, GrantId, LocationId, UnixMillis};

impl Db {
    pub(super) fn insert_approval(&self, r: &ApprovalRequest) -> Result<(), StoreError> {
        let (rule, package) = encoded(r)?;
        let result = self.conn().execute(
            "INSERT INTO approvals (id, capability_id, location, session, origin, input, \
             fingerprint, rule, created_at, state, feedback, resolved_at, package) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, NULL, NULL, ?11)",
            params![
                r.id.0,
                r.capability_id,
                r.scope.location.0,
                r.scope.session,
                r.origin.as_str(),
                r.input.to_string(),
                r.fingerprint.0,
                rule,
                r.created_at,
                r.state.as_str(),
                package,
            ],
        );
        match result {
            Ok(_) => Ok(()),
            Err(rusqlite::Error::SqliteFailure(e, message))
                if e.code == rusqlite::ErrorCode::ConstraintViolation =>
            {
                // The one-pending index names the fingerprint column; an id
                // taken is a duplicate whichever index saw it first.
                let on_fingerprint = message.is_some_and(|m| m.contains("approvals.fingerprint"));
                if on_fingerprint && self.approval(&r.id)?.is_none() {
                    Err(StoreError::AlreadyPending)
                } else {
                    Err(StoreError::Duplicate { id: r.id.0.clone() })
                }
            }
            Err(e) => Err(backend(e)),
        }
    }

    pub(super) fn approval(&self, id: &ApprovalId) -> Result<Option<ApprovalRequest>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(&format!(
                "SELECT {APPROVAL_COLUMNS} FROM approvals WHERE id = ?1"
            ))
            .map_err(backend)?;
        let mut rows = stmt.query([&id.0]).map_err(backend)?;
        match rows.next().map_err(backend)? {
            Some(row) => approval_from(row).map(Some),
            None => Ok(None),
        }
    }

    pub(super) fn pending_approvals(
        &self,
        location: &LocationId,
    ) -> Result<Vec<ApprovalRequest>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(&format!(
                "SELECT {APPROVAL_COLUMNS} FROM approvals \
                 WHERE location = ?1 AND state = 'pending' ORDER BY created_at, id"
            ))
            .map_err(backend)?;
        let mut rows = stmt.query([&location.0]).map_err(backend)?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(backend)? {
            out.push(approval_from(row)?);
        }
        Ok(out)
    }

    pub(super) fn resolve(&self, id: &ApprovalId, resolved: &Resolved) -> Result<bool, StoreError> {
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(backend)?;
        let feedback = match &resolved.state {
            ApprovalState::Denied { feedback } => feedback.clone(),
            _ => None,
        };
        let changed = tx
            .execute(
                "UPDATE approvals SET state = ?2, feedback = ?3, resolved_at = ?4 \
                 WHERE id = ?1 AND state = 'pending'",
                params![id.0, resolved.state.as_str(), feedback, resolved.at],
            )
            .map_err(backend)?;
        if changed != 1 {
            return Ok(false);
        }
        if let Some(l) = &resolved.lease {
            tx.execute(
                "INSERT INTO leases (id, approval_id, fingerprint, issued_at, expires_at, state) \
                 VALUES (?1, ?2, ?3, ?4, ?5, 'issued')",
                params![
                    l.id.0,
                    l.approval_id.0,
                    l.fingerprint.0,
                    l.issued_at,
                    l.expires_at
                ],
            )
            .map_err(backend)?;
        }
        if let Some(g) = &resolved.grant {
            insert_grant(&tx, g)?;
        }
        tx.commit().map_err(backend)?;
        Ok(true)
    }

    pub(super) fn lease(&self, approval_id: &ApprovalId) -> Result<Option<Lease>, StoreError> {
        let conn = self.conn();
        let row = conn
            .query_row(
                "SELECT id, fingerprint, issued_at, expires_at, state, claimed_at \
                 FROM leases WHERE approval_id = ?1",
                [&approval_id.0],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get::<_, String>(4)?,
                        r.get(5)?,
                    ))
                },
            )
            .optional()
            .map_err(backend)?;
        let Some((id, fingerprint, issued_at, expires_at, state, claimed_at)) = row else {
            return Ok(None);
        };
        let state = match state.as_str() {
            "issued" => LeaseState::Issued,
            "claimed" => LeaseState::Claimed,
            _ => return Err(corrupt("lease state")),
        };
        Ok(Some(Lease {
            id: LeaseId(id),
            approval_id: approval_id.clone(),
            fingerprint: Fingerprint(fingerprint),
            issued_at,
            expires_at,
            state,
            claimed_at,
        }))
    }

    pub(super) fn claim_lease(
        &self,
        approval_id: &ApprovalId,
        fingerprint: &Fingerprint,
        now: UnixMillis,
    ) -> Result<bool, StoreError> {
        let changed = self
            .conn()
            .execute(
                "UPDATE leases SET state = 'claimed', claimed_at = ?3 \
                 WHERE approval_id = ?1 AND fingerprint = ?2 AND state = 'issued' \
                 AND expires_at > ?3",
                params![approval_id.0, fingerprint.0, now],
            )
            .map_err(backend)?;
        Ok(changed == 1)
    }

    pub(super) fn release_lease(
        &self,
        approval_id: &ApprovalId,
        fingerprint: &Fingerprint,
    ) -> Result<bool, StoreError> {
        let changed = self
            .conn()
            .execute(
                "UPDATE leases SET state = 'issued', claimed_at = NULL \
                 WHERE approval_id = ?1 AND fingerprint = ?2 AND state = 'claimed'",
                params![approval_id.0, fingerprint.0],
            )
            .map_err(backend)?;
        Ok(changed == 1)
    }

    pub(super) fn claim_approved(
        &self,
        fingerprint: &Fingerprint,
        now: UnixMillis,
    ) -> Result<Option<ApprovalId>, StoreError> {
        // One statement that takes the write lock before it reads: another
        // connection (or process) claiming the same lease waits, then finds
        // it claimed.
        self.conn()
            .query_row(
                "UPDATE leases SET state = 'claimed', claimed_at = ?2 \
                 WHERE state = 'issued' AND id = (SELECT id FROM leases \
                 WHERE fingerprint = ?1 AND state = 'issued' AND expires_at > ?2 \
                 ORDER BY issued_at, id LIMIT 1) RETURNING approval_id",
                params![fingerprint.0, now],
                |r| r.get::<_, String>(0),
            )
            .optional()
            .map(|id| id.map(ApprovalId))
            .map_err(backend)
    }

    pub(super) fn pending_with(
        &self,
        fingerprint: &Fingerprint,
    ) -> Result<Option<ApprovalRequest>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(&format!(
                "SELECT {APPROVAL_COLUMNS} FROM approvals \
                 WHERE fingerprint = ?1 AND state = 'pending' ORDER BY created_at, id LIMIT 1"
            ))
            .map_err(backend)?;
        let mut rows = stmt.query([&fingerprint.0]).map_err(backend)?;
        match rows.next().map_err(backend)? {
            Some(row) => approval_from(row).map(Some),
            None => Ok(None),
        }
    }

    pub(super) fn revoke_grant(&self, id: &GrantId) -> Result<bool, StoreError> {
        let changed = self
            .conn()
            .execute(
                "UPDATE grants SET revoked = 1 WHERE id = ?1 AND revoked = 0",
                [&id.0],
            )
            .map_err(backend)?;
        Ok(changed == 1)
    }

    pub(super) fn prune(&self, before: UnixMillis) -> Result<u64, StoreError> {
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(backend)?;
        let mut deleted = 0;
        for sql in PRUNE {
            deleted += tx.execute(sql, [before]).map_err(backend)? as u64;
        }
        tx.commit().map_err(backend)?;
        Ok(deleted)
    }
}

/// [`ApprovalStore::prune`], in order: leases before the approvals they
/// reference.
const PRUNE: [&str; 3] = [
    "DELETE FROM leases WHERE approval_id IN (SELECT id FROM approvals \
     WHERE state != 'pending' AND resolved_at < ?1)",
    "DELETE FROM approvals WHERE state != 'pending' AND resolved_at < ?1",
    "DELETE FROM grants WHERE expires_at < ?1 OR (revoked = 1 AND created_at < ?1)",
];

/// Live, package-bound grants of `location` (of one capability, or all).
pub(super) fn live_grants(
    conn: &Connection,
    capability_id: Option<&str>,
    location: &LocationId,
    now: UnixMillis,
) -> Result<Vec<Grant>, StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT id, capability_id, session, origin, created_at, expires_at, package_digest \
             FROM grants WHERE (?1 IS NULL OR capability_id = ?1) AND location = ?2 \
             AND revoked = 0 AND package_bound = 1 \
             AND (expires_at IS NULL OR expires_at > ?3) ORDER BY created_at, id",
        )
        .map_err(backend)?;
    let rows = stmt
        .query_map(params![capability_id, location.0, now], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Option<String>>(2)?,
                r.get::<_, String>(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get::<_, Option<String>>(6)?,
            ))
        })
        .map_err(backend)?;
    let mut out = Vec::new();
    for row in rows {
        let (id, capability_id, session, origin, created_at, expires_at, package_digest) =
            row.map_err(backend)?;
        out.push(Grant {
            id: GrantId(id),
            capability_id,
            package_digest,
            location: location.clone(),
            session,
            origin: origin.parse().map_err(|_| corrupt("grant origin"))?,
            created_at,
            expires_at,
        });
    }
    Ok(out)
}

pub(super) fn insert_grant(conn: &Connection, g: &Grant) -> Result<(), StoreError> {
    conn.execute(
        "INSERT INTO grants (id, capability_id, location, session, origin, created_at, expires_at, \
         package_digest, package_bound) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 1)",
        params![
            g.id.0,
            g.capability_id,
            g.location.0,
            g.session,
            g.origin.as_str(),
            g.created_at,
            g.expires_at,
            g.package_digest
        ],
    )
    .map_err(|e| match e {
        rusqlite::Error::SqliteFailure(f, _)
            if f.code == rusqlite::ErrorCode::ConstraintViolation =>
        {
            StoreError::Duplicate { id: g.id.0.clone() }
        }
        e => backend(e),
    })?;
    Ok(())
}
