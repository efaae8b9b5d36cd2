#!/usr/bin/env python3
"""End-to-end against real parts: the real agent (standalone) is scraped by a real Prometheus
(1 s scrape and rule evaluation) loaded with RULES, with an Alertmanager and a webhook receiver
on loopback, while the ThreadDumpStorm JVM makes long ThreadDump safepoints and a storm of
"storm-worker-<n>" threads. Checks, printing PASS/FAIL lines:

  - both alerts (pause by vm_operation=ThreadDump, thread start rate by thread_name) reach the
    webhook within --timeout seconds, with descriptions naming workload, pod and culprit, and
    name who is behind them (requester, starter: the workload's main thread);
  - the JVM's own -Xlog:safepoint confirms a ThreadDump pause above the threshold (the alert
    is not a false positive) and the workload confirms the threads it started;
  - a second JVM (ThreadDumpStormLocks, -XX:+DTraceMonitorProbes, same pod labels) keeps 8
    threads contending on one java.security.SecureRandom and 4 "park-worker-<n>" threads
    parking: the blocked (parked) seconds Prometheus saw must match what the JVM measured
    itself, the threads blocked on it are its "lock-worker-N", and the chart's
    JvmDiagMonitorContentionHigh expression must name java.security.SecureRandom;
  - a third JVM (ThreadDumpStormUntraced, same pod labels) runs on a copy of the JDK whose
    libjvm.so has neither USDT notes nor symbols, with -XX:-UsePerfData: the agent can trace
    nothing in it, and the chart's JvmDiagJvmNotTraced expression must name it by pod;
  - two JVMs run the demo's pool-wait workload (examples/workloads: Jetty 12, HikariCP, H2), as
    pods pool-0 and idle-0 of the same resource: pool-0 with 250 clients for 8 connections (its
    request threads park waiting for a connection), idle-0 with one client (its idle threads park
    waiting for work). JvmDiagPoolSaturated must reach the webhook for pool-0 naming Jetty's pool
    and HikariCP's ConcurrentBag.borrow, never for idle-0; the parked threads Prometheus saw
    must match the threads HikariCP itself reports waiting for a connection;
  - every query of every dashboard on the agent's series returns data (those on series from
    outside the agent, the health row's, must be valid PromQL), and every metric the chart's
    rules use is one the agent exposes.

  alerts.py --agent BIN --rules RULES.yaml --work DIR [--jdk JAVA_HOME] [--pool-jars DIR]
            [--save-results DIR] [--timeout 150]

--pool-jars: the demo workloads' jars (examples/workloads/build.sh); without it no pool JVMs.

Stops everything it started, also on failure."""

import argparse
import glob
import json
import math
import os
import re
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MON = os.path.join(ROOT, "monitoring")
WORKLOADS = os.environ.get("JVMDIAG_WORKLOADS") or os.path.join(HERE, "workloads")
LABELS = {"namespace": "e2e", "jvmdiagnostics": "storm", "pod": "storm-0", "container": "app"}
PAUSE_LE = 0.05  # alerts-jvmdiagnostics.yaml: safepointPause 50ms
LOCKS_JVM = "ThreadDumpStormLocks"  # contains "ThreadDumpStorm": traced under the same --match-jvm
UNTRACED_JVM = "ThreadDumpStormUntraced"
# The pool-wait jar under two names (the agent names a JVM by its jar; --match-jvm keeps the
# ThreadDumpStorm prefix): saturated and idle, each its own pod of the same resource.
POOL_JVMS = {
    "ThreadDumpStormPool.jar": ("pool-0", "250"),
    "ThreadDumpStormPoolIdle.jar": ("idle-0", "1"),
}
POOL_SECONDS = 70
UNTRACED_SRC = "public class ThreadDumpStormUntraced { public static void main(String[] a) throws Exception { Thread.sleep(Long.parseLong(a[0]) * 1000); } }\n"
# Threads blocked on one SecureRandom (held 5 ms at a time) and threads parking 10 ms at a time;
# the JVM measures both itself (wall time around the contended enter / the park).
LOCKS_SRC = r"""
import java.security.SecureRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

public class ThreadDumpStormLocks {
    static final SecureRandom RANDOM = new SecureRandom();
    static final AtomicLong blockedNanos = new AtomicLong(), parkedNanos = new AtomicLong();
    static volatile boolean stop;

    public static void main(String[] args) throws Exception {
        long seconds = Long.parseLong(args[0]);
        Thread[] ts = new Thread[12];
        for (int i = 0; i < ts.length; i++) {
            boolean locker = i < 8;
            ts[i] = new Thread(locker ? ThreadDumpStormLocks::contend : ThreadDumpStormLocks::park,
                               (locker ? "lock-worker-" : "park-worker-") + i);
            ts[i].start();
        }
        Thread.sleep(seconds * 1000);
        stop = true;
        for (Thread t : ts) t.join();
        System.out.printf("blocked seconds: %.3f%nparked seconds: %.3f%n", blockedNanos.get() / 1e9, parkedNanos.get() / 1e9);
    }

    static void contend() {
        byte[] b = new byte[16];
        while (!stop) {
            long t0 = System.nanoTime();
            synchronized (RANDOM) {
                blockedNanos.addAndGet(System.nanoTime() - t0);
                RANDOM.nextBytes(b);
                try { Thread.sleep(5); } catch (InterruptedException e) { return; }
            }
        }
    }

    static void park() {
        while (!stop) {
            long t0 = System.nanoTime();
            LockSupport.parkNanos(10_000_000L);
            parkedNanos.addAndGet(System.nanoTime() - t0);
        }
    }
}
"""

results = {"pass": 0, "fail": 0}


def report(ok, msg):
    results["pass" if ok else "fail"] += 1
    print(("PASS " if ok else "FAIL ") + msg, flush=True)


def free_port():
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def prom(base, path, **params):
    return json.loads(get(f"{base}/api/v1/{path}?" + urllib.parse.urlencode(params), timeout=20))


def wait_for(fn, timeout, every=0.5):
    end = time.time() + timeout
    while time.time() < end:
        try:
            v = fn()
            if v:
                return v
        except Exception:
            pass
        time.sleep(every)
    return None


def dashboard_queries(start, end, base, exposed, save):
    now_range = f"{max(int(end - start), 30)}s"
    for path in sorted(glob.glob(os.path.join(ROOT, "dashboards", "jvm-diagnostics-*.json"))):
        d = json.load(open(path))
        name = os.path.basename(path)[:-5]
        saved = {"title": d["title"], "panels": []}
        for p in d["panels"]:
            if p["type"] == "row":
                continue
            sp = {
                "title": p["title"],
                "type": p["type"],
                "unit": p["fieldConfig"]["defaults"]["unit"],
                "gridPos": p["gridPos"],
                "targets": [],
            }
            for t in p["targets"]:
                expr = t["expr"]
                for var, val in (
                    # All, the variable's default: also matches series without the label.
                    ("$cluster", ".*"),
                    ("$namespace", LABELS["namespace"]),
                    ("$workload", LABELS["jvmdiagnostics"]),
                    ("$pod", LABELS["pod"]),
                    ("$__rate_interval", "15s"),
                    ("$__range", now_range),
                ):
                    expr = expr.replace(var, val)
                if t.get("instant"):
                    r = prom(base, "query", query=expr, time=end)
                    series = [
                        {"metric": s["metric"], "values": [s["value"]]} for s in r["data"]["result"]
                    ]
                else:
                    r = prom(base, "query_range", query=expr, start=start, end=end, step=2)
                    series = [
                        {"metric": s["metric"], "values": s["values"]} for s in r["data"]["result"]
                    ]
                finite = sum(1 for s in series for _, v in s["values"] if not math.isnan(float(v)))
                used = set(
                    re.sub(r"_(bucket|sum|count)$", "", m)
                    for m in re.findall(r"\bjvmdiag_[a-z_]+", expr)
                )
                missing = sorted(used - exposed)
                what = f"{name} / {p['title']} [{t['refId']}]"
                # The health row's queries read no agent series (Prometheus' own `up`, the API
                # server, kube-state-metrics, the operator): none of them runs here, so those
                # must only be valid PromQL, returning what they may.
                external = not any(not m.startswith("jvmdiag_operator_") for m in used)
                if external:
                    report(
                        r.get("status") == "success",
                        f"dashboard query on metrics from outside the agent is accepted: {what} "
                        f"({len(series)} series)",
                    )
                elif finite:
                    report(True, f"dashboard query returns data: {what} ({len(series)} series)")
                elif missing:
                    report(
                        False,
                        f"dashboard query uses metrics the agent does not expose ({', '.join(missing)}): {what}",
                    )
                else:
                    report(
                        False,
                        f"dashboard query returns no data although its metrics are exposed: {what}\n     {expr}",
                    )
                sp["targets"].append(
                    {
                        "expr": expr,
                        "legend": t.get("legendFormat", ""),
                        "instant": t.get("instant", False),
                        "series": series,
                        "missing": missing,
                    }
                )
            saved["panels"].append(sp)
        if save:
            os.makedirs(save, exist_ok=True)
            with open(os.path.join(save, name + ".json"), "w") as f:
                json.dump(saved, f)


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--agent", required=True)
    ap.add_argument("--rules", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--save-results")
    ap.add_argument(
        "--default-rules", help="the chart's rules: every agent metric they use must be exposed"
    )
    ap.add_argument("--timeout", type=float, default=150)
    ap.add_argument("--pool-jars", help="examples/workloads/build.sh's output: the pool JVMs' jars")
    ap.add_argument(
        "--jdk",
        default=os.environ.get("JDK17", "/usr/lib/jvm/java-17-openjdk-amd64"),
        help="JDK home the workload runs on",
    )
    a = ap.parse_args()
    work = os.path.abspath(a.work)
    os.makedirs(work, exist_ok=True)
    procs = []
    prom_dir = os.path.join(work, "prom")

    def stop_all():
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        subprocess.run([os.path.join(MON, "prom-down.sh"), prom_dir], capture_output=True)

    try:
        run(a, work, procs, prom_dir)
    finally:
        stop_all()
    print(f"e2e: {results['pass']} passed, {results['fail']} failed", flush=True)
    sys.exit(1 if results["fail"] else 0)


def run(a, work, procs, prom_dir):
    # The workload, compiled so the agent names it by its main class.
    classes = os.path.join(work, "classes")
    locks_src = os.path.join(work, LOCKS_JVM + ".java")
    with open(locks_src, "w") as f:
        f.write(LOCKS_SRC)
    untraced_src = os.path.join(work, UNTRACED_JVM + ".java")
    with open(untraced_src, "w") as f:
        f.write(UNTRACED_SRC)
    subprocess.run(
        [
            f"{a.jdk}/bin/javac",
            "-d",
            classes,
            os.path.join(WORKLOADS, "ThreadDumpStorm.java"),
            locks_src,
            untraced_src,
        ],
        check=True,
    )
    untraced_jdk = jdk_without_probes(a.jdk)

    port = free_port()
    agent_log = open(os.path.join(work, "agent.log"), "w")
    cmd = [a.agent, "--standalone", "--listen", f"127.0.0.1:{port}", "--exit-after", "600"]
    if "--match-jvm" in subprocess.run([a.agent, "--help"], capture_output=True, text=True).stdout:
        cmd += ["--match-jvm", "ThreadDumpStorm"]  # leave the other JVMs on this shared host alone
    procs.append(subprocess.Popen(cmd, stdout=agent_log, stderr=subprocess.STDOUT))
    metrics_url = f"http://127.0.0.1:{port}/metrics"
    if not wait_for(lambda: get(metrics_url), 60):
        report(False, "agent serves /metrics (see agent.log)")
        print(open(os.path.join(work, "agent.log")).read()[-3000:])
        return

    relabel = os.path.join(work, "relabel.yml")
    with open(relabel, "w") as f:
        jvms = "|".join(
            ["ThreadDumpStorm", LOCKS_JVM, UNTRACED_JVM, *(re.escape(j) for j in POOL_JVMS)]
        )
        for k, v in LABELS.items():
            f.write(
                f"- {{source_labels: [jvm], regex: '{jvms}', target_label: {k}, replacement: {v}}}\n"
            )
        for jvm, (pod, _) in POOL_JVMS.items():
            f.write(
                f"- {{source_labels: [jvm], regex: '{re.escape(jvm)}', target_label: pod, replacement: {pod}}}\n"
            )
    out = subprocess.run(
        [
            os.path.join(MON, "prom-up.sh"),
            "--dir",
            prom_dir,
            "--scrape",
            f"127.0.0.1:{port}",
            "--rules",
            a.rules,
            "--scrape-interval",
            "1s",
            "--eval-interval",
            "1s",
            "--metric-relabel",
            relabel,
            "--alertmanager",
            "--ttl",
            "600",
        ],
        capture_output=True,
        text=True,
    )
    if out.returncode:
        report(False, "prom-up.sh: " + out.stderr[-2000:])
        return
    env = dict(l.split("=", 1) for l in out.stdout.split())
    base, hook = env["PROMETHEUS_URL"], env["WEBHOOK_LOG"]

    splog = os.path.join(work, "safepoint.log")
    wl_out = open(os.path.join(work, "workload.log"), "w")
    start = time.time()
    wl = subprocess.Popen(
        [
            f"{a.jdk}/bin/java",
            f"-Xlog:safepoint:file={splog}",
            "-Xss512k",
            "-cp",
            classes,
            "ThreadDumpStorm",
            "--threads",
            "2000",
            "--depth",
            "150",
            "--dump-every",
            "4",
            "--storm-start",
            "6",
            "--storm-seconds",
            "30",
            "--storm-rate",
            "200",
            "--duration",
            "55",
        ],
        stdout=wl_out,
        stderr=subprocess.STDOUT,
    )
    procs.append(wl)
    locks_out = open(os.path.join(work, "locks.log"), "w")
    locks = subprocess.Popen(
        [f"{a.jdk}/bin/java", "-XX:+DTraceMonitorProbes", "-cp", classes, LOCKS_JVM, "50"],
        stdout=locks_out,
        stderr=subprocess.STDOUT,
    )
    procs.append(locks)
    procs.append(
        subprocess.Popen(
            [f"{untraced_jdk}/bin/java", "-XX:-UsePerfData", "-cp", classes, UNTRACED_JVM, "50"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
        )
    )

    pools = start_pools(a, work, procs) if a.pool_jars else {}

    want = {
        "JvmDiagSafepointPauseHigh": ("vm_operation", "ThreadDump"),
        "JvmDiagThreadStartRateHigh": ("thread_name", "storm-worker-N"),
    }
    got = {}

    def check_hook():
        if os.path.exists(hook):
            for line in open(hook):
                n = json.loads(line)
                for al in n.get("alerts", []):
                    l = al["labels"]
                    w = want.get(l.get("alertname"))
                    if (
                        w
                        and al["status"] == "firing"
                        and l.get(w[0]) == w[1]
                        and l.get("jvm") == "ThreadDumpStorm"
                        and l.get("alertname") not in got
                    ):
                        got[l["alertname"]] = (time.time() - start, al)
        return len(got) == len(want)

    wait_for(check_hook, a.timeout, every=1)
    for name, (label, value) in want.items():
        if name in got:
            secs, al = got[name]
            report(
                True,
                f'{name} {{{label}="{value}"}} reached the Alertmanager webhook {secs:.0f}s after the JVM started',
            )
            d = al["annotations"].get("description", "")
            named = all(s in d for s in ("storm-0", "storm", value))
            report(
                named
                and al["annotations"].get("runbook_url", "").endswith(f"/docs/runbooks/{name}.md"),
                f"{name}: description names workload, pod and culprit: {d}",
            )
        else:
            report(
                False,
                f'{name} {{{label}="{value}"}} did not reach the webhook within {a.timeout:.0f}s',
            )
            print(prom(base, "alerts"))

    # Who is behind them, as the workload knows it: its main thread (native name "java") runs
    # the thread dumps and starts the storm's threads. The starter comes from the agent's
    # on-demand probe, attached once the storm passes 50/s: the alert may first fire without it.
    behind = {
        "JvmDiagSafepointPauseHigh": ("requester", "java"),
        "JvmDiagThreadStartRateHigh": ("starter", "java"),
    }
    seen_behind = {name: set() for name in behind}

    def behind_named():
        for line in open(hook) if os.path.exists(hook) else []:
            for al in json.loads(line).get("alerts", []):
                l = al["labels"]
                if (
                    l.get("alertname") in behind
                    and l.get("jvm") == "ThreadDumpStorm"
                    and al["status"] == "firing"
                ):
                    seen_behind[l["alertname"]].add(l.get(behind[l["alertname"]][0], ""))
        return all(v in seen_behind[n] for n, (_, v) in behind.items())

    wait_for(behind_named, 60, every=1)
    for name, (label, value) in behind.items():
        report(
            value in seen_behind[name],
            f'{name} names who is behind it: {label}="{value}" (alerts seen with {label}: {sorted(seen_behind[name])})',
        )

    # Independent confirmation from the JVM itself.
    wl.wait(timeout=max(5, 90 - (time.time() - start)))
    locks.wait(timeout=max(5, 90 - (time.time() - start)))
    end = time.time()
    pauses = [
        int(m) / 1e9
        for m in re.findall(r'Safepoint "ThreadDump".*Total: (\d+) ns', open(splog).read())
    ]
    report(
        any(p > PAUSE_LE for p in pauses),
        f"-Xlog:safepoint confirms ThreadDump pauses above {PAUSE_LE}s: longest {max(pauses, default=0):.3f}s of {len(pauses)}",
    )
    m = re.search(r"storm threads started: (\d+)", open(os.path.join(work, "workload.log")).read())
    started = int(m.group(1)) if m else 0
    report(started >= 1500, f"the workload started {started} storm threads")

    # What the agent exposed during the run, as Prometheus ingested it (series of an exited JVM
    # leave /metrics, so the page alone is not enough).
    names = prom(
        base, "label/__name__/values", **{"match[]": '{job="jvmdiag"}', "start": start, "end": end}
    )["data"]
    exposed = set(re.sub(r"_(bucket|sum|count)$", "", n) for n in names)
    # The storm's thread count as Prometheus saw it, against the workload's own count.
    r = prom(
        base,
        "query",
        query='max(max_over_time(jvmdiag_thread_starts_total{jvm="ThreadDumpStorm", thread_name="storm-worker-N"}[5m]))',
        time=end,
    )["data"]["result"]
    seen = float(r[0]["value"][1]) if r else 0
    report(
        started and 0.95 * started <= seen <= started,
        f"Prometheus counted {seen:.0f} storm-worker-N thread starts for {started} started by the JVM",
    )
    # Exactness hinges on the `le` strings: every bound an alert can name must be exposed as
    # exactly that string (docs/metrics.md), or an alert on it silently never fires.
    sys.path.insert(0, MON)
    from mixin.config import LE_BOUNDS

    for h in ("jvmdiag_safepoint_pause_seconds", "jvmdiag_safepoint_sync_seconds"):
        r = prom(
            base, "query", query=f'count by (le) ({h}_bucket{{jvm="ThreadDumpStorm"}})', time=end
        )["data"]["result"]
        les = sorted((x["metric"]["le"] for x in r), key=float)
        report(
            les == LE_BOUNDS + ["+Inf"],
            f"{h} exposes exactly the bucket bounds alerts use: {' '.join(les)}",
        )
    if a.default_rules:
        import yaml

        groups = yaml.safe_load(open(a.default_rules))["groups"]
        used = {
            re.sub(r"_(bucket|sum|count)$", "", m)
            for g in groups
            for r in g["rules"]
            for m in re.findall(r"\bjvmdiag_[a-z_]+", r["expr"])
        }
        for m in sorted(used):
            if m.startswith("jvmdiag_operator_"):
                continue  # the operator's, not the agent's
            if m in exposed:
                report(True, f"chart rules use {m}: the agent exposes it")
            else:
                report(False, f"chart rules use {m}: the agent does not expose it")
    locks_checks(base, start, end, os.path.join(work, "locks.log"), a.default_rules)
    if pools:
        pool_checks(base, hook, start, pools, a.default_rules)
    if a.default_rules:
        untraced_check(base, start, end, a.default_rules)
    dashboard_queries(start, end, base, exposed, a.save_results)


def start_pools(a, work, procs):
    """The pool-wait JVMs, each under its own jar name (symlinks beside a link to its lib/)."""
    lib = os.path.join(work, "lib")
    if not os.path.exists(lib):
        os.symlink(os.path.join(os.path.abspath(a.pool_jars), "lib"), lib)
    pools = {}
    for jvm, (pod, clients) in POOL_JVMS.items():
        jar = os.path.join(work, jvm)
        if not os.path.exists(jar):
            os.symlink(os.path.join(os.path.abspath(a.pool_jars), "pool-wait.jar"), jar)
        log = os.path.join(work, jvm + ".log")
        p = subprocess.Popen(
            [
                f"{a.jdk}/bin/java",
                "-Xmx256m",
                "-jar",
                jar,
                "platform",
                clients,
                "8",
                "30",
                str(POOL_SECONDS),
            ],
            stdout=open(log, "w"),
            stderr=subprocess.STDOUT,
        )
        procs.append(p)
        pools[pod] = (jvm, p, log)
    return pools


def pool_checks(base, hook, start, pools, default_rules):
    """JvmDiagPoolSaturated on the saturated pool-wait JVM, naming Jetty's pool and HikariCP's
    wait, never on the idle one; its parked threads against HikariCP's own waiting count."""
    fired = {}

    def pool_alerts():
        for line in open(hook) if os.path.exists(hook) else []:
            for al in json.loads(line).get("alerts", []):
                l = al["labels"]
                if l.get("alertname") == "JvmDiagPoolSaturated" and al["status"] == "firing":
                    fired.setdefault(l.get("pod"), al)
        return "pool-0" in fired

    wait_for(pool_alerts, max(10, start + POOL_SECONDS - time.time()), every=1)
    al = fired.get("pool-0")
    l, d = (al["labels"], al["annotations"].get("description", "")) if al else ({}, "")
    report(
        bool(al)
        and l.get("thread_name") == "qtpN-N"
        and "at com.zaxxer.hikari.util.ConcurrentBag.borrow." in d,
        f"JvmDiagPoolSaturated reached the webhook for pod pool-0 naming Jetty's pool "
        f"({l.get('thread_name')}) and HikariCP's wait: {d or '(none)'}",
    )
    for _, p, _ in pools.values():
        try:
            p.wait(timeout=max(5, start + POOL_SECONDS + 30 - time.time()))
        except subprocess.TimeoutExpired:
            pass
    end = time.time()
    pool_alerts()
    report(
        "idle-0" not in fired,
        f"JvmDiagPoolSaturated never fired for the idle pool (pod idle-0): {fired.get('idle-0', {}).get('labels')}",
    )
    if default_rules:
        r = chart_rule_series(base, start, end, default_rules, "JvmDiagPoolSaturated")
        if r is not None:
            pods = sorted({x["metric"].get("pod", "") for x in r})
            report(
                pods == ["pool-0"],
                f"the chart's JvmDiagPoolSaturated expression selects pod pool-0 alone: {pods}",
            )
    # HikariCP's own count of threads waiting for a connection (sampled every 10 s by the
    # workload), against the Jetty pool's parked threads Prometheus saw over the same time.
    jvm, _, log = pools["pool-0"]
    waiting = [int(w) for w in re.findall(r" (\d+) waiting;", open(log).read())][1:]
    r = prom(
        base,
        "query",
        query=(
            f'sum(rate(jvmdiag_thread_parked_seconds_total{{jvm="{jvm}", thread_name="qtpN-N", via="park"}}'
            f"[{max(20, POOL_SECONDS - 20)}s]))"
        ),
        time=start + POOL_SECONDS - 5,
    )["data"]["result"]
    parked = float(r[0]["value"][1]) if r else 0.0
    mean = sum(waiting) / len(waiting) if waiting else 0.0
    report(
        bool(waiting) and 0.8 * mean <= parked <= 1.2 * mean + 2,
        f"pool-0's Jetty threads parked {parked:.1f} on average (Prometheus); HikariCP counted {mean:.1f} waiting for a connection ({waiting})",
    )


def jdk_without_probes(jdk):
    """A copy of the JDK (hard links, made once in the cache) whose libjvm.so has neither USDT
    notes nor symbols: the agent can attach no probe to it."""
    real = os.path.realpath(jdk)
    cache = os.environ.get("JVMDIAG_CACHE", os.path.expanduser("~/.cache/jvm-diagnostics"))
    d = os.path.join(cache, "jdk-variants", f"alerts-{os.path.basename(real)}-noprobes")
    if not os.path.exists(os.path.join(d, "bin", "java")):
        tmp = f"{d}.tmp{os.getpid()}"
        subprocess.run(["rm", "-rf", tmp], check=True)
        os.makedirs(os.path.dirname(tmp), exist_ok=True)
        subprocess.run(["cp", "-al", real, tmp], check=True)
        lib = os.path.join(tmp, "lib", "server", "libjvm.so")
        subprocess.run(
            ["objcopy", "--strip-all", "--remove-section", ".note.stapsdt", lib, lib + ".new"],
            check=True,
        )
        os.replace(lib + ".new", lib)  # a new inode: the real JDK's file is untouched
        os.rename(tmp, d)
    return d


def chart_rule_series(base, start, end, default_rules, alert):
    """The label sets the chart's expression of ALERT selected during the run (None: no such rule)."""
    import yaml

    rule = next(
        (
            r
            for g in yaml.safe_load(open(default_rules))["groups"]
            for r in g["rules"]
            if r.get("alert") == alert
        ),
        None,
    )
    if rule is None:
        report(False, f"the chart rules have {alert}")
        return None
    return prom(base, "query_range", query=rule["expr"], start=start, end=end, step=2)["data"][
        "result"
    ]


def untraced_check(base, start, end, default_rules):
    """The chart's JvmDiagJvmNotTraced expression names the JVM the agent cannot trace by its pod."""
    r = chart_rule_series(base, start, end, default_rules, "JvmDiagJvmNotTraced")
    if r is None:
        return
    hits = [x["metric"] for x in r if x["metric"].get("jvm") == UNTRACED_JVM]
    others = [x["metric"] for x in r if x["metric"].get("jvm") not in (None, UNTRACED_JVM)]
    report(
        bool(hits)
        and all(
            m.get("pod") == LABELS["pod"] and m.get("reason") == "no_probes_no_hsperfdata"
            for m in hits
        )
        and not others,
        f"the chart's JvmDiagJvmNotTraced expression names {UNTRACED_JVM} in pod {LABELS['pod']} and no traced JVM: "
        f"{hits[:1]} (others: {others[:2]})",
    )


def locks_checks(base, start, end, log, default_rules):
    """The monitors and parking collectors against what the ThreadDumpStormLocks JVM measured."""
    text = open(log).read()
    own = {k: float(v) for k, v in re.findall(r"(blocked|parked) seconds: ([0-9.]+)", text)}
    if len(own) != 2:
        report(False, f"{LOCKS_JVM} ran and measured its blocked and parked time: {text[-500:]}")
        return
    rng = f"{int(end - start) + 30}s"
    for what, metric, sel in (
        (
            "blocked",
            "jvmdiag_monitor_blocked_seconds_sum",
            'monitor_class="java.security.SecureRandom"',
        ),
        ("parked", "jvmdiag_thread_parked_seconds_total", 'thread_name="park-worker-N"'),
    ):
        series = prom(
            base, "query", query=f'max_over_time({metric}{{jvm="{LOCKS_JVM}"}}[{rng}])', time=end
        )["data"]["result"]
        if not series:
            report(
                False,
                f"{metric} exposed for {LOCKS_JVM}, which measured {own[what]:.1f}s {what} itself",
            )
            continue
        r = prom(
            base,
            "query",
            query=f'sum(max_over_time({metric}{{jvm="{LOCKS_JVM}", {sel}}}[{rng}]))',
            time=end,
        )["data"]["result"]
        seen = float(r[0]["value"][1]) if r else 0.0
        # The last second before the JVM exits may miss the last scrape (1 s interval).
        ok = 0.8 * own[what] <= seen <= 1.05 * own[what] + 0.5
        report(
            ok,
            f"Prometheus saw {seen:.1f}s {what} ({sel}) for {own[what]:.1f}s the JVM measured itself",
        )
    # Which threads blocked: only the workload's lock-worker-<n> threads lock the SecureRandom.
    r = prom(
        base,
        "query",
        query=(
            f"sum by (thread_name, monitor_class) (max_over_time("
            f'jvmdiag_monitor_contended_total{{jvm="{LOCKS_JVM}"}}[{rng}]))'
        ),
        time=end,
    )["data"]["result"]
    pairs = {
        (x["metric"].get("thread_name"), x["metric"].get("monitor_class")): float(x["value"][1])
        for x in r
    }
    on_random = sorted(t for t, c in pairs if c == "java.security.SecureRandom")
    top = max(pairs, key=pairs.get) if pairs else None
    report(
        on_random == ["lock-worker-N"] and top == ("lock-worker-N", "java.security.SecureRandom"),
        f"the threads blocked on java.security.SecureRandom are named {on_random} (the workload's lock-worker-N), "
        f"the most contended enters: {top} {pairs.get(top, 0):.0f}",
    )
    if default_rules:
        r = chart_rule_series(base, start, end, default_rules, "JvmDiagMonitorContentionHigh")
        if r is None:
            return
        hits = [x["metric"] for x in r if x["metric"].get("jvm") == LOCKS_JVM]
        if hits:
            named = {m.get("monitor_class") for m in hits}
            report(
                named == {"java.security.SecureRandom"}
                and all(m.get("pod") == LABELS["pod"] for m in hits),
                f"the chart's JvmDiagMonitorContentionHigh expression names {sorted(named)} in pod {LABELS['pod']}",
            )
        else:
            report(
                False,
                f"the chart's JvmDiagMonitorContentionHigh expression finds no contention in {LOCKS_JVM}",
            )


if __name__ == "__main__":
    main()
