"""Serve the viewer page on 127.0.0.1 (``vibecheck view`` without ``--out``).

The server answers ``GET /`` and ``GET /index.html`` with the page and anything else with 404;
it binds the loopback interface only, so the report is not exposed to the network.
"""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from pytest_vibecheck.errors import VibecheckError

__all__ = ["HOST", "page_server"]

HOST = "127.0.0.1"


def _handler(page: bytes) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path not in ("/", "/index.html"):
                self.send_error(404, "the viewer is at /")
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(page)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, format: str, *args: object) -> None:
            pass  # quiet: the command prints the URL once

    return Handler


@contextlib.contextmanager
def page_server(page: str, port: int = 0) -> Iterator[ThreadingHTTPServer]:
    """A server (not yet serving: call ``serve_forever``) of ``page`` on 127.0.0.1:``port``
    (0: any free port; ``server.server_address[1]`` is the one chosen).

    Raises :class:`VibecheckError` when the port is taken or cannot be bound.
    """
    try:
        server = ThreadingHTTPServer((HOST, port), _handler(page.encode("utf-8")))
    except OSError as exc:
        what = "is in use" if exc.errno == errno.EADDRINUSE else f"cannot be bound ({exc.strerror})"
        raise VibecheckError(f"--port {port}: port {port} on {HOST} {what}; pick another with --port") from None
    try:
        yield server
    finally:
        server.server_close()
