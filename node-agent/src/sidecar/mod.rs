//! Sidecar mode (`--sidecar`): no privileges, no eBPF. For clusters that forbid a
//! privileged DaemonSet; the operator adds this container when `spec.collection: Sidecar`.
//!
//! It reads what the application JVM writes into the volume both containers mount at /tmp:
//! its hsperfdata (`/tmp/hsperfdata_<user>/<pid>`) and the `-Xlog:safepoint` file the
//! operator's flag asks for (`/tmp/jvmdiag/safepoint-%p.log`, rotated by the JVM). It exports
//! the agent's metric names with `probe_mode="sidecar"`:
//!
//! | metric | source |
//! |---|---|
//! | `jvmdiag_thread_starts_total{thread_name="unknown"}` | hsperfdata `java.threads.started` (no names) |
//! | `jvmdiag_threads_live` | `java.threads.live` |
//! | `jvmdiag_safepoint_pause_seconds{vm_operation}` | log: "Total" − "Reaching safepoint" (sums to `sun.rt.safepointTime`) |
//! | `jvmdiag_safepoint_sync_seconds{vm_operation}` | log: "Reaching safepoint" (`sun.rt.safepointSyncTime`) |
//! | `jvmdiag_compilations_total{compiler="all"}` | `sun.ci.totalCompiles` (no per-compiler split in hsperfdata) |
//!
//! Labels: `namespace`/`pod` from the downward-API env the operator sets
//! (`JVMDIAG_POD_NAMESPACE`, `JVMDIAG_POD_NAME`), `container` from `JVMDIAG_CONTAINER` (or
//! the single name of `JVMDIAG_CONTAINERS`, the `jvm.diagnostics.dev/containers`
//! annotation), `jvmdiagnostics` from `JVMDIAG_JVMDIAGNOSTICS`, `jvm` from
//! `sun.rt.javaCommand`.
//!
//! `%p` in `--safepoint-log` (as in the JVM's `-Xlog:…:file=…-%p.log`) stands for the pid of
//! the JVM the sidecar reports (its hsperfdata file name): each JVM in the pod then has a
//! log of its own. Without it, any tool JVM started in the app container with the injected
//! `JAVA_TOOL_OPTIONS` (`kubectl exec … jcmd`) archives the app's log at its start-up while
//! the app keeps writing to the archive, and its lines are lost.
mod logtail;
mod perf;
mod safepoints;

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::cli::Config;
use crate::collector::{safepoints as sp_collector, threads};
use crate::exposition;
use crate::labels::{JvmLabels, Scope};
use crate::model::{Family, Kind, Value};
use crate::preflight::Fatal;

use logtail::{LogTail, TailStats};
use safepoints::Safepoints;

/// The one JVM slot a sidecar reports.
const SLOT: u32 = 0;

/// Where the sidecar reads, and what it calls the JVM.
#[derive(Debug, Clone)]
pub struct Settings {
    pub tmp: PathBuf,
    pub safepoint_log: PathBuf,
    pub namespace: String,
    pub pod: String,
    pub container: String,
    pub jvmdiagnostics: String,
    pub max_vm_operations: usize,
}

impl Settings {
    pub fn from(cfg: &Config, env: &dyn Fn(&str) -> Option<String>) -> Settings {
        let get = |k: &str| env(k).map(|v| v.trim().to_string()).unwrap_or_default();
        let mut container = get("JVMDIAG_CONTAINER");
        if container.is_empty() {
            // The annotation lists the injected containers; with one, it is the JVM's.
            let list = get("JVMDIAG_CONTAINERS");
            let names: Vec<&str> = list.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
            if let [one] = names.as_slice() {
                container = one.to_string();
            }
        }
        Settings {
            tmp: cfg.cli.sidecar_tmp.clone(),
            safepoint_log: cfg.cli.safepoint_log.clone(),
            namespace: get("JVMDIAG_POD_NAMESPACE"),
            pod: get("JVMDIAG_POD_NAME"),
            container,
            jvmdiagnostics: get("JVMDIAG_JVMDIAGNOSTICS"),
            max_vm_operations: cfg.cli.max_vm_operations as usize,
        }
    }
}

/// Everything the sidecar knows; `scrape` renders it.
pub struct Sidecar {
    s: Settings,
    tail: LogTail,
    /// With `%p` in the log path: the pid the followed log belongs to.
    tail_pid: Option<u32>,
    /// Stats of logs followed before (another pid).
    past: TailStats,
    sp: Safepoints,
    perf_unreadable: u64,
    last_scrape: Option<Duration>,
}

impl Sidecar {
    pub fn new(s: Settings) -> Sidecar {
        let tail = LogTail::new(&s.safepoint_log);
        let sp = Safepoints::new(s.max_vm_operations);
        Sidecar { s, tail, tail_pid: None, past: TailStats::default(), sp, perf_unreadable: 0, last_scrape: None }
    }

    /// With `%p` in the log path, follows the log of the JVM reported: the one followed
    /// stays while its hsperfdata file exists (a log is never re-read from its start);
    /// when it is gone, its log is read to its end and the next JVM's followed.
    fn follow_reported_jvm(&mut self) {
        if !has_pid_pattern(&self.s.safepoint_log) {
            return;
        }
        if self.tail_pid.is_some_and(|p| perf::exists(&self.s.tmp, p)) {
            return;
        }
        let mut unreadable = 0; // counted by scrape, not here
        let Some(pid) = perf::find(&self.s.tmp, &mut unreadable, None).map(|j| j.pid) else { return };
        if self.tail_pid == Some(pid) {
            return;
        }
        let sp = &mut self.sp;
        self.tail.poll(&mut |l: &str| sp.line(l));
        self.past.add(&self.tail.stats);
        self.tail = LogTail::new(&with_pid(&self.s.safepoint_log, pid));
        self.tail_pid = Some(pid);
    }

    /// Reads the log lines written since the last call (called every poll interval, so
    /// rotations never outrun it, and at each scrape).
    pub fn poll(&mut self) {
        self.follow_reported_jvm();
        let sp = &mut self.sp;
        self.tail.poll(&mut |l: &str| sp.line(l));
    }

    pub fn scrape(&mut self) -> String {
        self.poll();
        let jvm = perf::find(&self.s.tmp, &mut self.perf_unreadable, self.tail_pid);
        let name = jvm
            .as_ref()
            .map(|j| perf::jvm_name(j.data.string("sun.rt.javaCommand").unwrap_or("")))
            .unwrap_or_else(|| "unknown".to_string());
        let labels = JvmLabels {
            namespace: self.s.namespace.clone(),
            pod: self.s.pod.clone(),
            container: self.s.container.clone(),
            jvm: name,
            scope: Scope::Kubernetes { jvmdiagnostics: self.s.jvmdiagnostics.clone() },
        };
        let mut fams = Vec::new();
        let mut pause = sp_collector::pause_family();
        let mut sync = sp_collector::sync_family();
        for (op, (p, s)) in &self.sp.by_op {
            pause.jvm(SLOT, vec![("vm_operation", op.clone())], Value::Histogram(p.clone()));
            sync.jvm(SLOT, vec![("vm_operation", op.clone())], Value::Histogram(s.clone()));
        }
        fams.push(pause);
        fams.push(sync);
        if let Some(j) = &jvm {
            let d = &j.data;
            if let Some(n) = d.long("java.threads.started") {
                let mut f = threads::family();
                f.jvm(SLOT, vec![("thread_name", "unknown".to_string())], Value::Counter(n.max(0) as u64));
                fams.push(f);
            }
            if let Some(n) = d.long("java.threads.live") {
                let mut f = Family::new("jvmdiag_threads_live", "Live platform threads (hsperfdata java.threads.live).", Kind::Gauge);
                f.jvm(SLOT, vec![], Value::Gauge(n as f64));
                fams.push(f);
            }
            if let Some(n) = d.long("sun.ci.totalCompiles") {
                let mut f = Family::new("jvmdiag_compilations_total", "JIT compilations finished (successful or not), by compiler.", Kind::Counter);
                f.jvm(SLOT, vec![("compiler", "all".to_string())], Value::Counter(n.max(0) as u64));
                fams.push(f);
            }
            let mut info = Family::new(
                "jvmdiag_jvm_info",
                "A traced JVM: its version, vendor and how it is probed (usdt, uprobe, hsperfdata, sidecar).",
                Kind::Gauge,
            );
            let version = crate::labels::bounded_info(d.string("java.property.java.version").unwrap_or(""));
            let vendor = d.string("java.property.java.vendor").or_else(|| d.string("java.property.java.vm.vendor")).map(crate::labels::bounded_info).unwrap_or_default();
            info.jvm(SLOT, vec![("java_version", version), ("vendor", vendor), ("probe_mode", "sidecar".to_string())], Value::Gauge(1.0));
            fams.push(info);
        }
        fams.extend(self.health(jvm.is_some()));
        let jvms: HashMap<u32, JvmLabels> = [(SLOT, labels)].into_iter().collect();
        exposition::render(fams, &jvms)
    }

    fn health(&self, found: bool) -> Vec<Family> {
        let mut st = self.past.clone();
        st.add(&self.tail.stats);
        let g = |name: &'static str, help: &'static str, v: f64| {
            let mut f = Family::new(name, help, Kind::Gauge);
            f.agent(vec![], Value::Gauge(v));
            f
        };
        let c = |name: &'static str, help: &'static str, v: u64| {
            let mut f = Family::new(name, help, Kind::Counter);
            f.agent(vec![], Value::Counter(v));
            f
        };
        let mut lines = Family::new(
            "jvmdiag_agent_sidecar_log_lines_total",
            "Lines read from the safepoint log, by result (record, ignored: not a safepoint record, too_long: skipped).",
            Kind::Counter,
        );
        lines.agent(vec![("result", "record".into())], Value::Counter(self.sp.count()));
        lines.agent(vec![("result", "ignored".into())], Value::Counter(self.sp.ignored_lines));
        lines.agent(vec![("result", "too_long".into())], Value::Counter(st.too_long));
        let mut v = vec![
            g("jvmdiag_agent_jvms_attached", "JVMs traced now.", if found { 1.0 } else { 0.0 }),
            lines,
            c("jvmdiag_agent_sidecar_log_rotations_total", "Times the followed safepoint log was replaced by a new file (JVM rotation or restart).", st.rotations),
            c("jvmdiag_agent_sidecar_log_errors_total", "Errors opening or reading the safepoint log files.", st.errors),
            c("jvmdiag_agent_sidecar_perfdata_unreadable_total", "hsperfdata files that could not be read or parsed (another user's, half-written).", self.perf_unreadable),
            c("jvmdiag_agent_names_overflow_total", "Events counted under \"other\" because the JVM had used its name budget.", self.sp.names_overflow),
        ];
        if let Some(d) = self.last_scrape {
            v.push(g("jvmdiag_agent_scrape_duration_seconds", "Duration of the previous scrape.", d.as_secs_f64()));
        }
        v
    }
}

fn has_pid_pattern(path: &std::path::Path) -> bool {
    path.file_name().is_some_and(|n| n.to_string_lossy().contains("%p"))
}

/// The log path of the JVM with this pid: `%p` in the file name replaced, like HotSpot does.
fn with_pid(path: &std::path::Path, pid: u32) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().replace("%p", &pid.to_string())).unwrap_or_default();
    path.with_file_name(name)
}

/// Runs the sidecar until killed (or `--exit-after`). Never loads BPF, needs no capability.
pub fn run(cfg: Config) -> Result<(), Fatal> {
    let settings = Settings::from(&cfg, &|k| std::env::var(k).ok());
    let server = tiny_http::Server::http(cfg.cli.listen)
        .map_err(|e| Fatal(format!("cannot listen on {} ({e}): choose a free address with --listen", cfg.cli.listen)))?;
    if !settings.tmp.is_dir() {
        return Err(Fatal(format!(
            "--sidecar-tmp {} is not a directory: mount the volume the application writes /tmp to (the operator's jvmdiag-tmp emptyDir) there",
            settings.tmp.display()
        )));
    }
    tracing::info!(
        "jvmdiag-agent: sidecar serving http://{}/metrics, reading {} and {}/hsperfdata_*",
        cfg.cli.listen,
        settings.safepoint_log.display(),
        settings.tmp.display()
    );
    let mut sc = Sidecar::new(settings);
    let started = Instant::now();
    let mut next_poll = Instant::now();
    loop {
        let now = Instant::now();
        if cfg.cli.exit_after > 0 && now.duration_since(started).as_secs() >= cfg.cli.exit_after {
            return Ok(());
        }
        if now >= next_poll {
            sc.poll();
            next_poll = now + cfg.poll_interval();
        }
        match server.recv_timeout(next_poll.saturating_duration_since(Instant::now())) {
            Ok(Some(req)) => serve(req, &mut sc),
            Ok(None) => {}
            Err(e) => tracing::warn!("http: {e}"),
        }
    }
}

fn serve(req: tiny_http::Request, sc: &mut Sidecar) {
    let mut took = None;
    exposition::respond(req, "jvmdiag-agent --sidecar", &mut took, || sc.scrape());
    if took.is_some() {
        sc.last_scrape = took;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn container_comes_from_the_single_injected_name() {
        let cfg = crate::cli::parse_from(["a", "--sidecar"]).unwrap();
        let env = |m: &'static [(&'static str, &'static str)]| move |k: &str| m.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string());
        let s = Settings::from(&cfg, &env(&[("JVMDIAG_CONTAINERS", "app"), ("JVMDIAG_POD_NAME", "p")]));
        assert_eq!((s.container.as_str(), s.pod.as_str()), ("app", "p"));
        let s = Settings::from(&cfg, &env(&[("JVMDIAG_CONTAINERS", "a,b")]));
        assert_eq!(s.container, "");
        let s = Settings::from(&cfg, &env(&[("JVMDIAG_CONTAINERS", "a,b"), ("JVMDIAG_CONTAINER", "b")]));
        assert_eq!(s.container, "b");
        assert_eq!(s.tmp, PathBuf::from("/tmp"));
        assert_eq!(s.safepoint_log, PathBuf::from("/tmp/jvmdiag/safepoint-%p.log"));
    }

    #[test]
    fn pid_pattern_in_the_log_file_name() {
        let p = PathBuf::from("/tmp/jvmdiag/safepoint-%p.log");
        assert!(has_pid_pattern(&p));
        assert_eq!(with_pid(&p, 1), PathBuf::from("/tmp/jvmdiag/safepoint-1.log"));
        assert!(!has_pid_pattern(&PathBuf::from("/tmp/jvmdiag/safepoint.log")));
        // only the file name is a template, as in -Xlog's file=
        assert!(!has_pid_pattern(&PathBuf::from("/tmp/%p/safepoint.log")));
    }
}
