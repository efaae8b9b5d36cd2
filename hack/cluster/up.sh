#!/usr/bin/env bash
# Starts the local single-node cluster in the background and prints, as its LAST line,
# `export KUBECONFIG=<path>`.
#   CLUSTER_NODE=0  control plane only (etcd, kube-apiserver, controller-manager, scheduler)
#   CLUSTER_NODE=1  also the node: containerd, runc, CNI bridge, kubelet (default)
#   CLUSTER_INDEX=N another instance (own dir, ports, bridge, subnet), N in 0-9
#   CLUSTER_IMAGES="pause jdk17-base"  import only these archives (default: all built)
#   APISERVER_EXTRA_ARGS="--feature-gates=..."  more kube-apiserver flags
# State lives in $JVMDIAG_CACHE/cluster/ (CLUSTER_INDEX=N: cluster-N/). A failure names
# the step and the log to read, and undoes everything already started.
set -Eeuo pipefail
. "$(dirname "$0")/../lib.sh"
. "$REPO_ROOT/hack/cluster/pki.sh"
. "$REPO_ROOT/hack/cluster/control-plane.sh"
. "$REPO_ROOT/hack/cluster/node.sh"
case "$CLUSTER_NODE" in 0|1) ;; *) die "CLUSTER_NODE must be 0 (control plane only) or 1 (with the node), got '$CLUSTER_NODE'";; esac
[ "$(id -u)" -eq 0 ] || [ "$CLUSTER_NODE" = 0 ] || die "the node (CLUSTER_NODE=1) needs root: run as root, or CLUSTER_NODE=0 for the control plane only"

mkdir -p "$CLUSTER_DIR" "$LOGS" "$RUN"
exec 8>"$CLUSTER_DIR/.lock"
flock -w 300 8 || die "another cluster-up/down of $CLUSTER_DIR is running (lock $CLUSTER_DIR/.lock)"

# Already up with the same shape: say so and print the export line again.
if daemon_alive kube-apiserver && curl -fsS --cacert "$PKI/ca.crt" "$APISERVER_URL/readyz" >/dev/null 2>&1 \
   && { [ "$CLUSTER_NODE" = 0 ] || daemon_alive kubelet; }; then
  log "cluster already up ($CLUSTER_DIR); 'make cluster-down' stops it"
  echo "export KUBECONFIG=$KUBECONFIG_ADMIN"
  exit 0
fi
# Leftovers of a crashed or half-started run go first.
"$REPO_ROOT/hack/cluster/down.sh" --quiet
mkdir -p "$LOGS" "$RUN"

# The ERR trap can fire inside a function whose output is redirected (to /dev/null):
# report on the stderr this script started with.
exec 3>&2
on_error() {
  local rc=$?
  trap - ERR
  exec 2>&3
  printf 'error: cluster-up failed at step: %s\n' "$STEP" >&2
  if [ -n "$STEP_LOG" ]; then
    printf 'error: read the log: %s\n' "$STEP_LOG" >&2
    # Its last errors, if it has any, else its last lines.
    { grep -iE 'error|fail|fatal' "$STEP_LOG" | tail -n 6 | grep . || tail -n 6 "$STEP_LOG"; } 2>/dev/null | cut -c1-400 >&2
  fi
  log "cleaning up what was started"
  "$REPO_ROOT/hack/cluster/down.sh" --quiet >&2 || true
  exit "$rc"
}
trap on_error ERR

start=$(date +%s%N)
step "checking that the cluster's ports on 127.0.0.1 are free"
ports=("$ETCD_CLIENT_PORT" "$ETCD_PEER_PORT" "$APISERVER_PORT" "$CM_PORT" "$SCHED_PORT")
[ "$CLUSTER_NODE" = 1 ] && ports+=("$KUBELET_PORT" "$KUBELET_HEALTHZ_PORT" "$REGISTRY_PORT")
for p in "${ports[@]}"; do
  if ss -Htln "sport = :$p" | grep -q .; then
    die "port $p is in use ($(ss -Htlnp "sport = :$p" | grep -o 'users:.*' | head -n1)); stop that process or use another CLUSTER_INDEX (0-9)"
  fi
done
step "locating the Kubernetes v$KUBE_VERSION binaries (builds them once, ~20 min cold)" "$JVMDIAG_CACHE/kube-build"
KUBE_BIN=$(kube_bin)
NODE_IP=$(node_ip)
step "making certificates, tokens and kubeconfigs ($PKI)"
make_pki "$NODE_IP"
echo "$CLUSTER_NODE" >"$RUN/node-enabled"

start_etcd
start_apiserver "$NODE_IP"
start_controller_manager
start_scheduler
wait_default_sa
if [ "$CLUSTER_NODE" = 1 ]; then
  start_node "$NODE_IP"
fi
trap - ERR
log "cluster up in $(awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN{printf "%.1f", (b-a)/1e9}') s: API $APISERVER_URL, logs in $LOGS, 'make cluster-down' stops it"
echo "export KUBECONFIG=$KUBECONFIG_ADMIN"
