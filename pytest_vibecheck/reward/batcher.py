"""Micro-batching: per-sample reward calls made at the same time are scored as one batch.

Trainers that call a reward one sample at a time do so from many callers at once: verl's
reward loop (``RewardLoopWorker.compute_score_batch`` starts one ``run_single`` task per
sample and runs a sync ``compute_score`` in the event loop's thread pool, or awaits an async
one), TRL's and other frameworks' thread pools. Scored one by one, each call pays for its own
Ruff process and its own sandbox wave. :class:`MicroBatcher` gathers them: one flusher thread
takes every call waiting, scores them with one
:meth:`~pytest_vibecheck.reward.core.RewardScorer.score` call (one Ruff process, one sandbox
wave, identical pairs once) and hands each caller its own result.

Latency: a call that finds the flusher idle and no other call waiting is scored at once (no
window). Only when calls are arriving together (the flusher's last batch had more than one,
or others are waiting) does it wait up to ``window_s`` (default 2 ms) for the rest of the
wave, and never past ``max_batch`` calls. While a batch is being scored, new calls queue and
form the next batch.

Bad input stays the caller's own: when a batch raises
:class:`~pytest_vibecheck.errors.VibecheckError` (an unknown task id, a malformed problem),
its calls are scored again one by one, so each bad call gets its own error and the others
their results.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass

from pytest_vibecheck.errors import VibecheckError

from .core import RewardConfig, RewardResult, RewardScorer, scorer_for
from .problems import ProblemRef

__all__ = ["BatchStats", "MicroBatcher", "batcher_for"]

#: How long (seconds) the flusher waits for more calls once calls arrive together.
WINDOW_S = 0.002
#: The most calls in one batch.
MAX_BATCH = 4096


@dataclass
class BatchStats:
    """What a batcher did: ``calls`` scored, in ``batches`` batches, ``largest`` the biggest
    batch, ``waited`` the batches that waited for the window, ``alone`` the batches of one
    call that did not wait."""

    calls: int = 0
    batches: int = 0
    largest: int = 0
    waited: int = 0
    alone: int = 0


_Pending = tuple[object, ProblemRef, "Future[RewardResult]"]


class MicroBatcher:
    """Scores single (completion, problem) calls in batches with ``scorer``.

    :meth:`score_one` (blocking, any thread) and :meth:`score_one_async` (a coroutine, for an
    event loop) each return one :class:`~pytest_vibecheck.reward.core.RewardResult`, the same
    as ``scorer.score([completion], [problem])[0]`` would, or raise its
    :class:`~pytest_vibecheck.errors.VibecheckError`. Thread-safe; the flusher thread is a
    daemon started on the first call.
    """

    def __init__(self, scorer: RewardScorer, *, window_s: float = WINDOW_S,
                 max_batch: int = MAX_BATCH) -> None:
        if window_s < 0 or max_batch < 1:
            raise VibecheckError(
                f"micro-batcher: window_s must be >= 0 and max_batch >= 1, got {window_s!r}, {max_batch!r}"
            )
        self.scorer = scorer
        self.window_s = float(window_s)
        self.max_batch = int(max_batch)
        self.stats = BatchStats()
        self._cond = threading.Condition()
        self._queue: list[_Pending] = []
        self._thread: threading.Thread | None = None
        self._last_batch = 0

    # ------------------------------------------------------------ callers

    def submit(self, completion: object, problem: ProblemRef) -> Future[RewardResult]:
        """Queue one call; its future gets the result (or the call's error)."""
        fut: Future[RewardResult] = Future()
        with self._cond:
            self._queue.append((completion, problem, fut))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._flush_forever, daemon=True,
                                                name="vibecheck-reward-batcher")
                self._thread.start()
            self._cond.notify()
        return fut

    def score_one(self, completion: object, problem: ProblemRef) -> RewardResult:
        """The result of one call, scored in a batch with the calls made at the same time."""
        return self.submit(completion, problem).result()

    async def score_one_async(self, completion: object, problem: ProblemRef) -> RewardResult:
        """:meth:`score_one` for an event loop: the loop stays free while the batch is scored."""
        return await asyncio.wrap_future(self.submit(completion, problem))

    # ------------------------------------------------------------ flusher

    def _take(self) -> list[_Pending]:
        with self._cond:
            while not self._queue:
                self._cond.wait()
            together = self._last_batch > 1 or len(self._queue) > 1
            if together and self.window_s > 0 and len(self._queue) < self.max_batch:
                deadline = time.monotonic() + self.window_s
                while len(self._queue) < self.max_batch:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._cond.wait(left)
                self.stats.waited += 1
            elif not together:
                self.stats.alone += 1
            batch, self._queue = self._queue[: self.max_batch], self._queue[self.max_batch :]
            self._last_batch = len(batch)
            self.stats.calls += len(batch)
            self.stats.batches += 1
            self.stats.largest = max(self.stats.largest, len(batch))
            return batch

    def _flush_forever(self) -> None:
        while True:
            batch = self._take()
            self._score(batch)

    def _score(self, batch: Sequence[_Pending]) -> None:
        try:
            results = self.scorer.score([c for c, _p, _f in batch], [p for _c, p, _f in batch])
        except VibecheckError:
            if len(batch) == 1:
                self._one(batch[0])
            else:  # someone's bad input: each call on its own, so only it gets the error
                for item in batch:
                    self._one(item)
            return
        except BaseException as exc:  # never leave a caller waiting
            for _c, _p, fut in batch:
                fut.set_exception(exc)
            return
        for (_c, _p, fut), res in zip(batch, results, strict=True):
            fut.set_result(res)

    def _one(self, item: _Pending) -> None:
        completion, problem, fut = item
        try:
            fut.set_result(self.scorer.score([completion], [problem])[0])
        except BaseException as exc:
            fut.set_exception(exc)


_batchers: dict[tuple[int, str], MicroBatcher] = {}
_batchers_lock = threading.Lock()


def batcher_for(config: RewardConfig) -> MicroBatcher:
    """The process's batcher for ``config``, over :func:`~pytest_vibecheck.reward.core.scorer_for`
    (one per process and config: safe after ``fork`` and in a fresh worker)."""
    key = (os.getpid(), config.key())
    with _batchers_lock:
        found = _batchers.get(key)
        if found is None:
            found = _batchers[key] = MicroBatcher(scorer_for(config))
        return found
