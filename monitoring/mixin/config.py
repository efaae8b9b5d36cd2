"""Every threshold, window, severity and selector of the alert rules, in one place.

The chart's default rules use CONFIG as is. The operator's per-resource templates use the
same rule shapes with placeholders (see TEMPLATE_PARAMS): `${threshold}` etc. are filled
from `spec.alerts` of each JvmDiagnostics by the operator.
"""

import os

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
    # The operator's scrape job (its pods' and Service's jvm.diagnostics.dev/scrape-job).
    "operatorJobSelector": 'job="jvm-diagnostics-operator"',
    # The webhooks' names as the API server reports them (templates/webhook/*.yaml).
    "podWebhook": "pods.jvm.diagnostics.dev",
    "resourceWebhook": "jvmdiagnostics.jvm.diagnostics.dev",
    # kube-state-metrics' label for the pods' jvm.diagnostics.dev/inject label (needs
    # --metric-labels-allowlist=pods=[jvm.diagnostics.dev/inject]).
    "injectLabel": "label_jvm_diagnostics_dev_inject",
    # Scrape timeout assumed where Prometheus has no scrape_timeout_seconds (the chart's
    # monitors' default scrapeTimeout); an agent scrape slower than `threshold` of it warns.
    "defaultScrapeTimeout": "10",
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
    # Seconds blocked per second on one monitor class, summed over the JVM's threads.
    "monitorContention": {"threshold": "0.5", "for": "5m", "severity": "warning"},
    # Threads of one pool parked at once on average (seconds parked per second), while most of
    # that pool's own sampled parks (more than resourceShare of them) wait for a resource rather
    # than for work (workWaitFrames).
    "poolSaturation": {
        "threshold": "8",
        "for": "5m",
        "severity": "warning",
        "resourceShare": "0.5",
    },
    # Where well-known pools wait for their next task: a worker parked there is idle, not
    # saturated (JvmDiagPoolSaturated counts a park there as waiting for work). Exact first
    # application frames of jvmdiag_culprit_stack_samples_total{kind="park"}
    # (package.Class.method, nested classes with $) as the agent names them; alerts/common.py
    # turns the list into one regex. `none` (only JDK frames: the JDK's own executors waiting
    # for a task, but also HikariCP's connection-adder, which parks once per borrow that has to
    # wait) and `other` are neither work nor resource: the share leaves them out.
    "workWaitFrames": [
        # Jetty 12 (measured on 12.1 with examples/workloads' pool-wait): QueuedThreadPool's idle
        # poll (BlockingArrayQueue.poll waits on Jetty's AutoLock condition, the first frame
        # outside the JDK) and ReservedThreadExecutor's reserved threads (12.1; 12.0: reservedWait).
        "org.eclipse.jetty.util.thread.AutoLock$WithCondition.awaitNanos",
        "org.eclipse.jetty.util.thread.ReservedThreadExecutor$ReservedThread.waitForTask",
        "org.eclipse.jetty.util.thread.ReservedThreadExecutor$ReservedThread.reservedWait",
        # Tomcat's executor queue.
        "org.apache.tomcat.util.threads.TaskQueue.poll",
        "org.apache.tomcat.util.threads.TaskQueue.take",
        # Netty's non-I/O event executors (DefaultEventExecutor).
        "io.netty.util.concurrent.SingleThreadEventExecutor.takeTask",
    ],
    "agentDown": {"for": "5m", "severity": "warning"},
    "jvmNotTraced": {"for": "15m", "severity": "warning"},
    "podsMissingInjection": {"for": "15m", "severity": "warning"},
    "operatorDown": {"for": "5m", "severity": "warning"},
    "operatorNotReady": {"for": "15m", "severity": "warning"},
    "agentMissing": {"for": "15m", "severity": "warning"},
    "webhookFailing": {"for": "10m", "severity": "warning"},
    "agentScrapeSlow": {"threshold": "0.8", "for": "15m", "severity": "warning"},
    "agentEventsLost": {"for": "15m", "severity": "warning"},
}


# The bucket bounds every histogram has, exactly as the agent prints them (`le`), read from
# monitoring/histogram-bounds.txt (the one definition); a pause threshold must be one.
def _le_bounds():
    path = os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "histogram-bounds.txt"
    )
    with open(path) as f:
        return [line.split()[0] for line in f if line.strip() and not line.lstrip().startswith("#")]


LE_BOUNDS = _le_bounds()

# What the operator substitutes in alert-templates.yaml (agreed with the operator).
TEMPLATE_PARAMS = {
    "selector": 'namespace="${namespace}", jvmdiagnostics="${name}"',
    "threshold": "${threshold}",
    "le": "${thresholdLe}",
    "for": "${for}",
    "severity": "${severity}",
}
