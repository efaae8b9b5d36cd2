"""Shapes shared by every alert area: the rule record, selectors, "where" text."""
from dataclasses import dataclass, field


@dataclass
class Params:
    """One set of values an alert is rendered with (chart defaults or operator placeholders)."""
    selector: str          # label matchers without braces, '' for all
    threshold: str = ""
    le: str = ""
    for_: str = "0m"
    severity: str = "warning"
    windows: dict = field(default_factory=dict)


@dataclass
class Alert:
    name: str
    key: str                 # CONFIG key (== spec.alerts field for the per-resource ones)
    spec_field: bool         # the operator renders it per JvmDiagnostics
    runbook: str             # file under docs/runbooks/
    meaning: str             # one line for docs/alerts.md
    expr: object             # Params -> str
    summary: object          # Params -> str
    description: object      # Params -> str


def sel(p, *extra):
    """{matchers} with the area's selector and extra matchers, never a dangling comma."""
    parts = [m for m in (p.selector, *extra) if m]
    return "{" + ", ".join(parts) + "}" if parts else ""


# Names the workload and pod in Kubernetes, the host and pid standalone (docs/metrics.md).
WHERE = ('{{ if $labels.pod }}pod {{ $labels.namespace }}/{{ $labels.pod }}'
         ' (JvmDiagnostics {{ $labels.jvmdiagnostics }}, container {{ $labels.container }}, JVM {{ $labels.jvm }})'
         '{{ else }}JVM {{ $labels.jvm }} on {{ $labels.host }} (pid {{ $labels.pid }}){{ end }}')


def increased(total, window, over=None):
    """Events counted by `total` (minus those also counted by `over`) in the last window.

    The second arm catches series born inside the window (a VM operation's first pause
    creates its series, so increase() alone would miss a first pause that is long)."""
    if over is None:
        return (f"increase({total}[{window}]) > 0\nor\n"
                f"(\n  {total} > 0\n  unless {total} offset {window}\n)")
    return (f"(\n  increase({total}[{window}])\n  - ignoring (le) increase({over}[{window}])\n) > 0\n"
            f"or\n(\n  ({total} - ignoring (le) {over}) > 0\n  unless {total} offset {window}\n)")
