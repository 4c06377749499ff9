//! Preparing a component's code: load it from the cache or compile it, check
//! its world, imports and exports, link it, and probe a compatibility
//! component's schema. Runs once per installed component (see
//! [`crate::InstalledComponent::prepare`]).
//!
//! On a cache miss with an [`crate::ExternalCompiler`], [`crate::tiering`]
//! runs it.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use wasmtime::Engine;
use wasmtime::component::{Component, Linker};

use crate::bindings::{v0_1, v0_2};
use crate::cache::{Lookup, sha256_hex};
use crate::compat::ComponentWorld;
use crate::component::{CacheStatus, First, Inner, InstallReport, Prepared, Ready};
use crate::error::RuntimeError;
use crate::runtime::{Baseline, Shared};
use crate::state::CallState;
use crate::tiering::Elsewhere;

/// Prepare the code of an installed component from its `wasm`.
pub(crate) fn prepare(inner: &Arc<Inner>, wasm: &[u8]) -> Result<First, RuntimeError> {
    let start = Instant::now();
    let (shared, name) = (&inner.shared, inner.name.as_str());
    // A miss and an invalid entry alike go to the external compiler, whose
    // process bounds the compile's time and memory; it rebuilds an invalid
    // entry as it fills a missing one.
    let (component, status) = match cached(shared, name, wasm) {
        Cached::Hit(component) => (component, CacheStatus::Hit),
        Cached::Miss(sha) => {
            match compile_elsewhere(inner, wasm, &sha, start, CacheStatus::Compiled)? {
                Some(ready) => ready,
                None => return Ok(First::Baseline),
            }
        }
        Cached::Invalid(sha) => {
            match compile_elsewhere(inner, wasm, &sha, start, CacheStatus::Rebuilt)? {
                Some(ready) => ready,
                None => return Ok(First::Baseline),
            }
        }
        Cached::Disabled => (compile(shared, name, wasm)?, CacheStatus::Disabled),
    };
    link(
        shared,
        optimizing(shared),
        name,
        inner.world,
        component,
        status,
        start,
    )
    .map(|ready| First::Final(Arc::new(ready)))
}

/// The component's code from the external compiler, or compiled here if
/// there is none (reported as `here`); `None` when the component holds
/// baseline code to run first.
fn compile_elsewhere(
    inner: &Arc<Inner>,
    wasm: &[u8],
    sha: &str,
    start: Instant,
    here: CacheStatus,
) -> Result<Option<(Component, CacheStatus)>, RuntimeError> {
    match crate::tiering::compile_elsewhere(inner, wasm, sha, start) {
        Elsewhere::Baseline => Ok(None),
        Elsewhere::Optimized(component) => Ok(Some((component, CacheStatus::External))),
        Elsewhere::Refused(error) => Err(error),
        Elsewhere::Not => compile_and_store(&inner.shared, &inner.name, wasm, sha, here).map(Some),
    }
}

/// An engine and its linker: the runtime's own, or the baseline tier's.
#[derive(Clone, Copy)]
pub(crate) struct Tier<'a> {
    engine: &'a Engine,
    linker: &'a Linker<CallState>,
}

pub(crate) fn optimizing(shared: &Shared) -> Tier<'_> {
    Tier {
        engine: &shared.engine,
        linker: &shared.linker,
    }
}

pub(crate) fn baseline(tier: &Baseline) -> Tier<'_> {
    Tier {
        engine: &tier.engine,
        linker: &tier.linker,
    }
}

/// Check the compiled `component` against its world and imports and link it.
pub(crate) fn link(
    shared: &Shared,
    tier: Tier<'_>,
    name: &str,
    world: ComponentWorld,
    component: Component,
    cache: CacheStatus,
    start: Instant,
) -> Result<Ready, RuntimeError> {
    let compiled_world = crate::compat::detect(tier.engine, name, &component)?;
    if compiled_world != world {
        return Err(RuntimeError::ExportMissing {
            component: name.to_owned(),
            reason: format!(
                "its exports read as the {world} world before compiling and as {compiled_world} after"
            ),
        });
    }
    check_imports(tier.engine, name, &component, world)?;
    let pre = tier
        .linker
        .instantiate_pre(&component)
        .map_err(|e| RuntimeError::Internal {
            reason: format!("preparing `{name}`: {e:#}"),
        })?;
    let missing = |e: wasmtime::Error| RuntimeError::ExportMissing {
        component: name.to_owned(),
        reason: format!("{e:#}"),
    };
    let pre = match world {
        ComponentWorld::Warden => {
            Prepared::Warden(v0_2::SandboxedToolPre::new(pre).map_err(missing)?)
        }
        ComponentWorld::Warden01 => {
            Prepared::Warden01(v0_1::SandboxedToolPre::new(pre).map_err(missing)?)
        }
        ComponentWorld::NearAgent => {
            let pre = crate::compat::call::Pre::new(pre).map_err(missing)?;
            let _busy = shared.ticker.busy();
            crate::compat::probe::check_schema(tier.engine, &shared.config, name, &pre)?;
            Prepared::NearAgent(pre)
        }
    };
    let report = InstallReport {
        cache,
        elapsed: start.elapsed(),
    };
    tracing::debug!(component = %name, cache = ?report.cache, elapsed_ms = report.elapsed.as_millis() as u64, "component prepared");
    Ok(Ready {
        pre,
        report,
        engine: tier.engine.clone(),
        held: None,
    })
}

/// What the cache had for a component.
enum Cached {
    Hit(Component),
    /// No entry for the component of this sha256.
    Miss(String),
    /// An entry that cannot be used; it is rebuilt.
    Invalid(String),
    /// The runtime has no cache.
    Disabled,
}

fn cached(shared: &Shared, name: &str, wasm: &[u8]) -> Cached {
    if shared.cache.is_none() {
        return Cached::Disabled;
    }
    cached_at(shared, name, sha256_hex(wasm))
}

/// [`cached`] for the component of `sha`.
fn cached_at(shared: &Shared, name: &str, sha: String) -> Cached {
    let Some(cache) = &shared.cache else {
        return Cached::Disabled;
    };
    match cache.load(&shared.engine, &sha) {
        Lookup::Hit(component) => {
            shared.stats.cache_hits.fetch_add(1, Ordering::Relaxed);
            Cached::Hit(component)
        }
        Lookup::Miss => Cached::Miss(sha),
        Lookup::Invalid(reason) => {
            tracing::warn!(component = %name, %reason, "rebuilding cache entry");
            shared.stats.cache_rebuilt.fetch_add(1, Ordering::Relaxed);
            Cached::Invalid(sha)
        }
    }
}

/// Compile here and keep the artifact in the cache (a failure to write it
/// is only a warning).
pub(crate) fn compile_and_store(
    shared: &Shared,
    name: &str,
    wasm: &[u8],
    sha: &str,
    status: CacheStatus,
) -> Result<(Component, CacheStatus), RuntimeError> {
    let component = compile(shared, name, wasm)?;
    if let Some(cache) = &shared.cache {
        match component.serialize() {
            Ok(artifact) => {
                if let Err(error) = cache.store(sha, &artifact) {
                    tracing::warn!(component = %name, %error, "could not write cache entry");
                }
            }
            Err(error) => tracing::warn!(component = %name, %error, "could not serialize"),
        }
    }
    Ok((component, status))
}

/// Compile `wasm` into the cache unless it is there already (what an
/// [`crate::ExternalCompiler`] runs in its own process).
pub(crate) fn compile_to_cache(
    shared: &Shared,
    name: &str,
    wasm: &[u8],
) -> Result<CacheStatus, RuntimeError> {
    compile_to_cache_at(shared, name, wasm, sha256_hex(wasm))
}

/// [`compile_to_cache`] for `wasm`, whose sha256 is `sha`.
fn compile_to_cache_at(
    shared: &Shared,
    name: &str,
    wasm: &[u8],
    sha: String,
) -> Result<CacheStatus, RuntimeError> {
    match cached_at(shared, name, sha) {
        Cached::Hit(component) => Ok((component, CacheStatus::Hit)),
        Cached::Miss(sha) => compile_and_store(shared, name, wasm, &sha, CacheStatus::Compiled),
        Cached::Invalid(sha) => compile_and_store(shared, name, wasm, &sha, CacheStatus::Rebuilt),
        Cached::Disabled => Err(RuntimeError::InvalidConfig {
            reason: "compiling into the cache needs a cache directory".into(),
        }),
    }
    .map(|(_, status)| status)
}

/// [`compile_to_cache`] in two tiers (see
/// [`crate::Runtime::compile_to_cache_tiered`]).
pub(crate) fn compile_to_cache_tiered(
    shared: &Shared,
    name: &str,
    wasm: &[u8],
    between_tiers: &mut dyn FnMut(bool),
) -> Result<CacheStatus, RuntimeError> {
    let sha = sha256_hex(wasm);
    let optimized_there = shared
        .cache
        .as_ref()
        .is_some_and(|cache| cache.contains(&sha));
    let tier = if optimized_there {
        None
    } else {
        shared.baseline()
    };
    let baseline_ready = tier.as_ref().is_some_and(|tier| {
        compile_baseline(shared, tier, name, wasm, &sha)
            .inspect_err(|error| tracing::warn!(component = %name, %error, "no baseline code"))
            .is_ok()
    });
    between_tiers(baseline_ready);
    let status = compile_to_cache_at(shared, name, wasm, sha.clone());
    // The optimized code replaces it for good; without optimized code the
    // next miss compiles both again.
    if let Some(tier) = tier {
        tier.cache.remove(&sha);
    }
    status
}

fn compile_baseline(
    shared: &Shared,
    tier: &Baseline,
    name: &str,
    wasm: &[u8],
    sha: &str,
) -> Result<(), RuntimeError> {
    if let Lookup::Hit(_) = tier.cache.load(&tier.engine, sha) {
        return Ok(());
    }
    let component = Component::new(&tier.engine, wasm).map_err(|e| RuntimeError::Compile {
        component: name.to_owned(),
        reason: format!("{e:#}"),
    })?;
    shared
        .stats
        .baseline_compiled
        .fetch_add(1, Ordering::Relaxed);
    let internal = |what: &str, e: &dyn std::fmt::Display| RuntimeError::Internal {
        reason: format!("{what} the baseline code of `{name}`: {e}"),
    };
    let artifact = component
        .serialize()
        .map_err(|e| internal("serializing", &e))?;
    // Not synced to disk: it lives until the optimized code is stored, and
    // a torn entry fails its checksum and is not used.
    tier.cache
        .store_unsynced(sha, &artifact)
        .map_err(|e| internal("storing", &e))
}

fn compile(shared: &Shared, name: &str, wasm: &[u8]) -> Result<Component, RuntimeError> {
    let component = Component::new(&shared.engine, wasm).map_err(|e| RuntimeError::Compile {
        component: name.to_owned(),
        reason: format!("{e:#}"),
    })?;
    shared.stats.compiled.fetch_add(1, Ordering::Relaxed);
    Ok(component)
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
