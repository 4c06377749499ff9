//! Run tool components under fuel, memory and time limits with typed outcomes.
//!
//! All wasmtime code of Warden lives here. A host creates one [`Runtime`]
//! (one engine, one linker, an epoch ticker, an optional on-disk artifact
//! cache), [installs](Runtime::install) each component once, and
//! [calls](InstalledComponent::call) it many times; every call gets a fresh
//! instance, validated input, limits, and a [`CallOutcome`] with usage.
//!
//! ```no_run
//! use warden_runtime::{CallRequest, CapabilitySpec, ComponentSpec, Runtime, RuntimeConfig};
//!
//! # async fn run() -> Result<(), warden_runtime::RuntimeError> {
//! let runtime = Runtime::new(RuntimeConfig::default())?;
//! let wasm = std::fs::read("packages/echo/wasm/echo.wasm").unwrap();
//! let echo = runtime.install(
//!     ComponentSpec::new("echo", wasm).with_capability(CapabilitySpec::new("echo.echo")),
//! )?;
//! let outcome = echo.call(CallRequest::new("echo.echo", r#"{"text":"hi"}"#)).await;
//! match outcome.result {
//!     Ok(output) => println!("{output} using {} fuel", outcome.usage.fuel_consumed),
//!     Err(error) => println!("{}: {error}", error.code()),
//! }
//! # Ok(()) }
//! ```

mod admission;
mod bindings;
mod cache;
mod call;
mod classify;
mod code_size;
mod compat;
mod component;
mod config;
mod content;
mod engine;
mod error;
mod external;
/// Entry points for the fuzz targets in `tests/fuzz` (feature `fuzzing`,
/// off by default): the `near:agent` `headers-json` parsing is crate-private,
/// and reaching it through a guest would cost a component call per input.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod host;
mod limits;
mod long_lane;
mod outcome;
mod prepare;
mod runtime;
mod slices;
mod state;
mod tiering;
mod wasi;

pub use admission::MemoryUse;
pub use call::{CANCEL_GRACE, CallRequest};
pub use compat::ComponentWorld;
pub use component::{
    CacheStatus, CapabilitySpec, ComponentSpec, InstallReport, InstalledComponent,
};
pub use config::{
    Allocator, CompileLimits, DEFAULT_MEMORY_BUDGET, LimitOverrides, Limits, RuntimeConfig,
};
pub use engine::ActiveAllocator;
pub use error::{CompileLimit, RuntimeError};
pub use external::{ExternalCompiler, ExternalFailure};
pub use limits::TABLE_ELEMENT_BYTES;
pub use long_lane::LONG_CALL_SLICES;
pub use outcome::{
    CallOutcome, FailureKind, InputError, LogEntry, LogLevel, TrapKind, Unavailable, Usage,
};
pub use runtime::{Runtime, RuntimeStats};
