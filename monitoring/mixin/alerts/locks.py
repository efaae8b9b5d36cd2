"""Lock alerts: threads blocked on contended monitors, named by the monitor's class."""

from .common import WHERE, Alert, culprit_code, sel

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
]
