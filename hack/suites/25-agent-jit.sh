#!/usr/bin/env bash
# Node agent, JIT and fallback modes, against real JVMs on JDK 17 and 25:
#  - tests/jit.rs: a recompilation storm named in jvmdiag_method_compilations_total with the
#    count -XX:+PrintCompilation shows; code cache used vs jcmd Compiler.codecache (10 %);
#    a 4 MB code cache filling up: full events vs jcmd full_count and the JVM's warning.
#  - tests/fallback.rs: copies of the JDKs without .note.stapsdt, also without .symtab, and
#    -XX:-UsePerfData land in uprobe / hsperfdata / none, exact against PerfCounter.print.
#  - e2e/agent_stacks.py: the culprit stacks (/stacks and the metric) against JFR's stacks of the
#    same moments, three kinds from one JVM per (JDK, mode): thread starts (jdk.ThreadStart), the
#    waiters of contended monitor enters (jdk.JavaMonitorEnter) and parks (jdk.ThreadPark),
#    interpreted, C1, C2 and inlined (JDK 11 and 21 too when set up); a JVM starting 100,000
#    threads at 20 stack samples a second gets at most the budget's samples; and park samples
#    named by the parking thread's pool (two pools, their own frames and one they share).
#  - e2e/agent_stacks_deopt.py: a C2-compiled frame deoptimized below a parked callee is named
#    at its call's line, with its inlined callee (JDK 11 and 21 too when set up); a park stack
#    that appears after its JVM used its share of the stack table is counted all the same.
# The JDK copies are made once in $JVMDIAG_CACHE/jdk-variants (hard links but libjvm.so).
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
cd "$REPO_ROOT/node-agent" || exit
OUT="$REPO_ROOT/.results/agent-jit"; rm -rf "$OUT"; mkdir -p "$OUT"
export CARGO_TERM_COLOR=never JDK17 JDK25
pass=0; fail=0

TEST_PID=""
cleanup() {
  # The tests kill what they start; this stops them (and their JVMs) if we are interrupted.
  if [ -n "$TEST_PID" ] && kill -0 "$TEST_PID" 2>/dev/null; then kill -KILL -- "-$TEST_PID" 2>/dev/null; fi
}
trap cleanup EXIT INT TERM

[ "$(id -u)" -eq 0 ] || { log "the agent-jit suite needs root (eBPF)"; suite_result agent-jit 0 1; exit 1; }
command -v objcopy >/dev/null || { log "objcopy missing (binutils: make setup)"; suite_result agent-jit 0 1; exit 1; }

log "building the agent and the tests"
if ! nice cargo test --test jit --test fallback --no-run >"$OUT/build.log" 2>&1; then
  tail -n 30 "$OUT/build.log"; suite_result agent-jit 0 1; exit 1
fi

log "JIT, code cache and fallback tests (real JVMs: $JDK17, $JDK25)"
setsid timeout 900 nice cargo test --test jit --test fallback -- --ignored --test-threads=1 \
  > "$OUT/cargo-test.log" 2>&1 &
TEST_PID=$!
wait "$TEST_PID"
grep -E '^test |test result|panicked|^    ' "$OUT/cargo-test.log" | grep -v '^    [0-9]*: \|^    at ' || true
read -r pass fail < <(count_cargo "$OUT/cargo-test.log")
[ $((pass + fail)) -gt 0 ] || fail=1

# run_e2e NAME TIMEOUT SCRIPT: one e2e script against the release agent (its own session, so a
# timeout takes its JVMs too); its cargo-style results counted, none at all a failure.
run_e2e() {
  local name=$1 secs=$2 script=$3 p f
  setsid timeout "$secs" python3 "$REPO_ROOT/e2e/$script" "$PWD/target/release/jvmdiag-agent" "$OUT/e2e-$name" "$JDK17" "$JDK25" \
    > >(tee "$OUT/e2e-$name.log") 2> "$OUT/e2e-$name.stderr" &
  TEST_PID=$!
  wait "$TEST_PID"
  cat "$OUT/e2e-$name.stderr" >&2
  read -r p f < <(count_cargo "$OUT/e2e-$name.log")
  pass=$((pass + p)); fail=$((fail + f))
  [ $((p + f)) -gt 0 ] || fail=$((fail + 1))
}

log "building jvmdiag-agent (release) for the culprit stacks test"
if nice cargo build --release -p jvmdiag-agent >"$OUT/build-release.log" 2>&1; then
  log "culprit stacks (thread starts, monitor waits, parks) against JFR (e2e/agent_stacks.py)"
  # JDK 17, 21 and 25 with inlining (C2 with its inlined frames; JDK 11's JFR does not mark
  # inlined frames, its check leans on -XX:+PrintInlining's log, which a loaded machine may not
  # finish in time), the other modes once each; STACKS_RUNS="" runs every JDK in every mode.
  # Each run is one JVM for all three kinds; then one more for the 100,000 starts at 20 samples
  # a second (STACKS_LOW_STARTS=0 leaves it out).
  STACKS_RUNS="${STACKS_RUNS-17:interpreted 17:c1 25:c2 11:c2 17:inlined 21:inlined 25:inlined}" \
    run_e2e stacks 1800 agent_stacks.py
  log "culprit stacks through a deoptimized compiled frame and past an entry frame (e2e/agent_stacks_deopt.py)"
  run_e2e deopt 600 agent_stacks_deopt.py
else
  tail -n 30 "$OUT/build-release.log"; fail=$((fail + 1))
fi

suite_result agent-jit "$pass" "$fail"
[ "$fail" -eq 0 ]
