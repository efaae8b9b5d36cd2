//! Thread parks per JVM and folded thread name: park calls and seconds parked
//! (src/bpf/parking.bpf.c, USDT `hotspot:thread__park__begin` / `__end`; no JVM flag), the
//! `via="park"` series of the parked families; the monitors collector adds Object.wait's.
use std::os::fd::BorrowedFd;

use anyhow::{Context, Result};
use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{MapCore, MapFlags};

use super::inflight::{self, Table};
use super::{threads, Attached, Collector, Health, LoadConfig, ProbeMode, Target};
use crate::maps::{self, decode};
use crate::metrics;
use crate::model::{c_name, Family, Value};
use crate::probe;
use crate::skel::consts;
use crate::skel::parking::types::{park_count, park_key, park_name};
use crate::skel::parking::{ParkingSkel, ParkingSkelBuilder};

const PROBES: [&str; 4] = super::probe_names([
    (consts::PARK_PROBE_BEGIN, "thread__park__begin"),
    (consts::PARK_PROBE_END, "thread__park__end"),
    (consts::PARK_PROBE_BEGIN_SYM, "Parker::park"),
    (consts::PARK_PROBE_END_SYM, "Parker::park (return)"),
]);
/// Without USDT notes: `Parker::park(bool, jlong)`, called only by `Unsafe_Park`, between
/// the two probes (the same in JDK 11 to 25).
const SYM_PARK: &str = "_ZN6Parker4parkEbl";
/// One entry per parked thread (src/bpf/parking.h).
const INFLIGHT: [Table; 1] = [Table {
    map: "park_inflight",
    index: consts::PARK_TABLE_INFLIGHT,
    per_jvm: consts::PARK_INFLIGHT_PER_JVM,
    max: consts::PARK_INFLIGHT_MAX,
}];

fn slot_of(k: &[u8]) -> Option<u32> {
    decode::<park_key>(k).map(|k| k.slot)
}

pub struct Parking {
    skel: ParkingSkel<'static>,
}

/// USDT probes it attaches in each JVM (`probe::size_usdt_specs`).
const USDT_PROBES: u32 = 2;

pub fn load(cfg: &LoadConfig, traced_pids: BorrowedFd<'_>) -> Result<Box<dyn Collector>> {
    let mut open = ParkingSkelBuilder::default()
        .open(super::object_storage())
        .context("open parking.bpf.o")?;
    let ro = open.maps.rodata_data.as_deref_mut().context("parking: no rodata")?;
    let max_names = cfg.settings.get(&threads::MAX_THREAD_NAMES);
    ro.collector_bit = cfg.collector_bit;
    ro.max_names = max_names;
    open.maps.traced_pids.reuse_fd(traced_pids)?;
    crate::stacks::configure!(
        open,
        cfg.stacks.as_deref(),
        cfg.settings.get(&threads::STACK_SAMPLES),
        cfg.settings.get(&threads::MAX_STACKS)
    );
    probe::prepare_uprobes(open.open_object_mut());
    probe::size_usdt_specs(open.open_object_mut(), cfg.max_jvms, USDT_PROBES)?;
    super::share_jvm_limits(&mut open.maps.jvm_limits, cfg)?;
    open.maps.park_counts.set_max_entries(super::table_size(cfg.max_jvms, max_names))?;
    open.maps.park_names.set_max_entries(super::table_size(cfg.max_jvms, max_names))?;
    let m = &mut open.maps;
    let shares =
        inflight::configure([(&INFLIGHT[0], &mut m.park_inflight)], &mut m.slot_namespace, cfg)?;
    let ro = open.maps.rodata_data.as_deref_mut().context("parking: no rodata")?;
    (ro.inflight_share, ro.inflight_ns_share) = (shares.jvm, shares.namespace);
    let skel = open.load().context("load parking.bpf.o")?;
    Ok(Box::new(Parking { skel }))
}

impl Collector for Parking {
    fn name(&self) -> &'static str {
        "parking"
    }

    fn attach(&self, target: &Target<'_>) -> Result<Attached> {
        let p = &self.skel.progs;
        let usdt = target
            .usdt(&p.park_begin, "hotspot", "thread__park__begin")
            .context("USDT hotspot:thread__park__begin")
            .and_then(|b| {
                Ok(vec![
                    b,
                    target
                        .usdt(&p.park_end, "hotspot", "thread__park__end")
                        .context("USDT hotspot:thread__park__end")?,
                ])
            });
        match usdt {
            Ok(links) => Ok(Attached { links, mode: ProbeMode::Usdt }),
            Err(e) => {
                let begin = probe::uprobe_sym(&p.park_begin_sym, target, SYM_PARK, false, 0)
                    .map_err(|u| e.context(format!("and {u:#}")))?;
                let end = probe::uprobe_sym(&p.park_end_sym, target, SYM_PARK, true, 0)?;
                Ok(Attached { links: vec![begin, end], mode: ProbeMode::Uprobe })
            }
        }
    }

    fn collect(&self, out: &mut Vec<Family>) -> Result<()> {
        let names = &self.skel.maps.park_names;
        let counts = maps::entries(&self.skel.maps.park_counts)?;
        out.extend(park_families(&counts, |k| names.lookup(k, MapFlags::ANY).ok().flatten()));
        out.push(inflight::jvm_lost_family(
            self.name(),
            &maps::entries(&self.skel.maps.inflight_lost)?,
            &INFLIGHT,
        ));
        Ok(())
    }

    fn forget(&self, slot: u32) -> Result<()> {
        let m = &self.skel.maps;
        for t in [&m.park_counts, &m.park_names] {
            maps::forget_where(t, |k| slot_of(k) == Some(slot))?;
        }
        let ns = inflight::namespace_of(&m.slot_namespace, slot);
        let held = (&m.inflight_held, &m.inflight_ns);
        inflight::forget_table(&m.park_inflight, &INFLIGHT[0], held, ns, slot)?;
        inflight::forget_lost(&m.inflight_lost, slot)?;
        maps::reset_slot(&m.name_budget, slot)
    }

    fn forget_namespace(&self, namespace: u32) -> Result<()> {
        inflight::forget_namespace(&self.skel.maps.inflight_ns, &INFLIGHT, namespace)
    }

    fn health(&self) -> Result<Health> {
        let stats = maps::read_stats(&self.skel.maps.stats)?;
        let mut h = super::health_from(&stats, &PROBES);
        h.entries = (self.skel.maps.park_counts.keys().count()
            + self.skel.maps.park_names.keys().count()) as u64;
        h.inflight_lost = inflight::lost_totals(&stats, &INFLIGHT);
        Ok(h)
    }
}

/// The `via` label of the parked families: how the thread waited. `park` is
/// LockSupport.park (this collector), `object_wait` is Object.wait (the monitors collector,
/// src/collector/monitors.rs), whose series also name the waited-on object's class.
pub const VIA_PARK: &str = "park";
pub const VIA_OBJECT_WAIT: &str = "object_wait";

/// Empty `jvmdiag_thread_parks_total` and `jvmdiag_thread_parked_seconds_total` families, which
/// [`push_waited`] fills.
pub fn waited_families() -> [Family; 2] {
    [metrics::THREAD_PARKS.family(), metrics::THREAD_PARKED_SECONDS.family()]
}

/// One series of both parked families: `waits` calls and `ns` waited by the threads named
/// `thread_name` of the JVM in `slot`, `via` park or Object.wait (on an object of
/// `monitor_class`; empty for a park, so every series of the family has the same labels).
pub fn push_waited(
    f: &mut [Family; 2],
    slot: u32,
    thread_name: String,
    via: &'static str,
    monitor_class: String,
    waits: u64,
    ns: u64,
) {
    let labels = vec![
        ("thread_name", thread_name),
        ("via", via.to_string()),
        ("monitor_class", monitor_class),
    ];
    f[0].jvm(slot, labels.clone(), Value::Counter(waits));
    f[1].jvm(slot, labels, Value::CounterF(ns as f64 / 1e9));
}

/// `jvmdiag_thread_parks_total` and `jvmdiag_thread_parked_seconds_total` (`via="park"`) from
/// park_counts entries (park_key -> park_count), each name's text from park_names.
pub fn park_families(
    counts: &[(Vec<u8>, Vec<u8>)],
    name: impl Fn(&[u8]) -> Option<Vec<u8>>,
) -> [Family; 2] {
    let mut f = waited_families();
    for (k, v) in counts {
        let (Some(key), Some(c)) = (decode::<park_key>(k), decode::<park_count>(v)) else {
            continue;
        };
        let Some(text) = name(k).and_then(|t| decode::<park_name>(&t)) else { continue };
        push_waited(
            &mut f,
            key.slot,
            c_name(&text.name),
            VIA_PARK,
            String::new(),
            c.parks,
            c.parked_ns,
        );
    }
    f
}
