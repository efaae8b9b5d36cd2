//! In-flight tables (src/bpf/inflight.bpf.h): a thread's state between a begin probe and its
//! end — a park, a contended enter, a compilation, a thread start — in plain hash maps keyed
//! by (JVM slot, host tid), each JVM holding at most its share.
//!
//! Why not an LRU: a full LRU evicts the least recently used entry,
//! whichever JVM's it is, and the kernel counts no eviction, so one JVM with more parked
//! threads than the table holds would silently cut every other JVM's parked time. A plain
//! hash map never drops an entry; a begin that finds no room (its JVM already holds its
//! share, or the table is full) is refused and counted, per table and reason
//! (`jvmdiag_agent_inflight_lost_total`) and per JVM (`jvmdiag_agent_jvm_inflight_lost_total`),
//! and only that JVM loses the time of that event. Entries whose end never comes (the JVM was
//! killed mid-park) are deleted with the JVM's slot ([`forget_table`]), so they are never
//! counted against the JVM that takes the slot next.
//!
//! In Kubernetes mode each table also counts the entries of each namespace's JVMs together
//! (by the namespace id the attach manager writes into the shared `slot_namespace` map), and a
//! namespace may hold at most its share ([`Table::namespace_share`]): a namespace running many
//! JVMs, each within its own share, cannot fill a table either (`namespace_share` refusals).
use std::os::fd::{AsFd, AsRawFd};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, Result};
use libbpf_rs::{MapCore, MapFlags};

use crate::maps::{self, decode};
use crate::metrics;
use crate::model::{Family, Value};
use crate::skel::consts;
use crate::skel::shapes::types::{inflight_key, inflight_lost_key};

/// One JVM may hold at most this fraction of a table (1 / SHARE_DIVISOR), at least its
/// per-JVM size: a JVM with a large pool of waiting threads is measured whole, and a hostile
/// one leaves three quarters of the table to the others.
pub const SHARE_DIVISOR: u32 = 4;

/// An in-flight table of a collector object: its map name (the `map` label), its number in
/// the object (`inflight_share[index]`, `*_TABLE_*` in the collector's header), entries per
/// JVM and the table's ceiling.
#[derive(Debug, Clone, Copy)]
pub struct Table {
    pub map: &'static str,
    pub index: u32,
    pub per_jvm: u32,
    pub max: u32,
}

/// The `reason` label of a begin that found no room (`enum inflight_reason`).
pub fn reason_name(reason: u32) -> &'static str {
    match reason {
        consts::INFLIGHT_LOST_SHARE => "jvm_share",
        consts::INFLIGHT_LOST_FULL => "full",
        consts::INFLIGHT_LOST_NAMESPACE => "namespace_share",
        _ => "unknown",
    }
}

/// Every reason, in the order the agent-wide family lists them.
const REASONS: [u32; consts::INFLIGHT_REASONS as usize] =
    [consts::INFLIGHT_LOST_SHARE, consts::INFLIGHT_LOST_NAMESPACE, consts::INFLIGHT_LOST_FULL];

/// Namespace ids fit the `inflight_ns` index (src/bpf/jvm.h).
const _: () = assert!(consts::NAMESPACE_IDS == consts::MAX_JVMS + 1);

impl Table {
    /// (entries, one JVM's share) for `--max-jvms`: per_jvm x max_jvms entries, at most
    /// `max`; a share of a quarter of them, at least per_jvm (never more than the table).
    /// While every JVM holds at most per_jvm entries the table cannot fill.
    pub fn size_and_share(&self, max_jvms: u32) -> (u32, u32) {
        let size =
            max_jvms.clamp(1, consts::MAX_JVMS).saturating_mul(self.per_jvm).min(self.max).max(1);
        let share = (size / SHARE_DIVISOR).max(self.per_jvm).min(size);
        (size, share)
    }

    /// The entries the JVMs of one namespace may hold together: the part of the table its
    /// share of the node's slots is (`--max-jvms-per-namespace` of `--max-jvms`), at least one
    /// JVM's share (a namespace of one JVM is bound as before), at most the table. With the
    /// defaults (a quarter of the slots) a quarter of the table, one JVM's share: however many
    /// JVMs a namespace runs, the others keep three quarters. A namespace whose JVMs each stay
    /// within their per-JVM size never reaches it (`per_namespace` x `per_jvm` entries).
    pub fn namespace_share(&self, max_jvms: u32, per_namespace: u32) -> u32 {
        let (size, share) = self.size_and_share(max_jvms);
        let slots = max_jvms.clamp(1, consts::MAX_JVMS);
        let part = u64::from(size) * u64::from(per_namespace.clamp(1, slots)) / u64::from(slots);
        (part as u32).max(share).min(size)
    }
}

/// What the loader writes into an object's rodata: each table's `inflight_share` and
/// `inflight_ns_share`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shares {
    pub jvm: [u32; consts::INFLIGHT_TABLES as usize],
    pub namespace: [u32; consts::INFLIGHT_TABLES as usize],
}

/// Sizes each table's map before load and returns the object's shares (rodata), and makes the
/// object's `slot_namespace` the agent's one (`LoadConfig::slot_namespace`; without it the
/// object keeps a private, empty map: no namespace shares). The tables allocate an entry at a
/// begin and free it at its end (`BPF_F_NO_PREALLOC`): their memory is their bucket arrays
/// plus the threads in flight now, not their whole size for every slot. A begin the kernel
/// cannot allocate for is refused like one that finds the table full, and counted so.
pub fn configure<'t, 'm, 'o: 'm>(
    tables: impl IntoIterator<Item = (&'t Table, &'m mut libbpf_rs::OpenMapMut<'o>)>,
    slot_namespace: &mut libbpf_rs::OpenMapMut<'_>,
    cfg: &super::LoadConfig,
) -> Result<Shares> {
    let mut shares = Shares {
        jvm: [0; consts::INFLIGHT_TABLES as usize],
        namespace: [0; consts::INFLIGHT_TABLES as usize],
    };
    for (t, map) in tables {
        let (size, share) = t.size_and_share(cfg.max_jvms);
        map.set_max_entries(size)?;
        map.set_map_flags(map.map_flags() | libbpf_rs::libbpf_sys::BPF_F_NO_PREALLOC)?;
        shares.jvm[t.index as usize] = share;
        shares.namespace[t.index as usize] =
            t.namespace_share(cfg.max_jvms, cfg.max_jvms_per_namespace);
    }
    if let Some(fd) = &cfg.slot_namespace {
        slot_namespace.reuse_fd(fd.as_fd())?;
    }
    Ok(shares)
}

/// The namespace id the shared `slot_namespace` map holds for a slot (NO_NAMESPACE: none).
pub fn namespace_of<M: MapCore>(slot_namespace: &M, slot: u32) -> u32 {
    slot_namespace
        .lookup(&slot.to_ne_bytes(), MapFlags::ANY)
        .ok()
        .flatten()
        .and_then(|v| decode::<u32>(&v))
        .unwrap_or(consts::NO_NAMESPACE)
}

/// Deletes a released JVM's entries from one table (begins whose end never came: the JVM
/// exited mid-park) and gives its share back, and the units they held to its namespace
/// (`namespace`: its id when its entries were made, NO_NAMESPACE for none). No program takes or
/// gives back the slot's units meanwhile (the JVM is gone, or the probes filling the table
/// are detached), but the namespace's other JVMs do: its count is lowered atomically.
pub fn forget_table<M: MapCore, H: MapCore, N: MapCore>(
    table: &M,
    t: &Table,
    (held, ns_held): (&H, &N),
    namespace: u32,
    slot: u32,
) -> Result<()> {
    maps::forget_where(table, |k| decode::<inflight_key>(k).is_some_and(|k| k.slot == slot))?;
    let i = t.index * consts::MAX_JVMS + slot;
    let units = held.lookup(&i.to_ne_bytes(), MapFlags::ANY)?.and_then(|v| decode::<u32>(&v));
    let units = units.unwrap_or(0);
    if namespace != consts::NO_NAMESPACE && namespace < consts::NAMESPACE_IDS && units > 0 {
        let n = t.index * consts::NAMESPACE_IDS + namespace;
        if let Err(e) = sub_mapped(ns_held, n, u64::from(units)) {
            // The slot is forgotten all the same; its namespace keeps these units until its
            // last slot goes ([`forget_namespace`]).
            tracing::warn!(
                slot,
                namespace,
                units,
                map = t.map,
                error = format!("{e:#}"),
                "giving a namespace its in-flight units back failed"
            );
        }
    }
    held.update(&i.to_ne_bytes(), &0u32.to_ne_bytes(), MapFlags::ANY)?;
    Ok(())
}

/// Zeroes a namespace's counts in every table of an object once no slot holds its id any more
/// (no program takes or gives back its units then): whatever a count kept (units of entries
/// whose end a program missed, or that a failed subtraction left) is not carried over to the
/// namespace that gets the id next.
pub fn forget_namespace<N: MapCore>(ns_held: &N, tables: &[Table], namespace: u32) -> Result<()> {
    if namespace == consts::NO_NAMESPACE || namespace >= consts::NAMESPACE_IDS {
        return Ok(());
    }
    for t in tables {
        let i = t.index * consts::NAMESPACE_IDS + namespace;
        ns_held.update(&i.to_ne_bytes(), &0u64.to_ne_bytes(), MapFlags::ANY)?;
    }
    Ok(())
}

/// Lowers the `index`th u64 of an mmapable array map by `n` (not below 0) with an atomic
/// compare-and-swap on the mapped value: the programs' own atomic adds and subtracts on it at
/// the same time are neither lost nor undone (a map update from user space would be).
fn sub_mapped<M: MapCore>(map: &M, index: u32, n: u64) -> Result<()> {
    anyhow::ensure!(map.value_size() == 8 && index < map.max_entries(), "not a u64 array");
    // SAFETY: sysconf only reads a constant.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
    let len = (map.max_entries() as usize * 8).div_ceil(page) * page;
    // SAFETY: maps the map's own values (an mmapable array: `len` bytes from offset 0, values
    // of 8 bytes each, page-aligned); unmapped below, nothing keeps a reference past it.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            map.as_fd().as_raw_fd(),
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error()).context("mmap");
    }
    // SAFETY: `index` < max_entries, so the 8-byte-aligned value lies inside the mapping,
    // which lives until the munmap below; the programs update it with atomic instructions only.
    let value = unsafe { &*(base.cast::<u8>().add(index as usize * 8).cast::<AtomicU64>()) };
    let _ = value.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |v| Some(v.saturating_sub(n)));
    // SAFETY: the mapping made above, no longer referenced.
    unsafe { libc::munmap(base, len) };
    Ok(())
}

/// Deletes a released JVM's loss counts (its series were shown for the last time).
pub fn forget_lost<M: MapCore>(lost: &M, slot: u32) -> Result<()> {
    maps::forget_where(lost, |k| decode::<inflight_lost_key>(k).is_some_and(|k| k.slot == slot))
        .map(drop)
}

/// Begins that found no room since the agent started, per (map, reason), from the object's
/// `stats` (STAT_INFLIGHT_LOST_0 + index * INFLIGHT_REASONS + reason).
pub fn lost_totals(stats: &[u64], tables: &[Table]) -> Vec<(&'static str, &'static str, u64)> {
    let mut out = Vec::new();
    for t in tables {
        for reason in REASONS {
            let i = (consts::STAT_INFLIGHT_LOST_0 + t.index * consts::INFLIGHT_REASONS + reason)
                as usize;
            out.push((t.map, reason_name(reason), stats.get(i).copied().unwrap_or(0)));
        }
    }
    out
}

/// `jvmdiag_agent_jvm_inflight_lost_total` of one collector from its `inflight_lost` entries
/// (struct inflight_lost_key -> __u64): which JVM lost how many, per table and reason.
pub fn jvm_lost_family(
    collector: &'static str,
    entries: &[(Vec<u8>, Vec<u8>)],
    tables: &[Table],
) -> Family {
    let mut f = metrics::AGENT_JVM_INFLIGHT_LOST.family();
    for (k, v) in entries {
        let (Some(key), Some(n)) = (decode::<inflight_lost_key>(k), maps::counter(v)) else {
            continue;
        };
        let Some(t) = tables.iter().find(|t| t.index == u32::from(key.table)) else { continue };
        f.jvm(
            key.slot,
            vec![
                ("collector", collector.to_string()),
                ("map", t.map.to_string()),
                ("reason", reason_name(key.reason.into()).to_string()),
            ],
            Value::Counter(n),
        );
    }
    f
}

/// `jvmdiag_agent_inflight_lost_total` samples of one collector (agent-wide, every table and
/// reason, zeros included).
pub fn lost_family(
    collector: &'static str,
    totals: &[(&'static str, &'static str, u64)],
) -> Family {
    let mut f = metrics::AGENT_INFLIGHT_LOST.family();
    for (map, reason, n) in totals {
        f.agent(
            vec![
                ("collector", collector.to_string()),
                ("map", map.to_string()),
                ("reason", reason.to_string()),
            ],
            Value::Counter(*n),
        );
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARK: Table = Table { map: "park_inflight", index: 0, per_jvm: 64, max: 65536 };

    #[test]
    fn a_table_holds_per_jvm_entries_for_every_slot_up_to_its_ceiling() {
        assert_eq!(
            PARK.size_and_share(4),
            (256, 64),
            "small: the share is the per-JVM size, the table cannot fill"
        );
        assert_eq!(
            PARK.size_and_share(256),
            (16384, 4096),
            "the default --max-jvms: a quarter each"
        );
        assert_eq!(PARK.size_and_share(1024), (65536, 16384));
        assert_eq!(
            PARK.size_and_share(100_000),
            (65536, 16384),
            "slots beyond MAX_JVMS do not exist"
        );
        assert_eq!(PARK.size_and_share(0), (64, 64));
        let comp = Table { map: "comp_inflight", index: 0, per_jvm: 16, max: 4096 };
        assert_eq!(
            comp.size_and_share(1024),
            (4096, 1024),
            "capped: the share is a quarter of the ceiling"
        );
        let tiny = Table { map: "t", index: 0, per_jvm: 64, max: 32 };
        assert_eq!(tiny.size_and_share(8), (32, 32), "never a share above the table");
    }

    #[test]
    fn a_table_never_fills_while_every_jvm_stays_within_its_per_jvm_size() {
        for max_jvms in [1, 2, 3, 5, 64, 256, 1000, 1024] {
            for t in [
                PARK,
                Table { map: "m", index: 1, per_jvm: 32, max: 65536 },
                Table { map: "s", index: 1, per_jvm: 64, max: 8192 },
            ] {
                let (size, share) = t.size_and_share(max_jvms);
                assert!(share >= t.per_jvm.min(size) && share <= size);
                if max_jvms * t.per_jvm <= t.max {
                    assert!(
                        max_jvms * t.per_jvm <= size,
                        "{max_jvms} JVMs x {} entries fit {size}",
                        t.per_jvm
                    );
                }
            }
        }
    }

    #[test]
    fn a_namespace_holds_the_part_of_a_table_its_slots_are_at_least_one_jvms_share() {
        // (--max-jvms, --max-jvms-per-namespace) -> (table, one JVM's share, a namespace's).
        let table: &[(u32, u32, (u32, u32, u32))] = &[
            (256, 64, (16384, 4096, 4096)), // the defaults: a quarter, one JVM's share
            (256, 128, (16384, 4096, 8192)),
            (256, 1, (16384, 4096, 4096)), // never below one JVM's share
            (8, 2, (512, 128, 128)),
            (8, 4, (512, 128, 256)),
            (8, 64, (512, 128, 512)), // a namespace may hold every slot: the whole table
            (4, 1, (256, 64, 64)),
            (1024, 256, (65536, 16384, 16384)),
        ];
        for &(slots, per_namespace, want) in table {
            let (size, share) = PARK.size_and_share(slots);
            let ns = PARK.namespace_share(slots, per_namespace);
            assert_eq!((size, share, ns), want, "{slots} slots, {per_namespace} per namespace");
        }
        // A namespace at its share of slots, each JVM within its per-JVM size, fits its share.
        for (slots, per_namespace) in [(256, 64), (100, 7), (8, 2), (1024, 256)] {
            let comp = Table { map: "comp_inflight", index: 0, per_jvm: 16, max: 4096 };
            for t in [PARK, comp] {
                if slots * t.per_jvm <= t.max {
                    assert!(per_namespace * t.per_jvm <= t.namespace_share(slots, per_namespace));
                }
            }
        }
    }

    fn lost_entry(slot: u32, table: u16, reason: u16, n: u64) -> (Vec<u8>, Vec<u8>) {
        let k = inflight_lost_key { slot, table, reason };
        // SAFETY: inflight_lost_key is Plain.
        (unsafe { plain::as_bytes(&k) }.to_vec(), n.to_ne_bytes().to_vec())
    }

    #[test]
    fn losses_are_labelled_by_jvm_map_and_reason() {
        let tables = [
            Table { map: "comp_inflight", index: 0, per_jvm: 16, max: 4096 },
            Table { map: "pool_inflight", index: 1, per_jvm: 16, max: 4096 },
        ];
        let e = vec![
            lost_entry(3, 1, consts::INFLIGHT_LOST_SHARE as u16, 7),
            lost_entry(5, 0, consts::INFLIGHT_LOST_FULL as u16, 2),
            lost_entry(5, 9, 0, 1),
            lost_entry(6, 0, consts::INFLIGHT_LOST_NAMESPACE as u16, 3),
        ];
        let f = jvm_lost_family("compilation", &e, &tables);
        assert_eq!(f.samples.len(), 3, "a table the object does not have is not shown");
        assert_eq!(f.samples[2].labels[2].1, "namespace_share");
        assert_eq!(f.samples[0].slot, Some(3));
        assert_eq!(
            f.samples[0].labels,
            vec![
                ("collector", "compilation".to_string()),
                ("map", "pool_inflight".to_string()),
                ("reason", "jvm_share".to_string())
            ]
        );
        assert!(matches!(f.samples[0].value, Value::Counter(7)));
        assert_eq!(f.samples[1].labels[2].1, "full");
    }

    #[test]
    fn totals_come_from_the_stats_of_each_table_and_reason() {
        let mut stats = vec![0u64; consts::STAT_MAX as usize];
        stats[(consts::STAT_INFLIGHT_LOST_0 + consts::INFLIGHT_REASONS + consts::INFLIGHT_LOST_FULL)
            as usize] = 4;
        stats[consts::STAT_INFLIGHT_LOST_0 as usize] = 9;
        let tables = [PARK, Table { map: "second", index: 1, per_jvm: 1, max: 1 }];
        assert_eq!(
            lost_totals(&stats, &tables),
            vec![
                ("park_inflight", "jvm_share", 9),
                ("park_inflight", "namespace_share", 0),
                ("park_inflight", "full", 0),
                ("second", "jvm_share", 0),
                ("second", "namespace_share", 0),
                ("second", "full", 4)
            ]
        );
    }
}
