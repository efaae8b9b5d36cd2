#!/usr/bin/env python3
"""Operator benchmark against a live API server (KUBECONFIG, token auth):
  1. webhook: after BENCH_WARMUP unmeasured ones, N pod admissions (server-side dry-run creates, so nothing is stored) with the
     inject label (webhook called) and N without (not called), one kept-alive HTTPS connection;
     round-trip p50/p99 of each, and the webhook handler's own time from the operator's
     jvmdiag_operator_admission_duration_seconds histogram (METRICS_URL).
  2. reconcile: M Deployments (replicas 0), then M JvmDiagnostics created by CREATORS parallel
     clients (the benchmark measures the operator, not a serial client): each create's round trip
     through the validating webhook, and the time from the first create until every one reports
     TargetFound=True for its generation; the validating webhook's time during the creates, as the
     operator's handler measures it (jvmdiag_operator_resource_admission_duration_seconds) and as
     the API server does (apiserver_admission_webhook_admission_duration_seconds, the call included),
     and the SubjectAccessReviews the API server answered meanwhile.
Prints a markdown table, with the load average before and after."""

import base64
import concurrent.futures
import http.client
import json
import os
import ssl
import sys
import threading
import time
import urllib.request

import yaml


def load_kubeconfig(path):
    kc = yaml.safe_load(open(path))
    ctx = next(c for c in kc["contexts"] if c["name"] == kc["current-context"])["context"]
    cluster = next(c for c in kc["clusters"] if c["name"] == ctx["cluster"])["cluster"]
    user = next(u for u in kc["users"] if u["name"] == ctx["user"])["user"]
    sslctx = ssl.create_default_context()
    if "certificate-authority-data" in cluster:
        sslctx.load_verify_locations(
            cadata=base64.b64decode(cluster["certificate-authority-data"]).decode()
        )
    else:
        sslctx.load_verify_locations(cafile=cluster["certificate-authority"])
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if "token" in user:
        headers["Authorization"] = "Bearer " + user["token"]
    if "client-certificate" in user:
        sslctx.load_cert_chain(user["client-certificate"], user["client-key"])
    host = cluster["server"].split("://", 1)[1].rstrip("/")
    return host, sslctx, headers


class Api:
    def __init__(self, path):
        self.host, self.ssl, self.headers = load_kubeconfig(path)
        self.conn = http.client.HTTPSConnection(self.host, context=self.ssl)

    def raw(self, path):
        """GET path as text (the API server's /metrics)."""
        for _attempt in range(3):
            try:
                self.conn.request("GET", path, headers=dict(self.headers, Accept="text/plain"))
                return self.conn.getresponse().read().decode()
            except (http.client.HTTPException, ConnectionError):
                self.conn = http.client.HTTPSConnection(self.host, context=self.ssl)
        raise RuntimeError("API server unreachable")

    def call(self, method, path, body=None, ctype=None):
        h = dict(self.headers)
        if ctype:
            h["Content-Type"] = ctype
        data = json.dumps(body) if body is not None else None
        for _attempt in range(3):
            try:
                self.conn.request(method, path, body=data, headers=h)
                r = self.conn.getresponse()
                out = r.read()
                return r.status, (json.loads(out) if out else None)
            except (http.client.HTTPException, ConnectionError):
                self.conn = http.client.HTTPSConnection(self.host, context=self.ssl)
        raise RuntimeError("API server unreachable")


_local = threading.local()


def thread_api():
    """This thread's own client (one kept-alive connection a thread)."""
    if not hasattr(_local, "api"):
        _local.api = Api(os.environ["KUBECONFIG"])
    return _local.api


def load_average():
    return " ".join(open("/proc/loadavg").read().split()[:3])


def is_reconciled(item):
    """A JvmDiagnostics whose status is for its generation and has found its target."""
    st = item.get("status") or {}
    return st.get("observedGeneration") == item["metadata"]["generation"] and any(
        c["type"] == "TargetFound" and c["status"] == "True" for c in st.get("conditions", [])
    )


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def histogram_quantile(buckets, q):
    """buckets: sorted [(le, cumulative count)] -> (lower, upper) bounds of the bucket holding
    quantile q and the linear interpolation inside it (as PromQL's histogram_quantile)."""
    total = buckets[-1][1]
    lo, below = 0.0, 0.0
    for le, c in buckets:
        if c >= q * total:
            if le == float("inf"):
                return lo, le, lo
            est = lo + (le - lo) * ((q * total - below) / (c - below) if c > below else 1.0)
            return lo, le, est
        lo, below = le, c
    return lo, float("inf"), lo


def buckets_of(text, name, match=""):
    """{le: cumulative count} of the histogram `name` in an exposition, summed over the series whose
    labels contain `match`."""
    out = {}
    for line in text.splitlines():
        if line.startswith(name + "_bucket{") and match in line:
            le = line.split('le="', 1)[1].split('"', 1)[0]
            le = float("inf") if le == "+Inf" else float(le)
            out[le] = out.get(le, 0) + float(line.rsplit(" ", 1)[1])
    return out


def counter_of(text, name, match=""):
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith(name + "{") and match in line
    )


def delta(before, after):
    return sorted((le, after[le] - before.get(le, 0)) for le in after)


def scrape(url, name="jvmdiag_operator_admission_duration_seconds"):
    return buckets_of(urllib.request.urlopen(url, timeout=10).read().decode(), name)


VALIDATION = "jvmdiag_operator_resource_admission_duration_seconds"
API_WEBHOOK = "apiserver_admission_webhook_admission_duration_seconds"
API_WEBHOOK_MATCH = 'name="jvmdiagnostics.jvm.diagnostics.dev",operation="CREATE"'
SAR_MATCH = 'resource="subjectaccessreviews"'


def quantiles_row(label, buckets):
    """One table row: p50 and p99 as bucket bounds and interpolated (ms)."""
    if not buckets or buckets[-1][1] == 0:
        return "| %s | not measured |" % label
    (l50, u50, e50), (l99, u99, e99) = (
        histogram_quantile(buckets, 0.5),
        histogram_quantile(buckets, 0.99),
    )
    return "| %s, p50 / p99 (bucket; interpolated) | %g-%g ms; %.1f ms / %g-%g ms; %.1f ms |" % (
        label,
        l50 * 1000,
        u50 * 1000,
        e50 * 1000,
        l99 * 1000,
        u99 * 1000,
        e99 * 1000,
    )


def main():
    load0 = load_average()
    n = int(os.environ.get("BENCH_ADMISSIONS", "1000"))
    m = int(os.environ.get("BENCH_RESOURCES", "1000"))
    api = Api(os.environ["KUBECONFIG"])
    ns = "bench-%d" % os.getpid()
    api.call(
        "POST",
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
    )
    jd = "/apis/jvm.diagnostics.dev/v1alpha1/namespaces/%s/jvmdiagnostics" % ns

    def resource(name, target):
        return {
            "apiVersion": "jvm.diagnostics.dev/v1alpha1",
            "kind": "JvmDiagnostics",
            "metadata": {"name": name},
            "spec": {
                "targetRef": {"kind": "Deployment", "name": target},
                "jvmOptions": {"extra": ["-XX:ReservedCodeCacheSize=256m"]},
            },
        }

    s, _ = api.call("POST", jd, resource("probe", "none"))
    assert s in (200, 201), s

    def pod(i, labelled):
        labels = {"app": "bench"}
        if labelled:
            labels["jvm.diagnostics.dev/inject"] = "probe"
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p-%d" % i, "labels": labels},
            "spec": {
                "containers": [
                    {
                        "name": "app",
                        "image": "eclipse-temurin:21",
                        "env": [{"name": "JAVA_TOOL_OPTIONS", "value": "-Xmx256m"}],
                    },
                    {"name": "istio-proxy", "image": "docker.io/istio/proxyv2:1.22"},
                ]
            },
        }

    path = "/api/v1/namespaces/%s/pods?dryRun=All" % ns
    # wait until the webhook answers (registration propagates to the API server)
    for _ in range(100):
        s, body = api.call("POST", path, pod(0, True))
        if s == 201 and "jvm.diagnostics.dev/injected" in (
            body["metadata"].get("annotations") or {}
        ):
            break
        time.sleep(0.2)
    else:
        sys.exit("the webhook is not being called")
    # warm-up, not measured: the operator's JIT compiles the admission path (a fresh JVM runs it
    # interpreted at first); what is measured is the steady state
    warmup = int(os.environ.get("BENCH_WARMUP", "200"))
    for i in range(warmup):
        api.call("POST", path, pod(i, True))
    metrics = os.environ.get("METRICS_URL")
    before = scrape(metrics) if metrics else None
    rt = {True: [], False: []}
    mutated = 0
    for i in range(n):
        for labelled in (True, False):
            t = time.perf_counter()
            s, body = api.call("POST", path, pod(i, labelled))
            rt[labelled].append((time.perf_counter() - t) * 1000)
            assert s == 201, (s, body)
            if labelled and "jvm.diagnostics.dev/injected" in (
                body["metadata"].get("annotations") or {}
            ):
                mutated += 1
    handler = None
    if metrics:
        after = scrape(metrics)
        buckets = sorted((le, after[le] - before.get(le, 0)) for le in after)
        handler = (histogram_quantile(buckets, 0.5), histogram_quantile(buckets, 0.99), buckets)

    # reconcile M resources, created by parallel clients (one connection each)
    creators = int(os.environ.get("BENCH_CREATORS", "16"))

    def deployment(i):
        s, body = thread_api().call(
            "POST",
            "/apis/apps/v1/namespaces/%s/deployments" % ns,
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "w-%d" % i},
                "spec": {
                    "replicas": 0,
                    "selector": {"matchLabels": {"app": "w-%d" % i}},
                    "template": {
                        "metadata": {"labels": {"app": "w-%d" % i}},
                        "spec": {"containers": [{"name": "app", "image": "eclipse-temurin:21"}]},
                    },
                },
            },
        )
        assert s == 201, (s, body)

    # each create passes the validating webhook (failurePolicy Fail, timeout 5 s): a refused one is
    # counted and named, not fatal, so a run that exceeds the timeout still prints its figures
    def create(i):
        t = time.perf_counter()
        s, body = thread_api().call("POST", jd, resource("w-%d" % i, "w-%d" % i))
        ms = (time.perf_counter() - t) * 1000
        return i, ms, None if s == 201 else "%s %s" % (s, (body or {}).get("message", body))

    with concurrent.futures.ThreadPoolExecutor(creators) as pool:
        list(pool.map(deployment, range(m)))
        time.sleep(2)  # let the operator's Deployment watch catch up: only the resources are timed
        api_before = api.raw("/metrics")
        validation_before = scrape(metrics, VALIDATION) if metrics else None
        t0 = time.perf_counter()
        results = list(pool.map(create, range(m)))
    created = time.perf_counter() - t0
    api_after = api.raw("/metrics")
    validation = delta(validation_before, scrape(metrics, VALIDATION)) if metrics else None
    api_webhook = delta(
        buckets_of(api_before, API_WEBHOOK, API_WEBHOOK_MATCH),
        buckets_of(api_after, API_WEBHOOK, API_WEBHOOK_MATCH),
    )
    reviews = counter_of(api_after, "apiserver_request_total", SAR_MATCH) - counter_of(
        api_before, "apiserver_request_total", SAR_MATCH
    )
    create_ms = [ms for _, ms, _ in results]
    failed = [(i, err) for i, _, err in results if err]
    stored = {"w-%d" % i for i, _, err in results if not err}
    done = 0
    deadline = time.time() + 600
    while time.time() < deadline:
        s, body = api.call("GET", jd)
        done = 0
        for it in body["items"]:
            if it["metadata"]["name"] not in stored:
                continue
            if is_reconciled(it):
                done += 1
        if done == len(stored):
            break
        time.sleep(0.5)
    reconciled = time.perf_counter() - t0
    # API writes that carry no information are what the operator should not send: count its events
    time.sleep(3)  # they are sent after the reconcile, on their own threads
    s, body = api.call("GET", "/api/v1/namespaces/%s/events" % ns)
    events = sum(
        1
        for e in (body or {}).get("items", [])
        if e["involvedObject"].get("kind") == "JvmDiagnostics"
        and e["involvedObject"]["name"].startswith("w-")
    )

    print("load average before: %s" % load0)
    print("load average after:  %s" % load_average())
    print()
    print("| measure | value |")
    print("|---|---|")
    print(
        "| admissions through the API server (dry-run pod creates, each kind; after %d warm-up) | %d, %d mutated |"
        % (warmup, n, mutated)
    )
    print(
        "| round trip with the webhook, p50 / p99 | %.2f ms / %.2f ms |"
        % (pct(rt[True], 50), pct(rt[True], 99))
    )
    print(
        "| round trip without it (label absent), p50 / p99 | %.2f ms / %.2f ms |"
        % (pct(rt[False], 50), pct(rt[False], 99))
    )
    print(
        "| webhook cost seen by the API server, p50 / p99 (difference) | %.2f ms / %.2f ms |"
        % (pct(rt[True], 50) - pct(rt[False], 50), pct(rt[True], 99) - pct(rt[False], 99))
    )
    if handler:
        (l50, u50, e50), (l99, u99, e99) = handler[0], handler[1]
        print(
            "| webhook handler time in the operator, p50 (bucket; interpolated) | %g-%g ms; %.2f ms |"
            % (l50 * 1000, u50 * 1000, e50 * 1000)
        )
        print(
            "| webhook handler time in the operator, p99 (bucket; interpolated) | %g-%g ms; %.2f ms |"
            % (l99 * 1000, u99 * 1000, e99 * 1000)
        )
        print(
            "| webhook handler p99 <= 5 ms target | %s |" % ("met" if u99 <= 0.005 else "NOT met")
        )
    print(
        "| %d JvmDiagnostics: create calls (%d parallel clients) took | %.1f s |"
        % (m, creators, created)
    )
    print(
        "| %d JvmDiagnostics: create round trip (validating webhook), p50 / p99 / max | %.0f ms / %.0f ms / %.0f ms |"
        % (m, pct(create_ms, 50), pct(create_ms, 99), max(create_ms))
    )
    print(
        quantiles_row(
            "%d JvmDiagnostics: validating webhook as the API server times it (call included)" % m,
            api_webhook,
        )
    )
    if validation is not None:
        print(
            quantiles_row(
                "%d JvmDiagnostics: validating webhook's handler time in the operator" % m,
                validation,
            )
        )
    print(
        "| %d JvmDiagnostics: SubjectAccessReviews the API server answered during the creates | %d |"
        % (m, reviews)
    )
    print("| %d JvmDiagnostics: creates refused or failed | %d |" % (m, len(failed)))
    print(
        "| %d JvmDiagnostics: first create to all reconciled (TargetFound, observedGeneration) | %.1f s (%d/%d) |"
        % (m, reconciled, done, len(stored))
    )
    print(
        "| events on the %d resources (after all reconciled) | %d (%.2f per resource) |"
        % (len(stored), events, events / max(len(stored), 1))
    )
    for i, err in failed[:3]:
        print("create of w-%d failed: %s" % (i, err[:300]))
    api.call("DELETE", "/api/v1/namespaces/" + ns)
    if failed:
        sys.exit("%d of %d JvmDiagnostics creates failed" % (len(failed), m))
    if done != m:
        sys.exit("not every resource was reconciled")


if __name__ == "__main__":
    main()
