//! Kubernetes mode (`--node-name`): which pod each JVM runs in, and whether to trace it.
//!
//! A watch of this node's pods (field selector `spec.nodeName`) runs on its own thread with
//! a small tokio runtime and keeps a [`table::PodTable`]; the agent's single-threaded loop
//! only reads that table (no API call per JVM or per scrape). Each JVM found by discovery is
//! mapped to a container through `/proc/PID/cgroup` and the pods'
//! `status.containerStatuses[].containerID`, then [`attribution::decide`] applies the
//! operator's contract. A JVM whose pod or container ID is not known yet waits and is looked
//! up again at every poll. If the API server is unreachable the last known table is kept
//! (tracing goes on) and `jvmdiag_agent_kube_api_up` is 0; the watch retries with backoff.
pub mod attribution;
pub mod table;
mod watch;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};

use ::kube::config::{KubeConfigOptions, Kubeconfig};
use jvmdiag_inspect::cgroup::{self, ContainerRef};
use jvmdiag_inspect::limits::CGROUP_MAX_BYTES;
use jvmdiag_inspect::root::read_host_file;

use crate::attach::AttachManager;
use crate::capacity::Refusal;
use crate::cli::Config;
use crate::collector::REGISTRY;
use crate::discovery::Found;
use crate::labels::{JvmLabels, Scope};
use crate::metrics::{self, counter, gauge};
use crate::model::{Family, Value};
use crate::preflight::Fatal;
use attribution::Decision;

/// Reads `--kubeconfig` when given (a flag error names it); None: the client infers its
/// configuration (the in-cluster service account, else $KUBECONFIG, else ~/.kube/config).
pub fn read_kubeconfig(path: Option<&Path>) -> Result<Option<Kubeconfig>, Fatal> {
    let Some(p) = path else { return Ok(None) };
    Kubeconfig::read_from(p).map(Some).map_err(|e| {
        Fatal(format!("--kubeconfig {}: cannot read it ({e}): pass a readable kubeconfig file, or omit the flag in a pod", p.display()))
    })
}

/// An API client from [`read_kubeconfig`]'s answer. Call it on the runtime that will use the
/// client (it starts the client's worker task there).
pub async fn client(kc: Option<&Kubeconfig>) -> Result<::kube::Client, String> {
    let config = match kc {
        Some(kc) => {
            ::kube::Config::from_custom_kubeconfig(kc.clone(), &KubeConfigOptions::default())
                .await
                .map_err(|e| e.to_string())?
        }
        None => ::kube::Config::infer().await.map_err(|e| e.to_string())?,
    };
    ::kube::Client::try_from(config).map_err(|e| e.to_string())
}

/// JVMs waiting for their pod; more are dropped (counted) rather than grow without bound.
const MAX_PENDING: usize = 4096;

/// What the watch thread shares with the loop.
#[derive(Debug, Default)]
pub struct Shared {
    pub table: table::PodTable,
    /// The watch is connected and has listed the node's pods.
    pub api_up: bool,
    /// A first list has completed (before it, every container JVM waits).
    pub synced: bool,
    pub watch_errors: u64,
    pub watch_events: u64,
    pub last_error: String,
    /// The JvmDiagnostics resources of the cluster, as (namespace, name): a pod is traced only
    /// if the resource its `jvm.diagnostics.dev/inject` label names exists (the injected
    /// annotation alone is something any pod author can write).
    pub resources: HashSet<(String, String)>,
    /// A first list of the resources has completed (before it, injected pods' JVMs wait).
    pub resources_synced: bool,
}

pub struct Attributor {
    shared: Arc<Mutex<Shared>>,
    all_jvms: bool,
    pending: BTreeMap<u32, (Found, Option<ContainerRef>, &'static str)>,
    /// Pids (and start times) decided not to trace (looked at again only if discovery
    /// offers them anew, or the pid is reused).
    skipped: HashMap<u32, u64>,
    skipped_total: BTreeMap<&'static str, u64>,
    pending_dropped: u64,
    /// Collectors asked for by each traced JVM's pod (absent: all).
    collectors: HashMap<u32, Vec<&'static str>>,
    /// `--max-jvms-per-namespace` (for the log line; the attach manager applies it).
    per_namespace: u32,
    /// Namespaces already logged as over their share (logged once each; bounded).
    share_logged: HashSet<String>,
}

/// Namespaces remembered as logged over their share; past it, each refusal is only counted.
const MAX_SHARE_LOGGED: usize = 1024;

impl Attributor {
    /// Starts the pod watch when `--node-name` is given; None otherwise (standalone).
    pub fn start(cfg: &Config) -> Result<Option<Attributor>, Fatal> {
        let Some(node) = cfg.cli.node_name.clone() else { return Ok(None) };
        if node.trim().is_empty() {
            return Err(Fatal("--node-name is empty: pass this node's name (the DaemonSet sets it from spec.nodeName)".into()));
        }
        let shared = Arc::new(Mutex::new(Shared::default()));
        watch::spawn(node, cfg.cli.kubeconfig.clone(), shared.clone())?;
        Ok(Some(
            Attributor::with_shared(shared, cfg.cli.all_jvms)
                .with_namespace_share(cfg.max_jvms_per_namespace()),
        ))
    }

    pub fn with_shared(shared: Arc<Mutex<Shared>>, all_jvms: bool) -> Attributor {
        Attributor {
            shared,
            all_jvms,
            pending: BTreeMap::new(),
            skipped: HashMap::new(),
            skipped_total: BTreeMap::new(),
            pending_dropped: 0,
            collectors: HashMap::new(),
            per_namespace: crate::attach::default_max_jvms_per_namespace(crate::attach::MAX_JVMS),
            share_logged: HashSet::new(),
        }
    }

    /// At most `n` JVMs traced at once per namespace (`--max-jvms-per-namespace`).
    pub fn with_namespace_share(mut self, n: u32) -> Attributor {
        self.per_namespace = n;
        self
    }

    /// A JVM found by discovery: decided at the next [`Attributor::resolve`].
    pub fn offer(&mut self, f: Found) {
        if self.skipped.get(&f.pid) == Some(&f.start) {
            return;
        }
        if let Some((p, _, _)) = self.pending.get(&f.pid) {
            if p.start == f.start {
                return;
            }
            // The pid is another process now: the one found before is gone, forget it.
            self.pending.remove(&f.pid);
        }
        self.skipped.remove(&f.pid);
        if self.pending.len() >= MAX_PENDING {
            self.pending_dropped += 1;
            return;
        }
        let cref = container_of(f.pid);
        self.pending.insert(f.pid, (f, cref, "pod_unknown"));
    }

    /// Decides every waiting JVM against the current pod table; traced ones are attached.
    pub fn resolve(&mut self, mgr: &mut AttachManager) {
        self.skipped.retain(|pid, start| crate::discovery::alive(*pid, *start));
        self.collectors.retain(|pid, _| mgr.jvms.contains_key(pid));
        if self.pending.is_empty() {
            return;
        }
        let decisions: Vec<(u32, Decision)> = {
            let sh = self.shared.lock().unwrap_or_else(|e| e.into_inner());
            self.pending
                .iter()
                .map(|(pid, (_, c, _))| {
                    let d = if c.is_some() && !sh.synced {
                        Decision::Wait("pod_unknown")
                    } else if self.all_jvms {
                        attribution::decide(c.as_ref(), &sh.table, true)
                    } else {
                        attribution::decide(c.as_ref(), &sh.table, false)
                            .checked_against(&sh.resources, sh.resources_synced)
                    };
                    (*pid, d)
                })
                .collect()
        };
        for (pid, d) in decisions {
            match d {
                Decision::Wait(why) => {
                    if !self
                        .pending
                        .get(&pid)
                        .is_some_and(|(f, _, _)| crate::discovery::alive(pid, f.start))
                    {
                        self.pending.remove(&pid);
                    } else if let Some(p) = self.pending.get_mut(&pid) {
                        p.2 = why;
                    }
                }
                Decision::Skip(why) => {
                    if let Some((f, _, _)) = self.pending.remove(&pid) {
                        self.skipped.insert(pid, f.start);
                    }
                    *self.skipped_total.entry(why).or_default() += 1;
                }
                Decision::Trace(l, collectors, limits) => {
                    let Some((f, _, _)) = self.pending.remove(&pid) else { continue };
                    let jvm = f.name.clone();
                    // The capacity rules (src/capacity.rs): a refused JVM waits for a slot.
                    match mgr.try_add(f, collectors.as_deref(), limits, Some(&l.namespace)) {
                        Some(Refusal::NamespaceShare) => {
                            if self.share_logged.len() < MAX_SHARE_LOGGED
                                && self.share_logged.insert(l.namespace.clone())
                            {
                                tracing::warn!(
                                    namespace = %l.namespace,
                                    pid,
                                    "namespace holds its share of {} traced JVMs (--max-jvms-per-namespace): its further JVMs wait for one of its slots to free, counted as jvmdiag_agent_attach_failures_total{{reason=\"namespace_share\"}}",
                                    self.per_namespace
                                );
                            }
                            continue;
                        }
                        Some(_) => continue,
                        None => {}
                    }
                    if let Some(j) = mgr.jvms.get_mut(&pid) {
                        j.labels = JvmLabels {
                            namespace: l.namespace,
                            pod: l.pod,
                            container: l.container,
                            jvm: jvm.chars().take(64).collect(),
                            scope: Scope::Kubernetes { jvmdiagnostics: l.jvmdiagnostics },
                        };
                        if let Some(c) = collectors {
                            self.collectors.insert(pid, c);
                        }
                    }
                }
            }
        }
    }

    /// At a scrape: drops series of collectors a JVM's pod did not ask for, adds the watch's health.
    pub fn finish(&self, fams: &mut Vec<Family>, mgr: &AttachManager) {
        let wanted = self
            .collectors
            .iter()
            .filter_map(|(pid, w)| Some((mgr.jvms.get(pid)?.slot, w.as_slice())));
        drop_unwanted(fams, wanted);
        fams.extend(self.families());
    }

    fn families(&self) -> Vec<Family> {
        let sh = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        let mut pending = metrics::KUBE_JVMS_PENDING.family();
        let mut by: BTreeMap<&str, u64> = BTreeMap::new();
        for (_, _, why) in self.pending.values() {
            *by.entry(why).or_default() += 1;
        }
        for why in ["pod_unknown", "container_unknown"] {
            pending.agent(
                vec![("reason", why.to_string())],
                Value::Gauge(by.get(why).copied().unwrap_or(0) as f64),
            );
        }
        let mut skipped = metrics::KUBE_JVMS_SKIPPED.family();
        for (why, n) in &self.skipped_total {
            skipped.agent(vec![("reason", why.to_string())], Value::Counter(*n));
        }
        let mut refused = metrics::KUBE_ANNOTATION_REFUSALS.family();
        refused.agent(
            vec![("annotation", "collectors".into()), ("reason", "unknown_collector".into())],
            Value::Counter(sh.table.collectors_unknown),
        );
        vec![
            gauge(&metrics::KUBE_API_UP, if sh.api_up { 1.0 } else { 0.0 }),
            gauge(&metrics::KUBE_PODS, sh.table.pod_count() as f64),
            counter(&metrics::KUBE_WATCH_EVENTS, sh.watch_events),
            counter(&metrics::KUBE_WATCH_ERRORS, sh.watch_errors),
            counter(&metrics::KUBE_PENDING_DROPPED, self.pending_dropped),
            counter(&metrics::KUBE_LIMITS_INVALID, sh.table.limits_invalid),
            pending,
            skipped,
            refused,
        ]
    }
}

/// The container of a host pid from its cgroup file (None: a host process or unreadable).
pub fn container_of(pid: u32) -> Option<ContainerRef> {
    let b = read_host_file(Path::new(&format!("/proc/{pid}/cgroup")), CGROUP_MAX_BYTES).ok()?;
    cgroup::container_of(&cgroup::parse(&b).ok()?)
}

/// Drops each JVM's series (by slot) from the families that none of the collectors it asked
/// for exports. The kernel side already counts only wanted collectors
/// (`attach::traced_pids_value`); this drops what the hsperfdata fallback reads for the others.
/// A family two collectors export (the parked families) stays for a JVM that wants either.
fn drop_unwanted<'a>(fams: &mut [Family], wanted: impl Iterator<Item = (u32, &'a [&'static str])>) {
    let mut off: HashMap<&str, HashSet<u32>> = HashMap::new();
    for (slot, wanted) in wanted {
        let kept: HashSet<&str> = REGISTRY
            .iter()
            .filter(|r| wanted.contains(&r.name))
            .flat_map(|r| r.families.iter().map(|f| f.name))
            .collect();
        for r in REGISTRY.iter().filter(|r| !wanted.contains(&r.name)) {
            for family in r.families.iter().filter(|f| !kept.contains(f.name)) {
                off.entry(family.name).or_default().insert(slot);
            }
        }
    }
    for f in fams.iter_mut() {
        if let Some(slots) = off.get(f.name) {
            f.samples.retain(|s| s.slot.is_none_or(|slot| !slots.contains(&slot)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Sample;

    fn with_slots(mut f: Family, slots: &[Option<u32>]) -> Family {
        f.samples = slots
            .iter()
            .map(|&slot| Sample { slot, labels: vec![], value: Value::Gauge(1.0) })
            .collect();
        f
    }

    fn slots(f: &Family) -> Vec<Option<u32>> {
        f.samples.iter().map(|s| s.slot).collect()
    }

    #[test]
    fn a_jvm_loses_only_the_series_of_collectors_its_pod_did_not_ask_for() {
        let all = [Some(1), Some(2), None];
        let mut fams = vec![
            with_slots(metrics::THREAD_STARTS.family(), &all),
            with_slots(metrics::SAFEPOINT_PAUSE.family(), &all),
            with_slots(metrics::SAFEPOINT_SYNC.family(), &all),
        ];
        let only_threads: &[&str] = &["threads"];
        let both: &[&str] = &["threads", "safepoints"];
        drop_unwanted(&mut fams, [(1, only_threads), (2, both)].into_iter());
        assert_eq!(slots(&fams[0]), all, "threads: wanted by both");
        assert_eq!(
            slots(&fams[1]),
            [Some(2), None],
            "pause: slot 1 did not ask; agent series kept"
        );
        assert_eq!(slots(&fams[2]), [Some(2), None], "sync: as pause");
    }

    #[test]
    fn a_family_of_two_collectors_stays_for_a_jvm_that_wants_either() {
        let all = [Some(1), Some(2), Some(3), None];
        let mut fams = vec![
            with_slots(metrics::THREAD_PARKED_SECONDS.family(), &all),
            with_slots(metrics::MONITOR_BLOCKED.family(), &all),
        ];
        let monitors: &[&str] = &["monitors"];
        let parking: &[&str] = &["parking"];
        let threads: &[&str] = &["threads"];
        drop_unwanted(&mut fams, [(1, monitors), (2, parking), (3, threads)].into_iter());
        assert_eq!(
            slots(&fams[0]),
            [Some(1), Some(2), None],
            "parked time: Object.wait from monitors, parks from parking"
        );
        assert_eq!(slots(&fams[1]), [Some(1), None], "blocked time: monitors only");
    }

    #[test]
    fn unknown_collector_names_are_exported_as_refusals() {
        let shared = Arc::new(Mutex::new(Shared::default()));
        shared.lock().unwrap().table.collectors_unknown = 3;
        let fams = Attributor::with_shared(shared, false).families();
        let f = fams.iter().find(|f| f.name == metrics::KUBE_ANNOTATION_REFUSALS.name).unwrap();
        assert_eq!(f.samples.len(), 1);
        let s = &f.samples[0];
        assert_eq!(
            (&s.labels[..], &s.value),
            (
                &[
                    ("annotation", "collectors".to_string()),
                    ("reason", "unknown_collector".to_string())
                ][..],
                &Value::Counter(3)
            )
        );
    }

    #[test]
    fn every_collector_names_families_of_its_own() {
        // Shared on purpose: the parked families (parks from parking, Object.wait from monitors).
        let shared = [metrics::THREAD_PARKS.name, metrics::THREAD_PARKED_SECONDS.name];
        let names: Vec<&str> = REGISTRY
            .iter()
            .flat_map(|r| r.families.iter().map(|f| f.name))
            .filter(|n| !shared.contains(n))
            .collect();
        let distinct: HashSet<&str> = names.iter().copied().collect();
        assert_eq!(distinct.len(), names.len(), "a family listed under two collectors: {names:?}");
        assert!(REGISTRY.iter().all(|r| !r.families.is_empty()), "a collector without families");
    }
}
