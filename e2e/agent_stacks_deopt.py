#!/usr/bin/env python3
"""End-to-end test of the agent's culprit stacks through a deoptimized compiled frame (run as
root).

HotSpot deoptimizes a compiled frame that is not on top (its nmethod invalidated while the frame
waits for a callee) by patching the return address the callee holds to the nmethod's deopt
handler, the pc it was at saved in the frame. A workload (e2e/workloads/DeoptStacks.java) makes
one: its thread `deopt-worker` runs Worker.run -> outer -> a -> Square.b -> waitHere, with a()
C2-compiled (-XX:-TieredCompilation -Xbatch, kept out of inlining) and its call of Square.b bound
on a class hierarchy assumption (Square the only Shape): Square.b inlined into it (mode
`inlined`), or compiled on its own (mode `compiled_callee`: a()'s callee is a compiled frame,
stepped over by its frame size); waitHere parks at one line, then the
main thread loads Circle (another Shape), which invalidates a()'s nmethod while a() waits, and
waitHere parks at another line. The agent (one for every JDK, --match-jvm DeoptStacks) takes
the park stacks. Per JDK (those given, and 11 and 21 from hack/setup.d/jdks.sh when set up) and
mode:
  deopt_frame_named_at_its_original_pc_jdkN_MODE: every park stack of the pid taken after the load
      (waitHere at the line marked park-after) has, below the JDK's park frames, exactly the
      known chain leaf first, each frame with the line its `// MARK` comment is on:
        DeoptStacks.waitHere:park-after, DeoptStacks$Square.b:b_[i] (`:b` when compiled on its
        own), DeoptStacks.a:a, DeoptStacks.outer:outer, DeoptStacks$Worker.run:run
      and the walk reached the thread's first frame (no `…outcome` marker).
  Setup, checked first ("setup: ..." when not so): the stacks before the load (park-before)
  have the same chain (so a() was compiled, with Square.b inlined in mode `inlined`, before the
  load), the JVM's -XX:+PrintCompilation says a() was compiled and then made not entrant (and
  Square.b compiled, in mode `compiled_callee`).
Past an entry frame, per JDK (`DeoptStacks DIR entry`, default flags): `entry-worker` parks
  in Lazy's class initializer, which the VM runs from entryOuter's call of Lazy.touch(); every
  park stack there is, leaf first, DeoptStacks.parkInInit:park-init,
  DeoptStacks$Lazy.<clinit>:clinit, DeoptStacks.entryOuter:entry-outer,
  DeoptStacks$EntryWorker.run:entry-run, then JDK frames only (the walk followed the entry
  frame's JavaCallWrapper to the frames of the code that called into the VM).
A new stack after the share was used, per JDK (e2e/workloads/StackChurn.java, an agent of its
  own with --max-stacks-per-jvm 8): the JVM parks from 20 call sites of churn() (more distinct
  stacks than its share: setup checks some were `table_full`), the test reads /stacks once,
  then the JVM parks in culprit() alone: StackChurn.culprit must be in /stacks and in
  jvmdiag_culprit_stack_samples_total{kind="park"} within 15 s (the agent takes the entries out
  of its kernel table at each read, which gives the JVM's share back; were they kept, the
  share would stay used and the new stack never be counted).
Usage: agent_stacks_deopt.py AGENT_BINARY WORKDIR JDK [JDK ...]
Prints one "ok NAME" / "FAIL NAME: why" line per test and a cargo-style summary line.
"""

import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request

from agent_stacks import all_jdks, is_jdk
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

AGENT, WORK = sys.argv[1], sys.argv[2]
JDKS = sys.argv[3:]
HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = os.environ.get("JVMDIAG_WORKLOADS") or os.path.join(HERE, "workloads")
SOURCE = os.path.join(WORKLOADS, "DeoptStacks.java")
PORT = e2e_port(35)
CHURN_PORT = e2e_port(36)
CHURN_SHARE = 8
# a() compiled by C2 (not inlined into its callers) with Square.b inlined into it; the frames
# around it interpreted, so the chain's shape does not depend on the JIT's choices.
FLAGS = [
    "-XX:-TieredCompilation",
    "-Xbatch",
    "-XX:+PrintCompilation",
    "-XX:CompileCommand=quiet",
    "-XX:CompileCommand=dontinline,DeoptStacks::a",
    "-XX:CompileCommand=exclude,DeoptStacks::waitHere",
    "-XX:CompileCommand=dontinline,DeoptStacks::waitHere",
    "-XX:CompileCommand=exclude,DeoptStacks::outer",
    "-XX:CompileCommand=exclude,DeoptStacks$Worker::run",
]
# Square.b inlined into a() (the deoptimized frame has an inlined method at its call), or
# compiled on its own (a()'s callee is then a compiled frame, stepped over by its frame size).
MODES = {
    "inlined": ["-XX:CompileCommand=inline,DeoptStacks$Square::b"],
    "compiled_callee": ["-XX:CompileCommand=dontinline,DeoptStacks$Square::b"],
}


def chain(mode):
    """Leaf first: (frame, the MARK its line is on, inlined)."""
    return [
        ("DeoptStacks.waitHere", None, False),  # the park's line: park-before or park-after
        ("DeoptStacks$Square.b", "b", mode == "inlined"),
        ("DeoptStacks.a", "a", False),
        ("DeoptStacks.outer", "outer", False),
        ("DeoptStacks$Worker.run", "run", False),
    ]


def marks():
    """{mark: line} of the workload's `// MARK name` comments."""
    out = {}
    for i, line in enumerate(open(SOURCE), 1):
        m = re.search(r"// MARK ([\w-]+)", line)
        if m:
            out[m.group(1)] = i
    return out


def want(mode, park, lines):
    """The chain as the agent writes it, leaf first, waitHere at the mark `park`."""
    out = []
    for frame, mark, inlined in chain(mode):
        out.append(f"{frame}:{lines[mark or park]}" + ("_[i]" if inlined else ""))
    return out


def classes():
    """The workloads compiled once for Java 11 by the first JDK given that has javac."""
    out = os.path.join(WORK, "classes")
    if not os.path.exists(os.path.join(out, "StackChurn.class")):
        javac = next(f"{j}/bin/javac" for j in JDKS if os.path.exists(f"{j}/bin/javac"))
        os.makedirs(out, exist_ok=True)
        churn = os.path.join(WORKLOADS, "StackChurn.java")
        subprocess.run([javac, "--release", "11", "-d", out, SOURCE, churn], check=True)
    return out


def start_agent(port=PORT, match="DeoptStacks", *extra):
    logp = os.path.join(WORK, f"agent-{port}.log")
    p = subprocess.Popen(
        [
            AGENT,
            "--standalone",
            "--listen",
            f"127.0.0.1:{port}",
            "--exit-after",
            "900",
            "--match-jvm",
            match,
            "--stack-samples-per-second",
            "200",
            *extra,
        ],
        stdout=subprocess.DEVNULL,
        stderr=open(logp, "a"),
    )
    procs.append(p)
    return wait_serving(port, p, logp)


def park_stacks(pid, port=PORT):
    """The pid's park stacks: [(frames leaf first, count, outcome or None)]."""
    url = f"http://127.0.0.1:{port}/stacks?kind=park&pid={pid}"
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    out = []
    for line in text.splitlines():
        stack, _, n = line.rpartition(" ")
        frames = stack.split(";")[2:]
        outcome = frames[0][1:] if frames and frames[0].startswith("…") else None
        if outcome:
            frames = frames[1:]
        out.append((list(reversed(frames)), int(n), outcome))
    return out


def app_part(frames):
    """The frames below the JDK's on top (the park's own)."""
    i = 0
    while i < len(frames) and is_jdk(frames[i]):
        i += 1
    return frames[i:]


def at_park(stacks, top):
    """The stacks whose first application frame is `top` (`Class.method:line`)."""
    return [s for s in stacks if app_part(s[0])[:1] == [top]]


def wait_stacks(pid, top, timeout):
    """The pid's park stacks topped by `top`, once there are some (and a few more samples)."""
    t = time.time() + timeout
    while time.time() < t:
        got = at_park(park_stacks(pid), top)
        if got:
            time.sleep(1.5)  # a few more samples
            return at_park(park_stacks(pid), top)
        time.sleep(0.25)
    return []


def stop_workload(d, p):
    """Tells the workload in `d` to stop and waits for it (killed after 30 s)."""
    open(os.path.join(d, "stop"), "w").close()
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()


def wrong(stacks, chain):
    """The stacks that are not the chain (below the JDK's frames), each shown."""
    out = []
    for frames, n, outcome in stacks:
        app = app_part(frames)
        if app != chain or outcome is not None:
            out.append(f"{n} sample(s) of {';'.join(app)}" + (f" …{outcome}" if outcome else ""))
    return out


def deopt_run(jdk, tag, mode):
    lines = marks()
    d = os.path.join(WORK, f"jdk{tag}-{mode}")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    stdout = os.path.join(d, "stdout")
    p = subprocess.Popen(
        [f"{jdk}/bin/java", *FLAGS, *MODES[mode], "-cp", classes(), "DeoptStacks", d],
        stdout=open(stdout, "w"),
        stderr=open(os.path.join(d, "stderr"), "w"),
    )
    procs.append(p)
    problems = []
    try:
        wait_file(os.path.join(d, "waiting"), 60, p)
        before = wait_stacks(p.pid, f"DeoptStacks.waitHere:{lines['park-before']}", 20)
        open(os.path.join(d, "load"), "w").close()
        wait_file(os.path.join(d, "parked-after"), 30, p)
        after = wait_stacks(p.pid, f"DeoptStacks.waitHere:{lines['park-after']}", 20)
        walks = {
            labels.get("outcome"): int(v)
            for n, labels, v in samples(scrape(PORT))
            if n == "jvmdiag_agent_stack_walks_total" and labels.get("kind") == "park"
        }
    finally:
        stop_workload(d, p)
    log_ = open(stdout).read()
    compiled = re.search(r"DeoptStacks::a \(\d+ bytes\)", log_)
    invalidated = re.search(r"DeoptStacks::a \(\d+ bytes\).*made not entrant", log_)
    log(
        f"  jdk{tag} {mode}: pid {p.pid}; before the load {sum(n for _, n, _ in before)} samples in"
        f" {len(before)} line(s), after {sum(n for _, n, _ in after)} in {len(after)};"
        f" a() compiled {bool(compiled)}, made not entrant {bool(invalidated)}; park walks {walks}"
    )
    for label, got in (("before", before), ("after", after)):
        for frames, n, outcome in got:
            log(f"    {label}: {n} x {';'.join(frames)}" + (f" …{outcome}" if outcome else ""))
    if not before:
        problems.append("setup: no park stack before the load (the agent traced the JVM?)")
    bad = wrong(before, want(mode, "park-before", lines))
    if bad:
        problems.append(f"setup: before the load, not the chain (a() compiled?): {bad[:3]}")
    if mode == "compiled_callee" and not re.search(r"DeoptStacks\$Square::b \(\d+ bytes\)", log_):
        problems.append("setup: -XX:+PrintCompilation: Square.b not compiled")
    if not compiled or not invalidated:
        problems.append(
            f"setup: -XX:+PrintCompilation: a() compiled {bool(compiled)}, made not entrant {bool(invalidated)}"
        )
    if not after:
        problems.append("no park stack after the load")
    bad = wrong(after, want(mode, "park-after", lines))
    if bad:
        problems.append(
            f"after the load, want leaf first {want(mode, 'park-after', lines)}; got {bad[:3]}"
        )
    return problems


# Below a class initializer, past the entry frame: the chain as the agent writes it, leaf first.
ENTRY_CHAIN = [
    ("DeoptStacks.parkInInit", "park-init"),
    ("DeoptStacks$Lazy.<clinit>", "clinit"),
    ("DeoptStacks.entryOuter", "entry-outer"),
    ("DeoptStacks$EntryWorker.run", "entry-run"),
]


def entry_run(jdk, tag):
    lines = marks()
    want_ = [f"{f}:{lines[m]}" for f, m in ENTRY_CHAIN]
    d = os.path.join(WORK, f"jdk{tag}-entry")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    p = subprocess.Popen(
        [f"{jdk}/bin/java", "-cp", classes(), "DeoptStacks", d, "entry"],
        stdout=open(os.path.join(d, "stdout"), "w"),
        stderr=open(os.path.join(d, "stderr"), "w"),
    )
    procs.append(p)
    try:
        wait_file(os.path.join(d, "waiting-init"), 60, p)
        got = wait_stacks(p.pid, want_[0], 20)
    finally:
        stop_workload(d, p)
    for frames, n, outcome in got:
        log(f"  jdk{tag} entry: {n} x {';'.join(frames)}" + (f" …{outcome}" if outcome else ""))
    if not got:
        return ["no park stack in the class initializer (the agent traced the JVM?)"]
    # The chain, then the JDK's frames below the worker's run (Thread.run): nothing else.
    bad = []
    for frames, n, outcome in got:
        app = app_part(frames)
        if (
            app[: len(want_)] != want_
            or outcome is not None
            or any(not is_jdk(f) for f in app[len(want_) :])
        ):
            bad.append(f"{n} sample(s) of {';'.join(app)}" + (f" …{outcome}" if outcome else ""))
    return [f"want leaf first {want_} then JDK frames; got {bad[:3]}"] if bad else []


def churn_run(jdk, tag):
    d = os.path.join(WORK, f"jdk{tag}-churn")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    p = subprocess.Popen(
        [f"{jdk}/bin/java", "-cp", classes(), "StackChurn", d],
        stdout=open(os.path.join(d, "stdout"), "w"),
        stderr=open(os.path.join(d, "stderr"), "w"),
    )
    procs.append(p)

    def tops():
        return {
            app_part(f)[0].split(":")[0]
            for f, _, _ in park_stacks(p.pid, CHURN_PORT)
            if app_part(f)
        }

    def table_full():
        # The agent's, of every JVM it traced: the test takes the difference.
        return sum(
            v
            for n, labels, v in samples(scrape(CHURN_PORT))
            if n == "jvmdiag_agent_stack_walks_total"
            and labels.get("kind") == "park"
            and labels.get("outcome") == "table_full"
        )

    def culprit_samples():
        return sum(
            v
            for n, labels, v in samples(scrape(CHURN_PORT), p.pid)
            if n == "jvmdiag_culprit_stack_samples_total"
            and labels.get("kind") == "park"
            and labels.get("frame") == "StackChurn.culprit"
        )

    problems = []
    try:
        # Traced and counting before the churn.
        t = time.time() + 30
        while "StackChurn.ready" not in tops() and time.time() < t:
            time.sleep(0.25)
        if "StackChurn.ready" not in tops():
            return ["setup: no park stack of StackChurn.ready (the agent traced the JVM?)"]
        before = table_full()
        open(os.path.join(d, "churn"), "w").close()
        wait_file(os.path.join(d, "churned"), 30, p)
        # This scrape reads (and, fixed, drains) the table after the churn.
        full = table_full() - before
        open(os.path.join(d, "go"), "w").close()
        t = time.time() + 15
        in_stacks, in_metric = False, 0
        while time.time() < t and not (in_stacks and in_metric):
            in_metric = culprit_samples()  # renders /stacks too
            in_stacks = "StackChurn.culprit" in tops()
        churned = [
            f
            for f, _, _ in park_stacks(p.pid, CHURN_PORT)
            if app_part(f)[:1] and app_part(f)[0].startswith("StackChurn.churn")
        ]
    finally:
        open(os.path.join(d, "stop"), "w").close()
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
    log(
        f"  jdk{tag} churn: pid {p.pid}; table_full {full:.0f} after the churn, churn() lines"
        f" {len(churned)}; culprit in /stacks {in_stacks}, its samples in the metric {in_metric:.0f}"
    )
    if not full:
        problems.append("setup: no park walk was table_full (the churn did not exceed the share)")
    if not in_stacks:
        problems.append("StackChurn.culprit not in /stacks within 15 s")
    if not in_metric:
        problems.append("StackChurn.culprit not in jvmdiag_culprit_stack_samples_total within 15 s")
    return problems


def main():
    os.makedirs(WORK, exist_ok=True)
    try:
        churn_agent = start_agent(
            CHURN_PORT, "StackChurn", "--max-stacks-per-jvm", str(CHURN_SHARE)
        )
        for jdk, tag in all_jdks():
            run(f"new_stack_counted_after_the_share_was_used_jdk{tag}", churn_run, jdk, tag)
        stop(churn_agent)
        agent = start_agent()
        for jdk, tag in all_jdks():
            for mode in MODES:
                name = f"deopt_frame_named_at_its_original_pc_jdk{tag}_{mode}"
                run(name, deopt_run, jdk, tag, mode)
            run(
                f"frames_past_an_entry_frame_below_a_class_initializer_jdk{tag}",
                entry_run,
                jdk,
                tag,
            )
        stop(agent)
    finally:
        kill_leftovers()
    return summary()


if __name__ == "__main__":
    sys.exit(main())
