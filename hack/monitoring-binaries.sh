#!/usr/bin/env bash
# Builds Prometheus $PROMETHEUS_VERSION (prometheus, promtool) and Alertmanager
# $ALERTMANAGER_VERSION (alertmanager, amtool) from their Go modules, once, into
#   $JVMDIAG_CACHE/monitoring/prometheus-<version>/ and .../alertmanager-<version>/
# and prints shell assignments (eval-able): PROMETHEUS, PROMTOOL, ALERTMANAGER, AMTOOL.
# Progress goes to stderr. A binary whose `--version` names the wanted version is kept;
# a lock makes concurrent callers wait for one build.
#
# Module versions: Prometheus 3.MM.P is the Go module github.com/prometheus/prometheus
# v0.3MM.P; Alertmanager X.Y.Z is github.com/prometheus/alertmanager vX.Y.Z.
# Neither build embeds the web UI (the project uses the HTTP APIs):
# - Prometheus without the `builtinassets` tag serves its API; its UI pages answer with an
#   error. `remove_all_sd` leaves only the file and HTTP service discoveries (the local
#   configs use static_configs): less to build (no Consul, OpenStack, cloud discovery SDKs).
# - Alertmanager's module has no built UI (ui/app/dist comes from its npm build), which
#   its `go:embed` needs: the module's source is copied and given a one-page placeholder.
set -euo pipefail
PROMETHEUS_VERSION="${PROMETHEUS_VERSION:-3.16.0}"
ALERTMANAGER_VERSION="${ALERTMANAGER_VERSION:-0.35.0}"
CACHE="${JVMDIAG_CACHE:-$HOME/.cache/jvm-diagnostics}"
ROOT="$CACHE/monitoring"
PROM_DIR="$ROOT/prometheus-$PROMETHEUS_VERSION"
AM_DIR="$ROOT/alertmanager-$ALERTMANAGER_VERSION"

log() { printf '>> %s\n' "$*" >&2; }
# has BIN VERSION: BIN exists and its --version names VERSION ("prometheus, version 3.16.0 (…").
has() { [ -x "$1" ] && "$1" --version 2>&1 | head -n1 | grep -q "version $2 "; }
have_all() {
  has "$PROM_DIR/prometheus" "$PROMETHEUS_VERSION" && has "$PROM_DIR/promtool" "$PROMETHEUS_VERSION" \
    && has "$AM_DIR/alertmanager" "$ALERTMANAGER_VERSION" && has "$AM_DIR/amtool" "$ALERTMANAGER_VERSION"
}
print() {
  echo "PROMETHEUS=$PROM_DIR/prometheus"
  echo "PROMTOOL=$PROM_DIR/promtool"
  echo "ALERTMANAGER=$AM_DIR/alertmanager"
  echo "AMTOOL=$AM_DIR/amtool"
}
if have_all; then print; exit 0; fi

command -v go >/dev/null || { echo "error: go not found (Prometheus and Alertmanager are built from Go modules)" >&2; exit 1; }
mkdir -p "$ROOT/build"
exec 9>"$ROOT/build.lock"
if ! flock -n 9; then log "waiting for another build of Prometheus/Alertmanager ($ROOT/build.lock)"; flock 9; fi
if have_all; then print; exit 0; fi

# ldflags NAME VERSION MODULE@VERSION: stripped, and --version printing the release and the
# module's commit (from the proxy's origin record, when it has one).
ldflags() {
  local rev
  rev=$(go mod download -json "$3" 2>/dev/null | sed -n 's/.*"Hash": "\([0-9a-f]*\)".*/\1/p' | head -n1)
  local v=github.com/prometheus/common/version
  echo "-s -w -X $v.Version=$2 -X $v.Revision=${rev:-unknown} -X $v.Branch=$3 -X $v.BuildUser=jvmdiag -X $v.BuildDate=$(date -u +%Y%m%d-%H:%M:%S)"
}
# build DIR MAIN_DIR PACKAGE BINARY VERSION MODULE@VERSION [go build flags]
build() {
  local out=$1 main=$2 pkg=$3 bin=$4 ver=$5 mod=$6; shift 6
  has "$out/$bin" "$ver" && return 0
  log "building $bin $ver from $mod (cached in $out)"
  local t0=$SECONDS
  mkdir -p "$out"
  (cd "$main" && CGO_ENABLED=0 go build -mod=mod -trimpath "$@" -ldflags "$(ldflags "$bin" "$ver" "$mod")" \
    -o "$out/$bin.tmp" "$pkg") >&2
  mv "$out/$bin.tmp" "$out/$bin"
  log "built $bin $ver in $((SECONDS - t0)) s, $(du -m "$out/$bin" | cut -f1) MB"
}

# Prometheus: a module that requires it, so its own go.mod decides every dependency.
IFS=. read -r pmaj pmin ppatch <<<"$PROMETHEUS_VERSION"
PROM_MOD="github.com/prometheus/prometheus@v0.$((pmaj * 100 + pmin)).$ppatch"
pb="$ROOT/build/prometheus-$PROMETHEUS_VERSION"
if ! { has "$PROM_DIR/prometheus" "$PROMETHEUS_VERSION" && has "$PROM_DIR/promtool" "$PROMETHEUS_VERSION"; }; then
  mkdir -p "$pb"
  printf 'module jvmdiag.local/prometheusbuild\n\ngo 1.24\n' >"$pb/go.mod"
  log "resolving $PROM_MOD"
  (cd "$pb" && GOFLAGS=-mod=mod go get "$PROM_MOD") >&2 2>"$pb/get.log" || { cat "$pb/get.log" >&2; exit 1; }
  for b in prometheus promtool; do
    build "$PROM_DIR" "$pb" "github.com/prometheus/prometheus/cmd/$b" "$b" "$PROMETHEUS_VERSION" "$PROM_MOD" -tags remove_all_sd
  done
fi

# Alertmanager: its module's source, built as the main module (its go.mod and go.sum), with
# a placeholder for the UI its release build adds.
AM_MOD="github.com/prometheus/alertmanager@v$ALERTMANAGER_VERSION"
ab="$ROOT/build/alertmanager-$ALERTMANAGER_VERSION"
if ! { has "$AM_DIR/alertmanager" "$ALERTMANAGER_VERSION" && has "$AM_DIR/amtool" "$ALERTMANAGER_VERSION"; }; then
  log "downloading $AM_MOD"
  src=$(go mod download -json "$AM_MOD" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  [ -d "$src" ] || { echo "error: go mod download $AM_MOD failed" >&2; exit 1; }
  rm -rf "$ab"; mkdir -p "$(dirname "$ab")"
  cp -r "$src" "$ab"; chmod -R u+w "$ab"
  page='<!doctype html><title>Alertmanager</title><p>Built without its web UI: use the API (/api/v2/).'
  for ui in elm mantine; do
    # Served from index.html.br or .gz, as the UI's build compresses its files; the .br is one
    # uncompressed Brotli meta-block (3-byte header, the page, an empty last meta-block).
    d="$ab/ui/app/dist/$ui"; mkdir -p "$d"
    printf '%s\n' "$page" | gzip -9n >"$d/index.html.gz"
    printf '%s\n' "$page" | python3 -c 'import sys; b = sys.stdin.buffer.read()
sys.stdout.buffer.write(((len(b) - 1) << 4 | 1 << 20).to_bytes(3, "little") + b + b"\x03")' >"$d/index.html.br"
  done
  for b in alertmanager amtool; do
    build "$AM_DIR" "$ab" "./cmd/$b" "$b" "$ALERTMANAGER_VERSION" "$AM_MOD"
  done
fi
have_all || { echo "error: the built binaries do not report the wanted versions" >&2; exit 1; }
print
