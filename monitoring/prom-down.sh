#!/usr/bin/env bash
# Stops what prom-up.sh DIR started (by the pids it recorded), then its watchdog.
set -uo pipefail
dir=${1:?usage: prom-down.sh DIR (the PROM_DIR prom-up.sh printed)}
[ -f "$dir/pids" ] || exit 0
while read -r pid; do kill "$pid" 2>/dev/null; done <"$dir/pids"
for _ in $(seq 1 50); do
  alive=0; while read -r pid; do kill -0 "$pid" 2>/dev/null && alive=1; done <"$dir/pids"
  [ $alive -eq 0 ] && break; sleep 0.1
done
while read -r pid; do kill -9 "$pid" 2>/dev/null; done <"$dir/pids"
rm -f "$dir/pids"
# The watchdog's sleep: once it ends, the watchdog finds nothing left to stop.
[ -f "$dir/watchdog.pid" ] && { kill "$(cat "$dir/watchdog.pid")" 2>/dev/null; rm -f "$dir/watchdog.pid"; }
exit 0
