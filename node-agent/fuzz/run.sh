#!/usr/bin/env bash
# Runs every fuzz target (or the ones named) for SECONDS each, after one build.
#   node-agent/fuzz/run.sh SECONDS [TARGET...]
# Prints one line per target, "fuzz TARGET: ok, N runs in S s" or "fuzz TARGET: FAILED ...",
# and at the end "fuzz: P passed, F failed". Exit status non-zero if any target failed.
# Working corpus and crash artifacts live in $JVMDIAG_CACHE/fuzz (never in the repo); the
# committed seeds in seeds/<target>/ are read, never written. A crash's input is kept in
# $JVMDIAG_CACHE/fuzz/artifacts/<target>/ and reproduced with:
#   cargo +nightly fuzz run --fuzz-dir node-agent/fuzz -O TARGET ARTIFACT
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/../../hack/lib.sh"
secs="${1:?usage: run.sh SECONDS [TARGET...]}"; shift
targets=("$@")
if [ "${#targets[@]}" -eq 0 ]; then
  mapfile -t targets < <(sed -n 's/^name = "\(.*\)"/\1/p' "$here/Cargo.toml" | grep -v '^jvmdiag-inspect-fuzz$')
fi
export PATH="$JVMDIAG_CACHE/cargo-fuzz/bin:$PATH"
command -v cargo-fuzz >/dev/null || bash "$REPO_ROOT/hack/setup.d/fuzz.sh" || die "cargo-fuzz is not installed (hack/setup.d/fuzz.sh)"
# cargo-fuzz needs nightly-only rustc flags (-Zsanitizer=address, sancov). Prefer the nightly
# toolchain; without one, stable accepts the same flags with RUSTC_BOOTSTRAP=1
# (JVMDIAG_FUZZ_STABLE=1 forces that path).
if [ -z "${JVMDIAG_FUZZ_STABLE:-}" ] && rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  fuzz=(cargo +nightly fuzz)
else
  log "no nightly toolchain: using stable with RUSTC_BOOTSTRAP=1"
  export RUSTC_BOOTSTRAP=1
  fuzz=(cargo fuzz)
fi
# The build is cached outside the repo so a second run only relinks.
export CARGO_TARGET_DIR="$JVMDIAG_CACHE/fuzz/target${JVMDIAG_FUZZ_STABLE:+-stable}"
work="$JVMDIAG_CACHE/fuzz"
cd "$here/.." || exit 1
log "building ${#targets[@]} fuzz targets"
if ! nice "${fuzz[@]}" build --fuzz-dir fuzz -O >"$work.build.log" 2>&1; then
  tail -n 30 "$work.build.log" >&2
  echo "fuzz: 0 passed, ${#targets[@]} failed"
  exit 1
fi
pass=0; fail=0
for t in "${targets[@]}"; do
  mkdir -p "$work/corpus/$t" "$work/artifacts/$t"
  out="$work/$t.log"
  start=$(date +%s)
  # Inputs long enough to pass each parser's size checks (libFuzzer's default is 4 KiB):
  # well past the bound where there is one (limits text 512 B, a probe name 64 B, function
  # code 4 KiB, a log line 64 KiB; the logtail target also expands 0xFF n to n KiB), 1 MiB
  # at most.
  case "$t" in
    limits_annotation) max_len=8192 ;;
    labels|code_heap) max_len=65536 ;;
    logtail|safepoint_log|jvm_options) max_len=1048576 ;;
    *) max_len=0 ;; # libFuzzer's choice (the larger of 4 KiB and the largest seed)
  esac
  nice "${fuzz[@]}" run --fuzz-dir fuzz -O "$t" "$work/corpus/$t" "fuzz/seeds/$t" -- \
    -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -max_len="$max_len" \
    -artifact_prefix="$work/artifacts/$t/" >"$out" 2>&1
  rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out" | tail -n1)
  if [ "$rc" -eq 0 ] && [ -n "$runs" ] && [ "$runs" -gt 0 ]; then
    echo "fuzz $t: ok, $runs runs in $(( $(date +%s) - start )) s"
    pass=$((pass + 1))
  else
    echo "fuzz $t: FAILED (exit $rc), see $out; crash inputs in $work/artifacts/$t/"
    grep -E "panicked|ERROR: libFuzzer|SUMMARY" "$out" | head -n 5
    fail=$((fail + 1))
  fi
done
echo "fuzz: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
