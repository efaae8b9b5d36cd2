#!/usr/bin/env bash
# Idempotent machine set-up: Debian packages named in hack/packages/*.apt (one part per
# file), raised memlock, and the Go-built tools. Safe to run again; quick when done.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
pkgs=$(cat "$REPO_ROOT"/hack/packages/*.apt 2>/dev/null | sed 's/#.*//' | xargs -n1 | sort -u)
missing=()
for p in $pkgs; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p"); done
if [ "${#missing[@]}" -gt 0 ]; then
  [ "$(id -u)" -eq 0 ] || die "need root to install: ${missing[*]} (run: sudo make setup)"
  log "installing Debian packages: ${missing[*]}"
  exec 9>/tmp/jvmdiag-apt.lock; flock 9
  stamp="$JVMDIAG_CACHE/apt-updated"
  if [ ! -f "$stamp" ] || [ -n "$(find "$stamp" -mmin +720 2>/dev/null)" ]; then
    apt-get update -qq && touch "$stamp"
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
for s in "$REPO_ROOT"/hack/setup.d/*.sh; do [ -f "$s" ] && bash "$s"; done
exit 0
