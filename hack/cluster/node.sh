# The node: containerd (own config, root, state and socket), runc, the CNI bridge, the
# kubelet, and the route from pods to the API server (sourced by up.sh).

ctrc() { ctr --address "$CTRD_SOCK" -n k8s.io "$@"; }

write_containerd_config() {
  mkdir -p "$CTRD_DIR/root" "$CTRD_DIR/state" "$CNI_DIR/net.d"
  cat >"$CTRD_DIR/config.toml" <<EOF
# Written by hack/cluster/node.sh; private to this cluster (never the system containerd).
version = 2
root = "$CTRD_DIR/root"
state = "$CTRD_DIR/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = "$CTRD_SOCK"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "$CTRD_DIR/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "docker.io/jvmdiag/pause:dev"
  # root here lacks CAP_SYS_RESOURCE: without this runc fails with
  # "can't get final child's PID from pipe" when it lowers oom_score_adj.
  restrict_oom_score_adj = true
  # Network namespaces under our state dir, not /var/run/netns: down.sh finds them all.
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  max_container_log_line_size = 16384
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "$(command -v runc)"
        # runc's state under our state dir, not the shared /run/containerd/runc.
        Root = "$CTRD_DIR/state/runc"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$CNI_DIR/net.d"
    max_conf_num = 1
  # Registry hosts (certs.d/<host:port>/hosts.toml): the node's own registry on loopback.
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "$CTRD_DIR/certs.d"
EOF
  # Plain HTTP on loopback: no certificate to trust, nothing reachable from outside the host.
  rm -rf "$CTRD_DIR/certs.d"
  mkdir -p "$CTRD_DIR/certs.d/$REGISTRY_ADDR"
  cat >"$CTRD_DIR/certs.d/$REGISTRY_ADDR/hosts.toml" <<EOF
server = "http://$REGISTRY_ADDR"
[host."http://$REGISTRY_ADDR"]
  capabilities = ["pull", "resolve"]
EOF
}

# The node's image registry: Debian's docker-registry on $REGISTRY_ADDR (loopback, plain HTTP),
# storage in $REGISTRY_DIR/data (kept across down, so pushed images survive like imported ones).
# Without the package (make setup installs it) the node runs without a registry.
start_registry() {
  command -v docker-registry >/dev/null 2>&1 || { log "no docker-registry (make setup installs it): the node has no registry"; return 0; }
  step "starting the image registry ($REGISTRY_ADDR)" "$LOGS/registry.log"
  mkdir -p "$REGISTRY_DIR/data"
  cat >"$REGISTRY_DIR/config.yml" <<EOF
# Written by hack/cluster/node.sh.
version: 0.1
log: {level: info, formatter: text}
storage:
  filesystem: {rootdirectory: $REGISTRY_DIR/data}
  delete: {enabled: true}
  maintenance: {uploadpurging: {enabled: false}}
http:
  addr: $REGISTRY_ADDR
  headers: {X-Content-Type-Options: [nosniff]}
EOF
  start_daemon registry docker-registry serve "$REGISTRY_DIR/config.yml"
  wait_for 20 registry curl -fsS "http://$REGISTRY_ADDR/v2/"
}

write_cni_config() {
  mkdir -p "$CNI_DIR/net.d" "$CNI_DIR/ipam"
  local gw="${POD_SUBNET%.0/24}.1"
  cat >"$CNI_DIR/net.d/10-$CNI_NETWORK.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$CNI_NETWORK",
  "plugins": [
    {
      "type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": true, "hairpinMode": true,
      "ipam": {
        "type": "host-local", "dataDir": "$CNI_DIR/ipam",
        "ranges": [[{"subnet": "$POD_SUBNET", "gateway": "$gw"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
}

start_containerd() {
  step "starting containerd ($CTRD_SOCK)" "$LOGS/containerd.log"
  write_containerd_config
  write_cni_config
  start_daemon containerd containerd --config "$CTRD_DIR/config.toml"
  wait_for 30 containerd ctr --address "$CTRD_SOCK" version
  # Containers a crashed run left in the metadata store: remove them before the kubelet
  # comes, it would try to tear down their (gone) network namespaces.
  local c
  for c in $(ctrc containers ls -q 2>/dev/null); do
    ctrc tasks delete -f "$c" >/dev/null 2>&1 || true  # usually no task is left: not an error
    ctrc containers delete "$c" >/dev/null 2>&1 || true
  done
}

# The pause image (sandbox) is built here if needed; every image archive in the cache is
# imported (and pinned) once. CLUSTER_IMAGES="pause jdk17-base ...": only these
# (names as in `make images`, or archive paths).
import_images() {
  step "building the pause image and importing image archives into containerd" "$LOGS/images.log"
  IMAGES_NO_IMPORT=1 "$REPO_ROOT/hack/images/build.sh" pause >>"$LOGS/images.log" 2>&1
  local only=() n
  for n in ${CLUSTER_IMAGES:-}; do
    case "$n" in */*) only+=("$n") ;; *) only+=("$IMAGES_DIR/jvmdiag_${n}_dev.tar") ;; esac
  done
  "$REPO_ROOT/hack/images/import.sh" --cluster-dir "$CLUSTER_DIR" "${only[@]}" >>"$LOGS/images.log" 2>&1
}

write_kubelet_config() {
  local nip="$1"
  mkdir -p "$KUBELET_DIR" "$CLUSTER_DIR/pod-logs"
  cat >"$CLUSTER_DIR/kubelet-config.yaml" <<EOF
# Written by hack/cluster/node.sh.
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $nip
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ_PORT
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix://$CTRD_SOCK
imageServiceEndpoint: unix://$CTRD_SOCK
# cgroups v1 (hybrid) without systemd as the manager.
cgroupDriver: cgroupfs
cgroupRoot: $CGROUP_ROOT
failCgroupV1: false
failSwapOn: false
podLogsDir: $CLUSTER_DIR/pod-logs
resolvConf: /etc/resolv.conf
# Images are imported from local archives, there is no registry to pull them again: the
# image garbage collector must never run, and eviction must not start on a full disk.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", nodefs.inodesFree: "1%", imagefs.available: "1%"}
serializeImagePulls: false
rotateCertificates: false
registerNode: true
EOF
}

start_kubelet() {
  local nip="$1"
  step "starting the kubelet (node $NODE_NAME, node IP $nip)" "$LOGS/kubelet.log"
  write_kubelet_config "$nip"
  make_cgroup_root
  start_daemon kubelet "$KUBE_BIN/kubelet" --config "$CLUSTER_DIR/kubelet-config.yaml" \
    --kubeconfig "$CLUSTER_DIR/kubelet.kubeconfig" --root-dir "$KUBELET_DIR" --cert-dir "$KUBELET_DIR/pki" \
    --hostname-override "$NODE_NAME" --node-ip "$nip" --v 1
  wait_for 60 kubelet curl -fsS "http://127.0.0.1:$KUBELET_HEALTHZ_PORT/healthz"
  step "waiting for node $NODE_NAME to be Ready" "$LOGS/kubelet.log"
  wait_for 90 kubelet node_ready
}

# The kubelet wants its cgroup root in every hierarchy before it starts.
make_cgroup_root() {
  [ "$CGROUP_ROOT" = / ] && return 0
  local h
  for h in /sys/fs/cgroup/*/; do
    [ -f "$h/cgroup.procs" ] || continue
    mkdir -p "$h${CGROUP_ROOT#/}"
    if [ -f "$h/cpuset.cpus" ]; then  # a v1 cpuset starts empty: inherit the parent's
      # shellcheck disable=SC2015 # copy unless the file is there and not empty
      [ -s "$h${CGROUP_ROOT#/}/cpuset.cpus" ] && grep -q . "$h${CGROUP_ROOT#/}/cpuset.cpus" || cat "$h/cpuset.cpus" >"$h${CGROUP_ROOT#/}/cpuset.cpus"
      grep -q . "$h${CGROUP_ROOT#/}/cpuset.mems" || cat "$h/cpuset.mems" >"$h${CGROUP_ROOT#/}/cpuset.mems"
    fi
  done
}

node_ready() {
  [ "$(kc get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}

# There is no kube-proxy: one DNAT rule sends the `kubernetes` Service (what in-cluster
# clients dial) to the API server on 127.0.0.1, from pods (PREROUTING, with route_localnet
# on the bridge so the kernel accepts a loopback destination) and from host-network pods.
route_kubernetes_service() {
  step "routing the kubernetes Service ($KUBERNETES_SVC_IP:443) to the API server" ""
  # The bridge is made here (the CNI plugin adopts it) so route_localnet is set before
  # the first pod.
  ip link add "$BRIDGE" type bridge 2>/dev/null || true
  ip link set "$BRIDGE" up
  sysctl -qw "net.ipv4.conf.$BRIDGE.route_localnet=1"
  local cm="jvmdiag cluster $CLUSTER_INDEX: kubernetes Service"
  iptables -w 5 -t nat -N "$SVC_CHAIN" 2>/dev/null || iptables -w 5 -t nat -F "$SVC_CHAIN"
  iptables -w 5 -t nat -A "$SVC_CHAIN" -d "$KUBERNETES_SVC_IP/32" -p tcp --dport 443 -j DNAT --to-destination "127.0.0.1:$APISERVER_PORT"
  iptables -w 5 -t nat -A PREROUTING -j "$SVC_CHAIN" -m comment --comment "$cm"
  iptables -w 5 -t nat -A OUTPUT -j "$SVC_CHAIN" -m comment --comment "$cm"
}

start_node() {
  local nip="$1"
  start_registry
  start_containerd
  import_images
  route_kubernetes_service
  start_kubelet "$nip"
}
