#!/usr/bin/env bash
# Suite "demo": Ctrl-C on `make demo` stops everything it started and leaves nothing running.
# `make demo` runs in its own session (as in a terminal); SIGINT goes to its whole process
# group, twice:
#   1. mid-set-up: while the chart is being installed (cluster up, images imported);
#   2. mid-run: once the live summary has named the incidents and checked itself (operator,
#      agent, five JVM pods, Prometheus, Alertmanager all up): the thread-start rate it shows
#      for the TLS storm's pod must match that JVM's own java.threads.started over the same
#      minute (hack/demo/rate-check.py; a count multiplied by the agent fails it); and the
#      fourth incident named: the contended monitor class of the DHE handshake stall (a
#      SecureRandom) and JvmDiagMonitorContentionHigh firing on it; the fifth within 2 minutes:
#      Jetty's pool (qtpN-N) parked waiting in HikariCP's ConcurrentBag.borrow, and
#      JvmDiagPoolSaturated firing on it; the fifth on virtual threads: pinned carriers on JDK
#      21 (and the alert on them), nothing pinned on JDK 25 (and no alert); and who is behind the first
#      two: the thread starting the HandshakeCompletedNotify-Threads and the one requesting
#      RedefineClasses, equal to the workloads' own thread names; and the code behind incidents
#      1, 2, 4 and 5 (the culprit stacks' first application frame): the workloads' own methods,
#      and HikariCP's wait for a connection.
# After each: no process the demo started (sampled every second while it ran: its session,
# the cluster daemons, shims and pod processes), no listening port of theirs, no mount, no
# cgroup, no network link, no iptables chain, no state directory of the demo remains.
# The checks are those of suite cluster for `cluster down`. Runs the demo on its own cluster
# instance (DEMO_CLUSTER_INDEX=9), never the developer's demo (6). Budget ≈ 7 min (the rate
# check's minute included): each phase has a deadline after which the demo is interrupted
# anyway (and the checks still run).
# shellcheck disable=SC2015 # `test && ok … || bad …`: ok always returns 0
set -uo pipefail
export CLUSTER_INDEX=9 DEMO_CLUSTER_INDEX=9
. "$(dirname "$0")/../lib.sh"
WORK=$(mktemp -d)
pass=0 fail=0
T0=$(date +%s)
ok()  { pass=$((pass + 1)); printf 'ok   - [%3ss] %s\n' "$(($(date +%s) - T0))" "$1"; }
bad() { fail=$((fail + 1)); printf 'FAIL - [%3ss] %s\n' "$(($(date +%s) - T0))" "$1"; [ -z "${2:-}" ] || printf '       %s\n' "$2"; }
check() { local what="$1"; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }
finish() { suite_result demo "$pass" "$fail"; [ "$fail" -eq 0 ]; exit $?; }

DEMO_PID=""
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {  # whatever happened: the demo and its cluster are gone afterwards
  [ -n "$DEMO_PID" ] && kill -KILL -- -"$DEMO_PID" 2>/dev/null
  "$REPO_ROOT/hack/cluster/down.sh" --quiet >/dev/null 2>&1
  # a demo killed here (the suite itself interrupted) leaves its state dir: ours to remove
  grep -ho '/tmp/jvmdiag-demo\.[A-Za-z0-9]*' "$WORK"/demo-*.log "$WORK"/seen.* 2>/dev/null | sort -u | xargs -r rm -rf
  rm -rf "$WORK"
}
trap cleanup EXIT

if [ "$(id -u)" != 0 ]; then echo "(demo needs root: skipped)"; finish; fi
KUBE_BIN=$("$REPO_ROOT/hack/kube-binaries.sh" 2>"$WORK/kube-binaries.log") || { bad "kube binaries available" "$(tail -n 3 "$WORK/kube-binaries.log")"; finish; }
export PATH="$KUBE_BIN:$PATH"
"$REPO_ROOT/hack/cluster/down.sh" --quiet >/dev/null 2>&1   # leftovers of an interrupted run

# --- what "ours" is (as in suite cluster) ---------------------------------------------------
. "$REPO_ROOT/hack/cluster/leftovers.sh"
starttime() { awk '{sub(/.*\) /, ""); print $20}' "/proc/$1/stat" 2>/dev/null; }
# Every process that belongs to the demo right now, as "PID STARTTIME COMM": its session
# (make, the script, kubectl, helm, Prometheus, Alertmanager, the summary), the cluster's
# daemons (setsid'd: found by their state dir) and every descendant of its shims (pods).
# Not by /tmp/jvmdiag-demo.* in the arguments: a developer's demo may run at the same time.
sample() {  # SID
  python3 - "$1" "$CLUSTER_DIR" "$CTRD_SOCK" <<'PY'
import os, sys
sid, cdir, sock = int(sys.argv[1]), sys.argv[2], sys.argv[3]
procs = {}
for p in os.listdir("/proc"):
    if not p.isdigit():
        continue
    try:
        st = open(f"/proc/{p}/stat").read()
        cmd = open(f"/proc/{p}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        continue
    f = st[st.rindex(")") + 2:].split()
    procs[int(p)] = (int(f[1]), int(f[3]), f[19], cmd, st[st.index("(") + 1:st.rindex(")")])
me, a = set(), os.getpid()
while a > 1 and a in procs or a == os.getpid():  # this suite itself (its arguments name cdir)
    me.add(a); a = procs[a][0] if a in procs else 0
ours = {p for p, (ppid, s, _, cmd, _) in procs.items() if p not in me and (
        s == sid or cdir + "/" in cmd or ("containerd-shim" in cmd and sock in cmd))}
grew = True
while grew:  # descendants (pods under the shims)
    n = {p for p, v in procs.items() if v[0] in ours} - ours
    grew = bool(n); ours |= n
for p in sorted(ours):
    print(p, procs[p][2], procs[p][4].replace(" ", "_"))
PY
}
# Listening TCP sockets of the given PIDs, as "PORT PID".
ports_of() {  # PIDFILE
  ss -ltnpH 2>/dev/null | python3 -c '
import re, sys
pids = {l.split()[0] for l in open(sys.argv[1]) if l.strip()}
for line in sys.stdin:
    port = line.split()[3].rsplit(":", 1)[1]
    for pid in re.findall(r"pid=(\d+)", line):
        if pid in pids:
            print(port, pid)' "$1" | sort -u
}

chains >"$WORK/chains.before"; links >"$WORK/links.before"

# run_demo PHASE WAIT_FOR_REGEX DEADLINE_S [ALSO_REGEX...]: start `make demo`, interrupt it when its
# output matches (and every ALSO_REGEX too), or at the deadline, and check that nothing of
# it remains.
all_in() {  # LOG REGEX...: every REGEX matches a line of LOG
  local log="$1" r; shift
  for r in "$@"; do grep -qE "$r" "$log" || return 1; done
}
run_demo() {
  local phase="$1" want="$2" deadline="$3" log="$WORK/demo-$1.log" reached=0 t_start t_int rc i
  local also=("${@:4}")
  : >"$WORK/seen.$phase"; : >"$WORK/ports.$phase"
  t_start=$(date +%s)
  # A background job of a script starts with SIGINT ignored (and keeps it across exec); a
  # terminal's foreground job does not: restore the default before exec'ing make.
  setsid python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])' \
    make -s -C "$REPO_ROOT" demo DEMO_DURATION=0 >"$log" 2>&1 </dev/null &
  DEMO_PID=$!
  while kill -0 "$DEMO_PID" 2>/dev/null; do
    sample "$DEMO_PID" >>"$WORK/seen.$phase"
    sort -u -o "$WORK/seen.$phase" "$WORK/seen.$phase"
    ports_of "$WORK/seen.$phase" >>"$WORK/ports.$phase"
    if grep -qE "$want" "$log" && all_in "$log" "${also[@]}"; then reached=1; break; fi
    [ $(($(date +%s) - t_start)) -lt "$deadline" ] || break
    sleep 1
  done
  if ! kill -0 "$DEMO_PID" 2>/dev/null; then
    wait "$DEMO_PID"; rc=$?
    bad "$phase: the demo was running when interrupted" "it exited by itself (rc=$rc): $(tail -n 5 "$log" | tr '\n' ' ')"
    DEMO_PID=""; "$REPO_ROOT/hack/cluster/down.sh" --quiet >/dev/null 2>&1; return
  fi
  [ "$reached" = 1 ] && ok "$phase: reached /$want/ after $(($(date +%s) - t_start))s" \
    || bad "$phase: reached /$want/ within ${deadline}s" "interrupting anyway; last output: $(tail -n 2 "$log" | tr '\n' ' ')"
  sleep 2   # let the step under way get going (helm creating pods, the summary querying)
  sample "$DEMO_PID" >>"$WORK/seen.$phase"; sort -u -o "$WORK/seen.$phase" "$WORK/seen.$phase"
  ports_of "$WORK/seen.$phase" >>"$WORK/ports.$phase"; sort -u -o "$WORK/ports.$phase" "$WORK/ports.$phase"
  note_others
  t_int=$(date +%s)
  kill -INT -- -"$DEMO_PID"    # what Ctrl-C in a terminal does: the whole foreground group
  for i in $(seq 1 150); do kill -0 "$DEMO_PID" 2>/dev/null || break; sleep 1; done
  if kill -0 "$DEMO_PID" 2>/dev/null; then
    bad "$phase: make demo exits after SIGINT (within 150 s)" "still running; killed"
    kill -KILL -- -"$DEMO_PID" 2>/dev/null
  fi
  wait "$DEMO_PID"; rc=$?; DEMO_PID=""
  [ "$rc" != 0 ] && ok "$phase: make demo stopped $(($(date +%s) - t_int))s after SIGINT (rc=$rc)" \
    || bad "$phase: make demo reports the interruption (non-zero rc)" "rc=$rc"
  grep -q "stopping everything the demo started" "$log" && grep -q "done (logs were in" "$log" \
    && ok "$phase: the demo's cleanup ran to its end" || bad "$phase: the demo's cleanup ran to its end" "$(tail -n 4 "$log" | tr '\n' ' ')"
  sleep 1
  local alive="" pid st comm n
  n=$(wc -l <"$WORK/seen.$phase")
  while read -r pid st comm; do
    [ "$(starttime "$pid")" = "$st" ] || continue
    # a zombie whose threads are gone holds nothing; only init can reap it (it was setsid'd)
    pid_gone "$pid" && continue
    alive="$alive $pid($comm)"
  done <"$WORK/seen.$phase"
  [ -z "$alive" ] && ok "$phase: none of the $n processes it started is left ($(awk '{print $3}' "$WORK/seen.$phase" | sort | uniq -c | sort -rn | head -n 6 | awk '{printf "%s %s, ", $1, $2}')…)" \
    || bad "$phase: no process of the demo is left" "alive:$alive"
  local lp=""
  while read -r port pid; do
    ss -ltnH "sport = :$port" 2>/dev/null | grep -q . && lp="$lp $port"
  done <"$WORK/ports.$phase"
  for port in "$APISERVER_PORT" "$ETCD_CLIENT_PORT" "$KUBELET_PORT" "$KUBELET_HEALTHZ_PORT" "$CM_PORT" "$SCHED_PORT"; do
    ss -ltnH "sport = :$port" 2>/dev/null | grep -q . && lp="$lp $port"
  done
  [ -z "$lp" ] && ok "$phase: no listening port of it is left ($(awk '{print $1}' "$WORK/ports.$phase" | sort -un | wc -l) were open)" \
    || bad "$phase: no listening port of the demo is left" "still listening:$lp"
  local mnts cg
  mnts=$(awk -v d="$CLUSTER_DIR/" 'index($5, d) == 1' /proc/self/mountinfo)
  check "$phase: no mount under $CLUSTER_DIR" [ -z "$mnts" ]
  cg=$(ls -d /sys/fs/cgroup/*"$CGROUP_ROOT" 2>/dev/null)
  check "$phase: no cgroup under $CGROUP_ROOT" [ -z "$cg" ]
  links >"$WORK/links.after"
  check "$phase: no network link (bridge, veths)" added "$WORK/links.before" "$WORK/links.after"
  chains >"$WORK/chains.after"
  check "$phase: no iptables chain (kubelet, CNI, ours)" added "$WORK/chains.before" "$WORK/chains.after"
  # shellcheck disable=SC2010 # CNI result file names: NETWORK-ID-IFNAME
  check "$phase: no CNI result cache entry of $CNI_NETWORK" [ -z "$(ls /var/lib/cni/results/ 2>/dev/null | grep "^$CNI_NETWORK-")" ]
  check "$phase: no state directory (/tmp/jvmdiag-demo.*) of its own" [ -z "$(grep -o '/tmp/jvmdiag-demo\.[A-Za-z0-9]*' "$WORK/seen.$phase" "$log" | cut -d: -f2 | sort -u | xargs -r ls -d 2>/dev/null)" ]
}

# The rate check's verdict itself: whole multiples fail, scrape jitter passes.
st=$(python3 "$REPO_ROOT/hack/demo/rate-check.py" --self-test 2>&1) && ok "$st" || bad "rate-check.py --self-test" "$st"

run_demo setup "installing the chart" 150
# The summary starts ~2-4 min in; the rate check once the incidents are named (≤ 45 s after
# the workloads start, or 30 s after the thread storm was), then takes 60-80 s. On 2 cores with
# every pod running, the retransformer's requests and the JDK 21 pool's alert come last, up to
# ~6 min in.
# Who requested the RedefineClasses is named once the agent's first batch ran (after its 80,000
# classes are loaded): wait for that line too, within the same deadline.
# The code behind incidents 1, 2, 4 and 5 (the culprit stacks) too; incident 2's once the
# retransformer's requests lead its JVM's last minute (its class loading's GCs come first).
run_demo running "rate check: (ok|FAIL|could not)" 600 "incident 2: RedefineClasses requested by" \
  "incident 1: the code starting threads" \
  'incident 2: the code requesting VM operations \(vm_operation\) in pod retransform-[^:]*: RetransformAgent\.loop ' \
  "incident 4: the code holding" "incident 4: the code blocked" \
  "incident 5: the code the pool waits in" "alert JvmDiagPoolSaturated firing" \
  "virtual threads on JDK 21 named" "virtual threads on JDK 21: alert JvmDiagPoolSaturated firing" \
  "virtual threads on JDK 25 named" "virtual threads on JDK 25: (alert JvmDiagPoolSaturated firing|JvmDiagPoolSaturated not firing)"
rc_lines=$(grep -oE 'rate check: (ok|FAIL|could not).*' "$WORK/demo-running.log" | sort -u)
if [ -z "$rc_lines" ]; then
  bad "running: the summary's thread-start rate checked against the JVM's own counter" \
    "no result of the rate check in the demo's output; last: $(grep -E 'rate check|incident [0-9]:' "$WORK/demo-running.log" | tail -n 4 | tr '\n' ' ')"
elif grep -qvE '^rate check: ok' <<<"$rc_lines"; then
  bad "running: the summary's thread-start rate matches the JVM's own java.threads.started" "$(tr '\n' ' ' <<<"$rc_lines")"
else
  while read -r l; do ok "running: ${l#rate check: ok: }"; done <<<"$rc_lines"
fi
# alert_fired ALERT REGEX WHAT LINES: the summary's first "alert ALERT firing" line matches REGEX;
# else the last LINES lines of its firing alerts.
alert_fired() {
  local l
  l=$(grep -m1 -oE "demo: alert $1 firing .*" "$WORK/demo-running.log")
  if grep -qE "$2" <<<"$l"; then ok "running: ${l#demo: }"
  else bad "running: $1 fires $3" \
    "$(grep -A$(($4 - 1)) '^Firing alerts' "$WORK/demo-running.log" | tail -n "$4" | tr '\n' ' ')"; fi
}
# The fourth incident, named like the others: handshake threads blocked on one SecureRandom
# (the monitors collector, on by default: -XX:+DTraceMonitorProbes added by the webhook), and the alert.
l4=$(grep -m1 -oE 'demo: incident 4 named after .*' "$WORK/demo-running.log")
# The pod tells the stalled DHE server from the other TLS servers, whose SecureRandom is contended now and then.
if grep -qE 'class [A-Za-z0-9_.$]*SecureRandom in pod dhe-stall-' <<<"$l4"; then ok "running: ${l4#demo: }"
else bad "running: the summary names the contended monitor class (a SecureRandom) of the DHE handshake stall, in its pod" \
  "$(grep -E 'incident 4:|s/s .*enters/s' "$WORK/demo-running.log" | tail -n 3 | tr '\n' ' ')"; fi
alert_fired JvmDiagMonitorContentionHigh 'monitor_class=[A-Za-z0-9_.$]*SecureRandom pod=dhe-stall-' \
  "naming the SecureRandom class in the DHE server's pod" 5
# The fifth: Jetty's request pool (its default names, qtpNNN-N) parked waiting for one of
# HikariCP's 8 connections, named within 2 minutes of the workloads' start, and the alert.
l5=$(grep -m1 -oE 'demo: incident 5 named after .*' "$WORK/demo-running.log")
t5=$(sed -nE 's/^demo: incident 5 named after ([0-9]+)s.*/\1/p' <<<"$l5")
if grep -qE 'pool qtpN-N .*waiting in com\.zaxxer\.hikari\.[A-Za-z0-9_.$]+ in pod pool-wait-' <<<"$l5" && [ "${t5:-999}" -le 120 ]; then ok "running: ${l5#demo: }"
else bad "running: the summary names the saturated pool (qtpN-N) and HikariCP's wait in its pod within 120 s" \
  "${l5:-$(grep -A6 '^Thread pools by threads parked' "$WORK/demo-running.log" | tail -n 6 | tr '\n' ' ')}"; fi
alert_fired JvmDiagPoolSaturated 'thread_name=qtpN-N pod=pool-wait-[^ ]* \(its threads park most at com\.zaxxer\.hikari\.' \
  "naming Jetty's pool and HikariCP's wait in the pool-wait pod" 7
# The fifth on virtual threads (examples/workloads/k8s/pool-wait-virtual.yaml), the runbook's
# signals: on JDK 21 the two carriers parked nearly all the time in the query's wait (pinned
# inside synchronized) and the alert (threshold 1) naming them and it; on JDK 25 nothing parked
# there, HikariCP's connection-adder parking for the borrows that waited, and the same alert
# silent when JDK 21's fired.
# virtual_line WHAT REGEX: the summary's first line starting with WHAT matches REGEX.
virtual_line() {
  local l
  l=$(grep -m1 -E "^demo: $1" "$WORK/demo-running.log")
  if [ -n "$l" ] && grep -qE "$2" <<<"$l"; then ok "running: ${l#demo: }"
  else bad "running: $1 matching /$2/" "${l:-$(grep -A3 '^The fifth incident on virtual threads' "$WORK/demo-running.log" | tail -n 3 | tr '\n' ' ')}"; fi
}
virtual_line 'virtual threads on JDK 21 named' \
  'pinned carriers: ForkJoinPool-N- [0-9.]+ parked on average, waiting in PoolWait\.remoteLatency in pod pool-wait-virtual-jdk21-'
virtual_line 'virtual threads on JDK 21: alert JvmDiagPoolSaturated firing' \
  'thread_name=ForkJoinPool-N- pod=pool-wait-virtual-jdk21-[^ ]* \(its threads park most at PoolWait\.remoteLatency\)'
virtual_line 'virtual threads on JDK 25 named' \
  'nothing pinned \(no park sampled at PoolWait\.remoteLatency\), HikariPool-N:co [0-9]+ parks/s .* in pod pool-wait-virtual-jdk25-'
virtual_line 'virtual threads on JDK 25: (alert JvmDiagPoolSaturated firing|JvmDiagPoolSaturated not firing)' \
  'JvmDiagPoolSaturated not firing in pod pool-wait-virtual-jdk25-'
# Who is behind the incidents, as the workloads know them: the TLS clients (tls-client-N, the
# threads that run the handshakes) start the HandshakeCompletedNotify-Threads; the Java agent's
# apm-retransformer (15 bytes of it: the native name) requests RedefineClasses; the DHE server's
# handshake pool (tls-handshake) is what blocks on the SecureRandom.
for want in 'incident 1: HandshakeCompletedNotify-Thread started by tls-client-N ' 'incident 2: RedefineClasses requested by apm-retransform ' \
            'incident 4: the threads blocked most on the SecureRandom: tls-handshake '; do
  l=$(grep -m1 -F "demo: $want" "$WORK/demo-running.log")
  if [ -n "$l" ]; then ok "running: ${l#demo: }"
  else bad "running: the summary names who is behind it: $want" \
    "$(grep -E 'demo: incident [124]:|started by|requested by|blocked most' "$WORK/demo-running.log" | tail -n 4 | tr '\n' ' ')"; fi
done
# The code behind them, from the culprit stacks: the workloads' own methods (examples/workloads/):
# TlsStorm.request opens the TLS connections whose handshakes start the notify threads (or the
# client loop, TlsStorm.lambda$main$N, when the JIT inlined request into it); RetransformAgent.loop
# calls retransformClasses. In the DHE server the stacks are counted per JVM, not per monitor,
# and by contended release, not by time held: DheStall.libraryKeyPair holds the SecureRandom
# longest, but JSSE's own draws from it under DheStall.serve, and the clients' handshakes
# (DheStall.request) on the JVM's other monitors, release as often or more; so the check is that
# the code named is the workload's (DheStall), not which of its methods.
# shellcheck disable=SC2016 # regexes: \$ is a dollar sign in a method name, not an expansion
for want in 'incident 1: the code starting threads \(thread_start\) in pod tls-storm-[^:]*: TlsStorm\.(request|lambda\$main\$[0-9]+) ' \
            'incident 2: the code requesting VM operations \(vm_operation\) in pod retransform-[^:]*: RetransformAgent\.loop ' \
            'incident 4: the code holding contended monitors \(monitor_hold\) in pod dhe-stall-[^:]*: DheStall\.[A-Za-z0-9_$]+ ' \
            'incident 4: the code blocked on them \(monitor_wait\) in pod dhe-stall-[^:]*: DheStall\.[A-Za-z0-9_$]+ ' \
            'incident 5: the code the pool waits in \(park\) in pod pool-wait-[^:]*: com\.zaxxer\.hikari\.[A-Za-z0-9_.$]+ '; do
  l=$(grep -m1 -E "demo: $want" "$WORK/demo-running.log")
  if [ -n "$l" ]; then ok "running: ${l#demo: }"
  else bad "running: the summary names the code behind it: $want" \
    "$(grep -E "demo: ${want%%\\(*}|incident [1245]: the code" "$WORK/demo-running.log" | tail -n 4 | tr '\n' ' ')"; fi
done
echo "elapsed $(($(date +%s) - T0))s"
finish
