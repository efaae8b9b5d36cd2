#!/usr/bin/env bash
# Suite "operator": Maven build with the *Test (no cluster) and *IT (real kube-apiserver via
# kube-api-test, offline, binaries from the cache) tiers, the jar's command line, then end to
# end on its own local control plane (CLUSTER_INDEX=3, CLUSTER_NODE=0) with the operator as
# `make operator-up` runs it. Everything started here is stopped on exit.
set -uo pipefail
export CLUSTER_INDEX=3
. "$(dirname "$0")/../lib.sh"
WORK=$(mktemp -d)
pass=0 fail=0
ok()  { pass=$((pass + 1)); echo "ok   - $1"; }
bad() { fail=$((fail + 1)); echo "FAIL - $1"; [ -n "${2:-}" ] && echo "       $2"; return 0; }
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
  "$REPO_ROOT/operator/scripts/down.sh" >/dev/null 2>&1
  CLUSTER_INDEX=3 "$REPO_ROOT/hack/cluster/down.sh" --quiet >/dev/null 2>&1
  rm -rf "$WORK"
}
trap cleanup EXIT
finish() { suite_result operator "$pass" "$fail"; [ "$fail" -eq 0 ]; exit $?; }

[ -x "$JDK25/bin/java" ] || { bad "a JDK >= 21 (JDK25=$JDK25)"; finish; }
"$REPO_ROOT/hack/kube-binaries.sh" >/dev/null || { bad "kube binaries v1.34.4"; finish; }
bash "$REPO_ROOT/hack/setup.d/operator.sh"   # etcd next to kube-apiserver for kube-api-test
bash "$REPO_ROOT/hack/setup.d/helm.sh" || { bad "helm (the ITs bind the RBAC it renders from the chart)"; finish; }

# --- Maven: unit tests, ITs against a real API server, the jar --------------------------------
log "maven verify (log: $WORK/mvn.log)"
export KUBE_API_TEST_OFFLINE_MODE=true KUBE_API_TEST_DIR="$JVMDIAG_CACHE"
mvn25 verify >"$WORK/mvn.log" 2>&1
mvn_rc=$?
read -r p f < <(count_surefire "$WORK/mvn.log")
pass=$((pass + p)); fail=$((fail + f))
grep -E '^\[(INFO|ERROR|WARNING)\] Tests run:|FAIL|<<< ' "$WORK/mvn.log" | grep -v 'Time elapsed: [0-9.]* s -- in' | head -40
if [ "$mvn_rc" -ne 0 ] && [ "$f" -eq 0 ]; then
  bad "maven build" "$(grep -E 'ERROR' "$WORK/mvn.log" | head -5)"
fi
[ -f "$OPERATOR_JAR" ] || { bad "operator jar built"; finish; }

# --- the command line --------------------------------------------------------------------------
J="$JDK25/bin/java"
if "$J" -jar "$OPERATOR_JAR" --help | grep -q -- "--webhook-url"; then ok "--help documents the flags"; else bad "--help"; fi
if "$J" -jar "$OPERATOR_JAR" --help | grep -q -- "--\[no-\]leader-election" && "$J" -jar "$OPERATOR_JAR" --help | grep -q -- "--leader-election-namespace"; then
  ok "--help documents leader election (on by default, --no-leader-election, --leader-election-namespace)"
else bad "--help: leader election flags"; fi
one_line_error() {  # description expected-substring args...
  local what="$1" want="$2"; shift 2
  local err rc
  err=$("$J" -jar "$OPERATOR_JAR" "$@" 2>&1 >/dev/null); rc=$?
  if [ "$rc" -ne 0 ] && [ "$(grep -c . <<<"$err")" -eq 1 ] && grep -q "^error: .*$want" <<<"$err"; then ok "$what: $err"
  else bad "$what (one line, no stack trace)" "rc=$rc: $(head -c 600 <<<"$err")"; fi
}
one_line_error "missing kubeconfig" "does not exist" --kubeconfig "$WORK/none"
printf 'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:9"}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: {token: x}}]\n' >"$WORK/refused.kubeconfig"
one_line_error "API server refusing the connection" "cannot reach the API server at https://127.0.0.1:9" --kubeconfig "$WORK/refused.kubeconfig"
if "$J" -jar "$OPERATOR_JAR" render-rules "$REPO_ROOT/examples/checkout.yaml" >"$WORK/rule.yaml" 2>"$WORK/rule.err" \
   && grep -q "kind: \"\?PrometheusRule" "$WORK/rule.yaml" && grep -q 'le=\\\?"0.5\\\?"' "$WORK/rule.yaml"; then
  ok "render-rules prints the PrometheusRule of examples/checkout.yaml"
else
  bad "render-rules" "$(head -c 400 "$WORK/rule.err")"
fi

# --- end to end on a local control plane -------------------------------------------------------
"$REPO_ROOT/operator/scripts/down.sh" >/dev/null 2>&1  # leftovers of an interrupted run
"$REPO_ROOT/hack/cluster/down.sh" --quiet >/dev/null 2>&1
if CLUSTER_NODE=0 "$REPO_ROOT/hack/cluster/up.sh" >"$WORK/up.out" 2>"$WORK/up.err"; then
  eval "$(tail -n 1 "$WORK/up.out")"
  ok "local control plane up (CLUSTER_INDEX=3)"
  if "$REPO_ROOT/operator/scripts/up.sh" >"$WORK/operator-up.log" 2>&1; then
    ok "make operator-up: the operator runs with the chart's RBAC, webhook on 127.0.0.1:$OPERATOR_WEBHOOK_PORT"
    "$REPO_ROOT/e2e/operator.sh" 2>&1 | tee "$WORK/e2e.log"
    line=$(grep -E '^e2e: [0-9]+ passed, [0-9]+ failed' "$WORK/e2e.log" | tail -n1)
    if [ -n "$line" ]; then
      pass=$((pass + $(sed -E 's/e2e: ([0-9]+) passed.*/\1/' <<<"$line")))
      fail=$((fail + $(sed -E 's/.*, ([0-9]+) failed/\1/' <<<"$line")))
    else
      bad "e2e script finished"
    fi
    [ "$fail" -gt 0 ] && { echo "--- operator log"; grep -v -e '"level":"INFO"' -e " level=info " "$OPERATOR_STATE/operator.log" | tail -n 60; }
  else
    bad "make operator-up" "$(tail -n 5 "$WORK/operator-up.log")"
  fi
else
  bad "local control plane up" "$(tail -n 5 "$WORK/up.err")"
fi
finish
