//! The one engine of a runtime: component model, fuel, epochs, allocator; and its ticker.

use std::time::Duration;

use wasmtime::{
    Config, Enabled, Engine, EngineWeak, InstanceAllocationStrategy, PoolingAllocationConfig,
};

use crate::config::{Allocator, RuntimeConfig};
use crate::error::RuntimeError;

/// Core instances, memories and tables a pooled component may use.
const CORE_INSTANCES_PER_COMPONENT: u32 = 16;
const MEMORIES_PER_COMPONENT: u32 = 4;
const TABLES_PER_COMPONENT: u32 = 8;
/// Bytes of each pooled memory and table kept resident between calls (see
/// [`pool`]): the stack and heap a typical tool touches.
const KEEP_RESIDENT_BYTES: usize = 2 << 20;

/// The allocator an engine ended up with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActiveAllocator {
    /// The pooling allocator.
    Pooling,
    /// On-demand allocation.
    OnDemand,
}

/// Build the engine for `config`, falling back from pooling to on-demand
/// under [`Allocator::Auto`].
pub(crate) fn build(config: &RuntimeConfig) -> Result<(Engine, ActiveAllocator), RuntimeError> {
    validate(config)?;
    match config.allocator {
        Allocator::OnDemand => Ok((with(config, None)?, ActiveAllocator::OnDemand)),
        Allocator::Pooling => Ok((with(config, Some(pool(config)))?, ActiveAllocator::Pooling)),
        Allocator::Auto => match with(config, Some(pool(config))) {
            Ok(engine) => Ok((engine, ActiveAllocator::Pooling)),
            Err(error) => {
                tracing::warn!(%error, "pooling allocator unavailable; using on-demand allocation");
                Ok((with(config, None)?, ActiveAllocator::OnDemand))
            }
        },
    }
}

fn validate(config: &RuntimeConfig) -> Result<(), RuntimeError> {
    let invalid = |reason: &str| {
        Err(RuntimeError::InvalidConfig {
            reason: reason.to_owned(),
        })
    };
    if config.max_concurrent == 0 {
        return invalid("max_concurrent must be at least 1");
    }
    if config.epoch_tick.is_zero() {
        return invalid("epoch_tick must be positive");
    }
    if config.max_wasm_stack < 16 << 10 {
        return invalid("max_wasm_stack must be at least 16 KiB");
    }
    if config.memory_budget < config.defaults.memory_bytes {
        return invalid("memory_budget must be at least the default per-call memory limit");
    }
    if config.maxima.memory_bytes > 4 << 30 {
        return invalid("maxima.memory_bytes must be at most 4 GiB");
    }
    Ok(())
}

fn pool(config: &RuntimeConfig) -> PoolingAllocationConfig {
    let slots = config.max_concurrent;
    let mut pool = PoolingAllocationConfig::new();
    pool.total_component_instances(slots)
        .total_core_instances(slots.saturating_mul(CORE_INSTANCES_PER_COMPONENT))
        .total_memories(slots.saturating_mul(MEMORIES_PER_COMPONENT))
        .total_tables(slots.saturating_mul(TABLES_PER_COMPONENT))
        .total_stacks(slots)
        .max_core_instances_per_component(CORE_INSTANCES_PER_COMPONENT)
        .max_memories_per_component(MEMORIES_PER_COMPONENT)
        .max_tables_per_component(TABLES_PER_COMPONENT)
        // The limiter enforces the real per-call budget; the slot must fit the maximum.
        .max_memory_size(config.maxima.memory_bytes as usize)
        .max_unused_warm_slots(slots.min(100));
    // Where the kernel can report which pages a call dirtied (`PAGEMAP_SCAN`,
    // Linux 6.7+), reset only those in place and keep them mapped: the next
    // call in the slot takes no page faults and the reset needs no `madvise`.
    // Without it, keeping memory resident would mean a `memset` of the whole
    // kept range per call, which costs more than it saves.
    if PoolingAllocationConfig::is_pagemap_scan_available() {
        pool.pagemap_scan(Enabled::Yes)
            .linear_memory_keep_resident(KEEP_RESIDENT_BYTES)
            .table_keep_resident(KEEP_RESIDENT_BYTES);
    }
    pool
}

fn with(
    config: &RuntimeConfig,
    pool: Option<PoolingAllocationConfig>,
) -> Result<Engine, RuntimeError> {
    let mut wasm = Config::new();
    wasm.wasm_component_model(true)
        .consume_fuel(config.fuel_metering)
        .epoch_interruption(true)
        .max_wasm_stack(config.max_wasm_stack)
        .async_stack_size(config.max_wasm_stack + (1 << 20));
    if let Some(pool) = pool {
        wasm.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    }
    Engine::new(&wasm).map_err(|e| RuntimeError::Engine {
        reason: format!("{e:#}"),
    })
}

/// Start the thread that advances the engine's epoch every `tick`. It holds
/// only a weak reference and ends once every clone of the engine is dropped.
pub(crate) fn spawn_ticker(
    engine: EngineWeak,
    tick: Duration,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("warden-epoch".into())
        .spawn(move || {
            loop {
                std::thread::sleep(tick);
                match engine.upgrade() {
                    Some(engine) => engine.increment_epoch(),
                    None => break,
                }
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticker_ends_when_the_engine_is_dropped() {
        let engine = Engine::default();
        let ticker = spawn_ticker(engine.weak(), Duration::from_millis(1)).unwrap();
        std::thread::sleep(Duration::from_millis(5));
        assert!(!ticker.is_finished());
        drop(engine);
        ticker.join().expect("ticker exits cleanly");
    }

    #[test]
    fn zero_concurrency_is_refused() {
        let config = RuntimeConfig {
            max_concurrent: 0,
            ..RuntimeConfig::default()
        };
        let error = build(&config).unwrap_err();
        assert_eq!(error.code(), "invalid_config");
    }
}
