"""A provider's batch API behind one interface (``--vibe-batch``): submit many requests at
once, look at the batch, download its results, cancel it.

:class:`BatchAPI` is what :mod:`pytest_vibecheck.generate.batcher` drives; a backend offers one
through :meth:`~pytest_vibecheck.generate.backends.base.Backend.batch_api` (the built-ins:
:mod:`~pytest_vibecheck.generate.backends.openai_batch`, OpenAI's Batch API over an uploaded
JSONL file; :mod:`~pytest_vibecheck.generate.backends.anthropic_batch`, Anthropic's Message
Batches). A batch request is the same request the backend sends directly
(:meth:`SDKBackend.request_params`), and its reply is read by the same code
(:meth:`SDKBackend._to_generation`), so a batch reply and a direct reply for one request are
the same generation-cache entry.

Errors: a failed submission, look or download raises
:class:`~pytest_vibecheck.generate.backends.base.BackendError` (``fatal`` for HTTP 401, 402,
403, 404 and an exhausted quota, as for direct requests); a request that failed inside a batch
is a :class:`BatchResult` with ``outcome`` ``retry`` (expired, cancelled, rate limited, a server
error: worth sending again) or ``error`` (final), never a model reply.
"""

from __future__ import annotations

import abc
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from pytest_vibecheck.generate.backends._sdk import SDKBackend
    from pytest_vibecheck.generate.backends.base import Generation, GenerationRequest

__all__ = ["RETRY_STATUSES", "BatchAPI", "BatchResult", "BatchStatus", "body_of"]

#: HTTP statuses of a request inside a batch that are worth sending again.
RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})


@dataclass(frozen=True)
class BatchStatus:
    """What the provider says of one batch: ``status`` in its own words (OpenAI: ``validating``,
    ``in_progress``, ``finalizing``, ``completed``, ``failed``, ``expired``, ``cancelling``,
    ``cancelled``; Anthropic: ``in_progress``, ``canceling``, ``ended``), ``counts`` its own
    request counts (OpenAI ``total``/``completed``/``failed``; Anthropic
    ``processing``/``succeeded``/``errored``/``canceled``/``expired``), ``ended`` when no
    further result will come, ``expires_at`` / ``created_at`` in Unix seconds (the provider's
    deadline: 24 hours after submission for both), ``errors``: the batch's own errors (a batch
    that failed validation), ``refs``: where its results are."""

    id: str
    status: str
    counts: Mapping[str, int]
    ended: bool
    expires_at: float | None = None
    created_at: float | None = None
    errors: str = ""
    #: where the results are, in the provider's terms (OpenAI: the output and error file ids)
    refs: tuple[str, ...] = ()


@dataclass(frozen=True)
class BatchResult:
    """One request's result: ``custom_id`` (the generation-cache key), ``generation`` (None
    unless ``outcome == "ok"``), ``outcome`` (``ok`` | ``retry`` | ``error``), ``message`` (why
    there is no reply), ``status`` (the request's HTTP status, when the provider gives one)."""

    custom_id: str
    generation: Generation | None = None
    outcome: str = "ok"
    message: str = ""
    status: int | None = None


class BatchAPI(abc.ABC):
    """The batch API of one :class:`SDKBackend` (its client, its request parameters, its reply
    parsing, its error translation). Subclasses set the limits and implement the calls."""

    #: the provider's limits on one batch: requests, and bytes of the submitted requests
    max_requests: ClassVar[int]
    max_bytes: ClassVar[int]

    def __init__(self, backend: SDKBackend) -> None:
        self.backend = backend

    @abc.abstractmethod
    def line(self, custom_id: str, request: GenerationRequest) -> dict[str, Any]:
        """The JSON object that carries ``request`` in a batch (its size counts against
        :attr:`max_bytes`)."""

    def size(self, line: Mapping[str, Any]) -> int:
        """Bytes of ``line`` in the submission (UTF-8 JSON and its newline)."""
        return len(json.dumps(line, ensure_ascii=False).encode("utf-8")) + 1

    @abc.abstractmethod
    def submit(self, lines: Sequence[Mapping[str, Any]]) -> BatchStatus:
        """Create one batch of ``lines`` (within the limits). Raises BackendError."""

    @abc.abstractmethod
    def retrieve(self, batch_id: str) -> BatchStatus:
        """The batch now. Raises BackendError (404: the provider no longer knows it)."""

    @abc.abstractmethod
    def results(self, batch: BatchStatus) -> Iterator[BatchResult]:
        """The results of the ended ``batch`` (every request it finished or failed; a
        request it never reached may be missing). Raises BackendError."""

    @abc.abstractmethod
    def cancel(self, batch_id: str) -> BatchStatus:
        """Ask the provider to stop the batch (finished results stay). Raises BackendError."""

    def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` with the SDK's errors as :class:`BackendError`."""
        from pytest_vibecheck.generate.backends._sdk import import_sdk, translate_error

        backend = self.backend
        sdk = import_sdk(backend.sdk_module, backend.sdk_module)
        try:
            return fn(*args, **kwargs)
        except getattr(sdk, backend.error_class) as exc:
            raise translate_error(
                exc, sdk, backend.provider, backend.model, backend.settings.max_retries, backend.base_url
            ) from exc

    def _reply(self, custom_id: str, resp: Any) -> BatchResult:
        """A successful reply as the backend reads a direct one (an unusable reply, such as an
        empty ``choices`` list, is the final error of that request)."""
        from pytest_vibecheck.generate.backends.base import BackendError

        try:
            return BatchResult(custom_id, self.backend._to_generation(resp, 0.0))
        except BackendError as exc:
            return BatchResult(custom_id, outcome="error", message=str(exc), status=exc.status)


def body_of(params: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON body of the SDK call with keyword arguments ``params`` (``extra_body`` merged in,
    as the SDK sends it)."""
    body = {k: v for k, v in params.items() if k != "extra_body"}
    body.update(params.get("extra_body") or {})
    return body
