"""Shapes shared by every alert area: the rule record, selectors, "where" text."""

import re
from dataclasses import dataclass, field


@dataclass
class Params:
    """One set of values an alert is rendered with (chart defaults or operator placeholders)."""

    selector: str  # label matchers without braces, '' for all
    threshold: str = ""
    le: str = ""
    for_: str = "0m"
    severity: str = "warning"
    windows: dict = field(default_factory=dict)


@dataclass
class Alert:
    name: str
    key: str  # CONFIG key (== spec.alerts field for the per-resource ones)
    spec_field: bool  # the operator renders it per JvmDiagnostics
    runbook: str  # file under docs/runbooks/
    meaning: str  # one line for docs/alerts.md
    expr: object  # Params -> str
    summary: object  # Params -> str
    description: object  # Params -> str


def sel(p, *extra):
    """{matchers} with the area's selector and extra matchers, never a dangling comma."""
    parts = [m for m in (p.selector, *extra) if m]
    return "{" + ", ".join(parts) + "}" if parts else ""


# Names the workload and pod in Kubernetes, the host and pid standalone (docs/metrics.md).
WHERE = (
    "{{ if $labels.pod }}pod {{ $labels.namespace }}/{{ $labels.pod }}"
    " (JvmDiagnostics {{ $labels.jvmdiagnostics }}, container {{ $labels.container }}, JVM {{ $labels.jvm }})"
    "{{ else }}JVM {{ $labels.jvm }} on {{ $labels.host }} (pid {{ $labels.pid }}){{ end }}"
)


def increased(total, window, over=None):
    """Events counted by `total` (minus those also counted by `over`) in the last window.

    The second arm catches series born inside the window (a VM operation's first pause
    creates its series, so increase() alone would miss a first pause that is long)."""
    if over is None:
        return (
            f"increase({total}[{window}]) > 0\nor\n"
            f"(\n  {total} > 0\n  unless {total} offset {window}\n)"
        )
    return (
        f"(\n  increase({total}[{window}])\n  - ignoring (le) increase({over}[{window}])\n) > 0\n"
        f"or\n(\n  ({total} - ignoring (le) {over}) > 0\n  unless {total} offset {window}\n)"
    )


# The labels that name one JVM, in Kubernetes and standalone (docs/metrics.md).
JVM_LABELS = "namespace, pod, container, jvm, jvmdiagnostics, host, pid"


def grown(metric, window):
    """Counter series that grew in the last window, including those born inside it (a
    requester's first request creates its series: increase() alone would not see it)."""
    return f"increase({metric}[{window}]) > 0 or ({metric} > 0 unless {metric} offset {window})"


def with_culprit(expr, culprits, label, on):
    """`expr` with one more label, `label`, from the series of `culprits` (same JVM, same `on`
    label) with the highest value: who requested the VM operation, who started the threads
    of that name. Where there is none (a JDK without the probe, the on-demand probe never
    attached) `expr` as it is, without the label: the join never drops an alert."""
    by = f"{JVM_LABELS}, {on}"
    inner = "\n".join("  " + line for line in expr.splitlines())
    return (
        f"(\n{inner}\n)\n* on ({by}) group_left ({label})\n"
        f"(0 * topk by ({by}) (1, {culprits}) + 1)\n"
        f"or on ({by})\n(\n{inner}\n)"
    )


# The culprit stacks' labels that name one JVM (docs/metrics.md); a label the alert lacks is
# "" in $labels, and label="" matches the series without it (standalone vs Kubernetes).
_STACK_JVM = ("namespace", "pod", "container", "jvm", "host", "pid")


def frames_regex(frames):
    """A PromQL regex matching exactly FRAMES (`package.Class.method`, `none`): `.` and `$` as
    `[.]` and `[$]`, which need no backslash in a PromQL string, a Go template string or YAML."""
    for f in frames:
        if not re.fullmatch(r"[A-Za-z0-9_.$]+", f):
            raise SystemExit(
                f"frame {f!r}: only package.Class.method names (letters, digits, _ . $)"
            )
    return "|".join(f.replace(".", "[.]").replace("$", "[$]") for f in frames)


def culprit_code(kind, found, missing, window=None, exclude="none|other", per_thread=False):
    """Template text naming the code behind the alert: FOUND with "{frame}" replaced by the
    application frame sampled most for the alert's JVM in jvmdiag_culprit_stack_samples_total
    of KIND (over WINDOW, or since the JVM was traced), else MISSING. Frames matching EXCLUDE
    name no code: by default `none` (only JDK frames) and `other` (past the name budget).
    The JVM's samples of every thread, summed; PER_THREAD: only those of the threads named the
    alert's `thread_name` (a pool's own)."""
    labels = _STACK_JVM + (("thread_name",) if per_thread else ())
    matchers = ",".join(f"{l}=%[{i}]q" for i, l in enumerate(labels, 1))
    series = f'jvmdiag_culprit_stack_samples_total{{{matchers},kind=\\"{kind}\\",frame!~\\"{exclude}\\"}}'
    q = f"topk(1, sum by (frame) ({grown(series, window) if window else series}))"
    args = " ".join(f"$labels.{l}" for l in labels)
    frame = "{{ .Labels.frame }}"
    return (
        f'{{{{ with printf "{q}" {args} | query }}}}{{{{ with . | first }}}}'
        f"{found.replace('{frame}', frame)}{{{{ end }}}}{{{{ else }}}}{missing}{{{{ end }}}}"
    )
