"""Which items to prepare together: the :class:`Prefetcher` (the current item and the next ones
this process will run)."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from pytest_vibecheck.plugin.run import stages
from pytest_vibecheck.plugin.run.record import Work

if TYPE_CHECKING:
    import pytest

    from pytest_vibecheck.plugin.run.runtime import Runtime

__all__ = ["WINDOW", "Prefetcher"]

#: Most items prepared together (generation, one Ruff batch, tests).
WINDOW = 32
#: An item whose generations took longer than this (seconds) keeps the window small.
SLOW_GENERATION_S = 0.5


class Prefetcher:
    """Prepares the next items this process will run, in one go.

    The upcoming items are the session's items after the current one, or, on an xdist worker,
    the items already queued for this worker (read from pytest-xdist's worker queue; if that is
    not available, only the current item). Prepared items are kept until their own setup.

    The window adapts: it starts at ``--vibe-concurrency`` items (so calls to a slow API are
    spread over items and no item waits for many rounds of calls), doubles up to
    :data:`WINDOW` while generations are fast (cache hits, offline models: then the batch pays
    off in fewer Ruff processes), and falls back when they are slow again.
    """

    def __init__(self, runtime: Runtime, window: int = WINDOW) -> None:
        self.runtime = runtime
        self.max_window = window
        self.window = max(1, min(window, runtime.settings.concurrency))
        self.slow = True  # until a window shows that generations are fast
        self._ready: dict[str, Work] = {}
        self._index: dict[str, int] | None = None

    def _upcoming(self, item: pytest.Item) -> list[pytest.Item]:
        session = item.session
        items = session.items
        indices: list[int] | None = None
        for plugin in item.config.pluginmanager.get_plugins():
            torun = getattr(plugin, "torun", None)
            if torun is not None and type(plugin).__name__ == "WorkerInteractor":
                with contextlib.suppress(Exception), torun.lock() as queue:
                    indices = [i for i in list(queue) if isinstance(i, int)]
                break
        if indices is None:
            if self._index is None:
                self._index = {it.nodeid: i for i, it in enumerate(items)}
            start = self._index.get(item.nodeid)
            stop = min(len(items), (start or 0) + 1 + 4 * self.max_window)
            indices = list(range(start + 1, stop)) if start is not None else []
        out = [item]
        for i in indices:
            if len(out) >= self.window:
                break
            if 0 <= i < len(items):
                nxt = items[i]
                if getattr(nxt, "spec", None) is not None and nxt.nodeid not in self._ready and nxt is not item:
                    out.append(nxt)
        return out

    def take(self, item: pytest.Item) -> Work:
        """The prepared work of ``item`` (preparing it and the next items if needed)."""
        work = self._ready.pop(item.nodeid, None)
        if work is not None:
            return work
        batch = self._upcoming(item)
        works = [Work(it.spec) for it in batch]  # type: ignore[attr-defined]
        stages.prepare(self.runtime, works, concurrent=self.slow)
        self.slow = max(w.timing["generate"] for w in works) > SLOW_GENERATION_S
        base = max(1, min(self.max_window, self.runtime.settings.concurrency))
        self.window = base if self.slow else min(self.max_window, self.window * 2)
        for it, w in zip(batch[1:], works[1:], strict=True):
            self._ready[it.nodeid] = w
        return works[0]
