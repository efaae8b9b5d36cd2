//! Who starts a JVM's threads, on demand (src/bpf/starters.bpf.c).
//!
//! Naming the starter takes a second probe per thread start (`JVM_StartThread`, in the
//! starting thread), so it is not always on: every second the agent reads each JVM's thread
//! starts (the threads collector's counts) and, when a JVM starts threads faster than its
//! threshold (its pod's `threadStartRate`, i.e. the resource's alert threshold, else
//! `--starter-threshold`), attaches the probes to that process alone for
//! `--starter-window-seconds`, then detaches them. A JVM gets them again at the earliest one
//! window after they were detached, so a storm that goes on is sampled at most half the time.
//! Other JVMs of the same libjvm.so pay nothing (the uprobe and USDT links carry the pid);
//! while any window is open every fork on the host costs one hash lookup.
//!
//! Counts (`jvmdiag_thread_starts_by_starter_total`) and the time each start took
//! (`jvmdiag_thread_start_seconds`: `JVM_StartThread`'s entry to the new thread's
//! `thread__start`) are kept for the JVM's life and grow only while attached;
//! `jvmdiag_agent_starter_probe_attached` / `…_windows_total` say when.
use std::collections::{BTreeMap, HashMap};
use std::os::fd::BorrowedFd;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::Link;

use crate::attach::{AttachManager, JvmState};
use crate::collector::inflight::{self, Table};
use crate::collector::{self, threads, LoadConfig};
use crate::maps::{self, decode};
use crate::metrics;
use crate::model::{c_name, Family, Hist, Value};
use crate::probe;
use crate::skel::consts;
use crate::skel::starters::types::{name_key, starter_key};
use crate::skel::starters::{StartersSkel, StartersSkelBuilder};

/// How often each JVM's start rate is computed.
const CHECK_EVERY: Duration = Duration::from_secs(1);
/// Threads in JVM_StartThread, and new threads not yet started (src/bpf/starters.h).
const INFLIGHT: [Table; 2] = [
    Table {
        map: "starting",
        index: consts::STARTERS_TABLE_STARTING,
        per_jvm: consts::STARTERS_PENDING_PER_JVM,
        max: consts::STARTERS_PENDING,
    },
    Table {
        map: "started",
        index: consts::STARTERS_TABLE_STARTED,
        per_jvm: consts::STARTERS_PENDING_PER_JVM,
        max: consts::STARTERS_PENDING,
    },
];

#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Thread starts per second that attach the probe (0: never, unless the JVM's limits
    /// name a threshold).
    pub threshold: u32,
    pub window: Duration,
}

impl Settings {
    /// From `--starter-threshold` and `--starter-window-seconds` (the threads collector's).
    pub fn from_flags(s: &collector::Settings) -> Settings {
        Settings {
            threshold: s.get(&threads::STARTER_THRESHOLD),
            window: Duration::from_secs(s.get(&threads::STARTER_WINDOW_SECONDS)),
        }
    }
}

struct JvmStarters {
    slot: u32,
    /// Its namespace's id (`slot_namespace`) as its entries count it: this object forgets a
    /// slot at the poll after its release, when the map no longer says.
    namespace: u32,
    /// (when, thread starts then) at the previous check.
    last: Option<(Instant, u64)>,
    links: Vec<Link>,
    until: Option<Instant>,
    next_allowed: Option<Instant>,
    windows: u64,
}

pub struct Starters {
    skel: StartersSkel<'static>,
    settings: Settings,
    /// sched_process_fork, held while any window is open.
    fork: Option<Link>,
    jvms: HashMap<u32, JvmStarters>,
    last_check: Option<Instant>,
}

/// Loads the object; None (logged) where it cannot load (e.g. no kernel BTF for
/// `tp_btf/sched_process_fork`): the agent runs on without starters.
pub fn load(cfg: &LoadConfig, traced_pids: BorrowedFd<'_>, settings: Settings) -> Option<Starters> {
    match load_skel(cfg, traced_pids) {
        Ok(skel) => {
            Some(Starters { skel, settings, fork: None, jvms: HashMap::new(), last_check: None })
        }
        Err(e) => {
            tracing::warn!(error = format!("{e:#}"), "the on-demand starter probe is off");
            None
        }
    }
}

fn load_skel(cfg: &LoadConfig, traced_pids: BorrowedFd<'_>) -> Result<StartersSkel<'static>> {
    let mut open = StartersSkelBuilder::default()
        .open(collector::object_storage())
        .context("open starters.bpf.o")?;
    let ro = open.maps.rodata_data.as_deref_mut().context("starters: no rodata")?;
    let max_pairs = cfg.settings.get(&threads::MAX_THREAD_NAMES);
    ro.collector_bit = cfg.collector_bit;
    ro.max_pairs = max_pairs;
    open.maps.traced_pids.reuse_fd(traced_pids)?;
    crate::stacks::configure!(
        open,
        cfg.stacks.as_deref(),
        cfg.settings.get(&threads::STACK_SAMPLES),
        cfg.settings.get(&threads::MAX_STACKS)
    );
    collector::share_jvm_limits(&mut open.maps.jvm_limits, cfg)?;
    probe::prepare_uprobes(open.open_object_mut());
    open.maps.starts_by_starter.set_max_entries(collector::table_size(cfg.max_jvms, max_pairs))?;
    open.maps.start_seconds.set_max_entries(collector::table_size(cfg.max_jvms, max_pairs))?;
    let m = &mut open.maps;
    let shares = inflight::configure(
        [(&INFLIGHT[0], &mut m.starting), (&INFLIGHT[1], &mut m.started)],
        &mut m.slot_namespace,
        cfg,
    )?;
    let ro = open.maps.rodata_data.as_deref_mut().context("starters: no rodata")?;
    (ro.inflight_share, ro.inflight_ns_share) = (shares.jvm, shares.namespace);
    open.load().context("load starters.bpf.o")
}

impl Starters {
    /// Links held now (part of `jvmdiag_agent_bpf_links`).
    pub fn links(&self) -> usize {
        self.jvms.values().map(|j| j.links.len()).sum::<usize>() + usize::from(self.fork.is_some())
    }

    /// Called every discovery poll: forgets released JVMs, closes windows that ended, and
    /// once a second opens one for each JVM over its threshold.
    pub fn poll(&mut self, mgr: &mut AttachManager, now: Instant) {
        // Released JVMs (or a pid now another JVM's): their entries go, links with them.
        let gone: Vec<u32> = self
            .jvms
            .iter()
            .filter(|(pid, s)| mgr.jvms.get(pid).is_none_or(|j| j.slot != s.slot))
            .map(|(pid, _)| *pid)
            .collect();
        for pid in gone {
            if let Some(s) = self.jvms.remove(&pid) {
                self.forget(s.slot, s.namespace);
                if s.namespace != consts::NO_NAMESPACE && !mgr.namespace_in_use(s.namespace) {
                    let m = &self.skel.maps;
                    if let Err(e) =
                        inflight::forget_namespace(&m.inflight_ns, &INFLIGHT, s.namespace)
                    {
                        tracing::warn!(
                            namespace = s.namespace,
                            error = format!("{e:#}"),
                            "starters: forgetting a namespace id failed"
                        );
                    }
                }
            }
        }
        for (pid, s) in self.jvms.iter_mut() {
            let exited = mgr.jvms.get(pid).is_none_or(|j| j.state != JvmState::Live);
            if s.until.is_some_and(|u| now >= u) || (exited && s.until.is_some()) {
                s.links.clear(); // detached (a window's two links: the main loop waits briefly)
                                 // Starts in progress now will never be seen ending: their entries go, so they
                                 // do not hold the JVM's share of the tables through its later windows.
                if let Err(e) = clear_pending(&self.skel, s.slot, s.namespace) {
                    tracing::warn!(
                        pid = *pid,
                        error = format!("{e:#}"),
                        "starters: clearing the starts in progress failed"
                    );
                }
                s.until = None;
                s.next_allowed = Some(now + self.settings.window);
                tracing::info!(pid = *pid, "starter probe detached");
            }
        }
        if self.fork.is_some() && self.jvms.values().all(|s| s.until.is_none()) {
            self.fork = None;
        }
        if self.last_check.is_some_and(|t| now.duration_since(t) < CHECK_EVERY) {
            return;
        }
        self.last_check = Some(now);
        let Some(Ok(starts)) = mgr.collectors.iter().find_map(|c| c.starts_per_slot()) else {
            return;
        };
        let live: Vec<(u32, u32, u32)> = mgr
            .jvms
            .iter()
            .filter(|(_, j)| j.state == JvmState::Live)
            .map(|(pid, j)| {
                (*pid, j.slot, j.limits.thread_start_rate.unwrap_or(self.settings.threshold))
            })
            .collect();
        for (pid, slot, threshold) in live {
            let total = starts.get(&slot).copied().unwrap_or(0);
            let s = self.jvms.entry(pid).or_insert(JvmStarters {
                slot,
                namespace: mgr.namespace_id(slot),
                last: None,
                links: Vec::new(),
                until: None,
                next_allowed: None,
                windows: 0,
            });
            let prev = s.last.replace((now, total));
            let Some((t0, n0)) = prev else { continue };
            let dt = now.duration_since(t0).as_secs_f64();
            let rate = total.saturating_sub(n0) as f64 / dt.max(1e-3);
            if threshold == 0
                || rate < f64::from(threshold)
                || s.until.is_some()
                || s.next_allowed.is_some_and(|t| now < t)
            {
                continue;
            }
            match self.attach(mgr, pid) {
                Ok(links) => {
                    let s = self.jvms.get_mut(&pid).expect("inserted above");
                    s.links = links;
                    s.until = Some(now + self.settings.window);
                    s.windows += 1;
                    tracing::info!(
                        pid,
                        rate = format!("{rate:.0}/s"),
                        threshold,
                        window_s = self.settings.window.as_secs(),
                        "starter probe attached"
                    );
                }
                Err(e) => {
                    let s = self.jvms.get_mut(&pid).expect("inserted above");
                    s.next_allowed = Some(now + self.settings.window);
                    tracing::warn!(pid, error = format!("{e:#}"), "starter probe not attached");
                }
            }
        }
    }

    /// JVM_StartThread (uprobe) and hotspot:thread__start (USDT) on this process alone, and
    /// sched_process_fork if no window holds it yet.
    fn attach(&mut self, mgr: &mut AttachManager, pid: u32) -> Result<Vec<Link>> {
        let p = &self.skel.progs;
        let links = mgr.attach_to_process(pid, |target| {
            let start = target
                .usdt(&p.starter_thread_start, "hotspot", "thread__start")
                .context("USDT hotspot:thread__start")?;
            let enter = probe::uprobe_sym(&p.starter_enter, target, "JVM_StartThread", false, 0)?;
            Ok(vec![start, enter])
        })?;
        if self.fork.is_none() {
            self.fork = Some(p.starter_fork.attach().context("tp_btf sched_process_fork")?);
        }
        Ok(links)
    }

    fn forget(&self, slot: u32, namespace: u32) {
        let m = &self.skel.maps;
        let r = maps::forget_where(&m.starts_by_starter, |k| {
            decode::<starter_key>(k).is_some_and(|k| k.slot == slot)
        })
        .and_then(|_| {
            maps::forget_where(&m.start_seconds, |k| {
                decode::<name_key>(k).is_some_and(|k| k.slot == slot)
            })
        })
        .and_then(|_| clear_pending(&self.skel, slot, namespace))
        .and_then(|_| inflight::forget_lost(&m.inflight_lost, slot))
        .and_then(|_| maps::reset_slot(&m.name_budget, slot))
        .and_then(|_| maps::reset_slot(&m.start_seconds_budget, slot));
        if let Err(e) = r {
            tracing::warn!(slot, error = format!("{e:#}"), "starters: forgetting a slot failed");
        }
    }

    /// `jvmdiag_thread_starts_by_starter_total`, `jvmdiag_thread_start_seconds`, and for JVMs
    /// the probe was attached to, the attached gauge and the windows counter.
    pub fn collect(&self, out: &mut Vec<Family>) -> Result<()> {
        out.push(starts_by_starter_family(&maps::entries(&self.skel.maps.starts_by_starter)?));
        out.push(start_seconds_family(&maps::entries(&self.skel.maps.start_seconds)?));
        let mut attached = metrics::AGENT_STARTER_PROBE_ATTACHED.family();
        let mut windows = metrics::AGENT_STARTER_PROBE_WINDOWS.family();
        for s in self.jvms.values().filter(|s| s.windows > 0) {
            attached.jvm(s.slot, vec![], Value::Gauge(if s.until.is_some() { 1.0 } else { 0.0 }));
            windows.jvm(s.slot, vec![], Value::Counter(s.windows));
        }
        out.push(attached);
        out.push(windows);
        out.push(inflight::jvm_lost_family(
            "starters",
            &maps::entries(&self.skel.maps.inflight_lost)?,
            &INFLIGHT,
        ));
        out.push(inflight::lost_family(
            "starters",
            &inflight::lost_totals(&maps::read_stats(&self.skel.maps.stats)?, &INFLIGHT),
        ));
        Ok(())
    }
}

/// Deletes a JVM's entries from both in-flight tables and gives its share back (and its
/// namespace's, `namespace` its id).
fn clear_pending(skel: &StartersSkel<'static>, slot: u32, namespace: u32) -> Result<()> {
    let m = &skel.maps;
    let held = (&m.inflight_held, &m.inflight_ns);
    inflight::forget_table(&m.starting, &INFLIGHT[0], held, namespace, slot)?;
    inflight::forget_table(&m.started, &INFLIGHT[1], held, namespace, slot)
}

/// `jvmdiag_thread_starts_by_starter_total` from starts_by_starter entries (starter_key -> __u64).
pub fn starts_by_starter_family(entries: &[(Vec<u8>, Vec<u8>)]) -> Family {
    let mut f = metrics::THREAD_STARTS_BY_STARTER.family();
    for (k, v) in entries {
        let (Some(key), Some(n)) = (decode::<starter_key>(k), maps::counter(v)) else { continue };
        f.jvm(
            key.slot,
            vec![("thread_name", c_name(&key.thread_name)), ("starter", c_name(&key.starter))],
            Value::Counter(n),
        );
    }
    f
}

/// `jvmdiag_thread_start_seconds` from start_seconds entries (name_key -> hist). The name is
/// a folded thread name, never a VM operation's vtable (maps::name_key's reading of a first
/// byte 1); names that decode alike (invalid UTF-8) are one series.
pub fn start_seconds_family(entries: &[(Vec<u8>, Vec<u8>)]) -> Family {
    let mut merged: BTreeMap<(u32, String), Hist> = BTreeMap::new();
    for (k, v) in entries {
        let (Some(key), Some(h)) = (decode::<name_key>(k), maps::histogram(v)) else { continue };
        merged.entry((key.slot, c_name(&key.name))).or_default().merge(&h);
    }
    let mut f = metrics::THREAD_START_SECONDS.family();
    for ((slot, name), h) in merged {
        f.jvm(slot, vec![("thread_name", name)], Value::Histogram(h));
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(slot: u32, name: &str, starter: &str) -> Vec<u8> {
        let mut k = starter_key { slot, ..Default::default() };
        for (d, s) in k.thread_name.iter_mut().zip(name.bytes()) {
            *d = s as _;
        }
        for (d, s) in k.starter.iter_mut().zip(starter.bytes()) {
            *d = s as _;
        }
        // SAFETY: starter_key is Plain.
        unsafe { plain::as_bytes(&k) }.to_vec()
    }

    #[test]
    fn starts_are_labelled_by_thread_name_and_starter() {
        let e = vec![(key(2, "worker-A-N", "starter-A"), 3000u64.to_ne_bytes().to_vec())];
        let f = starts_by_starter_family(&e);
        assert_eq!(f.samples.len(), 1);
        assert_eq!(f.samples[0].slot, Some(2));
        assert_eq!(
            f.samples[0].labels,
            vec![("thread_name", "worker-A-N".to_string()), ("starter", "starter-A".to_string())]
        );
        assert!(matches!(f.samples[0].value, Value::Counter(3000)));
    }

    fn time_key(slot: u32, name: &[u8]) -> Vec<u8> {
        let mut k = name_key { slot, ..Default::default() };
        for (d, s) in k.name.iter_mut().zip(name) {
            *d = *s as _;
        }
        // SAFETY: name_key is Plain.
        unsafe { plain::as_bytes(&k) }.to_vec()
    }

    fn hist(slot_counts: &[(usize, u64)], sum_ns: u64) -> Vec<u8> {
        let mut h = crate::skel::starters::types::hist::default();
        for &(i, n) in slot_counts {
            h.buckets[i] = n;
            h.count += n;
        }
        h.sum_ns = sum_ns;
        // SAFETY: hist is Plain.
        unsafe { plain::as_bytes(&h) }.to_vec()
    }

    #[test]
    fn start_times_are_histograms_by_thread_name() {
        let e = vec![
            (time_key(2, b"worker-a-N"), hist(&[(0, 2990), (1, 10)], 412_000_000)),
            // A name whose first byte is 1 is a thread's name here, not a vtable.
            (time_key(2, b"\x01x"), hist(&[(0, 1)], 90_000)),
            // Two invalid UTF-8 names that decode alike: one series.
            (time_key(3, b"a\xff"), hist(&[(0, 1)], 50_000)),
            (time_key(3, b"a\xfe"), hist(&[(2, 1)], 300_000)),
        ];
        let f = start_seconds_family(&e);
        let got: Vec<(Option<u32>, String, u64, u64)> = f
            .samples
            .iter()
            .map(|s| match &s.value {
                Value::Histogram(h) => (s.slot, s.labels[0].1.clone(), h.count, h.sum_ns),
                v => panic!("{v:?}"),
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (Some(2), "\u{1}x".to_string(), 1, 90_000),
                (Some(2), "worker-a-N".to_string(), 3000, 412_000_000),
                (Some(3), "a\u{fffd}".to_string(), 2, 350_000),
            ]
        );
        assert!(f.samples.iter().all(|s| s.labels[0].0 == "thread_name"));
    }
}
