"""Thread alerts: a thread storm, named by the thread name that is started."""
from .common import Alert, WHERE, sel

ALERTS = [
    Alert(
        name="JvmDiagThreadStartRateHigh", key="threadStartRate", spec_field=True,
        runbook="JvmDiagThreadStartRateHigh.md",
        meaning="threads of one name are started faster than the threshold (per second)",
        expr=lambda p: (f"rate(jvmdiag_thread_starts_total{sel(p)}[{p.windows['rateWindow']}])"
                        f" > {p.threshold}"),
        summary=lambda p: "Thread storm: {{ $labels.thread_name }} threads started at {{ $value | humanize }}/s.",
        description=lambda p: (
            f"{WHERE} starts threads named {{{{ $labels.thread_name }}}} at "
            f"{{{{ $value | humanize }}}} per second (threshold {p.threshold}/s, averaged over "
            f"{p.windows['rateWindow']})."),
    ),
]
