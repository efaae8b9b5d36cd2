#!/usr/bin/env bash
# Alerts and dashboards: generated files fresh; promtool check + unit tests of the
# rules exactly as the chart (helm template) and the operator (render-rules) produce them;
# dashboards type-checked against @grafana/schema and linted; then a real Prometheus and
# Alertmanager on loopback scrape the real agent while a JVM makes a long safepoint and a
# thread storm (and a second JVM blocks on one SecureRandom and parks, and the demo's Jetty +
# HikariCP workload runs saturated and idle): every dashboard query must return data, the
# alerts must reach a webhook (the pool's for the saturated JVM alone), and the monitor/parking
# metrics must match what those JVMs measured (e2e/alerts.py).
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
MON="$REPO_ROOT/monitoring"
bash "$REPO_ROOT/hack/setup.d/monitoring.sh" || die "monitoring set-up failed"
# Prometheus 3.x and Alertmanager from their Go modules (built once, cached), or Debian's
# with PROMETHEUS_FLAVOR=debian; every promtool below, in the checks and in e2e is this one.
monitoring_tools || { suite_result alerts 0 1; exit 1; }
echo "Prometheus and Alertmanager ($JVMDIAG_MONITORING_FLAVOR): $PROMETHEUS, $ALERTMANAGER"
monitoring_versions | sed 's/^/   /'
PY="$JVMDIAG_CACHE/venv-monitoring/bin/python"
WORK=$(mktemp -d /tmp/jvmdiag-alerts.XXXXXX)
P=0; F=0
pass() { P=$((P + 1)); echo "PASS $*"; }
fail() { F=$((F + 1)); echo "FAIL $*"; }
# e2e/alerts.py stops what it started itself; this is for a kill of the suite mid-way.
cleanup() { for d in "$WORK"/e2e/*/prom; do "$MON/prom-down.sh" "$d" >/dev/null 2>&1; done; rm -rf "$WORK"; }
trap cleanup EXIT

# 1. Generated outputs match the single source.
if "$PY" "$MON/generate.py" --check; then pass "generated rules, templates, docs/alerts.md and dashboards are fresh"
else fail "generated files are stale (run: make monitoring-generate)"; fi

# Runs promtool on RULES (a rule file) with TEST copied beside it; counts one result per test group.
promtool_suite() {  # label dir test_file
  local label=$1 dir=$2 test=$3 out n bad
  if "$PROMTOOL" check rules "$dir/rules.yaml" >"$dir/check.log" 2>&1; then pass "$label: promtool check rules ($(grep -o '[0-9]* rules found' "$dir/check.log"))"
  else fail "$label: promtool check rules"; cat "$dir/check.log"; fi
  if out=$("$PY" "$MON/check_coverage.py" "$dir/rules.yaml" "$test"); then pass "$label: every alert has a firing and a quiet case, a runbook, summary/description/severity/for"
  else fail "$label: coverage"; fi
  echo "$out" | sed 's/^/   /'
  cp "$test" "$dir/"
  n=$(grep -c '^- name:' "$test")
  if out=$(cd "$dir" && "$PROMTOOL" test rules "$(basename "$test")" 2>&1); then
    P=$((P + n)); echo "PASS $label: promtool test rules, $n test groups"
  else
    bad=$(grep -c '^    name:' <<<"$out"); [ "$bad" -gt 0 ] || bad=1
    P=$((P + n - bad)); F=$((F + bad)); echo "FAIL $label: promtool test rules, $bad of $n groups failed"; echo "$out"
  fi
  # The tests can fail: thinkable regressions of the rules must break them.
  if out=$("$PY" "$MON/check_mutations.py" "$dir/rules.yaml" "$test"); then pass "$label: $(grep -c '^ok' <<<"$out") rule mutations all caught by the tests"
  else fail "$label: a rule mutation is not caught"; fi
  echo "$out" | sed 's/^/   /'
}

# 2. The chart's default rules, as helm renders them from the packaged chart (so the
# generated files under files/monitoring/ are proven to ship).
mkdir -p "$WORK/defaults" "$WORK/pkg"
"$HELM" package "$REPO_ROOT/charts/jvm-diagnostics" -d "$WORK/pkg" >"$WORK/pkg/log" 2>&1 || cat "$WORK/pkg/log"
CHART=$(ls "$WORK"/pkg/*.tgz 2>/dev/null || echo "helm-package-failed")
if "$HELM" template jvmdiag "$CHART" --kube-version "$KUBE_VERSION" \
     --api-versions monitoring.coreos.com/v1/PrometheusRule \
     --api-versions monitoring.coreos.com/v1/ServiceMonitor --set serviceMonitor.enabled=true \
     >"$WORK/defaults/manifests.yaml" 2>"$WORK/defaults/helm.log" \
   && "$PY" "$MON/extract_rules.py" "$WORK/defaults/rules.yaml" <"$WORK/defaults/manifests.yaml"; then
  promtool_suite "chart default rules" "$WORK/defaults" "$MON/tests/defaults.test.yaml"
else fail "helm template of the chart"; cat "$WORK/defaults/helm.log"; fi

# 3. The operator's per-resource rules for one JvmDiagnostics.
JAR="$REPO_ROOT/operator/target/jvmdiag-operator.jar"
if [ ! -f "$JAR" ] && make -C "$REPO_ROOT" -n operator-build >/dev/null 2>&1; then
  log "building the operator jar (make operator-build) for render-rules"
  make -C "$REPO_ROOT" operator-build >"$WORK/operator-build.log" 2>&1 || tail -20 "$WORK/operator-build.log"
fi
TEMPLATES="$REPO_ROOT/operator/src/main/resources/jvmdiag/alert-templates.yaml"
render_resource() {  # JvmDiagnostics file -> PrometheusRule manifest on stdout
  # The operator's renderer with the templates file it ships (--templates: a jar built
  # before the last `make monitoring-generate` still renders the current templates).
  [ -f "$JAR" ] || { echo "no $JAR (make operator-build)" >"$WORK/render.log"; return 1; }
  "$JDK25/bin/java" -jar "$JAR" render-rules --templates "$TEMPLATES" "$1" 2>"$WORK/render.log"
}
mkdir -p "$WORK/resource"
if render_resource "$MON/tests/checkout-jvmdiagnostics.yaml" >"$WORK/resource/manifests.yaml" \
   && "$PY" "$MON/extract_rules.py" "$WORK/resource/rules.yaml" <"$WORK/resource/manifests.yaml"; then
  promtool_suite "per-resource rules (operator render-rules)" "$WORK/resource" "$MON/tests/resource.test.yaml"
else fail "per-resource rules: operator render-rules failed: $(tail -n3 "$WORK/render.log")"; fi

# 4. Helm: the dashboards ship as ConfigMaps with the sidecar label; without the
# Prometheus Operator API no PrometheusRule is rendered.
if "$HELM" template jvmdiag "$CHART" --kube-version "$KUBE_VERSION" --set dashboards.label=grafana_dash --set dashboards.labelValue=yes \
     >"$WORK/plain.yaml" 2>&1 && "$PY" - "$WORK/plain.yaml" "$REPO_ROOT/dashboards" <<'PYEOF'
import json, os, sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if isinstance(d, dict)]
assert not [d for d in docs if d["kind"] == "PrometheusRule"], "PrometheusRule rendered without the monitoring.coreos.com/v1 API"
cms = {k: v for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["labels"].get("grafana_dash") == "yes" for k, v in d["data"].items()}
want = sorted(f for f in os.listdir(sys.argv[2]) if f.endswith(".json") and f.startswith("jvm-diagnostics-"))
assert sorted(cms) == want, f"dashboard ConfigMaps {sorted(cms)} != {want}"
for f in want:
    assert json.loads(cms[f]) == json.load(open(os.path.join(sys.argv[2], f))), f"{f} differs from dashboards/{f}"
PYEOF
then pass "chart: dashboards as ConfigMaps with the configured sidecar label, identical to dashboards/; no PrometheusRule without the API"
else fail "chart: dashboard ConfigMaps / PrometheusRule gating"; fi

# 5. Dashboards: Grafana's own schema (tsc against @grafana/schema), the common rules, every
# query parsing as PromQL (promtool); selftest: broken copies of a dashboard must fail them.
for check in typecheck lint promql selftest; do
  while read -r line; do
    case "$line" in ok\ *) pass "dashboards $check: ${line#ok }" ;; FAIL\ *) fail "dashboards $check: ${line#FAIL }" ;; *) echo "$line" ;; esac
  done < <("$PY" "$MON/check_dashboards.py" "$check" 2>&1)
done

# 6. End to end with the real agent, Prometheus and Alertmanager (e2e/alerts.py says what it checks).
AGENT="${JVMDIAG_AGENT:-$REPO_ROOT/node-agent/target/release/jvmdiag-agent}"
if [ ! -x "$AGENT" ] && [ -z "${JVMDIAG_AGENT:-}" ] && [ -f "$REPO_ROOT/node-agent/Cargo.toml" ]; then
  log "building the agent (cargo build --release in node-agent/)"
  (cd "$REPO_ROOT/node-agent" && nice cargo build --release --quiet -p jvmdiag-agent) >"$WORK/agent-build.log" 2>&1 || tail -20 "$WORK/agent-build.log"
fi
if [ -x "$AGENT" ]; then
  mkdir -p "$WORK/e2e"
  # shellcheck disable=SC2015 # fail when either command fails
  render_resource "$REPO_ROOT/e2e/alerts-jvmdiagnostics.yaml" >"$WORK/e2e/manifests.yaml" \
    && "$PY" "$MON/extract_rules.py" "$WORK/e2e/rules.yaml" <"$WORK/e2e/manifests.yaml" \
    || fail "e2e: operator render-rules failed: $(tail -n3 "$WORK/render.log")"
  # The demo's pool-wait workload (Jetty, HikariCP, H2 from Maven Central, cached).
  POOL_JARS=$("$REPO_ROOT/examples/workloads/build.sh" "$JVMDIAG_CACHE/workloads/jars" 2>"$WORK/workloads-build.log") \
    || { fail "e2e: the demo workloads build (examples/workloads/build.sh): $(tail -n3 "$WORK/workloads-build.log")"; POOL_JARS=""; }
  log "end to end: rules from the operator's render-rules, agent $AGENT"
  # Both JDKs; the dashboards' queries (and the preview data) on the first run.
  for jdk in "$JDK17" "$JDK25"; do
    tag="e2e $(basename "$jdk")"
    while read -r line; do
      case "$line" in PASS\ *) pass "$tag: ${line#PASS }" ;; FAIL\ *) fail "$tag: ${line#FAIL }" ;; *) echo "$line" ;; esac
    done < <("$PY" "$REPO_ROOT/e2e/alerts.py" --agent "$AGENT" --rules "$WORK/e2e/rules.yaml" --work "$WORK/e2e/$(basename "$jdk")" \
               --jdk "$jdk" ${POOL_JARS:+--pool-jars "$POOL_JARS"} --default-rules "$WORK/defaults/rules.yaml" ${JVMDIAG_SAVE_RESULTS:+--save-results "$JVMDIAG_SAVE_RESULTS"} 2>&1)
    unset JVMDIAG_SAVE_RESULTS
  done
else
  fail "e2e: agent binary $AGENT missing and could not be built (see above)"
fi

suite_result alerts "$P" "$F"
[ "$F" -eq 0 ]
