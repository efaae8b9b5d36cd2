#!/usr/bin/env bash
# The operator at platform size (operator/scripts/scale.py): 20,000 Deployments, 5,000
# StatefulSets, 10,000 JvmDiagnostics and 50,000 labelled pods on its own local control plane
# (CLUSTER_INDEX=4, or BENCH_CLUSTER_INDEX; CLUSTER_NODE=0), the operator run from its published
# image (hack/images/build.sh operator: the image's JDK, jar and entrypoint flags, unpacked with
# hack/images/unpack.py) in a memory cgroup of the chart's default limit, with leader election and
# a standby replica started the same way. SCALE=reduced runs 2,000 / 500 / 1,000 / 5,000 with 2
# minutes of steady state; SCALE_* (see scale.py) set each size. Results: docs/performance.md.
set -uo pipefail
export CLUSTER_INDEX="${BENCH_CLUSTER_INDEX:-4}"
. "$(dirname "$0")/../lib.sh"
CG=/sys/fs/cgroup/memory/jvmdiag-bench-operator
OUT="$JVMDIAG_CACHE/bench/operator-scale"
cleanup() {
  "$REPO_ROOT/operator/scripts/down.sh" >/dev/null 2>&1
  cat "$CG"-*/cgroup.procs 2>/dev/null | while read -r p; do kill -9 "$p" 2>/dev/null; done
  sleep 1
  rmdir "$CG"-* 2>/dev/null
  "$REPO_ROOT/hack/cluster/down.sh" --quiet >/dev/null 2>&1
}
trap cleanup EXIT
case "${SCALE:-full}" in
  full) ;;
  reduced) export SCALE_DEPLOYMENTS="${SCALE_DEPLOYMENTS:-2000}" SCALE_STATEFULSETS="${SCALE_STATEFULSETS:-500}" \
      SCALE_RESOURCES="${SCALE_RESOURCES:-1000}" SCALE_PODS="${SCALE_PODS:-5000}" SCALE_STEADY_SECONDS="${SCALE_STEADY_SECONDS:-120}" ;;
  *) die "SCALE=${SCALE}: want full or reduced" ;;
esac
[ -d /sys/fs/cgroup/memory ] || die "no cgroup v1 memory controller at /sys/fs/cgroup/memory: the memory limit cannot be applied"
rm -rf "$OUT" && mkdir -p "$OUT"

# the published image: this tree's jar in jvmdiag/operator:dev, unpacked
operator_build
IMAGES_NO_IMPORT=1 "$REPO_ROOT/hack/images/build.sh" operator >"$OUT/images.log" 2>&1 \
  || die "hack/images/build.sh operator failed (log: $OUT/images.log)"
entry=$(python3 "$REPO_ROOT/hack/images/unpack.py" "$JVMDIAG_CACHE/images/jvmdiag_operator_dev.tar" "$OUT/rootfs") \
  || die "the operator image could not be unpacked"
# the entrypoint's paths inside the image, rooted at the unpacked file system
mapfile -t argv < <(python3 -c 'import json,sys; [print(("'"$OUT/rootfs"'" + a) if a.startswith("/") else a) for a in json.loads(sys.argv[1])]' "$entry")
limit=$("$HELM" show values "$REPO_ROOT/charts/jvm-diagnostics" | python3 -c '
import sys, yaml
m = yaml.safe_load(sys.stdin)["operator"]["resources"]["limits"]["memory"]
units = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30}
print(int(m[:-2]) * units[m[-2:]] if m[-2:] in units else int(m))')
echo "operator image entrypoint: ${argv[*]}; memory limit (chart default): $((limit >> 20)) MiB"
# a replica's own memory cgroup (the JVM sizes its heap from the limit), as a pod's container has
for r in a b; do mkdir -p "$CG-$r" && echo "$limit" >"$CG-$r/memory.limit_in_bytes"; done
in_cgroup="$REPO_ROOT/operator/scripts/in-cgroup.sh"

"$REPO_ROOT/hack/cluster/down.sh" --quiet >/dev/null 2>&1
out=$(CLUSTER_NODE=0 "$REPO_ROOT/hack/cluster/up.sh") || die "local control plane did not start"
eval "$(tail -n 1 <<<"$out")"
OPERATOR_LAUNCH="$in_cgroup $CG-a ${argv[*]}" "$REPO_ROOT/operator/scripts/up.sh" || die "operator did not start"
# the standby: the same arguments, its own ports
mapfile -t args <"$OPERATOR_STATE/operator.args"
sport=$((OPERATOR_WEBHOOK_PORT + 5)) smetrics=$((OPERATOR_METRICS_PORT + 5))
standby=("$in_cgroup" "$CG-b" "${argv[@]}")
for a in "${args[@]}"; do
  a=${a//127.0.0.1:$OPERATOR_WEBHOOK_PORT/127.0.0.1:$sport}
  standby+=("${a//127.0.0.1:$OPERATOR_METRICS_PORT/127.0.0.1:$smetrics}")
done
SCALE_PID=$(operator_pid) SCALE_METRICS_URL="http://127.0.0.1:$OPERATOR_METRICS_PORT/metrics" \
  SCALE_STANDBY="${standby[*]}" \
  SCALE_STANDBY_METRICS_URL="http://127.0.0.1:$smetrics/metrics" SCALE_STANDBY_WEBHOOK_URL="https://127.0.0.1:$sport" \
  SCALE_WEBHOOK_CONFIG="$(cat "$OPERATOR_STATE/webhook-config")" SCALE_LIMIT_BYTES="$limit" \
  SCALE_JCMD="$OUT/rootfs/opt/java/bin/jcmd" SCALE_OUT="$OUT" \
  python3 "$REPO_ROOT/operator/scripts/scale.py"
