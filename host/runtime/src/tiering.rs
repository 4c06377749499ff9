//! Compiling on a cache miss with the [`crate::ExternalCompiler`], in tiers.
//!
//! The compiler runs on a thread of its own while the preparing thread waits
//! for its first word. A tiered compiler puts baseline code in the cache
//! first and says so; if a call is waiting for the component then (or starts
//! waiting before the optimized code is there), the baseline code is loaded,
//! linked and handed to the preparing thread, and calls run it. When the
//! compiler is done, the same thread swaps in the optimized code and lets
//! the baseline code go: it is freed when the last call running it ends, and
//! the baseline tier (Winch's engine and linker) with the last baseline code.
//! Baseline code nobody waits for (a background warm-up) is never loaded, so
//! it costs the host no memory.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard, Weak, mpsc};
use std::time::Instant;

use wasmtime::component::Component;

use crate::cache::Lookup;
use crate::compat::ComponentWorld;
use crate::component::{BaselineHeld, CacheStatus, Inner, Ready};
use crate::error::RuntimeError;
use crate::prepare::{baseline, compile_and_store, link, optimizing};
use crate::runtime::Shared;
use crate::{ExternalCompiler, ExternalFailure};

/// What the external compiler gave the preparing thread.
pub(crate) enum Elsewhere {
    /// Baseline code, linked and held by the component; the optimized code
    /// follows.
    Baseline,
    /// The optimized code, loaded from the cache.
    Optimized(Component),
    /// Nothing usable (no compiler, or it failed): compile here.
    Not,
    /// The compiler refused the component (a compile limit): its error.
    Refused(RuntimeError),
}

/// What the compile thread tells the preparing thread first.
enum Event {
    Baseline,
    Done(Result<(), ExternalFailure>),
}

/// A component's side of tiering: the calls waiting for its code, and where
/// its external compile stands.
#[derive(Default)]
pub(crate) struct Tiering {
    state: Mutex<State>,
    /// Notified when an upgrade ends (see [`Tiering::upgrading`]).
    pub(crate) upgraded: tokio::sync::Notify,
}

#[derive(Default)]
struct State {
    /// Calls waiting for the component's first code.
    waiting: usize,
    stage: Stage,
}

#[derive(Default)]
enum Stage {
    /// No baseline code (yet).
    #[default]
    None,
    /// Baseline code is in the cache; nobody has waited for it yet.
    Announced(Arc<Job>),
    /// The preparing thread took baseline code; the optimized code follows.
    Upgrading,
    /// Over: the optimized code (or none) is in place.
    Settled,
}

impl Tiering {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A call starts waiting for the component's first code: baseline code
    /// already announced is delivered now. Held until the wait is over.
    pub(crate) fn call_waits(&self) -> Waiting<'_> {
        let mut state = self.lock();
        state.waiting += 1;
        if let Stage::Announced(job) = &state.stage {
            let job = job.clone();
            job.deliver(&mut state);
        }
        Waiting(self)
    }

    /// Whether calls run baseline code while the optimized code compiles.
    pub(crate) fn upgrading(&self) -> bool {
        matches!(self.lock().stage, Stage::Upgrading)
    }

    fn settle(&self) {
        self.lock().stage = Stage::Settled;
        self.upgraded.notify_waiters();
    }
}

/// Settles the tiering when dropped.
struct Settle<'a>(&'a Tiering);

impl Drop for Settle<'_> {
    fn drop(&mut self) {
        self.0.settle();
    }
}

/// A call waiting for the component's first code (see [`Tiering::call_waits`]).
pub(crate) struct Waiting<'a>(&'a Tiering);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.lock().waiting -= 1;
    }
}

/// Have the configured external compiler fill the cache, on a thread of its
/// own, and wait for its first word: baseline code to run now, or the end.
pub(crate) fn compile_elsewhere(
    inner: &Arc<Inner>,
    wasm: &[u8],
    sha: &str,
    start: Instant,
) -> Elsewhere {
    let shared = &inner.shared;
    let Some(compiler) = shared.config.external_compiler.clone() else {
        return Elsewhere::Not;
    };
    let (events, first) = mpsc::channel();
    let job = Arc::new(Job {
        component: Arc::downgrade(inner),
        shared: shared.clone(),
        name: inner.name.clone(),
        world: inner.world,
        sha: sha.to_owned(),
        start,
        events,
    });
    let wasm = wasm.to_vec();
    let spawned = std::thread::Builder::new()
        .name("warden-compile".into())
        .spawn(move || job.run(&*compiler, &wasm));
    let name = &inner.name;
    if let Err(error) = spawned {
        tracing::warn!(component = %name, %error, "could not start the compile thread; compiling here");
        return Elsewhere::Not;
    }
    match first.recv() {
        Ok(Event::Baseline) => {
            shared.stats.baseline_served.fetch_add(1, Ordering::Relaxed);
            Elsewhere::Baseline
        }
        Ok(Event::Done(Ok(()))) => match load_optimized(shared, sha) {
            Ok(component) => Elsewhere::Optimized(component),
            Err(reason) => {
                tracing::warn!(component = %name, %reason, "compiling here");
                Elsewhere::Not
            }
        },
        Ok(Event::Done(Err(ExternalFailure::Unavailable(reason)))) => {
            tracing::warn!(component = %name, %reason, "the external compiler failed; compiling here");
            Elsewhere::Not
        }
        Ok(Event::Done(Err(ExternalFailure::Refused(error)))) => Elsewhere::Refused(error),
        Err(_) => {
            tracing::warn!(component = %name, "the compile thread ended without a word; compiling here");
            Elsewhere::Not
        }
    }
}

/// The external compiler's optimized code for the component of `sha`.
fn load_optimized(shared: &Shared, sha: &str) -> Result<Component, String> {
    let cache = shared.cache.as_ref().ok_or("the runtime has no cache")?;
    match cache.load(&shared.engine, sha) {
        Lookup::Hit(component) => {
            shared
                .stats
                .compiled_external
                .fetch_add(1, Ordering::Relaxed);
            Ok(component)
        }
        Lookup::Miss => Err("the external compiler left no cache entry for this engine".into()),
        Lookup::Invalid(reason) => Err(format!(
            "the external compiler's cache entry is invalid: {reason}"
        )),
    }
}

/// One external compilation, run on its own thread.
struct Job {
    /// The component being prepared (gone if it was dropped meanwhile).
    component: Weak<Inner>,
    shared: Arc<Shared>,
    name: String,
    world: ComponentWorld,
    sha: String,
    start: Instant,
    /// To the preparing thread.
    events: mpsc::Sender<Event>,
}

impl Job {
    fn run(self: Arc<Self>, compiler: &dyn ExternalCompiler, wasm: &[u8]) {
        // A panic is an error like any other: the preparing thread must hear
        // the end (an announcement kept in the component holds its channel open).
        let compiled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            compiler.compile_checked(&self.name, wasm, &mut || self.announce())
        }))
        .unwrap_or_else(|_| {
            Err(ExternalFailure::Unavailable(
                "the external compiler panicked".into(),
            ))
        });
        let Some(component) = self.component.upgrade() else {
            return;
        };
        let mut state = component.tiering.lock();
        match std::mem::replace(&mut state.stage, Stage::Settled) {
            Stage::Upgrading => {
                state.stage = Stage::Upgrading;
                drop(state);
                self.upgrade(&component, compiled, wasm);
            }
            // Nobody took baseline code: the preparing thread takes the end.
            _ => {
                drop(state);
                let _ = self.events.send(Event::Done(compiled));
            }
        }
    }

    /// The compiler put baseline code in the cache: deliver it if a call
    /// waits, else keep it for the first call that does.
    fn announce(self: &Arc<Self>) {
        let Some(component) = self.component.upgrade() else {
            return;
        };
        let mut state = component.tiering.lock();
        if !matches!(state.stage, Stage::None) {
            return;
        }
        if state.waiting > 0 {
            self.deliver(&mut state);
        } else {
            state.stage = Stage::Announced(self.clone());
        }
    }

    /// Load and link the baseline code, give it to the component and tell
    /// the preparing thread (under the component's tiering lock). If it is
    /// not there or does not link (logged), the preparing thread waits for
    /// the optimized code.
    fn deliver(&self, state: &mut State) {
        state.stage = Stage::None;
        let Some(component) = self.component.upgrade() else {
            return;
        };
        let Some(ready) = self.baseline() else {
            return;
        };
        // In place before the preparing thread hears of it.
        component.hold_baseline(Some(Arc::new(ready)));
        if self.events.send(Event::Baseline).is_ok() {
            state.stage = Stage::Upgrading;
        } else {
            drop(component.hold_baseline(None));
        }
    }

    fn baseline(&self) -> Option<Ready> {
        let tier = self.shared.baseline()?;
        let component = match tier.cache.load(&tier.engine, &self.sha) {
            Lookup::Hit(component) => component,
            Lookup::Miss => {
                tracing::debug!(component = %self.name, "no baseline code in the cache");
                return None;
            }
            Lookup::Invalid(reason) => {
                tracing::warn!(component = %self.name, %reason, "unusable baseline code");
                return None;
            }
        };
        let linked = link(
            &self.shared,
            baseline(&tier),
            &self.name,
            self.world,
            component,
            CacheStatus::Baseline,
            self.start,
        );
        let mut ready = linked
            .inspect_err(|error| tracing::warn!(component = %self.name, %error, "baseline code does not link"))
            .ok()?;
        ready.held = Some(BaselineHeld::new(&self.shared.stats, tier));
        Some(ready)
    }

    /// Swap in the optimized code once the compiler is done, or compile it
    /// here if the compiler left none (calls run baseline code meanwhile).
    fn upgrade(&self, component: &Inner, compiled: Result<(), ExternalFailure>, wasm: &[u8]) {
        // Settled whatever happens, a panic included: a warm-up waits for it.
        let _settle = Settle(&component.tiering);
        let shared = &self.shared;
        let loaded = match compiled {
            Ok(()) => load_optimized(shared, &self.sha),
            Err(ExternalFailure::Unavailable(reason)) => Err(reason),
            // Refused (a compile limit): never compiled here instead; calls
            // keep the baseline code, which compiled within the limits.
            Err(ExternalFailure::Refused(error)) => {
                tracing::warn!(component = %self.name, %error, "no optimized code; calls keep running baseline code");
                return;
            }
        };
        let code = loaded
            .map(|code| (code, CacheStatus::External))
            .or_else(|reason| {
                tracing::warn!(component = %self.name, %reason, "compiling the optimized code here");
                compile_and_store(shared, &self.name, wasm, &self.sha, CacheStatus::Compiled)
            });
        let ready = code.and_then(|(code, status)| {
            let tier = optimizing(shared);
            link(
                shared, tier, &self.name, self.world, code, status, self.start,
            )
        });
        match ready {
            Ok(ready) => {
                let _ = component.optimized.set(Arc::new(ready));
                // Let the baseline code go: calls still running it hold it
                // until they end, and then its memory is returned.
                drop(component.hold_baseline(None));
            }
            Err(error) => {
                tracing::warn!(component = %self.name, %error, "no optimized code; calls keep running baseline code");
            }
        }
    }
}
