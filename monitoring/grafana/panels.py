"""Builders shared by the dashboards: variables, selectors, and one function per panel kind.

Every query uses the datasource variable, the cluster matcher, the namespace/workload/pod
selector and $__rate_interval for rates; every panel sets its unit (the lint in
check_dashboards.py enforces them)."""

DS = {"type": "prometheus", "uid": "${datasource}"}
# The cluster, for a Prometheus / Thanos / Mimir holding several (the label `cluster`, e.g. an
# external label of each cluster's Prometheus). Its variable defaults to All (.*), and =~".*"
# also matches series without the label: one Prometheus per cluster needs nothing. The chart
# renames the label (dashboards.clusterLabel) by replacing exactly this text and the
# variable's label_values(..., cluster): keep both forms as they are.
CLUSTER_LABEL = "cluster"
CLUSTER = f'{CLUSTER_LABEL}=~"$cluster"'
# Series of the selected cluster(s), namespace(s), workload(s) (JvmDiagnostics name) and pod(s).
SEL = f'{CLUSTER}, namespace=~"$namespace", jvmdiagnostics=~"$workload", pod=~"$pod"'
SCHEMA_VERSION = 41


def variables(with_pod=True):
    def query_var(name, label, query, help_):
        return {
            "name": name,
            "label": label,
            "description": help_,
            "type": "query",
            "datasource": DS,
            "query": {"query": query, "refId": f"{name}-var", "qryType": 1},
            "refresh": 2,
            "includeAll": True,
            "allValue": ".*",
            "multi": True,
            "sort": 1,
            "current": {"text": "All", "value": "$__all"},
        }

    vs = [
        {
            "name": "datasource",
            "label": "Data source",
            "type": "datasource",
            "query": "prometheus",
            "description": "Prometheus that scrapes the jvm-diagnostics agents.",
            "current": {"text": "Prometheus", "value": "prometheus"},
        },
        query_var(
            "cluster",
            "Cluster",
            f"label_values(jvmdiag_jvm_info, {CLUSTER_LABEL})",
            "Cluster, for a Prometheus, Thanos or Mimir holding several (the label the chart's "
            "dashboards.clusterLabel names, default cluster). All, the default, also matches "
            "series without the label.",
        ),
        query_var(
            "namespace",
            "Namespace",
            f"label_values(jvmdiag_jvm_info{{{CLUSTER}}}, namespace)",
            "Kubernetes namespace (empty for standalone agents).",
        ),
        query_var(
            "workload",
            "Workload",
            f'label_values(jvmdiag_jvm_info{{{CLUSTER}, namespace=~"$namespace"}}, jvmdiagnostics)',
            "The JvmDiagnostics resource (one per Deployment/StatefulSet/DaemonSet).",
        ),
    ]
    if with_pod:
        vs.append(
            query_var(
                "pod",
                "Pod",
                f'label_values(jvmdiag_jvm_info{{{CLUSTER}, namespace=~"$namespace", jvmdiagnostics=~"$workload"}}, pod)',
                "Pod of the workload.",
            )
        )
    else:
        vs.append(
            {
                "name": "pod",
                "type": "constant",
                "query": ".*",
                "hide": 2,
                "description": "Every pod (the overview does not filter by pod).",
            }
        )
    return vs


def target(expr, legend, ref="A", instant=False, fmt="time_series"):
    t = {
        "datasource": DS,
        "expr": expr,
        "legendFormat": legend,
        "refId": ref,
        "range": not instant,
        "instant": instant,
        "format": fmt,
    }
    return t


def _panel(kind, title, desc, targets, unit, grid, options, custom=None, extra_defaults=None):
    defaults = {"unit": unit}
    if custom is not None:
        defaults["custom"] = custom
    defaults.update(extra_defaults or {})
    return {
        "type": kind,
        "title": title,
        "description": desc,
        "datasource": DS,
        "gridPos": grid,
        "targets": targets,
        "fieldConfig": {"defaults": defaults, "overrides": []},
        "options": options,
    }


LEGEND = {
    "showLegend": True,
    "displayMode": "table",
    "placement": "right",
    "calcs": ["max", "lastNotNull"],
}
TOOLTIP = {"mode": "multi", "sort": "desc"}


def timeseries(title, desc, targets, unit, grid, stack=False, bars=False, min0=True):
    custom = {
        "drawStyle": "bars" if bars else "line",
        "lineWidth": 1,
        "fillOpacity": 30 if bars else 10,
        "showPoints": "never",
        "spanNulls": False,
        "stacking": {"mode": "normal" if stack else "none", "group": "A"},
    }
    extra = {"min": 0} if min0 else {}
    return _panel(
        "timeseries",
        title,
        desc,
        targets,
        unit,
        grid,
        {"legend": LEGEND, "tooltip": TOOLTIP},
        custom,
        extra,
    )


def stat(title, desc, targets, unit, grid, thresholds=None, base="green"):
    extra = {}
    if thresholds:
        extra = {
            "thresholds": {
                "mode": "absolute",
                "steps": [{"color": base, "value": None}]
                + [{"color": c, "value": v} for v, c in thresholds],
            },
            "color": {"mode": "thresholds"},
        }
    return _panel(
        "stat",
        title,
        desc,
        targets,
        unit,
        grid,
        {
            "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
            "orientation": "auto",
            "colorMode": "value",
            "graphMode": "area",
            "justifyMode": "auto",
            "textMode": "auto",
            "wideLayout": True,
            "showPercentChange": False,
            "percentChangeColorMode": "standard",
        },
        None,
        extra,
    )


def table(title, desc, targets, unit, grid, transformations=None):
    p = _panel(
        "table",
        title,
        desc,
        targets,
        unit,
        grid,
        {"showHeader": True, "frameIndex": 0, "cellHeight": "sm"},
        {"align": "auto", "cellOptions": {"type": "auto"}, "inspect": False},
    )
    if transformations:
        p["transformations"] = transformations
    return p


def heatmap(title, desc, targets, unit, grid):
    return _panel(
        "heatmap",
        title,
        desc,
        targets,
        unit,
        grid,
        {
            "calculate": False,
            "color": {
                "mode": "scheme",
                "scheme": "Oranges",
                "scale": "exponential",
                "exponent": 0.5,
                "fill": "dark-orange",
                "reverse": False,
                "steps": 64,
            },
            "exemplars": {"color": "rgba(255,0,255,0.7)"},
            "legend": {"show": True},
            "showValue": "never",
            "cellGap": 1,
            "filterValues": {"le": 1e-9},
            "rowsFrame": {"layout": "le"},
            "tooltip": {"mode": "single", "yHistogram": True, "showColorScale": False},
            "yAxis": {"axisPlacement": "left", "unit": unit, "reverse": False},
        },
        {"hideFrom": {"legend": False, "tooltip": False, "viz": False}},
    )


def row(title, y):
    return {
        "type": "row",
        "title": title,
        "collapsed": False,
        "gridPos": {"h": 1, "w": 24, "x": 0, "y": y},
        "panels": [],
    }


def dashboard(uid, title, desc, panels, with_pod=True, links=None):
    for i, p in enumerate(panels, 1):
        p["id"] = i
    return {
        "uid": uid,
        "title": title,
        "description": desc,
        "tags": ["jvm", "jvm-diagnostics"],
        "editable": True,
        "graphTooltip": 1,
        "schemaVersion": SCHEMA_VERSION,
        "version": 1,
        "time": {"from": "now-1h", "to": "now"},
        "refresh": "30s",
        "timezone": "browser",
        "timepicker": {},
        "fiscalYearStartMonth": 0,
        "liveNow": False,
        "annotations": {
            "list": [
                {
                    "name": "Annotations & Alerts",
                    "builtIn": 1,
                    "enable": True,
                    "hide": True,
                    "iconColor": "rgba(0, 211, 255, 1)",
                    "type": "dashboard",
                    "datasource": {"type": "grafana", "uid": "-- Grafana --"},
                }
            ]
        },
        "templating": {"list": variables(with_pod)},
        "links": links or [],
        "panels": panels,
    }
