#!/usr/bin/env bash
# Copies the generated CRDs from the repository's crds/ (made from the operator's Java
# model by `make operator-crd`) into the chart's crds/. Never edit the chart's copies.
#   sync-crds.sh           copy
#   sync-crds.sh --check   exit 1, naming the files, when the chart's copies are stale
set -euo pipefail
CHART="$(cd "$(dirname "$0")/.." && pwd)"
SRC="$(cd "$CHART/../.." && pwd)/crds"
DST="$CHART/crds"
shopt -s nullglob
src=("$SRC"/*.yml "$SRC"/*.yaml)
[ "${#src[@]}" -gt 0 ] || { echo "error: no CRD in $SRC (run: make operator-crd)" >&2; exit 1; }
if [ "${1:-}" = --check ]; then
  stale=0
  for f in "${src[@]}"; do
    cmp -s "$f" "$DST/$(basename "$f")" || { echo "stale: $DST/$(basename "$f") differs from $f" >&2; stale=1; }
  done
  for f in "$DST"/*; do
    [ -e "$SRC/$(basename "$f")" ] || { echo "stale: $f has no source in $SRC" >&2; stale=1; }
  done
  [ "$stale" = 0 ] || { echo "fix: charts/jvm-diagnostics/scripts/sync-crds.sh" >&2; exit 1; }
  exit 0
fi
mkdir -p "$DST"
rm -f "$DST"/*
cp "${src[@]}" "$DST/"
echo "synced ${#src[@]} CRD(s) into $DST"
