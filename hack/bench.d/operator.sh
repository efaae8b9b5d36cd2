#!/usr/bin/env bash
# Operator benchmark: webhook latency over 1,000 admissions through a real API server and the
# time to reconcile 1,000 resources, on its own local control plane (CLUSTER_INDEX=4,
# CLUSTER_NODE=0), the operator started as `make operator-up` does. Results: docs/performance.md.
set -uo pipefail
export CLUSTER_INDEX=4
. "$(dirname "$0")/../lib.sh"
cleanup() {
  "$REPO_ROOT/operator/scripts/down.sh" >/dev/null 2>&1
  CLUSTER_INDEX=4 "$REPO_ROOT/hack/cluster/down.sh" --quiet >/dev/null 2>&1
}
trap cleanup EXIT
"$REPO_ROOT/hack/cluster/down.sh" --quiet >/dev/null 2>&1
out=$(CLUSTER_NODE=0 "$REPO_ROOT/hack/cluster/up.sh") || die "local control plane did not start"
eval "$(tail -n 1 <<<"$out")"
"$REPO_ROOT/operator/scripts/up.sh" || die "operator did not start"
METRICS_URL="http://127.0.0.1:$OPERATOR_METRICS_PORT/metrics" python3 "$REPO_ROOT/operator/scripts/bench.py"
