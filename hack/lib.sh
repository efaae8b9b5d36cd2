# The one shell library of the repository: every script (hack/, e2e/, operator/scripts/,
# node-agent/fuzz/) sources it, e.g. . "$(dirname "$0")/lib.sh". Sections: paths and tools;
# logging and test results; the local cluster instance; the operator.
# A script that runs its own cluster instance sets CLUSTER_INDEX before sourcing it.

# --- paths and tools -----------------------------------------------------------------------------
# shellcheck disable=SC2034 # a library: its variables are used by the scripts that source it
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
JVMDIAG_CACHE="${JVMDIAG_CACHE:-$HOME/.cache/jvm-diagnostics}"
export JVMDIAG_CACHE
mkdir -p "$JVMDIAG_CACHE"
JDK17="${JDK17:-/usr/lib/jvm/java-17-openjdk-amd64}"
# shellcheck disable=SC2012 # the newest temurin-25-jdk-* directory, plain names
JDK25="${JDK25:-$(ls -d /usr/lib/jvm/temurin-25-jdk-* 2>/dev/null | head -n1)}"
export JDK17 JDK25
# The Java test workloads, in one place for every test and benchmark that runs a real JVM
# (the e2e scripts, hack/bench.d).
export JVMDIAG_WORKLOADS="${JVMDIAG_WORKLOADS:-$REPO_ROOT/e2e/workloads}"

# ../shared sits beside the repository (in CI too); its metrics-contract checker is used by tests.
if [ -z "${CONTRACT_TOOL:-}" ]; then
  for c in "$REPO_ROOT/../shared/tools/check-metrics-contract.py" /work/shared/tools/check-metrics-contract.py; do
    [ -f "$c" ] && { CONTRACT_TOOL="$(cd "$(dirname "$c")" && pwd)/$(basename "$c")"; break; }
  done
fi
export CONTRACT_TOOL="${CONTRACT_TOOL:-$REPO_ROOT/../shared/tools/check-metrics-contract.py}"

# --- logging and test results --------------------------------------------------------------------
log() { printf '>> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# Counting test results from the runners we use; each echoes "P F".
count_cargo() {  # cargo test output: "test result: ok. 3 passed; 0 failed; ..."
  awk '/^test result:/ {for(i=1;i<=NF;i++){if($(i)~/^passed;?/)p+=$(i-1); if($(i)~/^failed;?/)f+=$(i-1)}} END{print p+0, f+0}' "$1"
}
count_surefire() {  # Maven: "Tests run: 10, Failures: 1, Errors: 0, Skipped: 2" (the per-module summary lines)
  awk '/Tests run:.*Failures:/ && !/Time elapsed/ {gsub(/,/,""); for(i=1;i<=NF;i++){if($i=="run:")r+=$(i+1); if($i=="Failures:")fl+=$(i+1); if($i=="Errors:")e+=$(i+1); if($i=="Skipped:")s+=$(i+1)}} END{print r-fl-e-s, fl+e}' "$1"
}
# A suite ends by calling: suite_result NAME PASSED FAILED
suite_result() { echo "suite $1: $2 passed, $3 failed"; }

# --- machine set-up --------------------------------------------------------------------------------
# apt_ensure PKG...: installs the Debian packages not installed yet (root only; apt-get update at
# most every 12 h). The apt lock is held only while installing, so a set-up step may call it too.
apt_ensure() {
  local p missing=()
  for p in "$@"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p"); done
  [ "${#missing[@]}" -gt 0 ] || return 0
  [ "$(id -u)" -eq 0 ] || die "need root to install: ${missing[*]} (run: sudo make setup)"
  log "installing Debian packages: ${missing[*]}"
  (
    exec 9>/tmp/jvmdiag-apt.lock; flock 9
    stamp="$JVMDIAG_CACHE/apt-updated"
    if [ ! -f "$stamp" ] || [ -n "$(find "$stamp" -mmin +720 2>/dev/null)" ]; then
      apt-get update -qq && touch "$stamp"
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  )
}
# pinned_venv DIR REQUIREMENT...: a Python venv at DIR with exactly these pip requirements,
# made again when they change (recorded in DIR/.ok). Callers hold their own lock.
pinned_venv() {
  local venv="$1"; shift
  local want="$*"
  if [ ! -f "$venv/.ok" ] || [ "$(cat "$venv/.ok")" != "$want" ]; then
    log "creating $venv ($want)"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check "$@"
    echo "$want" > "$venv/.ok"
  fi
}

# --- the local cluster (hack/cluster/) -----------------------------------------------------------
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
# The node's image registry (Debian's docker-registry, the CNCF distribution registry): plain
# HTTP on loopback, where containerd (host network) pulls from it; `make images-push` and
# `make chart-push` push to it.
REGISTRY_PORT=$((15000 + 10 * _i))
REGISTRY_ADDR="127.0.0.1:$REGISTRY_PORT"
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
REGISTRY_DIR="$CLUSTER_DIR/registry"   # its config and storage; kept across down, like the images
IMAGES_DIR="$JVMDIAG_CACHE/images"   # image archives, shared by every instance

kube_bin() { "$REPO_ROOT/hack/kube-binaries.sh"; }

# --- Prometheus and Alertmanager -----------------------------------------------------------------
# monitoring_tools: sets and exports PROMETHEUS, PROMTOOL, ALERTMANAGER, AMTOOL and puts their
# directories first in PATH (so `promtool` in the Python checks is the same one). Which ones:
#   PROMETHEUS_FLAVOR=upstream (default)  Prometheus 3.x and Alertmanager built from their Go
#                                         modules, once, by hack/monitoring-binaries.sh (cached)
#   PROMETHEUS_FLAVOR=debian              the Debian packages (Prometheus 2.42, Alertmanager 0.25)
# Resolved once per process tree: children inherit the exported values.
monitoring_tools() {
  local flavor="${PROMETHEUS_FLAVOR:-upstream}" out
  if [ "${JVMDIAG_MONITORING_FLAVOR:-}" = "$flavor" ] && [ -x "${PROMETHEUS:-}" ] && [ -x "${ALERTMANAGER:-}" ]; then return 0; fi
  case "$flavor" in
    upstream)
      out=$("$REPO_ROOT/hack/monitoring-binaries.sh") || { log "building Prometheus/Alertmanager failed (hack/monitoring-binaries.sh)"; return 1; }
      eval "$out" ;;
    debian)
      if ! { PROMETHEUS=$(command -v prometheus) && PROMTOOL=$(command -v promtool) \
               && ALERTMANAGER=$(command -v prometheus-alertmanager); }; then
        log "Debian's prometheus, promtool or prometheus-alertmanager missing (hack/packages/monitoring.apt; make setup)"; return 1
      fi
      AMTOOL=$(command -v amtool || true) ;;
    *) log "PROMETHEUS_FLAVOR must be upstream or debian, not '$flavor'"; return 1 ;;
  esac
  PATH="$(dirname "$PROMTOOL"):$(dirname "$ALERTMANAGER"):$PATH"
  JVMDIAG_MONITORING_FLAVOR=$flavor
  export PROMETHEUS PROMTOOL ALERTMANAGER AMTOOL PATH JVMDIAG_MONITORING_FLAVOR
}
# The first line of each one's --version, e.g. "prometheus, version 3.16.0 (branch: …)".
monitoring_versions() {
  "$PROMETHEUS" --version 2>&1 | head -n1
  "$ALERTMANAGER" --version 2>&1 | head -n1
}

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
  # shellcheck disable=SC2012 # counting /proc/PID/task entries (numbers)
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

# --- the operator (operator/scripts/, make operator-up) ------------------------------------------
OPERATOR_DIR="$REPO_ROOT/operator"
OPERATOR_JAR="$OPERATOR_DIR/target/jvmdiag-operator.jar"
OPERATOR_NS="${OPERATOR_NS:-jvm-diagnostics}"
# One state directory and port pair per local cluster instance.
OPERATOR_STATE="$JVMDIAG_CACHE/operator/instance-$_i"
OPERATOR_WEBHOOK_PORT="${OPERATOR_WEBHOOK_PORT:-$((19443 + 10 * _i))}"
OPERATOR_METRICS_PORT="${OPERATOR_METRICS_PORT:-$((18080 + 10 * _i))}"
JAVA25="$JDK25/bin/java"
KUBECTL="${KUBECTL:-$JVMDIAG_CACHE/k8s/$KUBE_VERSION-linux-amd64/kubectl}"
HELM="${HELM:-$JVMDIAG_CACHE/bin/helm}"

# check_log_lines NAME FILE [log_lines.py options]: every line of FILE is a JSON log line of the
# shape both processes write (e2e/log_lines.py); prints its one-line summary or the first bad line,
# returns 1 on a bad one. E.g. the operator's last start (operator/scripts/up.sh):
#   check_log_lines "operator log" "$OPERATOR_STATE/operator.log" --after-last "=== operator-up"
check_log_lines() {
  local name="$1" file="$2"
  shift 2
  python3 "$REPO_ROOT/e2e/log_lines.py" --name "$name" "$@" <"$file"
}

# Maven on the Temurin 25 JDK (the code is Java 21); the repository cache in ~/.m2.
mvn25() { (cd "$OPERATOR_DIR" && JAVA_HOME="$JDK25" nice mvn -B "$@"); }

# Builds the jar when a source is newer than it, and lists its runtime dependencies
# (target/runtime-dependencies.txt: the image's SBOM names those the jar has no pom.properties of).
operator_build() {
  [ -x "$JAVA25" ] || die "the operator needs a JDK >= 21: none at JDK25=$JDK25"
  if [ ! -f "$OPERATOR_JAR" ] || [ -n "$(find "$OPERATOR_DIR/pom.xml" "$OPERATOR_DIR/src/main" "$OPERATOR_DIR/src/build" "$REPO_ROOT/monitoring/histogram-bounds.txt" -newer "$OPERATOR_JAR" -print -quit)" ]; then
    log "building $OPERATOR_JAR"
    mkdir -p "$(dirname "$OPERATOR_STATE")"
    mvn25 -q package dependency:list -DincludeScope=runtime -DoutputFile=target/runtime-dependencies.txt \
      -DskipTests -DskipITs >"$OPERATOR_STATE.build.log" 2>&1 \
      || { tail -n 30 "$OPERATOR_STATE.build.log" >&2; die "operator build failed (log: $OPERATOR_STATE.build.log)"; }
  fi
}

# agent_build LOG: builds the release agent where a source changed (cargo decides); on failure
# prints the log's tail and returns 1.
agent_build() {
  (cd "$REPO_ROOT/node-agent" && nice cargo build --release --locked) >"$1" 2>&1 || { tail -n 8 "$1" >&2; return 1; }
}

# The chart's ClusterRoles + Role exactly as helm renders them (default values, release jvmdiag).
render_rbac() {
  bash "$REPO_ROOT/hack/setup.d/helm.sh" >&2 || die "helm missing (hack/setup.d/helm.sh failed)"
  "$HELM" template jvmdiag "$REPO_ROOT/charts/jvm-diagnostics" --namespace "$OPERATOR_NS" --kube-version "$KUBE_VERSION" \
    --show-only templates/operator/clusterrole.yaml
}

# The flags naming the webhook registrations, Secret and Lease, as the chart passes them for the
# same release: its RBAC grants exactly these names (one flag=value a line).
render_operator_names() {
  "$HELM" template jvmdiag "$REPO_ROOT/charts/jvm-diagnostics" --namespace "$OPERATOR_NS" --kube-version "$KUBE_VERSION" \
    --show-only templates/operator/deployment.yaml | grep -oE -- '--(webhook-config|webhook-secret|leader-election-lease)=[^" ]+'
}

operator_pid() { cat "$OPERATOR_STATE/operator.pid" 2>/dev/null; }
operator_alive() { local p; p=$(operator_pid); [ -n "$p" ] && kill -0 "$p" 2>/dev/null; }

# --- benchmarks (hack/bench.d/) ---------------------------------------------------------------
# Sets AGENT: BENCH_AGENT (an agent binary to measure) or the release build of node-agent/.
# busy_pct: how busy the machine was over the last second, in % of all its cores (/proc/stat:
# everything but idle and iowait).
busy_pct() {
  local a b
  a=$(awk '/^cpu / {print $2 + $3 + $4 + $7 + $8 + $9, $5 + $6}' /proc/stat); sleep 1
  b=$(awk '/^cpu / {print $2 + $3 + $4 + $7 + $8 + $9, $5 + $6}' /proc/stat)
  awk -v a="$a" -v b="$b" 'BEGIN {split(a, x, " "); split(b, y, " "); d = (y[1] - x[1]) + (y[2] - x[2]); printf "%.0f\n", (d > 0 ? 100 * (y[1] - x[1]) / d : 0)}'
}

# bench_wait_quiet LOG: before a measured run, waits (up to 60 s) until the machine is quiet:
# busy at most BENCH_MAX_BUSY % (default 15) over a second while the bench itself runs nothing
# but idle JVMs. Appends "busy% quiet|busy" to LOG; bench_quiet_report refuses the report when
# a run started on a busy machine, so a figure is never the machine's state.
bench_wait_quiet() {
  local b=100 max="${BENCH_MAX_BUSY:-15}"
  for _ in $(seq 60); do b=$(busy_pct); [ "$b" -le "$max" ] && { echo "$b quiet" >>"$1"; return 0; }; done
  echo "$b busy" >>"$1"; log "the machine is busy (${b} % of its cores for 60 s): this run's figure will not be reported"
}

# bench_quiet_report LOG: prints the machine's load and how busy it was before the runs; returns
# 1 (and says why) when any run started on a busy machine.
bench_quiet_report() {
  [ -s "$1" ] || return 0
  echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); busy before each run: $(awk '{print $1}' "$1" | sort -n | awk '{v[NR] = $1} END {printf "median %s %%, max %s %% (limit '"${BENCH_MAX_BUSY:-15}"' %%), %d runs", v[int((NR + 1) / 2)], v[NR], NR}')"
  if grep -q ' busy$' "$1"; then
    echo "REFUSED: $(grep -c ' busy$' "$1") run(s) started while something else kept the machine busy; run again on a quiet machine (BENCH_MAX_BUSY sets the limit)"
    return 1
  fi
}

bench_agent() {
  if [ -n "${BENCH_AGENT:-}" ]; then
    AGENT="$BENCH_AGENT"; [ -x "$AGENT" ] || die "BENCH_AGENT=$AGENT is not an executable"
  else
    log "building jvmdiag-agent (release)"
    (cd "$REPO_ROOT/node-agent" && nice cargo build --release -q -p jvmdiag-agent)
    AGENT="${CARGO_TARGET_DIR:-$REPO_ROOT/node-agent/target}/release/jvmdiag-agent"
  fi
}
