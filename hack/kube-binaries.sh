#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager, kube-scheduler, kubelet and kubectl
# v$KUBE_VERSION from the Go module k8s.io/kubernetes, once, into the cache.
# There is no package for them; the module needs each staging module replaced by its
# published v0.x twin. Cold: ~20 min on 2 cores. Prints the bin directory on success.
set -euo pipefail
KUBE_VERSION="${KUBE_VERSION:-1.34.4}"
CACHE="${JVMDIAG_CACHE:-$HOME/.cache/jvm-diagnostics}"
# Layout that kube-api-test's offline mode expects: k8s/<version>-linux-amd64/<binary>
BIN="$CACHE/k8s/${KUBE_VERSION}-linux-amd64"
BINARIES=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl)

have_all() { for b in "${BINARIES[@]}"; do [ -x "$BIN/$b" ] || return 1; done; }
if have_all; then echo "$BIN"; exit 0; fi

mkdir -p "$BIN" "$CACHE/kube-build"
exec 9>"$CACHE/kube-build.lock"
flock 9
if have_all; then echo "$BIN"; exit 0; fi

MOD="$CACHE/kube-build/mod"
mkdir -p "$MOD"
cd "$MOD"
minor="${KUBE_VERSION#*.}"; minor="${minor%%.*}"
staging=(api apiextensions-apiserver apimachinery apiserver cli-runtime client-go cloud-provider
  cluster-bootstrap code-generator component-base component-helpers controller-manager cri-api
  cri-client csi-translation-lib dynamic-resource-allocation endpointslice externaljwt kms
  kube-aggregator kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics
  mount-utils pod-security-admission sample-apiserver sample-cli-plugin sample-controller)
{
  echo "module jvmdiag.local/kubebuild"
  echo "go 1.24"
  echo "require k8s.io/kubernetes v${KUBE_VERSION}"
  for s in "${staging[@]}"; do echo "replace k8s.io/$s => k8s.io/$s v0.${minor}.${KUBE_VERSION##*.}"; done
} > go.mod
cat > tools.go <<'GO'
//go:build tools
package tools
import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
echo ">> resolving k8s.io/kubernetes v$KUBE_VERSION module graph" >&2
GOFLAGS=-mod=mod go mod tidy -e >&2 2>"$CACHE/kube-build/tidy.log" || { echo "go mod tidy failed: see $CACHE/kube-build/tidy.log" >&2; exit 1; }
ld="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ld="$ld -X $p.gitVersion=v${KUBE_VERSION} -X $p.gitMajor=1 -X $p.gitMinor=${minor} -X $p.gitTreeState=clean -X $p.buildDate=2026-01-01T00:00:00Z"
done
for b in "${BINARIES[@]}"; do
  [ -x "$BIN/$b" ] && continue
  echo ">> building $b v$KUBE_VERSION (cached in $BIN)" >&2
  CGO_ENABLED=0 go build -mod=mod -trimpath -ldflags "$ld" -o "$BIN/$b.tmp" "k8s.io/kubernetes/cmd/$b" >&2
  mv "$BIN/$b.tmp" "$BIN/$b"
done
echo "$BIN"
