//! Shared vocabulary of the Warden host.
//!
//! Everything here is plain data or a trait, with no wasmtime, network or
//! storage dependency, so that the manifest, runtime, egress and registry
//! layers agree on one set of words:
//!
//! - [`Origin`], [`GatePolicy`], [`Permission`], [`Effect`], [`Visibility`]:
//!   the authorization vocabulary of the v3 manifest.
//! - [`spec`]: resolved credential, network-target and auth-recipe declarations.
//! - [`net`]: the per-call network service the runtime hands to a guest's
//!   `http` and `credential` imports, and [`net::DenyAll`], the default when
//!   no egress is configured.
//! - [`wasi`]: the locked-down WASI 0.2 interfaces a `wasm32-wasip2`
//!   component may import.
//!
//! ```
//! use warden_core::{Effect, GatePolicy, Origin};
//! assert!(Effect::ExternalWrite.is_write());
//! assert_eq!(Origin::LoopRun.as_str(), "loop_run");
//! assert_eq!("ask_always".parse::<GatePolicy>(), Ok(GatePolicy::AskAlways));
//! ```

mod gate;
pub mod net;
pub mod spec;
mod vocabulary;
pub mod wasi;

pub use gate::GateMatrix;

/// Capabilities reviewed for `loop_run = "ungated"` (no approval gate when
/// the model calls them). Adding an entry is a security review, not a
/// manifest edit: only tools with no effects belong here.
pub const REVIEWED_UNGATED_LOOP_RUN: &[&str] = &["echo.echo"];
pub use vocabulary::{Effect, GatePolicy, Origin, Permission, UnknownWord, Visibility};
