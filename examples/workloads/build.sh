#!/usr/bin/env bash
# Builds the demo workload jars with the JDK's own javac/jar/keytool:
#   tls-storm.jar, class-hoarder.jar + retransform-agent.jar, codecache-churn.jar,
#   dhe-stall.jar + bcprov-jdk18on.jar (BouncyCastle), pool-wait.jar + lib/ (Jetty 12,
#   HikariCP, H2, slf4j): the libraries come from Maven Central, fetched once by Maven into
#   its local repository, and are copied beside the jars
# Compiled for release 17, so the same jars run on JDK 17 and JDK 25.
# Usage: build.sh [OUT_DIR]   (default: $JVMDIAG_CACHE/workloads/jars); JDK from $JDK17.
# Prints OUT_DIR.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
JDK="${JDK17:-/usr/lib/jvm/java-17-openjdk-amd64}"
OUT="${1:-${JVMDIAG_CACHE:-$HOME/.cache/jvm-diagnostics}/workloads/jars}"
[ -x "$JDK/bin/javac" ] || { echo "error: no javac in $JDK (set JDK17 to a JDK >= 17)" >&2; exit 1; }
BC_VERSION=1.80
# pool-wait's libraries, each with its version: Jetty 12 core's server and what it needs at
# run time (jetty-http, -io, -util, slf4j-api), the pool, the database, and slf4j's simple
# backend so that Hikari and Jetty log their warnings and nothing more.
POOL_WAIT_LIBS="org.eclipse.jetty:jetty-server:12.1.14 org.eclipse.jetty:jetty-http:12.1.14
  org.eclipse.jetty:jetty-io:12.1.14 org.eclipse.jetty:jetty-util:12.1.14 com.zaxxer:HikariCP:7.1.0
  com.h2database:h2:2.3.232 org.slf4j:slf4j-api:2.0.17 org.slf4j:slf4j-simple:2.0.17"
mkdir -p "$OUT"
# Skip when every jar is newer than every source.
newest_src=$(find "$HERE" -name '*.java' -newer "$OUT/codecache-churn.jar" 2>/dev/null | head -n1 || true)
if [ -f "$OUT/codecache-churn.jar" ] && [ -f "$OUT/tls-storm.jar" ] && [ -f "$OUT/class-hoarder.jar" ] \
   && [ -f "$OUT/retransform-agent.jar" ] && [ -f "$OUT/dhe-stall.jar" ] && [ -f "$OUT/bcprov-jdk18on.jar" ] \
   && [ -f "$OUT/pool-wait.jar" ] && [ -d "$OUT/lib" ] && [ -z "$newest_src" ] && [ "$HERE/build.sh" -ot "$OUT/codecache-churn.jar" ]; then
  echo "$OUT"; exit 0
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
build() {  # build NAME MAIN_OR_- MANIFEST_EXTRA SRC...
  local name=$1 main=$2 extra=$3; shift 3
  mkdir -p "$tmp/$name"
  "$JDK/bin/javac" --release 17 -nowarn -d "$tmp/$name" "$@"
  { [ "$main" != - ] && echo "Main-Class: $main"; [ -n "$extra" ] && printf '%b\n' "$extra"; true; } > "$tmp/$name.mf"
  "$JDK/bin/jar" --create --file "$tmp/$name.jar" --manifest "$tmp/$name.mf" -C "$tmp/$name" .
  mv "$tmp/$name.jar" "$OUT/$name.jar"
}
# A self-signed key pair for the loopback HTTPS server (and the client's trust store).
"$JDK/bin/keytool" -genkeypair -keystore "$tmp/tls-storm.p12" -storetype PKCS12 -storepass changeit \
  -alias localhost -keyalg EC -groupname secp256r1 -validity 3650 -dname CN=localhost \
  -ext SAN=dns:localhost,ip:127.0.0.1 2>/dev/null
mkdir -p "$tmp/tls-storm" && cp "$tmp/tls-storm.p12" "$tmp/tls-storm/"
build tls-storm TlsStorm "" "$HERE/tls-storm/TlsStorm.java"
build class-hoarder ClassHoarder "" "$HERE/retransform/ClassHoarder.java"
build retransform-agent - "Premain-Class: RetransformAgent\nCan-Retransform-Classes: true\nCan-Redefine-Classes: true" \
  "$HERE/retransform/RetransformAgent.java"
build codecache-churn CodeCacheChurn "" "$HERE/codecache/CodeCacheChurn.java"
# The fourth incident: BouncyCastle's provider (compile and run time), an RSA key (DHE_RSA).
BC_JAR="${MAVEN_REPO:-$HOME/.m2/repository}/org/bouncycastle/bcprov-jdk18on/$BC_VERSION/bcprov-jdk18on-$BC_VERSION.jar"
if [ ! -f "$BC_JAR" ]; then
  mvn -B -q dependency:get -Dartifact="org.bouncycastle:bcprov-jdk18on:$BC_VERSION" -Dtransitive=false >&2 \
    || { echo "error: could not fetch org.bouncycastle:bcprov-jdk18on:$BC_VERSION with Maven" >&2; exit 1; }
fi
cp "$BC_JAR" "$tmp/bcprov-jdk18on.jar"
"$JDK/bin/keytool" -genkeypair -keystore "$tmp/dhe-stall.p12" -storetype PKCS12 -storepass changeit \
  -alias localhost -keyalg RSA -keysize 2048 -validity 3650 -dname CN=localhost \
  -ext SAN=dns:localhost,ip:127.0.0.1 2>/dev/null
mkdir -p "$tmp/dhe-stall" && cp "$tmp/dhe-stall.p12" "$tmp/dhe-stall/"
build dhe-stall DheStall "Class-Path: bcprov-jdk18on.jar" -cp "$tmp/bcprov-jdk18on.jar" "$HERE/dhe-stall/DheStall.java"
mv "$tmp/bcprov-jdk18on.jar" "$OUT/bcprov-jdk18on.jar"
# The fifth incident: a connection pool too small for its request threads.
mkdir -p "$tmp/lib"
cp_libs=() class_path=()
for gav in $POOL_WAIT_LIBS; do
  IFS=: read -r g a v <<<"$gav"
  jar="${MAVEN_REPO:-$HOME/.m2/repository}/${g//.//}/$a/$v/$a-$v.jar"
  if [ ! -f "$jar" ]; then
    mvn -B -q dependency:get -Dartifact="$gav" -Dtransitive=false >&2 \
      || { echo "error: could not fetch $gav with Maven" >&2; exit 1; }
  fi
  cp "$jar" "$tmp/lib/"
  cp_libs+=("$tmp/lib/$a-$v.jar") class_path+=("lib/$a-$v.jar")
done
cp_joined=$(IFS=:; echo "${cp_libs[*]}")
build pool-wait PoolWait "Class-Path: ${class_path[*]}" -cp "$cp_joined" "$HERE/pool-wait/PoolWait.java"
rm -rf "${OUT:?}/lib" && mv "$tmp/lib" "$OUT/lib"
echo "$OUT"
