#!/usr/bin/env bash
# The CRDs the chart can create objects of, taken from their projects' Go modules through
# the Go proxy (no other downloads) and cached:
#   Prometheus Operator v0.85.0: ServiceMonitor, PodMonitor, PrometheusRule
#   cert-manager v1.21.2:        Certificate, Issuer, ClusterIssuer
# Prints the directory holding them (apply it with kubectl apply --server-side -f DIR).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
PROM_OP=v0.85.0
CERT_MANAGER=v1.21.2
OUT="$JVMDIAG_CACHE/third-party-crds/prom-operator-$PROM_OP-cert-manager-$CERT_MANAGER"
if [ ! -f "$OUT/.done" ]; then
  exec 9>"$JVMDIAG_CACHE/third-party-crds.lock"; flock 9
  if [ ! -f "$OUT/.done" ]; then
    log "fetching the Prometheus Operator $PROM_OP and cert-manager $CERT_MANAGER CRDs from the Go proxy (once)"
    dirs=$(cd /tmp && GOFLAGS=-mod=mod go mod download -json \
      "github.com/prometheus-operator/prometheus-operator@$PROM_OP" "github.com/cert-manager/cert-manager@$CERT_MANAGER" |
      python3 -c 'import json,sys
dec=json.JSONDecoder(); s=sys.stdin.read(); i=0
while i < len(s.rstrip()):
    o,i=dec.raw_decode(s,i); i=len(s)-len(s[i:].lstrip())
    print(o.get("Dir") or sys.exit("go mod download: "+o.get("Error","no Dir")))')
    rm -rf "$OUT"; mkdir -p "$OUT"
    for d in $dirs; do
      case "$d" in
        *prometheus-operator@*) for k in servicemonitors podmonitors prometheusrules; do
            cp "$d/example/prometheus-operator-crd/monitoring.coreos.com_$k.yaml" "$OUT/"; done ;;
        *cert-manager@*) for k in certificates issuers clusterissuers certificaterequests; do
            cp "$d/deploy/crds/cert-manager.io_$k.yaml" "$OUT/"; done ;;
      esac
    done
    chmod 644 "$OUT"/*.yaml
    touch "$OUT/.done"
  fi
fi
echo "$OUT"
