# The kubectl plugin (node-agent/kubectl-jvmdiag, docs/kubectl-plugin.md) against the chart as
# installed. Sourced by hack/suites/60-chart.sh (its ok/bad/WORK, kubectl on PATH, KUBECONFIG the
# admin's) after the fresh install of e2e/chart_lifecycle.sh, before agent_exposure turns
# agent.metricsAuth on: release jd in namespace jvm-diagnostics, namespace lifecycle with the
# Deployments jto (NodeAgent), sc (Sidecar) and mon, each with a JvmDiagnostics of its name.
#
#  1. the plugin builds (cargo, release, in the agent's workspace) and its unit tests pass;
#     kubectl finds it on PATH (`kubectl plugin list`, `kubectl jvmdiag --help`);
#  2. `kubectl jvmdiag status -n lifecycle` lists jto, sc and mon with their pods injected, Ready;
#  3. `kubectl jvmdiag top -n lifecycle deploy/jto` reads jto's pod from the agent through the
#     API server's pod proxy: its counter of thread starts lies between two direct reads of the
#     agent's page (`kubectl get --raw …/proxy/metrics`) taken before and after it, and its code
#     cache size is the page's; the table names the pod and the agent; deploy/sc is read from the
#     pod's own sidecar;
#  4. `kubectl jvmdiag stacks -n lifecycle deploy/mon` reads the agent's /stacks through the same
#     proxy: collapsed lines of mon's pod only (its monitor contention names Contend), by count,
#     each count between two direct reads of the agent's /stacks before and after it;
#     `--kind` and `--top` narrow it;
#  5. errors name their fix: deploy/nope "no such workload" (top and stacks); a workload no
#     resource targets "no JvmDiagnostics targets"; a user who may not list the resources, and
#     one who may read everything but pods/proxy, get the verb and resource to grant (top and
#     stacks).
# shellcheck disable=SC2015 # `test && ok … || bad …`: ok always returns 0
KP_NS=lifecycle KP_AGENT_NS=jvm-diagnostics

# kp_page_sum METRIC POD: the sum of METRIC over POD's series on the agent's page ($WORK/kp.page)
kp_page_sum() {
  python3 - "$1" "$2" "$WORK/kp.page" <<'PY'
import re, sys
name, pod, path = sys.argv[1], sys.argv[2], sys.argv[3]
total, seen = 0.0, False
for line in open(path, encoding="utf-8", errors="replace"):
    m = re.match(r'([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\} (\S+)$', line.rstrip("\n"))
    if m and m.group(1) == name and ('pod="%s"' % pod) in m.group(2) and ('namespace="lifecycle"') in m.group(2):
        total += float(m.group(3)); seen = True
print(repr(total) if seen else "none")
PY
}
kp_read_page() {  # AGENT_POD: the agent's page into $WORK/kp.page
  kubectl get --raw "/api/v1/namespaces/$KP_AGENT_NS/pods/$1:9464/proxy/metrics" >"$WORK/kp.page" 2>"$WORK/kp.page.err"
}
# kp_json FIELD: a field of the first pod of `top -o json` ($WORK/kp-top.json)
kp_json() {
  python3 -c 'import json, sys; v = json.load(open(sys.argv[1]))["pods"][0].get(sys.argv[2]); print("none" if v is None else repr(float(v)))' "$WORK/kp-top.json" "$1" 2>/dev/null
}
# kp_expect_error WHAT WANT_TEXT ARGS...: the plugin fails (exit 1) with WANT_TEXT on stderr
# kp_stacks_check OUT BEFORE AFTER POD: the plugin's lines (OUT) are POD's, well formed, by
# count (highest first), one names a Contend frame, and each count lies between the same line's
# in the direct reads BEFORE (absent: 0) and AFTER; prints what it found, fails otherwise.
kp_stacks_check() {
  python3 - "$@" <<'PY'
import re, sys
out, before, after, pod = sys.argv[1:5]
def read(path):
    d = {}
    for line in open(path, encoding="utf-8", errors="replace"):
        stack, _, n = line.rstrip("\n").rpartition(" ")
        if stack:
            d[stack] = d.get(stack, 0) + int(n)
    return d
b, a = read(before), read(after)
shape = re.compile(r"^(thread_start|vm_operation|monitor_wait|monitor_hold|park);lifecycle/%s(;[^; ]+)* [0-9]+$" % re.escape(pod))
lines = open(out, encoding="utf-8").read().splitlines()
counts, contend = [], 0
for line in lines:
    if not shape.match(line):
        sys.exit("not mon's or malformed: %r" % line[:300])
    stack, _, n = line.rpartition(" ")
    n = int(n)
    if not b.get(stack, 0) <= n <= a.get(stack, -1):
        sys.exit("%r: %d, not between the direct reads %d and %s" % (stack[:200], n, b.get(stack, 0), a.get(stack, "absent")))
    counts.append(n)
    contend += any(f.startswith("Contend.") for f in stack.split(";")[2:])
if not lines or not contend or counts != sorted(counts, reverse=True):
    sys.exit("%d lines, %d name Contend, sorted by count: %s" % (len(lines), contend, counts == sorted(counts, reverse=True)))
print("%d lines, %d naming Contend, %d samples; top: %s" % (len(lines), contend, sum(counts), lines[0][:160]))
PY
}
kp_expect_error() {
  local what="$1" want="$2" rc
  shift 2
  kubectl jvmdiag "$@" >"$WORK/kp.out" 2>"$WORK/kp.err"; rc=$?
  if [ "$rc" = 1 ] && grep -qF -- "$want" "$WORK/kp.err"; then ok "kubectl jvmdiag $*: $what (\"$(grep -m1 -F -- "$want" "$WORK/kp.err" | cut -c1-200)\")"
  else bad "kubectl jvmdiag $*: $what" "exit $rc, stderr: $(head -c 400 "$WORK/kp.err"), stdout: $(head -c 200 "$WORK/kp.out")"; fi
}

kubectl_plugin_checks() {
  local t0 bin rc apod jpod mpod a b got max_page max_top st r
  echo "--- the kubectl plugin (kubectl jvmdiag)"
  # --- 1. build, unit tests, on PATH -----------------------------------------------------------
  t0=$(date +%s)
  if (cd "$REPO_ROOT/node-agent" && nice cargo build --release -p kubectl-jvmdiag) >"$WORK/kp-build.log" 2>&1; then
    ok "kubectl-jvmdiag built (cargo build --release -p kubectl-jvmdiag, $(($(date +%s) - t0)) s)"
  else bad "kubectl-jvmdiag built" "$(tail -n 5 "$WORK/kp-build.log" | tr '\n' ' ')"; return; fi
  (cd "$REPO_ROOT/node-agent" && nice cargo test --release -p kubectl-jvmdiag) >"$WORK/kp-test.log" 2>&1
  read -r a b < <(count_cargo "$WORK/kp-test.log")
  [ "${a:-0}" -gt 0 ] && [ "${b:-1}" = 0 ] && ok "kubectl-jvmdiag unit tests: $a passed (parser on the agent's golden page, rates, tables, arguments)" \
    || bad "kubectl-jvmdiag unit tests" "$a passed, $b failed: $(grep -E '^test .* FAILED|panicked' "$WORK/kp-test.log" | head -n 5 | tr '\n' ' ')"
  bin="$WORK/kp-bin"; mkdir -p "$bin"
  cp "$REPO_ROOT/node-agent/target/release/kubectl-jvmdiag" "$bin/"
  local PATH="$bin:$PATH"
  if kubectl plugin list 2>/dev/null | grep -q "$bin/kubectl-jvmdiag" && kubectl jvmdiag --help 2>&1 | grep -q 'status'; then
    ok "kubectl finds the plugin on PATH (kubectl plugin list; kubectl jvmdiag --help)"
  else bad "kubectl finds the plugin on PATH" "$(kubectl plugin list 2>&1 | head -n 5 | tr '\n' ' ')"; fi

  # --- 2. status -----------------------------------------------------------------------------
  # The fresh install heals the pods created while there was no webhook: wait until the three
  # resources count their pods injected and Ready.
  for _ in $(seq 1 120); do
    st=$(kubectl -n $KP_NS get jvmdiag jto sc mon -o jsonpath='{range .items[*]}{.status.injected}{" "}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' 2>/dev/null)
    [ "$(grep -cE '^([1-9][0-9]*)/\1 True$' <<<"$st")" = 3 ] && break; sleep 1
  done
  if kubectl jvmdiag status -n $KP_NS >"$WORK/kp-status.out" 2>"$WORK/kp-status.err"; then
    local missing=""
    for r in jto sc mon; do
      grep -qE "^$r +Deployment/$r +([1-9][0-9]*)/\1 +True " "$WORK/kp-status.out" || missing+=" $r"
    done
    [ -z "$missing" ] && head -n1 "$WORK/kp-status.out" | grep -q '^NAME *TARGET *INJECTED *READY' \
      && ok "kubectl jvmdiag status -n $KP_NS: jto, sc and mon with their pods injected and Ready" \
      || bad "kubectl jvmdiag status -n $KP_NS lists jto, sc, mon injected and Ready" "not so:$missing; output: $(head -c 600 "$WORK/kp-status.out")"
  else bad "kubectl jvmdiag status -n $KP_NS" "$(head -c 400 "$WORK/kp-status.err")"; fi
  kubectl jvmdiag status -A >"$WORK/kp-status-a.out" 2>&1 && grep -q "^NAMESPACE *NAME" "$WORK/kp-status-a.out" && grep -q "^$KP_NS *jto " "$WORK/kp-status-a.out" \
    && ok "kubectl jvmdiag status -A: a NAMESPACE column" || bad "kubectl jvmdiag status -A" "$(head -c 300 "$WORK/kp-status-a.out")"

  # --- 3. top through the pod proxy, against direct reads of the agent's page ----------------------
  # shellcheck disable=SC2154 # extra: set by hack/suites/60-chart.sh
  if [ "${#extra[@]}" -ne 0 ]; then
    echo "(top skipped: the agent runs without its Kubernetes mode, its series have no pod labels: ${extra[*]})"
  else
    jpod=$(kubectl -n $KP_NS get pods -l lifecycle=jto -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.deletionTimestamp}{"\n"}{end}' | awk 'NF == 1 {print $1; exit}')
    apod=$(kubectl -n $KP_AGENT_NS get pods -l app.kubernetes.io/component=agent -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.deletionTimestamp}{"\n"}{end}' | awk 'NF == 1 {print $1; exit}')
    # Traced once its code cache is on the page (a JVM the agent attached to after its start-up
    # may have started no thread since: no thread-start series yet, a total of 0).
    max_page=none
    for _ in $(seq 1 60); do
      kp_read_page "$apod" && max_page=$(kp_page_sum jvmdiag_code_cache_max_bytes "$jpod") && [ "$max_page" != none ] && break; sleep 1
    done
    if [ "$max_page" = none ]; then
      bad "the agent serves jto's series (pod $jpod, agent $apod)" "$(head -c 300 "$WORK/kp.page.err")"
    else
      a=$(kp_page_sum jvmdiag_thread_starts_total "$jpod"); [ "$a" != none ] || a=0.0
      kubectl jvmdiag top -n $KP_NS deploy/jto --interval 2s -o json >"$WORK/kp-top.json" 2>"$WORK/kp-top.err"; rc=$?
      kp_read_page "$apod"; b=$(kp_page_sum jvmdiag_thread_starts_total "$jpod"); [ "$b" != none ] || b=0.0
      got=$(kp_json threadStartsTotal); max_top=$(kp_json codeCacheMaxBytes)
      if [ "$rc" = 0 ] && python3 -c 'import sys; a, g, b = map(float, sys.argv[1:4]); sys.exit(0 if a <= g <= b else 1)' "$a" "$got" "$b" 2>/dev/null \
         && [ "$max_top" = "$max_page" ] && grep -q "scraping 1 agent" "$WORK/kp-top.err"; then
        ok "kubectl jvmdiag top -n $KP_NS deploy/jto -o json: pod $jpod's thread starts total $got lies between direct reads of the agent's page ($a before, $b after), code cache max $max_top bytes = the page's; stderr: \"$(head -n1 "$WORK/kp-top.err")\""
      else bad "kubectl jvmdiag top deploy/jto agrees with the agent's page" "exit $rc; page before $a, plugin $got, page after $b; code cache max plugin $max_top page $max_page; $(head -c 300 "$WORK/kp-top.err")"; fi
      if kubectl jvmdiag top -n $KP_NS deploy/jto --interval 1s >"$WORK/kp-top.out" 2>&1 \
         && grep -qE "^$jpod " "$WORK/kp-top.out" && grep -q "from agent $KP_AGENT_NS/$apod" "$WORK/kp-top.out" && grep -q '^POD *NODE *THREADS *STARTS/S' "$WORK/kp-top.out"; then
        ok "kubectl jvmdiag top deploy/jto (table): the pod, its node and agent, thread starts, pauses, code cache"
      else bad "kubectl jvmdiag top deploy/jto (table)" "$(head -c 600 "$WORK/kp-top.out")"; fi
    fi
    if kubectl jvmdiag top -n $KP_NS deploy/sc --interval 1s >"$WORK/kp-top-sc.out" 2>&1 && grep -q "from sidecar $KP_NS/sc-" "$WORK/kp-top-sc.out" \
       && ! grep -q "no series for this pod" "$WORK/kp-top-sc.out"; then
      ok "kubectl jvmdiag top deploy/sc: read from the pod's own sidecar (collection: Sidecar)"
    else bad "kubectl jvmdiag top deploy/sc reads the sidecar" "$(head -c 500 "$WORK/kp-top-sc.out")"; fi

    # --- 4. stacks through the pod proxy, against direct reads of the agent's /stacks -------------
    mpod=$(kubectl -n $KP_NS get pods -l lifecycle=mon -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.deletionTimestamp}{"\n"}{end}' | awk 'NF == 1 {print $1; exit}')
    kp_read_stacks() {  # TAG: the agent's /stacks of mon's pod into $WORK/kp-stacks.TAG
      kubectl get --raw "/api/v1/namespaces/$KP_AGENT_NS/pods/$apod:9464/proxy/stacks?namespace=$KP_NS&pod=$mpod" >"$WORK/kp-stacks.$1" 2>"$WORK/kp-stacks.err"
    }
    # Contend's two threads block on each other's lock about 20 times a second: wait for the first stack.
    for _ in $(seq 1 60); do kp_read_stacks before && grep -q ';Contend\.' "$WORK/kp-stacks.before" && break; sleep 1; done
    kubectl jvmdiag stacks -n $KP_NS deploy/mon >"$WORK/kp-stacks.out" 2>"$WORK/kp-stacks.stderr"; rc=$?
    kp_read_stacks after
    if [ "$rc" = 0 ] && got=$(kp_stacks_check "$WORK/kp-stacks.out" "$WORK/kp-stacks.before" "$WORK/kp-stacks.after" "$mpod" 2>&1); then
      ok "kubectl jvmdiag stacks -n $KP_NS deploy/mon: $got; every count between direct reads of the agent's /stacks"
    else bad "kubectl jvmdiag stacks deploy/mon agrees with the agent's /stacks" "exit $rc; $got; stderr: $(head -c 300 "$WORK/kp-stacks.stderr"); direct read: $(head -c 300 "$WORK/kp-stacks.before")"; fi
    # stdout only: the plugin's progress and totals go to stderr, the lines to stdout
    kubectl jvmdiag stacks -n $KP_NS deploy/mon --kind monitor_wait --top 1 >"$WORK/kp-stacks-k.out" 2>"$WORK/kp-stacks-k.err"; rc=$?
    [ "$rc" = 0 ] && [ "$(grep -c . "$WORK/kp-stacks-k.out")" = 1 ] && grep -q "^monitor_wait;$KP_NS/$mpod;" "$WORK/kp-stacks-k.out" \
      && ok "kubectl jvmdiag stacks deploy/mon --kind monitor_wait --top 1: one monitor_wait line" \
      || bad "kubectl jvmdiag stacks --kind monitor_wait --top 1" "exit $rc: $(head -c 300 "$WORK/kp-stacks-k.out"); stderr: $(head -c 200 "$WORK/kp-stacks-k.err")"
  fi

  # --- 5. errors that name their fix -------------------------------------------------------------
  kp_expect_error "no such workload" "no such workload: deployment/nope in namespace $KP_NS" top -n $KP_NS deploy/nope
  kp_expect_error "no such workload" "no such workload: deployment/nope in namespace $KP_NS" stacks -n $KP_NS deploy/nope
  kp_expect_error "a workload no resource targets" "no JvmDiagnostics targets deployment/jd-jvm-diagnostics-operator" \
    top -n $KP_AGENT_NS deploy/jd-jvm-diagnostics-operator
  kp_expect_error "a user without any grant is told what to ask for" "not allowed: get deployments in namespace $KP_NS" \
    top -n $KP_NS deploy/jto --as=system:serviceaccount:$KP_NS:default
  # A user who may read workloads, pods and the resources everywhere, but not pods/proxy.
  kubectl -n $KP_NS create serviceaccount plugin-viewer >/dev/null 2>&1
  kubectl create clusterrole jvmdiag-plugin-viewer-e2e --verb=get,list \
    --resource=pods,deployments.apps,daemonsets.apps,jvmdiagnostics.jvm.diagnostics.dev >/dev/null 2>&1
  kubectl create clusterrolebinding jvmdiag-plugin-viewer-e2e --clusterrole=jvmdiag-plugin-viewer-e2e \
    --serviceaccount=$KP_NS:plugin-viewer >/dev/null 2>&1
  kp_expect_error "a user without pods/proxy gets the verb and resource to grant" "not allowed: get pods/proxy in namespace $KP_AGENT_NS" \
    top -n $KP_NS deploy/jto --interval 1s --as=system:serviceaccount:$KP_NS:plugin-viewer
  kp_expect_error "a user without pods/proxy gets the verb and resource to grant" "not allowed: get pods/proxy in namespace $KP_AGENT_NS" \
    stacks -n $KP_NS deploy/mon --as=system:serviceaccount:$KP_NS:plugin-viewer
  kubectl jvmdiag status -n $KP_NS --as=system:serviceaccount:$KP_NS:plugin-viewer >/dev/null 2>&1 \
    && ok "the same user may run kubectl jvmdiag status (get/list jvmdiagnostics)" || bad "status with get/list jvmdiagnostics only"
  kubectl delete clusterrolebinding/jvmdiag-plugin-viewer-e2e clusterrole/jvmdiag-plugin-viewer-e2e >/dev/null 2>&1
  kubectl -n $KP_NS delete serviceaccount plugin-viewer >/dev/null 2>&1
  echo "(kubectl jvmdiag status -n $KP_NS, as the suite saw it:)"; sed 's/^/    /' "$WORK/kp-status.out"
  [ -f "$WORK/kp-top.out" ] && { echo "(kubectl jvmdiag top -n $KP_NS deploy/jto:)"; sed 's/^/    /' "$WORK/kp-top.out"; }
  [ -f "$WORK/kp-stacks.out" ] && { echo "(kubectl jvmdiag stacks -n $KP_NS deploy/mon, first lines:)"; head -n 5 "$WORK/kp-stacks.out" | cut -c1-240 | sed 's/^/    /'; }
  return 0
}
