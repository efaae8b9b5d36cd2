#!/usr/bin/env bash
# Pushes the image archives `make images` built ($JVMDIAG_CACHE/images) to a registry, with
# skopeo (no container engine): jvmdiag/<name>:dev becomes REGISTRY/jvmdiag/<name>:TAG.
#   push.sh REGISTRY [TAG]      REGISTRY: host[:port][/path]; TAG: default the chart's appVersion
#   IMAGES="agent operator"     which archives (default: the two the chart runs)
#   FROM_TAG=dev                the archives of jvmdiag/<name>:FROM_TAG (build.sh operator@COMMIT
#                               makes jvmdiag/operator:<12 hex digits of COMMIT>)
# The chart then takes the same prefix: --set global.imageRegistry=REGISTRY.
# TLS is verified except on loopback (127.0.0.1, localhost: the local cluster's plain-HTTP
# registry); PUSH_TLS_VERIFY=false turns it off elsewhere too. Credentials: `skopeo login HOST`
# first, or REGISTRY_AUTHFILE=path/to/auth.json. Layers are compressed on the way (the archives
# hold them uncompressed), so the manifest digest is the registry's own (printed as name@digest,
# for operator.image.digest / agent.image.digest); the image config, and so the image ID and
# every file, is the archive's.
# Each image's SBOM (<archive>.sbom.cdx.json, the document build.sh put in the image) is attached
# to the pushed manifest as an OCI 1.1 referrer (hack/images/referrers.py: artifactType
# application/vnd.cyclonedx+json; on a registry without the referrers API also listed in the
# index tagged sha256-<hex>, and tagged sha256-<hex>.sbom): `oras discover`, `cosign download
# sbom` or `referrers.py get` find it from the image's digest.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
IMAGES_DIR="${JVMDIAG_IMAGES:-$JVMDIAG_CACHE/images}"
reg="${1:-}"
[ -n "$reg" ] || die "usage: push.sh REGISTRY[/path] [TAG] (e.g. make images-push REGISTRY=$REGISTRY_ADDR)"
reg="${reg%/}"
case "$reg" in *://*) die "REGISTRY is host[:port][/path] without a scheme, got '$reg' (e.g. registry.example.com/team)" ;; esac
tag="${2:-}"
[ -n "$tag" ] || tag=$(sed -nE 's/^appVersion: *"?([^"]+)"?.*/\1/p' "$REPO_ROOT/charts/jvm-diagnostics/Chart.yaml")
[[ "$tag" =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$ ]] || die "TAG '$tag' is not a valid image tag (letters, digits, _ . -; at most 128)"
command -v skopeo >/dev/null || die "skopeo is missing: make setup (Debian package skopeo)"
host="${reg%%/*}"
verify="${PUSH_TLS_VERIFY:-}"
if [ -z "$verify" ]; then
  case "$host" in 127.0.0.1|127.0.0.1:*|localhost|localhost:*|\[::1\]|\[::1\]:*) verify=false ;; *) verify=true ;; esac
fi
# How referrers.py reaches the registry: plain HTTP on loopback, like skopeo there.
http=()
if [ "$verify" = false ]; then
  case "$host" in 127.0.0.1|127.0.0.1:*|localhost|localhost:*|\[::1\]|\[::1\]:*) http=(--plain-http) ;; *) http=(--insecure) ;; esac
fi
dig=$(mktemp); trap 'rm -f "$dig"' EXIT
auth=(); [ -z "${REGISTRY_AUTHFILE:-}" ] || auth=(--dest-authfile "$REGISTRY_AUTHFILE")
for name in ${IMAGES:-agent operator}; do
  a="$IMAGES_DIR/jvmdiag_${name}_${FROM_TAG:-dev}.tar"
  [ -f "$a" ] || die "no archive $a: build it first (make images; the agent needs make agent, the operator make operator-build)"
  sbom="${a%.tar}.sbom.cdx.json"
  [ -f "$sbom" ] || die "no SBOM $sbom next to $a: an archive of an older build.sh; build it again (make images)"
  dest="$reg/jvmdiag/$name:$tag"
  log "pushing $(cat "$a.ref" 2>/dev/null || basename "$a") to $dest"
  skopeo copy --quiet --dest-tls-verify="$verify" "${auth[@]}" --digestfile "$dig" "oci-archive:$a" "docker://$dest" >&2 \
    || die "pushing $a to $dest failed (skopeo copy above; a registry that wants credentials: skopeo login $host)"
  python3 "$REPO_ROOT/hack/images/referrers.py" attach "${http[@]}" "$reg/jvmdiag/$name@$(cat "$dig")" "$sbom" \
    || die "attaching $sbom to $dest@$(cat "$dig") failed (referrers.py above)"
  echo "$dest@$(cat "$dig")"
done
