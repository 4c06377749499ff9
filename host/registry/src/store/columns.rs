//! Decoding a stored approval, shared by the SQL backends: each reads its
//! own row type through [`Columns`], in [`APPROVAL_COLUMNS`] order.

use super::{ApprovalId, ApprovalRequest, ApprovalState, StoreError};
use crate::approvals::Fingerprint;
use crate::{InvocationScope, LocationId};

/// The approval columns every backend stores and selects, in this order.
pub(super) const APPROVAL_COLUMNS: &str = "id, capability_id, location, session, origin, input, \
     fingerprint, rule, created_at, state, feedback, resolved_at, package";

/// A row of [`APPROVAL_COLUMNS`] as one backend reads it.
pub(super) trait Columns {
    /// Column `i` as text (`None`: SQL NULL).
    fn text(&self, i: usize) -> Result<Option<String>, StoreError>;
    /// Column `i` as a 64-bit integer (`None`: SQL NULL).
    fn int(&self, i: usize) -> Result<Option<i64>, StoreError>;
}

pub(super) fn corrupt(what: &str) -> StoreError {
    StoreError::Corrupt { what: what.into() }
}

/// The approval a row holds.
pub(super) fn approval_from(row: &impl Columns) -> Result<ApprovalRequest, StoreError> {
    let text = |i: usize, what: &str| row.text(i)?.ok_or_else(|| corrupt(what));
    let feedback = row.text(10)?;
    let state = match text(9, "approval state")?.as_str() {
        "pending" => ApprovalState::Pending,
        "approved" => ApprovalState::Approved,
        "denied" => ApprovalState::Denied { feedback },
        "dismissed" => ApprovalState::Dismissed,
        _ => return Err(corrupt("approval state")),
    };
    Ok(ApprovalRequest {
        id: ApprovalId(text(0, "approval id")?),
        capability_id: text(1, "capability id")?,
        scope: InvocationScope {
            location: LocationId(text(2, "location")?),
            session: row.text(3)?,
        },
        origin: text(4, "origin")?
            .parse()
            .map_err(|_| corrupt("approval origin"))?,
        input: serde_json::from_str(&text(5, "input")?).map_err(|_| corrupt("approval input"))?,
        fingerprint: Fingerprint(text(6, "fingerprint")?),
        rule: serde_json::from_str(&text(7, "rule")?).map_err(|_| corrupt("approval rule"))?,
        created_at: row.int(8)?.ok_or_else(|| corrupt("approval time"))?,
        state,
        resolved_at: row.int(11)?,
        package: row
            .text(12)?
            .map(|json| serde_json::from_str(&json))
            .transpose()
            .map_err(|_| corrupt("approval package"))?,
    })
}

/// The text columns of a new approval (rule and package as JSON).
pub(super) fn encoded(r: &ApprovalRequest) -> Result<(String, Option<String>), StoreError> {
    let rule = serde_json::to_string(&r.rule).map_err(|_| corrupt("rule"))?;
    let package = r
        .package
        .as_ref()
        .map(serde_json::to_string)
        .transpose()
        .map_err(|_| corrupt("package"))?;
    Ok((rule, package))
}
