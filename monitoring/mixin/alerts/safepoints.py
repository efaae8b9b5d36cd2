"""Safepoint alerts: pauses and time to safepoint, exact from the histogram buckets."""

from .common import WHERE, Alert, culprit_code, grown, increased, sel, with_culprit


def _hist(metric, p):
    le = 'le="' + p.le + '"'
    return increased(
        f"{metric}_count{sel(p)}", p.windows["eventWindow"], over=f"{metric}_bucket{sel(p, le)}"
    )


# " requested by <thread>" where the requester is known (USDT hotspot:vmops__request).
REQUESTED_BY = "{{ if $labels.requester }} requested by {{ $labels.requester }}{{ end }}"


def _requesting_code(window):
    # The stacks are per JVM, not per VM operation: the code that requested any of them most.
    return culprit_code(
        "vm_operation",
        f" Code requesting VM operations most in the last {window}: {{frame}}.",
        f" Code requesting VM operations: none sampled in the last {window} (the VM's own "
        "operations, a jcmd from outside the JVM, or only JDK frames).",
        window,
    )


ALERTS = [
    Alert(
        name="JvmDiagSafepointPauseHigh",
        key="safepointPause",
        spec_field=True,
        runbook="JvmDiagSafepointPauseHigh.md",
        meaning="a safepoint pause longer than the threshold, by VM operation",
        # Who asked for the operation: the thread that requested it most in the same window.
        expr=lambda p: with_culprit(
            _hist("jvmdiag_safepoint_pause_seconds", p),
            grown(f"jvmdiag_vm_operation_requests_total{sel(p)}", p.windows["eventWindow"]),
            "requester",
            "vm_operation",
        ),
        summary=lambda p: (
            f"Safepoint pause over {p.threshold}s in {{{{ $labels.vm_operation }}}}{REQUESTED_BY}."
        ),
        description=lambda p: (
            f"{WHERE} stopped all its threads for more than {p.threshold}s in safepoint "
            f"VM operation {{{{ $labels.vm_operation }}}}{REQUESTED_BY} "
            f'({{{{ printf "%.0f" $value }}}} such pause(s) in the last {p.windows["eventWindow"]}).'
            f"{_requesting_code(p.windows['eventWindow'])}"
        ),
    ),
    Alert(
        name="JvmDiagTimeToSafepointHigh",
        key="timeToSafepoint",
        spec_field=True,
        runbook="JvmDiagTimeToSafepointHigh.md",
        meaning="reaching a safepoint (time to safepoint) took longer than the threshold",
        expr=lambda p: _hist("jvmdiag_safepoint_sync_seconds", p),
        summary=lambda p: (
            f"Time to safepoint over {p.threshold}s before {{{{ $labels.vm_operation }}}}."
        ),
        description=lambda p: (
            f"{WHERE} needed more than {p.threshold}s to bring all threads to a safepoint for "
            f"VM operation {{{{ $labels.vm_operation }}}} "
            f'({{{{ printf "%.0f" $value }}}} time(s) in the last {p.windows["eventWindow"]}); '
            f"the threads already stopped were waiting meanwhile."
        ),
    ),
]
