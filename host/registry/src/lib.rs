//! Location-scoped tool registry, model catalog, authorization and durable
//! approvals for the Warden host.
//!
//! - [`Registry`]: one per Location; built-ins, packages and MCP tools all
//!   install through [`Registry::transform`]; [`Registry::snapshot`] captures
//!   the effective tools for one model request.
//! - [`Catalog`]: the model-facing definitions of a snapshot (MCP
//!   `tools/list`, OpenAI, Anthropic), deterministic.
//! - [`Authorizer`]: origin gate matrix + `default_permission` + effect
//!   floors + grants, with the deciding [`Rule`].
//! - [`Approvals`] over an [`ApprovalStore`] ([`SqliteStore`] by default):
//!   fingerprinted requests, leases, exactly-once dispatch.
//! - [`OutputBounder`]: generic head/tail bounding of outputs.
//!
//! The registry never executes and has no permission dependency; the host
//! composition looks up a tool in a snapshot, authorizes it, and runs the
//! lane named by the [`Executor`] it carries (a typed [`LaneId`]).
//!
//! ```
//! use std::sync::Arc;
//! use serde_json::json;
//! use warden_core::{GateMatrix, GatePolicy, Origin};
//! use warden_registry::*;
//!
//! let registry = Registry::new(LocationId::from("my-project"));
//! let gate = GateMatrix { loop_run: Some(GatePolicy::GatedUnlessGranted), ..Default::default() };
//! let tool = ToolDef::new("get_repo", "Fetch a repo.", json!({"type": "object"}),
//!                         Executor::key("github.get_repo"))
//!     .with_namespace("github")
//!     .with_gate(gate);
//! let _installed = registry.transform("package:github", |draft| {
//!     draft.add(tool)?;
//!     Ok(())
//! })?;
//!
//! let snapshot = registry.snapshot();
//! assert_eq!(Catalog::from_snapshot(&snapshot).mcp_tools()[0]["name"], "github_get_repo");
//!
//! let found = snapshot.lookup("github_get_repo").unwrap();
//! let approvals = Approvals::new(Arc::new(MemoryApprovalStore::new()), ApprovalConfig::default());
//! let call = GatedCall {
//!     capability_id: found.def().capability_id().into(),
//!     scope: InvocationScope::location("my-project"),
//!     origin: Origin::LoopRun,
//!     input: json!({"repo": "a/b"}),
//!     package: found.def().package.clone(),
//! };
//! let policy = ToolPolicy::from(found.def());
//! # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
//! let Gate::Blocked(request) =
//!     approvals.check(&Authorizer::default(), &policy, &call, now_millis()).await?
//! else { unreachable!() };
//! approvals.resolve(&request.id, Resolution::ApproveOnce, now_millis()).await?;
//! let dispatch = approvals.resume(&request.id, &call, now_millis()).await?;
//! assert_eq!(dispatch.invocation, call);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod approvals;
mod authorize;
pub mod bound;
mod catalog;
mod registry;
pub mod store;

pub use approvals::{
    ApprovalConfig, ApprovalError, Approvals, Dispatch, Fingerprint, Gate, GatedCall, GrantTerms,
    Resolution, ToolFailure,
};
pub use authorize::{
    AllowlistEntry, AllowlistError, Authorizer, Decision, Grant, GrantId, InvocationScope, Rule,
    ToolPolicy,
};
pub use bound::{BoundConfig, BoundError, Bounded, OutputBounder, Truncation};
pub use catalog::{Catalog, CatalogEntry};
pub use registry::{
    Draft, Executor, LaneId, LocationId, PackageIdentity, Placement, RegisteredTool, Registration,
    RegistrationId, Registry, RegistryError, Snapshot, ToolDef, name,
};
/// The store conformance suite every [`ApprovalStore`] backend must pass.
#[cfg(feature = "testing")]
pub use store::conformance as testing;
pub use store::{
    ApprovalId, ApprovalRequest, ApprovalState, ApprovalStore, DEFAULT_POOL_SIZE, Lease, LeaseId,
    LeaseState, MAX_STORED_PACKAGE_BYTES, MemoryApprovalStore, PackageRecord, PgStore, Resolved,
    SqliteStore, StoreError, StoredPackage,
};

/// Milliseconds since the Unix epoch; every stored time uses it.
pub type UnixMillis = i64;

/// The current time as [`UnixMillis`].
pub fn now_millis() -> UnixMillis {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or_default()
}
