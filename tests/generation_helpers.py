"""A local HTTP server for backend tests: serves queued JSON responses on 127.0.0.1 and records
every request (method, path, headers, JSON body); the reply bodies of the two APIs."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Response:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


class FakeAPI:
    """Queue responses with :meth:`push`; when the queue is empty ``default`` is served.

    ``cap``: when set, a request that arrives while ``cap`` requests are already being answered
    gets ``over_cap`` instead (a server that allows that many concurrent requests).
    ``inflight`` / ``max_inflight``: requests being answered now / at most at once;
    ``overlapped``: requests that arrived while another was being answered.
    """

    def __init__(self) -> None:
        self.queue: deque[Response] = deque()
        self.default: Response | None = None
        self.requests: list[Recorded] = []
        self.cap: int | None = None
        self.over_cap = Response(429, {"error": {"message": "too many concurrent requests"}}, {"retry-after": "0.2"})
        self.rejected = 0
        self.inflight = 0
        self.max_inflight = 0
        self.overlapped = 0
        self._lock = threading.Lock()
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except json.JSONDecodeError:
                    body = raw.decode("utf-8", "replace")
                with api._lock:
                    api.requests.append(
                        Recorded("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                    )
                    resp: Response | None
                    counted = api.cap is None or api.inflight < api.cap
                    if not counted:
                        resp, api.rejected = api.over_cap, api.rejected + 1
                    else:
                        resp = api.queue.popleft() if api.queue else api.default
                        api.overlapped += api.inflight > 0
                        api.inflight += 1
                        api.max_inflight = max(api.max_inflight, api.inflight)
                if resp is None:
                    resp = Response(500, {"error": {"message": "no response queued"}})
                try:
                    self._answer(resp)
                finally:
                    if counted:  # (not by identity: a test may queue over_cap itself)
                        with api._lock:
                            api.inflight -= 1

            def _answer(self, resp: Response) -> None:
                if resp.delay_s:
                    time.sleep(resp.delay_s)
                data = json.dumps(resp.body).encode("utf-8")
                try:
                    self.send_response(resp.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for k, v in resp.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # client timed out and left
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def push(self, *responses: Response) -> None:
        with self._lock:
            self.queue.extend(responses)


@contextmanager
def fake_api() -> Iterator[FakeAPI]:
    api = FakeAPI()
    api.thread.start()
    try:
        yield api
    finally:
        api.server.shutdown()
        api.server.server_close()


def completion(text: str, finish: str = "stop", model: str = "qwen2.5-coder-7b") -> dict[str, Any]:
    """An OpenAI Chat Completions response body with one choice."""
    return {
        "id": "chatcmpl-123",
        "object": "chat.completion",
        "created": 1_764_000_000,
        "model": model,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish, "logprobs": None}
        ],
        "usage": {"prompt_tokens": 42, "completion_tokens": 17, "total_tokens": 59},
    }


def message(text: str, model: str = "claude-sonnet-5-5") -> dict[str, Any]:
    """An Anthropic Messages API response body with one text block."""
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 42, "output_tokens": 17},
    }
