//! Compiling outside the host's process.
//!
//! Compiling a component takes tens of MiB of compiler memory for a few
//! hundred KB of wasm; a host that must stay small (a long-running `serve`)
//! can hand the work to another process, which fills the artifact cache and
//! exits, so the memory goes with it. The runtime then loads the artifact
//! like any cache hit — verified, and deserialized only into an engine of the
//! same configuration; anything else and it compiles in-process after all.

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
}
