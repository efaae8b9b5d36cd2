#!/usr/bin/env bash
# Node agent overhead: thread storm (start+join BENCH_THREADS threads) and safepoint storm
# (thread dumps + GCs), each without and with the agent (its on-demand starter probe kept off,
# `agent`, and attached for the whole measured part without culprit stacks, `starters`, with them
# at their default budget, `stacks`, and with a stack at every start, `stacks-all`, whose extra CPU
# over `starters` per stack taken is the cost of one stack) and under the tools users have today
# (-Xlog to a file, JFR, async-profiler tracing JVM_StartThread), alternating in one run for
# BENCH_ROUNDS rounds (order rotated each round). Prints the slowdown against the baseline of
# the same round (median and min..max), the agent's attach time and what attaching cost the JVM
# (apart from the slowdown), and the agent's footprint (peak RSS + BPF map memory).
#
# Start protocol: each workload JVM prints "READY <pid>" and waits for a line on stdin before
# its measured part. The line is sent once the JVM has idled BENCH_IDLE_MS after READY (every
# configuration) and, with the agent, once the agent's /metrics lists the JVM (jvm_info with its
# pid: every probe of that JVM is attached), so attaching never overlaps the measured part.
# Before its idle time each thread-storm JVM starts BENCH_WARM_THREADS threads (`threads N` on
# stdin, every configuration alike): with `starters` that passes the starter threshold, and the
# go also waits for the agent to report the probe attached to the JVM; its window
# (--starter-window-seconds 3600) outlasts the storm, and the probe must have named the starter
# of every thread the storm started.
#
# Untraced neighbour (BENCH_NEIGHBOUR=1, the default): each storm in a JVM the agent does not
# trace, beside an idle JVM it does (e2e/workloads/IdleJvm.java), both from their own overlay
# mount of the same JDK files, as two pods of one image where one has a JvmDiagnostics; baseline
# = the same idle JVM, no agent. The storm's slowdown must be within noise (goal <= 0.5 %): the
# agent's probes sit in the traced process alone.
#
# Before every run the bench waits until the machine is quiet (hack/lib.sh bench_wait_quiet:
# at most BENCH_MAX_BUSY %, default 15, of the cores busy over a second); it prints the load and
# refuses to report when a run had to start on a busy machine.
#
# Shared-JDK scenario (BENCH_SHARED, e.g. "0 1 8"): a thread storm beside N idle JVMs of the
# same JDK, every JVM (the storm too) run through its own overlay mount of the JDK, as
# containers of one image are; baseline and agent alternate with the same idle JVMs running.
# The storm's slowdown and its counted thread starts must not depend on N.
#
# Knobs: BENCH_NEIGHBOUR (1), BENCH_MAX_BUSY (15), BENCH_ROUNDS (10), BENCH_THREADS (100000), BENCH_SAFEPOINT_ROUNDS (300), BENCH_JDK ($JDK17),
# BENCH_WORKLOADS ("ThreadStorm SafepointStorm"), BENCH_CONFIGS ("baseline agent starters stacks stacks-all xlog jfr asyncprof"),
# BENCH_IDLE_MS (1000), BENCH_WARM_THREADS (500), BENCH_SHARED ("0 1 8"; "" skips the scenario, as do BENCH_WORKLOADS
# without ThreadStorm and BENCH_CONFIGS without agent), BENCH_AGENT (an agent
# binary to measure instead of building node-agent, e.g. to compare two builds),
# BENCH_BPF_STATS (1: kernel.bpf_stats_enabled during the run, restored after; each agent run's
# BPF programs' run counts and time per run, from the agent's descriptors. The statistics
# cost every BPF program on the host two clock reads per run: not for the slowdown figures).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
ROUNDS="${BENCH_ROUNDS:-10}"
THREADS="${BENCH_THREADS:-100000}"
SP_ROUNDS="${BENCH_SAFEPOINT_ROUNDS:-300}"
JDK="${BENCH_JDK:-$JDK17}"
IDLE_MS="${BENCH_IDLE_MS:-1000}"
WARM="${BENCH_WARM_THREADS:-500}"
BPF_STATS="${BENCH_BPF_STATS:-0}"
SHARED="${BENCH_SHARED-0 1 8}"
NEIGHBOUR="${BENCH_NEIGHBOUR:-1}"
LISTEN=127.0.0.1:19470
[ "$(id -u)" -eq 0 ] || die "the agent benchmark needs root (eBPF, overlay mounts)"
WORK="$JVMDIAG_CACHE/bench/agent"

# Everything this script mounted lives under $WORK; unmount it (deepest first), also what an
# interrupted earlier run left, before anything under $WORK is removed.
unmount_all() {
  local m
  # shellcheck disable=SC2013 # mount points (/proc/mounts escapes spaces as \040)
  for m in $(awk -v w="$WORK/" 'index($2, w) == 1 {print $2}' /proc/mounts | sort -r); do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || log "could not unmount $m"
  done
}
unmount_all
rm -rf "$WORK"; mkdir -p "$WORK"

read -ra CONFIGS <<<"${BENCH_CONFIGS:-baseline agent starters stacks stacks-all xlog jfr asyncprof}"
read -ra WORKLOADS <<<"${BENCH_WORKLOADS:-ThreadStorm SafepointStorm}"
read -ra SHARED_NS <<<"$SHARED"
case " ${CONFIGS[*]} " in *" baseline "*) ;; *) die "BENCH_CONFIGS must include baseline (every slowdown is against it)";; esac

bench_agent  # sets AGENT

AP_LIB=""
if [[ " ${CONFIGS[*]} " == *" asyncprof "* ]]; then
  AP_JAR="$JVMDIAG_CACHE/async-profiler/async-profiler-4.0-linux-x64.jar"
  if [ ! -f "$AP_JAR" ]; then
    log "fetching async-profiler from Maven Central"
    mvn -q dependency:copy -Dartifact=tools.profiler:async-profiler:4.0:jar:linux-x64 \
      -DoutputDirectory="$JVMDIAG_CACHE/async-profiler" >/dev/null
  fi
  (cd "$WORK" && unzip -o -q "$AP_JAR" linux-x64/libasyncProfiler.so)
  AP_LIB="$WORK/linux-x64/libasyncProfiler.so"
fi

"$JDK/bin/javac" -d "$WORK/classes" "$JVMDIAG_WORKLOADS"/{ThreadStorm,SafepointStorm,BenchStart,IdleJvm}.java

# Processes this script started; all of them are stopped, and every mount removed, on any exit
# (end, error, Ctrl-C).
AGENT_PID=""
JVM_PIDS=()
stop_agent() { if [ -n "$AGENT_PID" ]; then kill "$AGENT_PID" 2>/dev/null || true; wait "$AGENT_PID" 2>/dev/null || true; AGENT_PID=""; fi; }
stop_jvms() {
  local p
  [ ${#JVM_PIDS[@]} -gt 0 ] || return 0
  for p in "${JVM_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for _ in $(seq 50); do
    local alive=0
    for p in "${JVM_PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break; sleep 0.1
  done
  for p in "${JVM_PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  JVM_PIDS=()
}
STATS_WAS=""
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  set +e
  stop_agent; stop_jvms; unmount_all
  [ -z "$STATS_WAS" ] || sysctl -qw kernel.bpf_stats_enabled="$STATS_WAS"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
if [ "$BPF_STATS" = 1 ]; then
  STATS_WAS=$(sysctl -n kernel.bpf_stats_enabled); sysctl -qw kernel.bpf_stats_enabled=1
fi
forget_jvm() { local p keep=(); for p in "${JVM_PIDS[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done; JVM_PIDS=("${keep[@]+"${keep[@]}"}"); }

# Wall clock in µs from bash's own clock (no fork while a JVM idles): us=${EPOCHREALTIME/[.,]/}

scrape() { curl -sf -o "$1" "http://$LISTEN/metrics"; }
# attached PROMFILE PID: the agent lists the JVM (it adds jvm_info only once every probe is attached)
attached() { grep -q "^jvmdiag_jvm_info{.*pid=\"$2\"" "$1"; }
# starter_attached PROMFILE PID: the on-demand starter probe is attached to the JVM now
starter_attached() { grep -Eq "^jvmdiag_agent_starter_probe_attached\{.*pid=\"$2\".*\} 1(\.0)?\$" "$1"; }

start_agent() {  # start_agent MATCH [FLAG...]
  "$AGENT" --standalone --listen "$LISTEN" --match-jvm "$@" 2>>"$WORK/agent.log" & AGENT_PID=$!
  for _ in $(seq 100); do curl -sf "http://$LISTEN/healthz" >/dev/null && return 0; kill -0 "$AGENT_PID" 2>/dev/null || break; sleep 0.1; done
  tail -n 20 "$WORK/agent.log" >&2; die "the agent did not come up on $LISTEN"
}
wait_attached() {  # wait_attached PID...: until the agent lists every one (60 s)
  local p ok
  for _ in $(seq 600); do
    ok=1
    if scrape "$WORK/wait.prom"; then for p in "$@"; do attached "$WORK/wait.prom" "$p" || { ok=0; break; }; done; else ok=0; fi
    [ $ok = 1 ] && return 0; sleep 0.1
  done
  tail -n 20 "$WORK/agent.log" >&2; die "the agent did not attach to JVMs $* within 60 s"
}

# bpf_memlock PID: bytes of kernel memory charged to the BPF maps the process holds (fdinfo of
# each map fd, counted once per map id; the same figure as `bpftool map show`'s memlock).
bpf_memlock() {
  local f
  for f in /proc/"$1"/fdinfo/*; do awk '/^map_id:/ {id = $2} /^memlock:/ {m = $2} END {if (id != "") print id, m}' "$f" 2>/dev/null; done \
    | sort -u -k1,1 | awk '{s += $2} END {print s + 0}'
}

is_agent() { case "$1" in agent|starters|stacks|stacks-all) return 0;; esac; return 1; }
# The configurations that keep the starter probe attached through the storm.
with_starters() { case "$1" in starters|stacks|stacks-all) return 0;; esac; return 1; }

# prog_stats PID: "NAME RUNS RUN_TIME_NS" of each BPF program the process holds (fdinfo of its
# program descriptors, each program once; its name from bpftool).
prog_stats() {
  local f id n ns
  for f in /proc/"$1"/fdinfo/*; do
    awk '/^prog_id:/ {id = $2} /^run_cnt:/ {n = $2} /^run_time_ns:/ {ns = $2} END {if (id != "" && n != "") print id, n, ns}' "$f" 2>/dev/null || true
  done | sort -u -k1,1 | while read -r id n ns; do
    echo "$(bpftool prog show id "$id" 2>/dev/null | sed -n 's/.* name \([^ ]*\) .*/\1/p' | head -n1) $n $ns"
  done
}

# run SCENARIO ROUND WORKLOAD CONFIG JAVA [PID...]: one measured run of WORKLOAD started with
# JAVA; the PIDs are other JVMs the agent must have attached before this one starts.
# Appends "SCENARIO WORKLOAD ROUND CONFIG WALL CPU PRE_CPU WAIT_CPU WAIT READY_AT GO_AT ATTACHED_AT
# COUNTED EXPECTED JVM_OWN HITS FILES LINKS PROBED WINDOWS" (ms; "-" where it does not apply) to
# results.txt.
run() {
  local scen=$1 r=$2 wl=$3 cfg=$4 java=$5; shift 5
  local args opts=() expected=-
  bench_wait_quiet "$WORK/quiet.txt"
  if [ "$wl" = ThreadStorm ]; then args="$THREADS"; expected=$((THREADS + 4)); else args="$SP_ROUNDS"; fi
  case "$cfg" in
    baseline) ;;
    agent)  # the always-on probes only: the starter probe never attaches
      start_agent "$wl" --starter-threshold 0
      [ $# -eq 0 ] || wait_attached "$@" ;;
    neighbour)  # the agent traces the idle JVM (IdleJvm) only, not this one
      start_agent IdleJvm --starter-threshold 0
      wait_attached "$@" ;;
    starters)  # the starter probe attaches when the warm-up passes the default 50/s, for longer than the storm; no culprit stacks
      start_agent "$wl" --starter-window-seconds 3600 --stack-samples-per-second 0 ;;
    stacks)  # the same with culprit stacks at their default budget (20 per second and kind)
      start_agent "$wl" --starter-window-seconds 3600 ;;
    stacks-all)  # the same with the starter's stack taken at (almost) every start: the cost per stack
      start_agent "$wl" --starter-window-seconds 3600 --stack-samples-per-second 10000 ;;
    xlog)
      if [ "$wl" = ThreadStorm ]; then opts=(-Xlog:os+thread=info:file="$WORK/xlog.log"); else opts=(-Xlog:safepoint=info:file="$WORK/xlog.log"); fi ;;
    jfr)
      # shellcheck disable=SC2054 # commas belong to the JVM option
      opts=(-XX:StartFlightRecording=filename="$WORK/rec.jfr",settings=default) ;;
    asyncprof)
      # shellcheck disable=SC2054,SC2140,SC2191 # one JVM option: -agentpath:LIB=opts,...
      opts=(-agentpath:"$AP_LIB"=start,event=JVM_StartThread,collapsed,file="$WORK/ap.txt") ;;
    *) die "unknown configuration $cfg" ;;
  esac
  local fifo="$WORK/go.fifo" out="$WORK/run.out" gofd
  rm -f "$fifo" "$out"; mkfifo "$fifo"; : >"$out"
  local t0 ready="" att="" go="" now pid warm=0 sent=0 warmed="" probe=""
  # the warm-up: thread storms of the solo comparison, every configuration alike
  [ "$wl" = ThreadStorm ] && [ "$scen" = solo ] && [ "$WARM" -gt 0 ] && warm=1
  t0=${EPOCHREALTIME/[.,]/}
  "$java" "${opts[@]}" -cp "$WORK/classes" "$wl" "$args" stdin <"$fifo" >"$out" 2>"$WORK/run.err" &
  pid=$!; JVM_PIDS+=("$pid")
  exec {gofd}>"$fifo"
  for _ in $(seq 6000); do   # 50 ms steps, 5 min at most
    kill -0 "$pid" 2>/dev/null || { cat "$WORK/run.err" >&2; die "$wl ($cfg) exited before its measured part"; }
    now=${EPOCHREALTIME/[.,]/}
    if [ -z "$ready" ] && grep -q '^READY' "$out"; then
      ready=$now
      [ "$(awk '/^READY/ {print $2; exit}' "$out")" = "$pid" ] || die "the JVM's pid is not the one started ($pid)"
      if [ "$java" != "$JDK/bin/java" ]; then  # it must really run from its own mount
        grep -q " ${java%/bin/java}/lib/server/libjvm.so\$" /proc/"$pid"/maps || die "$wl does not map libjvm.so from ${java%/bin/java}"
      fi
    fi
    if is_agent "$cfg" && [ -z "$att" ] && scrape "$WORK/poll.prom" && attached "$WORK/poll.prom" "$pid"; then att=${EPOCHREALTIME/[.,]/}; fi
    # The warm-up once the JVM is ready and, with the agent, listed (the agent must see it).
    # With starters, again when the probe is not attached 1.5 s after one: the agent's first
    # rate check of a new JVM may come after a warm-up, which then is its starting point.
    if [ "$warm" = 1 ] && [ -n "$ready" ] && { ! is_agent "$cfg" || [ -n "$att" ]; }; then
      echo "threads $WARM" >&"$gofd"; warm=2 sent=$((sent + 1)) warmed=""
    fi
    if [ "$warm" = 2 ] && [ -z "$warmed" ] && [ "$(grep -c "^WARMED $WARM\$" "$out")" -eq "$sent" ]; then warmed=${EPOCHREALTIME/[.,]/}; fi
    if with_starters "$cfg" && [ -n "$warmed" ] && [ -z "$probe" ] && scrape "$WORK/poll.prom"; then
      if starter_attached "$WORK/poll.prom" "$pid"; then probe=1
      elif [ $(( (${EPOCHREALTIME/[.,]/} - warmed) / 1000 )) -ge 1500 ]; then warm=1; fi
    fi
    now=${EPOCHREALTIME/[.,]/}
    if [ -n "$ready" ] && [ $(( (now - ${warmed:-$ready}) / 1000 )) -ge "$IDLE_MS" ] && { ! is_agent "$cfg" || [ -n "$att" ]; } \
      && { [ "$warm" = 0 ] || [ -n "$warmed" ]; } && { ! with_starters "$cfg" || [ "$warm" = 0 ] || [ -n "$probe" ]; }; then
      go=$now; echo go >&"$gofd"; break
    fi
    sleep 0.05
  done
  exec {gofd}>&-
  [ -n "$go" ] || { [ -n "$ready" ] || cat "$WORK/run.err" >&2; die "$wl ($cfg): no go within 5 minutes (ready: ${ready:-no}, attached: ${att:-no}, warmed: ${warmed:-no}, starter probe: ${probe:-no})"; }
  wait "$pid" || { cat "$WORK/run.err" >&2; die "$wl ($cfg) failed"; }
  forget_jvm "$pid"
  local res counted=- jvm_own=- hits=- files=- links=- probed=- windows=- stacks=-
  res=$(tail -n1 "$out")
  [ "$(wc -w <<<"$res")" -eq 5 ] || die "$wl ($cfg): unexpected output: $res"
  if is_agent "$cfg"; then
    local m="$WORK/last-metrics.txt" left
    # The agent serves a page again to scrapes within a second of its render (src/serve.rs,
    # FRESH); the last poll's came before the go, so from 1.1 s after the go the page is new.
    left=$((go + 1100000 - ${EPOCHREALTIME/[.,]/}))
    if [ "$left" -gt 0 ]; then sleep "$((left / 1000000)).$(printf '%06d' $((left % 1000000)))"; fi
    scrape "$m" || : >"$m"
    if [ "$wl" = ThreadStorm ]; then
      # Nothing lost, nothing multiplied: the storm's own thread starts (pool-N-thread-N and the
      # 4 starter-N) counted for its pid; threads the JVM starts itself (e.g. a further JIT
      # compiler thread) are counted apart, the warm-up's not at all.
      read -r counted jvm_own < <(awk -v p="pid=\"$pid\"" '/^jvmdiag_thread_starts_total\{/ && index($0, p) {
          if ($0 ~ /thread_name="(pool-N-thread-N|starter-N)"/) s += $NF; else if ($0 !~ /thread_name="warmup-N"/) o += $NF }
          END {print s + 0, o + 0}' "$m")
      hits=$(awk '/^jvmdiag_agent_probe_events_total\{.*probe="thread__start"/ {s += $NF} END {print s + 0}' "$m")
      # The starter probe: the storm's thread starts it named (pool-N-thread-N by starter-N, and
      # the 4 starter-N by main, "java"; all of them when it was attached through the storm) and
      # how often it was attached.
      read -r probed windows < <(awk -v p="pid=\"$pid\"" 'index($0, p) && /^jvmdiag_thread_starts_by_starter_total\{/ &&
          /thread_name="pool-N-thread-N",starter="starter-N"|thread_name="starter-N",starter="java"/ {s += $NF}
          index($0, p) && /^jvmdiag_agent_starter_probe_windows_total\{/ {w += $NF} END {print s + 0, w + 0}' "$m")
    fi
    # Culprit stacks the agent took at the starts (thread_start, taken or truncated).
    stacks=$(awk '/^jvmdiag_agent_stack_walks_total\{kind="thread_start",outcome="(taken|truncated)"\}/ {s += $NF} END {print s + 0}' "$m")
    files=$(awk '/^jvmdiag_agent_libjvm_files / {print $2 + 0}' "$m"); links=$(awk '/^jvmdiag_agent_bpf_links / {print $2 + 0}' "$m")
    # Peak RSS (VmHWM, KiB), CPU time (ticks), RSS now and its anonymous / file-backed parts (KiB),
    # BPF map memory (bytes).
    [ "$BPF_STATS" != 1 ] || prog_stats "$AGENT_PID" | sed "s/^/$scen $wl $r $cfg /" >>"$WORK/bpf-stats.txt"
    echo "$scen $(awk '/VmHWM/ {print $2}' /proc/$AGENT_PID/status) $(awk '{print $14 + $15}' /proc/$AGENT_PID/stat) $(awk '/^(VmRSS|RssAnon|RssFile):/ {printf "%s ", $2}' /proc/$AGENT_PID/status)$(bpf_memlock "$AGENT_PID")" >> "$WORK/agent-usage.txt"
    stop_agent
  elif [ "$cfg" = neighbour ]; then
    local m="$WORK/last-metrics.txt"
    scrape "$m" || : >"$m"
    # Its probe hits (the traced idle JVM's, none of the storm's) and the agent's programs' runs.
    hits=$(awk '/^jvmdiag_agent_probe_events_total\{/ {s += $NF} END {print s + 0}' "$m")
    links=$(awk '/^jvmdiag_agent_bpf_links / {print $2 + 0}' "$m")
    [ "$BPF_STATS" != 1 ] || prog_stats "$AGENT_PID" | sed "s/^/$scen $wl $r $cfg /" >>"$WORK/bpf-stats.txt"
    grep -q "pid=\"$pid\"" "$m" && die "the agent traced the untraced neighbour ($pid)"
    stop_agent
  fi
  local rel=(); local x
  for x in "$ready" "$go" "$att"; do if [ -n "$x" ]; then rel+=($(( (x - t0) / 1000 ))); else rel+=(-); fi; done
  echo "$scen $wl $r $cfg $res ${rel[*]} $counted $expected $jvm_own ${hits:--} ${files:--} ${links:--} ${probed:--} ${windows:--} ${stacks:--}" | tee -a "$WORK/results.txt" >&2
}

# The usual comparison: each JVM from the JDK's own path, alone.
for wl in "${WORKLOADS[@]}"; do
  for r in $(seq "$ROUNDS"); do
    n=${#CONFIGS[@]}
    for i in $(seq 0 $((n - 1))); do
      cfg=${CONFIGS[$(( (i + r) % n ))]}
      run solo "$r" "$wl" "$cfg" "$JDK/bin/java"
      sleep 1  # let the previous JVM's exit settle
    done
  done
done

JDK_REAL="$(readlink -f "$JDK")"
mount_jdk() {  # mount_jdk NAME -> the merged directory of an overlay mount of the JDK
  local d="$WORK/mnt/$1"; mkdir -p "$d/upper" "$d/work" "$d/merged"
  mount -t overlay overlay -o "lowerdir=$JDK_REAL,upperdir=$d/upper,workdir=$d/work" "$d/merged"
  echo "$d/merged"
}

# Untraced neighbour: each storm untraced, beside a traced idle JVM of the same JDK files.
if [ "$NEIGHBOUR" = 1 ] && [[ " ${CONFIGS[*]} " == *" agent "* ]]; then
  NB_JAVA="$(mount_jdk neighbour)/bin/java"
  TRACED_JAVA="$(mount_jdk traced)/bin/java"
  "$TRACED_JAVA" -Xmx64m -cp "$WORK/classes" IdleJvm >"$WORK/traced.out" 2>&1 </dev/null &
  traced=$!; JVM_PIDS+=("$traced")
  for _ in $(seq 600); do grep -q '^READY' "$WORK/traced.out" && break; sleep 0.1; done
  grep -q '^READY' "$WORK/traced.out" || die "the traced idle JVM did not start: $(cat "$WORK/traced.out")"
  log "untraced neighbour: storms from $NB_JAVA beside a traced idle JVM ($traced) from $TRACED_JAVA"
  CFGS=(baseline neighbour)
  for wl in "${WORKLOADS[@]}"; do
    for r in $(seq "$ROUNDS"); do
      for i in 0 1; do
        run neighbour "$r" "$wl" "${CFGS[$(( (i + r) % 2 ))]}" "$NB_JAVA" "$traced"
        sleep 1
      done
    done
  done
  stop_jvms
fi

# Shared JDK: the storm and N idle JVMs, each from its own overlay mount of the same JDK files.
# (a thread-storm scenario about the agent: run when both are selected)
if [ ${#SHARED_NS[@]} -gt 0 ] && [[ " ${WORKLOADS[*]} " == *" ThreadStorm "* && " ${CONFIGS[*]} " == *" agent "* ]]; then
  max=0; for k in "${SHARED_NS[@]}"; do [ "$k" -le "$max" ] || max=$k; done
  STORM_JAVA="$(mount_jdk storm)/bin/java"
  IDLE_DIRS=(); for i in $(seq "$max"); do IDLE_DIRS+=("$(mount_jdk "idle$i")"); done
  log "shared JDK: $((max + 1)) overlay mounts of $JDK_REAL under $WORK/mnt"
  for k in "${SHARED_NS[@]}"; do
    idle=()
    for i in $(seq "$k"); do
      out="$WORK/idle$i.out"
      "${IDLE_DIRS[$((i - 1))]}/bin/java" -Xmx64m -cp "$WORK/classes" ThreadStorm 0 999999999 >"$out" 2>&1 </dev/null &
      JVM_PIDS+=("$!"); idle+=("$!")
    done
    for i in $(seq "$k"); do
      for _ in $(seq 600); do grep -q '^READY' "$WORK/idle$i.out" && break; sleep 0.1; done
      grep -q '^READY' "$WORK/idle$i.out" || die "idle JVM $i did not start: $(cat "$WORK/idle$i.out")"
      # It must really run from its mount (a symlink out of the JDK would defeat the scenario).
      grep -q " ${IDLE_DIRS[$((i - 1))]}/lib/server/libjvm.so\$" /proc/"${idle[$((i - 1))]}"/maps || die "idle JVM $i does not map libjvm.so from ${IDLE_DIRS[$((i - 1))]}"
    done
    CFGS=(baseline agent)
    for r in $(seq "$ROUNDS"); do
      for i in 0 1; do
        cfg=${CFGS[$(( (i + r) % 2 ))]}
        run "shared-$k" "$r" ThreadStorm "$cfg" "$STORM_JAVA" "${idle[@]+"${idle[@]}"}"
        sleep 1
      done
    done
    stop_jvms
  done
fi

bench_quiet_report "$WORK/quiet.txt" || exit 1
HZ=$(getconf CLK_TCK)
python3 - "$WORK" "$HZ" "$THREADS" "$SP_ROUNDS" "$ROUNDS" "$JDK" "$IDLE_MS" <<'PY'
import os, statistics, sys
work, hz, threads, sp, rounds, jdk, idle = sys.argv[1:]
hz = int(hz)
rows = []
for l in open(os.path.join(work, "results.txt")):
    f = l.split()
    if len(f) != 21:
        continue
    num = lambda x: None if x == "-" else float(x)
    rows.append(dict(scen=f[0], wl=f[1], r=int(f[2]), cfg=f[3], wall=float(f[4]), cpu=float(f[5]),
                     pre_cpu=float(f[6]), wait_cpu=float(f[7]), wait=float(f[8]), ready=num(f[9]), go=num(f[10]),
                     att=num(f[11]), counted=f[12], expected=f[13], jvm_own=f[14], hits=f[15], files=f[16], links=f[17], probed=f[18], windows=f[19], stacks=num(f[20])))
med = statistics.median
pct = lambda x: f"{100 * x:+.1f} %"
def spread(xs, fmt):
    return f"{fmt(med(xs))} ({fmt(min(xs))} .. {fmt(max(xs))})" if xs else "n/a"
def paired(rs, cfg, key):
    by = {}
    for x in rs:
        by.setdefault(x["r"], {})[x["cfg"]] = x
    return [v[cfg][key] / v["baseline"][key] - 1 for v in by.values() if cfg in v and "baseline" in v and v["baseline"][key] > 0]

names = {"agent": "jvmdiag-agent (eBPF), starter probe not attached", "starters": "jvmdiag-agent, starter probe attached, no culprit stacks",
         "stacks": "jvmdiag-agent, starter probe attached, culprit stacks (default budget)",
         "stacks-all": "jvmdiag-agent, starter probe attached, a culprit stack at every start",
         "xlog": "-Xlog to a file", "jfr": "JFR (default settings)",
         "asyncprof": "async-profiler -e JVM_StartThread"}
solo = [x for x in rows if x["scen"] == "solo"]
wls = set(x["wl"] for x in rows)
what = ([f"thread storm = {threads} threads"] if "ThreadStorm" in wls else []) + \
       ([f"safepoint storm = {sp} rounds of 2 thread dumps (+ a full GC every 10th)"] if "SafepointStorm" in wls else [])
print(f"\nJDK {jdk}; {rounds} rounds; {', '.join(what)};"
      f" the measured part starts {idle} ms after READY at the earliest and, with the agent, once /metrics lists the JVM")
if solo:
    print("| workload | configuration | wall: slowdown median (min..max) | process CPU: increase median (min..max) |")
    print("|---|---|---|---|")
    for wl in dict.fromkeys(x["wl"] for x in solo):
        rs = [x for x in solo if x["wl"] == wl]
        base = [x for x in rs if x["cfg"] == "baseline"]
        print(f"| {wl} | baseline | median {med([x['wall'] for x in base]):.0f} ms | median {med([x['cpu'] for x in base]):.0f} ms |")
        for cfg in ("agent", "starters", "stacks", "stacks-all", "xlog", "jfr", "asyncprof"):
            if any(x["cfg"] == cfg for x in rs):
                print(f"| {wl} | {names[cfg]} | {spread(paired(rs, cfg, 'wall'), pct)} | {spread(paired(rs, cfg, 'cpu'), pct)} |")

ms = lambda v: f"{v:.0f} ms"
att = [x for x in rows if x["cfg"] in ("agent", "baseline")]
if any(x["cfg"] == "agent" for x in att):
    print("\nAttach (one-time, before the measured part, not in the slowdowns): JVM start -> READY, -> attached (first /metrics"
          " listing the pid, polled every 50 ms), -> go; JVM CPU from its start to the go; JVM CPU while it idled (READY -> go)")
    print("| scenario | workload | configuration | -> READY | -> attached | -> go | JVM CPU start -> go | JVM CPU idling (per s idle) |")
    print("|---|---|---|---|---|---|---|---|")
    for scen in dict.fromkeys(x["scen"] for x in att):
        for wl in dict.fromkeys(x["wl"] for x in att if x["scen"] == scen):
            for cfg in ("baseline", "agent"):
                rs = [x for x in att if x["scen"] == scen and x["wl"] == wl and x["cfg"] == cfg]
                if not rs:
                    continue
                a = [x["att"] for x in rs if x["att"] is not None]
                per_s = [x["wait_cpu"] / x["wait"] * 1000 for x in rs if x["wait"] > 0]
                print(f"| {scen} | {wl} | {cfg} | {spread([x['ready'] for x in rs], ms)} | {spread(a, ms) if a else '-'} | "
                      f"{spread([x['go'] for x in rs], ms)} | {spread([x['pre_cpu'] for x in rs], ms)} | "
                      f"{spread([x['wait_cpu'] for x in rs], ms)} ({med(per_s):.0f} ms/s) |")

nb = [x for x in rows if x["scen"] == "neighbour"]
if nb:
    print(f"\nUntraced neighbour: each storm in a JVM the agent does not trace, beside an idle JVM it traces, both from their own"
          f" overlay mount of {jdk}; baseline = the same idle JVM, no agent (goal: within noise, <= 0.5 %)")
    print("| workload | baseline median | beside the agent: wall slowdown median (min..max) | process CPU median (min..max) | agent probe hits (the traced JVM's) | BPF links |")
    print("|---|---|---|---|---|---|")
    for wl in dict.fromkeys(x["wl"] for x in nb):
        rs = [x for x in nb if x["wl"] == wl]
        ag = [x for x in rs if x["cfg"] == "neighbour"]
        print(f"| {wl} | {med([x['wall'] for x in rs if x['cfg'] == 'baseline']):.0f} ms | {spread(paired(rs, 'neighbour', 'wall'), pct)} | "
              f"{spread(paired(rs, 'neighbour', 'cpu'), pct)} | {', '.join(sorted(set(x['hits'] for x in ag)))} | {', '.join(sorted(set(x['links'] for x in ag)))} |")

shared = [x for x in rows if x["scen"].startswith("shared-")]
if shared:
    print(f"\nShared JDK: thread storm ({threads} threads) beside N idle JVMs, each JVM from its own overlay mount of {jdk};"
          " baseline = the same idle JVMs, no agent; thread starts counted for the storm's pid (expected: threads + 4 starters)")
    print("| other JVMs | baseline median | agent: wall slowdown median (min..max) | agent: process CPU median (min..max) | storm's thread starts counted | thread__start hits | libjvm files / BPF links |")
    print("|---|---|---|---|---|---|---|")
    for scen in dict.fromkeys(x["scen"] for x in shared):
        rs = [x for x in shared if x["scen"] == scen]
        ag = [x for x in rs if x["cfg"] == "agent"]
        base = [x["wall"] for x in rs if x["cfg"] == "baseline"]
        counted = sorted(set(x["counted"] for x in ag))
        exact = sum(1 for x in ag if x["counted"] == x["expected"])
        fl = sorted(set(f"{x['files']} / {x['links']}" for x in ag))
        print(f"| {scen.split('-')[1]} | {med(base):.0f} ms | {spread(paired(rs, 'agent', 'wall'), pct)} | {spread(paired(rs, 'agent', 'cpu'), pct)} | "
              f"{exact} of {len(ag)} runs exactly {ag[0]['expected'] if ag else '?'} (seen: {', '.join(counted)}; "
              f"JVM's own threads besides: {', '.join(sorted(set(x['jvm_own'] for x in ag)))}) | "
              f"{', '.join(sorted(set(x['hits'] for x in ag)))} | {', '.join(fl)} |")

st = [x for x in solo if x["cfg"] == "starters" and x["wl"] == "ThreadStorm"]
if st:
    whole = sum(1 for x in st if x["probed"] == x["expected"] and x["windows"] == "1")
    print(f"\nstarter probe (starters): attached before the go, {', '.join(sorted(set(x['windows'] for x in st)))} time(s) per run; it named the"
          f" starter of all {st[0]['expected']} thread starts of the storm in {whole} of {len(st)} runs"
          + ("" if whole == len(st) else f" (seen: {', '.join(sorted(set(x['probed'] for x in st)))})")
          + f"; thread starts counted: {sum(1 for x in st if x['counted'] == x['expected'])} of {len(st)} runs exactly {st[0]['expected']}")
by_round = {}
for x in solo:
    if x["wl"] == "ThreadStorm":
        by_round.setdefault(x["r"], {})[x["cfg"]] = x
per_stack = [(v["stacks-all"]["cpu"] - v["starters"]["cpu"]) * 1000 / v["stacks-all"]["stacks"]
             for v in by_round.values() if "stacks-all" in v and "starters" in v and (v["stacks-all"]["stacks"] or 0) > 0]
if per_stack:
    taken = [v["stacks-all"]["stacks"] for v in by_round.values() if "stacks-all" in v]
    print(f"\nculprit stacks: a stack at (almost) every start costs {med(per_stack):.1f} us of process CPU per stack taken"
          f" (per round: the stacks-all run's CPU minus the starters run's, over its stacks; min {min(per_stack):.1f}, max {max(per_stack):.1f});"
          f" stacks taken per run median {med(taken):.0f}; at the default budget (20 per second and kind) that is"
          f" {20 * med(per_stack) / 1e4:.3f} % of one core")
c = [x for x in solo if x["cfg"] == "agent" and x["wl"] == "ThreadStorm"]
if c:
    exact = sum(1 for x in c if x["counted"] == x["expected"])
    print(f"\nthread starts of the storm counted by the agent (alone): {exact} of {len(c)} runs exactly {c[0]['expected']} (no event lost or multiplied)"
          + ("" if exact == len(c) else f"; seen {', '.join(sorted(set(x['counted'] for x in c)))}")
          + f"; threads the JVM started itself after the attach: {', '.join(sorted(set(x['jvm_own'] for x in c)))}")
stats = os.path.join(work, "bpf-stats.txt")
sr = [l.split() for l in open(stats)] if os.path.exists(stats) else []
sr = [f for f in sr if len(f) == 7 and int(f[5]) > 0]
if sr:
    print("\nBPF program statistics (kernel.bpf_stats_enabled; per agent run: the program's runs, and its run time per run)")
    print("| scenario | workload | configuration | program | runs, median (min..max) | time per run, median (min..max) |")
    print("|---|---|---|---|---|---|")
    for key in dict.fromkeys((f[0], f[1], f[3], f[4]) for f in sr):
        v = [f for f in sr if (f[0], f[1], f[3], f[4]) == key]
        runs = [int(f[5]) for f in v]
        per = [int(f[6]) / int(f[5]) / 1000 for f in v]
        print(f"| {' | '.join(key)} | {spread(runs, lambda x: f'{x:,.0f}')} | {spread(per, lambda x: f'{x:.2f} µs')} |")
usage = os.path.join(work, "agent-usage.txt")
u = [l.split() for l in open(usage)] if os.path.exists(usage) else []
u = [(f[0], [int(x) for x in f[1:]]) for f in u if len(f) == 7]
if u:
    print("\nagent footprint per run: peak RSS (VmHWM: start, BPF load, attach, scrapes) + BPF map memory (memlock of the maps it holds) = whole footprint")
    for scen in dict.fromkeys(s for s, _ in u):
        v = [x for s, x in u if s == scen]
        mib = lambda i: max(x[i] for x in v) / 1024
        maps = max(x[5] for x in v) / 2**20
        cpu = [x[1] / hz for x in v]
        print(f"  {scen}: peak RSS max {mib(0):.1f} MiB + BPF maps {maps:.1f} MiB = whole footprint {mib(0) + maps:.1f} MiB; "
              f"RSS after a run max {mib(2):.1f} MiB (anonymous {mib(3):.1f}, file-backed {mib(4):.1f}); "
              f"agent CPU per run (start, attach, polls, final scrape) median {med(cpu):.2f} s, max {max(cpu):.2f} s")
PY
