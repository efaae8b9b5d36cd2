//! What the agent keeps of this node's pods: only the fields attribution needs, indexed by
//! container ID (the watch delivers whole Pod objects; they are not kept, so 500 pods cost
//! a few hundred kilobytes, not the API objects' megabytes).
use std::collections::HashMap;

use jvmdiag_inspect::jvm_limits::{self, Limits};
use k8s_openapi::api::core::v1::Pod;

pub const INJECT_LABEL: &str = "jvm.diagnostics.dev/inject";
pub const INJECTED: &str = "jvm.diagnostics.dev/injected";
pub const COLLECTORS: &str = "jvm.diagnostics.dev/collectors";
pub const CONTAINERS: &str = "jvm.diagnostics.dev/containers";
pub const LIMITS: &str = "jvm.diagnostics.dev/limits";

/// One pod, as far as attribution cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodMeta {
    pub uid: String,
    pub namespace: String,
    pub name: String,
    /// Value of the `jvm.diagnostics.dev/inject` label: the JvmDiagnostics resource's name.
    pub resource: String,
    /// Carries `jvm.diagnostics.dev/injected` (the webhook mutated it).
    pub injected: bool,
    /// `jvm.diagnostics.dev/collectors`, as written (contract names: vmOperations, …).
    pub collectors: Option<Vec<String>>,
    /// `jvm.diagnostics.dev/containers`: the containers the webhook injected.
    pub containers: Option<Vec<String>>,
    /// `jvm.diagnostics.dev/limits`, parsed (`jvmdiag_inspect::jvm_limits`); default when absent.
    pub limits: Limits,
    /// Items of that annotation refused (logged once, when the pod is first seen so).
    pub limits_invalid: u64,
    /// (container ID without the `runtime://` prefix, container name), every kind of container.
    pub container_ids: Vec<(String, String)>,
}

fn list(v: &str) -> Vec<String> {
    v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect()
}

impl PodMeta {
    pub fn from_pod(p: &Pod) -> Option<PodMeta> {
        let md = &p.metadata;
        let uid = md.uid.clone()?;
        let ann = md.annotations.as_ref();
        let a = |k: &str| ann.and_then(|m| m.get(k)).map(|s| s.as_str());
        let parsed = a(LIMITS).map(jvm_limits::parse).unwrap_or_default();
        let mut container_ids = Vec::new();
        if let Some(st) = &p.status {
            let all = [
                &st.container_statuses,
                &st.init_container_statuses,
                &st.ephemeral_container_statuses,
            ];
            for s in all.into_iter().flatten().flatten() {
                if let Some(id) =
                    s.container_id.as_deref().and_then(|id| id.split_once("://")).map(|(_, id)| id)
                {
                    if !id.is_empty() {
                        container_ids.push((id.to_ascii_lowercase(), s.name.clone()));
                    }
                }
            }
        }
        Some(PodMeta {
            uid,
            namespace: md.namespace.clone().unwrap_or_default(),
            name: md.name.clone().unwrap_or_default(),
            resource: md
                .labels
                .as_ref()
                .and_then(|l| l.get(INJECT_LABEL))
                .cloned()
                .unwrap_or_default(),
            injected: a(INJECTED).is_some(),
            collectors: a(COLLECTORS).map(list),
            containers: a(CONTAINERS).map(list),
            limits: parsed.limits,
            limits_invalid: parsed.invalid.len() as u64,
            container_ids,
        })
    }
}

/// The pods of this node, by UID, and their containers by ID.
#[derive(Debug, Default)]
pub struct PodTable {
    pods: HashMap<String, PodMeta>,
    by_container: HashMap<String, String>,
    /// Bumped at every change (pending JVMs are looked up again only then).
    pub generation: u64,
    /// Items of pods' `jvm.diagnostics.dev/limits` refused, counted once per pod and text.
    pub limits_invalid: u64,
    /// Names in pods' `jvm.diagnostics.dev/collectors` that no registered collector has,
    /// counted (and logged) once per pod and annotation value.
    pub collectors_unknown: u64,
    /// The collectors annotation of each pod whose unknown names were counted, so a pod is
    /// reported again only when its annotation changes (kept across a re-list).
    collectors_reported: HashMap<String, Vec<String>>,
}

/// Unknown collector names shown in one log line, and characters shown of each.
const SHOWN_NAMES: usize = 8;
const SHOWN_CHARS: usize = 64;

/// A name from a pod's annotation, shortened and printable for a log line.
fn shown(name: &str) -> String {
    let mut out: String = name
        .chars()
        .take(SHOWN_CHARS)
        .map(|c| if c.is_ascii_graphic() { c } else { '?' })
        .collect();
    if name.chars().nth(SHOWN_CHARS).is_some() {
        out.push('…');
    }
    out
}

impl PodTable {
    pub fn apply(&mut self, p: PodMeta) {
        if self.pods.get(&p.uid) == Some(&p) {
            return; // status churn that attribution does not see
        }
        self.refuse_unknown_collectors(&p);
        let old_invalid = self.pods.get(&p.uid).map(|o| (o.limits, o.limits_invalid));
        if p.limits_invalid > 0 && old_invalid != Some((p.limits, p.limits_invalid)) {
            self.limits_invalid += p.limits_invalid;
            tracing::warn!(namespace = %p.namespace, pod = %p.name, invalid = p.limits_invalid,
                "{LIMITS}: items ignored (not key=number from 1 up, given twice, or too long); the agent's own limits apply to them");
        }
        self.unindex(&p.uid.clone());
        for (id, _) in &p.container_ids {
            self.by_container.insert(id.clone(), p.uid.clone());
        }
        self.pods.insert(p.uid.clone(), p);
        self.generation += 1;
    }

    /// Counts and logs the names of the pod's collectors annotation that this agent has no
    /// collector for, once per pod and annotation value; the known ones are traced.
    fn refuse_unknown_collectors(&mut self, p: &PodMeta) {
        let Some(names) = &p.collectors else { return };
        let unknown = super::attribution::unknown_collectors(names);
        if unknown.is_empty() || self.collectors_reported.get(&p.uid) == Some(names) {
            return;
        }
        self.collectors_unknown += unknown.len() as u64;
        let mut listed: Vec<String> = unknown.iter().take(SHOWN_NAMES).map(|n| shown(n)).collect();
        if unknown.len() > SHOWN_NAMES {
            listed.push(format!("… ({} in all)", unknown.len()));
        }
        tracing::warn!(
            namespace = %p.namespace,
            pod = %p.name,
            unknown = %listed.join(","),
            known = %super::attribution::known_collectors(),
            "{COLLECTORS}: collectors this agent does not have are not traced, counted in jvmdiag_agent_kube_annotation_refusals_total{{annotation=\"collectors\",reason=\"unknown_collector\"}}; the pod's known collectors are"
        );
        self.collectors_reported.insert(p.uid.clone(), names.clone());
    }

    /// A pod deleted.
    pub fn remove(&mut self, uid: &str) {
        self.collectors_reported.remove(uid);
        self.unindex(uid);
    }

    fn unindex(&mut self, uid: &str) {
        if let Some(old) = self.pods.remove(uid) {
            for (id, _) in &old.container_ids {
                if self.by_container.get(id).map(String::as_str) == Some(uid) {
                    self.by_container.remove(id);
                }
            }
            self.generation += 1;
        }
    }

    /// Replaces everything (a re-list after the watch was lost): pods deleted meanwhile go.
    pub fn replace(&mut self, pods: Vec<PodMeta>) {
        let (gen, invalid) = (self.generation, self.limits_invalid);
        let unknown = self.collectors_unknown;
        // The pods listed again keep what was reported of them; the others are gone.
        let mut reported = std::mem::take(&mut self.collectors_reported);
        let listed: std::collections::HashSet<&str> = pods.iter().map(|p| p.uid.as_str()).collect();
        reported.retain(|uid, _| listed.contains(uid.as_str()));
        *self = PodTable {
            limits_invalid: invalid,
            collectors_unknown: unknown,
            collectors_reported: reported,
            ..PodTable::default()
        };
        for p in pods {
            self.apply(p);
        }
        self.generation = gen + 1;
    }

    /// The pod and container name of a container ID.
    pub fn container(&self, id: &str) -> Option<(&PodMeta, &str)> {
        let pod = self.pods.get(self.by_container.get(id)?)?;
        let name = pod.container_ids.iter().find(|(i, _)| i == id).map(|(_, n)| n.as_str())?;
        Some((pod, name))
    }

    pub fn pod(&self, uid: &str) -> Option<&PodMeta> {
        self.pods.get(uid)
    }

    pub fn pod_count(&self) -> usize {
        self.pods.len()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    fn pod(uid: &str, collectors: &str) -> PodMeta {
        PodMeta {
            uid: uid.into(),
            namespace: "shop".into(),
            name: format!("checkout-{uid}"),
            resource: "checkout".into(),
            injected: true,
            collectors: Some(list(collectors)),
            containers: None,
            limits: Limits::default(),
            limits_invalid: 0,
            container_ids: vec![],
        }
    }

    /// What `f` logs, as the plain fmt layer writes it.
    fn logs(f: impl FnOnce()) -> String {
        #[derive(Clone, Default)]
        struct Buf(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Buf {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let buf = Buf::default();
        let w = buf.clone();
        let sub = tracing_subscriber::fmt().with_writer(move || w.clone()).finish();
        tracing::subscriber::with_default(sub, f);
        let out = buf.0.lock().unwrap().clone();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn unknown_collector_names_are_counted_and_logged_once_per_pod() {
        let mut t = PodTable::default();
        let out = logs(|| {
            t.apply(pod("a", "threads,futureThing,parking,futureThing,other"));
            assert_eq!(t.collectors_unknown, 2, "each unknown name once");
            let mut churn = pod("a", "threads,futureThing,parking,futureThing,other");
            churn.container_ids = vec![("0123".into(), "app".into())];
            t.apply(churn.clone());
            t.replace(vec![churn]);
            assert_eq!(t.collectors_unknown, 2, "the same pod and annotation: not again");
            t.apply(pod("b", "threads,vmOperations,monitors"));
            assert_eq!(t.collectors_unknown, 2, "only known names");
            t.apply(pod("c", "bogus"));
            t.apply(pod("c", "bogus,more"));
            assert_eq!(t.collectors_unknown, 5, "another pod, then its annotation changed");
            t.remove("c");
            t.apply(pod("c", "bogus,more"));
            assert_eq!(t.collectors_unknown, 7, "a pod deleted and seen again");
        });
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 4, "{out}");
        let known = "known=threads,safepoints,vmOperations,compilation,monitors,parking";
        assert!(
            lines[0].contains("WARN")
                && lines[0].contains("namespace=shop pod=checkout-a")
                && lines[0].contains("unknown=futureThing,other")
                && lines[0].contains(known),
            "{}",
            lines[0]
        );
        assert!(lines[2].contains("pod=checkout-c") && lines[2].contains("unknown=bogus,more"));
        let c = pod("c", "bogus,more");
        let trace = super::super::attribution::collectors(c.collectors.as_deref().unwrap());
        assert!(trace.is_empty(), "unknown names trace nothing: {trace:?}");
    }

    #[test]
    fn a_hostile_collectors_annotation_makes_one_short_log_line() {
        let mut t = PodTable::default();
        let names: Vec<String> = (0..5000).map(|i| format!("x{i}\n{}", "y".repeat(100))).collect();
        let out = logs(|| t.apply(pod("a", &names.join(","))));
        assert_eq!(t.collectors_unknown, 5000);
        assert_eq!(out.lines().count(), 1, "{out}");
        assert!(out.len() < 1500 && out.contains("(5000 in all)"), "{out}");
    }
}
