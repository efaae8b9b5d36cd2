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
//! killed mid-park) are deleted with the JVM's slot ([`forget`]), so they are never counted
//! against the JVM that takes the slot next.
use anyhow::Result;
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
        _ => "unknown",
    }
}

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
}

/// Sizes each table's map before load and returns the object's `inflight_share` (rodata).
/// The tables allocate an entry at a begin and free it at its end (`BPF_F_NO_PREALLOC`): their
/// memory is their bucket arrays plus the threads in flight now, not their whole size for
/// every slot. A begin the kernel cannot allocate for is refused like one that finds the
/// table full, and counted so.
pub fn configure<'t, 'm, 'o: 'm>(
    tables: impl IntoIterator<Item = (&'t Table, &'m mut libbpf_rs::OpenMapMut<'o>)>,
    max_jvms: u32,
) -> Result<[u32; consts::INFLIGHT_TABLES as usize]> {
    let mut shares = [0; consts::INFLIGHT_TABLES as usize];
    for (t, map) in tables {
        let (size, share) = t.size_and_share(max_jvms);
        map.set_max_entries(size)?;
        map.set_map_flags(map.map_flags() | libbpf_rs::libbpf_sys::BPF_F_NO_PREALLOC)?;
        shares[t.index as usize] = share;
    }
    Ok(shares)
}

/// Deletes a released JVM's entries from one table (begins whose end never came: the JVM
/// exited mid-park) and gives its share back.
pub fn forget_table<M: MapCore, H: MapCore>(
    table: &M,
    t: &Table,
    held: &H,
    slot: u32,
) -> Result<()> {
    maps::forget_where(table, |k| decode::<inflight_key>(k).is_some_and(|k| k.slot == slot))?;
    let i = t.index * consts::MAX_JVMS + slot;
    held.update(&i.to_ne_bytes(), &0u32.to_ne_bytes(), MapFlags::ANY)?;
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
        for reason in [consts::INFLIGHT_LOST_SHARE, consts::INFLIGHT_LOST_FULL] {
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
        ];
        let f = jvm_lost_family("compilation", &e, &tables);
        assert_eq!(f.samples.len(), 2, "a table the object does not have is not shown");
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
                ("park_inflight", "full", 0),
                ("second", "jvm_share", 0),
                ("second", "full", 4)
            ]
        );
    }
}
