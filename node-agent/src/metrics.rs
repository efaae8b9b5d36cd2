//! The metric catalog: every family the agent and the sidecar export, with its name, help,
//! type and labels beyond the common per-JVM ones (namespace, pod, container, jvm, …),
//! defined once. Names follow the metrics contract (docs/contracts.md, docs/metrics.md);
//! a family is built from here (`Desc::family`), never from a literal name elsewhere.
// A catalog entry's type is the model's (a family is built from it), named here too.
pub use crate::model::Desc;
use crate::model::{Family, Kind, Value};

const fn desc(
    name: &'static str,
    help: &'static str,
    kind: Kind,
    labels: &'static [&'static str],
) -> Desc {
    Desc { name, help, kind, labels }
}

use Kind::{Counter, Gauge, Histogram};

// Per JVM.
pub static THREAD_STARTS: Desc = desc(
    "jvmdiag_thread_starts_total",
    "Platform threads started, by thread name with digit runs folded to N.",
    Counter,
    &["thread_name"],
);
pub static THREADS_LIVE: Desc = desc(
    "jvmdiag_threads_live",
    "Live platform threads (hsperfdata java.threads.live).",
    Gauge,
    &[],
);
pub static SAFEPOINT_PAUSE: Desc = desc(
    "jvmdiag_safepoint_pause_seconds",
    "Time at safepoint (all threads stopped), by VM operation; sums to sun.rt.safepointTime.",
    Histogram,
    &["vm_operation"],
);
pub static SAFEPOINT_SYNC: Desc = desc(
    "jvmdiag_safepoint_sync_seconds",
    "Time to safepoint (from the request until all threads stopped), by VM operation.",
    Histogram,
    &["vm_operation"],
);
pub static VM_OPERATION: Desc = desc(
    "jvmdiag_vm_operation_seconds",
    "Duration of VM operations, by operation and whether it ran at a safepoint.",
    Histogram,
    &["vm_operation", "at_safepoint"],
);
pub static VM_OPERATION_REQUESTS: Desc = desc(
    "jvmdiag_vm_operation_requests_total",
    "VM operations requested, by operation and requesting thread's native name (its first 15 bytes) with digit runs folded to N.",
    Counter,
    &["vm_operation", "requester"],
);
pub static THREAD_STARTS_BY_STARTER: Desc = desc(
    "jvmdiag_thread_starts_by_starter_total",
    "Platform threads started while the on-demand starter probe was attached, by thread name and starting thread's native name (its first 15 bytes), digit runs folded to N.",
    Counter,
    &["thread_name", "starter"],
);
pub static THREAD_START_SECONDS: Desc = desc(
    "jvmdiag_thread_start_seconds",
    "Time from Thread.start() (JVM_StartThread) to the new thread running, by thread name with digit runs folded to N; measured only while the on-demand starter probe is attached, so it has no observations outside its windows.",
    Histogram,
    &["thread_name"],
);
pub static CULPRIT_STACK_SAMPLES: Desc = desc(
    "jvmdiag_culprit_stack_samples_total",
    "Java stacks taken where a culprit was seen (sampled within the JVM's budget), by kind, the folded name of the thread whose stack it is and the stack's first application frame (the first from the top outside the JDK's packages; past the JVM's name budgets: other; none: no such frame). Whole stacks: GET /stacks.",
    Counter,
    &["kind", "thread_name", "frame"],
);
pub static COMPILATIONS: Desc = desc(
    "jvmdiag_compilations_total",
    "JIT compilations finished (successful or not), by compiler.",
    Counter,
    &["compiler"],
);
pub static COMPILATION_SECONDS: Desc = desc(
    "jvmdiag_compilation_seconds",
    "Duration of JIT compilations, by compiler (compilations in flight when the agent attached are counted but not timed).",
    Histogram,
    &["compiler"],
);
pub static METHOD_COMPILATIONS: Desc = desc(
    "jvmdiag_method_compilations_total",
    "JIT compilations of the JVM's most-compiled methods (pkg.Class.method); the rest are \"other\". Needs USDT probes.",
    Counter,
    &["method"],
);
pub static CODE_CACHE_USED: Desc = desc(
    "jvmdiag_code_cache_used_bytes",
    "Code cache bytes in use per code heap (jcmd Compiler.codecache used). Needs .symtab.",
    Gauge,
    &["code_heap"],
);
pub static CODE_CACHE_MAX: Desc = desc(
    "jvmdiag_code_cache_max_bytes",
    "Code cache size reserved per code heap. Needs .symtab.",
    Gauge,
    &["code_heap"],
);
pub static CODE_CACHE_FULL: Desc = desc(
    "jvmdiag_code_cache_full_total",
    "Times the JVM found a code heap full (\"CodeCache is full. Compiler has been disabled\"; jcmd Compiler.codecache full_count). Needs .symtab.",
    Counter,
    &[],
);
pub static MONITOR_CONTENDED: Desc = desc(
    "jvmdiag_monitor_contended_total",
    "Contended monitor enters (synchronized on an object another thread holds), by the locked object's class and the waiting thread's native name (its first 15 bytes) with digit runs folded to N. Needs -XX:+DTraceMonitorProbes.",
    Counter,
    &["monitor_class", "thread_name"],
);
pub static MONITOR_BLOCKED: Desc = desc(
    "jvmdiag_monitor_blocked_seconds",
    "Time a thread was blocked entering a contended monitor, by the locked object's class. Needs -XX:+DTraceMonitorProbes.",
    Histogram,
    &["monitor_class"],
);
pub static THREAD_PARKS: Desc = desc(
    "jvmdiag_thread_parks_total",
    "Thread parks (via=\"park\": LockSupport.park and friends) and Object.wait calls (via=\"object_wait\", by the waited-on object's class; needs -XX:+DTraceMonitorProbes), by native thread name (its first 15 bytes) with digit runs folded to N.",
    Counter,
    &["thread_name", "via", "monitor_class"],
);
pub static THREAD_PARKED_SECONDS: Desc = desc(
    "jvmdiag_thread_parked_seconds_total",
    "Time threads spent parked (via=\"park\") or in Object.wait until they own the monitor again (via=\"object_wait\", by the waited-on object's class), by native thread name (its first 15 bytes) with digit runs folded to N.",
    Counter,
    &["thread_name", "via", "monitor_class"],
);
pub static JVM_INFO: Desc = desc(
    "jvmdiag_jvm_info",
    "A traced JVM: its version, vendor and how it is probed (usdt, uprobe, hsperfdata).",
    Gauge,
    &["java_version", "vendor", "probe_mode"],
);

// The agent's own health.
pub static AGENT_BUILD_INFO: Desc = desc(
    "jvmdiag_agent_build_info",
    "Always 1: the agent's version, the git commit it was built from and the version of rustc that built it.",
    Gauge,
    &["version", "revision", "rustversion"],
);
pub static AGENT_JVMS_ATTACHED: Desc =
    desc("jvmdiag_agent_jvms_attached", "JVMs traced now.", Gauge, &[]);
pub static AGENT_JVMS_SEEN: Desc =
    desc("jvmdiag_agent_jvms_seen_total", "JVMs attached since the agent started.", Counter, &[]);
pub static AGENT_LIBJVM_FILES: Desc = desc(
    "jvmdiag_agent_libjvm_files",
    "Distinct libjvm.so files (JDK builds) the traced JVMs run.",
    Gauge,
    &[],
);
pub static AGENT_BPF_LINKS: Desc = desc(
    "jvmdiag_agent_bpf_links",
    "BPF links (attached probes) the agent holds: each traced JVM has its own.",
    Gauge,
    &[],
);
pub static AGENT_ATTACH_SECONDS: Desc = desc(
    "jvmdiag_agent_attach_seconds_total",
    "Time spent attaching JVMs: opening and checking each one's libjvm.so and making its links.",
    Counter,
    &[],
);
pub static AGENT_PROC_UNREADABLE: Desc = desc(
    "jvmdiag_agent_proc_unreadable_total",
    "Processes whose /proc entries could not be read during discovery.",
    Counter,
    &[],
);
pub static AGENT_ATTACH_FAILURES: Desc = desc(
    "jvmdiag_agent_attach_failures_total",
    "JVMs (or collectors on a JVM) that could not be attached, by reason.",
    Counter,
    &["reason", "collector"],
);
pub static AGENT_COLLECTOR_DURATION: Desc = desc(
    "jvmdiag_agent_collector_duration_seconds",
    "Time this scrape spent reading each collector's kernel maps.",
    Gauge,
    &["collector"],
);
pub static AGENT_COLLECTOR_SUCCESS: Desc = desc(
    "jvmdiag_agent_collector_success",
    "1 if the collector's maps were read at this scrape.",
    Gauge,
    &["collector"],
);
pub static AGENT_PROBE_EVENTS: Desc = desc(
    "jvmdiag_agent_probe_events_total",
    "Probe hits from traced JVMs, by collector and probe.",
    Counter,
    &["collector", "probe"],
);
pub static AGENT_MAP_ERRORS: Desc = desc(
    "jvmdiag_agent_map_errors_total",
    "Kernel map updates that failed (a full map); those events were not counted.",
    Counter,
    &["collector"],
);
/// Per collector in the agent; without labels in the sidecar (one source of names).
pub static AGENT_NAMES_OVERFLOW: Desc = desc(
    "jvmdiag_agent_names_overflow_total",
    "Events counted under \"other\" because the JVM had used its name budget.",
    Counter,
    &["collector"],
);
pub static AGENT_FILTERED_EVENTS: Desc = desc(
    "jvmdiag_agent_filtered_events_total",
    "Events deliberately not counted (threads: JVM-internal hidden threads).",
    Counter,
    &["collector"],
);
pub static AGENT_INFLIGHT_LOST: Desc = desc(
    "jvmdiag_agent_inflight_lost_total",
    "Begins (a park, a contended enter, a compilation, a thread start) that found no room in their in-flight table, by table and reason (jvm_share: the JVM held its share, namespace_share: the JVMs of its namespace held the namespace's share, full: the table was full); their events are counted, their time or starter is not.",
    Counter,
    &["collector", "map", "reason"],
);
pub static AGENT_JVM_INFLIGHT_LOST: Desc = desc(
    "jvmdiag_agent_jvm_inflight_lost_total",
    "Begins of this JVM that found no room in an in-flight table (its time parked, blocked or compiling, or its starter, not measured for them), by table and reason.",
    Counter,
    &["collector", "map", "reason"],
);
pub static AGENT_MAP_EVICTIONS: Desc = desc(
    "jvmdiag_agent_map_evictions_total",
    "Entries an LRU table dropped to make room, since the agent started (method_seen: methods compiled too few times yet for a counter of their own; a dropped one counts anew), derived from what the probes inserted and deleted and what the table holds.",
    Counter,
    &["collector", "map"],
);
pub static AGENT_JVM_MAP_EVICTIONS: Desc = desc(
    "jvmdiag_agent_jvm_map_evictions_total",
    "This JVM's entries an LRU table dropped to make room (method_seen: a dropped method counts its compilations anew, so its promotion to jvmdiag_method_compilations_total comes later).",
    Counter,
    &["collector", "map"],
);
pub static AGENT_MAP_ENTRIES: Desc = desc(
    "jvmdiag_agent_map_entries",
    "Entries in the agent's kernel maps (per-JVM tables and traced_pids).",
    Gauge,
    &["map"],
);
pub static AGENT_RESIDENT_MEMORY: Desc = desc(
    "jvmdiag_agent_resident_memory_bytes",
    "The agent's resident memory (RSS) at this scrape.",
    Gauge,
    &[],
);
pub static AGENT_BPF_MAP_MEMORY: Desc = desc(
    "jvmdiag_agent_bpf_map_memory_bytes",
    "Kernel memory of the BPF maps the agent holds (their memlock, as bpftool map show prints it), not in its RSS.",
    Gauge,
    &[],
);
pub static AGENT_SCRAPE_DURATION: Desc =
    desc("jvmdiag_agent_scrape_duration_seconds", "Duration of the previous scrape.", Gauge, &[]);
pub static AGENT_HTTP_CONNECTIONS_REFUSED: Desc = desc(
    "jvmdiag_agent_http_connections_refused_total",
    "HTTP connections closed at accept, by listener (metrics: --listen, probe: --probe-listen) and reason (per_peer: the peer address held its share, --max-connections-per-peer or 4 on the probe listener; total: every slot was taken).",
    Counter,
    &["listener", "reason"],
);
/// The reason of a JVM with neither probes nor hsperfdata (`-XX:-UsePerfData`): seen, nothing counted.
pub const NO_PROBES_NO_HSPERFDATA: &str = "no_probes_no_hsperfdata";
pub static AGENT_JVMS_UNTRACED: Desc = desc(
    "jvmdiag_agent_jvms_untraced",
    "JVMs seen but not traced now, by reason (no_probes_no_hsperfdata, no_access, not_selected, ...).",
    Gauge,
    &["reason"],
);
pub static AGENT_JVM_NOT_TRACED: Desc = desc(
    "jvmdiag_agent_jvm_not_traced",
    "1 for a JVM seen and not traced, named like a traced one (no_probes_no_hsperfdata: neither probes nor hsperfdata, e.g. -XX:-UsePerfData).",
    Gauge,
    &["reason"],
);
pub static AGENT_COLLECTOR_UNAVAILABLE: Desc = desc(
    "jvmdiag_agent_collector_unavailable",
    "1 for a JVM that asked for a collector whose probes cannot fire in it, by collector and reason (monitors: no_DTraceMonitorProbes).",
    Gauge,
    &["collector", "reason"],
);
pub static AGENT_STARTER_PROBE_ATTACHED: Desc = desc(
    "jvmdiag_agent_starter_probe_attached",
    "1 while the on-demand starter probe (JVM_StartThread) is attached to the JVM because its thread start rate passed the threshold.",
    Gauge,
    &[],
);
pub static AGENT_STARTER_PROBE_WINDOWS: Desc = desc(
    "jvmdiag_agent_starter_probe_windows_total",
    "Times the on-demand starter probe was attached to the JVM.",
    Counter,
    &[],
);
pub static AGENT_STACK_WALKS: Desc = desc(
    "jvmdiag_agent_stack_walks_total",
    "Culprit stacks wanted, by kind and what became of them: taken, truncated (at the depth limit), or not taken and why (no_token: the JVM's budget for the second was spent; no_layout, no_thread, no_java_frame, unknown_pc, bad_frame, read_failed: the walk could not start or stopped early; table_full).",
    Counter,
    &["kind", "outcome"],
);
pub static AGENT_HSPERFDATA_MERGED: Desc = desc(
    "jvmdiag_agent_hsperfdata_merged_safepoints_total",
    "Safepoints of hsperfdata-mode JVMs recorded at the mean duration of their poll interval (more than one per interval).",
    Counter,
    &[],
);

// Sidecar mode.
pub static SIDECAR_LOG_LINES: Desc = desc(
    "jvmdiag_agent_sidecar_log_lines_total",
    "Lines read from the safepoint log, by result (record, ignored: not a safepoint record, too_long: skipped).",
    Counter,
    &["result"],
);
pub static SIDECAR_LOG_ROTATIONS: Desc = desc(
    "jvmdiag_agent_sidecar_log_rotations_total",
    "Times the followed safepoint log was replaced by a new file (JVM rotation or restart).",
    Counter,
    &[],
);
pub static SIDECAR_LOG_ERRORS: Desc = desc(
    "jvmdiag_agent_sidecar_log_errors_total",
    "Errors opening or reading the safepoint log files.",
    Counter,
    &[],
);
pub static SIDECAR_PERFDATA_UNREADABLE: Desc = desc(
    "jvmdiag_agent_sidecar_perfdata_unreadable_total",
    "hsperfdata files that could not be read or parsed (another user's, half-written).",
    Counter,
    &[],
);

// Kubernetes mode.
pub static KUBE_API_UP: Desc = desc(
    "jvmdiag_agent_kube_api_up",
    "1 while the pod watch is connected and listed; 0: the API server is unreachable and the last known pods are used.",
    Gauge,
    &[],
);
pub static KUBE_PODS: Desc =
    desc("jvmdiag_agent_kube_pods", "Pods on this node known to the agent.", Gauge, &[]);
pub static KUBE_WATCH_EVENTS: Desc =
    desc("jvmdiag_agent_kube_watch_events_total", "Pod watch events received.", Counter, &[]);
pub static KUBE_WATCH_ERRORS: Desc = desc(
    "jvmdiag_agent_kube_watch_errors_total",
    "Pod watch errors (each retried with backoff).",
    Counter,
    &[],
);
pub static KUBE_PENDING_DROPPED: Desc = desc(
    "jvmdiag_agent_kube_pending_dropped_total",
    "JVMs not waited for because too many were waiting.",
    Counter,
    &[],
);
pub static KUBE_JVMS_PENDING: Desc = desc(
    "jvmdiag_agent_kube_jvms_pending",
    "JVMs waiting for their pod (or its container ID, or the list of JvmDiagnostics) to appear in the watch, by reason.",
    Gauge,
    &["reason"],
);
pub static KUBE_JVMS_SKIPPED: Desc = desc(
    "jvmdiag_agent_kube_jvms_skipped_total",
    "JVMs not traced by the pod contract, by reason (not_injected, no_resource: no JvmDiagnostics of the pod's label, container_not_selected, not_in_pod).",
    Counter,
    &["reason"],
);
pub static KUBE_LIMITS_INVALID: Desc = desc(
    "jvmdiag_agent_kube_limits_invalid_total",
    "Items of pods' jvm.diagnostics.dev/limits annotations refused (the agent's own limit applies to them).",
    Counter,
    &[],
);
pub static KUBE_ANNOTATION_REFUSALS: Desc = desc(
    "jvmdiag_agent_kube_annotation_refusals_total",
    "Values in pods' jvm.diagnostics.dev annotations refused, by annotation and reason (collectors, unknown_collector: a collector this agent does not have; the pod's known collectors are traced), counted once per pod and annotation value.",
    Counter,
    &["annotation", "reason"],
);

/// Every family, for checks and docs.
pub static ALL: &[&Desc] = &[
    &THREAD_STARTS,
    &THREADS_LIVE,
    &SAFEPOINT_PAUSE,
    &SAFEPOINT_SYNC,
    &VM_OPERATION,
    &VM_OPERATION_REQUESTS,
    &THREAD_STARTS_BY_STARTER,
    &THREAD_START_SECONDS,
    &CULPRIT_STACK_SAMPLES,
    &COMPILATIONS,
    &COMPILATION_SECONDS,
    &METHOD_COMPILATIONS,
    &CODE_CACHE_USED,
    &CODE_CACHE_MAX,
    &CODE_CACHE_FULL,
    &MONITOR_CONTENDED,
    &MONITOR_BLOCKED,
    &THREAD_PARKS,
    &THREAD_PARKED_SECONDS,
    &JVM_INFO,
    &AGENT_BUILD_INFO,
    &AGENT_JVMS_ATTACHED,
    &AGENT_JVMS_SEEN,
    &AGENT_LIBJVM_FILES,
    &AGENT_BPF_LINKS,
    &AGENT_ATTACH_SECONDS,
    &AGENT_PROC_UNREADABLE,
    &AGENT_ATTACH_FAILURES,
    &AGENT_COLLECTOR_DURATION,
    &AGENT_COLLECTOR_SUCCESS,
    &AGENT_PROBE_EVENTS,
    &AGENT_MAP_ERRORS,
    &AGENT_NAMES_OVERFLOW,
    &AGENT_FILTERED_EVENTS,
    &AGENT_INFLIGHT_LOST,
    &AGENT_JVM_INFLIGHT_LOST,
    &AGENT_MAP_EVICTIONS,
    &AGENT_JVM_MAP_EVICTIONS,
    &AGENT_MAP_ENTRIES,
    &AGENT_SCRAPE_DURATION,
    &AGENT_HTTP_CONNECTIONS_REFUSED,
    &AGENT_RESIDENT_MEMORY,
    &AGENT_BPF_MAP_MEMORY,
    &AGENT_JVMS_UNTRACED,
    &AGENT_JVM_NOT_TRACED,
    &AGENT_COLLECTOR_UNAVAILABLE,
    &AGENT_STARTER_PROBE_ATTACHED,
    &AGENT_STARTER_PROBE_WINDOWS,
    &AGENT_STACK_WALKS,
    &AGENT_HSPERFDATA_MERGED,
    &SIDECAR_LOG_LINES,
    &SIDECAR_LOG_ROTATIONS,
    &SIDECAR_LOG_ERRORS,
    &SIDECAR_PERFDATA_UNREADABLE,
    &KUBE_API_UP,
    &KUBE_PODS,
    &KUBE_WATCH_EVENTS,
    &KUBE_WATCH_ERRORS,
    &KUBE_PENDING_DROPPED,
    &KUBE_JVMS_PENDING,
    &KUBE_JVMS_SKIPPED,
    &KUBE_LIMITS_INVALID,
    &KUBE_ANNOTATION_REFUSALS,
];

/// A gauge family of one agent-wide sample without labels.
pub fn gauge(d: &'static Desc, v: f64) -> Family {
    debug_assert_eq!(d.kind, Kind::Gauge, "{}", d.name);
    let mut f = d.family();
    f.agent(vec![], Value::Gauge(v));
    f
}

/// A counter family of one agent-wide sample without labels.
pub fn counter(d: &'static Desc, v: u64) -> Family {
    debug_assert_eq!(d.kind, Kind::Counter, "{}", d.name);
    let mut f = d.family();
    f.agent(vec![], Value::Counter(v));
    f
}

/// How a JVM's events reach the agent: `jvmdiag_jvm_info{probe_mode}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ProbeMode {
    /// USDT probes (the libjvm.so has `.note.stapsdt`).
    Usdt,
    /// Uprobes on `.symtab` functions (no USDT notes).
    Uprobe,
    /// No probe attached: counters from the JVM's hsperfdata (src/perfdata.rs); also the
    /// sidecar, which reads only hsperfdata and the safepoint log.
    Hsperfdata,
}

impl ProbeMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ProbeMode::Usdt => "usdt",
            ProbeMode::Uprobe => "uprobe",
            ProbeMode::Hsperfdata => "hsperfdata",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn names_are_unique_and_follow_the_conventions() {
        let mut seen = HashSet::new();
        for d in ALL {
            assert!(seen.insert(d.name), "{} twice", d.name);
            assert!(d.name.starts_with("jvmdiag_"), "{}", d.name);
            assert_eq!(
                d.kind == Kind::Counter,
                d.name.ends_with("_total"),
                "{}: counters and only counters end in _total",
                d.name
            );
            assert!(
                d.kind != Kind::Histogram || d.name.ends_with("_seconds"),
                "{}: histograms are durations in seconds",
                d.name
            );
            assert!(
                d.help.ends_with('.') && !d.help.contains('\n'),
                "{}: one sentence of help",
                d.name
            );
        }
    }

    #[test]
    fn every_registered_family_is_in_the_catalog() {
        for r in crate::collector::REGISTRY {
            for d in r.families {
                assert!(
                    ALL.iter().any(|a| std::ptr::eq(*a, *d)),
                    "{}: {} is not in metrics::ALL",
                    r.name,
                    d.name
                );
            }
        }
    }

    /// The catalog as docs/metrics.md shows it.
    fn table() -> String {
        let mut t = String::from(
            "| metric | type | labels beyond the common ones | help |\n|---|---|---|---|\n",
        );
        for d in ALL {
            let kind = match d.kind {
                Kind::Counter => "counter",
                Kind::Gauge => "gauge",
                Kind::Histogram => "histogram",
            };
            let labels = d.labels.iter().map(|l| format!("`{l}`")).collect::<Vec<_>>().join(", ");
            t.push_str(&format!(
                "| `{}` | {kind} | {labels} | {} |\n",
                d.name,
                d.help.replace('|', "\\|")
            ));
        }
        t
    }

    #[test]
    fn docs_metrics_md_shows_the_catalog() {
        const BEGIN: &str = "<!-- catalog: generated from node-agent/src/metrics.rs; UPDATE_GOLDEN=1 cargo test regenerates it -->\n";
        const END: &str = "<!-- /catalog -->";
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/metrics.md");
        let doc = std::fs::read_to_string(path).unwrap();
        let (Some(a), Some(b)) = (doc.find(BEGIN), doc.find(END)) else {
            panic!("{path}: no catalog markers")
        };
        let want = format!("{}{BEGIN}{}{}", &doc[..a], table(), &doc[b..]);
        if std::env::var_os("UPDATE_GOLDEN").is_some() {
            std::fs::write(path, &want).unwrap();
        }
        assert_eq!(
            doc, want,
            "docs/metrics.md is stale; regenerate with UPDATE_GOLDEN=1 cargo test"
        );
    }
}
