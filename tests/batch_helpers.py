"""A local HTTP server that is both providers, direct and batch: OpenAI's Chat Completions,
Files and Batch API (``/v1/chat/completions``, ``/v1/files``, ``/v1/files/{id}/content``,
``/v1/batches``, ``/v1/batches/{id}``, ``/v1/batches/{id}/cancel``) and Anthropic's Messages
and Message Batches (``/v1/messages``, ``/v1/messages/batches``, ``.../{id}``,
``.../{id}/results`` as JSONL, ``.../{id}/cancel``), in the shapes the real SDKs read.

Replies are keyed by request (:attr:`FakeProvider.reply`: the request body's messages -> text),
so a direct run and a batch run of the same requests get the same replies. A batch ends after
:attr:`polls_to_end` looks at it; :attr:`outcome` decides per request (``"ok"``, ``"expire"``:
the batch expired before reaching it, or ``(status, code)``: an error inside the batch);
:attr:`submit_error` answers the batch submission with an error. :attr:`calls` counts every
HTTP call by route.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Outcome = Any  # "ok" | "expire" | tuple[int, str]


def canned_reply(body: dict[str, Any]) -> str:
    """A reply of its own per request: code defining the entry point, tagged by the request."""
    tag = hashlib.sha256(json.dumps([body.get("system"), body.get("messages")], sort_keys=True).encode()).hexdigest()[:8]
    return f"```python\ndef add(a, b):\n    x_{tag} = a + b\n    return x_{tag}\n```"


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class FakeProvider:
    """See the module docstring."""

    def __init__(self) -> None:
        self.reply: Callable[[dict[str, Any]], str] = canned_reply
        self.outcome: Callable[[str, dict[str, Any]], Outcome] = lambda cid, body: "ok"
        self.polls_to_end = 2
        self.submit_error: tuple[int, dict[str, Any]] | None = None
        self.calls: Counter[str] = Counter()
        self.bodies: list[dict[str, Any]] = []  # every request carried (direct or in a batch)
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self._n = 0
        self._lock = threading.Lock()
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                provider._handle(self, "GET")

            def do_POST(self) -> None:
                provider._handle(self, "POST")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _id(self, prefix: str) -> str:
        self._n += 1
        return f"{prefix}{self._n:04d}"

    # -- HTTP ------------------------------------------------------------------------

    def _handle(self, h: BaseHTTPRequestHandler, method: str) -> None:
        length = int(h.headers.get("content-length") or 0)
        raw = h.rfile.read(length) if length else b""
        path = h.path.split("?")[0]
        parts = path.strip("/").split("/")
        route = method + " /" + "/".join("{id}" if i >= 2 and not p.isalpha() else p for i, p in enumerate(parts))
        with self._lock:
            self.calls[route] += 1
            try:
                status, body, ctype = self._route(method, parts, raw, h.headers.get("content-type", ""))
            except Exception as exc:  # a bug of the fake: a 500 the test sees
                status, body, ctype = 500, {"error": {"message": f"fake server: {exc!r}"}}, "application/json"
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        h.send_response(status)
        h.send_header("content-type", ctype)
        h.send_header("content-length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def _route(self, method: str, parts: list[str], raw: bytes, ctype: str) -> tuple[int, Any, str]:
        js = "application/json"
        if parts[:2] == ["v1", "chat"]:
            body = json.loads(raw)
            self.bodies.append(body)
            return 200, self._completion(body), js
        if parts == ["v1", "messages"]:
            body = json.loads(raw)
            self.bodies.append(body)
            return 200, self._message(body), js
        if parts == ["v1", "files"] and method == "POST":
            msg = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + ctype.encode() + b"\r\n\r\n" + raw)
            data = b""
            for part in msg.iter_parts():
                if part.get_param("name", header="content-disposition") == "file":
                    payload = part.get_payload(decode=True)
                    data = payload if isinstance(payload, bytes) else b""
            fid = self._id("file-")
            self.files[fid] = data
            return 200, {"id": fid, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                         "filename": "batch.jsonl", "purpose": "batch", "status": "processed"}, js
        if parts[:2] == ["v1", "files"] and len(parts) == 4 and parts[3] == "content":
            return 200, self.files[parts[2]], "application/octet-stream"
        if parts == ["v1", "batches"] and method == "POST":
            if self.submit_error is not None:
                return self.submit_error[0], self.submit_error[1], js
            req = json.loads(raw)
            lines = [json.loads(x) for x in self.files[req["input_file_id"]].decode().splitlines() if x.strip()]
            return 200, self._new_batch("openai", [(x["custom_id"], x["body"]) for x in lines], req), js
        if parts[:2] == ["v1", "batches"] and len(parts) >= 3:
            b = self.batches.get(parts[2])
            if b is None:
                return 404, {"error": {"message": "No batch found", "type": "invalid_request_error"}}, js
            if len(parts) == 4 and parts[3] == "cancel":
                b["cancelled"] = True
            else:
                self._advance(b)
            return 200, self._openai_view(b), js
        if parts == ["v1", "messages", "batches"] and method == "POST":
            if self.submit_error is not None:
                return self.submit_error[0], self.submit_error[1], js
            req = json.loads(raw)
            return 200, self._new_batch("anthropic", [(r["custom_id"], r["params"]) for r in req["requests"]], req), js
        if parts[:3] == ["v1", "messages", "batches"] and len(parts) >= 4:
            b = self.batches.get(parts[3])
            if b is None:
                return 404, {"type": "error", "error": {"type": "not_found_error", "message": "no batch"}}, js
            if len(parts) == 5 and parts[4] == "results":
                return 200, self._anthropic_results(b), "application/binary"
            if len(parts) == 5 and parts[4] == "cancel":
                b["cancelled"] = True
            else:
                self._advance(b)
            return 200, self._anthropic_view(b), js
        return 404, {"error": {"message": f"no route {method} {'/'.join(parts)}"}}, js

    # -- replies ---------------------------------------------------------------------

    def _completion(self, body: dict[str, Any]) -> dict[str, Any]:
        text = self.reply(body)
        return {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": len(json.dumps(body["messages"])) // 4,
                          "completion_tokens": len(text) // 4, "total_tokens": 0}}

    def _message(self, body: dict[str, Any]) -> dict[str, Any]:
        text = self.reply(body)
        return {"id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
                "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": len(json.dumps(body["messages"])) // 4, "output_tokens": len(text) // 4}}

    # -- batches ---------------------------------------------------------------------

    def _new_batch(self, kind: str, requests: list[tuple[str, dict[str, Any]]], req: dict[str, Any]) -> dict[str, Any]:
        bid = self._id("batch_" if kind == "openai" else "msgbatch_")
        now = time.time()
        b: dict[str, Any] = {"id": bid, "kind": kind, "requests": requests, "looks": 0, "created": now,
             "ended": False, "cancelled": False, "results": {}, "input_file_id": req.get("input_file_id")}
        self.batches[bid] = b
        return self._openai_view(b) if kind == "openai" else self._anthropic_view(b)

    def _advance(self, b: dict[str, Any]) -> None:
        """One look: the batch ends at the :attr:`polls_to_end`-th look (or when cancelled)."""
        b["looks"] += 1
        if b["ended"] or not (b["looks"] >= self.polls_to_end or b["cancelled"]):
            return
        b["ended"] = True
        for cid, body in b["requests"]:
            outcome = "cancel" if b["cancelled"] else self.outcome(cid, body)
            if outcome == "ok":
                self.bodies.append(body)
            b["results"][cid] = outcome

    def _counts(self, b: dict[str, Any]) -> Counter[str]:
        return Counter("ok" if o == "ok" else ("expire" if o in ("expire", "cancel") else "error")
                       for o in b["results"].values())

    def _openai_view(self, b: dict[str, Any]) -> dict[str, Any]:
        c = self._counts(b)
        status = "in_progress"
        if b["ended"]:
            status = "cancelled" if b["cancelled"] else ("expired" if c["expire"] else "completed")
        out = {"id": b["id"], "object": "batch", "endpoint": "/v1/chat/completions", "errors": None,
               "input_file_id": b["input_file_id"], "completion_window": "24h", "status": status,
               "created_at": int(b["created"]), "expires_at": int(b["created"] + 86400),
               "output_file_id": None, "error_file_id": None,
               "request_counts": {"total": len(b["requests"]), "completed": c["ok"], "failed": c["error"] + c["expire"]}}
        if b["ended"] and "output" not in b:
            ok, bad = [], []
            for cid, body in b["requests"]:
                o = b["results"][cid]
                if o == "ok":
                    ok.append({"id": "r", "custom_id": cid, "error": None,
                               "response": {"status_code": 200, "request_id": "q", "body": self._completion(body)}})
                elif o in ("expire", "cancel"):
                    code = "batch_expired" if o == "expire" else "batch_cancelled"
                    bad.append({"id": "r", "custom_id": cid, "response": None,
                                "error": {"code": code, "message": "This request could not be executed before the completion window expired."}})
                else:
                    st, code = o
                    bad.append({"id": "r", "custom_id": cid, "error": None,
                                "response": {"status_code": st, "request_id": "q",
                                             "body": {"error": {"message": f"fake {code}", "code": code, "type": code}}}})
            for name, rows in (("output", ok), ("error", bad)):
                if rows:
                    fid = self._id("file-")
                    self.files[fid] = "".join(json.dumps(r) + "\n" for r in rows).encode()
                    b[name] = fid
            b.setdefault("output", None)
        if b["ended"]:
            out["output_file_id"], out["error_file_id"] = b.get("output"), b.get("error")
        return out

    def _anthropic_view(self, b: dict[str, Any]) -> dict[str, Any]:
        c = self._counts(b)
        n = len(b["requests"])
        return {"id": b["id"], "type": "message_batch",
                "processing_status": "ended" if b["ended"] else "in_progress",
                "request_counts": {"processing": 0 if b["ended"] else n, "succeeded": c["ok"], "errored": c["error"],
                                   "canceled": sum(o == "cancel" for o in b["results"].values()),
                                   "expired": sum(o == "expire" for o in b["results"].values())},
                "created_at": _iso(b["created"]), "expires_at": _iso(b["created"] + 86400),
                "ended_at": _iso(time.time()) if b["ended"] else None, "archived_at": None,
                "cancel_initiated_at": None,
                "results_url": f"{self.url}/v1/messages/batches/{b['id']}/results" if b["ended"] else None}

    def _anthropic_results(self, b: dict[str, Any]) -> bytes:
        rows = []
        for cid, body in b["requests"]:
            o = b["results"][cid]
            if o == "ok":
                result: dict[str, Any] = {"type": "succeeded", "message": self._message(body)}
            elif o == "expire":
                result = {"type": "expired"}
            elif o == "cancel":
                result = {"type": "canceled"}
            else:
                result = {"type": "errored", "error": {"type": "error", "error": {"type": o[1], "message": f"fake {o[1]}"}}}
            rows.append({"custom_id": cid, "result": result})
        return "".join(json.dumps(r) + "\n" for r in rows).encode()


@contextmanager
def fake_provider() -> Iterator[FakeProvider]:
    provider = FakeProvider()
    provider.thread.start()
    try:
        yield provider
    finally:
        provider.server.shutdown()
        provider.server.server_close()
