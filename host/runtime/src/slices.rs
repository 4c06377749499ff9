//! Which epoch ticks count as a call's slices of CPU.
//!
//! A call becomes long (and moves to the long-call lane) after
//! [`LONG_CALL_SLICES`](crate::LONG_CALL_SLICES) slices. A tick is seen
//! whenever the guest runs across it, but a guest whose thread the kernel
//! preempted (a loaded machine), or whose host call blocked the thread, sees
//! ticks without having used the CPU between them. So only the first tick
//! counts as it comes; every later one counts only if the guest's thread was
//! on a CPU for at least half the time since the call was last resumed (not
//! half a tick: a guest resumed late in a tick, behind other work on its
//! executor, runs only the rest of it, and must still count). The thread's
//! CPU clock and the time are read once per resumption and once per tick,
//! and only for calls that have seen a tick: a cheap call pays nothing.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Instant;

/// A call's slice count, shared by its epoch callback and [`Metered`].
#[derive(Debug)]
pub(crate) struct SliceClock {
    /// Set at the first tick: from then on every resumption is timed.
    ticked: AtomicBool,
    /// When the call was last resumed: the thread's CPU clock, and the time
    /// since `epoch`, in ns.
    resumed_cpu: AtomicU64,
    resumed_at: AtomicU64,
    epoch: Instant,
}

impl SliceClock {
    pub(crate) fn new() -> Arc<SliceClock> {
        Arc::new(SliceClock {
            ticked: AtomicBool::new(false),
            resumed_cpu: AtomicU64::new(0),
            resumed_at: AtomicU64::new(0),
            epoch: Instant::now(),
        })
    }

    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
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
        let Some(cpu) = thread_cpu_ns() else {
            return true;
        };
        let now = self.now();
        let on_cpu = cpu.saturating_sub(self.resumed_cpu.swap(cpu, Ordering::Relaxed));
        let since = now.saturating_sub(self.resumed_at.swap(now, Ordering::Relaxed));
        on_cpu >= since / 2
    }

    fn resumed(&self) {
        if let Some(cpu) = thread_cpu_ns() {
            self.resumed_cpu.store(cpu, Ordering::Relaxed);
            self.resumed_at.store(self.now(), Ordering::Relaxed);
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
    use std::time::Duration;

    fn spin_cpu(at_least: Duration) {
        let start = thread_cpu_ns().expect("a thread CPU clock");
        while thread_cpu_ns().unwrap() - start < at_least.as_nanos() as u64 {
            std::hint::black_box(0);
        }
    }

    #[cfg(unix)]
    #[test]
    fn the_first_tick_counts_and_later_ones_only_with_cpu_behind_them() {
        let clock = SliceClock::new();
        assert!(clock.tick_counts(), "the first tick");
        std::thread::sleep(Duration::from_millis(5));
        assert!(!clock.tick_counts(), "asleep, not on a CPU");
        spin_cpu(Duration::from_millis(1));
        assert!(clock.tick_counts(), "on a CPU all along");
        // Resumed late, behind other work: what ran since still counts.
        std::thread::sleep(Duration::from_millis(5));
        clock.resumed();
        spin_cpu(Duration::from_micros(300));
        assert!(clock.tick_counts(), "on a CPU since it was resumed");
    }
}
