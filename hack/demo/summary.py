#!/usr/bin/env python3
"""Live terminal summary of the demo, from the local Prometheus scraping the agent.

  summary.py --prometheus URL --since EPOCH [--selector 'namespace="demo"'] [--duration SECONDS] [--interval 5]

Every interval it prints: top thread names by start rate, worst safepoint pauses by VM
operation, most-compiled methods, code cache use, contended monitors by class, and the
firing alerts with their culprit label; beside a thread name the thread that starts them (the
agent's on-demand starter probe), beside a VM operation the thread that requested it. It also
records when each seed incident was first *named* by the product (counted from --since, when
the workloads were applied):
  1. thread storm  - HandshakeCompletedNotify-Thread among the thread names started
  2. safepoints    - a RedefineClasses safepoint pause over 0.5 s
  3. code cache    - the code cache full (or over 90 %) of a JVM, or its methods recompiled
  4. one lock      - threads blocked on a contended monitor whose class is named (a
                     SecureRandom class: the DHE handshake stall), by the metric or by
                     JvmDiagMonitorContentionHigh; the alert's firing is shown beside it
  5. pool waits    - a thread pool with at least POOL_WAITERS threads parked on average while
                     its JVM's parks are sampled at a resource (not at a pool's wait for work,
                     monitoring/mixin/config.py's workWaitFrames), by the metric and the stacks
                     or by JvmDiagPoolSaturated; the alert's firing is shown beside it
and when the culprit behind the first two was named: the thread starting the
HandshakeCompletedNotify-Threads (jvmdiag_thread_starts_by_starter_total) and the thread that
requested the RedefineClasses (jvmdiag_vm_operation_requests_total). And the code behind
incidents 1, 2 and 4, from the culprit stacks (jvmdiag_culprit_stack_samples_total: the stacks'
first application frames, by samples) of the incident's pod: kind thread_start in the storm's
JVM, vm_operation in the JVM whose RedefineClasses were requested (the last minute: its class
loading's GCs came before), monitor_hold and monitor_wait in the stalled DHE server's, park
in the saturated pool's (the last minute). And the fifth on virtual threads, one pod per JDK:
on JDK 21 the carriers (ForkJoinPool-N-) parked most of the time where the pinned virtual
threads wait, and JvmDiagPoolSaturated on them; on JDK 24+ nothing parked there, HikariCP's
connection-adder parking for the borrows that waited, and the same alert silent. With
--duration it stops after that many seconds and exits 1 unless all five, both culprits, the
code of each, and each virtual-thread pod's signals were named.

With --rate-check, once the incidents are named (or 30 s after the thread storm was, if
another one is slow), it runs rate-check.py once beside the summary: the thread-start rate
shown for the TLS storm's pod against its JVM's own java.threads.started over the same
window (>= 60 s). Its result stays on screen; with --duration a failed (or unmeasurable)
check makes the exit status 1 too, and the summary waits for a check under way at the end.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request

sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "monitoring")
)
from mixin.config import CONFIG  # noqa: E402  (the alert's own list of waits for work)


def query(base, q):
    url = base + "/api/v1/query?" + urllib.parse.urlencode({"query": q})
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            d = json.load(r)
        return d["data"]["result"] if d.get("status") == "success" else []
    except Exception:
        return []


def alerts(base):
    try:
        with urllib.request.urlopen(base + "/api/v1/alerts", timeout=5) as r:
            return [a for a in json.load(r)["data"]["alerts"] if a.get("state") == "firing"]
    except Exception:
        return []


def who(m):
    """The workload a series belongs to: namespace/pod in Kubernetes, else jvm (pid)."""
    if m.get("pod"):
        return f"{m.get('namespace', '')}/{m['pod']}"
    return f"{m.get('jvm', '?')} (pid {m.get('pid', '?')})"


def fmt_secs(v):
    return f"{v * 1000:.0f} ms" if v < 1 else f"{v:.2f} s"


GROUP = "namespace, pod, jvm, pid"


def snapshot(base, sel):
    s = {}
    s["threads"] = query(
        base,
        f"topk(5, sum by ({GROUP}, thread_name) (rate(jvmdiag_thread_starts_total{{{sel}}}[1m])) > 0)",
    )
    s["p_count"] = query(
        base,
        f"sum by ({GROUP}, vm_operation) (increase(jvmdiag_safepoint_pause_seconds_count{{{sel}}}[2m])) > 0",
    )
    s["p_sum"] = query(
        base,
        f"sum by ({GROUP}, vm_operation) (increase(jvmdiag_safepoint_pause_seconds_sum{{{sel}}}[2m]))",
    )
    # pauses over 500 ms since the JVM started (a series whose first sample already holds
    # the long pause has no increase() yet)
    s["p_over"] = query(
        base,
        (
            f"sum by ({GROUP}, vm_operation) (jvmdiag_safepoint_pause_seconds_count{{{sel}}})"
            f' - sum by ({GROUP}, vm_operation) (jvmdiag_safepoint_pause_seconds_bucket{{le="0.5",{sel}}})'
        ),
    )
    s["methods"] = query(
        base,
        f'topk(5, sum by ({GROUP}, method) (jvmdiag_method_compilations_total{{method!="other",{sel}}}))',
    )
    s["compiles"] = query(base, f"sum by ({GROUP}) (rate(jvmdiag_compilations_total{{{sel}}}[1m]))")
    s["cc_used"] = query(base, f"sum by ({GROUP}) (jvmdiag_code_cache_used_bytes{{{sel}}})")
    s["cc_max"] = query(base, f"sum by ({GROUP}) (jvmdiag_code_cache_max_bytes{{{sel}}})")
    s["cc_full"] = query(base, f"sum by ({GROUP}) (jvmdiag_code_cache_full_total{{{sel}}}) > 0")
    s["jvms"] = query(base, f"jvmdiag_jvm_info{{{sel}}}")
    s["mon_blocked"] = query(
        base,
        (
            f"topk(5, sum by ({GROUP}, monitor_class) "
            f'(rate(jvmdiag_monitor_blocked_seconds_sum{{monitor_class!="other",{sel}}}[1m])) > 0)'
        ),
    )
    s["mon_enters"] = query(
        base,
        f"sum by ({GROUP}, monitor_class) (rate(jvmdiag_monitor_contended_total{{{sel}}}[1m]))",
    )
    s["mon_waiters"] = query(
        base,
        (
            f"sum by ({GROUP}, monitor_class, thread_name) "
            f"(rate(jvmdiag_monitor_contended_total{{{sel}}}[1m])) > 0"
        ),
    )
    s["starters"] = query(
        base,
        f"sum by ({GROUP}, thread_name, starter) (jvmdiag_thread_starts_by_starter_total{{{sel}}}) > 0",
    )
    s["requesters"] = query(
        base,
        f"sum by ({GROUP}, vm_operation, requester) (jvmdiag_vm_operation_requests_total{{{sel}}}) > 0",
    )
    # The culprit stacks' first application frames: since the JVM was traced, and the last minute.
    s["frames"] = query(
        base,
        f"sum by ({GROUP}, kind, frame) (jvmdiag_culprit_stack_samples_total{{{sel}}}) > 0",
    )
    s["frames_1m"] = query(
        base,
        f"sum by ({GROUP}, kind, frame) (increase(jvmdiag_culprit_stack_samples_total{{{sel}}}[1m])) > 0",
    )
    # Threads parked per pool (seconds parked per second: threads parked on average).
    s["pool_parked"] = query(
        base,
        (
            f"topk(5, sum by ({GROUP}, thread_name) "
            f'(rate(jvmdiag_thread_parked_seconds_total{{via="park",thread_name!="other",{sel}}}[1m])) > 0.5)'
        ),
    )
    # The virtual-thread variants: their carriers' and HikariCP's connection-adder's parks.
    names = f'via="park",thread_name=~"{CARRIERS}|{ADDER}",{sel}'
    s["virtual_parked"] = query(
        base,
        f"sum by ({GROUP}, thread_name) (rate(jvmdiag_thread_parked_seconds_total{{{names}}}[1m]))",
    )
    s["virtual_parks"] = query(
        base, f"sum by ({GROUP}, thread_name) (rate(jvmdiag_thread_parks_total{{{names}}}[1m]))"
    )
    s["alerts"] = [a for a in alerts(base) if selected(a["labels"], sel)]
    return s


def top_culprits(rows, what, culprit):
    """(JVM key, what) -> the culprit with the highest count, from rows of (…, what, culprit)."""
    best = {}
    for r in rows:
        m = r["metric"]
        k = (key(m), m.get(what))
        if k not in best or float(r["value"][1]) > best[k][1]:
            best[k] = (m.get(culprit, ""), float(r["value"][1]))
    return {k: v[0] for k, v in best.items()}


def selected(labels, sel):
    """Apply a simple selector (name="v" or name=~"a|b", comma-separated) to alert labels."""
    import re

    for part in filter(None, (p.strip() for p in sel.split(","))):
        m = re.match(r'(\w+)(=~|=)"(.*)"$', part)
        if not m:
            continue
        v = labels.get(m.group(1), "")
        if (m.group(2) == "=" and v != m.group(3)) or (
            m.group(2) == "=~" and not re.fullmatch(m.group(3), v)
        ):
            return False
    return True


def key(m):
    return (m.get("namespace", ""), m.get("pod", ""), m.get("jvm", ""), m.get("pid", ""))


def render(
    s, elapsed, named, check=None, lock=None, culprits=None, code=None, seen=None, virt=None
):
    out = []
    out.append(
        f"jvm-diagnostics demo — {elapsed:4.0f}s since the workloads were applied, {len(s['jvms'])} JVM(s) traced"
    )
    out.append("")
    out.append("Top thread names by start rate (1m)")
    if not s["threads"]:
        out.append("  (no thread starts yet)")
    starters = top_culprits(s.get("starters", []), "thread_name", "starter")
    for r in sorted(s["threads"], key=lambda r: -float(r["value"][1])):
        m = r["metric"]
        by = starters.get((key(m), m.get("thread_name")))
        out.append(
            f"  {float(r['value'][1]):8.1f}/s  {m.get('thread_name', '?'):<40} {who(m)}"
            + (f"  started by {by}" if by else "")
        )
    out.append("")
    out.append(
        "Worst safepoint pauses by VM operation: count and total (2m), pauses > 500 ms (since start)"
    )
    sums = {
        (key(r["metric"]), r["metric"].get("vm_operation")): float(r["value"][1])
        for r in s["p_sum"]
    }
    over = {
        (key(r["metric"]), r["metric"].get("vm_operation")): float(r["value"][1])
        for r in s["p_over"]
    }
    rows = []
    for r in s["p_count"]:
        m = r["metric"]
        k = (key(m), m.get("vm_operation"))
        cnt = float(r["value"][1])
        tot = sums.get(k, 0.0)
        # increase() extrapolates count and sum by the same factor: the average is exact, and
        # the true count is a whole number, so undo the extrapolation by rounding the count.
        avg = tot / cnt if cnt else 0.0
        cnt = max(1.0, round(cnt))
        rows.append((over.get(k, 0.0), avg * cnt, cnt, m))
    if not rows:
        out.append("  (no safepoints yet)")
    requesters = top_culprits(s.get("requesters", []), "vm_operation", "requester")
    for o, tot, cnt, m in sorted(rows, key=lambda x: (-x[0], -x[1]))[:6]:
        avg = tot / cnt
        by = requesters.get((key(m), m.get("vm_operation")))
        out.append(
            f"  {m.get('vm_operation', '?'):<28} {cnt:6.0f} x  total {fmt_secs(tot):>9}  avg {fmt_secs(avg):>9}  >500ms: {o:3.0f}  {who(m)}"
            + (f"  requested by {by}" if by else "")
        )
    out.append("")
    out.append("Most-compiled methods (since start) and code cache")
    if not s["methods"]:
        out.append("  (no method compilations reported yet)")
    for r in sorted(s["methods"], key=lambda r: -float(r["value"][1])):
        m = r["metric"]
        out.append(f"  {float(r['value'][1]):8.0f}  {m.get('method', '?'):<40} {who(m)}")
    mx = {key(r["metric"]): float(r["value"][1]) for r in s["cc_max"]}
    full = {key(r["metric"]): float(r["value"][1]) for r in s["cc_full"]}
    for r in s["cc_used"]:
        k = key(r["metric"])
        used = float(r["value"][1])
        cap = mx.get(k, 0)
        if cap and cap < 64 * 2**20:  # the small code caches are the interesting ones
            out.append(
                f"  code cache {used / 2**20:5.1f}/{cap / 2**20:.1f} MiB ({100 * used / cap:3.0f} %)"
                f"{'  FULL x%d' % full[k] if k in full else ''}  {who(r['metric'])}"
            )
    out.append("")
    out.append("Contended monitors by class: seconds blocked per second and contended enters (1m)")
    enters = {
        (key(r["metric"]), r["metric"].get("monitor_class")): float(r["value"][1])
        for r in s["mon_enters"]
    }
    if not s["mon_blocked"]:
        out.append("  (no blocked time on contended monitors yet)")
    for r in sorted(s["mon_blocked"], key=lambda r: -float(r["value"][1])):
        m = r["metric"]
        n = enters.get((key(m), m.get("monitor_class")), 0.0)
        out.append(
            f"  {float(r['value'][1]):6.2f} s/s  {n:7.1f} enters/s  {m.get('monitor_class', '?'):<36} {who(m)}"
        )
    out.append("")
    out.append("Thread pools by threads parked on average (1m), and where their JVM parks most")
    if not s.get("pool_parked"):
        out.append("  (no pool parks yet)")
    for r in sorted(s.get("pool_parked", []), key=lambda r: -float(r["value"][1])):
        m = r["metric"]
        site = top_park_frame(s, m.get("pod", ""))
        out.append(
            f"  {float(r['value'][1]):6.1f}  {m.get('thread_name', '?'):<28} {who(m)}"
            + (f"  parks at {site}" if site else "")
        )
    if virt:
        out.append("")
        out.append("The fifth incident on virtual threads (1m)")
        for pod, v in sorted(virt.items()):
            out.append("  " + virtual_line(pod, v))
    out.append("")
    out.append("Firing alerts")
    if not s["alerts"]:
        out.append("  (none)")
    for a in sorted(s["alerts"], key=lambda a: a["labels"].get("alertname", "")):
        l = a["labels"]
        culprit = next(
            (
                f"{c}={l[c]}"
                for c in ("vm_operation", "thread_name", "method", "monitor_class")
                if l.get(c)
            ),
            "",
        )
        culprit += "".join(f" {c}={l[c]}" for c in ("requester", "starter") if l.get(c))
        if l.get("alertname") == "JvmDiagPoolSaturated" and alert_frame(a):
            culprit += f" parks at {alert_frame(a)}"
        out.append(
            f"  {l.get('severity', ''):<7} {l.get('alertname', '?'):<30} {culprit:<44} {who(l)}"
        )
    out.append("")
    lock = lock or {}
    labels = [
        "thread storm (HandshakeCompletedNotify-Thread)",
        "long safepoints (RedefineClasses > 0.5 s)",
        "code cache full / recompilation",
        f"one lock (blocked on {lock.get('class') or 'a SecureRandom'})",
        "pool waits (threads parked waiting for a resource)",
    ]
    for i, name in enumerate(labels):
        line = f"  incident {i + 1}: {name:<50} " + (
            f"named after {named[i]:.0f}s" if named[i] is not None else "not yet"
        )
        if i == 3 and lock.get("alert_at") is not None:
            line += f"; alert JvmDiagMonitorContentionHigh firing after {lock['alert_at']:.0f}s"
        if i == 4 and lock.get("pool"):
            line += f"; {lock['pool']} waits in {lock['pool_site']}"
        if i == 4 and lock.get("pool_alert_at") is not None:
            line += f"; alert JvmDiagPoolSaturated firing after {lock['pool_alert_at']:.0f}s"
        c = (culprits or {}).get(i)
        if i in (0, 1, 3):
            verb = ("started by", "requested by", None, "blocked most")[i]
            line += f"; {verb}: {c[0]} after {c[1]:.0f}s" if c else f"; {verb}: not yet"
        out.append(line)
    for i, kind, what, *_ in CODE:
        c = (code or {}).get((i, kind))
        out.append(
            "  "
            + (
                code_line(i, kind, what, c)
                if c
                else f"incident {i + 1}: {what} ({kind}): not yet"
                + (f" ({seen[(i, kind)]})" if (i, kind) in (seen or {}) else "")
            )
        )
    if check is not None:
        out.append("")
        out.extend(check.render())
    return "\n".join(out)


class RateCheck:
    """rate-check.py run once in the background; its lines collected as they come."""

    def __init__(self, prometheus, selector):
        self.args = [
            sys.executable,
            os.path.join(os.path.dirname(os.path.abspath(__file__)), "rate-check.py"),
            "--prometheus",
            prometheus,
            "--selector",
            selector,
        ]
        self.proc = None
        self.reader = None
        self.started_at = None
        self.lines = []
        self.shown = 0  # lines already printed (non-interactive output)

    def start(self, elapsed):
        self.started_at = elapsed
        self.proc = subprocess.Popen(
            self.args,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            stdin=subprocess.DEVNULL,
        )
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def new_lines(self):
        out = self.lines[self.shown :]
        self.shown += len(out)
        return out

    def render(self):
        if self.proc is None:
            return [
                "  rate check: starts once the incidents are named (the storm's rate vs its JVM's own counter)"
            ]
        if self.running() and not self.lines:
            return [
                f"  rate check: under way since {self.started_at:.0f}s (the storm's rate vs its JVM's own java.threads.started, >= 60 s)"
            ]
        return ["  " + l for l in self.lines]

    def stop(self):
        if self.running():
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def update_culprits(s, elapsed, culprits):
    """Who starts the HandshakeCompletedNotify-Threads (incident 1), who requested the
    RedefineClasses (incident 2) and which threads block most on the SecureRandom (incident 4:
    the folded names of the threads that had to wait), once the product names them."""
    if 0 not in culprits:
        for (_, name), by in top_culprits(s.get("starters", []), "thread_name", "starter").items():
            if "HandshakeCompletedNotify" in (name or "") and by and by != "other":
                culprits[0] = (by, elapsed)
                break
    if 1 not in culprits:
        for (_, op), by in top_culprits(
            s.get("requesters", []), "vm_operation", "requester"
        ).items():
            if op == "RedefineClasses" and by and by != "other":
                culprits[1] = (by, elapsed)
                break
    if 3 not in culprits:
        # Every TLS server blocks on a SecureRandom now and then (the thread storm's too): the
        # stalled JVM and class are those the contention alert names, as a user on call goes
        # from the alert to the threads.
        waiters = top_culprits(s.get("mon_waiters", []), "monitor_class", "thread_name")
        for a in s.get("alerts", []):
            l = a["labels"]
            if l.get("alertname") == "JvmDiagMonitorContentionHigh" and "SecureRandom" in l.get(
                "monitor_class", ""
            ):
                by = waiters.get((key(l), l["monitor_class"]))
                if by and by != "other":
                    culprits[3] = (by, elapsed)
                    break


# The code behind incidents 1, 2 and 4 (the culprit stacks' kind; what its frame is; the
# snapshot's series of it: since the JVM was traced, or the last minute; the samples of the kind
# in the incident's JVM before its top frame is named). The retransformer requests one
# RedefineClasses per round (every 30 s), so two in the last minute are all it can have.
CODE = [
    (0, "thread_start", "the code starting threads", "frames", 10),
    (1, "vm_operation", "the code requesting VM operations", "frames_1m", 2),
    (3, "monitor_hold", "the code holding contended monitors", "frames", 10),
    (3, "monitor_wait", "the code blocked on them", "frames", 10),
    (4, "park", "the code the pool waits in", "frames_1m", 10),
]
# Frames that name no code: only JDK frames, past the JVM's name budget.
NO_CODE = ("none", "other")


def update_code(s, elapsed, culprits, code, lock, seen=None):
    """The code behind each incident once its JVM is known: the top application frame of the
    kind, once the JVM has enough samples of it (CODE). SEEN: the top frames now, named or not."""
    pods = {}
    for r in s["threads"] + s.get("starters", []):
        if "HandshakeCompletedNotify" in r["metric"].get("thread_name", ""):
            pods.setdefault(0, r["metric"].get("pod", ""))
    if 1 in culprits:  # after the first RedefineClasses was requested
        for r in s.get("requesters", []):
            if r["metric"].get("vm_operation") == "RedefineClasses":
                pods.setdefault(1, r["metric"].get("pod", ""))
    if lock.get("pod"):
        pods[3] = lock["pod"]
    if lock.get("pool_pod"):
        pods[4] = lock["pool_pod"]
    for i, kind, _, series, min_samples in CODE:
        # Named once from the stacks since the JVM was traced; from the last minute (frames_1m)
        # the top frame is followed while the demo runs (the retransformer's JVM requests GCs
        # while it loads its classes, before its agent's rounds).
        if ((i, kind) in code and series != "frames_1m") or i not in pods:
            continue
        top = sorted(samples_by_frame(s, series, pods[i], kind).items(), key=lambda x: -x[1])
        if seen is not None and top:
            seen[(i, kind)] = f"in pod {pods[i]}: " + ", ".join(
                f"{f} ({n:.0f})" for f, n in top[:4]
            )
        # The top application frame, as the alerts name it (for parks: not a pool's wait for its
        # next task); the rest (none, other too) beside it.
        app = [
            (f, n) for f, n in top if f not in NO_CODE and (kind != "park" or f not in WORK_WAIT)
        ]
        if app and sum(n for _, n in top) >= min_samples:
            rest = ", ".join(f"{f} ({n:.0f})" for f, n in top if f != app[0][0])
            first = code.get((i, kind))
            if first is None or first[0] != app[0][0]:
                code[(i, kind)] = (app[0][0], app[0][1], rest, pods[i], elapsed)


def code_line(i, kind, what, c):
    frame, n, rest, pod, t = c
    return (
        f"incident {i + 1}: {what} ({kind}) in pod {pod}: {frame} ({n:.0f} samples)"
        + (f"; then {rest}" if rest else "")
        + f" (named after {t:.0f}s)"
    )


# Seconds blocked per second on one class that make a stall: the demo's dhe-stall resource's
# spec.alerts.monitorContention threshold (examples/workloads/k8s/dhe-stall.yaml).
LOCK_STALL = 0.5


# Threads of one pool parked on average that make a saturated pool: the demo's pool-wait
# resource's spec.alerts.poolSaturation threshold (examples/workloads/k8s/pool-wait.yaml).
POOL_WAITERS = 8
WORK_WAIT = set(CONFIG["workWaitFrames"])
# Where the alert's description names the frame the JVM parked at most (monitoring/mixin).
ALERT_FRAME = re.compile(r"parked most in the last \S+ at (\S+)\.$")


def alert_frame(a):
    m = ALERT_FRAME.search(a.get("annotations", {}).get("description", "").strip())
    return m.group(1) if m else None


def top_park_frame(s, pod):
    """The application frame POD's parks were sampled at most in the last minute, waits for
    work (a pool's idle workers) aside; None without one."""
    per = {
        f: n
        for f, n in samples_by_frame(s, "frames_1m", pod, "park").items()
        if f not in WORK_WAIT | set(NO_CODE)
    }
    return max(per, key=per.get) if per else None


def samples_by_frame(s, series, pod, kind):
    """POD's culprit stack samples of KIND in the snapshot's SERIES, summed per frame."""
    per = {}
    for r in s.get(series, []):
        m = r["metric"]
        if m.get("pod") == pod and m.get("kind") == kind:
            per[m.get("frame", "?")] = per.get(m.get("frame", "?"), 0.0) + float(r["value"][1])
    return per


def update_pool(s, elapsed, named, lock):
    """Incident 5: a pool with POOL_WAITERS threads parked whose JVM parks at a resource (the
    metric and the stacks), or JvmDiagPoolSaturated; the alert's firing noted beside it."""
    fired = [
        a
        for a in s["alerts"]
        if a["labels"].get("alertname") == "JvmDiagPoolSaturated"
        and not is_virtual(a["labels"].get("pod", ""))
    ]
    if named[4] is None:
        for r in sorted(s.get("pool_parked", []), key=lambda r: -float(r["value"][1])):
            m = r["metric"]
            if is_virtual(m.get("pod", "")):
                continue
            site = top_park_frame(s, m.get("pod", ""))
            if float(r["value"][1]) >= POOL_WAITERS and site:
                named[4] = elapsed
                lock["pool"], lock["pool_pod"], lock["pool_site"] = (
                    m.get("thread_name"),
                    m.get("pod"),
                    site,
                )
                lock["pool_parked"] = float(r["value"][1])
                break
        for a in fired if named[4] is None else []:
            named[4] = elapsed
            lock["pool"], lock["pool_pod"] = a["labels"].get("thread_name"), a["labels"].get("pod")
            lock["pool_site"], lock["pool_parked"] = alert_frame(a) or "?", None
            break
    if lock.get("pool_alert_at") is None and fired:
        lock["pool_alert_at"] = elapsed
        lock["pool_alert"] = fired[0]


# The fifth incident on virtual threads (examples/workloads/k8s/pool-wait-virtual.yaml): its
# pods, the carriers' native name (15 bytes of ForkJoinPool-1-worker-1, folded) and HikariCP's
# connection-adder's (HikariPool-1:connection-adder). JDK 21 is named once its carriers are
# parked most of the time (PINNED of the two) at an application frame: pinned; JDK 24+ once
# the connection-adder parks for the borrows that waited (ADDER_PARKS a second) while that
# frame has no park sample there: the virtual threads unmount.
VIRTUAL_PODS = "pool-wait-virtual-"
CARRIERS, ADDER = "ForkJoinPool-N-", "HikariPool-N:co"
PINNED, ADDER_PARKS = 1.5, 10


def is_virtual(pod):
    return pod.startswith(VIRTUAL_PODS)


def update_virtual(s, elapsed, virt):
    """VIRT: per virtual-thread pod, its JDK's feature version, what was seen and when named,
    and the JvmDiagPoolSaturated alert's firing."""
    feature = {
        r["metric"]["pod"]: int(re.match(r"\d+", r["metric"].get("java_version", "0")).group())
        for r in s["jvms"]
        if is_virtual(r["metric"].get("pod", ""))
    }
    per = {}
    for r in s.get("virtual_parked", []):
        per.setdefault(r["metric"].get("pod", ""), {})[r["metric"].get("thread_name")] = float(
            r["value"][1]
        )
    rate = {}
    for r in s.get("virtual_parks", []):
        rate.setdefault(r["metric"].get("pod", ""), {})[r["metric"].get("thread_name")] = float(
            r["value"][1]
        )
    fired = {
        a["labels"].get("pod"): a
        for a in s["alerts"]
        if a["labels"].get("alertname") == "JvmDiagPoolSaturated"
        and is_virtual(a["labels"].get("pod", ""))
    }
    pinned_at = next((v["site"] for v in virt.values() if v.get("site")), None)
    for pod, f in sorted(feature.items()):
        v = virt.setdefault(pod, {"feature": f})
        v["carriers"] = per.get(pod, {}).get(CARRIERS, 0.0)
        v["adder"] = rate.get(pod, {}).get(ADDER, 0.0)
        if pod in fired and v.get("alert_at") is None:
            v["alert_at"], v["alert"] = elapsed, fired[pod]
        if v.get("named_at") is not None:
            continue
        if f < 24:
            site = top_park_frame(s, pod)
            if v["carriers"] >= PINNED and site:
                v["named_at"], v["site"] = elapsed, site
        elif pinned_at and v["adder"] >= ADDER_PARKS:
            if not samples_by_frame(s, "frames_1m", pod, "park").get(pinned_at):
                v["named_at"], v["unpinned"] = elapsed, pinned_at


def virtual_line(pod, v):
    if v.get("named_at") is None:
        return f"virtual threads on JDK {v['feature']} in pod {pod}: not yet"
    if v.get("site"):
        return (
            f"virtual threads on JDK {v['feature']} named after {v['named_at']:.0f}s: pinned carriers: "
            f"{CARRIERS} {v['carriers']:.1f} parked on average, waiting in {v['site']} in pod {pod}"
        )
    return (
        f"virtual threads on JDK {v['feature']} named after {v['named_at']:.0f}s: nothing pinned (no "
        f"park sampled at {v['unpinned']}), {ADDER} {v['adder']:.0f} parks/s (one per borrow that "
        f"waited) in pod {pod}"
    )


def alert_line(what, a, at):
    l, frame = a["labels"], alert_frame(a)
    return (
        f"{what}alert JvmDiagPoolSaturated firing after {at:.0f}s: "
        f"thread_name={l.get('thread_name')} pod={l.get('pod')}"
        + (f" (its threads park most at {frame})" if frame else "")
    )


def update_named(s, elapsed, named, lock=None):
    if lock is not None:
        # the contended monitor class: a SecureRandom one (java.security.SecureRandom, or the
        # provider's class a JVM reports), from the blocked time or from the alert
        def secure_random(c):
            return "SecureRandom" in c

        # (class, pod) blocked at least LOCK_STALL: every TLS server blocks on its SecureRandom now
        # and then (the thread storm's too); a stall is threads blocked for much of each second
        blocked = [
            (r["metric"].get("monitor_class", ""), r["metric"].get("pod", ""))
            for r in sorted(s["mon_blocked"], key=lambda r: -float(r["value"][1]))
            if float(r["value"][1]) >= LOCK_STALL
        ]
        fired = [
            (a["labels"].get("monitor_class", ""), a["labels"].get("pod", ""))
            for a in s["alerts"]
            if a["labels"].get("alertname") == "JvmDiagMonitorContentionHigh"
        ]
        top = next(((c, p) for c, p in blocked + fired if secure_random(c)), None)
        if top and named[3] is None:
            named[3] = elapsed
            lock["class"], lock["pod"] = top
        alert = next(((c, p) for c, p in fired if secure_random(c)), None)
        if lock.get("alert_at") is None and alert:
            lock["alert_at"] = elapsed
            lock["alert_class"], lock["alert_pod"] = alert
    if lock is not None:
        update_pool(s, elapsed, named, lock)
    if named[0] is None and any(
        "HandshakeCompletedNotify" in r["metric"].get("thread_name", "") for r in s["threads"]
    ):
        named[0] = elapsed
    if named[1] is None and (
        any(
            r["metric"].get("vm_operation") == "RedefineClasses" and float(r["value"][1]) > 0
            for r in s["p_over"]
        )
        or any(a["labels"].get("vm_operation") == "RedefineClasses" for a in s["alerts"])
    ):
        named[1] = elapsed
    if named[2] is None:
        mx = {key(r["metric"]): float(r["value"][1]) for r in s["cc_max"]}
        nearly = any(
            mx.get(key(r["metric"])) and float(r["value"][1]) / mx[key(r["metric"])] > 0.9
            for r in s["cc_used"]
        )
        recompiled = any(
            float(r["value"][1]) >= 3 and r["metric"].get("method", "").startswith("gen.")
            for r in s["methods"]
        )
        cc_alert = any(
            a["labels"].get("alertname", "").startswith("JvmDiagCodeCache") for a in s["alerts"]
        )
        if s["cc_full"] or nearly or recompiled or cc_alert:
            named[2] = elapsed


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--prometheus", required=True)
    ap.add_argument("--since", type=float, default=time.time())
    ap.add_argument(
        "--selector",
        default="",
        help='label matchers for the demo JVMs, e.g. namespace="jvmdiag-demo"',
    )
    ap.add_argument("--duration", type=float, default=0)
    ap.add_argument("--interval", type=float, default=5)
    ap.add_argument(
        "--rate-check",
        action="store_true",
        help="once the incidents are named, check the storm's thread-start rate against its JVM's own counter",
    )
    a = ap.parse_args()
    check = RateCheck(a.prometheus, a.selector) if a.rate_check else None
    try:
        run(a, check)
    finally:
        if check is not None:
            check.stop()


def run(a, check):
    tty = sys.stdout.isatty()
    named = [None, None, None, None, None]
    lock = {}
    culprits = {}
    code, seen, virt = {}, {}, {}
    end = time.time() + a.duration if a.duration else None
    last_print = 0.0
    while True:
        s = snapshot(a.prometheus, a.selector)
        elapsed = time.time() - a.since
        before = (named[3], lock.get("alert_at"), named[4], lock.get("pool_alert_at"))
        update_named(s, elapsed, named, lock)
        before_culprits = dict(culprits)
        update_culprits(s, elapsed, culprits)
        before_code = dict(code)
        update_code(s, elapsed, culprits, code, lock, seen)
        virt_before = {pod: (v.get("named_at"), v.get("alert_at")) for pod, v in virt.items()}
        update_virtual(s, elapsed, virt)
        for i, (by, t) in sorted(culprits.items()):
            if not tty and i not in before_culprits:
                what = {
                    0: "HandshakeCompletedNotify-Thread started by",
                    1: "RedefineClasses requested by",
                    3: "the threads blocked most on the SecureRandom:",
                }[i]
                print(f"demo: incident {i + 1}: {what} {by} (named after {t:.0f}s)", flush=True)
        for i, kind, what, *_ in CODE:
            if (
                not tty
                and (i, kind) in code
                and before_code.get((i, kind), (None,))[0] != code[(i, kind)][0]
            ):
                print("demo: " + code_line(i, kind, what, code[(i, kind)]), flush=True)
        if not tty and before[0] is None and named[3] is not None:
            print(
                f"demo: incident 4 named after {named[3]:.0f}s: threads blocked on contended monitors of class {lock['class']} in pod {lock['pod']}",
                flush=True,
            )
        if not tty and before[1] is None and lock.get("alert_at") is not None:
            print(
                f"demo: alert JvmDiagMonitorContentionHigh firing after {lock['alert_at']:.0f}s: monitor_class={lock['alert_class']} pod={lock['alert_pod']}",
                flush=True,
            )
        if not tty and before[2] is None and named[4] is not None:
            n = lock.get("pool_parked")
            print(
                f"demo: incident 5 named after {named[4]:.0f}s: pool {lock['pool']}"
                + (f" with {n:.0f} threads parked on average" if n is not None else "")
                + f", waiting in {lock['pool_site']} in pod {lock['pool_pod']}",
                flush=True,
            )
        if not tty and before[3] is None and lock.get("pool_alert_at") is not None:
            print("demo: " + alert_line("", lock["pool_alert"], lock["pool_alert_at"]), flush=True)
        for pod, v in sorted(virt.items()) if not tty else []:
            named_at, alert_at = virt_before.get(pod, (None, None))
            if named_at is None and v.get("named_at") is not None:
                print("demo: " + virtual_line(pod, v), flush=True)
            if alert_at is None and v.get("alert_at") is not None:
                what = f"virtual threads on JDK {v['feature']}: "
                print("demo: " + alert_line(what, v["alert"], v["alert_at"]), flush=True)
            # The same threshold on the unpinned JVM: when the pinned one's alert fires, says
            # whether this one's does too (it should not: no thread parks for the resource).
            pinned_fired = [
                w for w in virt.values() if w.get("site") and w.get("alert_at") is not None
            ]
            if v["feature"] >= 24 and pinned_fired and not v.get("quiet_said"):
                v["quiet_said"] = True
                if v.get("alert_at") is None:
                    print(
                        f"demo: virtual threads on JDK {v['feature']}: JvmDiagPoolSaturated not firing in pod {pod} "
                        f"when JDK {pinned_fired[0]['feature']}'s fired (its virtual threads unmount: no thread parks)",
                        flush=True,
                    )
        if (
            check is not None
            and check.proc is None
            and named[0] is not None
            and (
                (all(t is not None for t in named) and lock.get("alert_at") is not None)
                or elapsed - named[0] >= 30
            )
        ):
            check.start(elapsed)
        n_check = len(check.lines) if check is not None else 0
        text = render(s, elapsed, named, check, lock, culprits, code, seen, virt)
        if tty:
            sys.stdout.write(
                "\033[H\033[2J" + text + "\n\n(Ctrl-C stops the demo and everything it started)\n"
            )
            sys.stdout.flush()
        else:
            if time.time() - last_print >= 30 or (end and time.time() + a.interval >= end):
                print(text + "\n", flush=True)
                last_print = time.time()
                if check is not None:  # those lines were just printed within the summary
                    check.shown = max(check.shown, n_check)
            for line in check.new_lines() if check is not None else []:
                print(line, flush=True)
        if end and time.time() >= end:
            break
        time.sleep(a.interval)
    if check is not None and check.running():
        print(
            "demo: waiting for the rate check under way (up to 150 s)", file=sys.stderr, flush=True
        )
        try:
            check.proc.wait(timeout=150)
        except subprocess.TimeoutExpired:
            check.stop()
    if check is not None and check.reader is not None:
        check.reader.join(timeout=5)  # its last lines
    print(render(s, time.time() - a.since, named, check, lock, culprits, code, seen, virt))
    failed = False
    missing = [i + 1 for i, t in enumerate(named) if t is None]
    if missing:
        print(f"demo: incident(s) {missing} not named within {a.duration:.0f}s", file=sys.stderr)
        failed = True
    else:
        print(
            "demo: all five incidents named: "
            + ", ".join(f"{t:.0f}s" for t in named)
            + f" (the contended monitor: {lock.get('class')}; the pool: {lock.get('pool')},"
            f" waiting in {lock.get('pool_site')})"
        )
    for i, what in (
        (0, "the thread starting HandshakeCompletedNotify-Threads"),
        (1, "the thread requesting RedefineClasses"),
        (3, "the threads blocked most on the SecureRandom"),
    ):
        if i in culprits:
            print(
                f"demo: culprit of incident {i + 1}: {what}: {culprits[i][0]} (named after {culprits[i][1]:.0f}s)"
            )
        else:
            print(
                f"demo: culprit of incident {i + 1} not named within {a.duration:.0f}s: {what}",
                file=sys.stderr,
            )
            failed = True
    for i, kind, what, *_ in CODE:
        if (i, kind) in code:
            print("demo: code behind " + code_line(i, kind, what, code[(i, kind)]))
        else:
            now = seen.get((i, kind), "no stacks of that kind")
            print(
                f"demo: code behind incident {i + 1} not named within {a.duration:.0f}s: {what} ({kind}): {now}",
                file=sys.stderr,
            )
            failed = True
    for pod, v in sorted(virt.items()):
        if v.get("named_at") is None:
            print(f"demo: {virtual_line(pod, v)} within {a.duration:.0f}s", file=sys.stderr)
            failed = True
        else:
            print("demo: " + virtual_line(pod, v))
    if check is not None and check.proc is not None and check.proc.returncode != 0:
        print(
            f"demo: the rate check failed (exit {check.proc.returncode}): see the rate check lines above",
            file=sys.stderr,
        )
        failed = True
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(130)
