#!/usr/bin/env bash
# Operator benchmark: webhook latency over 1,000 admissions through a real API server and the
# time to reconcile BENCH_OPERATOR_RESOURCES resources (default 1,000), on its own local control
# plane (CLUSTER_INDEX=4, or BENCH_CLUSTER_INDEX when that instance is taken; CLUSTER_NODE=0), the
# operator started as `make operator-up` does; then
# the operator's heap (jcmd GC.heap_info, the class histogram's top types) and RSS. Results:
# docs/performance.md.
set -uo pipefail
export CLUSTER_INDEX="${BENCH_CLUSTER_INDEX:-4}"
. "$(dirname "$0")/../lib.sh"
cleanup() {
  "$REPO_ROOT/operator/scripts/down.sh" >/dev/null 2>&1
  "$REPO_ROOT/hack/cluster/down.sh" --quiet >/dev/null 2>&1
}
trap cleanup EXIT
"$REPO_ROOT/hack/cluster/down.sh" --quiet >/dev/null 2>&1
out=$(CLUSTER_NODE=0 "$REPO_ROOT/hack/cluster/up.sh") || die "local control plane did not start"
eval "$(tail -n 1 <<<"$out")"
"$REPO_ROOT/operator/scripts/up.sh" || die "operator did not start"
BENCH_RESOURCES="${BENCH_OPERATOR_RESOURCES:-${BENCH_RESOURCES:-1000}}" \
  METRICS_URL="http://127.0.0.1:$OPERATOR_METRICS_PORT/metrics" python3 "$REPO_ROOT/operator/scripts/bench.py"
rc=$?
# the footprint with every resource reconciled: what the caches hold after a full GC
pid=$(operator_pid)
jcmd="$(dirname "$JAVA25")/jcmd"
if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
  echo
  echo "operator memory (pid $pid, after the run):"
  "$jcmd" "$pid" GC.run >/dev/null
  "$jcmd" "$pid" GC.heap_info | sed -n '2,4p'
  echo "RSS: $(awk '/^VmRSS/ {printf "%.0f MiB", $2 / 1024}' "/proc/$pid/status")"
  echo "top types by retained instances (GC.class_histogram):"
  "$jcmd" "$pid" GC.class_histogram | sed -n '2,17p'
fi
[ "$rc" -eq 0 ] # the bench's own status
