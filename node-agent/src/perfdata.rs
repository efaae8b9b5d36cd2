//! The hsperfdata → metrics mapping, written once: the agent uses it for the collectors
//! that could not attach to a JVM (src/fallback.rs), the sidecar for everything it exports.
//!
//! | metric | hsperfdata counter |
//! |---|---|
//! | `jvmdiag_thread_starts_total{thread_name="unknown"}` | `java.threads.started` (no names) |
//! | `jvmdiag_compilations_total{compiler="unknown"}` | `sun.ci.totalCompiles` (no per-compiler split) |
//! | `jvmdiag_threads_live` | `java.threads.live` |
//! | `jvmdiag_jvm_info{java_version, vendor}` | `java.property.java.version`, `java.property.java.vendor` (else `…vm.vendor`) |
//!
//! Safepoint histograms come from counters sampled over time (fallback) or from the
//! safepoint log (sidecar); both are exported by `safepoint_families` under the same names.
use jvmdiag_inspect::hsperfdata::PerfData;

use crate::metrics::{self, ProbeMode};
use crate::model::{Family, Hist, Value};
use crate::report::JvmReport;

/// The label value where hsperfdata cannot name what the probes would (thread, compiler,
/// VM operation).
pub const UNNAMED: &str = "unknown";

/// The counters of `collectors` that hsperfdata has (threads, compilation), for one JVM.
pub fn counter_families(slot: u32, pd: &PerfData, collectors: &[&str], out: &mut Vec<Family>) {
    let mut counter =
        |collector: &str, desc: &'static metrics::Desc, label: &'static str, counter: &str| {
            if !collectors.contains(&collector) {
                return;
            }
            if let Some(n) = pd.long(counter) {
                let mut f = desc.family();
                f.jvm(slot, vec![(label, UNNAMED.to_string())], Value::Counter(n.max(0) as u64));
                out.push(f);
            }
        };
    counter("threads", &metrics::THREAD_STARTS, "thread_name", "java.threads.started");
    counter("compilation", &metrics::COMPILATIONS, "compiler", "sun.ci.totalCompiles");
}

/// Pause and time-to-safepoint histograms by VM operation.
pub fn safepoint_families<'a>(
    slot: u32,
    by_op: impl IntoIterator<Item = (&'a str, &'a Hist, &'a Hist)>,
) -> [Family; 2] {
    let mut pause = metrics::SAFEPOINT_PAUSE.family();
    let mut sync = metrics::SAFEPOINT_SYNC.family();
    for (op, p, s) in by_op {
        pause.jvm(slot, vec![("vm_operation", op.to_string())], Value::Histogram(p.clone()));
        sync.jvm(slot, vec![("vm_operation", op.to_string())], Value::Histogram(s.clone()));
    }
    [pause, sync]
}

/// (java_version, vendor), bounded; None until the JVM has published its version.
pub fn version_vendor(pd: &PerfData) -> Option<(String, String)> {
    let v = crate::labels::bounded_info(pd.string("java.property.java.version").unwrap_or(""));
    let vendor = pd
        .string("java.property.java.vendor")
        .or_else(|| pd.string("java.property.java.vm.vendor"))
        .map(crate::labels::bounded_info)
        .unwrap_or_default();
    (!v.is_empty()).then_some((v, vendor))
}

/// What `jvmdiag_threads_live` and `jvmdiag_jvm_info` say about one JVM.
pub fn jvm_report(
    slot: u32,
    pd: Option<&PerfData>,
    info: Option<(String, String)>,
    probe_mode: Option<ProbeMode>,
) -> JvmReport {
    let (java_version, vendor) = info.or_else(|| pd.and_then(version_vendor)).unwrap_or_default();
    JvmReport {
        slot,
        threads_live: pd.and_then(|p| p.long("java.threads.live")),
        java_version,
        vendor,
        probe_mode,
    }
}
