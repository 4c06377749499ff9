//! Admission of a call: an execution slot, then its share of the host-wide
//! memory budget, both within the queue timeout.
//!
//! Every running call reserves its whole memory limit (linear memories plus
//! tables, the limit the [`crate::limits::MemoryLimiter`] enforces), whether
//! or not it ends up touching it, so the sum of what running calls can use
//! never passes [`crate::RuntimeConfig::memory_budget`]. A call whose own
//! limit is larger than the budget could never run and is refused at once
//! ([`RuntimeError::MemoryBudgetExceeded`]); one that does not fit beside the
//! calls already running waits in FIFO order (the semaphore is fair, so a
//! large reservation is not starved by smaller ones arriving after it).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError};

use crate::error::RuntimeError;
use crate::outcome::Unavailable;

/// The unit of reservation: one wasm page.
const PAGE_BYTES: u64 = 64 << 10;

/// The memory budget of a runtime, in wasm pages, with its accounting.
#[derive(Debug)]
pub(crate) struct MemoryBudget {
    pages: Arc<Semaphore>,
    budget_bytes: u64,
    reserved_bytes: AtomicU64,
    peak_bytes: AtomicU64,
}

/// The host-wide memory budget and how much of it running calls hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryUse {
    /// The budget ([`crate::RuntimeConfig::memory_budget`], rounded down to
    /// whole 64 KiB pages).
    pub budget_bytes: u64,
    /// Bytes reserved by the calls running now.
    pub reserved_bytes: u64,
    /// The most bytes ever reserved at once since the runtime was created.
    pub peak_reserved_bytes: u64,
}

/// What an admitted call holds until it ends: its slot and its memory. It
/// owns them, so it can go with the call's future (to the long-call lane).
#[derive(Debug)]
pub(crate) struct Admission {
    _slot: OwnedSemaphorePermit,
    _memory: Reservation,
}

/// A call's share of the memory budget; given back on drop.
#[derive(Debug)]
struct Reservation {
    _pages: OwnedSemaphorePermit,
    bytes: u64,
    budget: Arc<MemoryBudget>,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget
            .reserved_bytes
            .fetch_sub(self.bytes, Ordering::SeqCst);
    }
}

impl MemoryBudget {
    /// A budget of `bytes`, rounded down to whole pages.
    pub(crate) fn new(bytes: u64) -> MemoryBudget {
        let pages = usize::try_from(bytes / PAGE_BYTES)
            .unwrap_or(usize::MAX)
            .min(Semaphore::MAX_PERMITS);
        MemoryBudget {
            pages: Arc::new(Semaphore::new(pages)),
            budget_bytes: pages as u64 * PAGE_BYTES,
            reserved_bytes: AtomicU64::new(0),
            peak_bytes: AtomicU64::new(0),
        }
    }

    /// The budget and what running calls hold of it.
    pub(crate) fn usage(&self) -> MemoryUse {
        MemoryUse {
            budget_bytes: self.budget_bytes,
            reserved_bytes: self.reserved_bytes.load(Ordering::SeqCst),
            peak_reserved_bytes: self.peak_bytes.load(Ordering::SeqCst),
        }
    }

    /// Refuse new reservations (with the slots, on shutdown).
    pub(crate) fn close(&self) {
        self.pages.close();
    }

    /// The pages a call with `limit_bytes` of memory reserves, or the typed
    /// refusal when that can never fit in the budget.
    fn pages_for(&self, limit_bytes: u64) -> Result<u32, RuntimeError> {
        let pages = limit_bytes.div_ceil(PAGE_BYTES);
        if pages * PAGE_BYTES > self.budget_bytes {
            return Err(RuntimeError::MemoryBudgetExceeded {
                limit_bytes,
                budget_bytes: self.budget_bytes,
            });
        }
        u32::try_from(pages).map_err(|_| RuntimeError::MemoryBudgetExceeded {
            limit_bytes,
            budget_bytes: self.budget_bytes,
        })
    }

    fn reserved(self: &Arc<Self>, permit: OwnedSemaphorePermit, pages: u32) -> Reservation {
        let bytes = u64::from(pages) * PAGE_BYTES;
        let now = self.reserved_bytes.fetch_add(bytes, Ordering::SeqCst) + bytes;
        self.peak_bytes.fetch_max(now, Ordering::SeqCst);
        Reservation {
            _pages: permit,
            bytes,
            budget: Arc::clone(self),
        }
    }
}

/// Admit a call with a memory limit of `limit_bytes`: refuse it at once if
/// the limit can never fit in `budget`, otherwise wait (in arrival order, for
/// at most `patience` in all) for an execution slot and then for its memory.
pub(crate) async fn admit(
    slots: &Arc<Semaphore>,
    budget: &Arc<MemoryBudget>,
    limit_bytes: u64,
    patience: Duration,
) -> Result<Admission, RuntimeError> {
    let pages = budget.pages_for(limit_bytes)?;
    let give_up = Instant::now() + patience;
    let unavailable = |reason| RuntimeError::HostUnavailable { reason };
    let slot = acquire(
        Arc::clone(slots).try_acquire_owned(),
        Arc::clone(slots).acquire_owned(),
        give_up,
    )
    .await
    .map_err(|busy| unavailable(busy.unwrap_or(Unavailable::Overloaded)))?;
    let memory = acquire(
        Arc::clone(&budget.pages).try_acquire_many_owned(pages),
        Arc::clone(&budget.pages).acquire_many_owned(pages),
        give_up,
    )
    .await
    .map_err(|busy| unavailable(busy.unwrap_or(Unavailable::MemoryBudget)))?;
    Ok(Admission {
        _slot: slot,
        _memory: budget.reserved(memory, pages),
    })
}

/// Take a permit: at once if `now` has one (no timer armed; a waiting call
/// holds the permits back, so this never jumps the queue), else by waiting
/// on `wait` until `give_up`. `Err(None)` means the wait timed out.
async fn acquire(
    now: Result<OwnedSemaphorePermit, TryAcquireError>,
    wait: impl Future<Output = Result<OwnedSemaphorePermit, tokio::sync::AcquireError>>,
    give_up: Instant,
) -> Result<OwnedSemaphorePermit, Option<Unavailable>> {
    match now {
        Ok(permit) => return Ok(permit),
        Err(TryAcquireError::Closed) => return Err(Some(Unavailable::ShuttingDown)),
        Err(TryAcquireError::NoPermits) => {}
    }
    match tokio::time::timeout_at(give_up.into(), wait).await {
        Err(_elapsed) => Err(None),
        Ok(Err(_closed)) => Err(Some(Unavailable::ShuttingDown)),
        Ok(Ok(permit)) => Ok(permit),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_larger_than_the_budget_is_refused_with_both_sizes() {
        let budget = MemoryBudget::new(100 << 20);
        assert_eq!(budget.usage().budget_bytes, 100 << 20);
        assert_eq!(budget.pages_for(100 << 20), Ok(1600));
        assert_eq!(budget.pages_for(1), Ok(1), "rounded up to a page");
        assert_eq!(
            budget.pages_for((100 << 20) + 1),
            Err(RuntimeError::MemoryBudgetExceeded {
                limit_bytes: (100 << 20) + 1,
                budget_bytes: 100 << 20,
            })
        );
    }

    #[tokio::test]
    async fn reservations_are_counted_and_given_back() {
        let slots = Arc::new(Semaphore::new(4));
        let budget = Arc::new(MemoryBudget::new(4 << 20));
        let patience = Duration::from_millis(20);
        let first = admit(&slots, &budget, 3 << 20, patience).await.unwrap();
        assert_eq!(budget.usage().reserved_bytes, 3 << 20);
        let second = admit(&slots, &budget, 2 << 20, patience).await;
        assert_eq!(
            second.unwrap_err(),
            RuntimeError::HostUnavailable {
                reason: Unavailable::MemoryBudget
            }
        );
        drop(first);
        assert_eq!(budget.usage().reserved_bytes, 0);
        let third = admit(&slots, &budget, 2 << 20, patience).await.unwrap();
        assert_eq!(budget.usage().peak_reserved_bytes, 3 << 20);
        drop(third);
        budget.close();
        assert_eq!(
            admit(&slots, &budget, 1, patience).await.unwrap_err(),
            RuntimeError::HostUnavailable {
                reason: Unavailable::ShuttingDown
            }
        );
    }
}
