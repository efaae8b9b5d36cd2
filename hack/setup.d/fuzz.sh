#!/usr/bin/env bash
# cargo-fuzz for the untrusted-input parsers (node-agent/fuzz). Idempotent, cached in
# $JVMDIAG_CACHE/cargo-fuzz (never in the repo).
# cargo-fuzz needs rustc's nightly-only flags (-Zsanitizer=address, SanitizerCoverage). We use
# the nightly toolchain if rustup has one, and try to install it (minimal profile) if not;
# where no nightly can be had (toolchain downloads blocked), node-agent/fuzz/run.sh uses the
# stable toolchain with RUSTC_BOOTSTRAP=1, which unlocks the same flags (verified with 1.95).
# Never fails setup: a missing cargo-fuzz shows up as failed fuzz targets in the suite.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
root="$JVMDIAG_CACHE/cargo-fuzz"
want="0.13.1"
have() { [ -x "$root/bin/cargo-fuzz" ] && "$root/bin/cargo-fuzz" --version 2>/dev/null | grep -q "$want"; }
if ! have; then
  exec 8>"$JVMDIAG_CACHE/cargo-fuzz.lock"; flock 8
  if ! have; then
    log "building cargo-fuzz $want into $root (once, ~3 min)"
    nice cargo install --locked --quiet --root "$root" --version "$want" cargo-fuzz \
      || log "cargo-fuzz could not be built: fuzz targets will fail in the inspect suite"
  fi
fi
if ! rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  log "installing the nightly toolchain (minimal) for cargo-fuzz"
  timeout 300 rustup toolchain install nightly --profile minimal >/dev/null 2>&1 \
    || log "no nightly toolchain available: fuzzing will use stable with RUSTC_BOOTSTRAP=1"
fi
exit 0
