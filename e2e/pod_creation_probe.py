#!/usr/bin/env python3
"""Creates a labelled pod every INTERVAL seconds until STOP_FILE exists, and reports what the
API server answered: how many creations failed, how many pods came back without the webhook's
stamp (jvm.diagnostics.dev/injected), and how long each creation took (a pod that waited on an
unreachable webhook takes its 2-second timeout). Used by the chart suite while it upgrades the
release: the webhook must never refuse, miss or delay a pod. With --validate, each round also
sends a server-side dry-run JvmDiagnostics through the validating webhook (failurePolicy Fail):
one refused or failed is counted with the wall-clock second it was sent at.

The pods carry jvm.diagnostics.dev/inject=RESOURCE and a node selector no node has, so they are
admitted (and mutated) but never scheduled: nothing runs. Delete the namespace afterwards.

  pod_creation_probe.py --kubeconfig K --namespace NS --resource NAME --stop-file F [--interval S]
                        [--validate]
Prints one JSON object: created, failed, not_injected, slow (>= 1 s), p50_ms, p99_ms, max_ms,
errors, failed_at (epoch seconds of each failed or uninjected pod); with --validate also
validated, validation_failed, validation_failed_at, validation_errors.
"""

import argparse
import json
import os
import ssl
import sys
import time
import urllib.error
import urllib.request

import yaml


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kubeconfig", required=True)
    ap.add_argument("--namespace", required=True)
    ap.add_argument(
        "--resource", required=True, help="the JvmDiagnostics the pods name in the inject label"
    )
    ap.add_argument("--stop-file", required=True)
    ap.add_argument("--interval", type=float, default=0.25)
    ap.add_argument("--max-seconds", type=float, default=900)
    ap.add_argument("--validate", action="store_true")
    a = ap.parse_args()
    kc = yaml.safe_load(open(a.kubeconfig))
    cluster = kc["clusters"][0]["cluster"]
    token = kc["users"][0]["user"]["token"]
    ctx = ssl.create_default_context(cafile=cluster["certificate-authority"])
    url = "%s/api/v1/namespaces/%s/pods" % (cluster["server"], a.namespace)
    vurl = "%s/apis/jvm.diagnostics.dev/v1alpha1/namespaces/%s/jvmdiagnostics?dryRun=All" % (
        cluster["server"],
        a.namespace,
    )
    lat, errors, failed_at = [], [], []
    validated, vfailed_at, verrors = 0, [], []
    failed = not_injected = 0
    start = time.monotonic()
    i = 0
    while not os.path.exists(a.stop_file) and time.monotonic() - start < a.max_seconds:
        i += 1
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "probe-%d-%d" % (os.getpid(), i),
                "labels": {"jvm.diagnostics.dev/inject": a.resource, "jvmdiag-probe": "1"},
            },
            "spec": {
                "nodeSelector": {"jvm.diagnostics.dev/no-such-node": "probe"},
                "containers": [
                    {"name": "app", "image": "jvmdiag/pause:dev", "imagePullPolicy": "Never"}
                ],
            },
        }
        req = urllib.request.Request(
            url,
            data=json.dumps(pod).encode(),
            method="POST",
            headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"},
        )
        t0 = time.monotonic()
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
                body = json.load(r)
            lat.append(time.monotonic() - t0)
            ann = (body.get("metadata") or {}).get("annotations") or {}
            if "jvm.diagnostics.dev/injected" not in ann:
                not_injected += 1
                failed_at.append(round(time.time(), 1))
                errors.append(
                    "%s: no injected stamp at %.1f s" % (pod["metadata"]["name"], t0 - start)
                )
        except (urllib.error.URLError, OSError, ValueError) as e:
            lat.append(time.monotonic() - t0)
            failed += 1
            failed_at.append(round(time.time(), 1))
            errors.append("%s: %s at %.1f s" % (pod["metadata"]["name"], detail_of(e), t0 - start))
        if a.validate:
            resource = {
                "apiVersion": "jvm.diagnostics.dev/v1alpha1",
                "kind": "JvmDiagnostics",
                "metadata": {"name": "validate-%d-%d" % (os.getpid(), i)},
                "spec": {"targetRef": {"kind": "Deployment", "name": "validate-%d" % i}},
            }
            vreq = urllib.request.Request(
                vurl,
                data=json.dumps(resource).encode(),
                method="POST",
                headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"},
            )
            sent, vt0 = time.time(), time.monotonic()
            try:
                with urllib.request.urlopen(vreq, context=ctx, timeout=30) as r:
                    r.read()
                validated += 1
            except (urllib.error.URLError, OSError, ValueError) as e:
                vfailed_at.append(round(sent, 1))
                verrors.append("%s at %.1f s" % (detail_of(e), vt0 - start))
        time.sleep(max(0.0, a.interval - (time.monotonic() - t0)))
    s = sorted(lat) or [0.0]
    print(
        json.dumps(
            {
                "created": len(lat) - failed,
                "failed": failed,
                "not_injected": not_injected,
                "slow": sum(1 for x in lat if x >= 1.0),
                "p50_ms": round(s[len(s) // 2] * 1000, 1),
                "p99_ms": round(s[min(len(s) - 1, int(len(s) * 0.99))] * 1000, 1),
                "max_ms": round(s[-1] * 1000, 1),
                "seconds": round(time.monotonic() - start, 1),
                "errors": errors[:10],
                "failed_at": failed_at,
                **(
                    {
                        "validated": validated,
                        "validation_failed": len(vfailed_at),
                        "validation_failed_at": vfailed_at,
                        "validation_errors": verrors[:10],
                    }
                    if a.validate
                    else {}
                ),
            }
        )
    )


def detail_of(e):
    if isinstance(e, urllib.error.HTTPError):
        return e.read().decode(errors="replace")[:200]
    return str(e)


if __name__ == "__main__":
    sys.exit(main())
