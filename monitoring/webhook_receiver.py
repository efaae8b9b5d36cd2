#!/usr/bin/env python3
"""Alertmanager webhook receiver on 127.0.0.1: appends each notification (JSON) as one line
to --out; exits by itself after --ttl seconds."""

import argparse
import http.server
import threading


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--ttl", type=float, default=3600)
    a = ap.parse_args()
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            with lock, open(a.out, "ab") as f:
                f.write(body.replace(b"\n", b" ") + b"\n")
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    threading.Timer(a.ttl, srv.shutdown).start()
    srv.serve_forever()


if __name__ == "__main__":
    main()
