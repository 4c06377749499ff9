//! What to install ([`ComponentSpec`]) and what installing yields ([`InstalledComponent`]).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::Value;

use crate::bindings::{v0_1, v0_2};
use crate::compat::ComponentWorld;
use crate::config::{LimitOverrides, Limits, RuntimeConfig};
use crate::error::RuntimeError;
use crate::runtime::{Baseline, Counters, Shared};
use crate::state::CallState;
use crate::tiering::Tiering;
use warden_core::schema::{Formats, SchemaCheck};

/// A component to install and the capabilities it serves.
#[derive(Debug, Clone)]
pub struct ComponentSpec<'a> {
    /// Name for errors and logs (usually the extension id).
    pub name: String,
    /// The component binary.
    pub wasm: Cow<'a, [u8]>,
    /// The capabilities (tools) the component serves.
    pub capabilities: Vec<CapabilitySpec>,
    /// Hold the component's code to
    /// [`CompileLimits::max_code_bytes`](crate::CompileLimits::max_code_bytes)
    /// (the default). A host clears it only for code its vendor shipped;
    /// the compiler process's time and memory limits apply either way.
    pub bounded_code: bool,
}

impl<'a> ComponentSpec<'a> {
    /// A component named `name` with no capabilities yet.
    pub fn new(name: impl Into<String>, wasm: impl Into<Cow<'a, [u8]>>) -> Self {
        ComponentSpec {
            name: name.into(),
            wasm: wasm.into(),
            capabilities: Vec::new(),
            bounded_code: true,
        }
    }

    /// Exempt the component from the code size limit (see
    /// [`ComponentSpec::bounded_code`]): for code the host's vendor shipped.
    pub fn unbounded_code(mut self) -> Self {
        self.bounded_code = false;
        self
    }

    /// Add a capability.
    pub fn with_capability(mut self, capability: CapabilitySpec) -> Self {
        self.capabilities.push(capability);
        self
    }
}

/// One capability of a component: its id, schemas and limit requests.
#[derive(Debug, Clone, Default)]
pub struct CapabilitySpec {
    /// `<extension>.<name>`.
    pub id: String,
    /// Input schema; without one the input need only be JSON.
    pub input_schema: Option<Value>,
    /// Output schema; without one the output need only be JSON.
    pub output_schema: Option<Value>,
    /// The manifest's `[tools.limits]`, bounded by the host maxima.
    pub limits: LimitOverrides,
}

impl CapabilitySpec {
    /// A capability with no schemas and default limits.
    pub fn new(id: impl Into<String>) -> Self {
        CapabilitySpec {
            id: id.into(),
            ..CapabilitySpec::default()
        }
    }

    /// Set the input schema.
    pub fn input_schema(mut self, schema: Value) -> Self {
        self.input_schema = Some(schema);
        self
    }

    /// Set the output schema.
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// Set the limit requests.
    pub fn limits(mut self, limits: LimitOverrides) -> Self {
        self.limits = limits;
        self
    }
}

/// Where an installed component's compiled code came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheStatus {
    /// Deserialized from a verified cache entry; nothing was compiled.
    Hit,
    /// Compiled (no entry yet) and stored.
    Compiled,
    /// An invalid entry was found, recompiled and replaced.
    Rebuilt,
    /// Compiled; the runtime has no cache.
    Disabled,
    /// Compiled by the [`crate::ExternalCompiler`] into the cache, then
    /// loaded from it; nothing was compiled in this process.
    External,
    /// Baseline code the external compiler produced first; its optimized
    /// code replaces it when ready (then the status is `External`).
    Baseline,
}

/// How preparing a component went.
#[derive(Debug, Clone, Copy)]
pub struct InstallReport {
    /// Where the code came from.
    pub cache: CacheStatus,
    /// Time loading, checking and linking the code took.
    pub elapsed: Duration,
}

/// A capability with its compiled schemas and effective limits.
#[derive(Debug)]
pub(crate) struct Capability {
    pub(crate) input: Option<SchemaCheck>,
    pub(crate) output: Option<SchemaCheck>,
    pub(crate) limits: Limits,
    id: String,
}

impl Capability {
    pub(crate) fn compile(
        spec: &CapabilitySpec,
        config: &RuntimeConfig,
    ) -> Result<(String, Capability), RuntimeError> {
        let schema = |schema: &Option<Value>, which| {
            schema
                .as_ref()
                .map(|s| {
                    SchemaCheck::compile(s, Formats::Assert).map_err(|reason| {
                        RuntimeError::InvalidSchema {
                            capability_id: spec.id.clone(),
                            which,
                            reason,
                        }
                    })
                })
                .transpose()
        };
        let capability = Capability {
            input: schema(&spec.input_schema, "input")?,
            output: schema(&spec.output_schema, "output")?,
            limits: config
                .defaults
                .capped(&config.maxima)
                .with_overrides(&spec.limits, &config.maxima),
            id: spec.id.clone(),
        };
        Ok((spec.id.clone(), capability))
    }

    pub(crate) fn id(&self) -> &str {
        &self.id
    }
}

/// An installed component, ready to be called many times.
///
/// Its code is compiled (or loaded from the cache) and linked once: by
/// [`crate::Runtime::install`] before it returns, or — after
/// [`crate::Runtime::install_lazy`] — by whichever comes first of its first
/// call and [`InstalledComponent::prepare`]; concurrent first calls wait for
/// one compilation.
///
/// Cloning is cheap. Each call gets a fresh instance.
#[derive(Debug, Clone)]
pub struct InstalledComponent {
    pub(crate) inner: Arc<Inner>,
}

/// A linked component of either world, ready to instantiate.
pub(crate) enum Prepared {
    /// Warden's own world.
    Warden(v0_2::SandboxedToolPre<CallState>),
    /// Warden's first world, `warden:tool@0.1.0`.
    Warden01(v0_1::SandboxedToolPre<CallState>),
    /// The `near:agent@0.4.1` compatibility world.
    NearAgent(crate::compat::call::Pre),
}

/// The component's code once prepared, with how that went.
pub(crate) struct Ready {
    pub(crate) pre: Prepared,
    pub(crate) report: InstallReport,
    /// The engine the code was compiled for (a call's store must be of it).
    pub(crate) engine: wasmtime::Engine,
    /// Counted in [`crate::RuntimeStats::baseline_resident`] while it lives
    /// (baseline code only).
    pub(crate) held: Option<BaselineHeld>,
}

/// What preparing gave first.
pub(crate) enum First {
    /// The code calls run from now on.
    Final(Arc<Ready>),
    /// Baseline code, held in [`Inner::baseline`] until the optimized code
    /// replaces it.
    Baseline,
}

/// Baseline code being alive: counted in the runtime's statistics, and
/// keeping the baseline tier (its engine and linker) alive.
pub(crate) struct BaselineHeld {
    stats: Arc<Counters>,
    _tier: Arc<Baseline>,
}

impl BaselineHeld {
    pub(crate) fn new(stats: &Arc<Counters>, tier: Arc<Baseline>) -> Self {
        stats.baseline_resident.fetch_add(1, Ordering::Relaxed);
        BaselineHeld {
            stats: stats.clone(),
            _tier: tier,
        }
    }
}

impl Drop for BaselineHeld {
    fn drop(&mut self) {
        self.stats.baseline_resident.fetch_sub(1, Ordering::Relaxed);
    }
}

pub(crate) struct Inner {
    pub(crate) shared: Arc<Shared>,
    pub(crate) name: String,
    /// Read from the component's exports at install, before compiling.
    pub(crate) world: ComponentWorld,
    /// The binary, until it is prepared.
    wasm: Mutex<Option<Vec<u8>>>,
    /// Prepared once; an error is kept and returned to every later call.
    /// The code is shared with the calls running it, which keep the code
    /// they started on.
    ready: OnceLock<Result<First, RuntimeError>>,
    /// Baseline code calls run until the optimized code replaces it; then it
    /// is let go (freed when the calls still running it end).
    baseline: Mutex<Option<Arc<Ready>>>,
    /// The optimized code that replaced baseline code.
    pub(crate) optimized: OnceLock<Arc<Ready>>,
    /// Calls waiting for the first code, and the external compile's stage.
    pub(crate) tiering: Tiering,
    pub(crate) capabilities: HashMap<String, Capability>,
}

impl Inner {
    /// Hold `code` as the baseline code calls run (`None`: let it go). What
    /// was held is returned, to be dropped after the lock.
    pub(crate) fn hold_baseline(&self, code: Option<Arc<Ready>>) -> Option<Arc<Ready>> {
        let mut held = self.baseline.lock().unwrap_or_else(|e| e.into_inner());
        std::mem::replace(&mut *held, code)
    }

    fn held_baseline(&self) -> Option<Arc<Ready>> {
        self.baseline
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InstalledComponent")
            .field("name", &self.name)
            .field("world", &self.world)
            .field("capabilities", &self.capabilities.keys())
            .field("report", &current(self).map(|r| r.map(|r| r.report)))
            .finish_non_exhaustive()
    }
}

impl InstalledComponent {
    pub(crate) fn new(
        shared: Arc<Shared>,
        name: String,
        world: ComponentWorld,
        wasm: Vec<u8>,
        capabilities: HashMap<String, Capability>,
    ) -> Self {
        InstalledComponent {
            inner: Arc::new(Inner {
                shared,
                name,
                world,
                wasm: Mutex::new(Some(wasm)),
                ready: OnceLock::new(),
                baseline: Mutex::new(None),
                optimized: OnceLock::new(),
                tiering: Tiering::default(),
                capabilities,
            }),
        }
    }

    /// The component's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The world the component was built against, read from its exports.
    pub fn world(&self) -> ComponentWorld {
        self.inner.world
    }

    /// How preparing the code that calls run now went; `None` until it is
    /// prepared.
    pub fn report(&self) -> Option<InstallReport> {
        current(&self.inner)?.ok().map(|ready| ready.report)
    }

    /// Whether the code has been prepared (successfully or not).
    pub fn is_prepared(&self) -> bool {
        self.inner.ready.get().is_some()
    }

    /// Compile (or load from the cache), check and link the code now, on
    /// this thread, unless that is done already; concurrent callers wait for
    /// the one preparation. A failure is kept: every later call gets it.
    pub fn prepare(&self) -> Result<InstallReport, RuntimeError> {
        self.ready().map(|ready| ready.report)
    }

    /// [`Self::prepare`] on Tokio's blocking pool, so an async caller's
    /// thread keeps serving while the code compiles; when the first code was
    /// baseline code, it also waits until the optimized code replaced it (or
    /// failed to), so a host warming components up one at a time runs one
    /// compiler at a time.
    pub async fn prepare_async(&self) -> Result<InstallReport, RuntimeError> {
        self.ready_async(false).await?;
        let tiering = &self.inner.tiering;
        let mut upgraded = std::pin::pin!(tiering.upgraded.notified());
        upgraded.as_mut().enable();
        if tiering.upgrading() {
            upgraded.await;
        }
        self.ready().map(|ready| ready.report)
    }

    /// The prepared code, preparing it on the blocking pool first if needed;
    /// a `call` waiting for it gets baseline code as soon as there is some.
    pub(crate) async fn ready_async(&self, call: bool) -> Result<Arc<Ready>, RuntimeError> {
        if !self.is_prepared() {
            let this = self.clone();
            // The outcome is kept in `ready`; a panic while compiling is the
            // only thing that reaches the join error.
            tokio::task::spawn_blocking(move || {
                let _waiting = call.then(|| this.inner.tiering.call_waits());
                this.ready().map(|_| ())
            })
            .await
            .map_err(|e| RuntimeError::Internal {
                reason: format!("preparing `{}`: {e}", self.inner.name),
            })?
            .ok();
        }
        self.ready()
    }

    /// The code calls run now: the optimized code once it replaced baseline
    /// code, else what preparing gave.
    pub(crate) fn ready(&self) -> Result<Arc<Ready>, RuntimeError> {
        let inner = &self.inner;
        if let Some(optimized) = inner.optimized.get() {
            return Ok(optimized.clone());
        }
        let first = inner.ready.get_or_init(|| {
            let wasm = inner
                .wasm
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take()
                .ok_or_else(|| RuntimeError::Internal {
                    reason: format!("the code of `{}` is gone", inner.name),
                })?;
            crate::prepare::prepare(&self.inner, &wasm)
        });
        resolve(inner, first)
    }

    /// The effective limits of `capability_id` (before per-call overrides).
    pub fn limits(&self, capability_id: &str) -> Option<Limits> {
        self.inner.capabilities.get(capability_id).map(|c| c.limits)
    }
}

/// The code calls run now, if the component is prepared (never prepares).
fn current(inner: &Inner) -> Option<Result<Arc<Ready>, RuntimeError>> {
    if let Some(optimized) = inner.optimized.get() {
        return Some(Ok(optimized.clone()));
    }
    Some(resolve(inner, inner.ready.get()?))
}

/// The code calls run now, given what preparing gave first.
fn resolve(inner: &Inner, first: &Result<First, RuntimeError>) -> Result<Arc<Ready>, RuntimeError> {
    match first {
        Ok(First::Final(ready)) => Ok(ready.clone()),
        Err(error) => Err(error.clone()),
        // The optimized code is in place before the baseline code goes.
        Ok(First::Baseline) => inner
            .held_baseline()
            .or_else(|| inner.optimized.get().cloned())
            .ok_or_else(|| RuntimeError::Internal {
                reason: format!("the baseline code of `{}` is gone", inner.name),
            }),
    }
}
