//! The per-JVM fallback chain: USDT → uprobes on `.symtab` symbols → hsperfdata only → none.
//!
//! Each collector picks the best probes its JVM's libjvm.so offers when it attaches (USDT
//! notes, else symbols). What no probe gives comes from the JVM's hsperfdata file (read
//! inside the container's root, never written): for a collector that could not attach,
//!
//! | collector   | from hsperfdata                                                        |
//! |-------------|------------------------------------------------------------------------|
//! | threads     | `jvmdiag_thread_starts_total{thread_name="unknown"}` = `java.threads.started` |
//! | safepoints  | `jvmdiag_safepoint_pause_seconds` / `_sync_seconds{vm_operation="unknown"}` from `sun.rt.safepoints`, `sun.rt.safepointTime`, `sun.rt.safepointSyncTime` |
//! | compilation | `jvmdiag_compilations_total{compiler="unknown"}` = `sun.ci.totalCompiles` |
//! | vmops       | nothing (hsperfdata has no VM operation counters)                       |
//!
//! The counters are mapped by src/perfdata.rs (as in the sidecar); the safepoint sampling
//! below is this module's own.
//!
//! Safepoint histograms: count and sum always equal the JVM's counters. The counters are
//! sampled at every discovery poll (200 ms); a poll interval with one new safepoint gives its
//! exact duration, one with n > 1 gives n observations of the mean (counted in
//! `jvmdiag_agent_hsperfdata_merged_safepoints_total`), as do safepoints before the first
//! sample. A JVM with no probe at all is `probe_mode="hsperfdata"`, or `"none"` when it has
//! no hsperfdata either (`-XX:-UsePerfData`, `-XX:+PerfDisableSharedMem`); every JVM seen
//! but not traced is counted by reason in `jvmdiag_agent_jvms_untraced`.
use std::collections::{BTreeMap, HashMap};

use jvmdiag_inspect::hsperfdata::PerfData;

use crate::attach::{AttachManager, Jvm, JvmState};
use crate::metrics::{self, ProbeMode};
use crate::model::{Family, Hist, Value};
use crate::perfdata;

/// Safepoint counters of the JVMs that lack the safepoints collector, sampled at each poll.
#[derive(Default)]
pub struct Sampler {
    jvms: HashMap<u32, SafepointSeries>,
    /// Safepoints whose duration is a mean over a poll interval (see the module doc).
    pub merged: u64,
}

#[derive(Default, Clone)]
struct SafepointSeries {
    /// (sun.rt.safepoints, sun.rt.safepointTime, sun.rt.safepointSyncTime) at the last sample.
    last: (i64, i64, i64),
    /// The newest observation: (safepoints, pause ns, sync ns) added by the last sample.
    newest: (u64, u64, u64),
    pause: Hist,
    sync: Hist,
}

/// Moves `n` observations that summed to `old_ns` to their bucket for `new_ns` (>= old_ns).
fn amend(h: &mut Hist, n: u64, old_ns: u64, new_ns: u64) {
    h.buckets[Hist::slot_of(old_ns / n)] -= n;
    h.buckets[Hist::slot_of(new_ns / n)] += n;
    h.sum_ns += new_ns - old_ns;
}

fn ticks_to_ns(ticks: i64, hz: i64) -> u64 {
    if hz <= 0 || ticks <= 0 {
        return 0;
    }
    (ticks as u128 * 1_000_000_000 / hz as u128).min(u64::MAX as u128) as u64
}

impl Sampler {
    /// Samples the JVMs without the safepoints collector (call at every discovery poll).
    pub fn poll(&mut self, mgr: &mut AttachManager) {
        let pids: Vec<u32> = mgr
            .jvms
            .iter()
            .filter(|(_, j)| j.state == JvmState::Live && j.missing.contains(&"safepoints"))
            .map(|(p, _)| *p)
            .collect();
        self.jvms.retain(|pid, _| mgr.jvms.contains_key(pid));
        for pid in pids {
            let Some(pd) = mgr.read_perfdata(pid) else { continue };
            let (Some(n), Some(t), Some(st), Some(hz)) = (
                pd.long("sun.rt.safepoints"),
                pd.long("sun.rt.safepointTime"),
                pd.long("sun.rt.safepointSyncTime"),
                pd.long("sun.os.hrt.frequency"),
            ) else {
                continue;
            };
            self.jvms.entry(pid).or_default().sample((n, t, st), hz, &mut self.merged);
        }
    }
}

impl SafepointSeries {
    /// Adds what the counters gained since the last sample. HotSpot counts a safepoint at
    /// its begin and adds its sync and pause time later: time that arrives without a new
    /// safepoint belongs to the newest observation, which is re-bucketed.
    fn sample(&mut self, now: (i64, i64, i64), hz: i64, merged: &mut u64) {
        let (dn, dt, dst) = (now.0 - self.last.0, now.1 - self.last.1, now.2 - self.last.2);
        if dn < 0 || dt < 0 || dst < 0 || (dn, dt, dst) == (0, 0, 0) {
            return; // nothing new (or a JVM lying about its counters: ignored)
        }
        let (pause_ns, sync_ns) = (ticks_to_ns(dt, hz), ticks_to_ns(dst, hz));
        if dn == 0 {
            let (n, p, s) = self.newest;
            if n == 0 {
                return; // no observation yet to give the time to: it joins the next one
            }
            amend(&mut self.pause, n, p, p + pause_ns);
            amend(&mut self.sync, n, s, s + sync_ns);
            self.newest = (n, p + pause_ns, s + sync_ns);
        } else {
            let dn = dn as u64;
            if dn > 1 {
                *merged += dn;
            }
            self.pause.observe(dn, pause_ns);
            self.sync.observe(dn, sync_ns);
            self.newest = (dn, pause_ns, sync_ns);
        }
        self.last = now;
    }
}

/// At a scrape, for one JVM: settles `hsperfdata` vs not traced at all for a JVM without
/// probes, and adds the hsperfdata-derived series of the collectors that could not attach.
pub fn scrape_jvm(
    j: &mut Jvm,
    pd: Option<&PerfData>,
    sampler: &Sampler,
    pid: u32,
    out: &mut Vec<Family>,
) {
    if j.state == JvmState::Live && matches!(j.probe_mode, Some(ProbeMode::Hsperfdata) | None) {
        j.probe_mode = pd.is_some().then_some(ProbeMode::Hsperfdata);
    }
    if let Some(pd) = pd {
        perfdata::counter_families(j.slot, pd, &j.missing, out);
    }
    if j.missing.contains(&"safepoints") {
        if let Some(s) = sampler.jvms.get(&pid) {
            out.extend(perfdata::safepoint_families(
                j.slot,
                [(perfdata::UNNAMED, &s.pause, &s.sync)],
            ));
        }
    }
}

/// `jvmdiag_agent_jvms_untraced{reason}` and the sampler's health.
pub fn agent_families(mgr: &AttachManager, sampler: &Sampler) -> Vec<Family> {
    let mut by_reason: BTreeMap<String, u64> = BTreeMap::new();
    for r in mgr.untraced.values() {
        *by_reason.entry(r.clone()).or_default() += 1;
    }
    let none =
        mgr.jvms.values().filter(|j| j.state == JvmState::Live && j.probe_mode.is_none()).count()
            as u64;
    *by_reason.entry(metrics::NO_PROBES_NO_HSPERFDATA.into()).or_default() += none;
    // The reasons the alerts select on are always exposed, at 0 when no JVM has them.
    by_reason.entry("not_selected".into()).or_default();
    let mut untraced = metrics::AGENT_JVMS_UNTRACED.family();
    for (reason, n) in by_reason {
        untraced.agent(vec![("reason", reason)], Value::Gauge(n as f64));
    }
    vec![untraced, metrics::counter(&metrics::AGENT_HSPERFDATA_MERGED, sampler.merged)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_safepoint_per_interval_is_exact_and_many_are_the_mean() {
        let mut h = Hist::default();
        h.observe(1, 3_000_000); // 3 ms -> le 0.005
        assert_eq!(h.buckets[Hist::slot_le("0.005")], 1);
        h.observe(4, 400_000_000); // 4 x 100 ms -> le 0.1
        assert_eq!(h.buckets[Hist::slot_le("0.1")], 4);
        h.observe(1, 61_000_000_000); // +Inf
        assert_eq!(h.buckets[Hist::slot_le("+Inf")], 1);
        assert_eq!(h.count, 6);
        assert_eq!(h.sum_ns, 61_403_000_000);
    }

    #[test]
    fn time_that_arrives_after_its_safepoint_was_counted_joins_that_observation() {
        let (hz, mut merged) = (1_000_000_000, 0);
        let mut s = SafepointSeries::default();
        s.sample((0, 0, 0), hz, &mut merged);
        // Sampled mid-safepoint: counted (sync 1 ms in), its pause not yet added.
        s.sample((1, 0, 1_000_000), hz, &mut merged);
        assert_eq!((s.pause.count, s.pause.buckets[Hist::slot_le("0.0001")]), (1, 1));
        // Its end: 300 ms of pause, no new safepoint -> the same observation, le 0.5.
        s.sample((1, 300_000_000, 1_000_000), hz, &mut merged);
        assert_eq!((s.pause.count, s.pause.sum_ns), (1, 300_000_000));
        assert_eq!(
            (s.pause.buckets[Hist::slot_le("0.0001")], s.pause.buckets[Hist::slot_le("0.5")]),
            (0, 1)
        );
        assert_eq!(
            (s.sync.count, s.sync.sum_ns, s.sync.buckets[Hist::slot_le("0.001")]),
            (1, 1_000_000, 1)
        );
        // Two more, then nothing new: totals equal the counters, nothing merged twice.
        s.sample((3, 304_000_000, 2_000_000), hz, &mut merged);
        s.sample((3, 304_000_000, 2_000_000), hz, &mut merged);
        assert_eq!((s.pause.count, s.pause.sum_ns, merged), (3, 304_000_000, 2));
        assert_eq!(s.pause.buckets.iter().sum::<u64>(), 3);
    }

    #[test]
    fn ticks_convert_by_frequency_and_reject_nonsense() {
        assert_eq!(ticks_to_ns(5, 1_000_000_000), 5);
        assert_eq!(ticks_to_ns(1_000, 1_000), 1_000_000_000);
        assert_eq!(ticks_to_ns(-1, 1_000), 0);
        assert_eq!(ticks_to_ns(1, 0), 0);
    }
}
