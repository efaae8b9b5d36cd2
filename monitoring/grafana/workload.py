"""JVM diagnostics / Workload: one workload (JvmDiagnostics) and its pods, drilled down."""

from mixin.alerts.common import frames_regex
from mixin.alerts.locks import NOT_RESOURCE, UNNAMED
from mixin.config import CONFIG

from .panels import SEL, heatmap, row, table, target, timeseries
from .panels import dashboard as make

RATE = "$__rate_interval"
# Park samples of the selected pods: at frames that wait for a resource, and all that name code.
PARKS = f'jvmdiag_culprit_stack_samples_total{{{SEL}, kind="park"'
PARKS_RESOURCE = f'{PARKS}, frame!~"{NOT_RESOURCE}"}}'
PARKS_KNOWN = f'{PARKS}, frame!~"{UNNAMED}"}}'


def g(x, y, w, h=8):
    return {"x": x, "y": y, "w": w, "h": h}


def ranked(title, desc, expr, value, grid, columns=()):
    """A table of one instant query: a row per series, its labels as columns (COLUMNS first, in
    that order), its value named VALUE."""
    organize = {"excludeByName": {"Time": True}}
    if columns:
        organize["indexByName"] = {c: i for i, c in enumerate([*columns, "Value"])}
    organize["renameByName"] = {"Value": value}
    return table(
        title,
        desc,
        [target(expr, "", instant=True, fmt="table")],
        "short",
        grid,
        transformations=[{"id": "organize", "options": organize}],
    )


def q(expr_by, metric):
    return (
        f"histogram_quantile(0.99, sum by ({expr_by}, le) (rate({metric}_bucket{{{SEL}}}[{RATE}])))"
    )


def dashboard():
    p = [
        row("Safepoints", 0),
        heatmap(
            "Safepoint pauses (heat map)",
            "How many safepoint pauses fell in each duration bucket; the top rows are the long non-GC pauses.",
            [
                target(
                    f"sum by (le) (increase(jvmdiag_safepoint_pause_seconds_bucket{{{SEL}}}[{RATE}]))",
                    "{{le}}",
                    fmt="heatmap",
                )
            ],
            "s",
            g(0, 1, 12),
        ),
        timeseries(
            "Safepoint pause p99 by VM operation",
            "99th percentile pause per HotSpot VM operation.",
            [target(q("vm_operation", "jvmdiag_safepoint_pause_seconds"), "{{vm_operation}}")],
            "s",
            g(12, 1, 12),
        ),
        timeseries(
            "Longest safepoint pause by VM operation (bucket upper bound)",
            "Upper bound of the bucket holding the longest pause in each interval: what the JvmDiagSafepointPauseHigh alert sees.",
            [
                target(
                    f"histogram_quantile(1, sum by (vm_operation, le) (increase(jvmdiag_safepoint_pause_seconds_bucket{{{SEL}}}[{RATE}]))) > 0",
                    "{{vm_operation}}",
                )
            ],
            "s",
            g(0, 9, 12),
        ),
        timeseries(
            "Time to safepoint p99 by VM operation",
            "How long threads took to reach the safepoint before each VM operation (long counted loops, page faults).",
            [target(q("vm_operation", "jvmdiag_safepoint_sync_seconds"), "{{vm_operation}}")],
            "s",
            g(12, 9, 12),
        ),
        timeseries(
            "Safepoints per second by VM operation",
            "Safepoint frequency per VM operation.",
            [
                target(
                    f"sum by (vm_operation) (rate(jvmdiag_safepoint_pause_seconds_count{{{SEL}}}[{RATE}]))",
                    "{{vm_operation}}",
                )
            ],
            "suffix: /s",
            g(0, 17, 12),
            stack=True,
        ),
        timeseries(
            "Time in VM operations (share of wall time)",
            "Seconds per second spent in each VM operation, at a safepoint or not (handshakes, concurrent operations).",
            [
                target(
                    f"sum by (vm_operation, at_safepoint) (rate(jvmdiag_vm_operation_seconds_sum{{{SEL}}}[{RATE}]))",
                    "{{vm_operation}} (at_safepoint={{at_safepoint}})",
                )
            ],
            "percentunit",
            g(12, 17, 12),
        ),
        ranked(
            "Who requested the VM operations in the range",
            "VM operations requested over the time range by operation and requesting thread (its native name, first 15 "
            "characters, digits folded): RedefineClasses from a Java agent's thread, Attach Listener for jcmd/jstack, an "
            "application thread calling System.gc(). What JvmDiagSafepointPauseHigh names. Needs USDT hotspot:vmops__request.",
            f"topk(20, sum by (vm_operation, requester) (increase(jvmdiag_vm_operation_requests_total{{{SEL}}}[$__range]))) > 0",
            "requests",
            g(0, 25, 24),
        ),
        row("Threads", 33),
        timeseries(
            "Thread starts by name",
            'Platform threads started per second by digit-folded name (top K per JVM, rest "other").',
            [
                target(
                    f"sum by (thread_name) (rate(jvmdiag_thread_starts_total{{{SEL}}}[{RATE}]))",
                    "{{thread_name}}",
                )
            ],
            "suffix: threads/s",
            g(0, 34, 12),
            stack=True,
        ),
        timeseries(
            "Live threads by pod",
            "Platform threads alive per JVM.",
            [target(f"sum by (pod, jvm) (jvmdiag_threads_live{{{SEL}}})", "{{pod}} {{jvm}}")],
            "short",
            g(12, 34, 12),
        ),
        ranked(
            "Who started the threads (on-demand starter probe)",
            "Threads started by thread name and starting thread (native name, first 15 characters, digits folded), counted "
            "only while the agent's starter probe was attached: it attaches to a JVM for a bounded window when its thread "
            "start rate passes the threshold (the threadStartRate alert's). What JvmDiagThreadStartRateHigh names.",
            f"topk(20, sum by (thread_name, starter) (jvmdiag_thread_starts_by_starter_total{{{SEL}}}))",
            "threads started while probed",
            g(0, 42, 24),
        ),
        row("JIT compilation and code cache", 50),
        timeseries(
            "Compilations per second by compiler",
            "JIT compilations per second, per compiler (c1, c2, …).",
            [
                target(
                    f"sum by (compiler) (rate(jvmdiag_compilations_total{{{SEL}}}[{RATE}]))",
                    "{{compiler}}",
                )
            ],
            "suffix: compilations/s",
            g(0, 51, 12),
            stack=True,
        ),
        timeseries(
            "Compilation time p99 by compiler",
            "99th percentile of the time one compilation takes.",
            [target(q("compiler", "jvmdiag_compilation_seconds"), "{{compiler}}")],
            "s",
            g(12, 51, 12),
        ),
        ranked(
            "Most-compiled methods in the range",
            'Methods compiled most often over the time range (top K per JVM, without "other"); one method compiled again and again is a recompilation storm.',
            f'topk(20, sum by (method) (increase(jvmdiag_method_compilations_total{{{SEL}, method!="other"}}[$__range])))',
            "compilations",
            g(0, 59, 12),
        ),
        timeseries(
            "Code cache used by code heap, and max",
            "Code cache bytes in use per code heap (non-nmethods, profiled, "
            "non-profiled) and the whole cache's maximum (ReservedCodeCacheSize).",
            [
                target(
                    f"sum by (pod, jvm, code_heap) (jvmdiag_code_cache_used_bytes{{{SEL}}})",
                    "used {{code_heap}} {{pod}} {{jvm}}",
                ),
                target(
                    f"sum by (pod, jvm) (jvmdiag_code_cache_max_bytes{{{SEL}}})",
                    "max {{pod}} {{jvm}}",
                    ref="B",
                ),
            ],
            "bytes",
            g(12, 59, 12),
        ),
        timeseries(
            "Code cache full events",
            "Times the code cache filled up (the compiler may then be disabled).",
            [
                target(
                    f"sum by (pod, jvm) (increase(jvmdiag_code_cache_full_total{{{SEL}}}[{RATE}]))",
                    "{{pod}} {{jvm}}",
                )
            ],
            "short",
            g(0, 67, 12),
            bars=True,
        ),
        table(
            "JVMs and probe mode",
            "Each JVM of the workload: Java version, vendor, and how the agent traces it (usdt, uprobe, hsperfdata, sidecar, none).",
            [
                target(
                    f"max by (namespace, pod, container, jvm, java_version, vendor, probe_mode) (jvmdiag_jvm_info{{{SEL}}})",
                    "",
                    instant=True,
                    fmt="table",
                )
            ],
            "none",
            g(12, 67, 12),
            transformations=[
                {"id": "organize", "options": {"excludeByName": {"Time": True, "Value": True}}}
            ],
        ),
        # Locks and parking: the monitors collector needs -XX:+DTraceMonitorProbes (the webhook adds it
        # with collectors.monitors), also for the object_wait series of parked time; parking needs no flag.
        row("Locks and parking", 75),
        timeseries(
            "Blocked time by monitor class",
            "Seconds per second the workload's threads spent blocked entering contended monitors (synchronized), "
            "by the locked object's class, summed over threads: 2 means two threads always waiting. "
            "What JvmDiagMonitorContentionHigh alerts on (per JVM). Needs collectors.monitors (-XX:+DTraceMonitorProbes).",
            [
                target(
                    f"sum by (monitor_class) (rate(jvmdiag_monitor_blocked_seconds_sum{{{SEL}}}[{RATE}]))",
                    "{{monitor_class}}",
                )
            ],
            "suffix: s/s",
            g(0, 76, 12),
            stack=True,
        ),
        timeseries(
            "Contended enters by monitor class",
            "Contended monitor enters per second by the locked object's class: many short waits (a hot lock) or, "
            "with high blocked time, few long ones (a lock held across slow work). Needs collectors.monitors.",
            [
                target(
                    f"sum by (monitor_class) (rate(jvmdiag_monitor_contended_total{{{SEL}}}[{RATE}]))",
                    "{{monitor_class}}",
                )
            ],
            "suffix: /s",
            g(12, 76, 12),
            stack=True,
        ),
        ranked(
            "Threads blocked most on contended monitors",
            "Contended monitor enters per second over the time range by the waiting thread's name (native name, first "
            "15 characters, digits folded) and the locked object's class: every handshake-N thread blocked on one "
            "java.security.SecureRandom shows here as one row. The holder is in a thread dump (runbook "
            "JvmDiagMonitorContentionHigh). Per JVM at most maxThreadNames (class, thread) pairs, the rest "
            'thread_name "other". Virtual threads show as their carriers (ForkJoinPool-N-). Needs collectors.monitors.',
            f"topk(20, sum by (thread_name, monitor_class) (rate(jvmdiag_monitor_contended_total{{{SEL}}}[$__range]))) > 0",
            "contended enters/s",
            g(0, 84, 24),
            columns=("thread_name", "monitor_class"),
        ),
        timeseries(
            "Parked time by thread name (pool)",
            "Seconds per second threads spent waiting, by folded native thread name and how they waited, summed over "
            "threads: park is LockSupport.park (locks, queues, pools, futures), object_wait is Object.wait until the "
            "monitor is owned again (synchronized pools and queues; by the waited-on class in monitor_class, needs "
            "collectors.monitors). A pool of 200 threads waiting for 8 connections shows near 200.",
            [
                target(
                    f"sum by (thread_name, via) (rate(jvmdiag_thread_parked_seconds_total{{{SEL}}}[{RATE}]))",
                    "{{thread_name}} ({{via}})",
                )
            ],
            "suffix: s/s",
            g(0, 92, 12),
            stack=True,
        ),
        timeseries(
            "Parks per second by thread name (pool)",
            "Park and Object.wait calls per second by folded native thread name and how they waited; with parked time, "
            "the average wait is time / calls.",
            [
                target(
                    f"sum by (thread_name, via) (rate(jvmdiag_thread_parks_total{{{SEL}}}[{RATE}]))",
                    "{{thread_name}} ({{via}})",
                )
            ],
            "suffix: parks/s",
            g(12, 92, 12),
            stack=True,
        ),
        # Pool saturation (JvmDiagPoolSaturated): a pool's threads parked, and whether the pool's
        # parks wait for work (its idle workers) or for a resource (a connection pool).
        row("Pool saturation", 100),
        timeseries(
            "Threads parked by pool",
            "Threads of each pool (folded native thread name) parked in LockSupport.park at once on average, by pod: "
            "seconds parked per second. What JvmDiagPoolSaturated alerts on (per JVM, default threshold "
            f"{CONFIG['poolSaturation']['threshold']}) when most of that pool's parks also wait for a resource (next "
            "panel). Idle workers count too: a Jetty pool of 200 idle threads shows 200 here; the next panels tell "
            'idle from waiting. thread_name "other" (past maxThreadNames) is left out.',
            [
                target(
                    "sum by (pod, thread_name) (rate(jvmdiag_thread_parked_seconds_total"
                    f'{{{SEL}, via="park", thread_name!="other"}}[{RATE}]))',
                    "{{pod}} {{thread_name}}",
                )
            ],
            "suffix: threads",
            g(0, 101, 12),
        ),
        timeseries(
            "Park samples at resource waits",
            "Share of each pool's sampled parks by pod (culprit stacks, kind park, by the parking thread's folded name "
            "and the first application frame) at frames "
            "other than where well-known pools wait for their next task (workWaitFrames in monitoring/mixin/config.py: "
            "Jetty's, Tomcat's and Netty's idle waits); frames none (only JDK frames, such as ThreadPoolExecutor.getTask) "
            "and other (past the name budget) name no code and are left out. Above "
            f"{float(CONFIG['poolSaturation']['resourceShare']) * 100:g} % with a pool over the threshold: "
            "JvmDiagPoolSaturated. Samples are counted per park, not per second parked. "
            "No data: no park stacks (stacks off).",
            [
                target(
                    f"100 * (sum by (pod, thread_name) (rate({PARKS_RESOURCE}[{RATE}])) or 0 * sum by (pod, thread_name) "
                    f"(rate({PARKS_KNOWN}[{RATE}])))\n/ sum by (pod, thread_name) (rate({PARKS_KNOWN}[{RATE}]))",
                    "{{pod}} {{thread_name}}",
                )
            ],
            "percent",
            g(12, 101, 12),
        ),
        ranked(
            "Where parked threads wait: top park frames",
            "Park samples over the time range by pool (the parking thread's folded name) and the stack's first "
            "application frame (top 15), marked wait: work "
            "(a pool's wait for its next task, workWaitFrames: not saturation), resource (anything else: a "
            "connection pool such as com.zaxxer.hikari.util.ConcurrentBag.borrow, a lock, a bounded queue) or "
            "unknown (none: only JDK frames; other: past the JVM's name budget). A pool's resource frame sampled most is what the "
            "JvmDiagPoolSaturated description names for it. The whole stacks: the agent's /stacks?kind=park (runbook "
            "JvmDiagPoolSaturated).",
            "label_replace(label_replace(label_replace(topk(15, sum by (thread_name, frame) (increase(jvmdiag_culprit_stack_samples_total"
            f'{{{SEL}, kind="park"}}[$__range]))) > 0, "wait", "work", "frame", "{frames_regex(CONFIG["workWaitFrames"])}"), '
            '"wait", "resource", "wait", ""), "wait", "unknown", "frame", "none|other")',
            "samples",
            g(0, 109, 24),
            columns=("thread_name", "frame", "wait"),
        ),
        # Culprit stacks: the agent's Java stack at each culprit probe, within its per-JVM budget.
        row("Code behind it", 117),
        ranked(
            "Code behind it: top application frames by kind",
            "Java stacks the agent took where a culprit was seen, over the time range, by kind and the stack's "
            "first application frame from the top (package.Class.method, the first frame outside java., javax., "
            "jdk., sun., com.sun.); top 10 per kind. Kinds: thread_start (the code calling Thread.start while the "
            "starter probe is attached: JvmDiagThreadStartRateHigh), vm_operation (the code requesting a VM "
            "operation: System.gc(), a thread dump, RedefineClasses: JvmDiagSafepointPauseHigh), monitor_wait and "
            "monitor_hold (the code blocked on, and the code releasing, a contended monitor: "
            "JvmDiagMonitorContentionHigh), park (a thread parking, e.g. a pool worker). Frame none: only JDK "
            "frames; other: past the JVM's name budget. Counts are samples (at most stackSamplesPerSecond per JVM "
            "and kind), not events. The whole stacks, root first, in the collapsed flame-graph format: the "
            "agent's /stacks on its metrics port, e.g. kubectl get --raw "
            '"/api/v1/namespaces/<agent namespace>/pods/<agent pod on the node>:9464/proxy/stacks?namespace=<ns>&pod=<pod>&kind=park" '
            "(needs get on pods/proxy in the agent's namespace; with agent.metricsAuth use port-forward and a "
            "bearer token), then flamegraph.pl or speedscope; the runbooks' Find the code.",
            f"topk by (kind) (10, sum by (kind, frame) (increase(jvmdiag_culprit_stack_samples_total{{{SEL}}}[$__range]))) > 0",
            "samples",
            g(0, 118, 24, 10),
            columns=("kind", "frame"),
        ),
    ]
    return make(
        "jvm-diagnostics-workload",
        "JVM diagnostics / Workload",
        "One workload (JvmDiagnostics) drilled down: pause heat map and p99/max by VM operation, time to safepoint, "
        "who requested the VM operations, thread starts by name and who started them, compilation rate, most-compiled methods, code cache, probe mode, "
        "blocked time by monitor class, the threads blocked most, parked time by pool, pool saturation (waiting for "
        "work or for a resource), and the code behind it "
        "(the culprit stacks' top application frames).",
        p,
    )
