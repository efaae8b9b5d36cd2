"""Tests of hack/images/unpack.py on hand-made OCI archives.

python3 -m unittest discover -s hack/images -p 'test_*.py'
"""

import contextlib
import hashlib
import io
import json
import os
import shutil
import sys
import tarfile
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import unpack  # noqa: E402


def layer(entries):
    """A layer tar: entries are (name, content) for files, (name, None) for directories and
    (name, "->target") for symlinks."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        for name, content in entries:
            info = tarfile.TarInfo(name)
            if content is None:
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                t.addfile(info)
            elif content.startswith("->"):
                info.type, info.linkname = tarfile.SYMTYPE, content[2:]
                t.addfile(info)
            else:
                data = content.encode()
                info.size, info.mode = len(data), 0o755
                t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def archive(path, layers, entrypoint):
    blobs = {}

    def put(data):
        digest = hashlib.sha256(data).hexdigest()
        blobs[digest] = data
        return {"digest": "sha256:" + digest, "size": len(data)}

    config = put(json.dumps({"config": {"Entrypoint": entrypoint}}).encode())
    manifest = put(json.dumps({"config": config, "layers": [put(x) for x in layers]}).encode())
    with tarfile.open(path, "w") as t:
        for name, data in [("index.json", json.dumps({"manifests": [manifest]}).encode())] + [
            ("blobs/sha256/" + d, b) for d, b in blobs.items()
        ]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))


class Unpack(unittest.TestCase):
    def run_unpack(self, layers, entrypoint=()):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        archive(os.path.join(tmp, "image.tar"), layers, list(entrypoint))
        out = io.StringIO()
        argv = sys.argv
        sys.argv = ["unpack.py", os.path.join(tmp, "image.tar"), os.path.join(tmp, "root")]
        try:
            with contextlib.redirect_stdout(out):
                unpack.main()
        finally:
            sys.argv = argv
        return os.path.join(tmp, "root"), json.loads(out.getvalue())

    def test_layers_in_order_whiteouts_and_the_entrypoint(self):
        base = layer(
            [
                ("opt", None),
                ("opt/java", None),
                ("opt/java/bin", None),
                ("opt/java/bin/java", "#!java"),
                ("etc", None),
                ("etc/old", "x"),
                ("usr", None),
                ("usr/lib", None),
                ("lib", "->usr/lib"),
            ]
        )
        top = layer([("etc/.wh.old", ""), ("app", None), ("app/op.jar", "jar")])
        root, entry = self.run_unpack([base, top], ["/opt/java/bin/java", "-jar", "/app/op.jar"])
        self.assertEqual(entry, ["/opt/java/bin/java", "-jar", "/app/op.jar"])
        with open(os.path.join(root, "app/op.jar")) as f:
            self.assertEqual(f.read(), "jar")
        self.assertTrue(os.access(os.path.join(root, "opt/java/bin/java"), os.X_OK))
        self.assertFalse(os.path.exists(os.path.join(root, "etc/old")))
        self.assertEqual(os.readlink(os.path.join(root, "lib")), "usr/lib")

    def test_entries_that_leave_the_root_are_refused(self):
        for hostile in (
            [("../escape", "x")],
            [("/abs", None), ("/abs/x", "x")],
            # a link to outside, then a file written through it
            [("out", "->/tmp"), ("out/planted", "x")],
        ):
            with self.assertRaises(SystemExit) as e:
                self.run_unpack([layer(hostile)])
            self.assertIn("leaves the root file system", str(e.exception))


if __name__ == "__main__":
    unittest.main()
