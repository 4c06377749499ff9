//! [`Runtime`]: one engine, one linker, the artifact cache and the execution slots.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::Semaphore;
use wasmtime::Engine;
use wasmtime::component::{HasSelf, Linker};

use crate::admission::{MemoryBudget, MemoryUse};
use crate::bindings::{v0_1, v0_2};
use crate::cache::ArtifactCache;
use crate::component::{Capability, ComponentSpec, InstalledComponent};
use crate::config::RuntimeConfig;
use crate::engine::{self, ActiveAllocator};
use crate::error::RuntimeError;
use crate::long_lane::LongLane;
use crate::state::CallState;

/// The interfaces `warden:tool@0.2.0` lets a component import.
pub(crate) const CONTRACT_IMPORTS: &[&str] = &[
    "warden:tool/log@0.2.0",
    "warden:tool/credential@0.2.0",
    "warden:tool/http@0.2.0",
    "warden:tool/call@0.2.0",
];

/// The interfaces `warden:tool@0.1.0` lets a component import.
pub(crate) const CONTRACT_0_1_IMPORTS: &[&str] = &[
    "warden:tool/log@0.1.0",
    "warden:tool/credential@0.1.0",
    "warden:tool/http@0.1.0",
];

/// The tool runtime of a host: create one, install components, call them.
///
/// Cloning is cheap and shares the engine, linker, cache and execution slots.
#[derive(Debug, Clone)]
pub struct Runtime {
    pub(crate) shared: Arc<Shared>,
}

pub(crate) struct Shared {
    pub(crate) engine: Engine,
    pub(crate) linker: Linker<CallState>,
    pub(crate) config: RuntimeConfig,
    pub(crate) allocator: ActiveAllocator,
    pub(crate) cache: Option<ArtifactCache>,
    pub(crate) slots: Arc<Semaphore>,
    pub(crate) memory: Arc<MemoryBudget>,
    /// Runs the epoch ticker while a guest may run.
    pub(crate) ticker: Arc<engine::Ticker>,
    /// Where long calls finish.
    pub(crate) long_lane: Arc<LongLane>,
    pub(crate) stats: Arc<Counters>,
    /// The baseline tier while baseline code uses it: built when baseline
    /// code is compiled or loaded, and freed with the last of it.
    baseline: std::sync::Mutex<BaselineSlot>,
}

/// The baseline compiler's engine, linker and cache directory.
pub(crate) struct Baseline {
    pub(crate) engine: Engine,
    pub(crate) linker: Linker<CallState>,
    pub(crate) cache: ArtifactCache,
}

/// Where the runtime's baseline tier stands.
#[derive(Default)]
enum BaselineSlot {
    /// Not built, or freed since.
    #[default]
    None,
    /// Built; alive while baseline code (or a compile) holds it.
    Built(std::sync::Weak<Baseline>),
    /// Cannot be built here (logged once).
    Unavailable,
}

impl Shared {
    /// The baseline tier, built now if nothing holds it; `None` without a
    /// cache directory or where the baseline compiler cannot be used
    /// (logged once). Concurrent callers share one build.
    pub(crate) fn baseline(&self) -> Option<Arc<Baseline>> {
        let dir = self.config.cache_dir.as_deref()?;
        let mut slot = self.baseline.lock().unwrap_or_else(|e| e.into_inner());
        match &*slot {
            BaselineSlot::Unavailable => return None,
            BaselineSlot::Built(tier) => {
                if let Some(tier) = tier.upgrade() {
                    return Some(tier);
                }
            }
            BaselineSlot::None => {}
        }
        let built = engine::build_baseline(&self.config).and_then(|engine| {
            let linker = link_host(&engine)?;
            Ok((engine, linker))
        });
        match built {
            Ok((engine, linker)) => {
                self.ticker.also_tick(&engine);
                let cache = ArtifactCache::new(dir, &engine, self.config.cache_max_bytes);
                let tier = Arc::new(Baseline {
                    engine,
                    linker,
                    cache,
                });
                *slot = BaselineSlot::Built(Arc::downgrade(&tier));
                Some(tier)
            }
            Err(error) => {
                tracing::warn!(%error, "no baseline code: first calls wait for the optimizing compiler");
                *slot = BaselineSlot::Unavailable;
                None
            }
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.ticker.close();
    }
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("allocator", &self.allocator)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) compiled: AtomicU64,
    pub(crate) cache_hits: AtomicU64,
    pub(crate) cache_rebuilt: AtomicU64,
    pub(crate) compiled_external: AtomicU64,
    pub(crate) baseline_compiled: AtomicU64,
    pub(crate) baseline_served: AtomicU64,
    pub(crate) baseline_resident: AtomicU64,
}

/// Install statistics of a runtime since it was created.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RuntimeStats {
    /// Components compiled from wasm.
    pub compiled: u64,
    /// Components deserialized from the cache.
    pub cache_hits: u64,
    /// Cache entries found invalid and rebuilt.
    pub cache_rebuilt: u64,
    /// Calls moved to the long-call lane (see [`RuntimeConfig::long_call_threads`]).
    pub long_calls: u64,
    /// Components the [`crate::ExternalCompiler`] compiled into the cache.
    pub compiled_external: u64,
    /// Components compiled to baseline code here (by
    /// [`Runtime::compile_to_cache_tiered`]).
    pub baseline_compiled: u64,
    /// Components whose first calls ran baseline code while the optimizing
    /// compiler worked.
    pub baseline_served: u64,
    /// Components whose baseline code is loaded now: it is let go when the
    /// optimized code replaces it and freed when the last call running it
    /// ends (a gauge, not a count since creation).
    pub baseline_resident: u64,
}

/// The linker of both contract versions, of the `near:agent`
/// compatibility world and of the locked-down WASI 0.2, for `engine`.
fn link_host(engine: &Engine) -> Result<Linker<CallState>, RuntimeError> {
    let mut linker = Linker::new(engine);
    let contract = |e: wasmtime::Error| RuntimeError::Internal {
        reason: format!("linking the contract: {e}"),
    };
    v0_2::SandboxedTool::add_to_linker::<CallState, HasSelf<CallState>>(&mut linker, |s| s)
        .map_err(contract)?;
    v0_1::SandboxedTool::add_to_linker::<CallState, HasSelf<CallState>>(&mut linker, |s| s)
        .map_err(contract)?;
    crate::compat::bindings::SandboxedTool::add_to_linker::<CallState, HasSelf<CallState>>(
        &mut linker,
        |s| s,
    )
    .map_err(|e| RuntimeError::Internal {
        reason: format!("linking the near:agent compatibility world: {e}"),
    })?;
    // Imports resolve per component at install: a contract-only component's
    // `InstancePre` holds no WASI definition and its calls create no context.
    crate::wasi::add_to_linker(&mut linker).map_err(|e| RuntimeError::Internal {
        reason: format!("linking WASI: {e}"),
    })?;
    Ok(linker)
}

impl Runtime {
    /// Create the engine (pooling allocator unless configured otherwise), the
    /// linker of the contract and of the locked-down WASI 0.2, and the epoch
    /// ticker.
    pub fn new(config: RuntimeConfig) -> Result<Runtime, RuntimeError> {
        let (engine, allocator) = engine::build(&config)?;
        let linker = link_host(&engine)?;
        let ticker = Arc::new(engine::Ticker::default());
        engine::spawn_ticker(engine.weak(), config.epoch_tick, ticker.clone()).map_err(|e| {
            RuntimeError::Engine {
                reason: format!("starting the epoch ticker: {e}"),
            }
        })?;
        let cache = config
            .cache_dir
            .as_deref()
            .map(|dir| ArtifactCache::new(dir, &engine, config.cache_max_bytes));
        let slots = Arc::new(Semaphore::new(config.max_concurrent as usize));
        let memory = Arc::new(MemoryBudget::new(config.memory_budget));
        let long_lane = Arc::new(LongLane::new(config.long_call_threads));
        Ok(Runtime {
            shared: Arc::new(Shared {
                engine,
                linker,
                config,
                allocator,
                cache,
                slots,
                memory,
                ticker,
                long_lane,
                stats: Arc::default(),
                baseline: std::sync::Mutex::default(),
            }),
        })
    }

    /// The allocator in use (pooling, or on-demand after a fallback).
    pub fn allocator(&self) -> ActiveAllocator {
        self.shared.allocator
    }

    /// The configuration the runtime was created with.
    pub fn config(&self) -> &RuntimeConfig {
        &self.shared.config
    }

    /// Install statistics since creation.
    pub fn stats(&self) -> RuntimeStats {
        let s = &self.shared.stats;
        RuntimeStats {
            compiled: s.compiled.load(Ordering::Relaxed),
            cache_hits: s.cache_hits.load(Ordering::Relaxed),
            cache_rebuilt: s.cache_rebuilt.load(Ordering::Relaxed),
            long_calls: self.shared.long_lane.moved(),
            compiled_external: s.compiled_external.load(Ordering::Relaxed),
            baseline_compiled: s.baseline_compiled.load(Ordering::Relaxed),
            baseline_served: s.baseline_served.load(Ordering::Relaxed),
            baseline_resident: s.baseline_resident.load(Ordering::Relaxed),
        }
    }

    /// The host-wide memory budget and what running calls reserve of it.
    pub fn memory(&self) -> MemoryUse {
        self.shared.memory.usage()
    }

    /// Refuse new calls from now on (running calls finish).
    pub fn shutdown(&self) {
        self.shared.slots.close();
        self.shared.memory.close();
    }

    /// Install a component and prepare its code now: compile it (or load it
    /// from the cache), check its imports and exports, link it, and compile
    /// the capabilities' schemas. Every refusal comes from here.
    pub fn install(&self, spec: ComponentSpec<'_>) -> Result<InstalledComponent, RuntimeError> {
        let component = self.install_lazy(spec)?;
        component.prepare()?;
        Ok(component)
    }

    /// Compile `wasm` into the artifact cache unless it is there already,
    /// without installing it: what an [`crate::ExternalCompiler`] runs in its
    /// own process, with a runtime of the same configuration.
    pub fn compile_to_cache(
        &self,
        name: &str,
        wasm: &[u8],
    ) -> Result<crate::CacheStatus, RuntimeError> {
        crate::prepare::compile_to_cache(&self.shared, name, wasm)
    }

    /// [`Self::compile_to_cache`] in two tiers, as a tiered
    /// [`crate::ExternalCompiler`] runs it: baseline code first (Winch, on
    /// one thread, into the baseline engine's cache directory), then
    /// `between_tiers` with whether the baseline code is in the cache, then
    /// the optimized code (compiler threads start only now, so they take the
    /// priority `between_tiers` may have lowered), after which the baseline
    /// entry is removed. Without a baseline compiler, or with the optimized
    /// code already in the cache, there is no baseline code.
    pub fn compile_to_cache_tiered(
        &self,
        name: &str,
        wasm: &[u8],
        between_tiers: &mut dyn FnMut(bool),
    ) -> Result<crate::CacheStatus, RuntimeError> {
        crate::prepare::compile_to_cache_tiered(&self.shared, name, wasm, between_tiers)
    }

    /// Install a component whose code is prepared later: at its first call,
    /// or when [`InstalledComponent::prepare`] is called (a host warms its
    /// components up in the background this way). What needs no compiling is
    /// checked now — the world (from the exports), the schemas, the limits —
    /// so the catalog never waits for a compiler; a component that fails to
    /// compile or link fails its calls with that error. For packages already
    /// accepted once by [`Runtime::install`].
    pub fn install_lazy(
        &self,
        spec: ComponentSpec<'_>,
    ) -> Result<InstalledComponent, RuntimeError> {
        // Before anything else reads it closely, and before any compiler
        // sees it: a compile bomb is refused here, in one pass over its bytes.
        if spec.bounded_code {
            let limit = self.shared.config.compile_limits.max_code_bytes;
            crate::code_size::check(&spec.name, &spec.wasm, limit)?;
        }
        let world = crate::compat::scan(&spec.name, &spec.wasm)?;
        let capabilities = spec
            .capabilities
            .iter()
            .map(|c| Capability::compile(c, &self.shared.config))
            .collect::<Result<_, _>>()?;
        Ok(InstalledComponent::new(
            self.shared.clone(),
            spec.name,
            world,
            spec.wasm.into_owned(),
            capabilities,
        ))
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    /// Baseline code is rare (a first call on a cache miss): its tier is
    /// built for it and freed with it, the ticker's reference included.
    #[test]
    fn the_baseline_tier_lives_while_something_holds_it() {
        let dir = tempfile::tempdir().unwrap();
        let runtime = Runtime::new(RuntimeConfig {
            cache_dir: Some(dir.path().to_owned()),
            max_concurrent: 2,
            ..RuntimeConfig::default()
        })
        .unwrap();
        let shared = &runtime.shared;
        let tier = shared.baseline().expect("x86-64 has a baseline compiler");
        let again = shared.baseline().unwrap();
        assert!(Arc::ptr_eq(&tier, &again), "one tier while it is held");
        assert!(shared.ticker.baseline().is_some());

        let weak = Arc::downgrade(&tier);
        drop((tier, again));
        assert!(weak.upgrade().is_none(), "freed with its last holder");
        assert!(
            shared.ticker.baseline().is_none(),
            "the ticker does not keep its engine alive"
        );
        let rebuilt = shared.baseline().expect("built again when needed");
        let ticked = shared.ticker.baseline().expect("the ticker has it");
        assert!(
            Engine::same(&ticked, &rebuilt.engine),
            "the ticker advances the rebuilt engine"
        );
    }
}
