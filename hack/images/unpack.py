#!/usr/bin/env python3
"""Unpacks an image archive of build-image.py (an OCI image layout in a tar) into a directory, as
a container runtime lays out its root file system, and prints the image's entrypoint as JSON.

  unpack.py ARCHIVE DEST

Layers are applied in order; an entry whose path leaves DEST (absolute, `..`, or through a link)
is refused, whiteouts (`.wh.NAME`) remove NAME. Benchmarks run the image's own JVM and flags this
way on a machine without a container engine."""

import json
import os
import shutil
import sys
import tarfile


def blob(tar, digest):
    return tar.extractfile("blobs/sha256/" + digest.split(":", 1)[1])


def inside(dest, name):
    path = os.path.realpath(os.path.join(dest, name))
    if path != dest and not path.startswith(dest + os.sep):
        sys.exit("unpack: %s leaves the root file system" % name)
    return path


def apply_layer(layer, dest):
    with tarfile.open(fileobj=layer, mode="r:*") as t:
        for m in t:
            head, base = os.path.split(m.name)
            if base.startswith(".wh."):
                gone = inside(dest, os.path.join(head, base[len(".wh.") :]))
                if os.path.isdir(gone) and not os.path.islink(gone):
                    shutil.rmtree(gone)
                elif os.path.lexists(gone):
                    os.remove(gone)
                continue
            inside(dest, os.path.dirname(m.name) or ".")
            if m.issym() or m.islnk():
                target = m.linkname if m.issym() else os.path.join(dest, m.linkname)
                if m.islnk():
                    inside(dest, m.linkname)
                path = os.path.join(dest, m.name)
                if os.path.lexists(path):
                    os.remove(path)
                if m.issym():
                    os.symlink(target, path)
                else:
                    os.link(target, path)
                continue
            if not (m.isfile() or m.isdir()):
                continue  # devices and fifos: not needed to run a program
            path = inside(dest, m.name)
            if m.isdir():
                os.makedirs(path, exist_ok=True)
                os.chmod(path, m.mode | 0o700)
                continue
            if os.path.lexists(path):
                os.remove(path)
            with t.extractfile(m) as src, open(path, "wb") as out:
                shutil.copyfileobj(src, out)
            os.chmod(path, m.mode)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: unpack.py ARCHIVE DEST")
    archive, dest = sys.argv[1], os.path.realpath(sys.argv[2])
    os.makedirs(dest, exist_ok=True)
    with tarfile.open(archive) as tar:
        index = json.load(tar.extractfile("index.json"))
        manifest = json.load(blob(tar, index["manifests"][0]["digest"]))
        config = json.load(blob(tar, manifest["config"]["digest"]))
        for layer in manifest["layers"]:
            apply_layer(blob(tar, layer["digest"]), dest)
    print(json.dumps((config.get("config") or {}).get("Entrypoint") or []))


if __name__ == "__main__":
    main()
