"""The product's own health: agent down, JVMs injected but not traced, pods not injected.

jvmdiag_agent_jvm_not_traced, jvmdiag_agent_jvms_untraced and jvmdiag_operator_pods_missing_injection are the metrics
these alerts need from the agent and the operator (docs/alerts.md, "Metrics these alerts need")."""

from .common import WHERE, Alert, sel

# Reasons not counted per agent here: not_selected (nobody asked to trace the JVM) and
# no_probes_no_hsperfdata (named per JVM by jvmdiag_agent_jvm_not_traced instead).
AGENT_REASONS = 'reason!~"not_selected|no_probes_no_hsperfdata"'

ALERTS = [
    Alert(
        name="JvmDiagAgentDown",
        key="agentDown",
        spec_field=False,
        runbook="JvmDiagAgentDown.md",
        meaning="Prometheus cannot scrape a node agent: that node's JVMs are not watched",
        expr=lambda p: f"up{sel(p)} == 0",
        summary=lambda p: "jvm-diagnostics agent {{ $labels.instance }} is down.",
        description=lambda p: (
            "Prometheus cannot scrape the jvm-diagnostics agent {{ $labels.instance }}"
            "{{ with $labels.pod }} (pod {{ $labels.namespace }}/{{ . }}){{ end }} (job {{ $labels.job }}) "
            f"for {p.for_}: no thread, safepoint or JIT alert can fire for the JVMs on its node."
        ),
    ),
    Alert(
        name="JvmDiagJvmNotTraced",
        key="jvmNotTraced",
        spec_field=False,
        runbook="JvmDiagJvmNotTraced.md",
        meaning="a JVM the agent should trace is seen but not traced (no probes attached)",
        # jvm_not_traced names a JVM with neither probes nor hsperfdata by its pod; the
        # agent's jvms_untraced counts the JVMs it could not attach to by reason.
        expr=lambda p: (
            f"jvmdiag_agent_jvm_not_traced{sel(p)} > 0\n"
            f"or\n"
            f"jvmdiag_agent_jvms_untraced{sel(p, AGENT_REASONS)} > 0"
        ),
        summary=lambda p: "JVM not traced{{ with $labels.reason }} ({{ . }}){{ end }}.",
        description=lambda p: (
            f'{{{{ if $labels.jvm }}}}{WHERE} is{{{{ else }}}}{{{{ printf "%.0f" $value }}}} JVM(s) seen by the agent '
            "{{ $labels.instance }}{{ with $labels.pod }} in pod {{ $labels.namespace }}/{{ . }}{{ end }} are{{ end }} "
            "not traced: no probes attached (reason: {{ $labels.reason }}), "
            "so their thread, safepoint and JIT metrics and alerts are missing."
        ),
    ),
    Alert(
        name="JvmDiagPodsMissingInjection",
        key="podsMissingInjection",
        spec_field=False,
        runbook="JvmDiagPodsMissingInjection.md",
        meaning="a pod of a JvmDiagnostics target runs without the injection",
        expr=lambda p: f"jvmdiag_operator_pods_missing_injection{sel(p)} > 0",
        summary=lambda p: (
            '{{ printf "%.0f" $value }} pod(s) of {{ $labels.jvmdiagnostics }} not injected ({{ $labels.reason }}).'
        ),
        description=lambda p: (
            '{{ printf "%.0f" $value }} pod(s) of JvmDiagnostics {{ $labels.namespace }}/{{ $labels.jvmdiagnostics }} '
            "run without the jvm-diagnostics injection (reason: {{ $labels.reason }}) for "
            f"{p.for_}: their JVMs are not traced with the requested collectors. "
            "The resource's status.podsMissingInjection names them."
        ),
    ),
]
