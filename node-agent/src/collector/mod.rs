//! One collector per module behind one small trait, registered by name in `REGISTRY`
//! and switchable with `--collector.<name>` / `--no-collector.<name>`.
//!
//! Adding a collector: `src/bpf/<name>.bpf.c` + `<name>.h`, a module here implementing
//! `Collector`, its skeleton in `skel.rs`, and one line in `REGISTRY`.
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::mem::MaybeUninit;
use std::os::fd::BorrowedFd;
use std::path::Path;

use anyhow::{Context, Result};
use jvmdiag_inspect::elf;
use libbpf_rs::{Link, MapCore, MapFlags, OpenObject, UprobeOpts};

use crate::model::{c_name, Family, Hist, Kind, Value};
use crate::skel::consts;

pub mod compilation;
pub mod safepoints;
pub mod threads;
pub mod vmops;

/// Load-time settings every collector may read (set as rodata before load).
#[derive(Debug, Clone)]
pub struct LoadConfig {
    pub max_thread_names: u32,
    pub max_vmop_names: u32,
    /// Compilation collector: methods named per JVM (`--max-methods`).
    pub max_methods: u32,
    /// Threads collector: attach `JVM_StartThread` instead of `hotspot:thread__start`.
    pub jvm_start_thread: bool,
}

/// How a collector reached a JVM's events, reported in `jvmdiag_jvm_info{probe_mode}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ProbeMode {
    Usdt,
    Uprobe,
    /// No probe attached: counters from hsperfdata only, or nothing (src/fallback.rs).
    Hsperfdata,
}

/// The links of one collector on one libjvm.so file (dropping them detaches).
pub struct Attached {
    pub links: Vec<Link>,
    pub mode: ProbeMode,
}

pub trait Collector {
    fn name(&self) -> &'static str;
    /// Attaches to the libjvm.so at `binary` (a /proc/self/fd path) for every process
    /// (pid -1); the kernel side filters by `traced_pids`.
    fn attach(&self, binary: &Path) -> Result<Attached>;
    /// Reads the kernel maps into families (per-JVM samples carry the slot).
    fn collect(&self, out: &mut Vec<Family>) -> Result<()>;
    /// Drops every map entry of a JVM slot (the JVM is gone and was reported).
    fn forget(&self, slot: u32) -> Result<()>;
    /// (probe name, events, map errors, overflowed names, filtered) for agent health.
    fn health(&self) -> Result<Health>;
}

#[derive(Debug, Default, Clone)]
pub struct Health {
    pub events: Vec<(&'static str, u64)>,
    pub map_errors: u64,
    pub names_overflow: u64,
    pub filtered: u64,
    /// Entries currently in the collector's per-JVM tables.
    pub entries: u64,
}

pub type LoadFn = fn(&LoadConfig, BorrowedFd<'_>) -> Result<Box<dyn Collector>>;

pub struct Registration {
    pub name: &'static str,
    pub help: &'static str,
    pub load: LoadFn,
    /// The collector's bit in a `traced_pids` value (WANTS(COLLECTOR_*) in src/bpf/jvm.h,
    /// which its `.bpf.c` names as THIS_COLLECTOR): set for the JVMs that want it.
    pub wants: u32,
    /// The (empty) metric families it exports per JVM: a pod that did not ask for the
    /// collector gets none of them.
    pub families: &'static [fn() -> Family],
}

/// WANTS(collector) of src/bpf/jvm.h: one bit per collector above a JVM's slot.
const fn wants(collector: u32) -> u32 {
    1 << (consts::SLOT_BITS + collector)
}

pub const REGISTRY: &[Registration] = &[
    Registration {
        name: "threads",
        help: "thread starts by thread name (USDT hotspot:thread__start)",
        load: threads::load,
        wants: wants(consts::COLLECTOR_THREADS),
        families: &[threads::family],
    },
    Registration {
        name: "safepoints",
        help: "safepoint pause and time to safepoint by VM operation",
        load: safepoints::load,
        wants: wants(consts::COLLECTOR_SAFEPOINTS),
        families: &[safepoints::pause_family, safepoints::sync_family],
    },
    Registration {
        name: "vmops",
        help: "VM operation durations by name and at_safepoint",
        load: vmops::load,
        wants: wants(consts::COLLECTOR_VMOPS),
        families: &[vmops::family],
    },
    Registration {
        name: "compilation",
        help: "JIT compilations by compiler and method, code cache use and full events",
        load: compilation::load,
        wants: wants(consts::COLLECTOR_COMPILATION),
        families: &[
            compilation::compilations_family,
            compilation::seconds_family,
            compilation::methods_family,
            compilation::used_family,
            compilation::max_family,
            compilation::full_family,
        ],
    },
];

/// Storage for a skeleton's open object that lives as long as the agent (collectors are
/// created once at start and never dropped before exit).
pub(crate) fn object_storage() -> &'static mut MaybeUninit<OpenObject> {
    Box::leak(Box::new(MaybeUninit::uninit()))
}

/// Map sizes: enough for every JVM slot times the per-JVM name budget plus "other".
pub(crate) fn table_size(per_jvm: u32) -> u32 {
    crate::attach::MAX_JVMS.saturating_mul(per_jvm.saturating_add(1)).max(1)
}

/// Key layout shared by every name table: struct name_key in src/bpf/jvm.h.
pub(crate) struct NameKey {
    pub slot: u32,
    pub flags: u32,
    pub name: String,
    /// (file index, vtable address relative to the load bias) of a VM operation named by
    /// its vtable in uprobe mode (`struct vtable_name`); `name` is empty then.
    pub vtable: Option<(u32, u64)>,
}

pub(crate) fn parse_name_key(k: &[u8]) -> Option<NameKey> {
    let name = k.get(8..8 + consts::NAME_LEN as usize)?;
    let slot = u32::from_ne_bytes(k[0..4].try_into().ok()?);
    let flags = u32::from_ne_bytes(k[4..8].try_into().ok()?);
    if u32::from(k[8]) == consts::VTABLE_TAG {
        let file = u32::from_ne_bytes(k[12..16].try_into().ok()?);
        let rel = u64::from_ne_bytes(k[16..24].try_into().ok()?);
        return Some(NameKey { slot, flags, name: String::new(), vtable: Some((file, rel)) });
    }
    let raw: Vec<i8> = name.iter().map(|&b| b as i8).collect();
    Some(NameKey { slot, flags, name: c_name(&raw), vtable: None })
}

pub(crate) fn parse_hist(v: &[u8]) -> Option<Hist> {
    // struct hist: the buckets, then sum_ns and count
    let mut h = Hist::default();
    let n = h.buckets.len();
    if v.len() < (n + 2) * 8 {
        return None;
    }
    let u = |i: usize| u64::from_ne_bytes(v[i * 8..i * 8 + 8].try_into().unwrap());
    for (i, b) in h.buckets.iter_mut().enumerate() {
        *b = u(i);
    }
    h.sum_ns = u(n);
    h.count = u(n + 1);
    Some(h)
}

/// Deletes every key of a name table that belongs to `slot`.
pub(crate) fn forget_slot<M: MapCore>(map: &M, slot: u32) -> Result<()> {
    let doomed: Vec<Vec<u8>> = map
        .keys()
        .filter(|k| parse_name_key(k).map(|nk| nk.slot == slot).unwrap_or(false))
        .collect();
    for k in doomed {
        let _ = map.delete(&k); // already gone is fine
    }
    Ok(())
}

/// Zeroes one slot of a per-JVM array map.
pub(crate) fn reset_slot<M: MapCore>(map: &M, slot: u32) -> Result<()> {
    let zero = vec![0u8; map.value_size() as usize];
    map.update(&slot.to_ne_bytes(), &zero, MapFlags::ANY)?;
    Ok(())
}

/// Sums a per-CPU u64 array (the `stats` map of src/bpf/common.bpf.h).
pub(crate) fn read_stats<M: MapCore>(map: &M) -> Result<Vec<u64>> {
    let n = map.max_entries();
    let mut out = vec![0u64; n as usize];
    for i in 0..n {
        if let Some(per_cpu) = map.lookup_percpu(&i.to_ne_bytes(), MapFlags::ANY)? {
            out[i as usize] = per_cpu
                .iter()
                .map(|v| u64::from_ne_bytes(v[..8].try_into().unwrap_or([0; 8])))
                .sum();
        }
    }
    Ok(out)
}

/// A collector's probe names by their index in its `enum *_probe` (src/bpf/<collector>.h,
/// the stat index STAT_EVENTS_0 + i): every index once, below STAT_MAP_ERRORS (checked at
/// compile time).
pub(crate) const fn probe_names<const N: usize>(entries: [(u32, &'static str); N]) -> [&'static str; N] {
    assert!(N <= consts::STAT_MAP_ERRORS as usize, "more probes than event stats");
    let mut names = [""; N];
    let mut i = 0;
    while i < N {
        let (index, name) = entries[i];
        assert!((index as usize) < N && names[index as usize].is_empty(), "probe indexes must be 0..N, each once");
        names[index as usize] = name;
        i += 1;
    }
    names
}

pub(crate) fn health_from(stats: &[u64], probes: &[&'static str]) -> Health {
    Health {
        events: probes.iter().enumerate().map(|(i, p)| (*p, stats.get(i).copied().unwrap_or(0))).collect(),
        map_errors: stats.get(consts::STAT_MAP_ERRORS as usize).copied().unwrap_or(0),
        names_overflow: stats.get(consts::STAT_NAMES_OVERFLOW as usize).copied().unwrap_or(0),
        filtered: stats.get(consts::STAT_FILTERED as usize).copied().unwrap_or(0),
        entries: 0,
    }
}

/// Reads a (name_key -> hist) table into a histogram family; VM operations named by their
/// vtable are resolved with `vtables` (two vtables resolving alike are merged).
pub(crate) fn hist_family<M: MapCore>(
    map: &M,
    fam: &mut Family,
    vtables: Option<&VtableNames>,
    label: fn(&NameKey) -> Vec<(&'static str, String)>,
) -> Result<()> {
    debug_assert_eq!(fam.kind, Kind::Histogram);
    type Series = (u32, Vec<(&'static str, String)>);
    let mut merged: BTreeMap<Series, Hist> = BTreeMap::new();
    for k in map.keys() {
        let (Some(mut nk), Some(v)) = (parse_name_key(&k), map.lookup(&k, MapFlags::ANY)?) else { continue };
        if let Some((file, rel)) = nk.vtable {
            nk.name = vtables.map(|t| t.resolve(file, rel)).unwrap_or_else(|| "unknown".into());
        }
        if let Some(h) = parse_hist(&v) {
            let e = merged.entry((nk.slot, label(&nk))).or_default();
            for (a, b) in e.buckets.iter_mut().zip(h.buckets.iter()) {
                *a += b;
            }
            e.sum_ns += h.sum_ns;
            e.count += h.count;
        }
    }
    for ((slot, labels), h) in merged {
        fam.jvm(slot, labels, Value::Histogram(h));
    }
    Ok(())
}

/// The `.symtab` symbols of a libjvm.so (a /proc/self/fd path) that `wanted` selects.
/// Reads the symbol and string tables only (4–5 MB of a 24–30 MB libjvm.so), not the file.
pub(crate) fn read_symbols(binary: &Path, wanted: &dyn Fn(&str) -> bool) -> Result<Vec<elf::Symbol>> {
    let f = std::fs::File::open(binary)?;
    Ok(elf::symbols_in_file(&f, wanted)?.into_iter().filter(|s| s.from_symtab).collect())
}

/// The function named exactly `name` in `syms`.
pub(crate) fn function<'a>(syms: &'a [elf::Symbol], name: &str) -> Option<&'a elf::Symbol> {
    syms.iter().find(|s| s.kind == 2 && s.name == name && s.size > 0)
}

/// A uprobe on `sym` (a `.symtab` name libbpf resolves) with a cookie: a uprobe_multi link
/// where the kernel has them, else a perf event.
///
/// Why: since Linux 6.16 (and stable backports, "perf: Require CAP_SYS_ADMIN for uprobes")
/// creating a uprobe *perf event* needs CAP_SYS_ADMIN (`perf_uprobe_event_init`), whatever
/// the path; a uprobe_multi BPF link (6.6+) needs only CAP_BPF + CAP_PERFMON, as libbpf's USDT
/// attach already uses. The chart grants exactly those, without CAP_SYS_ADMIN.
pub(crate) fn uprobe_sym(p: &libbpf_rs::ProgramMut<'_>, binary: &Path, sym: &str, ret: bool, cookie: u64) -> Result<Link> {
    let kind = if ret { "uretprobe" } else { "uprobe" };
    if uprobe_multi() {
        let opts = libbpf_rs::UprobeMultiOpts {
            syms: vec![sym.into()],
            cookies: vec![cookie],
            retprobe: ret,
            ..Default::default()
        };
        return p.attach_uprobe_multi_with_opts(-1, binary, "", opts).with_context(|| format!("{kind} {sym} (uprobe_multi link)"));
    }
    let opts = UprobeOpts { func_name: Some(sym.into()), retprobe: ret, cookie, ..Default::default() };
    p.attach_uprobe_with_opts(-1, binary, 0, opts).map_err(|e| {
        let denied = e.kind() == libbpf_rs::ErrorKind::PermissionDenied;
        let err = anyhow::Error::from(e).context(format!("{kind} {sym} (perf event)"));
        if denied && !has_cap_sys_admin() {
            err.context(NeedsSysAdmin)
        } else {
            err
        }
    })
}

/// A uprobe perf event refused for want of CAP_SYS_ADMIN (see `uprobe_sym`): counted as
/// `jvmdiag_agent_attach_failures_total{reason="needs_cap_sys_admin"}`.
#[derive(Debug)]
pub struct NeedsSysAdmin;

impl std::fmt::Display for NeedsSysAdmin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(
            "this kernel creates uprobe perf events only with CAP_SYS_ADMIN (Linux 6.16+ and stable backports) \
             and uprobe_multi links are not in use (kernel before 6.6, or JVMDIAG_UPROBE_PERF_EVENT=1): \
             grant CAP_SYS_ADMIN or run a 6.6+ kernel",
        )
    }
}

impl std::error::Error for NeedsSysAdmin {}

/// Whether an attach error was a uprobe (or a USDT probe, which libbpf attaches as uprobe
/// perf events on kernels without uprobe_multi) refused for want of CAP_SYS_ADMIN.
pub fn needs_sys_admin(e: &anyhow::Error) -> bool {
    e.downcast_ref::<NeedsSysAdmin>().is_some()
        || (e.chain().any(|c| c.downcast_ref::<libbpf_rs::Error>().is_some_and(|l| l.kind() == libbpf_rs::ErrorKind::PermissionDenied))
            && !has_cap_sys_admin())
}

fn has_cap_sys_admin() -> bool {
    const CAP_SYS_ADMIN: u32 = 21;
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("CapEff:").map(|v| u64::from_str_radix(v.trim(), 16).ok())))
        .flatten()
        .is_some_and(|caps| caps & (1 << CAP_SYS_ADMIN) != 0)
}

/// Whether uprobes are attached as uprobe_multi links: the kernel has them (6.6+) unless
/// JVMDIAG_UPROBE_PERF_EVENT=1 asks for perf events.
pub(crate) fn uprobe_multi() -> bool {
    static MULTI: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *MULTI.get_or_init(|| {
        if std::env::var_os("JVMDIAG_UPROBE_PERF_EVENT").is_some_and(|v| v == "1") {
            return false;
        }
        kernel_at_least(&std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default(), (6, 6))
    })
}

fn kernel_at_least(release: &str, want: (u32, u32)) -> bool {
    let mut it = release.trim().split(|c: char| !c.is_ascii_digit()).map(|x| x.parse::<u32>().unwrap_or(0));
    (it.next().unwrap_or(0), it.next().unwrap_or(0)) >= want
}

/// Before load: the uprobe programs of an object become uprobe_multi programs when
/// `uprobe_multi()` (the attach type is fixed at load).
pub(crate) fn prepare_uprobes(obj: &mut libbpf_rs::OpenObject) {
    if !uprobe_multi() {
        return;
    }
    for mut p in obj.progs_mut() {
        let sec = p.section().to_string_lossy();
        if sec == "uprobe" || sec == "uretprobe" {
            p.set_attach_type(libbpf_rs::ProgramAttachType::TraceUprobeMulti);
        }
    }
}

/// `VMThread::evaluate_operation(VM_Operation*)`: where HotSpot fires vmops__begin/end.
pub(crate) const SYM_EVALUATE: &str = "_ZN8VMThread18evaluate_operationEP12VM_Operation";
pub(crate) const SYM_SP_BEGIN: &str = "_ZN20SafepointSynchronize5beginEv";
pub(crate) const SYM_SP_END: &str = "_ZN20SafepointSynchronize3endEv";

/// VM operation names by vtable, per libjvm.so file, for uprobe mode (no USDT notes).
///
/// HotSpot's operation names (`VM_Operation::name()`, what vmops__begin reports) are the
/// `VM_OPS_DO` entries, and every operation class is `VM_<entry>` (`VM_ThreadDump` →
/// `ThreadDump`, `VM_G1CollectFull` → `G1CollectFull`): the class of the vtable a
/// `VM_Operation*` points to, without `VM_`, is the name.
#[derive(Default)]
pub struct VtableNames {
    files: RefCell<Vec<HashMap<u64, String>>>,
}

impl VtableNames {
    /// Indexes the vtables of one file; returns the file's index (the cookie's high half)
    /// and the file's function `func` (one read of the ELF for both).
    pub(crate) fn register(&self, binary: &Path, func: &str) -> Result<(u32, Option<elf::Symbol>)> {
        let syms = read_symbols(binary, &|n: &str| n.starts_with("_ZTV") || n == func)?;
        let f = function(&syms, func).cloned();
        // A vtable pointer points past the offset-to-top and RTTI words.
        let table: HashMap<u64, String> = syms
            .iter()
            .filter(|s| s.kind == 1)
            .filter_map(|s| Some((s.value + 16, vm_operation_name(&s.name)?)))
            .collect();
        let mut files = self.files.borrow_mut();
        if let Some(i) = files.iter().position(|t| *t == table) {
            return Ok((i as u32, f));
        }
        files.push(table);
        Ok((files.len() as u32 - 1, f))
    }

    pub(crate) fn resolve(&self, file: u32, rel: u64) -> String {
        self.files.borrow().get(file as usize).and_then(|t| t.get(&rel).cloned()).unwrap_or_else(|| "unknown".into())
    }
}

/// `_ZTV13VM_ThreadDump` → `ThreadDump`; only plain (non-nested) classes named `VM_*`.
fn vm_operation_name(mangled: &str) -> Option<String> {
    let rest = mangled.strip_prefix("_ZTV")?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let len: usize = rest[..digits].parse().ok()?;
    let class = rest.get(digits..digits + len)?;
    if digits + len != rest.len() {
        return None;
    }
    let name = class.strip_prefix("VM_")?;
    (!name.is_empty()).then(|| name.to_string())
}

/// The cookie of a probe on `sym` that names operations by vtable: file index (high 32
/// bits), the function's address in the file (low 32 bits).
pub(crate) fn vtable_cookie(file: u32, sym: &elf::Symbol) -> Result<u64> {
    anyhow::ensure!(sym.value <= u64::from(u32::MAX), "{} at {:#x}: beyond 4 GiB", sym.name, sym.value);
    Ok(u64::from(file) << 32 | sym.value)
}

#[cfg(test)]
mod tests {
    use super::{kernel_at_least, vm_operation_name};

    #[test]
    fn kernel_versions_compare_numerically() {
        assert!(kernel_at_least("6.18.0-1-amd64\n", (6, 6)));
        assert!(kernel_at_least("6.6.0", (6, 6)));
        assert!(!kernel_at_least("6.1.0-28-cloud-amd64", (6, 6)));
        assert!(!kernel_at_least("5.19.17", (6, 6)));
        assert!(!kernel_at_least("", (6, 6)));
    }

    #[test]
    fn vtable_symbols_name_operations_like_hotspot() {
        assert_eq!(vm_operation_name("_ZTV13VM_ThreadDump").as_deref(), Some("ThreadDump"));
        assert_eq!(vm_operation_name("_ZTV16VM_G1CollectFull").as_deref(), Some("G1CollectFull"));
        assert_eq!(vm_operation_name("_ZTV12VM_Operation").as_deref(), Some("Operation"));
        assert_eq!(vm_operation_name("_ZTV8VMThread"), None);
        assert_eq!(vm_operation_name("_ZTVN5Outer8VM_InnerE"), None);
        assert_eq!(vm_operation_name("_ZTV99VM_x"), None);
    }
}
