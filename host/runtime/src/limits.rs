//! The per-instance memory limiter: all linear memories plus tables, one budget.

use wasmtime::ResourceLimiter;

/// Bytes a table element is charged for (a function reference is a pointer)
/// against the memory limit and in [`crate::Usage::peak_memory_bytes`].
pub const TABLE_ELEMENT_BYTES: u64 = 8;

/// Most tables and memories one instance may create (a component of a few
/// core modules needs far fewer).
const MAX_TABLES: usize = 64;
const MAX_MEMORIES: usize = 16;

/// The most a guest hands the host in one host call, or returns from its
/// export, in bytes (roughly: wasmtime's "hostcall fuel"): the call's output
/// bound, or 16 MiB (twice the request body egress takes by default, room
/// for its headers), whichever is more, and a mebibyte to spare.
/// wasmtime's default, 128 MiB a call, let a guest make the host allocate
/// that much outside its memory budget before anything looked at it (a
/// list of millions of empty headers; one string named by every header).
pub(crate) fn hostcall_fuel(max_output_bytes: u64) -> usize {
    usize::try_from(max_output_bytes)
        .unwrap_or(usize::MAX)
        .max(16 << 20)
        .saturating_add(1 << 20)
}

/// The memory error a growth past the budget raises; the call is classified
/// from [`MemoryLimiter::exceeded`], never from this text.
#[derive(Debug, thiserror::Error)]
#[error("memory limit of {0} bytes exceeded")]
pub(crate) struct MemoryLimitExceeded(pub(crate) u64);

/// Tracks every memory and table of a store against one byte budget.
#[derive(Debug)]
pub(crate) struct MemoryLimiter {
    limit: u64,
    used: u64,
    peak: u64,
    exceeded: bool,
}

impl MemoryLimiter {
    pub(crate) fn new(limit: u64) -> Self {
        MemoryLimiter {
            limit,
            used: 0,
            peak: 0,
            exceeded: false,
        }
    }

    /// Whether a growth was refused because of the budget.
    pub(crate) fn exceeded(&self) -> bool {
        self.exceeded
    }

    /// Peak bytes in use.
    pub(crate) fn peak(&self) -> u64 {
        self.peak
    }

    fn grow(&mut self, current: u64, desired: u64) -> wasmtime::Result<bool> {
        let next = self.used.saturating_sub(current).saturating_add(desired);
        if next > self.limit {
            self.exceeded = true;
            return Err(wasmtime::Error::new(MemoryLimitExceeded(self.limit)));
        }
        self.used = next;
        self.peak = self.peak.max(next);
        Ok(true)
    }
}

/// Whether a growth to `desired` passes the memory's or table's declared
/// `maximum`: refused here, uncharged. (wasmtime checks a table's maximum
/// only after asking, so a `table.grow` past it, refused, was charged all
/// the same. Putting a charge back when wasmtime reports a failed growth
/// is no fix: it also reports one it never asked about, and a guest then
/// had earlier growths forgotten.)
fn past_maximum(desired: usize, maximum: Option<usize>) -> bool {
    maximum.is_some_and(|maximum| desired > maximum)
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if past_maximum(desired, maximum) {
            return Ok(false);
        }
        self.grow(current as u64, desired as u64)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if past_maximum(desired, maximum) {
            return Ok(false);
        }
        // Saturating: a 64-bit table may ask for 2^61 elements and more.
        self.grow(
            (current as u64).saturating_mul(TABLE_ELEMENT_BYTES),
            (desired as u64).saturating_mul(TABLE_ELEMENT_BYTES),
        )
    }

    fn tables(&self) -> usize {
        MAX_TABLES
    }

    fn memories(&self) -> usize {
        MAX_MEMORIES
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memories_and_tables_share_one_budget() {
        let mut limiter = MemoryLimiter::new(1000);
        assert!(limiter.memory_growing(0, 600, None).unwrap());
        assert!(limiter.table_growing(0, 40, None).unwrap(), "320 bytes");
        assert!(limiter.memory_growing(600, 1100, None).is_err());
        assert!(limiter.exceeded());
        assert_eq!(limiter.peak(), 920);
    }

    #[test]
    fn a_growth_that_fails_after_all_is_not_charged_and_huge_tables_saturate() {
        let mut limiter = MemoryLimiter::new(1 << 20);
        assert!(limiter.table_growing(0, 10, None).unwrap());
        assert!(!limiter.table_growing(10, 100_000, Some(10)).unwrap());
        assert!(!limiter.memory_growing(0, 1 << 30, Some(65536)).unwrap());
        assert_eq!(
            limiter.peak(),
            80,
            "a growth past its maximum is not charged"
        );
        assert!(!limiter.exceeded());
        assert!(limiter.memory_growing(0, 1000, None).unwrap());
        // A failure wasmtime reports never gives back what was charged.
        limiter
            .table_grow_failed(wasmtime::Error::msg("overflow"))
            .unwrap();
        assert_eq!(limiter.peak(), 1080);
        assert!(limiter.table_growing(10, 20, None).unwrap());
        assert!(limiter.table_growing(20, usize::MAX, None).is_err());
        assert!(limiter.exceeded());
    }

    #[test]
    fn growth_within_budget_is_not_flagged() {
        let mut limiter = MemoryLimiter::new(1 << 20);
        assert!(limiter.memory_growing(0, 65536, None).unwrap());
        assert!(limiter.memory_growing(65536, 131072, None).unwrap());
        assert!(!limiter.exceeded());
        assert_eq!(limiter.peak(), 131072);
    }
}
