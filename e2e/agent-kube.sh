#!/usr/bin/env bash
# End to end, Kubernetes mode and sidecar mode on the local single-node cluster (real
# kubelet + containerd), its own instance (CLUSTER_INDEX=7). Run by hack/suites/45-agent-kube.sh.
#
# Node-agent mode: JVM Deployments on the JDK 17 and 25 base images as a node runs them,
# many containers of one image: per JDK a Deployment of 3 replicas and a second one of 1,
# all instrumented by the operator (a JvmDiagnostics each; its webhook stamps the pods), plus
# one pod not instrumented and the sidecar pods, all from the same two images. The agent runs
# ON THE HOST (root, eBPF) with --node-name and the cluster's kubeconfig. Checks, per pod:
# series carry namespace, pod, container and jvmdiagnostics; in a window the test opens, each
# pod's JVM starts a different known number of threads and runs known safepoints, and the
# pod's thread starts and safepoints equal `kubectl exec … jcmd 1 PerfCounter.print` exactly
# (counted once however many containers map the image's libjvm.so); who starts threads: each
# pod's threshold of the on-demand starter probe is its resource's threadStartRate, the probe
# attached to the pods storming past theirs counts by (thread name, starter) exactly what their
# starters started, then detaches, and the pod storming below its own threshold gets none; the
# pod without the annotation is not traced and, though its JVM maps the same libjvm.so, none of the
# agent's programs runs for its 2,000 thread starts (kernel run counts); a deleted pod's series are
# shown once more, then gone.
# Sidecar mode: a JvmDiagnostics with `collection: Sidecar` per JDK; the webhook adds the
# unprivileged jvmdiag-sidecar (this tree's agent binary, image built here) and the shared
# /tmp volume; its /metrics, scraped through the pod IP, carries the contract's labels and
# probe_mode="hsperfdata", safepoint count and total time within 1 % of the JVM's counters,
# thread starts equal to java.threads.started.
#
# Pods are bound to the node by spec.nodeName: nothing here depends on the scheduler. Every
# wait is bounded and says on timeout what it waited for, with the pods' conditions and
# events. Everything started here is stopped by the EXIT trap, also on failure or signal.
# Usage: e2e/agent-kube.sh (root). E2E_OPERATOR=0: stamp pods by hand, no operator,
# no sidecar part.
set -uo pipefail
export CLUSTER_INDEX="${AGENT_KUBE_E2E_INDEX:-7}" CLUSTER_NODE=1
. "$(dirname "$0")/../hack/lib.sh"
WORK=$(mktemp -d)
pass=0 fail=0 AGENT_PID=""
ok()  { pass=$((pass + 1)); echo "ok   - $1"; }
bad() { fail=$((fail + 1)); echo "FAIL - $1"; [ -n "${2:-}" ] && echo "       $2"; return 0; }
E2E_OPERATOR="${E2E_OPERATOR:-1}"
T0=$(date +%s)
step() { log "[$(( $(date +%s) - T0 ))s] $*"; }
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
  [ -n "$AGENT_PID" ] && kill "$AGENT_PID" 2>/dev/null && wait "$AGENT_PID" 2>/dev/null
  [ "$E2E_OPERATOR" = 1 ] && "$REPO_ROOT/operator/scripts/down.sh" >/dev/null 2>&1
  "$REPO_ROOT/hack/cluster/down.sh" --quiet >/dev/null 2>&1
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'echo "interrupted"; exit 130' INT TERM
finish() { step "done"; suite_result agent-kube-e2e "$pass" "$fail"; [ "$fail" -eq 0 ]; exit $?; }
KBIN=$("$REPO_ROOT/hack/kube-binaries.sh") || { bad "kube binaries"; finish; }
kc() { timeout 60 "$KBIN/kubectl" --kubeconfig "$KUBECONFIG_ADMIN" "$@"; }

# What a pod waits for: its phase, conditions, container states and events.
explain() {  # label selector
  kc get pods -l "$1" -o wide 2>&1 | sed 's/^/       /'
  kc get pods -l "$1" -o jsonpath='{range .items[*]}{.metadata.name}: {range .status.conditions[*]}{.type}={.status}{" "}{.reason}{" "}{end}{range .status.containerStatuses[*]}[{.name} {.state}]{end}{"\n"}{end}' 2>&1 | sed 's/^/       /'
  local p
  for p in $(kc get pods -l "$1" -o jsonpath='{.items[*].metadata.name}' 2>/dev/null); do
    kc get events --field-selector "involvedObject.name=$p" -o custom-columns=AGE:.lastTimestamp,REASON:.reason,MSG:.message --no-headers 2>&1 | tail -n 6 | sed 's/^/       /'
  done
}
# until SECS WHAT CMD...: runs CMD every second until it succeeds; false after SECS.
until_ok() {
  local secs=$1 what=$2 end; shift 2; end=$(( $(date +%s) + secs ))
  while ! "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -ge "$end" ] && { echo "       timed out after ${secs}s waiting for: $what"; return 1; }
    sleep 1
  done
}

step "building the agent and the workload images"
(cd "$REPO_ROOT/node-agent" && nice cargo build -p jvmdiag-agent >"$WORK/build.log" 2>&1) || { bad "agent build" "$(tail -3 "$WORK/build.log")"; finish; }
AGENT="${CARGO_TARGET_DIR:-$REPO_ROOT/node-agent/target}/debug/jvmdiag-agent"
mkdir -p "$WORK/classes" "$WORK/agent-root/etc" "$WORK/agent-root/tmp"
"$JDK17/bin/javac" --release 17 -d "$WORK/classes" "$JVMDIAG_WORKLOADS/sidecar/SafepointBurst.java" "$JVMDIAG_WORKLOADS/ThreadStarters.java" "$JVMDIAG_WORKLOADS/PodParks.java"
IMAGES_NO_IMPORT=1 "$REPO_ROOT/hack/images/build.sh" pause jdk17-base jdk25-base >"$WORK/images.log" 2>&1 || { bad "base images" "$(tail -3 "$WORK/images.log")"; finish; }
for v in 17 25; do
  python3 "$REPO_ROOT/hack/images/build-image.py" --tag "jvmdiag/agent-kube-e2e$v:dev" --base "jvmdiag/jdk$v-base:dev" \
    --out "$WORK/e2e$v.tar" --add "$WORK/classes:/app" \
    --entrypoint '["java", "-XX:+UnlockDiagnosticVMOptions", "-XX:GuaranteedSafepointInterval=0", "-Xmx64m", "-cp", "/app", "SafepointBurst"]' \
    >>"$WORK/images.log" 2>&1 || { bad "workload image $v"; finish; }
done
# The sidecar's image: this tree's agent binary (stripped) and the libraries it links, like
# jvmdiag/agent:dev but from the build just made, so the test runs the code under test.
strip -o "$WORK/jvmdiag-agent" "$AGENT"
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' >"$WORK/agent-root/etc/passwd"
chmod 1777 "$WORK/agent-root/tmp"
libs=(); while read -r l; do libs+=(--add-host "$l"); done < <(ldd "$WORK/jvmdiag-agent" | awk '/=> \// {print $3} /^\t\/[^ ]+ \(0x/ {print $1}' | sort -u)
SIDECAR_IMAGE=jvmdiag/agent-kube-e2e-agent:dev
python3 "$REPO_ROOT/hack/images/build-image.py" --tag "$SIDECAR_IMAGE" --out "$WORK/agent.tar" \
  --add "$WORK/agent-root:/" --add "$WORK/jvmdiag-agent:/usr/local/bin/jvmdiag-agent" "${libs[@]}" \
  --entrypoint '["/usr/local/bin/jvmdiag-agent"]' >>"$WORK/images.log" 2>&1 || { bad "sidecar agent image" "$(tail -3 "$WORK/images.log")"; finish; }

step "cluster with its node (CLUSTER_INDEX=$CLUSTER_INDEX)"
"$REPO_ROOT/hack/cluster/down.sh" --quiet >/dev/null 2>&1
CLUSTER_IMAGES="pause $WORK/e2e17.tar $WORK/e2e25.tar $WORK/agent.tar" "$REPO_ROOT/hack/cluster/up.sh" >"$WORK/up.log" 2>&1 \
  || { bad "cluster up" "$(tail -4 "$WORK/up.log" | tr '\n' ' ')"; finish; }
# shellcheck disable=SC2317 # called by until_ok
node_ready() { [ "$(kc get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]; }
if until_ok 60 "node $NODE_NAME Ready" node_ready; then ok "cluster with node $NODE_NAME up and Ready"
else bad "node Ready" "$(kc get node "$NODE_NAME" -o jsonpath='{.status.conditions}' 2>&1 | tail -c 400)"; finish; fi

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# The starter probe: the agent's own threshold (50/s, its default) for pods without one; a
# window short enough for the test to see the probe detached.
STARTER_THRESHOLD=50 STARTER_WINDOW=15
"$AGENT" --node-name "$NODE_NAME" --kubeconfig "$KUBECONFIG_ADMIN" --listen "127.0.0.1:$PORT" \
  --starter-threshold "$STARTER_THRESHOLD" --starter-window-seconds "$STARTER_WINDOW" --log-format json >"$WORK/agent.log" 2>&1 &
AGENT_PID=$!
# The agent renders /metrics at most once a second: a scrape within a second of the end of the
# last render gets that render's page (src/serve.rs, FRESH). The checks compare a page with what
# happened before its scrape, so each scrape waits until the previous page is stale.
fresh_wait() {
  local last left
  last=$(cat "$WORK/last-scrape" 2>/dev/null) || last=0
  left=$((last + 1100000 - ${EPOCHREALTIME/[.,]/}))
  if [ "$left" -gt 0 ]; then sleep "$((left / 1000000)).$(printf '%06d' $((left % 1000000)))"; fi
}
scraped() { echo "${EPOCHREALTIME/[.,]/}" >"$WORK/last-scrape"; }
scrape() {
  local rc=0
  fresh_wait
  curl -fsS --max-time 10 "http://127.0.0.1:$PORT/metrics" || rc=$?
  scraped
  return "$rc"
}

MARK="e2e-$$"
deploy() {  # name version injected(0/1) [pod securityContext [replicas [container's command lines]]]
  local meta="labels: {app: $1}" sc="${4:-}" replicas="${5:-1}"
  local run="${6:-args: [\"40\", \"5\", \"20\", \"3000\", \"/tmp/burst-$MARK-$1\"]}"
  [ -n "$sc" ] || sc='{}'
  local limits="threadStartRate=${START_RATE[$1]:-}"
  [ "$1" = "$LIMITED" ] && limits="maxThreadNames=3,$limits"
  local collectors=threads,safepoints,vmOperations,compilation
  [ "$1" = podparks ] && collectors+=,parking
  limits=", jvm.diagnostics.dev/limits: \"$limits\""
  [ "$3" = 1 ] && [ "$E2E_OPERATOR" = 0 ] && meta="labels: {app: $1, jvm.diagnostics.dev/inject: res-$1}
      annotations: {jvm.diagnostics.dev/injected: \"h\", jvm.diagnostics.dev/collectors: \"$collectors\", jvm.diagnostics.dev/containers: app$limits}"
  kc apply -f - >/dev/null <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: $1, namespace: default}
spec:
  replicas: $replicas
  selector: {matchLabels: {app: $1}}
  template:
    metadata:
      $meta
    spec:
      nodeName: $NODE_NAME
      terminationGracePeriodSeconds: 2
      securityContext: $sc
      containers:
      - name: app
        image: jvmdiag/agent-kube-e2e$2:dev
        imagePullPolicy: Never
        $run
        resources: {requests: {cpu: 10m, memory: 64Mi}, limits: {memory: 256Mi}}
EOF
}
resource() {  # deployment collection
  local collectors='' alerts=''
  [ "$1" = "$LIMITED" ] && collectors='collectors: {threads: {maxThreadNames: 3}}'
  [ -n "${START_RATE[$1]:-}" ] && alerts="alerts: {threadStartRate: {threshold: ${START_RATE[$1]}}}"
  kc apply -f - >/dev/null <<EOF
apiVersion: jvm.diagnostics.dev/v1alpha1
kind: JvmDiagnostics
metadata: {name: res-$1, namespace: default}
spec:
  targetRef: {kind: Deployment, name: $1}
  collection: $2
  $collectors
  $alerts
  rollout: Automatic
EOF
}
# This one's resource asks for maxThreadNames: 3 (the webhook's jvm.diagnostics.dev/limits):
# its JVM shows at most 3 thread names + other, its starts still counted exactly below.
LIMITED=jdk17b
INJECTED=(jdk17 jdk17b jdk25 jdk25b) SIDECARS=()
declare -A REPLICAS=([jdk17]=3 [jdk17b]=1 [jdk25]=3 [jdk25b]=1 [podparks]=3)
# Each resource's threadStartRate alert threshold (threads/s), which the webhook carries to the
# agent as the threshold of its on-demand starter probe. BELOW's pods storm faster than the
# agent's own threshold but slower than theirs: no probe; the others slower than the agent's but
# faster than theirs: probe attached, so each pod's own threshold is the one that decides.
declare -A START_RATE=([jdk17]=20 [jdk17b]=2000 [jdk25]=25 [jdk25b]=15)
BELOW=jdk17b BELOW_STORM=200 STORM=40
if [ "$E2E_OPERATOR" = 1 ]; then
  step "operator on the host (webhook on loopback, sidecar image $SIDECAR_IMAGE)"
  # The CRD first, until Established: up.sh's `kubectl wait` fails at once when the new
  # CRD has no status yet (seen on a loaded machine).
  # shellcheck disable=SC2317 # called by until_ok
  established() { [ "$(kc get crd jvmdiagnostics.jvm.diagnostics.dev -o jsonpath='{.status.conditions[?(@.type=="Established")].status}')" = True ]; }
  kc apply --server-side -f "$REPO_ROOT/crds/" >/dev/null 2>&1
  until_ok 60 "CRD jvmdiagnostics.jvm.diagnostics.dev Established" established || { bad "CRD established"; finish; }
  operator_up() { KUBECONFIG="$KUBECONFIG_ADMIN" OPERATOR_ARGS="--agent-image $SIDECAR_IMAGE" "$REPO_ROOT/operator/scripts/up.sh" >>"$WORK/operator.log" 2>&1; }
  operator_up || { echo "       operator up failed once, again: $(tail -n 1 "$WORK/operator.log")"; operator_up; } \
    || { bad "operator up" "$(tail -3 "$WORK/operator.log" | tr '\n' ' ')"; finish; }
  ok "operator up (webhook on loopback)"
  SIDECARS=(side17 side25)
fi
for d in "${INJECTED[@]}"; do v=${d#jdk}; deploy "$d" "${v%b}" 1 '' "${REPLICAS[$d]}"; done
deploy plain 17 0
# Culprit stacks per pod: 3 replicas of one image, each parking in the method its own name picks
# (e2e/workloads/PodParks.java; the name from the downward API).
# shellcheck disable=SC2016 # $(POD_NAME): the kubelet expands it
deploy podparks 25 1 '' "${REPLICAS[podparks]}" 'command: [java, -Xmx32m, -cp, /app, PodParks]
        args: ["$(POD_NAME)"]
        env: [{name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]'
# The sidecar reads the app's 0600 hsperfdata: both run as the app's (non-root) user.
for d in "${SIDECARS[@]}"; do deploy "$d" "${d#side}" 1 '{runAsUser: 65534, runAsGroup: 65534}'; done
if [ "$E2E_OPERATOR" = 1 ]; then
  for d in "${INJECTED[@]}" podparks; do resource "$d" NodeAgent; done
  for d in "${SIDECARS[@]}"; do resource "$d" Sidecar; done
fi
# The Deployment's pods (as many as its replicas, none terminating) Ready, stamped by the
# webhook when instrumented (the reconciler labels the template; the rollout's new pods are
# the stamped ones) and their JVMs at IDLE.
# shellcheck disable=SC2317 # called by until_ok
settled() {  # deployment injected(0/1) replicas
  local pods ann p
  pods=$(kc get pods -l "app=$1" -o jsonpath='{range .items[*]}{.metadata.name} {.status.conditions[?(@.type=="Ready")].status} {.metadata.deletionTimestamp}{"\n"}{end}')
  [ "$(grep -c . <<<"$pods")" -eq "$3" ] && [ -z "$(awk '$2 $3 != "True"' <<<"$pods")" ] || return 1
  # shellcheck disable=SC2013 # one pod name per line, no spaces
  for p in $(awk '{print $1}' <<<"$pods"); do
    if [ "$2" = 1 ]; then
      ann=$(kc get pod "$p" -o jsonpath='{.metadata.annotations.jvm\.diagnostics\.dev/injected}')
      [ -n "$ann" ] || return 1
    fi
    kc logs "$p" -c app | grep -q IDLE || return 1
  done
}
step "waiting for the pods (bound to $NODE_NAME, JVMs at IDLE)"
for d in "${INJECTED[@]/%/:1}" podparks:1 plain:0 "${SIDECARS[@]/%/:1}"; do
  n=${REPLICAS[${d%:*}]:-1}
  if until_ok 180 "deployment ${d%:*}: $n Ready pod(s)$([ "${d#*:}" = 1 ] && echo ', stamped by the webhook'), their JVMs printed IDLE" settled "${d%:*}" "${d#*:}" "$n"; then
    ok "${d%:*}: $n pod(s) running$([ "${d#*:}" = 1 ] && echo ', instrumented by the operator')"
  else bad "${d%:*}: pods running" "$(explain "app=${d%:*}")"; fi
done
# podparks: each pod's method is picked by its name, so two replicas may pick the same; such
# pods are deleted until the 3 differ (the ReplicaSet names the replacements anew).
park_of() { python3 -c 'import sys; print("park" + "ABCDEFGH"[sum(map(ord, sys.argv[1])) % 8])' "$1"; }
PARKERS=()
for _ in 1 2 3 4 5 6; do
  mapfile -t PARKERS < <(kc get pods -l app=podparks -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.deletionTimestamp}{"\n"}{end}' | awk 'NF == 1 {print $1}')
  dup=() seen=" "
  for pod in "${PARKERS[@]}"; do m=$(park_of "$pod"); if [[ "$seen" == *" $m "* ]]; then dup+=("$pod"); else seen+="$m "; fi; done
  [ "${#dup[@]}" -eq 0 ] && [ "${#PARKERS[@]}" -eq "${REPLICAS[podparks]}" ] && break
  [ "${#dup[@]}" -gt 0 ] && kc delete pod "${dup[@]}" --wait=false >/dev/null
  until_ok 90 "podparks: ${REPLICAS[podparks]} Ready pods again after deleting ${dup[*]}" settled podparks 1 "${REPLICAS[podparks]}"
  PARKERS=()
done
step "checking the node agent's series"

# Counters of the pod's JVM, read twice around a scrape until they stand still:
# stable POD URL OUTFILE -> jcmd output in $WORK/jcmd, scrape in OUTFILE.
# jcmd runs with JAVA_TOOL_OPTIONS unset: with the webhook's -Xlog:safepoint flag, a tool JVM
# started in the pod would rotate the app's safepoint log at its start-up (see README.md).
jcmd_counters() { kc exec "$1" -c app -- sh -c 'unset JAVA_TOOL_OPTIONS; exec jcmd 1 PerfCounter.print' 2>/dev/null; }
stable() {
  local a b i
  for i in 1 2 3 4 5; do
    a=$(jcmd_counters "$1")
    fresh_wait
    curl -fsS --max-time 10 "$2" >"$3" 2>/dev/null
    scraped
    b=$(jcmd_counters "$1")
    [ -n "$a" ] && [ "$(grep -E '^(sun.rt.safepoints|sun.rt.safepointTime|java.threads.started)=' <<<"$a")" = "$(grep -E '^(sun.rt.safepoints|sun.rt.safepointTime|java.threads.started)=' <<<"$b")" ] && { echo "$a" >"$WORK/jcmd"; return 0; }
    sleep 1
  done
  return 1
}
counter() { sed -n "s/^$1=//p" "$WORK/jcmd"; }
# sum METRIC SELECTOR FILE: the sum of the values of METRIC's series whose labels contain SELECTOR
msum() { grep -F "$2" "$3" | grep -F -- "${4:-}" | awk -v m="$1" '$1 ~ "^"m"[{]" {s+=$NF} END{printf "%.9g\n", s+0}'; }

# The instrumented pods, their series' labels, their Deployment, and what each does in the window below.
declare -A SEL DEP WANT_T WANT_G
PODS=() i=0
for d in "${INJECTED[@]}"; do
  for pod in $(kc get pods -l "app=$d" -o jsonpath='{.items[*].metadata.name}'); do
    PODS+=("$pod"); DEP[$pod]=$d; SEL[$pod]="namespace=\"default\",pod=\"$pod\",container=\"app\",jvm=\"SafepointBurst\",jvmdiagnostics=\"res-$d\""
    WANT_T[$pod]=$((100 + 37 * i)); WANT_G[$pod]=$((3 + i % 4)); i=$((i + 1))
  done
done
[ "${#PODS[@]}" -eq 8 ] || bad "8 instrumented pods (3 + 1 per JDK)" "found ${#PODS[@]}: ${PODS[*]}"

# The on-demand starter probe, per pod. Each pod's JVM runs ThreadStarters (SafepointBurst's
# request file starts it on a thread of its own, named ThreadStarters): `trigger` starts threads
# at a fixed pace until the pod's go; then `starter-A` and `starter-B` start the pod's own
# numbers of threads, all replicas differing. The threshold of each pod is its resource's
# threadStartRate (START_RATE). Once the agent reports the probe attached to a pod, the test
# gives that pod its go; the pod's jvmdiag_thread_starts_by_starter_total, read while the probe
# is still attached, must equal what the workload says its starters started. After the window
# the probe is detached (gauge 0, its links gone from the agent's descriptors) and the threads
# starter-A starts then are not counted. BELOW's pod storms faster than the agent's own
# threshold and slower than its own: no probe, no series. Across the whole part, jcmd's
# java.threads.started and the agent's thread starts grow by the workload's own total.
# The handshake files are in the container's /tmp, written and read from the host through
# /proc/<pid>/root (root, as the agent is): a kubectl exec per step would spend seconds of the
# probe's window on a loaded machine.
step "the on-demand starter probe in every instrumented pod, each with its own threshold"
host_pid() {  # POD -> host pid of its app container's JVM (the container ID in its cgroup)
  local cid p
  cid=$(kc get pod "$1" -o jsonpath='{.status.containerStatuses[?(@.name=="app")].containerID}'); cid=${cid#*://}
  [ -n "$cid" ] || return 1
  for p in $(pgrep -f "SafepointBurst 40 5 20 3000 /tmp/burst-$MARK-"); do
    grep -q "$cid" "/proc/$p/cgroup" 2>/dev/null && { echo "$p"; return 0; }
  done
  return 1
}
# value METRIC SELECTOR FILE: the value of the JVM's one series of METRIC as a number ("1.0" is
# 1; empty when absent)
value() { grep -F "$2" "$3" | awk -v m="$1" '$1 ~ "^"m"[{]" {print $NF + 0; exit}'; }
# starter_pairs SELECTOR FILE: "thread_name/starter=count" per series of the JVM, sorted
starter_pairs() {
  grep -F "$1" "$2" | sed -n 's/^jvmdiag_thread_starts_by_starter_total{.*,thread_name="\([^"]*\)",starter="\([^"]*\)"} \([0-9]*\)$/\1\/\2=\3/p' | sort
}
pair() { sed -n "s|^$1=||p" <<<"$2"; }
# The BPF links the agent holds, as the kernel lists its descriptors.
agent_links() { grep -h '^link_id:' /proc/"$AGENT_PID"/fdinfo/* 2>/dev/null | awk '{print $2}' | sort -un; }
# The agent's links of the starter probe's programs (starter_*), by the kernel's view: the other
# links come and go with the JVMs of the pods (each traced JVM has its own, jcmd's too).
starter_links() {
  bpftool -j link show | python3 -c '
import json, subprocess, sys
held = set(map(int, sys.argv[1].split()))
out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True, check=True).stdout
names = {p["id"]: p.get("name", "") for p in json.loads(out)}
print("\n".join(str(l["id"]) for l in json.load(sys.stdin) if l["id"] in held and names.get(l.get("prog_id"), "").startswith("starter_")))' "$(agent_links | tr '\n' ' ')"
}
jcmd_parallel() {  # TAG POD...: jcmd PerfCounter.print of each pod at once, into $WORK/TAG-POD
  local tag=$1 pids=() p; shift
  for p in "$@"; do jcmd_counters "$p" >"$WORK/$tag-$p" & pids+=($!); done
  [ ${#pids[@]} -eq 0 ] || wait "${pids[@]}"
}
started() { sed -n 's/^java.threads.started=//p' "$WORK/$1-$2"; }

declare -A HPID ROOT_DIR WANT_A WANT_B WANT_M PHASE ATT_AT
SDIR="/tmp/starters-$MARK"
STARTERS=() i=0
for pod in "${PODS[@]}"; do
  d=${DEP[$pod]} sel=${SEL[$pod]}
  WANT_A[$pod]=$((150 + 41 * i)); WANT_B[$pod]=$((60 + 13 * i)); WANT_M[$pod]=0; i=$((i + 1))
  [ "$d" = "$BELOW" ] || WANT_M[$pod]=$((30 + 7 * i))
  # jvm_info appears once every probe is attached and the pid is in traced_pids.
  # shellcheck disable=SC2317 # called by until_ok
  traced() { scrape | grep -F "$sel" | grep -q '^jvmdiag_jvm_info{'; }
  if ! until_ok 60 "the agent to trace $pod (jvmdiag_jvm_info with its labels)" traced; then
    bad "$pod: series labelled {$sel}" "$(grep -c "pod=\"$pod\"" <(scrape)) series of the pod; agent log: $(tail -n 3 "$WORK/agent.log" | tr '\n' ' ')"; continue
  fi
  ann=$(kc get pod "$pod" -o jsonpath='{.metadata.annotations.jvm\.diagnostics\.dev/limits}')
  if [[ ",$ann," != *",threadStartRate=${START_RATE[$d]},"* ]]; then
    bad "$pod: its resource's threadStartRate in its limits annotation" "annotation \"$ann\", want threadStartRate=${START_RATE[$d]}"; continue
  fi
  hpid=$(host_pid "$pod") || { bad "$pod: its JVM found on the host by its container ID"; continue; }
  rate=$STORM; [ "$d" = "$BELOW" ] && rate=$BELOW_STORM
  HPID[$pod]=$hpid ROOT_DIR[$pod]=/proc/$hpid/root$SDIR
  if ! mkdir -p "${ROOT_DIR[$pod]}" || ! echo "main ThreadStarters $SDIR ${WANT_A[$pod]} ${WANT_B[$pod]} ${WANT_M[$pod]} $rate" >"/proc/$hpid/root/tmp/burst-$MARK-$d"; then
    bad "$pod: ThreadStarters requested through /proc/$hpid/root"; continue
  fi
  STARTERS+=("$pod")
done
for pod in "${STARTERS[@]}"; do
  # shellcheck disable=SC2317 # called by until_ok
  ready() { [ -f "${ROOT_DIR[$pod]}/ready" ]; }
  until_ok 30 "$pod: ThreadStarters to start in its JVM (${ROOT_DIR[$pod]}/ready)" ready || { bad "$pod: ThreadStarters started" "$(kc logs "$pod" -c app | tail -n 3 | tr '\n' ' ')"; unset "ROOT_DIR[$pod]"; }
done
ST=() ATT=()
for pod in "${STARTERS[@]}"; do
  [ -n "${ROOT_DIR[$pod]:-}" ] || continue
  ST+=("$pod"); [ "${DEP[$pod]}" = "$BELOW" ] || ATT+=("$pod")
done
jcmd_parallel st0 "${ST[@]}"
scrape >"$WORK/st0.prom"
for pod in "${ST[@]}"; do
  if [ -n "$(value jvmdiag_agent_starter_probe_windows_total "${SEL[$pod]}" "$WORK/st0.prom")" ]; then
    bad "$pod: no starter probe before its storm" "$(grep -F "${SEL[$pod]}" "$WORK/st0.prom" | grep starter | head -n 3 | tr '\n' ' ')"
  fi
done
LINKS0=$(starter_links)
T_TRIG=$SECONDS
for pod in "${ST[@]}"; do PHASE[$pod]=storm; : >"${ROOT_DIR[$pod]}/trigger"; done
# Each pod over its threshold gets its go as soon as the agent reports its probe attached (the
# window runs from then); BELOW's pod once the others are done and it has stormed 8 s at least.
LINKS1=""
while [ $((SECONDS - T_TRIG)) -lt 90 ]; do
  scrape >"$WORK/poll.prom" 2>/dev/null || { sleep 0.2; continue; }
  open=0 left=0
  for pod in "${ATT[@]}"; do
    case ${PHASE[$pod]} in
      storm) if [ "$(value jvmdiag_agent_starter_probe_attached "${SEL[$pod]}" "$WORK/poll.prom")" = 1 ]; then
               : >"${ROOT_DIR[$pod]}/go"; PHASE[$pod]=go; ATT_AT[$pod]=$((SECONDS - T_TRIG))
             fi ;;
      go) if [ -f "${ROOT_DIR[$pod]}/done" ]; then scrape >"$WORK/done-$pod.prom"; PHASE[$pod]="done"; fi ;;
    esac
    [ "$(value jvmdiag_agent_starter_probe_attached "${SEL[$pod]}" "$WORK/poll.prom")" = 1 ] && open=$((open + 1))
    [ "${PHASE[$pod]}" = "done" ] || left=$((left + 1))
  done
  [ -z "$LINKS1" ] && [ "$open" -eq "${#ATT[@]}" ] && LINKS1=$(starter_links)
  for pod in "${ST[@]}"; do
    [ "${DEP[$pod]}" = "$BELOW" ] || continue
    case ${PHASE[$pod]} in
      storm) [ "$left" -eq 0 ] && [ $((SECONDS - T_TRIG)) -ge 8 ] && { : >"${ROOT_DIR[$pod]}/go"; PHASE[$pod]=go; } ;;
      go) [ -f "${ROOT_DIR[$pod]}/done" ] && PHASE[$pod]="done" ;;
    esac
    [ "${PHASE[$pod]}" = "done" ] || left=$((left + 1))
  done
  [ "$left" -eq 0 ] && break
  sleep 0.2
done
for pod in "${ATT[@]}"; do
  d=${DEP[$pod]} sel=${SEL[$pod]}
  if [ "${PHASE[$pod]}" != "done" ]; then
    bad "$pod: starter probe attached by its storm (${STORM}/s, threshold ${START_RATE[$d]}/s), its starters done" "phase ${PHASE[$pod]} after $((SECONDS - T_TRIG))s; $(grep -F "$sel" "$WORK/poll.prom" | grep starter_probe | tr '\n' ' ')"
    continue
  fi
  read -r da db dw dms <"${ROOT_DIR[$pod]}/done"
  r=$((dw * 1000 / (dms > 0 ? dms : 1)))
  pairs=$(starter_pairs "$sel" "$WORK/done-$pod.prom")
  att=$(value jvmdiag_agent_starter_probe_attached "$sel" "$WORK/done-$pod.prom")
  win=$(value jvmdiag_agent_starter_probe_windows_total "$sel" "$WORK/done-$pod.prom")
  wa=$(pair worker-a-N/starter-A "$pairs") wb=$(pair worker-b-N/starter-B "$pairs") ww=$(pair warmup-N/trigger "$pairs")
  sa=$(pair starter-A/ThreadStarters "$pairs") sb=$(pair starter-B/ThreadStarters "$pairs")
  strays=$(grep -vE '^(worker-a-N/starter-A|worker-b-N/starter-B|warmup-N/trigger|starter-[AB]/ThreadStarters)=' <<<"$pairs" | tr '\n' ' ')
  if [ "$att" = 1 ] && [ "$win" = 1 ] && [ "${wa:-0}" -eq "$da" ] && [ "$da" -eq "${WANT_A[$pod]}" ] && [ "${wb:-0}" -eq "$db" ] && [ "$db" -eq "${WANT_B[$pod]}" ] \
    && [ "$sa" = 1 ] && [ "$sb" = 1 ] && [ "${ww:-0}" -gt 0 ] && [ "$ww" -le "$dw" ] && [ -z "${strays// /}" ] && [ "$r" -lt "$STARTER_THRESHOLD" ]; then
    ok "$pod (threadStartRate ${START_RATE[$d]}): probe attached ${ATT_AT[$pod]}s into its $r/s storm (below the agent's own $STARTER_THRESHOLD/s); while attached: worker-a-N by starter-A $wa, worker-b-N by starter-B $wb = what its starters started ($da, $db); warmup-N by trigger $ww of $dw"
  else
    bad "$pod: its starters' threads counted by (thread_name, starter) while attached" "attached=$att windows=$win; agent: $(tr '\n' ' ' <<<"$pairs"); workload: starter-A $da, starter-B $db (want ${WANT_A[$pod]}, ${WANT_B[$pod]}), $dw warmups in ${dms}ms ($r/s; want below $STARTER_THRESHOLD)"
  fi
done
if [ "${#ATT[@]}" -gt 0 ]; then
  if [ -z "$LINKS1" ]; then bad "agent: the starter probes of ${#ATT[@]} pods attached at once" "never seen all attached in one scrape"
  else
    new=$(comm -13 <(echo "$LINKS0") <(echo "$LINKS1") | grep -c .)
    if [ "$new" -eq $((2 * ${#ATT[@]} + 1)) ]; then ok "agent: +$new starter probe links while ${#ATT[@]} windows were open (JVM_StartThread and thread__start per pod's pid, one sched_process_fork)"
    else bad "agent: 2 links per attached pod and one sched_process_fork" "$new new starter probe links with ${#ATT[@]} windows open (before: $(grep -c . <<<"$LINKS0"), during: $(grep -c . <<<"$LINKS1"))"; fi
  fi
fi
# After the window: detached, and starter-A's late-N threads are not counted (the same pod gets
# the probe again one window later at the earliest).
# shellcheck disable=SC2317 # called by until_ok
detached() {
  scrape >"$WORK/poll.prom" || return 1
  local pod; for pod in "${ATT[@]}"; do [ "$(value jvmdiag_agent_starter_probe_attached "${SEL[$pod]}" "$WORK/poll.prom")" = 0 ] || return 1; done
}
if [ "${#ATT[@]}" -gt 0 ]; then
  until_ok $((STARTER_WINDOW + 30)) "the probe detached from ${#ATT[@]} pods after its ${STARTER_WINDOW}s window" detached
  LINKS2=$(starter_links)
  for pod in "${ATT[@]}"; do [ "${PHASE[$pod]}" = "done" ] && : >"${ROOT_DIR[$pod]}/more"; done
  for pod in "${ATT[@]}"; do
    [ "${PHASE[$pod]}" = "done" ] || continue
    # shellcheck disable=SC2317 # called by until_ok
    more_done() { [ -f "${ROOT_DIR[$pod]}/more-done" ]; }
    until_ok 30 "$pod: starter-A to start its late threads" more_done || bad "$pod: late threads started"
  done
  scrape >"$WORK/late.prom"
  for pod in "${ATT[@]}"; do
    [ "${PHASE[$pod]}" = "done" ] || continue
    sel=${SEL[$pod]} late=$(cat "${ROOT_DIR[$pod]}/more-done" 2>/dev/null)
    att=$(value jvmdiag_agent_starter_probe_attached "$sel" "$WORK/late.prom"); win=$(value jvmdiag_agent_starter_probe_windows_total "$sel" "$WORK/late.prom")
    if [ "$att" = 0 ] && [ "$win" = 1 ] && [ "$late" = "${WANT_M[$pod]}" ] && [ "$(starter_pairs "$sel" "$WORK/late.prom")" = "$(starter_pairs "$sel" "$WORK/done-$pod.prom")" ]; then
      ok "$pod: probe detached after the window (attached 0, 1 window), the $late late-N threads starter-A started then not counted"
    else bad "$pod: detached after the window, series unchanged" "attached=$att windows=$win late=$late; now: $(starter_pairs "$sel" "$WORK/late.prom" | tr '\n' ' ')"; fi
  done
  if [ "$LINKS2" = "$LINKS0" ]; then ok "agent: every starter probe link gone after the windows ($(grep -c . <<<"$LINKS0") of them, as before the storms)"
  else bad "agent: starter probe links gone after the windows" "left: $(comm -13 <(echo "$LINKS0") <(echo "$LINKS2") | tr '\n' ' ') gone: $(comm -23 <(echo "$LINKS0") <(echo "$LINKS2") | tr '\n' ' ')"; fi
fi
scrape >"$WORK/late.prom"
for pod in "${ST[@]}"; do
  [ "${DEP[$pod]}" = "$BELOW" ] || continue
  sel=${SEL[$pod]} t=${START_RATE[$BELOW]}
  if [ "${PHASE[$pod]}" != "done" ]; then bad "$pod: its storm below its threshold ran" "phase ${PHASE[$pod]}"; continue; fi
  read -r da db dw dms <"${ROOT_DIR[$pod]}/done"
  r=$((dw * 1000 / (dms > 0 ? dms : 1)))
  series=$(grep -F "$sel" "$WORK/late.prom" | grep -E '^jvmdiag_(thread_starts_by_starter_total|agent_starter_probe_(attached|windows_total))\{' | head -n 3)
  if [ -z "$series" ] && [ "$r" -gt "$STARTER_THRESHOLD" ] && [ "$r" -lt "$t" ]; then
    ok "$pod (threadStartRate $t): no starter probe, no series for its ${dms}ms storm at $r/s (above the agent's own $STARTER_THRESHOLD/s) and its starters' $((da + db)) threads"
  else bad "$pod: no starter probe below its own threshold" "storm $dw threads in ${dms}ms = $r/s (want above $STARTER_THRESHOLD, below $t); series: $(tr '\n' ' ' <<<"$series")"; fi
done
# Stopped; then one System.gc() each (SafepointBurst's request "0 1", before the window below
# opens): the storms' garbage would otherwise make the window's burst start an allocation GC,
# one more VM operation requested by the main thread than its System.gc() calls.
for pod in "${ST[@]}"; do : >"${ROOT_DIR[$pod]}/stop"; done
sleep 0.5
for pod in "${ST[@]}"; do echo "0 1" >"/proc/${HPID[$pod]}/root/tmp/burst-$MARK-${DEP[$pod]}"; done
jcmd_parallel st1 "${ST[@]}"
scrape >"$WORK/st1.prom"
for pod in "${ST[@]}"; do
  [ "${PHASE[$pod]}" = "done" ] || continue
  read -r da db dw dms <"${ROOT_DIR[$pod]}/done"
  # trigger, starter-A, starter-B and their threads; then starter-A again and its late ones
  want=$((dw + da + db + 3)); late=$(cat "${ROOT_DIR[$pod]}/more-done" 2>/dev/null); [ -n "$late" ] && want=$((want + 1 + late))
  j0=$(started st0 "$pod") j1=$(started st1 "$pod")
  # shellcheck disable=SC2015 # C when either test fails
  [ -n "$j0" ] && [ -n "$j1" ] || { bad "$pod: jcmd PerfCounter.print before and after the starter part" "before: ${j0:-none}, after: ${j1:-none}"; continue; }
  dj=$((j1 - j0))
  dag=$(( $(msum jvmdiag_thread_starts_total "${SEL[$pod]}" "$WORK/st1.prom") - $(msum jvmdiag_thread_starts_total "${SEL[$pod]}" "$WORK/st0.prom") ))
  if [ "$dj" -eq "$want" ] && [ "$dag" -eq "$want" ]; then ok "$pod: jcmd java.threads.started +$dj = agent's thread starts +$dag = the $want its workload started"
  else bad "$pod: thread starts across the starter part" "jcmd +$dj, agent +$dag, workload $want"; fi
done
for pod in "${ST[@]}"; do
  # shellcheck disable=SC2317 # called by until_ok
  collected() { kc logs "$pod" -c app | grep -q '^BURST 0 1$'; }
  until_ok 30 "$pod: its JVM to print BURST 0 1" collected || bad "$pod: the storms' garbage collected before the window"
done


# eBPF sees only what happens after the attach, which on a loaded machine may come after
# the workload's start-up: the exact comparison is over a window that opens once the agent
# traces the pod and both counters stand still. In the window every pod's JVM starts its own
# number of threads and runs its own number of System.gc() safepoints (SafepointBurst's
# request file), all pods at once; the window closes when each has printed BURST and both
# counters stand still again. A pod counted once per container of its image would show a
# multiple of its number.
declare -A BEFORE_S BEFORE_P BEFORE_R C0_S C0_P
# The window's threads take BURST_NAMES names (more-a-N ... more-f-N): more than the limited
# pod's 3, so its bound is what keeps them out, as the other pods showing all of them prove.
BURST_NAMES=6
WINDOW=()
for pod in "${PODS[@]}"; do
  sel=${SEL[$pod]}
  # jvm_info appears once every probe is attached and the pid is in traced_pids. Not the
  # safepoint series: when the attach comes after the workload's bursts (a loaded machine),
  # an idle JVM has none until the window's first GC.
  # shellcheck disable=SC2317 # called by until_ok
  traced() { scrape | grep -F "$sel" | grep -q '^jvmdiag_jvm_info{'; }
  if ! until_ok 60 "the agent to trace $pod (jvmdiag_jvm_info with its labels)" traced; then
    bad "$pod: series labelled {$sel}" "$(grep -c "pod=\"$pod\"" <(scrape)) series of the pod; agent log: $(tail -n 3 "$WORK/agent.log" | tr '\n' ' ')"; continue
  fi
  if ! stable "$pod" "http://127.0.0.1:$PORT/metrics" "$WORK/before-$pod"; then bad "$pod: JVM counters stand still for a comparison"; continue; fi
  BEFORE_S[$pod]=$(msum jvmdiag_thread_starts_total "$sel" "$WORK/before-$pod")
  BEFORE_P[$pod]=$(msum jvmdiag_safepoint_pause_seconds_count "$sel" "$WORK/before-$pod")
  BEFORE_R[$pod]=$(msum jvmdiag_vm_operation_requests_total "$sel" "$WORK/before-$pod" 'requester="java"')
  C0_S[$pod]=$(counter java.threads.started); C0_P[$pod]=$(counter sun.rt.safepoints)
  WINDOW+=("$pod")
done
step "window open in ${#WINDOW[@]} pods: thread starts and safepoints of their own number in each"
for pod in "${WINDOW[@]}"; do
  d=$(kc get pod "$pod" -o jsonpath='{.metadata.labels.app}')
  kc exec "$pod" -c app -- sh -c "echo '${WANT_T[$pod]} ${WANT_G[$pod]} $BURST_NAMES' > /tmp/burst-$MARK-$d" || bad "$pod: burst requested"
done
for pod in "${WINDOW[@]}"; do
  sel=${SEL[$pod]}
  # shellcheck disable=SC2317 # called by until_ok
  burst_done() { kc logs "$pod" -c app | grep -q "^BURST ${WANT_T[$pod]} ${WANT_G[$pod]}\$"; }
  if ! until_ok 60 "$pod: its JVM to print BURST ${WANT_T[$pod]} ${WANT_G[$pod]}" burst_done; then bad "$pod: burst ran"; continue; fi
  if ! stable "$pod" "http://127.0.0.1:$PORT/metrics" "$WORK/after-$pod"; then bad "$pod: JVM counters stand still after the burst"; continue; fi
  ds=$(( $(msum jvmdiag_thread_starts_total "$sel" "$WORK/after-$pod") - BEFORE_S[$pod] )); dcs=$(( $(counter java.threads.started) - C0_S[$pod] ))
  dp=$(( $(msum jvmdiag_safepoint_pause_seconds_count "$sel" "$WORK/after-$pod") - BEFORE_P[$pod] )); dcp=$(( $(counter sun.rt.safepoints) - C0_P[$pod] ))
  if [ "$ds" -eq "$dcs" ] && [ "$dcs" -eq "${WANT_T[$pod]}" ] && [ "$dp" -eq "$dcp" ] && [ "$dcp" -ge "${WANT_G[$pod]}" ]; then
    ok "$pod: thread starts +$ds = jcmd java.threads.started +$dcs = the ${WANT_T[$pod]} it started; safepoints +$dp = jcmd sun.rt.safepoints +$dcp"
  else bad "$pod: counts by pod labels equal the JVM's own" "thread starts: agent +$ds, jcmd +$dcs, started ${WANT_T[$pod]}; safepoints: agent +$dp, jcmd +$dcp (>= ${WANT_G[$pod]} GCs)"; fi
  # Who asked: the burst's System.gc() calls run on the main thread (native name "java"),
  # one VM operation request each, whatever collector the container's JVM chose.
  dr=$(( $(msum jvmdiag_vm_operation_requests_total "$sel" "$WORK/after-$pod" 'requester="java"') - BEFORE_R[$pod] ))
  if [ "$dr" -eq "${WANT_G[$pod]}" ]; then
    ok "$pod: VM operations requested by its main thread +$dr = the ${WANT_G[$pod]} System.gc() calls of its burst"
  else bad "$pod: requester of its VM operations by pod labels" "requested by \"java\": +$dr, System.gc() calls: ${WANT_G[$pod]}; $(grep -F "$sel" "$WORK/after-$pod" | grep -F jvmdiag_vm_operation_requests_total | head -n 3 | tr '\n' ' ')"; fi
done
# maxThreadNames: 3 on jdk17b's resource: its JVM shows at most 3 thread names plus other, and
# other holds the rest (the sum over names equals the JVM's own count, checked above). The
# other pods' JVMs ran the same burst without the bound: all its names show there.
burst_names() { grep -F "${SEL[$1]}" "$WORK/after-$1" | sed -n 's/^jvmdiag_thread_starts_total{.*thread_name="\(more-[a-z]-N\)".*/\1/p' | sort -u | grep -c .; }
other_starts() { grep -F "${SEL[$1]}" "$WORK/$2-$1" | grep -F 'thread_name="other"' | awk '$1 ~ /^jvmdiag_thread_starts_total[{]/ {s+=$NF} END{printf "%d\n", s+0}'; }
control="" control_names=0
for pod in "${WINDOW[@]}"; do
  [ "$(kc get pod "$pod" -o jsonpath='{.metadata.labels.app}')" = "$LIMITED" ] && continue
  [ -f "$WORK/after-$pod" ] && control=$pod control_names=$(burst_names "$pod") && break
done
for pod in "${WINDOW[@]}"; do
  [ "$(kc get pod "$pod" -o jsonpath='{.metadata.labels.app}')" = "$LIMITED" ] || continue
  names=$(grep -F "${SEL[$pod]}" "$WORK/after-$pod" | sed -n 's/^jvmdiag_thread_starts_total{.*thread_name="\([^"]*\)".*/\1/p' | sort -u)
  named=$(grep -cvx other <<<"$names")
  other_d=$(( $(other_starts "$pod" after) - $(other_starts "$pod" before) ))
  ann=$(kc get pod "$pod" -o jsonpath='{.metadata.annotations.jvm\.diagnostics\.dev/limits}')
  if [ "$named" -le 3 ] && [ "$named" -gt 0 ] && [ "$other_d" -gt 0 ] && [[ "$ann" == *maxThreadNames=3* ]] && [ "$control_names" -eq "$BURST_NAMES" ]; then
    ok "$pod (maxThreadNames: 3, annotation \"$ann\"): $named thread name(s) + other (+$other_d in the window of $BURST_NAMES names), counted exactly above; unbounded $control shows all $control_names"
  else bad "$pod: maxThreadNames: 3 bounds its thread names, the rest in other" "annotation \"$ann\", names: $(tr '\n' ' ' <<<"$names"), other +$other_d in the window; unbounded ${control:-none} shows $control_names of the $BURST_NAMES burst names"; fi
done
files=$(scrape | awk '$1 == "jvmdiag_agent_libjvm_files" {print $2 + 0}')
if [ "$files" = 2 ]; then ok "agent: its traced JVMs run 2 libjvm.so files (one per JDK image): ${#PODS[@]} instrumented pods"
else bad "agent: one libjvm.so file per JDK image" "jvmdiag_agent_libjvm_files=$files"; fi
plain=$(kc get pods -l app=plain -o jsonpath='{.items[0].metadata.name}')
if [ -z "$plain" ]; then bad "pod without the annotation exists"
elif scrape | grep -q "pod=\"$plain\""; then bad "pod without the annotation ($plain) not traced"
else ok "pod without the annotation ($plain) not traced"; fi
# Culprit stacks per pod: each podparks replica parks in its own method (its name picks it). The
# agent's /stacks for the pod and kind park names that method and no other replica's, every line
# is the pod's, and jvmdiag_culprit_stack_samples_total{kind="park"} of the pod names the same
# first application frame.
step "culprit stacks per pod: ${#PARKERS[@]} podparks replicas, each parking in its own method"
declare -A PARK_OF
for pod in "${PARKERS[@]}"; do PARK_OF[$pod]=$(park_of "$pod"); done
if [ "${#PARKERS[@]}" -ne "${REPLICAS[podparks]}" ] || [ "$(printf '%s\n' "${PARK_OF[@]}" | sort -u | grep -c .)" -ne "${REPLICAS[podparks]}" ]; then
  bad "podparks: ${REPLICAS[podparks]} pods whose names pick different methods" "pods: ${PARKERS[*]}; methods: ${PARK_OF[*]}"
fi
# bare: a frame as class.method (the agent may add :line and _[i] for an inlined frame)
bare_frames() { sed -E 's/(:[0-9]+)?(_\[i\])?$//'; }
for pod in "${PARKERS[@]}"; do
  want=${PARK_OF[$pod]} f="$WORK/stacks-$pod"
  sel="namespace=\"default\",pod=\"$pod\",container=\"app\",jvm=\"PodParks\",jvmdiagnostics=\"res-podparks\""
  if ! kc logs "$pod" -c app | grep -qx "IDLE $want"; then
    bad "$pod: its JVM parks in $want (picked by its name)" "log: $(kc logs "$pod" -c app 2>&1 | tail -n 2 | tr '\n' ' ')"; continue
  fi
  # shellcheck disable=SC2317 # called by until_ok
  parked() {
    curl -fsS --max-time 10 "http://127.0.0.1:$PORT/stacks?namespace=default&pod=$pod&kind=park" >"$f" || return 1
    tr ';' '\n' <"$f" | sed 's/ [0-9]*$//' | bare_frames | grep -qx "PodParks.$want"
  }
  if ! until_ok 60 "$pod: /stacks?pod=$pod&kind=park to show PodParks.$want" parked; then
    bad "$pod: /stacks names its park method PodParks.$want" "$(head -c 600 "$f" 2>/dev/null | tr '\n' ' ')"; continue
  fi
  methods=$(tr ';' '\n' <"$f" | sed 's/ [0-9]*$//' | bare_frames | grep -E '^PodParks\.park[A-H]$' | sort -u | tr '\n' ' ')
  whos=$(awk -F';' '{print $1 ";" $2}' "$f" | sort -u | tr '\n' ' ')
  malformed=$(grep -cvE '^park;default/[^;]+(;[^;]+)* [0-9]+$' "$f")
  if [ "$methods" = "PodParks.$want " ] && [ "$whos" = "park;default/$pod " ] && [ "$malformed" = 0 ]; then
    ok "$pod: /stacks?pod=…&kind=park: $(grep -c . "$f") stack(s), all park;default/$pod, naming PodParks.$want and no other replica's method; its top stack: $(grep -F "PodParks.$want" "$f" | sort -t' ' -k2 -rn | head -n1 | awk '{print $NF " samples, " substr($1, 1, 200)}')"
  else bad "$pod: /stacks of the pod names only its own method PodParks.$want" "methods: $methods; kinds and pods: $whos; $malformed malformed; $(head -c 400 "$f" | tr '\n' ' ')"; fi
  frames=$(scrape | grep -F "$sel" | grep '^jvmdiag_culprit_stack_samples_total{' | grep -F 'kind="park"' \
    | awk '$NF + 0 > 0' | sed -n 's/.*frame="\([^"]*\)".*/\1/p' | bare_frames | grep -E '^PodParks\.' | sort -u | tr '\n' ' ')
  if [ "$frames" = "PodParks.$want " ]; then ok "$pod: jvmdiag_culprit_stack_samples_total{kind=\"park\"} names the same first application frame PodParks.$want"
  else bad "$pod: jvmdiag_culprit_stack_samples_total{kind=\"park\"} names PodParks.$want alone" "application frames: ${frames:-none}"; fi
done
# Taken at every park (10 a second, under the agent's 20 per JVM and kind): each pod's samples
# of its method grow by at least 10 in the 3 s after its read above.
park_samples() { grep -E "[;]PodParks\.$2(:[0-9]+)?(_\[i\])?[; ]" "$1" | awk '{s += $NF} END {print s + 0}'; }
sleep 3
for pod in "${PARKERS[@]}"; do
  want=${PARK_OF[$pod]} f="$WORK/stacks-$pod"
  [ -s "$f" ] || continue
  curl -fsS --max-time 10 "http://127.0.0.1:$PORT/stacks?namespace=default&pod=$pod&kind=park" >"$f.later"
  n1=$(park_samples "$f" "$want") n2=$(park_samples "$f.later" "$want")
  if [ $((n2 - n1)) -ge 10 ]; then ok "$pod: samples of PodParks.$want grew $n1 -> $n2 in 3 s and more"
  else bad "$pod: samples of PodParks.$want grow with its parks (10/s)" "$n1 -> $n2; walks: $(scrape | grep '^jvmdiag_agent_stack_walks_total{kind="park"' | tr '\n' ' ')"; fi
done
code=$(curl -sS -o "$WORK/stacks-400" -w '%{http_code}' --max-time 10 "http://127.0.0.1:$PORT/stacks?namespace=default&kind=parked")
if [ "$code" = 400 ] && grep -q 'kind=parked' "$WORK/stacks-400"; then ok "/stacks?kind=parked: 400 naming it ($(head -n1 "$WORK/stacks-400"))"
else bad "/stacks refuses an unknown kind with a 400 naming it" "HTTP $code: $(head -c 200 "$WORK/stacks-400")"; fi
# Gone before the next check counts the agent's program runs: their parks would run its probes.
kc delete deployment podparks --wait=false >/dev/null
# shellcheck disable=SC2317 # called by until_ok
parkers_gone() { [ -z "$(kc get pods -l app=podparks -o name)" ]; }
until_ok 60 "podparks' pods gone" parkers_gone || bad "podparks' pods gone"

# ...and pays nothing: its JVM maps the same libjvm.so file as the traced pods of its image, but
# the agent's probes sit in the traced processes alone. It starts 2,000 threads (a burst, through
# its request file) while the traced pods idle: the agent's probe programs run not for it (the
# kernel's run counts, kernel.bpf_stats_enabled for the burst only; at most 200 runs, the idle
# pods' own compilations and GCs); probes on the file for every process would run at least once
# per thread start.
# The starter probe's sched_process_fork (global while a window is open: every fork on the host
# runs it) and the file identity iterator (run at discovery) are left out: they are not probes.
prog_runs() {  # the summed run counts of the agent's probe programs (fdinfo of its program fds)
  local f id n
  for f in /proc/"$AGENT_PID"/fdinfo/*; do awk '/^prog_id:/ {id = $2} /^run_cnt:/ {n = $2} END {if (id != "" && n != "") print id, n}' "$f" 2>/dev/null; done \
    | sort -u -k1,1 | while read -r id n; do
        case "$(bpftool prog show id "$id" 2>/dev/null | sed -n 's/.* name \([^ ]*\) .*/\1/p' | head -n1)" in
          starter_fork|mapped_file_identity) ;;
          *) echo "$n" ;;
        esac
      done | awk '{s += $1} END {print s + 0}'
}
ppid=$(pgrep -f "SafepointBurst 40 5 20 3000 /tmp/burst-$MARK-plain\$" | head -n1)
if [ -n "$plain" ] && [ -n "$ppid" ]; then
  stats_was=$(sysctl -n kernel.bpf_stats_enabled); sysctl -qw kernel.bpf_stats_enabled=1
  jcmd_counters "$plain" >"$WORK/plain0"; r0=$(prog_runs)
  echo "2000 0" >"/proc/$ppid/root/tmp/burst-$MARK-plain"
  # shellcheck disable=SC2317 # called by until_ok
  burst_done() { kc logs "$plain" -c app 2>/dev/null | grep -q '^BURST 2000 0'; }
  until_ok 60 "$plain: its burst of 2,000 threads" burst_done
  r1=$(prog_runs); jcmd_counters "$plain" >"$WORK/plain1"
  sysctl -qw kernel.bpf_stats_enabled="$stats_was"
  dj=$(( $(sed -n 's/^java.threads.started=//p' "$WORK/plain1") - $(sed -n 's/^java.threads.started=//p' "$WORK/plain0") ))
  if [ "$dj" -ge 2000 ] && [ $((r1 - r0)) -le 200 ]; then
    ok "pod without the annotation ($plain) pays nothing: it started $dj threads, the agent's programs ran $((r1 - r0)) times meanwhile"
  else bad "pod without the annotation ($plain): no probe fires in it" "jcmd java.threads.started +$dj (want >= 2000); the agent's BPF programs ran $((r1 - r0)) times"; fi
else bad "pod without the annotation: its JVM on the host" "pod '$plain', pid '$ppid'"; fi

# Delete the pod of jdk17b: the kubelet stops its JVM; one more scrape shows it, the next does not.
pod=$(kc get pods -l app=jdk17b -o jsonpath='{.items[0].metadata.name}')
hpid=$(pgrep -f "SafepointBurst 40 5 20 3000 /tmp/burst-$MARK-jdk17b\$" | head -n1)
kc delete pod "$pod" --wait=false >/dev/null
# shellcheck disable=SC2317 # called by until_ok
gone() { [ -z "$hpid" ] || ! kill -0 "$hpid"; }
until_ok 30 "the JVM of deleted pod $pod (host pid ${hpid:-?}) to exit" gone
s1=$(scrape | grep -c "pod=\"$pod\""); s2=$(scrape | grep -c "pod=\"$pod\"")
if [ -n "$hpid" ] && [ "$s1" -gt 0 ] && [ "$s2" -eq 0 ]; then ok "deleted pod $pod: shown once more ($s1 series), then gone"
else bad "deleted pod's series end after one more scrape" "host pid=${hpid:-none} first=$s1 second=$s2"; fi
# shellcheck disable=SC2015 # ok always returns 0
kill -0 "$AGENT_PID" 2>/dev/null && ok "agent still running" || bad "agent still running" "$(tail -5 "$WORK/agent.log")"
# One parser for both processes' logs (e2e/log_lines.py): the agent's JSON lines as the operator's.
if out=$(check_log_lines "agent log" "$WORK/agent.log"); then ok "$out"
else bad "every agent log line is JSON of the shape the operator's share" "$out"; fi

[ "${#SIDECARS[@]}" -gt 0 ] && step "checking the sidecars (scraped through the pod IP)"
for d in "${SIDECARS[@]}"; do
  pod=$(kc get pods -l "app=$d" -o jsonpath='{.items[0].metadata.name}')
  ip=$(kc get pod "$pod" -o jsonpath='{.status.podIP}')
  names=$(kc get pod "$pod" -o jsonpath='{.spec.containers[*].name}')
  [ "$names" = "app jvmdiag-sidecar" ] || { bad "$d: webhook added the jvmdiag-sidecar container" "containers: $names"; continue; }
  url="http://$ip:9464/metrics"
  if ! stable "$pod" "$url" "$WORK/side-$d"; then
    bad "$d: sidecar /metrics at $url and JVM counters standing still" "$(kc logs "$pod" -c jvmdiag-sidecar 2>&1 | tail -3)"; continue
  fi
  sel="namespace=\"default\",pod=\"$pod\",container=\"app\",jvm=\"SafepointBurst\",jvmdiagnostics=\"res-$d\""
  if grep -F "$sel" "$WORK/side-$d" | grep -q '^jvmdiag_jvm_info{.*probe_mode="hsperfdata"'; then ok "$d: sidecar series labelled {$sel}, probe_mode=\"hsperfdata\""
  else bad "$d: sidecar labels" "$(grep '^jvmdiag_jvm_info' "$WORK/side-$d" | head -2)"; fi
  n=$(msum jvmdiag_safepoint_pause_seconds_count "$sel" "$WORK/side-$d"); want_n=$(counter sun.rt.safepoints)
  t=$(msum jvmdiag_safepoint_pause_seconds_sum "$sel" "$WORK/side-$d")
  hz=$(counter sun.os.hrt.frequency); ticks=$(counter sun.rt.safepointTime)
  if awk -v n="$n" -v w="$want_n" 'BEGIN{exit !(w > 0 && (n - w <= 0.01 * w) && (w - n <= 0.01 * w))}'; then
    ok "$d: sidecar safepoint count $n vs jcmd sun.rt.safepoints $want_n (within 1 %)"
  else bad "$d: sidecar safepoint count within 1 %" "sidecar=$n jcmd=$want_n"; fi
  if [ -n "$hz" ] && [ -n "$ticks" ] && awk -v t="$t" -v k="$ticks" -v hz="$hz" 'BEGIN{w = k / hz; d = t - w; if (d < 0) d = -d; exit !(w > 0 && d <= 0.01 * w)}'; then
    ok "$d: sidecar safepoint time ${t}s vs jcmd sun.rt.safepointTime $(awk -v k="$ticks" -v hz="$hz" 'BEGIN{printf "%.6f", k / hz}')s (within 1 %)"
  else bad "$d: sidecar safepoint time within 1 %" "sidecar=${t}s jcmd=$ticks ticks at $hz Hz"; fi
  starts=$(msum jvmdiag_thread_starts_total "$sel" "$WORK/side-$d"); want_s=$(counter java.threads.started)
  if [ -n "$want_s" ] && [ "$starts" = "$want_s" ]; then ok "$d: sidecar thread starts $starts = jcmd java.threads.started"
  else bad "$d: sidecar thread starts" "sidecar=$starts jcmd=$want_s"; fi
done
finish
