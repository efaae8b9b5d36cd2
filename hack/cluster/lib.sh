# Paths, ports and helpers shared by the local cluster scripts (up.sh, down.sh, ...).
# Source it after hack/lib.sh.
#
# CLUSTER_INDEX selects an instance (0 = the developer's cluster, 1 = the test suite's), so
# `make test` can run its own cluster next to a developer's without touching it: every
# directory, port, bridge, subnet and cgroup root below is derived from it.
CLUSTER_INDEX="${CLUSTER_INDEX:-0}"
case "$CLUSTER_INDEX" in [0-9]) ;; *) die "CLUSTER_INDEX must be one digit 0-9, got '$CLUSTER_INDEX'";; esac
_i="$CLUSTER_INDEX"
if [ "$_i" = 0 ]; then CLUSTER_DIR="${CLUSTER_DIR:-$JVMDIAG_CACHE/cluster}"
else CLUSTER_DIR="${CLUSTER_DIR:-$JVMDIAG_CACHE/cluster-$_i}"; fi
CLUSTER_NODE="${CLUSTER_NODE:-1}"
KUBE_VERSION="${KUBE_VERSION:-1.34.4}"

# Ports: all control-plane listeners are on 127.0.0.1; offsets keep instances apart.
ETCD_CLIENT_PORT=$((12379 + 10 * _i))
ETCD_PEER_PORT=$((12380 + 10 * _i))
APISERVER_PORT=$((16443 + 10 * _i))
CM_PORT=$((16257 + 10 * _i))
SCHED_PORT=$((16259 + 10 * _i))
KUBELET_PORT=$((16250 + 10 * _i))
KUBELET_HEALTHZ_PORT=$((16248 + 10 * _i))
APISERVER_URL="https://127.0.0.1:$APISERVER_PORT"

SERVICE_CIDR="10.$((96 + _i)).0.0/16"
KUBERNETES_SVC_IP="10.$((96 + _i)).0.1"
POD_SUBNET="10.244.$_i.0/24"
CNI_NETWORK="jvmdiag$_i"
BRIDGE="jvmdiag$_i"
# Instance 0 uses the kubelet's default cgroup root, so pods' cgroup paths are the ones
# users see (/kubepods/...); other instances nest theirs to stay apart.
if [ "$_i" = 0 ]; then CGROUP_ROOT="/"; else CGROUP_ROOT="/jvmdiag$_i"; fi
# Our own iptables chain (nat) that routes the `kubernetes` Service to the API server.
SVC_CHAIN="JVMDIAG$_i-KUBE-SVC"
NODE_NAME="${NODE_NAME:-$(hostname | tr 'A-Z_' 'a-z-')}"

PKI="$CLUSTER_DIR/pki"
LOGS="$CLUSTER_DIR/logs"
RUN="$CLUSTER_DIR/run"           # pid files and sockets
ETCD_DATA="$CLUSTER_DIR/etcd"
KUBECONFIG_ADMIN="$CLUSTER_DIR/kubeconfig"
CTRD_DIR="$CLUSTER_DIR/containerd"
CTRD_SOCK="$RUN/containerd.sock"
KUBELET_DIR="$CLUSTER_DIR/kubelet"
CNI_DIR="$CLUSTER_DIR/cni"
IMAGES_DIR="$JVMDIAG_CACHE/images"   # image archives, shared by every instance

kube_bin() { "$REPO_ROOT/hack/kube-binaries.sh"; }

# The node IP: the address of the interface that holds the default route (the kubelet
# refuses a loopback node IP).
node_ip() {
  local ip
  ip=$(ip -4 route get 1.1.1.1 2>/dev/null | sed -nE 's/.* src ([0-9.]+).*/\1/p' | head -n1)
  [ -n "$ip" ] || ip=$(ip -4 -o addr show scope global | awk '{print $4}' | cut -d/ -f1 | head -n1)
  [ -n "$ip" ] || die "no non-loopback IPv4 address found for the node IP"
  echo "$ip"
}

# step NAME LOGFILE: remember what we are doing, so a failure names the step and the log.
STEP="" STEP_LOG=""
step() { STEP="$1"; STEP_LOG="${2:-}"; log "$STEP"; }

# start_daemon NAME CMD...: run CMD in the background in its own session, log to
# $LOGS/NAME.log, pid in $RUN/NAME.pid.
start_daemon() {
  local name="$1"; shift
  mkdir -p "$LOGS" "$RUN"
  : >"$LOGS/$name.log"
  # 3>&- 7>&- 8>&-: the daemon must not inherit the up/down locks nor up's saved stderr.
  setsid "$@" >>"$LOGS/$name.log" 2>&1 </dev/null 3>&- 7>&- 8>&- &
  echo $! >"$RUN/$name.pid"
}

# pid_alive PID: running, not a zombie (our daemons outlive up.sh, so a dead one waits to
# be reaped by init and `kill -0` alone would still succeed).
pid_alive() {
  local st
  st=$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

# pid_gone PID: exited entirely: no such pid, or a zombie whose threads have all gone (a Go
# daemon's leader turns Z while its other threads are still tearing down after a KILL).
pid_gone() {
  [ -d "/proc/$1" ] || return 0
  ! pid_alive "$1" && [ "$(ls "/proc/$1/task" 2>/dev/null | wc -l)" -le 1 ]
}

daemon_alive() {
  local pid
  pid=$(cat "$RUN/$1.pid" 2>/dev/null) || return 1
  pid_alive "$pid"
}

# stop_daemon NAME [GRACE_SECONDS]: TERM the process group, KILL after the grace period.
stop_daemon() {
  local name="$1" grace="${2:-10}" pid i
  pid=$(cat "$RUN/$name.pid" 2>/dev/null) || return 0
  if pid_alive "$pid"; then
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < grace * 10; i++)); do pid_alive "$pid" || break; sleep 0.1; done
    if pid_alive "$pid"; then
      kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
    fi
    for ((i = 0; i < 100; i++)); do pid_gone "$pid" && break; sleep 0.1; done
  fi
  rm -f "$RUN/$name.pid"
}

# wait_for SECONDS DAEMON CMD...: poll CMD until it succeeds; fail early if DAEMON died.
wait_for() {
  local secs="$1" daemon="$2" i; shift 2
  for ((i = 0; i < secs * 5; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    if [ -n "$daemon" ] && ! daemon_alive "$daemon"; then
      log "$daemon exited"
      return 1
    fi
    sleep 0.2
  done
  return 1
}

kc() { "$KUBE_BIN/kubectl" --kubeconfig "$KUBECONFIG_ADMIN" "$@"; }
