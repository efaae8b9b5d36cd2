#!/usr/bin/env python3
"""The software bill of materials of an image that build-image.py builds (stdlib only).

One CycloneDX 1.5 JSON document per image lists what its files are made of:

- Debian packages: the ones the image's own dpkg database records (var/lib/dpkg/status, and
  status.d/* as distroless images have it), and the ones that own the host files the build
  copied in (hack/images/build.sh takes the JDK's libraries, /bin/sh, the agent's libraries
  from this Debian host: their owners come from the host's dpkg database, /var/lib/dpkg);
  a package compiled into a binary statically (the pause image's glibc) is named by the build.
  purl pkg:deb/debian/<name>@<version>?arch=<arch>&distro=debian-<VERSION_ID>.
- Rust crates linked into a binary: `cargo tree -e normal,no-proc-macro --prefix none` for
  the target (no build or dev dependencies, no proc-macros), checked against Cargo.lock
  (crates.io ones only: path crates are the project's own). purl pkg:cargo/<name>@<version>.
- Maven artifacts inside a jar: its META-INF/maven/<group>/<artifact>/pom.properties (what a
  shaded jar really holds), plus the runtime dependencies `mvn dependency:list` names that
  carry no pom.properties (built without Maven). purl pkg:maven/<group>/<artifact>@<version>.
- The JDK: a directory with a `release` file next to lib/server/libjvm.so or bin/java.
- The image itself (metadata.component): name, version, VCS revision.

An image built on a base inherits the base's components (its document, read from the base's
layers). The document is reproducible: no clock, a serial number derived from the content.
"""

import fnmatch
import glob
import hashlib
import io
import json
import os
import re
import uuid
import zipfile
from urllib.parse import quote

# Where the document lives inside every image, the config label that points at it, and the
# media type it is pushed with (hack/images/referrers.py).
SBOM_PATH = "/usr/share/doc/jvm-diagnostics/sbom.cdx.json"
SBOM_LABEL = "dev.diagnostics.jvm.sbom"
MEDIA_TYPE = "application/vnd.cyclonedx+json"
TOOL = "jvm-diagnostics hack/images/sbom.py"


def purl_part(s):
    """A purl name or version, percent-encoded (':' of a Debian epoch stays as it is)."""
    return quote(s, safe=".-_~:")


# --- Debian -------------------------------------------------------------------------------


def parse_control(text):
    """Paragraphs of a dpkg control file (status, status.d/*): a list of {field: value}."""
    out, cur, last = [], {}, None
    for line in text.splitlines():
        if not line.strip():
            if cur:
                out.append(cur)
            cur, last = {}, None
        elif line[0] in " \t":
            if last:
                cur[last] += "\n" + line.strip()
        elif ":" in line:
            last, _, value = line.partition(":")
            cur[last] = value.strip()
    if cur:
        out.append(cur)
    return out


def installed(paragraphs):
    """The installed packages (status.d entries may carry no Status field)."""
    return [
        p
        for p in paragraphs
        if "Package" in p
        and "Version" in p
        and p.get("Status", "x ok installed").endswith(" installed")
    ]


def distro_of(os_release_text):
    """debian-12 from an os-release file (ID and VERSION_ID)."""
    f = dict(
        (k, v.strip().strip('"'))
        for k, _, v in (line.partition("=") for line in os_release_text.splitlines())
        if k
    )
    return (
        "%s-%s" % (f.get("ID", "debian"), f.get("VERSION_ID", ""))
        if f.get("VERSION_ID")
        else f.get("ID", "debian")
    )


def deb_component(p, distro, origin):
    name, version, arch = p["Package"], p["Version"], p.get("Architecture", "all")
    c = {
        "type": "library",
        "name": name,
        "version": version,
        "purl": "pkg:deb/debian/%s@%s?arch=%s&distro=%s"
        % (purl_part(name), purl_part(version), arch, distro),
        "properties": [{"name": "jvm-diagnostics:origin", "value": origin}],
    }
    src = p.get("Source")
    if src:  # "glibc" or "glibc (2.36-9+deb12u10)"
        c["properties"].append({"name": "debian:source", "value": src})
    return c


# merged /usr: dpkg records /lib/x/libc.so.6 while build-image.py adds it at /usr/lib/x/...
_MERGED = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")


def path_aliases(path):
    parts = path.split("/", 3)  # "", "usr", "lib", rest
    if len(parts) > 2 and parts[1] == "usr" and parts[2] in _MERGED:
        return [path, path[4:]]
    if len(parts) > 1 and parts[1] in _MERGED:
        return [path, "/usr" + path]
    return [path]


class DpkgDb:
    """A dpkg database (status + info/*.list) under root: who owns which file."""

    def __init__(self, root="/"):
        self.root = root
        base = os.path.join(root, "var/lib/dpkg")
        with open(os.path.join(base, "status"), encoding="utf-8", errors="replace") as f:
            self.packages = installed(parse_control(f.read()))
        self._by_key = {}
        for p in self.packages:
            self._by_key[(p["Package"], p.get("Architecture"))] = p
            self._by_key.setdefault((p["Package"], None), p)
        self._owner = None
        self._info = os.path.join(base, "info")
        try:
            with open(os.path.join(root, "etc/os-release")) as f:
                self.distro = distro_of(f.read())
        except OSError:
            self.distro = "debian"

    def package(self, name, arch=None):
        return self._by_key.get((name, arch)) or self._by_key.get((name, None))

    def _load(self):
        self._owner = {}
        for lst in sorted(glob.glob(os.path.join(self._info, "*.list"))):
            key = os.path.basename(lst)[: -len(".list")]
            name, _, arch = key.partition(":")
            with open(lst, encoding="utf-8", errors="replace") as f:
                for line in f:
                    self._owner.setdefault(line.rstrip("\n"), (name, arch or None))

    def owner(self, path):
        """The installed package (its status paragraph) that owns path, or None."""
        if self._owner is None:
            self._load()
        for p in path_aliases(os.path.normpath(path)):
            hit = self._owner.get(p)
            if hit:
                pkg = self.package(*hit)
                if pkg:
                    return pkg
        return None


# --- Rust ---------------------------------------------------------------------------------


def parse_cargo_lock(text):
    """[[package]] entries of a Cargo.lock: {(name, version): {source, checksum}}."""
    out, cur = {}, None
    for line in text.splitlines() + ["[[package]]"]:
        line = line.strip()
        if line == "[[package]]" or (line.startswith("[") and not line.startswith("[[package")):
            if cur and "name" in cur and "version" in cur:
                out[(cur["name"], cur["version"])] = cur
            cur = {} if line == "[[package]]" else None
            continue
        m = re.match(r'^(name|version|source|checksum) = "(.*)"$', line)
        if cur is not None and m:
            cur[m.group(1)] = m.group(2)
    return out


_TREE_LINE = re.compile(r"^([A-Za-z0-9_-]+) v(\S+)")


def cargo_components(tree_text, lock_text):
    """The crates.io crates of a `cargo tree --prefix none` listing, with Cargo.lock's checksum."""
    lock = parse_cargo_lock(lock_text)
    seen, out = set(), []
    for line in tree_text.splitlines():
        m = _TREE_LINE.match(line.strip())
        if not m or (m.group(1), m.group(2)) in seen:
            continue
        seen.add((m.group(1), m.group(2)))
        entry = lock.get((m.group(1), m.group(2)))
        if entry is None:
            raise ValueError("cargo tree lists %s %s, Cargo.lock does not" % m.groups())
        source = entry.get("source", "")
        if not source:
            continue  # a path crate: the project's own (the image's component)
        name, version = m.group(1), m.group(2)
        c = {
            "type": "library",
            "name": name,
            "version": version,
            "purl": "pkg:cargo/%s@%s" % (purl_part(name), purl_part(version)),
        }
        if entry.get("checksum"):
            c["hashes"] = [{"alg": "SHA-256", "content": entry["checksum"]}]
        if not source.startswith("registry+https://github.com/rust-lang/crates.io-index"):
            c["properties"] = [{"name": "cargo:source", "value": source}]
        out.append(c)
    return out


# --- Maven --------------------------------------------------------------------------------


def parse_properties(text):
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if line and line[0] not in "#!" and "=" in line:
            k, _, v = line.partition("=")
            out[k.strip()] = v.strip()
    return out


def maven_components(jar, where):
    """The artifacts a jar holds, from its META-INF/maven/*/*/pom.properties."""
    out = []
    with zipfile.ZipFile(jar) as z:
        for name in sorted(z.namelist()):
            if not fnmatch.fnmatch(name, "META-INF/maven/*/*/pom.properties"):
                continue
            p = parse_properties(z.read(name).decode("utf-8", "replace"))
            g, a, v = p.get("groupId"), p.get("artifactId"), p.get("version")
            if not (g and a and v):
                continue
            out.append(
                maven_component(g, a, v, [{"name": "jvm-diagnostics:origin", "value": where}])
            )
    return out


def maven_component(group, artifact, version, properties):
    """One Maven artifact as a CycloneDX library, with its purl."""
    return {
        "type": "library",
        "group": group,
        "name": artifact,
        "version": version,
        "purl": "pkg:maven/%s/%s@%s" % (purl_part(group), purl_part(artifact), purl_part(version)),
        "properties": properties,
    }


_DEP_LINE = re.compile(
    r"^\s+([\w.-]+):([\w.-]+):[\w.-]+(?::[\w.-]+)?:([\w.+-]+):(compile|runtime)\b"
)


def maven_list_components(list_text, jar_components, where):
    """Runtime artifacts that `mvn dependency:list -DincludeScope=runtime` names and the jar's
    pom.properties do not (jars built without Maven carry none: BouncyCastle, picocli): the
    shade plugin put their classes in, so they are part of the jar all the same."""
    have = {(c["group"], c["name"]) for c in jar_components}
    out = []
    for line in list_text.splitlines():
        m = _DEP_LINE.match(line)
        if not m or (m.group(1), m.group(2)) in have:
            continue
        g, a, v = m.group(1), m.group(2), m.group(3)
        have.add((g, a))
        out.append(
            maven_component(
                g,
                a,
                v,
                [
                    {"name": "jvm-diagnostics:origin", "value": where},
                    {
                        "name": "jvm-diagnostics:evidence",
                        "value": "mvn dependency:list (no pom.properties in the jar)",
                    },
                ],
            )
        )
    return out


# --- JDK ----------------------------------------------------------------------------------


def jdk_component(release_text, where):
    """The JDK whose `release` file this is (IMPLEMENTOR, JAVA_VERSION, JAVA_RUNTIME_VERSION)."""
    r = parse_properties(release_text)
    r = {k: v.strip('"') for k, v in r.items()}
    version = r.get("JAVA_VERSION")
    if not version:
        return None
    impl = r.get("IMPLEMENTOR", "")
    props = [{"name": "jvm-diagnostics:origin", "value": where}]
    for k in (
        "IMPLEMENTOR",
        "IMPLEMENTOR_VERSION",
        "JAVA_RUNTIME_VERSION",
        "JVM_VARIANT",
        "IMAGE_TYPE",
    ):
        if r.get(k):
            props.append({"name": "java:" + k, "value": r[k]})
    c = {
        "type": "framework",
        "name": "openjdk",
        "version": version,
        "description": " ".join(
            x for x in (impl, r.get("IMPLEMENTOR_VERSION"), r.get("JAVA_RUNTIME_VERSION")) if x
        ),
        # The CPE under which OpenJDK vulnerabilities are published, whatever the build.
        "cpe": "cpe:2.3:a:oracle:openjdk:%s:*:*:*:*:*:*:*" % version,
        "purl": "pkg:generic/openjdk@%s" % purl_part(version),
        "properties": props,
    }
    if impl:
        c["supplier"] = {"name": impl}
    return c


def jdk_homes(paths):
    """Directories holding a JDK's `release` next to lib/server/libjvm.so or bin/java."""
    s = set(paths)
    return sorted(
        os.path.dirname(p)
        for p in s
        if os.path.basename(p) == "release"
        and (
            os.path.join(os.path.dirname(p), "lib/server/libjvm.so") in s
            or os.path.join(os.path.dirname(p), "bin/java") in s
        )
    )


# --- the document -------------------------------------------------------------------------


def _ref(c):
    return c.get("purl") or "%s@%s" % (c["name"], c.get("version", ""))


def document(image, version, revision, components, created=None, properties=()):
    """The CycloneDX 1.5 document: components sorted and unique by purl, bom-refs set."""
    uniq = {}
    for c in components:
        c = dict(c)
        c["bom-ref"] = _ref(c)
        uniq.setdefault(c["bom-ref"], c)
    comps = sorted(uniq.values(), key=lambda c: c["bom-ref"])
    root = {"type": "container", "bom-ref": "image:" + image, "name": image}
    if version:
        root["version"] = version
    props = []
    if revision:
        props.append({"name": "org.opencontainers.image.revision", "value": revision})
    props += [{"name": k, "value": v} for k, v in properties]
    if props:
        root["properties"] = props
    meta = {
        "tools": {"components": [{"type": "application", "name": TOOL}]},
        "component": root,
    }
    if created:
        meta["timestamp"] = created
    doc = {
        "bomFormat": "CycloneDX",
        "specVersion": "1.5",
        "version": 1,
        "metadata": meta,
        "components": comps,
        "dependencies": [{"ref": root["bom-ref"], "dependsOn": [c["bom-ref"] for c in comps]}],
    }
    body = json.dumps(doc, sort_keys=True).encode()
    doc["serialNumber"] = "urn:uuid:%s" % uuid.UUID(
        bytes=hashlib.sha256(body).digest()[:16], version=4
    )
    return doc


def dumps(doc):
    return (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode()


def inherited(doc_bytes):
    """The components of a base image's document (what an image built on it inherits)."""
    doc = json.loads(doc_bytes)
    out = []
    for c in doc.get("components", []):
        c = dict(c)
        c.pop("bom-ref", None)
        out.append(c)
    return out


class Collector:
    """Gathers the components of one image while build-image.py assembles it.

    files: image path -> host path of the files added (None for generated content); the
    layers of a base are read for their dpkg database and their SBOM document.
    """

    def __init__(self, dpkg=None):
        self.dpkg = dpkg
        self.components = []
        self.notes = []

    def base_document(self, data):
        self.components += inherited(data)

    def image_dpkg(self, path, data):
        """A dpkg status file (var/lib/dpkg/status or status.d/NAME) found in the image."""
        distro = self.dpkg.distro if self.dpkg else "debian"
        for p in installed(parse_control(data.decode("utf-8", "replace"))):
            self.components.append(deb_component(p, distro, "image dpkg database " + path))

    def host_files(self, files):
        """Debian packages owning the host files copied into the image."""
        if self.dpkg is None:
            return
        owners = {}
        for host in sorted(h for h in files.values() if h):
            p = self.dpkg.owner(host)
            if p is not None:
                owners.setdefault((p["Package"], p.get("Architecture")), p)
        for p in owners.values():
            self.components.append(deb_component(p, self.dpkg.distro, "host files"))

    def static_package(self, name):
        """A Debian package compiled into a binary of the image (static linking)."""
        p = self.dpkg.package(name) if self.dpkg else None
        if p is None:
            raise ValueError("Debian package %s is not installed on this host" % name)
        self.components.append(deb_component(p, self.dpkg.distro, "linked statically"))

    def jars(self, files, maven_lists=None):
        """The Maven artifacts of every jar; maven_lists: image path of a jar -> the text of
        its `mvn dependency:list -DincludeScope=runtime` (what its pom.properties miss)."""
        for dest, host in sorted(files.items()):
            if host and dest.endswith(".jar") and os.path.isfile(host):
                found = maven_components(host, dest)
                self.components += found
                if maven_lists and dest in maven_lists:
                    self.components += maven_list_components(maven_lists[dest], found, dest)

    def jdks(self, files, read):
        for home in jdk_homes(files):
            c = jdk_component(read(os.path.join(home, "release")).decode("utf-8", "replace"), home)
            if c:
                self.components.append(c)

    def cargo(self, tree_text, lock_text):
        self.components += cargo_components(tree_text, lock_text)


def counts(doc):
    """{purl type: number of components}, e.g. {"deb": 12, "cargo": 150}."""
    out = {}
    for c in doc.get("components", []):
        t = c.get("purl", "pkg:other/").split(":", 1)[1].split("/", 1)[0]
        out[t] = out.get(t, 0) + 1
    return out


if __name__ == "__main__":  # print the counts of documents: sbom.py FILE...
    import sys

    for f in sys.argv[1:]:
        with open(f, "rb") as fh:
            d = json.load(io.TextIOWrapper(fh, "utf-8"))
        print(f, d["metadata"]["component"]["name"], json.dumps(counts(d), sort_keys=True))
