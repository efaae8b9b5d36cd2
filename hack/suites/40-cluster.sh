#!/usr/bin/env bash
# Suite "cluster": the local cluster for real, on its own instance (CLUSTER_INDEX=1, so a
# developer's cluster keeps running). Control plane alone (admission webhook on a loopback
# URL, ServiceAccount tokens, CSR signing), a failure half-way (reported and undone), then
# the node: a JVM Deployment, checked from the host and through the API; then down, and
# nothing of ours may be left.
set -uo pipefail
export CLUSTER_INDEX=1
. "$(dirname "$0")/../lib.sh"
UP="$REPO_ROOT/hack/cluster/up.sh"
DOWN="$REPO_ROOT/hack/cluster/down.sh"
TD="$REPO_ROOT/hack/cluster/testdata"
WORK=$(mktemp -d)
pass=0 fail=0
T0=$(date +%s)
ok()   { pass=$((pass + 1)); printf 'ok   - [%3ss] %s\n' "$(($(date +%s) - T0))" "$1"; }
bad()  { fail=$((fail + 1)); printf 'FAIL - [%3ss] %s\n' "$(($(date +%s) - T0))" "$1"; [ -n "${2:-}" ] && echo "       $2"; }
check() { local name="$1"; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }
secs() { awk -v a="$1" -v b="$(date +%s%N)" 'BEGIN{printf "%.1f", (b-a)/1e9}'; }

cleanup() {
  [ -n "${WEBHOOK_PID:-}" ] && kill "$WEBHOOK_PID" 2>/dev/null
  "$DOWN" --quiet >/dev/null 2>&1
  rm -rf "$WORK"
}
trap cleanup EXIT

KUBE_BIN=$("$REPO_ROOT/hack/kube-binaries.sh") || { bad "kube binaries v$KUBE_VERSION available"; suite_result cluster "$pass" "$fail"; exit 1; }
export KUBECONFIG="$KUBECONFIG_ADMIN"
"$DOWN" --quiet >/dev/null 2>&1  # leftovers of an interrupted run

. "$REPO_ROOT/hack/cluster/leftovers.sh"
# check_clean WHAT PIDS...: after a down, nothing of ours is left.
check_clean() {
  local what="$1" p alive="" mnts cg_left; shift
  for p in "$@"; do pid_alive "$p" && alive="$alive $p"; done
  check "$what leaves none of its processes (daemons, shims, the JVMs)" [ -z "$alive" ]
  mnts=$(awk -v d="$CLUSTER_DIR/" 'index($5, d) == 1' /proc/self/mountinfo)
  check "$what leaves no mount under $CLUSTER_DIR" [ -z "$mnts" ]
  links >"$WORK/links.after"
  check "$what leaves no network link (bridge, veths)" added "$WORK/links.before" "$WORK/links.after"
  chains >"$WORK/chains.after"
  check "$what leaves no iptables chain (kubelet, CNI, ours)" added "$WORK/chains.before" "$WORK/chains.after"
  cg_left=$(ls -d /sys/fs/cgroup/*"$CGROUP_ROOT" 2>/dev/null)
  [ "$CGROUP_ROOT" = / ] && cg_left=""
  check "$what leaves no cgroup under $CGROUP_ROOT" [ -z "$cg_left" ]
  # shellcheck disable=SC2010 # CNI result file names: NETWORK-ID-IFNAME
  check "$what leaves no CNI result cache entry of $CNI_NETWORK" [ -z "$(ls /var/lib/cni/results/ 2>/dev/null | grep "^$CNI_NETWORK-")" ]
}
chains >"$WORK/chains.before"; links >"$WORK/links.before"

# --- control plane only -----------------------------------------------------------------
t0=$(date +%s%N)
CLUSTER_NODE=0 "$UP" >"$WORK/up0.out" 2>"$WORK/up0.err"; rc=$?
cp_secs=$(secs "$t0")
last=$(tail -n1 "$WORK/up0.out")
if [ "$rc" = 0 ] && [ "$last" = "export KUBECONFIG=$KUBECONFIG_ADMIN" ] \
   && curl -fsS --cacert "$PKI/ca.crt" -H "Authorization: Bearer $(sed -n 1p "$PKI/tokens.csv" | cut -d, -f1)" "$APISERVER_URL/readyz" >/dev/null; then
  ok "control plane up in ${cp_secs}s, /readyz ok, last line is the export"
else
  bad "control plane up (CLUSTER_NODE=0)" "rc=$rc last='$last'; $(tail -n 5 "$WORK/up0.err" | tr '\n' ' ')"
fi

# A mutating webhook registered by URL on 127.0.0.1 (how the operator runs in dev).
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$WORK/wh.key" -out "$WORK/wh.crt" -days 1 \
  -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 2>/dev/null
WH_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 "$TD/webhook.py" "$WH_PORT" "$WORK/wh.crt" "$WORK/wh.key" "$WORK/wh.log" 300 &
WEBHOOK_PID=$!
cat >"$WORK/wh.yaml" <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: jvmdiag-cluster-suite}
webhooks:
- name: cluster-suite.jvm.diagnostics.dev
  clientConfig: {url: "https://127.0.0.1:$WH_PORT/mutate", caBundle: "$(base64 -w0 "$WORK/wh.crt")"}
  rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: default}}
  sideEffects: None
  admissionReviewVersions: [v1]
  failurePolicy: Fail
  timeoutSeconds: 5
EOF
kc apply -f "$WORK/wh.yaml" >/dev/null
# The webhook configuration reaches the admission chain asynchronously: retry briefly.
label=""
for _ in $(seq 1 25); do
  kc delete configmap wh-probe --ignore-not-found >/dev/null 2>&1
  kc create configmap wh-probe --from-literal=k=v >/dev/null 2>&1
  label=$(kc get configmap wh-probe -o jsonpath='{.metadata.labels.jvmdiag-webhook-test}' 2>/dev/null)
  [ -n "$label" ] && break
  sleep 0.4
done
if [ -n "$label" ] && grep -q '^ConfigMap wh-probe$' "$WORK/wh.log" 2>/dev/null; then
  ok "MutatingWebhookConfiguration with clientConfig.url https://127.0.0.1:$WH_PORT is called and its patch applied"
else
  bad "mutating webhook on a loopback URL" "label='$label', webhook log: $(cat "$WORK/wh.log" 2>/dev/null)"
fi
kc delete -f "$WORK/wh.yaml" >/dev/null 2>&1
kill "$WEBHOOK_PID" 2>/dev/null; WEBHOOK_PID=""

# A ServiceAccount token, verified by the API server itself (TokenReview).
tok=$(kc create token default 2>/dev/null)
user=$(kc create -o jsonpath='{.status.user.username}' -f - 2>/dev/null <<EOF
{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": "$tok"}}
EOF
)
check "ServiceAccount token issued and authenticated as system:serviceaccount:default:default" [ "$user" = system:serviceaccount:default:default ]

# CSR signing by the controller-manager with the cluster CA (checked with openssl).
openssl req -new -newkey rsa:2048 -nodes -keyout "$WORK/csr.key" -subj "/CN=suite-user" -out "$WORK/csr.pem" 2>/dev/null
kc apply -f - >/dev/null <<EOF
apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata: {name: suite-csr}
spec: {request: "$(base64 -w0 "$WORK/csr.pem")", signerName: kubernetes.io/kube-apiserver-client, usages: [client auth]}
EOF
kc certificate approve suite-csr >/dev/null
for _ in $(seq 1 25); do
  kc get csr suite-csr -o jsonpath='{.status.certificate}' | base64 -d >"$WORK/csr.crt" 2>/dev/null
  [ -s "$WORK/csr.crt" ] && break; sleep 0.4
done
verified() { openssl verify -CAfile "$PKI/ca.crt" "$WORK/csr.crt" >/dev/null 2>&1; }
check "CSR signed by the cluster CA" verified

cp_pids=$(cat "$RUN"/*.pid 2>/dev/null)
"$DOWN" >/dev/null 2>&1
alive=""; for p in $cp_pids; do pid_alive "$p" && alive="$alive $p"; done
check "control-plane down stops every process it started" [ -n "$cp_pids" -a -z "$alive" ]

# --- a failure half-way: named, with its log, and undone ----------------------------------
# A flag the API server rejects: etcd is already running when that step fails.
APISERVER_EXTRA_ARGS=--no-such-flag CLUSTER_NODE=0 "$UP" >"$WORK/upf.out" 2>"$WORK/upf.err"; rc=$?
left=""; for p in $(pgrep -f "$ETCD_DATA"); do left="$left $p"; done
if [ "$rc" != 0 ] && grep -q 'failed at step: starting kube-apiserver' "$WORK/upf.err" \
   && grep -q "read the log: $LOGS/kube-apiserver.log" "$WORK/upf.err" && grep -q 'no-such-flag' "$WORK/upf.err" \
   && [ -z "$left" ] && [ ! -e "$RUN/etcd.pid" ]; then
  ok "a failing step (API server rejects a flag) is named with its log, and etcd is stopped again"
else
  bad "failure half-way is reported and cleaned up" "rc=$rc left=[$left] $(tail -n 4 "$WORK/upf.err" | tr '\n' ' ')"
fi

# --- the node -------------------------------------------------------------------------------
# The workload images: each JDK base plus two tiny mains (compiled for 17, run on both).
mkdir -p "$WORK/classes"
"$JDK17/bin/javac" -d "$WORK/classes" "$TD/Sleep.java" "$TD/WhoAmI.java"
built=1
IMAGES_NO_IMPORT=1 "$REPO_ROOT/hack/images/build.sh" pause jdk17-base jdk25-base >"$WORK/images.log" 2>&1 || built=0
for v in 17 25; do
  python3 "$REPO_ROOT/hack/images/build-image.py" --tag "jvmdiag/cluster-smoke$v:dev" --base "jvmdiag/jdk$v-base:dev" \
    --out "$WORK/cluster-smoke$v.tar" --add "$WORK/classes:/app" --entrypoint '["java", "-cp", "/app", "Sleep"]' >>"$WORK/images.log" 2>&1 || built=0
done
check "images built without a container engine (pause, jdk17/25 bases, smoke workloads)" [ "$built" = 1 ]
# Layers are reproducible: same inputs (even touched) give the same archive; other content does not.
repro() {
  local a b c
  mkdir -p "$WORK/r"; echo one >"$WORK/r/f"
  python3 "$REPO_ROOT/hack/images/build-image.py" --tag jvmdiag/r:dev --base jvmdiag/pause:dev --out "$WORK/r1.tar" --add "$WORK/r:/data" 2>/dev/null
  touch -d '2001-01-01' "$WORK/r/f"
  python3 "$REPO_ROOT/hack/images/build-image.py" --tag jvmdiag/r:dev --base jvmdiag/pause:dev --out "$WORK/r2.tar" --add "$WORK/r:/data" 2>/dev/null
  echo two >"$WORK/r/f"
  python3 "$REPO_ROOT/hack/images/build-image.py" --tag jvmdiag/r:dev --base jvmdiag/pause:dev --out "$WORK/r3.tar" --add "$WORK/r:/data" 2>/dev/null
  a=$(sha256sum <"$WORK/r1.tar"); b=$(sha256sum <"$WORK/r2.tar"); c=$(sha256sum <"$WORK/r3.tar")
  [ "$a" = "$b" ] && [ "$a" != "$c" ]
}
check "build-image.py is reproducible (same inputs, same bytes; new content, new digest)" repro
# The SBOM generator on its fixtures, and build-image.py --sbom (hack/images/test_sbom.py).
check "image tools: hack/images/ unit tests (sbom.py, build-image.py --sbom, referrers.py, unpack.py, the operator entrypoint in both builds)" python3 -m unittest discover -s "$REPO_ROOT/hack/images" -p 'test_*.py'

t0=$(date +%s%N)
CLUSTER_IMAGES="pause $WORK/cluster-smoke17.tar $WORK/cluster-smoke25.tar" "$UP" >"$WORK/up1.out" 2>"$WORK/up1.err"; rc=$?
up_secs=$(secs "$t0")
last=$(tail -n1 "$WORK/up1.out")
ready=$(kc get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)
if [ "$rc" = 0 ] && [ "$last" = "export KUBECONFIG=$KUBECONFIG_ADMIN" ] && [ "$ready" = True ]; then
  ok "cluster with node up in ${up_secs}s (after down: up -> down -> up), node Ready"
else
  bad "cluster with node up" "rc=$rc ready=$ready; $(tail -n 6 "$WORK/up1.err" | tr '\n' ' ')"
fi

MARK="suite-$$-$RANDOM"
# A Deployment of a smoke image (its entrypoint sleeps, printing its argument), created in its
# final template: a later patch would roll it, and the old pods could still be stopping.
sleep_deployment() {  # NAME IMAGE REPLICAS ARG
  kc apply -f - >/dev/null <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: $1, namespace: default}
spec:
  replicas: $3
  selector: {matchLabels: {app: $1}}
  template:
    metadata: {labels: {app: $1}}
    spec:
      terminationGracePeriodSeconds: 2
      containers:
      - name: app
        image: $2
        imagePullPolicy: Never
        args: ["$4"]
        resources: {requests: {cpu: 10m, memory: 64Mi}, limits: {memory: 256Mi}}
EOF
}
for v in 17 25; do
  sleep_deployment "smoke$v" "jvmdiag/cluster-smoke$v:dev" 1 "$MARK-$v"
done
JPIDS=""
for v in 17 25; do
  jdk_var="JDK$v"; jdk="${!jdk_var}"
  if kc rollout status "deploy/smoke$v" --timeout=120s >/dev/null 2>&1; then
    ok "JDK $v: JVM Deployment (jdk$v-base image) reaches Running"
  else
    bad "JDK $v: JVM Deployment reaches Running" "$(kc get pods -o wide 2>&1 | tail -n 3 | tr '\n' ' ') $(kc get events --sort-by=.lastTimestamp 2>&1 | tail -n 3 | tr '\n' ' ')"
  fi
  POD=$(kc get pods -l "app=smoke$v" -o jsonpath='{.items[0].metadata.name}' 2>/dev/null)
  UID_API=$(kc get pod "$POD" -o jsonpath='{.metadata.uid}' 2>/dev/null)
  CID_API=$(kc get pod "$POD" -o jsonpath='{.status.containerStatuses[0].containerID}' 2>/dev/null); CID_API="${CID_API#containerd://}"
  IP_API=$(kc get pod "$POD" -o jsonpath='{.status.podIP}' 2>/dev/null)
  check "JDK $v: pod got an address from the CNI bridge ($IP_API in $POD_SUBNET)" grep -q "^${POD_SUBNET%.0/24}\.[0-9]*$" <<<"$IP_API"

  # From the host: the process found by its unique argument, and what its cgroup file says.
  JPID=$(pgrep -f "Sleep $MARK-$v" | head -n1); JPIDS="$JPIDS $JPID"
  cg_line=$([ -n "$JPID" ] && grep -E '^[0-9]+:memory:' "/proc/$JPID/cgroup")
  cg_uid=$(sed -nE 's/.*\/pod([0-9a-f_-]{36})\/.*/\1/p' <<<"$cg_line" | tr _ -)
  cg_cid=$(basename "$cg_line")
  if [ -n "$JPID" ] && [ -n "$UID_API" ] && [ "$cg_uid" = "$UID_API" ] && [ "$cg_cid" = "$CID_API" ]; then
    ok "JDK $v: host /proc/$JPID/cgroup names the pod UID and container ID the API reports"
  else
    bad "JDK $v: host /proc/PID/cgroup names pod UID and container ID" "pid=$JPID cgroup='$cg_line' api uid=$UID_API cid=$CID_API"
  fi

  logs=$(kc logs "$POD" 2>&1)
  check "JDK $v: kubectl logs shows the JVM's output" grep -qx "sleeping $MARK-$v" <<<"$logs"

  # jcmd inside the container against PID 1; the version must be the host JDK's.
  want=$(sed -nE 's/^JAVA_VERSION="([^"]+)"/\1/p' "$jdk/release")
  vmv=$(kc exec "$POD" -- jcmd 1 VM.version 2>&1)
  if [ -n "$want" ] && grep -q "^JDK $want\$" <<<"$vmv"; then ok "JDK $v: kubectl exec ... jcmd 1 VM.version answers (JDK $want)"
  else bad "JDK $v: kubectl exec ... jcmd 1 VM.version" "want JDK $want, got: $(head -c 300 <<<"$vmv" | tr '\n' ' ')"; fi
done

# In-cluster client: the kubernetes Service, the mounted CA and the ServiceAccount token.
who=$(kc exec deploy/smoke17 -- java -cp /app WhoAmI 2>&1)
if grep -q '^201 ' <<<"$who" && grep -q '"username":"system:serviceaccount:default:default"' <<<"$who"; then
  ok "a pod reaches the API server through the kubernetes Service with its ServiceAccount token"
else
  bad "in-cluster API access from a pod" "$(head -c 300 <<<"$who")"
fi

# The API server proxies to the kubelet; its live config keeps image GC off.
gc=$(kc get --raw "/api/v1/nodes/$NODE_NAME/proxy/configz" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["kubeletconfig"]["imageGCHighThresholdPercent"])' 2>/dev/null)
check "kubelet image garbage collection off (configz imageGCHighThresholdPercent=$gc)" [ "$gc" = 100 ]

# Memory of each component, for docs/development.md.
for d in etcd kube-apiserver kube-controller-manager kube-scheduler containerd kubelet; do
  p=$(cat "$RUN/$d.pid" 2>/dev/null) && echo "rss $d $(awk '/VmRSS/ {print int($2/1024)}' "/proc/$p/status" 2>/dev/null) MiB"
done

# --- down: nothing of ours left ------------------------------------------------------------
pids="$(cat "$RUN"/*.pid 2>/dev/null) $JPIDS $(pgrep -f "containerd-shim-runc-v2 .*-address $CTRD_SOCK")"
t0=$(date +%s%N)
note_others
"$DOWN" >/dev/null 2>&1
# shellcheck disable=SC2086 # pids: a list of pids, split on purpose
check_clean "cluster down ($(secs "$t0")s)" $pids

# --- a crash: kubelet and containerd killed with pods running; down must sweep ------------
CLUSTER_IMAGES="pause $WORK/cluster-smoke17.tar" "$UP" >"$WORK/up2.out" 2>"$WORK/up2.err" \
  && sleep_deployment crash jvmdiag/cluster-smoke17:dev 2 "$MARK-crash" \
  && kc rollout status deploy/crash --timeout=120s >/dev/null 2>&1; rc=$?
crash_jvms=$(pgrep -f "Sleep $MARK-crash")
if [ "$rc" = 0 ] && [ "$(wc -w <<<"$crash_jvms")" = 2 ]; then ok "cluster up again, two JVM pods running (2 JVMs on the host)"
else bad "cluster up again, two JVM pods running" "rc=$rc, $(wc -w <<<"$crash_jvms") JVMs on the host; $(kc get pods -o wide 2>&1 | tail -n 4 | tr '\n' ' ')"; fi
pids="$(cat "$RUN"/*.pid 2>/dev/null) $crash_jvms $(pgrep -f "containerd-shim-runc-v2 .*-address $CTRD_SOCK")"
kill -KILL "$(cat "$RUN/kubelet.pid")" "$(cat "$RUN/containerd.pid")" 2>/dev/null
sleep 0.5
note_others
"$DOWN" >/dev/null 2>&1
# shellcheck disable=SC2086 # pids: a list of pids, split on purpose
check_clean "down after a crash (kubelet, containerd killed)" $pids

suite_result cluster "$pass" "$fail"
[ "$fail" -eq 0 ]
