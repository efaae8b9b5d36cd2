#!/usr/bin/env python3
"""Every alert in RULES has, in TEST (promtool test file), a case where it fires and one
where it must not, a runbook under docs/runbooks/, and the annotations every alert needs.
Prints one line per alert: `ok NAME` or `FAIL NAME: why`."""

import os
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
rules_file, test_file = sys.argv[1], sys.argv[2]
rules = [r for g in yaml.safe_load(open(rules_file))["groups"] for r in g["rules"] if "alert" in r]
tests = yaml.safe_load(open(test_file))["tests"]
cases = [c for t in tests for c in t.get("alert_rule_test", [])]
bad = 0
for r in rules:
    name, why = r["alert"], []
    fires = [c for c in cases if c["alertname"] == name and c.get("exp_alerts")]
    quiet = [c for c in cases if c["alertname"] == name and not c.get("exp_alerts")]
    if not fires:
        why.append("no case where it fires")
    if not quiet:
        why.append("no case where it must not fire")
    ann = r.get("annotations", {})
    for k in ("summary", "description", "runbook_url"):
        if not ann.get(k):
            why.append(f"no {k}")
    if "severity" not in r.get("labels", {}):
        why.append("no severity label")
    if "for" not in r:
        why.append("no for")
    rb = ann.get("runbook_url", "")
    if "/docs/runbooks/" not in rb or not os.path.isfile(
        os.path.join(ROOT, "docs/runbooks", rb.rsplit("/", 1)[-1])
    ):
        why.append(f"runbook {rb!r} not in docs/runbooks/")
    print(f"FAIL {name}: {'; '.join(why)}" if why else f"ok {name}")
    bad += bool(why)
sys.exit(1 if bad else 0)
