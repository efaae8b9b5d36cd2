#!/usr/bin/env python3
"""A minimal mutating admission webhook for the cluster suite: proves the API server calls
a webhook registered with clientConfig.url on loopback (what the operator does in dev).

It labels every object it is asked about with `jvmdiag-webhook-test: <uid of the review>`
and appends each request's kind to LOG. Serves HTTPS on 127.0.0.1:PORT and stops by itself
after TTL seconds.

usage: webhook.py PORT CERT KEY LOG TTL
"""

import base64
import json
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main():
    port, cert, key, log_path, ttl = (
        int(sys.argv[1]),
        sys.argv[2],
        sys.argv[3],
        sys.argv[4],
        float(sys.argv[5]),
    )

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            review = json.loads(body)
            req = review["request"]
            with open(log_path, "a") as f:
                f.write(
                    f"{req['kind']['kind']} {req.get('name') or req['object']['metadata'].get('name', '')}\n"
                )
            labels = req["object"]["metadata"].get("labels")
            patch = (
                [{"op": "add", "path": "/metadata/labels", "value": {}}] if labels is None else []
            )
            patch.append(
                {
                    "op": "add",
                    "path": "/metadata/labels/jvmdiag-webhook-test",
                    "value": req["uid"][:8],
                }
            )
            resp = {
                "apiVersion": "admission.k8s.io/v1",
                "kind": "AdmissionReview",
                "response": {
                    "uid": req["uid"],
                    "allowed": True,
                    "patchType": "JSONPatch",
                    "patch": base64.b64encode(json.dumps(patch).encode()).decode(),
                },
            }
            out = json.dumps(resp).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    threading.Timer(ttl, server.shutdown).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
