#!/usr/bin/env bash
# Idempotent machine set-up: Debian packages named in hack/packages/*.apt (one part per
# file), raised memlock, and the Go-built tools. Safe to run again; quick when done.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
pkgs=$(cat "$REPO_ROOT"/hack/packages/*.apt 2>/dev/null | sed 's/#.*//' | xargs -n1 | sort -u)
# shellcheck disable=SC2086 # one package name per word
apt_ensure $pkgs
for s in "$REPO_ROOT"/hack/setup.d/*.sh; do [ -f "$s" ] && bash "$s"; done
exit 0
