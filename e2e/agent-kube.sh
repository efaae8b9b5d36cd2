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
# (counted once however many containers map the image's libjvm.so); the pod without the
# annotation is not traced; a deleted pod's series are shown once more, then gone.
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
"$JDK17/bin/javac" --release 17 -d "$WORK/classes" "$JVMDIAG_WORKLOADS/sidecar/SafepointBurst.java"
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
node_ready() { [ "$(kc get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]; }
if until_ok 60 "node $NODE_NAME Ready" node_ready; then ok "cluster with node $NODE_NAME up and Ready"
else bad "node Ready" "$(kc get node "$NODE_NAME" -o jsonpath='{.status.conditions}' 2>&1 | tail -c 400)"; finish; fi

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$AGENT" --node-name "$NODE_NAME" --kubeconfig "$KUBECONFIG_ADMIN" --listen "127.0.0.1:$PORT" >"$WORK/agent.log" 2>&1 &
AGENT_PID=$!
scrape() { curl -fsS --max-time 10 "http://127.0.0.1:$PORT/metrics"; }

MARK="e2e-$$"
deploy() {  # name version injected(0/1) [pod securityContext [replicas]]
  local meta="labels: {app: $1}" sc="${4:-}" replicas="${5:-1}"
  [ -n "$sc" ] || sc='{}'
  local limits=""
  [ "$1" = "$LIMITED" ] && limits=", jvm.diagnostics.dev/limits: \"maxThreadNames=3\""
  [ "$3" = 1 ] && [ "$E2E_OPERATOR" = 0 ] && meta="labels: {app: $1, jvm.diagnostics.dev/inject: res-$1}
      annotations: {jvm.diagnostics.dev/injected: \"h\", jvm.diagnostics.dev/collectors: \"threads,safepoints,vmOperations,compilation\", jvm.diagnostics.dev/containers: app$limits}"
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
        args: ["40", "5", "20", "3000", "/tmp/burst-$MARK-$1"]
        resources: {requests: {cpu: 10m, memory: 64Mi}, limits: {memory: 256Mi}}
EOF
}
resource() {  # deployment collection
  local collectors=''
  [ "$1" = "$LIMITED" ] && collectors='collectors: {threads: {maxThreadNames: 3}}'
  kc apply -f - >/dev/null <<EOF
apiVersion: jvm.diagnostics.dev/v1alpha1
kind: JvmDiagnostics
metadata: {name: res-$1, namespace: default}
spec:
  targetRef: {kind: Deployment, name: $1}
  collection: $2
  $collectors
  rollout: Automatic
EOF
}
# This one's resource asks for maxThreadNames: 3 (the webhook's jvm.diagnostics.dev/limits):
# its JVM shows at most 3 thread names + other, its starts still counted exactly below.
LIMITED=jdk17b
INJECTED=(jdk17 jdk17b jdk25 jdk25b) SIDECARS=()
declare -A REPLICAS=([jdk17]=3 [jdk17b]=1 [jdk25]=3 [jdk25b]=1)
if [ "$E2E_OPERATOR" = 1 ]; then
  step "operator on the host (webhook on loopback, sidecar image $SIDECAR_IMAGE)"
  # The CRD first, until Established: up.sh's `kubectl wait` fails at once when the new
  # CRD has no status yet (seen on a loaded machine).
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
# The sidecar reads the app's 0600 hsperfdata: both run as the app's (non-root) user.
for d in "${SIDECARS[@]}"; do deploy "$d" "${d#side}" 1 '{runAsUser: 65534, runAsGroup: 65534}'; done
if [ "$E2E_OPERATOR" = 1 ]; then
  for d in "${INJECTED[@]}"; do resource "$d" NodeAgent; done
  for d in "${SIDECARS[@]}"; do resource "$d" Sidecar; done
fi
# The Deployment's pods (as many as its replicas, none terminating) Ready, stamped by the
# webhook when instrumented (the reconciler labels the template; the rollout's new pods are
# the stamped ones) and their JVMs at IDLE.
settled() {  # deployment injected(0/1) replicas
  local pods ann p
  pods=$(kc get pods -l "app=$1" -o jsonpath='{range .items[*]}{.metadata.name} {.status.conditions[?(@.type=="Ready")].status} {.metadata.deletionTimestamp}{"\n"}{end}')
  [ "$(grep -c . <<<"$pods")" -eq "$3" ] && [ -z "$(awk '$2 $3 != "True"' <<<"$pods")" ] || return 1
  for p in $(awk '{print $1}' <<<"$pods"); do
    if [ "$2" = 1 ]; then
      ann=$(kc get pod "$p" -o jsonpath='{.metadata.annotations.jvm\.diagnostics\.dev/injected}')
      [ -n "$ann" ] || return 1
    fi
    kc logs "$p" -c app | grep -q IDLE || return 1
  done
}
step "waiting for the pods (bound to $NODE_NAME, JVMs at IDLE)"
for d in "${INJECTED[@]/%/:1}" plain:0 "${SIDECARS[@]/%/:1}"; do
  n=${REPLICAS[${d%:*}]:-1}
  if until_ok 180 "deployment ${d%:*}: $n Ready pod(s)$([ "${d#*:}" = 1 ] && echo ', stamped by the webhook'), their JVMs printed IDLE" settled "${d%:*}" "${d#*:}" "$n"; then
    ok "${d%:*}: $n pod(s) running$([ "${d#*:}" = 1 ] && echo ', instrumented by the operator')"
  else bad "${d%:*}: pods running" "$(explain "app=${d%:*}")"; fi
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
    curl -fsS --max-time 10 "$2" >"$3" 2>/dev/null
    b=$(jcmd_counters "$1")
    [ -n "$a" ] && [ "$(grep -E '^(sun.rt.safepoints|sun.rt.safepointTime|java.threads.started)=' <<<"$a")" = "$(grep -E '^(sun.rt.safepoints|sun.rt.safepointTime|java.threads.started)=' <<<"$b")" ] && { echo "$a" >"$WORK/jcmd"; return 0; }
    sleep 1
  done
  return 1
}
counter() { sed -n "s/^$1=//p" "$WORK/jcmd"; }
# sum METRIC SELECTOR FILE: the sum of the values of METRIC's series whose labels contain SELECTOR
msum() { grep -F "$2" "$3" | grep -F -- "${4:-}" | awk -v m="$1" '$1 ~ "^"m"[{]" {s+=$NF} END{printf "%.9g\n", s+0}'; }

# eBPF sees only what happens after the attach, which on a loaded machine may come after
# the workload's start-up: the exact comparison is over a window that opens once the agent
# traces the pod and both counters stand still. In the window every pod's JVM starts its own
# number of threads and runs its own number of System.gc() safepoints (SafepointBurst's
# request file), all pods at once; the window closes when each has printed BURST and both
# counters stand still again. A pod counted once per container of its image would show a
# multiple of its number.
declare -A SEL BEFORE_S BEFORE_P BEFORE_R C0_S C0_P WANT_T WANT_G
PODS=() i=0
for d in "${INJECTED[@]}"; do
  for pod in $(kc get pods -l "app=$d" -o jsonpath='{.items[*].metadata.name}'); do
    PODS+=("$pod"); SEL[$pod]="namespace=\"default\",pod=\"$pod\",container=\"app\",jvm=\"SafepointBurst\",jvmdiagnostics=\"res-$d\""
    WANT_T[$pod]=$((100 + 37 * i)); WANT_G[$pod]=$((3 + i % 4)); i=$((i + 1))
  done
done
[ "${#PODS[@]}" -eq 8 ] || bad "8 instrumented pods (3 + 1 per JDK)" "found ${#PODS[@]}: ${PODS[*]}"
# The window's threads take BURST_NAMES names (more-a-N ... more-f-N): more than the limited
# pod's 3, so its bound is what keeps them out, as the other pods showing all of them prove.
BURST_NAMES=6
WINDOW=()
for pod in "${PODS[@]}"; do
  sel=${SEL[$pod]}
  # jvm_info appears once every probe is attached and the pid is in traced_pids. Not the
  # safepoint series: when the attach comes after the workload's bursts (a loaded machine),
  # an idle JVM has none until the window's first GC.
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
if [ "$files" = 2 ]; then ok "agent: 2 libjvm.so files attached (one per JDK image) for ${#PODS[@]} instrumented pods"
else bad "agent: one attachment per JDK image" "jvmdiag_agent_libjvm_files=$files"; fi
plain=$(kc get pods -l app=plain -o jsonpath='{.items[0].metadata.name}')
if [ -z "$plain" ]; then bad "pod without the annotation exists"
elif scrape | grep -q "pod=\"$plain\""; then bad "pod without the annotation ($plain) not traced"
else ok "pod without the annotation ($plain) not traced"; fi

# Delete the pod of jdk17b: the kubelet stops its JVM; one more scrape shows it, the next does not.
pod=$(kc get pods -l app=jdk17b -o jsonpath='{.items[0].metadata.name}')
hpid=$(pgrep -f "SafepointBurst 40 5 20 3000 /tmp/burst-$MARK-jdk17b\$" | head -n1)
kc delete pod "$pod" --wait=false >/dev/null
gone() { [ -z "$hpid" ] || ! kill -0 "$hpid"; }
until_ok 30 "the JVM of deleted pod $pod (host pid ${hpid:-?}) to exit" gone
s1=$(scrape | grep -c "pod=\"$pod\""); s2=$(scrape | grep -c "pod=\"$pod\"")
if [ -n "$hpid" ] && [ "$s1" -gt 0 ] && [ "$s2" -eq 0 ]; then ok "deleted pod $pod: shown once more ($s1 series), then gone"
else bad "deleted pod's series end after one more scrape" "host pid=${hpid:-none} first=$s1 second=$s2"; fi
kill -0 "$AGENT_PID" 2>/dev/null && ok "agent still running" || bad "agent still running" "$(tail -5 "$WORK/agent.log")"

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
