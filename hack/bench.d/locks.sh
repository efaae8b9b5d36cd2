#!/usr/bin/env bash
# Monitors and parking collectors' cost: a lock storm (4 threads entering one monitor that
# each holds a few µs, e2e/workloads/LockContention.java --bench) without
# -XX:+DTraceMonitorProbes, with the flag alone, and with the flag and the agent; and a park
# storm (4 threads calling LockSupport.parkNanos(1 µs) in a loop, ParkWorkload) without and
# with the agent; a wait storm (2 pairs of threads handing a turn back and forth with notify and
# Object.wait, WaitPool --bench, the flag in both) without and with the agent. Alternated round by round in one run (order rotated); prints per workload
# the median throughput and the ratio of each round against its own baseline (median, min..max).
#
# Knobs: LOCKS_BENCH_ROUNDS (5), LOCKS_BENCH_SECONDS (4), LOCKS_BENCH_HOLD_US ("10 100": the
# lock holds to measure), BENCH_JDK ($JDK17), BENCH_AGENT (an agent binary instead of building
# node-agent/). Ports from JVMDIAG_E2E_PORT_BASE (e2e/harness.py).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
[ "$(id -u)" -eq 0 ] || die "the locks benchmark needs root (eBPF)"
JDK="${BENCH_JDK:-$JDK17}"
WORK="$JVMDIAG_CACHE/bench/locks"
rm -rf "$WORK"; mkdir -p "$WORK"
bench_agent  # sets AGENT
log "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
LOCKS_BENCH=only LOCKS_BENCH_ROUNDS="${LOCKS_BENCH_ROUNDS:-5}" LOCKS_BENCH_SECONDS="${LOCKS_BENCH_SECONDS:-4}" \
  LOCKS_BENCH_HOLD_US="${LOCKS_BENCH_HOLD_US:-10 100}" EXTRA_JDKS=0 \
  setsid python3 "$REPO_ROOT/e2e/agent_locks.py" "$AGENT" "$WORK" "$JDK" | tee "$WORK/summary.txt"
log "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
grep -q "test result: ok" "$WORK/summary.txt"
