#!/usr/bin/env bash
# Suite "chart": the Helm chart charts/jvm-diagnostics.
#  1. its CRDs are the generated ones (crds/), not stale copies;
#  2. helm lint --strict, for the defaults and every ci/*.yaml scenario;
#  3. values.schema.json refuses bad values, naming the field;
#  4. helm-unittest for the knobs that matter (tests/*_test.yaml);
#  5. every scenario accepted by a real kube-apiserver (kubectl apply --dry-run=server),
#     with the Prometheus Operator and cert-manager CRDs installed from their Go modules;
#  6. through the node's registry (e2e/chart_lifecycle.sh): images pushed with skopeo, both
#     chart versions with helm push; the previous version installed from oci://, upgraded with
#     two injected workloads in place, the agent image upgraded alone, uninstalled, and the
#     current version installed fresh: each pushed image's SBOM (e2e/image_sbom.sh); operator and
#     agent pods Ready with the chart's own privileges, RBAC, metrics, the webhook's caBundle; the
#     operator's least privilege (e2e/operator_rbac.sh); the operator attacked for 5 minutes by a
#     tenant pod, Lease blackouts and certificate changes at once (e2e/operator_attack.sh); the
#     kubectl plugin (e2e/kubectl_plugin.sh); then
#     the agent's metrics port held by a pod for 2 minutes and put behind a Kubernetes token
#     (agent.metricsAuth), and an uninstall that removes it all.
# Runs its own cluster instance (CLUSTER_INDEX=5), stopped on exit whatever happens.
# CHART_INSTALL=0 skips step 6 (and the node).
# shellcheck disable=SC2015 # `test && ok … || bad …`: ok always returns 0
set -uo pipefail
export CLUSTER_INDEX="${CHART_CLUSTER_INDEX:-5}"
. "$(dirname "$0")/../lib.sh"
CHART="$REPO_ROOT/charts/jvm-diagnostics"
export HELM_PLUGINS="$JVMDIAG_CACHE/helm-plugins"
# Helm's own state (repositories, cache) stays out of $HOME and the repo.
export HELM_CACHE_HOME="$JVMDIAG_CACHE/helm/cache" HELM_CONFIG_HOME="$JVMDIAG_CACHE/helm/config" HELM_DATA_HOME="$JVMDIAG_CACHE/helm/data"
WORK=$(mktemp -d)
pass=0 fail=0
T0=$(date +%s)
ok()   { pass=$((pass + 1)); printf 'ok   - [%3ss] %s\n' "$(($(date +%s) - T0))" "$1"; }
bad()  { fail=$((fail + 1)); printf 'FAIL - [%3ss] %s\n' "$(($(date +%s) - T0))" "$1"; [ -z "${2:-}" ] || printf '       %s\n' "$2"; }
finish() { suite_result chart "$pass" "$fail"; [ "$fail" -eq 0 ]; exit $?; }

CLUSTER_STARTED=0
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
  [ "$CLUSTER_STARTED" = 1 ] && "$REPO_ROOT/hack/cluster/down.sh" --quiet >/dev/null 2>&1
  rm -rf "$WORK"
}
trap cleanup EXIT

bash "$REPO_ROOT/hack/setup.d/helm.sh" && bash "$REPO_ROOT/hack/setup.d/chart.sh" \
  || { bad "helm and helm-unittest available" "hack/setup.d/helm.sh / chart.sh failed"; finish; }
# promtool and Prometheus for e2e/chart_lifecycle.sh's scrapes (optional there): Prometheus 3.x
# built once from its Go module, or Debian's with PROMETHEUS_FLAVOR=debian.
monitoring_tools 2>"$WORK/monitoring-tools.log" || echo "(no Prometheus/promtool: $(tail -n 1 "$WORK/monitoring-tools.log"))"
SCENARIOS=("$CHART"/ci/*.yaml)
API_VERSIONS=(--api-versions monitoring.coreos.com/v1/PrometheusRule --api-versions monitoring.coreos.com/v1/ServiceMonitor
              --api-versions monitoring.coreos.com/v1/PodMonitor --api-versions cert-manager.io/v1/Certificate)

# --- 1. CRDs in sync with the generated ones ----------------------------------------------
if out=$("$CHART/scripts/sync-crds.sh" --check 2>&1); then ok "chart crds/ equal the generated crds/"
else bad "chart crds/ equal the generated crds/" "$out"; fi
# ... and the check can fail: a stale copy is detected.
cp -r "$CHART" "$WORK/chart-copy" && mkdir -p "$WORK/crds" && cp "$REPO_ROOT"/crds/* "$WORK/crds/"
mkdir -p "$WORK/x/charts" && mv "$WORK/chart-copy" "$WORK/x/charts/jvm-diagnostics" && mv "$WORK/crds" "$WORK/x/crds"
# shellcheck disable=SC2012 # the CRD file names are ours, no spaces
echo "# edited" >>"$WORK/x/charts/jvm-diagnostics/crds/$(ls "$WORK/x/crds" | head -n1)"
if "$WORK/x/charts/jvm-diagnostics/scripts/sync-crds.sh" --check >/dev/null 2>&1; then bad "a hand-edited chart CRD is reported stale"
else ok "a hand-edited chart CRD is reported stale"; fi
rm -rf "$WORK/x"

# --- 2. lint ---------------------------------------------------------------------------------
for f in "" "${SCENARIOS[@]}"; do
  name=${f:+$(basename "$f")}; name=${name:-defaults}
  if out=$("$HELM" lint --strict "$CHART" ${f:+-f "$f"} 2>&1); then ok "helm lint --strict ($name)"
  else bad "helm lint --strict ($name)" "$(grep -E 'ERROR|WARNING|Error' <<<"$out" | head -n 5 | tr '\n' ' ')"; fi
done

# ... and states the oldest Kubernetes it works on (Chart.yaml kubeVersion: the webhook's
# matchConditions are GA in 1.30): helm refuses an older cluster before it creates anything.
if out=$("$HELM" template t "$CHART" --kube-version 1.29.9 2>&1); then bad "the chart refuses Kubernetes 1.29" "rendered"
elif grep -q "kubeVersion: >=1.30" <<<"$out"; then ok "the chart refuses Kubernetes 1.29 (kubeVersion >=1.30)"
else bad "the chart refuses Kubernetes 1.29" "$(head -c 300 <<<"$out")"; fi
if "$HELM" template t "$CHART" --kube-version 1.30.0 >/dev/null 2>&1 && "$HELM" template t "$CHART" --kube-version v1.30.4-eks-1 >/dev/null 2>&1
then ok "the chart renders for Kubernetes 1.30.0 and a provider's v1.30.4-eks-1"
else bad "the chart renders for Kubernetes 1.30.0 and v1.30.4-eks-1"; fi

# --- 3. the schema refuses bad values and names the field -----------------------------------
schema_refuses() {  # DESCRIPTION EXPECTED_TEXT --set ...
  local what="$1" want="$2"; shift 2
  local out
  if out=$("$HELM" template t "$CHART" --kube-version "$KUBE_VERSION" "$@" 2>&1); then bad "schema refuses $what" "rendered without error"
  elif grep -q -- "$want" <<<"$out"; then ok "schema refuses $what"
  else bad "schema refuses $what" "error does not name '$want': $(head -c 300 <<<"$out")"; fi
}
schema_refuses "a misspelled key (agent.capabilites)" "capabilites" --set 'agent.capabilites={BPF}'
schema_refuses "NET_ADMIN for the agent" "agent.capabilities" --set 'agent.capabilities={NET_ADMIN}'
schema_refuses "zero operator replicas" "operator.replicas" --set operator.replicas=0
schema_refuses "an unknown pull policy" "pullPolicy" --set agent.image.pullPolicy=Sometimes
schema_refuses "a release label with spaces" "serviceMonitor.release" --set 'serviceMonitor.release=a b'
schema_refuses "a bad scrape interval" "podMonitor.interval" --set podMonitor.interval=often
schema_refuses "a registry with a scheme" "imageRegistry" --set global.imageRegistry=https://registry.example.com
schema_refuses "a privileged agent probe port" "agent.probePort" --set agent.probePort=80
schema_refuses "the agent's probe port equal to its metrics port" "agent.probePort" --set agent.probePort=9464
schema_refuses "a per-peer connection cap above the agent's 64" "agent.maxConnectionsPerPeer" --set agent.maxConnectionsPerPeer=65
schema_refuses "a metrics reader of an unknown kind" "agent.metricsAuth.readerSubjects.0.kind" \
  --set 'agent.metricsAuth.readerSubjects[0].kind=Robot' --set 'agent.metricsAuth.readerSubjects[0].name=r2'
schema_refuses "a ServiceAccount metrics reader without its namespace" "agent.metricsAuth.readerSubjects.0" \
  --set 'agent.metricsAuth.readerSubjects[0].kind=ServiceAccount' --set 'agent.metricsAuth.readerSubjects[0].name=prometheus'
schema_refuses "an agent NetworkPolicy without peers" "agent.networkPolicy.from" --set agent.networkPolicy.enabled=true
schema_refuses "an operator NetworkPolicy without the API server's addresses" "operator.networkPolicy.apiServerCIDRs: with enabled: true, give" \
  --set operator.networkPolicy.enabled=true
schema_refuses "a webhook peer limit without a burst" "webhook/rateLimitPerPeer/validation" --set webhook.rateLimitPerPeer.validation.burst=0
schema_refuses "agent.args without the probe listener" "--probe-listen" --set 'agent.args={--node-name=n}'

# --- 4. helm-unittest --------------------------------------------------------------------------
if "$HELM" unittest --color=false "$CHART" >"$WORK/unittest.log" 2>&1; then ut_rc=0; else ut_rc=$?; fi
ut_line=$(grep -E '^Tests:' "$WORK/unittest.log" | tail -n1)
ut_pass=$(sed -nE 's/.* ([0-9]+) passed.*/\1/p' <<<"$ut_line"); ut_fail=$(sed -nE 's/.* ([0-9]+) failed.*/\1/p' <<<"$ut_line")
pass=$((pass + ${ut_pass:-0})); fail=$((fail + ${ut_fail:-0}))
echo "helm unittest: ${ut_line:-no summary}"
if [ "$ut_rc" -ne 0 ]; then
  grep -E -A6 '^ FAIL|- .*\[FAIL\]|Error' "$WORK/unittest.log" | head -n 40
  [ -n "$ut_fail" ] && [ "$ut_fail" -gt 0 ] || bad "helm unittest ran" "rc=$ut_rc: $(tail -n 5 "$WORK/unittest.log" | tr '\n' ' ')"
fi

# --- 5. server-side dry run on a real API server --------------------------------------------
install_wanted="${CHART_INSTALL:-1}"
KUBE_BIN=$("$REPO_ROOT/hack/kube-binaries.sh" 2>"$WORK/kube-binaries.log") || { bad "kube binaries available" "$(tail -n 3 "$WORK/kube-binaries.log")"; finish; }
export PATH="$KUBE_BIN:$PATH" KUBECONFIG="$KUBECONFIG_ADMIN"
"$REPO_ROOT/hack/cluster/down.sh" --quiet >/dev/null 2>&1   # leftovers of an interrupted run
node=0; [ "$install_wanted" = 1 ] && [ "$(id -u)" = 0 ] && node=1
CLUSTER_STARTED=1
if CLUSTER_NODE=$node "$REPO_ROOT/hack/cluster/up.sh" >"$WORK/up.out" 2>"$WORK/up.err"; then
  ok "local cluster up (CLUSTER_INDEX=$CLUSTER_INDEX, node=$node)"
else
  bad "local cluster up (CLUSTER_INDEX=$CLUSTER_INDEX, node=$node)" "$(tail -n 4 "$WORK/up.err" | tr '\n' ' ')"; finish
fi
CRDS=$("$REPO_ROOT/hack/demo/third-party-crds.sh" 2>"$WORK/crds.log") \
  && kubectl apply --server-side -f "$CRDS" >"$WORK/crds-apply.log" 2>&1 \
  && kubectl apply --server-side -f "$CHART/crds/" >>"$WORK/crds-apply.log" 2>&1 \
  && kubectl wait --for condition=Established --timeout=60s crd --all >/dev/null 2>&1 \
  && ok "Prometheus Operator, cert-manager and chart CRDs installed" \
  || bad "Prometheus Operator, cert-manager and chart CRDs installed" "$(tail -n 3 "$WORK/crds.log" "$WORK/crds-apply.log" | tr '\n' ' ')"
kubectl create namespace jvm-diagnostics >/dev/null 2>&1
for f in "" "${SCENARIOS[@]}"; do
  name=${f:+$(basename "$f")}; name=${name:-defaults}
  if ! "$HELM" template jd "$CHART" --kube-version "$KUBE_VERSION" -n jvm-diagnostics ${f:+-f "$f"} "${API_VERSIONS[@]}" >"$WORK/rendered.yaml" 2>"$WORK/render.err"; then
    bad "helm template ($name)" "$(head -n 3 "$WORK/render.err")"; continue
  fi
  kinds=$(grep -c '^kind:' "$WORK/rendered.yaml")
  if out=$(kubectl apply --dry-run=server -n jvm-diagnostics -f "$WORK/rendered.yaml" 2>&1); then
    ok "API server accepts the $kinds objects of $name (apply --dry-run=server)"
  else
    bad "API server accepts $name (apply --dry-run=server)" "$(grep -iv 'created (server dry run)\|configured (server dry run)' <<<"$out" | head -n 4 | tr '\n' ' ')"
  fi
done

# --- 6. a real install with the locally built images ----------------------------------------
if [ "$node" != 1 ]; then
  echo "(skipping the real install: CHART_INSTALL=$install_wanted, uid=$(id -u))"
  finish
fi
# The images carry this tree's operator and agent, never an earlier build's (a suite run alone).
operator_build
agent_build "$WORK/agent-build.log" || true
IMAGES_NO_IMPORT=1 "$REPO_ROOT/hack/images/build.sh" agent operator >"$WORK/images.log" 2>&1
missing=()
for img in agent operator; do [ -f "$JVMDIAG_CACHE/images/jvmdiag_${img}_dev.tar" ] || missing+=("$img"); done
if [ "${#missing[@]}" -gt 0 ]; then
  bad "images jvmdiag/agent:dev and jvmdiag/operator:dev built" "missing: ${missing[*]} ($(tail -n 2 "$WORK/images.log" | tr '\n' ' '))"; finish
fi
extra=()
# An agent binary without Kubernetes mode (--node-name) runs in the DaemonSet in its
# standalone mode, so the pod can still prove the privileges.
if ! "$REPO_ROOT/node-agent/target/release/jvmdiag-agent" --help 2>/dev/null | grep -q -- '--node-name'; then
  echo "(agent has no --node-name yet: the DaemonSet runs it with --standalone)"
  extra=(--set 'agent.args={--standalone,--listen=0.0.0.0:9464,--probe-listen=0.0.0.0:9465}')
fi
# The flags the chart passes (--probe-listen always; the others with the values the lifecycle
# sets): an agent without one exits at its start, and the install would only time out.
noflag=()
for f in --probe-listen --max-connections-per-peer --metrics-auth; do
  "$REPO_ROOT/node-agent/target/release/jvmdiag-agent" --help 2>/dev/null | grep -q -- "$f" || noflag+=("$f")
done
if [ "${#noflag[@]}" -gt 0 ]; then bad "the agent has the flags the chart passes" "jvmdiag-agent --help names no ${noflag[*]}"; finish; fi
# Through the node's registry: previous version from oci://, upgrade, agent-only upgrade,
# uninstall, then this version installed fresh (e2e/chart_lifecycle.sh); the checks below run
# against that last install.
. "$REPO_ROOT/e2e/chart_lifecycle.sh"
LIFECYCLE_INSTALLED=0
lifecycle
# Every pushed agent and operator image carries its SBOM, inside and attached in the registry
# (e2e/image_sbom.sh).
. "$REPO_ROOT/e2e/image_sbom.sh"
image_sbom_checks
if [ "$LIFECYCLE_INSTALLED" != 1 ]; then
  bad "the current chart installed (end of the lifecycle)" "$(tail -n 3 "$WORK/install.log" 2>/dev/null | tr '\n' ' ')"
  kubectl -n jvm-diagnostics get pods -o wide 2>&1 | head
  for p in $(kubectl -n jvm-diagnostics get pods -o name 2>/dev/null); do
    echo "--- $p"; kubectl -n jvm-diagnostics logs "$p" --tail 8 2>&1; kubectl -n jvm-diagnostics describe "$p" 2>/dev/null | sed -n '/^Events:/,$p' | tail -n 6
  done
  finish
fi
ns=jvm-diagnostics
ready=$(kubectl -n $ns get deploy jd-jvm-diagnostics-operator -o jsonpath='{.status.readyReplicas}')
[ "$ready" = 2 ] && ok "operator: 2/2 replicas Ready" || bad "operator: 2/2 replicas Ready" "readyReplicas=$ready"
ds=$(kubectl -n $ns get ds jd-jvm-diagnostics-agent -o jsonpath='{.status.numberReady}/{.status.desiredNumberScheduled}')
[ "$ds" = 1/1 ] && ok "agent DaemonSet: 1/1 Ready" || bad "agent DaemonSet: 1/1 Ready" "$ds"
# What the running agent pod really has: not privileged, exactly the chart's capabilities.
apod=$(kubectl -n $ns get pods -l app.kubernetes.io/component=agent -o jsonpath='{.items[0].metadata.name}')
uid=$(kubectl -n $ns get pod "$apod" -o jsonpath='{.metadata.uid}')
pid=""
for p in $(pgrep -f '^/usr/local/bin/jvmdiag-agent'); do
  grep -qE "pod(${uid}|${uid//-/_})" "/proc/$p/cgroup" 2>/dev/null && { pid=$p; break; }
done
if [ -n "$pid" ]; then
  capeff=$(awk '/^CapEff/ {print $2}' "/proc/$pid/status")
  have=$(capsh --decode="$capeff" | sed 's/.*=//' | tr ',' '\n' | sort | tr '\n' ' ')
  want="cap_bpf cap_dac_read_search cap_perfmon cap_sys_ptrace "
  [ "$have" = "$want" ] && ok "agent process has exactly the chart's capabilities ($have)" \
    || bad "agent process has exactly the chart's capabilities" "have: $have; want: $want"
  nnp=$(awk '/^NoNewPrivs/ {print $2}' "/proc/$pid/status")
  [ "$nnp" = 1 ] && ok "agent runs with no_new_privs" || bad "agent runs with no_new_privs" "NoNewPrivs=$nnp"
else
  bad "agent process found on the host" "no /usr/local/bin/jvmdiag-agent process"
fi
# Serves metrics from inside the pod network (through the API server's pod proxy).
if kubectl get --raw "/api/v1/namespaces/$ns/pods/$apod:9464/proxy/metrics" >"$WORK/agent-metrics.txt" 2>&1 \
   && grep -q '^jvmdiag_agent_' "$WORK/agent-metrics.txt"; then ok "agent serves /metrics in its pod"
else bad "agent serves /metrics in its pod" "$(head -c 200 "$WORK/agent-metrics.txt")"; fi
if [ "${#extra[@]}" -eq 0 ]; then  # Kubernetes mode: its RBAC is enough to watch the node's pods
  for _ in $(seq 1 30); do
    kubectl get --raw "/api/v1/namespaces/$ns/pods/$apod:9464/proxy/metrics" 2>/dev/null | grep -qE '^jvmdiag_agent_kube_api_up(\{[^}]*\})? 1' && break; sleep 1
  done
  kubectl get --raw "/api/v1/namespaces/$ns/pods/$apod:9464/proxy/metrics" 2>/dev/null | grep -qE '^jvmdiag_agent_kube_api_up(\{[^}]*\})? 1' \
    && ok "agent watches its node's pods with the chart's RBAC (jvmdiag_agent_kube_api_up 1)" \
    || bad "agent watches its node's pods with the chart's RBAC" "$(kubectl -n $ns logs "$apod" --tail 5 2>&1 | tr '\n' ' ')"
fi
# RBAC: each ServiceAccount can do what it needs and nothing cluster-wide beyond it.
can() { kubectl auth can-i "$@" 2>/dev/null; }
osa=system:serviceaccount:$ns:jd-jvm-diagnostics-operator
asa=system:serviceaccount:$ns:jd-jvm-diagnostics-agent
[ "$(can watch pods --as "$asa")" = yes ] && [ "$(can get secrets -n $ns --as "$asa")" = no ] \
  && [ "$(can create pods --as "$asa")" = no ] && [ "$(can list nodes --as "$asa")" = no ] \
  && ok "agent ServiceAccount: watch pods only (no secrets, no writes)" || bad "agent ServiceAccount: watch pods only"
[ "$(can patch deployments -n default --as "$osa")" = yes ] && [ "$(can get secrets -n default --as "$osa")" = no ] \
  && [ "$(can get secret/jd-jvm-diagnostics-webhook-tls -n $ns --as "$osa")" = yes ] && [ "$(can delete pods -n default --as "$osa")" = no ] \
  && ok "operator ServiceAccount: patches workloads, Secrets only in its namespace" || bad "operator ServiceAccount rights"
# The webhook registration carries a caBundle written by the operator at runtime.
# (pods turn Ready on /readyz once the webhook serves, a moment before the registration is applied)
for _ in $(seq 1 60); do
  ca=$(kubectl get mutatingwebhookconfiguration jd-jvm-diagnostics-webhook -o jsonpath='{.webhooks[0].clientConfig.caBundle}' 2>/dev/null)
  [ -n "$ca" ] && break; sleep 1
done
[ -n "$ca" ] && ok "operator wrote the webhook caBundle" || bad "operator wrote the webhook caBundle"
# The operator's least privilege: what its ServiceAccount may do, per watched namespace, and the
# admission policy on its writes (e2e/operator_rbac.sh).
. "$REPO_ROOT/e2e/operator_rbac.sh"
operator_rbac_checks
# The operator attacked by a tenant pod, its Lease holder cut off from the API server and its
# certificate changed, all at once (e2e/operator_attack.sh).
. "$REPO_ROOT/e2e/operator_attack.sh"
operator_under_attack
# The kubectl plugin against this install (e2e/kubectl_plugin.sh): built, unit-tested, status,
# top through the agents' pod proxy, its errors.
. "$REPO_ROOT/e2e/kubectl_plugin.sh"
kubectl_plugin_checks
# The agent's metrics port held by a pod, then behind a token (e2e/chart_lifecycle.sh): last, as
# it upgrades the release.
agent_exposure
if "$HELM" uninstall jd -n $ns --wait --timeout 120s >"$WORK/uninstall.log" 2>&1 \
   && ! kubectl get mutatingwebhookconfiguration jd-jvm-diagnostics-webhook >/dev/null 2>&1; then
  ok "helm uninstall removes everything, the webhook registration included"
else bad "helm uninstall removes everything" "$(tail -n 2 "$WORK/uninstall.log")"; fi
finish
