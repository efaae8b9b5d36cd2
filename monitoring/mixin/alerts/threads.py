"""Thread alerts: a thread storm, named by the thread name that is started."""

from .common import WHERE, Alert, culprit_code, sel, with_culprit

# The code calling Thread.start, from the culprit stacks taken while the starter probe was
# attached (kept for the JVM's life, like the starter's counts).
CODE = culprit_code(
    "thread_start",
    " Code starting threads (most sampled): {frame}.",
    " Code starting threads: not sampled (starter probe not attached yet, or only JDK frames).",
)

# " by <thread>" where the on-demand starter probe has named the starting thread.
STARTED_BY = "{{ if $labels.starter }} by {{ $labels.starter }}{{ end }}"

ALERTS = [
    Alert(
        name="JvmDiagThreadStartRateHigh",
        key="threadStartRate",
        spec_field=True,
        runbook="JvmDiagThreadStartRateHigh.md",
        meaning="threads of one name are started faster than the threshold (per second)",
        # Who starts them: the agent attaches its starter probe to a JVM over this threshold
        # for bounded windows; jvmdiag_thread_starts_by_starter_total grows only then and is
        # kept for the JVM's life, so its largest series names the starter (a window may
        # be shorter than a scrape interval: its growth is not what counts).
        expr=lambda p: with_culprit(
            f"rate(jvmdiag_thread_starts_total{sel(p)}[{p.windows['rateWindow']}]) > {p.threshold}",
            f"jvmdiag_thread_starts_by_starter_total{sel(p)}",
            "starter",
            "thread_name",
        ),
        summary=lambda p: (
            f"Thread storm: {{{{ $labels.thread_name }}}} threads started at {{{{ $value | humanize }}}}/s{STARTED_BY}."
        ),
        description=lambda p: (
            f"{WHERE} starts threads named {{{{ $labels.thread_name }}}}{STARTED_BY} at "
            f"{{{{ $value | humanize }}}} per second (threshold {p.threshold}/s, averaged over "
            f"{p.windows['rateWindow']}).{CODE}"
        ),
    ),
]
