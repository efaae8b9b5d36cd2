#!/usr/bin/env bash
# Formatters and linters of every language in the repository, in one place.
#   hack/lint.sh check   each check prints "lint NAME: ok" or "lint NAME: FAILED"; exits 1 if any failed
#   hack/lint.sh fix     runs the formatters (and the linters' safe fixes) over the tree
# LINT="rustfmt clippy" runs only those. `make lint`, `make fmt` and the lint suite call this.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT" || exit 1
mode="${1:-check}"
case "$mode" in check | fix) ;; *) die "usage: hack/lint.sh check|fix (got '$mode')" ;; esac

# clippy and rustfmt of the agent's workspace (agent + jvmdiag-inspect) and of the fuzz crate
# (its own workspace). clippy shares node-agent/target with the release build, so the lint
# suite's run builds the build script and the BPF skeletons the agent suite reuses.
AGENT=node-agent
FUZZ=node-agent/fuzz
FUZZ_TARGET_DIR="$JVMDIAG_CACHE/target/fuzz-clippy"
MVN=(env JAVA_HOME="$JDK25" mvn -B -q -f operator/pom.xml)

failed=0
want() { [ -z "${LINT:-}" ] || [[ " $LINT " == *" $1 "* ]]; }
# run NAME CMD...: one check, its output shown only when it fails.
run() {
  local name="$1" out
  shift
  want "$name" || return 0
  out="$(mktemp)"
  if nice "$@" >"$out" 2>&1; then
    echo "lint $name: ok"
  else
    cat "$out"
    echo "lint $name: FAILED"
    failed=$((failed + 1))
  fi
  rm -f "$out"
}

if [ "$mode" = fix ]; then
  want rustfmt && (cd "$AGENT" && cargo fmt --all) && (cd "$FUZZ" && cargo fmt)
  want java-format && "${MVN[@]}" spotless:apply
  want python-shell && bash hack/lint/python-shell.sh fix
  exit 0
fi

run rustfmt bash -c "cd $AGENT && cargo fmt --all --check && cd fuzz && cargo fmt --check"
run clippy bash -c "cd $AGENT && cargo clippy --release --workspace --all-targets -- -D warnings"
run clippy-fuzz bash -c "cd $FUZZ && CARGO_TARGET_DIR=$FUZZ_TARGET_DIR cargo clippy --all-targets -- -D warnings"
run java-format "${MVN[@]}" spotless:check
if want python-shell; then
  # Prints its own "lint ruff-format|ruff-check|shellcheck: ok|FAILED" lines.
  bash hack/lint/python-shell.sh check || failed=$((failed + 1))
fi
[ "$failed" -eq 0 ]
