#!/usr/bin/env bash
# Suite "agent-kube": the node agent's Kubernetes mode and its unprivileged sidecar mode.
#   1. unit tests of attribution (cgroup shapes of each runtime, the operator's contract),
#      the pod table, the rotating-log follower and the sidecar (cargo, no cluster)
#   2. sidecar mode on JDK 17 and 25, as uid 65534 without capabilities: series equal the
#      JVM's own counters (jcmd PerfCounter.print) across many log rotations
#   3. Kubernetes mode against a real kube-apiserver (own control plane, CLUSTER_INDEX=8,
#      CLUSTER_NODE=0): real JVMs in runtime-shaped cgroups, pods written by the test as a
#      kubelet would; API outage; 500 pods with flat memory and no traffic but the watch.
#   4. end to end on the local cluster with its node (CLUSTER_INDEX=7, e2e/agent-kube.sh):
#      the operator injects JDK 17/25 Deployments, the agent on the host attributes them and
#      attaches its starter probe by each pod's own threshold; the operator's webhook adds the
#      sidecar to two more, scraped through the pod IP.
#      AGENT_KUBE_E2E=0 skips it.
# Everything started here is stopped on exit. Needs root (eBPF, cgroups, setpriv).
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
export CLUSTER_INDEX="${AGENT_KUBE_CLUSTER_INDEX:-8}" CLUSTER_NODE=0
export CARGO_TERM_COLOR=never
OUT="$REPO_ROOT/.results/agent-kube"; rm -rf "$OUT"; mkdir -p "$OUT"
pass=0 fail=0
add() { pass=$((pass + $1)); fail=$((fail + $2)); }
bad() { fail=$((fail + 1)); echo "FAIL - $1"; [ -n "${2:-}" ] && echo "       $2"; return 0; }
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() { "$REPO_ROOT/hack/cluster/down.sh" --quiet >/dev/null 2>&1; }
trap cleanup EXIT
finish() { suite_result agent-kube "$pass" "$fail"; [ "$fail" -eq 0 ]; exit $?; }
cargo_tests() {  # name, cargo test args...
  local name=$1; shift
  (cd "$REPO_ROOT/node-agent" && nice cargo test -p jvmdiag-agent "$@") >"$OUT/$name.log" 2>&1
  grep -E '^test |test result' "$OUT/$name.log"
  read -r p f < <(count_cargo "$OUT/$name.log"); add "$p" "$f"
  if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then bad "$name ran no test" "$(grep -E '^error' "$OUT/$name.log" | head -3)"; fi
}

[ "$(id -u)" -eq 0 ] || { bad "root (eBPF, cgroups, setpriv)"; finish; }

log "unit tests: attribution, pod table, log follower, sidecar"
cargo_tests unit --lib -- kube:: sidecar::

log "sidecar mode on $JDK17 and $JDK25 (unprivileged, log rotation)"
cargo_tests sidecar --test sidecar_jdk

log "Kubernetes mode against a local control plane (CLUSTER_INDEX=$CLUSTER_INDEX)"
KBIN=$("$REPO_ROOT/hack/kube-binaries.sh") || { bad "kube binaries v1.34.4"; finish; }
if ! "$REPO_ROOT/hack/cluster/up.sh" >"$OUT/cluster-up.log" 2>&1; then
  bad "local control plane up" "$(tail -n 4 "$OUT/cluster-up.log" | tr '\n' ' ')"; finish
fi
kc=$(tail -n 1 "$OUT/cluster-up.log" | sed -n 's/^export KUBECONFIG=//p')
[ -f "$kc" ] || { bad "control plane kubeconfig" "$(tail -n 2 "$OUT/cluster-up.log")"; finish; }
# The JvmDiagnostics CRD: the agent traces only pods whose resource exists.
# shellcheck disable=SC2015 # bad when either command fails
KUBECONFIG="$kc" "$KBIN/kubectl" apply --server-side -f "$REPO_ROOT/crds/" >"$OUT/crds.log" 2>&1 \
  && KUBECONFIG="$kc" "$KBIN/kubectl" wait --for condition=Established --timeout=60s crd/jvmdiagnostics.jvm.diagnostics.dev >>"$OUT/crds.log" 2>&1 \
  || { bad "JvmDiagnostics CRD installed" "$(tail -n 3 "$OUT/crds.log" | tr '\n' ' ')"; finish; }
KUBECTL="$KBIN/kubectl" JVMDIAG_TEST_KUBECONFIG="$kc" cargo_tests kube --test kube_attribution -- --ignored --test-threads=1 --nocapture
grep -E '^agent RSS' "$OUT/kube.log" || true
"$REPO_ROOT/hack/cluster/down.sh" --quiet >/dev/null 2>&1

# AGENT_KUBE_E2E=0 skips it (e.g. a machine without a kubelet's needs).
[ "${AGENT_KUBE_E2E:-1}" = 1 ] || finish
log "end to end on the local cluster with a real kubelet, instrumented by the operator; sidecar mode in real pods (e2e/agent-kube.sh)"
timeout -k 30 720 "$REPO_ROOT/e2e/agent-kube.sh" >"$OUT/e2e.log" 2>&1
grep -E '^(ok|FAIL) |^       |^>> \[' "$OUT/e2e.log"
line=$(grep -E '^suite agent-kube-e2e: [0-9]+ passed, [0-9]+ failed' "$OUT/e2e.log" | tail -n1)
if [ -n "$line" ]; then
  read -r p f < <(sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed/\1 \2/' <<<"$line"); add "$p" "$f"
else
  bad "e2e ran to its end" "$(tail -n 3 "$OUT/e2e.log" | tr '\n' ' ')"
fi
finish
