#!/usr/bin/env bash
# Node agent overhead: thread storm (start+join BENCH_THREADS threads) and safepoint storm
# (thread dumps + GCs), each without and with the agent and under the tools users have today
# (-Xlog to a file, JFR, async-profiler tracing JVM_StartThread), alternating in one run for
# BENCH_ROUNDS rounds (order rotated each round). Prints the slowdown against the baseline of
# the same round (median and min..max), and the agent's peak RSS and CPU time.
# Knobs: BENCH_ROUNDS (10), BENCH_THREADS (100000), BENCH_SAFEPOINT_ROUNDS (300), BENCH_JDK ($JDK17),
# BENCH_WORKLOADS ("ThreadStorm SafepointStorm"), BENCH_CONFIGS ("baseline agent xlog jfr asyncprof").
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
ROUNDS="${BENCH_ROUNDS:-10}"
THREADS="${BENCH_THREADS:-100000}"
SP_ROUNDS="${BENCH_SAFEPOINT_ROUNDS:-300}"
JDK="${BENCH_JDK:-$JDK17}"
[ "$(id -u)" -eq 0 ] || die "the agent benchmark needs root (eBPF)"
WORK="$JVMDIAG_CACHE/bench/agent"; rm -rf "$WORK"; mkdir -p "$WORK"

log "building jvmdiag-agent (release)"
(cd "$REPO_ROOT/node-agent" && nice cargo build --release -q -p jvmdiag-agent)
AGENT="${CARGO_TARGET_DIR:-$REPO_ROOT/node-agent/target}/release/jvmdiag-agent"

AP_JAR="$JVMDIAG_CACHE/async-profiler/async-profiler-4.0-linux-x64.jar"
if [ ! -f "$AP_JAR" ]; then
  log "fetching async-profiler from Maven Central"
  mvn -q dependency:copy -Dartifact=tools.profiler:async-profiler:4.0:jar:linux-x64 \
    -DoutputDirectory="$JVMDIAG_CACHE/async-profiler" >/dev/null
fi
(cd "$WORK" && unzip -o -q "$AP_JAR" linux-x64/libasyncProfiler.so)
AP_LIB="$WORK/linux-x64/libasyncProfiler.so"

"$JDK/bin/javac" -d "$WORK/classes" "$REPO_ROOT"/node-agent/tests/workloads/{ThreadStorm,SafepointStorm}.java

AGENT_PID=""
stop_agent() { if [ -n "$AGENT_PID" ]; then kill "$AGENT_PID" 2>/dev/null || true; wait "$AGENT_PID" 2>/dev/null || true; AGENT_PID=""; fi; }
trap stop_agent EXIT

# run WORKLOAD CONFIG -> prints "WALL_MS CPU_MS" of the measured part
run() {
  local wl=$1 cfg=$2 args opts=()
  if [ "$wl" = ThreadStorm ]; then args="$THREADS"; else args="$SP_ROUNDS"; fi
  case "$cfg" in
    baseline) ;;
    agent)
      "$AGENT" --standalone --listen 127.0.0.1:19470 --match-jvm "$wl" 2>>"$WORK/agent.log" & AGENT_PID=$!
      for _ in $(seq 50); do curl -sf 127.0.0.1:19470/healthz >/dev/null && break; sleep 0.1; done ;;
    xlog)
      if [ "$wl" = ThreadStorm ]; then opts=(-Xlog:os+thread=info:file="$WORK/xlog.log"); else opts=(-Xlog:safepoint=info:file="$WORK/xlog.log"); fi ;;
    jfr) opts=(-XX:StartFlightRecording=filename="$WORK/rec.jfr",settings=default) ;;
    asyncprof) opts=(-agentpath:"$AP_LIB"=start,event=JVM_StartThread,collapsed,file="$WORK/ap.txt") ;;
  esac
  local ms
  ms=$("$JDK/bin/java" "${opts[@]}" -cp "$WORK/classes" "$wl" "$args" 800 2>/dev/null | tail -n1)
  if [ "$cfg" = agent ]; then
    curl -sf 127.0.0.1:19470/metrics > "$WORK/last-metrics.txt" || true
    # Nothing lost: the agent counted every thread the storm started (+ the 4 starters).
    if [ "$wl" = ThreadStorm ]; then
      echo "$(awk '/^jvmdiag_thread_starts_total/ {s += $NF} END {print s + 0}' "$WORK/last-metrics.txt") $((THREADS + 4))" >> "$WORK/agent-counted.txt"
    fi
    # Peak RSS (VmHWM, KiB), CPU time (ticks), RSS now and its anonymous / file-backed parts (KiB).
    echo "$(awk '/VmHWM/ {print $2}' /proc/$AGENT_PID/status) $(awk '{print $14 + $15}' /proc/$AGENT_PID/stat) $(awk '/^(VmRSS|RssAnon|RssFile):/ {printf "%s ", $2}' /proc/$AGENT_PID/status)" >> "$WORK/agent-usage.txt"
    stop_agent
  fi
  echo "$ms"
}

read -ra CONFIGS <<<"${BENCH_CONFIGS:-baseline agent xlog jfr asyncprof}"
read -ra WORKLOADS <<<"${BENCH_WORKLOADS:-ThreadStorm SafepointStorm}"
case " ${CONFIGS[*]} " in *" baseline "*) ;; *) die "BENCH_CONFIGS must include baseline (every slowdown is against it)";; esac
for wl in "${WORKLOADS[@]}"; do
  for r in $(seq "$ROUNDS"); do
    n=${#CONFIGS[@]}
    for i in $(seq 0 $((n - 1))); do
      cfg=${CONFIGS[$(( (i + r) % n ))]}
      ms=$(run "$wl" "$cfg")
      echo "$wl $r $cfg $ms" | tee -a "$WORK/results.txt" >&2
      sleep 1  # let the previous JVM's exit settle
    done
  done
done

HZ=$(getconf CLK_TCK)
python3 - "$WORK/results.txt" "$WORK/agent-usage.txt" "$HZ" "$THREADS" "$SP_ROUNDS" "$ROUNDS" "$JDK" <<'PY'
import statistics, sys
res, usage, hz, threads, sp, rounds, jdk = sys.argv[1:]
rows = [l.split() for l in open(res) if len(l.split()) == 5]
t = {}
for wl, r, cfg, wall, cpu in rows:
    t.setdefault(wl, {}).setdefault(int(r), {})[cfg] = (float(wall), float(cpu))
names = {"agent": "jvmdiag-agent (eBPF)", "xlog": "-Xlog to a file", "jfr": "JFR (default settings)",
         "asyncprof": "async-profiler -e JVM_StartThread"}
print(f"\nJDK {jdk}; {rounds} rounds; thread storm = {threads} threads, safepoint storm = {sp} rounds of 2 thread dumps (+ a full GC every 10th)")
print("| workload | configuration | wall: slowdown median (min..max) | process CPU: increase median (min..max) |")
print("|---|---|---|---|")
pct = lambda x: f"{100 * x:+.1f} %"
for wl, by_round in t.items():
    base = [v["baseline"][0] for v in by_round.values() if "baseline" in v]
    print(f"| {wl} | baseline | median {statistics.median(base):.0f} ms | median {statistics.median([v['baseline'][1] for v in by_round.values() if 'baseline' in v]):.0f} ms |")
    for cfg in ("agent", "xlog", "jfr", "asyncprof"):
        cells = []
        for k in (0, 1):
            ratios = [v[cfg][k] / v["baseline"][k] - 1 for v in by_round.values() if cfg in v and "baseline" in v and v["baseline"][k] > 0]
            cells.append(f"{pct(statistics.median(ratios))} ({pct(min(ratios))} .. {pct(max(ratios))})" if ratios else "n/a")
        print(f"| {wl} | {names[cfg]} | {cells[0]} | {cells[1]} |")
import os
counted = os.path.join(os.path.dirname(usage), "agent-counted.txt")
if os.path.exists(counted):
    c = [l.split() for l in open(counted) if len(l.split()) == 2]
    exact = sum(1 for a, b in c if a == b)
    print(f"\nthread starts counted by the agent: {exact} of {len(c)} runs exactly {c[0][1] if c else '?'} (no event lost)")
u = [[int(x) for x in l.split()] for l in open(usage) if len(l.split()) == 5]
if u:
    mib = lambda i: max(r[i] for r in u) / 1024
    cpu = [r[1] / int(hz) for r in u]
    print(f"\nagent: peak RSS (VmHWM: start, BPF load, attach, the storm's scrape) max {mib(0):.1f} MiB; "
          f"RSS after a run max {mib(2):.1f} MiB (anonymous {mib(3):.1f}, file-backed {mib(4):.1f}); "
          f"agent CPU time per run (start, attach, one scrape): median {statistics.median(cpu):.2f} s, max {max(cpu):.2f} s")
PY
