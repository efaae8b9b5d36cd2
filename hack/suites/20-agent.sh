#!/usr/bin/env bash
# Node agent: unit + golden tests (cargo), then end-to-end tests against real JVMs on JDK 17
# and 25 (e2e/agent_standalone.py, e2e/agent_hostile.py): accuracy against hsperfdata, a JVM in its own pid and
# mount namespace, churn without leaks, the name budget, bad-environment errors, hostile
# containers next to a normal JVM; the monitors and parking collectors against JFR, hsperfdata and
# the workload (e2e/agent_locks.py; also JDK 11 and 21 when hack/setup.d/jdks.sh set them up,
# virtual threads on 21 and 25, the demo's pool-wait workload among them). Their cost benchmarks are in make bench (hack/bench.d/locks.sh).
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
cd "$REPO_ROOT/node-agent" || exit
OUT="$REPO_ROOT/.results/agent"; rm -rf "$OUT"; mkdir -p "$OUT"
export CARGO_TERM_COLOR=never
pass=0; fail=0
add() { pass=$((pass + $1)); fail=$((fail + $2)); }

E2E_PID=""
cleanup() {
  # The e2e scripts kill every process they started; this stops it (and them) if we are interrupted.
  if [ -n "$E2E_PID" ] && kill -0 "$E2E_PID" 2>/dev/null; then kill -TERM -- "-$E2E_PID" 2>/dev/null; fi
}
trap cleanup EXIT INT TERM

[ "$(id -u)" -eq 0 ] || { log "the agent suite needs root (eBPF)"; suite_result agent 0 1; exit 1; }

log "building jvmdiag-agent (release)"
if ! nice cargo build --release -p jvmdiag-agent >"$OUT/build.log" 2>&1; then
  tail -n 30 "$OUT/build.log"; suite_result agent 0 1; exit 1
fi

log "unit and golden tests"
# Unit + golden tests of the agent (library and binary); the kube/sidecar units and the tests/*.rs targets are run
# (and counted) once, by the suites that own them (45-agent-kube, 25-agent-jit).
nice cargo test -p jvmdiag-agent --lib --bins -- --skip kube:: --skip sidecar:: 2>&1 | tee "$OUT/cargo-test.log" | grep -E '^test |test result' || true
read -r p f < <(count_cargo "$OUT/cargo-test.log"); add "$p" "$f"
[ "$p" -gt 0 ] || add 0 1

log "HTTP server: slow clients stall nothing (tests/serve_slow_client.rs)"
nice cargo test -p jvmdiag-agent --test serve_slow_client 2>&1 | tee "$OUT/serve-test.log" | grep -E '^test |test result' || true
read -r p f < <(count_cargo "$OUT/serve-test.log"); add "$p" "$f"
[ "$p" -gt 0 ] || add 0 1

log "HTTP server: no client takes what others need; one render a second, gzip (tests/serve_limits.rs)"
nice cargo test -p jvmdiag-agent --test serve_limits 2>&1 | tee "$OUT/serve-limits-test.log" | grep -E '^test |test result' || true
read -r p f < <(count_cargo "$OUT/serve-limits-test.log"); add "$p" "$f"
[ "$p" -gt 0 ] || add 0 1

log "the CRD's collector names are the agent's; no import cycle in src/ (tests/contract_collectors.rs, module_layering.rs)"
nice cargo test -p jvmdiag-agent --test contract_collectors --test module_layering 2>&1 | tee "$OUT/contract-test.log" | grep -E '^test |test result' || true
read -r p f < <(count_cargo "$OUT/contract-test.log"); add "$p" "$f"
[ "$p" -gt 0 ] || add 0 1

# promtool here and in the e2e scripts (on PATH): Prometheus 3.x's, built once from its Go module
# (PROMETHEUS_FLAVOR=debian: Debian's 2.42).
monitoring_tools || log "no promtool built (hack/monitoring-binaries.sh): using the one on PATH"
log "golden /metrics through $("${PROMTOOL:-promtool}" --version 2>&1 | head -n1 | cut -d' ' -f1-3) and the contract checker"
if "${PROMTOOL:-promtool}" check metrics < tests/golden/standalone.prom \
   && python3 "$CONTRACT_TOOL" tests/golden/standalone.prom; then
  echo "ok golden_file_passes_promtool_and_contract"; add 1 0
else
  echo "FAIL golden_file_passes_promtool_and_contract"; add 0 1
fi

log "end-to-end tests (real JVMs: $JDK17, $JDK25)"
setsid python3 "$REPO_ROOT/e2e/agent_standalone.py" "$PWD/target/release/jvmdiag-agent" "$OUT/e2e" "$JDK17" "$JDK25" \
  > >(tee "$OUT/e2e.log") 2> "$OUT/e2e.stderr" &
E2E_PID=$!
wait "$E2E_PID"
cat "$OUT/e2e.stderr" >&2
read -r p f < <(count_cargo "$OUT/e2e.log"); add "$p" "$f"
[ $((p + f)) -gt 0 ] || add 0 1

log "end-to-end: hostile containers next to a normal JVM (e2e/agent_hostile.py)"
setsid python3 "$REPO_ROOT/e2e/agent_hostile.py" "$PWD/target/release/jvmdiag-agent" "$OUT/e2e-hostile" "$JDK17" "$JDK25" \
  > >(tee "$OUT/e2e-hostile.log") 2> "$OUT/e2e-hostile.stderr" &
E2E_PID=$!
wait "$E2E_PID"
cat "$OUT/e2e-hostile.stderr" >&2
read -r p f < <(count_cargo "$OUT/e2e-hostile.log"); add "$p" "$f"
[ $((p + f)) -gt 0 ] || add 0 1

# The demo's pool-wait workload on virtual threads (JDK 21 and 25) is one of them: its jars.
log "building the demo workloads (examples/workloads/build.sh)"
if POOL_WAIT_JARS=$("$REPO_ROOT/examples/workloads/build.sh" "$JVMDIAG_CACHE/workloads/jars" 2>"$OUT/workloads-build.log"); then export POOL_WAIT_JARS
else tail -n 3 "$OUT/workloads-build.log"; echo "FAIL the demo workloads build (examples/workloads/build.sh)"; add 0 1; fi
log "end-to-end: monitors and parking against JFR, hsperfdata and the workload (e2e/agent_locks.py)"; setsid python3 "$REPO_ROOT/e2e/agent_locks.py" "$PWD/target/release/jvmdiag-agent" "$OUT/e2e-locks" "$JDK17" "$JDK25" > >(tee "$OUT/e2e-locks.log") 2> "$OUT/e2e-locks.stderr" & E2E_PID=$!; wait "$E2E_PID"; cat "$OUT/e2e-locks.stderr" >&2; read -r p f < <(count_cargo "$OUT/e2e-locks.log"); add "$p" "$f"; [ $((p + f)) -gt 0 ] || add 0 1

suite_result agent "$pass" "$fail"
[ "$fail" -eq 0 ]
