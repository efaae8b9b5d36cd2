//! `kubectl jvmdiag top -n NS deploy/NAME`: per pod of a workload, what the agents measure.
//!
//! The workload's pods come from its selector; each pod is read from the node agent on its node
//! (the chart's DaemonSet pod, through the API server's pod proxy, with the user's own RBAC:
//! `get pods/proxy` in the agent's namespace), or from its own `jvmdiag-sidecar` container
//! (`collection: Sidecar`). Every source is scraped twice, `--interval` apart, and the rates are the
//! counters' increases over the time between the two answers. With `--prometheus URL` the same
//! families are read from Prometheus instead (increase over `--window`).
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::api::{Api, ListParams};
use kube::core::Selector;
use kube::Client;

use crate::cluster::{api_err, get_raw, is_code, is_status, status_message, ApiError, Req};
use crate::expo::{self, Limits};
use crate::report::{self, PodReport, Row};
use crate::status;

/// The chart's agent: the DaemonSet's labels (templates/agent/daemonset.yaml) and its pods'
/// fixed label (the `job` Prometheus takes; the same whatever the release name).
pub const AGENT_DS_SELECTOR: &str =
    "app.kubernetes.io/part-of=jvm-diagnostics,app.kubernetes.io/component=agent";
pub const AGENT_POD_SELECTOR: &str = "jvm.diagnostics.dev/scrape-job=jvm-diagnostics-agent";
pub const DEFAULT_AGENT_NAMESPACE: &str = "jvm-diagnostics";
/// The agent's and the sidecar's metrics port when the pod names none (`metrics`).
pub const DEFAULT_PORT: u16 = 9464;
pub const SIDECAR_CONTAINER: &str = "jvmdiag-sidecar";
/// The largest page read from one agent (a node with 500 JVMs serves a few MiB).
pub const MAX_PAGE_BYTES: usize = 64 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Deployment,
    StatefulSet,
    DaemonSet,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Deployment => "Deployment",
            Kind::StatefulSet => "StatefulSet",
            Kind::DaemonSet => "DaemonSet",
        }
    }
    fn resource(self) -> &'static str {
        match self {
            Kind::Deployment => "deployments",
            Kind::StatefulSet => "statefulsets",
            Kind::DaemonSet => "daemonsets",
        }
    }
}

/// `deploy/NAME`, `deployment/NAME`, `deployments.apps/NAME`, `sts/…`, `statefulset/…`, `ds/…`,
/// `daemonset/…`, as kubectl spells them.
pub fn parse_workload(s: &str) -> Result<(Kind, String), String> {
    let (k, name) = s.split_once('/').ok_or_else(|| {
        format!("'{s}': give the workload as KIND/NAME, e.g. deploy/checkout, sts/ledger, ds/agent")
    })?;
    let kind = match k.to_ascii_lowercase().trim_end_matches(".apps") {
        "deploy" | "deployment" | "deployments" => Kind::Deployment,
        "sts" | "statefulset" | "statefulsets" => Kind::StatefulSet,
        "ds" | "daemonset" | "daemonsets" => Kind::DaemonSet,
        other => return Err(format!("'{other}': the workload kind is one of deploy, sts, ds (what a JvmDiagnostics can target)")),
    };
    if name.is_empty() || name.contains('/') {
        return Err(format!("'{s}': give the workload as KIND/NAME"));
    }
    Ok((kind, name.to_string()))
}

pub struct TopArgs {
    pub namespace: String,
    pub kind: Kind,
    pub name: String,
    pub interval: Duration,
    pub agent_namespace: Option<String>,
    pub prometheus: Option<String>,
    pub window: Duration,
    pub json: bool,
}

/// The workload's pod selector; a 404 is "no such workload".
pub(crate) async fn workload_selector(
    client: &Client,
    ns: &str,
    kind: Kind,
    name: &str,
) -> anyhow::Result<LabelSelector> {
    let req = Req::new("get", kind.resource(), Some(ns));
    let no_such = || {
        anyhow::anyhow!(
            "no such workload: {}/{name} in namespace {ns} (kubectl get {} -n {ns})",
            kind.name().to_ascii_lowercase(),
            kind.resource()
        )
    };
    let r = match kind {
        Kind::Deployment => Api::<Deployment>::namespaced(client.clone(), ns)
            .get_opt(name)
            .await
            .map(|d| d.and_then(|d| d.spec).map(|s| s.selector)),
        Kind::StatefulSet => Api::<StatefulSet>::namespaced(client.clone(), ns)
            .get_opt(name)
            .await
            .map(|d| d.and_then(|d| d.spec).map(|s| s.selector)),
        Kind::DaemonSet => Api::<DaemonSet>::namespaced(client.clone(), ns)
            .get_opt(name)
            .await
            .map(|d| d.and_then(|d| d.spec).map(|s| s.selector)),
    };
    r.map_err(|e| api_err(req, e))?.ok_or_else(no_such)
}

pub(crate) fn running(p: &Pod) -> bool {
    p.metadata.deletion_timestamp.is_none()
        && p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
        && p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some()
}

fn ready(p: &Pod) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .map(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
        .unwrap_or(false)
}

/// The port named `metrics` of `container` (any container if None), else [`DEFAULT_PORT`].
pub(crate) fn metrics_port(p: &Pod, container: Option<&str>) -> u16 {
    p.spec
        .as_ref()
        .into_iter()
        .flat_map(|s| s.containers.iter())
        .filter(|c| container.is_none_or(|n| c.name == n))
        .flat_map(|c| c.ports.iter().flatten())
        .find(|port| port.name.as_deref() == Some("metrics"))
        .and_then(|port| u16::try_from(port.container_port).ok())
        .unwrap_or(DEFAULT_PORT)
}

pub(crate) fn has_sidecar(p: &Pod) -> bool {
    p.spec
        .as_ref()
        .map(|s| s.containers.iter().any(|c| c.name == SIDECAR_CONTAINER))
        .unwrap_or(false)
}

/// Where one pod's series are served.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Source {
    pub namespace: String,
    pub pod: String,
    pub port: u16,
    /// "agent" or "sidecar"
    pub what: &'static str,
}

impl Source {
    /// The API server's proxy path of `rest` (a path and query, no leading slash) on the source.
    pub fn proxy(&self, rest: &str) -> String {
        format!(
            "/api/v1/namespaces/{}/pods/{}:{}/proxy/{rest}",
            self.namespace, self.pod, self.port
        )
    }
    pub(crate) fn describe(&self) -> String {
        format!("{} {}/{}", self.what, self.namespace, self.pod)
    }
}

/// The agents: namespace (flag, else the chart's DaemonSet found by its labels, else
/// jvm-diagnostics) and, per node, its running agent pod.
pub(crate) struct Agents {
    pub namespace: String,
    pub daemonset: Option<String>,
    pub by_node: BTreeMap<String, Pod>,
    pub how: String,
}

impl Agents {
    /// The agent of `node`; Err: why there is none, with the fix.
    pub fn of(&self, pod: &str, node: &str) -> Result<Source, String> {
        match self.by_node.get(node) {
            Some(ap) => Ok(Source {
                namespace: self.namespace.clone(),
                pod: ap.metadata.name.clone().unwrap_or_default(),
                port: metrics_port(ap, Some("agent")),
                what: "agent",
            }),
            None => {
                let ds = self
                    .daemonset
                    .clone()
                    .map(|d| format!("DaemonSet {}/{d}", self.namespace))
                    .unwrap_or_else(|| format!("no agent DaemonSet found ({})", self.how));
                Err(format!(
                    "{pod}: no agent on node {node}: {ds} has no running pod there (kubectl -n {} get pods -l {AGENT_POD_SELECTOR} -o wide; \
                     its nodeSelector or tolerations may exclude the node, or --agent-namespace names another namespace)",
                    self.namespace
                ))
            }
        }
    }
}

pub(crate) async fn find_agents(client: &Client, flag: Option<&str>) -> anyhow::Result<Agents> {
    // The agent pods: the DaemonSet's own selector when it was found, else the pods' fixed label.
    let mut pod_selector = AGENT_POD_SELECTOR.to_string();
    let (namespace, daemonset, how) = match flag {
        Some(ns) => (ns.to_string(), None, format!("--agent-namespace {ns}")),
        None => {
            let lp = ListParams::default().labels(AGENT_DS_SELECTOR);
            match Api::<DaemonSet>::all(client.clone()).list(&lp).await {
                Ok(l) if !l.items.is_empty() => {
                    let ds = &l.items[0];
                    if l.items.len() > 1 {
                        eprintln!(
                            "note: {} agent DaemonSets found ({}); using {}/{} (--agent-namespace picks another)",
                            l.items.len(),
                            l.items
                                .iter()
                                .map(|d| format!("{}/{}", d.metadata.namespace.clone().unwrap_or_default(), d.metadata.name.clone().unwrap_or_default()))
                                .collect::<Vec<_>>()
                                .join(", "),
                            ds.metadata.namespace.clone().unwrap_or_default(),
                            ds.metadata.name.clone().unwrap_or_default()
                        );
                    }
                    let ns = ds.metadata.namespace.clone().unwrap_or_else(|| DEFAULT_AGENT_NAMESPACE.into());
                    if let Some(sel) =
                        ds.spec.as_ref().and_then(|s| Selector::try_from(s.selector.clone()).ok())
                    {
                        pod_selector = sel.to_string();
                    }
                    (ns.clone(), ds.metadata.name.clone(), format!("DaemonSet {ns}/{}", ds.metadata.name.clone().unwrap_or_default()))
                }
                Ok(_) => (
                    DEFAULT_AGENT_NAMESPACE.to_string(),
                    None,
                    format!("no DaemonSet labelled {AGENT_DS_SELECTOR} in any namespace; tried {DEFAULT_AGENT_NAMESPACE}"),
                ),
                // Not allowed to list DaemonSets cluster-wide: the chart's default namespace.
                Err(_) => (
                    DEFAULT_AGENT_NAMESPACE.to_string(),
                    None,
                    format!("the agent namespace {DEFAULT_AGENT_NAMESPACE} (default; --agent-namespace for another)"),
                ),
            }
        }
    };
    let lp = ListParams::default().labels(&pod_selector);
    let pods = Api::<Pod>::namespaced(client.clone(), &namespace)
        .list(&lp)
        .await
        .map_err(|e| api_err(Req::new("list", "pods", Some(&namespace)), e))?;
    let mut by_node: BTreeMap<String, Pod> = BTreeMap::new();
    for p in pods.items.into_iter().filter(running) {
        let node = p.spec.as_ref().and_then(|s| s.node_name.clone()).unwrap_or_default();
        let better = match by_node.get(&node) {
            None => true,
            Some(q) => ready(&p) && !ready(q),
        };
        if better {
            by_node.insert(node, p);
        }
    }
    Ok(Agents { namespace, daemonset, by_node, how })
}

/// GET `rest` of a source through the pod proxy: Ok for 200 and the codes in `also`; otherwise
/// an error naming the fix (a 403 of the API server: the grant; the agent's 401/403: its token).
pub(crate) async fn fetch(
    client: &Client,
    src: &Source,
    rest: &str,
    accept: &str,
    also: &[u16],
) -> anyhow::Result<(u16, String)> {
    let (code, body) = get_raw(client, &src.proxy(rest), accept, MAX_PAGE_BYTES).await?;
    match code {
        200 => {}
        c if also.contains(&c) && !is_status(&body) => {}
        401 | 403 if !is_status(&body) => anyhow::bail!(
            "the {} requires a token (agent.metricsAuth is on: HTTP {code}, \"{}\"), and the API server's pod proxy \
             does not forward yours: use --prometheus URL (a Prometheus that scrapes the agents with its token), \
             see docs/kubectl-plugin.md#when-the-agent-requires-a-token",
            src.describe(),
            status_message(&body)
        ),
        _ => {
            let req = Req::new("get", "pods/proxy", Some(&src.namespace));
            let message = status_message(&body);
            if code == 403 {
                return Err(ApiError { req, code, message }.into());
            }
            anyhow::bail!(
                "the {} did not answer on port {} (HTTP {code}): {message}; is it running and Ready? \
                 (kubectl -n {} get pod {} -o wide)",
                src.describe(),
                src.port,
                src.namespace,
                src.pod
            );
        }
    }
    Ok((code, body))
}

/// One scrape of a source: the samples of the wanted pods (namespace `ns`), and when it answered.
async fn scrape(
    client: &Client,
    src: &Source,
    ns: &str,
    pods: &BTreeSet<String>,
) -> anyhow::Result<(Vec<expo::Sample>, Instant)> {
    let (_, body) = fetch(client, src, "metrics", "text/plain;version=0.0.4", &[]).await?;
    let at = Instant::now();
    let page = expo::parse(&body, Limits::default(), |s| {
        s.name.starts_with("jvmdiag_")
            && s.label("namespace") == Some(ns)
            && s.label("pod").is_some_and(|p| pods.contains(p))
    })?;
    if page.skipped > 0 {
        eprintln!(
            "note: {} lines of the {}'s page were malformed or too long and skipped",
            page.skipped,
            src.describe()
        );
    }
    Ok((page.samples, at))
}

/// The resource that targets the workload, by name; its absence is an error naming the fix.
async fn check_resource(
    client: &Client,
    ns: &str,
    kind: Kind,
    name: &str,
) -> anyhow::Result<String> {
    let items = status::list(client, Some(ns)).await?;
    items
        .iter()
        .find(|o| {
            let (k, n) = status::target_ref(o);
            k == kind.name() && n == name
        })
        .and_then(|o| o.metadata.name.clone())
        .ok_or_else(|| {
            anyhow::anyhow!(
                "no JvmDiagnostics targets {}/{} in namespace {} ({} resource(s) there: {}): apply one \
                 (examples/checkout.yaml) and the operator injects its pods",
                kind.name().to_ascii_lowercase(),
                name,
                ns,
                items.len(),
                if items.is_empty() { "none".to_string() } else { items.iter().filter_map(|o| o.metadata.name.clone()).collect::<Vec<_>>().join(", ") }
            )
        })
}

/// The workload's running pods (by name) and the JvmDiagnostics that targets it; each missing
/// piece is an error naming the fix.
pub(crate) async fn workload_pods(
    client: &Client,
    ns: &str,
    kind: Kind,
    name: &str,
) -> anyhow::Result<(String, Vec<Pod>)> {
    let selector = workload_selector(client, ns, kind, name).await?;
    let resource = check_resource(client, ns, kind, name).await?;
    let sel = Selector::try_from(selector)
        .map_err(|e| anyhow::anyhow!("the workload's selector: {e}"))?;
    let pods = Api::<Pod>::namespaced(client.clone(), ns)
        .list(&ListParams::default().labels_from(&sel))
        .await
        .map_err(|e| api_err(Req::new("list", "pods", Some(ns)), e))?;
    let mut pods: Vec<Pod> = pods.items.into_iter().filter(running).collect();
    pods.sort_by(|x, y| x.metadata.name.cmp(&y.metadata.name));
    if pods.is_empty() {
        anyhow::bail!(
            "{}/{name} in namespace {ns} has no running pod (kubectl get pods -n {ns} -l {sel})",
            kind.name().to_ascii_lowercase(),
        );
    }
    Ok((resource, pods))
}

pub async fn run(client: &Client, a: &TopArgs) -> anyhow::Result<String> {
    let (resource, pods) = workload_pods(client, &a.namespace, a.kind, &a.name).await?;
    let node_of = |p: &Pod| p.spec.as_ref().and_then(|s| s.node_name.clone()).unwrap_or_default();
    let name_of = |p: &Pod| p.metadata.name.clone().unwrap_or_default();

    if let Some(url) = &a.prometheus {
        eprintln!("querying Prometheus {url} for {} pod(s) of JvmDiagnostics {resource}, increase over {} s…", pods.len(), a.window.as_secs());
        let names: Vec<(String, String)> = pods.iter().map(|p| (name_of(p), node_of(p))).collect();
        let reports = crate::prom::reports(url, &a.namespace, &names, a.window).await?;
        return Ok(output(&reports, a.json));
    }

    // Each pod's source: its sidecar, or the agent of its node.
    let need_agents = pods.iter().any(|p| !has_sidecar(p));
    let agents = if need_agents {
        Some(find_agents(client, a.agent_namespace.as_deref()).await?)
    } else {
        None
    };
    let mut sources: BTreeMap<Source, BTreeSet<String>> = BTreeMap::new();
    let mut source_of: BTreeMap<String, Source> = BTreeMap::new();
    let mut errors: Vec<String> = Vec::new();
    for p in &pods {
        let src = if has_sidecar(p) {
            Source {
                namespace: a.namespace.clone(),
                pod: name_of(p),
                port: metrics_port(p, Some(SIDECAR_CONTAINER)),
                what: "sidecar",
            }
        } else {
            let ag = agents.as_ref().expect("agents looked up for NodeAgent pods");
            match ag.of(&name_of(p), &node_of(p)) {
                Ok(src) => src,
                Err(e) => {
                    errors.push(e);
                    continue;
                }
            }
        };
        sources.entry(src.clone()).or_default().insert(name_of(p));
        source_of.insert(name_of(p), src);
    }
    if sources.is_empty() {
        anyhow::bail!("{}", errors.join("\n"));
    }
    let n_agents = sources.keys().filter(|s| s.what == "agent").count();
    let n_sidecars = sources.len() - n_agents;
    let mut what = Vec::new();
    if n_agents > 0 {
        what.push(format!("{n_agents} agent{}", if n_agents == 1 { "" } else { "s" }));
    }
    if n_sidecars > 0 {
        what.push(format!("{n_sidecars} sidecar{}", if n_sidecars == 1 { "" } else { "s" }));
    }
    eprintln!(
        "scraping {} for {} pod(s) of JvmDiagnostics {resource}, twice, {} s apart (--interval)…",
        what.join(" and "),
        pods.len(),
        a.interval.as_secs_f64()
    );

    let first = scrape_all(client, &sources, &a.namespace).await?;
    tokio::time::sleep(a.interval).await;
    let second = scrape_all(client, &sources, &a.namespace).await?;

    let mut reports = Vec::new();
    for p in &pods {
        let name = name_of(p);
        let Some(src) = source_of.get(&name) else { continue };
        let (Some(one), Some(two)) = (first.get(src), second.get(src)) else { continue };
        let mine = |v: &Vec<expo::Sample>| {
            v.iter().filter(|s| s.label("pod") == Some(name.as_str())).cloned().collect::<Vec<_>>()
        };
        let rows: Vec<Row> = report::rows_from_scrapes(&mine(&one.0), &mine(&two.0));
        let dt = two.1.saturating_duration_since(one.1).as_secs_f64();
        reports.push(report::pod_report(&name, &node_of(p), &src.describe(), dt, &rows));
    }
    let mut out = output(&reports, a.json);
    if !errors.is_empty() {
        out.push_str(&format!("\nnot shown:\n  {}\n", errors.join("\n  ")));
    }
    Ok(out)
}

type Scraped = BTreeMap<Source, (Vec<expo::Sample>, Instant)>;

async fn scrape_all(
    client: &Client,
    sources: &BTreeMap<Source, BTreeSet<String>>,
    ns: &str,
) -> anyhow::Result<Scraped> {
    let mut set = tokio::task::JoinSet::new();
    for (src, pods) in sources {
        let (client, src, pods, ns) = (client.clone(), src.clone(), pods.clone(), ns.to_string());
        set.spawn(async move {
            let r = scrape(&client, &src, &ns, &pods).await;
            (src, r)
        });
    }
    let mut out = BTreeMap::new();
    let mut failures = Vec::new();
    while let Some(j) = set.join_next().await {
        let (src, r) = j.map_err(|e| anyhow::anyhow!("a scrape task failed: {e}"))?;
        match r {
            Ok(v) => {
                out.insert(src, v);
            }
            // Not allowed, or the agent wants a token: the same for every agent, say it once.
            Err(e) if is_code(&e, 403) || e.to_string().contains("requires a token") => {
                return Err(e)
            }
            Err(e) => failures.push(e.to_string()),
        }
    }
    if out.is_empty() {
        anyhow::bail!("{}", failures.join("\n"));
    }
    for f in failures {
        eprintln!("warning: {f}");
    }
    Ok(out)
}

fn output(reports: &[PodReport], json: bool) -> String {
    if json {
        let mut s = serde_json::to_string_pretty(&report::to_json(reports)).unwrap_or_default();
        s.push('\n');
        s
    } else {
        report::render(reports)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workloads_are_spelled_as_kubectl_spells_them() {
        assert_eq!(parse_workload("deploy/jto").unwrap(), (Kind::Deployment, "jto".into()));
        assert_eq!(
            parse_workload("deployments.apps/jto").unwrap(),
            (Kind::Deployment, "jto".into())
        );
        assert_eq!(parse_workload("sts/ledger").unwrap(), (Kind::StatefulSet, "ledger".into()));
        assert_eq!(
            parse_workload("StatefulSet/ledger").unwrap(),
            (Kind::StatefulSet, "ledger".into())
        );
        assert_eq!(parse_workload("ds/node-app").unwrap(), (Kind::DaemonSet, "node-app".into()));
        assert!(parse_workload("jto").unwrap_err().contains("KIND/NAME"));
        assert!(parse_workload("pod/jto-1").unwrap_err().contains("deploy, sts, ds"));
        assert!(parse_workload("deploy/").is_err());
        assert!(parse_workload("deploy/a/b").is_err());
    }

    #[test]
    fn the_proxy_paths_of_a_source() {
        let s = Source {
            namespace: "jvm-diagnostics".into(),
            pod: "jd-agent-x".into(),
            port: 9464,
            what: "agent",
        };
        assert_eq!(
            s.proxy("metrics"),
            "/api/v1/namespaces/jvm-diagnostics/pods/jd-agent-x:9464/proxy/metrics"
        );
        assert_eq!(
            s.proxy(&crate::stacks::query("shop", Some("web-1"), Some("park"))),
            "/api/v1/namespaces/jvm-diagnostics/pods/jd-agent-x:9464/proxy/stacks?namespace=shop&pod=web-1&kind=park"
        );
    }

    #[test]
    fn metrics_port_and_sidecar_from_the_pod_spec() {
        let p: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "sc-1"},
            "spec": {"containers": [
                {"name": "app", "ports": [{"name": "http", "containerPort": 8000}]},
                {"name": "jvmdiag-sidecar", "ports": [{"name": "metrics", "containerPort": 9555}]}
            ]}
        }))
        .unwrap();
        assert!(has_sidecar(&p));
        assert_eq!(metrics_port(&p, Some(SIDECAR_CONTAINER)), 9555);
        assert_eq!(metrics_port(&p, Some("app")), DEFAULT_PORT);
    }
}
