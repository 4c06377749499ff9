//! Which epoch ticks count as a call's slices of CPU.
//!
//! A call becomes long (and moves to the long-call lane) after
//! [`LONG_CALL_SLICES`](crate::LONG_CALL_SLICES) slices. A tick is seen
//! whenever the guest runs across it, but a guest whose thread the kernel
//! preempted (a loaded machine), or whose host call blocked the thread, sees
//! ticks without having used the CPU between them. So only the first tick
//! counts as it comes; every later one counts only if the guest's thread ran
//! on a CPU for at least half a tick since the call was last resumed. The
//! thread's CPU clock is read once per resumption and once per tick, and
//! only for calls that have seen a tick: a cheap call pays nothing.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

/// A call's slice count, shared by its epoch callback and [`Metered`].
#[derive(Debug)]
pub(crate) struct SliceClock {
    /// Set at the first tick: from then on every resumption is timed.
    ticked: AtomicBool,
    /// The thread's CPU clock, in ns, when the call was last resumed.
    resumed_at: AtomicU64,
    /// Least CPU between a resumption and a tick for the tick to count.
    least: u64,
}

impl SliceClock {
    pub(crate) fn new(tick: Duration) -> Arc<SliceClock> {
        Arc::new(SliceClock {
            ticked: AtomicBool::new(false),
            resumed_at: AtomicU64::new(0),
            least: u64::try_from(tick.as_nanos() / 2).unwrap_or(u64::MAX),
        })
    }

    /// A tick, seen by the call's epoch callback: whether it counts as a
    /// slice of CPU.
    pub(crate) fn tick_counts(&self) -> bool {
        if !self.ticked.swap(true, Ordering::Relaxed) {
            // The call was not timed before: count it, and time it from now
            // (the callback returns to the guest, or yields and is resumed).
            self.resumed();
            return true;
        }
        let Some(now) = thread_cpu_ns() else {
            return true;
        };
        let ran = now.saturating_sub(self.resumed_at.load(Ordering::Relaxed));
        self.resumed_at.store(now, Ordering::Relaxed);
        ran >= self.least
    }

    fn resumed(&self) {
        if let Some(now) = thread_cpu_ns() {
            self.resumed_at.store(now, Ordering::Relaxed);
        }
    }
}

/// The CPU time of the calling thread, in ns (`None` where there is no
/// such clock: every tick then counts).
fn thread_cpu_ns() -> Option<u64> {
    #[cfg(unix)]
    {
        let now = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
        let ns = u64::try_from(now.tv_sec).ok()?.checked_mul(1_000_000_000)?;
        ns.checked_add(u64::try_from(now.tv_nsec).ok()?)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// A call's future (pinned by its owner), timed from each resumption once it
/// has seen a tick.
pub(crate) struct Metered<F> {
    future: F,
    clock: Arc<SliceClock>,
}

impl<F: Future + Unpin> Metered<F> {
    pub(crate) fn new(future: F, clock: Arc<SliceClock>) -> Self {
        Metered { future, clock }
    }
}

impl<F: Future + Unpin> Future for Metered<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        if self.clock.ticked.load(Ordering::Relaxed) {
            self.clock.resumed();
        }
        Pin::new(&mut self.future).poll(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spin_cpu(at_least: Duration) {
        let start = thread_cpu_ns().expect("a thread CPU clock");
        while thread_cpu_ns().unwrap() - start < at_least.as_nanos() as u64 {
            std::hint::black_box(0);
        }
    }

    #[test]
    fn the_first_tick_counts_and_later_ones_only_with_cpu_behind_them() {
        let clock = SliceClock::new(Duration::from_millis(2));
        assert!(clock.tick_counts(), "the first tick");
        std::thread::sleep(Duration::from_millis(5));
        assert!(!clock.tick_counts(), "asleep, not on a CPU");
        spin_cpu(Duration::from_millis(1));
        assert!(clock.tick_counts(), "half a tick of CPU");
    }
}
