#!/usr/bin/env python3
"""Builds a container image archive without a container engine.

The archive is an OCI image layout (index.json, blobs/sha256/...) that also carries a
Docker-style manifest.json, so `ctr images import` and other importers take it. Every
invocation adds exactly one uncompressed layer on top of an optional base image.

Examples:
  # a workload image from a jar, on the JDK 17 base image built by `make images`
  build-image.py --tag jvmdiag/demo-app:dev --base jvmdiag/jdk17-base:dev \\
      --add target/app.jar:/app/app.jar --entrypoint '["java", "-jar", "/app/app.jar"]'
  # files taken from this host at the same absolute paths, with their symlink targets
  build-image.py --tag example/tool:dev --add-host /usr/bin/dash --entrypoint /usr/bin/dash

Image references are short names (`jvmdiag/x:dev`); containerd stores them as
`docker.io/jvmdiag/x:dev`, which is what a pod's `image: jvmdiag/x:dev` resolves to.
An archive lands in $JVMDIAG_IMAGES (default $JVMDIAG_CACHE/images) as
<name with / and : turned into _>.tar, next to <same>.tar.ref holding the full reference;
--base finds archives there by reference.
"""

import argparse
import fnmatch
import hashlib
import io
import json
import os
import re
import shlex
import stat
import sys
import tarfile
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sbom  # noqa: E402 (next to this file)

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar"
REF_RE = re.compile(
    r"^[a-z0-9]+(?:[._-][a-z0-9]+)*(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$"
)


def fail(msg):
    print(f"build-image: error: {msg}", file=sys.stderr)
    sys.exit(2)


def images_dir():
    cache = os.environ.get("JVMDIAG_CACHE", os.path.expanduser("~/.cache/jvm-diagnostics"))
    return os.environ.get("JVMDIAG_IMAGES", os.path.join(cache, "images"))


def full_ref(ref):
    """jvmdiag/x:dev -> docker.io/jvmdiag/x:dev (containerd's normalised name)."""
    first = ref.split("/")[0]
    if "." in first or ":" in first.split(":")[0] or first == "localhost":
        return ref
    return "docker.io/" + (ref if "/" in ref else "library/" + ref)


def archive_path(ref):
    return os.path.join(images_dir(), re.sub(r"[/:]", "_", ref) + ".tar")


class Layer:
    """One layer tar, written to a temporary file, entries added once each, parents first."""

    def __init__(self, excludes):
        self.file = tempfile.TemporaryFile()
        self.tar = tarfile.open(fileobj=self.file, mode="w", format=tarfile.PAX_FORMAT)
        self.names = set()
        self.excludes = excludes
        self.visited = set()
        self.sources = {}  # image path -> host path it was copied from (None: generated)

    def _excluded(self, host_path):
        return any(fnmatch.fnmatch(host_path, p) for p in self.excludes)

    def _norm(self, dest):
        return os.path.normpath(dest).lstrip("/")

    def ensure_dirs(self, dest, host_dir=None):
        """Directory entries for every parent of dest (mode from the host when it exists)."""
        parts = self._norm(dest).split("/")[:-1]
        for i in range(1, len(parts) + 1):
            name = "/".join(parts[:i])
            if name in self.names:
                continue
            info = tarfile.TarInfo(name)
            info.type = tarfile.DIRTYPE
            info.mode = 0o755
            host = "/" + name if host_dir is None else None
            if host and os.path.isdir(host) and not os.path.islink(host):
                info.mode = stat.S_IMODE(os.lstat(host).st_mode)
            self._add(info)

    def _add(self, info, fileobj=None):
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        info.mtime = 0  # reproducible layers: same inputs, same digest
        self.tar.addfile(info, fileobj)
        self.names.add(info.name)
        if info.type != tarfile.DIRTYPE:
            self.sources.setdefault("/" + info.name, None)

    def add_dir_entry(self, dest, mode):
        self.ensure_dirs(dest)
        name = self._norm(dest)
        if name in self.names or name == ".":
            return
        info = tarfile.TarInfo(name)
        info.type = tarfile.DIRTYPE
        info.mode = mode
        self._add(info)

    def add_bytes(self, dest, data, mode=0o644):
        self.ensure_dirs(dest)
        info = tarfile.TarInfo(self._norm(dest))
        info.size = len(data)
        info.mode = mode
        self._add(info, io.BytesIO(data))

    def add_path(self, src, dest, follow_out=None):
        """Copies src (file, symlink or tree) to dest. follow_out: the host tree that src
        belongs to; a symlink leading out of it also gets its target added (--add-host)."""
        if self._excluded(src):
            return
        st = os.lstat(src)
        name = self._norm(dest)
        if name in self.names:
            return
        self.ensure_dirs(dest)
        info = tarfile.TarInfo(name)
        info.mode = stat.S_IMODE(st.st_mode)
        if stat.S_ISLNK(st.st_mode):
            target = os.readlink(src)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            self._add(info)
            if follow_out is not None:
                resolved = os.path.normpath(os.path.join(os.path.dirname(src), target))
                if not (resolved + "/").startswith(
                    follow_out.rstrip("/") + "/"
                ) and os.path.lexists(resolved):
                    self.add_host(resolved)
        elif stat.S_ISDIR(st.st_mode):
            info.type = tarfile.DIRTYPE
            if name not in ("", "."):  # the image root keeps the runtime's own mode
                self._add(info)
            for entry in sorted(os.listdir(src)):
                self.add_path(os.path.join(src, entry), os.path.join(dest, entry), follow_out)
        elif stat.S_ISREG(st.st_mode):
            info.size = st.st_size
            with open(src, "rb") as f:
                self._add(info, f)
            self.sources["/" + name] = src
        # sockets, fifos and devices are never part of an image: skipped

    def add_host(self, path):
        """Adds a host path at the same absolute path, resolving symlinks in its parents
        (merged /usr: /lib -> usr/lib) and following links that leave the added tree."""
        path = os.path.normpath(os.path.abspath(path))
        if path in self.visited:
            return
        self.visited.add(path)
        if not os.path.lexists(path):
            fail(f"--add-host {path}: no such file on this host")
        parts = path.strip("/").split("/")
        for i in range(1, len(parts)):
            prefix = "/" + "/".join(parts[:i])
            if os.path.islink(prefix):
                self.add_path(prefix, prefix)  # the link itself, e.g. /lib -> usr/lib
                real = os.path.normpath(os.path.join(os.path.dirname(prefix), os.readlink(prefix)))
                self.add_host(os.path.join(real, *parts[i:]))
                return
        self.add_path(path, path, follow_out=path)

    def close(self):
        """Finishes the tar; returns (file, sha256 hex, size)."""
        self.tar.close()
        self.file.seek(0)
        h = hashlib.sha256()
        size = 0
        for chunk in iter(lambda: self.file.read(1 << 20), b""):
            h.update(chunk)
            size += len(chunk)
        self.file.seek(0)
        return self.file, h.hexdigest(), size


def load_base(ref_or_path):
    path = ref_or_path if os.path.isfile(ref_or_path) else archive_path(ref_or_path)
    if not os.path.isfile(path):
        fail(f"--base {ref_or_path}: no archive at {path}; build it first (make images)")
    tar = tarfile.open(path)
    index = json.load(tar.extractfile("index.json"))
    mdesc = index["manifests"][0]
    manifest = json.load(tar.extractfile("blobs/sha256/" + mdesc["digest"].split(":")[1]))
    config = json.load(
        tar.extractfile("blobs/sha256/" + manifest["config"]["digest"].split(":")[1])
    )
    return tar, manifest, config


def sbom_file(archive):
    """The SBOM next to an archive: x.tar -> x.sbom.cdx.json."""
    return (archive[:-4] if archive.endswith(".tar") else archive) + ".sbom.cdx.json"


def base_layers(base_tar, base_manifest):
    """(path, member file) of every file in the base's layers, bottom layer first."""
    for desc in base_manifest["layers"]:
        blob = base_tar.extractfile("blobs/sha256/" + desc["digest"].split(":")[1])
        with tarfile.open(fileobj=blob, mode="r:") as lt:
            for m in lt:
                if m.isfile():
                    yield "/" + os.path.normpath(m.name).lstrip("/"), lt, m


def make_sbom(a, labels, base_tar, base_manifest, layer):
    """The image's CycloneDX document (hack/images/sbom.py) from its base and its new layer."""
    try:
        dpkg = sbom.DpkgDb(a.sbom_dpkg_root)
    except OSError as e:
        fail(f"--sbom: no dpkg database under {a.sbom_dpkg_root} ({e})")
    col = sbom.Collector(dpkg)
    if base_tar is not None:
        base_doc = None
        for path, lt, m in base_layers(base_tar, base_manifest):
            if path == sbom.SBOM_PATH:
                base_doc = lt.extractfile(m).read()  # the topmost one wins
            elif path == "/var/lib/dpkg/status" or fnmatch.fnmatch(
                path, "/var/lib/dpkg/status.d/*"
            ):
                col.image_dpkg(path, lt.extractfile(m).read())
        if base_doc is not None:
            col.base_document(base_doc)
    files = layer.sources
    for path, host in sorted(files.items()):
        if host and (
            path == "/var/lib/dpkg/status" or fnmatch.fnmatch(path, "/var/lib/dpkg/status.d/*")
        ):
            with open(host, "rb") as f:
                col.image_dpkg(path, f.read())
    col.host_files(files)
    try:
        for name in a.sbom_deb:
            col.static_package(name)
    except ValueError as e:
        fail(f"--sbom-deb: {e}")

    def read(path):
        with open(files[path], "rb") as f:
            return f.read()

    col.jdks([p for p, h in files.items() if h], read)
    lists = {}
    for spec in a.sbom_maven_list:
        dest, sep, path = spec.partition(":")
        if not sep or dest not in files:
            fail(f"--sbom-maven-list {spec}: want DEST:FILE, DEST a jar this layer adds")
        with open(path) as f:
            lists[dest] = f.read()
    col.jars(files, lists)
    if a.sbom_cargo_tree:
        if not a.sbom_cargo_lock:
            fail("--sbom-cargo-tree needs --sbom-cargo-lock")
        with open(a.sbom_cargo_tree) as t, open(a.sbom_cargo_lock) as lk:
            try:
                col.cargo(t.read(), lk.read())
            except ValueError as e:
                fail(f"--sbom-cargo-tree: {e}")
    return sbom.document(
        a.tag.rsplit(":", 1)[0],
        labels.get("org.opencontainers.image.version"),
        labels.get("org.opencontainers.image.revision"),
        col.components,
        created=a.sbom_created,
    )


def parse_list(value, flag):
    """A JSON array, or words split like a shell would."""
    value = value.strip()
    if value.startswith("["):
        try:
            out = json.loads(value)
        except json.JSONDecodeError as e:
            fail(f"{flag}: not a JSON array of strings ({e})")
        if not all(isinstance(x, str) for x in out):
            fail(f"{flag}: every element must be a string")
        return out
    return shlex.split(value)


def write_archive(
    path,
    base_tar,
    layers,
    layer_file,
    layer_sha,
    layer_size,
    manifest,
    manifest_digest,
    config_bytes,
    manifest_bytes,
    index,
    docker_manifest,
):
    """The OCI layout (plus manifest.json) as one tar: base layers copied as they are."""
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as t:

        def put(name, data):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            t.addfile(info, io.BytesIO(data))

        put("oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
        info = tarfile.TarInfo("blobs")
        info.type = tarfile.DIRTYPE
        info.mode = 0o755
        t.addfile(info)
        info = tarfile.TarInfo("blobs/sha256")
        info.type = tarfile.DIRTYPE
        info.mode = 0o755
        t.addfile(info)
        for l in layers[:-1]:  # the base's layers, copied as they are
            name = "blobs/sha256/" + l["digest"][7:]
            member = base_tar.getmember(name)
            t.addfile(member, base_tar.extractfile(member))
        info = tarfile.TarInfo("blobs/sha256/" + layer_sha)
        info.size = layer_size
        info.mode = 0o644
        t.addfile(info, layer_file)
        put("blobs/sha256/" + manifest["config"]["digest"][7:], config_bytes)
        put("blobs/sha256/" + manifest_digest[7:], manifest_bytes)
        put("index.json", json.dumps(index, sort_keys=True).encode())
        put("manifest.json", json.dumps(docker_manifest).encode())


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--tag", required=True, help="image reference, e.g. jvmdiag/demo-app:dev")
    ap.add_argument("--out", help="archive path (default: $JVMDIAG_CACHE/images/<tag>.tar)")
    ap.add_argument("--base", help="base image: a reference built before, or an archive path")
    ap.add_argument(
        "--add",
        action="append",
        default=[],
        metavar="SRC:DEST",
        help="copy a file or a tree into the image",
    )
    ap.add_argument(
        "--add-host",
        action="append",
        default=[],
        metavar="PATH",
        help="copy a host path to the same path, with the targets of its symlinks",
    )
    ap.add_argument(
        "--mkdir",
        action="append",
        default=[],
        metavar="DEST[:MODE]",
        help="an empty directory, e.g. /tmp:1777",
    )
    ap.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="GLOB",
        help="skip host paths matching GLOB",
    )
    ap.add_argument(
        "--entrypoint", help='JSON array or words, e.g. \'["java","-jar","/app/app.jar"]\''
    )
    ap.add_argument("--cmd", help="JSON array or words")
    ap.add_argument("--env", action="append", default=[], metavar="K=V")
    ap.add_argument("--user", help="user[:group] the process runs as")
    ap.add_argument("--workdir")
    ap.add_argument("--label", action="append", default=[], metavar="K=V")
    ap.add_argument(
        "--sbom",
        action="store_true",
        help=f"write a CycloneDX SBOM into the image ({sbom.SBOM_PATH}, label {sbom.SBOM_LABEL}) "
        "and next to the archive (<archive>.sbom.cdx.json); version and revision from the labels "
        "org.opencontainers.image.version and .revision",
    )
    ap.add_argument(
        "--sbom-dpkg-root",
        default="/",
        metavar="DIR",
        help="the root whose dpkg database owns the --add-host files (default /)",
    )
    ap.add_argument(
        "--sbom-deb",
        action="append",
        default=[],
        metavar="PACKAGE",
        help="a Debian package linked statically into a binary of the image",
    )
    ap.add_argument(
        "--sbom-cargo-tree",
        metavar="FILE",
        help="`cargo tree -e normal,no-proc-macro --prefix none` of a binary in the image",
    )
    ap.add_argument("--sbom-cargo-lock", metavar="FILE", help="the Cargo.lock of --sbom-cargo-tree")
    ap.add_argument(
        "--sbom-maven-list",
        action="append",
        default=[],
        metavar="DEST:FILE",
        help="`mvn dependency:list -DincludeScope=runtime` output of the jar at DEST",
    )
    ap.add_argument(
        "--sbom-created", metavar="RFC3339", help="the document's timestamp (none if unset)"
    )
    a = ap.parse_args()

    if not REF_RE.match(a.tag):
        fail(f"--tag {a.tag!r}: want lowercase name[/path]:tag, e.g. jvmdiag/demo-app:dev")
    out = a.out or archive_path(a.tag)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)

    base_tar, base_manifest, config = (None, None, None)
    if a.base:
        base_tar, base_manifest, config = load_base(a.base)
    else:
        config = {
            "architecture": "amd64",
            "os": "linux",
            "config": {},
            "rootfs": {"type": "layers", "diff_ids": []},
        }
    cfg = config.setdefault("config", {})

    layer = Layer(a.exclude)
    for spec in a.mkdir:
        dest, _, mode = spec.partition(":")
        try:
            layer.add_dir_entry(dest, int(mode or "755", 8))
        except ValueError:
            fail(f"--mkdir {spec}: MODE must be octal, e.g. /tmp:1777")
    for spec in a.add:
        src, sep, dest = spec.rpartition(":")
        if not sep or not src or not dest.startswith("/"):
            fail(f"--add {spec}: want SRC:DEST with an absolute DEST, e.g. app.jar:/app/app.jar")
        if not os.path.lexists(src):
            fail(f"--add {spec}: {src} does not exist")
        layer.add_path(os.path.abspath(src), dest)
    for p in a.add_host:
        layer.add_host(p)
    labels = dict(kv.split("=", 1) for kv in a.label if "=" in kv)
    if a.sbom:
        doc = make_sbom(a, labels, base_tar, base_manifest, layer)
        data = sbom.dumps(doc)
        layer.add_bytes(sbom.SBOM_PATH, data)
        a.label.append(f"{sbom.SBOM_LABEL}={sbom.SBOM_PATH}")
    layer_file, layer_sha, layer_size = layer.close()

    if a.entrypoint is not None:
        cfg["Entrypoint"] = parse_list(a.entrypoint, "--entrypoint")
        if a.cmd is None:
            cfg.pop("Cmd", None)  # a new entrypoint does not inherit the base's arguments
    if a.cmd is not None:
        cfg["Cmd"] = parse_list(a.cmd, "--cmd")
    env = [e for e in cfg.get("Env", [])]
    for kv in a.env:
        if "=" not in kv:
            fail(f"--env {kv}: want KEY=VALUE")
        key = kv.split("=", 1)[0]
        env = [e for e in env if e.split("=", 1)[0] != key] + [kv]
    if env:
        cfg["Env"] = env
    if a.user is not None:
        cfg["User"] = a.user
    if a.workdir is not None:
        cfg["WorkingDir"] = a.workdir
    for kv in a.label:
        if "=" not in kv:
            fail(f"--label {kv}: want KEY=VALUE")
        cfg.setdefault("Labels", {})[kv.split("=", 1)[0]] = kv.split("=", 1)[1]
    config["rootfs"]["diff_ids"] = config["rootfs"].get("diff_ids", []) + ["sha256:" + layer_sha]
    config.setdefault("history", []).append({"created_by": "hack/images/build-image.py " + a.tag})
    config_bytes = json.dumps(config, sort_keys=True).encode()

    layers = list(base_manifest["layers"]) if base_manifest else []
    layers.append({"mediaType": OCI_LAYER, "digest": "sha256:" + layer_sha, "size": layer_size})
    manifest = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {
            "mediaType": OCI_CONFIG,
            "digest": "sha256:" + hashlib.sha256(config_bytes).hexdigest(),
            "size": len(config_bytes),
        },
        "layers": layers,
    }
    manifest_bytes = json.dumps(manifest, sort_keys=True).encode()
    manifest_digest = "sha256:" + hashlib.sha256(manifest_bytes).hexdigest()
    ref = full_ref(a.tag)
    index = {
        "schemaVersion": 2,
        "manifests": [
            {
                "mediaType": OCI_MANIFEST,
                "digest": manifest_digest,
                "size": len(manifest_bytes),
                "annotations": {
                    "io.containerd.image.name": ref,
                    "org.opencontainers.image.ref.name": a.tag.rsplit(":", 1)[1],
                },
            }
        ],
    }
    docker_manifest = [
        {
            "Config": "blobs/sha256/" + manifest["config"]["digest"][7:],
            "RepoTags": [a.tag],
            "Layers": ["blobs/sha256/" + l["digest"][7:] for l in layers],
        }
    ]

    tmp_out = f"{out}.{os.getpid()}.tmp"  # concurrent builds of one image must not share it
    try:
        write_archive(
            tmp_out,
            base_tar,
            layers,
            layer_file,
            layer_sha,
            layer_size,
            manifest,
            manifest_digest,
            config_bytes,
            manifest_bytes,
            index,
            docker_manifest,
        )
    except BaseException:
        if os.path.exists(tmp_out):
            os.remove(tmp_out)
        raise
    os.replace(tmp_out, out)
    with open(out + ".ref", "w") as f:
        f.write(ref + "\n")
    if a.sbom:
        side = sbom_file(out)
        with open(side + ".tmp", "wb") as f:
            f.write(data)
        os.replace(side + ".tmp", side)
        n = ", ".join(f"{v} {k}" for k, v in sorted(sbom.counts(doc).items()))
        print(f"build-image: {a.tag}: SBOM {side} ({n})", file=sys.stderr)
    mb = os.path.getsize(out) / 1e6
    print(f"build-image: {a.tag} -> {out} ({mb:.1f} MB, {len(layers)} layer(s))", file=sys.stderr)


if __name__ == "__main__":
    main()
