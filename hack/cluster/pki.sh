# Certificates, keys, tokens and kubeconfigs of the local cluster (sourced by up.sh).
# Made once per instance and reused: a CA (also the controller-manager's CSR signing CA
# and the kubelet's client CA), the API server's serving cert, its client cert for the
# kubelet, the ServiceAccount signing key pair, and static bearer tokens.

_cert() {  # _cert NAME SUBJECT [SAN]: key + cert signed by the cluster CA
  local name="$1" subj="$2" san="${3:-}"
  openssl genrsa -out "$PKI/$name.key" 2048 2>/dev/null
  openssl req -new -key "$PKI/$name.key" -subj "$subj" -out "$PKI/$name.csr" 2>/dev/null
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    if [ -n "$san" ]; then echo "extendedKeyUsage=serverAuth,clientAuth"; echo "subjectAltName=$san"
    else echo "extendedKeyUsage=clientAuth"; fi
  } >"$PKI/$name.ext"
  openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
    -days 3650 -sha256 -extfile "$PKI/$name.ext" -out "$PKI/$name.crt" 2>/dev/null
  rm -f "$PKI/$name.csr" "$PKI/$name.ext"
}

make_pki() {
  local nip="$1"
  mkdir -p "$PKI"; chmod 700 "$PKI"
  # The serving cert names the node IP: remake it when the node IP changed.
  if [ -f "$PKI/apiserver.crt" ] && ! openssl x509 -in "$PKI/apiserver.crt" -noout -text | grep -q "IP Address:$nip"; then
    rm -f "$PKI/apiserver.crt"
  fi
  if [ ! -f "$PKI/ca.crt" ]; then
    openssl genrsa -out "$PKI/ca.key" 2048 2>/dev/null
    openssl req -x509 -new -key "$PKI/ca.key" -subj "/CN=jvmdiag-cluster-ca" -days 3650 -sha256 \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" \
      -out "$PKI/ca.crt" 2>/dev/null
    rm -f "$PKI/apiserver.crt" "$PKI/apiserver-kubelet-client.crt" "$PKI/front-proxy-client.crt"
  fi
  [ -f "$PKI/apiserver.crt" ] || _cert apiserver "/CN=kube-apiserver" \
    "IP:127.0.0.1,IP:$nip,IP:$KUBERNETES_SVC_IP,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  # The API server calls the kubelet (logs, exec) with this; system:masters passes the
  # kubelet's webhook authorization.
  [ -f "$PKI/apiserver-kubelet-client.crt" ] || _cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
  # The front proxy (aggregated APIs) identity; the requestheader CA is the cluster CA,
  # and only this CN may assert users through headers.
  [ -f "$PKI/front-proxy-client.crt" ] || _cert front-proxy-client "/CN=front-proxy-client"
  if [ ! -f "$PKI/sa.key" ]; then
    openssl genrsa -out "$PKI/sa.key" 2048 2>/dev/null
    openssl rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
  fi
  grep -q ",system:node:$NODE_NAME," "$PKI/tokens.csv" 2>/dev/null || rm -f "$PKI/tokens.csv"
  if [ ! -f "$PKI/tokens.csv" ]; then
    local t=()
    for _ in 1 2 3 4; do t+=("$(openssl rand -hex 24)"); done
    # token,user,uid,"groups": the admin is system:masters; components use the users the
    # bootstrap RBAC roles name; the kubelet is system:node:<name> for the Node authorizer.
    {
      echo "${t[0]},admin,admin,\"system:masters\""
      echo "${t[1]},system:kube-controller-manager,kube-controller-manager"
      echo "${t[2]},system:kube-scheduler,kube-scheduler"
      echo "${t[3]},system:node:$NODE_NAME,kubelet,\"system:nodes\""
    } >"$PKI/tokens.csv"
  fi
  chmod 600 "$PKI"/*.key "$PKI/tokens.csv"
  _kubeconfig "$KUBECONFIG_ADMIN" admin 1
  _kubeconfig "$CLUSTER_DIR/controller-manager.kubeconfig" controller-manager 2
  _kubeconfig "$CLUSTER_DIR/scheduler.kubeconfig" scheduler 3
  _kubeconfig "$CLUSTER_DIR/kubelet.kubeconfig" kubelet 4
}

_kubeconfig() {  # _kubeconfig FILE USER LINE_OF_tokens.csv
  local token
  token=$(sed -n "${3}p" "$PKI/tokens.csv" | cut -d, -f1)
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: jvmdiag
  cluster:
    server: $APISERVER_URL
    certificate-authority: $PKI/ca.crt
users:
- name: $2
  user:
    token: $token
contexts:
- name: jvmdiag
  context: {cluster: jvmdiag, user: $2}
current-context: jvmdiag
EOF
  chmod 600 "$1"
}
