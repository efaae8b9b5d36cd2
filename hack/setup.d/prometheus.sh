#!/usr/bin/env bash
# Prometheus 3.x (prometheus, promtool) and Alertmanager (alertmanager, amtool) from their Go
# modules, built once into $JVMDIAG_CACHE/monitoring/ by hack/monitoring-binaries.sh (which
# says how, and which versions); quick once done. Debian's 2.42 / 0.25 come from
# hack/packages/monitoring.apt (PROMETHEUS_FLAVOR=debian).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
"$REPO_ROOT/hack/monitoring-binaries.sh" >/dev/null
