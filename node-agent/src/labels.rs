//! The label set every per-JVM series carries (docs/contracts.md, docs/metrics.md).
//!
//! One type for both modes: the common labels are always present (empty outside
//! Kubernetes); `Scope` holds what differs. Kubernetes attribution (a pod watch) only
//! has to fill `namespace`/`pod`/`container` and choose `Scope::Kubernetes`.

/// Labels identifying one JVM in every series.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JvmLabels {
    pub namespace: String,
    pub pod: String,
    pub container: String,
    /// Main class simple name or jar file name, at most 64 characters.
    pub jvm: String,
    pub scope: Scope,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// `--standalone`: the host name and the host pid.
    Standalone { host: String, pid: u32 },
    /// A JVM in a pod traced because of a `JvmDiagnostics` resource (filled by the pod
    /// watch of Kubernetes mode, or the sidecar's environment).
    Kubernetes { jvmdiagnostics: String },
}

impl JvmLabels {
    pub fn standalone(host: &str, pid: u32, jvm: &str) -> Self {
        JvmLabels {
            namespace: String::new(),
            pod: String::new(),
            container: String::new(),
            jvm: jvm.chars().take(64).collect(),
            scope: Scope::Standalone { host: host.to_string(), pid },
        }
    }

    /// The label pairs in exposition order.
    pub fn pairs(&self) -> Vec<(&'static str, String)> {
        let mut v = Vec::with_capacity(6);
        match &self.scope {
            Scope::Standalone { host, pid } => {
                v.push(("host", host.clone()));
                v.push(("jvm", self.jvm.clone()));
                v.push(("pid", pid.to_string()));
                v.push(("namespace", self.namespace.clone()));
                v.push(("pod", self.pod.clone()));
                v.push(("container", self.container.clone()));
            }
            Scope::Kubernetes { jvmdiagnostics } => {
                v.push(("namespace", self.namespace.clone()));
                v.push(("pod", self.pod.clone()));
                v.push(("container", self.container.clone()));
                v.push(("jvm", self.jvm.clone()));
                v.push(("jvmdiagnostics", jvmdiagnostics.clone()));
            }
        }
        v
    }
}

/// Longest label value taken from a JVM's hsperfdata strings (version, vendor), in characters.
pub const INFO_MAX_CHARS: usize = 64;

/// A string a container controls, as a label value: at most `INFO_MAX_CHARS` characters,
/// control characters dropped (the exposition escapes what remains).
pub fn bounded_info(s: &str) -> String {
    s.chars().filter(|c| !c.is_control()).take(INFO_MAX_CHARS).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_strings_are_bounded_and_lose_control_characters() {
        assert_eq!(bounded_info("Eclipse Adoptium"), "Eclipse Adoptium");
        assert_eq!(bounded_info("a\nb\u{0}c"), "abc");
        assert_eq!(bounded_info(&"v".repeat(65_536)).chars().count(), INFO_MAX_CHARS);
        assert_eq!(bounded_info(&"中".repeat(100)), "中".repeat(INFO_MAX_CHARS));
    }

    #[test]
    fn standalone_has_host_jvm_pid_and_empty_kube_labels() {
        let l = JvmLabels::standalone("h1", 42, "Main");
        let keys: Vec<_> = l.pairs().into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["host", "jvm", "pid", "namespace", "pod", "container"]);
        assert_eq!(l.pairs()[2].1, "42");
    }

    #[test]
    fn jvm_name_is_capped_at_64_chars() {
        let l = JvmLabels::standalone("h", 1, &"x".repeat(100));
        assert_eq!(l.jvm.len(), 64);
    }
}
