//! The Warden host: an embeddable API that composes the manifest, registry,
//! authorization, runtime and egress layers.
//!
//! Build a [`Host`] (stores, limits, egress settings), open a [`Location`]
//! (a workspace with its own registry), install packages (a directory, an
//! archive, or the bundle built into the binary), take a snapshot for a model
//! request, invoke, and resolve approvals.
//!
//! Every tool runs behind one executor contract, the [`Lane`] trait: the WASM
//! lane (a component run by the runtime) and the first-party lane (native code
//! registered with [`HostBuilder::first_party_service`], reaching the network
//! only through [`CallHttp`], the call's egress session). Lookup, input check,
//! authorization, approvals, credential precheck and output bounding are the
//! same for every lane.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use warden_core::Origin;
//! use warden_host::{Host, HostConfig, Invocation, InvokeOutcome};
//!
//! let host = Host::builder(HostConfig::default()).build()?;
//! let location = host.open_location("my-project");
//! location.install_embedded()?;
//! let snapshot = location.snapshot();
//! let call = Invocation::new("echo_echo", serde_json::json!({ "text": "hi", "transform": "upper" }), Origin::LoopRun);
//! match location.invoke_in(&snapshot, call).await? {
//!     InvokeOutcome::Completed(done) => assert_eq!(done.output["text"], "HI"),
//!     InvokeOutcome::NeedsApproval(request) => println!("approve {}", request.id),
//!     InvokeOutcome::Failed(failure) => println!("{failure}"),
//! }
//! # Ok(()) }
//! ```

mod accounts;
mod admin;
mod answer;
mod audit;
mod auth;
mod config;
mod diff;
mod error;
mod host;
mod invoke;
mod lane;
mod location;
mod metrics;
mod outcome;
mod private;
mod public_url;
mod publish;
pub mod signature;
mod source;
mod trace;
mod trust;
mod vendor;

pub use accounts::{AccountError, DeclaredCredential};
pub use admin::{AdminError, AdminValue};
pub use audit::{AuditEntry, AuditError, AuditLog, DEFAULT_AUDIT_MAX_BYTES, audit_tail};
pub use auth::{
    AccountStatus, AuthTarget, ConnectError, ConnectOptions, OAuthClientConfig, OAuthConnect,
    PROBE_EXTENSION, ProbeAuth, ProbeCall, ProbeError, ProbeFound,
};
pub use config::{DEFAULT_STORE_RETENTION, HostConfig};
pub use diff::{CapabilityDiff, Change, Direction};
pub use error::HostError;
pub use host::{Host, HostBuilder, SECRET_KEY_ENV};
pub use lane::{
    CallContext, CallHttp, CallHttpError, FirstPartyCall, FirstPartyError, FirstPartyService, Lane,
    LaneError, LaneOutcome,
};
pub use location::hosted::Discovery;
pub use location::{InstalledPackage, Location, Replace, ResolvedTool};
pub use metrics::{METRICS_CONTENT_TYPE, Metrics};
pub use outcome::{
    AuthDetails, AuthorizedBy, CallFailure, CancellationToken, Completed, Invocation,
    InvokeOutcome, TapeMode,
};
pub use publish::pull;
pub use source::{
    LoadedPackage, MAX_FILE_BYTES, MAX_PACKAGE_BYTES, PackageOrigin, PackageSource, Provenance,
    content_digest, load as load_package,
};
pub use warden_oci as oci;

pub use signature::{SignatureError, SignatureStatus, TrustedSigner};
pub use trace::TraceParent;
pub use trust::{EffectiveTrust, TrustPin, effective_trust};
pub use warden_core::Origin;
pub use warden_hosted::{HostedError, LaneLimits, RemoteTool, ServerSettings};
pub use warden_manifest::Trust;
pub use warden_registry::{
    AllowlistEntry, ApprovalId, ApprovalRequest, Catalog, PackageIdentity, Resolution, Snapshot,
};
pub use warden_runtime::ComponentWorld;
