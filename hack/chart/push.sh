#!/usr/bin/env bash
# Packages charts/jvm-diagnostics and pushes it as an OCI artifact:
# REGISTRY/charts/jvm-diagnostics:<Chart.yaml version>.
#   push.sh REGISTRY [CHART_DIR]   REGISTRY: host[:port][/path] (no scheme)
# Plain HTTP on loopback (the local cluster's registry), TLS elsewhere; credentials:
# `helm registry login HOST` first. Prints the oci:// reference and the digest.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
reg="${1:-}"
[ -n "$reg" ] || die "usage: push.sh REGISTRY[/path] [CHART_DIR] (e.g. make chart-push REGISTRY=$REGISTRY_ADDR)"
reg="${reg%/}"
case "$reg" in *://*) die "REGISTRY is host[:port][/path] without a scheme, got '$reg' (e.g. registry.example.com/team)" ;; esac
chart="${2:-$REPO_ROOT/charts/jvm-diagnostics}"
bash "$REPO_ROOT/hack/setup.d/helm.sh" >&2 || die "helm missing (hack/setup.d/helm.sh failed)"
export HELM_CACHE_HOME="${HELM_CACHE_HOME:-$JVMDIAG_CACHE/helm/cache}" HELM_CONFIG_HOME="${HELM_CONFIG_HOME:-$JVMDIAG_CACHE/helm/config}" HELM_DATA_HOME="${HELM_DATA_HOME:-$JVMDIAG_CACHE/helm/data}"
host="${reg%%/*}"
plain=()
case "$host" in 127.0.0.1|127.0.0.1:*|localhost|localhost:*) plain=(--plain-http) ;; esac
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
"$HELM" package "$chart" -d "$out" >&2 || die "helm package $chart failed"
pkg=$(ls "$out"/*.tgz)
"$HELM" push "$pkg" "oci://$reg/charts" "${plain[@]}" 2>&1 | tee "$out/push.log" >&2 \
  || die "helm push to oci://$reg/charts failed (a registry that wants credentials: helm registry login $host)"
grep -q '^Digest:' "$out/push.log" || die "helm push printed no digest: $(tail -n 2 "$out/push.log")"
ver=$(sed -nE 's/^version: *"?([^" ]+)"?.*/\1/p' "$chart/Chart.yaml")
echo "oci://$reg/charts/jvm-diagnostics --version $ver ($(sed -nE 's/^Digest: *//p' "$out/push.log"))"
