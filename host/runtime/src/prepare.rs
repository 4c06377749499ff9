//! Preparing a component's code: load it from the cache or compile it, check
//! its world, imports and exports, link it, and probe a compatibility
//! component's schema. Runs once per installed component (see
//! [`crate::InstalledComponent::prepare`]).

use std::sync::atomic::Ordering;
use std::time::Instant;

use wasmtime::Engine;
use wasmtime::component::Component;

use crate::bindings::SandboxedToolPre;
use crate::cache::{Lookup, sha256_hex};
use crate::compat::ComponentWorld;
use crate::component::{CacheStatus, InstallReport, Prepared, Ready};
use crate::error::RuntimeError;
use crate::runtime::Shared;

/// Prepare the code of component `name`, whose exports said `world`.
pub(crate) fn prepare(
    shared: &Shared,
    name: &str,
    world: ComponentWorld,
    wasm: &[u8],
) -> Result<Ready, RuntimeError> {
    let start = Instant::now();
    let (component, cache) = load(shared, name, wasm)?;
    let compiled_world = crate::compat::detect(&shared.engine, name, &component)?;
    if compiled_world != world {
        return Err(RuntimeError::ExportMissing {
            component: name.to_owned(),
            reason: format!(
                "its exports read as the {world} world before compiling and as {compiled_world} after"
            ),
        });
    }
    check_imports(&shared.engine, name, &component, world)?;
    let pre = shared
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
        ComponentWorld::Warden => Prepared::Warden(SandboxedToolPre::new(pre).map_err(missing)?),
        ComponentWorld::NearAgent => {
            let pre = crate::compat::call::Pre::new(pre).map_err(missing)?;
            let _busy = shared.ticker.busy();
            crate::compat::probe::check_schema(&shared.engine, &shared.config, name, &pre)?;
            Prepared::NearAgent(pre)
        }
    };
    let report = InstallReport {
        cache,
        elapsed: start.elapsed(),
    };
    tracing::debug!(component = %name, cache = ?report.cache, elapsed_ms = report.elapsed.as_millis() as u64, "component prepared");
    Ok(Ready { pre, report })
}

fn load(
    shared: &Shared,
    name: &str,
    wasm: &[u8],
) -> Result<(Component, CacheStatus), RuntimeError> {
    let engine = &shared.engine;
    let Some(cache) = &shared.cache else {
        return Ok((compile(shared, name, wasm)?, CacheStatus::Disabled));
    };
    let sha = sha256_hex(wasm);
    let rebuilt = match cache.load(engine, &sha) {
        Lookup::Hit(component) => {
            shared.stats.cache_hits.fetch_add(1, Ordering::Relaxed);
            return Ok((component, CacheStatus::Hit));
        }
        Lookup::Miss => false,
        Lookup::Invalid(reason) => {
            tracing::warn!(component = %name, %reason, "rebuilding cache entry");
            shared.stats.cache_rebuilt.fetch_add(1, Ordering::Relaxed);
            true
        }
    };
    if !rebuilt && let Some(component) = compile_elsewhere(shared, name, wasm, &sha) {
        return Ok((component, CacheStatus::External));
    }
    let component = compile(shared, name, wasm)?;
    match component.serialize() {
        Ok(artifact) => {
            if let Err(error) = cache.store(&sha, &artifact) {
                tracing::warn!(component = %name, %error, "could not write cache entry");
            }
        }
        Err(error) => tracing::warn!(component = %name, %error, "could not serialize"),
    }
    let status = if rebuilt {
        CacheStatus::Rebuilt
    } else {
        CacheStatus::Compiled
    };
    Ok((component, status))
}

/// Have the configured external compiler fill the cache, then load the
/// entry; `None` (with a warning) when there is no compiler or no usable
/// entry came of it, and the caller compiles here.
fn compile_elsewhere(shared: &Shared, name: &str, wasm: &[u8], sha: &str) -> Option<Component> {
    let compiler = shared.config.external_compiler.as_ref()?;
    let cache = shared.cache.as_ref()?;
    if let Err(reason) = compiler.compile(name, wasm) {
        tracing::warn!(component = %name, %reason, "the external compiler failed; compiling here");
        return None;
    }
    match cache.load(&shared.engine, sha) {
        Lookup::Hit(component) => {
            shared
                .stats
                .compiled_external
                .fetch_add(1, Ordering::Relaxed);
            Some(component)
        }
        Lookup::Miss => {
            tracing::warn!(component = %name, "the external compiler left no cache entry for this engine; compiling here");
            None
        }
        Lookup::Invalid(reason) => {
            tracing::warn!(component = %name, %reason, "the external compiler's cache entry is invalid; compiling here");
            None
        }
    }
}

/// Compile `wasm` into the cache unless it is there already (what an
/// [`crate::ExternalCompiler`] runs in its own process).
pub(crate) fn compile_to_cache(
    shared: &Shared,
    name: &str,
    wasm: &[u8],
) -> Result<CacheStatus, RuntimeError> {
    if shared.cache.is_none() {
        return Err(RuntimeError::InvalidConfig {
            reason: "compiling into the cache needs a cache directory".into(),
        });
    }
    load(shared, name, wasm).map(|(_, status)| status)
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
