"""Grafana dashboards as code (plain Python: the JSON model, typed by @grafana/schema in tests)."""

from . import overview, workload


def all_dashboards():
    return {
        "jvm-diagnostics-overview": overview.dashboard(),
        "jvm-diagnostics-workload": workload.dashboard(),
    }
