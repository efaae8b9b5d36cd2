# Every image `make images-push` pushed carries its SBOM (docs/development.md, "What is in an
# image: its SBOM"). Sourced by hack/suites/60-chart.sh once the chart lifecycle has pushed the
# images to the node's registry; uses ok, bad and $WORK of the suite, and $REGISTRY_ADDR
# (hack/lib.sh). One function, image_sbom_checks: for every image of jvmdiag/agent and
# jvmdiag/operator in the registry (each distinct manifest, under all its tags; the referrers
# tags sha256-… aside):
#  a. a referrer with artifactType application/vnd.cyclonedx+json whose subject is that manifest
#     is found from its digest (hack/images/referrers.py get: the referrers API, else the tag
#     schema's index), its blob matching its digest;
#  b. it is a CycloneDX 1.5 document of that image (metadata.component) that lists libc6 from
#     Debian, and for the agent the crates libbpf-rs and kube, for the operator the JDK and the
#     Maven artifacts io.fabric8:kubernetes-client, io.javaoperatorsdk:operator-framework-core and
#     BouncyCastle (no pom.properties in the jar: from the dependency list);
#  c. the very same bytes are the file /usr/share/doc/jvm-diagnostics/sbom.cdx.json of the image
#     as pulled from the registry, and the image config's label dev.diagnostics.jvm.sbom names it.
# SBOM_REGISTRY (default $REGISTRY_ADDR, plain HTTP on loopback) and SBOM_IMAGES ("agent
# operator") change what is checked.
# shellcheck shell=bash disable=SC2015 # `test && ok … || bad …`: ok always returns 0

SBOM_IN_IMAGE=/usr/share/doc/jvm-diagnostics/sbom.cdx.json

# sbom_http PATH [CURL-ARGS...]: a GET on the registry's v2 API.
sbom_http() { local p="$1"; shift; curl -fsS "$@" "http://${SBOM_REGISTRY:-$REGISTRY_ADDR}/v2/$p"; }

# sbom_digests NAME: "digest tag,tag…" for each distinct manifest of jvmdiag/NAME.
sbom_digests() {
  local name="$1" t d
  for t in $(sbom_http "jvmdiag/$name/tags/list" | python3 -c 'import json,sys; print("\n".join(json.load(sys.stdin).get("tags") or []))'); do
    case "$t" in sha256-*) continue ;; esac
    d=$(sbom_http "jvmdiag/$name/manifests/$t" -I \
          -H 'Accept: application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json' \
        | tr -d '\r' | awk 'tolower($1) == "docker-content-digest:" {print $2}')
    echo "$d $t"
  done | awk '{tags[$1] = tags[$1] (tags[$1] ? "," : "") $2} END {for (d in tags) print d, tags[d]}' | sort
}

# sbom_lists FILE NAME: prints what the document of jvmdiag/NAME misses (nothing when complete).
sbom_lists() {
  python3 - "$1" "$2" <<'EOF'
import json, sys
doc, name = json.load(open(sys.argv[1])), sys.argv[2]
purls = [c.get("purl", "") for c in doc.get("components", [])]
want = {"libc6 (Debian)": "pkg:deb/debian/libc6@"}
if name == "agent":
    want.update({"libbpf-rs (crate)": "pkg:cargo/libbpf-rs@", "kube (crate)": "pkg:cargo/kube@"})
if name == "operator":
    want.update({
        "the JDK": "pkg:generic/openjdk@",
        "fabric8 kubernetes-client (Maven)": "pkg:maven/io.fabric8/kubernetes-client@",
        "java-operator-sdk (Maven)": "pkg:maven/io.javaoperatorsdk/operator-framework-core@",
        "BouncyCastle (Maven, from the dependency list)": "pkg:maven/org.bouncycastle/bcprov-jdk18on@",
    })
miss = [w for w, p in want.items() if not any(x.startswith(p) for x in purls)]
if (doc.get("bomFormat"), doc.get("specVersion")) != ("CycloneDX", "1.5"):
    miss.append("CycloneDX 1.5 (got %s %s)" % (doc.get("bomFormat"), doc.get("specVersion")))
if doc.get("metadata", {}).get("component", {}).get("name") != "jvmdiag/" + name:
    miss.append("metadata.component jvmdiag/" + name)
counts = {}
for p in purls:
    t = p.split(":", 1)[1].split("/", 1)[0] if ":" in p else "other"
    counts[t] = counts.get(t, 0) + 1
print("; ".join(miss) if miss else "", end="")
print("|" + ", ".join("%d %s" % (n, t) for t, n in sorted(counts.items())))
EOF
}

image_sbom_checks() {
  local reg="${SBOM_REGISTRY:-$REGISTRY_ADDR}" helper="$REPO_ROOT/hack/images/referrers.py"
  local name digest tags f out miss counts label seen
  echo "--- image SBOMs in $reg"
  for name in ${SBOM_IMAGES:-agent operator}; do
    seen=0
    while read -r digest tags; do
      [ -n "$digest" ] || continue
      seen=1
      f="$WORK/sbom-$name-${digest#sha256:}.json"
      # a. attached, found from the digest
      if out=$(python3 "$helper" get --plain-http "$reg/jvmdiag/$name@$digest" 2>&1 >"$f"); then
        ok "jvmdiag/$name:$tags: its SBOM is attached (referrer of ${digest:0:19}…)"
      else bad "jvmdiag/$name:$tags: its SBOM is attached" "$out"; continue; fi
      # b. what it lists
      out=$(sbom_lists "$f" "$name" 2>&1); miss=${out%%|*}; counts=${out#*|}
      [ -z "$miss" ] && ok "jvmdiag/$name:$tags: the SBOM lists the image's parts ($counts)" \
        || bad "jvmdiag/$name:$tags: the SBOM lists the image's parts" "missing: $miss ($counts)"
      # c. the same document inside the image, named by its label
      if python3 "$helper" cat --plain-http "$reg/jvmdiag/$name@$digest" "$SBOM_IN_IMAGE" >"$f.inside" 2>"$f.err" \
         && cmp -s "$f" "$f.inside"; then
        ok "jvmdiag/$name:$tags: the same document is $SBOM_IN_IMAGE in the image"
      else bad "jvmdiag/$name:$tags: the same document is $SBOM_IN_IMAGE in the image" "$(head -c 300 "$f.err")"; fi
      label=$(skopeo inspect --tls-verify=false --config "docker://$reg/jvmdiag/$name@$digest" 2>/dev/null \
        | python3 -c 'import json,sys; print(json.load(sys.stdin)["config"].get("Labels", {}).get("dev.diagnostics.jvm.sbom", ""))' 2>/dev/null)
      [ "$label" = "$SBOM_IN_IMAGE" ] && ok "jvmdiag/$name:$tags: the label dev.diagnostics.jvm.sbom names it" \
        || bad "jvmdiag/$name:$tags: the label dev.diagnostics.jvm.sbom names it" "label: '$label'"
    done < <(sbom_digests "$name")
    [ "$seen" = 1 ] || bad "jvmdiag/$name pushed to $reg (to check its SBOM)" "no tag in $reg/v2/jvmdiag/$name/tags/list"
  done
}
