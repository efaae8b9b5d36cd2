#!/usr/bin/env python3
"""The demo's thread-start rate checked against the JVM's own counter.

  rate-check.py --prometheus URL [--selector 'namespace="jvmdiag-demo"'] [--window 60] [--tolerance 1.25]
  rate-check.py --self-test

For every pod whose JVM the summary shows starting HandshakeCompletedNotify-Thread (the TLS
storm), reads the JVM's own `java.threads.started` twice, at least --window seconds apart
(`kubectl exec POD -- jcmd 1 PerfCounter.print`), and evaluates the summary's PromQL,
`sum(rate(jvmdiag_thread_starts_total{…}[W]))`, over the same window W with the query API's
`time=` at the second read. It prints, per pod:

  rate check: ok: thread-start rate of NS/POD: summary X/s, JVM's own java.threads.started Y/s (ratio r) …
  rate check: FAIL: thread-start rate of NS/POD: …: the agent's rate is k× the JVM's own …
  rate check: could not measure NS/POD: WHY

and exits 0 when every pod passed, 1 when a rate is off by more than the tolerance, 2 when
nothing could be measured.

Tolerance: the ratio must lie within [1/T, T], T = 1.25 by default. An agent that counts a
start once per attachment (one per container of the same JDK image) is off by a whole factor,
at least 2, so 2x fails with room to spare. What legitimately differs: the JVM's window is
exact (the JVM's own clock, `sun.os.hrt.ticks`, between the two reads), while rate() is the
slope between the first and the last scrape inside the window, i.e. it leaves out up to one
scrape interval (5 s) at each end. Over a 60 s window that is at most 10 s of 60: the ratio
stays within 0.9-1.1 unless the storm's own rate swings by more than half within those
seconds; 1.25 also covers a storm that stalls for several seconds at one end (a loaded node).
"""

import argparse
import json
import math
import subprocess
import sys
import time
import urllib.parse
import urllib.request

STORM_THREAD = "HandshakeCompletedNotify-Thread"
# The webhook puts flags in JAVA_TOOL_OPTIONS (e.g. -Xlog:safepoint to a file): a tool JVM
# started in the pod must not pick them up (it would rotate the application's log).
# Small and serial: it runs beside the storm inside the container's memory limit.
JCMD = "unset JAVA_TOOL_OPTIONS; exec jcmd -J-Xmx32m -J-XX:+UseSerialGC 1 PerfCounter.print"


def query(base, q, at=None):
    params = {"query": q}
    if at is not None:
        params["time"] = f"{at:.3f}"
    with urllib.request.urlopen(
        base + "/api/v1/query?" + urllib.parse.urlencode(params), timeout=10
    ) as r:
        d = json.load(r)
    if d.get("status") != "success":
        raise RuntimeError(f"query {q!r}: {d.get('error', d.get('status'))}")
    return d["data"]["result"]


def storm_series(base, sel):
    """(namespace, pod, container, jvm) of every JVM whose storm threads the summary shows."""
    extra = f",{sel}" if sel else ""
    rows = query(
        base,
        f"sum by (namespace, pod, container, jvm) "
        f'(rate(jvmdiag_thread_starts_total{{thread_name="{STORM_THREAD}"{extra}}}[1m])) > 0',
    )
    found = [
        (
            r["metric"].get("namespace", ""),
            r["metric"].get("pod", ""),
            r["metric"].get("container", ""),
            r["metric"].get("jvm", ""),
        )
        for r in rows
    ]
    return sorted(f for f in found if f[1])


def jvm_counters(ns, pod, container):
    """The JVM's perf counters and the wall-clock time of their read."""
    cmd = ["kubectl", "-n", ns, "exec", pod]
    if container:
        cmd += ["-c", container]
    t0 = time.time()
    p = subprocess.run(cmd + ["--", "sh", "-c", JCMD], capture_output=True, text=True, timeout=90)
    t1 = time.time()
    if p.returncode != 0:
        raise RuntimeError(
            f"jcmd in {ns}/{pod}: {(p.stderr or p.stdout).strip().splitlines()[-1:] or p.returncode}"
        )
    c = {}
    for line in p.stdout.splitlines():
        k, sep, v = line.partition("=")
        if sep:
            c[k.strip()] = v.strip().strip('"')
    if "java.threads.started" not in c:
        raise RuntimeError(f"jcmd in {ns}/{pod}: no java.threads.started in its output")
    return c, read_time(c, t0, t1)


def read_time(c, t0, t1):
    """When the JVM read its counters: its start (wall-clock ms) plus its high-resolution clock
    since then (sun.os.hrt.ticks counts from the same moment, give or take a few ms). An exec on
    a loaded node takes seconds, most of them before the read (kubectl, the tool JVM's start):
    the middle of the exec only when the JVM's clock cannot be had or disagrees with the host's."""
    try:
        w = int(c["sun.rt.createVmBeginTime"]) / 1000 + int(c["sun.os.hrt.ticks"]) / int(
            c["sun.os.hrt.frequency"]
        )
        if t0 - 1 <= w <= t1 + 1:
            return w
    except (KeyError, ValueError, ZeroDivisionError):
        pass
    return (t0 + t1) / 2


def jvm_seconds(a, b, wall_a, wall_b):
    """Seconds between two reads on the JVM's own high-resolution clock (sampled every 50 ms),
    or between their wall-clock times when the JVM does not publish it."""
    try:
        return (int(b["sun.os.hrt.ticks"]) - int(a["sun.os.hrt.ticks"])) / int(
            a["sun.os.hrt.frequency"]
        )
    except (KeyError, ValueError, ZeroDivisionError):
        return wall_b - wall_a


def verdict(ratio, tolerance):
    """(passed, words): the agent's rate over the JVM's own, within [1/tolerance, tolerance]."""
    if ratio is None or not math.isfinite(ratio) or ratio <= 0:
        return False, "the agent counted no thread starts while the JVM started threads"
    if 1 / tolerance <= ratio <= tolerance:
        return True, f"within the tolerance {1 / tolerance:.2f}-{tolerance:.2f}"
    if ratio > 1:
        return (
            False,
            f"the agent's rate is {ratio:.1f}× the JVM's own (tolerance {1 / tolerance:.2f}-{tolerance:.2f})",
        )
    return (
        False,
        f"the agent's rate is {ratio:.2f}× the JVM's own: it misses {100 * (1 - ratio):.0f} % of the starts (tolerance {1 / tolerance:.2f}-{tolerance:.2f})",
    )


def self_test(tolerance):
    """The verdict at the ratios that matter: whole multiples fail, scrape jitter passes."""
    cases = [
        (1.0, True),
        (1.08, True),
        (0.93, True),
        (1 / tolerance, True),
        (tolerance, True),
        (2.0, False),
        (3.0, False),
        (4.0, False),
        (0.5, False),
        (0.0, False),
        (None, False),
    ]
    bad = [(r, want) for r, want in cases if verdict(r, tolerance)[0] != want]
    for r, want in bad:
        print(f"rate check self-test: ratio {r}: expected {'pass' if want else 'fail'}")
    if not bad:
        print(
            f"rate check self-test: ok (tolerance {tolerance}: 1.0, 1.08, 0.93 pass; 2x, 3x, 4x, 0.5x, none fail)"
        )
    return 0 if not bad else 1


def say(msg):
    print(msg, flush=True)


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--prometheus")
    ap.add_argument(
        "--selector",
        default="",
        help='label matchers of the demo JVMs, e.g. namespace="jvmdiag-demo"',
    )
    ap.add_argument(
        "--window", type=float, default=60, help="seconds between the two reads (at least 60)"
    )
    ap.add_argument("--tolerance", type=float, default=1.25)
    ap.add_argument(
        "--self-test", action="store_true", help="check the verdict at chosen ratios and exit"
    )
    a = ap.parse_args()
    if a.tolerance <= 1 or a.tolerance >= 2:
        ap.error("--tolerance must lie between 1 and 2 (2x must never pass)")
    if a.self_test:
        return self_test(a.tolerance)
    if not a.prometheus:
        ap.error("--prometheus is required")
    window = max(60.0, a.window)

    try:
        targets = storm_series(a.prometheus, a.selector)
    except Exception as e:
        say(f"rate check: could not measure: Prometheus: {e}")
        return 2
    if not targets:
        say(
            f"rate check: could not measure: no pod starts {STORM_THREAD} (the agent runs without pod labels?)"
        )
        return 2

    first = {}
    for ns, pod, container, _jvm in targets:
        try:
            first[(ns, pod)] = jvm_counters(ns, pod, container)
        except Exception as e:
            say(f"rate check: could not measure {ns}/{pod}: {e}")
    if not first:
        return 2
    start = min(w for _, w in first.values())
    time.sleep(max(0.0, start + window - time.time()))

    results = []
    for ns, pod, container, jvm in targets:
        if (ns, pod) not in first:
            continue
        c1, w1 = first[(ns, pod)]
        try:
            c2, w2 = jvm_counters(ns, pod, container)
        except Exception as e:
            say(f"rate check: could not measure {ns}/{pod}: {e}")
            continue
        secs = jvm_seconds(c1, c2, w1, w2)
        started = int(c2["java.threads.started"]) - int(c1["java.threads.started"])
        own = started / secs if secs > 0 else float("nan")
        # samples stamped up to the second read reach the TSDB a moment later
        time.sleep(max(0.0, w2 + 6 - time.time()))
        m = f'namespace="{ns}",pod="{pod}",jvm="{jvm}"'
        try:
            got = query(
                a.prometheus,
                f"sum(rate(jvmdiag_thread_starts_total{{{m}}}[{int((w2 - w1) * 1000)}ms]))",
                at=w2,
            )
            shown = query(a.prometheus, f"sum(rate(jvmdiag_thread_starts_total{{{m}}}[1m]))", at=w2)
        except Exception as e:
            say(f"rate check: could not measure {ns}/{pod}: Prometheus: {e}")
            continue
        agent = float(got[0]["value"][1]) if got else 0.0
        agent_1m = float(shown[0]["value"][1]) if shown else 0.0
        ratio = agent / own if own > 0 else float("nan")
        passed, words = verdict(ratio, a.tolerance)
        say(
            f"rate check: {'ok' if passed else 'FAIL'}: thread-start rate of {ns}/{pod}: summary {agent:.1f}/s, "
            f"JVM's own java.threads.started {own:.1f}/s (ratio {ratio:.2f}) over {secs:.0f} s "
            f"({started} starts; the summary's 1m rate then {agent_1m:.1f}/s): {words}"
        )
        results.append(passed)
    if not results:
        return 2
    return 0 if all(results) else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
