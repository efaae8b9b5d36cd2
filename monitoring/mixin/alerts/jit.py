"""JIT alerts: compilation rate, one method recompiled over and over, code cache."""

from .common import WHERE, Alert, increased, sel

NOT_OTHER = 'method!="other"'  # "other" folds the methods beyond the top K: no culprit


def _compilation_rate(p):
    w = p.windows["rateWindow"]
    total = (
        f"sum without (compiler) (rate(jvmdiag_compilations_total{sel(p)}[{w}])) > {p.threshold}"
    )
    # Name the culprit: join the most-compiled method (0 * keeps the rate as the value);
    # the `or` keeps the alert when no method series exists.
    top = (
        f"0 * topk without (method) (1, rate(jvmdiag_method_compilations_total"
        f"{sel(p, NOT_OTHER)}[{w}]))"
    )
    return f"(\n  {total}\n)\n+ ignoring (method) group_left (method)\n({top})\nor ignoring (method)\n(\n  {total}\n)"


ALERTS = [
    Alert(
        name="JvmDiagCompilationRateHigh",
        key="compilationRate",
        spec_field=True,
        runbook="JvmDiagCompilationRateHigh.md",
        meaning="the JIT compiles more methods per second than the threshold; names the most-compiled method",
        expr=_compilation_rate,
        summary=lambda p: "JIT compiles {{ $value | humanize }} methods/s.",
        description=lambda p: (
            f"{WHERE} compiles {{{{ $value | humanize }}}} methods per second (threshold "
            f"{p.threshold}/s over {p.windows['rateWindow']}); most-compiled method: "
            f"{{{{ with $labels.method }}}}{{{{ . }}}}{{{{ else }}}}unknown{{{{ end }}}}."
        ),
    ),
    Alert(
        name="JvmDiagRecompilationStorm",
        key="recompilationStorm",
        spec_field=False,
        runbook="JvmDiagRecompilationStorm.md",
        meaning="one method is compiled again and again (deoptimise / recompile loop)",
        expr=lambda p: (
            f"increase(jvmdiag_method_compilations_total{sel(p, NOT_OTHER)}"
            f"[{p.windows['recompileWindow']}]) > {p.threshold}"
        ),
        summary=lambda p: (
            'Method {{ $labels.method }} recompiled {{ printf "%.0f" $value }} times.'
        ),
        description=lambda p: (
            f'{WHERE} compiled method {{{{ $labels.method }}}} {{{{ printf "%.0f" $value }}}} times in the '
            f"last {p.windows['recompileWindow']} (threshold {p.threshold}): a deoptimisation/recompilation loop."
        ),
    ),
    Alert(
        name="JvmDiagCodeCacheNearlyFull",
        key="codeCacheUsage",
        spec_field=True,
        runbook="JvmDiagCodeCacheNearlyFull.md",
        meaning="the code cache is fuller than the threshold (percent of its maximum)",
        # The whole cache, summed over its code heaps (the agent reports one series per heap):
        # HotSpot falls back to another heap when one fills, so one full heap alone is no alarm.
        expr=lambda p: (
            f"100 * sum without (code_heap) (jvmdiag_code_cache_used_bytes{sel(p)})\n"
            f"  / sum without (code_heap) (jvmdiag_code_cache_max_bytes{sel(p)})\n> {p.threshold}"
        ),
        summary=lambda p: "Code cache {{ $value | humanize }}% full.",
        description=lambda p: (
            f"{WHERE} has used {{{{ $value | humanize }}}}% of its code cache (threshold "
            f"{p.threshold}%); when it is full the JIT compiler stops and throughput decays."
        ),
    ),
    Alert(
        name="JvmDiagCodeCacheFull",
        key="codeCacheFull",
        spec_field=False,
        runbook="JvmDiagCodeCacheFull.md",
        meaning="the code cache filled up: the JIT compiler may have switched off",
        expr=lambda p: increased(
            f"jvmdiag_code_cache_full_total{sel(p)}", p.windows["eventWindow"]
        ),
        summary=lambda p: "Code cache full: the JIT compiler may have stopped.",
        description=lambda p: (
            f"{WHERE} reported its code cache full in the last {p.windows['eventWindow']}; "
            f'HotSpot then stops compiling ("CodeCache is full. Compiler has been disabled") '
            f"and throughput decays until a restart."
        ),
    ),
]
