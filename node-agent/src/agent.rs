//! The eBPF agent: preflight, collectors, discovery + attach manager, run by the main loop
//! of src/serve.rs (a poll scans /proc, a scrape reads every collector).
use std::collections::HashMap;
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use crate::attach::{self, AttachManager};
use crate::cli::Config;
use crate::collector::{threads, Collector, LoadConfig, REGISTRY};
use crate::discovery::Discovery;
use crate::exposition;
use crate::model::Family;
use crate::preflight::{self, Fatal};
use crate::report::{self, AgentReport, CollectorReport};
use crate::serve::{self, Mode};

#[derive(Default)]
struct AgentStats {
    proc_unreadable: u64,
    /// Kubernetes mode (`--node-name`): pod attribution (src/kube/).
    kube: Option<crate::kube::Attributor>,
    /// hsperfdata safepoint samples of JVMs without the safepoints collector.
    fallback: crate::fallback::Sampler,
}

pub fn run(cfg: Config) -> Result<(), Fatal> {
    cfg.warn_deprecated();
    preflight::check(&cfg)?;
    let traced = attach::create_traced_pids().map_err(bpf_fatal)?;
    let limits_map = attach::create_jvm_limits().map_err(bpf_fatal)?;
    let limits_fd = limits_map.as_fd().try_clone_to_owned().map_err(|e| bpf_fatal(e.into()))?;
    let namespaces = attach::create_slot_namespace().map_err(bpf_fatal)?;
    let namespaces_fd = namespaces.as_fd().try_clone_to_owned().map_err(|e| bpf_fatal(e.into()))?;
    let stack_maps = crate::stacks::Maps::create(
        cfg.cli.max_jvms,
        cfg.settings.get(&crate::collector::threads::MAX_STACKS),
    )
    .map_err(bpf_fatal)?;
    let load_cfg = LoadConfig {
        stacks: Some(std::sync::Arc::new(stack_maps.fds().map_err(bpf_fatal)?)),
        max_jvms: cfg.cli.max_jvms,
        collector_bit: 0,
        jvm_limits: Some(std::sync::Arc::new(limits_fd)),
        slot_namespace: Some(std::sync::Arc::new(namespaces_fd)),
        max_jvms_per_namespace: cfg.max_jvms_per_namespace(),
        settings: cfg.settings.clone(),
    };
    let mut collectors: Vec<Box<dyn Collector>> = Vec::new();
    let mut starters = None;
    // The holders' stacks go with the monitors collector, on demand, while stacks are on.
    let holders = (cfg.collectors.contains(&"monitors")
        && cfg.settings.get(&threads::STACK_SAMPLES) > 0)
        .then(crate::holders::Holders::default);
    for name in &cfg.collectors {
        let r = REGISTRY.iter().find(|r| r.name == *name).expect("registered");
        let own = LoadConfig { collector_bit: r.bit(), ..load_cfg.clone() };
        collectors.push((r.load)(&own, traced.as_fd()).map_err(bpf_fatal)?);
        // The on-demand starter probe goes with thread starts (their bit, their rate).
        if r.name == "threads" && !cfg.settings.get(&threads::JVM_START_THREAD) {
            let settings = crate::starters::Settings::from_flags(&cfg.settings);
            starters = crate::starters::load(&own, traced.as_fd(), settings);
        }
    }
    let server = serve::listen(&cfg)?;
    let host = cfg.cli.host.clone().unwrap_or_else(hostname);
    tracing::info!(listen = %cfg.cli.listen, collectors = %cfg.collectors.join(","), "jvmdiag-agent: serving http://{}/metrics", cfg.cli.listen);

    let mut mgr = AttachManager::new(collectors, traced, host)
        .with_jvm_limits(limits_map, cfg.caps())
        .with_max_jvms(cfg.cli.max_jvms)
        .with_capacity(cfg.capacity())
        .with_slot_namespace(namespaces);
    mgr.match_jvm = cfg.cli.match_jvm.clone();
    let stats = AgentStats { kube: crate::kube::Attributor::start(&cfg)?, ..Default::default() };
    let mut agent = Agent {
        mgr,
        disc: Discovery::default(),
        stats,
        jvm_limits: cfg.jvm_limits(),
        starters,
        holders,
        culprits: crate::stacks::Stacks::new(stack_maps),
        max_frames: cfg.settings.get(&threads::MAX_THREAD_NAMES),
        served: Vec::new(),
    };
    serve::run(&cfg, server, &mut agent)
}

struct Agent {
    mgr: AttachManager,
    disc: Discovery,
    stats: AgentStats,
    /// Standalone `--jvm-limits`: (text in the `jvm` label, limits), first match wins.
    jvm_limits: Vec<(String, jvmdiag_inspect::jvm_limits::Limits)>,
    /// The on-demand starter probe (None: off, or it could not load).
    starters: Option<crate::starters::Starters>,
    /// The on-demand holder probe (None: no monitors collector, or culprit stacks off).
    holders: Option<crate::holders::Holders>,
    /// Culprit stacks: each JVM's layout in, named stacks out.
    culprits: crate::stacks::Stacks,
    /// Application frames and thread names named per JVM in jvmdiag_culprit_stack_samples_total.
    max_frames: u32,
    /// The culprit stacks of the last scrape, for its snapshot's /stacks.
    served: Vec<crate::stacks::Served>,
}

impl Mode for Agent {
    fn banner(&self) -> &'static str {
        "jvmdiag-agent"
    }

    fn poll(&mut self) {
        let (mgr, stats) = (&mut self.mgr, &mut self.stats);
        // Before reap and discovery: a slot released now is forgotten here before a new JVM
        // can take it.
        if let Some(s) = self.starters.as_mut() {
            s.poll(mgr, Instant::now());
        }
        if let Some(h) = self.holders.as_mut() {
            h.poll(mgr, Instant::now());
        }
        mgr.reap();
        stats.fallback.poll(mgr);
        // JVMs refused for capacity first, when a slot was released: they waited longest.
        let retried = mgr.retry_waiting();
        let found = match self.disc.poll(&mgr.known()) {
            Ok(p) => {
                stats.proc_unreadable += p.unreadable;
                p.found
            }
            Err(e) => {
                tracing::warn!(error = %e, "scanning /proc");
                Vec::new()
            }
        };
        for f in retried.into_iter().chain(found) {
            match stats.kube.as_mut() {
                Some(k) => k.offer(f),
                None => {
                    let limits = crate::limits::for_jvm(&self.jvm_limits, &f.name);
                    mgr.try_add(f, None, limits, None);
                }
            }
        }
        if let Some(k) = stats.kube.as_mut() {
            k.resolve(mgr);
        }
        let live = |j: &crate::attach::Jvm| j.state == crate::attach::JvmState::Live;
        self.culprits.poll(self.mgr.jvms.values().map(|j| (j.slot, &j.found, live(j))));
        if self.culprits.history_due(Instant::now()) {
            if let Err(e) = self.culprits.read(self.max_frames) {
                tracing::warn!(error = format!("{e:#}"), "culprit stacks: reading the maps failed");
            }
        }
    }

    fn scrape(&mut self, previous: Option<Duration>) -> String {
        let culprits = (&mut self.culprits, self.max_frames);
        let holder_links = self.holders.as_ref().map_or(0, |h| h.links());
        let on_demand = (self.starters.as_ref(), holder_links);
        let (text, served) = scrape(&mut self.mgr, &self.stats, on_demand, culprits, previous);
        self.served = served;
        text
    }

    fn stacks(&mut self) -> crate::stacks::Page {
        crate::stacks::Page {
            lines: std::mem::take(&mut self.served),
            history: self.culprits.history(Instant::now()),
        }
    }
}

fn bpf_fatal(e: anyhow::Error) -> Fatal {
    let msg = format!("{e:#}");
    if msg.contains("Operation not permitted") || msg.contains("EPERM") {
        Fatal(format!("loading eBPF programs was refused ({msg}): run as root or with CAP_BPF,CAP_PERFMON (and no seccomp/LSM policy blocking bpf())"))
    } else {
        Fatal(format!("loading eBPF programs failed ({msg}): needs a 5.17+ kernel with BTF (bpf_loop, BPF cookies); run with --no-collector.<name> to skip one collector"))
    }
}

/// This process's RSS (`/proc/self/statm`, resident pages).
fn own_resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf only reads a constant.
    Some(pages * unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64)
}

/// The memlock of every BPF map this process holds, each map once (`/proc/self/fdinfo`: the
/// figure `bpftool map show` prints; for maps without preallocation it grows with the entries).
fn own_bpf_map_bytes() -> Option<u64> {
    let mut seen = std::collections::HashMap::new();
    for e in std::fs::read_dir("/proc/self/fd").ok()?.flatten() {
        if !std::fs::read_link(e.path()).is_ok_and(|t| t.as_os_str() == "anon_inode:bpf-map") {
            continue;
        }
        let Ok(info) = std::fs::read_to_string(format!(
            "/proc/self/fdinfo/{}",
            e.file_name().to_string_lossy()
        )) else {
            continue;
        };
        let field = |k: &str| {
            info.lines().find_map(|l| l.strip_prefix(k)).and_then(|v| v.trim().parse::<u64>().ok())
        };
        if let (Some(id), Some(memlock)) = (field("map_id:"), field("memlock:")) {
            seen.insert(id, memlock);
        }
    }
    Some(seen.values().sum())
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// One scrape: every collector, the per-JVM hsperfdata gauges, the agent's own health.
fn scrape(
    mgr: &mut AttachManager,
    stats: &AgentStats,
    (starters, holder_links): (Option<&crate::starters::Starters>, usize),
    (culprits, max_frames): (&mut crate::stacks::Stacks, u32),
    previous: Option<Duration>,
) -> (String, Vec<crate::stacks::Served>) {
    mgr.reap();
    let exited_before = mgr.exited();
    let mut fams: Vec<Family> = Vec::new();
    let mut report = AgentReport::default();
    for c in &mgr.collectors {
        let t0 = Instant::now();
        let r = c.collect(&mut fams);
        if let Err(e) = &r {
            tracing::warn!(collector = c.name(), error = format!("{e:#}"), "collecting");
        }
        report.collectors.push(CollectorReport {
            name: c.name(),
            seconds: t0.elapsed().as_secs_f64(),
            ok: r.is_ok(),
            health: c.health().ok(),
        });
    }
    if let Some(s) = starters {
        if let Err(e) = s.collect(&mut fams) {
            tracing::warn!(error = format!("{e:#}"), "starters: reading the maps failed");
        }
    }
    let stack_lines = match culprits.read(max_frames) {
        Ok((lines, samples)) => {
            fams.push(samples);
            lines
        }
        Err(e) => {
            tracing::warn!(error = format!("{e:#}"), "culprit stacks: reading the maps failed");
            Vec::new()
        }
    };
    match culprits.walks() {
        Ok(f) => fams.push(f),
        Err(e) => {
            tracing::warn!(error = format!("{e:#}"), "culprit stacks: reading the stats failed")
        }
    }
    let pids: Vec<u32> = mgr.jvms.keys().copied().collect();
    let mut jvms = Vec::with_capacity(pids.len());
    for pid in pids {
        let pd = mgr.read_perfdata(pid);
        if let Some(j) = mgr.jvms.get_mut(&pid) {
            crate::fallback::scrape_jvm(j, pd.as_ref(), &stats.fallback, pid, &mut fams);
        }
        let j = &mgr.jvms[&pid];
        jvms.push(crate::perfdata::jvm_report(j.slot, pd.as_ref(), j.info.clone(), j.probe_mode));
    }
    fams.extend(report::jvm_families(&jvms));
    report.traced_pids_entries = mgr.traced_pids_entries() as u64;
    report.jvms_attached = mgr.live() as u64;
    report.jvms_seen = mgr.seen;
    report.libjvm_files = mgr.files() as u64;
    report.links = (mgr.links() + starters.map_or(0, |s| s.links()) + holder_links) as u64;
    report.attach_seconds = mgr.attach_time.as_secs_f64();
    report.proc_unreadable = stats.proc_unreadable;
    report.failures = mgr.failures.clone();
    report.last_scrape_seconds = previous.map(|d| d.as_secs_f64());
    report.resident_bytes = own_resident_bytes();
    report.bpf_map_bytes = own_bpf_map_bytes();
    fams.extend(report::agent_families(&report));
    fams.extend(crate::fallback::agent_families(mgr, &stats.fallback));

    if let Some(k) = &stats.kube {
        k.finish(&mut fams, mgr);
    }
    let labels: HashMap<u32, _> = mgr.jvms.values().map(|j| (j.slot, j.labels.clone())).collect();
    let pids: HashMap<u32, u32> = mgr.jvms.iter().map(|(pid, j)| (j.slot, *pid)).collect();
    let served = stack_lines
        .iter()
        .filter_map(|l| Some(l.served(labels.get(&l.slot)?, *pids.get(&l.slot)?)))
        .collect();
    let text = exposition::render(fams, &labels);
    mgr.after_scrape(&exited_before);
    (text, served)
}
