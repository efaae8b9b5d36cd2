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
}

impl PodTable {
    pub fn apply(&mut self, p: PodMeta) {
        if self.pods.get(&p.uid) == Some(&p) {
            return; // status churn that attribution does not see
        }
        let old_invalid = self.pods.get(&p.uid).map(|o| (o.limits, o.limits_invalid));
        if p.limits_invalid > 0 && old_invalid != Some((p.limits, p.limits_invalid)) {
            self.limits_invalid += p.limits_invalid;
            tracing::warn!(namespace = %p.namespace, pod = %p.name, invalid = p.limits_invalid,
                "{LIMITS}: items ignored (not key=number from 1 up, given twice, or too long); the agent's own limits apply to them");
        }
        self.remove(&p.uid.clone());
        for (id, _) in &p.container_ids {
            self.by_container.insert(id.clone(), p.uid.clone());
        }
        self.pods.insert(p.uid.clone(), p);
        self.generation += 1;
    }

    pub fn remove(&mut self, uid: &str) {
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
        *self = PodTable { limits_invalid: invalid, ..PodTable::default() };
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
