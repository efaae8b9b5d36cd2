//! Sidecar mode (`--sidecar`): no privileges, no eBPF. For clusters that forbid a
//! privileged DaemonSet; the operator adds this container when `spec.collection: Sidecar`.
//!
//! It reads what the application JVM writes into the volume both containers mount at /tmp:
//! its hsperfdata (`/tmp/hsperfdata_<user>/<pid>`) and the `-Xlog:safepoint` file the
//! operator's flag asks for (`/tmp/jvmdiag/safepoint-%p.log`, rotated by the JVM). It exports
//! the agent's metric names with `probe_mode="hsperfdata"` (what it reads): the hsperfdata
//! counters as src/perfdata.rs maps them for the agent's fallback (thread starts, live
//! threads, compilations with `compiler="unknown"`, version and vendor), and safepoints by
//! VM operation from the log:
//!
//! | metric | source |
//! |---|---|
//! | `jvmdiag_safepoint_pause_seconds{vm_operation}` | log: "Total" − "Reaching safepoint" (sums to `sun.rt.safepointTime`) |
//! | `jvmdiag_safepoint_sync_seconds{vm_operation}` | log: "Reaching safepoint" (`sun.rt.safepointSyncTime`) |
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
use std::time::Duration;

use jvmdiag_inspect::jvm_limits::Limits;

use crate::cli::Config;
use crate::exposition;
use crate::labels::{JvmLabels, Scope};
use crate::metrics::{self, counter, gauge, ProbeMode};
use crate::model::{Family, Value};
use crate::perfdata;
use crate::preflight::Fatal;
use crate::serve::{self, Mode};

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
    /// The pod's limits: `--max-thread-names` / `--max-methods` / `--max-classes` (the operator
    /// passes those it has flags for), lowered by `JVMDIAG_LIMITS` (the pod annotation's text,
    /// parsed as the agent parses the annotation). The sidecar names no threads, methods or
    /// monitor classes today (hsperfdata has none): these bound any it will.
    pub limits: Limits,
    /// Items of `JVMDIAG_LIMITS` refused (logged).
    pub limits_invalid: u64,
}

impl Settings {
    pub fn from(cfg: &Config, env: &dyn Fn(&str) -> Option<String>) -> Settings {
        let get = |k: &str| env(k).map(|v| v.trim().to_string()).unwrap_or_default();
        let mut container = get("JVMDIAG_CONTAINER");
        if container.is_empty() {
            // The annotation lists the injected containers; with one, it is the JVM's.
            let list = get("JVMDIAG_CONTAINERS");
            let names: Vec<&str> =
                list.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
            if let [one] = names.as_slice() {
                container = one.to_string();
            }
        }
        let (limits, limits_invalid) = match env("JVMDIAG_LIMITS") {
            Some(text) => crate::limits::from_text(&text, "JVMDIAG_LIMITS"),
            None => Default::default(),
        };
        // Absent from JVMDIAG_LIMITS: the flags' values.
        let caps = cfg.caps();
        let limits = Limits {
            thread_names: limits.thread_names.or(Some(caps.thread_names)),
            methods: limits.methods.or(Some(caps.methods)),
            classes: limits.classes.or(Some(caps.classes)),
            thread_start_rate: None, // the sidecar has no probes to attach
            stack_samples: None,
        };
        Settings {
            tmp: cfg.cli.sidecar_tmp.clone(),
            safepoint_log: cfg.cli.safepoint_log.clone(),
            namespace: get("JVMDIAG_POD_NAMESPACE"),
            pod: get("JVMDIAG_POD_NAME"),
            container,
            jvmdiagnostics: get("JVMDIAG_JVMDIAGNOSTICS"),
            max_vm_operations: cfg.max_vm_operations() as usize,
            limits: limits.clamp(&cfg.caps()),
            limits_invalid,
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
}

impl Sidecar {
    pub fn new(s: Settings) -> Sidecar {
        let tail = LogTail::new(&s.safepoint_log);
        let sp = Safepoints::new(s.max_vm_operations);
        Sidecar { s, tail, tail_pid: None, past: TailStats::default(), sp, perf_unreadable: 0 }
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
        let Some(pid) = perf::find(&self.s.tmp, &mut unreadable, None).map(|j| j.pid) else {
            return;
        };
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

    pub fn scrape(&mut self, previous: Option<Duration>) -> String {
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
        fams.extend(perfdata::safepoint_families(
            SLOT,
            self.sp.by_op.iter().map(|(op, (p, s))| (op.as_str(), p, s)),
        ));
        if let Some(j) = &jvm {
            perfdata::counter_families(SLOT, &j.data, &["threads", "compilation"], &mut fams);
            fams.extend(crate::report::jvm_families(&[perfdata::jvm_report(
                SLOT,
                Some(&j.data),
                None,
                Some(ProbeMode::Hsperfdata),
            )]));
        }
        fams.extend(self.health(jvm.is_some(), previous));
        let jvms: HashMap<u32, JvmLabels> = [(SLOT, labels)].into_iter().collect();
        exposition::render(fams, &jvms)
    }

    fn health(&self, found: bool, previous: Option<Duration>) -> Vec<Family> {
        let mut st = self.past.clone();
        st.add(&self.tail.stats);
        let mut lines = metrics::SIDECAR_LOG_LINES.family();
        lines.agent(vec![("result", "record".into())], Value::Counter(self.sp.count()));
        lines.agent(vec![("result", "ignored".into())], Value::Counter(self.sp.ignored_lines));
        lines.agent(vec![("result", "too_long".into())], Value::Counter(st.too_long));
        // The sidecar's only name budget is the safepoint log's VM operation names.
        let mut overflow = metrics::AGENT_NAMES_OVERFLOW.family();
        overflow.agent(
            vec![("collector", "safepoints".into())],
            Value::Counter(self.sp.names_overflow),
        );
        let mut v = vec![
            gauge(&metrics::AGENT_JVMS_ATTACHED, if found { 1.0 } else { 0.0 }),
            lines,
            counter(&metrics::SIDECAR_LOG_ROTATIONS, st.rotations),
            counter(&metrics::SIDECAR_LOG_ERRORS, st.errors),
            counter(&metrics::SIDECAR_PERFDATA_UNREADABLE, self.perf_unreadable),
            overflow,
        ];
        if let Some(d) = previous {
            v.push(gauge(&metrics::AGENT_SCRAPE_DURATION, d.as_secs_f64()));
        }
        v
    }
}

fn has_pid_pattern(path: &std::path::Path) -> bool {
    path.file_name().is_some_and(|n| n.to_string_lossy().contains("%p"))
}

/// The log path of the JVM with this pid: `%p` in the file name replaced, like HotSpot does.
fn with_pid(path: &std::path::Path, pid: u32) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().replace("%p", &pid.to_string()))
        .unwrap_or_default();
    path.with_file_name(name)
}

/// Runs the sidecar until killed (or `--exit-after`). Never loads BPF, needs no capability.
pub fn run(cfg: Config) -> Result<(), Fatal> {
    cfg.warn_deprecated();
    let settings = Settings::from(&cfg, &|k| std::env::var(k).ok());
    let server = serve::listen(&cfg)?;
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
    tracing::info!(limits = ?settings.limits.words(), invalid = settings.limits_invalid, "sidecar: per-JVM limits (maxThreadNames, maxMethods, maxClasses)");
    serve::run(&cfg, server, &mut Sidecar::new(settings))
}

impl Mode for Sidecar {
    fn banner(&self) -> &'static str {
        "jvmdiag-agent --sidecar"
    }
    fn poll(&mut self) {
        Sidecar::poll(self)
    }
    fn scrape(&mut self, previous: Option<Duration>) -> String {
        Sidecar::scrape(self, previous)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn container_comes_from_the_single_injected_name() {
        let cfg = crate::cli::parse_from(["a", "--sidecar"]).unwrap();
        let env = |m: &'static [(&'static str, &'static str)]| {
            move |k: &str| m.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        };
        let s =
            Settings::from(&cfg, &env(&[("JVMDIAG_CONTAINERS", "app"), ("JVMDIAG_POD_NAME", "p")]));
        assert_eq!((s.container.as_str(), s.pod.as_str()), ("app", "p"));
        let s = Settings::from(&cfg, &env(&[("JVMDIAG_CONTAINERS", "a,b")]));
        assert_eq!(s.container, "");
        let s = Settings::from(
            &cfg,
            &env(&[("JVMDIAG_CONTAINERS", "a,b"), ("JVMDIAG_CONTAINER", "b")]),
        );
        assert_eq!(s.container, "b");
        assert_eq!(s.tmp, PathBuf::from("/tmp"));
        assert_eq!(s.safepoint_log, PathBuf::from("/tmp/jvmdiag/safepoint-%p.log"));
    }

    /// What the operator's webhook gives the sidecar: --max-* flags and JVMDIAG_LIMITS.
    #[test]
    fn limits_come_from_the_flags_and_jvmdiag_limits() {
        let env = |m: &'static [(&'static str, &'static str)]| {
            move |k: &str| m.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        };
        let cfg = crate::cli::parse_from([
            "a",
            "--sidecar",
            "--max-thread-names",
            "7",
            "--max-methods",
            "9",
        ])
        .unwrap();
        let s = Settings::from(&cfg, &env(&[]));
        assert_eq!((s.limits.words(), s.limits_invalid), ([7, 9, 20, 0], 0));
        let s = Settings::from(
            &cfg,
            &env(&[("JVMDIAG_LIMITS", "maxThreadNames=3,maxClasses=5,maxNew=1")]),
        );
        assert_eq!((s.limits.words(), s.limits_invalid), ([3, 9, 5, 0], 0));
        let s =
            Settings::from(&cfg, &env(&[("JVMDIAG_LIMITS", "maxThreadNames=300,maxMethods=x")]));
        assert_eq!(
            (s.limits.words(), s.limits_invalid),
            ([7, 9, 20, 0], 1),
            "clamped to the flag; a bad value counted"
        );
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
