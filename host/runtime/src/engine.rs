//! The one engine of a runtime: component model, fuel, epochs, allocator; and its ticker.

use std::sync::Arc;
use std::time::Duration;

use wasmtime::{
    Config, Enabled, Engine, EngineWeak, InstanceAllocationStrategy, PoolingAllocationConfig,
    Strategy,
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

/// The engine of baseline code (Winch): the same limits and features as the
/// runtime's own engine, compiled an order of magnitude faster into slower
/// code. Only the first calls of a component run it (see
/// [`crate::ExternalCompiler::compile_tiered`]), so it allocates on demand
/// and reserves no pool.
///
/// Only on x86-64, where Winch is in wasmtime's first tier of support (the
/// tier Cranelift is in); elsewhere there is no baseline code.
pub(crate) fn build_baseline(config: &RuntimeConfig) -> Result<Engine, RuntimeError> {
    if !cfg!(target_arch = "x86_64") {
        return Err(RuntimeError::Engine {
            reason: "the baseline compiler is used on x86-64 only".into(),
        });
    }
    let mut wasm = base(config);
    // One thread: it is quick, and it starts no compiler threads that the
    // optimizing compile after it would inherit at this priority.
    wasm.strategy(Strategy::Winch).parallel_compilation(false);
    Engine::new(&wasm).map_err(|e| RuntimeError::Engine {
        reason: format!("the baseline compiler: {e:#}"),
    })
}

fn with(
    config: &RuntimeConfig,
    pool: Option<PoolingAllocationConfig>,
) -> Result<Engine, RuntimeError> {
    let mut wasm = base(config);
    if let Some(pool) = pool {
        wasm.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    }
    Engine::new(&wasm).map_err(|e| RuntimeError::Engine {
        reason: format!("{e:#}"),
    })
}

fn base(config: &RuntimeConfig) -> Config {
    let mut wasm = Config::new();
    wasm.wasm_component_model(true)
        .consume_fuel(config.fuel_metering)
        .epoch_interruption(true)
        .max_wasm_stack(config.max_wasm_stack)
        .async_stack_size(config.max_wasm_stack + (1 << 20))
        // One compiling thread per component unless asked: a cold `serve`
        // compiling in-process with a pool peaked at twice the warm RSS.
        .parallel_compilation(config.parallel_compilation);
    wasm
}

/// How long the ticker keeps ticking after the last guest returned: calls
/// that follow each other closely then find it running and wake nobody,
/// while an idle host still parks it within this time.
const TICKER_GRACE: Duration = Duration::from_millis(50);

/// The epoch ticker's switch: it advances the engine's epoch while a guest
/// may be running (a [`Busy`] guard is held) and for [`TICKER_GRACE`] after,
/// and otherwise sleeps on a condition variable, so an idle host wakes up
/// for nothing.
///
/// Epoch deadlines are relative (`set_epoch_deadline(1)` means "at the next
/// tick"), so a parked ticker changes no guest's time budget: every store
/// that runs guest code holds a guard from before its deadline is set until
/// the guest returns.
#[derive(Default)]
pub(crate) struct Ticker {
    state: std::sync::Mutex<TickerState>,
    wake: std::sync::Condvar,
    /// Epochs advanced so far (slices of CPU are told by it, and tests
    /// observe the parking through it).
    ticks: std::sync::atomic::AtomicU64,
    /// The baseline engine while there is one: its epoch advances with the
    /// runtime's own.
    baseline: std::sync::Mutex<Option<EngineWeak>>,
}

impl std::fmt::Debug for Ticker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ticker")
            .field("state", &self.state)
            .field("ticks", &self.ticks)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Default)]
struct TickerState {
    busy: usize,
    closed: bool,
    /// The ticker waits on the condition variable (only then is it notified).
    parked: bool,
    /// When the last guard was dropped.
    idle_since: Option<std::time::Instant>,
}

/// Keeps the ticker running while held.
#[derive(Debug)]
pub(crate) struct Busy(Arc<Ticker>);

impl Drop for Busy {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.busy -= 1;
        if state.busy == 0 {
            state.idle_since = Some(std::time::Instant::now());
        }
    }
}

impl Ticker {
    fn lock(&self) -> std::sync::MutexGuard<'_, TickerState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Run the ticker until the guard is dropped.
    pub(crate) fn busy(self: &Arc<Self>) -> Busy {
        let mut state = self.lock();
        state.busy += 1;
        if state.parked {
            state.parked = false;
            self.wake.notify_one();
        }
        Busy(self.clone())
    }

    /// Advance `engine`'s epoch too from now on (while it lives; it replaces
    /// the engine given before).
    pub(crate) fn also_tick(&self, engine: &Engine) {
        *self.baseline.lock().unwrap_or_else(|e| e.into_inner()) = Some(engine.weak());
    }

    pub(crate) fn baseline(&self) -> Option<Engine> {
        let weak = self.baseline.lock().unwrap_or_else(|e| e.into_inner());
        weak.as_ref()?.upgrade()
    }

    /// Stop the ticker thread for good.
    pub(crate) fn close(&self) {
        self.lock().closed = true;
        self.wake.notify_one();
    }

    /// Epochs advanced so far (counted just before the epoch moves; a
    /// resumption that falls between the two misses one slice at most).
    pub(crate) fn ticks(&self) -> u64 {
        self.ticks.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Count a tick, as the ticker thread does.
    #[cfg(test)]
    pub(crate) fn advance(&self) {
        self.ticks
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Block while nothing runs and the grace after the last call is over;
    /// `false` once closed.
    fn wait_for_work(&self) -> bool {
        let mut state = self.lock();
        loop {
            if state.closed {
                return false;
            }
            let in_grace = state
                .idle_since
                .is_some_and(|since| since.elapsed() < TICKER_GRACE);
            if state.busy > 0 || in_grace {
                return true;
            }
            state.parked = true;
            state = self.wake.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// Start the thread that advances the engine's epoch every `tick` while
/// `ticker` says a guest may run. It holds only a weak reference to the
/// engine and ends once the ticker is closed or the engine is dropped.
pub(crate) fn spawn_ticker(
    engine: EngineWeak,
    tick: Duration,
    ticker: Arc<Ticker>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("warden-epoch".into())
        .spawn(move || {
            while ticker.wait_for_work() {
                std::thread::sleep(tick);
                let Some(engine) = engine.upgrade() else {
                    break;
                };
                ticker
                    .ticks
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                engine.increment_epoch();
                if let Some(baseline) = ticker.baseline() {
                    baseline.increment_epoch();
                }
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticker_ends_when_the_engine_is_dropped_or_it_is_closed() {
        let engine = Engine::default();
        let ticker = Arc::new(Ticker::default());
        let thread = spawn_ticker(engine.weak(), Duration::from_millis(1), ticker.clone()).unwrap();
        let busy = ticker.busy();
        std::thread::sleep(Duration::from_millis(5));
        assert!(!thread.is_finished());
        drop(engine);
        thread.join().expect("ticker exits cleanly");
        drop(busy);
        // Parked (nothing runs), it ends when closed.
        let engine = Engine::default();
        let ticker = Arc::new(Ticker::default());
        let thread = spawn_ticker(engine.weak(), Duration::from_millis(1), ticker.clone()).unwrap();
        ticker.close();
        thread.join().expect("a closed ticker exits");
    }

    #[test]
    fn ticker_advances_only_while_a_guest_may_run() {
        let engine = Engine::default();
        let ticker = Arc::new(Ticker::default());
        let _thread =
            spawn_ticker(engine.weak(), Duration::from_millis(1), ticker.clone()).unwrap();
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(ticker.ticks(), 0, "no tick without a running guest");
        let busy = ticker.busy();
        while ticker.ticks() < 3 {
            std::thread::sleep(Duration::from_millis(1));
        }
        drop(busy);
        // It parks once the grace after the last guard is over: from then
        // on at most the tick already under way lands.
        std::thread::sleep(TICKER_GRACE + Duration::from_millis(20));
        let parked = ticker.ticks();
        std::thread::sleep(Duration::from_millis(30));
        assert!(
            ticker.ticks() <= parked + 1,
            "{} > {parked} + 1",
            ticker.ticks()
        );
        assert!(
            ticker.lock().parked,
            "the ticker waits on its condition variable"
        );
        ticker.close();
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
