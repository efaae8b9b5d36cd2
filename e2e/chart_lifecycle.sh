# The chart's life in a cluster, as a platform team lives it: images and the chart through a
# real registry, an upgrade from the previous chart version with workloads in place, an upgrade
# of the agent image alone, an uninstall, and a fresh install. Sourced by
# hack/suites/60-chart.sh (its ok/bad/WORK/HELM, the cluster with its node already up).
#
#  1. the node's registry (hack/cluster/node.sh) answers; Chart.yaml's version equals appVersion;
#     the images are pushed with skopeo under the previous and the current appVersion (their
#     configs are the archives'): this tree's agent under both, this tree's operator as the
#     current one and the operator of the previous release's commit (PREVIOUS_OPERATOR_COMMIT,
#     built once by hack/images/build.sh operator@COMMIT) as the previous one; both charts are
#     pushed with `helm push` (the previous one as released: PREVIOUS_CHART, kept in e2e/fixtures/);
#  2. the previous version is installed from oci:// over its own CRD, its images pulled by the
#     kubelet from the registry (removed from containerd first, so the pull is real);
#  3. three injected Deployments: "jto" (NodeAgent, monitors.enabled: true, its JAVA_TOOL_OPTIONS
#     from a ConfigMap: the flags reach the running JVM through JDK_JAVA_OPTIONS, read back with
#     jcmd), "sc" (collection: Sidecar, monitors.enabled: false) and "mon" (NodeAgent, monitors
#     left unset, two threads taking turns on one lock): the previous operator gives mon no
#     -XX:+DTraceMonitorProbes (monitors was off by default); a resource of an absent target
#     that names monitors without `enabled` is stored with the previous CRD's enabled: false;
#  4. `helm upgrade` to the current version (CRD first: `helm show crds | kubectl apply
#     --server-side`), while pods are created 4 times a second (e2e/pod_creation_probe.py): no
#     creation fails, none misses the webhook, none waits on it; the Lease moves to a new
#     replica; mon rolls exactly once, with no heal (monitors is on by default now; the new
#     leader writes its template only once no previous-version replica may answer the webhook):
#     its new pod has the flag in JAVA_TOOL_OPTIONS, `monitors` in its collectors annotation, and the agent counts its
#     contended enters; jto and sc keep their pods (UIDs, restart counts); the resource stored
#     with enabled: false keeps it; the resources are Ready;
#  5. `helm upgrade` of the agent image tag alone: the Sidecar workload's pod is the same pod
#     (UID, restarts, its sidecar's image), while the DaemonSet did roll;
#  6. `helm uninstall`: the pre-delete Job removes the webhook registrations and the finalizers;
#     the workloads keep running and scale up, down and roll out at once, without injection;
#  7. the current version installed fresh from oci:// over what uninstall left (CRD, resources):
#     the suite's remaining checks run against it.
# Each step prints its seconds.

# The previous chart version as it was released (`helm package` of charts/jvm-diagnostics at
# commit 4ea4862), kept in the repository so the test needs no git history (CI may clone
# shallow). When Chart.yaml's version changes, replace it with the last release's package.
# shellcheck disable=SC2015 # `test && ok … || bad …`: ok always returns 0
PREVIOUS_CHART="$REPO_ROOT/e2e/fixtures/jvm-diagnostics-0.1.0.tgz"
# The commit that chart was released from: its operator runs the previous version, so the upgrade
# changes the operator's code as a real one does (its image is kept nowhere: built from git
# once, then cached). Replace it together with PREVIOUS_CHART.
PREVIOUS_OPERATOR_COMMIT=4ea48624c8a186ebcd3fd4cd3411af06674e62b7
REG="$REGISTRY_ADDR"
LC_NS=lifecycle PROBE_NS=lifecycle-probe
RELEASE_NS=jvm-diagnostics

lc_secs() { awk -v a="$1" -v b="$(date +%s%N)" 'BEGIN{printf "%.1f", (b-a)/1e9}'; }
lc_ctr() { ctr --address "$CTRD_SOCK" -n k8s.io "$@"; }
# pods of the workloads: name uid restarts (containers' restart counts) image-of-sidecar
lc_pods() {
  kubectl -n $LC_NS get pods -l 'lifecycle in (jto,sc,mon)' -o json | python3 -c '
import json, sys
for p in sorted(json.load(sys.stdin)["items"], key=lambda p: p["metadata"]["name"]):
    if p["metadata"].get("deletionTimestamp"): continue
    st = p.get("status", {}).get("containerStatuses", [])
    sc = [c["image"] for c in p["spec"]["containers"] if c["name"] == "jvmdiag-sidecar"]
    print(p["metadata"]["name"], p["metadata"]["uid"], ",".join("%s=%d" % (c["name"], c["restartCount"]) for c in st), sc[0] if sc else "-")'
}
# The Sidecar pod's counters (threads started, safepoint log lines): a restarted sidecar starts
# them again from zero.
lc_sc_counters() {
  local p; p=$(lc_pods | awk '/^sc-/ {print $1; exit}')
  kubectl get --raw "/api/v1/namespaces/$LC_NS/pods/$p:9464/proxy/metrics" 2>/dev/null | python3 -c '
import re, sys
t = 0.0
for line in sys.stdin:
    m = re.match(r"(jvmdiag_thread_starts_total|jvmdiag_agent_sidecar_log_lines_total)(\{[^}]*\})? ([0-9.e+]+)", line)
    if m: t += float(m.group(3))
print("%d" % t)'
}
# What the release's pods went through (after a failed upgrade).
lc_dump() {
  kubectl -n $RELEASE_NS get pods -o wide 2>&1 | head -n 8
  kubectl -n $RELEASE_NS get events --sort-by=.lastTimestamp 2>&1 | grep -vE ' Normal +(Pulled|Created|Started|Scheduled|SuccessfulCreate|SuccessfulDelete|ScalingReplicaSet|Killing)' | tail -n 8
}
lc_lease_holder() { kubectl -n $RELEASE_NS get lease jd-jvm-diagnostics-operator -o jsonpath='{.spec.holderIdentity} {.spec.leaseTransitions}' 2>/dev/null; }
lc_ready() {  # RESOURCE: its Ready condition status
  kubectl -n $LC_NS get jvmdiag "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null
}
# lc_deployment NAME COMMAND [POD_SPEC_LINES [APP_CONTAINER_LINES]]: a Deployment of one pod
# (label lifecycle=NAME) whose container "app" runs COMMAND on jvmdiag/jdk25-base:dev
lc_deployment() {
  cat <<EOF
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: $1, namespace: $LC_NS}
spec:
  replicas: 1
  selector: {matchLabels: {lifecycle: $1}}
  template:
    metadata: {labels: {lifecycle: $1}}
    spec:
      terminationGracePeriodSeconds: 2
${3:+$3
}      containers:
      - name: app
        image: jvmdiag/jdk25-base:dev
        imagePullPolicy: Never
        command: $2
${4:+$4
}        resources: {requests: {cpu: 10m, memory: 64Mi}, limits: {memory: 256Mi}}
EOF
}
# lc_resource NAMESPACE NAME TARGET [SPEC_LINES]: a JvmDiagnostics of Deployment TARGET
lc_resource() {
  cat <<EOF
---
apiVersion: jvm.diagnostics.dev/v1alpha1
kind: JvmDiagnostics
metadata: {name: $2, namespace: $1}
spec:
${4:+$4
}  targetRef: {kind: Deployment, name: $3}
EOF
}
lc_revision() { kubectl -n $LC_NS get deploy "$1" -o jsonpath='{.metadata.annotations.deployment\.kubernetes\.io/revision}' 2>/dev/null; }
# POD: what the webhook gave it: app's JAVA_TOOL_OPTIONS|collectors annotation|limits annotation ("-": none)
lc_injection() {
  kubectl -n $LC_NS get pod "$1" -o json 2>/dev/null | python3 -c '
import json, sys
p = json.load(sys.stdin); a = p["metadata"].get("annotations") or {}
app = [c for c in p["spec"]["containers"] if c["name"] == "app"][0]
jto = [e.get("value", "") for e in app.get("env") or [] if e["name"] == "JAVA_TOOL_OPTIONS"]
print(jto[0] if jto else "-", a.get("jvm.diagnostics.dev/collectors", "-"), a.get("jvm.diagnostics.dev/limits", "-"), sep="|")'
}
lc_probe_start() {  # OUTFILE
  rm -f "$WORK/probe.stop"
  python3 "$REPO_ROOT/e2e/pod_creation_probe.py" --kubeconfig "$KUBECONFIG" --namespace $PROBE_NS --resource probe \
    --stop-file "$WORK/probe.stop" --interval 0.25 >"$1" 2>"$1.err" &
  PROBE_PID=$!
}
lc_probe_stop() { touch "$WORK/probe.stop"; wait "$PROBE_PID"; }
# lc_probe_check WHAT FILE [MISSES]: no failed or delayed pod creation, and at most MISSES
# (default 0) pods admitted without the injection
lc_probe_check() {
  local what="$1" f="$2" misses="${3:-0}" r
  r=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
bad = d["failed"] or d["not_injected"] > int(sys.argv[2]) or d["max_ms"] >= 2000 or d["created"] < 8
print(("BAD " if bad else "OK ") + "%(created)d pods created in %(seconds)s s: %(failed)d failed, %(not_injected)d without the injection, p50 %(p50_ms)s ms, p99 %(p99_ms)s ms, max %(max_ms)s ms" % d
      + ("; " + " | ".join(d["errors"]) if d["errors"] else ""))' "$f" "$misses" 2>&1) || r="BAD probe output unreadable: $(head -c 300 "$f" "$f.err")"
  case "$r" in OK*) ok "$what: ${r#OK }" ;; *) bad "$what" "${r#BAD }" ;; esac
}

lifecycle() {
  local t0 out old_ver new_ver values
  echo "--- chart lifecycle: registry $REG, previous chart $(basename "$PREVIOUS_CHART")"
  # --- 1. registry, images, charts --------------------------------------------------------
  if curl -fsS "http://$REG/v2/" >/dev/null 2>&1; then ok "the node's registry answers on $REG (docker-registry $(docker-registry --version 2>/dev/null | awk '{print $3}'))"
  else bad "the node's registry answers on $REG" "not running: is docker-registry installed (make setup)? $(tail -n 3 "$LOGS/registry.log" 2>/dev/null | tr '\n' ' ')"; return; fi
  new_ver=$(sed -nE 's/^version: *"?([^" ]+)"?.*/\1/p' "$CHART/Chart.yaml")
  local app_ver; app_ver=$(sed -nE 's/^appVersion: *"?([^" ]+)"?.*/\1/p' "$CHART/Chart.yaml")
  [ -n "$new_ver" ] && [ "$new_ver" = "$app_ver" ] && ok "Chart.yaml: version = appVersion = $new_ver (the images' tag)" \
    || bad "Chart.yaml: version = appVersion" "version '$new_ver', appVersion '$app_ver': move them together"
  old_ver=$("$HELM" show chart "$PREVIOUS_CHART" 2>/dev/null | sed -nE 's/^version: *"?([^" ]+)"?.*/\1/p')
  [ -n "$old_ver" ] || { bad "previous chart readable" "helm show chart $PREVIOUS_CHART failed"; return; }
  [ "$old_ver" != "$new_ver" ] || { bad "previous chart is an older version" "both are $new_ver: keep the last release's package as PREVIOUS_CHART"; return; }
  t0=$(date +%s%N)
  local prev_op="${PREVIOUS_OPERATOR_COMMIT:0:12}"
  if IMAGES_NO_IMPORT=1 "$REPO_ROOT/hack/images/build.sh" "operator@$PREVIOUS_OPERATOR_COMMIT" >"$WORK/prev-operator.log" 2>&1; then
    ok "the $old_ver operator: jvmdiag/operator:$prev_op built from its release commit ($(lc_secs "$t0") s; cached after the first build)"
  else bad "the $old_ver operator built from commit $prev_op" "$(tail -n 3 "$WORK/prev-operator.log" | tr '\n' ' ')"; return; fi
  t0=$(date +%s%N)
  local pushed=1 digests="" from
  for tag in "$old_ver" "$new_ver"; do
    from=dev; [ "$tag" = "$old_ver" ] && from=$prev_op
    out=$(IMAGES=agent "$REPO_ROOT/hack/images/push.sh" "$REG" "$tag" 2>>"$WORK/push.err") || { pushed=0; break; }
    digests+="$out"$'\n'
    out=$(FROM_TAG=$from IMAGES=operator "$REPO_ROOT/hack/images/push.sh" "$REG" "$tag" 2>>"$WORK/push.err") || { pushed=0; break; }
    digests+="$out"$'\n'
  done
  [ "$pushed" = 1 ] && out=$(IMAGES=agent "$REPO_ROOT/hack/images/push.sh" "$REG" "$new_ver-agentfix" 2>>"$WORK/push.err") || pushed=0
  # Layers are compressed on the way: the image config (its ID, diff_ids) must be the archive's.
  cfg_of_archive() { tar -xOf "$JVMDIAG_CACHE/images/jvmdiag_$1_${2:-dev}.tar" manifest.json | python3 -c 'import json,sys; print("sha256:" + json.load(sys.stdin)[0]["Config"].split("/")[-1])'; }
  cfg_in_registry() { skopeo inspect --tls-verify=false --raw "docker://$REG/jvmdiag/$1" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["config"]["digest"])' 2>/dev/null; }
  local same=1 img tag2 checked=""
  for img in agent operator; do
    for tag2 in "$old_ver" "$new_ver"; do
      from=dev; [ "$img:$tag2" = "operator:$old_ver" ] && from=$prev_op
      [ "$(cfg_in_registry "$img:$tag2")" = "$(cfg_of_archive "$img" "$from")" ] || same=0; checked+=" $img:$tag2"
    done
  done
  [ "$(cfg_in_registry "agent:$new_ver-agentfix")" = "$(cfg_of_archive agent)" ] || same=0
  # two operator builds, not one image under two tags
  [ "$(cfg_of_archive operator "$prev_op")" != "$(cfg_of_archive operator)" ] || same=0
  if [ "$pushed" = 1 ] && [ "$same" = 1 ]; then
    ok "make images-push: agent as :$old_ver, :$new_ver and :$new_ver-agentfix, operator :$old_ver (commit $prev_op) and :$new_ver (this tree), image configs = the archives' ($(lc_secs "$t0") s)"
  else bad "make images-push" "$(tail -n 3 "$WORK/push.err" | tr '\n' ' ') pushed: $(tr '\n' ' ' <<<"$digests") configs:$checked"; return; fi
  t0=$(date +%s%N)
  if "$HELM" push "$PREVIOUS_CHART" "oci://$REG/charts" --plain-http >"$WORK/chart-push.log" 2>&1 \
     && "$REPO_ROOT/hack/chart/push.sh" "$REG" >>"$WORK/chart-push.log" 2>&1 \
     && [ "$("$HELM" show chart "oci://$REG/charts/jvm-diagnostics" --version "$old_ver" --plain-http 2>/dev/null | sed -nE 's/^version: *//p')" = "$old_ver" ] \
     && [ "$("$HELM" show chart "oci://$REG/charts/jvm-diagnostics" --version "$new_ver" --plain-http 2>/dev/null | sed -nE 's/^version: *//p')" = "$new_ver" ]; then
    ok "make chart-push: oci://$REG/charts/jvm-diagnostics $old_ver and $new_ver pushed and served ($(lc_secs "$t0") s)"
  else bad "helm push of both charts" "$(tail -n 4 "$WORK/chart-push.log" | tr '\n' ' ')"; return; fi

  # --- 2. the previous version from oci://, images pulled from the registry ----------------
  for tag in "$old_ver" "$new_ver" "$new_ver-agentfix"; do
    lc_ctr images rm "$REG/jvmdiag/agent:$tag" "$REG/jvmdiag/operator:$tag" >/dev/null 2>&1
  done
  # The previous version's CRD, as a cluster that ran it has it (Helm installs crds/ only where
  # none exists): with it, monitors named without enabled is stored with enabled: false.
  if "$HELM" show crds "$PREVIOUS_CHART" 2>"$WORK/crds-old.err" \
       | kubectl apply --server-side --force-conflicts --field-manager=jvm-diagnostics-crds -f - >"$WORK/crds-old.log" 2>&1 \
     && [ "$(kubectl get crd jvmdiagnostics.jvm.diagnostics.dev -o jsonpath='{.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.collectors.properties.monitors.properties.enabled.default}')" = false ]; then
    ok "the $old_ver CRD in place (collectors.monitors.enabled defaults to false)"
  else bad "the $old_ver CRD in place" "$(cat "$WORK/crds-old.err" "$WORK/crds-old.log" | tail -n 3 | tr '\n' ' ')"; fi
  values="$WORK/registry-values.yaml"
  cat >"$values" <<EOF
global: {imageRegistry: "$REG"}
operator:
  resources: {requests: {cpu: 50m, memory: 192Mi}, limits: {memory: 512Mi}}
  # 200 synthetic admissions instead of 5,000 before the webhook listens: on a busy 2-core host
  # the default takes 30 s of each of the 8 operator starts here. Less warm-up makes the first
  # admissions slower, not faster, so the probe's bound only gets harder to meet.
  extraArgs: [--webhook-warmup=200]
EOF
  # shellcheck disable=SC2154 # extra: set by hack/suites/60-chart.sh, which sources this file
  [ "${#extra[@]}" -eq 0 ] || echo "(agent without --node-name: ${extra[*]})"
  t0=$(date +%s%N)
  if "$HELM" install jd "oci://$REG/charts/jvm-diagnostics" --version "$old_ver" --plain-http -n $RELEASE_NS -f "$values" "${extra[@]}" \
       --wait --timeout 240s >"$WORK/lc-install.log" 2>&1; then
    local pulled
    pulled=$(kubectl -n $RELEASE_NS get events -o json | python3 -c '
import json, sys
print(" ".join(sorted({e["message"].split("\"")[1] for e in json.load(sys.stdin)["items"] if e.get("reason") == "Pulled" and "Successfully pulled" in e["message"]})))')
    if grep -q "$REG/jvmdiag/agent:$old_ver" <<<"$pulled" && grep -q "$REG/jvmdiag/operator:$old_ver" <<<"$pulled" \
       && grep -q "GET /v2/jvmdiag/operator/manifests/$old_ver " "$LOGS/registry.log"; then
      ok "helm install oci://…/jvm-diagnostics --version $old_ver: Ready, the kubelet pulled $pulled from the registry ($(lc_secs "$t0") s)"
    else bad "images pulled from the registry" "pulled: '$pulled'"; fi
  else
    bad "helm install of $old_ver from oci://" "$(tail -n 3 "$WORK/lc-install.log" | tr '\n' ' ')"
    kubectl -n $RELEASE_NS get pods 2>&1 | head; return
  fi

  # --- 3. workloads: JAVA_TOOL_OPTIONS from a ConfigMap (NodeAgent), a Sidecar one, and one
  # whose resource leaves monitors unset (a lock two threads take turns on) -------------------
  t0=$(date +%s%N)
  kubectl create namespace $LC_NS >/dev/null; kubectl create namespace $PROBE_NS >/dev/null
  {
    cat <<EOF
apiVersion: v1
kind: ConfigMap
metadata: {name: jvm-options, namespace: $LC_NS}
data: {JAVA_TOOL_OPTIONS: "-XX:+UseSerialGC -Dlifecycle.from=configmap"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: contend, namespace: $LC_NS}
data:
  Contend.java: |
    // Two threads taking turns on one lock, each holding it 50 ms: the other blocks on it (a
    // contended monitor enter of class Contend) about 20 times a second, at next to no CPU.
    public class Contend {
      public static void main(String[] args) {
        Object lock = new Contend();
        for (int i = 0; i < 2; i++) {
          new Thread(() -> {
            while (true) {
              synchronized (lock) { pause(50); }
              pause(1);
            }
          }, "contender-" + i).start();
        }
      }
      static void pause(long ms) {
        try { Thread.sleep(ms); } catch (InterruptedException e) { Thread.currentThread().interrupt(); }
      }
    }
EOF
    local httpd='[java, -Xmx48m, -m, jdk.httpserver, -b, 0.0.0.0, -p, "8000", -d, /tmp]'
    lc_deployment jto "$httpd" "" '        env:
        - name: JAVA_TOOL_OPTIONS
          valueFrom: {configMapKeyRef: {name: jvm-options, key: JAVA_TOOL_OPTIONS}}'
    lc_deployment sc "$httpd" "      # a user the image's /etc/passwd names: the JVM writes no hsperfdata for an unknown one
      securityContext: {runAsUser: 65534, runAsGroup: 65534}"
    lc_deployment mon '[java, -Xmx64m, /src/Contend.java]' '      volumes: [{name: src, configMap: {name: contend}}]' \
      '        volumeMounts: [{name: src, mountPath: /src}]'
    lc_resource "$LC_NS" jto jto '  collectors: {monitors: {enabled: true}}
  jvmOptions: {extra: ["-XX:ReservedCodeCacheSize=100m"]}'
    lc_resource "$LC_NS" sc sc '  collection: Sidecar
  collectors: {monitors: {enabled: false}}'
    lc_resource "$LC_NS" mon mon   # monitors left unset
    # monitors named without enabled: the previous CRD's default (false) is stored with it
    lc_resource "$LC_NS" limit-only absent '  collectors: {monitors: {maxClasses: 5}}'
    lc_resource "$PROBE_NS" probe absent
  } >"$WORK/lc-workloads.yaml"
  # The previous chart called its operator Ready before the webhook listened (so did `helm
  # install --wait`): JvmDiagnostics, checked by the fail-closed validating webhook, are refused
  # until it does. Retried here; the current chart's install is checked to need no retry.
  local tries=0
  until kubectl apply -f "$WORK/lc-workloads.yaml" >"$WORK/lc-apply.log" 2>&1; do
    tries=$((tries + 1)); [ "$tries" -lt 60 ] || break; sleep 1
  done
  echo "(workloads applied after $tries refused attempts: the $old_ver operator was Ready before its webhook)"
  local injected=0
  for _ in $(seq 1 120); do
    if [ "$(lc_ready jto)" = True ] && [ "$(lc_ready sc)" = True ] && [ "$(lc_ready mon)" = True ] \
       && [ "$(kubectl -n $LC_NS get pods -l 'lifecycle in (jto,sc,mon)' -o jsonpath='{range .items[*]}{.metadata.annotations.jvm\.diagnostics\.dev/injected}{"\n"}{end}' | grep -c .)" = 3 ] \
       && [ "$(lc_pods | wc -l)" = 3 ]; then injected=1; break; fi
    sleep 1
  done
  if [ "$injected" = 1 ]; then ok "three injected Deployments (NodeAgent with JAVA_TOOL_OPTIONS from a ConfigMap, Sidecar, NodeAgent with monitors unset) Ready ($(lc_secs "$t0") s)"
  else
    bad "three injected Deployments Ready" "$(cat "$WORK/lc-apply.log" | tr '\n' ' ') $(kubectl -n $LC_NS get jvmdiag,pods 2>&1 | tr '\n' ' ')"; return
  fi
  # The previous operator: monitors off by default, so mon's JVM runs without the flag.
  local mpod minj mrev
  mpod=$(lc_pods | awk '/^mon-/ {print $1; exit}'); minj=$(lc_injection "$mpod"); mrev=$(lc_revision mon)
  if [ "${minj%%|*}" = - ] && [[ "$minj" != *monitors* ]] && [ -n "$mrev" ]; then
    ok "$old_ver: mon (monitors unset) has no -XX:+DTraceMonitorProbes and no monitors collector (JAVA_TOOL_OPTIONS|collectors|limits: $minj; revision $mrev)"
  else bad "$old_ver: mon (monitors unset) runs without the monitors flag" "pod $mpod: $minj, revision '$mrev'"; fi
  local jpod flags cmdline msg
  # The live pod (lc_pods skips one still terminating from before the rollout that injected it).
  jpod=$(lc_pods | awk '/^jto-/ {print $1; exit}')
  flags=$(kubectl -n $LC_NS exec "$jpod" -c app -- jcmd 1 VM.flags 2>&1)
  cmdline=$(kubectl -n $LC_NS exec "$jpod" -c app -- jcmd 1 VM.command_line 2>&1)
  msg=$(kubectl -n $LC_NS get jvmdiag jto -o jsonpath='{.status.conditions[?(@.type=="Injected")].message}')
  if grep -q -- '-XX:+UseSerialGC' <<<"$flags" && grep -q -- '-XX:+DTraceMonitorProbes' <<<"$flags" \
     && grep -q -- '-XX:ReservedCodeCacheSize=104857600' <<<"$flags" \
     && grep -qE 'jvm_args:.*-XX:\+DTraceMonitorProbes' <<<"$cmdline" && grep -q JDK_JAVA_OPTIONS <<<"$msg"; then
    ok "JAVA_TOOL_OPTIONS from a ConfigMap: the running JVM has its -XX:+UseSerialGC and the injected -XX:+DTraceMonitorProbes, -XX:ReservedCodeCacheSize=100m (jcmd VM.flags; VM.command_line: in jvm_args, from JDK_JAVA_OPTIONS); the status says so"
  else
    bad "JAVA_TOOL_OPTIONS from a ConfigMap gets the flags" "VM.flags: $(tr '\n' ' ' <<<"$flags" | head -c 400) | command_line: $(grep jvm_args <<<"$cmdline") | Injected: $msg"
  fi

  # --- 4. upgrade to the current version ---------------------------------------------------
  local before lease_before after lease_after counters_before counters_after scpod
  # Safepoints the sidecar reads from the JVM's log, beyond what a freshly started JVM has: a
  # restarted sidecar (or JVM) would count fewer afterwards.
  scpod=$(lc_pods | awk '/^sc-/ {print $1; exit}')
  for _ in 1 2 3 4 5; do kubectl -n $LC_NS exec "$scpod" -c app -- jcmd 1 GC.run >/dev/null 2>&1; done
  sleep 2
  counters_before=$(lc_sc_counters)
  before=$(lc_pods); lease_before=$(lc_lease_holder)
  lc_probe_start "$WORK/probe-upgrade.json"
  sleep 2   # creations before the upgrade too: the probe itself must work
  t0=$(date +%s%N)
  if "$HELM" show crds "oci://$REG/charts/jvm-diagnostics" --version "$new_ver" --plain-http >"$WORK/crds-new.yaml" 2>"$WORK/crds-new.err" \
     && kubectl apply --server-side --force-conflicts --field-manager=jvm-diagnostics-crds -f "$WORK/crds-new.yaml" >"$WORK/crds-upgrade.log" 2>&1 \
     && python3 - "$WORK/crds-new.yaml" <<'PY' >"$WORK/crds-cmp.log" 2>&1
import json, subprocess, sys, yaml
want = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
for d in want:
    have = json.loads(subprocess.check_output(["kubectl", "get", "crd", d["metadata"]["name"], "-o", "json"]))
    # as the API server stores it: numbers are numbers (500 = 500.0), a zero priority is left out
    def norm(x):
        if isinstance(x, dict): return {k: norm(v) for k, v in x.items() if not (k == "priority" and v == 0)}
        if isinstance(x, list): return [norm(v) for v in x]
        if isinstance(x, (int, float)) and not isinstance(x, bool): return float(x)
        return x
    strip = lambda vs: norm([{k: v for k, v in x.items() if k in ("name", "schema", "served", "storage", "subresources", "additionalPrinterColumns")} for x in vs])
    if strip(have["spec"]["versions"]) != strip(d["spec"]["versions"]):
        sys.exit("CRD %s in the cluster differs from the chart's" % d["metadata"]["name"])
PY
  then ok "CRDs upgraded first: helm show crds --version $new_ver | kubectl apply --server-side; the cluster's CRD is the new chart's ($(lc_secs "$t0") s)"
  else bad "CRDs upgraded with helm show crds | kubectl apply --server-side" "$(cat "$WORK/crds-new.err" "$WORK/crds-upgrade.log" "$WORK/crds-cmp.log" | tail -n 3 | tr '\n' ' ')"; fi
  t0=$(date +%s%N)
  if "$HELM" upgrade jd "oci://$REG/charts/jvm-diagnostics" --version "$new_ver" --plain-http -n $RELEASE_NS -f "$values" "${extra[@]}" \
       --wait --timeout 240s >"$WORK/lc-upgrade.log" 2>&1; then
    ok "helm upgrade $old_ver -> $new_ver from oci:// --wait ($(lc_secs "$t0") s)"
  else bad "helm upgrade $old_ver -> $new_ver" "$(tail -n 3 "$WORK/lc-upgrade.log" | tr '\n' ' ')"; lc_dump; fi
  sleep 3   # creations after the last replica changed too
  lc_probe_stop
  # The previous version's operator stops its webhook at SIGTERM (the drain after SIGTERM came
  # later): an admission sent to one of its two stopping replicas in the moment before it leaves
  # the Service's endpoints is cut off, and failurePolicy Ignore admits that pod uninjected. At
  # 4 pods/s, about a second each, that is at most a few pods; never one refused or delayed.
  lc_probe_check "webhook during the upgrade (pods created 4/s from before it to after it; the previous version's stopping replicas may cut off up to 4)" "$WORK/probe-upgrade.json" 4
  # --wait returns once the new replicas are Ready; the old leader may still be draining its
  # webhook (--webhook-drain-seconds) before it releases the Lease.
  local ops
  for _ in $(seq 1 60); do
    lease_after=$(lc_lease_holder)
    ops=$(kubectl -n $RELEASE_NS get pods -l app.kubernetes.io/component=operator -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.metadata.deletionTimestamp}{"\n"}{end}' | awk 'NF == 1 {print $1}' | tr '\n' ' ')
    [ -n "$lease_after" ] && grep -qw "${lease_after%%_*}" <<<"$ops" && break
    sleep 1
  done
  if [ -n "$lease_after" ] && [ "${lease_after%% *}" != "${lease_before%% *}" ] && grep -qw "${lease_after%%_*}" <<<"$ops" \
     && [ "${lease_after##* }" -gt "${lease_before##* }" ]; then
    ok "leadership handed over: Lease from ${lease_before%%_*} to ${lease_after%%_*} (a replica of $new_ver), transitions ${lease_before##* } -> ${lease_after##* }"
  else bad "leadership handed over to a new replica" "before '$lease_before', after '$lease_after', operator pods: $ops"; fi
  # What the upgrade rolls: mon, whose resource leaves monitors unset (on by default now: its
  # pods get the flag), exactly once; jto and sc set it and keep their pods. The new leader
  # writes mon's template only once no $old_ver replica is ready or stopping: one still answering
  # the webhook would admit mon's new pod with the previous injection (and a heal could meet it again).
  local mnew="" mrev2="" healed="" waited=""
  t0=$(date +%s%N)
  for _ in $(seq 1 150); do
    mnew=$(lc_pods | awk '/^mon-/ {print $1}')
    if [ "$(wc -w <<<"$mnew")" = 1 ] && ! grep -q "^$mnew " <<<"$before" && [[ "$(lc_injection "$mnew")" == *-XX:+DTraceMonitorProbes* ]] \
       && [ "$(kubectl -n $LC_NS get deploy mon -o jsonpath='{.status.updatedReplicas}/{.status.readyReplicas}/{.status.replicas}')" = 1/1/1 ]; then break; fi
    sleep 1
  done
  minj=$(lc_injection "$mnew"); mrev2=$(lc_revision mon)
  healed=$(kubectl -n $LC_NS get events --field-selector reason=HealRollout,involvedObject.name=mon -o jsonpath='{.items[*].message}' 2>/dev/null)
  waited=$(kubectl -n $RELEASE_NS logs "${lease_after%%_*}" 2>/dev/null | grep -m1 -o "pod templates wait for the operator's own rollout: replica(s) [^ ]*" || true)
  local leader_saw="found no $old_ver replica serving at its first pass"
  [ -z "$waited" ] || leader_saw="logged: \"$waited\""
  if ! grep -q "^$mnew " <<<"$before" && [[ "${minj%%|*}" == *-XX:+DTraceMonitorProbes* ]] \
     && [[ "$(cut -d'|' -f2 <<<"$minj")" == *monitors* ]] && [[ "$(cut -d'|' -f3 <<<"$minj")" == *maxClasses=20* ]] \
     && [ "$mrev2" = $((mrev + 1)) ] && [ -z "$healed" ]; then
    ok "mon (monitors unset) rolled exactly once: revision $mrev -> $mrev2, no heal, its new pod has JAVA_TOOL_OPTIONS|collectors|limits: $minj (settled $(lc_secs "$t0") s after helm upgrade returned; the new leader $leader_saw)"
  else bad "mon (monitors unset) rolled exactly once to pods with -XX:+DTraceMonitorProbes" "revision $mrev -> $mrev2, pod '$mnew': $minj; heal: '$healed'; leader's wait: '$waited'; $(kubectl -n $LC_NS get jvmdiag mon -o jsonpath='{.status.conditions[?(@.type=="Injected")].message}')"; fi
  if [ "${#extra[@]}" -eq 0 ] && [ -n "$mnew" ]; then
    # the agent attached the monitors collector to mon's new JVM: its contended enters of class Contend
    local apod mseen=""
    for _ in $(seq 1 60); do
      apod=$(kubectl -n $RELEASE_NS get pods -l app.kubernetes.io/component=agent -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.deletionTimestamp}{"\n"}{end}' | awk 'NF == 1 {print $1; exit}')
      mseen=$(kubectl get --raw "/api/v1/namespaces/$RELEASE_NS/pods/$apod:9464/proxy/metrics" 2>/dev/null \
        | grep '^jvmdiag_monitor_contended_total{' | grep -F "pod=\"$mnew\"" | grep -F 'monitor_class="Contend"' | awk '{s += $NF} END {if (s > 0) print s}')
      [ -n "$mseen" ] && break; sleep 1
    done
    [ -n "$mseen" ] && ok "the agent counts mon's contended enters since the roll (jvmdiag_monitor_contended_total{pod=\"$mnew\",monitor_class=\"Contend\"} = $mseen)" \
      || bad "the agent counts mon's contended enters after the roll" "no jvmdiag_monitor_contended_total for pod $mnew from agent $apod"
  fi
  after=$(lc_pods)
  if [ "$(grep -v '^mon-' <<<"$before")" = "$(grep -v '^mon-' <<<"$after")" ] && [ "$(grep -c '^jto-\|^sc-' <<<"$after")" = 2 ]; then
    ok "jto (monitors.enabled: true) and sc (monitors.enabled: false) did not restart across the upgrade (same pods, UIDs and restart counts)"
  else bad "jto and sc (monitors set either way) did not restart across the upgrade" "before: $(tr '\n' ';' <<<"$before") after: $(tr '\n' ';' <<<"$after")"; fi
  local stored
  stored=$(kubectl -n $LC_NS get jvmdiag limit-only -o jsonpath='{.spec.collectors.monitors}')
  [[ "$stored" == *'"enabled":false'* ]] \
    && ok "a resource written under $old_ver as monitors: {maxClasses: 5} keeps the enabled: false that CRD stored with it ($stored)" \
    || bad "a resource written under $old_ver as monitors: {maxClasses: 5} stays off" "spec.collectors.monitors: $stored"
  local rdy=0
  for _ in $(seq 1 30); do [ "$(lc_ready jto)" = True ] && [ "$(lc_ready sc)" = True ] && [ "$(lc_ready mon)" = True ] && { rdy=1; break; }; sleep 1; done
  [ "$rdy" = 1 ] && ok "the three JvmDiagnostics Ready after the upgrade" \
    || bad "the three JvmDiagnostics Ready after the upgrade" "$(kubectl -n $LC_NS get jvmdiag -o jsonpath='{range .items[*]}{.metadata.name}: {.status.conditions}{"\n"}{end}')"

  # --- 5. the agent image alone ------------------------------------------------------------
  local apod_before apod_after scbefore scafter
  apod_before=$(kubectl -n $RELEASE_NS get pods -l app.kubernetes.io/component=agent -o jsonpath='{.items[0].metadata.uid}')
  before=$(lc_pods)
  lc_probe_start "$WORK/probe-agent.json"
  t0=$(date +%s%N)
  if "$HELM" upgrade jd "oci://$REG/charts/jvm-diagnostics" --version "$new_ver" --plain-http -n $RELEASE_NS -f "$values" "${extra[@]}" \
       --set agent.image.tag="$new_ver-agentfix" --wait --timeout 240s >"$WORK/lc-upgrade2.log" 2>&1; then
    ok "helm upgrade --set agent.image.tag=$new_ver-agentfix --wait ($(lc_secs "$t0") s)"
  else bad "helm upgrade of the agent image" "$(tail -n 3 "$WORK/lc-upgrade2.log" | tr '\n' ' ')"; lc_dump; fi
  sleep 3
  lc_probe_stop
  lc_probe_check "webhook during the agent-image upgrade" "$WORK/probe-agent.json"
  after=$(lc_pods)
  apod_after=$(kubectl -n $RELEASE_NS get pods -l app.kubernetes.io/component=agent -o jsonpath='{.items[0].metadata.uid} {.items[0].spec.containers[0].image}')
  scbefore=$(grep '^sc-' <<<"$before"); scafter=$(grep '^sc-' <<<"$after")
  if [ -n "$scbefore" ] && [ "$scbefore" = "$scafter" ] && [ "$before" = "$after" ] && [ "$(lc_revision mon)" = "$mrev2" ] && [ "${apod_after%% *}" != "$apod_before" ] \
     && grep -q ":$new_ver-agentfix\$" <<<"$apod_after" && grep -q -- "--agent-image=$REG/jvmdiag/agent:$new_ver-agentfix" \
        <(kubectl -n $RELEASE_NS get deploy jd-jvm-diagnostics-operator -o jsonpath='{.spec.template.spec.containers[0].args}'); then
    ok "agent image alone: the DaemonSet rolled to :$new_ver-agentfix, the operator runs with it, the Sidecar pod did not restart ($(awk '{print $1, $3, $4}' <<<"$scafter")), nor did any other (mon still at revision $mrev2)"
  else bad "agent image alone restarts no Sidecar workload" "sidecar pod before: $scbefore | after: $scafter | all before: $(tr '\n' ';' <<<"$before") after: $(tr '\n' ';' <<<"$after") | mon revision $(lc_revision mon) | agent pod before $apod_before after $apod_after"; fi
  counters_after=$(lc_sc_counters)
  if [ "${counters_before:-0}" -gt 0 ] && [ "${counters_after:-0}" -ge "$counters_before" ]; then
    ok "the Sidecar's counters continued through both upgrades ($counters_before -> $counters_after: no reset)"
  else bad "the Sidecar's counters continued through both upgrades" "before '$counters_before', after '$counters_after'"; fi

  # --- 6. uninstall --------------------------------------------------------------------------
  before=$(lc_pods)
  lc_probe_start "$WORK/probe-uninstall.json"
  t0=$(date +%s%N)
  if "$HELM" uninstall jd -n $RELEASE_NS --wait --timeout 180s >"$WORK/lc-uninstall.log" 2>&1; then
    ok "helm uninstall --wait, the pre-delete Job included ($(lc_secs "$t0") s)"
  else bad "helm uninstall" "$(tail -n 3 "$WORK/lc-uninstall.log" | tr '\n' ' ')"; fi
  lc_probe_stop
  # The probe's pods now come without injection (no webhook): only failures and delays count.
  python3 -c '
import json, sys
d = json.load(open(sys.argv[1])); injected = d["created"] - d["not_injected"]
d["not_injected"] = 0; d["errors"] = [e for e in d["errors"] if "no injected stamp" not in e]
json.dump(d, open(sys.argv[1], "w")); print("(during the uninstall %d probe pods were injected, then none: the webhook was gone)" % injected)' "$WORK/probe-uninstall.json" 2>/dev/null
  lc_probe_check "pod creation during the uninstall (none refused or waiting on the webhook)" "$WORK/probe-uninstall.json"
  local left fins
  left=$(kubectl get mutatingwebhookconfiguration,validatingwebhookconfiguration -o name 2>/dev/null | grep -c 'jd-jvm-diagnostics' || true)
  fins=$(kubectl get jvmdiag -A -o jsonpath='{range .items[*]}{.metadata.name}={.metadata.finalizers}{"\n"}{end}' 2>&1)
  if [ "$left" = 0 ] && [ "$(grep -c . <<<"$fins")" = 5 ] && ! grep -q 'finalizer' <<<"$fins" \
     && [ -z "$(kubectl get jobs,serviceaccounts,clusterroles -A -o name 2>/dev/null | grep uninstall)" ]; then
    ok "after uninstall: no webhook registration, the 5 JvmDiagnostics and the CRD remain without finalizers, the Job and its RBAC gone"
  else bad "after uninstall: webhooks gone, finalizers cleared" "webhook configs left: $left; resources: $(tr '\n' ' ' <<<"$fins")"; fi
  after=$(lc_pods)
  [ "$before" = "$after" ] && ok "uninstall left the workloads running (same pods)" \
    || bad "uninstall left the workloads running" "before: $(tr '\n' ';' <<<"$before") after: $(tr '\n' ';' <<<"$after")"
  t0=$(date +%s%N)
  local up_ok=0 t_up newjto
  kubectl -n $LC_NS scale deploy/jto --replicas=2 >/dev/null && kubectl -n $LC_NS rollout status deploy/jto --timeout=90s >/dev/null 2>&1 && up_ok=1
  t_up=$(lc_secs "$t0")
  # The new pod came without the webhook: the ConfigMap's options still reach its JVM, the
  # injected flags do not (the same jcmd check as above, now expected to find them absent).
  newjto=$(comm -13 <(grep '^jto-' <<<"$before" | awk '{print $1}' | sort) <(lc_pods | grep '^jto-' | awk '{print $1}' | sort) | head -n1)
  flags=$([ -n "$newjto" ] && kubectl -n $LC_NS exec "$newjto" -c app -- jcmd 1 VM.flags 2>&1)
  if [ -n "$newjto" ] && grep -q -- '-XX:+UseSerialGC' <<<"$flags" && ! grep -q -- 'DTraceMonitorProbes' <<<"$flags" \
     && ! grep -q -- 'ReservedCodeCacheSize=104857600' <<<"$flags"; then
    ok "a pod created after uninstall: its JVM has the ConfigMap's -XX:+UseSerialGC and none of the injected flags (jcmd VM.flags)"
  else bad "a pod created after uninstall has no injected flags" "pod '$newjto': $(tr '\n' ' ' <<<"$flags" | head -c 300)"; fi
  t0=$(date +%s%N)
  if [ "$up_ok" = 1 ] && kubectl -n $LC_NS scale deploy/jto --replicas=1 >/dev/null && kubectl -n $LC_NS rollout status deploy/jto --timeout=60s >/dev/null 2>&1; then
    ok "right after uninstall the NodeAgent Deployment scales 1 -> 2 ($t_up s) -> 1 ($(lc_secs "$t0") s)"
  else bad "Deployment scales up and down after uninstall" "$(kubectl -n $LC_NS get pods 2>&1 | tr '\n' ' ')"; fi
  t0=$(date +%s%N)
  if kubectl -n $LC_NS rollout restart deploy/sc >/dev/null && kubectl -n $LC_NS rollout status deploy/sc --timeout=90s >/dev/null 2>&1; then
    local newpod
    newpod=$(kubectl -n $LC_NS get pods -l lifecycle=sc -o json | python3 -c '
import json, sys
ps = [p for p in json.load(sys.stdin)["items"] if not p["metadata"].get("deletionTimestamp")]
print(" ".join("%s:%s:%s" % (p["metadata"]["name"], "+".join(c["name"] for c in p["spec"]["containers"]), "injected" if "jvm.diagnostics.dev/injected" in (p["metadata"].get("annotations") or {}) else "plain") for p in ps))')
    if [[ "$newpod" != *jvmdiag-sidecar* ]] && [[ "$newpod" != *injected* ]]; then
      ok "the Sidecar Deployment rolls out after uninstall in $(lc_secs "$t0") s, its new pod without injection ($newpod)"
    else bad "after uninstall, a rollout has no injection" "$newpod"; fi
  else bad "the Sidecar Deployment rolls out after uninstall" "$(kubectl -n $LC_NS get pods 2>&1 | tr '\n' ' ')"; fi
  t0=$(date +%s%N)
  if timeout 30 kubectl -n $PROBE_NS delete jvmdiag probe >/dev/null 2>&1; then ok "a JvmDiagnostics left behind deletes without an operator ($(lc_secs "$t0") s)"
  else bad "a JvmDiagnostics left behind deletes without an operator" "still there after 30 s"; fi
  kubectl delete namespace $PROBE_NS --wait=false >/dev/null 2>&1

  # --- 7. the current version, fresh from oci://, over what uninstall left -------------------
  t0=$(date +%s%N)
  if "$HELM" install jd "oci://$REG/charts/jvm-diagnostics" --version "$new_ver" --plain-http -n $RELEASE_NS -f "$values" "${extra[@]}" \
       --wait --timeout 240s >"$WORK/install.log" 2>&1; then
    ok "helm install --version $new_ver from oci:// --wait over the remaining CRD and resources ($(lc_secs "$t0") s)"
    # shellcheck disable=SC2034 # read by hack/suites/60-chart.sh, which sources this file
    LIFECYCLE_INSTALLED=1
    # Ready means the webhook answers: a JvmDiagnostics (checked by the fail-closed validating
    # webhook) is accepted at once, with no retry (the previous version refused it for a while).
    if out=$(kubectl apply --dry-run=server -f - 2>&1 <<EOF
apiVersion: jvm.diagnostics.dev/v1alpha1
kind: JvmDiagnostics
metadata: {name: right-after-install, namespace: $LC_NS}
spec:
  targetRef: {kind: Deployment, name: not-there-yet}
EOF
    ); then ok "right after helm install --wait the webhook answers (a JvmDiagnostics passes the validating webhook at the first try)"
    else bad "right after helm install --wait the webhook answers" "$out"; fi
  else
    bad "helm install --version $new_ver from oci://" "$(tail -n 3 "$WORK/install.log" | tr '\n' ' ')"
  fi
}

# --- the agent's metrics port: held by a pod, behind a token ----------------------------------
# Run by hack/suites/60-chart.sh against the fresh install of step 7, after its own checks and
# before its uninstall. `helm upgrade --reuse-values` turns on agent.metricsAuth (the
# ServiceAccount lifecycle/metrics-reader bound to the reader role through readerSubjects, the
# PodMonitor and its scraper token) and sets agent.maxConnectionsPerPeer=8; then, for 2 minutes, a
# pod keeps 72 connections to the agent's metrics port (more than the agent's 64 in all) open,
# sending nothing, and opens each one the agent closes again a second later, while
#  - every 10 s the agent pod is Ready with no restart (its probes have their own port), and a
#    scrape from the host with the reader's token succeeds (another peer than the pod); a local
#    Prometheus, when installed, scrapes it every 5 s with the same token;
#  - meanwhile: /metrics without a token is 401, with an unbound ServiceAccount's 403, with the
#    reader's and with the chart's scraper token 200 and an exposition promtool accepts; the
#    probe port serves /healthz without a token and nothing else.
# About 3 minutes: the upgrade (the agent pod rolls), the holder's JVM start, the 2 minutes.
EX_HOLD_S=120
# ex_get URL [TOKEN]: the HTTP status of a GET (000: no answer within 5 s); the body in $WORK/ex.body
ex_get() {
  local h=()
  [ -z "${2:-}" ] || h=(-H "Authorization: Bearer $2")
  : >"$WORK/ex.body"
  curl -sS -o "$WORK/ex.body" -w '%{http_code}' --max-time 5 "${h[@]}" "$1" 2>>"$WORK/ex.curl.err" || true
}
# ex_exposition: $WORK/ex.body is the agent's page (its own series, promtool's check when installed)
ex_exposition() {
  grep -q '^jvmdiag_agent_' "$WORK/ex.body" || return 1
  [ ! -x "${PROMTOOL:-}" ] || "$PROMTOOL" check metrics <"$WORK/ex.body" >"$WORK/ex.promtool" 2>&1
}
ex_can() { kubectl auth can-i "$@" 2>/dev/null; }
ex_agent_pod() {
  kubectl -n $RELEASE_NS get pods -l app.kubernetes.io/component=agent \
    -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.deletionTimestamp}{"\n"}{end}' | awk 'NF == 1 {print $1; exit}'
}
# ex_holder IP SECONDS: the ConfigMap and the pod that hold connections to IP:<agent port>
ex_holder() {
  cat <<EOF2
apiVersion: v1
kind: ConfigMap
metadata: {name: conn-holder, namespace: $LC_NS}
data:
  Hold.java: |
    import java.io.IOException;
    import java.io.InputStream;
    import java.net.InetSocketAddress;
    import java.net.Socket;
    import java.net.SocketTimeoutException;
    import java.util.concurrent.atomic.AtomicInteger;
    import java.util.concurrent.atomic.AtomicLong;

    // Keeps N connections to HOST:PORT open for SECONDS and sends nothing on them, as a client
    // that takes a server's connections would; one the server closes is opened again a second
    // later. Every 10 s: connects that succeeded (opened) and failed, connections the server
    // closed within 2 s (closedAtOnce: refused at accept), connections open 2 s or more now
    // (kept) and at most (maxKept).
    public class Hold {
      public static void main(String[] args) throws Exception {
        InetSocketAddress to = new InetSocketAddress(args[0], Integer.parseInt(args[1]));
        int n = Integer.parseInt(args[2]);
        long t0 = System.nanoTime(), end = t0 + Long.parseLong(args[3]) * 1_000_000_000L;
        AtomicLong opened = new AtomicLong(), failed = new AtomicLong(), closedAtOnce = new AtomicLong();
        AtomicInteger kept = new AtomicInteger(), maxKept = new AtomicInteger();
        for (int i = 0; i < n; i++) {
          Thread.ofVirtual().start(() -> {
            byte[] buf = new byte[4096];
            while (System.nanoTime() < end) {
              boolean connected = false, isKept = false;
              try (Socket s = new Socket()) {
                s.connect(to, 3000);
                connected = true;
                opened.incrementAndGet();
                s.setSoTimeout(2000);
                InputStream in = s.getInputStream();
                while (System.nanoTime() < end) {
                  try {
                    if (in.read(buf) < 0) break;
                  } catch (SocketTimeoutException e) {
                    if (!isKept) {
                      isKept = true;
                      maxKept.accumulateAndGet(kept.incrementAndGet(), Math::max);
                    }
                  }
                }
              } catch (IOException e) {
                if (!connected) failed.incrementAndGet();
              } finally {
                if (isKept) kept.decrementAndGet();
                else if (connected) closedAtOnce.incrementAndGet();
              }
              try { Thread.sleep(1000); } catch (InterruptedException e) { return; }
            }
          });
        }
        System.out.printf("holding %d connections to %s for %s s%n", n, to, args[3]);
        while (System.nanoTime() < end) {
          Thread.sleep(10_000);
          System.out.printf("hold t=%ds opened=%d failed=%d closedAtOnce=%d kept=%d maxKept=%d%n",
              (System.nanoTime() - t0) / 1_000_000_000L, opened.get(), failed.get(), closedAtOnce.get(), kept.get(), maxKept.get());
        }
        System.exit(0);
      }
    }
---
apiVersion: v1
kind: Pod
metadata: {name: conn-holder, namespace: $LC_NS, labels: {lifecycle: conn-holder}}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  activeDeadlineSeconds: $(($2 + 120))
  securityContext: {runAsUser: 65534, runAsGroup: 65534}
  containers:
  - name: hold
    image: jvmdiag/jdk25-base:dev
    imagePullPolicy: Never
    command: [java, -Xmx32m, -XX:+UseSerialGC, -XX:TieredStopAtLevel=1, -XX:-UsePerfData, /src/Hold.java, "$1", "9464", "72", "$2"]
    volumeMounts: [{name: src, mountPath: /src}]
    resources: {requests: {cpu: 10m, memory: 64Mi}, limits: {memory: 256Mi}}
  volumes: [{name: src, configMap: {name: conn-holder}}]
EOF2
}

# ex_token_checks IP READER_TOKEN OTHER_TOKEN: agent.metricsAuth as a scraper meets it
ex_token_checks() {
  local ip="$1" reader="$2" other="$3" code scraper other_path asa=system:serviceaccount:$RELEASE_NS:jd-jvm-diagnostics-agent
  code=$(ex_get "http://$ip:9464/metrics")
  [ "$code" = 401 ] && ok "/metrics without a token: 401" || bad "/metrics without a token: 401" "HTTP $code: $(head -c 200 "$WORK/ex.body")"
  code=$(ex_get "http://$ip:9464/metrics" "$other")
  [ "$code" = 403 ] && ok "/metrics with the token of a ServiceAccount not bound to jd-jvm-diagnostics-metrics-reader: 403" \
    || bad "/metrics with an unbound ServiceAccount's token: 403" "HTTP $code: $(head -c 200 "$WORK/ex.body")"
  code=$(ex_get "http://$ip:9464/metrics" "$reader")
  if [ "$code" = 200 ] && ex_exposition; then
    ok "/metrics with the token of lifecycle/metrics-reader (agent.metricsAuth.readerSubjects): 200, $(grep -c '^jvmdiag_' "$WORK/ex.body") series$([ -x "${PROMTOOL:-}" ] && echo ', promtool check metrics passes')"
  else bad "/metrics with the reader's token: 200 and a valid exposition" "HTTP $code; $(head -c 200 "$WORK/ex.body"); $(head -c 300 "$WORK/ex.promtool" 2>/dev/null)"; fi
  scraper=""
  for _ in $(seq 1 20); do
    scraper=$(kubectl -n $RELEASE_NS get secret jd-jvm-diagnostics-metrics-scraper -o jsonpath='{.data.token}' 2>/dev/null | base64 -d 2>/dev/null)
    [ -n "$scraper" ] && break; sleep 1
  done
  code=$(ex_get "http://$ip:9464/metrics" "$scraper")
  [ -n "$scraper" ] && [ "$code" = 200 ] && ex_exposition \
    && ok "/metrics with the token the chart's PodMonitor sends (Secret jd-jvm-diagnostics-metrics-scraper): 200" \
    || bad "/metrics with the chart's scraper token: 200" "Secret token: ${scraper:+present}$([ -n "$scraper" ] || echo missing); HTTP $code"
  code=$(ex_get "http://$ip:9465/healthz")
  other_path=$(ex_get "http://$ip:9465/metrics" "$reader")
  [ "$code" = 200 ] && [ "$other_path" != 200 ] \
    && ok "the probe port answers /healthz without a token (200) and serves nothing else (/metrics: $other_path)" \
    || bad "the probe port serves /healthz only, without a token" "/healthz: $code, /metrics: $other_path"
  [ "$(ex_can create tokenreviews.authentication.k8s.io --as "$asa")" = yes ] && [ "$(ex_can create subjectaccessreviews.authorization.k8s.io --as "$asa")" = yes ] \
    && [ "$(ex_can get /metrics --as "system:serviceaccount:$LC_NS:metrics-reader")" = yes ] && [ "$(ex_can get /metrics --as "system:serviceaccount:$LC_NS:not-a-reader")" = no ] \
    && ok "RBAC: the agent creates TokenReviews and SubjectAccessReviews; get /metrics for the bound reader only" \
    || bad "RBAC of agent.metricsAuth" "agent tokenreviews/subjectaccessreviews: $(ex_can create tokenreviews.authentication.k8s.io --as "$asa")/$(ex_can create subjectaccessreviews.authorization.k8s.io --as "$asa"); reader: $(ex_can get /metrics --as "system:serviceaccount:$LC_NS:metrics-reader")"
}

agent_exposure() {
  local t0 ver apod ip rs0 args probes reader other code fails=0 samples=0 i st prom_url="" prom_dir=""
  echo "--- the agent's metrics port: held by a pod for $EX_HOLD_S s, behind a Kubernetes token"
  # shellcheck disable=SC2154 # extra: set by hack/suites/60-chart.sh
  if [ "${#extra[@]}" -ne 0 ]; then echo "(skipped: the agent runs without its Kubernetes mode: ${extra[*]})"; return; fi
  ver=$(sed -nE 's/^version: *"?([^" ]+)"?.*/\1/p' "$CHART/Chart.yaml")
  kubectl -n $LC_NS create serviceaccount metrics-reader >/dev/null 2>&1
  kubectl -n $LC_NS create serviceaccount not-a-reader >/dev/null 2>&1
  t0=$(date +%s%N)
  if "$HELM" upgrade jd "oci://$REG/charts/jvm-diagnostics" --version "$ver" --plain-http -n $RELEASE_NS --reuse-values \
       --set agent.metricsAuth.enabled=true --set agent.maxConnectionsPerPeer=8 --set podMonitor.enabled=true \
       --set 'agent.metricsAuth.readerSubjects[0].kind=ServiceAccount' --set 'agent.metricsAuth.readerSubjects[0].name=metrics-reader' \
       --set "agent.metricsAuth.readerSubjects[0].namespace=$LC_NS" --wait --timeout 180s >"$WORK/ex-upgrade.log" 2>&1; then
    ok "helm upgrade --reuse-values --set agent.metricsAuth.enabled=true,agent.maxConnectionsPerPeer=8,podMonitor.enabled=true --wait ($(lc_secs "$t0") s)"
  else bad "helm upgrade with agent.metricsAuth.enabled=true" "$(tail -n 3 "$WORK/ex-upgrade.log" | tr '\n' ' ')"; lc_dump; return; fi
  apod=$(ex_agent_pod)
  ip=$(kubectl -n $RELEASE_NS get pod "$apod" -o jsonpath='{.status.podIP}' 2>/dev/null)
  rs0=$(kubectl -n $RELEASE_NS get pod "$apod" -o jsonpath='{.status.containerStatuses[0].restartCount}' 2>/dev/null)
  [ -n "$ip" ] || { bad "the agent pod after the upgrade" "pod '$apod' has no IP"; lc_dump; return; }
  # The pod runs what the chart says: its own probe port, the cap, the token check.
  args=$(kubectl -n $RELEASE_NS get pod "$apod" -o jsonpath='{.spec.containers[0].args}')
  probes=$(kubectl -n $RELEASE_NS get pod "$apod" -o jsonpath='{.spec.containers[0].readinessProbe.httpGet.port} {.spec.containers[0].livenessProbe.httpGet.port}')
  if [[ "$args" == *--probe-listen=0.0.0.0:9465* ]] && [[ "$args" == *--max-connections-per-peer=8* ]] \
     && [[ "$args" == *--metrics-auth=kubernetes* ]] && [ "$probes" = "probes probes" ]; then
    ok "agent pod $apod: --probe-listen=0.0.0.0:9465, --max-connections-per-peer=8, --metrics-auth=kubernetes; readiness and liveness on port probes"
  else bad "agent pod runs with the chart's listener and auth flags" "args: $args; probe ports: $probes"; fi

  # Prometheus from the host, with the reader's token (when installed), and the holder pod.
  reader=$(kubectl -n $LC_NS create token metrics-reader --duration 10m 2>"$WORK/ex-token.err")
  other=$(kubectl -n $LC_NS create token not-a-reader --duration 10m 2>>"$WORK/ex-token.err")
  [ -n "$reader" ] && [ -n "$other" ] || { bad "kubectl create token for two ServiceAccounts" "$(tail -n 2 "$WORK/ex-token.err")"; return; }
  printf '%s' "$reader" >"$WORK/ex-reader.token"
  if [ -x "${PROMETHEUS:-}" ]; then
    local PROMETHEUS_URL=""
    prom_dir="$WORK/ex-prom"
    eval "$("$REPO_ROOT/monitoring/prom-up.sh" --dir "$prom_dir" --scrape "$ip:9464" --scrape-interval 5s \
      --bearer-token-file "$WORK/ex-reader.token" --ttl $((EX_HOLD_S + 120)) 2>"$WORK/ex-prom.err" | grep '^PROMETHEUS_URL=')"
    prom_url="${PROMETHEUS_URL:-}"
    [ -n "$prom_url" ] || bad "a local Prometheus scraping the agent with the reader's token" "$(tail -n 3 "$WORK/ex-prom.err" | tr '\n' ' ')"
  else echo "(no prometheus on this host: the scrapes from the host are curl's only)"; fi
  ex_holder "$ip" $((EX_HOLD_S + 10)) | kubectl apply -f - >"$WORK/ex-holder.log" 2>&1
  local holding=""
  for _ in $(seq 1 90); do
    holding=$(kubectl -n $LC_NS logs conn-holder 2>/dev/null | grep -m1 '^holding') && [ -n "$holding" ] && break; sleep 1
  done
  if [ -z "$holding" ]; then
    bad "a pod holding connections to the agent's metrics port" "$(cat "$WORK/ex-holder.log") $(kubectl -n $LC_NS get pod conn-holder 2>&1 | tail -n 1) $(kubectl -n $LC_NS logs conn-holder 2>&1 | tail -n 3)"
    ex_token_checks "$ip" "$reader" "$other"
  else
    # Every 10 s for EX_HOLD_S: the agent pod Ready without a restart, a scrape from the host
    # with the reader's token answered 200 with the agent's series. Meanwhile, once: the token checks.
    t0=$(date +%s)
    for i in $(seq 1 $((EX_HOLD_S / 10))); do
      sleep $((t0 + 10 * i - $(date +%s) > 0 ? t0 + 10 * i - $(date +%s) : 0))
      st=$(kubectl -n $RELEASE_NS get pod "$apod" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status} {.status.containerStatuses[0].restartCount}' 2>&1)
      code=$(ex_get "http://$ip:9464/metrics" "$reader")
      samples=$((samples + 1))
      if [ "$st" != "True 0" ] || [ "$code" != 200 ] || ! grep -q '^jvmdiag_agent_' "$WORK/ex.body"; then
        fails=$((fails + 1)); echo "  t=$((10 * i))s: agent Ready/restarts '$st' (restarts at the start: $rs0), scrape HTTP $code" >>"$WORK/ex-samples.txt"
      fi
      [ "$i" = 1 ] && ex_token_checks "$ip" "$reader" "$other"   # while the pod holds its connections
    done
    local last; last=$(kubectl -n $LC_NS logs conn-holder 2>/dev/null | grep '^hold t=' | tail -n 1)
    if [ "$fails" = 0 ] && [ "$samples" = $((EX_HOLD_S / 10)) ]; then
      ok "for $EX_HOLD_S s a pod kept 72 connections to the agent's metrics port open: the agent pod stayed Ready with no restart and $samples scrapes from the host, one every 10 s, all answered ($last)"
    else bad "agent Ready, unrestarted and scraped while a pod holds 72 connections" "$fails of $samples samples failed: $(head -n 5 "$WORK/ex-samples.txt" 2>/dev/null | tr '\n' ';') holder: $last"; fi
    local opened maxkept
    opened=$(sed -nE 's/.* opened=([0-9]+) .*/\1/p' <<<"$last"); maxkept=$(sed -nE 's/.* maxKept=([0-9]+).*/\1/p' <<<"$last")
    [ "${opened:-0}" -ge 72 ] && [ -n "$maxkept" ] && [ "$maxkept" -le 8 ] \
      && ok "the pod's connections: $opened opened, at most $maxkept open 2 s or more at once (agent.maxConnectionsPerPeer 8; the rest closed at accept)" \
      || bad "the agent keeps at most 8 of one pod's connections (agent.maxConnectionsPerPeer)" "holder: '$last'"
  fi
  if [ -n "$prom_url" ]; then
    local q
    q=$(curl -fsS "$prom_url/api/v1/query" --data-urlencode "query=min_over_time(up{job=\"jvmdiag\"}[${EX_HOLD_S}s]) * count_over_time(up{job=\"jvmdiag\"}[${EX_HOLD_S}s])" 2>&1 \
      | python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(int(float(r[0]["value"][1])) if r else 0)' 2>&1)
    # one scrape every 5 s: all up, and no more than a few missing around the start
    [ "${q:-0}" -ge $((EX_HOLD_S / 5 - 4)) ] 2>/dev/null \
      && ok "Prometheus scraped the agent with the reader's token every 5 s for $EX_HOLD_S s: $q scrapes, every one up" \
      || bad "Prometheus scraped the agent throughout (min_over_time(up) * count_over_time(up))" "$q (want >= $((EX_HOLD_S / 5 - 4)))"
  fi
  [ -z "$prom_dir" ] || "$REPO_ROOT/monitoring/prom-down.sh" "$prom_dir" >/dev/null 2>&1
  kubectl -n $LC_NS delete pod/conn-holder configmap/conn-holder serviceaccount/metrics-reader serviceaccount/not-a-reader --wait=false >/dev/null 2>&1
}
