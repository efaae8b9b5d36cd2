//! Contended monitor enters per JVM, monitor class and the waiting thread's folded native name,
//! and the time blocked (contended enter -> entered) per class as a histogram
//! (src/bpf/monitors.bpf.c, USDT `hotspot:monitor__contended__enter` / `__entered`); Object.wait
//! calls and the time waited per waited-on object's class and waiting thread's folded name
//! (`hotspot:monitor__wait` / `__waited`), the `via="object_wait"` series of the parked
//! families (src/collector/parking.rs). HotSpot fires them only with
//! `-XX:+DTraceMonitorProbes`: a JVM without the flag is reported as such
//! (`jvmdiag_agent_collector_unavailable`), never shown as "nothing contended".
use std::collections::HashMap;
use std::os::fd::BorrowedFd;
use std::path::Path;
use std::sync::Mutex;

use anyhow::{Context, Result};
use jvmdiag_inspect::limits::{CMDLINE_MAX_BYTES, OPTIONS_FILE_MAX_BYTES};
use jvmdiag_inspect::options::{jvm_options, monitor_probes_enabled};
use jvmdiag_inspect::root::{read_host_file, ProcRoot};
use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{Link, MapCore, MapFlags};

use super::inflight::{self, Table};
use super::parking;
use super::{
    threads, Attached, Collector, Flag, Health, LoadConfig, Number, ProbeMode, Switch, Target,
};
use crate::maps::{self, decode};
use crate::metrics;
use crate::model::{c_name, Family, Hist, Value};
use crate::skel::consts;
use crate::skel::monitors::types::{mon_stat, mon_thread_key, mon_wait, name_key};
use crate::skel::monitors::{MonitorsSkel, MonitorsSkelBuilder};

const PROBES: [&str; 5] = super::probe_names([
    (consts::MON_PROBE_ENTER, "monitor__contended__enter"),
    (consts::MON_PROBE_ENTERED, "monitor__contended__entered"),
    (consts::MON_PROBE_WAIT, "monitor__wait"),
    (consts::MON_PROBE_WAITED, "monitor__waited"),
    (consts::MON_PROBE_EXIT, "monitor__contended__exit"),
]);

/// Bound on /proc/PID/environ (JAVA_TOOL_OPTIONS, JDK_JAVA_OPTIONS).
const ENVIRON_MAX_BYTES: u64 = 1 << 20;
/// The reason label of a JVM whose monitor probes do not fire.
pub const NO_FLAG: &str = "no_DTraceMonitorProbes";
/// One entry per blocked thread, one per waiting thread (src/bpf/monitors.h).
const INFLIGHT: [Table; 2] = [
    Table {
        map: "mon_inflight",
        index: consts::MON_TABLE_INFLIGHT,
        per_jvm: consts::MON_INFLIGHT_PER_JVM,
        max: consts::MON_INFLIGHT_MAX,
    },
    Table {
        map: "wait_inflight",
        index: consts::MON_TABLE_WAIT,
        per_jvm: consts::WAIT_INFLIGHT_PER_JVM,
        max: consts::WAIT_INFLIGHT_MAX,
    },
];

/// `--max-classes`: monitor classes named per JVM (a JVM's own `maxClasses` may lower it).
pub static MAX_CLASSES: Number<u32> = Number {
    name: "max-classes",
    value_name: "K",
    default: 20,
    min: 1,
    max: 500,
    hide: false,
    help: "Monitor classes named per JVM (monitors collector); the rest count as \"other\"",
};

/// `--monitors-object-wait`: also time `Object.wait`. Off by default: it costs two more traps per
/// wait in every traced JVM with the flag, about 4.5 µs each, which halves a wait storm's
/// throughput (docs/performance.md); contended enters cost nothing unless contended.
pub static OBJECT_WAIT: Switch = Switch {
    name: "monitors-object-wait",
    help: "Also time Object.wait (monitors collector; the via=\"object_wait\" parked series): two more probes per wait, about 4.5 µs each, which halves a wait storm's throughput; off by default",
};

pub const FLAGS: &[Flag] = &[Flag::U32(&MAX_CLASSES), Flag::Switch(&OBJECT_WAIT)];

pub struct Monitors {
    skel: MonitorsSkel<'static>,
    /// host tgid -> (slot, whether the JVM runs with the flag), read once per JVM.
    flags: Mutex<HashMap<u32, (u32, bool)>>,
    /// `--monitors-object-wait`: the wait probes are attached too.
    object_wait: bool,
}

/// USDT probes it attaches in each JVM (`probe::size_usdt_specs`).
const USDT_PROBES: u32 = 5;

pub fn load(cfg: &LoadConfig, traced_pids: BorrowedFd<'_>) -> Result<Box<dyn Collector>> {
    let mut open = MonitorsSkelBuilder::default()
        .open(super::object_storage())
        .context("open monitors.bpf.o")?;
    let ro = open.maps.rodata_data.as_deref_mut().context("monitors: no rodata")?;
    let max_classes = cfg.settings.get(&MAX_CLASSES);
    let max_thread_names = cfg.settings.get(&threads::MAX_THREAD_NAMES);
    ro.collector_bit = cfg.collector_bit;
    ro.max_names = max_classes;
    ro.max_thread_names = max_thread_names;
    open.maps.traced_pids.reuse_fd(traced_pids)?;
    crate::stacks::configure!(
        open,
        cfg.stacks.as_deref(),
        cfg.settings.get(&threads::STACK_SAMPLES),
        cfg.settings.get(&threads::MAX_STACKS)
    );
    crate::probe::size_usdt_specs(open.open_object_mut(), cfg.max_jvms, USDT_PROBES)?;
    super::share_jvm_limits(&mut open.maps.jvm_limits, cfg)?;
    open.maps.mon_stats.set_max_entries(super::table_size(cfg.max_jvms, max_classes))?;
    // The named (class, thread) pairs and one "other" thread per class (max_classes + "other").
    let pairs = super::table_size(cfg.max_jvms, max_thread_names.saturating_add(max_classes));
    open.maps.mon_threads.set_max_entries(pairs)?;
    // Object.wait: the classes waited on, bounded like mon_stats' but counted apart, so waits
    // never take a contended class's name; the pairs as mon_threads.
    open.maps.wait_classes.set_max_entries(super::table_size(cfg.max_jvms, max_classes))?;
    open.maps.mon_waits.set_max_entries(pairs)?;
    let m = &mut open.maps;
    let shares = inflight::configure(
        [(&INFLIGHT[0], &mut m.mon_inflight), (&INFLIGHT[1], &mut m.wait_inflight)],
        &mut m.slot_namespace,
        cfg,
    )?;
    let ro = open.maps.rodata_data.as_deref_mut().context("monitors: no rodata")?;
    (ro.inflight_share, ro.inflight_ns_share) = (shares.jvm, shares.namespace);
    let skel = open.load().context("load monitors.bpf.o")?;
    let object_wait = cfg.settings.get(&OBJECT_WAIT);
    Ok(Box::new(Monitors { skel, flags: Mutex::new(HashMap::new()), object_wait }))
}

/// Reads an options file of process `pid` as the JVM does: an absolute path inside its root, a
/// relative one inside its working directory; through [`ProcRoot`], so no link leads out of
/// them (links are followed inside: ConfigMap files are links) and a path with `..` is not read.
fn read_options_file(pid: u32, path: &str) -> Option<Vec<u8>> {
    let p = Path::new(path);
    let root = if p.is_absolute() {
        ProcRoot::open(pid)
    } else {
        ProcRoot::from_dir(Path::new(&format!("/proc/{pid}/cwd")))
    };
    match root.and_then(|r| r.read_file_following_links(p, OPTIONS_FILE_MAX_BYTES)) {
        Ok(t) => Some(t),
        Err(e) => {
            tracing::warn!(pid, path, collector = "monitors", error = %e, "an options file was not read; its options are not known");
            None
        }
    }
}

fn read_flag(pid: u32) -> bool {
    let environ = read_host_file(Path::new(&format!("/proc/{pid}/environ")), ENVIRON_MAX_BYTES)
        .unwrap_or_default();
    let cmdline = read_host_file(Path::new(&format!("/proc/{pid}/cmdline")), CMDLINE_MAX_BYTES)
        .unwrap_or_default();
    let opts = jvm_options(&environ, &cmdline, &mut |path| read_options_file(pid, path));
    monitor_probes_enabled(opts.iter().map(String::as_str))
}

impl Monitors {
    /// The slots of the JVMs that want this collector but run without the flag (read once
    /// per JVM from its /proc entries; forgotten when the JVM leaves traced_pids).
    fn without_flag(&self) -> Vec<u32> {
        let bit = self.skel.maps.rodata_data.as_ref().map(|r| r.collector_bit).unwrap_or(0);
        let mask = (1u32 << consts::SLOT_BITS) - 1;
        let mut live = HashMap::new();
        for k in self.skel.maps.traced_pids.keys() {
            let (Some(tgid), Ok(Some(v))) =
                (decode::<u32>(&k), self.skel.maps.traced_pids.lookup(&k, MapFlags::ANY))
            else {
                continue;
            };
            let Some(v) = decode::<u32>(&v) else { continue };
            if v & bit != 0 {
                live.insert(tgid, v & mask);
            }
        }
        let mut flags = self.flags.lock().unwrap_or_else(|e| e.into_inner());
        flags.retain(|tgid, (slot, _)| live.get(tgid) == Some(slot));
        let mut out = Vec::new();
        for (tgid, slot) in live {
            let (_, on) = *flags.entry(tgid).or_insert_with(|| (slot, read_flag(tgid)));
            if !on {
                out.push(slot);
            }
        }
        out.sort_unstable();
        out
    }
}

impl Collector for Monitors {
    fn name(&self) -> &'static str {
        "monitors"
    }

    fn attach(&self, target: &Target<'_>) -> Result<Attached> {
        let binary = target.binary;
        let p = &self.skel.progs;
        let probes = [
            (&p.monitor_enter, "monitor__contended__enter"),
            (&p.monitor_entered, "monitor__contended__entered"),
            (&p.monitor_wait, "monitor__wait"),
            (&p.monitor_waited, "monitor__waited"),
        ];
        // Without --monitors-object-wait the wait probes are not attached: no trap per wait.
        // monitor__contended__exit is attached on demand (attach_holder).
        let wanted = if self.object_wait { 4 } else { 2 };
        let usdt: Result<Vec<_>> = probes
            .into_iter()
            .take(wanted)
            .map(|(prog, name)| {
                target.usdt(prog, "hotspot", name).with_context(|| format!("USDT hotspot:{name}"))
            })
            .collect();
        match usdt {
            Ok(links) => Ok(Attached { links, mode: ProbeMode::Usdt }),
            // No USDT notes: there is no symbol that marks exactly a contended enter, so
            // nothing is attached (logged; documented) rather than a failure of the JVM's
            // other collectors' mode. Its JVMs show no monitor series.
            Err(e) => {
                tracing::warn!(binary = %binary.display(), collector = "monitors", error = format!("{e:#}"), "no monitor probes for this libjvm.so");
                Ok(Attached { links: Vec::new(), mode: ProbeMode::Usdt })
            }
        }
    }

    fn contended_per_slot(&self) -> Option<Result<HashMap<u32, u64>>> {
        Some(maps::entries(&self.skel.maps.mon_threads).map(|pairs| {
            let mut per = HashMap::new();
            for (k, v) in &pairs {
                if let (Some(k), Some(n)) = (decode::<mon_thread_key>(k), maps::counter(v)) {
                    *per.entry(k.cls.slot).or_default() += n;
                }
            }
            per
        }))
    }

    fn attach_holder(&self, target: &Target<'_>) -> Option<Result<Vec<Link>>> {
        let exit = target
            .usdt(&self.skel.progs.monitor_exit, "hotspot", "monitor__contended__exit")
            .context("USDT hotspot:monitor__contended__exit");
        Some(exit.map(|l| vec![l]))
    }

    fn holder_exits(&self, slot: u32) -> Option<Result<u64>> {
        let v = self.skel.maps.mon_exits.lookup(&slot.to_ne_bytes(), MapFlags::ANY);
        Some(v.map(|v| v.as_deref().and_then(maps::counter).unwrap_or(0)).map_err(Into::into))
    }

    fn collect(&self, out: &mut Vec<Family>) -> Result<()> {
        let m = &self.skel.maps;
        out.extend(monitor_families(
            &maps::entries(&m.mon_threads)?,
            &maps::entries(&m.mon_stats)?,
            &self.without_flag(),
        ));
        out.extend(wait_families(&maps::entries(&m.mon_waits)?));
        out.push(inflight::jvm_lost_family(
            self.name(),
            &maps::entries(&m.inflight_lost)?,
            &INFLIGHT,
        ));
        Ok(())
    }

    fn forget(&self, slot: u32) -> Result<()> {
        let m = &self.skel.maps;
        maps::forget_where(&m.mon_stats, |k| {
            decode::<name_key>(k).is_some_and(|k| k.slot == slot)
        })?;
        maps::forget_where(&m.wait_classes, |k| {
            decode::<name_key>(k).is_some_and(|k| k.slot == slot)
        })?;
        for pairs in [&m.mon_threads, &m.mon_waits] {
            maps::forget_where(pairs, |k| {
                decode::<mon_thread_key>(k).is_some_and(|k| k.cls.slot == slot)
            })?;
        }
        let ns = inflight::namespace_of(&m.slot_namespace, slot);
        let held = (&m.inflight_held, &m.inflight_ns);
        inflight::forget_table(&m.mon_inflight, &INFLIGHT[0], held, ns, slot)?;
        inflight::forget_table(&m.wait_inflight, &INFLIGHT[1], held, ns, slot)?;
        inflight::forget_lost(&m.inflight_lost, slot)?;
        for budget in [
            &m.name_budget,
            &m.mon_thread_budget,
            &m.wait_class_budget,
            &m.wait_thread_budget,
            &m.mon_exits,
        ] {
            maps::reset_slot(budget, slot)?;
        }
        Ok(())
    }

    fn forget_namespace(&self, namespace: u32) -> Result<()> {
        inflight::forget_namespace(&self.skel.maps.inflight_ns, &INFLIGHT, namespace)
    }

    fn health(&self) -> Result<Health> {
        let stats = maps::read_stats(&self.skel.maps.stats)?;
        let mut h = super::health_from(&stats, &PROBES);
        let m = &self.skel.maps;
        h.entries = [&m.mon_stats, &m.mon_threads, &m.wait_classes, &m.mon_waits]
            .iter()
            .map(|t| t.keys().count() as u64)
            .sum();
        h.inflight_lost = inflight::lost_totals(&stats, &INFLIGHT);
        Ok(h)
    }
}

/// The class as Java spells it: HotSpot's internal name `java/lang/Object` ->
/// `java.lang.Object` (a truncated name stays truncated).
pub fn class_label(internal: &str) -> String {
    internal.replace('/', ".")
}

/// `jvmdiag_monitor_contended_total` from mon_threads entries (mon_thread_key -> __u64
/// enters), `jvmdiag_monitor_blocked_seconds` from mon_stats entries (name_key -> mon_stat),
/// and `jvmdiag_agent_collector_unavailable` for the JVMs (slots) whose probes cannot fire.
pub fn monitor_families(
    threads: &[(Vec<u8>, Vec<u8>)],
    stats: &[(Vec<u8>, Vec<u8>)],
    without_flag: &[u32],
) -> [Family; 3] {
    let mut enters = metrics::MONITOR_CONTENDED.family();
    for (k, v) in threads {
        let (Some(key), Some(n)) = (decode::<mon_thread_key>(k), decode::<u64>(v)) else {
            continue;
        };
        let labels = vec![
            ("monitor_class", class_label(&c_name(&key.cls.name))),
            ("thread_name", c_name(&key.thread_name)),
        ];
        enters.jvm(key.cls.slot, labels, Value::Counter(n));
    }
    let mut blocked = metrics::MONITOR_BLOCKED.family();
    for (k, v) in stats {
        let (Some(key), Some(st)) = (decode::<name_key>(k), decode::<mon_stat>(v)) else {
            continue;
        };
        let h = Hist {
            buckets: st.blocked.buckets,
            sum_ns: st.blocked.sum_ns,
            count: st.blocked.count,
        };
        blocked.jvm(
            key.slot,
            vec![("monitor_class", class_label(&c_name(&key.name)))],
            Value::Histogram(h),
        );
    }
    let mut unavailable = metrics::AGENT_COLLECTOR_UNAVAILABLE.family();
    for &slot in without_flag {
        unavailable.jvm(
            slot,
            vec![("collector", "monitors".into()), ("reason", NO_FLAG.into())],
            Value::Gauge(1.0),
        );
    }
    [enters, blocked, unavailable]
}

/// The `via="object_wait"` series of `jvmdiag_thread_parks_total` and
/// `jvmdiag_thread_parked_seconds_total` from mon_waits entries (mon_thread_key -> mon_wait):
/// Object.wait calls and seconds waited by thread name and waited-on object's class.
pub fn wait_families(waits: &[(Vec<u8>, Vec<u8>)]) -> [Family; 2] {
    let mut f = parking::waited_families();
    for (k, v) in waits {
        let (Some(key), Some(w)) = (decode::<mon_thread_key>(k), decode::<mon_wait>(v)) else {
            continue;
        };
        let class = class_label(&c_name(&key.cls.name));
        parking::push_waited(
            &mut f,
            key.cls.slot,
            c_name(&key.thread_name),
            parking::VIA_OBJECT_WAIT,
            class,
            w.waits,
            w.waited_ns,
        );
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_names_are_spelled_as_in_java() {
        assert_eq!(class_label("java/security/SecureRandom"), "java.security.SecureRandom");
    }
}
