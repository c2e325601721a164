"""Which items to prepare, and when: the :class:`Prefetcher` keeps generations running ahead of
the item pytest is running.

Stage 1 (generate and extract) of the next items runs in a pool of ``--vibe-concurrency``
threads, without pause: while pytest runs one item, the replies of the next ones are already
being requested (the generator's adaptive limit bounds the API calls actually in flight). When an
item's setup comes, its generations are awaited, and the items whose generations are done are
verified (one Ruff batch) and tested together, up to :data:`WINDOW` of them, while the pool keeps
generating. Results do not depend on the order or the batch.

While an item waits for its own test runs (one that sleeps for a minute, say), the sandboxes
are kept busy: whenever the executor has a free slot and nothing queued, the next upcoming
items are finished and their runs started (a *top-up*, up to :data:`HORIZON` items ahead), so
no worker idles behind its slowest item.

The upcoming items of an xdist worker scheduled by the duration plan
(:mod:`pytest_vibecheck.plugin.xdist_sched`) follow from the plan itself: position ``p`` of the
collection belongs to worker ``p % n``, and the scheduler keeps the next
:data:`~pytest_vibecheck.plugin.xdist_sched.SEND_AHEAD` of them sent, so nothing private of
xdist is read. Other xdist schedulers fall back to
:func:`pytest_vibecheck.plugin._xdist_queue.queued_indices`.
"""

from __future__ import annotations

import threading
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING

from pytest_vibecheck.plugin import _xdist_queue
from pytest_vibecheck.plugin.run import stages
from pytest_vibecheck.plugin.run.record import Work

if TYPE_CHECKING:
    import pytest

    from pytest_vibecheck.execute.executor import TestService
    from pytest_vibecheck.plugin.run.context import StageContext
    from pytest_vibecheck.plugin.run.spec import ItemSpec

__all__ = ["HORIZON", "TOPUP_MAX_POLL_S", "TOPUP_POLL_S", "WINDOW", "Prefetcher", "planned_upcoming"]

#: Most items verified and tested together (one Ruff batch, one sandbox batch).
WINDOW = 32
#: Most items ahead of the current one that a top-up may prepare (on a planned xdist worker
#: these are all sent to it: see :data:`~pytest_vibecheck.plugin.xdist_sched.SEND_AHEAD`).
HORIZON = 160
#: Seconds between checks for an idle executor while an item waits for its runs; doubled
#: after each check that found nothing to start, up to :data:`TOPUP_MAX_POLL_S`.
TOPUP_POLL_S = 0.05
TOPUP_MAX_POLL_S = 1.0


def planned_upcoming(items_total: int, position: int, worker: int, workers: int) -> list[int]:
    """Positions after ``position`` that the duration plan gives to ``worker`` of ``workers``
    (``p % workers == worker``), in run order; empty when ``position`` is not the worker's own
    (an item taken from another worker's plan at the end of the run)."""
    if workers < 1 or position % workers != worker:
        return []
    return list(range(position + workers, items_total, workers))


class Prefetcher:
    """Prepares the items this process will run (see the module docstring).

    The upcoming items are the session's items after the current one, or, on an xdist worker,
    the items queued for this worker (:func:`pytest_vibecheck.plugin._xdist_queue.queued_indices`;
    without it, only the current item). ``lookahead``: how many upcoming items may be generating
    (default: twice the concurrency, at least :data:`WINDOW`).
    """

    def __init__(
        self,
        runtime: StageContext,
        window: int = WINDOW,
        lookahead: int | None = None,
        horizon: int = HORIZON,
    ) -> None:
        self.runtime = runtime
        self.window = max(1, window)
        self.threads = max(1, runtime.settings.concurrency)
        self.lookahead = lookahead or max(self.window, 2 * self.threads)
        self.horizon = max(self.lookahead, horizon)
        self._pool: ThreadPoolExecutor | None = None
        self._pending: dict[str, tuple[Work, Future[None]]] = {}
        self._index: dict[str, int] | None = None
        self._lock = threading.Lock()

    def _position(self, item: pytest.Item) -> int | None:
        if self._index is None:
            self._index = {it.nodeid: i for i, it in enumerate(item.session.items)}
        return self._index.get(item.nodeid)

    def _upcoming(self, item: pytest.Item, limit: int | None = None) -> list[pytest.Item]:
        """``item`` and up to ``limit`` (default the lookahead) benchmark items this process
        runs after it, in run order."""
        limit = self.lookahead if limit is None else limit
        items = item.session.items
        workerinput = getattr(item.config, "workerinput", None)
        indices: list[int] | None = None
        if workerinput is not None and self.runtime.planned:
            pos = self._position(item)
            wid = str(workerinput.get("workerid", "")).removeprefix("gw")
            count = int(workerinput.get("workercount", 1))
            if pos is not None and wid.isdigit():
                indices = planned_upcoming(len(items), pos, int(wid), count)
        if indices is None:
            indices = _xdist_queue.queued_indices(item.config)
        if indices is None and workerinput is not None:
            indices = []  # an xdist worker whose queue cannot be read: never another worker's items
        if indices is None:
            start = self._position(item)
            indices = list(range(start + 1, len(items))) if start is not None else []
        out = [item]
        for i in indices:
            if len(out) > limit:
                break
            if 0 <= i < len(items) and items[i] is not item and _spec(items[i]) is not None:
                out.append(items[i])
        return out

    def _start(self, upcoming: list[pytest.Item]) -> None:
        """Start the generations of ``upcoming`` items not started yet (caller holds the lock)."""
        for it in upcoming:
            spec = _spec(it)
            if spec is not None and it.nodeid not in self._pending:
                self._pending[it.nodeid] = self._submit(spec)

    def _ready(self, upcoming: list[pytest.Item], room: int | None = None) -> list[Work]:
        """Up to ``room`` (default a window) of ``upcoming`` items whose generations are done
        and that are not finished yet."""
        room = self.window if room is None else room
        batch: list[Work] = []
        for it in upcoming:
            if len(batch) >= room:
                break
            entry = self._pending.get(it.nodeid)
            if entry is not None and entry[1].done() and not entry[0].finished:
                batch.append(entry[0])
        return batch

    def _submit(self, spec: ItemSpec) -> tuple[Work, Future[None]]:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.threads, thread_name_prefix="vibecheck-gen")
        work = Work(spec)
        return work, self._pool.submit(stages.generate_one, self.runtime, work)

    def take(self, item: pytest.Item) -> Work:
        """The prepared work of ``item``: waits for its generations, then verifies and tests it
        together with the upcoming items whose generations are done. In batch mode the batches
        of the session's items are done before the test loop (``pytest_runtestloop``); a run
        whose loop skipped that does them here, once (:meth:`StageContext.prepare_batches`)."""
        self.runtime.prepare_batches(s for s in map(_spec, item.session.items) if s is not None)
        upcoming = self._upcoming(item)
        with self._lock:
            self._start(upcoming)
            work, future = self._pending.pop(item.nodeid)
        future.result()
        if not work.finished:
            stages.finish(self.runtime, [work, *self._ready(upcoming[1:], self.window - 1)])
        self._top_up(item, work)
        stages.finish_tests(work)  # this item's own runs only, not the batch's
        return work

    def _top_up(self, item: pytest.Item, work: Work) -> None:
        """Until ``work``'s own runs are done: whenever the executor is idle, finish the next
        upcoming items (their generations started as needed, up to :attr:`horizon` items
        ahead), so their runs use the free sandboxes; while its CPU slots are busy but a
        sleeper slot is free, finish the upcoming items expected to sleep."""
        futures: list[Future[object]] = list(work.pending.values())
        horizon = self.lookahead
        poll = TOPUP_POLL_S
        while futures:
            batch: list[Work]
            _done, left = wait(futures, timeout=poll, return_when=FIRST_COMPLETED)
            futures = list(left)
            if not futures:
                return
            service = self.runtime.started_tests()
            if service is None:
                continue
            executor = service.executor
            if executor.idle():
                batch, horizon = self._next_batch(item, horizon)
            elif executor.idle(sleeps=True):  # a sleeper slot is free: start a sleeping run
                batch = self._sleepers(item, service)
            else:
                continue
            if batch:
                stages.finish(self.runtime, batch)
                poll = TOPUP_POLL_S
            else:  # nothing to start: look less often (the scan costs CPU a loaded machine lacks)
                poll = min(TOPUP_MAX_POLL_S, 2 * poll)

    def _next_batch(self, item: pytest.Item, horizon: int) -> tuple[list[Work], int]:
        """The next window of prepared upcoming items, looking further ahead (up to
        :attr:`horizon`) while everything nearer is finished; and how far it looked."""
        while True:
            upcoming = self._upcoming(item, horizon)[1:]
            with self._lock:
                self._start(upcoming)
                batch = self._ready(upcoming)
                settled = all(self._pending[it.nodeid][0].finished for it in upcoming)
            if batch or not settled or horizon >= self.horizon or len(upcoming) < horizon:
                return batch, horizon
            horizon = min(self.horizon, horizon + self.window)  # all prepared: look further

    def _sleepers(self, item: pytest.Item, service: TestService) -> list[Work]:
        """Prepared upcoming items whose runs are expected to sleep, up to a window."""
        upcoming = self._upcoming(item, self.horizon)[1:]
        with self._lock:
            ready = self._ready(upcoming, len(upcoming))
        service.learn(w.spec.problem for w in ready)
        return [w for w in ready if service.sleeps(w.spec.problem)][: self.window]

    def close(self) -> None:
        """Stop the generation threads: requests not yet started are dropped, hung ones are not
        waited for (an item's deadline may have stopped the run)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
        self._pending.clear()


def _spec(item: pytest.Item) -> ItemSpec | None:
    """The item's :class:`ItemSpec`, or None for an item that is not a benchmark item."""
    from pytest_vibecheck.plugin.run.spec import ItemSpec

    spec = getattr(item, "spec", None)
    return spec if isinstance(spec, ItemSpec) else None

