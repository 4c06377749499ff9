//! [`Runtime`]: one engine, one linker, the artifact cache and the execution slots.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use tokio::sync::Semaphore;
use wasmtime::Engine;
use wasmtime::component::{Component, HasSelf, Linker};

use crate::admission::{MemoryBudget, MemoryUse};
use crate::bindings::{SandboxedTool, SandboxedToolPre};
use crate::cache::{ArtifactCache, Lookup, sha256_hex};
use crate::compat::ComponentWorld;
use crate::component::{
    CacheStatus, Capability, ComponentSpec, InstallReport, InstalledComponent, Prepared,
};
use crate::config::RuntimeConfig;
use crate::engine::{self, ActiveAllocator};
use crate::error::RuntimeError;
use crate::state::CallState;

/// The interfaces the contract lets a component import.
pub(crate) const CONTRACT_IMPORTS: &[&str] = &[
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
    pub(crate) slots: Semaphore,
    pub(crate) memory: MemoryBudget,
    /// Runs the epoch ticker while a guest may run.
    pub(crate) ticker: Arc<engine::Ticker>,
    stats: Counters,
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
struct Counters {
    compiled: AtomicU64,
    cache_hits: AtomicU64,
    cache_rebuilt: AtomicU64,
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
}

impl Runtime {
    /// Create the engine (pooling allocator unless configured otherwise), the
    /// linker of the contract and of the locked-down WASI 0.2, and the epoch
    /// ticker.
    pub fn new(config: RuntimeConfig) -> Result<Runtime, RuntimeError> {
        let (engine, allocator) = engine::build(&config)?;
        let mut linker = Linker::new(&engine);
        SandboxedTool::add_to_linker::<CallState, HasSelf<CallState>>(&mut linker, |s| s).map_err(
            |e| RuntimeError::Internal {
                reason: format!("linking the contract: {e}"),
            },
        )?;
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
        let ticker = Arc::new(engine::Ticker::default());
        engine::spawn_ticker(engine.weak(), config.epoch_tick, ticker.clone()).map_err(|e| {
            RuntimeError::Engine {
                reason: format!("starting the epoch ticker: {e}"),
            }
        })?;
        let cache = config
            .cache_dir
            .as_deref()
            .map(|dir| ArtifactCache::new(dir, &engine));
        let slots = Semaphore::new(config.max_concurrent as usize);
        let memory = MemoryBudget::new(config.memory_budget);
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
                stats: Counters::default(),
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

    /// Compile (or load from the cache), check imports and exports, compile
    /// the schemas, and prepare instantiation.
    pub fn install(&self, spec: ComponentSpec<'_>) -> Result<InstalledComponent, RuntimeError> {
        let start = Instant::now();
        let (component, cache) = self.load_component(&spec)?;
        let world = crate::compat::detect(&self.shared.engine, &spec.name, &component)?;
        check_imports(&self.shared.engine, &spec.name, &component, world)?;
        let pre = self
            .shared
            .linker
            .instantiate_pre(&component)
            .map_err(|e| RuntimeError::Internal {
                reason: format!("preparing `{}`: {e:#}", spec.name),
            })?;
        let missing = |e: wasmtime::Error| RuntimeError::ExportMissing {
            component: spec.name.clone(),
            reason: format!("{e:#}"),
        };
        let pre = match world {
            ComponentWorld::Warden => {
                Prepared::Warden(SandboxedToolPre::new(pre).map_err(missing)?)
            }
            ComponentWorld::NearAgent => {
                let pre = crate::compat::call::Pre::new(pre).map_err(missing)?;
                let shared = &self.shared;
                let _busy = shared.ticker.busy();
                crate::compat::probe::check_schema(
                    &shared.engine,
                    &shared.config,
                    &spec.name,
                    &pre,
                )?;
                Prepared::NearAgent(pre)
            }
        };
        let capabilities = spec
            .capabilities
            .iter()
            .map(|c| Capability::compile(c, &self.shared.config))
            .collect::<Result<_, _>>()?;
        let report = InstallReport {
            cache,
            elapsed: start.elapsed(),
        };
        Ok(InstalledComponent::new(
            self.shared.clone(),
            spec.name,
            pre,
            capabilities,
            report,
        ))
    }

    fn load_component(
        &self,
        spec: &ComponentSpec<'_>,
    ) -> Result<(Component, CacheStatus), RuntimeError> {
        let engine = &self.shared.engine;
        let Some(cache) = &self.shared.cache else {
            return Ok((self.compile(spec)?, CacheStatus::Disabled));
        };
        let sha = sha256_hex(&spec.wasm);
        let rebuilt = match cache.load(engine, &sha) {
            Lookup::Hit(component) => {
                self.shared.stats.cache_hits.fetch_add(1, Ordering::Relaxed);
                return Ok((component, CacheStatus::Hit));
            }
            Lookup::Miss => false,
            Lookup::Invalid(reason) => {
                tracing::warn!(component = %spec.name, %reason, "rebuilding cache entry");
                self.shared
                    .stats
                    .cache_rebuilt
                    .fetch_add(1, Ordering::Relaxed);
                true
            }
        };
        let component = self.compile(spec)?;
        match component.serialize() {
            Ok(artifact) => {
                if let Err(error) = cache.store(&sha, &artifact) {
                    tracing::warn!(component = %spec.name, %error, "could not write cache entry");
                }
            }
            Err(error) => tracing::warn!(component = %spec.name, %error, "could not serialize"),
        }
        let status = if rebuilt {
            CacheStatus::Rebuilt
        } else {
            CacheStatus::Compiled
        };
        Ok((component, status))
    }

    fn compile(&self, spec: &ComponentSpec<'_>) -> Result<Component, RuntimeError> {
        let component =
            Component::new(&self.shared.engine, &spec.wasm).map_err(|e| RuntimeError::Compile {
                component: spec.name.clone(),
                reason: format!("{e:#}"),
            })?;
        self.shared.stats.compiled.fetch_add(1, Ordering::Relaxed);
        Ok(component)
    }
}

/// Refuse a component importing anything outside its world's contract and
/// the allowed WASI 0.2 interfaces ([`warden_core::wasi::WASI_ALLOWED`]), naming it.
fn check_imports(
    engine: &Engine,
    name: &str,
    component: &Component,
    world: ComponentWorld,
) -> Result<(), RuntimeError> {
    for (import, _) in component.component_type().imports(engine) {
        if !world.imports().contains(&import) && !warden_core::wasi::is_allowed_import(import) {
            return Err(RuntimeError::ImportNotAllowed {
                component: name.to_owned(),
                import: import.to_owned(),
            });
        }
    }
    Ok(())
}
