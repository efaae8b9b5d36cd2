#!/usr/bin/env bash
# Suite "lint": every formatter and linter (hack/lint.sh check), first because it is fast
# and a formatting slip should not wait for the long suites. Each check counts as one test.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
bash "$REPO_ROOT/hack/lint.sh" check 2>&1 | tee "$out"
p=$(grep -c '^lint [a-z-]*: ok$' "$out")
f=$(grep -c '^lint [a-z-]*: FAILED$' "$out")
if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then f=1; log "no lint check ran"; fi
suite_result lint "$p" "$f"
[ "$f" -eq 0 ]
