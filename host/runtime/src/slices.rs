//! Which epoch ticks count as a call's slices of CPU.
//!
//! A call becomes long (and moves to the long-call lane) after
//! [`LONG_CALL_SLICES`](crate::LONG_CALL_SLICES) slices. A guest sees a tick
//! at its first epoch check past it, but it may not have run across it:
//! - a call resumed after awaiting a host call (an HTTP request) sees at once
//!   the ticks that passed while it waited;
//! - a guest whose thread the kernel preempted (a loaded machine), or whose
//!   host call blocked the thread, sees ticks without having used the CPU.
//!
//! So only the first tick counts as it comes. Every later one counts only
//! if it came after the call was last resumed, and if since then the guest's
//! thread was on a CPU for at least half the time and at least a quarter of
//! a tick. (Not half a tick: a guest resumed late in a tick, behind other
//! work on its executor, runs only the rest of it and must still count. One
//! that gets less than a quarter of every tick is not what keeps the
//! executor busy.) The thread's CPU clock and the time are read once per
//! resumption and once per tick, and only for calls that have seen a tick
//! and are not yet long: a cheap call reads no clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Instant;

use crate::engine::Ticker;
use crate::long_lane::LONG_CALL_SLICES;

/// A call's slices of CPU, counted by its epoch callback and timed from
/// each resumption by [`crate::long_lane::Handoff`], which moves the call
/// once it [`is_long`](SliceClock::is_long).
#[derive(Debug)]
pub(crate) struct SliceClock {
    ticker: Arc<Ticker>,
    /// Slices counted so far (up to [`LONG_CALL_SLICES`]): resumptions are
    /// timed from the first until the call is long.
    slices: AtomicU32,
    /// When the call was last resumed: the ticker's count, the thread's CPU
    /// clock, and the time since `epoch`, in ns.
    resumed_tick: AtomicU64,
    resumed_cpu: AtomicU64,
    resumed_at: AtomicU64,
    epoch: Instant,
    /// A quarter of a tick, in ns.
    least: u64,
}

impl SliceClock {
    pub(crate) fn new(ticker: Arc<Ticker>, tick: std::time::Duration) -> Arc<SliceClock> {
        Arc::new(SliceClock {
            least: u64::try_from(tick.as_nanos() / 4).unwrap_or(u64::MAX),
            ticker,
            slices: AtomicU32::new(0),
            resumed_tick: AtomicU64::new(0),
            resumed_cpu: AtomicU64::new(0),
            resumed_at: AtomicU64::new(0),
            epoch: Instant::now(),
        })
    }

    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Whether the call has run its [`LONG_CALL_SLICES`].
    pub(crate) fn is_long(&self) -> bool {
        self.slices.load(Ordering::Relaxed) >= LONG_CALL_SLICES
    }

    /// A tick, seen by the call's epoch callback; whether the call is now
    /// long.
    pub(crate) fn tick(&self) -> bool {
        let slices = self.slices.load(Ordering::Relaxed);
        if slices < LONG_CALL_SLICES && self.tick_counts(slices) {
            self.slices.store(slices + 1, Ordering::Relaxed);
        }
        self.is_long()
    }

    /// Whether a tick, `slices` counted before it, counts as a slice of CPU.
    fn tick_counts(&self, slices: u32) -> bool {
        if slices == 0 {
            // The call was not timed before: count it, and time it from now
            // (the callback returns to the guest, or yields and is resumed).
            self.time_from_now();
            return true;
        }
        let Some(cpu) = thread_cpu_ns() else {
            return true;
        };
        let (tick, now) = (self.ticker.ticks(), self.now());
        counts(Since {
            least: self.least,
            ticks: tick.saturating_sub(self.resumed_tick.swap(tick, Ordering::Relaxed)),
            on_cpu: cpu.saturating_sub(self.resumed_cpu.swap(cpu, Ordering::Relaxed)),
            elapsed: now.saturating_sub(self.resumed_at.swap(now, Ordering::Relaxed)),
        })
    }

    /// The call resumes: time it from now while its slices are counted
    /// (not before its first tick, nor once it is long).
    pub(crate) fn resumed(&self) {
        let slices = self.slices.load(Ordering::Relaxed);
        if slices > 0 && slices < LONG_CALL_SLICES {
            self.time_from_now();
        }
    }

    fn time_from_now(&self) {
        if let Some(cpu) = thread_cpu_ns() {
            self.resumed_tick
                .store(self.ticker.ticks(), Ordering::Relaxed);
            self.resumed_cpu.store(cpu, Ordering::Relaxed);
            self.resumed_at.store(self.now(), Ordering::Relaxed);
        }
    }
}

/// What happened between a call's resumption and a tick it sees.
#[derive(Debug, Clone, Copy)]
struct Since {
    /// The least CPU that counts (a quarter of a tick), in ns.
    least: u64,
    /// Ticks since (the ticker counts a tick before the epoch moves).
    ticks: u64,
    /// Ns the guest's thread was on a CPU.
    on_cpu: u64,
    /// Ns of time.
    elapsed: u64,
}

/// Whether a tick after a call's first counts as a slice of CPU.
fn counts(since: Since) -> bool {
    since.ticks > 0 && since.on_cpu >= since.least && since.on_cpu >= since.elapsed / 2
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const MS: u64 = 1_000_000;

    #[test]
    fn a_later_tick_counts_only_if_it_came_since_the_resumption_with_the_cpu_busy() {
        let since = |ticks, on_cpu, elapsed| {
            counts(Since {
                least: MS / 4,
                ticks,
                on_cpu,
                elapsed,
            })
        };
        assert!(since(1, MS, MS), "ran across a tick");
        assert!(since(1, MS / 3, MS / 3), "resumed late in the tick");
        assert!(
            !since(1, MS / 5, MS / 5),
            "resumed with a fifth of the tick left"
        );
        assert!(!since(0, 0, 4 * MS), "the tick passed while it awaited");
        assert!(!since(0, 10_000, 10_000), "at once after an await");
        assert!(!since(1, MS / 10, 4 * MS), "preempted, or blocked");
    }

    #[cfg(unix)]
    #[test]
    fn asleep_is_not_on_a_cpu() {
        let ticker = Arc::new(Ticker::default());
        let clock = SliceClock::new(ticker.clone(), Duration::from_millis(1));
        assert!(!clock.tick(), "the first tick counts, one slice");
        std::thread::sleep(Duration::from_millis(5));
        ticker.advance();
        assert!(!clock.tick(), "asleep across a tick: still one slice");
        assert_eq!(clock.slices.load(Ordering::Relaxed), 1);
    }
}
