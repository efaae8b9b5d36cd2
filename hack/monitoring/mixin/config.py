"""Every threshold, window, severity and selector of the alert rules, in one place.

The chart's default rules use CONFIG as is. The operator's per-resource templates use the
same rule shapes with placeholders (see TEMPLATE_PARAMS): `${threshold}` etc. are filled
from `spec.alerts` of each JvmDiagnostics by the operator.
"""

CONFIG = {
    # Where runbook_url points (one file per alert under docs/runbooks/).
    "runbookBaseUrl": "https://github.com/jvm-diagnostics/jvm-diagnostics/blob/main/docs/runbooks/",
    # Selector of the per-JVM series the chart's default rules look at ('' = every JVM).
    "jvmSelector": "",
    # The agents' scrape job: the chart's monitors set it from the label
    # jvm.diagnostics.dev/scrape-job (jobLabel), so it holds with any release name.
    "agentSelector": 'job="jvm-diagnostics-agent"',
    # The operator's own series (jvmdiag_operator_*).
    "operatorSelector": "",
    # "Any pause above X in the last <window>" and the rate windows.
    "eventWindow": "5m",
    "rateWindow": "5m",
    "recompileWindow": "30m",
    # Defaults of the chart rules; per-resource rules take these from spec.alerts.
    # threshold: base units (seconds, per second, percent); le: the bucket bound, exactly
    # as the agent prints it (docs/metrics.md); for/severity: Prometheus `for` and label
    # (critical, warning or info: the values kube-prometheus-stack's Alertmanager routes and
    # inhibits by).
    "safepointPause": {"threshold": "0.5", "le": "0.5", "for": "0m", "severity": "critical"},
    "timeToSafepoint": {"threshold": "0.1", "le": "0.1", "for": "5m", "severity": "warning"},
    "threadStartRate": {"threshold": "50", "for": "10m", "severity": "warning"},
    "compilationRate": {"threshold": "100", "for": "15m", "severity": "warning"},
    "recompilationStorm": {"threshold": "10", "for": "15m", "severity": "warning"},
    "codeCacheUsage": {"threshold": "90", "for": "15m", "severity": "warning"},
    "codeCacheFull": {"for": "0m", "severity": "critical"},
    "agentDown": {"for": "5m", "severity": "warning"},
    "jvmNotTraced": {"for": "15m", "severity": "warning"},
    "podsMissingInjection": {"for": "15m", "severity": "warning"},
}

# The bucket bounds every histogram has (docs/metrics.md); a pause threshold must be one.
LE_BOUNDS = ["0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5",
             "1.0", "2.5", "5.0", "10.0", "30.0", "60.0"]

# What the operator substitutes in alert-templates.yaml (agreed with the operator).
TEMPLATE_PARAMS = {
    "selector": 'namespace="${namespace}", jvmdiagnostics="${name}"',
    "threshold": "${threshold}",
    "le": "${thresholdLe}",
    "for": "${for}",
    "severity": "${severity}",
}
