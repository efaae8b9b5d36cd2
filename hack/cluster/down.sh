#!/usr/bin/env bash
# Stops the local cluster and removes what it added: processes, pods' containers and
# cgroups, mounts under the kubelet and containerd directories, network namespaces, the
# CNI bridge, the iptables chains that the kubelet, the CNI plugins and we added.
# Safe to run any time (also half-way through set-up). Keeps the PKI and the images.
# --quiet: no "nothing to stop" message.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
quiet=0; [ "${1:-}" = --quiet ] && quiet=1
mkdir -p "$CLUSTER_DIR"
exec 7>"$CLUSTER_DIR/.down.lock"; flock 7

KUBE_BIN="$JVMDIAG_CACHE/k8s/${KUBE_VERSION}-linux-amd64"
any=0
for d in kube-scheduler kube-controller-manager kubelet containerd kube-apiserver etcd registry; do
  daemon_alive "$d" && any=1
done

# 1. Graceful part: no new pods (scheduler, controllers off), then let the kubelet stop
#    every pod itself, which runs CNI DEL (addresses, portmap rules) and removes netns.
# Stateless or wiped below: a short grace is enough.
stop_daemon kube-scheduler 1 & stop_daemon kube-controller-manager 1 & wait
if daemon_alive kubelet && daemon_alive kube-apiserver; then
  log "deleting every pod (the kubelet tears them down)"
  kc delete pods --all-namespaces --all --grace-period=0 --force --wait=false >/dev/null 2>&1 || true
  for _ in $(seq 1 100); do  # up to 20 s for the sandboxes to stop
    [ -z "$(ctr --address "$CTRD_SOCK" -n k8s.io tasks ls -q 2>/dev/null)" ] && break
    sleep 0.2
  done
fi
stop_daemon kubelet 1

# 2. Whatever is still running in containerd: kill the tasks, remove the containers.
if daemon_alive containerd; then
  ctrc() { ctr --address "$CTRD_SOCK" -n k8s.io "$@"; }
  for t in $(ctrc tasks ls -q 2>/dev/null); do ctrc tasks kill -s SIGKILL "$t" >/dev/null 2>&1; done
  sleep 0.5
  for t in $(ctrc tasks ls -q 2>/dev/null); do ctrc tasks delete -f "$t" >/dev/null 2>&1; done
  for c in $(ctrc containers ls -q 2>/dev/null); do ctrc containers delete "$c" >/dev/null 2>&1; done
fi
stop_daemon containerd 5
stop_daemon kube-apiserver 1 & stop_daemon etcd 1 & stop_daemon registry 2 & wait

# 3. Hard sweep, for a crash or a kill: shims of our containerd (found by our socket path
#    in their command line), then processes left in our pods' cgroups.
for p in $(pgrep -f "containerd-shim-runc-v2 .*-address $CTRD_SOCK" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
if [ "$CGROUP_ROOT" = / ]; then pods_cg=kubepods; else pods_cg="${CGROUP_ROOT#/}"; fi
for h in /sys/fs/cgroup/*/; do
  [ -d "$h$pods_cg" ] || continue
  # shellcheck disable=SC2038 # xargs reads pids (cgroup.procs), not file names
  find "$h$pods_cg" -name cgroup.procs -exec cat {} + 2>/dev/null | xargs -r kill -KILL 2>/dev/null
done
sleep 0.2
for h in /sys/fs/cgroup/*/; do  # deepest first; a cgroup goes once its processes are gone
  [ -d "$h$pods_cg" ] && find "$h$pods_cg" -depth -type d -exec rmdir {} \; 2>/dev/null
done

# 4. Mounts under our directory (pods' volumes, rootfs overlays, shm, netns), deepest first.
awk -v d="$CLUSTER_DIR/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort -r | while read -r m; do
  umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
done

# 5. Network: the bridge (veths went with their namespaces), our Service chain, the CNI
#    plugins' chains for our network, and the kubelet's utility chains.
ip link del "$BRIDGE" 2>/dev/null
# drop_chain IPTABLES TABLE CHAIN: delete every rule that jumps to CHAIN (by position, as
# rules carry quoted comments), then flush and delete CHAIN.
drop_chain() {
  local ipx="$1" t="$2" c="$3" base n
  for base in $($ipx -w 5 -t "$t" -S 2>/dev/null | awk '$1=="-P" || $1=="-N" {print $2}'); do
    for n in $($ipx -w 5 -t "$t" -S "$base" 2>/dev/null | awk -v c="$c" '$1=="-A" {i++; for (k=2; k<=NF; k++) if (($k=="-j" || $k=="-g") && $(k+1)==c) print i}' | sort -rn); do
      $ipx -w 5 -t "$t" -D "$base" "$n" 2>/dev/null
    done
  done
  $ipx -w 5 -t "$t" -F "$c" 2>/dev/null
  $ipx -w 5 -t "$t" -X "$c" 2>/dev/null
}
drop_chain iptables nat "$SVC_CHAIN"
# bridge ipMasq: one CNI-<hash> chain per pod in nat, its rules commented with our network
# name; portmap: CNI-DN-<hash> chains, commented the same way.
for c in $(iptables-save -t nat 2>/dev/null | grep -E "name: \\\\?\"$CNI_NETWORK\\\\?\"" | grep -oE 'CNI-(DN-)?[0-9a-f]{24}' | sort -u); do
  drop_chain iptables nat "$c"
done
# Chains shared by every kubelet and every portmap user: removed only when no other
# local cluster instance is running.
others=0
for pf in "$JVMDIAG_CACHE"/cluster*/run/kubelet.pid; do
  [ -f "$pf" ] || continue
  [ "$(dirname "$(dirname "$pf")")" = "$CLUSTER_DIR" ] && continue
  pid_alive "$(cat "$pf")" && others=1
done
if [ "$others" = 0 ] && [ -f "$RUN/node-enabled" ] && [ "$(cat "$RUN/node-enabled")" = 1 ]; then
  for ipx in iptables ip6tables; do
    for t in filter nat mangle; do
      for c in $($ipx -w 5 -t "$t" -S 2>/dev/null | awk '$1=="-N" && $2 ~ /^(KUBE-FIREWALL|KUBE-KUBELET-CANARY|KUBE-IPTABLES-HINT|KUBE-MARK-MASQ|KUBE-MARK-DROP|KUBE-POSTROUTING|CNI-HOSTPORT-[A-Z]+)$/ {print $2}'); do
        drop_chain "$ipx" "$t" "$c"
      done
    done
  done
fi
# A CNI chain left empty and unreferenced (a plugin interrupted half-way through DEL)
# names no network and does nothing: with no other instance running, remove it.
if [ "$others" = 0 ]; then
  # (grep, not awk: Debian's mawk has no {n} intervals, so the awk match never hit)
  for c in $(iptables -w 5 -t nat -S 2>/dev/null | awk '$1=="-N" {print $2}' | grep -E '^CNI-(DN-)?[0-9a-f]{24}$'); do
    iptables -w 5 -t nat -S 2>/dev/null | grep -qE -- "^-A $c |-j $c( |\$)" || iptables -w 5 -t nat -X "$c" 2>/dev/null
  done
fi

# libcni's result cache (not configurable in containerd 1.6): our network's entries and
# the loopback entries of the same containers.
for f in /var/lib/cni/results/"$CNI_NETWORK"-*; do
  [ -e "$f" ] || continue
  id="${f#/var/lib/cni/results/"$CNI_NETWORK"-}"; id="${id%-*}"
  rm -f "$f" /var/lib/cni/results/cni-loopback-"$id"-lo
done

# 6. State that belongs to one run. Kept: pki/ (reused), containerd/root and registry/ (the images).
rm -rf "$ETCD_DATA" "$KUBELET_DIR" "$CTRD_DIR/state" "$CNI_DIR" "$CLUSTER_DIR/pod-logs" "$RUN"
if [ "$any" = 1 ]; then log "cluster stopped ($CLUSTER_DIR)"; elif [ "$quiet" = 0 ]; then log "no cluster was running ($CLUSTER_DIR)"; fi
exit 0
