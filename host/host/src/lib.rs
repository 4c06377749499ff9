//! The Warden host: an embeddable API that composes the manifest, registry,
//! authorization, runtime and egress layers.
//!
//! Build a [`Host`] (stores, limits, egress settings), open a [`Location`]
//! (a workspace with its own registry), install packages (a directory, an
//! archive, or the bundle built into the binary), take a snapshot for a model
//! request, invoke, and resolve approvals.
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
mod config;
mod error;
mod host;
mod invoke;
mod location;
mod outcome;
mod source;
mod trust;

pub use accounts::{AccountError, DeclaredCredential};
pub use config::HostConfig;
pub use error::HostError;
pub use host::{Host, HostBuilder, SECRET_KEY_ENV};
pub use location::{InstalledPackage, Location, Replace};
pub use outcome::{AuthDetails, AuthorizedBy, CallFailure, Completed, Invocation, InvokeOutcome};
pub use source::{
    LoadedPackage, MAX_FILE_BYTES, MAX_PACKAGE_BYTES, PackageSource, Provenance, content_digest,
    load as load_package,
};

pub use trust::{EffectiveTrust, effective_trust};
pub use warden_core::Origin;
pub use warden_manifest::Trust;
pub use warden_registry::{
    AllowlistEntry, ApprovalId, ApprovalRequest, Catalog, PackageIdentity, Resolution, Snapshot,
};
pub use warden_runtime::ComponentWorld;
