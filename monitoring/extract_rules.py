#!/usr/bin/env python3
"""Reads rendered manifests (helm template / render-rules output) on stdin and writes the
spec of the one PrometheusRule in them to FILE: the rules exactly as shipped."""

import sys

import yaml

docs = [
    d
    for d in yaml.safe_load_all(sys.stdin)
    if isinstance(d, dict) and d.get("kind") == "PrometheusRule"
]
if len(docs) != 1:
    sys.exit(f"expected exactly one PrometheusRule in the rendered output, found {len(docs)}")
with open(sys.argv[1], "w") as f:
    yaml.safe_dump(docs[0]["spec"], f, sort_keys=False, width=1000)
