#!/usr/bin/env bash
# Formatting and lint of the repository's Python and shell scripts.
#   hack/lint/python-shell.sh check   ruff format --check, ruff check, shellcheck; one line
#                                     "lint TOOL: ok|FAILED" per tool, exit 1 on any failure
#   hack/lint/python-shell.sh fix     ruff check --fix (safe fixes only), then ruff format
# Configuration: ruff.toml and .shellcheckrc at the repository root. The files are git's
# (tracked, present): Python = *.py and extension-less files with a python shebang; shell =
# *.sh, *.bash and extension-less files with a sh/bash shebang (.ci/run, ...).
# Tools: ruff pinned in $JVMDIAG_CACHE/venv-lint and shellcheck, by hack/setup.d/lint.sh.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
mode="${1:-}"
case "$mode" in check|fix) ;; *) echo "usage: $0 check|fix" >&2; exit 2 ;; esac
bash "$REPO_ROOT/hack/setup.d/lint.sh" || die "lint tools could not be set up"
RUFF="$JVMDIAG_CACHE/venv-lint/bin/ruff"
cd "$REPO_ROOT" || exit

py=() sh=()
while IFS= read -r -d '' f; do
  [ -f "$f" ] || continue  # deleted in the work tree
  case "$f" in
    *.py) py+=("$f"); continue ;;
    *.sh|*.bash) sh+=("$f"); continue ;;
  esac
  case "${f##*/}" in *.*) continue ;; esac  # another extension (or a dot file)
  first=$(head -c 200 "$f" | head -n1 | tr -d '\0')
  if [[ "$first" =~ ^#!.*python ]]; then py+=("$f")
  elif [[ "$first" =~ ^#!.*(/|env[[:space:]]+)(ba)?sh([[:space:]]|$) ]]; then sh+=("$f"); fi
done < <(git ls-files -z)
log "lint: ${#py[@]} Python files, ${#sh[@]} shell files"

if [ "$mode" = fix ]; then
  # Fixes first: they can leave code the formatter then lays out (sorted imports).
  rc=0
  "$RUFF" check --fix "${py[@]}" || rc=1
  "$RUFF" format "${py[@]}" || rc=1
  exit "$rc"
fi

failed=0
run() {  # name command...
  local name="$1"; shift
  if "$@"; then echo "lint $name: ok"; else echo "lint $name: FAILED"; failed=1; fi
}
run ruff-format "$RUFF" format --check "${py[@]}"
run ruff-check "$RUFF" check "${py[@]}"
run shellcheck shellcheck "${sh[@]}"
exit "$failed"
