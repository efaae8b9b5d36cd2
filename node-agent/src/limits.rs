//! Per-JVM limits in the agent's three modes: Kubernetes (the pod annotation
//! `jvm.diagnostics.dev/limits`, read by the pod watch, src/kube/table.rs), sidecar
//! (`JVMDIAG_LIMITS`) and standalone (`--jvm-limits TEXT:LIMITS`). The text is parsed by
//! `jvmdiag_inspect::jvm_limits` (it is container-controlled); this is what the modes share
//! around it: logging what was refused, and the standalone rules.
use jvmdiag_inspect::jvm_limits::{self, Limits};

/// Limits from a `jvm.diagnostics.dev/limits`-shaped text, logging refused items (`what`
/// names the source); returns the number refused too.
pub fn from_text(text: &str, what: &str) -> (Limits, u64) {
    let p = jvm_limits::parse(text);
    if !p.invalid.is_empty() {
        tracing::warn!(source = what, invalid = %p.invalid.join("; "), "limits: items ignored");
    }
    (p.limits, p.invalid.len() as u64)
}

/// `--jvm-limits TEXT:LIMITS` rules as (text in the `jvm` label, limits); refused items are
/// logged. A rule without `:` matches its whole text and has no limits.
pub fn rules(flags: &[String]) -> Vec<(String, Limits)> {
    flags
        .iter()
        .map(|rule| {
            let (m, text) = rule.split_once(':').unwrap_or((rule.as_str(), ""));
            (m.to_string(), from_text(text, "--jvm-limits").0)
        })
        .collect()
}

/// The limits of the first rule whose text the JVM's `jvm` label contains (none: the agent's).
pub fn for_jvm(rules: &[(String, Limits)], jvm: &str) -> Limits {
    rules.iter().find(|(m, _)| jvm.contains(m.as_str())).map(|(_, l)| *l).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_rule_whose_text_the_jvm_label_contains_wins() {
        let r = rules(&[
            "Recompile:maxMethods=2".to_string(),
            "Re:maxThreadNames=3,maxMethods=x".to_string(),
            "nocolon".to_string(),
        ]);
        assert_eq!(r.len(), 3);
        assert_eq!(for_jvm(&r, "Recompile").methods, Some(2));
        assert_eq!(for_jvm(&r, "Recompile").thread_names, None, "only the first match");
        let re = for_jvm(&r, "Rest");
        assert_eq!((re.thread_names, re.methods), (Some(3), None), "a refused item is left out");
        assert_eq!(for_jvm(&r, "app.jar"), Limits::default());
        assert_eq!(
            from_text("maxClasses=0,maxMethods=4", "test"),
            (Limits { methods: Some(4), ..Default::default() }, 1)
        );
    }
}
