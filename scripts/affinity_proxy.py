#!/usr/bin/env python3
"""A tiny HTTP proxy spreading OpenAI-compatible requests over several single-request servers.

llama-cpp-python's server answers one request at a time. On a CPU shared with other work, several
1-thread servers (one per core) get more done than one multi-thread server, whose threads wait for
each other whenever one is descheduled. This proxy puts them behind one URL, so a single pytest
run (`-n 2`, one request in flight per worker) keeps them all busy:

    python scripts/affinity_proxy.py --port 8766 http://127.0.0.1:8767 http://127.0.0.1:8768

Affinity: the requests of one task go to the same server (the key is the first user message,
the task's query, which starts every baseline, single-turn and multi-turn prompt of the task), so
the server can reuse the prompt prefix it evaluated for the previous request, unless that server
is busy and another is idle (two workers on one task): then the idle one takes the task over. A
new task goes to the server with the fewest requests in flight (then the fewest tasks). Standard
library only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
BACKENDS: list[str] = []
INFLIGHT: dict[str, int] = {}
ASSIGNED: dict[str, str] = {}
TASKS: dict[str, int] = {}


def _affinity(body: bytes) -> str | None:
    try:
        data = json.loads(body)
        for m in data.get("messages") or []:
            if m.get("role") == "user":
                return hashlib.sha256(str(m.get("content")).encode()).hexdigest()
    except (ValueError, AttributeError):
        return None
    return None


def _choose(key: str | None) -> str:
    with LOCK:
        idle = [b for b in BACKENDS if INFLIGHT[b] == 0]
        if key is not None and key in ASSIGNED and (INFLIGHT[ASSIGNED[key]] == 0 or not idle):
            backend = ASSIGNED[key]
        elif key is not None and key in ASSIGNED:
            # the task's server is busy (two workers on one task) and another is idle: use it
            # and let it hold the task's prefix from now on
            backend = min(idle, key=lambda b: TASKS[b])
            ASSIGNED[key] = backend
        else:
            backend = min(BACKENDS, key=lambda b: (INFLIGHT[b], TASKS[b]))
            if key is not None:
                ASSIGNED[key] = backend
                TASKS[backend] += 1
        INFLIGHT[backend] += 1
        return backend


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _forward(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        backend = _choose(_affinity(body) if method == "POST" else None)
        try:
            req = urllib.request.Request(backend + self.path, data=body if method == "POST" else None, method=method)
            req.add_header("Content-Type", self.headers.get("Content-Type") or "application/json")
            try:
                with urllib.request.urlopen(req, timeout=7200) as resp:
                    status, payload, ctype = resp.status, resp.read(), resp.headers.get("Content-Type")
            except urllib.error.HTTPError as exc:
                status, payload, ctype = exc.code, exc.read(), exc.headers.get("Content-Type")
            except (urllib.error.URLError, OSError) as exc:
                status, payload, ctype = 502, json.dumps({"error": f"proxy: {backend}: {exc}"}).encode(), "application/json"
        finally:
            with LOCK:
                INFLIGHT[backend] -= 1
        self.send_response(status)
        self.send_header("Content-Type", ctype or "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
        sys.stderr.write(f"{method} {self.path} -> {backend} {status}\n")

    def do_GET(self) -> None:
        self._forward("GET")

    def do_POST(self) -> None:
        self._forward("POST")

    def log_message(self, format: str, *args: object) -> None:
        return


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=8766)
    ap.add_argument("backends", nargs="+", help="base URLs without /v1, e.g. http://127.0.0.1:8767")
    args = ap.parse_args()
    BACKENDS.extend(b.rstrip("/") for b in args.backends)
    for b in BACKENDS:
        INFLIGHT[b] = 0
        TASKS[b] = 0
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    sys.stderr.write(f"proxy on http://127.0.0.1:{args.port} -> {', '.join(BACKENDS)}\n")
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
