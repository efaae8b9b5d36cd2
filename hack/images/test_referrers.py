"""Tests of hack/images/referrers.py's pure parts (the registry calls: e2e/image_sbom.sh).

python3 -m unittest discover -s hack/images -p 'test_*.py'
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import referrers  # noqa: E402

IMG = "sha256:" + "ab" * 32


class Referrers(unittest.TestCase):
    def test_refs_and_the_tag_schema(self):
        self.assertEqual(
            referrers.split_ref("127.0.0.1:15000/jvmdiag/agent@" + IMG),
            ("127.0.0.1:15000", "jvmdiag/agent", IMG),
        )
        with self.assertRaises(referrers.Error):
            referrers.split_ref("127.0.0.1:15000/jvmdiag/agent:0.2.0")
        self.assertEqual(referrers.fallback_tag(IMG), "sha256-" + "ab" * 32)

    def test_artifact_manifest_is_an_oci_1_1_referrer(self):
        subject = {"mediaType": referrers.OCI_MANIFEST, "digest": IMG, "size": 123}
        m = referrers.artifact_manifest(subject, "sha256:" + "cd" * 32, 42)
        self.assertEqual(m["artifactType"], "application/vnd.cyclonedx+json")
        self.assertEqual(m["subject"], subject)
        # the empty descriptor of the image spec, byte for byte
        self.assertEqual(
            m["config"],
            {
                "mediaType": "application/vnd.oci.empty.v1+json",
                "digest": "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a",
                "size": 2,
                "data": "e30=",
            },
        )
        self.assertEqual(m["layers"][0]["mediaType"], "application/vnd.cyclonedx+json")

    def test_the_index_gets_each_referrer_once_and_keeps_others(self):
        a = {
            "digest": "sha256:" + "01" * 32,
            "artifactType": "application/vnd.dev.sigstore.bundle+json",
        }
        b = {"digest": "sha256:" + "02" * 32, "artifactType": referrers.ARTIFACT_TYPE}
        i1 = referrers.with_referrer(None, b)
        self.assertEqual((i1["mediaType"], i1["manifests"]), (referrers.OCI_INDEX, [b]))
        self.assertEqual(referrers.with_referrer(i1, b), i1)
        i2 = referrers.with_referrer(
            {"schemaVersion": 2, "mediaType": referrers.OCI_INDEX, "manifests": [a]}, b
        )
        self.assertEqual(i2["manifests"], [a, b])


if __name__ == "__main__":
    unittest.main()
