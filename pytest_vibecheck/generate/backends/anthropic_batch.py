"""Anthropic's Message Batches for ``anthropic:MODEL`` (``--vibe-batch``).

``client.messages.batches.create(requests=[{"custom_id", "params"}])`` submits the requests,
each with the parameters :meth:`AnthropicBackend.request_params` sends directly;
``retrieve`` tells ``processing_status`` (``in_progress``, ``canceling``, ``ended``) and
``request_counts`` (``processing``, ``succeeded``, ``errored``, ``canceled``, ``expired``);
``results`` streams the JSONL results of an ended batch, one ``{"custom_id", "result"}`` per
request, ``result.type`` ``succeeded`` (with the message), ``errored``, ``canceled`` or
``expired``. Limits of one batch (Anthropic's batch-processing guide): 100,000 requests and
256 MB. Custom ids are the generation-cache keys (64 hex characters: within the API's
``^[a-zA-Z0-9_-]{1,64}$``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pytest_vibecheck.generate.backends.base import GenerationRequest
from pytest_vibecheck.generate.backends.batch_api import BatchAPI, BatchResult, BatchStatus, body_of

__all__ = ["AnthropicBatchAPI"]

#: Anthropic's error types inside a batch: the HTTP status each stands for; worth retrying?
_ERROR_TYPES: dict[str, tuple[int, bool]] = {
    "invalid_request_error": (400, False),
    "authentication_error": (401, False),
    "billing_error": (402, False),
    "permission_error": (403, False),
    "not_found_error": (404, False),
    "request_too_large": (413, False),
    "rate_limit_error": (429, True),
    "api_error": (500, True),
    "timeout_error": (504, True),
    "overloaded_error": (529, True),
}


class AnthropicBatchAPI(BatchAPI):
    """See the module docstring."""

    max_requests = 100_000
    max_bytes = 256 * 1024 * 1024

    def line(self, custom_id: str, request: GenerationRequest) -> dict[str, Any]:
        return {"custom_id": custom_id, "params": body_of(self.backend.request_params(request))}

    def submit(self, lines: Sequence[Mapping[str, Any]]) -> BatchStatus:
        client = self.backend._get_client()
        return _status(self._call(client.messages.batches.create, requests=[dict(x) for x in lines]))

    def retrieve(self, batch_id: str) -> BatchStatus:
        return _status(self._call(self.backend._get_client().messages.batches.retrieve, batch_id))

    def cancel(self, batch_id: str) -> BatchStatus:
        return _status(self._call(self.backend._get_client().messages.batches.cancel, batch_id))

    def results(self, batch: BatchStatus) -> Iterator[BatchResult]:
        batch_id = batch.id
        where = f"{self.backend.provider}:{self.backend.model}: batch {batch_id}"
        decoder = self._call(self.backend._get_client().messages.batches.results, batch_id)
        for entry in decoder:
            cid, result = str(entry.custom_id), entry.result
            kind = str(getattr(result, "type", ""))
            if kind == "succeeded":
                yield self._reply(cid, result.message)
            elif kind == "errored":
                err = getattr(getattr(result, "error", None), "error", None)
                etype = str(getattr(err, "type", "") or "")
                status, retry = _ERROR_TYPES.get(etype, (None, True))
                message = str(getattr(err, "message", "") or etype or "errored")
                yield BatchResult(cid, outcome="retry" if retry else "error",
                                  message=f"{where}: {etype or 'error'}: {message}", status=status)
            else:  # canceled, expired: never reached
                yield BatchResult(cid, outcome="retry", message=f"{where}: the request {kind}")


def _status(batch: Any) -> BatchStatus:
    counts = batch.request_counts
    names = ("processing", "succeeded", "errored", "canceled", "expired")
    return BatchStatus(
        id=str(batch.id),
        status=str(batch.processing_status),
        counts={n: int(getattr(counts, n, 0) or 0) for n in names},
        ended=str(batch.processing_status) == "ended",
        expires_at=batch.expires_at.timestamp() if batch.expires_at else None,
        created_at=batch.created_at.timestamp() if batch.created_at else None,
    )
