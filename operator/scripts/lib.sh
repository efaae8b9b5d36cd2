# Shared by the operator's scripts (up, down, e2e, bench). Source after hack/lib.sh.
OPERATOR_DIR="$REPO_ROOT/operator"
OPERATOR_JAR="$OPERATOR_DIR/target/jvmdiag-operator.jar"
OPERATOR_NS="${OPERATOR_NS:-jvm-diagnostics}"
# one state directory and port pair per local cluster instance (hack/cluster/lib.sh)
_oi="${CLUSTER_INDEX:-0}"
OPERATOR_STATE="$JVMDIAG_CACHE/operator/instance-$_oi"
OPERATOR_WEBHOOK_PORT="${OPERATOR_WEBHOOK_PORT:-$((19443 + 10 * _oi))}"
OPERATOR_METRICS_PORT="${OPERATOR_METRICS_PORT:-$((18080 + 10 * _oi))}"
JAVA25="$JDK25/bin/java"
KUBECTL="${KUBECTL:-$JVMDIAG_CACHE/k8s/${KUBE_VERSION:-1.34.4}-linux-amd64/kubectl}"
HELM="$JVMDIAG_CACHE/bin/helm"

# Maven on the Temurin 25 JDK (the code is Java 21); the repository cache in ~/.m2.
mvn25() { (cd "$OPERATOR_DIR" && JAVA_HOME="$JDK25" nice mvn -B "$@"); }

# Builds the jar when a source is newer than it.
operator_build() {
  [ -x "$JAVA25" ] || die "the operator needs a JDK >= 21: none at JDK25=$JDK25"
  if [ ! -f "$OPERATOR_JAR" ] || [ -n "$(find "$OPERATOR_DIR/pom.xml" "$OPERATOR_DIR/src/main" "$OPERATOR_DIR/src/build" "$REPO_ROOT/monitoring/histogram-bounds.txt" -newer "$OPERATOR_JAR" -print -quit)" ]; then
    log "building $OPERATOR_JAR"
    mvn25 -q package -DskipTests -DskipITs >"$OPERATOR_STATE.build.log" 2>&1 \
      || { tail -n 30 "$OPERATOR_STATE.build.log" >&2; die "operator build failed (log: $OPERATOR_STATE.build.log)"; }
  fi
}

# The chart's ClusterRole + Role exactly as helm renders them (default values).
render_rbac() {
  bash "$REPO_ROOT/hack/setup.d/helm.sh" >&2 || die "helm missing (hack/setup.d/helm.sh failed)"
  "$HELM" template jvmdiag "$REPO_ROOT/charts/jvm-diagnostics" --namespace "$OPERATOR_NS" \
    --show-only templates/operator/clusterrole.yaml
}

operator_pid() { cat "$OPERATOR_STATE/operator.pid" 2>/dev/null; }
operator_alive() { local p; p=$(operator_pid); [ -n "$p" ] && kill -0 "$p" 2>/dev/null; }
