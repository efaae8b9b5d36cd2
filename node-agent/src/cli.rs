//! Command-line flags. Collector switches (`--collector.<name>`, `--no-collector.<name>`)
//! are generated from the collector registry, so adding a collector adds its flags.
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Arg, ArgAction, ArgMatches, Command, CommandFactory, FromArgMatches, Parser};

use crate::collector::REGISTRY;
use crate::kube::limits::{Caps, Limits};

#[derive(Parser, Debug, Clone)]
#[command(
    name = "jvmdiag-agent",
    version,
    about = "Finds every JVM on this host (also in containers), traces thread starts, safepoints and VM operations with eBPF, and serves Prometheus metrics.",
    after_help = "Needs root (or CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH) and kernel BTF.\nSee docs/agent.md."
)]
pub struct Cli {
    /// Trace every JVM on this host and label series with host, jvm and pid (no Kubernetes).
    #[arg(long)]
    pub standalone: bool,

    /// Address to serve /metrics and /healthz on.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:9464")]
    pub listen: SocketAddr,

    /// Kernel BTF, checked at start-up as the sign of a BPF-capable kernel (CONFIG_DEBUG_INFO_BTF);
    /// the agent refuses to start without it. The programs carry no CO-RE relocations.
    #[arg(long, value_name = "PATH", default_value = "/sys/kernel/btf/vmlinux")]
    pub btf: PathBuf,

    /// Distinct thread names counted per JVM (after folding digits); the rest count as "other".
    #[arg(long, value_name = "K", default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub max_thread_names: u32,

    /// Distinct VM operation names counted per JVM; the rest count as "other".
    #[arg(long, value_name = "K", default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=1_000))]
    pub max_vm_operations: u32,

    /// Most-compiled methods named per JVM in jvmdiag_method_compilations_total; the rest count as "other".
    #[arg(long, value_name = "K", default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=500))]
    pub max_methods: u32,

    /// Entries of the compilation collector's staging table (methods compiled fewer times
    /// than gives them their own counter; an LRU shared by every JVM, its evictions counted in
    /// jvmdiag_agent_map_evictions_total). Hidden: for tests that need it small.
    #[arg(long, value_name = "N", default_value_t = 16_384, hide = true, value_parser = clap::value_parser!(u32).range(16..=65_536))]
    pub method_staging_entries: u32,

    /// Monitor classes named per JVM (monitors collector); the rest count as "other".
    #[arg(long, value_name = "K", default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=500))]
    pub max_classes: u32,

    /// Lower limits for the JVMs whose `jvm` label (main class or jar) contains TEXT, as the
    /// pod annotation jvm.diagnostics.dev/limits spells them: TEXT:maxThreadNames=3,maxMethods=5
    /// (repeatable; the first match wins; each value at most the --max-* flag). In Kubernetes
    /// mode the pod's annotation gives them; in the sidecar, JVMDIAG_LIMITS.
    #[arg(long, value_name = "TEXT:LIMITS")]
    pub jvm_limits: Vec<String>,

    /// Count thread starts with a uprobe on JVM_StartThread instead of the USDT probe (no thread names; for JDKs built without probes).
    #[arg(long)]
    pub threads_jvm_start_thread: bool,

    /// On-demand starter probe: a JVM starting threads faster than this (per second) gets JVM_StartThread attached for --starter-window-seconds, naming the starting threads in jvmdiag_thread_starts_by_starter_total; 0 turns it off. A pod's threadStartRate limit (its JvmDiagnostics alert threshold) or --jvm-limits TEXT:threadStartRate=N takes its place.
    #[arg(long, value_name = "PER_SECOND", default_value_t = 50)]
    pub starter_threshold: u32,

    /// How long the on-demand starter probe stays attached to a JVM (seconds); it is attached to that JVM again at the earliest as long after.
    #[arg(long, value_name = "SECONDS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub starter_window_seconds: u64,

    /// How often /proc is scanned for new JVMs and exits (milliseconds, at most 500).
    #[arg(long, value_name = "MS", default_value_t = 200, value_parser = clap::value_parser!(u64).range(10..=500))]
    pub poll_interval_ms: u64,

    /// Most JVMs traced at once on this node (at most 1024); more are refused, counted as
    /// jvmdiag_agent_attach_failures_total{reason="slots_exhausted"}. The per-JVM kernel tables
    /// are sized for it, so it sets the agent's idle memory: set it to the node's pod capacity
    /// times the JVMs per pod (a kubelet runs at most 110 pods by default).
    #[arg(long, value_name = "N", default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..=crate::attach::MAX_JVMS as i64))]
    pub max_jvms: u32,

    /// Kubernetes mode: most JVMs traced at once per namespace (JVMs outside pods count as one
    /// namespace, ""); more are refused, counted as jvmdiag_agent_attach_failures_total{reason="namespace_share"}
    /// and logged once per namespace. Default: a quarter of --max-jvms, at least 64.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=crate::attach::MAX_JVMS as i64))]
    pub max_jvms_per_namespace: Option<u32>,

    /// Trace only JVMs whose `jvm` label (main class or jar) contains this text (default: every JVM).
    #[arg(long, value_name = "TEXT")]
    pub match_jvm: Option<String>,

    /// Host name for the `host` label (default: this host's name).
    #[arg(long, value_name = "NAME")]
    pub host: Option<String>,

    /// Log filter: a level (error, warn, info, debug, trace) or RUST_LOG's syntax (warn,jvmdiag_agent=debug).
    #[arg(long, value_name = "FILTER", env = "RUST_LOG", default_value = "info")]
    pub log_level: String,

    /// Log line format on stderr.
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = crate::log::Format::Logfmt)]
    pub log_format: crate::log::Format,

    /// Stop after this many seconds (tests, demos); 0 runs until killed.
    #[arg(long, value_name = "SECONDS", default_value_t = 0)]
    pub exit_after: u64,

    /// Kubernetes mode: this node's name (the DaemonSet passes spec.nodeName); traces the JVMs of this node's pods that carry jvm.diagnostics.dev/injected, labelled namespace, pod, container, jvm, jvmdiagnostics.
    #[arg(long, value_name = "NODE", conflicts_with_all = ["standalone", "sidecar"], help_heading = "Kubernetes")]
    pub node_name: Option<String>,

    /// Kubernetes mode: kubeconfig file (default: the in-cluster service account, else $KUBECONFIG, else ~/.kube/config).
    #[arg(long, value_name = "PATH", requires = "node_name", help_heading = "Kubernetes")]
    pub kubeconfig: Option<PathBuf>,

    /// Kubernetes mode: trace every JVM on the node, not only injected pods (labelled the same way; JVMs outside pods get empty namespace/pod/container).
    #[arg(long, requires = "node_name", help_heading = "Kubernetes")]
    pub all_jvms: bool,

    /// Sidecar mode: no privileges, no eBPF; reads the app's hsperfdata and -Xlog:safepoint file from the shared /tmp volume.
    #[arg(long, conflicts_with = "standalone", help_heading = "Sidecar")]
    pub sidecar: bool,

    /// Sidecar mode: the shared volume where the app JVM keeps hsperfdata_<user>/<pid>.
    #[arg(long, value_name = "DIR", default_value = "/tmp", help_heading = "Sidecar")]
    pub sidecar_tmp: PathBuf,

    /// Sidecar mode: the -Xlog:safepoint file the operator's flag makes the JVM write (archives are <file>.N).
    #[arg(
        long,
        value_name = "PATH",
        default_value = "/tmp/jvmdiag/safepoint-%p.log",
        help_heading = "Sidecar"
    )]
    pub safepoint_log: PathBuf,
}

/// Parsed flags plus the collector switches.
#[derive(Debug, Clone)]
pub struct Config {
    pub cli: Cli,
    /// Enabled collector names, in registry order.
    pub collectors: Vec<&'static str>,
    /// Deprecated flags given (each mode logs them once the logger runs).
    pub deprecated: Vec<String>,
}

/// Collectors' former names, still accepted (hidden) in `--collector.<old>` /
/// `--no-collector.<old>`: (old, name).
pub const FORMER_NAMES: &[(&str, &str)] = &[("vmops", "vmOperations")];

impl Config {
    /// Logs a warning for each deprecated flag given.
    pub fn warn_deprecated(&self) {
        for d in &self.deprecated {
            tracing::warn!("{d}");
        }
    }
}

impl Config {
    pub fn poll_interval(&self) -> Duration {
        Duration::from_millis(self.cli.poll_interval_ms)
    }

    /// `--max-jvms-per-namespace`, or its default from the node's slots.
    pub fn max_jvms_per_namespace(&self) -> u32 {
        self.cli
            .max_jvms_per_namespace
            .unwrap_or(crate::attach::default_max_jvms_per_namespace(self.cli.max_jvms))
    }

    /// The agent's own `--max-*`: the ceiling of every JVM's limits.
    pub fn caps(&self) -> Caps {
        Caps {
            thread_names: self.cli.max_thread_names,
            methods: self.cli.max_methods,
            classes: self.cli.max_classes,
        }
    }

    /// `--jvm-limits` as (text, limits); refused items are logged.
    pub fn jvm_limits(&self) -> Vec<(String, Limits)> {
        self.cli
            .jvm_limits
            .iter()
            .map(|rule| {
                let (m, text) = rule.split_once(':').unwrap_or((rule.as_str(), ""));
                (m.to_string(), Limits::from_text(text, "--jvm-limits").0)
            })
            .collect()
    }
}

pub fn command() -> Command {
    let mut cmd = Cli::command();
    for r in REGISTRY {
        let on: &'static str = Box::leak(format!("collector.{}", r.name).into_boxed_str());
        let off: &'static str = Box::leak(format!("no-collector.{}", r.name).into_boxed_str());
        let mut on_arg = Arg::new(on)
            .long(on)
            .action(ArgAction::SetTrue)
            .help(format!("Enable the {} collector: {} (default: enabled)", r.name, r.help))
            .overrides_with(off);
        let mut off_arg = Arg::new(off)
            .long(off)
            .action(ArgAction::SetTrue)
            .help(format!("Disable the {} collector", r.name))
            .overrides_with(on);
        for (old, _) in FORMER_NAMES.iter().filter(|(_, new)| *new == r.name) {
            on_arg = on_arg.alias(&*Box::leak(format!("collector.{old}").into_boxed_str()));
            off_arg = off_arg.alias(&*Box::leak(format!("no-collector.{old}").into_boxed_str()));
        }
        cmd = cmd.arg(on_arg).arg(off_arg);
    }
    cmd
}

pub fn parse_from<I, T>(args: I) -> Result<Config, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
    let mut deprecated = Vec::new();
    for a in &args {
        let a = a.to_string_lossy();
        for (old, new) in FORMER_NAMES {
            for prefix in ["--collector.", "--no-collector."] {
                if a.strip_prefix(prefix)
                    .is_some_and(|rest| rest == *old || rest.starts_with(&format!("{old}=")))
                {
                    deprecated.push(format!("{prefix}{old} is deprecated: use {prefix}{new} (the collector's name in the CRD and the health labels)"));
                }
            }
        }
    }
    let m: ArgMatches = command().try_get_matches_from(args)?;
    let cli = Cli::from_arg_matches(&m)?;
    let collectors = REGISTRY
        .iter()
        .filter(|r| !m.get_flag(&format!("no-collector.{}", r.name)))
        .map(|r| r.name)
        .collect();
    Ok(Config { cli, collectors, deprecated })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collectors_default_on_and_switch_off_by_flag() {
        let all: Vec<&str> = REGISTRY.iter().map(|r| r.name).collect();
        let but_vmops: Vec<&str> = all.iter().copied().filter(|n| *n != "vmOperations").collect();
        assert!(all.starts_with(&["threads", "safepoints", "vmOperations", "compilation"]));
        let c = parse_from(["a", "--standalone"]).unwrap();
        assert_eq!((&c.collectors, c.deprecated.len()), (&all, 0));
        let c = parse_from(["a", "--no-collector.vmOperations"]).unwrap();
        assert_eq!(c.collectors, but_vmops);
        let c =
            parse_from(["a", "--no-collector.vmOperations", "--collector.vmOperations"]).unwrap();
        assert_eq!(c.collectors, all);
    }

    #[test]
    fn the_former_vmops_flags_still_work_with_a_warning() {
        let but_vmops: Vec<&str> =
            REGISTRY.iter().map(|r| r.name).filter(|n| *n != "vmOperations").collect();
        let c = parse_from(["a", "--no-collector.vmops"]).unwrap();
        assert_eq!(c.collectors, but_vmops);
        assert!(c.deprecated[0].contains("--no-collector.vmOperations"), "{:?}", c.deprecated);
        let c = parse_from(["a", "--no-collector.vmops", "--collector.vmops"]).unwrap();
        assert_eq!((c.collectors.len(), c.deprecated.len()), (REGISTRY.len(), 2));
        let help = command().render_long_help().to_string();
        assert!(
            help.contains("--collector.vmOperations") && !help.contains("collector.vmops"),
            "the old name stays hidden"
        );
    }

    #[test]
    fn poll_interval_is_bounded() {
        assert!(parse_from(["a", "--poll-interval-ms", "900"]).is_err());
    }

    #[test]
    fn help_documents_every_flag() {
        let help = command().render_long_help().to_string();
        for f in [
            "--standalone",
            "--listen",
            "--btf",
            "--max-thread-names",
            "--collector.threads",
            "--no-collector.safepoints",
        ] {
            assert!(help.contains(f), "{f} missing from --help");
        }
    }
}
