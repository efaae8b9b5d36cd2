#!/usr/bin/env bash
# Node agent footprint by the number of JVMs it traces: for each N in BENCH_FOOTPRINT_JVMS
# ("1 50 500"), one agent (--standalone --match-jvm FootprintJvm, --max-jvms 256, or the next
# power of two above N) and N small JVMs of one JDK
# (e2e/workloads/FootprintJvm.java: once attached, each starts threads under 10 names, runs a
# GC and a thread dump and compiles a few methods, then idles). Once every JVM is attached and
# has done that, and the agent was scraped twice, prints the agent's peak RSS (VmHWM), its RSS,
# the memory of the BPF maps it holds (memlock from /proc/AGENT/fdinfo, each map once: what
# `bpftool map show` prints) and their sum, the entries in its maps, and the same two figures
# as the agent reports them itself (jvmdiag_agent_resident_memory_bytes,
# jvmdiag_agent_bpf_map_memory_bytes), the BPF links it holds (each traced JVM has its own,
# pid-filtered) and the time it spent attaching them (jvmdiag_agent_attach_seconds_total, in all
# and per JVM). Each N is skipped, saying so, when MemAvailable is below
# N x 24 MiB + 2 GiB (a JVM here takes ~15 MiB of its own).
#
# Knobs: BENCH_FOOTPRINT_JVMS ("1 50 500"), BENCH_JDK ($JDK17), BENCH_AGENT (a built agent).
# Results: $JVMDIAG_CACHE/bench/agent-footprint/footprint.txt (one line per N) and the maps'
# sizes at the largest N (maps.txt).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
read -ra COUNTS <<<"${BENCH_FOOTPRINT_JVMS-1 50 500}"
JDK="${BENCH_JDK:-$JDK17}"
LISTEN=127.0.0.1:19471
[ "$(id -u)" -eq 0 ] || die "the agent footprint benchmark needs root (eBPF)"
WORK="$JVMDIAG_CACHE/bench/agent-footprint"
rm -rf "$WORK"; mkdir -p "$WORK"

bench_agent  # sets AGENT
"$JDK/bin/javac" -d "$WORK/classes" "$JVMDIAG_WORKLOADS/FootprintJvm.java"

AGENT_PID=""
JVM_PIDS=()
stop_all() {
  local p
  if [ -n "$AGENT_PID" ]; then kill "$AGENT_PID" 2>/dev/null || true; wait "$AGENT_PID" 2>/dev/null || true; AGENT_PID=""; fi
  [ ${#JVM_PIDS[@]} -gt 0 ] || return 0
  for p in "${JVM_PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  for p in "${JVM_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  JVM_PIDS=()
}
# shellcheck disable=SC2154 # rc is set in the trap itself
trap 'rc=$?; trap - EXIT; stop_all; exit $rc' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

metric() { awk -v n="$2" '$1 == n {printf "%.0f\n", $2; exit}' "$1"; }   # metric PROMFILE NAME (no labels), as an integer
sum_metric() { awk -v n="$2" 'index($1, n "{") == 1 {s += $2} END {printf "%.0f\n", s}' "$1"; }
# map_memlock PID: "id memlock" of every BPF map the process holds, each map once.
map_memlock() {
  local f
  for f in /proc/"$1"/fdinfo/*; do awk '/^map_id:/ {id = $2} /^memlock:/ {m = $2} END {if (id != "") print id, m}' "$f" 2>/dev/null; done | sort -u -k1,1
}
mib() { awk -v b="$1" 'BEGIN {printf "%.1f", b / 1048576}'; }

# Small JVMs: what matters here is the agent, so each JVM is kept near its floor.
JAVA_FLAGS=(-Xmx16m -Xss256k -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:CICompilerCount=1 -XX:ReservedCodeCacheSize=8m)

printf '%s\n' "N max_jvms attached peak_rss_kib rss_kib bpf_maps_bytes map_entries reported_rss_bytes reported_bpf_maps_bytes links attach_seconds" > "$WORK/footprint.txt"
for n in "${COUNTS[@]}"; do
  avail=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo)
  need=$(( n * 24 * 1024 + 2 * 1024 * 1024 ))
  if [ "$avail" -lt "$need" ]; then
    log "footprint: skipping $n JVMs: MemAvailable $((avail / 1024)) MiB < $((need / 1024)) MiB"
    echo "$n - skipped - - - - - - - -" >> "$WORK/footprint.txt"; continue
  fi
  dir="$WORK/run-$n"; mkdir -p "$dir"
  # The agent's default --max-jvms (256) up to 256 JVMs; above, the next power of two, as a
  # node running that many would be configured (the tables are sized for it).
  slots=256; while [ "$slots" -lt "$n" ]; do slots=$((slots * 2)); done; [ "$slots" -le 1024 ] || slots=1024
  "$AGENT" --standalone --listen "$LISTEN" --match-jvm FootprintJvm --max-jvms "$slots" 2>>"$WORK/agent.log" & AGENT_PID=$!
  for _ in $(seq 100); do curl -sf "http://$LISTEN/healthz" >/dev/null && break; sleep 0.1; done
  curl -sf "http://$LISTEN/healthz" >/dev/null || { tail -n 20 "$WORK/agent.log" >&2; die "the agent did not come up on $LISTEN"; }
  log "footprint: starting $n JVMs"
  for i in $(seq "$n"); do
    MALLOC_ARENA_MAX=1 "$JDK/bin/java" "${JAVA_FLAGS[@]}" -cp "$WORK/classes" FootprintJvm "$dir" >/dev/null 2>&1 &
    JVM_PIDS+=($!)
    [ $((i % 25)) -ne 0 ] || sleep 1   # spread the start-ups over the two cores
  done
  attached=0
  for _ in $(seq $((n * 2 + 120))); do
    curl -sf -o "$dir/m.prom" "http://$LISTEN/metrics" && attached=$(metric "$dir/m.prom" jvmdiag_agent_jvms_attached)
    [ "${attached:-0}" -ge "$n" ] && break; sleep 0.5
  done
  [ "${attached:-0}" -ge "$n" ] || die "footprint: the agent attached $attached of $n JVMs"
  touch "$dir/go"
  for _ in $(seq $((n * 2 + 120))); do
    [ "$(find "$dir" -name 'done-*' | wc -l)" -ge "$n" ] && break; sleep 0.5
  done
  done_n=$(find "$dir" -name 'done-*' | wc -l)
  [ "$done_n" -ge "$n" ] || log "footprint: only $done_n of $n JVMs finished their start-up work"
  curl -sf -o "$dir/m.prom" "http://$LISTEN/metrics"; sleep 1
  curl -sf -o "$dir/m.prom" "http://$LISTEN/metrics"
  hwm=$(awk '/^VmHWM:/ {print $2}' /proc/$AGENT_PID/status)
  rss=$(awk '/^VmRSS:/ {print $2}' /proc/$AGENT_PID/status)
  map_memlock "$AGENT_PID" > "$dir/maps-memlock.txt"
  maps=$(awk '{s += $2} END {print s + 0}' "$dir/maps-memlock.txt")
  entries=$(sum_metric "$dir/m.prom" jvmdiag_agent_map_entries)
  echo "$n $slots $(metric "$dir/m.prom" jvmdiag_agent_jvms_attached) $hwm $rss $maps $entries $(metric "$dir/m.prom" jvmdiag_agent_resident_memory_bytes) $(metric "$dir/m.prom" jvmdiag_agent_bpf_map_memory_bytes) $(metric "$dir/m.prom" jvmdiag_agent_bpf_links) $(awk '$1 == "jvmdiag_agent_attach_seconds_total" {print $2; exit}' "$dir/m.prom")" >> "$WORK/footprint.txt"
  # The maps by size, named (bpftool), at this N.
  while read -r id bytes; do
    echo "$bytes $(bpftool map show id "$id" 2>/dev/null | head -n1 | awk '{for (i = 1; i <= NF; i++) if ($i == "name") print $(i + 1)}')"
  done < "$dir/maps-memlock.txt" | sort -rn > "$WORK/maps-$n.txt"
  stop_all
done

echo
echo "agent footprint by traced JVMs (JDK $("$JDK/bin/java" -version 2>&1 | awk -F'"' 'NR == 1 {print $2}'), $(nproc) cores, kernel $(uname -r))"
printf '%6s %9s %9s %14s %9s %15s %15s %12s %7s %16s\n' JVMs max-jvms attached "peak RSS MiB" "RSS MiB" "BPF maps MiB" "RSS+maps MiB" "map entries" links "attach s (/JVM)"
while read -r n slots att hwm rss maps entries rep_rss rep_maps links attach_s; do
  [ "$n" = N ] && continue
  if [ "$att" = skipped ]; then printf '%6s %9s\n' "$n" skipped; continue; fi
  printf '%6s %9s %9s %14s %9s %15s %15s %12s %7s %16s\n' "$n" "$slots" "$att" "$(mib $((hwm * 1024)))" "$(mib $((rss * 1024)))" "$(mib "$maps")" \
    "$(mib $((hwm * 1024 + maps)))" "$entries" "$links" "$(awk -v t="$attach_s" -v n="$att" 'BEGIN {printf "%.2f (%.1f ms)", t, n ? 1000 * t / n : 0}')"
  echo "        the agent's own gauges: resident $(mib "$rep_rss") MiB, BPF maps $(mib "$rep_maps") MiB"
done < "$WORK/footprint.txt"
last=$(awk '$3 != "skipped" && $1 != "N" {n = $1} END {print n}' "$WORK/footprint.txt")
if [ -n "$last" ]; then
  echo "largest maps at $last JVMs (memlock bytes, name):"
  head -n 8 "$WORK/maps-$last.txt" | sed 's/^/  /'
fi
