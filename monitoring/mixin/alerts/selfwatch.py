"""jvm-diagnostics watching itself: the operator and the agents scraped, the API server's calls
to the webhooks, the agents' scrape time and their lost events.

The pod webhook fails open and JvmDiagPodsMissingInjection is computed by the operator itself:
with the operator gone nothing else would say so. These alerts read what Prometheus, the API
server and kube-state-metrics have about it (docs/alerts.md, "Metrics these alerts need")."""

from ..config import CONFIG
from .common import Alert, sel

# In-flight begins lost because the whole table was full (not: the JVM held its share).
TABLE_FULL = 'reason="full"'

# p.selector: the operator's scrape job for the operator alerts, the agents' for the agent
# alerts that read Prometheus' own series (rules.SELECTOR_OF).

ALERTS = [
    Alert(
        name="JvmDiagOperatorDown",
        key="operatorDown",
        spec_field=False,
        runbook="JvmDiagOperatorDown.md",
        meaning="no operator replica can be scraped: the pod webhook fails open, "
        "pods start without the injection and nothing reports them",
        # Every replica down, or none scraped at all (absent(): no target left).
        expr=lambda p: f"max by (job) (up{sel(p)}) == 0\nor\nabsent(up{sel(p)})",
        summary=lambda p: "The jvm-diagnostics operator is down.",
        description=lambda p: (
            "No jvm-diagnostics operator replica has been scraped up (job {{ $labels.job }}) "
            f"for {p.for_}: the pod webhook fails open, so new pods of JvmDiagnostics targets start "
            "without the injection, JvmDiagPodsMissingInjection (computed by the operator) cannot "
            "fire, and JvmDiagnostics cannot be created or changed (their webhook fails closed)."
        ),
    ),
    Alert(
        name="JvmDiagOperatorNotReady",
        key="operatorNotReady",
        spec_field=False,
        runbook="JvmDiagOperatorNotReady.md",
        meaning="an operator replica answers scrapes but is not Ready: the webhook Service "
        "skips it (kube-state-metrics)",
        expr=lambda p: (
            f"up{sel(p)} == 1\nand on (namespace, pod)\n"
            'kube_pod_status_ready{condition="false"} == 1'
        ),
        summary=lambda p: "jvm-diagnostics operator pod {{ $labels.pod }} is not ready.",
        description=lambda p: (
            "The jvm-diagnostics operator pod {{ $labels.namespace }}/{{ $labels.pod }} "
            f"({{{{ $labels.instance }}}}) runs but has not been Ready for {p.for_} (its /healthz "
            "is red, e.g. after a lost leader election): the webhook Service leaves it out, and "
            "with no Ready replica left pods start without the injection."
        ),
    ),
    Alert(
        name="JvmDiagAgentMissing",
        key="agentMissing",
        spec_field=False,
        runbook="JvmDiagAgentMissing.md",
        meaning="a node runs pods labelled for injection but no agent is scraped there "
        "(kube-state-metrics, with the inject label allowed)",
        # Nodes with running pods labelled jvm.diagnostics.dev/inject, less the nodes of the
        # agents' scrape targets (any `up`: an agent scraped but down is JvmDiagAgentDown).
        expr=lambda p: (
            "count by (node) (\n"
            '  kube_pod_info{node!=""}\n'
            '  * on (namespace, pod) group_left () (kube_pod_status_phase{phase="Running"} == 1)\n'
            f'  * on (namespace, pod) group_left () kube_pod_labels{{{CONFIG["injectLabel"]}!=""}}\n'
            ")\nunless on (node)\n"
            f"(kube_pod_info * on (namespace, pod) group_left () up{sel(p)})"
        ),
        summary=lambda p: "No jvm-diagnostics agent on node {{ $labels.node }}.",
        description=lambda p: (
            'Node {{ $labels.node }} runs {{ printf "%.0f" $value }} pod(s) labelled for '
            "jvm-diagnostics injection, but no jvm-diagnostics agent has been scraped there for "
            f"{p.for_}: their JVMs are not traced and none of their alerts can fire "
            "(agent pod not scheduled there: nodeSelector, tolerations, or Pending)."
        ),
    ),
    Alert(
        name="JvmDiagWebhookFailing",
        key="webhookFailing",
        spec_field=False,
        runbook="JvmDiagWebhookFailing.md",
        meaning="the API server cannot call a jvm-diagnostics webhook: pods admitted "
        "uninjected (fail open) or JvmDiagnostics refused",
        expr=lambda p: (
            "sum by (name) (rate(apiserver_admission_webhook_fail_open_count"
            f'{{name="{CONFIG["podWebhook"]}"}}[{p.windows["rateWindow"]}])) > 0\nor\n'
            "sum by (name, error_type) (rate(apiserver_admission_webhook_rejection_count"
            f'{{name="{CONFIG["resourceWebhook"]}", error_type!="no_error"}}'
            f"[{p.windows['rateWindow']}])) > 0"
        ),
        summary=lambda p: "The API server cannot call webhook {{ $labels.name }}.",
        description=lambda p: (
            "The API server's calls to the jvm-diagnostics webhook {{ $labels.name }} fail "
            f"({{{{ $value | humanize }}}}/s, averaged over {p.windows['rateWindow']}, for {p.for_}): "
            f'{{{{ if eq $labels.name "{CONFIG["podWebhook"]}" }}}}pods are admitted without '
            "the injection (failurePolicy Ignore: fail open){{ else }}JvmDiagnostics creates "
            "and updates are refused ({{ $labels.error_type }}){{ end }}."
        ),
    ),
    Alert(
        name="JvmDiagAgentScrapeSlow",
        key="agentScrapeSlow",
        spec_field=False,
        runbook="JvmDiagAgentScrapeSlow.md",
        meaning="an agent's scrapes take most of the scrape timeout (before they time out "
        "and JvmDiagAgentDown fires)",
        # scrape_timeout_seconds exists with Prometheus' extra-scrape-metrics feature; without
        # it the chart monitors' default timeout is assumed.
        # Both sides carry the same target labels: compared one to one, keeping them.
        expr=lambda p: (
            f"avg_over_time(scrape_duration_seconds{sel(p)}[{p.windows['rateWindow']}])\n"
            f"  > {p.threshold} * scrape_timeout_seconds{sel(p)}\nor\n"
            f"(\n  avg_over_time(scrape_duration_seconds{sel(p)}[{p.windows['rateWindow']}])\n"
            f"    > {p.threshold} * {CONFIG['defaultScrapeTimeout']}\n"
            f"  unless on (job, instance) scrape_timeout_seconds{sel(p)}\n)"
        ),
        summary=lambda p: "Scrapes of jvm-diagnostics agent {{ $labels.instance }} are slow.",
        description=lambda p: (
            "Scrapes of the jvm-diagnostics agent {{ $labels.instance }}"
            "{{ with $labels.pod }} (pod {{ $labels.namespace }}/{{ . }}){{ end }} take "
            "{{ $value | humanizeDuration }} on average, more than "
            f"{float(p.threshold):.0%} of the scrape timeout, for {p.for_}: once they time out "
            "the node's JVMs are not watched (JvmDiagAgentDown)."
        ),
    ),
    Alert(
        name="JvmDiagAgentEventsLost",
        key="agentEventsLost",
        spec_field=False,
        runbook="JvmDiagAgentEventsLost.md",
        meaning="an agent keeps losing probe events: kernel map updates fail, or an in-flight "
        "table is full",
        # jvm_share (one JVM holding its share of an in-flight table) is fairness working, not
        # an agent out of room: left to the dashboard.
        expr=lambda p: (
            f"rate(jvmdiag_agent_map_errors_total{sel(p)}[{p.windows['rateWindow']}]) > 0\nor\n"
            f"rate(jvmdiag_agent_inflight_lost_total{sel(p, TABLE_FULL)}"
            f"[{p.windows['rateWindow']}]) > 0"
        ),
        summary=lambda p: (
            "jvm-diagnostics agent {{ $labels.instance }} loses {{ $labels.collector }} events."
        ),
        description=lambda p: (
            "The jvm-diagnostics agent {{ $labels.instance }} has been losing "
            "{{ $labels.collector }} events for "
            f"{p.for_} ({{{{ $value | humanize }}}}/s): "
            "{{ with $labels.map }}its in-flight table {{ . }} is full, so their time or starter "
            "is not measured{{ else }}kernel map updates fail (a full map), so those events are "
            "not counted{{ end }}; the node's metrics undercount."
        ),
    ),
]
