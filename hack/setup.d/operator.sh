#!/usr/bin/env bash
# kube-api-test (the operator's *IT tests) looks for etcd next to kube-apiserver in
# $JVMDIAG_CACHE/k8s/<version>-linux-amd64/; Debian's etcd-server provides it.
set -euo pipefail
DIR="${JVMDIAG_CACHE:-$HOME/.cache/jvm-diagnostics}/k8s/${KUBE_VERSION:-1.34.4}-linux-amd64"
mkdir -p "$DIR"
if [ -x /usr/bin/etcd ] && [ ! -e "$DIR/etcd" ]; then ln -sf /usr/bin/etcd "$DIR/etcd"; fi
exit 0
