//! Reading the collectors' kernel maps: keys and values are decoded into the types that
//! libbpf-cargo generates from the BPF headers (`skel::shapes::types` for the shapes of
//! src/bpf/jvm.h, `skel::<collector>::types` for a collector's own), never by offsets
//! written here. Decoding works on (key, value) byte pairs, so it is tested from raw bytes
//! (src/golden_test.rs) as well as against the kernel.
use std::collections::BTreeMap;

use anyhow::Result;
use libbpf_rs::{MapCore, MapFlags};

use crate::model::{c_name, Family, Hist, Kind, Value};
use crate::skel::consts;
use crate::skel::shapes::types::{hist, name_key, vtable_name};
use crate::symbols::VtableNames;

/// A map entry's bytes decoded as `T` (None: shorter than `T`, which a map of that type
/// never returns).
pub fn decode<T: plain::Plain + Default>(bytes: &[u8]) -> Option<T> {
    let mut v = T::default();
    plain::copy_from_bytes(&mut v, bytes).ok()?;
    Some(v)
}

/// Every (key, value) of a map, copied out.
pub fn entries<M: MapCore>(map: &M) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let mut out = Vec::new();
    for k in map.keys() {
        if let Some(v) = map.lookup(&k, MapFlags::ANY)? {
            out.push((k, v));
        }
    }
    Ok(out)
}

/// Every (key, value) of a hash or array map, read in batches: a few calls for thousands of
/// entries, where [`entries`] makes two per entry. (libbpf-rs' batch iterator takes a batch
/// shorter than asked for the last one, but the kernel ends a hash map's batch at a bucket
/// boundary, so only ENOENT ends the walk.)
pub fn batch_entries<M: MapCore>(map: &M, mut each: impl FnMut(&[u8], &[u8])) -> Result<()> {
    const BATCH: usize = 4096;
    let (ks, vs) = (map.key_size() as usize, map.value_size() as usize);
    let (mut keys, mut values) = (vec![0u8; ks * BATCH], vec![0u8; vs * BATCH]);
    // The position the kernel hands back: a u32 (bucket or index) for hash and array maps.
    let (mut at, mut next) = ([0u8; 8], [0u8; 8]);
    let opts = libbpf_rs::libbpf_sys::bpf_map_batch_opts {
        sz: std::mem::size_of::<libbpf_rs::libbpf_sys::bpf_map_batch_opts>() as _,
        ..Default::default()
    };
    let mut first = true;
    loop {
        let mut count = BATCH as u32;
        let from = if first { std::ptr::null_mut() } else { at.as_mut_ptr().cast() };
        // SAFETY: `keys` and `values` hold BATCH keys and values of the map's sizes, `at` and
        // `next` 8 bytes (the kernel writes 4); the kernel writes at most `count` entries.
        let rc = unsafe {
            libbpf_rs::libbpf_sys::bpf_map_lookup_batch(
                std::os::fd::AsRawFd::as_raw_fd(&map.as_fd()),
                from,
                next.as_mut_ptr().cast(),
                keys.as_mut_ptr().cast(),
                values.as_mut_ptr().cast(),
                &mut count,
                &opts,
            )
        };
        let n = (count as usize).min(BATCH);
        for (k, v) in keys.chunks_exact(ks).zip(values.chunks_exact(vs)).take(n) {
            each(k, v);
        }
        match rc {
            0 => {}
            rc if rc == -libc::ENOENT => return Ok(()),
            rc => anyhow::bail!(
                "batch lookup of map {}: {}",
                map.name().to_string_lossy(),
                std::io::Error::from_raw_os_error(-rc)
            ),
        }
        at = next;
        first = false;
    }
}

/// The key of every per-JVM name table (`struct name_key`), its name decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameKey {
    pub slot: u32,
    pub flags: u32,
    pub name: String,
    /// (file index, vtable address relative to the load bias) of a VM operation named by
    /// its vtable in uprobe mode (`struct vtable_name`); `name` is empty then.
    pub vtable: Option<(u32, u64)>,
}

pub fn name_key(k: &[u8]) -> Option<NameKey> {
    let key: name_key = decode(k)?;
    let raw: Vec<u8> = key.name.iter().map(|&c| c as u8).collect();
    if raw.first().map(|&b| u32::from(b)) == Some(consts::VTABLE_TAG) {
        let vn: vtable_name = decode(&raw)?;
        return Some(NameKey {
            slot: key.slot,
            flags: key.flags,
            name: String::new(),
            vtable: Some((vn.file, vn.rel)),
        });
    }
    Some(NameKey { slot: key.slot, flags: key.flags, name: c_name(&key.name), vtable: None })
}

impl From<&hist> for Hist {
    fn from(h: &hist) -> Hist {
        Hist { buckets: h.buckets, sum_ns: h.sum_ns, count: h.count }
    }
}

pub fn histogram(v: &[u8]) -> Option<Hist> {
    decode::<hist>(v).as_ref().map(Hist::from)
}

/// A `__u64` value (counters).
pub fn counter(v: &[u8]) -> Option<u64> {
    decode::<u64>(v)
}

/// Deletes every key of a name table that belongs to `slot`; returns how many it deleted.
pub fn forget_slot<M: MapCore>(map: &M, slot: u32) -> Result<usize> {
    forget_where(map, |k| name_key(k).is_some_and(|nk| nk.slot == slot))
}

/// Deletes every key `doomed` selects; returns how many it deleted (a key already gone is
/// not counted).
pub fn forget_where<M: MapCore>(map: &M, doomed: impl Fn(&[u8]) -> bool) -> Result<usize> {
    let keys: Vec<Vec<u8>> = map.keys().filter(|k| doomed(k)).collect();
    Ok(keys.iter().filter(|k| map.delete(k).is_ok()).count())
}

/// Zeroes one slot of a per-JVM array map.
pub fn reset_slot<M: MapCore>(map: &M, slot: u32) -> Result<()> {
    let zero = vec![0u8; map.value_size() as usize];
    map.update(&slot.to_ne_bytes(), &zero, MapFlags::ANY)?;
    Ok(())
}

/// Sums a per-CPU u64 array (the `stats` map of src/bpf/common.bpf.h).
pub fn read_stats<M: MapCore>(map: &M) -> Result<Vec<u64>> {
    let n = map.max_entries();
    let mut out = vec![0u64; n as usize];
    for i in 0..n {
        if let Some(per_cpu) = map.lookup_percpu(&i.to_ne_bytes(), MapFlags::ANY)? {
            out[i as usize] = per_cpu.iter().filter_map(|v| counter(v)).sum();
        }
    }
    Ok(out)
}

/// Fills a histogram family from the entries of a (name_key -> hist) table; VM operations
/// named by their vtable are resolved with `vtables` (two vtables resolving alike are merged).
pub fn hist_family(
    entries: &[(Vec<u8>, Vec<u8>)],
    fam: &mut Family,
    vtables: Option<&VtableNames>,
    label: fn(&NameKey) -> Vec<(&'static str, String)>,
) {
    debug_assert_eq!(fam.kind, Kind::Histogram);
    type Series = (u32, Vec<(&'static str, String)>);
    let mut merged: BTreeMap<Series, Hist> = BTreeMap::new();
    for (k, v) in entries {
        let (Some(mut nk), Some(h)) = (name_key(k), histogram(v)) else { continue };
        if let Some((file, rel)) = nk.vtable {
            nk.name = vtables.map(|t| t.resolve(file, rel)).unwrap_or_else(|| "unknown".into());
        }
        merged.entry((nk.slot, label(&nk))).or_default().merge(&h);
    }
    for ((slot, labels), h) in merged {
        fam.jvm(slot, labels, Value::Histogram(h));
    }
}
