#!/usr/bin/env bash
# Runs every benchmark in hack/bench.d/ (name order). BENCH="agent" runs only those named.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
rc=0
for b in "$REPO_ROOT"/hack/bench.d/*.sh; do
  [ -f "$b" ] || continue
  name="$(basename "$b" .sh)"
  if [ -n "${BENCH:-}" ] && ! [[ " $BENCH " == *" $name "* ]]; then continue; fi
  log "benchmark $name"
  bash "$b" || { log "benchmark $name failed"; rc=1; }
done
exit $rc
