//! Safepoint pauses and time to safepoint per JVM and VM operation
//! (src/bpf/safepoints.bpf.c). The pause is the time at the safepoint, exactly the
//! interval HotSpot adds to sun.rt.safepointTime; the time to safepoint is what it adds to
//! sun.rt.safepointSyncTime.
use std::os::fd::BorrowedFd;

use anyhow::{Context, Result};
use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::MapCore;

use super::{vmops, Attached, Collector, Health, LoadConfig, ProbeMode, Target};
use crate::maps;
use crate::metrics;
use crate::model::Family;
use crate::skel::consts;
use crate::skel::safepoints::{SafepointsSkel, SafepointsSkelBuilder};
use crate::{probe, symbols};

const PROBES: [&str; 8] = super::probe_names([
    (consts::SP_PROBE_BEGIN, "safepoint__begin"),
    (consts::SP_PROBE_SYNC, "RuntimeService::record_safepoint_synchronized"),
    (consts::SP_PROBE_VMOP, "vmops__begin"),
    (consts::SP_PROBE_END, "RuntimeService::record_safepoint_end"),
    (consts::SP_PROBE_END_USDT, "safepoint__end"),
    (consts::SP_PROBE_BEGIN_SYM, "SafepointSynchronize::begin"),
    (consts::SP_PROBE_VMOP_SYM, "VMThread::evaluate_operation"),
    (consts::SP_PROBE_END_SYM, "SafepointSynchronize::end"),
]);
const SYNC_SYM: &str = "_ZN14RuntimeService29record_safepoint_synchronizedEl";
const END_SYM: &str = "_ZN14RuntimeService20record_safepoint_endEl";

pub struct Safepoints {
    skel: SafepointsSkel<'static>,
    vtables: symbols::VtableNames,
}

/// USDT probes it attaches in each JVM (`probe::size_usdt_specs`).
const USDT_PROBES: u32 = 3;

pub fn load(cfg: &LoadConfig, traced_pids: BorrowedFd<'_>) -> Result<Box<dyn Collector>> {
    let mut open = SafepointsSkelBuilder::default()
        .open(super::object_storage())
        .context("open safepoints.bpf.o")?;
    let ro = open.maps.rodata_data.as_deref_mut().context("safepoints: no rodata")?;
    let max_names = cfg.settings.get(&vmops::MAX_VM_OPERATIONS);
    ro.collector_bit = cfg.collector_bit;
    ro.max_names = max_names;
    // HotSpot on Linux counts these in ns (os::elapsed_frequency() == 1e9).
    ro.ticks_per_sec = 1_000_000_000;
    open.maps.traced_pids.reuse_fd(traced_pids)?;
    probe::prepare_uprobes(open.open_object_mut());
    probe::size_usdt_specs(open.open_object_mut(), cfg.max_jvms, USDT_PROBES)?;
    open.maps.sp_pause.set_max_entries(super::table_size(cfg.max_jvms, max_names))?;
    open.maps.sp_sync.set_max_entries(super::table_size(cfg.max_jvms, max_names))?;
    let skel = open.load().context("load safepoints.bpf.o")?;
    Ok(Box::new(Safepoints { skel, vtables: Default::default() }))
}

fn uprobe(
    p: &libbpf_rs::ProgramMut<'_>,
    target: &Target<'_>,
    sym: &str,
) -> Result<libbpf_rs::Link> {
    probe::uprobe_sym(p, target, sym, false, 0)
}

impl Collector for Safepoints {
    fn name(&self) -> &'static str {
        "safepoints"
    }

    fn attach(&self, target: &Target<'_>) -> Result<Attached> {
        let binary = target.binary;
        let p = &self.skel.progs;
        let usdt = target
            .usdt(&p.safepoint_begin, "hs_private", "safepoint__begin")
            .context("USDT hs_private:safepoint__begin")
            .and_then(|b| {
                Ok(vec![
                    b,
                    target
                        .usdt(&p.safepoint_vmop, "hotspot", "vmops__begin")
                        .context("USDT hotspot:vmops__begin")?,
                ])
            });
        let (mut links, mode) = match usdt {
            Ok(links) => (links, ProbeMode::Usdt),
            Err(e) => {
                // No USDT notes: SafepointSynchronize::begin() and the operation evaluated
                // inside, named by its vtable.
                let (file, eval) = self.vtables.register(binary, symbols::SYM_EVALUATE)?;
                let Some(eval) = eval else {
                    return Err(e.context("and no VMThread::evaluate_operation in .symtab"));
                };
                let cookie = symbols::vtable_cookie(file, &eval)?;
                let links = vec![
                    probe::uprobe_sym(
                        &p.safepoint_begin_sym,
                        target,
                        symbols::SYM_SP_BEGIN,
                        false,
                        0,
                    )?,
                    probe::uprobe_sym(
                        &p.safepoint_vmop_sym,
                        target,
                        symbols::SYM_EVALUATE,
                        false,
                        cookie,
                    )?,
                ];
                (links, ProbeMode::Uprobe)
            }
        };
        // The exact HotSpot intervals need two .symtab symbols; without them, time the
        // safepoint ourselves (documented in docs/agent.md). The mode stays what named
        // the safepoint (USDT or symbols).
        match (
            uprobe(&p.safepoint_synchronized, target, SYNC_SYM),
            uprobe(&p.safepoint_end, target, END_SYM),
        ) {
            (Ok(s), Ok(e)) => links.extend([s, e]),
            (s, e) => {
                if let Some(err) = [s.as_ref().err(), e.as_ref().err()].into_iter().flatten().next()
                {
                    tracing::warn!(
                        binary = %binary.display(),
                        collector = "safepoints",
                        error = format!("{err:#}"),
                        "timing safepoints with the agent's own clock"
                    );
                }
                if let Ok(s) = s {
                    links.push(s);
                }
                links.push(if mode == ProbeMode::Usdt {
                    target
                        .usdt(&p.safepoint_end_usdt, "hs_private", "safepoint__end")
                        .context("USDT hs_private:safepoint__end")?
                } else {
                    probe::uprobe_sym(&p.safepoint_end_sym, target, symbols::SYM_SP_END, false, 0)?
                });
            }
        }
        Ok(Attached { links, mode })
    }

    fn collect(&self, out: &mut Vec<Family>) -> Result<()> {
        let op = |k: &maps::NameKey| vec![("vm_operation", k.name.clone())];
        let mut pause = metrics::SAFEPOINT_PAUSE.family();
        maps::hist_family(
            &maps::entries(&self.skel.maps.sp_pause)?,
            &mut pause,
            Some(&self.vtables),
            op,
        );
        let mut sync = metrics::SAFEPOINT_SYNC.family();
        maps::hist_family(
            &maps::entries(&self.skel.maps.sp_sync)?,
            &mut sync,
            Some(&self.vtables),
            op,
        );
        out.push(pause);
        out.push(sync);
        Ok(())
    }

    fn forget(&self, slot: u32) -> Result<()> {
        maps::forget_slot(&self.skel.maps.sp_pause, slot)?;
        maps::forget_slot(&self.skel.maps.sp_sync, slot)?;
        maps::reset_slot(&self.skel.maps.sp_state, slot)?;
        maps::reset_slot(&self.skel.maps.name_budget, slot)
    }

    fn health(&self) -> Result<Health> {
        let mut h = super::health_from(&maps::read_stats(&self.skel.maps.stats)?, &PROBES);
        h.entries = self.skel.maps.sp_pause.keys().count() as u64
            + self.skel.maps.sp_sync.keys().count() as u64;
        Ok(h)
    }
}
