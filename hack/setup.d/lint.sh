#!/usr/bin/env bash
# The tools of hack/lint/python-shell.sh: ruff (pinned) in a Python venv cached in
# $JVMDIAG_CACHE/venv-lint, and Debian's shellcheck (hack/packages/lint.apt, which
# hack/setup.sh installs; installed here too when missing, for a lint run without `make setup`).
# Idempotent and quick once done.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
venv="$JVMDIAG_CACHE/venv-lint"
want="ruff==0.17.5"
exec 7>"$JVMDIAG_CACHE/lint-setup.lock"; flock 7
if [ ! -f "$venv/.ok" ] || [ "$(cat "$venv/.ok")" != "$want" ]; then
  log "creating $venv ($want)"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "$want"
  echo "$want" > "$venv/.ok"
fi
if ! command -v shellcheck >/dev/null; then
  [ "$(id -u)" -eq 0 ] || die "shellcheck is missing (run: sudo make setup)"
  log "installing Debian package shellcheck"
  exec 9>/tmp/jvmdiag-apt.lock; flock 9
  apt_install() { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends shellcheck >/dev/null; }
  apt_install || { apt-get update -qq && apt_install; }
fi
