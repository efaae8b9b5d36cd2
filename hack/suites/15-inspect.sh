#!/usr/bin/env bash
# Suite "inspect": the untrusted-input layer (node-agent/inspect) — unit and integration
# tests against real libjvm.so, hsperfdata, /proc and -Xlog:safepoint of JDK 17 and 25, the
# hostile-root and hostile-file corpus — then clippy's no-panic lints, then each fuzz
# target for a short bounded time (FUZZ_SECONDS, default 5), each counted as one test.
# `make fuzz` runs them longer.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
cd "$REPO_ROOT" || exit 1
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

# The crate is a member of the node-agent workspace. Until node-agent/Cargo.toml lists it,
# test a copy outside the workspace (cargo refuses a package its workspace does not list).
manifest="node-agent/inspect/Cargo.toml"
if ! cargo metadata --no-deps --format-version 1 --manifest-path "$manifest" >/dev/null 2>&1; then
  copy="$JVMDIAG_CACHE/inspect-standalone"
  log "node-agent workspace does not list inspect yet: testing a copy in $copy"
  mkdir -p "$copy" && rsync -a --delete --exclude target node-agent/inspect/ "$copy/"
  manifest="$copy/Cargo.toml"
fi
export CARGO_TARGET_DIR="$JVMDIAG_CACHE/target/inspect"
nice cargo test --manifest-path "$manifest" -p jvmdiag-inspect 2>&1 | tee "$out/cargo.log"
read -r p f < <(count_cargo "$out/cargo.log")
if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then f=1; log "cargo test ran no test (build failure?)"; fi

# The no-panic rules (no indexing, unwrap, expect or panic on input) are clippy lints the
# crate denies: the library must pass clippy clean. Counted as one test.
cp=0; cf=0
if nice cargo clippy --manifest-path "$manifest" -p jvmdiag-inspect --lib -- -D warnings >"$out/clippy.log" 2>&1; then
  echo "clippy jvmdiag-inspect: ok"; cp=1
else
  cat "$out/clippy.log"; echo "clippy jvmdiag-inspect: FAILED"; cf=1
fi

bash node-agent/fuzz/run.sh "${FUZZ_SECONDS:-5}" 2>&1 | tee "$out/fuzz.log"
fp=$(grep -c '^fuzz [a-z_]*: ok' "$out/fuzz.log")
ff=$(grep -c '^fuzz [a-z_]*: FAILED' "$out/fuzz.log")
if [ "$fp" -eq 0 ] && [ "$ff" -eq 0 ]; then ff=1; log "no fuzz target ran (build failure?)"; fi

suite_result inspect $((p + cp + fp)) $((f + cf + ff))
[ $((f + cf + ff)) -eq 0 ]
