#!/usr/bin/env bash
# Starts a local Prometheus (and optionally Alertmanager + a webhook receiver) on loopback.
#
#   prom-up.sh [--dir DIR] --scrape HOST:PORT [--scrape ...] [--rules FILE ...]
#              [--scrape-interval 5s] [--eval-interval 5s] [--metric-relabel FILE]
#              [--bearer-token-file FILE] [--alertmanager] [--ttl SECONDS]
#
# --bearer-token-file: scrape with "Authorization: Bearer <the file's content>", read at each
# scrape (an agent with --metrics-auth=kubernetes).
#
# Prints shell assignments (eval-able): PROM_DIR, PROMETHEUS_URL and, with --alertmanager,
# ALERTMANAGER_URL, WEBHOOK_URL, WEBHOOK_LOG (one JSON notification per line).
# Everything listens on 127.0.0.1 on free ports and stops by itself after --ttl seconds
# (default 3600); stop it earlier with: monitoring/prom-down.sh DIR.
# Runs Prometheus 3.x and Alertmanager built from their Go modules (cached; PROMETHEUS_FLAVOR=debian:
# Debian's 2.42 and 0.25), the ones hack/lib.sh's monitoring_tools names.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
. "$HERE/../hack/lib.sh"
dir=""; scrape=(); rules=(); si=5s; ei=5s; relabel=""; token=""; am=0; ttl=3600
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) dir=$2; shift 2 ;;
    --scrape) scrape+=("$2"); shift 2 ;;
    --rules) [ -f "$2" ] || die "prom-up.sh: --rules $2: no such file"; rules+=("$(realpath "$2")"); shift 2 ;;
    --scrape-interval) si=$2; shift 2 ;;
    --eval-interval) ei=$2; shift 2 ;;
    --metric-relabel) [ -f "$2" ] || die "prom-up.sh: --metric-relabel $2: no such file"; relabel=$(realpath "$2"); shift 2 ;;
    --bearer-token-file) [ -f "$2" ] || die "prom-up.sh: --bearer-token-file $2: no such file"; token=$(realpath "$2"); shift 2 ;;
    --alertmanager) am=1; shift ;;
    --ttl) ttl=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) die "prom-up.sh: unknown argument '$1' (see --help)" ;;
  esac
done
[ ${#scrape[@]} -gt 0 ] || die "prom-up.sh: give at least one --scrape HOST:PORT (e.g. the agent's --listen address)"
# Prometheus 3.x and Alertmanager built once from their Go modules, or Debian's with
# PROMETHEUS_FLAVOR=debian (hack/lib.sh: monitoring_tools).
monitoring_tools || die "prom-up.sh: no Prometheus/Alertmanager (see above; make setup)"
[ -n "$dir" ] || dir=$(mktemp -d /tmp/jvmdiag-prom.XXXXXX)
mkdir -p "$dir"; dir=$(realpath "$dir")
PY="$JVMDIAG_CACHE/venv-monitoring/bin/python"; [ -x "$PY" ] || PY=python3
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
: >"$dir/pids"
started() { echo "$1" >>"$dir/pids"; }

prom_port=$(free_port)
{
  echo "global: {scrape_interval: $si, evaluation_interval: $ei, scrape_timeout: $si}"
  echo "rule_files:"; for r in "${rules[@]}"; do echo "- '$r'"; done; [ ${#rules[@]} -gt 0 ] || echo "  []"
  if [ $am -eq 1 ]; then
    am_port=$(free_port); hook_port=$(free_port)
    echo "alerting: {alertmanagers: [{static_configs: [{targets: ['127.0.0.1:$am_port']}]}]}"
  fi
  echo "scrape_configs:"
  echo "- job_name: jvmdiag"
  echo "  static_configs: [{targets: [$(printf "'%s'," "${scrape[@]}" | sed 's/,$//')]}]"
  [ -z "$token" ] || echo "  authorization: {credentials_file: '$token'}"
  if [ -n "$relabel" ]; then echo "  metric_relabel_configs:"; sed 's/^/  /' "$relabel"; fi
} >"$dir/prometheus.yml"
"$PROMTOOL" check config "$dir/prometheus.yml" >"$dir/promtool.log" 2>&1 || { cat "$dir/promtool.log" >&2; die "prom-up.sh: bad Prometheus config (see above)"; }

if [ $am -eq 1 ]; then
  cat >"$dir/alertmanager.yml" <<AM
route: {receiver: webhook, group_by: [alertname, vm_operation, thread_name], group_wait: 1s, group_interval: 1s, repeat_interval: 1h}
receivers:
- name: webhook
  webhook_configs: [{url: 'http://127.0.0.1:$hook_port/', send_resolved: true}]
AM
  if [ -n "${AMTOOL:-}" ]; then
    "$AMTOOL" check-config "$dir/alertmanager.yml" >"$dir/amtool.log" 2>&1 || { cat "$dir/amtool.log" >&2; die "prom-up.sh: bad Alertmanager config (see above)"; }
  fi
  "$PY" "$HERE/webhook_receiver.py" --port "$hook_port" --out "$dir/webhook.jsonl" --ttl "$ttl" >"$dir/webhook.log" 2>&1 &
  started $!
  # --cluster.listen-address= : no gossip port (it would listen on every interface).
  "$ALERTMANAGER" --config.file="$dir/alertmanager.yml" --storage.path="$dir/am" \
    --web.listen-address="127.0.0.1:$am_port" --cluster.listen-address= >"$dir/alertmanager.log" 2>&1 &
  started $!
fi
# Prometheus 2.x serves console templates (from /dev/null: none); 3.0 removed them and the flags.
consoles=()
"$PROMETHEUS" --help 2>&1 | grep -q -- --web.console.templates \
  && consoles=(--web.console.templates=/dev/null --web.console.libraries=/dev/null)
"$PROMETHEUS" --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/data" \
  --web.listen-address="127.0.0.1:$prom_port" --storage.tsdb.retention.time=2h \
  "${consoles[@]}" >"$dir/prometheus.log" 2>&1 &
started $!
# Stop by itself after the TTL, whoever forgets prom-down.sh.
( sleep "$ttl" & echo $! >"$dir/watchdog.pid"; wait $!; "$HERE/prom-down.sh" "$dir" ) >/dev/null 2>&1 </dev/null &

wait_ready() {  # url name log
  for _ in $(seq 1 100); do curl -fsS "$1" >/dev/null 2>&1 && return 0; sleep 0.2; done
  cat "$3" >&2; die "prom-up.sh: $2 did not become ready"
}
wait_ready "http://127.0.0.1:$prom_port/-/ready" Prometheus "$dir/prometheus.log"
echo "PROM_DIR=$dir"
echo "PROMETHEUS_URL=http://127.0.0.1:$prom_port"
if [ $am -eq 1 ]; then
  wait_ready "http://127.0.0.1:$am_port/-/ready" Alertmanager "$dir/alertmanager.log"
  echo "ALERTMANAGER_URL=http://127.0.0.1:$am_port"
  echo "WEBHOOK_URL=http://127.0.0.1:$hook_port/"
  echo "WEBHOOK_LOG=$dir/webhook.jsonl"
fi
