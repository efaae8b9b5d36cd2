//! JIT compilations and the code cache per JVM (src/bpf/compilation.bpf.c).
//!
//! USDT `hotspot:method__compile__begin/end` give compilations and durations per compiler
//! and the methods compiled again and again; without USDT notes, a uprobe on
//! `CompileBroker::invoke_compiler_on_method` gives counts and durations per compiler only.
//! The code cache parts need `.symtab` symbols, resolved by name pattern because their
//! signatures differ between JDK releases (`report_codemem_full(int, bool)` in 17,
//! `report_codemem_full(CodeBlobType, bool)` in 21+).
pub mod code_heap;
pub mod staging;

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::os::fd::BorrowedFd;
use std::path::Path;

use anyhow::{Context, Result};
use jvmdiag_inspect::code_heap::{decode_allocated_capacity, decode_pool_heap};
use jvmdiag_inspect::elf;
use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{Link, MapCore, MapFlags};

use super::inflight::{self, Table};
use super::{Attached, Collector, Flag, Health, LoadConfig, Number, ProbeMode, Target};
use crate::maps::{self, decode};
use crate::metrics;
use crate::model::{Family, Hist, Value};
use crate::probe;
use crate::skel::compilation::types::{comp_stats, heap_value, seen_count};
use crate::skel::compilation::{CompilationSkel, CompilationSkelBuilder};
use crate::skel::consts;

const PROBES: [&str; 6] = super::probe_names([
    (consts::COMP_PROBE_BEGIN, "method__compile__begin"),
    (consts::COMP_PROBE_END, "method__compile__end"),
    (consts::COMP_PROBE_INVOKE, "CompileBroker::invoke_compiler_on_method"),
    (consts::COMP_PROBE_INVOKE_RET, "CompileBroker::invoke_compiler_on_method:return"),
    (consts::COMP_PROBE_FULL, "CodeCache::report_codemem_full"),
    (consts::COMP_PROBE_POOL_RET, "CodeHeapPool::get_memory_usage:return"),
]);

/// Mangled-name prefixes (the parameter list after `E` differs between releases).
const SYM_INVOKE: &str = "_ZN13CompileBroker25invoke_compiler_on_methodE";
const SYM_FULL: &str = "_ZN9CodeCache19report_codemem_fullE";
const SYM_POOL: &str = "_ZN12CodeHeapPool16get_memory_usageE";
const SYM_ALLOCATED: &str = "_ZNK8CodeHeap18allocated_capacityE";

/// Distinct compiler names per JVM (C1, C2, JVMCI; the rest "other").
const MAX_COMPILERS: u32 = 8;
/// Distinct code heaps per JVM (HotSpot has at most three, or one unsegmented).
const MAX_HEAPS: u32 = 8;
/// A method gets its own kernel counter from its third compilation: tiered compilation
/// compiles a hot method about twice (C1 profiled, then C2), so the budget goes to methods
/// compiled again and again.
const HOT_THRESHOLD: u32 = 3;
/// A compilation in progress per compiler thread, a code heap read per calling thread
/// (src/bpf/compilation.h).
const INFLIGHT: [Table; 2] = [
    Table {
        map: "comp_inflight",
        index: consts::COMP_TABLE_COMPILE,
        per_jvm: consts::COMP_INFLIGHT_PER_JVM,
        max: consts::COMP_INFLIGHT_MAX,
    },
    Table {
        map: "pool_inflight",
        index: consts::COMP_TABLE_POOL,
        per_jvm: consts::COMP_INFLIGHT_PER_JVM,
        max: consts::COMP_INFLIGHT_MAX,
    },
];

/// `--max-methods`: methods named per JVM (a JVM's own `maxMethods` may lower it).
pub static MAX_METHODS: Number<u32> = Number {
    name: "max-methods",
    value_name: "K",
    default: 20,
    min: 1,
    max: 500,
    hide: false,
    help: "Most-compiled methods named per JVM in jvmdiag_method_compilations_total; the rest count as \"other\"",
};

/// `--method-staging-entries`: the method_seen staging table (an LRU shared by every JVM).
pub static METHOD_STAGING_ENTRIES: Number<u32> = Number {
    name: "method-staging-entries",
    value_name: "N",
    default: 16_384,
    min: 16,
    max: 65_536,
    hide: true,
    help: "Entries of the compilation collector's staging table (methods compiled fewer times than gives them their own counter; an LRU shared by every JVM, its evictions counted in jvmdiag_agent_map_evictions_total). Hidden: for tests that need it small",
};

pub const FLAGS: &[Flag] = &[Flag::U32(&MAX_METHODS), Flag::U32(&METHOD_STAGING_ENTRIES)];

pub struct Compilation {
    skel: CompilationSkel<'static>,
    max_methods: usize,
    /// Code heap field layouts of the attached libjvm.so builds (attach cookie = index + 1).
    layouts: RefCell<Vec<code_heap::Layout>>,
    /// Evictions from the method_seen staging table, per JVM and since the start.
    evictions: RefCell<staging::Evictions>,
}

/// USDT probes it attaches in each JVM (`probe::size_usdt_specs`).
const USDT_PROBES: u32 = 2;

pub fn load(cfg: &LoadConfig, traced_pids: BorrowedFd<'_>) -> Result<Box<dyn Collector>> {
    let mut open = CompilationSkelBuilder::default()
        .open(super::object_storage())
        .context("open compilation.bpf.o")?;
    let max_methods = cfg.settings.get(&MAX_METHODS);
    let hot_budget = max_methods.saturating_mul(8).clamp(256, 4096);
    let ro = open.maps.rodata_data.as_deref_mut().context("compilation: no rodata")?;
    ro.collector_bit = cfg.collector_bit;
    ro.max_compilers = MAX_COMPILERS;
    ro.hot_budget = hot_budget;
    ro.hot_threshold = HOT_THRESHOLD;
    ro.max_heaps = MAX_HEAPS;
    open.maps.traced_pids.reuse_fd(traced_pids)?;
    super::share_jvm_limits(&mut open.maps.jvm_limits, cfg)?;
    probe::prepare_uprobes(open.open_object_mut());
    probe::size_usdt_specs(open.open_object_mut(), cfg.max_jvms, USDT_PROBES)?;
    open.maps.comp_stats.set_max_entries(super::table_size(cfg.max_jvms, MAX_COMPILERS))?;
    // No "other" entry: a method beyond the JVM's budget stays in method_seen.
    open.maps
        .method_hot
        .set_max_entries(cfg.max_jvms.clamp(1, consts::MAX_JVMS).saturating_mul(hot_budget))?;
    open.maps.method_seen.set_max_entries(cfg.settings.get(&METHOD_STAGING_ENTRIES).max(1))?;
    open.maps.heap_usage.set_max_entries(super::table_size(cfg.max_jvms, MAX_HEAPS))?;
    let m = &mut open.maps;
    let shares = inflight::configure(
        [(&INFLIGHT[0], &mut m.comp_inflight), (&INFLIGHT[1], &mut m.pool_inflight)],
        &mut m.slot_namespace,
        cfg,
    )?;
    let ro = open.maps.rodata_data.as_deref_mut().context("compilation: no rodata")?;
    (ro.inflight_share, ro.inflight_ns_share) = (shares.jvm, shares.namespace);
    let skel = open.load().context("load compilation.bpf.o")?;
    Ok(Box::new(Compilation {
        skel,
        max_methods: max_methods as usize,
        layouts: RefCell::new(Vec::new()),
        evictions: RefCell::new(staging::Evictions::default()),
    }))
}

fn uprobe(
    p: &libbpf_rs::ProgramMut<'_>,
    target: &Target<'_>,
    sym: &str,
    ret: bool,
) -> Result<Link> {
    uprobe_cookie(p, target, sym, ret, 0)
}

fn uprobe_cookie(
    p: &libbpf_rs::ProgramMut<'_>,
    target: &Target<'_>,
    sym: &str,
    ret: bool,
    cookie: u64,
) -> Result<Link> {
    probe::uprobe_sym(p, target, sym, ret, cookie)
}

/// The first function in `.symtab` whose mangled name starts with `prefix` (no `.cold`
/// or other compiler-made clones).
fn find_symbol(syms: &[elf::Symbol], prefix: &str) -> Option<String> {
    syms.iter()
        .filter(|s| {
            s.from_symtab && s.kind == 2 && s.name.starts_with(prefix) && !s.name.contains('.')
        })
        .map(|s| s.name.clone())
        .min()
}

/// The symbols the collector looks up by pattern, and the open file (read section by
/// section: the symbol tables, then two functions' code; never the whole libjvm.so).
fn read_elf(binary: &Path) -> Result<(std::fs::File, Vec<elf::Symbol>)> {
    let f = std::fs::File::open(binary)?;
    let wanted = [SYM_INVOKE, SYM_FULL, SYM_POOL, SYM_ALLOCATED];
    let syms = elf::symbols_in_file(&f, &|n: &str| wanted.iter().any(|w| n.starts_with(w)))?;
    Ok((f, syms))
}

/// A function's bytes (bounded by its symbol size).
fn function_code(f: &std::fs::File, s: &elf::Symbol) -> Option<Vec<u8>> {
    elf::read_vaddr(f, s.value, s.size.min(4096)).ok()?
}

/// The code heap layout of this build, from the JVM's own code (see code_heap.rs).
fn code_heap_layout(f: &std::fs::File, syms: &[elf::Symbol]) -> Option<code_heap::Layout> {
    let by = |prefix: &str| {
        let name = find_symbol(syms, prefix)?;
        syms.iter().find(|s| s.name == name).cloned()
    };
    let (alloc, pool) = (by(SYM_ALLOCATED)?, by(SYM_POOL)?);
    let (log2, next, free) = decode_allocated_capacity(&function_code(f, &alloc)?)?;
    let pool_heap = decode_pool_heap(&function_code(f, &pool)?, pool.value, alloc.value)?;
    Some(code_heap::Layout { pool_heap, log2, next, free })
}

impl Collector for Compilation {
    fn name(&self) -> &'static str {
        "compilation"
    }

    fn attach(&self, target: &Target<'_>) -> Result<Attached> {
        let binary = target.binary;
        let p = &self.skel.progs;
        // Read once per file (the symbol tables and two functions' code), not once per JVM.
        let (syms, layout) = target.facts.memo("compilation", || match read_elf(binary) {
            Ok((f, s)) => {
                let layout = code_heap_layout(&f, &s);
                (s, layout)
            }
            Err(_) => (Vec::new(), None),
        });
        let mut links = Vec::new();
        let mode = match (
            target.usdt(&p.compile_begin, "hotspot", "method__compile__begin"),
            target.usdt(&p.compile_end, "hotspot", "method__compile__end"),
        ) {
            (Ok(b), Ok(e)) => {
                links.extend([b, e]);
                ProbeMode::Usdt
            }
            (b, _) => {
                let Some(sym) = find_symbol(&syms, SYM_INVOKE) else {
                    return Err(b.err().map(anyhow::Error::from).unwrap_or_else(|| anyhow::anyhow!("no USDT method__compile__end"))
                        .context("no USDT hotspot:method__compile__* and no CompileBroker::invoke_compiler_on_method in .symtab"));
                };
                links.push(uprobe(&p.invoke_compiler, target, &sym, false)?);
                links.push(uprobe(&p.invoke_compiler_ret, target, &sym, true)?);
                ProbeMode::Uprobe
            }
        };
        // The code cache parts are extras: a failure there leaves the compilations traced.
        let extra = |r: Result<Link>, links: &mut Vec<Link>| match r {
            Ok(l) => links.push(l),
            Err(e) => {
                tracing::warn!(binary = %binary.display(), collector = "compilation", error = format!("{e:#}"), "a code cache probe did not attach")
            }
        };
        if let Some(sym) = find_symbol(&syms, SYM_FULL) {
            extra(uprobe(&p.codemem_full, target, &sym, false), &mut links);
        }
        if let Some(sym) = find_symbol(&syms, SYM_POOL) {
            let cookie = match layout {
                Some(l) => {
                    let mut ls = self.layouts.borrow_mut();
                    let i = ls.iter().position(|x| *x == l).unwrap_or_else(|| {
                        ls.push(l);
                        ls.len() - 1
                    });
                    i as u64 + 1
                }
                None => {
                    tracing::warn!(
                        binary = %binary.display(),
                        collector = "compilation",
                        "code heap layout not recognised: jvmdiag_code_cache_used_bytes is as of the JVM's last code allocation"
                    );
                    0
                }
            };
            let pair = uprobe_cookie(&p.pool_usage, target, &sym, false, cookie)
                .and_then(|a| Ok([a, uprobe(&p.pool_usage_ret, target, &sym, true)?]));
            match pair {
                Ok(ls) => links.extend(ls),
                Err(e) => extra(Err(e), &mut links),
            }
        }
        Ok(Attached { links, mode })
    }

    fn collect(&self, out: &mut Vec<Family>) -> Result<()> {
        let m = &self.skel.maps;
        let layouts = self.layouts.borrow();
        let tables = Tables {
            comp_stats: maps::entries(&m.comp_stats)?,
            method_hot: maps::entries(&m.method_hot)?,
            heap_usage: maps::entries(&m.heap_usage)?,
            code_full: maps::entries(&m.code_full)?,
        };
        // Each JVM's own maxMethods (its pod's limits), at most --max-methods.
        let own = |slot: u32| match super::jvm_limits_of(&m.jvm_limits, slot) {
            Some([_, n, _]) if n > 0 => (n as usize).min(self.max_methods),
            _ => self.max_methods,
        };
        out.extend(families_limited(&tables, &own, &|heap| {
            // Now, from the JVM's memory; else as of its last code allocation.
            let layout =
                (heap.layout as usize).checked_sub(1).and_then(|i| layouts.get(i).copied())?;
            code_heap::used_now(heap.tgid, heap.pool, &layout, heap.mu.max)
        }));
        out.push(inflight::jvm_lost_family(
            self.name(),
            &maps::entries(&m.inflight_lost)?,
            &INFLIGHT,
        ));
        out.push(self.staging_evictions()?);
        Ok(())
    }

    fn forget(&self, slot: u32) -> Result<()> {
        let m = &self.skel.maps;
        maps::forget_slot(&m.comp_stats, slot)?;
        maps::forget_slot(&m.method_hot, slot)?;
        let deleted = maps::forget_slot(&m.method_seen, slot)?;
        let final_count = m
            .seen_counts
            .lookup(&slot.to_ne_bytes(), MapFlags::ANY)?
            .and_then(|v| decode::<seen_count>(&v))
            .unwrap_or_default();
        self.evictions.borrow_mut().release(
            slot,
            final_count.inserted,
            final_count.removed,
            deleted as u64,
        );
        maps::reset_slot(&m.seen_counts, slot)?;
        maps::forget_slot(&m.heap_usage, slot)?;
        maps::reset_slot(&m.code_full, slot)?;
        maps::reset_slot(&m.method_budget, slot)?;
        maps::reset_slot(&m.heap_budget, slot)?;
        let ns = inflight::namespace_of(&m.slot_namespace, slot);
        let held = (&m.inflight_held, &m.inflight_ns);
        inflight::forget_table(&m.comp_inflight, &INFLIGHT[0], held, ns, slot)?;
        inflight::forget_table(&m.pool_inflight, &INFLIGHT[1], held, ns, slot)?;
        inflight::forget_lost(&m.inflight_lost, slot)?;
        maps::reset_slot(&m.name_budget, slot)
    }

    fn forget_namespace(&self, namespace: u32) -> Result<()> {
        inflight::forget_namespace(&self.skel.maps.inflight_ns, &INFLIGHT, namespace)
    }

    fn health(&self) -> Result<Health> {
        let m = &self.skel.maps;
        let stats = maps::read_stats(&m.stats)?;
        let mut h = super::health_from(&stats, &PROBES);
        h.entries =
            [m.comp_stats.keys().count(), m.method_hot.keys().count(), m.heap_usage.keys().count()]
                .iter()
                .sum::<usize>() as u64;
        h.inflight_lost = inflight::lost_totals(&stats, &INFLIGHT);
        h.evictions = vec![("method_seen", self.evictions.borrow().total())];
        Ok(h)
    }
}

impl Compilation {
    /// Reads the staging table's counts and entries (staging.rs: counts, walk, counts again)
    /// and returns each JVM's evictions as `jvmdiag_agent_jvm_map_evictions_total`.
    fn staging_evictions(&self) -> Result<Family> {
        let m = &self.skel.maps;
        let counts = || -> Result<BTreeMap<u32, seen_count>> {
            let mut out = BTreeMap::new();
            maps::batch_entries(&m.seen_counts, |k, v| {
                if let (Some(slot), Some(c)) = (decode::<u32>(k), decode::<seen_count>(v)) {
                    if c.inserted > 0 {
                        out.insert(slot, c);
                    }
                }
            })?;
            Ok(out)
        };
        let before = counts()?;
        let mut present: HashMap<u32, u64> = HashMap::new();
        maps::batch_entries(&m.method_seen, |k, _| {
            if let Some(nk) = decode::<crate::skel::shapes::types::name_key>(k) {
                *present.entry(nk.slot).or_default() += 1;
            }
        })?;
        let after = counts()?;
        let mut ev = self.evictions.borrow_mut();
        let mut f = metrics::AGENT_JVM_MAP_EVICTIONS.family();
        for (slot, c) in &before {
            let reading = staging::Reading {
                inserted_before: c.inserted,
                removed_after: after.get(slot).map_or(c.removed, |a| a.removed.max(c.removed)),
                present: present.get(slot).copied().unwrap_or(0),
            };
            let n = ev.observe(*slot, reading);
            f.jvm(
                *slot,
                vec![("collector", self.name().to_string()), ("map", "method_seen".to_string())],
                Value::Counter(n),
            );
        }
        Ok(f)
    }
}

/// The collector's tables as (key, value) bytes.
pub struct Tables {
    /// name_key (compiler) -> struct comp_stats
    pub comp_stats: Vec<(Vec<u8>, Vec<u8>)>,
    /// name_key (method) -> __u64 compilations
    pub method_hot: Vec<(Vec<u8>, Vec<u8>)>,
    /// name_key (code heap) -> struct heap_value
    pub heap_usage: Vec<(Vec<u8>, Vec<u8>)>,
    /// slot -> __u64 code cache full events
    pub code_full: Vec<(Vec<u8>, Vec<u8>)>,
}

/// The collector's families from its tables; `used_now` reads a code heap's current use
/// from the JVM (None: keep the value of its last code allocation).
pub fn families(
    t: &Tables,
    max_methods: usize,
    used_now: &dyn Fn(&heap_value) -> Option<u64>,
) -> [Family; 6] {
    families_limited(t, &|_| max_methods, used_now)
}

/// [`families`] with each JVM's own number of methods named (by slot).
pub fn families_limited(
    t: &Tables,
    max_methods: &dyn Fn(u32) -> usize,
    used_now: &dyn Fn(&heap_value) -> Option<u64>,
) -> [Family; 6] {
    // Compilers: merge names that normalise alike ("C2" and "c2").
    let mut comp: BTreeMap<(u32, String), (Hist, u64)> = BTreeMap::new();
    let mut named_total: HashMap<u32, u64> = HashMap::new();
    for (k, v) in &t.comp_stats {
        let (Some(nk), Some(cs)) = (maps::name_key(k), decode::<comp_stats>(v)) else { continue };
        let h = Hist { buckets: cs.timed.buckets, sum_ns: cs.timed.sum_ns, count: cs.timed.count };
        let e = comp.entry((nk.slot, compiler_label(&nk.name))).or_default();
        e.0.merge(&h);
        e.1 += cs.untimed;
        if nk.flags == consts::COMP_FLAG_USDT {
            *named_total.entry(nk.slot).or_default() += h.count + cs.untimed;
        }
    }
    let mut total = metrics::COMPILATIONS.family();
    let mut secs = metrics::COMPILATION_SECONDS.family();
    for ((slot, c), (h, untimed)) in &comp {
        total.jvm(*slot, vec![("compiler", c.clone())], Value::Counter(h.count + untimed));
        secs.jvm(*slot, vec![("compiler", c.clone())], Value::Histogram(h.clone()));
    }

    // Methods: top K per JVM by count; "other" is the rest of that JVM's compilations.
    let mut per_jvm: HashMap<u32, Vec<(String, u64)>> = HashMap::new();
    for (k, v) in &t.method_hot {
        let (Some(nk), Some(n)) = (maps::name_key(k), maps::counter(v)) else { continue };
        per_jvm.entry(nk.slot).or_default().push((method_label(&nk.name), n));
    }
    let mut methods = metrics::METHOD_COMPILATIONS.family();
    let mut slots: Vec<u32> = per_jvm
        .keys()
        .chain(named_total.keys())
        .copied()
        .collect::<HashSet<_>>()
        .into_iter()
        .collect();
    slots.sort();
    for slot in slots {
        let Some(&all) = named_total.get(&slot) else { continue }; // uprobe mode: no names
        let top = top_k(per_jvm.remove(&slot).unwrap_or_default(), max_methods(slot));
        let named: u64 = top.iter().map(|(_, n)| n).sum();
        for (m, n) in top {
            methods.jvm(slot, vec![("method", m)], Value::Counter(n));
        }
        methods.jvm(
            slot,
            vec![("method", "other".into())],
            Value::Counter(all.saturating_sub(named)),
        );
    }

    // Code heaps.
    let mut used = metrics::CODE_CACHE_USED.family();
    let mut max = metrics::CODE_CACHE_MAX.family();
    let mut heap_slots = HashSet::new();
    for (k, v) in &t.heap_usage {
        let (Some(nk), Some(hv)) = (maps::name_key(k), decode::<heap_value>(v)) else { continue };
        let heap = heap_label(&nk.name);
        let now = used_now(&hv).unwrap_or(hv.mu.used);
        used.jvm(nk.slot, vec![("code_heap", heap.clone())], Value::Gauge(now as f64));
        max.jvm(nk.slot, vec![("code_heap", heap)], Value::Gauge(hv.mu.max as f64));
        heap_slots.insert(nk.slot);
    }
    // A JVM whose code heaps we see has the symbols of the full path too: report 0s.
    let mut full = metrics::CODE_CACHE_FULL.family();
    let mut fulls: BTreeMap<u32, u64> = heap_slots.into_iter().map(|s| (s, 0)).collect();
    for (k, v) in &t.code_full {
        let (Some(slot), Some(n)) = (decode::<u32>(k), maps::counter(v)) else { continue };
        if n > 0 {
            fulls.insert(slot, n);
        }
    }
    for (slot, n) in fulls {
        full.jvm(slot, vec![], Value::Counter(n));
    }
    [total, secs, methods, used, max, full]
}

/// "C2" -> "c2", "JVMCI" -> "jvmci"; anything odd a JVM reports is kept short and plain.
pub fn compiler_label(raw: &str) -> String {
    let s: String = raw
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .take(32)
        .collect::<String>()
        .to_ascii_lowercase();
    if s.is_empty() {
        "unknown".into()
    } else {
        s
    }
}

/// "java/lang/String.hashCode" -> "java.lang.String.hashCode". A hidden class's address
/// suffix (`LambdaForm$MH+0x00007f120c006400`, `Main$$Lambda/0x0000000800c03000`) is dropped:
/// every copy is the same method to a reader, and the label set stays bounded.
pub fn method_label(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(i) = rest.find("0x") {
        let (head, tail) = rest.split_at(i);
        let hex = tail[2..].bytes().take_while(u8::is_ascii_hexdigit).count();
        if hex > 0 && (head.ends_with('+') || head.ends_with('/')) {
            out.push_str(&head[..head.len() - 1]);
            rest = &tail[2 + hex..];
        } else {
            out.push_str(head);
            out.push_str("0x");
            rest = &tail[2..];
        }
    }
    out.push_str(rest);
    out.replace('/', ".")
}

/// "CodeHeap 'non-profiled nmethods'" -> "non-profiled nmethods"; "CodeCache" stays.
pub fn heap_label(raw: &str) -> String {
    raw.strip_prefix("CodeHeap '").and_then(|r| r.strip_suffix('\'')).unwrap_or(raw).to_string()
}

/// The k entries with the highest counts (ties by name, so a scrape is deterministic).
pub fn top_k(mut v: Vec<(String, u64)>, k: usize) -> Vec<(String, u64)> {
    // Entries named alike after normalisation are one method.
    v.sort();
    v.dedup_by(|b, a| {
        if a.0 == b.0 {
            a.1 += b.1;
            true
        } else {
            false
        }
    });
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v.truncate(k);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_normalised() {
        assert_eq!(compiler_label("C2"), "c2");
        assert_eq!(compiler_label("JVMCI"), "jvmci");
        assert_eq!(compiler_label("\"}{x"), "x");
        assert_eq!(compiler_label(""), "unknown");
        assert_eq!(method_label("java/lang/String.hashCode"), "java.lang.String.hashCode");
        assert_eq!(
            method_label("java/lang/invoke/LambdaForm$MH+0x00007f120c006400.invoke"),
            "java.lang.invoke.LambdaForm$MH.invoke"
        );
        assert_eq!(
            method_label("app/Main$$Lambda/0x0000000800c03000.apply"),
            "app.Main$$Lambda.apply"
        );
        assert_eq!(method_label("a/B.x0x1"), "a.B.x0x1");
        assert_eq!(heap_label("CodeHeap 'non-profiled nmethods'"), "non-profiled nmethods");
        assert_eq!(heap_label("CodeCache"), "CodeCache");
    }

    #[test]
    fn top_k_keeps_the_most_compiled_and_merges_duplicates() {
        let v = vec![("a".into(), 5), ("b".into(), 9), ("c".into(), 1), ("a".into(), 5)];
        assert_eq!(top_k(v, 2), vec![("a".to_string(), 10), ("b".to_string(), 9)]);
    }
}
