//! Which pod and container a JVM runs in, and whether to trace it (the operator's contract:
//! docs/contracts.md "Operator ↔ webhook ↔ agent"). Pure: a container reference (from
//! /proc/PID/cgroup) and the pod table in, a decision out.
use std::collections::BTreeSet;

use jvmdiag_inspect::cgroup::ContainerRef;
use jvmdiag_inspect::jvm_limits::Limits;

use super::table::{PodMeta, PodTable};
use crate::collector::REGISTRY;

/// The Kubernetes labels of a traced JVM (the `jvm` label comes from discovery).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PodLabels {
    pub namespace: String,
    pub pod: String,
    pub container: String,
    pub jvmdiagnostics: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Trace it, with these collectors (None: every enabled collector) and its pod's limits
    /// (`jvm.diagnostics.dev/limits`).
    Trace(PodLabels, Option<Vec<&'static str>>, Limits),
    /// Never trace this process (reason, for jvmdiag_agent_kube_jvms_skipped_total).
    Skip(&'static str),
    /// Its pod (or its container's ID in the pod's status) is not known yet: ask again.
    Wait(&'static str),
}

impl Decision {
    /// A pod is traced only if the JvmDiagnostics its labels name exists in its namespace
    /// (`resources`: namespace, name); until the resources are listed, it waits.
    pub fn checked_against(
        self,
        resources: &std::collections::HashSet<(String, String)>,
        synced: bool,
    ) -> Decision {
        match self {
            Decision::Trace(l, c, lim) if !l.pod.is_empty() => {
                if !synced {
                    Decision::Wait("resource_unknown")
                } else if resources.contains(&(l.namespace.clone(), l.jvmdiagnostics.clone())) {
                    Decision::Trace(l, c, lim)
                } else {
                    Decision::Skip("no_resource")
                }
            }
            d => d,
        }
    }
}

/// The collectors the annotation's list names (`Registration::annotation`); unknown names
/// are left out here, and counted and logged when the pod is seen ([`unknown_collectors`],
/// `PodTable::apply`).
pub fn collectors(names: &[String]) -> Vec<&'static str> {
    REGISTRY.iter().filter(|r| names.iter().any(|n| n == r.annotation)).map(|r| r.name).collect()
}

/// The names in the annotation's list that no registered collector has, each once.
pub fn unknown_collectors(names: &[String]) -> BTreeSet<&str> {
    names
        .iter()
        .map(String::as_str)
        .filter(|n| !REGISTRY.iter().any(|r| r.annotation == *n))
        .collect()
}

/// The registered collectors' annotation names, for a log line.
pub fn known_collectors() -> String {
    REGISTRY.iter().map(|r| r.annotation).collect::<Vec<_>>().join(",")
}

fn labels(p: &PodMeta, container: &str) -> PodLabels {
    PodLabels {
        namespace: p.namespace.clone(),
        pod: p.name.clone(),
        container: container.to_string(),
        jvmdiagnostics: p.resource.clone(),
    }
}

pub fn decide(cref: Option<&ContainerRef>, table: &PodTable, all_jvms: bool) -> Decision {
    let Some(c) = cref else {
        // A host process (not in any container).
        return if all_jvms {
            Decision::Trace(PodLabels::default(), None, Limits::default())
        } else {
            Decision::Skip("not_in_pod")
        };
    };
    if let Some((pod, name)) = table.container(&c.container_id) {
        if all_jvms {
            return Decision::Trace(labels(pod, name), None, pod.limits);
        }
        if !pod.injected {
            return Decision::Skip("not_injected");
        }
        if let Some(list) = &pod.containers {
            if !list.iter().any(|n| n == name) {
                return Decision::Skip("container_not_selected");
            }
        }
        return Decision::Trace(
            labels(pod, name),
            pod.collectors.as_deref().map(collectors),
            pod.limits,
        );
    }
    match c.pod_uid.as_deref().and_then(|u| table.pod(u)) {
        // Not injected is known before the kubelet reports the container's ID.
        Some(pod) if !all_jvms && !pod.injected => Decision::Skip("not_injected"),
        Some(_) => Decision::Wait("container_unknown"),
        None => Decision::Wait("pod_unknown"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jvmdiag_inspect::cgroup::{self, Runtime};

    const ID: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    const UID: &str = "6f1c2a4e-3b1d-4c5e-9f00-0123456789ab";

    fn pod(injected: bool, containers: Option<&str>, ids: &[(&str, &str)]) -> PodMeta {
        PodMeta {
            uid: UID.into(),
            namespace: "shop".into(),
            name: "checkout-1".into(),
            resource: "checkout".into(),
            injected,
            collectors: Some(vec!["threads".into(), "vmOperations".into(), "bogus".into()]),
            containers: containers.map(|c| c.split(',').map(String::from).collect()),
            limits: Limits { thread_names: Some(3), ..Default::default() },
            limits_invalid: 0,
            container_ids: ids.iter().map(|(i, n)| (i.to_string(), n.to_string())).collect(),
        }
    }

    fn cref(id: &str, uid: Option<&str>) -> ContainerRef {
        ContainerRef {
            runtime: Runtime::Containerd,
            container_id: id.into(),
            pod_uid: uid.map(String::from),
        }
    }

    #[test]
    fn injected_pod_is_traced_with_the_mapped_collectors() {
        let mut t = PodTable::default();
        t.apply(pod(true, Some("app"), &[(ID, "app")]));
        let d = decide(Some(&cref(ID, Some(UID))), &t, false);
        let want = PodLabels {
            namespace: "shop".into(),
            pod: "checkout-1".into(),
            container: "app".into(),
            jvmdiagnostics: "checkout".into(),
        };
        assert_eq!(
            d,
            Decision::Trace(
                want,
                Some(vec!["threads", "vmOperations"]),
                Limits { thread_names: Some(3), ..Default::default() }
            )
        );
    }

    #[test]
    fn not_injected_or_not_selected_is_skipped_unless_all_jvms() {
        let mut t = PodTable::default();
        t.apply(pod(false, None, &[(ID, "app")]));
        assert_eq!(decide(Some(&cref(ID, None)), &t, false), Decision::Skip("not_injected"));
        assert!(
            matches!(decide(Some(&cref(ID, None)), &t, true), Decision::Trace(l, None, _) if l.container == "app")
        );
        t.apply(pod(true, Some("other"), &[(ID, "app")]));
        assert_eq!(
            decide(Some(&cref(ID, None)), &t, false),
            Decision::Skip("container_not_selected")
        );
        assert_eq!(decide(None, &t, false), Decision::Skip("not_in_pod"));
        assert_eq!(
            decide(None, &t, true),
            Decision::Trace(PodLabels::default(), None, Limits::default())
        );
    }

    #[test]
    fn unknown_pod_or_container_waits_and_resolves_later() {
        let mut t = PodTable::default();
        let c = cref(ID, Some(UID));
        assert_eq!(decide(Some(&c), &t, false), Decision::Wait("pod_unknown"));
        t.apply(pod(true, None, &[]));
        assert_eq!(decide(Some(&c), &t, false), Decision::Wait("container_unknown"));
        t.apply(pod(false, None, &[]));
        assert_eq!(decide(Some(&c), &t, false), Decision::Skip("not_injected"));
        t.apply(pod(true, None, &[(ID, "app")]));
        assert!(matches!(decide(Some(&c), &t, false), Decision::Trace(..)));
        t.remove(UID);
        assert_eq!(decide(Some(&c), &t, false), Decision::Wait("pod_unknown"));
    }

    #[test]
    fn replace_drops_pods_deleted_while_the_watch_was_down() {
        let mut t = PodTable::default();
        t.apply(pod(true, None, &[(ID, "app")]));
        let g = t.generation;
        t.replace(vec![]);
        assert!(t.container(ID).is_none());
        assert!(t.generation > g);
    }

    /// Real /proc/PID/cgroup shapes (containerd systemd and cgroupfs drivers, CRI-O, Docker)
    /// attribute to the pod whose status names that container ID.
    #[test]
    fn cgroup_files_of_each_runtime_map_to_their_pod() {
        let uid_ = UID.replace('-', "_");
        let files = [
            format!("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{uid_}.slice/cri-containerd-{ID}.scope\n"),
            format!("12:pids:/kubepods/burstable/pod{UID}/{ID}\n11:memory:/kubepods/burstable/pod{UID}/{ID}\n0::/\n"),
            format!("0::/kubepods.slice/kubepods-pod{uid_}.slice/crio-{ID}.scope\n"),
            format!("0::/system.slice/containerd.service/kubepods-besteffort-pod{uid_}.slice:cri-containerd:{ID}\n"),
            format!("4:memory:/kubepods/besteffort/pod{UID}/docker-{ID}.scope\n"),
        ];
        let mut t = PodTable::default();
        t.apply(pod(true, None, &[(ID, "app")]));
        for f in files {
            let c = cgroup::container_of(&cgroup::parse(f.as_bytes()).unwrap());
            assert!(
                matches!(decide(c.as_ref(), &t, false), Decision::Trace(ref l, _, _) if l.pod == "checkout-1"),
                "{f}"
            );
        }
    }

    #[test]
    fn a_pod_is_traced_only_if_its_resource_exists_in_its_namespace() {
        let l = PodLabels {
            namespace: "shop".into(),
            pod: "p-1".into(),
            container: "app".into(),
            jvmdiagnostics: "checkout".into(),
        };
        let trace = Decision::Trace(l, None, Limits::default());
        let mut have = std::collections::HashSet::new();
        assert_eq!(trace.clone().checked_against(&have, false), Decision::Wait("resource_unknown"));
        assert_eq!(trace.clone().checked_against(&have, true), Decision::Skip("no_resource"));
        have.insert(("other".to_string(), "checkout".to_string())); // same name, another namespace
        assert_eq!(trace.clone().checked_against(&have, true), Decision::Skip("no_resource"));
        have.insert(("shop".to_string(), "checkout".to_string()));
        assert_eq!(trace.clone().checked_against(&have, true), trace);
        // Decisions that trace no pod are left as they are.
        assert_eq!(
            Decision::Skip("not_injected").checked_against(&have, false),
            Decision::Skip("not_injected")
        );
        let host = Decision::Trace(PodLabels::default(), None, Limits::default());
        assert_eq!(host.clone().checked_against(&have, false), host);
    }
}
