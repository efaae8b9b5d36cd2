#!/usr/bin/env bash
# End to end on a local control plane with kube-controller-manager (hack/cluster, CLUSTER_NODE=0):
# Deployments really create ReplicaSets and pods; no kubelet is needed to read pod specs. The
# operator runs as `make operator-up` starts it: the chart's RBAC, webhook on a loopback URL.
# Prints "ok/FAIL - ..." per check and "e2e: P passed, F failed" last. Expects KUBECONFIG.
set -uo pipefail
. "$(dirname "$0")/../hack/lib.sh"
pass=0 fail=0
ok()  { pass=$((pass + 1)); echo "ok   - $1"; }
bad() { fail=$((fail + 1)); echo "FAIL - $1"; [ -n "${2:-}" ] && echo "       $2"; return 0; }
k() { "$KUBECTL" "$@"; }
# wait_until SECONDS DESCRIPTION COMMAND...: polls every 0.5 s
wait_until() {
  local t="$1" what="$2"; shift 2
  local end=$(( $(date +%s) + t ))
  while [ "$(date +%s)" -lt "$end" ]; do "$@" >/dev/null 2>&1 && { ok "$what"; return 0; }; sleep 0.5; done
  bad "$what" "timed out after ${t}s"; return 1
}
NS="e2e-shop-$$"
# This run's operator log: from the last start of the operator (operator/scripts/up.sh) on.
LOG_FROM=$(grep -n '^=== operator-up' "$OPERATOR_STATE/operator.log" 2>/dev/null | tail -n1 | cut -d: -f1)
# The monitors collector is on by default: every resource here that leaves it unset gets its flag.
MON=-XX:+DTraceMonitorProbes
hash_of() { k -n "$NS" get deploy "$1" -o jsonpath='{.spec.template.metadata.annotations.jvm\.diagnostics\.dev/config-hash}'; }
pods_of() { k -n "$NS" get pods -l "app=$1" -o json; }
# every live pod of app $1 has: injected=$2 (none when "-", any when "*"), and app's JAVA_TOOL_OPTIONS == $3
all_pods() {
  local want_pods
  want_pods=$(k -n "$NS" get deploy "$1" -o jsonpath='{.spec.replicas}')
  pods_of "$1" | jq -e --arg inj "$2" --arg jto "$3" --argjson n "$want_pods" '
    [.items[] | select(.metadata.deletionTimestamp == null)] as $p
    | ($p | length) == $n and all($p[];
        (((.metadata.annotations // {})["jvm.diagnostics.dev/injected"] // "-") as $got
          | if $inj == "*" then $got != "-" else $got == $inj end)
        and ([.spec.containers[] | select(.name == "app") | .env[]? | select(.name == "JAVA_TOOL_OPTIONS") | .value][0] == $jto)
        and ([.spec.containers[] | select(.name == "istio-proxy") | .env[]? | select(.name == "JAVA_TOOL_OPTIONS")] | length) == 0)'
}
status_field() { k -n "$NS" get jvmdiag "$1" -o jsonpath="$2"; }
deployment() {  # name replicas [extra template label]; Recreate: without a kubelet no pod gets Ready, so rolling updates would wait forever
  cat <<YAML | k apply -f - >/dev/null
apiVersion: apps/v1
kind: Deployment
metadata: {name: $1, namespace: $NS}
spec:
  replicas: $2
  strategy: {type: Recreate}
  selector: {matchLabels: {app: $1}}
  template:
    metadata: {labels: {app: $1${3:+, $3}}}
    spec:
      containers:
      - {name: app, image: eclipse-temurin:21, env: [{name: JAVA_TOOL_OPTIONS, value: "-Xmx256m"}]}
      - {name: istio-proxy, image: docker.io/istio/proxyv2:1.22}
YAML
}
jvmdiag() {  # name extra rollout
  cat <<YAML | k apply -f - >/dev/null
apiVersion: jvm.diagnostics.dev/v1alpha1
kind: JvmDiagnostics
metadata: {name: $1, namespace: $NS}
spec:
  targetRef: {kind: Deployment, name: $1}
  jvmOptions: {extra: ["$2"]}
  rollout: ${3:-Automatic}
YAML
}
rs_count() { k -n "$NS" get rs -l "app=$1" -o name | wc -l; }
has_hash() { [ -n "$(hash_of "$1")" ]; }
hash_not() { local h; h=$(hash_of "$1"); [ -n "$h" ] && [ "$h" != "$2" ]; }

k create namespace "$NS" >/dev/null 2>&1 || true

# --- inject, edit, delete ---------------------------------------------------------------------
deployment checkout 2
jvmdiag checkout "-XX:ReservedCodeCacheSize=256m"
wait_until 30 "config hash written into the pod template" has_hash checkout
h1=$(hash_of checkout)
wait_until 60 "ReplicaSet's new pods carry the flags in 'app' (not istio-proxy; $MON: monitors on by default) and injected=$h1" \
  all_pods checkout "$h1" "-Xmx256m $MON -XX:ReservedCodeCacheSize=256m"
wait_until 30 "status: 2/2 injected, Ready=True" bash -c \
  "[ \"\$('$KUBECTL' -n $NS get jvmdiag checkout -o jsonpath='{.status.injected} {.status.conditions[?(@.type==\"Ready\")].status}')\" = '2/2 True' ]"
cols=$(k -n "$NS" get jvmdiag checkout 2>/dev/null | tr -s ' ')
if grep -qx "NAME TARGET INJECTED READY AGE" <<<"$(head -n1 <<<"$cols")" && grep -q "^checkout Deployment/checkout 2/2 True [0-9]" <<<"$(tail -n1 <<<"$cols")"; then
  ok "kubectl get jvmdiag prints TARGET, INJECTED (injected/desired), READY, AGE: $(tail -n1 <<<"$cols")"
else bad "kubectl get jvmdiag columns: NAME TARGET INJECTED READY AGE" "$cols"; fi

k -n "$NS" patch jvmdiag checkout --type merge -p '{"spec":{"jvmOptions":{"extra":["-XX:ReservedCodeCacheSize=512m"]},"collectors":{"monitors":{"enabled":false}}}}' >/dev/null
wait_until 30 "editing the resource changes the hash" hash_not checkout "$h1"
h2=$(hash_of checkout)
wait_until 60 "edit rolled out new pods with the new flags (monitors.enabled: false: without $MON)" all_pods checkout "$h2" "-Xmx256m -XX:ReservedCodeCacheSize=512m"

k -n "$NS" delete jvmdiag checkout --wait=true --timeout=30s >/dev/null
wait_until 30 "delete: label and hash gone from the template" bash -c \
  "[ -z \"\$('$KUBECTL' -n $NS get deploy checkout -o jsonpath='{.spec.template.metadata.labels.jvm\.diagnostics\.dev/inject}{.spec.template.metadata.annotations.jvm\.diagnostics\.dev/config-hash}')\" ]"
wait_until 60 "delete rolled out pods without the flags" all_pods checkout "-" "-Xmx256m"

# --- Manual rollout ---------------------------------------------------------------------------
# Any pod-template change starts a Deployment rollout, the label included; with Manual the label
# is expected in the user's own manifest (GitOps), so the operator's apply changes nothing.
deployment billing 1 "jvm.diagnostics.dev/inject: billing"
wait_until 30 "billing's first pod exists" bash -c "[ \"\$('$KUBECTL' -n $NS get pods -l app=billing -o name | wc -l)\" = 1 ]"
before=$(k -n "$NS" get pods -l app=billing -o name)
sleep 1
jvmdiag billing "-XX:ReservedCodeCacheSize=256m" Manual
wait_until 30 "Manual: status says RolloutPending and names the pod as not rolled out" bash -c \
  "'$KUBECTL' -n $NS get jvmdiag billing -o jsonpath='{.status.conditions[?(@.type==\"Injected\")].reason} {.status.podsMissingInjection[*].reason}' | grep -q 'RolloutPending NotRolledOut'"
k -n "$NS" patch jvmdiag billing --type merge -p '{"spec":{"jvmOptions":{"extra":["-XX:ReservedCodeCacheSize=512m"]}}}' >/dev/null
sleep 4
if [ -z "$(hash_of billing)" ]; then ok "Manual: no config hash in the template, even after an edit"; else bad "Manual: no config hash" "$(hash_of billing)"; fi
after=$(k -n "$NS" get pods -l app=billing -o name)
if [ "$before" = "$after" ] && [ "$(rs_count billing)" = 1 ]; then ok "Manual: create and edit do not roll ($after, 1 ReplicaSet)"; else bad "Manual: no roll" "$before -> $after, $(rs_count billing) ReplicaSets"; fi
k -n "$NS" rollout restart deploy billing >/dev/null
wait_until 60 "Manual: the user's own rollout brings the current injection" all_pods billing "*" "-Xmx256m $MON -XX:ReservedCodeCacheSize=512m"
wait_until 30 "Manual: status 1/1 after the user's rollout" bash -c "[ \"\$('$KUBECTL' -n $NS get jvmdiag billing -o jsonpath='{.status.injected}')\" = 1/1 ]"

# --- operator down: pods still created; back: reported, then healed ---------------------------
deployment cart 1
jvmdiag cart "-XX:ReservedCodeCacheSize=256m"
wait_until 30 "cart hash written" has_hash cart
hc=$(hash_of cart)
wait_until 60 "cart pod injected" all_pods cart "$hc" "-Xmx256m $MON -XX:ReservedCodeCacheSize=256m"
KEEP_WEBHOOK=1 "$REPO_ROOT/operator/scripts/down.sh" >/dev/null 2>&1
k -n "$NS" scale deploy cart --replicas=3 >/dev/null
wait_until 30 "operator stopped: scaled-up pods are still created (webhook failurePolicy Ignore)" bash -c \
  "[ \"\$('$KUBECTL' -n $NS get pods -l app=cart -o json | jq '[.items[] | select((.metadata.annotations // {})[\"jvm.diagnostics.dev/injected\"] == null)] | length')\" = 2 ]"
missed=$(k -n "$NS" get pods -l app=cart -o json | jq -r '[.items[] | select((.metadata.annotations // {})["jvm.diagnostics.dev/injected"] == null) | .metadata.name] | sort | join(" ")')
"$REPO_ROOT/operator/scripts/up.sh" >/dev/null 2>&1 || bad "operator restarts"
# The status names them for a few seconds only: the reconciler heals once a written status named
# them, and its HealRollout event lists them; either sighting proves the status named them.
named_missed() {
  local p st ev
  st=$(k -n "$NS" get jvmdiag cart -o json) ev=$(k -n "$NS" get events -o json)
  for p in $missed; do
    jq -e --arg p "$p" '.status.podsMissingInjection // [] | any(.name == $p and .reason == "WebhookUnavailable")' <<<"$st" >/dev/null ||
      jq -e --arg p "$p" '.items | any(.reason == "HealRollout" and (.message | test("missed: .*\\b" + $p + "\\b")))' <<<"$ev" >/dev/null || return 1
  done
}
wait_until 30 "operator back: status names the missed pods (WebhookUnavailable): $missed" named_missed
wait_until 90 "Automatic heals them: every cart pod injected after one more rollout" all_pods cart "$hc" "-Xmx256m $MON -XX:ReservedCodeCacheSize=256m"
wait_until 30 "status after healing: 3/3" bash -c "[ \"\$('$KUBECTL' -n $NS get jvmdiag cart -o jsonpath='{.status.injected}')\" = 3/3 ]"
if k get events -n "$NS" -o json | jq -e '.items | any(.reason == "HealRollout")' >/dev/null; then ok "a HealRollout event records it"; else bad "HealRollout event"; fi

# --- bad resources, as kubectl users see them --------------------------------------------------
bad_apply() {  # spec-yaml expected-substring
  local out
  out=$(printf 'apiVersion: jvm.diagnostics.dev/v1alpha1\nkind: JvmDiagnostics\nmetadata: {name: bad, namespace: %s}\nspec:\n%s\n' "$NS" "$1" | k apply -f - 2>&1)
  if [ $? -ne 0 ] && grep -qF -- "$2" <<<"$out"; then ok "refused: $2"; else bad "refused: $2" "$out"; fi
}
bad_apply "  targetRef: {kind: Job, name: x}" 'spec.targetRef.kind: Unsupported value: "Job"'
bad_apply "  targetRef: {kind: Deployment, name: x}
  jvmOptions: {extra: ['-Xmx1g -Xms1g']}" "spec.jvmOptions.extra: Invalid value"
bad_apply "  targetRef: {kind: Deployment, name: x}
  alerts: {safepointPause: {threshold: 300ms}}" "round to the nearest, e.g. 500ms"
bad_apply "  targetRef: {kind: Deployment, name: x}
  jvmOptions: {extra: ['-XX:OnOutOfMemoryError=/bin/sh']}" "-XX:OnOutOfMemoryError=/bin/sh runs a shell command"
bad_apply "  targetRef: {kind: Deployment, name: x}
  jvmOptions: {extra: ['-javaagent:/tmp/a.jar'], allowJavaAgents: true}" "-javaagent:/tmp/a.jar loads code into every JVM of the workload"
bad_apply "  targetRef: {kind: Deployment, name: cart}" "Deployment/cart already has a JvmDiagnostics: $NS/cart owns it"

# --- leader election: a lost Lease or a failed start stops reconciling, the process stays up -------
# Extra replicas with their own Lease, reconciling an empty namespace only (no webhook), so they
# never touch what the operator above does.
LE_NS="e2e-le-$$"
k create namespace "$LE_NS" >/dev/null 2>&1 || true
le_pids=()
replica() {  # kubeconfig lease log args... ; sets REPLICA_PID
  local kc="$1" lease="$2" logf="$3"; shift 3
  "$JAVA25" -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -jar "$OPERATOR_JAR" --kubeconfig "$kc" --namespace "$OPERATOR_NS" --no-webhook \
    --metrics-bind 127.0.0.1:0 --probe-bind 127.0.0.1:0 --watch-namespaces "$LE_NS" --leader-election-namespace "$OPERATOR_NS" \
    --leader-election-lease "$lease" "$@" >"$logf" 2>&1 </dev/null &
  REPLICA_PID=$!
  le_pids+=("$REPLICA_PID")
}
holder() { k -n "$OPERATOR_NS" get lease "$1" -o jsonpath='{.spec.holderIdentity}' 2>/dev/null; }
lelog=$(mktemp -d)
trap 'for p in "${le_pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$lelog"' EXIT

# a start error: an identity that may hold a Lease but not watch JvmDiagnostics
# the chart grants the operator its own Lease by name only: the two replicas below that run with
# the operator's identity get their Leases here, by name too
k -n "$OPERATOR_NS" create role e2e-leases --verb=get,update,patch --resource=leases.coordination.k8s.io \
  --resource-name=e2e-steal --resource-name=e2e-delete >/dev/null 2>&1 || true
k -n "$OPERATOR_NS" create rolebinding e2e-leases --role=e2e-leases --serviceaccount="$OPERATOR_NS:jvmdiag-operator" >/dev/null 2>&1 || true
k -n "$OPERATOR_NS" create serviceaccount e2e-lease-only >/dev/null 2>&1 || true
k -n "$OPERATOR_NS" create role e2e-lease-only --verb=get,create,update,patch --resource=leases.coordination.k8s.io >/dev/null 2>&1 || true
k -n "$OPERATOR_NS" create rolebinding e2e-lease-only --role=e2e-lease-only --serviceaccount="$OPERATOR_NS:e2e-lease-only" >/dev/null 2>&1 || true
sed "s|token: \"[^\"]*\"|token: \"$(k -n "$OPERATOR_NS" create token e2e-lease-only --duration=1h)\"|" "$OPERATOR_STATE/kubeconfig" >"$lelog/lease-only.kubeconfig"
# all four replicas start at once (JVM start-up dominates)
replica "$OPERATOR_STATE/kubeconfig" e2e-steal "$lelog/steal.log"; steal=$REPLICA_PID
replica "$OPERATOR_STATE/kubeconfig" e2e-delete "$lelog/delete.log"; del=$REPLICA_PID
replica "$lelog/lease-only.kubeconfig" e2e-start "$lelog/start.log"; start=$REPLICA_PID
replica "$lelog/lease-only.kubeconfig" e2e-start-single "$lelog/start-single.log" --no-leader-election; single=$REPLICA_PID

if wait_until 60 "replica holds Lease e2e-steal" bash -c "[ -n \"\$('$KUBECTL' -n $OPERATOR_NS get lease e2e-steal -o jsonpath='{.spec.holderIdentity}')\" ]"; then
  k -n "$OPERATOR_NS" patch lease e2e-steal --type merge -p \
    "{\"spec\":{\"holderIdentity\":\"e2e-thief\",\"leaseDurationSeconds\":300,\"renewTime\":\"$(date -u +%Y-%m-%dT%H:%M:%S.000000Z)\"}}" >/dev/null
fi
if wait_until 60 "replica holds Lease e2e-delete" bash -c "[ -n \"\$('$KUBECTL' -n $OPERATOR_NS get lease e2e-delete -o jsonpath='{.spec.holderIdentity}')\" ]"; then
  k -n "$OPERATOR_NS" delete lease e2e-delete >/dev/null
fi
# a replica that stops leading stays up (its webhook would keep answering) and is a candidate again
wait_log() {  # seconds what pattern file (silent: the caller says ok or bad)
  local end=$(( $(date +%s) + $1 ))
  while [ "$(date +%s)" -lt "$end" ]; do grep -q "$3" "$4" && return 0; sleep 0.5; done; return 1
}
if wait_log 40 "steal: stopped reconciling" "lost Lease.*stopped reconciling, a candidate again" "$lelog/steal.log" \
   && kill -0 "$steal" 2>/dev/null && [ "$(holder e2e-steal)" = e2e-thief ]; then
  ok "Lease taken by another identity: the replica stops reconciling and stays up"
else bad "Lease taken: replica stops reconciling, stays up" "$(grep -E 'ERROR|WARN|Exception' "$lelog/steal.log" | head -3)"; fi
if wait_log 40 "delete: stopped reconciling" "was deleted while we held it.*stopped reconciling" "$lelog/delete.log" \
   && kill -0 "$del" 2>/dev/null; then ok "Lease deleted under the leader: the replica stops reconciling and stays up"
else bad "Lease deleted: replica stops reconciling, stays up" "$(grep -E 'ERROR|WARN|Exception' "$lelog/delete.log" | head -3)"; fi
if wait_log 90 "start error logged" "the reconciler did not start, giving up Lease" "$lelog/start.log" \
   && kill -0 "$start" 2>/dev/null; then
  ok "leader that cannot start its reconciler (no RBAC to watch) gives the Lease up and stays up"
else bad "start error on the leader: gives the Lease up" "$(grep -E 'ERROR|error' "$lelog/start.log" | head -3)"; fi
# without leader election the webhook is this replica's alone: a start error must not take it down
if wait_log 90 "start error logged" "the reconciler did not start: .*the webhook keeps serving" "$lelog/start-single.log" \
   && kill -0 "$single" 2>/dev/null; then
  ok "without leader election a start error is logged and retried, the process (its webhook) stays up"
else bad "start error without leader election: logged, process stays up" "$(tail -n 3 "$lelog/start-single.log")"; fi
# the replicas that stayed up (stopping them releases or leaves their Leases, deleted next)
for p in "$steal" "$del" "$start" "$single"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
k -n "$OPERATOR_NS" delete lease e2e-steal e2e-delete e2e-start >/dev/null 2>&1
k -n "$OPERATOR_NS" delete serviceaccount,role,rolebinding e2e-lease-only >/dev/null 2>&1
k -n "$OPERATOR_NS" delete role,rolebinding e2e-leases >/dev/null 2>&1
k delete namespace "$LE_NS" --wait=false >/dev/null 2>&1

# --- RBAC: the operator's identity is the chart's, nothing more ---------------------------------
sa="system:serviceaccount:$OPERATOR_NS:jvmdiag-operator"
if [ "$(k auth can-i list secrets -n default --as "$sa")" = no ] && [ "$(k auth can-i delete pods -n "$NS" --as "$sa")" = no ] \
   && [ "$(k auth can-i patch deployments -n "$NS" --as "$sa")" = yes ]; then
  ok "RBAC: the operator ran as $sa with only the chart's rules (no secrets elsewhere, no pod deletes)"
else
  bad "RBAC: chart rules only"
fi

# The operator's own log (operator/scripts/up.sh starts it with --log-format json) through both
# of its starts here: every line parses as the agent's do, and the reconciles above logged with
# the resource they reconciled.
if out=$(check_log_lines "operator log" "$OPERATOR_STATE/operator.log" --from-line "${LOG_FROM:-1}" \
  --ignore "=== operator-up" --require resource.namespace,resource.name); then
  ok "$out"
else bad "every operator log line is JSON of the agent's shape, one names its resource" "$out"; fi

echo "e2e: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
