//! Families built from plain data: the per-JVM gauges read from hsperfdata and the agent's
//! own health (`jvmdiag_agent_*`). Pure, so the golden test renders exactly these.
use std::collections::BTreeMap;

use crate::collector::Health;
use crate::model::{Family, Kind, Value};

/// What a scrape learned about one JVM outside the kernel maps.
#[derive(Debug, Clone)]
pub struct JvmReport {
    pub slot: u32,
    pub threads_live: Option<i64>,
    pub java_version: String,
    pub vendor: String,
    pub probe_mode: &'static str,
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
    pub proc_unreadable: u64,
    /// (reason, collector) -> count
    pub failures: BTreeMap<(String, String), u64>,
    pub last_scrape_seconds: Option<f64>,
}

pub fn jvm_families(jvms: &[JvmReport]) -> Vec<Family> {
    let mut live = Family::new("jvmdiag_threads_live", "Live platform threads (hsperfdata java.threads.live).", Kind::Gauge);
    let mut info = Family::new(
        "jvmdiag_jvm_info",
        "A traced JVM: its version, vendor and how it is probed (usdt, uprobe, hsperfdata).",
        Kind::Gauge,
    );
    for j in jvms {
        if let Some(n) = j.threads_live {
            live.jvm(j.slot, vec![], Value::Gauge(n as f64));
        }
        info.jvm(
            j.slot,
            vec![
                ("java_version", j.java_version.clone()),
                ("vendor", j.vendor.clone()),
                ("probe_mode", j.probe_mode.to_string()),
            ],
            Value::Gauge(1.0),
        );
    }
    vec![live, info]
}

pub fn agent_families(r: &AgentReport) -> Vec<Family> {
    let mut dur = Family::new(
        "jvmdiag_agent_collector_duration_seconds",
        "Time this scrape spent reading each collector's kernel maps.",
        Kind::Gauge,
    );
    let mut ok = Family::new("jvmdiag_agent_collector_success", "1 if the collector's maps were read at this scrape.", Kind::Gauge);
    let mut events = Family::new("jvmdiag_agent_probe_events_total", "Probe hits from traced JVMs, by collector and probe.", Kind::Counter);
    let mut map_errors =
        Family::new("jvmdiag_agent_map_errors_total", "Kernel map updates that failed (a full map); those events were not counted.", Kind::Counter);
    let mut overflow = Family::new(
        "jvmdiag_agent_names_overflow_total",
        "Events counted under \"other\" because the JVM had used its name budget.",
        Kind::Counter,
    );
    let mut filtered = Family::new(
        "jvmdiag_agent_filtered_events_total",
        "Events deliberately not counted (threads: JVM-internal hidden threads).",
        Kind::Counter,
    );
    let mut entries =
        Family::new("jvmdiag_agent_map_entries", "Entries in the agent's kernel maps (per-JVM tables and traced_pids).", Kind::Gauge);
    for c in &r.collectors {
        let cl = || vec![("collector", c.name.to_string())];
        dur.agent(cl(), Value::Gauge(c.seconds));
        ok.agent(cl(), Value::Gauge(if c.ok { 1.0 } else { 0.0 }));
        if let Some(h) = &c.health {
            for (p, n) in &h.events {
                events.agent(vec![("collector", c.name.to_string()), ("probe", p.to_string())], Value::Counter(*n));
            }
            map_errors.agent(cl(), Value::Counter(h.map_errors));
            overflow.agent(cl(), Value::Counter(h.names_overflow));
            filtered.agent(cl(), Value::Counter(h.filtered));
            entries.agent(vec![("map", c.name.to_string())], Value::Gauge(h.entries as f64));
        }
    }
    entries.agent(vec![("map", "traced_pids".into())], Value::Gauge(r.traced_pids_entries as f64));
    let mut fails = Family::new(
        "jvmdiag_agent_attach_failures_total",
        "JVMs (or collectors on a JVM) that could not be attached, by reason.",
        Kind::Counter,
    );
    for ((reason, collector), n) in &r.failures {
        fails.agent(vec![("reason", reason.clone()), ("collector", collector.clone())], Value::Counter(*n));
    }
    let mut out = vec![
        gauge("jvmdiag_agent_jvms_attached", "JVMs traced now.", r.jvms_attached as f64),
        counter("jvmdiag_agent_jvms_seen_total", "JVMs attached since the agent started.", r.jvms_seen),
        gauge("jvmdiag_agent_libjvm_files", "Distinct libjvm.so files the probes are attached to.", r.libjvm_files as f64),
        gauge("jvmdiag_agent_bpf_links", "BPF links (attached probes) the agent holds.", r.links as f64),
        counter("jvmdiag_agent_proc_unreadable_total", "Processes whose /proc entries could not be read during discovery.", r.proc_unreadable),
        fails,
        dur,
        ok,
        events,
        map_errors,
        overflow,
        filtered,
        entries,
    ];
    if let Some(d) = r.last_scrape_seconds {
        out.push(gauge("jvmdiag_agent_scrape_duration_seconds", "Duration of the previous scrape.", d));
    }
    out
}

fn gauge(name: &'static str, help: &'static str, v: f64) -> Family {
    let mut f = Family::new(name, help, Kind::Gauge);
    f.agent(vec![], Value::Gauge(v));
    f
}

fn counter(name: &'static str, help: &'static str, v: u64) -> Family {
    let mut f = Family::new(name, help, Kind::Counter);
    f.agent(vec![], Value::Counter(v));
    f
}
