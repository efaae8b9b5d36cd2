# The control plane: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, all on
# 127.0.0.1 (sourced by up.sh; needs lib.sh, pki.sh, KUBE_BIN).

start_etcd() {
  step "starting etcd (127.0.0.1:$ETCD_CLIENT_PORT)" "$LOGS/etcd.log"
  # A fresh store each time: the cluster is disposable, and a stale one would hold pods
  # of a node whose containers are gone.
  rm -rf "$ETCD_DATA"; mkdir -p "$ETCD_DATA"; chmod 700 "$ETCD_DATA"
  start_daemon etcd nice etcd --name default --data-dir "$ETCD_DATA" \
    --listen-client-urls "http://127.0.0.1:$ETCD_CLIENT_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_CLIENT_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "default=http://127.0.0.1:$ETCD_PEER_PORT" --snapshot-count 10000 --log-level warn
  wait_for 30 etcd curl -fsS "http://127.0.0.1:$ETCD_CLIENT_PORT/health"
}

start_apiserver() {
  local nip="$1"
  step "starting kube-apiserver ($APISERVER_URL)" "$LOGS/kube-apiserver.log"
  # --advertise-address: the `kubernetes` endpoints may not be loopback; pods reach the
  # server through $SVC_CHAIN (node.sh). --enable-aggregator-routing: webhooks behind a
  # Service are called on the endpoint (pod) IP, there is no kube-proxy.
  # shellcheck disable=SC2086 # APISERVER_EXTRA_ARGS: flags, split on purpose
  start_daemon kube-apiserver "$KUBE_BIN/kube-apiserver" \
    --bind-address 127.0.0.1 --secure-port "$APISERVER_PORT" --advertise-address "$nip" \
    --etcd-servers "http://127.0.0.1:$ETCD_CLIENT_PORT" \
    --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
    --client-ca-file "$PKI/ca.crt" --token-auth-file "$PKI/tokens.csv" \
    --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
    --allow-privileged=true \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
    --service-cluster-ip-range "$SERVICE_CIDR" \
    --kubelet-client-certificate "$PKI/apiserver-kubelet-client.crt" --kubelet-client-key "$PKI/apiserver-kubelet-client.key" \
    --kubelet-preferred-address-types InternalIP \
    --enable-aggregator-routing=true \
    --requestheader-client-ca-file "$PKI/ca.crt" --requestheader-allowed-names front-proxy-client \
    --requestheader-username-headers X-Remote-User --requestheader-group-headers X-Remote-Group \
    --requestheader-extra-headers-prefix X-Remote-Extra- \
    --proxy-client-cert-file "$PKI/front-proxy-client.crt" --proxy-client-key-file "$PKI/front-proxy-client.key" \
    --profiling=false --event-ttl 1h ${APISERVER_EXTRA_ARGS:-}
  wait_for 90 kube-apiserver curl -fsS --cacert "$PKI/ca.crt" "$APISERVER_URL/readyz"
}

start_controller_manager() {
  step "starting kube-controller-manager (127.0.0.1:$CM_PORT)" "$LOGS/kube-controller-manager.log"
  local kcfg="$CLUSTER_DIR/controller-manager.kubeconfig"
  # The cluster CA signs CSRs; sa.key signs the legacy ServiceAccount token Secrets and
  # root-ca-file goes into every kube-root-ca.crt ConfigMap.
  start_daemon kube-controller-manager "$KUBE_BIN/kube-controller-manager" \
    --kubeconfig "$kcfg" --authentication-kubeconfig "$kcfg" --authorization-kubeconfig "$kcfg" \
    --bind-address 127.0.0.1 --secure-port "$CM_PORT" --leader-elect=false \
    --controllers '*' --use-service-account-credentials=true \
    --service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt" \
    --cluster-signing-cert-file "$PKI/ca.crt" --cluster-signing-key-file "$PKI/ca.key" \
    --service-cluster-ip-range "$SERVICE_CIDR" --allocate-node-cidrs=false
  wait_for 60 kube-controller-manager curl -fsSk "https://127.0.0.1:$CM_PORT/healthz"
}

start_scheduler() {
  step "starting kube-scheduler (127.0.0.1:$SCHED_PORT)" "$LOGS/kube-scheduler.log"
  local kcfg="$CLUSTER_DIR/scheduler.kubeconfig"
  start_daemon kube-scheduler "$KUBE_BIN/kube-scheduler" \
    --kubeconfig "$kcfg" --authentication-kubeconfig "$kcfg" --authorization-kubeconfig "$kcfg" \
    --bind-address 127.0.0.1 --secure-port "$SCHED_PORT" --leader-elect=false
  wait_for 60 kube-scheduler curl -fsSk "https://127.0.0.1:$SCHED_PORT/healthz"
}

# Pods can be created in a namespace only once its `default` ServiceAccount exists: wait
# for it, which also proves the controller-manager talks to the API server.
wait_default_sa() {
  step "waiting for the default ServiceAccount (controller-manager working)" "$LOGS/kube-controller-manager.log"
  wait_for 60 kube-controller-manager kc -n default get serviceaccount default
}
