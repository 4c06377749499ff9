//! Durable state of approvals, grants and leases behind [`ApprovalStore`].
//!
//! [`SqliteStore`] is the embedded default (its blocking work runs on
//! Tokio's blocking pool); [`PgStore`] is the server option, shared by many
//! hosts; [`MemoryApprovalStore`] is for tests and hosts that want nothing on disk.
//! An embedder can bring its own store by implementing the trait; the
//! atomicity each method promises is what makes "dispatch exactly once"
//! hold, across hosts when they share the store. Every backend must pass
//! the conformance suite (`warden_registry::testing`, feature `testing`).

mod columns;
#[cfg(any(test, feature = "testing"))]
pub mod conformance;
mod memory;
mod postgres;
mod sqlite;

use std::fmt;

use serde_json::Value;
use warden_core::Origin;

pub use memory::MemoryApprovalStore;
pub use postgres::{
    DEFAULT_POOL_SIZE, MAX_STORED_PACKAGE_BYTES, PackageRecord, PgStore, StoredPackage,
};
pub use sqlite::SqliteStore;

use crate::approvals::Fingerprint;
use crate::{Grant, GrantId, InvocationScope, LocationId, PackageIdentity, Rule, UnixMillis};

/// Errors of an approval store. Every one is a host defect: the approval
/// flow propagates them and never turns them into tool failures.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The backend failed (I/O, SQL, lock).
    #[error("approval store backend failed")]
    Backend(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// A stored row could not be decoded.
    #[error("approval store holds an undecodable {what}")]
    Corrupt {
        /// What could not be decoded.
        what: String,
    },
    /// The store's address or settings are unusable (named in the text).
    #[error("approval store configuration: {0}")]
    Config(String),
    /// The database was written by a newer schema than this build knows.
    #[error("approval store schema version {found} is newer than the supported {supported}")]
    UnsupportedSchema {
        /// The schema version found.
        found: i64,
        /// The newest version this build migrates to.
        supported: i64,
    },
    /// A record with this id already exists.
    #[error("approval store already holds `{id}`")]
    Duplicate {
        /// The id.
        id: String,
    },
    /// A pending request with this fingerprint exists (perhaps opened by
    /// another host a moment ago): the identical call waits on it.
    #[error("an identical request is already pending")]
    AlreadyPending,
}

macro_rules! text_id {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub String);

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

text_id!(
    /// Identifies an approval request.
    ApprovalId
);
text_id!(
    /// Identifies a lease.
    LeaseId
);

/// Where an approval request stands.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ApprovalState {
    /// Nobody has answered yet.
    Pending,
    /// Approved; a lease was issued.
    Approved,
    /// Declined, with the person's feedback when they gave some.
    Denied {
        /// Text the model sees so it can continue differently.
        feedback: Option<String>,
    },
    /// The question was dismissed without an answer.
    Dismissed,
}

impl ApprovalState {
    /// The word stored in the `state` column.
    pub fn as_str(&self) -> &'static str {
        match self {
            ApprovalState::Pending => "pending",
            ApprovalState::Approved => "approved",
            ApprovalState::Denied { .. } => "denied",
            ApprovalState::Dismissed => "dismissed",
        }
    }
}

/// A call waiting for (or past) a person's answer, persisted with its
/// fingerprint before anyone can answer it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ApprovalRequest {
    /// Its id.
    pub id: ApprovalId,
    /// The capability called.
    pub capability_id: String,
    /// The package that provided it when the call was made (`None` for
    /// tools not from a package, and for requests stored before package
    /// identity was recorded).
    #[serde(default)]
    pub package: Option<PackageIdentity>,
    /// Where it was called.
    pub scope: InvocationScope,
    /// Who called it.
    pub origin: Origin,
    /// The input as called (shown to the person approving).
    pub input: Value,
    /// sha256 over the canonical invocation.
    pub fingerprint: Fingerprint,
    /// Why it needs approval.
    pub rule: Rule,
    /// When it was made.
    pub created_at: UnixMillis,
    /// Where it stands.
    pub state: ApprovalState,
    /// When it was answered.
    pub resolved_at: Option<UnixMillis>,
}

/// Whether a lease can still be claimed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LeaseState {
    /// Issued and not yet claimed.
    Issued,
    /// Claimed by the one dispatch it allows.
    Claimed,
}

/// Permission to dispatch one approved call once, before it expires.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Lease {
    /// Its id.
    pub id: LeaseId,
    /// The approval it was issued for.
    pub approval_id: ApprovalId,
    /// The fingerprint of the approved invocation.
    pub fingerprint: Fingerprint,
    /// When it was issued.
    pub issued_at: UnixMillis,
    /// When it stops being claimable.
    pub expires_at: UnixMillis,
    /// Whether it was claimed.
    pub state: LeaseState,
    /// When it was claimed.
    pub claimed_at: Option<UnixMillis>,
}

/// Everything one resolution writes, applied in one transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The new state (never `Pending`).
    pub state: ApprovalState,
    /// The lease issued with an approval.
    pub lease: Option<Lease>,
    /// The grant made by approve-and-grant.
    pub grant: Option<Grant>,
    /// When it was resolved.
    pub at: UnixMillis,
}

/// Storage of approvals, grants and leases. Every method is async: a
/// backend may wait on a database without holding a runtime thread.
#[async_trait::async_trait]
pub trait ApprovalStore: Send + Sync + fmt::Debug {
    /// Persists a new pending request; [`StoreError::Duplicate`] if the id
    /// exists, [`StoreError::AlreadyPending`] if a pending request has its
    /// fingerprint (at most one is ever pending, whichever host asks).
    async fn insert_approval(&self, request: &ApprovalRequest) -> Result<(), StoreError>;

    /// One request by id.
    async fn approval(&self, id: &ApprovalId) -> Result<Option<ApprovalRequest>, StoreError>;

    /// Pending requests of a Location, oldest first.
    async fn pending_approvals(
        &self,
        location: &LocationId,
    ) -> Result<Vec<ApprovalRequest>, StoreError>;

    /// Atomically moves a *pending* request to `resolved.state` and writes its
    /// lease and grant; `Ok(false)` (and no writes) when it was not pending.
    async fn resolve(&self, id: &ApprovalId, resolved: &Resolved) -> Result<bool, StoreError>;

    /// The lease issued for an approval.
    async fn lease(&self, approval_id: &ApprovalId) -> Result<Option<Lease>, StoreError>;

    /// Atomically claims the issued, unexpired lease of `approval_id` whose
    /// fingerprint is `fingerprint`. Exactly one caller ever gets `Ok(true)`.
    async fn claim_lease(
        &self,
        approval_id: &ApprovalId,
        fingerprint: &Fingerprint,
        now: UnixMillis,
    ) -> Result<bool, StoreError>;

    /// Hands back the claimed lease of `approval_id` (issued again, for the
    /// identical retry to claim) when the call that claimed it never ran:
    /// it stopped at a check before its lane (an account to connect).
    /// `Ok(false)` when it was not claimed.
    async fn release_lease(
        &self,
        approval_id: &ApprovalId,
        fingerprint: &Fingerprint,
    ) -> Result<bool, StoreError>;

    /// Atomically claims the issued, unexpired lease of the oldest approved
    /// request whose fingerprint is `fingerprint`, returning that request's
    /// id: "approve, then call again". Exactly one caller ever gets a given
    /// approval's id, here or from [`ApprovalStore::claim_lease`].
    async fn claim_approved(
        &self,
        fingerprint: &Fingerprint,
        now: UnixMillis,
    ) -> Result<Option<ApprovalId>, StoreError>;

    /// The oldest still pending request whose fingerprint is `fingerprint`,
    /// so an identical call waits on it instead of opening another.
    async fn pending_with(
        &self,
        fingerprint: &Fingerprint,
    ) -> Result<Option<ApprovalRequest>, StoreError>;

    /// Persists a grant.
    async fn insert_grant(&self, grant: &Grant) -> Result<(), StoreError>;

    /// Unrevoked, unexpired grants of `capability_id` in `location` (for
    /// every package; [`Grant::covers`] checks the package digest). Grants
    /// stored before package identity was recorded are never returned.
    async fn grants(
        &self,
        capability_id: &str,
        location: &LocationId,
        now: UnixMillis,
    ) -> Result<Vec<Grant>, StoreError>;

    /// Every unrevoked, unexpired grant of `location` (any capability),
    /// oldest first; those stored before package identity was recorded are
    /// never returned (they cover nothing).
    async fn live_grants(
        &self,
        location: &LocationId,
        now: UnixMillis,
    ) -> Result<Vec<Grant>, StoreError>;

    /// Revokes a grant; false when there was no live grant with that id.
    async fn revoke_grant(&self, id: &GrantId) -> Result<bool, StoreError>;

    /// The time hosts sharing this store read expiry by, when the store
    /// keeps a clock of its own (a shared database: the hosts' clocks may
    /// disagree); `None` (the default): the caller's clock.
    /// [`crate::Approvals`] asks it at each of its steps.
    async fn now(&self) -> Result<Option<UnixMillis>, StoreError> {
        Ok(None)
    }

    /// Deletes what no call can use any more and was settled before
    /// `before`: approvals resolved then (with their leases, long expired)
    /// and grants that expired then, or were revoked and made then. A
    /// pending approval stays whatever its age: a person may still answer
    /// it. The number of rows deleted.
    async fn prune(&self, before: UnixMillis) -> Result<u64, StoreError>;
}
