"""The operator's JVM starts with the same flags in both image builds: operator/Dockerfile (a
container engine) and hack/images/build.sh (this machine's `make images`, the image the chart
suite and the scale benchmark run). A heap setting in one and not the other would make the
published image behave unlike the tested one.

python3 -m unittest discover -s hack/images -p 'test_*.py'
"""

import json
import os
import re
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def read(path):
    with open(os.path.join(ROOT, path)) as f:
        return f.read()


def jvm_flags(entrypoint):
    """The JVM's options: what comes between the java binary and -jar."""
    return entrypoint[1 : entrypoint.index("-jar")]


class OperatorEntrypoint(unittest.TestCase):
    def test_both_builds_start_the_jvm_alike(self):
        docker = re.search(r"^ENTRYPOINT (\[.*\])$", read("operator/Dockerfile"), re.M)
        self.assertIsNotNone(docker, "operator/Dockerfile has no ENTRYPOINT [...] line")
        built = re.search(
            r"operator_image\(\).*?--entrypoint '(\[[^']*\])'", read("hack/images/build.sh"), re.S
        )
        self.assertIsNotNone(built, "hack/images/build.sh's operator_image has no --entrypoint")
        a, b = json.loads(docker.group(1)), json.loads(built.group(1))
        self.assertEqual(jvm_flags(a), jvm_flags(b))
        self.assertEqual(a[a.index("-jar") :], b[b.index("-jar") :])
        self.assertTrue(any(f.startswith("-XX:MaxRAMPercentage=") for f in jvm_flags(a)))


if __name__ == "__main__":
    unittest.main()
