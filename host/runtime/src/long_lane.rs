//! The long-call lane: where a call that keeps burning CPU finishes, so the
//! executor it started on stays free for new calls.
//!
//! Every call starts on its caller's executor (no hand-off for the cheap
//! calls that are most of them). Guest code yields to that executor at every
//! epoch tick; once a call has run on a CPU across [`LONG_CALL_SLICES`]
//! ticks it is marked long, and at its next yield [`Handoff`] moves the call's future — the
//! wasmtime fiber, its store and its limits — to this lane's own Tokio
//! runtime, where long calls take turns of [`LONG_CALL_TURN_TICKS`] ticks. A new call then
//! waits for at most the tick under way on its executor, not for a round of
//! slices of every CPU-bound call (measured by `cargo xtask bench-mcp
//! --fairness`).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::slices::SliceClock;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use tokio::task::JoinHandle;

/// Epoch ticks of guest code after which a call counts as long. Two, so a
/// call that merely straddles one tick boundary stays where it is. A tick
/// after the first counts only if it came since the call was last resumed
/// with the guest's thread on a CPU most of that time (see `slices.rs`): a
/// call that awaited a host call, or whose thread was preempted or blocked,
/// is not long for it.
pub const LONG_CALL_SLICES: u32 = 2;

/// Epoch ticks a long call runs between two yields: long calls take turns
/// among themselves, where a turn as short as a tick would spend more on
/// switching than it buys (the deadline is still checked at each yield).
pub(crate) const LONG_CALL_TURN_TICKS: u64 = 5;

/// How much less the lane's threads get of a busy CPU than the threads
/// serving calls (`nice` 10: a tenth of the weight of nice 0 on Linux).
/// The lane has a thread per core, so CPU-bound calls use every core when
/// nothing else wants one; a new call's thread still wins the CPU at once.
const LONG_CALL_NICENESS: i32 = 10;

/// The lane's runtime, started at the first long call.
pub(crate) struct LongLane {
    threads: usize,
    runtime: OnceLock<Option<tokio::runtime::Runtime>>,
    moved: AtomicU64,
}

impl std::fmt::Debug for LongLane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LongLane")
            .field("threads", &self.threads)
            .field("moved", &self.moved)
            .finish_non_exhaustive()
    }
}

impl LongLane {
    pub(crate) fn new(threads: usize) -> LongLane {
        LongLane {
            threads,
            runtime: OnceLock::new(),
            moved: AtomicU64::new(0),
        }
    }

    /// Calls moved to the lane so far.
    pub(crate) fn moved(&self) -> u64 {
        self.moved.load(Ordering::Relaxed)
    }

    fn handle(&self) -> Option<&tokio::runtime::Handle> {
        if self.threads == 0 {
            return None;
        }
        let runtime = self.runtime.get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(self.threads)
                .thread_name("warden-long-call")
                .on_thread_start(yield_to_serving)
                // Every task here is a CPU-bound guest yielding each tick:
                // look at I/O and timers between any two of them.
                .event_interval(1)
                .enable_all()
                .build()
                .inspect_err(|error| {
                    tracing::warn!(%error, "no long-call lane; long calls stay where they started");
                })
                .ok()
        });
        runtime.as_ref().map(|r| r.handle())
    }
}

/// Lower the calling thread's scheduling priority (per thread on Linux);
/// where that fails the lane runs at normal priority and says so once.
fn yield_to_serving() {
    if let Err(error) = rustix::process::nice(LONG_CALL_NICENESS) {
        static WARNED: std::sync::Once = std::sync::Once::new();
        WARNED.call_once(|| {
            tracing::warn!(%error, "long-call threads keep their priority");
        });
    }
}

impl Drop for LongLane {
    fn drop(&mut self) {
        // Dropped wherever the last runtime handle goes, possibly inside
        // another Tokio runtime: never block there.
        if let Some(Some(runtime)) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Runs a call's future where it started until its `clock` says it is
/// long, then on the long-call lane; each resumption where it started is
/// timed ([`SliceClock::resumed`]). Dropping it drops the call wherever it
/// runs. `None` only if the lane's runtime stopped under a moved call (the
/// host is going away).
pub(crate) struct Handoff<F: Future> {
    state: State<F>,
    clock: Arc<SliceClock>,
    lane: Arc<LongLane>,
}

enum State<F: Future> {
    Here(Pin<Box<F>>),
    Moved(JoinHandle<F::Output>),
    Done,
}

impl<F> Handoff<F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    pub(crate) fn new(future: F, clock: Arc<SliceClock>, lane: Arc<LongLane>) -> Self {
        Handoff {
            state: State::Here(Box::pin(future)),
            clock,
            lane,
        }
    }
}

impl<F> Future for Handoff<F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    type Output = Option<F::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<F::Output>> {
        let this = self.get_mut();
        loop {
            match &mut this.state {
                State::Here(future) => {
                    this.clock.resumed();
                    if let Poll::Ready(output) = future.as_mut().poll(cx) {
                        this.state = State::Done;
                        return Poll::Ready(Some(output));
                    }
                    if !this.clock.is_long() {
                        return Poll::Pending;
                    }
                    let Some(handle) = this.lane.handle() else {
                        return Poll::Pending;
                    };
                    let State::Here(future) = std::mem::replace(&mut this.state, State::Done)
                    else {
                        unreachable!("matched above")
                    };
                    this.lane.moved.fetch_add(1, Ordering::Relaxed);
                    this.state = State::Moved(handle.spawn(future));
                }
                State::Moved(handle) => {
                    let Poll::Ready(joined) = Pin::new(handle).poll(cx) else {
                        return Poll::Pending;
                    };
                    this.state = State::Done;
                    match joined {
                        Ok(output) => return Poll::Ready(Some(output)),
                        // A panic in the call is the caller's, as if it ran here.
                        Err(error) if error.is_panic() => {
                            std::panic::resume_unwind(error.into_panic())
                        }
                        // Only the lane's runtime shutting down cancels a task.
                        Err(_) => return Poll::Ready(None),
                    }
                }
                State::Done => panic!("Handoff polled after it finished"),
            }
        }
    }
}

impl<F: Future> Drop for Handoff<F> {
    fn drop(&mut self) {
        if let State::Moved(handle) = &self.state {
            handle.abort();
        }
    }
}
