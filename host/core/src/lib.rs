//! Shared vocabulary of the Warden host.
//!
//! Everything here is plain data or a trait, with no wasmtime, network or
//! storage dependency, so that the manifest, runtime, egress and registry
//! layers agree on one set of words:
//!
//! - [`Origin`], [`GatePolicy`], [`Permission`], [`Effect`], [`Visibility`]:
//!   the authorization vocabulary of the v3 manifest.
//! - [`ErrorCode`]: why a call failed, one spelling on every surface.
//! - [`spec`]: resolved credential, network-target and auth-recipe declarations.
//! - [`lane`]: what every lane reports about a call (usage, log entries).
//! - [`content`]: the blocks a tool returns beside its structured output
//!   (text, image, audio, resources), with their bounds.
//! - [`text`]: which characters of outside text a terminal would act on.
//! - [`schema`]: the one JSON Schema checker of tool inputs and outputs.
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

pub mod content;
mod error_code;
mod gate;
pub mod lane;
pub mod net;
pub mod schema;
pub mod spec;
pub mod text;
mod vocabulary;
pub mod wasi;

pub use error_code::ErrorCode;
pub use gate::GateMatrix;

/// One reviewed entry of [`REVIEWED_UNGATED_LOOP_RUN`]: a capability id and
/// the package it was reviewed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReviewedUngated {
    /// The reviewed capability (`echo.echo`).
    pub capability_id: &'static str,
    /// The content digest of the reviewed package; `None` means the package
    /// built into the binary only, never one installed under the same id.
    pub package_digest: Option<&'static str>,
}

/// Capabilities reviewed for `loop_run = "ungated"` (no approval gate when
/// the model calls them), each bound to the package it was reviewed in.
/// Adding an entry is a security review, not a manifest edit: only tools
/// with no effects belong here, and the host refuses to install a package
/// whose allowlisted capability declares any.
pub const REVIEWED_UNGATED_LOOP_RUN: &[ReviewedUngated] = &[ReviewedUngated {
    capability_id: "echo.echo",
    package_digest: None,
}];
pub use vocabulary::{Effect, GatePolicy, Origin, Permission, UnknownWord, Visibility};
