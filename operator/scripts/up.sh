#!/usr/bin/env bash
# Builds the operator and (re)starts it in the background against $KUBECONFIG (default: the local
# cluster of hack/cluster, CLUSTER_INDEX), as the chart's ClusterRole allows and no more: a
# ServiceAccount bound to the rendered templates/operator/clusterrole.yaml, its token in a
# kubeconfig of its own. The webhook is registered on a loopback URL. No limit on rollouts
# (OPERATOR_MAX_ROLLOUTS_PER_MINUTE, default 0): the benchmark creates 1,000 resources at once and
# measures the reconciler, not the limit (RolloutLimitIT tests that). No per-peer limit on the
# webhook either (OPERATOR_WEBHOOK_POD_LIMIT, OPERATOR_WEBHOOK_VALIDATION_LIMIT, default 0): every
# admission of the benchmark comes from the one API server, faster than a cluster's usual rate
# (WebhookPeerLimitTest tests the limit). Logs JSON lines (OPERATOR_LOG_FORMAT, default json) to
# $OPERATOR_STATE/operator.log, after a "=== operator-up" line per start: check_log_lines reads
# what follows the last one.
set -euo pipefail
. "$(dirname "$0")/../../hack/lib.sh"
if [ -z "${KUBECONFIG:-}" ]; then KUBECONFIG="$KUBECONFIG_ADMIN"; fi
[ -f "$KUBECONFIG" ] || die "no kubeconfig at $KUBECONFIG: start a cluster first (CLUSTER_NODE=0 make cluster-up) and export KUBECONFIG"
export KUBECONFIG
k() { "$KUBECTL" "$@"; }
k get --raw /readyz >/dev/null 2>&1 || die "the API server of $KUBECONFIG does not answer: is the cluster up? (make cluster-up)"
mkdir -p "$OPERATOR_STATE"
# a running one may belong to an earlier cluster of this instance: always start afresh
if operator_alive; then
  log "restarting the operator (pid $(operator_pid))"
  KEEP_WEBHOOK=1 "$REPO_ROOT/operator/scripts/down.sh"
fi
operator_build

k apply --server-side --force-conflicts -f "$REPO_ROOT/crds/" >/dev/null
# not `kubectl wait`: it errors out ("accessor error: <nil>") while a fresh CRD has no conditions yet
for _ in $(seq 1 60); do
  [ "$(k get crd jvmdiagnostics.jvm.diagnostics.dev -o jsonpath='{.status.conditions[?(@.type=="Established")].status}' 2>/dev/null)" = True ] && break
  sleep 0.5
done
[ "$(k get crd jvmdiagnostics.jvm.diagnostics.dev -o jsonpath='{.status.conditions[?(@.type=="Established")].status}')" = True ] \
  || die "the JvmDiagnostics CRD is not Established after 30 s"
k create namespace "$OPERATOR_NS" --dry-run=client -o yaml | k apply --server-side -f - >/dev/null
k -n "$OPERATOR_NS" create serviceaccount jvmdiag-operator --dry-run=client -o yaml | k apply --server-side -f - >/dev/null
render_rbac >"$OPERATOR_STATE/rbac.yaml"
k apply --server-side --force-conflicts -f "$OPERATOR_STATE/rbac.yaml" >/dev/null
# every ClusterRole bound cluster-wide (the chart's default, no watchNamespaces), the Role in its
# namespace: whatever names the chart's helpers make
roles=$(awk '/^kind: /{kind=$2} /^  name:/ && kind {print kind, $2; kind=""}' "$OPERATOR_STATE/rbac.yaml")
grep -q '^ClusterRole ' <<<"$roles" || die "no ClusterRole in the rendered templates/operator/clusterrole.yaml"
while read -r kind role; do
  if [ "$kind" = ClusterRole ]; then
    k create clusterrolebinding "$role" --clusterrole="$role" \
      --serviceaccount="$OPERATOR_NS:jvmdiag-operator" --dry-run=client -o yaml | k apply --server-side -f - >/dev/null
  else
    k -n "$OPERATOR_NS" create rolebinding "$role" --role="$role" \
      --serviceaccount="$OPERATOR_NS:jvmdiag-operator" --dry-run=client -o yaml | k apply --server-side -f - >/dev/null
  fi
done <<<"$roles"
# The chart grants the webhook registrations, the Secret and the Lease by name: the operator gets
# those names, and the registrations exist before it starts, as Helm creates them (empty, labelled
# as the operator's own, so that it applies its whole URL registration; down.sh deletes them).
mapfile -t names < <(render_operator_names)
[ "${#names[@]}" = 3 ] || die "the chart's deployment.yaml names no --webhook-config, --webhook-secret and --leader-election-lease"
config=$(printf '%s\n' "${names[@]}" | sed -n 's/^--webhook-config=//p')
echo "$config" >"$OPERATOR_STATE/webhook-config"
for kind in MutatingWebhookConfiguration ValidatingWebhookConfiguration; do
  k get "$kind" "$config" >/dev/null 2>&1 || k create -f - >/dev/null <<REG
apiVersion: admissionregistration.k8s.io/v1
kind: $kind
metadata:
  name: $config
  labels: {app.kubernetes.io/managed-by: jvmdiag-operator}
REG
done

# a kubeconfig for the service account: same server and CA, its own token
token=$(k -n "$OPERATOR_NS" create token jvmdiag-operator --duration=24h)
server=$(k config view --minify --raw -o jsonpath='{.clusters[0].cluster.server}')
ca=$(k config view --minify --raw -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
if [ -z "$ca" ]; then ca=$(base64 -w0 <"$(k config view --minify --raw -o jsonpath='{.clusters[0].cluster.certificate-authority}')"); fi
cat >"$OPERATOR_STATE/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters: [{name: local, cluster: {server: "$server", certificate-authority-data: "$ca"}}]
users: [{name: jvmdiag-operator, user: {token: "$token"}}]
contexts: [{name: operator, context: {cluster: local, user: jvmdiag-operator, namespace: $OPERATOR_NS}}]
current-context: operator
KC
chmod 600 "$OPERATOR_STATE/kubeconfig"

echo "=== operator-up $(date -u +%FT%TZ)" >>"$OPERATOR_STATE/operator.log"
from=$(wc -l <"$OPERATOR_STATE/operator.log")
# OPERATOR_LAUNCH: the command that starts the JVM, the operator's arguments after it (default: this
# JDK, a fixed heap; the scale benchmark runs the image's own JVM and flags in a memory cgroup).
# The arguments are kept in operator.args, one a line, to start another replica the same way.
# shellcheck disable=SC2206 # OPERATOR_LAUNCH, OPERATOR_ARGS: words, split on purpose
launch=(${OPERATOR_LAUNCH:-$JAVA25 -Xms64m -Xmx512m -jar $OPERATOR_JAR})
# shellcheck disable=SC2206
args=(--kubeconfig "$OPERATOR_STATE/kubeconfig" --namespace "$OPERATOR_NS"
  --webhook-bind "127.0.0.1:$OPERATOR_WEBHOOK_PORT" --webhook-url "https://127.0.0.1:$OPERATOR_WEBHOOK_PORT"
  --metrics-bind "127.0.0.1:$OPERATOR_METRICS_PORT" --probe-bind 127.0.0.1:0 --leader-election-namespace "$OPERATOR_NS"
  --max-rollouts-per-minute "${OPERATOR_MAX_ROLLOUTS_PER_MINUTE:-0}" "${names[@]}"
  --webhook-pod-limit "${OPERATOR_WEBHOOK_POD_LIMIT:-0}" --webhook-validation-limit "${OPERATOR_WEBHOOK_VALIDATION_LIMIT:-0}"
  --log-format "${OPERATOR_LOG_FORMAT:-json}" ${OPERATOR_ARGS:-})
printf '%s\n' "${args[@]}" >"$OPERATOR_STATE/operator.args"
setsid nohup "${launch[@]}" "${args[@]}" >>"$OPERATOR_STATE/operator.log" 2>&1 </dev/null &
echo $! >"$OPERATOR_STATE/operator.pid"
for _ in $(seq 1 120); do
  if tail -n "+$from" "$OPERATOR_STATE/operator.log" | grep -q "jvmdiag-operator running"; then
    log "operator up (pid $(operator_pid)): webhook https://127.0.0.1:$OPERATOR_WEBHOOK_PORT, metrics http://127.0.0.1:$OPERATOR_METRICS_PORT/metrics, log $OPERATOR_STATE/operator.log"
    exit 0
  fi
  if ! operator_alive; then
    grep -E '^error:' "$OPERATOR_STATE/operator.log" >&2 || tail -n 20 "$OPERATOR_STATE/operator.log" >&2
    die "the operator exited (log: $OPERATOR_STATE/operator.log)"
  fi
  sleep 0.5
done
die "the operator did not come up in 60 s (log: $OPERATOR_STATE/operator.log)"
