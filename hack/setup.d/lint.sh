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
pinned_venv "$venv" "$want"
# hack/setup.sh installs it (hack/packages/lint.apt); here too, for a lint run without it.
apt_ensure shellcheck
