#!/usr/bin/env python3
"""The operator at platform size, against a live control plane (KUBECONFIG) and a running replica
(SCALE_PID, SCALE_METRICS_URL) that hack/bench.d/operator-scale.sh started from the published image
in a memory cgroup (SCALE_LIMIT_BYTES). In order:
  1. workloads: SCALE_DEPLOYMENTS Deployments (each about 8 KB as the API returns it: labels,
     annotations with kubectl's last-applied copy, two containers with env, probes, resources and
     mounts; managedFields from the API server) and SCALE_STATEFULSETS StatefulSets, over
     SCALE_NAMESPACES namespaces, replicas 0 (their pods are step 3's);
  2. SCALE_RESOURCES JvmDiagnostics, four fifths on Deployments and one fifth on StatefulSets
     (targeting half of the workloads at the default sizes): from the first and from the last
     create until every one reports TargetFound=True for its generation;
  3. SCALE_PODS labelled pods of those targets (schedulerName that no scheduler serves: they stay
     Pending, which is all the caches and the webhook need), each through the mutating webhook;
  4. the webhook while SCALE_POD_RATE labelled pods a second are created for SCALE_POD_SECONDS:
     the round trip and the handler's own time (p50, p99, max);
  5. a standby replica started (SCALE_STANDBY: the command, its arguments after it), the leader
     killed (SIGKILL): when the standby holds the Lease, when its caches are synced (reconciler
     running), and when a resource created right after the kill is reconciled;
  6. the new leader for SCALE_STEADY_SECONDS: heap committed (jcmd GC.heap_info) and RSS against
     the memory limit every 30 s, restarts; then what its heap retains after a full GC and its top
     types (GC.class_histogram, kept in SCALE_OUT).
Also: the largest status of a resource, events per resource, and the jvmdiag_operator_ series
before and after the pods (they must not grow with pods). Prints a markdown table with the load
average before and after; exits non-zero when a target of docs/performance.md is missed."""

import concurrent.futures
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import (  # noqa: E402
    buckets_of,
    delta,
    histogram_quantile,
    is_reconciled,
    load_average,
    pct,
    thread_api,
)

GROUP = "/apis/jvm.diagnostics.dev/v1alpha1"
ADMISSION = "jvmdiag_operator_admission_duration_seconds"
INJECT = "jvm.diagnostics.dev/inject"
UNSCHEDULED = "jvmdiag-bench-unscheduled"  # no scheduler has this name: pods stay Pending


def env_int(name, default):
    return int(os.environ.get(name, default))


DEPLOYMENTS = env_int("SCALE_DEPLOYMENTS", 20000)
STATEFULSETS = env_int("SCALE_STATEFULSETS", 5000)
RESOURCES = env_int("SCALE_RESOURCES", 10000)
PODS = env_int("SCALE_PODS", 50000)
NAMESPACES = env_int("SCALE_NAMESPACES", max(1, (DEPLOYMENTS + STATEFULSETS) // 500))
CREATORS = env_int("SCALE_CREATORS", 16)
POD_RATE = env_int("SCALE_POD_RATE", 50)
POD_SECONDS = env_int("SCALE_POD_SECONDS", 120)
STEADY_SECONDS = env_int("SCALE_STEADY_SECONDS", 1800)
LIMIT = env_int("SCALE_LIMIT_BYTES", 512 << 20)
OUT = os.environ.get("SCALE_OUT", ".")


def progress(what, done, total, t0):
    if total and (done % max(1, total // 10) == 0 or done == total):
        print("  %s: %d/%d (%.0f s)" % (what, done, total, time.time() - t0), flush=True)


def create_all(what, items, make):
    """POSTs every item by CREATORS parallel clients; returns [(i, ms, error)]."""
    t0 = time.time()
    count = [0]
    lock = threading.Lock()

    def one(i):
        path, body = make(i)
        t = time.perf_counter()
        s, out = thread_api().call("POST", path, body)
        ms = (time.perf_counter() - t) * 1000
        with lock:
            count[0] += 1
            progress(what, count[0], len(items), t0)
        return i, ms, None if s == 201 else "%s %s" % (s, (out or {}).get("message", out))

    with concurrent.futures.ThreadPoolExecutor(CREATORS) as pool:
        return list(pool.map(one, items))


def ns_of(i):
    return "scale-%d" % (i % NAMESPACES)


def container_spec(name):
    env = [{"name": "SPRING_PROFILES_ACTIVE", "value": "production"}]
    env += [{"name": "FEATURE_%d" % k, "value": "on"} for k in range(2)]
    env.append({"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}})
    probe = {"httpGet": {"path": "/actuator/health", "port": 8081}, "periodSeconds": 10}
    return [
        {
            "name": "app",
            "image": "registry.example.com/shop/%s:2026.11.3" % name,
            "ports": [
                {"containerPort": 8080, "name": "http"},
                {"containerPort": 8081, "name": "mgmt"},
            ],
            "env": env,
            "resources": {
                "requests": {"cpu": "500m", "memory": "1Gi"},
                "limits": {"memory": "2Gi"},
            },
            "livenessProbe": probe,
            "readinessProbe": probe,
            "volumeMounts": [{"name": "config", "mountPath": "/etc/app"}],
        },
        {
            "name": "proxy",
            "image": "registry.example.com/mesh/proxy:1.22.3",
            "args": ["proxy", "sidecar", "--concurrency", "2"],
            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
        },
    ]


def template(name):
    """The pod template of workload NAME: its labels and pod spec (its pods are made from it)."""
    return {
        "metadata": {
            "labels": {
                "app.kubernetes.io/name": name,
                "app.kubernetes.io/part-of": "shop",
                "app.kubernetes.io/version": "2026.11.3",
                "team": "payments",
            },
            "annotations": {"prometheus.io/scrape": "true"},
        },
        "spec": {
            "containers": container_spec(name),
            "volumes": [{"name": "config", "configMap": {"name": name + "-config"}}],
        },
    }


def workload(kind, name):
    """A Deployment or StatefulSet as a team's manifest makes it, kubectl's copy included."""
    t = template(name)
    spec = {
        "replicas": 0,
        "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
        "template": t,
    }
    if kind == "StatefulSet":
        spec["serviceName"] = name
    obj = {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {
            "name": name,
            "labels": t["metadata"]["labels"],
            "annotations": {
                "owner": "payments@example.com",
                "runbook": "https://runbooks.example.com/" + name,
            },
        },
        "spec": spec,
    }
    obj["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = json.dumps(
        obj, separators=(",", ":")
    )
    return obj


def targets():
    """(namespace, kind, name) of every resource's target: four fifths Deployments."""
    out = []
    for r in range(RESOURCES):
        if r % 5 == 4 and STATEFULSETS:
            i = (r // 5) % STATEFULSETS
            out.append((ns_of(i), "StatefulSet", "s-%d" % i))
        else:
            i = (r - r // 5) % DEPLOYMENTS
            out.append((ns_of(i), "Deployment", "d-%d" % i))
    return out


def resource(name, kind, target):
    return {
        "apiVersion": "jvm.diagnostics.dev/v1alpha1",
        "kind": "JvmDiagnostics",
        "metadata": {"name": name},
        "spec": {"targetRef": {"kind": kind, "name": target}},
    }


def pod(target, resource_name, name):
    """A labelled pod of TARGET (namespace, kind, name): its template's labels and pod spec, our
    label, and a scheduler no one runs."""
    ns, _, workload_name = target
    t = template(workload_name)
    t["metadata"]["labels"][INJECT] = resource_name
    t["spec"]["schedulerName"] = UNSCHEDULED
    return (
        "/api/v1/namespaces/%s/pods" % ns,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": t["metadata"]["labels"]},
            "spec": t["spec"],
        },
    )


def list_all(path):
    """Every item of a LIST, in pages of 500."""
    items, cont = [], ""
    while True:
        s, body = thread_api().call(
            "GET", path + "?limit=500" + ("&continue=" + cont if cont else "")
        )
        assert s == 200, (s, body)
        items += body["items"]
        cont = body["metadata"].get("continue")
        if not cont:
            return items


def wait_reconciled(names, deadline):
    """Seconds since the epoch when each of names (namespace, name) was first seen reconciled."""
    seen = {}
    while len(seen) < len(names) and time.time() < deadline:
        now = time.time()
        for it in list_all(GROUP + "/jvmdiagnostics"):
            key = (it["metadata"]["namespace"], it["metadata"]["name"])
            if key in names and key not in seen and is_reconciled(it):
                seen[key] = now
        if len(seen) < len(names):
            time.sleep(2)
    return seen


def metrics(url):
    return urllib.request.urlopen(url, timeout=10).read().decode()


def metric_value(text, name):
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    return None


def operator_series(text):
    return sum(1 for line in text.splitlines() if line.startswith("jvmdiag_operator_"))


def rss(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def jcmd(pid, *what):
    return subprocess.run(
        [os.environ.get("SCALE_JCMD", "jcmd"), str(pid), *what],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout


def heap_committed(pid):
    """Heap committed (bytes) as GC.heap_info states it: G1's 'committed NK', or the sum of the
    generations' 'total NK' (Serial, which the JVM picks under a limit below 1,792 MiB)."""
    out = jcmd(pid, "GC.heap_info")
    g1 = re.search(r"committed (\d+)K", out)
    if g1:
        return int(g1.group(1)) * 1024
    gens = re.findall(r"^\S+\s+total (\d+)K", out, re.M)
    if gens:
        return sum(int(k) for k in gens) * 1024
    print("  (jcmd %d GC.heap_info: %s)" % (pid, out.strip()[:200]), flush=True)
    return None


def mib(b):
    return "%.0f MiB" % (b / 1048576.0)


def main():
    load0 = load_average()
    pid = int(os.environ["SCALE_PID"])
    url = os.environ["SCALE_METRICS_URL"]
    rows, missed = [], []

    def row(measure, value, target=None, ok=True):
        verdict = "" if target is None else "%s: %s" % (target, "met" if ok else "NOT met")
        rows.append("| %s | %s | %s |" % (measure, value, verdict))
        print("  " + rows[-1], flush=True)
        if not ok:
            missed.append(measure)

    print(
        "sizes: %d Deployments, %d StatefulSets, %d JvmDiagnostics, %d labelled pods, %d namespaces"
        % (DEPLOYMENTS, STATEFULSETS, RESOURCES, PODS, NAMESPACES),
        flush=True,
    )
    # 1. workloads
    t = time.time()
    for n in range(NAMESPACES):
        thread_api().call(
            "POST",
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "scale-%d" % n}},
        )
    kinds = [
        ("Deployment", "deployments", "d", DEPLOYMENTS),
        ("StatefulSet", "statefulsets", "s", STATEFULSETS),
    ]
    for kind, plural, prefix, count in kinds:
        res = create_all(
            plural,
            range(count),
            lambda i, k=kind, p=plural, x=prefix: (
                "/apis/apps/v1/namespaces/%s/%s" % (ns_of(i), p),
                workload(k, "%s-%d" % (x, i)),
            ),
        )
        bad = [e for _, _, e in res if e and "AlreadyExists" not in e and "already exists" not in e]
        assert not bad, bad[:3]
    s, one = thread_api().call("GET", "/apis/apps/v1/namespaces/%s/deployments/d-0" % ns_of(0))
    row(
        "Deployments / StatefulSets created (size of one as the API returns it)",
        "%d / %d in %.0f s (%.1f KB)"
        % (DEPLOYMENTS, STATEFULSETS, time.time() - t, len(json.dumps(one)) / 1000.0),
    )

    # 2. resources
    tg = targets()

    def make_resource(r):
        ns, kind, target = tg[r]
        return GROUP + "/namespaces/%s/jvmdiagnostics" % ns, resource("r-%d" % r, kind, target)

    t0 = time.time()
    res = create_all("JvmDiagnostics", range(RESOURCES), make_resource)
    t_last = time.time()
    failed = [(i, e) for i, _, e in res if e]
    want = {(tg[i][0], "r-%d" % i) for i, _, e in res if not e}
    seen = wait_reconciled(want, time.time() + 900)
    done = max(seen.values()) if seen else time.time()
    create_ms = [ms for _, ms, _ in res]
    row(
        "JvmDiagnostics creates (validating webhook): refused, p50 / p99 / max",
        "%d; %.0f / %.0f / %.0f ms"
        % (len(failed), pct(create_ms, 50), pct(create_ms, 99), max(create_ms)),
        "none refused",
        not failed,
    )
    row("first create → all reconciled", "%.0f s (%d/%d)" % (done - t0, len(seen), len(want)))
    row(
        "last create → all reconciled",
        "%.0f s" % (done - t_last),
        "≤ 120 s",
        len(seen) == len(want) and done - t_last <= 120,
    )

    # 3. pods
    before_pods = operator_series(metrics(url))
    t = time.time()
    res = create_all(
        "labelled pods",
        range(PODS),
        lambda i: pod(tg[i % RESOURCES], "r-%d" % (i % RESOURCES), "p-%d" % i),
    )
    bad = [e for _, _, e in res if e]
    row(
        "labelled pods created through the webhook (Pending)",
        "%d in %.0f s, %d failed" % (PODS - len(bad), time.time() - t, len(bad)),
        "none failed",
        not bad,
    )
    time.sleep(10)
    after_pods = operator_series(metrics(url))
    row(
        "jvmdiag_operator_ series before / after the pods",
        "%d / %d" % (before_pods, after_pods),
        "no growth with pods",
        after_pods <= before_pods + 20,
    )

    # 4. the webhook at SCALE_POD_RATE pods a second
    h0 = buckets_of(metrics(url), ADMISSION)
    rts, lock = [], threading.Lock()
    stop = time.time() + POD_SECONDS

    def paced(k):
        i = 0
        while True:
            due = t_start + (i * 4 + k) / float(POD_RATE)
            if due > stop:
                return
            time.sleep(max(0.0, due - time.time()))
            r = (i * 4 + k) % RESOURCES
            path, body = pod(tg[r], "r-%d" % r, "q-%d-%d" % (k, i))
            a = time.perf_counter()
            s, out = thread_api().call("POST", path, body)
            with lock:
                rts.append(((time.perf_counter() - a) * 1000, s == 201))
            i += 1

    t_start = time.time()
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        list(pool.map(paced, range(4)))
    took = time.time() - t_start
    hb = delta(h0, buckets_of(metrics(url), ADMISSION))
    ok_rt = [ms for ms, ok in rts if ok]
    _, u99, e99 = histogram_quantile(hb, 0.99)
    _, _, e50 = histogram_quantile(hb, 0.5)
    row(
        "webhook, %d pods/s offered for %d s: pods created (rate the API server kept), round trip"
        " p50 / p99 / max" % (POD_RATE, POD_SECONDS),
        "%d in %.0f s (%.0f/s); %.1f / %.1f / %.1f ms"
        % (len(ok_rt), took, len(ok_rt) / took, pct(ok_rt, 50), pct(ok_rt, 99), max(ok_rt)),
    )
    row(
        "webhook handler time in the operator, p50 / p99 (interpolated; p99's bucket bound)",
        "%.2f ms / %.2f ms (≤ %g ms)" % (e50 * 1000, e99 * 1000, u99 * 1000),
        "p99 ≤ 5 ms",
        u99 <= 0.005,
    )

    # status and events bounded
    items = list_all(GROUP + "/jvmdiagnostics")
    biggest = max(len(json.dumps(it.get("status") or {})) for it in items)
    s, ev = thread_api().call("GET", "/api/v1/namespaces/%s/events?limit=5000" % ns_of(0))
    on_resources = [
        e for e in ev.get("items", []) if e["involvedObject"].get("kind") == "JvmDiagnostics"
    ]
    per = len(on_resources) / max(
        1, sum(1 for it in items if it["metadata"]["namespace"] == ns_of(0))
    )
    row(
        "largest status of a resource; events per resource (namespace %s)" % ns_of(0),
        "%d bytes; %.2f" % (biggest, per),
        "status ≤ 16 KB",
        biggest <= 16384,
    )

    # 5. leader change
    standby = os.environ["SCALE_STANDBY"].split()
    surl = os.environ["SCALE_STANDBY_METRICS_URL"]
    sp = subprocess.Popen(
        standby,
        stdout=open(os.path.join(OUT, "standby.log"), "w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    t = time.time()
    while time.time() < t + 180:
        try:
            metrics(surl)
            break
        except OSError:
            time.sleep(1)
    row("standby replica: start → metrics served", "%.0f s" % (time.time() - t))
    # on a cluster both replicas are behind one Service; here each has its own URL, and the
    # standby registers its own at its start: the kill comes once the API server calls the standby
    config = (
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/"
        + os.environ["SCALE_WEBHOOK_CONFIG"]
    )
    standby_url = os.environ["SCALE_STANDBY_WEBHOOK_URL"]
    while time.time() < t + 240:
        s, vwc = thread_api().call("GET", config)
        if s == 200 and all(
            standby_url in (w["clientConfig"].get("url") or "")
            for w in vwc.get("webhooks") or [{"clientConfig": {}}]
        ):
            break
        time.sleep(1)
    else:
        sys.exit("the standby did not register its webhook URL %s in 240 s" % standby_url)
    # the workload of the resource created after the kill exists before it
    ns = ns_of(0)
    kind, target = "Deployment", "late-%d" % os.getpid()
    s, out = thread_api().call(
        "POST", "/apis/apps/v1/namespaces/%s/deployments" % ns, workload(kind, target)
    )
    assert s == 201, (s, out)
    late = (ns, target)
    os.kill(pid, signal.SIGKILL)
    t_kill = time.time()
    while time.time() < t_kill + 120:
        s, out = thread_api().call(
            "POST", GROUP + "/namespaces/%s/jvmdiagnostics" % ns, resource(late[1], kind, target)
        )
        if s == 201:
            break
        print(
            "  create of %s after the kill: %s %s" % (late[1], s, (out or {}).get("message", out)),
            flush=True,
        )
        time.sleep(1)
    running = None
    while time.time() < t_kill + 300:
        try:
            if metric_value(metrics(surl), "jvmdiag_operator_reconciler_running") == 1:
                running = time.time()
                break
        except OSError:
            pass
        time.sleep(0.5)
    seen = wait_reconciled({late}, t_kill + 300)
    row(
        "leader killed → standby reconciling (Lease taken, caches synced)",
        "%.0f s" % ((running or time.time()) - t_kill),
        "≤ 60 s",
        running is not None and running - t_kill <= 60,
    )
    row(
        "leader killed → a resource created right after it reconciled",
        "%.0f s" % (seen[late] - t_kill) if late in seen else "not in 300 s",
        "≤ 60 s",
        late in seen and seen[late] - t_kill <= 60,
    )

    # 6. steady
    print("steady for %d s (RSS and heap every 30 s)" % STEADY_SECONDS, flush=True)
    t, peak_rss, heaps = time.time(), 0, []
    alive = True
    while time.time() < t + STEADY_SECONDS:
        if sp.poll() is not None:
            alive = False
            break
        peak_rss = max(peak_rss, rss(sp.pid))
        h = heap_committed(sp.pid)
        if h:
            heaps.append(h)
        time.sleep(min(30, max(0, t + STEADY_SECONDS - time.time())))
    # the class histogram follows a full GC: its total is what the heap retains
    histogram = jcmd(sp.pid, "GC.class_histogram") if alive else ""
    with open(os.path.join(OUT, "class-histogram.txt"), "w") as f:
        f.write(histogram)
    total = [line.split() for line in histogram.splitlines() if line.startswith("Total")]
    live = int(total[0][2]) if total else None
    row(
        "leader alive after %d s at this size (no restart)" % STEADY_SECONDS,
        "yes" if alive else "NO",
        "no restart",
        alive,
    )
    row(
        "heap retained after a full GC (class histogram's total) / peak heap committed",
        "%s / %s" % (mib(live or 0), mib(max(heaps or [0]))),
        "≤ 256 MiB",
        live is not None and live <= 256 << 20,
    )
    committed = heap_committed(sp.pid) if alive else None
    row(
        "RSS at the end: heap committed + the rest (metaspace, code, threads, malloc)",
        "%s + %s" % (mib(committed or 0), mib(rss(sp.pid) - (committed or 0))) if alive else "-",
    )
    row(
        "peak RSS / memory limit",
        "%s / %s (%.0f %%)" % (mib(peak_rss), mib(LIMIT), 100.0 * peak_rss / LIMIT),
        "≤ 80 %",
        peak_rss <= 0.8 * LIMIT,
    )
    os.killpg(sp.pid, signal.SIGTERM)

    print()
    print("load average before: %s; after: %s" % (load0, load_average()))
    print()
    print("| measure | value | target |")
    print("|---|---|---|")
    print("\n".join(rows))
    print()
    print(
        "top types by retained bytes (GC.class_histogram; all of it in %s/class-histogram.txt):"
        % OUT
    )
    print("\n".join(histogram.splitlines()[:18]))
    if missed:
        sys.exit("missed: " + "; ".join(missed))


if __name__ == "__main__":
    main()
