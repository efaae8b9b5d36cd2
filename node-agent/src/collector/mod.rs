//! What a collector is: one module per collector behind the `Collector` trait, registered
//! by name in `REGISTRY` (which also makes its `--collector.<name>` / `--no-collector.<name>`
//! flags and adds the flags it declares), loaded with a `LoadConfig`, reporting its own
//! `Health`.
//!
//! A collector's module declares its own flags (statics of [`Number`] / [`Switch`], listed
//! in its `Registration::flags`); its loader reads their values from
//! `LoadConfig::settings`. Attaching goes through src/probe.rs, symbol lookups through
//! src/symbols.rs, map reading through src/maps.rs, metric families come from the catalog
//! (src/metrics.rs). Adding one: the checklist in docs/development.md, "Adding a collector".
use std::collections::BTreeMap;
use std::mem::MaybeUninit;
use std::os::fd::BorrowedFd;

use anyhow::Result;
use clap::{Arg, ArgAction, ArgMatches};
use libbpf_rs::{Link, OpenObject};

use crate::metrics::{self, Desc, ProbeMode};
use crate::model::Family;
use crate::skel::consts;

pub mod compilation;
pub mod inflight;
pub mod monitors;
pub mod parking;
pub mod safepoints;
pub mod threads;
pub mod vmops;

/// Load-time settings every collector may read (set as rodata before load): the agent-wide
/// ones here, each collector's own flags in `settings`.
#[derive(Debug, Clone)]
pub struct LoadConfig {
    /// JVM slots in use (`--max-jvms`, at most MAX_JVMS): the per-JVM tables are sized for it.
    pub max_jvms: u32,
    /// The collector's own bit (`Registration::bit`), its programs' `collector_bit`.
    pub collector_bit: u32,
    /// The agent's `jvm_limits` map (common.bpf.h: per-slot limits of each JVM), which every
    /// collector object reuses ([`share_jvm_limits`]); None: each object keeps its own, empty.
    pub jvm_limits: Option<std::sync::Arc<std::os::fd::OwnedFd>>,
    /// The agent's `slot_namespace` map (inflight.bpf.h: each slot's namespace id), which every
    /// object with in-flight tables reuses (`inflight::configure`); None: no namespace shares.
    pub slot_namespace: Option<std::sync::Arc<std::os::fd::OwnedFd>>,
    /// The agent's culprit-stack maps (src/stacks.rs), which every object taking stacks
    /// reuses; None: its stacks are off.
    pub stacks: Option<std::sync::Arc<crate::stacks::Fds>>,
    /// `--max-jvms-per-namespace`: sets the in-flight tables' namespace shares.
    pub max_jvms_per_namespace: u32,
    /// The values of every registered collector's flags (`Registration::flags`).
    pub settings: Settings,
}

/// A number flag a collector declares: `--<name> <VALUE_NAME>`, `default` when not given,
/// refused outside `min..=max`.
#[derive(Debug)]
pub struct Number<T: 'static> {
    pub name: &'static str,
    pub value_name: &'static str,
    pub default: T,
    pub min: T,
    pub max: T,
    /// Left out of `--help` (a setting for tests).
    pub hide: bool,
    pub help: &'static str,
}

/// A switch a collector declares: `--<name>`, off unless given.
#[derive(Debug)]
pub struct Switch {
    pub name: &'static str,
    pub help: &'static str,
}

/// One of the flags a collector declares, as its `Registration` lists them. The flag is
/// declared once, beside the collector that owns it; another collector (or the sidecar) reads
/// it through the same static, from [`Settings`].
#[derive(Debug, Clone, Copy)]
pub enum Flag {
    U32(&'static Number<u32>),
    U64(&'static Number<u64>),
    Switch(&'static Switch),
}

/// The `default_value` clap takes is a `&'static str`; the flags are made once per parse.
fn leaked(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

impl Flag {
    pub fn name(&self) -> &'static str {
        match self {
            Flag::U32(n) => n.name,
            Flag::U64(n) => n.name,
            Flag::Switch(s) => s.name,
        }
    }

    /// The clap argument (its id is its long name).
    pub fn arg(&self) -> Arg {
        let arg = Arg::new(self.name()).long(self.name());
        match self {
            Flag::U32(n) => arg
                .value_name(n.value_name)
                .action(ArgAction::Set)
                .default_value(leaked(n.default.to_string()))
                .value_parser(clap::value_parser!(u32).range(i64::from(n.min)..=i64::from(n.max)))
                .hide(n.hide)
                .help(n.help),
            Flag::U64(n) => arg
                .value_name(n.value_name)
                .action(ArgAction::Set)
                .default_value(leaked(n.default.to_string()))
                .value_parser(clap::value_parser!(u64).range(n.min..=n.max))
                .hide(n.hide)
                .help(n.help),
            Flag::Switch(s) => arg.action(ArgAction::SetTrue).help(s.help),
        }
    }

    /// Its value as parsed (a switch: 0 or 1); None when `m` does not have it.
    fn parsed(&self, m: &ArgMatches) -> Option<u64> {
        match self {
            Flag::U32(n) => m.try_get_one::<u32>(n.name).ok().flatten().map(|v| u64::from(*v)),
            Flag::U64(n) => m.try_get_one::<u64>(n.name).ok().flatten().copied(),
            Flag::Switch(s) => m.try_get_one::<bool>(s.name).ok().flatten().map(|v| u64::from(*v)),
        }
    }
}

/// Every registered collector's flags as given on the command line (or their defaults); a
/// collector's loader reads its own here, by the flag's static.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    given: BTreeMap<&'static str, u64>,
}

impl Settings {
    /// The values of every registered flag in what clap parsed.
    pub fn from_matches(m: &ArgMatches) -> Settings {
        let given = REGISTRY
            .iter()
            .flat_map(|r| r.flags)
            .filter_map(|f| Some((f.name(), f.parsed(m)?)))
            .collect();
        Settings { given }
    }

    /// A flag's value: as given, else its default.
    pub fn get<F: Setting + ?Sized>(&self, flag: &F) -> F::Value {
        flag.read(self.given.get(flag.name()).copied())
    }
}

/// A flag whose value [`Settings::get`] returns, typed.
pub trait Setting {
    type Value;
    fn name(&self) -> &'static str;
    /// The value from what was given (None: the default).
    fn read(&self, given: Option<u64>) -> Self::Value;
}

impl Setting for Number<u32> {
    type Value = u32;
    fn name(&self) -> &'static str {
        self.name
    }
    fn read(&self, given: Option<u64>) -> u32 {
        given.and_then(|v| u32::try_from(v).ok()).unwrap_or(self.default)
    }
}

impl Setting for Number<u64> {
    type Value = u64;
    fn name(&self) -> &'static str {
        self.name
    }
    fn read(&self, given: Option<u64>) -> u64 {
        given.unwrap_or(self.default)
    }
}

impl Setting for Switch {
    type Value = bool;
    fn name(&self) -> &'static str {
        self.name
    }
    fn read(&self, given: Option<u64>) -> bool {
        given == Some(1)
    }
}

/// Makes an object's `jvm_limits` map the agent's one, so the limits written per JVM slot
/// at attach reach its programs (`jvm_limit()` in common.bpf.h).
pub(crate) fn share_jvm_limits(
    map: &mut libbpf_rs::OpenMapMut<'_>,
    cfg: &LoadConfig,
) -> Result<()> {
    if let Some(fd) = &cfg.jvm_limits {
        use std::os::fd::AsFd;
        map.reuse_fd(fd.as_fd())?;
    }
    Ok(())
}

/// A JVM slot's limits as written into `jvm_limits` (thread names, methods, classes; 0: the
/// agent's own value). None when the map cannot be read.
pub(crate) fn jvm_limits_of<M: libbpf_rs::MapCore>(map: &M, slot: u32) -> Option<[u32; 3]> {
    let v = map.lookup(&slot.to_ne_bytes(), libbpf_rs::MapFlags::ANY).ok()??;
    let l = crate::maps::decode::<crate::skel::threads::types::jvm_limits>(&v)?;
    Some([l.thread_names, l.methods, l.classes])
}

pub use crate::probe::Target;

/// The links of one collector in one JVM (dropping them detaches).
pub struct Attached {
    pub links: Vec<Link>,
    pub mode: ProbeMode,
}

pub trait Collector {
    fn name(&self) -> &'static str;
    /// Attaches to one JVM: its libjvm.so, in its process alone (the kernel side also
    /// filters by `traced_pids`, which holds the slot and the collectors it wants).
    fn attach(&self, target: &Target<'_>) -> Result<Attached>;
    /// Reads the kernel maps into families (per-JVM samples carry the slot).
    fn collect(&self, out: &mut Vec<Family>) -> Result<()>;
    /// Drops every map entry of a JVM slot (the JVM is gone and was reported).
    fn forget(&self, slot: u32) -> Result<()>;
    /// A namespace id no slot holds any more (after `forget` of its last slot): the in-flight
    /// tables' counts of it go back to 0 (`inflight::forget_namespace`).
    fn forget_namespace(&self, _namespace: u32) -> Result<()> {
        Ok(())
    }
    /// (probe name, events, map errors, overflowed names, filtered) for agent health.
    fn health(&self) -> Result<Health>;
    /// Threads started so far per JVM slot: what the on-demand starter probe's rate trigger
    /// reads (src/starters.rs). Only the threads collector counts them.
    fn starts_per_slot(&self) -> Option<Result<std::collections::HashMap<u32, u64>>> {
        None
    }
    /// Contended monitor enters so far per JVM slot: what the on-demand holder probe's rate
    /// trigger reads (src/holders.rs). Only the monitors collector counts them.
    fn contended_per_slot(&self) -> Option<Result<std::collections::HashMap<u32, u64>>> {
        None
    }
    /// The on-demand holder probe (`monitor__contended__exit`, src/holders.rs) in one JVM;
    /// None from every collector but the monitors collector.
    fn attach_holder(&self, _target: &Target<'_>) -> Option<Result<Vec<Link>>> {
        None
    }
    /// The holder probe's hits so far in one JVM slot (src/holders.rs); None from every
    /// collector but the monitors collector.
    fn holder_exits(&self, _slot: u32) -> Option<Result<u64>> {
        None
    }
}

#[derive(Debug, Default, Clone)]
pub struct Health {
    pub events: Vec<(&'static str, u64)>,
    pub map_errors: u64,
    pub names_overflow: u64,
    pub filtered: u64,
    /// Entries currently in the collector's per-JVM tables.
    pub entries: u64,
    /// (map, reason, begins) that found no room in its in-flight tables (inflight.rs).
    pub inflight_lost: Vec<(&'static str, &'static str, u64)>,
    /// (map, entries dropped) of its LRU tables since the agent started.
    pub evictions: Vec<(&'static str, u64)>,
}

pub type LoadFn = fn(&LoadConfig, BorrowedFd<'_>) -> Result<Box<dyn Collector>>;

pub struct Registration {
    /// The collector's name in the agent: flags (`--collector.<name>`) and health labels.
    pub name: &'static str,
    /// Its name in the `jvm.diagnostics.dev/collectors` annotation, which is the CRD's
    /// `spec.collectors.<name>` (the same as `name`; a former name is in cli::FORMER_NAMES).
    pub annotation: &'static str,
    pub help: &'static str,
    pub load: LoadFn,
    /// The flags it declares (`--<flag>`, beside `--collector.<name>`): their names, defaults,
    /// ranges and help; `load` reads their values from `LoadConfig::settings`. A flag is
    /// declared by one collector; another one that is bounded by it reads it too.
    pub flags: &'static [Flag],
    /// The (empty) metric families it exports per JVM: a pod that asked for none of the
    /// collectors exporting a family gets none of its series. A family may have series from two
    /// collectors (the parked families: parks from parking, Object.wait from monitors).
    pub families: &'static [&'static Desc],
}

impl Registration {
    /// The collector's bit in a `traced_pids` value, above the JVM's slot (src/bpf/jvm.h):
    /// its place in `REGISTRY`. Set for the JVMs that want it; the loader gives it to the
    /// collector's programs as `collector_bit`.
    pub fn bit(&self) -> u32 {
        let place =
            REGISTRY.iter().position(|r| r.name == self.name).expect("a registered collector");
        1 << (consts::SLOT_BITS + place as u32)
    }
}

const _: () = assert!(
    REGISTRY.len() <= 32 - consts::SLOT_BITS as usize,
    "a collector bit per collector above the slot bits"
);

pub const REGISTRY: &[Registration] = &[
    Registration {
        name: "threads",
        annotation: "threads",
        help: "thread starts by thread name (USDT hotspot:thread__start)",
        load: threads::load,
        flags: threads::FLAGS,
        families: &[
            &metrics::THREAD_STARTS,
            &metrics::THREAD_STARTS_BY_STARTER,
            &metrics::THREAD_START_SECONDS,
            &metrics::AGENT_STARTER_PROBE_ATTACHED,
            &metrics::AGENT_STARTER_PROBE_WINDOWS,
        ],
    },
    Registration {
        name: "safepoints",
        annotation: "safepoints",
        help: "safepoint pause and time to safepoint by VM operation",
        load: safepoints::load,
        flags: &[],
        families: &[&metrics::SAFEPOINT_PAUSE, &metrics::SAFEPOINT_SYNC],
    },
    Registration {
        name: "vmOperations",
        annotation: "vmOperations",
        help: "VM operation durations by name and at_safepoint",
        load: vmops::load,
        flags: vmops::FLAGS,
        families: &[&metrics::VM_OPERATION, &metrics::VM_OPERATION_REQUESTS],
    },
    Registration {
        name: "compilation",
        annotation: "compilation",
        help: "JIT compilations by compiler and method, code cache use and full events",
        load: compilation::load,
        flags: compilation::FLAGS,
        families: &[
            &metrics::COMPILATIONS,
            &metrics::COMPILATION_SECONDS,
            &metrics::METHOD_COMPILATIONS,
            &metrics::CODE_CACHE_USED,
            &metrics::CODE_CACHE_MAX,
            &metrics::CODE_CACHE_FULL,
        ],
    },
    Registration {
        name: "monitors",
        annotation: "monitors",
        help: "contended monitor enters and time blocked by monitor class, Object.wait by thread name and class (needs -XX:+DTraceMonitorProbes)",
        load: monitors::load,
        flags: monitors::FLAGS,
        families: &[
            &metrics::MONITOR_CONTENDED,
            &metrics::MONITOR_BLOCKED,
            &metrics::AGENT_COLLECTOR_UNAVAILABLE,
            &metrics::THREAD_PARKS,
            &metrics::THREAD_PARKED_SECONDS,
        ],
    },
    Registration {
        name: "parking",
        annotation: "parking",
        help: "thread parks and time parked by thread name (USDT hotspot:thread__park__begin/end)",
        load: parking::load,
        flags: &[],
        families: &[&metrics::THREAD_PARKS, &metrics::THREAD_PARKED_SECONDS],
    },
];

/// Storage for a skeleton's open object that lives as long as the agent (collectors are
/// created once at start and never dropped before exit).
pub(crate) fn object_storage() -> &'static mut MaybeUninit<OpenObject> {
    Box::leak(Box::new(MaybeUninit::uninit()))
}

/// Map sizes: enough for every JVM slot the agent uses (`--max-jvms`) times the per-JVM name
/// budget plus "other". The hash tables allocate entries as they are used, but their bucket
/// arrays follow this size (rounded up to a power of two), so it sets the idle footprint.
pub(crate) fn table_size(max_jvms: u32, per_jvm: u32) -> u32 {
    max_jvms.min(consts::MAX_JVMS).saturating_mul(per_jvm.saturating_add(1)).max(1)
}

/// A collector's probe names by their index in its `enum *_probe` (src/bpf/<collector>.h,
/// the stat index STAT_EVENTS_0 + i): every index once, below STAT_MAP_ERRORS (checked at
/// compile time).
pub const fn probe_names<const N: usize>(entries: [(u32, &'static str); N]) -> [&'static str; N] {
    assert!(N <= consts::STAT_MAP_ERRORS as usize, "more probes than event stats");
    let mut names = [""; N];
    let mut i = 0;
    while i < N {
        let (index, name) = entries[i];
        assert!(
            (index as usize) < N && names[index as usize].is_empty(),
            "probe indexes must be 0..N, each once"
        );
        names[index as usize] = name;
        i += 1;
    }
    names
}

pub fn health_from(stats: &[u64], probes: &[&'static str]) -> Health {
    Health {
        events: probes
            .iter()
            .enumerate()
            .map(|(i, p)| (*p, stats.get(i).copied().unwrap_or(0)))
            .collect(),
        map_errors: stats.get(consts::STAT_MAP_ERRORS as usize).copied().unwrap_or(0),
        names_overflow: stats.get(consts::STAT_NAMES_OVERFLOW as usize).copied().unwrap_or(0),
        filtered: stats.get(consts::STAT_FILTERED as usize).copied().unwrap_or(0),
        entries: 0,
        inflight_lost: Vec::new(),
        evictions: Vec::new(),
    }
}
