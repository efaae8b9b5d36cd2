//! Families built from plain data: the per-JVM gauges read from hsperfdata and the agent's
//! own health (`jvmdiag_agent_*`). Pure, so the golden test renders exactly these.
use std::collections::BTreeMap;

use crate::collector::Health;
use crate::metrics::{self, counter, gauge, ProbeMode};
use crate::model::{Family, Value};

/// What a scrape learned about one JVM outside the kernel maps.
#[derive(Debug, Clone)]
pub struct JvmReport {
    pub slot: u32,
    pub threads_live: Option<i64>,
    pub java_version: String,
    pub vendor: String,
    /// None: neither probes nor hsperfdata (jvmdiag_agent_jvm_not_traced, not jvm_info).
    pub probe_mode: Option<ProbeMode>,
}

#[derive(Debug, Clone)]
pub struct CollectorReport {
    pub name: &'static str,
    pub seconds: f64,
    pub ok: bool,
    pub health: Option<Health>,
}

#[derive(Debug, Clone, Default)]
pub struct AgentReport {
    pub collectors: Vec<CollectorReport>,
    pub traced_pids_entries: u64,
    pub jvms_attached: u64,
    pub jvms_seen: u64,
    pub libjvm_files: u64,
    pub links: u64,
    pub attach_seconds: f64,
    pub proc_unreadable: u64,
    /// (reason, collector) -> count
    pub failures: BTreeMap<(String, String), u64>,
    pub last_scrape_seconds: Option<f64>,
    /// The agent's RSS and its BPF maps' memory, in bytes (None where not read).
    pub resident_bytes: Option<u64>,
    pub bpf_map_bytes: Option<u64>,
}

pub fn jvm_families(jvms: &[JvmReport]) -> Vec<Family> {
    let mut live = metrics::THREADS_LIVE.family();
    let mut info = metrics::JVM_INFO.family();
    let mut not_traced = metrics::AGENT_JVM_NOT_TRACED.family();
    for j in jvms {
        if let Some(n) = j.threads_live {
            live.jvm(j.slot, vec![], Value::Gauge(n as f64));
        }
        let Some(mode) = j.probe_mode else {
            not_traced.jvm(
                j.slot,
                vec![("reason", metrics::NO_PROBES_NO_HSPERFDATA.to_string())],
                Value::Gauge(1.0),
            );
            continue;
        };
        info.jvm(
            j.slot,
            vec![
                ("java_version", j.java_version.clone()),
                ("vendor", j.vendor.clone()),
                ("probe_mode", mode.as_str().to_string()),
            ],
            Value::Gauge(1.0),
        );
    }
    vec![live, info, not_traced]
}

/// What this binary was built from: the crate's version, the git commit (build.rs: the
/// builder's JVMDIAG_REVISION, else HEAD, else "unknown") and rustc's version.
pub const BUILD: BuildInfo = BuildInfo {
    version: env!("CARGO_PKG_VERSION"),
    revision: env!("JVMDIAG_REVISION"),
    rustversion: env!("JVMDIAG_RUSTC_VERSION"),
};

#[derive(Debug, Clone, Copy)]
pub struct BuildInfo {
    pub version: &'static str,
    pub revision: &'static str,
    pub rustversion: &'static str,
}

/// `jvmdiag_agent_build_info{version, revision, rustversion} 1`, as node_exporter's
/// `node_exporter_build_info`: on every page of every mode (src/serve.rs adds it).
pub fn build_info_family(b: &BuildInfo) -> Family {
    let mut f = metrics::AGENT_BUILD_INFO.family();
    f.agent(
        vec![
            ("version", b.version.to_string()),
            ("revision", b.revision.to_string()),
            ("rustversion", b.rustversion.to_string()),
        ],
        Value::Gauge(1.0),
    );
    f
}

pub fn agent_families(r: &AgentReport) -> Vec<Family> {
    let mut dur = metrics::AGENT_COLLECTOR_DURATION.family();
    let mut ok = metrics::AGENT_COLLECTOR_SUCCESS.family();
    let mut events = metrics::AGENT_PROBE_EVENTS.family();
    let mut map_errors = metrics::AGENT_MAP_ERRORS.family();
    let mut overflow = metrics::AGENT_NAMES_OVERFLOW.family();
    let mut filtered = metrics::AGENT_FILTERED_EVENTS.family();
    let mut entries = metrics::AGENT_MAP_ENTRIES.family();
    let mut inflight_lost = metrics::AGENT_INFLIGHT_LOST.family();
    let mut evictions = metrics::AGENT_MAP_EVICTIONS.family();
    for c in &r.collectors {
        let cl = || vec![("collector", c.name.to_string())];
        dur.agent(cl(), Value::Gauge(c.seconds));
        ok.agent(cl(), Value::Gauge(if c.ok { 1.0 } else { 0.0 }));
        if let Some(h) = &c.health {
            for (p, n) in &h.events {
                events.agent(
                    vec![("collector", c.name.to_string()), ("probe", p.to_string())],
                    Value::Counter(*n),
                );
            }
            map_errors.agent(cl(), Value::Counter(h.map_errors));
            overflow.agent(cl(), Value::Counter(h.names_overflow));
            filtered.agent(cl(), Value::Counter(h.filtered));
            entries.agent(vec![("map", c.name.to_string())], Value::Gauge(h.entries as f64));
            inflight_lost.samples.append(
                &mut crate::collector::inflight::lost_family(c.name, &h.inflight_lost).samples,
            );
            for (map, n) in &h.evictions {
                evictions.agent(
                    vec![("collector", c.name.to_string()), ("map", map.to_string())],
                    Value::Counter(*n),
                );
            }
        }
    }
    entries.agent(vec![("map", "traced_pids".into())], Value::Gauge(r.traced_pids_entries as f64));
    let mut fails = metrics::AGENT_ATTACH_FAILURES.family();
    for ((reason, collector), n) in &r.failures {
        fails.agent(
            vec![("reason", reason.clone()), ("collector", collector.clone())],
            Value::Counter(*n),
        );
    }
    let mut out = vec![
        gauge(&metrics::AGENT_JVMS_ATTACHED, r.jvms_attached as f64),
        counter(&metrics::AGENT_JVMS_SEEN, r.jvms_seen),
        gauge(&metrics::AGENT_LIBJVM_FILES, r.libjvm_files as f64),
        gauge(&metrics::AGENT_BPF_LINKS, r.links as f64),
        {
            let mut f = metrics::AGENT_ATTACH_SECONDS.family();
            f.agent(vec![], Value::CounterF(r.attach_seconds));
            f
        },
        counter(&metrics::AGENT_PROC_UNREADABLE, r.proc_unreadable),
        fails,
        dur,
        ok,
        events,
        map_errors,
        overflow,
        filtered,
        inflight_lost,
        evictions,
        entries,
    ];
    if let Some(d) = r.last_scrape_seconds {
        out.push(gauge(&metrics::AGENT_SCRAPE_DURATION, d));
    }
    if let Some(b) = r.resident_bytes {
        out.push(gauge(&metrics::AGENT_RESIDENT_MEMORY, b as f64));
    }
    if let Some(b) = r.bpf_map_bytes {
        out.push(gauge(&metrics::AGENT_BPF_MAP_MEMORY, b as f64));
    }
    out
}
