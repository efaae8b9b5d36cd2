//! Thread starts per JVM and folded thread name (src/bpf/threads.bpf.c).
use std::os::fd::BorrowedFd;

use anyhow::{Context, Result};
use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{MapCore, MapFlags};

use super::{Attached, Collector, Flag, Health, LoadConfig, Number, ProbeMode, Switch, Target};
use crate::maps::{self, decode};
use crate::metrics;
use crate::model::{c_name, Family, Value};
use crate::skel::consts;
use crate::skel::threads::types::{name_hkey, name_text};
use crate::skel::threads::{ThreadsSkel, ThreadsSkelBuilder};
use crate::{probe, symbols};

/// `--max-thread-names`: the per-JVM budget of every table keyed by a thread name (this
/// collector's, and vmOperations' requesters, monitors' waiting threads, parking's threads,
/// the starter probe's pairs); a JVM's own `maxThreadNames` may lower it (`Config::caps`).
pub static MAX_THREAD_NAMES: Number<u32> = Number {
    name: "max-thread-names",
    value_name: "K",
    default: 50,
    min: 1,
    max: 10_000,
    hide: false,
    help:
        "Distinct thread names counted per JVM (after folding digits); the rest count as \"other\"",
};

/// `--threads-jvm-start-thread`: count starts at `JVM_StartThread` (no names).
pub static JVM_START_THREAD: Switch = Switch {
    name: "threads-jvm-start-thread",
    help: "Count thread starts with a uprobe on JVM_StartThread instead of the USDT probe (no thread names; for JDKs built without probes)",
};

/// `--starter-threshold`: the on-demand starter probe's rate trigger (src/starters.rs).
pub static STARTER_THRESHOLD: Number<u32> = Number {
    name: "starter-threshold",
    value_name: "PER_SECOND",
    default: 50,
    min: 0,
    max: u32::MAX,
    hide: false,
    help: "On-demand starter probe: a JVM starting threads faster than this (per second) gets JVM_StartThread attached for --starter-window-seconds, naming the starting threads in jvmdiag_thread_starts_by_starter_total; 0 turns it off. A pod's threadStartRate limit (its JvmDiagnostics alert threshold) or --jvm-limits TEXT:threadStartRate=N takes its place",
};

/// `--starter-window-seconds`: how long the starter probe stays attached (src/starters.rs).
pub static STARTER_WINDOW_SECONDS: Number<u64> = Number {
    name: "starter-window-seconds",
    value_name: "SECONDS",
    default: 30,
    min: 1,
    max: 3600,
    hide: false,
    help: "How long the on-demand starter probe stays attached to a JVM (seconds); it is attached to that JVM again at the earliest as long after",
};

/// `--stack-samples-per-second`: culprit stacks taken per JVM and second (src/stacks.rs).
pub static STACK_SAMPLES: Number<u32> = Number {
    name: "stack-samples-per-second",
    value_name: "PER_SECOND",
    default: 20,
    min: 0,
    max: 10_000,
    hide: false,
    help: "Culprit stacks: at most this many Java stacks taken per JVM and second where a culprit is seen (the thread starting threads while the starter probe is attached), served at /stacks and counted in jvmdiag_culprit_stack_samples_total; 0 turns them off. A pod's stackSamplesPerSecond limit (--jvm-limits TEXT:stackSamplesPerSecond=N) may lower it",
};

/// `--max-stacks-per-jvm`: distinct stacks one JVM may hold (src/stacks.rs).
pub static MAX_STACKS: Number<u32> = Number {
    name: "max-stacks-per-jvm",
    value_name: "N",
    default: 64,
    min: 1,
    max: 4096,
    hide: false,
    help: "Distinct culprit stacks kept per JVM; a new stack past it is not kept (counted in jvmdiag_agent_stack_walks_total{outcome=\"table_full\"})",
};

/// This collector's flags; the on-demand starter probe's go with it (it is loaded with the
/// threads collector, on its bit, and reads its counts).
pub const FLAGS: &[Flag] = &[
    Flag::U32(&MAX_THREAD_NAMES),
    Flag::Switch(&JVM_START_THREAD),
    Flag::U32(&STARTER_THRESHOLD),
    Flag::U64(&STARTER_WINDOW_SECONDS),
    Flag::U32(&STACK_SAMPLES),
    Flag::U32(&MAX_STACKS),
];

const PROBES: [&str; 3] = super::probe_names([
    (consts::THREADS_PROBE_START, "thread__start"),
    (consts::THREADS_PROBE_JVM_START, "JVM_StartThread"),
    (consts::THREADS_PROBE_NATIVE_NAME, "os::set_native_thread_name"),
]);
/// Without USDT notes: HotSpot names every started Java thread (its Java name) with this
/// call from `JavaThread::thread_main_inner`, next to where `thread__start` fires (checked
/// in the code of JDK 17 and 25).
const SYM_SET_NAME: &str = "_ZN2os22set_native_thread_nameEPKc";
const SYM_MAIN_INNER: &str = "_ZN10JavaThread17thread_main_innerEv";

/// Folded names of the JVM-internal threads HotSpot hides from `java.threads.started`
/// (`JavaThread::is_hidden_from_external_view`: compiler, sweeper, service, monitor
/// deflation and notification threads; checked on JDK 17 and 25). They are daemon threads
/// the JVM starts itself; a daemon thread with one of these names is not counted.
const HIDDEN: &[&str] = &[
    "CN CompilerThreadN",
    "JVMCI CompilerThreadN",
    "JVMCI-native CompilerThreadN",
    "Sweeper thread",
    "Service Thread",
    "Monitor Deflation Thread",
    "Notification Thread",
];

/// FNV-1a (64 bit) of a name with digit runs folded to `N`, as `fold_hash` (src/bpf/fold.bpf.h)
/// computes it.
pub fn fnv1a_folded(name: &str) -> u64 {
    let mut h = consts::FNV_OFFSET;
    let mut prev = false;
    for &c in name.as_bytes().iter().take(consts::NAME_LEN as usize - 1) {
        let d = c.is_ascii_digit();
        if d && prev {
            continue;
        }
        prev = d;
        h = (h ^ u64::from(if d { b'N' } else { c })).wrapping_mul(consts::FNV_PRIME);
    }
    if h == 0 {
        1
    } else {
        h
    }
}

/// The slot of a threads_counts / threads_names key.
fn slot_of(k: &[u8]) -> Option<u32> {
    decode::<name_hkey>(k).map(|k| k.slot)
}

pub struct Threads {
    skel: ThreadsSkel<'static>,
    jvm_start_thread: bool,
}

/// USDT probes it attaches in each JVM (`probe::size_usdt_specs`).
const USDT_PROBES: u32 = 1;

pub fn load(cfg: &LoadConfig, traced_pids: BorrowedFd<'_>) -> Result<Box<dyn Collector>> {
    let mut open = ThreadsSkelBuilder::default()
        .open(super::object_storage())
        .context("open threads.bpf.o")?;
    let ro = open.maps.rodata_data.as_deref_mut().context("threads: no rodata")?;
    let max_names = cfg.settings.get(&MAX_THREAD_NAMES);
    ro.collector_bit = cfg.collector_bit;
    ro.max_names = max_names;
    for (slot, name) in ro.hidden_hashes.iter_mut().zip(HIDDEN) {
        *slot = fnv1a_folded(name);
    }
    open.maps.traced_pids.reuse_fd(traced_pids)?;
    super::share_jvm_limits(&mut open.maps.jvm_limits, cfg)?;
    probe::prepare_uprobes(open.open_object_mut());
    probe::size_usdt_specs(open.open_object_mut(), cfg.max_jvms, USDT_PROBES)?;
    open.maps.threads_counts.set_max_entries(super::table_size(cfg.max_jvms, max_names))?;
    open.maps.threads_names.set_max_entries(super::table_size(cfg.max_jvms, max_names))?;
    let skel = open.load().context("load threads.bpf.o")?;
    Ok(Box::new(Threads { skel, jvm_start_thread: cfg.settings.get(&JVM_START_THREAD) }))
}

impl Collector for Threads {
    fn name(&self) -> &'static str {
        "threads"
    }

    fn attach(&self, target: &Target<'_>) -> Result<Attached> {
        let binary = target.binary;
        if self.jvm_start_thread {
            let l = probe::uprobe_sym(
                &self.skel.progs.jvm_start_thread,
                target,
                "JVM_StartThread",
                false,
                0,
            )?;
            return Ok(Attached { links: vec![l], mode: ProbeMode::Uprobe });
        }
        let usdt = match target.usdt(&self.skel.progs.thread_start, "hotspot", "thread__start") {
            Ok(l) => return Ok(Attached { links: vec![l], mode: ProbeMode::Usdt }),
            Err(e) => anyhow::Error::from(e).context("USDT hotspot:thread__start"),
        };
        let syms =
            symbols::read_symbols(binary, &|n: &str| n == SYM_SET_NAME || n == SYM_MAIN_INNER)?;
        let (Some(set), Some(inner)) =
            (symbols::function(&syms, SYM_SET_NAME), symbols::function(&syms, SYM_MAIN_INNER))
        else {
            return Err(usdt.context(
                "and no os::set_native_thread_name / JavaThread::thread_main_inner in .symtab",
            ));
        };
        // Cookie: thread_main_inner's distance from set_native_thread_name (signed, low
        // half) and its size (high half): the probe counts calls returning into it.
        let delta = i32::try_from(inner.value as i64 - set.value as i64)
            .context("thread_main_inner too far away")?;
        let size = u32::try_from(inner.size).context("thread_main_inner too large")?;
        let cookie = u64::from(size) << 32 | u64::from(delta as u32);
        let l = probe::uprobe_sym(
            &self.skel.progs.native_thread_name,
            target,
            SYM_SET_NAME,
            false,
            cookie,
        )?;
        Ok(Attached { links: vec![l], mode: ProbeMode::Uprobe })
    }

    fn collect(&self, out: &mut Vec<Family>) -> Result<()> {
        let names = &self.skel.maps.threads_names;
        let counts = maps::entries(&self.skel.maps.threads_counts)?;
        out.push(starts_family(&counts, |k| names.lookup(k, MapFlags::ANY).ok().flatten()));
        Ok(())
    }

    fn forget(&self, slot: u32) -> Result<()> {
        for m in [&self.skel.maps.threads_counts, &self.skel.maps.threads_names] {
            maps::forget_where(m, |k| slot_of(k) == Some(slot))?;
        }
        maps::reset_slot(&self.skel.maps.name_budget, slot)
    }

    fn health(&self) -> Result<Health> {
        let mut h = super::health_from(&maps::read_stats(&self.skel.maps.stats)?, &PROBES);
        h.entries = (self.skel.maps.threads_counts.keys().count()
            + self.skel.maps.threads_names.keys().count()) as u64;
        Ok(h)
    }

    fn starts_per_slot(&self) -> Option<Result<std::collections::HashMap<u32, u64>>> {
        Some(maps::entries(&self.skel.maps.threads_counts).map(|counts| {
            let mut per = std::collections::HashMap::new();
            for (k, v) in &counts {
                if let (Some(slot), Some(n)) = (slot_of(k), maps::counter(v)) {
                    *per.entry(slot).or_default() += n;
                }
            }
            per
        }))
    }
}

/// `jvmdiag_thread_starts_total` from threads_counts entries (name_hkey -> __u64), the text
/// of each name from threads_names (name_hkey -> name_text).
pub fn starts_family(
    counts: &[(Vec<u8>, Vec<u8>)],
    name: impl Fn(&[u8]) -> Option<Vec<u8>>,
) -> Family {
    let mut f = metrics::THREAD_STARTS.family();
    for (k, v) in counts {
        let (Some(key), Some(n)) = (decode::<name_hkey>(k), maps::counter(v)) else { continue };
        let Some(text) = name(k).and_then(|t| decode::<name_text>(&t)) else { continue };
        f.jvm(key.slot, vec![("thread_name", c_name(&text.name))], Value::Counter(n));
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_folds_digit_runs_like_the_probe() {
        assert_eq!(fnv1a_folded("pool-12-thread-3"), fnv1a_folded("pool-1-thread-999"));
        assert_eq!(fnv1a_folded("C2 CompilerThread0"), fnv1a_folded("CN CompilerThreadN"));
        assert_ne!(fnv1a_folded("pool-1"), fnv1a_folded("pool-N-"));
        // FNV-1a test vector: "a" -> 0xaf63dc4c8601ec8c.
        assert_eq!(fnv1a_folded("a"), 0xaf63_dc4c_8601_ec8c);
    }
}
