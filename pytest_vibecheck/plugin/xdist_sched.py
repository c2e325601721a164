"""A pytest-xdist scheduler that follows the duration plan (``--dist load`` in a vibecheck run).

Returned from xdist's ``pytest_xdist_make_scheduler`` hook and written to xdist's public
``Scheduling`` protocol (``xdist.scheduler.protocol``), so no private xdist attribute is
read. The workers order their items by :func:`pytest_vibecheck.execute.schedule.interleave`
(identically: they get the same expected durations from the controller through
``workerinput``), so position ``p`` of the collection belongs to worker ``p % n`` (by worker
number, ``gw0``, ``gw1``, ...). Each node is kept :data:`SEND_AHEAD` items ahead of its
progress, in its own plan order; a node that runs out takes unsent items from the end of the
longest remaining plan (never ones the owner may already be preparing: those are sent).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from pytest_vibecheck.plugin.run.prefetch import HORIZON, WINDOW

__all__ = ["SEND_AHEAD", "DurationScheduling", "worker_number"]

#: Items sent to a node ahead of the one it runs; exceeds how far ahead the worker prepares
#: items (:data:`pytest_vibecheck.plugin.run.prefetch.HORIZON`), so an item the owner may be
#: preparing is always sent to it and never taken by another node.
SEND_AHEAD = HORIZON + WINDOW


def worker_number(workerid: str) -> int | None:
    """``gw3`` -> 3 (None for another form)."""
    digits = workerid.removeprefix("gw")
    return int(digits) if digits.isdigit() else None


def _numnodes(config: pytest.Config) -> int:
    try:
        from xdist.workermanage import parse_tx_spec_config as parse
    except ImportError:  # older pytest-xdist
        from xdist.workermanage import parse_spec_config as parse
    return len(parse(config))


class DurationScheduling:
    """The plan's items to each node, with stealing at the end (see the module docstring)."""

    def __init__(self, config: pytest.Config, log: Any = None) -> None:
        self.numnodes = _numnodes(config)
        self.config = config
        self.node2collection: dict[Any, list[str]] = {}
        self.node2pending: dict[Any, list[int]] = {}
        self.node2queue: dict[Any, list[int]] = {}
        self.pending: list[int] = []  # not owned by any node (a crashed node's, re-queued)
        self.collection: list[str] | None = None

    # -- the Scheduling protocol -------------------------------------------

    @property
    def nodes(self) -> list[Any]:
        return list(self.node2pending)

    @property
    def collection_is_completed(self) -> bool:
        return len(self.node2collection) >= self.numnodes

    @property
    def tests_finished(self) -> bool:
        if not self.collection_is_completed or self.pending:
            return False
        if any(self.node2queue.values()):
            return False
        return all(len(p) < 2 for p in self.node2pending.values())

    @property
    def has_pending(self) -> bool:
        return bool(
            self.pending
            or any(self.node2queue.values())
            or any(self.node2pending.values())
        )

    def add_node(self, node: Any) -> None:
        self.node2pending[node] = []
        self.node2queue[node] = []

    def add_node_collection(self, node: Any, collection: Sequence[str]) -> None:
        if self.collection_is_completed and self.collection is not None:
            if list(collection) != self.collection:
                raise pytest.UsageError(
                    "vibecheck: the xdist workers collected different items (their expected "
                    "durations differ?); rerun with --dist worksteal"
                )
            return
        self.node2collection[node] = list(collection)

    def mark_test_complete(self, node: Any, item_index: int, duration: float = 0) -> None:
        self.node2pending[node].remove(item_index)
        self._feed(node)

    def mark_test_pending(self, item: str) -> None:
        assert self.collection is not None
        self.pending.insert(0, self.collection.index(item))
        for node in self.nodes:
            self._feed(node)

    def remove_pending_tests_from_node(self, node: Any, indices: Sequence[int]) -> None:
        raise NotImplementedError

    def remove_node(self, node: Any) -> str | None:
        pending = self.node2pending.pop(node)
        self.pending.extend(self.node2queue.pop(node, []))
        crash = None
        if pending:
            assert self.collection is not None
            crash = self.collection[pending.pop(0)]
            self.pending.extend(pending)
        for other in self.nodes:
            self._feed(other)
        return crash

    def schedule(self) -> None:
        if self.collection is None:
            if not self.collection_is_completed:
                return
            self.collection = next(iter(self.node2collection.values()))
            nodes = sorted(self.node2pending, key=self._number)
            n = len(nodes)
            for p in range(len(self.collection)):
                self.node2queue[nodes[p % n]].append(p)
        for node in self.nodes:
            self._feed(node)

    # -- helpers -----------------------------------------------------------

    def _number(self, node: Any) -> tuple[int, str]:
        wid = str(getattr(node, "workerinput", {}).get("workerid", ""))
        num = worker_number(wid)
        return (num if num is not None else 1 << 30, wid)

    def _feed(self, node: Any) -> None:
        if self.collection is None or node.shutting_down:
            return
        pending = self.node2pending[node]
        queue = self.node2queue[node]
        room = SEND_AHEAD - len(pending)
        send: list[int] = []
        while room > 0 and self.pending:
            send.append(self.pending.pop(0))
            room -= 1
        if room > 0 and queue:
            chunk = queue[:room]
            del queue[:room]
            send += chunk
        if not send and not queue and len(pending) < 2:
            send = self._steal()
        if send:
            pending.extend(send)
            node.send_runtest_some(send)
        elif not queue and len(pending) < 2 and not self._anything_unsent():
            node.shutdown()

    def _anything_unsent(self) -> bool:
        return bool(self.pending or any(self.node2queue.values()))

    def _steal(self) -> list[int]:
        victim = max(self.node2queue, key=lambda n: len(self.node2queue[n]), default=None)
        if victim is None:
            return []
        queue = self.node2queue[victim]
        take = (len(queue) + 1) // 2
        if take == 0:
            return []
        stolen = queue[-take:]
        del queue[-take:]
        return stolen
