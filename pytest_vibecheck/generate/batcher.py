"""Batch mode (``--vibe-batch``): a wave of requests through the provider's batch API, into
the generation cache.

:meth:`Batcher.resolve` takes the requests of one wave (every item's first request, then every
multi-turn conversation's next turn: :mod:`pytest_vibecheck.plugin.run.waves`) and returns when
each one's reply is in the generation cache, under the key a direct request would use
(:func:`~pytest_vibecheck.generate.cache.cache_key`), or when its failure is final:

1. requests already in the cache are done; requests already in a batch not yet collected (of
   this process, another xdist worker, or an earlier run that was stopped or killed: the batch
   ids live in the cache's file, :mod:`~pytest_vibecheck.generate.batch_store`) are waited for,
   never submitted again;
2. the rest are grouped within the provider's limits (requests and bytes of one batch:
   :attr:`BatchAPI.max_requests`, :attr:`BatchAPI.max_bytes`) and submitted; the ledger reserves
   the keys first, in one write transaction, so two processes never submit the same request;
3. the open batches are polled, one look per interval over all processes, the interval doubling
   from :attr:`BatchPolicy.poll_s` to :attr:`BatchPolicy.max_poll_s`; while they wait the
   ``display`` is told the batch ids, the provider's own status and counts, the time elapsed and
   the provider's deadline;
4. an ended batch (completed, expired, cancelled, failed) is collected by one process: each
   reply is stored in the cache (and counted as spent, :meth:`Generator.store_batch_reply`);
   each failed request is recorded: ``retry`` (expired, cancelled, rate limited, a server
   error) is submitted again in a later batch, at most :attr:`BatchPolicy.attempts` times in
   all, ``error`` is final. The items of a request with no reply get the recorded failure as
   their infrastructure error (:meth:`miss_error`), never a model failure.

Errors: a submission refused with HTTP 401, 402, 403, 404 or an exhausted quota raises the
fatal :class:`~pytest_vibecheck.generate.backends.base.BackendError` at once (the guard stops
the model, as for a direct request); other submission and polling failures are retried at the
next look. ``--vibe-budget``: each request passes the guard before it is submitted
(:meth:`CallGuard.before_call`; refused requests are not run) and a batch takes no more requests
once what they may cost (their input tokens, estimated as a quarter of their characters, and
``max_tokens``) would pass the budget.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_vibecheck.errors import ParameterError
from pytest_vibecheck.generate.backends.base import BackendError, GenerationError, GenerationRequest
from pytest_vibecheck.generate.batch_store import BatchLedger

if TYPE_CHECKING:
    from pytest_vibecheck.generate.backends.batch_api import BatchAPI, BatchStatus
    from pytest_vibecheck.generate.generator import Generator

__all__ = ["POLL_ENV", "BatchPolicy", "Batcher", "estimated_tokens", "policy_from_env"]

#: Environment variable: the first poll interval and the longest, ``"S"`` or ``"S,MAX"`` seconds.
POLL_ENV = "VIBECHECK_BATCH_POLL"


@dataclass(frozen=True)
class BatchPolicy:
    """How a :class:`Batcher` waits: the first poll interval ``poll_s`` (seconds), doubled per
    look up to ``max_poll_s``; ``attempts``: submissions of one request at most (its first and
    the retries after an expiry or a transient error); ``display_s``: seconds between two
    waiting lines."""

    poll_s: float = 30.0
    max_poll_s: float = 600.0
    attempts: int = 3
    display_s: float = 30.0


def policy_from_env(env: Mapping[str, str] | None = None) -> BatchPolicy:
    """The default :class:`BatchPolicy`, with the intervals of ``$VIBECHECK_BATCH_POLL`` when set
    (``"5"`` or ``"5,120"``). Raises ParameterError for a value that is not one or two positive
    numbers."""
    raw = (os.environ if env is None else env).get(POLL_ENV, "").strip()
    if not raw:
        return BatchPolicy()
    try:
        parts = [float(p) for p in raw.split(",")]
    except ValueError:
        parts = []
    if not 1 <= len(parts) <= 2 or not all(0 < p < float("inf") for p in parts):
        raise ParameterError(
            f"environment variable {POLL_ENV}: {raw!r} is not valid; expected seconds between two "
            "looks at a batch, e.g. 30 or 30,600 (first, longest)"
        )
    first = parts[0]
    longest = max(parts[-1], first)
    return BatchPolicy(poll_s=first, max_poll_s=longest, display_s=min(BatchPolicy.display_s, longest))


def estimated_tokens(request: GenerationRequest) -> tuple[int, int]:
    """What ``request`` may cost before its reply is known: ``(input tokens, output tokens)``,
    the input as a quarter of the characters of its messages (rounded up), the output its
    ``max_tokens``."""
    chars = sum(len(m["content"]) for m in request.messages)
    return -(-chars // 4), request.max_tokens


def _clock(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


class Batcher:
    """The batch mode of one :class:`Generator` (see the module docstring); it sets itself as
    the generator's :attr:`~Generator.batch` hooks.

    ``display``: called with the waiting lines (one per batch, after a heading) at most every
    :attr:`BatchPolicy.display_s` seconds; ``budget_left``: returns the tokens and dollars the
    run may still spend (``(None, None)``: no budget) for the submission cut-off. Raises
    ParameterError when the backend has no batch API or the generator no cache.
    """

    def __init__(
        self,
        generator: Generator,
        *,
        policy: BatchPolicy | None = None,
        display: Callable[[list[str]], None] | None = None,
        budget_left: Callable[[], tuple[float | None, float | None]] | None = None,
        price: Callable[[int, int], float | None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        api = generator.backend.batch_api()
        if api is None:
            raise ParameterError(
                f"--vibe-batch: {generator.backend.spec} has no batch API; batch mode works with "
                "openai:MODEL and anthropic:MODEL"
            )
        if generator.cache is None or not generator.uses_cache:
            raise ParameterError(
                "--vibe-batch keeps its batches and their replies in the generation cache; give "
                "--vibe-cache PATH and --vibe-cache-mode use or refresh"
            )
        self.generator = generator
        self.api: BatchAPI = api
        self.ledger = BatchLedger(generator.cache)
        self.policy = policy or BatchPolicy()
        self.display = display
        self.budget_left = budget_left
        self.price = price
        self.sleep = sleep
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex}"
        self.started = time.time()
        #: counters of this process: batches submitted, requests submitted, provider looks,
        #: batches collected
        self.counts = {"batches": 0, "submitted": 0, "polls": 0, "collected": 0}
        self._looks: dict[str, int] = {}
        #: requests this process did not submit because of the budget: why
        self._refused: dict[str, str] = {}
        self._shown = 0.0
        generator.batch = self

    # -- the Generator's hooks ------------------------------------------------------

    def fresh(self, key: str) -> bool:
        """True for the first reader in this run of a reply this run's batches generated."""
        return self.ledger.take_fresh(self.generator.run_id, key)

    def miss_error(self, key: str, request: GenerationRequest) -> GenerationError:
        """The recorded failure of ``key`` in this run's batches (an infrastructure error, with
        the HTTP status the provider gave), or why it was not submitted (the guard's
        :class:`RunStoppedError`), or that no batch answered it."""
        failures = self.ledger.failures(key, self.started)
        spec = self.generator.backend.spec
        if failures:
            last = failures[-1]
            tries = f" (after {len(failures)} batch submission{'s' * (len(failures) > 1)})"
            return BackendError(last.message + tries, provider=self.generator.backend.provider,
                                model=self.generator.backend.model, status=last.status,
                                task_id=request.task_id, label=request.label)
        guard = self.generator.guard
        if guard is not None:
            try:
                guard.before_call(spec)
            except GenerationError as exc:
                return exc
        if key in self._refused:
            from pytest_vibecheck.generate.generator import RunStoppedError

            return RunStoppedError(self._refused[key], task_id=request.task_id, label=request.label)
        return BackendError(
            f"{spec}: batch mode: no batch of this run answered {request.describe()} (key {key[:12]}); "
            "it is sent in the next run",
            provider=self.generator.backend.provider, model=self.generator.backend.model,
            task_id=request.task_id, label=request.label,
        )

    # -- one wave ---------------------------------------------------------------------

    def resolve(self, requests: Sequence[GenerationRequest]) -> None:
        """Return once every request of ``requests`` has its reply in the cache or a final
        failure (see the module docstring). Raises a fatal BackendError (submission refused)."""
        gen = self.generator
        entries: dict[str, GenerationRequest] = {}
        for r in requests:
            entries.setdefault(gen.key(r), r)
        done: set[str] = set()
        stopped: set[str] = set()
        while True:
            self.ledger.sweep()
            busy = self.ledger.open_keys(gen.identity)
            for key in entries:  # (a key in an open batch is not settled: skip the look-ups)
                if key not in done and key not in stopped and key not in busy and self._settled(key):
                    done.add(key)
            pending = {k: r for k, r in entries.items() if k not in done and k not in stopped}
            if not pending:
                return
            fresh = [(k, r) for k, r in pending.items() if k not in busy]
            if fresh:
                stopped |= self._submit(fresh)
                busy = self.ledger.open_keys(gen.identity)
            waiting = sorted({busy[k] for k in pending if k in busy})
            for bid in waiting:
                self._look(bid)
            if not waiting:
                continue
            self._show(waiting)
            self.sleep(min(1.0, self.policy.poll_s))

    def _settled(self, key: str) -> bool:
        """The reply is in the cache, or the request failed for good (a final error, or
        :attr:`BatchPolicy.attempts` failures in this run's batches)."""
        if self.generator.cached(key) is not None:
            return True
        failures = self.ledger.failures(key, self.started)
        return bool(failures) and (failures[-1].outcome == "error" or len(failures) >= self.policy.attempts)

    # -- submission ---------------------------------------------------------------------

    def _submit(self, entries: list[tuple[str, GenerationRequest]]) -> set[str]:
        """Submit ``entries`` in batches within the limits; the keys refused by the guard or the
        budget are returned (not submitted)."""
        from pytest_vibecheck.generate.generator import RunStoppedError

        gen = self.generator
        spec = gen.backend.spec
        refused: set[str] = set()
        allowed: list[tuple[str, GenerationRequest, dict[str, Any], int]] = []
        tokens_left, usd_left = self.budget_left() if self.budget_left else (None, None)
        for key, request in entries:
            try:
                if gen.guard is not None:
                    gen.guard.before_call(spec)
            except RunStoppedError:
                refused.add(key)
                continue
            tin, tout = estimated_tokens(request)
            cost = self.price(tin, tout) or 0.0 if self.price is not None else 0.0
            if (tokens_left is not None and tin + tout > tokens_left) or (usd_left is not None and cost > usd_left):
                refused.add(key)
                self._refused[key] = (
                    f"--vibe-budget: not submitted: the batch may cost {tin + tout:,} more tokens "
                    f"(${cost:.4f} at batch prices), more than the budget left"
                )
                continue
            if tokens_left is not None:
                tokens_left -= tin + tout
            if usd_left is not None:
                usd_left -= cost
            line = self.api.line(key, request)
            size = self.api.size(line)
            if size > self.api.max_bytes:
                raise BackendError(
                    f"{spec}: batch mode: {request.describe()} is {size:,} bytes, more than one batch "
                    f"may hold ({self.api.max_bytes:,})",
                    provider=gen.backend.provider, model=gen.backend.model, fatal=False,
                )
            allowed.append((key, request, line, size))
        for group in _groups(allowed, self.api.max_requests, self.api.max_bytes):
            self._submit_group(group)
        return refused

    def _submit_group(self, group: list[tuple[str, GenerationRequest, dict[str, Any], int]]) -> None:
        gen = self.generator
        placeholder, taken = self.ledger.reserve(gen.identity, [(k, r) for k, r, _l, _s in group], self.owner)
        if not taken:
            return
        chosen = set(taken)
        lines = [line for k, _r, line, _s in group if k in chosen]
        try:
            status = self.api.submit(lines)
        except BackendError as exc:
            self.ledger.abandon(placeholder)
            if gen.guard is not None:
                gen.guard.on_error(gen.backend.spec, exc)
            if exc.fatal:
                raise
            self._note([f"vibecheck: batch submission failed, retried at the next look: {exc}"])
            self.sleep(min(self.policy.max_poll_s, self.policy.poll_s))
            return
        except BaseException:
            self.ledger.abandon(placeholder)
            raise
        self.ledger.submitted(placeholder, status.id, status.status, status.counts, status.expires_at,
                              status.created_at)
        self.counts["batches"] += 1
        self.counts["submitted"] += len(lines)

    # -- waiting and collecting ------------------------------------------------------------

    def _look(self, batch_id: str) -> None:
        """Poll ``batch_id`` if no process did within the current interval; collect it once it
        ended."""
        if batch_id.startswith("local-"):
            return  # another process is submitting it
        row = self.ledger.get(batch_id)
        if row is None:
            return
        status: BatchStatus | None = None
        if not row.ended:
            looks = self._looks.get(batch_id, 0)
            interval = min(self.policy.max_poll_s, self.policy.poll_s * 2**looks)
            if not self.ledger.take_poll(batch_id, interval):
                return
            self._looks[batch_id] = looks + 1
            self.counts["polls"] += 1
            try:
                status = self.api.retrieve(batch_id)
            except BackendError as exc:
                if exc.status == 404:
                    self.ledger.forget(batch_id, f"{self.generator.backend.spec}: batch {batch_id} is unknown to the provider (HTTP 404)")
                    return
                if exc.fatal:
                    raise
                self._note([f"vibecheck: batch {batch_id}: look failed, retried later: {exc}"])
                return
            self.ledger.update(batch_id, status.status, status.counts, ended=status.ended,
                               expires_at=status.expires_at)
            if not status.ended:
                return
        if self.ledger.take_collect(batch_id, self.owner):
            try:
                self._collect(status or self.api.retrieve(batch_id))
            except BaseException:
                self.ledger.release_collect(batch_id, self.owner)
                raise

    def _collect(self, status: BatchStatus) -> None:
        """Store the replies of the ended batch ``status`` and record its failures."""
        gen = self.generator
        batch_id = status.id
        requests = self.ledger.requests_of(batch_id)
        failures: dict[str, tuple[str, str, int | None]] = {}
        stored: list[str] = []
        for result in self.api.results(status):
            request = requests.get(result.custom_id)
            if request is None or result.custom_id in stored or result.custom_id in failures:
                continue
            if result.outcome == "ok" and result.generation is not None:
                gen.store_batch_reply(result.custom_id, request, result.generation)
                stored.append(result.custom_id)
            else:
                failures[result.custom_id] = (result.outcome, result.message, result.status)
        answered = set(stored) | set(failures)
        spec = gen.backend.spec
        for cid in requests:
            if cid in answered:
                continue
            if status.status == "failed":
                why = f"{spec}: batch {batch_id} failed: {status.errors or 'the provider gave no reason'}"
                failures[cid] = ("error", why, None)
            else:
                failures[cid] = ("retry", f"{spec}: batch {batch_id} ended ({status.status}) without this request", None)
        self.ledger.mark_fresh(gen.run_id, stored)
        self.ledger.collected(batch_id, failures)
        self.counts["collected"] += 1

    # -- the waiting display ---------------------------------------------------------------

    def _show(self, waiting: list[str]) -> None:
        now = time.time()
        if self.display is None or now - self._shown < self.policy.display_s:
            return
        self._shown = now
        lines = [
            f"vibecheck: waiting for {len(waiting)} batch{'es' * (len(waiting) > 1)} of "
            f"{self.generator.backend.spec} (elapsed {_clock(now - self.started)})"
        ]
        for bid in waiting:
            row = self.ledger.get(bid)
            if row is None:
                continue
            if not row.submitted:
                lines.append(f"  (being submitted by another process: {row.requests} requests)")
                continue
            counts = ", ".join(f"{k} {v}" for k, v in row.counts.items())
            deadline = (
                f"; the provider's deadline in {_clock(row.expires_at - now)}" if row.expires_at else ""
            )
            lines.append(f"  {bid}: {row.status} ({counts}){deadline}")
        self.display(lines)

    def _note(self, lines: list[str]) -> None:
        if self.display is not None:
            self.display(lines)


def _groups(
    entries: list[tuple[str, GenerationRequest, dict[str, Any], int]], max_requests: int, max_bytes: int
) -> list[list[tuple[str, GenerationRequest, dict[str, Any], int]]]:
    """``entries`` in order, cut into groups of at most ``max_requests`` entries and
    ``max_bytes`` bytes (each entry's size is its last element)."""
    groups: list[list[tuple[str, GenerationRequest, dict[str, Any], int]]] = []
    current: list[tuple[str, GenerationRequest, dict[str, Any], int]] = []
    size = 0
    for entry in entries:
        if current and (len(current) >= max_requests or size + entry[3] > max_bytes):
            groups.append(current)
            current, size = [], 0
        current.append(entry)
        size += entry[3]
    if current:
        groups.append(current)
    return groups
