#!/usr/bin/env bash
# Stops the operator started by up.sh (this CLUSTER_INDEX) and removes its webhook registrations,
# so pods and JvmDiagnostics are no longer sent to a webhook that is gone.
set -euo pipefail
. "$(dirname "$0")/../../hack/lib.sh"
if operator_alive; then
  pid=$(operator_pid)
  kill "$pid"
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  kill -9 "$pid" 2>/dev/null || true
  log "operator stopped (pid $pid)"
fi
rm -f "$OPERATOR_STATE/operator.pid"
if [ -z "${KUBECONFIG:-}" ]; then KUBECONFIG="$KUBECONFIG_ADMIN"; fi
# the registrations up.sh created, under the chart's name (up.sh saved it)
config=$(cat "$OPERATOR_STATE/webhook-config" 2>/dev/null || echo jvmdiag-jvm-diagnostics-webhook)
if [ -f "$KUBECONFIG" ] && [ "${KEEP_WEBHOOK:-0}" != 1 ]; then
  KUBECONFIG="$KUBECONFIG" timeout 10 "$KUBECTL" delete mutatingwebhookconfiguration "$config" --ignore-not-found >/dev/null 2>&1 || true
  # the JvmDiagnostics validating webhook fails closed: without the operator, nothing could be applied
  KUBECONFIG="$KUBECONFIG" timeout 10 "$KUBECTL" delete validatingwebhookconfiguration "$config" --ignore-not-found >/dev/null 2>&1 || true
fi
exit 0
