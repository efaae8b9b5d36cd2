//! Command-line flags. The agent-wide ones are `Cli`'s fields; the collectors' come from the
//! collector registry: the switches (`--collector.<name>`, `--no-collector.<name>`) and the
//! flags each collector declares (`Registration::flags`, read back from `Config::settings`),
//! so adding a collector adds its flags.
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Arg, ArgAction, ArgMatches, Command, CommandFactory, FromArgMatches, Parser};

use crate::collector::{compilation, monitors, threads, vmops, Settings, REGISTRY};
use crate::slots;
use jvmdiag_inspect::jvm_limits::{Caps, Limits};

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

    /// A second address that serves only /healthz, for the kubelet's probes, with connection
    /// slots of its own (16 at once, 4 per peer address): clients holding every connection
    /// --listen allows cannot fail the probes. /healthz stays on --listen too.
    #[arg(long, value_name = "ADDR")]
    pub probe_listen: Option<SocketAddr>,

    /// Most connections open at once from one peer address on --listen (64 in all); more are
    /// closed at accept, counted as
    /// jvmdiag_agent_http_connections_refused_total{listener="metrics",reason="per_peer"}.
    #[arg(long, value_name = "N", default_value_t = slots::DEFAULT_PER_PEER, value_parser = clap::value_parser!(u32).range(1..=slots::MAX_CONNECTIONS as i64))]
    pub max_connections_per_peer: u32,

    /// Who may read /metrics: none (whoever can connect), or kubernetes: a request needs
    /// `Authorization: Bearer TOKEN`, which a TokenReview must authenticate and a
    /// SubjectAccessReview allow to `get` the non-resource URL /metrics (as kube-rbac-proxy and
    /// the kubelet check; needs Kubernetes mode and RBAC to create both reviews). /healthz
    /// never needs it.
    #[arg(long, value_name = "MODE", value_enum, default_value_t = MetricsAuth::None)]
    pub metrics_auth: MetricsAuth,

    /// Kernel BTF, checked at start-up as the sign of a BPF-capable kernel (CONFIG_DEBUG_INFO_BTF);
    /// the agent refuses to start without it. The programs carry no CO-RE relocations.
    #[arg(long, value_name = "PATH", default_value = "/sys/kernel/btf/vmlinux")]
    pub btf: PathBuf,

    /// Lower limits for the JVMs whose `jvm` label (main class or jar) contains TEXT, as the
    /// pod annotation jvm.diagnostics.dev/limits spells them: TEXT:maxThreadNames=3,maxMethods=5
    /// (repeatable; the first match wins; each value at most the --max-* flag). In Kubernetes
    /// mode the pod's annotation gives them; in the sidecar, JVMDIAG_LIMITS.
    #[arg(long, value_name = "TEXT:LIMITS")]
    pub jvm_limits: Vec<String>,

    /// How often /proc is scanned for new JVMs and exits (milliseconds, at most 500).
    #[arg(long, value_name = "MS", default_value_t = 200, value_parser = clap::value_parser!(u64).range(10..=500))]
    pub poll_interval_ms: u64,

    /// Most JVMs traced at once on this node (at most 1024); more are refused, counted as
    /// jvmdiag_agent_attach_failures_total{reason="slots_exhausted"}, and wait for a slot to
    /// free. In Kubernetes mode the last N/16 free slots (at least 1) only go to namespaces
    /// holding none (slots_reserved for the others). The per-JVM kernel tables
    /// are sized for it, so it sets the agent's idle memory: set it to the node's pod capacity
    /// times the JVMs per pod (a kubelet runs at most 110 pods by default).
    #[arg(long, value_name = "N", default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..=crate::attach::MAX_JVMS as i64))]
    pub max_jvms: u32,

    /// Kubernetes mode: most JVMs traced at once per namespace (JVMs outside pods count as one
    /// namespace, ""); more are refused, counted as jvmdiag_agent_attach_failures_total{reason="namespace_share"}
    /// and logged once per namespace, and wait for one of its slots to free. Default: a quarter
    /// of --max-jvms, at least 64.
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

/// `--metrics-auth`: who may read /metrics.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricsAuth {
    /// Whoever can connect.
    None,
    /// A bearer token the Kubernetes API authenticates (TokenReview) and authorizes for `get`
    /// on /metrics (SubjectAccessReview).
    Kubernetes,
}

/// Parsed flags plus the collector switches and the collectors' own flags.
#[derive(Debug, Clone)]
pub struct Config {
    pub cli: Cli,
    /// Enabled collector names, in registry order.
    pub collectors: Vec<&'static str>,
    /// The flags the collectors declare, as given or their defaults (`collector::Settings`).
    pub settings: Settings,
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

    /// Who may take a JVM slot: `--max-jvms-per-namespace` and the reserve for namespaces
    /// holding none (`capacity::Rule`; standalone mode has no namespaces, so neither applies).
    pub fn capacity(&self) -> crate::capacity::Rule {
        crate::capacity::Rule::for_slots(self.cli.max_jvms, self.max_jvms_per_namespace())
    }

    /// The agent's own `--max-*`: the ceiling of every JVM's limits (the threads, compilation
    /// and monitors collectors' flags).
    pub fn caps(&self) -> Caps {
        Caps {
            thread_names: self.settings.get(&threads::MAX_THREAD_NAMES),
            methods: self.settings.get(&compilation::MAX_METHODS),
            classes: self.settings.get(&monitors::MAX_CLASSES),
            stack_samples: self.settings.get(&threads::STACK_SAMPLES),
        }
    }

    /// `--max-vm-operations` (the vmOperations collector's flag; the safepoints collector and
    /// the sidecar's safepoint log are bounded by it too).
    pub fn max_vm_operations(&self) -> u32 {
        self.settings.get(&vmops::MAX_VM_OPERATIONS)
    }

    /// `--jvm-limits` as (text, limits); refused items are logged.
    pub fn jvm_limits(&self) -> Vec<(String, Limits)> {
        crate::limits::rules(&self.cli.jvm_limits)
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
        for f in r.flags {
            cmd = cmd.arg(f.arg());
        }
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
    if cli.metrics_auth == MetricsAuth::Kubernetes && cli.node_name.is_none() {
        // Checked here, not with clap's `requires`: its message would name only --node-name.
        return Err(command().error(
            clap::error::ErrorKind::MissingRequiredArgument,
            "--metrics-auth kubernetes checks tokens with the Kubernetes API, so it needs Kubernetes mode: add --node-name NODE, or use --metrics-auth none",
        ));
    }
    let collectors = REGISTRY
        .iter()
        .filter(|r| !m.get_flag(&format!("no-collector.{}", r.name)))
        .map(|r| r.name)
        .collect();
    let settings = Settings::from_matches(&m);
    Ok(Config { cli, collectors, settings, deprecated })
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

    /// Every flag a collector declares is in `--help` (unless hidden), is its value's default
    /// when not given, takes the ends of its range and refuses what is past them.
    #[test]
    fn every_collectors_flags_are_in_help_and_parse_with_their_defaults() {
        use crate::collector::Flag;
        let help = command().render_long_help().to_string();
        let defaults = parse_from(["a"]).unwrap();
        let flags: Vec<Flag> = REGISTRY.iter().flat_map(|r| r.flags.iter().copied()).collect();
        assert!(!flags.is_empty());
        for f in &flags {
            let long = format!("--{}", f.name());
            match f {
                Flag::U32(n) => {
                    assert_eq!(help.contains(&long), !n.hide, "{long} in --help");
                    assert_eq!(defaults.settings.get(*n), n.default, "{long}");
                    for ok in [n.min, n.max] {
                        let c = parse_from(["a".to_string(), format!("{long}={ok}")]).unwrap();
                        assert_eq!(c.settings.get(*n), ok, "{long}={ok}");
                    }
                    let past = [n.min.checked_sub(1), n.max.checked_add(1)];
                    for bad in past.into_iter().flatten() {
                        assert!(parse_from(["a".to_string(), format!("{long}={bad}")]).is_err());
                    }
                }
                Flag::U64(n) => {
                    assert_eq!(help.contains(&long), !n.hide, "{long} in --help");
                    assert_eq!(defaults.settings.get(*n), n.default, "{long}");
                    let c = parse_from(["a".to_string(), format!("{long}={}", n.max)]).unwrap();
                    assert_eq!(c.settings.get(*n), n.max, "{long}");
                    let past = [n.min.checked_sub(1), n.max.checked_add(1)];
                    for bad in past.into_iter().flatten() {
                        assert!(parse_from(["a".to_string(), format!("{long}={bad}")]).is_err());
                    }
                }
                Flag::Switch(s) => {
                    assert!(help.contains(&long), "{long} in --help");
                    assert!(!defaults.settings.get(*s), "{long} is off unless given");
                    assert!(parse_from(["a", long.as_str()]).unwrap().settings.get(*s));
                }
            }
        }
        let cmd = command();
        let mut names: Vec<&str> = cmd.get_arguments().filter_map(|a| a.get_long()).collect();
        let all = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all, "a collector's flag is named like another flag");
    }

    /// The flags users, the chart (agent.maxThreadNames, agent.maxMethods), the operator's
    /// sidecar arguments and the e2e scripts pass: names, defaults and ranges stay as they are.
    #[test]
    fn the_collectors_flags_keep_their_names_defaults_and_ranges() {
        use crate::collector::Flag;
        let want: &[(&str, u64, u64, u64)] = &[
            ("max-thread-names", 50, 1, 10_000),
            ("threads-jvm-start-thread", 0, 0, 1),
            ("starter-threshold", 50, 0, u32::MAX as u64),
            ("starter-window-seconds", 30, 1, 3600),
            ("stack-samples-per-second", 20, 0, 10_000),
            ("max-stacks-per-jvm", 64, 1, 4096),
            ("max-vm-operations", 64, 1, 1_000),
            ("max-methods", 20, 1, 500),
            ("method-staging-entries", 16_384, 16, 65_536),
            ("max-classes", 20, 1, 500),
            ("monitors-object-wait", 0, 0, 1),
        ];
        let have: Vec<(&str, u64, u64, u64)> = REGISTRY
            .iter()
            .flat_map(|r| r.flags.iter())
            .map(|f| match f {
                Flag::U32(n) => (n.name, n.default.into(), n.min.into(), n.max.into()),
                Flag::U64(n) => (n.name, n.default, n.min, n.max),
                Flag::Switch(s) => (s.name, 0, 0, 1),
            })
            .collect();
        assert_eq!(have, want);
        let c =
            parse_from(["a", "--max-thread-names", "7", "--max-methods=9", "--max-classes", "3"])
                .unwrap();
        assert_eq!(c.caps(), Caps { thread_names: 7, methods: 9, classes: 3, stack_samples: 20 });
        assert_eq!(parse_from(["a", "--max-vm-operations", "5"]).unwrap().max_vm_operations(), 5);
    }

    /// The chart passes these by name (`--probe-listen`, `--max-connections-per-peer`,
    /// `--metrics-auth`): names, defaults and ranges stay as they are.
    #[test]
    fn the_http_flags_keep_their_names_defaults_and_ranges() {
        let c = parse_from(["a"]).unwrap();
        assert_eq!(
            (c.cli.probe_listen, c.cli.max_connections_per_peer, c.cli.metrics_auth),
            (None, 8, MetricsAuth::None)
        );
        let c = parse_from([
            "a",
            "--probe-listen=0.0.0.0:9465",
            "--max-connections-per-peer",
            "64",
            "--node-name=n1",
            "--metrics-auth=kubernetes",
        ])
        .unwrap();
        assert_eq!(c.cli.probe_listen, Some("0.0.0.0:9465".parse().unwrap()));
        assert_eq!(
            (c.cli.max_connections_per_peer, c.cli.metrics_auth),
            (64, MetricsAuth::Kubernetes)
        );
        for bad in ["0", "65"] {
            let e = parse_from(["a", "--max-connections-per-peer", bad]).unwrap_err().to_string();
            assert!(e.contains("--max-connections-per-peer"), "{e}");
        }
        assert!(parse_from(["a", "--metrics-auth", "basic"]).is_err());
    }

    #[test]
    fn metrics_auth_kubernetes_outside_kubernetes_mode_is_an_error_naming_the_flag() {
        for args in [
            &["a", "--metrics-auth", "kubernetes"][..],
            &["a", "--standalone", "--metrics-auth=kubernetes"],
        ] {
            let e = parse_from(args).unwrap_err();
            let msg = e.to_string();
            assert!(
                msg.contains("--metrics-auth kubernetes") && msg.contains("--node-name"),
                "{msg}"
            );
            assert_ne!(e.exit_code(), 0);
        }
    }

    #[test]
    fn help_documents_every_flag() {
        let help = command().render_long_help().to_string();
        for f in [
            "--standalone",
            "--listen",
            "--probe-listen",
            "--max-connections-per-peer",
            "--metrics-auth",
            "--btf",
            "--max-thread-names",
            "--collector.threads",
            "--no-collector.safepoints",
        ] {
            assert!(help.contains(f), "{f} missing from --help");
        }
    }
}
