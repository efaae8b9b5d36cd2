//! Evictions from the `method_seen` staging table (src/bpf/compilation.bpf.c), an LRU the
//! kernel counts no eviction of. They are derived per JVM slot:
//!
//! evictions = inserted − removed − deleted by the agent − present
//!
//! `inserted` and `removed` are the programs' own counts (`seen_counts`: successful NOEXIST
//! inserts, promotion deletes), `present` the slot's entries found at a scrape; the agent
//! deletes a slot's entries only when it releases the slot, which ends the slot's count
//! ([`Evictions::release`]).
//!
//! Races: the programs keep running while a scrape reads. The counts are read before the
//! entries are walked and again after, and a scrape's estimate takes `inserted` from the
//! first read and `removed` from the second. Every entry inserted before the first read is, by
//! the second, removed (in `removed` of the second read), evicted, or present throughout the
//! walk (found by it), so the estimate is never above the evictions made by then; a walk that
//! meets an entry twice only lowers it. A low estimate is made good by a later scrape, and
//! each slot's count keeps the highest estimate so far, so it never decreases. At release
//! the JVM is no longer in `traced_pids`, so its counts are final once the agent has deleted
//! its entries (a program already running on another CPU may still insert one: it stays
//! in the table, found as present by the slot's next JVM, whose estimate it only lowers).
use std::collections::BTreeMap;

/// One slot's figures at a scrape.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reading {
    /// `seen_count.inserted` read before the walk.
    pub inserted_before: u64,
    /// `seen_count.removed` read after the walk.
    pub removed_after: u64,
    /// The slot's entries the walk found.
    pub present: u64,
}

/// The evictions of each traced JVM and of the JVMs released since the agent started.
#[derive(Debug, Default)]
pub struct Evictions {
    live: BTreeMap<u32, u64>,
    released: u64,
}

impl Evictions {
    /// Takes a scrape's reading of `slot`; returns the slot's count (the highest estimate).
    pub fn observe(&mut self, slot: u32, r: Reading) -> u64 {
        let estimate = r.inserted_before.saturating_sub(r.removed_after).saturating_sub(r.present);
        let count = self.live.entry(slot).or_default();
        *count = (*count).max(estimate);
        *count
    }

    /// The slot is released: the agent deleted `deleted` of its entries after its JVM left
    /// `traced_pids`, with the final counts `inserted` and `removed`. Its evictions move to
    /// the released total.
    pub fn release(&mut self, slot: u32, inserted: u64, removed: u64, deleted: u64) {
        let last = inserted.saturating_sub(removed).saturating_sub(deleted);
        let seen = self.live.remove(&slot).unwrap_or(0);
        self.released = self.released.saturating_add(last.max(seen));
    }

    /// Each traced JVM's count, by slot (the scrape takes them from [`Evictions::observe`]).
    #[cfg(test)]
    pub fn per_slot(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        self.live.iter().map(|(s, n)| (*s, *n))
    }

    /// Every eviction since the agent started: the traced JVMs' and the released ones'.
    pub fn total(&self) -> u64 {
        self.live.values().fold(self.released, |a, n| a.saturating_add(*n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(inserted_before: u64, removed_after: u64, present: u64) -> Reading {
        Reading { inserted_before, removed_after, present }
    }

    #[test]
    fn evictions_are_what_was_inserted_and_is_neither_promoted_nor_present() {
        let mut e = Evictions::default();
        // 2,000 methods staged once each, 3 of them promoted, 256 still in the table.
        assert_eq!(e.observe(4, r(2000, 3, 256)), 1741);
        assert_eq!(e.observe(9, r(10, 0, 10)), 0, "nothing evicted while everything is present");
        assert_eq!(e.total(), 1741);
        assert_eq!(e.per_slot().collect::<Vec<_>>(), vec![(4, 1741), (9, 0)]);
    }

    #[test]
    fn a_count_never_decreases() {
        let mut e = Evictions::default();
        assert_eq!(e.observe(1, r(100, 0, 40)), 60);
        // A walk that met entries twice (or found entries inserted after the first read)
        // gives a lower estimate: the count stays.
        assert_eq!(e.observe(1, r(100, 0, 70)), 60);
        assert_eq!(e.observe(1, r(150, 10, 60)), 80);
        assert_eq!(e.observe(1, r(0, 5, 0)), 80, "a reading below zero is no estimate");
        assert_eq!(e.total(), 80);
    }

    #[test]
    fn a_released_slot_keeps_its_evictions_in_the_total_and_its_next_jvm_starts_at_zero() {
        let mut e = Evictions::default();
        e.observe(3, r(500, 0, 100));
        e.observe(5, r(20, 0, 5));
        // Released: 520 inserted in all, 2 promoted, the agent deleted the 100 left.
        e.release(3, 520, 2, 100);
        assert_eq!(e.total(), 418 + 15);
        assert_eq!(e.per_slot().collect::<Vec<_>>(), vec![(5, 15)], "a released JVM has no series");
        assert_eq!(e.observe(3, r(7, 0, 7)), 0, "the slot's next JVM counts from its own inserts");
        assert_eq!(e.total(), 433);
        // Released with final counts below what a scrape saw (entries found twice): the count
        // that was shown stays.
        e.release(5, 20, 0, 20);
        assert_eq!(e.total(), 433);
        e.release(42, 9, 0, 4);
        assert_eq!(e.total(), 438, "a slot never scraped still counts at release");
    }
}
