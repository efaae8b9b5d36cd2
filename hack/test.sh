#!/usr/bin/env bash
# Runs every suite in hack/suites/ (in name order) and prints one closing line summing them.
# A suite prints "suite NAME: P passed, F failed" as its last such line; a suite that exits
# non-zero without one counts as one failure. SUITES="agent operator" runs only those.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
RESULTS="$REPO_ROOT/.results"; mkdir -p "$RESULTS"
total_p=0; total_f=0; table=""
for s in "$REPO_ROOT"/hack/suites/*.sh; do
  name="$(basename "$s" .sh)"; name="${name#[0-9][0-9]-}"
  if [ -n "${SUITES:-}" ] && ! [[ " $SUITES " == *" $name "* ]]; then continue; fi
  log "suite $name (log: .results/$name.log)"
  start=$(date +%s)
  bash "$s" > >(tee "$RESULTS/$name.log") 2>&1 </dev/null
  rc=$?
  secs=$(( $(date +%s) - start ))
  line=$(grep -E '^suite [^:]+: [0-9]+ passed, [0-9]+ failed' "$RESULTS/$name.log" | tail -n1)
  if [ -n "$line" ]; then
    p=$(sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed.*/\1/' <<<"$line")
    f=$(sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed.*/\2/' <<<"$line")
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  else
    p=0; f=1
  fi
  total_p=$((total_p + p)); total_f=$((total_f + f))
  table="$table$(printf '%-12s %5s passed %4s failed %5ss' "$name" "$p" "$f" "$secs")\n"
done
printf '\n%b' "$table"
echo "$total_p passed, $total_f failed"
[ "$total_f" -eq 0 ]
