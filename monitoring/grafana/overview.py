"""JVM diagnostics / Overview: the fleet at a glance, by workload (JvmDiagnostics)."""

from mixin.config import CONFIG

from .panels import CLUSTER, SEL, row, stat, table, target, timeseries
from .panels import dashboard as make

BY = "namespace, jvmdiagnostics"
LEG = "{{namespace}}/{{jvmdiagnostics}}"
RATE = "$__rate_interval"
# The health row reads the same series as the alerts on jvm-diagnostics itself
# (mixin/alerts/selfwatch.py): the scrape jobs and the webhooks' names from CONFIG.
# Series without workload labels (the agents', the operator's, the API server's,
# kube-state-metrics') are restricted to the cluster only.
OP_UP = f"up{{{CONFIG['operatorJobSelector']}, {CLUSTER}}}"
AGENT_UP = f"up{{{CONFIG['agentSelector']}, {CLUSTER}}}"
WEBHOOKS = f'name=~"{CONFIG["podWebhook"]}|{CONFIG["resourceWebhook"]}", {CLUSTER}'


def g(x, y, w, h=8):
    return {"x": x, "y": y, "w": w, "h": h}


def dashboard():
    p = [
        stat(
            "JVMs traced",
            "JVMs the agents attach probes to, in the selection.",
            [
                target(
                    f'count(jvmdiag_jvm_info{{{SEL}, probe_mode!="none"}}) or vector(0)', "traced"
                )
            ],
            "short",
            g(0, 0, 6, 4),
        ),
        stat(
            "JVMs not traced",
            "JVMs seen in injected pods without probes (see runbook JvmDiagJvmNotTraced).",
            [target(f"count(jvmdiag_agent_jvm_not_traced{{{SEL}}}) or vector(0)", "not traced")],
            "short",
            g(6, 0, 6, 4),
            thresholds=[(1, "orange")],
        ),
        stat(
            "Longest safepoint pause (p99, range)",
            "The worst workload's 99th percentile pause over the dashboard's time range.",
            [
                target(
                    f"max(histogram_quantile(0.99, sum by ({BY}, le) (increase(jvmdiag_safepoint_pause_seconds_bucket{{{SEL}}}[$__range]))))",
                    "p99",
                    instant=True,
                )
            ],
            "s",
            g(12, 0, 6, 4),
            thresholds=[(0.1, "orange"), (0.5, "red")],
        ),
        stat(
            "Thread starts (range)",
            "Platform threads started in the selection over the time range.",
            [
                target(
                    f"sum(increase(jvmdiag_thread_starts_total{{{SEL}}}[$__range]))",
                    "threads",
                    instant=True,
                )
            ],
            "short",
            g(18, 0, 6, 4),
        ),
        row("Safepoints", 4),
        timeseries(
            "Safepoint pause p99 by workload",
            "99th percentile of safepoint pauses (all VM operations) per workload; drill down in the Workload dashboard.",
            [
                target(
                    f"histogram_quantile(0.99, sum by ({BY}, le) (rate(jvmdiag_safepoint_pause_seconds_bucket{{{SEL}}}[{RATE}])))",
                    LEG,
                )
            ],
            "s",
            g(0, 5, 12),
        ),
        timeseries(
            "Time to safepoint p99 by workload",
            "99th percentile of the time threads needed to reach a safepoint (long counted loops, page faults, CPU throttling).",
            [
                target(
                    f"histogram_quantile(0.99, sum by ({BY}, le) (rate(jvmdiag_safepoint_sync_seconds_bucket{{{SEL}}}[{RATE}])))",
                    LEG,
                )
            ],
            "s",
            g(12, 5, 12),
        ),
        timeseries(
            "Time stopped at safepoints by workload",
            "Share of wall-clock time the workload's JVMs spend stopped at safepoints (average per JVM).",
            [
                target(
                    f"sum by ({BY}) (rate(jvmdiag_safepoint_pause_seconds_sum{{{SEL}}}[{RATE}]))\n/ count by ({BY}) (jvmdiag_jvm_info{{{SEL}}})",
                    LEG,
                )
            ],
            "percentunit",
            g(0, 13, 12),
        ),
        table(
            "Longest pauses in the range by workload and VM operation",
            "Upper bound of the histogram bucket holding the longest pause over the time range (exact to the bucket: the alert thresholds are bucket bounds).",
            [
                target(
                    f"sort_desc(histogram_quantile(1, sum by ({BY}, vm_operation, le) (increase(jvmdiag_safepoint_pause_seconds_bucket{{{SEL}}}[$__range]))) > 0)",
                    "",
                    instant=True,
                    fmt="table",
                )
            ],
            "s",
            g(12, 13, 12),
            transformations=[
                {
                    "id": "organize",
                    "options": {
                        "excludeByName": {"Time": True},
                        "renameByName": {"Value": "longest pause ≤"},
                    },
                }
            ],
        ),
        row("Threads", 21),
        timeseries(
            "Thread starts per second: top 10 workload × thread name",
            "Platform threads started per second by (digit-folded) thread name; a storm names its culprit here.",
            [
                target(
                    f"topk(10, sum by ({BY}, thread_name) (rate(jvmdiag_thread_starts_total{{{SEL}}}[{RATE}])))",
                    "{{namespace}}/{{jvmdiagnostics}} {{thread_name}}",
                )
            ],
            "suffix: threads/s",
            g(0, 22, 12),
        ),
        timeseries(
            "Live threads by workload",
            "Platform threads alive, summed over the workload's JVMs.",
            [target(f"sum by ({BY}) (jvmdiag_threads_live{{{SEL}}})", LEG)],
            "short",
            g(12, 22, 12),
        ),
        row("JIT and code cache", 30),
        timeseries(
            "Code cache used (% of max), fullest JVM per workload",
            "When the code cache is full the JIT compiler stops; alert JvmDiagCodeCacheNearlyFull.",
            [
                target(
                    f"max by ({BY}) (100 * sum without (code_heap) (jvmdiag_code_cache_used_bytes{{{SEL}}})\n"
                    f"  / sum without (code_heap) (jvmdiag_code_cache_max_bytes{{{SEL}}}))",
                    LEG,
                )
            ],
            "percent",
            g(0, 31, 12),
        ),
        timeseries(
            "Compilations per second by workload",
            "JIT compilations (all compilers) per second.",
            [target(f"sum by ({BY}) (rate(jvmdiag_compilations_total{{{SEL}}}[{RATE}]))", LEG)],
            "suffix: compilations/s",
            g(12, 31, 12),
        ),
        row("Locks", 39),
        timeseries(
            "Top contended monitor classes: workload × class",
            "Seconds per second threads spent blocked on contended monitors, top 10 workload × monitor class (summed "
            "over the workload's threads and JVMs). Needs collectors.monitors (-XX:+DTraceMonitorProbes).",
            [
                target(
                    f"topk(10, sum by ({BY}, monitor_class) (rate(jvmdiag_monitor_blocked_seconds_sum{{{SEL}}}[{RATE}])))",
                    "{{namespace}}/{{jvmdiagnostics}} {{monitor_class}}",
                )
            ],
            "suffix: s/s",
            g(0, 40, 12),
        ),
        table(
            "Most contended monitor classes in the range",
            "Seconds blocked on each monitor class over the time range, top 10 workload × class: one class across many "
            "workloads points to a shared library (a SecureRandom, a logging appender).",
            [
                target(
                    f"sort_desc(topk(10, sum by ({BY}, monitor_class) (increase(jvmdiag_monitor_blocked_seconds_sum{{{SEL}}}[$__range]))))",
                    "",
                    instant=True,
                    fmt="table",
                )
            ],
            "s",
            g(12, 40, 12),
            transformations=[
                {
                    "id": "organize",
                    "options": {
                        "excludeByName": {"Time": True},
                        "renameByName": {"Value": "blocked"},
                    },
                }
            ],
        ),
        # The agents' own health: their series carry no workload labels (one per agent).
        row("Agents", 48),
        timeseries(
            "JVMs traced per agent",
            "JVMs each node agent traces now (jvmdiag_agent_jvms_attached).",
            [
                target(
                    f"sum by (instance) (jvmdiag_agent_jvms_attached{{{CLUSTER}}})", "{{instance}}"
                )
            ],
            "short",
            g(0, 49, 8),
        ),
        timeseries(
            "Probe events per second by agent and collector",
            "Probe hits per second; a collector stuck at zero while its JVMs run is not attached.",
            [
                target(
                    f"sum by (instance, collector) (rate(jvmdiag_agent_probe_events_total{{{CLUSTER}}}[{RATE}]))",
                    "{{instance}} {{collector}}",
                )
            ],
            "suffix: events/s",
            g(8, 49, 8),
        ),
        timeseries(
            "Lost and folded events per second by agent",
            'Events not counted because a kernel map was full (map errors), events folded into "other" (name budget), '
            "parks, enters or compilations not timed because their JVM held its share of an in-flight table "
            "(jvmdiag_agent_jvm_inflight_lost_total names the JVM), and methods dropped from the compilation "
            "staging table, whose promotion to a named counter comes later (jvmdiag_agent_jvm_map_evictions_total "
            "names the JVM).",
            [
                target(
                    f"sum by (instance) (rate(jvmdiag_agent_map_errors_total{{{CLUSTER}}}[{RATE}]))",
                    "map errors {{instance}}",
                ),
                target(
                    f"sum by (instance) (rate(jvmdiag_agent_names_overflow_total{{{CLUSTER}}}[{RATE}]))",
                    "folded into other {{instance}}",
                    ref="B",
                ),
                target(
                    f"sum by (instance) (rate(jvmdiag_agent_inflight_lost_total{{{CLUSTER}}}[{RATE}]))",
                    "not timed {{instance}}",
                    ref="C",
                ),
                target(
                    f"sum by (instance) (rate(jvmdiag_agent_map_evictions_total{{{CLUSTER}}}[{RATE}]))",
                    "staging evictions {{instance}}",
                    ref="D",
                ),
            ],
            "suffix: events/s",
            g(16, 49, 8),
        ),
        row("Health of jvm-diagnostics", 57),
        stat(
            "Operator replicas up",
            "Operator pods Prometheus scrapes up. 0: the pod webhook fails open and pods start "
            "without the injection (alert JvmDiagOperatorDown).",
            [target(f"sum({OP_UP}) or vector(0)", "up")],
            "short",
            g(0, 58, 6, 4),
            thresholds=[(1, "green")],
            base="red",
        ),
        stat(
            "Operator replicas Ready",
            "Operator pods scraped up and Ready, the ones the webhook Service sends admissions to "
            "(kube-state-metrics' kube_pod_status_ready; alert JvmDiagOperatorNotReady).",
            [
                target(
                    f'count(kube_pod_status_ready{{condition="true", {CLUSTER}}} == 1\n'
                    f"  and on (namespace, pod) {OP_UP} == 1)",
                    "ready",
                )
            ],
            "short",
            g(0, 62, 6, 4),
            thresholds=[(1, "green")],
            base="red",
        ),
        timeseries(
            "Agents up per node",
            "Each node agent's scrape (1 up, 0 down: JvmDiagAgentDown), named by node where "
            "kube-state-metrics' kube_pod_info says where the agent pod runs.",
            [
                target(
                    f"{AGENT_UP} * on (namespace, pod) group_left (node) kube_pod_info{{{CLUSTER}}}\n"
                    f"or on (namespace, pod) {AGENT_UP}",
                    "{{node}} {{instance}}",
                )
            ],
            "short",
            g(6, 58, 6),
        ),
        timeseries(
            "Webhook calls by the API server",
            "Admission calls the API server makes to the pod webhook and the JvmDiagnostics "
            "webhook (apiserver_admission_webhook_request_total), the pod webhook's calls that "
            "failed and were let through without the injection (fail open), and JvmDiagnostics "
            "refused because the webhook could not be called (alert JvmDiagWebhookFailing).",
            [
                target(
                    f"sum by (name, rejected) (rate(apiserver_admission_webhook_request_total{{{WEBHOOKS}}}[{RATE}]))",
                    "{{name}} rejected={{rejected}}",
                ),
                target(
                    f"sum by (name) (rate(apiserver_admission_webhook_fail_open_count{{{WEBHOOKS}}}[{RATE}]))",
                    "{{name}} failed open",
                    ref="B",
                ),
                target(
                    f"sum by (name, error_type) (rate(apiserver_admission_webhook_rejection_count"
                    f'{{{WEBHOOKS}, error_type!="no_error"}}[{RATE}]))',
                    "{{name}} refused: {{error_type}}",
                    ref="C",
                ),
            ],
            "reqps",
            g(12, 58, 12),
        ),
        timeseries(
            "Pod admissions answered by the operator",
            "The operator's own count of the pod admissions it answered, by result (mutated, "
            "skipped, error: allowed unchanged); compare with the API server's calls above.",
            [
                target(
                    f"sum by (result) (rate(jvmdiag_operator_admissions_total{{{CLUSTER}}}[{RATE}]))",
                    "{{result}}",
                )
            ],
            "reqps",
            g(0, 66, 8),
        ),
        timeseries(
            "JVMs the agents do not trace, by reason",
            "JVMs seen but not traced, per agent and reason (slots_exhausted, namespace_share: "
            "the agent refused them; no_access, ...); JVMs nobody asked to trace (not_selected) "
            "left out. Alert JvmDiagJvmNotTraced.",
            [
                target(
                    f'sum by (instance, reason) (jvmdiag_agent_jvms_untraced{{reason!="not_selected", {CLUSTER}}})',
                    "{{instance}} {{reason}}",
                )
            ],
            "short",
            g(8, 66, 8),
        ),
        timeseries(
            "Events lost per second by agent and collector",
            "What JvmDiagAgentEventsLost reads: events not counted because a kernel map update "
            "failed, and begins not timed because a whole in-flight table was full (not a JVM's "
            "share).",
            [
                target(
                    f"sum by (instance, collector) (rate(jvmdiag_agent_map_errors_total{{{CLUSTER}}}[{RATE}]))",
                    "map errors {{instance}} {{collector}}",
                ),
                target(
                    "sum by (instance, collector, map) (rate(jvmdiag_agent_inflight_lost_total"
                    f'{{reason="full", {CLUSTER}}}[{RATE}]))',
                    "table full {{instance}} {{map}}",
                    ref="B",
                ),
            ],
            "suffix: events/s",
            g(16, 66, 8),
        ),
        table(
            "Agent versions running",
            "Node agents by the version, git commit and rustc that built them "
            "(jvmdiag_agent_build_info): more than one row while a rollout is under way, or when "
            "some nodes kept an old agent.",
            [
                target(
                    f"count by (version, revision, rustversion) (jvmdiag_agent_build_info{{{CLUSTER}}})",
                    "",
                    instant=True,
                    fmt="table",
                )
            ],
            "short",
            g(0, 74, 12, 6),
            transformations=[
                {
                    "id": "organize",
                    "options": {
                        "excludeByName": {"Time": True},
                        "renameByName": {"Value": "agents"},
                    },
                }
            ],
        ),
        table(
            "Operator versions running",
            "Operator replicas by the version and git commit they were built from and the Java "
            "runtime they run on (jvmdiag_operator_build_info).",
            [
                target(
                    f"count by (version, revision, javaversion) (jvmdiag_operator_build_info{{{CLUSTER}}})",
                    "",
                    instant=True,
                    fmt="table",
                )
            ],
            "short",
            g(12, 74, 12, 6),
            transformations=[
                {
                    "id": "organize",
                    "options": {
                        "excludeByName": {"Time": True},
                        "renameByName": {"Value": "replicas"},
                    },
                }
            ],
        ),
    ]
    links = [
        {
            "title": "Workload drill-down",
            "type": "dashboards",
            "tags": ["jvm-diagnostics"],
            "asDropdown": False,
            "icon": "dashboard",
            "includeVars": True,
            "keepTime": True,
            "targetBlank": False,
            "tooltip": "",
            "url": "",
        }
    ]
    return make(
        "jvm-diagnostics-overview",
        "JVM diagnostics / Overview",
        "Fleet view of jvm-diagnostics: worst safepoint pauses and time to safepoint, thread start rates, code cache and most contended monitor classes by workload.",
        p,
        with_pod=False,
        links=links,
    )
