//! VM operation durations per JVM, operation name and at_safepoint, and requests per
//! operation and requesting thread (src/bpf/vmops.bpf.c).
use std::os::fd::BorrowedFd;

use anyhow::{Context, Result};
use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::MapCore;

use super::{threads, Attached, Collector, Flag, Health, LoadConfig, Number, ProbeMode, Target};
use crate::maps;
use crate::maps::decode;
use crate::metrics;
use crate::model::{c_name, Family, Value};
use crate::skel::consts;
use crate::skel::vmops::types::vmop_req_key;
use crate::skel::vmops::{VmopsSkel, VmopsSkelBuilder};
use crate::{probe, symbols};

const PROBES: [&str; 5] = super::probe_names([
    (consts::VMOPS_PROBE_BEGIN, "vmops__begin"),
    (consts::VMOPS_PROBE_END, "vmops__end"),
    (consts::VMOPS_PROBE_BEGIN_SYM, "VMThread::evaluate_operation"),
    (consts::VMOPS_PROBE_END_SYM, "VMThread::evaluate_operation:return"),
    (consts::VMOPS_PROBE_REQUEST, "vmops__request"),
]);

/// `--max-vm-operations`: VM operation names per JVM, in this collector's tables and the
/// safepoints collector's (and the sidecar's, from the safepoint log: `Config::max_vm_operations`).
pub static MAX_VM_OPERATIONS: Number<u32> = Number {
    name: "max-vm-operations",
    value_name: "K",
    default: 64,
    min: 1,
    max: 1_000,
    hide: false,
    help: "Distinct VM operation names counted per JVM; the rest count as \"other\"",
};

pub const FLAGS: &[Flag] = &[Flag::U32(&MAX_VM_OPERATIONS)];

pub struct Vmops {
    skel: VmopsSkel<'static>,
    vtables: symbols::VtableNames,
}

/// USDT probes it attaches in each JVM (`probe::size_usdt_specs`).
const USDT_PROBES: u32 = 3;

pub fn load(cfg: &LoadConfig, traced_pids: BorrowedFd<'_>) -> Result<Box<dyn Collector>> {
    let mut open =
        VmopsSkelBuilder::default().open(super::object_storage()).context("open vmops.bpf.o")?;
    let ro = open.maps.rodata_data.as_deref_mut().context("vmops: no rodata")?;
    let max_names = cfg.settings.get(&MAX_VM_OPERATIONS);
    let max_requesters = cfg.settings.get(&threads::MAX_THREAD_NAMES);
    ro.collector_bit = cfg.collector_bit;
    ro.max_names = max_names;
    ro.max_requesters = max_requesters;
    open.maps.traced_pids.reuse_fd(traced_pids)?;
    crate::stacks::configure!(
        open,
        cfg.stacks.as_deref(),
        cfg.settings.get(&threads::STACK_SAMPLES),
        cfg.settings.get(&threads::MAX_STACKS)
    );
    super::share_jvm_limits(&mut open.maps.jvm_limits, cfg)?;
    probe::prepare_uprobes(open.open_object_mut());
    probe::size_usdt_specs(open.open_object_mut(), cfg.max_jvms, USDT_PROBES)?;
    // Twice the budget: each name may appear at and not at a safepoint.
    open.maps
        .vmops_hist
        .set_max_entries(super::table_size(cfg.max_jvms, max_names.saturating_mul(2)))?;
    // Per JVM: the named (operation, requester) pairs, then at most max_names operations
    // requested by "other", then ("other", "other").
    open.maps.vmop_requests.set_max_entries(super::table_size(
        cfg.max_jvms,
        max_requesters.saturating_add(max_names),
    ))?;
    let skel = open.load().context("load vmops.bpf.o")?;
    Ok(Box::new(Vmops { skel, vtables: Default::default() }))
}

impl Collector for Vmops {
    fn name(&self) -> &'static str {
        "vmOperations"
    }

    fn attach(&self, target: &Target<'_>) -> Result<Attached> {
        let binary = target.binary;
        let p = &self.skel.progs;
        let usdt = target
            .usdt(&p.vmop_begin, "hotspot", "vmops__begin")
            .context("USDT hotspot:vmops__begin")
            .and_then(|b| {
                Ok(vec![
                    b,
                    target
                        .usdt(&p.vmop_end, "hotspot", "vmops__end")
                        .context("USDT hotspot:vmops__end")?,
                ])
            });
        let usdt = match usdt {
            Ok(mut links) => {
                // The requester: only where the JDK has the probe (never guessed without it).
                match target.usdt(&p.vmop_request, "hotspot", "vmops__request") {
                    Ok(l) => links.push(l),
                    Err(e) => {
                        tracing::warn!(binary = %binary.display(), collector = "vmOperations", error = format!("{e:#}"), "no requester of VM operations: USDT hotspot:vmops__request")
                    }
                }
                return Ok(Attached { links, mode: ProbeMode::Usdt });
            }
            Err(e) => e,
        };
        // No USDT notes: VMThread::evaluate_operation and its return, names by vtable,
        // at_safepoint from SafepointSynchronize::begin()/end().
        let (file, eval) = self.vtables.register(binary, symbols::SYM_EVALUATE)?;
        let Some(eval) = eval else {
            return Err(usdt.context("and no VMThread::evaluate_operation in .symtab"));
        };
        let cookie = symbols::vtable_cookie(file, &eval)?;
        let links = vec![
            probe::uprobe_sym(&p.vmop_sp_begin, target, symbols::SYM_SP_BEGIN, false, 0)?,
            probe::uprobe_sym(&p.vmop_sp_end, target, symbols::SYM_SP_END, false, 0)?,
            probe::uprobe_sym(&p.vmop_begin_sym, target, symbols::SYM_EVALUATE, false, cookie)?,
            probe::uprobe_sym(&p.vmop_end_sym, target, symbols::SYM_EVALUATE, true, 0)?,
        ];
        Ok(Attached { links, mode: ProbeMode::Uprobe })
    }

    fn collect(&self, out: &mut Vec<Family>) -> Result<()> {
        let mut f = metrics::VM_OPERATION.family();
        maps::hist_family(
            &maps::entries(&self.skel.maps.vmops_hist)?,
            &mut f,
            Some(&self.vtables),
            |k| {
                vec![("vm_operation", k.name.clone()), ("at_safepoint", (k.flags != 0).to_string())]
            },
        );
        out.push(f);
        out.push(requests_family(&maps::entries(&self.skel.maps.vmop_requests)?));
        Ok(())
    }

    fn forget(&self, slot: u32) -> Result<()> {
        maps::forget_slot(&self.skel.maps.vmops_hist, slot)?;
        maps::forget_where(&self.skel.maps.vmop_requests, |k| {
            decode::<vmop_req_key>(k).is_some_and(|k| k.slot == slot)
        })?;
        maps::reset_slot(&self.skel.maps.vmop_req_budget, slot)?;
        maps::reset_slot(&self.skel.maps.vmop_state, slot)?;
        maps::reset_slot(&self.skel.maps.name_budget, slot)
    }

    fn health(&self) -> Result<Health> {
        let mut h = super::health_from(&maps::read_stats(&self.skel.maps.stats)?, &PROBES);
        h.entries = (self.skel.maps.vmops_hist.keys().count()
            + self.skel.maps.vmop_requests.keys().count()) as u64;
        Ok(h)
    }
}

/// `jvmdiag_vm_operation_requests_total` from vmop_requests entries (vmop_req_key -> __u64).
pub fn requests_family(entries: &[(Vec<u8>, Vec<u8>)]) -> Family {
    let mut f = metrics::VM_OPERATION_REQUESTS.family();
    for (k, v) in entries {
        let (Some(key), Some(n)) = (decode::<vmop_req_key>(k), maps::counter(v)) else { continue };
        f.jvm(
            key.slot,
            vec![("vm_operation", c_name(&key.op)), ("requester", c_name(&key.requester))],
            Value::Counter(n),
        );
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(slot: u32, op: &str, requester: &str) -> Vec<u8> {
        let mut k = vmop_req_key { slot, ..Default::default() };
        for (d, s) in k.op.iter_mut().zip(op.bytes()) {
            *d = s as _;
        }
        for (d, s) in k.requester.iter_mut().zip(requester.bytes()) {
            *d = s as _;
        }
        // SAFETY: vmop_req_key is Plain.
        unsafe { plain::as_bytes(&k) }.to_vec()
    }

    #[test]
    fn requests_are_labelled_by_operation_and_requester() {
        let e = vec![
            (key(3, "ThreadDump", "dumper"), 7u64.to_ne_bytes().to_vec()),
            (key(3, "other", "other"), 2u64.to_ne_bytes().to_vec()),
        ];
        let f = requests_family(&e);
        assert_eq!(f.samples.len(), 2);
        assert_eq!(f.samples[0].slot, Some(3));
        assert_eq!(
            f.samples[0].labels,
            vec![("vm_operation", "ThreadDump".to_string()), ("requester", "dumper".to_string())]
        );
        assert!(matches!(f.samples[0].value, Value::Counter(7)));
    }
}
