"""Adaptive concurrency of API requests: additive increase, multiplicative decrease (AIMD).

An :class:`AdaptiveLimit` bounds the requests in flight in one process. It starts at the
configured maximum (``--vibe-concurrency``). An overload signal (HTTP 429, or 503/529 "overloaded")
halves the limit (at least 1; at most once per :data:`DECREASE_INTERVAL_S`, so one burst of
rejections counts once) and, when the server sent ``Retry-After`` (or ``retry-after-ms``), holds
new requests until that time. Each answered request adds ``1 / limit``, so the limit grows back by
one per round of successful requests, up to the maximum: the TCP congestion-control rule
(RFC 5681 §3.1), applied to request slots.

The signals come from the backend's HTTP responses as they arrive (the SDKs' own retries included,
see :attr:`pytest_vibecheck.generate.backends.base.Backend.on_response`) and from the final
:class:`~pytest_vibecheck.generate.backends.base.RateLimitError` of a request.
"""

from __future__ import annotations

import contextlib
import email.utils
import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping

__all__ = ["DECREASE_INTERVAL_S", "OVERLOAD_STATUSES", "AdaptiveLimit", "retry_after_s"]

#: HTTP statuses that mean "too many requests now" (429; 503 and Anthropic's 529 "overloaded").
OVERLOAD_STATUSES = frozenset({429, 503, 529})
#: Shortest time between two decreases (seconds).
DECREASE_INTERVAL_S = 0.25
#: Longest Retry-After honoured (seconds), as the SDKs do.
MAX_RETRY_AFTER_S = 120.0


def retry_after_s(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date);
    None when absent, unreadable, negative or longer than :data:`MAX_RETRY_AFTER_S`."""
    if not headers:
        return None
    lower = {str(k).lower(): str(v) for k, v in headers.items()}
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        raw = lower.get(name)
        if raw is None:
            continue
        try:
            value = float(raw) / scale
        except ValueError:
            parsed = email.utils.parsedate_to_datetime(raw) if name == "retry-after" else None
            value = parsed.timestamp() - time.time() if parsed is not None else math.nan
        if math.isfinite(value) and 0 <= value <= MAX_RETRY_AFTER_S:
            return value
        return None
    return None


class AdaptiveLimit:
    """The AIMD limit of one process and backend (see the module docstring).

    ``maximum``: the starting and highest limit (>= 1). ``clock``: monotonic seconds (tests).
    :attr:`history` records ``(time, limit)`` at every change.
    """

    def __init__(self, maximum: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.maximum = max(1, int(maximum))
        self._limit = float(self.maximum)
        self._inflight = 0
        self._resume_at = 0.0
        self._last_decrease = -math.inf
        self._clock = clock
        self._cond = threading.Condition()
        self.history: list[tuple[float, int]] = [(clock(), self.maximum)]

    @property
    def limit(self) -> int:
        """The current limit (an int in [1, maximum])."""
        return int(self._limit)

    @contextlib.contextmanager
    def slot(self) -> Iterator[None]:
        """Hold one request slot: waits while the limit is reached or a Retry-After pause runs."""
        with self._cond:
            while True:
                wait = self._resume_at - self._clock()
                if wait <= 0 and self._inflight < int(self._limit):
                    break
                self._cond.wait(timeout=wait if wait > 0 else 0.5)
            self._inflight += 1
        try:
            yield
        finally:
            with self._cond:
                self._inflight -= 1
                self._cond.notify_all()

    def observe(self, status: int, headers: Mapping[str, str] | None = None) -> None:
        """Feed one HTTP response: an overload status decreases, a 2xx increases."""
        if status in OVERLOAD_STATUSES:
            self.overloaded(retry_after_s(headers))
        elif 200 <= status < 300:
            self.succeeded()

    def overloaded(self, retry_after: float | None = None) -> None:
        """One overload signal: halve the limit (once per interval) and pause for ``retry_after``
        seconds when given."""
        with self._cond:
            now = self._clock()
            if retry_after is not None and retry_after > 0:
                self._resume_at = max(self._resume_at, now + retry_after)
            if now - self._last_decrease >= DECREASE_INTERVAL_S:
                self._last_decrease = now
                self._set(max(1.0, math.floor(self._limit / 2)), now)

    def succeeded(self) -> None:
        """One answered request: grow by ``1 / limit`` up to the maximum."""
        with self._cond:
            if self._limit < self.maximum:
                self._set(min(float(self.maximum), self._limit + 1.0 / int(self._limit)), self._clock())
                self._cond.notify_all()

    def _set(self, value: float, now: float) -> None:
        before = int(self._limit)
        self._limit = value
        if int(value) != before:
            self.history.append((now, int(value)))
