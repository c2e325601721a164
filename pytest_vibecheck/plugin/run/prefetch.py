"""Which items to prepare, and when: the :class:`Prefetcher` keeps generations running ahead of
the item pytest is running.

Stage 1 (generate and extract) of the next items runs in a pool of ``--vibe-concurrency``
threads, without pause: while pytest runs one item, the replies of the next ones are already
being requested (the generator's adaptive limit bounds the API calls actually in flight). When an
item's setup comes, its generations are awaited, and the items whose generations are done are
verified (one Ruff batch) and tested together, up to :data:`WINDOW` of them, while the pool keeps
generating. Results do not depend on the order or the batch.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

from pytest_vibecheck.plugin import _xdist_queue
from pytest_vibecheck.plugin.run import stages
from pytest_vibecheck.plugin.run.record import Work

if TYPE_CHECKING:
    import pytest

    from pytest_vibecheck.plugin.run.runtime import Runtime
    from pytest_vibecheck.plugin.run.spec import ItemSpec

__all__ = ["WINDOW", "Prefetcher"]

#: Most items verified and tested together (one Ruff batch, one sandbox batch).
WINDOW = 32


class Prefetcher:
    """Prepares the items this process will run (see the module docstring).

    The upcoming items are the session's items after the current one, or, on an xdist worker,
    the items queued for this worker (:func:`pytest_vibecheck.plugin._xdist_queue.queued_indices`;
    without it, only the current item). ``lookahead``: how many upcoming items may be generating
    (default: twice the concurrency, at least :data:`WINDOW`).
    """

    def __init__(self, runtime: Runtime, window: int = WINDOW, lookahead: int | None = None) -> None:
        self.runtime = runtime
        self.window = max(1, window)
        self.threads = max(1, runtime.settings.concurrency)
        self.lookahead = lookahead or max(self.window, 2 * self.threads)
        self._pool: ThreadPoolExecutor | None = None
        self._pending: dict[str, tuple[Work, Future[None]]] = {}
        self._index: dict[str, int] | None = None
        self._lock = threading.Lock()

    def _upcoming(self, item: pytest.Item) -> list[pytest.Item]:
        items = item.session.items
        indices = _xdist_queue.queued_indices(item.config)
        if indices is None and getattr(item.config, "workerinput", None) is not None:
            indices = []  # an xdist worker whose queue cannot be read: never another worker's items
        if indices is None:
            if self._index is None:
                self._index = {it.nodeid: i for i, it in enumerate(items)}
            start = self._index.get(item.nodeid)
            indices = list(range(start + 1, len(items))) if start is not None else []
        out = [item]
        for i in indices:
            if len(out) > self.lookahead:
                break
            if 0 <= i < len(items) and items[i] is not item and _spec(items[i]) is not None:
                out.append(items[i])
        return out

    def _submit(self, spec: ItemSpec) -> tuple[Work, Future[None]]:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.threads, thread_name_prefix="vibecheck-gen")
        work = Work(spec)
        return work, self._pool.submit(stages.generate_one, self.runtime, work)

    def take(self, item: pytest.Item) -> Work:
        """The prepared work of ``item``: waits for its generations, then verifies and tests it
        together with the upcoming items whose generations are done."""
        upcoming = self._upcoming(item)
        with self._lock:
            for it in upcoming:
                spec = _spec(it)
                if spec is not None and it.nodeid not in self._pending:
                    self._pending[it.nodeid] = self._submit(spec)
            work, future = self._pending.pop(item.nodeid)
        future.result()
        if work.finished:
            stages.finish_tests(work)  # its runs were started with an earlier batch
            return work
        batch = [work]
        for it in upcoming[1:]:
            if len(batch) >= self.window:
                break
            entry = self._pending.get(it.nodeid)
            if entry is not None and entry[1].done() and not entry[0].finished:
                batch.append(entry[0])
        stages.finish(self.runtime, batch)
        stages.finish_tests(work)  # wait for this item's own runs only, not the batch's
        return work

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

