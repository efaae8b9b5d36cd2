//! `kubectl jvmdiag`: a kubectl plugin for jvm-diagnostics (docs/kubectl-plugin.md).
//!
//! - `status [-n NS | -A]`: the JvmDiagnostics resources, injected/desired pods, conditions with
//!   reasons, the pods that missed the injection.
//! - `top -n NS deploy/NAME`: per pod of a workload, thread starts by name, the worst safepoint
//!   pause by VM operation and who requested it, blocked and parked seconds, code cache use; read
//!   from the node agents through the API server's pod proxy (two scrapes, `--interval` apart), or
//!   from Prometheus (`--prometheus URL`).
//! - `stacks -n NS deploy/NAME`: the culprit stacks of a workload's pods, from the node agents'
//!   `/stacks` through the same pod proxy, as collapsed lines (root first) by count, for
//!   flamegraph.pl.
//!
//! Exit codes: 0 done, 1 an error (the message names the fix), 2 a usage error.
mod cluster;
mod expo;
mod prom;
mod report;
mod stacks;
mod status;
mod table;
mod top;

use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};

#[derive(Parser, Debug)]
#[command(
    name = "kubectl-jvmdiag",
    bin_name = "kubectl jvmdiag",
    version,
    about = "jvm-diagnostics from kubectl: resource status, per-pod thread storms, safepoints, locks and code cache, and culprit stacks",
    after_help = "Docs: docs/kubectl-plugin.md (install, RBAC, examples)."
)]
struct Cli {
    /// Path to the kubeconfig file (default: $KUBECONFIG, else ~/.kube/config).
    #[arg(long, global = true)]
    kubeconfig: Option<String>,
    /// The kubeconfig context to use.
    #[arg(long, global = true)]
    context: Option<String>,
    /// Namespace (default: the context's namespace, else "default").
    #[arg(short = 'n', long, global = true)]
    namespace: Option<String>,
    /// Act as this user (impersonation, as kubectl --as).
    #[arg(long = "as", global = true, value_name = "USER")]
    as_user: Option<String>,
    /// Act as this group (repeatable, as kubectl --as-group).
    #[arg(long = "as-group", global = true, value_name = "GROUP")]
    as_group: Vec<String>,
    /// Give up on one API request after this long (e.g. 10s, 1m).
    #[arg(long, global = true, value_parser = parse_duration, value_name = "DURATION")]
    request_timeout: Option<Duration>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
enum Output {
    Table,
    Json,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// The JvmDiagnostics resources: target, injected/desired pods, conditions, pods missing the injection.
    Status {
        /// Every namespace.
        #[arg(short = 'A', long)]
        all_namespaces: bool,
    },
    /// Per pod of a workload: thread starts by name, worst pause by VM operation and requester,
    /// blocked and parked seconds, code cache use.
    Top {
        /// The workload: deploy/NAME, sts/NAME or ds/NAME.
        workload: String,
        /// Time between the two scrapes of each agent (rates are increases over it).
        #[arg(long, default_value = "5s", value_parser = parse_duration, value_name = "DURATION")]
        interval: Duration,
        /// Namespace of the agent DaemonSet (default: found by its labels, else jvm-diagnostics).
        #[arg(long, value_name = "NS")]
        agent_namespace: Option<String>,
        /// Query this Prometheus (http://host:9090) instead of the agents.
        #[arg(long, value_name = "URL")]
        prometheus: Option<String>,
        /// With --prometheus: the window of increase() and rates.
        #[arg(long, default_value = "5m", value_parser = parse_duration, value_name = "DURATION")]
        window: Duration,
        /// Output format.
        #[arg(short = 'o', long, value_enum, default_value = "table")]
        output: Output,
    },
    /// Culprit stacks of a workload's pods (the thread behind each incident, taken by the node
    /// agents): collapsed lines `kind;namespace/pod;root;…;leaf count`, highest count first,
    /// ready for flamegraph.pl.
    Stacks {
        /// The workload: deploy/NAME, sts/NAME or ds/NAME.
        workload: String,
        /// Only this kind of incident.
        #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(stacks::KINDS), value_name = "KIND")]
        kind: Option<String>,
        /// Only this pod of the workload.
        #[arg(long, value_name = "POD")]
        pod: Option<String>,
        /// Only the N stacks of highest count.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
        top: Option<u64>,
        /// Sum equal stacks of all the pods (no namespace/pod frame): one flame graph of the workload.
        #[arg(long)]
        merge_pods: bool,
        /// Namespace of the agent DaemonSet (default: found by its labels, else jvm-diagnostics).
        #[arg(long, value_name = "NS")]
        agent_namespace: Option<String>,
    },
}

/// 500ms, 5s, 2m, 1h, or plain seconds.
fn parse_duration(s: &str) -> Result<Duration, String> {
    let (num, mult) = if let Some(n) = s.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = s.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (s, 1.0)
    };
    let v: f64 =
        num.parse().map_err(|_| format!("'{s}' is not a duration (e.g. 500ms, 5s, 2m)"))?;
    if !v.is_finite() || v <= 0.0 || v * mult > 86_400.0 {
        return Err(format!("'{s}': a duration above 0 and at most 24h"));
    }
    Ok(Duration::from_secs_f64(v * mult))
}

async fn run(cli: Cli) -> anyhow::Result<String> {
    let conn = cluster::Conn {
        kubeconfig: cli.kubeconfig.clone(),
        context: cli.context.clone(),
        as_user: cli.as_user.clone(),
        as_groups: cli.as_group.clone(),
        request_timeout: cli.request_timeout,
    };
    let (client, default_ns) = cluster::client(&conn).await?;
    let ns = cli.namespace.clone().unwrap_or(default_ns);
    match cli.command {
        Command::Status { all_namespaces } => {
            let items =
                status::list(&client, if all_namespaces { None } else { Some(&ns) }).await?;
            if items.is_empty() {
                if all_namespaces {
                    eprintln!("No JvmDiagnostics found.");
                } else {
                    eprintln!("No JvmDiagnostics found in {ns} namespace.");
                }
                return Ok(String::new());
            }
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs() as i64)
                .unwrap_or(0);
            Ok(status::render(&items, all_namespaces, now))
        }
        Command::Top { workload, interval, agent_namespace, prometheus, window, output } => {
            let (kind, name) = top::parse_workload(&workload).map_err(|e| anyhow::anyhow!(e))?;
            let args = top::TopArgs {
                namespace: ns,
                kind,
                name,
                interval,
                agent_namespace,
                prometheus,
                window,
                json: output == Output::Json,
            };
            top::run(&client, &args).await
        }
        Command::Stacks { workload, kind: stack_kind, pod, top, merge_pods, agent_namespace } => {
            let (kind, name) = top::parse_workload(&workload).map_err(|e| anyhow::anyhow!(e))?;
            let args = stacks::StacksArgs {
                namespace: ns,
                kind,
                name,
                stack_kind,
                pod,
                top: top.map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
                merge_pods,
                agent_namespace,
            };
            stacks::run(&client, &args).await
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match rt.block_on(run(cli)) {
        Ok(out) => {
            print!("{out}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn flags_as_kubectl_passes_them_after_the_command() {
        let c = Cli::try_parse_from(["kubectl-jvmdiag", "status", "-n", "lifecycle"]).unwrap();
        assert_eq!(c.namespace.as_deref(), Some("lifecycle"));
        assert!(matches!(c.command, Command::Status { all_namespaces: false }));
        let c =
            Cli::try_parse_from(["kubectl-jvmdiag", "status", "-A", "--context", "prod"]).unwrap();
        assert_eq!(c.context.as_deref(), Some("prod"));
        assert!(matches!(c.command, Command::Status { all_namespaces: true }));
        let c = Cli::try_parse_from([
            "kubectl-jvmdiag",
            "top",
            "-n",
            "shop",
            "deploy/checkout",
            "--interval",
            "2s",
            "-o",
            "json",
            "--as",
            "system:serviceaccount:shop:default",
            "--kubeconfig",
            "/tmp/kc",
        ])
        .unwrap();
        assert_eq!(c.as_user.as_deref(), Some("system:serviceaccount:shop:default"));
        assert_eq!(c.kubeconfig.as_deref(), Some("/tmp/kc"));
        match c.command {
            Command::Top { workload, interval, output, prometheus, window, .. } => {
                assert_eq!(workload, "deploy/checkout");
                assert_eq!(interval, Duration::from_secs(2));
                assert_eq!(output, Output::Json);
                assert!(prometheus.is_none());
                assert_eq!(window, Duration::from_secs(300));
            }
            other => panic!("{other:?}"),
        }
        assert!(Cli::try_parse_from(["kubectl-jvmdiag", "top"]).is_err(), "top needs a workload");
        assert!(Cli::try_parse_from(["kubectl-jvmdiag", "top", "deploy/x", "--interval", "0s"])
            .is_err());
        let c = Cli::try_parse_from([
            "kubectl-jvmdiag",
            "stacks",
            "-n",
            "x",
            "deploy/y",
            "--kind",
            "park",
            "--pod",
            "y-1",
            "--top",
            "5",
        ])
        .unwrap();
        assert_eq!(c.namespace.as_deref(), Some("x"));
        match c.command {
            Command::Stacks { workload, kind, pod, top, merge_pods, .. } => {
                assert_eq!(workload, "deploy/y");
                assert_eq!(kind.as_deref(), Some("park"));
                assert_eq!(pod.as_deref(), Some("y-1"));
                assert_eq!(top, Some(5));
                assert!(!merge_pods);
            }
            other => panic!("{other:?}"),
        }
        assert!(
            Cli::try_parse_from(["kubectl-jvmdiag", "stacks", "deploy/y", "--kind", "gc"]).is_err()
        );
        assert!(
            Cli::try_parse_from(["kubectl-jvmdiag", "stacks", "deploy/y", "--top", "0"]).is_err()
        );
        assert!(
            Cli::try_parse_from(["kubectl-jvmdiag", "stacks"]).is_err(),
            "stacks needs a workload"
        );
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("5s").unwrap(), Duration::from_secs(5));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1h").unwrap(), Duration::from_secs(3600));
        assert_eq!(parse_duration("3").unwrap(), Duration::from_secs(3));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("25h").is_err());
        assert!(parse_duration("NaNs").is_err());
    }
}
