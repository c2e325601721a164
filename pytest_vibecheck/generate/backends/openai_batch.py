"""OpenAI's Batch API for ``openai:MODEL`` (``--vibe-batch``).

The requests go as one JSONL file (``client.files.create(purpose="batch")``), one line per
request: ``{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body"}`` where the
body is what :meth:`OpenAIBackend.request_params` sends directly. ``client.batches.create``
starts the batch (``completion_window="24h"``); ``client.batches.retrieve`` tells its status and
``request_counts``; when it is over (``completed``, ``failed``, ``expired``, ``cancelled``) its
``output_file_id`` holds the replies and its ``error_file_id`` the failed requests
(``client.files.content``). Limits of one batch (OpenAI's Batch API guide): 50,000 requests
and 200 MB of input file. Requests that the batch did not reach before it expired are in the
error file with the code ``batch_expired`` (``batch_cancelled`` after a cancel): they are sent
again.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pytest_vibecheck.generate.backends.base import GenerationRequest
from pytest_vibecheck.generate.backends.batch_api import (
    RETRY_STATUSES,
    BatchAPI,
    BatchResult,
    BatchStatus,
    body_of,
)

__all__ = ["ENDPOINT", "OpenAIBatchAPI"]

ENDPOINT = "/v1/chat/completions"
_ENDED = frozenset({"completed", "failed", "expired", "cancelled"})
_RETRY_CODES = frozenset({"batch_expired", "batch_cancelled", "rate_limit_exceeded", "server_error"})


class OpenAIBatchAPI(BatchAPI):
    """See the module docstring."""

    max_requests = 50_000
    max_bytes = 200 * 1024 * 1024

    def line(self, custom_id: str, request: GenerationRequest) -> dict[str, Any]:
        return {
            "custom_id": custom_id,
            "method": "POST",
            "url": ENDPOINT,
            "body": body_of(self.backend.request_params(request)),
        }

    def submit(self, lines: Sequence[Mapping[str, Any]]) -> BatchStatus:
        client = self.backend._get_client()
        data = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode("utf-8")
        uploaded = self._call(
            client.files.create, file=("vibecheck-batch.jsonl", data, "application/jsonl"), purpose="batch"
        )
        batch = self._call(
            client.batches.create,
            completion_window="24h",
            endpoint=ENDPOINT,
            input_file_id=uploaded.id,
            metadata={"created_by": "pytest-vibecheck"},
        )
        return _status(batch)

    def retrieve(self, batch_id: str) -> BatchStatus:
        return _status(self._call(self.backend._get_client().batches.retrieve, batch_id))

    def cancel(self, batch_id: str) -> BatchStatus:
        return _status(self._call(self.backend._get_client().batches.cancel, batch_id))

    def results(self, batch: BatchStatus) -> Iterator[BatchResult]:
        from openai.types.chat import ChatCompletion

        client = self.backend._get_client()
        batch_id = batch.id
        for file_id in batch.refs:
            content = self._call(client.files.content, file_id)
            for raw in content.text.splitlines():
                if not raw.strip():
                    continue
                entry = json.loads(raw)
                cid = str(entry.get("custom_id", ""))
                response = entry.get("response") or {}
                status = response.get("status_code")
                body = response.get("body") or {}
                if status == 200 and not entry.get("error"):
                    yield self._reply(cid, ChatCompletion.construct(**body))
                    continue
                error = entry.get("error") or (body.get("error") if isinstance(body, dict) else None) or {}
                code = str(error.get("code") or "")
                message = str(error.get("message") or f"HTTP {status}")
                retry = code in _RETRY_CODES or (isinstance(status, int) and status in RETRY_STATUSES)
                where = f"{self.backend.provider}:{self.backend.model}: batch {batch_id}"
                text = f"{where}: " + (f"HTTP {status}: " if status else "") + message + (f" ({code})" if code else "")
                yield BatchResult(cid, outcome="retry" if retry else "error", message=text,
                                  status=status if isinstance(status, int) else None)


def _status(batch: Any) -> BatchStatus:
    counts = batch.request_counts
    errors = getattr(batch, "errors", None)
    messages = [str(getattr(e, "message", "") or "") for e in (getattr(errors, "data", None) or [])]
    return BatchStatus(
        id=str(batch.id),
        status=str(batch.status),
        counts={
            "total": int(getattr(counts, "total", 0) or 0),
            "completed": int(getattr(counts, "completed", 0) or 0),
            "failed": int(getattr(counts, "failed", 0) or 0),
        },
        ended=str(batch.status) in _ENDED,
        expires_at=float(batch.expires_at) if batch.expires_at else None,
        created_at=float(batch.created_at) if batch.created_at else None,
        errors="; ".join(m for m in messages if m),
        refs=tuple(f for f in (batch.output_file_id, batch.error_file_id) if f),
    )
