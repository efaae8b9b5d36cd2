#!/usr/bin/env python3
"""An image's SBOM in a registry, as an OCI 1.1 referrer (stdlib only: the registry's v2 API).

  referrers.py attach [--plain-http|--insecure] REPO@DIGEST FILE
      pushes FILE (a CycloneDX document) as an artifact whose `subject` is the image REPO@DIGEST:
      an image manifest with artifactType application/vnd.cyclonedx+json, the empty config and
      one layer, the document. A registry with the referrers API indexes it by its subject; for
      one without it (the CNCF distribution registry 2.8, Debian's docker-registry) the
      referrers tag schema's index, tag sha256-<hex of DIGEST>, lists it as well. Either way it
      is also tagged sha256-<hex>.sbom (where cosign looks). Pushing the same document again
      changes nothing.
  referrers.py get [--plain-http|--insecure] REPO@DIGEST
      prints the SBOM attached to REPO@DIGEST (referrers API, else the tag schema's index).
  referrers.py cat [--plain-http|--insecure] REPO@DIGEST PATH
      prints the file PATH of the image, from its topmost layer that has it.

REPO is host[:port]/name. Credentials: REGISTRY_AUTHFILE, else the file `skopeo login` writes
($XDG_RUNTIME_DIR/containers/auth.json) or ~/.docker/config.json; basic and token auth.
"""

import argparse
import base64
import hashlib
import io
import json
import os
import re
import ssl
import sys
import tarfile
import urllib.error
import urllib.parse
import urllib.request

ARTIFACT_TYPE = "application/vnd.cyclonedx+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
EMPTY_TYPE = "application/vnd.oci.empty.v1+json"
EMPTY = b"{}"
ACCEPT = ", ".join((OCI_MANIFEST, DOCKER_MANIFEST, OCI_INDEX))


class Error(Exception):
    pass


def sha256(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def split_ref(ref):
    """host[:port]/name@sha256:... -> (host, name, digest)."""
    m = re.match(r"^([^/]+)/(.+)@(sha256:[0-9a-f]{64})$", ref)
    if not m:
        raise Error(f"want host[:port]/name@sha256:<64 hex>, got {ref!r}")
    return m.groups()


def credentials(host):
    """(user, password) for host from the auth files skopeo and docker write, or None."""
    files = [os.environ.get("REGISTRY_AUTHFILE")]
    if os.environ.get("XDG_RUNTIME_DIR"):
        files.append(os.path.join(os.environ["XDG_RUNTIME_DIR"], "containers/auth.json"))
    files.append(os.path.expanduser("~/.docker/config.json"))
    for f in filter(None, files):
        try:
            with open(f) as fh:
                auth = json.load(fh).get("auths", {}).get(host, {}).get("auth")
        except (OSError, ValueError):
            continue
        if auth:
            user, _, pw = base64.b64decode(auth).decode().partition(":")
            return user, pw
    return None


class Registry:
    def __init__(self, host, name, plain_http=False, insecure=False):
        self.base = f"{'http' if plain_http else 'https'}://{host}/v2/{name}"
        self.host, self.name = host, name
        self.ctx = ssl._create_unverified_context() if insecure else None
        self.auth = None  # the Authorization header once a challenge was answered

    def _token(self, challenge):
        creds = credentials(self.host)
        scheme, _, params = challenge.partition(" ")
        if scheme.lower() == "basic":
            if not creds:
                raise Error(f"{self.host} wants credentials: skopeo login {self.host}")
            return "Basic " + base64.b64encode(f"{creds[0]}:{creds[1]}".encode()).decode()
        p = dict(re.findall(r'(\w+)="([^"]*)"', params))
        q = {"service": p.get("service", "")}
        q["scope"] = f"repository:{self.name}:pull,push"
        req = urllib.request.Request(p["realm"] + "?" + urllib.parse.urlencode(q))
        if creds:
            req.add_header(
                "Authorization",
                "Basic " + base64.b64encode(f"{creds[0]}:{creds[1]}".encode()).decode(),
            )
        with urllib.request.urlopen(req, context=self.ctx, timeout=30) as r:
            t = json.load(r)
        return "Bearer " + (t.get("token") or t["access_token"])

    def call(self, method, path, data=None, headers=None, ok=(200,)):
        """(status, headers, body); a status outside ok (and not 404 for HEAD/GET) raises."""
        url = path if path.startswith("http") else self.base + path
        for attempt in (0, 1):
            req = urllib.request.Request(url, data=data, method=method, headers=dict(headers or {}))
            if self.auth:
                req.add_header("Authorization", self.auth)
            try:
                with urllib.request.urlopen(req, context=self.ctx, timeout=120) as r:
                    return r.status, r.headers, r.read()
            except urllib.error.HTTPError as e:
                if e.code == 401 and attempt == 0 and e.headers.get("WWW-Authenticate"):
                    self.auth = self._token(e.headers["WWW-Authenticate"])
                    continue
                if e.code in ok:
                    return e.code, e.headers, e.read()
                body = e.read()[:300].decode("utf-8", "replace")
                raise Error(f"{method} {url}: HTTP {e.code} {body}") from None
        raise Error(f"{method} {url}: unauthorized")

    def manifest(self, ref, accept=ACCEPT):
        """(media type, bytes) of a manifest, or (None, None) when there is none."""
        st, h, body = self.call(
            "GET", f"/manifests/{ref}", headers={"Accept": accept}, ok=(200, 404)
        )
        if st == 404:
            return None, None
        return h.get("Content-Type", "").split(";")[0] or json.loads(body).get("mediaType"), body

    def put_manifest(self, ref, media_type, body):
        _, h, _ = self.call(
            "PUT", f"/manifests/{ref}", data=body, headers={"Content-Type": media_type}, ok=(201,)
        )
        return h

    def blob(self, digest):
        return self.call("GET", f"/blobs/{digest}")[2]

    def put_blob(self, data):
        digest = sha256(data)
        st, _, _ = self.call("HEAD", f"/blobs/{digest}", ok=(200, 404))
        if st == 200:
            return digest
        _, h, _ = self.call("POST", "/blobs/uploads/", data=b"", ok=(202,))
        loc = urllib.parse.urljoin(self.base + "/", h["Location"])
        loc += ("&" if "?" in loc else "?") + "digest=" + urllib.parse.quote(digest)
        self.call(
            "PUT", loc, data=data, headers={"Content-Type": "application/octet-stream"}, ok=(201,)
        )
        return digest

    def referrers(self, digest):
        """The referrers of digest: the API's index, else the tag schema's; (index, via)."""
        st, h, body = self.call(
            "GET", f"/referrers/{digest}", headers={"Accept": OCI_INDEX}, ok=(200, 404, 400, 405)
        )
        if st == 200 and h.get("Content-Type", "").startswith(OCI_INDEX):
            return json.loads(body), "referrers API"
        _, body = self.manifest(fallback_tag(digest), accept=OCI_INDEX)
        return (json.loads(body) if body else None), "tag " + fallback_tag(digest)


def fallback_tag(digest):
    """The referrers tag schema: sha256:abc… -> sha256-abc…"""
    return digest.replace(":", "-")


def artifact_manifest(subject, doc_digest, doc_size):
    return {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "artifactType": ARTIFACT_TYPE,
        "config": {
            "mediaType": EMPTY_TYPE,
            "digest": sha256(EMPTY),
            "size": len(EMPTY),
            "data": base64.b64encode(EMPTY).decode(),
        },
        "layers": [
            {
                "mediaType": ARTIFACT_TYPE,
                "digest": doc_digest,
                "size": doc_size,
                "annotations": {"org.opencontainers.image.title": "sbom.cdx.json"},
            }
        ],
        "subject": subject,
        "annotations": {"org.opencontainers.image.title": "sbom.cdx.json"},
    }


def with_referrer(index, descriptor):
    """The tag schema's index with descriptor in it (once), others kept."""
    index = index or {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": []}
    if all(m.get("digest") != descriptor["digest"] for m in index.get("manifests", [])):
        index = dict(index, manifests=list(index.get("manifests", [])) + [descriptor])
    return index


def attach(reg, digest, doc):
    media_type, body = reg.manifest(digest)
    if body is None:
        raise Error(f"no image {reg.host}/{reg.name}@{digest} to attach to")
    subject = {"mediaType": media_type, "digest": digest, "size": len(body)}
    reg.put_blob(EMPTY)
    doc_digest = reg.put_blob(doc)
    art = json.dumps(artifact_manifest(subject, doc_digest, len(doc)), sort_keys=True).encode()
    art_digest = sha256(art)
    h = reg.put_manifest(art_digest, OCI_MANIFEST, art)
    reg.put_manifest(fallback_tag(digest) + ".sbom", OCI_MANIFEST, art)
    desc = {
        "mediaType": OCI_MANIFEST,
        "digest": art_digest,
        "size": len(art),
        "artifactType": ARTIFACT_TYPE,
        "annotations": {"org.opencontainers.image.title": "sbom.cdx.json"},
    }
    via = "referrers API"
    if h.get("OCI-Subject") != digest:  # the registry does not index subjects: the tag schema
        _, body = reg.manifest(fallback_tag(digest), accept=OCI_INDEX)
        index = with_referrer(json.loads(body) if body else None, desc)
        reg.put_manifest(
            fallback_tag(digest), OCI_INDEX, json.dumps(index, sort_keys=True).encode()
        )
        via = "tag " + fallback_tag(digest)
    return art_digest, via


def get(reg, digest):
    index, via = reg.referrers(digest)
    for m in (index or {}).get("manifests", []):
        if m.get("artifactType") == ARTIFACT_TYPE:
            _, body = reg.manifest(m["digest"], accept=OCI_MANIFEST)
            man = json.loads(body)
            if man.get("subject", {}).get("digest") != digest:
                continue
            for layer in man.get("layers", []):
                if layer.get("mediaType") == ARTIFACT_TYPE:
                    data = reg.blob(layer["digest"])
                    if sha256(data) != layer["digest"]:
                        raise Error(f"blob {layer['digest']}: content does not match its digest")
                    return data, via
    raise Error(f"no {ARTIFACT_TYPE} referrer of {reg.host}/{reg.name}@{digest} ({via})")


def cat(reg, digest, path):
    _, body = reg.manifest(digest)
    if body is None:
        raise Error(f"no image {reg.host}/{reg.name}@{digest}")
    want = path.lstrip("/")
    for layer in reversed(json.loads(body)["layers"]):
        data = reg.blob(layer["digest"])
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as t:
            for m in t:
                if m.isfile() and m.name.lstrip("./") == want:
                    return t.extractfile(m).read()
    raise Error(f"no {path} in {reg.host}/{reg.name}@{digest}")


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("command", choices=["attach", "get", "cat"])
    ap.add_argument("ref", help="host[:port]/name@sha256:...")
    ap.add_argument("arg", nargs="?", help="attach: the document; cat: the path in the image")
    ap.add_argument(
        "--plain-http", action="store_true", help="HTTP, not HTTPS (a loopback registry)"
    )
    ap.add_argument(
        "--insecure", action="store_true", help="HTTPS without verifying the certificate"
    )
    a = ap.parse_args()
    try:
        host, name, digest = split_ref(a.ref)
        reg = Registry(host, name, a.plain_http, a.insecure)
        if a.command == "attach":
            if not a.arg:
                raise Error("attach needs the document")
            with open(a.arg, "rb") as f:
                art, via = attach(reg, digest, f.read())
            print(
                f"{host}/{name}@{art} ({ARTIFACT_TYPE}, subject {digest}, found by {via})",
                file=sys.stderr,
            )
        elif a.command == "get":
            data, _ = get(reg, digest)
            sys.stdout.buffer.write(data)
        else:
            if not a.arg:
                raise Error("cat needs the path in the image")
            sys.stdout.buffer.write(cat(reg, digest, a.arg))
    except (Error, OSError) as e:
        print(f"referrers: error: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
