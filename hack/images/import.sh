#!/usr/bin/env bash
# Imports image archives into the containerd of running local cluster nodes, and pins
# them (label io.cri-containerd.pinned=pinned) so nothing garbage-collects them.
#   import.sh [--cluster-dir DIR] [ARCHIVE...]
# Default: every archive in $JVMDIAG_CACHE/images, into every running node under
# $JVMDIAG_CACHE/cluster*/. An archive already imported and unchanged is skipped.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
IMAGES_DIR="${JVMDIAG_IMAGES:-$JVMDIAG_CACHE/images}"
dirs=()
if [ "${1:-}" = --cluster-dir ]; then dirs=("$2"); shift 2; fi
archives=("$@")
[ "${#archives[@]}" -gt 0 ] || archives=("$IMAGES_DIR"/*.tar)
if [ "${#dirs[@]}" = 0 ]; then
  for d in "$JVMDIAG_CACHE"/cluster "$JVMDIAG_CACHE"/cluster-[0-9]; do
    [ -S "$d/run/containerd.sock" ] && kill -0 "$(cat "$d/run/containerd.pid" 2>/dev/null)" 2>/dev/null && dirs+=("$d")
  done
  [ "${#dirs[@]}" -gt 0 ] || { log "no local cluster node is running: images are imported at the next 'make cluster-up'"; exit 0; }
fi
for d in "${dirs[@]}"; do
  sock="$d/run/containerd.sock"
  stamps="$d/containerd/root/imported"; mkdir -p "$stamps"
  present=$(ctr --address "$sock" -n k8s.io images ls -q)
  for a in "${archives[@]}"; do
    [ -f "$a" ] || continue
    [ -f "$a.ref" ] || die "$a has no $a.ref next to it (the image reference); build it with hack/images/build-image.py"
    ref=$(cat "$a.ref"); name=$(basename "$a" .tar); sum=$(stat -c '%s %Y' "$a")
    if [ "$(cat "$stamps/$name" 2>/dev/null)" = "$sum" ] && grep -qxF "$ref" <<<"$present"; then continue; fi
    log "importing $ref into $sock"
    ctr --address "$sock" -n k8s.io images import "$a" >/dev/null
    ctr --address "$sock" -n k8s.io images label "$ref" io.cri-containerd.pinned=pinned >/dev/null
    echo "$sum" >"$stamps/$name"
  done
done
