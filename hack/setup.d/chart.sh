#!/usr/bin/env bash
# helm-unittest v1.1.2 as a Helm plugin, built once from its Go module (no binary
# downloads) into $JVMDIAG_CACHE/helm-plugins/unittest. Use it with
#   HELM_PLUGINS=$JVMDIAG_CACHE/helm-plugins helm unittest CHART
# (the plugin's own install hook would download a release binary; we skip it and write
# the plugin.yaml ourselves).
set -euo pipefail
CACHE="${JVMDIAG_CACHE:-$HOME/.cache/jvm-diagnostics}"
VERSION=1.1.2
DIR="$CACHE/helm-plugins/unittest"
[ -x "$DIR/untt" ] && grep -q "version: \"$VERSION\"" "$DIR/plugin.yaml" 2>/dev/null && exit 0
echo ">> building helm-unittest v$VERSION into $DIR (once)" >&2
mkdir -p "$DIR"
exec 9>"$CACHE/helm-unittest.lock"; flock 9
# Its go.mod has replace directives, so `go install pkg@version` refuses it: build inside
# a copy of the module source instead.
src=$(cd /tmp && GOFLAGS=-mod=mod go mod download -json "github.com/helm-unittest/helm-unittest@v$VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
work=$(mktemp -d); trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
cp -r "$src/." "$work/"; chmod -R u+w "$work"
(cd "$work" && CGO_ENABLED=0 nice go build -trimpath -ldflags "-s -w" -o "$DIR/untt" ./cmd/helm-unittest)
cat >"$DIR/plugin.yaml" <<YAML
name: "unittest"
version: "$VERSION"
usage: "unittest for helm charts"
description: "helm-unittest v$VERSION, built from github.com/helm-unittest/helm-unittest by hack/setup.d/chart.sh"
ignoreFlags: false
command: "\$HELM_PLUGIN_DIR/untt"
YAML
