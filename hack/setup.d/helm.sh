#!/usr/bin/env bash
# Helm v3.22.0 from its Go module, built once into the cache (no binary downloads here).
set -euo pipefail
BIN="${JVMDIAG_CACHE:-$HOME/.cache/jvm-diagnostics}/bin"
[ -x "$BIN/helm" ] && exit 0
mkdir -p "$BIN"
echo ">> building helm v3.22.0 into $BIN (once)" >&2
GOBIN="$BIN" CGO_ENABLED=0 go install helm.sh/helm/v3/cmd/helm@v3.22.0
