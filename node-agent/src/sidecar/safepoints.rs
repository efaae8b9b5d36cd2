//! Safepoint histograms from `-Xlog:safepoint` records, with the eBPF collector's semantics:
//! the pause is "Total" minus "Reaching safepoint" (synchronized → end: cleanup, at safepoint
//! and leaving, exactly what HotSpot adds to sun.rt.safepointTime, checked on JDK 17 and 25),
//! the time to safepoint is "Reaching safepoint" (sun.rt.safepointSyncTime); same buckets.
use std::collections::BTreeMap;

use jvmdiag_inspect::safepoint_log::{Parser, SafepointRecord};

use crate::model::Hist;

/// Per VM operation: (pause, time to safepoint). At most `max_names` names, the rest "other".
pub struct Safepoints {
    parser: Parser,
    max_names: usize,
    pub by_op: BTreeMap<String, (Hist, Hist)>,
    /// Lines that were not safepoint records (other tags, decorations only, garbage).
    pub ignored_lines: u64,
    pub names_overflow: u64,
}

impl Safepoints {
    pub fn new(max_names: usize) -> Safepoints {
        Safepoints {
            parser: Parser::new(),
            max_names,
            by_op: BTreeMap::new(),
            ignored_lines: 0,
            names_overflow: 0,
        }
    }

    pub fn line(&mut self, line: &str) {
        match self.parser.feed(line) {
            Some(r) => self.record(&r),
            None => self.ignored_lines += 1,
        }
    }

    fn record(&mut self, r: &SafepointRecord) {
        let mut op = if r.vm_operation.is_empty() { "none" } else { r.vm_operation.as_str() };
        if !self.by_op.contains_key(op)
            && self.by_op.keys().filter(|k| *k != "other").count() >= self.max_names
        {
            self.names_overflow += 1;
            op = "other";
        }
        let e = self.by_op.entry(op.to_string()).or_default();
        e.0.observe(1, r.total_ns.saturating_sub(r.reaching_ns));
        e.1.observe(1, r.reaching_ns);
    }

    pub fn count(&self) -> u64 {
        self.by_op.values().map(|(p, _)| p.count).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_le_bounds() {
        assert_eq!(Hist::slot_of(0), 0);
        assert_eq!(Hist::slot_of(100_000), 0);
        assert_eq!(Hist::slot_of(1_000_000), Hist::slot_le("0.001"));
        assert_eq!(Hist::slot_of(1_000_001), Hist::slot_le("0.0025"));
        assert_eq!(Hist::slot_of(60_000_000_000), Hist::slot_le("60.0"));
        assert_eq!(Hist::slot_of(60_000_000_001), Hist::slot_le("+Inf"));
    }

    #[test]
    fn records_by_operation_with_a_name_budget() {
        let mut s = Safepoints::new(1);
        let l = |op: &str, at: u64| {
            format!("[1.000s][info][safepoint] Safepoint \"{op}\", Time since last: 1 ns, Reaching safepoint: 5 ns, At safepoint: {} ns, Total: {} ns", at - 1, at + 5)
        };
        s.line(&l("A", 2_000_000));
        s.line(&l("B", 7));
        s.line(&l("A", 3));
        s.line("[1.000s][info][gc] something else");
        let a = &s.by_op["A"];
        assert_eq!(
            (
                a.0.count,
                a.0.sum_ns,
                a.0.buckets[Hist::slot_le("0.0025")],
                a.0.buckets[Hist::slot_le("0.0001")]
            ),
            (2, 2_000_003, 1, 1)
        );
        assert_eq!(a.1.sum_ns, 10);
        assert_eq!(s.by_op["other"].0.count, 1);
        assert_eq!((s.count(), s.ignored_lines, s.names_overflow), (3, 1, 1));
    }
}
