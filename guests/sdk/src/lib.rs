//! Write a Warden tool in a few lines of Rust.
//!
//! The SDK wraps the `warden:tool` WIT bindings: a tool implements [`Tool`],
//! reads its typed input with [`Call::input`] (unknown fields are refused),
//! talks to providers through [`http`] with a host-injected [`credential`],
//! reports progress and sees cancellation through its [`Call`], and returns
//! JSON, content blocks ([`Output`]: images, audio, resources, links) or a
//! [`Failure`] that the host turns into a structured, model-facing error.
//! It targets `warden:tool@0.2.0` (`wit/warden.wit`).
//!
//! ```ignore
//! use serde::Deserialize;
//! use warden_guest::{Call, Failure, Tool};
//!
//! #[derive(Deserialize)]
//! struct Input { text: String }
//!
//! struct Shout;
//! impl Tool for Shout {
//!     fn run(call: &Call) -> Result<serde_json::Value, Failure> {
//!         let input: Input = call.input()?;
//!         Ok(serde_json::json!({ "text": input.text.to_uppercase() }))
//!     }
//! }
//! warden_guest::export_tool!(Shout);
//! ```
//!
//! The SDK also installs the tool's global allocator (the `heap` feature, on
//! by default): dlmalloc whose first segment is an arena in the initial
//! memory, so a small call never grows memory. See `src/heap.rs`.
//!
//! The guest never sees a secret: [`credential::acquire`] returns an opaque
//! handle, and the host injects the value into a request only when the
//! request targets that credential's declared audience.

pub mod credential;
mod failure;
#[cfg(all(
    feature = "heap",
    target_arch = "wasm32",
    not(target_feature = "atomics")
))]
mod heap;
pub mod http;
pub mod log;
mod output;
mod run;

pub use failure::{Failure, FailureKind};
pub use output::{Content, IntoOutput, Output};
pub use run::{Call, Tool, run};

/// The generated WIT bindings, for tools that need the raw interface.
pub mod bindings {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "sandboxed-tool",
        pub_export_macro: true,
        default_bindings_module: "warden_guest::bindings",
    });
}

/// Export `$tool` (a type implementing [`Tool`]) as this component's `tool`.
#[macro_export]
macro_rules! export_tool {
    ($tool:ty) => {
        struct __WardenExport;

        impl $crate::bindings::exports::warden::tool::tool::Guest for __WardenExport {
            fn execute(
                request: $crate::bindings::exports::warden::tool::tool::Request,
            ) -> $crate::bindings::exports::warden::tool::tool::Response {
                $crate::run::<$tool>(request)
            }
        }

        $crate::bindings::export!(__WardenExport with_types_in $crate::bindings);
    };
}
