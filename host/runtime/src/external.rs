//! Compiling outside the host's process.
//!
//! Compiling a component takes tens of MiB of compiler memory for a few
//! hundred KB of wasm; a host that must stay small (a long-running `serve`)
//! can hand the work to another process, which fills the artifact cache and
//! exits, so the memory goes with it. The runtime then loads the artifact
//! like any cache hit — verified, and deserialized only into an engine of the
//! same configuration; anything else and it compiles in-process after all.

use crate::error::RuntimeError;

/// Why an external compile gave the runtime no code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExternalFailure {
    /// The compiler could not do its work for reasons of its own (it could
    /// not be started, say): the runtime compiles the component itself.
    Unavailable(String),
    /// The compiler ran on the component and refused it, a compile limit
    /// above all ([`RuntimeError::CompileLimitExceeded`]): the component's
    /// error, final. Compiling it here instead would lift the very bounds
    /// the compiler process is there to hold.
    Refused(RuntimeError),
}

/// Fills the runtime's artifact cache with the compiled form of a component.
///
/// Used on a cache miss when [`crate::RuntimeConfig::external_compiler`] is
/// set and the runtime has a cache. The implementation must compile with an
/// engine of the same configuration into the same cache directory (the `warden`
/// CLI runs itself: `warden compile-component`); [`crate::Runtime::compile_to_cache`]
/// is what it runs there.
pub trait ExternalCompiler: Send + Sync + std::fmt::Debug {
    /// Compile `wasm` (component `name`) into the cache, or say why not.
    fn compile(&self, name: &str, wasm: &[u8]) -> Result<(), String>;

    /// Compile in two tiers, as [`crate::Runtime::compile_to_cache_tiered`]
    /// does: baseline code into the cache first, then `baseline_ready`, then
    /// the optimized code; return once the optimized code is in the cache (or
    /// failed). The runtime runs the component's first calls on the baseline
    /// code meanwhile and swaps in the optimized code after. The default
    /// compiles only the optimized code, so every call waits for it.
    fn compile_tiered(
        &self,
        name: &str,
        wasm: &[u8],
        baseline_ready: &mut dyn FnMut(),
    ) -> Result<(), String> {
        let _ = baseline_ready;
        self.compile(name, wasm)
    }

    /// [`Self::compile_tiered`], telling a refusal of the component (final)
    /// from a failure of the compiler itself (then the runtime compiles
    /// here): what the runtime calls. The default takes every failure for
    /// the compiler's own; a compiler that enforces limits overrides it.
    fn compile_checked(
        &self,
        name: &str,
        wasm: &[u8],
        baseline_ready: &mut dyn FnMut(),
    ) -> Result<(), ExternalFailure> {
        self.compile_tiered(name, wasm, baseline_ready)
            .map_err(ExternalFailure::Unavailable)
    }
}
