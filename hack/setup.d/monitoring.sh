#!/usr/bin/env bash
# Python venv for the monitoring generator and tests (PyYAML; matplotlib for the PNG
# previews is added by `make monitoring-previews`), cached in $JVMDIAG_CACHE/venv-monitoring;
# npm packages for the dashboard type-check (dashboards/node_modules, git-ignored).
# Idempotent and quick once done.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
venv="$JVMDIAG_CACHE/venv-monitoring"
want="PyYAML==6.0.2"
exec 7>"$JVMDIAG_CACHE/monitoring-setup.lock"; flock 7
pinned_venv "$venv" "$want"
dash="$REPO_ROOT/dashboards"
if [ -f "$dash/package-lock.json" ] && ! cmp -s "$dash/package-lock.json" "$dash/node_modules/.jvmdiag-installed" 2>/dev/null; then
  log "npm ci in dashboards/ (@grafana/schema, typescript)"
  (cd "$dash" && npm ci --silent --no-audit --no-fund --cache "$JVMDIAG_CACHE/npm" >/dev/null \
    && cp package-lock.json node_modules/.jvmdiag-installed)
fi
