# The operator installed by the chart, attacked the ways a tenant and a stuttering control plane
# attack it, all at once for OA_SECONDS (180). Sourced by hack/suites/60-chart.sh (its ok/bad/
# WORK, the cluster and the release `jd` in jvm-diagnostics, after e2e/chart_lifecycle.sh's
# fresh install, with lc_* helpers and the lifecycle workloads in place).
#
# Meanwhile:
#  - a tenant pod (e2e/workloads/ListenerAttack.java) holds 32 connections of each kind to every
#    operator port of both replicas: half-open TLS handshakes, idle connections, unfinished
#    request heads (one byte every 2 s) and unfinished admission bodies, each reopened a second
#    after the operator closes it;
#  - every 30 s the Lease holder's API connection is blackholed for 12 s (iptables in its pod's
#    network namespace drops what the API server sends it): 6 forced Lease losses;
#  - between the blackouts the webhook Secret changes 3 times: deleted (the operator issues a new
#    CA and leaf) or its leaf renewed by the same CA (written here with openssl, as an external
#    renewal would), and each time both replicas must serve the Secret's leaf within 15 s;
#  - e2e/pod_creation_probe.py creates a labelled pod and sends a dry-run JvmDiagnostics every
#    half second, and the host asks both replicas' /healthz every second.
# Then: both replicas never restarted; /healthz always answered within 1 s; every probe pod was
# created and injected; every dry-run JvmDiagnostics was validated except while its replica was
# cut off from the API server (validation asks the API server, fail-closed: those are counted
# apart); each blackout cost the leader its Lease; the lifecycle workloads never rolled (no heal).
# shellcheck disable=SC2015 # `test && ok … || bad …`: ok always returns 0
OA_SECONDS="${OA_SECONDS:-180}"
# One blackout every 30 s from t=10 s, one certificate change every 60 s from t=25 s: as many of
# each as fit.
OA_BLACKOUTS=$((OA_SECONDS / 30)) OA_CERT_CHANGES=$(((OA_SECONDS - 25) / 60 + 1))
OA_NS=attack OA_PROBE_NS=attack-probe
OA_SECRET=jd-jvm-diagnostics-webhook-tls OA_SVC=jd-jvm-diagnostics-operator

# oa_ops: the operator pods, "name uid ip restarts" per line (those not being deleted)
oa_ops() {
  kubectl -n "$RELEASE_NS" get pods -l app.kubernetes.io/component=operator -o json | python3 -c '
import json, sys
for p in sorted(json.load(sys.stdin)["items"], key=lambda p: p["metadata"]["name"]):
    if p["metadata"].get("deletionTimestamp"): continue
    st = p.get("status", {})
    print(p["metadata"]["name"], p["metadata"]["uid"], st.get("podIP", "-"),
          sum(c["restartCount"] for c in st.get("containerStatuses", [])))'
}
# oa_pid UID: a process of that pod (for its network namespace)
oa_pid() {
  local f
  for f in /proc/[0-9]*/cgroup; do
    if grep -qE "pod($1|${1//-/_})" "$f" 2>/dev/null; then f=${f#/proc/}; echo "${f%/cgroup}"; return; fi
  done
}
# oa_fp HOST:PORT: the SHA-256 fingerprint of the certificate served there
oa_fp() {
  openssl s_client -connect "$1" -servername "$OA_SVC.$RELEASE_NS.svc" </dev/null 2>/dev/null \
    | openssl x509 -noout -fingerprint -sha256 2>/dev/null | sed 's/.*=//'
}
oa_secret_fp() {
  kubectl -n "$RELEASE_NS" get secret "$OA_SECRET" -o jsonpath='{.data.tls\.crt}' 2>/dev/null | base64 -d 2>/dev/null \
    | openssl x509 -noout -fingerprint -sha256 2>/dev/null | sed 's/.*=//'
}
# oa_renew_leaf: a new key and leaf for the Secret's names, signed by the Secret's own CA
oa_renew_leaf() {
  local d="$WORK/oa-renew" sans
  rm -rf "$d"; mkdir -p "$d"
  kubectl -n "$RELEASE_NS" get secret "$OA_SECRET" -o json >"$d/s.json" || return 1
  python3 -c '
import base64, json, sys
d = json.load(open(sys.argv[1]))["data"]
for k, f in (("ca.crt", "ca.crt"), ("ca.key", "ca.key"), ("tls.crt", "old.crt")):
    open(sys.argv[2] + "/" + f, "wb").write(base64.b64decode(d[k]))' "$d/s.json" "$d" || return 1
  sans=$(openssl x509 -in "$d/old.crt" -noout -ext subjectAltName | tail -n +2 | tr -d ' ')
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$d/tls.key" \
    -subj "/CN=$OA_SVC.$RELEASE_NS.svc" -out "$d/tls.csr" 2>/dev/null || return 1
  printf 'subjectAltName=%s\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n' "$sans" >"$d/ext"
  openssl x509 -req -in "$d/tls.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial -days 200 \
    -extfile "$d/ext" -out "$d/tls.crt" 2>/dev/null || return 1
  kubectl -n "$RELEASE_NS" patch secret "$OA_SECRET" --type merge -p "$(python3 -c '
import base64, json, sys
print(json.dumps({"data": {k: base64.b64encode(open(sys.argv[1] + "/" + k, "rb").read()).decode() for k in ("tls.crt", "tls.key")}}))' "$d")" >/dev/null
}
# oa_blackout UID SECONDS: the pod receives nothing from the API server for SECONDS
oa_blackout() {
  local pid rule
  pid=$(oa_pid "$1"); [ -n "$pid" ] || return 1
  rule=(INPUT -p tcp -s "$KUBERNETES_SVC_IP" --sport 443 -j DROP)
  nsenter -t "$pid" -n iptables -w 5 -I "${rule[@]}" || return 1
  sleep "$2"
  nsenter -t "$pid" -n iptables -w 5 -D "${rule[@]}"
}
# oa_blackouts: OA_BLACKOUTS blackouts of the Lease holder, 12 s each, one every 30 s from t=10 s; writes
# "start end holder" per blackout to $WORK/oa-blackouts
oa_blackouts() {
  local t0="$1" i holder uid
  : >"$WORK/oa-blackouts"
  for i in $(seq 0 $((OA_BLACKOUTS - 1))); do
    sleep "$(awk -v t="$t0" -v i="$i" -v now="$(date +%s.%N)" 'BEGIN{d = t + 10 + 30 * i - now; print (d > 0 ? d : 0)}')"
    holder=$(kubectl -n "$RELEASE_NS" get lease "$OA_SVC" -o jsonpath='{.spec.holderIdentity}' 2>/dev/null)
    uid=$(kubectl -n "$RELEASE_NS" get pod "${holder%%_*}" -o jsonpath='{.metadata.uid}' 2>/dev/null)
    local s; s=$(date +%s)
    if [ -n "$uid" ] && oa_blackout "$uid" 12; then echo "$s $(date +%s) ${holder%%_*}" >>"$WORK/oa-blackouts"
    else echo "$s - ${holder:-no-holder}" >>"$WORK/oa-blackouts"; fi
  done
}
# oa_healthz IP...: every second, each replica's /healthz: "epoch ip code seconds"
oa_healthz() {
  local t0 i ip
  t0=$(date +%s)
  for i in $(seq 1 "$OA_SECONDS"); do
    for ip in "$@"; do
      echo "$(date +%s) $ip $(curl -s -o /dev/null -m 5 -w '%{http_code} %{time_total}' "http://$ip:8081/healthz")" &
    done
    wait
    sleep $((t0 + i - $(date +%s) > 0 ? t0 + i - $(date +%s) : 0))
  done >"$WORK/oa-healthz"
}
# oa_attacker SECONDS IP...: the tenant pod and its program
oa_attacker() {
  local secs="$1" ip targets=""; shift
  for ip in "$@"; do
    targets="$targets \"$ip:9443:tls-hello\", \"$ip:9443:idle\", \"$ip:9443:tls-body\", \"$ip:8080:http-head\", \"$ip:8080:idle\", \"$ip:8081:http-head\", \"$ip:8081:idle\","
  done
  kubectl -n $OA_NS create configmap listener-attack --from-file="$REPO_ROOT/e2e/workloads/ListenerAttack.java" \
    --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: listener-attack, namespace: $OA_NS}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  activeDeadlineSeconds: $((secs + 120))
  securityContext: {runAsUser: 65534, runAsGroup: 65534}
  containers:
  - name: attack
    image: jvmdiag/jdk25-base:dev
    imagePullPolicy: Never
    command: [java, -Xmx64m, -XX:+UseSerialGC, -XX:TieredStopAtLevel=1, -XX:-UsePerfData, /src/ListenerAttack.java, "$secs", "32", ${targets%,}]
    volumeMounts: [{name: src, mountPath: /src}]
    resources: {requests: {cpu: 10m, memory: 96Mi}, limits: {memory: 256Mi}}
  volumes: [{name: src, configMap: {name: listener-attack}}]
EOF
}

operator_under_attack() {
  echo "--- the operator under attack for $OA_SECONDS s: a tenant holding its listeners, 10 Lease losses, 5 certificate changes"
  local ops ips=() uids=() line t0 i before_rev after_rev started="" want ok_at deadline
  kubectl create namespace $OA_NS >/dev/null 2>&1; kubectl create namespace $OA_PROBE_NS >/dev/null 2>&1
  lc_resource $OA_PROBE_NS probe absent | kubectl apply -f - >/dev/null
  ops=$(oa_ops)
  local uid ip
  while read -r _ uid ip _; do uids+=("$uid"); ips+=("$ip"); done <<<"$ops"
  if [ "${#ips[@]}" != 2 ] || [[ " ${ips[*]} " == *" - "* ]]; then bad "two operator replicas to attack" "$ops"; return; fi
  # The workloads settled first: whatever rolls from here on is a heal.
  for d in $(kubectl -n "$LC_NS" get deploy -o name); do kubectl -n "$LC_NS" rollout status "$d" --timeout=90s >/dev/null 2>&1; done
  before_rev=$(kubectl -n "$LC_NS" get deploy -o jsonpath='{range .items[*]}{.metadata.name}={.metadata.annotations.deployment\.kubernetes\.io/revision} {end}')

  oa_attacker "$OA_SECONDS" "${ips[@]}"
  for _ in $(seq 1 90); do
    started=$(kubectl -n $OA_NS logs listener-attack 2>/dev/null | grep -m1 '^attacking') && [ -n "$started" ] && break; sleep 1
  done
  [ -n "$started" ] || { bad "a tenant pod attacking the operator's listeners" "$(kubectl -n $OA_NS get pod listener-attack 2>&1 | tail -n 1) $(kubectl -n $OA_NS logs listener-attack 2>&1 | tail -n 3)"; return; }
  sleep 12   # its first connections held past the operator's read timeout

  t0=$(date +%s)
  rm -f "$WORK/oa-probe.stop"
  python3 "$REPO_ROOT/e2e/pod_creation_probe.py" --kubeconfig "$KUBECONFIG" --namespace $OA_PROBE_NS --resource probe \
    --stop-file "$WORK/oa-probe.stop" --interval 0.5 --validate >"$WORK/oa-probe.json" 2>"$WORK/oa-probe.err" &
  local probe_pid=$!
  oa_healthz "${ips[@]}" & local hz_pid=$!
  oa_blackouts "$t0" & local bo_pid=$!
  # The certificate changes, at t = 25, 85, 145… s: 3 s after a blackout ends and 15 s
  # before the next begins.
  : >"$WORK/oa-certs"
  for i in $(seq 0 $((OA_CERT_CHANGES - 1))); do
    sleep $((t0 + 25 + 60 * i - $(date +%s) > 0 ? t0 + 25 + 60 * i - $(date +%s) : 0))
    local what=renewed start; start=$(date +%s.%N)
    if [ $((i % 2)) = 0 ]; then what=deleted; kubectl -n "$RELEASE_NS" delete secret "$OA_SECRET" --wait=false >/dev/null 2>&1
    else oa_renew_leaf || what="renewal-failed"; fi
    ok_at=""; deadline=$(($(date +%s) + 15))
    while [ "$(date +%s)" -lt "$deadline" ]; do
      want=$(oa_secret_fp)
      if [ -n "$want" ] && [ "$(oa_fp "${ips[0]}:9443")" = "$want" ] && [ "$(oa_fp "${ips[1]}:9443")" = "$want" ]; then
        ok_at=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b - a}'); break
      fi
      sleep 0.5
    done
    echo "$what ${ok_at:-never}" >>"$WORK/oa-certs"
  done
  wait "$bo_pid" "$hz_pid"
  sleep $((t0 + OA_SECONDS - $(date +%s) > 0 ? t0 + OA_SECONDS - $(date +%s) : 0))
  touch "$WORK/oa-probe.stop"; wait "$probe_pid"

  # --- the verdicts --------------------------------------------------------------------------
  local after; after=$(oa_ops)
  if [ "$(awk '{print $1, $2, $4}' <<<"$ops")" = "$(awk '{print $1, $2, $4}' <<<"$after")" ] && awk '$4 != 0 {r = 1} END {exit r}' <<<"$after"; then
    ok "both operator replicas ran through the attack without a restart ($(awk '{printf "%s restarts=%s; ", $1, $4}' <<<"$after"))"
  else bad "both operator replicas ran through the attack without a restart" "before: $(tr '\n' ';' <<<"$ops") after: $(tr '\n' ';' <<<"$after")"; fi
  local hz
  hz=$(awk -v n="$((OA_SECONDS * 2 - 10))" '{c++; if ($3 != 200 || $4 >= 1) bad++; if ($4 > m) m = $4}
    END {printf "%s %d %d %.3f", (c >= n && bad == 0) ? "OK" : "BAD", c, bad, m}' "$WORK/oa-healthz")
  read -r verdict n nbad worst <<<"$hz"
  [ "$verdict" = OK ] && ok "/healthz of both replicas, asked every second from the host: $n answers, all 200 within 1 s (slowest $worst s)" \
    || bad "/healthz of both replicas answered within 1 s throughout" "$n asked, $nbad late or failed, slowest $worst s: $(awk '$3 != 200 || $4 >= 1' "$WORK/oa-healthz" | head -n 4 | tr '\n' ';')"
  lc_probe_check "pod creation under attack (a labelled pod every 0.5 s for $OA_SECONDS s)" "$WORK/oa-probe.json"
  # Validation outside the blackouts (with 3 s after each for the API connection to come back).
  local v
  v=$(python3 - "$WORK/oa-probe.json" "$WORK/oa-blackouts" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
outs = []
for line in open(sys.argv[2]):
    f = line.split()
    if f[1] != "-": outs.append((float(f[0]), float(f[1]) + 3))
inside = [t for t in d["validation_failed_at"] if any(a <= t <= b for a, b in outs)]
outside = [t for t in d["validation_failed_at"] if t not in inside]
print("OK" if d["validated"] >= 200 and not outside else "BAD",
      "%d validated, %d refused or failed outside the blackouts, %d while the replica asked was cut off from the API server%s"
      % (d["validated"], len(outside), len(inside), ("; " + " | ".join(d["validation_errors"][:3])) if outside else ""))
PY
)
  case "$v" in OK*) ok "dry-run JvmDiagnostics through the validating webhook every 0.5 s: ${v#OK }" ;; *) bad "dry-run JvmDiagnostics validated throughout" "${v#BAD }" ;; esac
  local nbo losses=0
  nbo=$(awk '$2 != "-"' "$WORK/oa-blackouts" | wc -l)
  while read -r line _; do
    losses=$((losses + $(kubectl -n "$RELEASE_NS" logs "$line" --since=$((OA_SECONDS + 60))s 2>/dev/null | grep -c 'stopped reconciling')))
  done <<<"$after"
  [ "$nbo" = "$OA_BLACKOUTS" ] && [ "$losses" -ge "$OA_BLACKOUTS" ] \
    && ok "$OA_BLACKOUTS blackouts of the Lease holder's API connection (12 s each): $losses Lease losses logged, no restart (above)" \
    || bad "$OA_BLACKOUTS blackouts, each a Lease loss" "$nbo blackouts done ($(tr '\n' ';' <"$WORK/oa-blackouts")), $losses losses logged"
  local certs; certs=$(tr '\n' ';' <"$WORK/oa-certs")
  ! grep -q -e never -e failed "$WORK/oa-certs" && [ "$(wc -l <"$WORK/oa-certs")" = "$OA_CERT_CHANGES" ] \
    && ok "webhook Secret changed $OA_CERT_CHANGES times (deleted $(grep -c ^deleted "$WORK/oa-certs"), its leaf renewed $(grep -c ^renewed "$WORK/oa-certs")): both replicas served the Secret's new leaf within 15 s each time (seconds: $certs)" \
    || bad "both replicas serve each new leaf within 15 s" "$certs"
  after_rev=$(kubectl -n "$LC_NS" get deploy -o jsonpath='{range .items[*]}{.metadata.name}={.metadata.annotations.deployment\.kubernetes\.io/revision} {end}')
  [ "$before_rev" = "$after_rev" ] && ok "no heal rollout: the lifecycle workloads kept their revisions ($after_rev)" \
    || bad "no heal rollout during the attack" "before: $before_rev after: $after_rev"
  local last; last=$(kubectl -n $OA_NS logs listener-attack 2>/dev/null | grep '^attack t=' | tail -n 7 | tr '\n' ';')
  grep -q 'kind=tls-hello opened=[1-9]' <<<"$last" && grep -q 'kind=http-head opened=[1-9]' <<<"$last" \
    && ok "the tenant's attack ran: $last" || bad "the tenant's attack ran" "$last"
  kubectl delete namespace $OA_NS $OA_PROBE_NS --wait=false >/dev/null 2>&1
}
