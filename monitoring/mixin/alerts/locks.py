"""Lock alerts: threads blocked on contended monitors, named by the monitor's class; pools whose
threads are parked waiting for a resource (a connection pool), named by the pool's thread name."""

from ..config import CONFIG
from .common import JVM_LABELS, WHERE, Alert, culprit_code, frames_regex, sel

# "other" folds the classes beyond the top K per JVM: many classes, no culprit, not "one class".
NOT_OTHER = 'monitor_class!="other"'


def _code(window):
    # The stacks are per JVM, not per monitor class: the code around any contended monitor.
    return culprit_code(
        "monitor_hold",
        f" Code holding contended monitors most in the last {window}: {{frame}}",
        " Code holding contended monitors: not sampled",
        window,
    ) + culprit_code(
        "monitor_wait",
        "; code blocked on them most: {frame}.",
        "; code blocked on them: not sampled.",
        window,
    )


# Park frames that name no code: `none` (only JDK frames: a JDK executor's idle worker, or a
# JDK-only wait) and `other` (past the JVM's name budget). Neither work nor resource.
UNNAMED = "none|other"
# Park frames that are not a wait for a resource: a pool's wait for its next task (idle, not
# saturated) and the unnamed ones, as one regex; every other frame is a wait for a resource.
NOT_RESOURCE = "none|" + frames_regex(CONFIG["workWaitFrames"]) + "|other"


def _parks(p, frame_matcher):
    # Park samples per second of each pool (the parking thread's folded name) of each JVM:
    # counted at park begin, so a share of parks, not of time.
    series = sel(p, 'kind="park"', frame_matcher)
    w = p.windows["rateWindow"]
    return (
        f"sum by ({JVM_LABELS}, thread_name) "
        f"(rate(jvmdiag_culprit_stack_samples_total{series}[{w}]))"
    )


def _pool_saturated(p):
    w = p.windows["rateWindow"]
    share = CONFIG["poolSaturation"]["resourceShare"]
    parked = sel(p, 'via="park"', 'thread_name!="other"')
    resource = _parks(p, 'frame!~"' + NOT_RESOURCE + '"')
    known = _parks(p, 'frame!~"' + UNNAMED + '"')
    return (
        # Threads of one pool parked at once on average (LockSupport.park; not "other", the names
        # past the JVM's budget: no pool)...
        f"sum by ({JVM_LABELS}, thread_name) (\n"
        f"  rate(jvmdiag_thread_parked_seconds_total{parked}[{w}])\n"
        f") > {p.threshold}\n"
        # ...whose own parks that name code mostly wait for a resource, not for work (the
        # stacks carry the parking thread's folded name, as the parked seconds do). No stacks
        # of the pool (stacks off, its name past a budget), no alert.
        f"and on ({JVM_LABELS}, thread_name)\n"
        f"(\n  {resource}\n  > {share} * {known}\n)"
    )


def _waits_on(window):
    # The resource-wait frame the pool's own threads parked at most in the window: what it
    # waits on.
    return culprit_code(
        "park",
        f" Its threads parked most in the last {window} at {{frame}}.",
        " Where it waits: not sampled.",
        window,
        exclude=NOT_RESOURCE,
        per_thread=True,
    )


ALERTS = [
    Alert(
        name="JvmDiagMonitorContentionHigh",
        key="monitorContention",
        spec_field=True,
        runbook="JvmDiagMonitorContentionHigh.md",
        meaning="threads spend more seconds per second blocked on monitors of one class than the threshold",
        # The histogram's _sum grows by the time each contended enter waited (contended enter ->
        # entered), so its rate is seconds blocked per second, summed over the JVM's threads.
        expr=lambda p: (
            f"rate(jvmdiag_monitor_blocked_seconds_sum{sel(p, NOT_OTHER)}"
            f"[{p.windows['rateWindow']}]) > {p.threshold}"
        ),
        summary=lambda p: (
            "Threads blocked {{ $value | humanizeDuration }} per second on monitors of class "
            "{{ $labels.monitor_class }}."
        ),
        description=lambda p: (
            f"{WHERE} has threads blocked on contended monitors of class {{{{ $labels.monitor_class }}}} "
            f"for {{{{ $value | humanizeDuration }}}} per second (threshold {p.threshold}s/s, averaged over "
            f"{p.windows['rateWindow']}): they wait for a lock of that class that another thread holds."
            f"{_code(p.windows['rateWindow'])}"
        ),
    ),
    Alert(
        name="JvmDiagPoolSaturated",
        key="poolSaturation",
        spec_field=True,
        runbook="JvmDiagPoolSaturated.md",
        meaning="more threads of one pool than the threshold are parked at once on average, and most of that pool's parks wait for a resource (a connection pool), not for work",
        expr=_pool_saturated,
        summary=lambda p: (
            "Pool {{ $labels.thread_name }}: {{ $value | humanize }} threads parked waiting for a "
            "resource, not for work."
        ),
        description=lambda p: (
            f"{WHERE} has {{{{ $value | humanize }}}} threads of pool {{{{ $labels.thread_name }}}} "
            f"parked at once on average (threshold {p.threshold}, averaged over "
            f"{p.windows['rateWindow']}), and most of the pool's sampled parks are waits for a "
            "resource, not a pool's wait for its next task: the pool is busy waiting, and more "
            f"threads will not help.{_waits_on(p.windows['rateWindow'])}"
        ),
    ),
]
