"""Builds rule groups (chart defaults) and rule templates (operator) from the alert areas."""

from .alerts import health, jit, locks, safepoints, selfwatch, threads
from .alerts.common import Params
from .config import CONFIG, LE_BOUNDS, TEMPLATE_PARAMS

# One group per area, in this order.
AREAS = [
    ("safepoints", safepoints.ALERTS),
    ("threads", threads.ALERTS),
    ("jit", jit.ALERTS),
    ("locks", locks.ALERTS),
    ("health", health.ALERTS),
    ("self", selfwatch.ALERTS),
]
WINDOWS = {k: CONFIG[k] for k in ("eventWindow", "rateWindow", "recompileWindow")}
# Which series each alert looks at in the chart's default rules.
SELECTOR_OF = {
    "agentDown": "agentSelector",
    "podsMissingInjection": "operatorSelector",
    "operatorDown": "operatorJobSelector",
    "operatorNotReady": "operatorJobSelector",
    "agentMissing": "agentSelector",
    "agentScrapeSlow": "agentSelector",
}


def all_alerts():
    return [a for _, alerts in AREAS for a in alerts]


def _rule(a, p):
    # runbook_url is added here, in one place, for every alert.
    return {
        "alert": a.name,
        "expr": a.expr(p),
        "for": p.for_,
        "labels": {"severity": p.severity},
        "annotations": {
            "summary": a.summary(p),
            "description": a.description(p),
            "runbook_url": CONFIG["runbookBaseUrl"] + a.runbook,
        },
    }


def default_params(a):
    c = CONFIG[a.key]
    le = c.get("le", "")
    if le and le not in LE_BOUNDS:
        raise SystemExit(
            f"CONFIG[{a.key!r}].le={le!r} is not a bucket bound; use one of {LE_BOUNDS}"
        )
    return Params(
        selector=CONFIG[SELECTOR_OF.get(a.key, "jvmSelector")],
        threshold=c.get("threshold", ""),
        le=le,
        for_=c["for"],
        severity=c["severity"],
        windows=WINDOWS,
    )


def default_groups():
    """The chart's PrometheusRule spec: every alert with CONFIG's thresholds."""
    return {
        "groups": [
            {
                "name": f"jvm-diagnostics.{area}",
                "rules": [_rule(a, default_params(a)) for a in alerts],
            }
            for area, alerts in AREAS
        ]
    }


def templates():
    """alert-templates.yaml: one rule per spec.alerts field, placeholders for the operator."""
    t = TEMPLATE_PARAMS
    p = Params(
        selector=t["selector"],
        threshold=t["threshold"],
        le=t["le"],
        for_=t["for"],
        severity=t["severity"],
        windows=WINDOWS,
    )
    return {a.key: _rule(a, p) for a in all_alerts() if a.spec_field}
