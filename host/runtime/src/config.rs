//! Host-level configuration: default limits, host maxima, allocator, cache, concurrency.

use std::path::PathBuf;
use std::time::Duration;

/// The default host-wide memory budget: 8 GiB of instance memory across all
/// running calls. Fixed rather than derived from the machine, so a host
/// behaves the same everywhere: it leaves two thirds of a 24 GiB machine to the
/// host process and the rest of the system, and holds 128 calls at the default
/// 64 MiB limit or 16 at the 512 MiB maximum (without a budget, 256 slots at
/// the maximum could reserve 128 GiB).
pub const DEFAULT_MEMORY_BUDGET: u64 = 8 << 30;

/// Limits one call runs under. Every limit is always on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Fuel (roughly, wasm instructions) per call.
    pub fuel: u64,
    /// Bytes of all linear memories plus tables (8 bytes an element) per instance.
    pub memory_bytes: u64,
    /// Wall-clock deadline of the guest's execution.
    pub timeout: Duration,
    /// Bytes of the output JSON text.
    pub max_output_bytes: u64,
    /// Log entries kept per call; later entries are counted and dropped.
    pub max_log_entries: u32,
    /// Bytes kept of each log entry (longer entries are truncated).
    pub max_log_entry_bytes: u32,
    /// HTTP requests a call may send; later ones get `limit-exceeded`.
    pub max_http_requests: u32,
}

impl Limits {
    /// The defaults every call runs under unless the host or the tool says otherwise.
    pub const DEFAULT: Limits = Limits {
        fuel: 1_000_000_000,
        memory_bytes: 64 << 20,
        timeout: Duration::from_secs(10),
        max_output_bytes: 1 << 20,
        max_log_entries: 256,
        max_log_entry_bytes: 4096,
        max_http_requests: 64,
    };

    /// The maxima a tool or a call may raise its limits to by default.
    pub const MAXIMA: Limits = Limits {
        fuel: 20_000_000_000,
        memory_bytes: 512 << 20,
        timeout: Duration::from_secs(120),
        max_output_bytes: 16 << 20,
        max_log_entries: 4096,
        max_log_entry_bytes: 64 << 10,
        max_http_requests: 1024,
    };

    /// `self` with each field capped by `maxima`.
    pub fn capped(self, maxima: &Limits) -> Limits {
        Limits {
            fuel: self.fuel.min(maxima.fuel),
            memory_bytes: self.memory_bytes.min(maxima.memory_bytes),
            timeout: self.timeout.min(maxima.timeout),
            max_output_bytes: self.max_output_bytes.min(maxima.max_output_bytes),
            max_log_entries: self.max_log_entries.min(maxima.max_log_entries),
            max_log_entry_bytes: self.max_log_entry_bytes.min(maxima.max_log_entry_bytes),
            max_http_requests: self.max_http_requests.min(maxima.max_http_requests),
        }
    }

    /// `self` with the fields `overrides` sets replaced, each capped by `maxima`.
    pub fn with_overrides(self, overrides: &LimitOverrides, maxima: &Limits) -> Limits {
        Limits {
            fuel: overrides.fuel.unwrap_or(self.fuel),
            memory_bytes: overrides.memory_bytes.unwrap_or(self.memory_bytes),
            timeout: overrides
                .timeout_ms
                .map_or(self.timeout, Duration::from_millis),
            max_output_bytes: overrides.max_output_bytes.unwrap_or(self.max_output_bytes),
            ..self
        }
        .capped(maxima)
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}

/// Per-tool (from the manifest's `[tools.limits]`) or per-call limit requests.
///
/// Each set field replaces the host default and is capped by the host maxima;
/// the fields mirror the manifest's `LimitOverrides`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LimitOverrides {
    /// Fuel per call.
    pub fuel: Option<u64>,
    /// Memory per instance, in bytes.
    pub memory_bytes: Option<u64>,
    /// Wall-clock deadline per call, in milliseconds.
    pub timeout_ms: Option<u64>,
    /// Bound on the output size, in bytes.
    pub max_output_bytes: Option<u64>,
}

/// Bounds on compiling one component. Compiling is superlinear in the size
/// of a function, so a component of a few huge functions (code a tool never
/// runs counts too) can hold a compiler for minutes and GiBs; these bound it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompileLimits {
    /// Bytes of function bodies (every core module's code section, nested
    /// ones included) a component may hold, checked before anything is
    /// compiled. Applies to components installed with
    /// [`ComponentSpec::bounded_code`](crate::ComponentSpec) set (the
    /// default; a host clears it only for code its vendor shipped).
    pub max_code_bytes: u64,
    /// Wall-clock time a compiler process may take for one component before
    /// it is killed (enforced by the [`crate::ExternalCompiler`]).
    pub timeout: Duration,
    /// Bytes of writable memory a compiler process may map (its data
    /// `rlimit`; enforced by the [`crate::ExternalCompiler`]).
    pub memory_bytes: u64,
}

impl CompileLimits {
    /// The defaults: far above any tool's code (the packages shipped with
    /// Warden hold well under 1 MiB of function bodies each), far below a
    /// compile bomb's.
    pub const DEFAULT: CompileLimits = CompileLimits {
        max_code_bytes: 16 << 20,
        timeout: Duration::from_secs(60),
        memory_bytes: 2 << 30,
    };
}

impl Default for CompileLimits {
    fn default() -> Self {
        CompileLimits::DEFAULT
    }
}

/// How instances get their memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Allocator {
    /// Pre-reserved slots, reused across calls (fastest instantiation).
    Pooling,
    /// Plain `mmap` per instance.
    OnDemand,
    /// Pooling, falling back to on-demand when the pool cannot be reserved.
    #[default]
    Auto,
}

/// Configuration of a [`crate::Runtime`].
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// Limits a call gets when neither the tool nor the call asks for others.
    pub defaults: Limits,
    /// Upper bounds on what a tool or a call may ask for.
    pub maxima: Limits,
    /// Directory of compiled artifacts; `None` compiles on every install.
    pub cache_dir: Option<PathBuf>,
    /// Bytes the compile cache may hold, every engine's entries together
    /// (an older Warden's too); past it the least recently used go.
    /// Default 1 GiB.
    pub cache_max_bytes: u64,
    /// Instance allocation strategy.
    pub allocator: Allocator,
    /// Calls executing at once; later calls wait in FIFO order.
    pub max_concurrent: u32,
    /// Bytes of instance memory all running calls may reserve together: each
    /// call reserves its whole memory limit while it runs. A call that does
    /// not fit beside the running ones waits in the queue (bounded by
    /// `queue_timeout`); one whose own limit exceeds the budget is refused as
    /// [`crate::RuntimeError::MemoryBudgetExceeded`]. Default
    /// [`DEFAULT_MEMORY_BUDGET`].
    pub memory_budget: u64,
    /// How long a call may wait for an execution slot and its share of the
    /// memory budget before it is refused as
    /// [`crate::RuntimeError::HostUnavailable`].
    pub queue_timeout: Duration,
    /// Epoch tick: the granularity of deadlines, of yielding to the
    /// executor, and of moving a CPU-bound call to the long-call lane (after
    /// [`LONG_CALL_SLICES`](crate::LONG_CALL_SLICES) ticks run on a CPU). The ticker runs
    /// only while calls run (and briefly after), so a short tick costs an idle
    /// host nothing.
    pub epoch_tick: Duration,
    /// Meter fuel. Off only for benchmarks; without it `fuel` is not enforced.
    pub fuel_metering: bool,
    /// Largest accepted input JSON text, in bytes.
    pub max_input_bytes: usize,
    /// Guest wasm stack, in bytes (recursion past it traps as a stack overflow).
    pub max_wasm_stack: usize,
    /// Threads of the long-call lane. A call still running guest code after
    /// [`LONG_CALL_SLICES`](crate::LONG_CALL_SLICES) epoch ticks on a CPU moves there
    /// and finishes on those threads, so the executor that started it stays
    /// free for new calls (a cheap call never waits behind CPU-bound ones).
    /// `0` keeps every call where it started. Default: one per core, so
    /// CPU-bound calls can use every core; the lane's threads run at a lower
    /// priority than the ones serving calls, so a new call is not delayed
    /// behind them.
    pub long_call_threads: usize,
    /// Compile a component's functions on a pool of threads, one per core.
    /// Off by default: a host compiles lazily or in the background beside
    /// serving, where a pool would take every core from the calls and hold
    /// compile memory in each thread. On in a process that only compiles
    /// (`warden compile-component`, at a lower priority than the host).
    pub parallel_compilation: bool,
    /// Compile components in another process on a cache miss (see
    /// [`ExternalCompiler`](crate::ExternalCompiler)); `None` compiles here.
    pub external_compiler: Option<std::sync::Arc<dyn crate::ExternalCompiler>>,
    /// Bounds on compiling a component: its code's size (checked here), the
    /// compiler process's time and memory (enforced by the external compiler).
    pub compile_limits: CompileLimits,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            defaults: Limits::DEFAULT,
            maxima: Limits::MAXIMA,
            cache_dir: None,
            cache_max_bytes: 1 << 30,
            allocator: Allocator::Auto,
            max_concurrent: 256,
            memory_budget: DEFAULT_MEMORY_BUDGET,
            queue_timeout: Duration::from_secs(30),
            epoch_tick: Duration::from_millis(1),
            fuel_metering: true,
            max_input_bytes: 1 << 20,
            max_wasm_stack: 512 << 10,
            long_call_threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            parallel_compilation: false,
            external_compiler: None,
            compile_limits: CompileLimits::DEFAULT,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_replace_defaults_and_are_capped_by_maxima() {
        let maxima = Limits {
            fuel: 1_000,
            memory_bytes: 1 << 20,
            ..Limits::MAXIMA
        };
        let overrides = LimitOverrides {
            fuel: Some(5_000),
            memory_bytes: Some(1 << 10),
            timeout_ms: Some(250),
            max_output_bytes: None,
        };
        let limits = Limits::DEFAULT.with_overrides(&overrides, &maxima);
        assert_eq!(limits.fuel, 1_000, "capped by the host maximum");
        assert_eq!(limits.memory_bytes, 1 << 10, "lowered below the default");
        assert_eq!(limits.timeout, Duration::from_millis(250));
        assert_eq!(limits.max_output_bytes, Limits::DEFAULT.max_output_bytes);
    }

    #[test]
    fn defaults_are_within_maxima() {
        assert_eq!(Limits::DEFAULT.capped(&Limits::MAXIMA), Limits::DEFAULT);
    }
}
