//! Host-mediated HTTPS egress, network policy, credential injection,
//! redaction, and the OAuth and API-key engines for Warden. The secret
//! stores are their own crate, `warden-accounts`, re-exported as
//! [`secrets`].
//!
//! Policy decides, egress enforces: [`policy`] is a pure decision over a
//! capability's declared audiences and targets; [`resolve`] checks every
//! address; the transport (hyper + rustls) connects only to checked
//! addresses; [`redact`] scrubs every staged secret from what comes back.
//! [`Egress`] is built once per host; [`Egress::session`] gives the
//! per-call [`CallSession`], which implements
//! [`warden_core::net::CallNetwork`] for the runtime.
//!
//! ```
//! use std::sync::Arc;
//! use warden_core::net::CallNetwork;
//! use warden_egress::{Egress, EgressConfig, resolve::SystemResolver, secrets::MemoryStore};
//! let egress = Egress::new(
//!     EgressConfig::default(),
//!     Arc::new(MemoryStore::new()),
//!     Arc::new(SystemResolver),
//! ).unwrap();
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let session = egress
//!     .session("example.search", "example", &[], &[], 1 << 20)
//!     .await
//!     .unwrap();
//! assert!(session.acquire("undeclared").is_err());
//! # });
//! ```

pub mod auth;
mod client;
mod config;
mod observe;
pub mod policy;
pub mod redact;
pub mod resolve;
/// The secret stores and account binding ([`warden_accounts`]).
pub use warden_accounts as secrets;
mod session;
mod staging;
pub mod tape;
#[cfg(feature = "testing")]
pub mod testing;

pub use client::ClientError;
pub use client::pool::MAX_IDLE_TOTAL as MAX_IDLE_CONNECTIONS;
pub use config::{EgressConfig, HostPort};
pub use observe::EgressObserver;
pub use session::{
    AuthRequired, CallSession, Egress, EgressError, NetworkUsage, StreamBody, StreamingResponse,
    UsageCounters,
};
